//! Source reconciliation on every engine: after the loads, the sources get
//! late rows, lose rows, and change values; `idem status --reconcile` flags
//! exactly the partitions whose row counts moved, in one query per job, and
//! writes nothing.

mod common;

use std::collections::BTreeMap;

use common::{Kind, TestDb, idem, stdout_ok};
use idem::config::TableName;
use serde_json::Value;

const SELECT: &str = "select id, amount, dt from src where dt >= :start and dt < :end";

/// `job partition` → (rows_source, out_of_date) from `status --reconcile`.
fn reconciled(config: &std::path::Path) -> BTreeMap<String, (Option<i64>, Option<bool>)> {
    let out = stdout_ok(&idem(
        config,
        &["status", "--reconcile", "--format", "json"],
    ));
    let rows: Vec<Value> = serde_json::from_str(&out).expect("json");
    rows.iter()
        .map(|r| {
            (
                format!(
                    "{} {}",
                    r["job"].as_str().unwrap_or(""),
                    r["partition"].as_str().unwrap_or("")
                ),
                (r["rows_source"].as_i64(), r["out_of_date"].as_bool()),
            )
        })
        .collect()
}

async fn reconcile_flags_exactly_the_partitions_whose_source_counts_moved(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs = [
        common::replace_job("fct", "fct", "2026-01-05", SELECT),
        // No partition column: its windows are the source's.
        common::merge_job("dim", "dim", "2026-01-05", SELECT),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    let mut values = Vec::new();
    for d in 1..=5 {
        for k in 0..10 {
            values.push(format!("({}, {k}, '2026-01-0{d}')", d * 100 + k));
        }
    }
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        &format!("INSERT INTO src VALUES {}", values.join(", ")),
    ])
    .await
    .expect("setup");
    stdout_ok(&idem(&config, &["run", "fct"]));
    stdout_ok(&idem(&config, &["run", "dim"]));
    let before = reconciled(&config);
    assert!(
        before
            .values()
            .all(|(n, stale)| *n == Some(10) && *stale == Some(false)),
        "{before:?}"
    );

    // Late rows for day 2, rows removed from day 4, values changed on day 5.
    wh.execute_script(&[
        "INSERT INTO src VALUES (291, 1, '2026-01-02'), (292, 1, '2026-01-02'), (293, 1, '2026-01-02')",
        "DELETE FROM src WHERE id IN (401, 402)",
        "UPDATE src SET amount = amount + 100 WHERE dt = '2026-01-05'",
    ])
    .await
    .expect("source changes");
    let ledger_before = wh.attempts("fct", None).await.expect("ledger").len()
        + wh.attempts("dim", None).await.expect("ledger").len();
    let fingerprints = |wh: &idem::warehouse::Warehouse| {
        let wh = wh.clone();
        async move {
            let mut out = Vec::new();
            for t in ["fct", "dim", "src"] {
                out.push(
                    wh.table_fingerprint(&TableName::parse(t).expect("table"))
                        .await
                        .expect("fingerprint"),
                );
            }
            out
        }
    };
    let tables_before = fingerprints(&wh).await;

    let after = reconciled(&config);
    let flagged: Vec<(&str, Option<i64>)> = after
        .iter()
        .filter(|(_, (_, stale))| *stale == Some(true))
        .map(|(k, (n, _))| (k.as_str(), *n))
        .collect();
    assert_eq!(
        flagged,
        vec![
            ("dim 2026-01-02", Some(13)),
            ("dim 2026-01-04", Some(8)),
            ("fct 2026-01-02", Some(13)),
            ("fct 2026-01-04", Some(8)),
        ],
        "changed values (day 5) cannot show in counts"
    );
    // Reconciling wrote nothing: no ledger row, no table changed.
    let ledger_after = wh.attempts("fct", None).await.expect("ledger").len()
        + wh.attempts("dim", None).await.expect("ledger").len();
    assert_eq!(ledger_after, ledger_before);
    assert_eq!(fingerprints(&wh).await, tables_before);

    // The table says what is wrong.
    let table = stdout_ok(&idem(&config, &["status", "fct", "--reconcile"]));
    assert!(
        table.contains("out of date: source 13 · loaded 10 · +3 late"),
        "{table}"
    );
    assert!(
        table.contains("source 8 · loaded 10 · 2 removed"),
        "{table}"
    );

    // One statement per job, whatever the range: the job's SQL appears once
    // in a grouped query for a job with a partition column.
    let fct = parsed.jobs.iter().find(|j| j.name == "fct").expect("fct");
    let statements = wh
        .source_counts_sql(
            fct,
            fct.start,
            fct.end.expect("end"),
            idem::lint::bounds_only_filter(fct),
        )
        .expect("sql");
    let [sql] = statements.as_slice() else {
        panic!("{} statements", statements.len());
    };
    assert_eq!(
        sql.text().matches("from src where").count(),
        1,
        "{}",
        sql.text()
    );

    // Re-running the out-of-date partitions converges.
    stdout_ok(&idem(
        &config,
        &["run", "fct", "--from", "2026-01-02", "--to", "2026-01-04"],
    ));
    let fixed = reconciled(&config);
    assert!(
        fixed
            .iter()
            .filter(|(k, _)| k.starts_with("fct"))
            .all(|(_, (_, stale))| *stale == Some(false)),
        "{fixed:?}"
    );
}

/// Jobs whose SQL does more with the window than filter on it: a daily
/// snapshot that writes its window's start as the partition value, and a
/// job that selects its partition by name. Counted over a range in one
/// grouped statement, the whole source fell on the first partition and
/// every other looked emptied ("source 0", a shrink guard refusal in the
/// dry run); each window is counted as its own load reads it.
async fn windows_named_or_written_by_the_sql_are_counted_one_by_one(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs = [
        common::replace_job(
            "snap",
            "snap",
            "2026-01-03",
            "select id, :start as dt from dim_src",
        ),
        common::replace_job(
            "named",
            "named",
            "2026-01-03",
            "select id, batch as dt from batches where cast(batch as char(10)) = :partition",
        ),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE dim_src (id INTEGER NOT NULL)",
        "INSERT INTO dim_src VALUES (1), (2), (3), (4)",
        "CREATE TABLE snap (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE batches (id INTEGER NOT NULL, batch DATE NOT NULL)",
        "INSERT INTO batches VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-02'), (4, '2026-01-03')",
        "CREATE TABLE named (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .expect("fixture");
    for job in &parsed.jobs {
        assert!(!idem::lint::bounds_only_filter(job), "{}", job.name);
        stdout_ok(&idem(&config, &["run", &job.name]));
    }
    let expected = [
        ("snap 2026-01-01", 4),
        ("snap 2026-01-02", 4),
        ("snap 2026-01-03", 4),
        ("named 2026-01-01", 1),
        ("named 2026-01-02", 2),
        ("named 2026-01-03", 1),
    ];
    let counted = reconciled(&config);
    for (key, rows) in expected {
        assert_eq!(
            counted.get(key),
            Some(&(Some(rows), Some(false))),
            "{kind:?} {key}: {counted:?}"
        );
    }
    for job in ["snap", "named"] {
        let out = stdout_ok(&idem(&config, &["run", job, "--dry-run", "--json"]));
        let plan: Value = serde_json::from_str(out.trim()).expect("json");
        for p in plan["partitions"].as_array().expect("partitions") {
            assert_eq!(p["refused"], false, "{kind:?} {job}: {p}");
            assert_eq!(p["rows_source"], p["rows_now"], "{kind:?} {job}: {p}");
        }
    }
    wh.close().await;
}

on_every_engine!(
    reconcile_flags_exactly_the_partitions_whose_source_counts_moved,
    windows_named_or_written_by_the_sql_are_counted_one_by_one,
);
