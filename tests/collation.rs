//! A change that the column's collation calls no change ('alice' to 'Alice'
//! under a case-insensitive collation) is still a change: a merge writes it
//! and counts it, and a replace's fingerprint sees it.

mod common;

use common::{Kind, TestDb, idem, stdout_ok};

/// The `partition_succeeded` event of a `--json` run's output.
fn succeeded(out: &str) -> serde_json::Value {
    out.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "partition_succeeded")
        .unwrap_or_else(|| panic!("no partition loaded: {out}"))
}

async fn a_case_only_change_is_a_change(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select id, name, dt from src where dt >= :start and dt < :end";
    let jobs = [
        common::merge_job("dim", "dim", "2026-01-01", select),
        common::replace_job("fct", "fct", "2026-01-01", select),
    ]
    .concat();
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    // A case-insensitive text column on each engine (PostgreSQL's own
    // are nondeterministic ICU collations).
    let (setup, name): (&[&str], &str) = match kind {
        Kind::Sqlite => (&[], "TEXT COLLATE NOCASE"),
        Kind::Postgres => (
            &[
                "CREATE COLLATION ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)",
            ],
            "TEXT COLLATE ci",
        ),
        Kind::MySql => (&[], "VARCHAR(40) COLLATE utf8mb4_general_ci"),
    };
    let mut script: Vec<String> = setup.iter().map(|s| s.to_string()).collect();
    script.extend([
        format!("CREATE TABLE src (id INTEGER NOT NULL, name {name} NOT NULL, dt DATE NOT NULL)"),
        format!(
            "CREATE TABLE dim (id INTEGER NOT NULL PRIMARY KEY, name {name} NOT NULL, dt DATE NOT NULL)"
        ),
        format!("CREATE TABLE fct (id INTEGER NOT NULL, name {name} NOT NULL, dt DATE NOT NULL)"),
        "INSERT INTO src (id, name, dt) VALUES (1, 'alice', '2026-01-01')".into(),
    ]);
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();
    let run = |job: &str| succeeded(&stdout_ok(&idem(&path, &["run", job, "--json", "--yes"])));
    run("dim");
    run("fct");

    wh.execute_script(&["UPDATE src SET name = 'Alice'"])
        .await
        .unwrap();
    let merged = run("dim");
    assert_eq!(merged["rows_updated"], 1, "{merged}");
    assert_eq!(merged["content_changed"], true, "{merged}");
    let replaced = run("fct");
    assert_eq!(replaced["content_changed"], true, "{replaced}");
    for table in ["dim", "fct"] {
        let binary = match kind {
            Kind::Sqlite => "name = 'Alice' COLLATE BINARY",
            Kind::Postgres => "name = 'Alice' COLLATE \"C\"",
            Kind::MySql => "BINARY name = BINARY 'Alice'",
        };
        let sql = format!("SELECT COUNT(*) FROM {table} WHERE {binary}");
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(wh.pool())
            .await
            .unwrap();
        assert_eq!(n, 1, "{table} holds 'Alice'");
    }

    // And no change is no change.
    let again = run("dim");
    assert_eq!(again["rows_updated"], 0, "{again}");
    assert_eq!(again["content_changed"], false, "{again}");
}

on_every_engine!(a_case_only_change_is_a_change);
