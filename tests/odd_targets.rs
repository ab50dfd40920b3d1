//! `idem status` and `idem diff` on warehouses an operator meets at 3 a.m.:
//! a partition column of the wrong type, a definition changed only in
//! whitespace.

mod common;

use common::{Kind, TestDb, idem};

const SELECT: &str = "select id, dt from src where dt >= :start and dt < :end";

/// A PostgreSQL target partitioned on a text column of ISO dates: status
/// names the column's type as lint does, not the server's words for the
/// count it could not run (QA: `function to_char(text, unknown) does not
/// exist`).
#[tokio::test]
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
async fn postgres_status_of_a_text_partition_column_names_its_type() {
    let db = TestDb::new(Kind::Postgres).await.expect("test database");
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-02", SELECT));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "INSERT INTO fct VALUES (1, '2026-01-01'), (2, '2026-01-02')",
    ])
    .await
    .expect("setup");
    wh.close().await;
    for format in ["table", "json", "csv"] {
        let out = idem(&config, &["status", "--format", format]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {stderr}");
        assert!(
            stderr.contains(
                "idem: fct: unreadable: partition column dt of fct is text, not a date or timestamp"
            ) && !stderr.contains("to_char"),
            "{format}: {stderr}"
        );
    }
}
