//! `idem status`, `idem diff` and `idem lint` on warehouses an operator
//! meets at 3 a.m.: a partition column of the wrong type, rows whose
//! partition column is NULL, a definition changed only in whitespace or its
//! target's case, a SELECT that does not fill its target's columns.

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

/// A PostgreSQL array slice with named bounds (`tags[lo:hi]`) is no
/// parameter: lint passes it and it loads (QA: `:hi` was read as a
/// parameter idem does not bind, and every partition failed).
#[tokio::test]
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
async fn postgres_an_array_slice_with_named_bounds_loads() {
    let db = TestDb::new(Kind::Postgres).await.expect("test database");
    let sql = "select id, array_to_string(tags[lo:hi], ',') as tags, dt \
               from src where dt >= :start and dt < :end";
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-02", sql));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, tags TEXT[] NOT NULL, lo INTEGER, hi INTEGER, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, tags TEXT, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '{a,b,c,d}', 2, 3, '2026-01-02')",
    ])
    .await
    .expect("setup");
    let lint = idem(&config, &["lint"]);
    assert!(
        lint.status.success(),
        "{}",
        String::from_utf8_lossy(&lint.stdout)
    );
    let run = idem(&config, &["run", "fct", "--yes"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let tags: String = sqlx::query_scalar("SELECT tags FROM fct WHERE id = 1")
        .fetch_one(wh.pool())
        .await
        .expect("read");
    assert_eq!(tags, "b,c");
    wh.close().await;
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
    // The target cased otherwise is the same table on SQLite: stale (its
    // text changed), and said to load alike, not only shown changed.
    std::fs::write(
        &config,
        original.replace("target = \"fct\"", "target = \"FCT\""),
    )
    .expect("edit");
    let out = common::stdout_ok(&idem(&config, &["diff", "fct"]));
    assert!(
        out.contains("(2 stale partitions)")
            && out.contains(
                "they differ only in how the target's name is cased, and this warehouse takes both for the same table"
            )
            && out.contains("-target = fct\n+target = FCT"),
        "{out}"
    );
}

/// Targets with rows whose partition column is NULL: `idem status` says
/// how many, once per job, in every format, so that the partitions' counts
/// plus them add up to the table's (QA: every day read "loaded", their
/// counts fell short of count(*), and nothing said why). Counted by the
/// grouped read itself, as well when the read is narrowed to a range; a
/// target of NULLs alone, an empty one and a NOT NULL column say 0.
async fn status_counts_the_rows_in_no_partition(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs: String = ["fct", "nulls", "empty", "strict"]
        .map(|t| common::replace_job(t, t, "2026-01-03", SELECT))
        .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NULL)",
        // An index on it: SQLite and MariaDB then read a table lying in the
        // range without testing the range at all.
        "CREATE INDEX fct_dt ON fct (dt)",
        "CREATE TABLE nulls (id INTEGER NOT NULL, dt DATE NULL)",
        "CREATE TABLE empty (id INTEGER NOT NULL, dt DATE NULL)",
        "CREATE TABLE strict (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO fct VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-02'), \
         (4, NULL), (5, NULL), (6, NULL)",
        "INSERT INTO nulls VALUES (1, NULL), (2, NULL)",
        "INSERT INTO strict VALUES (1, '2026-01-01')",
    ])
    .await
    .expect("setup");
    let json = |args: &[&str]| -> Vec<serde_json::Value> {
        let out = common::stdout_ok(&idem(&config, &[args, &["--format", "json"]].concat()));
        serde_json::from_str(&out).expect("json")
    };
    let null_rows = |rows: &[serde_json::Value], job: &str| -> Vec<Option<i64>> {
        rows.iter()
            .filter(|r| r["job"] == job)
            .map(|r| r["rows_null_partition"].as_i64())
            .collect()
    };
    // fct's whole table lies in the range (SQLite and MariaDB drop the
    // filter); then a row outside it makes the read test the range.
    for outside in [false, true] {
        if outside {
            wh.execute_script(&["INSERT INTO fct VALUES (7, '2025-12-31')"])
                .await
                .expect("a row outside the range");
        }
        let rows = json(&["status"]);
        assert_eq!(null_rows(&rows, "fct"), [Some(3); 3], "{rows:?}");
        let fct_rows: i64 = rows
            .iter()
            .filter(|r| r["job"] == "fct")
            .filter_map(|r| r["rows_now"].as_i64())
            .sum();
        assert_eq!(fct_rows, 3, "the NULLs are in no partition's count");
        assert_eq!(null_rows(&rows, "nulls"), [Some(2); 3]);
        assert_eq!(null_rows(&rows, "empty"), [Some(0); 3]);
        assert_eq!(null_rows(&rows, "strict"), [Some(0); 3]);
        // A read narrowed to one day counts them all the same.
        let day = json(&[
            "status",
            "fct",
            "--from",
            "2026-01-02",
            "--to",
            "2026-01-02",
        ]);
        assert_eq!(null_rows(&day, "fct"), [Some(3)], "{day:?}");
    }
    wh.close().await;

    let table = common::stdout_ok(&idem(&config, &["status"]));
    let lines: Vec<&str> = table
        .lines()
        .filter(|l| l.contains("(no partition)"))
        .collect();
    assert_eq!(lines.len(), 2, "fct and nulls, once each:\n{table}");
    assert!(
        lines[0].starts_with("fct ")
            && lines[0].contains(" 3 ")
            && lines[0].contains(
                "3 rows of fct have NULL dt: no partition counts them, and no run deletes them (see idem lint)"
            ),
        "{table}"
    );
    assert!(
        lines[1].starts_with("nulls ") && lines[1].contains("2 rows of nulls have NULL dt"),
        "{table}"
    );
    // Under the job's last partition.
    let all: Vec<&str> = table.lines().collect();
    let at = all.iter().position(|l| *l == lines[0]).expect("fct's line");
    assert!(all[at - 1].starts_with("fct ") && all[at - 1].contains("2026-01-03"));

    let csv = common::stdout_ok(&idem(&config, &["status", "--format", "csv"]));
    assert!(
        csv.lines()
            .next()
            .expect("header")
            .ends_with(",rows_null_partition,rows_source_null_partition"),
        "{csv}"
    );
    let fct_csv: Vec<&str> = csv.lines().filter(|l| l.starts_with("fct,")).collect();
    assert!(
        fct_csv.len() == 3 && fct_csv.iter().all(|l| l.ends_with(",3,")),
        "{csv}"
    );

    // `idem jobs` marks them in the job's health, from the same read (QA:
    // status said them, the health summary did not).
    let jobs = common::stdout_ok(&idem(&config, &["jobs"]));
    let health = |job: &str| {
        jobs.lines()
            .find(|l| l.starts_with(&format!("{job} ")))
            .unwrap_or_else(|| panic!("no line of {job}:\n{jobs}"))
            .to_string()
    };
    assert!(health("fct").contains("∅3 rows with NULL dt"), "{jobs}");
    assert!(health("nulls").contains("∅2 rows with NULL dt"), "{jobs}");
    for job in ["empty", "strict"] {
        assert!(!health(job).contains('∅'), "{jobs}");
    }
}

/// SELECTs whose every load fails on how they fill the target's columns,
/// which lint passed (QA, PostgreSQL): one returning a name twice (`select
/// a, dt, a`), which PostgreSQL describes and then refuses to INSERT
/// ("column "a" specified more than once"); and one leaving out a NOT NULL
/// column without a default. Lint says both, on every engine; a column the
/// table fills (a default) or that accepts NULL is no finding.
async fn lint_names_a_select_that_cannot_fill_its_target(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let window = "from src where dt >= :start and dt < :end";
    let jobs = [
        ("twice", "select id, dt, id"),
        ("leaves", "select id, dt"),
        ("fills", "select id, dt, must"),
    ]
    .map(|(name, select)| {
        common::replace_job(name, name, "2026-01-02", &format!("{select} {window}"))
    })
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    let mut script = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL, must VARCHAR(5) NOT NULL)"
            .to_string(),
        "INSERT INTO src VALUES (1, '2026-01-01', 'x')".to_string(),
    ];
    script.extend(["twice", "leaves", "fills"].map(|t| {
        format!(
            "CREATE TABLE {t} (id INTEGER NOT NULL, dt DATE NOT NULL, must VARCHAR(5) NOT NULL, \
             kept VARCHAR(5) NOT NULL DEFAULT 'k', note VARCHAR(5) NULL)"
        )
    }));
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.expect("setup");
    let job = |name: &str| parsed.jobs.iter().find(|j| j.name == name).expect("job");
    let lint = async |name: &str| {
        idem::lint::warehouse_findings(&wh, job(name))
            .await
            .expect("lint")
    };

    // Each engine in its words: SQLite renames the second id, MariaDB
    // rejects the SELECT, PostgreSQL describes it and lint reads it.
    let found = lint("twice").await;
    let errors: Vec<_> = found
        .iter()
        .filter(|f| f.severity == idem::lint::Severity::Error)
        .collect();
    let [error] = errors.as_slice() else {
        panic!("{kind:?}: {found:#?}");
    };
    let said = match kind {
        Kind::MySql => "Duplicate column name 'id'",
        Kind::Sqlite | Kind::Postgres => "the job's SELECT returns two columns named id",
    };
    assert!(error.message.contains(said), "{kind:?}: {}", error.message);

    let found = lint("leaves").await;
    let [finding] = found.as_slice() else {
        panic!("{kind:?}: {found:#?}");
    };
    assert_eq!(finding.severity, idem::lint::Severity::Warning, "{kind:?}");
    assert!(
        finding.message.starts_with(
            "column must of leaves is NOT NULL without a default, and the job's SELECT leaves must out"
        ),
        "{kind:?}: {}",
        finding.message
    );
    assert_eq!(
        finding.fix,
        "select must in the job's SQL, or give it a default in leaves"
    );
    assert!(lint("fills").await.is_empty(), "{kind:?}");

    // What lint says of them is what a run meets.
    for name in ["twice", "leaves"] {
        let out = idem(
            &config,
            &["run", name, "--from", "2026-01-01", "--to", "2026-01-01"],
        );
        assert_eq!(out.status.code(), Some(1), "{kind:?} {name}: {out:?}");
    }
    let out = idem(
        &config,
        &["run", "fills", "--from", "2026-01-01", "--to", "2026-01-01"],
    );
    assert_eq!(out.status.code(), Some(0), "{kind:?}: {out:?}");
}

on_every_engine!(
    status_counts_the_rows_in_no_partition,
    lint_names_a_select_that_cannot_fill_its_target
);
