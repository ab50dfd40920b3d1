//! `idem import-dbt` on a hand-written manifest (dbt's v12 schema): the
//! incremental models that re-run a window idempotently become jobs, with the
//! window bound to :start/:end; every other one is listed with its reason.

mod common;

use std::path::Path;
use std::process::Output;

const MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/dbt/manifest.json"
);

fn idem(args: &[&str]) -> Output {
    crate::common::idem_command()
        .args(args)
        .output()
        .expect("run idem")
}

#[test]
fn incremental_models_become_jobs() {
    let out = idem(&["import-dbt", MANIFEST]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let jobs_toml = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stderr.contains("3 incremental models imported, 6 left out"),
        "{stderr}"
    );

    // The output appended to a config is a valid config.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.toml");
    let text = format!("[warehouse]\nurl = \"sqlite://w.db\"\n\n{jobs_toml}");
    std::fs::write(&path, &text).unwrap();
    let config =
        idem::config::parse(&path, &text, &|_| None).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let job = |name: &str| {
        config
            .jobs
            .iter()
            .find(|j| j.name == name)
            .unwrap_or_else(|| panic!("{name} in\n{jobs_toml}"))
    };
    assert_eq!(config.jobs.len(), 3, "{jobs_toml}");

    let orders = job("fct_orders");
    assert_eq!(orders.strategy.as_str(), "replace_partition");
    assert_eq!(orders.target.to_string(), "marts.fct_orders");
    assert_eq!(
        orders.partition_column.as_ref().unwrap().as_str(),
        "order_date"
    );
    assert_eq!(orders.grain.as_str(), "day");
    assert_eq!(orders.start.name(), "2026-01-01");
    assert!(
        orders
            .sql
            .contains("from \"analytics\".\"staging\".\"stg_orders\"")
    );
    assert!(
        orders
            .sql
            .contains("where order_date >= :start and order_date < :end"),
        "{}",
        orders.sql
    );

    let customers = job("dim_customers");
    assert_eq!(customers.strategy.as_str(), "merge_key");
    let keys: Vec<&str> = customers.unique_key.iter().map(|k| k.as_str()).collect();
    assert_eq!(keys, ["customer_id"]);
    assert!(!customers.sql.contains(';'), "the trailing semicolon goes");
    assert!(customers.sql.contains(":start") && customers.sql.contains(":end"));

    let sessions = job("fct_sessions");
    assert_eq!(sessions.strategy.as_str(), "replace_partition");
    assert_eq!(sessions.grain.as_str(), "hour");
    assert_eq!(sessions.start.name(), "2026-03-01T00");
    // dbt's delete+insert deletes by its unique_key, which a replace does
    // not: said in a comment, not written as a key idem would not use.
    assert!(sessions.unique_key.is_empty(), "{jobs_toml}");
    assert!(
        jobs_toml.contains("# dbt writes by the model's unique_key (delete+insert deletes its keys, microbatch merges them); idem replaces each hour window whole, so a key whose"),
        "{jobs_toml}"
    );

    // Upstream models that were imported become dependencies.
    let orders = job("fct_orders");
    let upstream: Vec<&str> = orders.depends_on.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(upstream, ["dim_customers"], "{jobs_toml}");

    for (model, reason) in [
        ("stg_events", "append is not idempotent"),
        ("agg_yearly", "batch_size year"),
        ("fct_refunds", "merge without a unique_key"),
        ("fct_clicks", "no event_time"),
        ("fct_uncompiled", "run `dbt compile` first"),
        ("fct_default", "no incremental_strategy"),
    ] {
        assert!(
            jobs_toml
                .lines()
                .any(|l| l.starts_with(&format!("#   {model}: ")) && l.contains(reason)),
            "{model}: {reason} in\n{jobs_toml}"
        );
    }
    assert!(jobs_toml.contains("Not incremental"));
    assert!(jobs_toml.contains("dim_products, stg_orders"));
    assert!(
        !jobs_toml.contains("not_null_fct_orders"),
        "tests are not models"
    );

    // The imported SQL passes idem's own checks.
    let lint = crate::common::idem_command()
        .arg("--config")
        .arg(&path)
        .args(["lint", "--offline"])
        .output()
        .unwrap();
    assert_eq!(
        lint.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
}

#[test]
fn a_file_that_is_not_a_manifest_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("manifest.json");
    std::fs::write(&bad, "{\"nodes\": 3}").unwrap();
    for (path, says) in [
        (bad.as_path(), "is not a dbt manifest.json"),
        (Path::new("/nonexistent/manifest.json"), "cannot read"),
    ] {
        let out = idem(&["import-dbt", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(says));
    }
}

/// A model in a hand-written manifest: an incremental microbatch model.
fn model(id: &str, name: &str, batch: &str, begin: &str, description: &str, sql: &str) -> String {
    serde_json::json!({
        "resource_type": "model",
        "name": name,
        "unique_id": id,
        "schema": "marts",
        "description": description,
        "compiled_code": sql,
        "config": {
            "materialized": "incremental",
            "incremental_strategy": "microbatch",
            "event_time": "ts",
            "batch_size": batch,
            "begin": begin
        }
    })
    .to_string()
}

/// Models of one name (two packages, two versions) become jobs of
/// different names, said so; a description or SQL with a lone carriage
/// return, control characters or DEL is escaped so that the output is TOML
/// and keeps them; an hourly model's `begin` keeps its hour.
#[test]
fn what_the_manifest_holds_is_imported_as_valid_distinct_jobs() {
    let odd = "line one\rstill one\u{1}\u{7f} \"quoted\" \\ end";
    let sql = "select ts, 1 as n -- a\rcomment\u{7f}\nfrom src";
    let nodes = [
        ("model.shop.orders", "orders", "day", "2026-01-01"),
        ("model.billing.orders", "orders", "day", "2026-01-01"),
        (
            "model.shop.events.v1",
            "events",
            "hour",
            "2024-01-01T05:00:00",
        ),
        (
            "model.shop.events.v2",
            "events",
            "hour",
            "2024-01-01 07:00:00",
        ),
    ];
    let manifest = format!(
        "{{\"metadata\": {{\"adapter_type\": \"postgres\"}}, \"nodes\": {{{}}}}}",
        nodes
            .iter()
            .map(|(id, name, batch, begin)| format!(
                "\"{id}\": {}",
                model(id, name, batch, begin, odd, sql)
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, manifest).unwrap();
    let out = idem(&["import-dbt", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let jobs_toml = String::from_utf8_lossy(&out.stdout).into_owned();
    let config_path = dir.path().join("idem.toml");
    let text = format!("[warehouse]\nurl = \"sqlite://w.db\"\n\n{jobs_toml}");
    let config = idem::config::parse(&config_path, &text, &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{jobs_toml:?}"));
    let names: std::collections::BTreeSet<&str> =
        config.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "events_shop_v1",
            "events_shop_v2",
            "orders_billing",
            "orders_shop"
        ]
        .into_iter()
        .collect(),
        "{jobs_toml}"
    );
    assert!(
        stderr.contains("model.billing.orders is imported as orders_billing"),
        "{stderr}"
    );
    for job in &config.jobs {
        assert_eq!(job.description.as_deref(), Some(odd), "{}", job.name);
        assert!(job.sql.contains(sql), "{}: {:?}", job.name, job.sql);
    }
    let start = |name: &str| {
        config
            .jobs
            .iter()
            .find(|j| j.name == name)
            .map(|j| j.start.name())
            .unwrap_or_default()
    };
    assert_eq!(start("events_shop_v1"), "2024-01-01T05");
    assert_eq!(start("events_shop_v2"), "2024-01-01T07");
    assert_eq!(start("orders_shop"), "2026-01-01");
}

/// What import-dbt reads says what it is: another of dbt's files (run
/// results, the catalog) or one without models is refused, naming the file
/// to pass, where it printed "0 of 0 incremental models" and exited 0; a
/// manifest newer than v12 is read with a note to check the jobs; models
/// disabled in dbt are named among those left out.
#[test]
fn a_file_says_what_it_is_and_disabled_models_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, json: serde_json::Value| {
        let path = dir.path().join(name);
        std::fs::write(&path, json.to_string()).unwrap();
        path.to_str().unwrap().to_string()
    };
    let schema = |kind: &str, v: u32| format!("https://schemas.getdbt.com/dbt/{kind}/v{v}.json");
    for (path, says) in [
        (
            write(
                "run_results.json",
                serde_json::json!({"metadata": {"dbt_schema_version": schema("run-results", 6)}, "results": []}),
            ),
            "is dbt's run-results file, not its manifest: pass target/manifest.json",
        ),
        (
            write("empty.json", serde_json::json!({})),
            "is not a dbt manifest.json: missing field `nodes`",
        ),
    ] {
        let out = idem(&["import-dbt", &path]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{path}: {stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(out.stdout.is_empty());
    }

    let model: serde_json::Value = serde_json::from_str(&model(
        "model.shop.fct_events",
        "fct_events",
        "day",
        "2026-01-01",
        "",
        "select ts from raw.events",
    ))
    .unwrap();
    let newer = write(
        "manifest.json",
        serde_json::json!({
            "metadata": {"dbt_schema_version": schema("manifest", 13), "adapter_type": "snowflake"},
            "nodes": {"model.shop.fct_events": model},
            "disabled": {
                "model.shop.fct_old": [{"resource_type": "model", "name": "fct_old", "config": {"enabled": false}}],
                "seed.shop.countries": [{"resource_type": "seed", "name": "countries"}]
            }
        }),
    );
    let out = idem(&["import-dbt", &newer]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("is a v13 manifest, newer than the v12 that idem reads"),
        "{stderr}"
    );
    assert!(
        stderr.contains("was compiled by dbt-snowflake: idem loads PostgreSQL, MariaDB/MySQL and SQLite warehouses"),
        "{stderr}"
    );
    assert!(
        stdout.contains("# Disabled in dbt (enabled: false), left out: fct_old\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("countries"), "{stdout}");
    assert!(stdout.contains("name = \"fct_events\""), "{stdout}");
}

/// A microbatch model's `lookback` (dbt re-runs that many batches before
/// each new one, for late rows) has no idem setting: the job says so in a
/// comment over its grain, and a note on stderr names the model, each with
/// what to schedule instead. A lookback of 0, or none, says nothing.
#[test]
fn a_microbatch_lookback_is_said_with_what_to_do() {
    let with = |id: &str, name: &str, lookback: Option<serde_json::Value>| {
        let mut node: serde_json::Value = serde_json::from_str(&model(
            id,
            name,
            "hour",
            "2026-01-01",
            "",
            "select ts from src",
        ))
        .unwrap();
        if let Some(lookback) = lookback {
            node["config"]["lookback"] = lookback;
        }
        (id.to_string(), node)
    };
    let nodes: serde_json::Map<String, serde_json::Value> = [
        with("model.shop.late", "late", Some(serde_json::json!(3))),
        with(
            "model.shop.one_back",
            "one_back",
            Some(serde_json::json!("1")),
        ),
        with(
            "model.shop.none_back",
            "none_back",
            Some(serde_json::json!(0)),
        ),
        with("model.shop.unset", "unset", None),
    ]
    .into_iter()
    .collect();
    let manifest = serde_json::json!({"metadata": {"adapter_type": "postgres"}, "nodes": nodes});
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, manifest.to_string()).unwrap();
    let out = idem(&["import-dbt", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let jobs_toml = String::from_utf8_lossy(&out.stdout).into_owned();
    let said = "dbt re-runs the 3 hours before each new batch (lookback 3), for rows that land late; idem loads only the windows a run names, so start each scheduled run 3 hours earlier (idem run late --from";
    assert!(
        stderr.contains(&format!(
            "idem: model.shop.late has lookback 3, which idem has no setting for: {said}"
        )),
        "{stderr}"
    );
    assert!(jobs_toml.contains(&format!("# {said}")), "{jobs_toml}");
    assert!(
        jobs_toml.contains("dbt re-runs the hour before each new batch (lookback 1)"),
        "{jobs_toml}"
    );
    assert!(
        stderr.contains("model.shop.one_back has lookback 1"),
        "{stderr}"
    );
    for quiet in ["none_back", "unset"] {
        assert!(
            !stderr.contains(&format!("model.shop.{quiet} has")),
            "{stderr}"
        );
    }
    assert_eq!(jobs_toml.matches("(lookback ").count(), 2, "{jobs_toml}");
    // Still a config.
    let text = format!("[warehouse]\nurl = \"sqlite://w.db\"\n\n{jobs_toml}");
    let config = idem::config::parse(&dir.path().join("idem.toml"), &text, &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{jobs_toml}"));
    assert_eq!(config.jobs.len(), 4);
}

/// A manifest saved with a byte-order mark (as some Windows tools write
/// one) is read as the manifest it is; an empty file is said to be empty,
/// with the file to pass (QA: "expected value at line 1 column 1" and "EOF
/// while parsing a value").
#[test]
fn a_manifest_with_a_byte_order_mark_is_read_and_an_empty_file_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let bom = dir.path().join("manifest.json");
    let text = std::fs::read_to_string(MANIFEST).unwrap();
    std::fs::write(&bom, format!("\u{feff}{text}")).unwrap();
    let out = idem(&["import-dbt", bom.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The same jobs as from the manifest without the mark, but for the
    // path the first line names.
    let plain = String::from_utf8_lossy(&idem(&["import-dbt", MANIFEST]).stdout)
        .replace(MANIFEST, bom.to_str().unwrap());
    assert_eq!(String::from_utf8_lossy(&out.stdout), plain);

    for empty in ["", " \n"] {
        let path = dir.path().join("empty.json");
        std::fs::write(&path, empty).unwrap();
        let out = idem(&["import-dbt", path.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{} is empty: pass dbt's target/manifest.json",
                path.display()
            )),
            "{stderr}"
        );
    }
}

/// What `dbt compile` writes for a real project: a model without a
/// strategy but with a unique_key (dbt-postgres runs it as delete+insert),
/// one without either (appends), a model compiled where its table exists
/// (its is_incremental() branch reads `{{ this }}`), a snapshot and a seed.
/// Each is imported as dbt runs it, or named with why it is not.
#[test]
fn a_compiled_project_is_imported_as_dbt_runs_it() {
    let incremental = |name: &str, unique_key: Option<&str>, sql: &str| {
        let mut config = serde_json::json!({"materialized": "incremental", "event_time": "ts"});
        if let Some(key) = unique_key {
            config["unique_key"] = key.into();
        }
        serde_json::json!({
            "resource_type": "model",
            "name": name,
            "schema": "analytics",
            "relation_name": format!("\"shop\".\"analytics\".\"{name}\""),
            "compiled_code": sql,
            "config": config
        })
    };
    let manifest = serde_json::json!({
        "metadata": {"adapter_type": "postgres"},
        "nodes": {
            "model.shop.by_default": incremental("by_default", Some("id"), "select id, ts from raw.events"),
            "model.shop.appended": incremental("appended", None, "select id, ts from raw.events"),
            "model.shop.compiled_incrementally": incremental(
                "compiled_incrementally",
                Some("id"),
                "select id, ts from raw.events\n  where ts > (select max(ts) from \"shop\".\"analytics\".\"compiled_incrementally\")"
            ),
            "snapshot.shop.orders_snap": {"resource_type": "snapshot", "name": "orders_snap", "config": {"materialized": "snapshot"}},
            "seed.shop.countries": {"resource_type": "seed", "name": "countries", "config": {"materialized": "seed"}}
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("manifest.json");
    std::fs::write(&path, manifest.to_string()).unwrap();
    let out = idem(&["import-dbt", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stderr.contains("1 incremental model imported, 2 left out"),
        "{stderr}"
    );
    let jobs: toml::Table = stdout.parse().unwrap();
    let jobs = jobs["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "{stdout}");
    assert_eq!(jobs[0]["name"].as_str(), Some("by_default"));
    assert_eq!(jobs[0]["strategy"].as_str(), Some("replace_partition"));
    assert!(
        stdout.contains(
            "# dbt model.shop.by_default (delete+insert, dbt-postgres's default with a unique_key)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "#   appended: no incremental_strategy and no unique_key: dbt-postgres appends"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("#   compiled_incrementally: its compiled SQL reads the model's own table")
            && stdout.contains("`dbt compile --full-refresh`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# Snapshots (dbt's history of changed rows, not a load by window), left out: orders_snap"),
        "{stdout}"
    );
    assert!(
        stdout.contains("# Seeds (loaded from CSV files, not by window), left out: countries"),
        "{stdout}"
    );
}
