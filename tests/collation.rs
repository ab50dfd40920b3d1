//! A change that the column's collation or type calls no change ('alice'
//! to 'Alice' under a case-insensitive collation, 1.0 to 1.000, -0 to 0) is
//! still a change: a merge writes it and counts it, and a replace's
//! fingerprint sees it. So is a change between values whose hashes a
//! type's own hash function makes alike (NULL, 0, NaN, Infinity), and one
//! that only a float's seventh digit or a value of megabytes shows, and
//! one between an INTEGER and a REAL of one value (SQLite).

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

/// A merge's key matched by its collation (`alice@x.com` to `Alice@x.com`
/// under NOCASE, a nondeterministic ICU collation, `_ci`; trailing spaces
/// under PAD SPACE) takes the source's spelling, counted as an update; two
/// source rows whose keys the target's unique index tells not apart are
/// refused, as two equal keys are; and the counts and fingerprint of a
/// window cover every row the upsert touched.
async fn a_key_matched_by_its_collation_takes_the_sources_spelling(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select email, name from src where dt >= :start and dt < :end";
    let job = format!(
        "[[jobs]]\nname = \"users\"\ntarget = \"users\"\nstrategy = \"merge_key\"\nunique_key = [\"email\"]\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\nsql = \"{select}\"\n"
    );
    let (path, config) = db.config(&job);
    let wh = db.warehouse(&config).await;
    let (setup, key): (&[&str], &str) = match kind {
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
        format!("CREATE TABLE src (email {key} NOT NULL, name TEXT NOT NULL, dt DATE NOT NULL)"),
        format!("CREATE TABLE users (email {key} NOT NULL PRIMARY KEY, name TEXT NOT NULL)"),
        "INSERT INTO src VALUES ('Alice@x.com', 'alice', '2026-01-01'), ('bob@x.com', 'bob', '2026-01-01')".into(),
    ]);
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();
    let run = |day: &str| {
        idem(
            &path,
            &[
                "run", "users", "--json", "--yes", "--from", day, "--to", day,
            ],
        )
    };
    let first = succeeded(&stdout_ok(&run("2026-01-01")));
    assert_eq!(first["rows_inserted"], 2, "{first}");

    // The key's case changes, and with it a value.
    wh.execute_script(&[
        "UPDATE src SET email = 'alice@x.com', name = 'alice2' WHERE name = 'alice'",
    ])
    .await
    .unwrap();
    let merged = succeeded(&stdout_ok(&run("2026-01-01")));
    assert_eq!(merged["rows_inserted"], 0, "{merged}");
    assert_eq!(merged["rows_updated"], 1, "{merged}");
    assert_eq!(merged["content_changed"], true, "{merged}");
    // Only the key's case changes.
    wh.execute_script(&["UPDATE src SET email = 'ALICE@x.com' WHERE name = 'alice2'"])
        .await
        .unwrap();
    let recased = succeeded(&stdout_ok(&run("2026-01-01")));
    assert_eq!(recased["rows_updated"], 1, "{recased}");
    assert_eq!(recased["content_changed"], true, "{recased}");
    let binary = match kind {
        Kind::Sqlite => "email = 'ALICE@x.com' COLLATE BINARY",
        Kind::Postgres => "email = 'ALICE@x.com' COLLATE \"C\"",
        Kind::MySql => "BINARY email = BINARY 'ALICE@x.com'",
    };
    let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM users WHERE {binary}"
    )))
    .fetch_one(wh.pool())
    .await
    .unwrap();
    assert_eq!(n, 1, "users holds the source's spelling");
    let again = succeeded(&stdout_ok(&run("2026-01-01")));
    assert_eq!(again["rows_updated"], 0, "{again}");
    assert_eq!(again["content_changed"], false, "{again}");

    // Two rows of one window whose keys differ only in case: one key to
    // the target, so the window is refused before it writes.
    wh.execute_script(&[
        "INSERT INTO src VALUES ('carol@x.com', 'carol1', '2026-01-02'), ('CAROL@X.COM', 'carol2', '2026-01-02')",
    ])
    .await
    .unwrap();
    let out = run("2026-01-02");
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{kind:?}: {said}");
    assert!(said.contains("more than once"), "{kind:?}: {said}");
    // Named as one key, in one of its spellings.
    assert!(
        said.to_lowercase()
            .contains("(2 rows share email = 'carol@x.com')"),
        "{kind:?}: {said}"
    );
    let carols: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE name LIKE 'carol%'")
        .fetch_one(wh.pool())
        .await
        .unwrap();
    assert_eq!(carols, 0, "nothing of the refused window was written");
}

on_every_engine!(
    a_case_only_change_is_a_change,
    a_key_matched_by_its_collation_takes_the_sources_spelling
);

/// Loads `values[0]` into a merge job's and a replace job's `v` column of
/// type `column`, then each next value in turn: every step is a change
/// both jobs see and write, and the last value again is none.
async fn each_change_is_seen(db: &TestDb, column: &str, values: &[&str]) {
    let select = "select id, v, dt from src where dt >= :start and dt < :end";
    let jobs = [
        common::merge_job("dim", "dim", "2026-01-01", select),
        common::replace_job("fct", "fct", "2026-01-01", select),
    ]
    .concat();
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    let tables = [
        "DROP TABLE IF EXISTS src".to_string(),
        "DROP TABLE IF EXISTS dim".to_string(),
        "DROP TABLE IF EXISTS fct".to_string(),
        format!("CREATE TABLE src (id INTEGER NOT NULL, v {column}, dt DATE NOT NULL)"),
        format!("CREATE TABLE dim (id INTEGER NOT NULL PRIMARY KEY, v {column}, dt DATE NOT NULL)"),
        format!("CREATE TABLE fct (id INTEGER NOT NULL, v {column}, dt DATE NOT NULL)"),
        format!(
            "INSERT INTO src (id, v, dt) VALUES (1, {}, '2026-01-01')",
            values[0]
        ),
    ];
    let script: Vec<&str> = tables.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();
    let run = |job: &str| succeeded(&stdout_ok(&idem(&path, &["run", job, "--json", "--yes"])));
    run("dim");
    run("fct");
    for pair in values.windows(2) {
        let change = format!("UPDATE src SET v = {}", pair[1]);
        wh.execute_script(&[&change]).await.unwrap();
        let merged = run("dim");
        assert_eq!(
            merged["rows_updated"], 1,
            "{column} {} → {}: {merged}",
            pair[0], pair[1]
        );
        assert_eq!(
            merged["content_changed"], true,
            "{column} {} → {}: {merged}",
            pair[0], pair[1]
        );
        let replaced = run("fct");
        assert_eq!(
            replaced["content_changed"], true,
            "{column} {} → {}: {replaced}",
            pair[0], pair[1]
        );
    }
    let merged = run("dim");
    assert_eq!(merged["rows_updated"], 0, "{column}: {merged}");
    assert_eq!(merged["content_changed"], false, "{column}: {merged}");
    let replaced = run("fct");
    assert_eq!(replaced["content_changed"], false, "{column}: {replaced}");
}

#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_values_equal_but_not_the_same_are_changes() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    for (column, values) in [
        (
            "NUMERIC",
            &[
                "NULL",
                "0",
                "'NaN'",
                "'Infinity'",
                "'-Infinity'",
                "1.0",
                "1.000",
                "NULL",
            ][..],
        ),
        (
            "DOUBLE PRECISION",
            &["NULL", "0", "'-0'", "'NaN'", "'Infinity'", "NULL"][..],
        ),
        ("REAL", &["NULL", "0", "'-0'", "1"][..]),
        ("INTERVAL", &["'1 day'", "'24 hours'", "NULL"][..]),
        (
            "JSONB",
            &["NULL", "'{}'", "'[]'", "'{\"a\": 1.0}'", "'{\"a\": 1.00}'"][..],
        ),
    ] {
        each_change_is_seen(&db, column, values).await;
    }
}

#[cfg_attr(not(idem_test_mysql), ignore = "needs IDEM_TEST_MYSQL_URL")]
#[tokio::test]
async fn mysql_a_floats_seventh_digit_and_a_value_of_megabytes_are_changes() {
    let Some(db) = TestDb::new(Kind::MySql).await else {
        return;
    };
    each_change_is_seen(&db, "FLOAT", &["1.0000001", "1.0000002"]).await;
    // Quoted, 9 MB of backslashes would double past the 16 MiB packet.
    each_change_is_seen(
        &db,
        "LONGTEXT",
        &[
            "REPEAT('\\\\', 9000000)",
            "REPEAT('\\\\', 8500000)",
            "'short'",
        ],
    )
    .await;
    // A long value's digest beside a short one's quoted text, in a column
    // of another character set than the connection's.
    each_change_is_seen(
        &db,
        "VARCHAR(3000) CHARACTER SET latin1",
        &["REPEAT('x', 2000)", "REPEAT('y', 2000)", "'short'"],
    )
    .await;
}

/// QA: MariaDB answers `IS NULL` on a NOT NULL date with its '0000-00-00',
/// so a merge whose DATE key held one failed its window ("job emitted 1
/// row with a NULL unique_key"), though the key matches itself as any
/// other: the window loads, and a re-run of it changes nothing.
#[cfg_attr(not(idem_test_mysql), ignore = "needs IDEM_TEST_MYSQL_URL")]
#[tokio::test]
async fn mysql_a_zero_date_key_is_a_key_not_null() {
    let Some(db) = TestDb::new(Kind::MySql).await else {
        return;
    };
    let jobs = "[[jobs]]\nname = \"dim\"\ntarget = \"dim\"\nstrategy = \"merge_key\"\n\
                unique_key = [\"d\"]\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-01\"\n\
                sql = \"select d, v from src where at >= :start and at < :end\"\n";
    let (path, config) = db.config(jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "SET SESSION sql_mode = ''",
        "CREATE TABLE src (d DATE NOT NULL, v INTEGER, at DATETIME NOT NULL)",
        "CREATE TABLE dim (d DATE NOT NULL PRIMARY KEY, v INTEGER)",
        "INSERT INTO src VALUES ('0000-00-00', 1, '2026-01-01 01:00:00'), ('2026-01-01', 2, '2026-01-01 02:00:00')",
    ])
    .await
    .expect("fixture");
    let first = succeeded(&stdout_ok(&idem(&path, &["run", "dim", "--json"])));
    assert_eq!(first["rows_inserted"], 2, "{first}");
    let again = succeeded(&stdout_ok(&idem(&path, &["run", "dim", "--json"])));
    assert_eq!(again["content_changed"], false, "{again}");
    wh.close().await;
}

/// QA: a PostgreSQL merge compared each value with `=` unless its type was
/// on a list of those without one, so a column of another such type
/// (`jsonpath`, `txid_snapshot`) failed every window ("operator does not
/// exist: jsonpath = jsonpath"), and a `numrange` whose bound went from
/// 1.0 to 1.00 was no change to the merge while the replace wrote it. Any
/// type but those whose `=` is sameness is now compared by its text.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_a_merge_of_types_without_equality_sees_each_change() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    for (column, values) in [
        ("JSONPATH", &["'$.a'", "'$.b'", "NULL", "'$.a'"][..]),
        ("TXID_SNAPSHOT", &["'10:20:10,14'", "'10:20:10'"][..]),
        ("NUMRANGE", &["'[1.0,2)'", "'[1.00,2)'", "'empty'"][..]),
        ("TIMETZ", &["'12:00+02'", "'10:00+00'"][..]),
    ] {
        each_change_is_seen(&db, column, values).await;
    }
}

/// QA: SQLite compares an INTEGER and a REAL of the same value as equal, so
/// a merge left a column of no numeric affinity holding `1.0` where the
/// source now held `1` (the replace wrote it and said "content changed").
#[tokio::test]
async fn sqlite_an_integer_turned_real_is_a_change() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    each_change_is_seen(&db, "BLOB", &["1", "1.0", "'1'", "x'31'", "1"]).await;
    // Where the column's affinity makes both one class, nothing changes.
    let select = "select id, v, dt from src where dt >= :start and dt < :end";
    let (path, config) = db.config(&common::merge_job("dim", "dim", "2026-01-01", select));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "DROP TABLE src",
        "DROP TABLE dim",
        "CREATE TABLE src (id INTEGER NOT NULL, v BLOB, dt DATE NOT NULL)",
        "CREATE TABLE dim (id INTEGER NOT NULL PRIMARY KEY, v REAL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 1, '2026-01-01')",
    ])
    .await
    .unwrap();
    let run = || succeeded(&stdout_ok(&idem(&path, &["run", "dim", "--json", "--yes"])));
    assert_eq!(run()["rows_inserted"], 1);
    wh.execute_script(&["UPDATE src SET v = 1.0"])
        .await
        .unwrap();
    let again = run();
    assert_eq!(again["rows_updated"], 0, "{again}");
    assert_eq!(again["content_changed"], false, "{again}");
}

/// QA: SQLite makes no value longer than 10^9 bytes, and a window's rows
/// reached idem as one (BLOBs in hexadecimal, control characters as JSON
/// escapes of six): every load of a window of some 500 MB of BLOBs failed
/// with "string or blob too big". Such a window is read row by row, to the
/// same fingerprint.
#[tokio::test]
async fn sqlite_a_window_too_long_for_one_value_loads_and_sees_a_change() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let select = "select id, v, dt from src where dt >= :start and dt < :end";
    let (path, config) = db.config(&common::replace_job("fct", "fct", "2026-01-01", select));
    let wh = db.warehouse(&config).await;
    // 100 MB of bytes (200 MB in hexadecimal) and 140 MB of NUL
    // characters (840 MB as JSON escapes): more than 10^9 bytes together.
    let nuls = |n: u64| format!("CAST(zeroblob({n}) AS TEXT)");
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, v, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, v, dt DATE NOT NULL)",
        &format!(
            "INSERT INTO src VALUES (1, zeroblob(100000000), '2026-01-01'), \
             (2, {}, '2026-01-01'), (3, {}, '2026-01-01')",
            nuls(70_000_000),
            nuls(70_000_000)
        ),
    ])
    .await
    .unwrap();
    let run = || succeeded(&stdout_ok(&idem(&path, &["run", "fct", "--json", "--yes"])));
    let first = run();
    assert_eq!(first["rows_inserted"], 3, "{first}");
    let again = run();
    assert_eq!(again["content_changed"], false, "{again}");
    wh.execute_script(&[&format!(
        "UPDATE src SET v = {} WHERE id = 2",
        nuls(70_000_001)
    )])
    .await
    .unwrap();
    let changed = run();
    assert_eq!(changed["content_changed"], true, "{changed}");
}

/// QA: a row of a type without a hash function (`json` here) is hashed by
/// its text, and a `bytea`'s text follows the session's `bytea_output`: a
/// database or role set to `escape` made the next re-run of unchanged rows
/// "content changed" (its fingerprint against the last load's, taken in a
/// session of the default `hex`), and the jobs downstream stale. idem's
/// sessions pin it, as they pin the other settings such texts follow.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_the_databases_text_settings_do_not_change_a_fingerprint() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let select = "select id, b, j, ts, f, iv, dt from src where dt >= :start and dt < :end";
    let (path, config) = db.config(&common::replace_job("fct", "fct", "2026-01-01", select));
    let wh = db.warehouse(&config).await;
    let columns = "id INTEGER NOT NULL, b BYTEA, j JSON, ts TIMESTAMP, f DOUBLE PRECISION, \
                   iv INTERVAL, dt DATE NOT NULL";
    wh.execute_script(&[
        &format!("CREATE TABLE src ({columns})"),
        &format!("CREATE TABLE fct ({columns})"),
        "INSERT INTO src VALUES (1, '\\x00ff', '{}', '2026-01-01 10:00', 0.1, '1 day 2 hours', '2026-01-01')",
    ])
    .await
    .unwrap();
    let run = || succeeded(&stdout_ok(&idem(&path, &["run", "fct", "--json", "--yes"])));
    assert_eq!(run()["rows_inserted"], 1);
    let database = db.url.rsplit('/').next().expect("database name");
    for setting in [
        "bytea_output = 'escape'",
        "DateStyle = 'SQL, DMY'",
        "extra_float_digits = 0",
        "IntervalStyle = 'iso_8601'",
    ] {
        wh.execute_script(&[&format!("ALTER DATABASE {database} SET {setting}")])
            .await
            .unwrap();
        let again = run();
        assert_eq!(again["content_changed"], false, "{setting}: {again}");
    }
    wh.close().await;
}

/// The options of a PostgreSQL database whose encoding is LATIN1.
const LATIN1: &str = "ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0";

/// What idem printed on stderr.
fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// QA: on a database whose encoding is LATIN1, a `--reason` outside it
/// ("重跑") failed every partition ("character with byte sequence … has no
/// equivalent in encoding LATIN1"), and as the failure's ledger row holds
/// the reason too, no failure was recorded. The run is refused before it
/// starts (exit 2, nothing written), naming the character and the
/// encoding; a reason LATIN1 has (`è`) runs and is recorded.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_a_latin1_database_refuses_a_reason_it_cannot_store() {
    let db = TestDb::postgres_with(LATIN1).await;
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (path, config) = db.config(&common::replace_job("fct", "fct", "2026-01-02", select));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&common::TWO_DAYS).await.unwrap();
    let count = |sql: &'static str| sqlx::query_scalar::<_, i64>(sql).fetch_one(wh.pool());

    let refused = idem(
        &path,
        &["run", "fct", "--yes", "--reason", "re-run après panne 重跑"],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let said = stderr(&refused);
    for part in ["\"重\" (U+91CD)", "LATIN1", "Nothing was run or recorded"] {
        assert!(said.contains(part), "{part}: {said}");
    }
    assert!(!said.contains("\"è\""), "è is LATIN1's: {said}");
    let attempts = "SELECT COUNT(*) FROM idem.attempts";
    assert_eq!(count(attempts).await.unwrap(), 0, "nothing recorded");
    assert_eq!(count("SELECT COUNT(*) FROM fct").await.unwrap(), 0);
    let preview = idem(&path, &["run", "fct", "--dry-run", "--reason", "重跑"]);
    assert_eq!(preview.status.code(), Some(2), "{}", stderr(&preview));

    let reason = "re-run après panne";
    stdout_ok(&idem(&path, &["run", "fct", "--yes", "--reason", reason]));
    let recorded: Vec<String> = sqlx::query_scalar("SELECT reason FROM idem.attempts")
        .fetch_all(wh.pool())
        .await
        .unwrap();
    assert_eq!(recorded, [reason, reason]);

    // Text outside LATIN1 in a job's own SQL is the warehouse's limit: the
    // failure is recorded, and said with the character.
    let odd = "select id, dt from src where dt >= :start and dt < :end and '重' <> ''";
    let (path, _) = db.config(&common::replace_job("odd", "fct", "2026-01-02", odd));
    let failed = idem(&path, &["run", "odd", "--yes"]);
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    let said = stderr(&failed);
    assert!(
        said.contains("gives U+91CD, which this database's encoding, LATIN1, cannot hold"),
        "{said}"
    );
    let failures = "SELECT COUNT(*) FROM idem.attempts WHERE job = 'odd' AND status = 'failed'";
    assert_eq!(count(failures).await.unwrap(), 2);
    wh.close().await;
}

/// QA: a MariaDB ledger made latin1 by an earlier idem (on a latin1
/// server) cannot store a reason outside latin1: its run failed every
/// partition, unrecorded. It is refused before it starts, saying how to
/// convert the ledger; once converted, the reason is recorded.
#[cfg_attr(not(idem_test_mysql), ignore = "needs IDEM_TEST_MYSQL_URL")]
#[tokio::test]
async fn mysql_a_latin1_ledger_refuses_a_reason_it_cannot_store() {
    let Some(db) = TestDb::new(Kind::MySql).await else {
        return;
    };
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (path, config) = db.config(&common::replace_job("fct", "fct", "2026-01-01", select));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&common::TWO_DAYS).await.unwrap();
    stdout_ok(&idem(&path, &["run", "fct", "--yes", "--reason", "first"]));
    // As an idem before utf8mb4 ledgers made it on a latin1 server.
    wh.execute_script(&["ALTER TABLE idem_attempts MODIFY reason TEXT CHARACTER SET latin1"])
        .await
        .unwrap();
    let attempts =
        || sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM idem_attempts").fetch_one(wh.pool());

    let refused = idem(&path, &["run", "fct", "--yes", "--reason", "重跑"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let said = stderr(&refused);
    let convert = "ALTER TABLE idem_attempts CONVERT TO CHARACTER SET utf8mb4";
    for part in [
        "\"重\" (U+91CD)",
        "latin1",
        convert,
        "Nothing was run or recorded",
    ] {
        assert!(said.contains(part), "{part}: {said}");
    }
    assert_eq!(attempts().await.unwrap(), 1, "nothing recorded");

    wh.execute_script(&[convert]).await.unwrap();
    stdout_ok(&idem(&path, &["run", "fct", "--yes", "--reason", "重跑"]));
    let recorded: Vec<String> = sqlx::query_scalar("SELECT reason FROM idem_attempts ORDER BY id")
        .fetch_all(wh.pool())
        .await
        .unwrap();
    assert_eq!(recorded, ["first", "重跑"]);
    wh.close().await;
}
