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

/// A definition re-indented and commented is stale (a definition is its
/// text to the byte), and `idem diff` says the change is layout alone, not
/// only a diff of lines that look alike; a change of the statement is not
/// said so.
#[tokio::test]
async fn diff_says_when_definitions_differ_only_in_whitespace_or_comments() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-02", SELECT));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    wh.close().await;
    common::stdout_ok(&idem(&config, &["run", "fct"]));
    let original = std::fs::read_to_string(&config).expect("config");
    let layout_note = "they differ only in whitespace or comments";
    let edits = [
        // Trailing blanks, a tab and a comment: invisible in a diff.
        (
            "select id, dt  from src\t where dt >= :start and dt < :end -- late rows: see #42 ",
            true,
        ),
        (
            "select id, dt from src /* why */ where dt >= :start and dt < :end",
            true,
        ),
        // Another statement: a diff, without the note.
        (
            "select id, dt from src where dt > :start and dt < :end",
            false,
        ),
        // A string's spaces are the statement's.
        (
            "select id, dt from src where dt >= :start and dt < :end and 'a b' <> 'a  b'",
            false,
        ),
    ];
    for (sql, layout) in edits {
        std::fs::write(&config, original.replace(SELECT, sql)).expect("edit");
        let out = common::stdout_ok(&idem(&config, &["diff", "fct"]));
        assert!(out.contains("(2 stale partitions)"), "{sql}: {out}");
        assert_eq!(out.contains(layout_note), layout, "{sql}: {out}");
    }
}
