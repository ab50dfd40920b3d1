//! Defaults a DBA sets on a role, a database or the server reach idem's
//! sessions: idem's own either take settings of their own in their place,
//! or say which setting stopped them and how to lift it.

mod common;

use common::{Kind, TestDb, idem};
use sqlx::{AssertSqlSafe, Row};

/// The ledger's attempts that did not succeed: each retry is one.
async fn unsucceeded_attempts(wh: &idem::warehouse::Warehouse, ledger: &str) -> i64 {
    sqlx::query(AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM {ledger} WHERE status <> 'succeeded'"
    )))
    .fetch_one(wh.pool())
    .await
    .expect("the ledger")
    .try_get::<i64, _>(0)
    .expect("a count")
}

/// QA: with `default_transaction_isolation = 'serializable'` on the
/// database (or role), four loads of one table's days at once failed each
/// other ("could not serialize access due to read/write dependencies"), and
/// a 90-day backfill ended with partitions failed past their retries.
/// idem's sessions read committed, whatever the default.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_databases_default_isolation_does_not_fail_concurrent_loads() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (path, config) = db.config(&common::replace_job("fct", "fct", "2026-03-31", select));
    let wh = db.warehouse(&config).await;
    let database = common::database(&db.url);
    common::exec(
        &wh,
        &[
            "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)".into(),
            "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)".into(),
            "INSERT INTO src SELECT g, DATE '2026-01-01' + g % 90 \
             FROM generate_series(1, 9000) g"
                .into(),
        ],
    )
    .await;
    for isolation in ["serializable", "repeatable read"] {
        common::exec(
            &wh,
            &[format!(
                "ALTER DATABASE {database} SET default_transaction_isolation = '{isolation}'"
            )],
        )
        .await;
        // Twice: the second run replaces every day while the others are
        // replaced beside it.
        for _ in 0..2 {
            let out = idem(&path, &["run", "fct", "--concurrency", "4", "--yes"]);
            let said = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{isolation}: {said}");
        }
        assert_eq!(
            unsucceeded_attempts(&wh, "idem.attempts").await,
            0,
            "{isolation}: a load failed and was retried"
        );
    }
    wh.close().await;
}
