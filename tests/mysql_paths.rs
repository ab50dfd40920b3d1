//! MySQL 8 and MariaDB before 10.5 have no `RETURNING`: a replace there
//! reads the window before and after, as on the other engines. This
//! machine's MariaDB takes that path when told to (`IDEM_TEST_NO_RETURNING`),
//! and it must load the same rows, with the same fingerprints, and say the
//! same of what changed as the `RETURNING` path.

mod common;

use common::{Kind, TestDb};
use serde_json::Value;

const SELECT: &str = "select id, amount, dt from src where dt >= :start and dt < :end";

/// The `partition_succeeded` and `partition_failed` events of a run of
/// `job`, without `RETURNING` if `plain`.
fn run(config: &std::path::Path, job: &str, plain: bool) -> Vec<Value> {
    let mut idem = crate::common::idem_command();
    idem.arg("--config")
        .arg(config)
        .args(["run", job, "--json", "--yes"]);
    if plain {
        idem.env("IDEM_TEST_NO_RETURNING", "1");
    }
    let out = idem.output().expect("idem");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"] == "partition_succeeded" || e["event"] == "partition_failed")
        .collect()
}

/// What two runs must agree on, per partition.
fn outcome(events: &[Value]) -> Vec<(String, Value, Value, Value, Value)> {
    let mut out: Vec<_> = events
        .iter()
        .map(|e| {
            (
                e["partition"].as_str().unwrap_or_default().to_string(),
                e["rows_deleted"].clone(),
                e["rows_inserted"].clone(),
                e["fingerprint"].clone(),
                e["content_changed"].clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_without_returning_loads_and_fingerprints_as_with_it() {
    let db = TestDb::new(Kind::MySql).await.expect("mysql");
    let jobs = [
        common::replace_job("with", "fct_with", "2026-01-03", SELECT),
        common::replace_job("plain", "fct_plain", "2026-01-03", SELECT),
        // Writes each row a day late: outside its partition.
        common::replace_job(
            "late",
            "fct_plain",
            "2026-01-03",
            "select id, amount, DATE_ADD(dt, INTERVAL 1 DAY) as dt from src where dt >= :start and dt < :end",
        ),
    ]
    .concat();
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER, dt DATE NOT NULL)",
        "CREATE TABLE fct_with (id INTEGER NOT NULL, amount INTEGER, dt DATE NOT NULL)",
        "CREATE TABLE fct_plain (id INTEGER NOT NULL, amount INTEGER, dt DATE NOT NULL)",
        "INSERT INTO src (id, amount, dt) SELECT seq, IF(seq % 7 = 0, NULL, seq % 100), \
         DATE_ADD('2026-01-01', INTERVAL (seq % 3) DAY) FROM seq_1_to_3000",
    ])
    .await
    .expect("setup");

    let compare = |step: &str, expect_changed: &[bool]| {
        let with = outcome(&run(&path, "with", false));
        let plain = outcome(&run(&path, "plain", true));
        assert_eq!(with.len(), 3, "{step}: {with:?}");
        assert_eq!(with, plain, "{step}");
        let changed: Vec<bool> = with
            .iter()
            .map(|o| o.4.as_bool().unwrap_or_default())
            .collect();
        assert_eq!(changed, expect_changed, "{step}");
    };
    compare("first load", &[true, true, true]);
    wh.execute_script(&["UPDATE src SET amount = 5 WHERE dt = '2026-01-02' AND id = 4"])
        .await
        .expect("change");
    compare("a row changed on day 2", &[false, true, false]);
    compare("nothing changed", &[false, false, false]);

    // The window check holds on the path that reads the window.
    let late = run(&path, "late", true);
    let error = late
        .iter()
        .find(|e| e["event"] == "partition_failed")
        .map(|e| e["error"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("{late:?}"));
    assert!(error.contains("outside its partition"), "{error}");
}

/// The console reads states through its refresh cache, which asks
/// information_schema for the target's change signal: on MariaDB a target
/// that is not there once read as "no rows returned by a query that
/// expected to return at least one row". It says what `idem status` and
/// `idem run` say: the target table does not exist.
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_missing_target_read_through_the_refresh_cache_is_named() {
    let db = TestDb::new(Kind::MySql).await.expect("mysql");
    let (_, config) = db.config(&common::replace_job("gone", "nope", "2026-01-03", SELECT));
    let wh = db.warehouse(&config).await;
    wh.make_ledger().await.expect("ledger");
    let scope = idem::state::StatusScope {
        cache: Some(idem::warehouse::RefreshCache::default()),
        ..Default::default()
    };
    let read = idem::state::job_status_scoped(
        &wh,
        &config.jobs[0],
        idem::partition::now_utc(),
        &Default::default(),
        &scope,
    )
    .await;
    let err = read.expect_err("no target").to_string();
    assert!(err.contains("target table nope does not exist"), "{err}");
    wh.close().await;
}
