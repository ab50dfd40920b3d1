//! `idem init URL` writes a starter idem.toml whose candidate jobs are the
//! warehouse's tables with a date or timestamp column.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{Kind, TestDb};

fn idem(config: &Path, args: &[&str]) -> Output {
    crate::common::idem_command()
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .expect("run idem")
}

/// Asserts that idem exited with `code`, showing what it said where not.
fn exits(kind: Kind, out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{kind:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The starter with every candidate job uncommented.
fn uncommented(starter: &str) -> String {
    let mut out = String::new();
    let mut quotes = None;
    for line in starter.lines() {
        if line == "# [[jobs]]" {
            quotes = Some(0);
        }
        match quotes {
            Some(n) => {
                out.push_str(line.strip_prefix("# ").unwrap_or(line));
                let n = n + line.matches("\"\"\"").count();
                quotes = if n == 2 { None } else { Some(n) };
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

fn jobs_of(path: &Path, text: &str) -> Vec<idem::config::Job> {
    idem::config::parse(path, text, &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .jobs
}

#[test]
fn init_on_the_demo_warehouse() {
    let dir = tempfile::tempdir().unwrap();
    let demo = crate::common::idem_command()
        .args(["demo", "--path"])
        .arg(dir.path().join("demo"))
        .output()
        .unwrap();
    assert!(demo.status.success());
    let url = format!(
        "sqlite://{}",
        dir.path().join("demo/warehouse.db").display()
    );
    let config = dir.path().join("idem.toml");
    let out = idem(&config, &["init", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("candidate jobs"), "{said}");

    let starter = std::fs::read_to_string(&config).unwrap();
    // As written it is a valid config with no jobs yet.
    assert!(jobs_of(&config, &starter).is_empty());
    assert!(
        !starter.contains("idem_attempts"),
        "the ledger is no candidate"
    );

    let jobs = jobs_of(&config, &uncommented(&starter));
    let job = |name: &str| {
        jobs.iter()
            .find(|j| j.name == name)
            .unwrap_or_else(|| panic!("{name} in\n{starter}"))
    };
    let orders = job("fct_orders");
    assert_eq!(orders.partition_column.as_ref().unwrap().as_str(), "dt");
    assert_eq!(orders.grain.as_str(), "day");
    assert_eq!(job("fct_pageviews_hourly").grain.as_str(), "hour");
    assert_eq!(job("agg_revenue_monthly").grain.as_str(), "month");
    assert_eq!(
        job("raw_orders")
            .partition_column
            .as_ref()
            .unwrap()
            .as_str(),
        "created_at"
    );
    // A table without a date column (every column a number or plain text) is
    // not offered; the demo has none, so count what is.
    assert_eq!(jobs.len(), 7, "{starter}");

    // Uncommented, a job works on the warehouse as it stands.
    std::fs::write(&config, uncommented(&starter)).unwrap();
    let status = idem(&config, &["status", "fct_orders", "--format", "json"]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );

    // An existing config is kept unless --force.
    let again = idem(&config, &["init", &url]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists; pass --force"));
    assert!(idem(&config, &["init", &url, "--force"]).status.success());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), starter);

    let bad = idem(&dir.path().join("other.toml"), &["init", "oracle://x"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a warehouse URL"));
}

async fn init_lists_the_dated_tables(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    let timestamp = if kind == Kind::MySql {
        "DATETIME"
    } else {
        "TIMESTAMP"
    };
    let mut script = vec![
        format!("CREATE TABLE events (id INTEGER NOT NULL, happened_at {timestamp} NOT NULL)"),
        "CREATE TABLE daily (d DATE NOT NULL, n INTEGER)".to_string(),
        "CREATE TABLE counters (id INTEGER NOT NULL, n INTEGER)".to_string(),
        "INSERT INTO daily (d, n) VALUES ('2026-03-02', 1), ('2026-03-01', 2)".to_string(),
    ];
    if kind == Kind::Postgres {
        script.push("CREATE SCHEMA analytics".into());
        script.push("CREATE TABLE analytics.fct (dt DATE NOT NULL)".into());
    }
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();
    wh.close().await;

    let path = db.path().join("starter.toml");
    let out = idem(&path, &["init", &db.url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let starter = std::fs::read_to_string(&path).unwrap();
    let jobs = jobs_of(&path, &uncommented(&starter));
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert!(names.contains(&"events"), "{kind:?} {names:?}");
    assert!(names.contains(&"daily"), "{kind:?} {names:?}");
    assert!(!names.contains(&"counters"), "{kind:?}: no date column");
    assert!(
        !starter.contains("attempts"),
        "{kind:?}: the ledger is no candidate"
    );
    let daily = jobs.iter().find(|j| j.name == "daily").unwrap();
    assert_eq!(
        daily.start.name(),
        "2026-03-01",
        "{kind:?}: the first value"
    );
    if kind == Kind::Postgres {
        let fct = jobs.iter().find(|j| j.name == "fct").unwrap();
        assert_eq!(fct.target.to_string(), "analytics.fct");
    }
    if kind != Kind::Sqlite {
        // A --force that cannot write the whole starter (here a file size
        // limit of 1 KiB, as a full disk would stop it; on a server, as SQLite
        // writes files of its own when idem connects) leaves the config that
        // was there as it was, and no part file beside it.
        let mine = "# the operator's own config\n".repeat(10);
        std::fs::write(&path, &mine).unwrap();
        assert!(starter.len() > 1024, "{}", starter.len());
        let limited = Command::new("bash")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_idem"))
            .arg("--config")
            .arg(&path)
            .args(["init", &db.url, "--force"])
            .env(
                crate::common::UNICODE_GLYPHS.0,
                crate::common::UNICODE_GLYPHS.1,
            )
            .output()
            .expect("run idem");
        let stderr = String::from_utf8_lossy(&limited.stderr);
        assert_eq!(limited.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("the config there is as it was"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), mine);
        let left: Vec<_> = std::fs::read_dir(db.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".part"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // Through a symlink, the file it names is replaced, the link kept.
        let linked = db.path().join("linked.toml");
        std::os::unix::fs::symlink(&path, &linked).unwrap();
        assert!(
            idem(&linked, &["init", &db.url, "--force"])
                .status
                .success()
        );
        assert!(
            std::fs::symlink_metadata(&linked)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), starter);
    }
}

/// A name quoted for `kind`, as a test's own SQL writes it.
fn q(kind: Kind, name: &str) -> String {
    match kind {
        Kind::MySql => format!("`{name}`"),
        _ => format!("\"{name}\""),
    }
}

/// The one uncommented job of `starter` named `job`, as a config of its own.
fn only_job(starter: &str, job: &str) -> String {
    let text = uncommented(starter);
    let mut out = String::new();
    for (i, block) in text.split("\n[[jobs]]\n").enumerate() {
        if i == 0 {
            out.push_str(block);
        } else if block.starts_with(&format!("name = \"{job}\"\n")) {
            out.push_str("\n[[jobs]]\n");
            out.push_str(
                block
                    .split("\"\"\"\n")
                    .take(2)
                    .collect::<Vec<_>>()
                    .join("\"\"\"\n")
                    .as_str(),
            );
            out.push_str("\"\"\"\n");
        }
    }
    out
}

/// The names in a starter's SQL are quoted as the warehouse spells them: a
/// column named like a keyword (`user`, PostgreSQL's current_user; `order`,
/// `group`, `key`, syntax errors unquoted) or in mixed case keeps its
/// values. The SQL reads a placeholder source, not its own target: left as
/// it is, lint fails on it and a run changes nothing.
async fn a_starter_job_quotes_its_names_and_reads_no_target(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    let columns = format!(
        "(id INTEGER NOT NULL, {} VARCHAR(20), {} INTEGER, {} INTEGER, {} INTEGER, {} INTEGER, dt DATE NOT NULL)",
        q(kind, "user"),
        q(kind, "order"),
        q(kind, "group"),
        q(kind, "key"),
        q(kind, "Amount"),
    );
    let orders = q(kind, "Orders");
    let script = [
        format!("CREATE TABLE {orders} {columns}"),
        format!("CREATE TABLE src_orders {columns}"),
        format!(
            "INSERT INTO {orders} VALUES (1, 'old', 0, 0, 0, 0, '2026-03-01'), (2, 'old', 0, 0, 0, 0, '2026-03-02')"
        ),
        "INSERT INTO src_orders VALUES (1, 'alice', 1, 2, 3, 40, '2026-03-01'), (2, 'bob', 5, 6, 7, 80, '2026-03-02')"
            .to_string(),
    ];
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();

    let path = db.path().join("starter.toml");
    let out = idem(&path, &["init", &db.url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let starter = std::fs::read_to_string(&path).unwrap();
    let job = only_job(&starter, "Orders");
    assert!(job.contains("partition_column = \"dt\""), "{job}");
    assert!(job.contains("start = \"2026-03-01\""), "{job}");
    assert!(job.contains("from <source>"), "{job}");

    // As uncommented: lint fails on the placeholder, a run writes nothing.
    let config_path = db.path().join("idem.toml");
    std::fs::write(&config_path, &job).unwrap();
    let lint = idem(&config_path, &["lint"]);
    assert_eq!(
        lint.status.code(),
        Some(1),
        "{kind:?}: {}",
        String::from_utf8_lossy(&lint.stdout)
    );
    let run = idem(
        &config_path,
        &[
            "run",
            "Orders",
            "--from",
            "2026-03-01",
            "--to",
            "2026-03-02",
        ],
    );
    assert_ne!(run.status.code(), Some(0), "{kind:?}");
    let values = |sql: String| {
        let wh = &wh;
        async move {
            let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_all(wh.pool())
                .await
                .unwrap();
            rows.iter()
                .map(|r| {
                    use sqlx::Row;
                    (0..6)
                        .map(|i| {
                            r.try_get::<String, _>(i)
                                .or_else(|_| r.try_get::<i64, _>(i).map(|n| n.to_string()))
                                .or_else(|_| r.try_get::<i32, _>(i).map(|n| n.to_string()))
                                .unwrap()
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect::<Vec<_>>()
        }
    };
    let read = |table: &str| {
        format!(
            "SELECT id, {}, {}, {}, {}, {} FROM {table} ORDER BY id",
            q(kind, "user"),
            q(kind, "order"),
            q(kind, "group"),
            q(kind, "key"),
            q(kind, "Amount")
        )
    };
    assert_eq!(
        values(read(&orders)).await,
        ["1,old,0,0,0,0", "2,old,0,0,0,0"],
        "{kind:?}: a run of the placeholder changed the target"
    );

    // Pointed at a source without one of its columns, lint says so: on
    // SQLite too, which reads a double-quoted name of no column as a string.
    wh.execute_script(&["CREATE TABLE src_short (id INTEGER NOT NULL, dt DATE NOT NULL)"])
        .await
        .unwrap();
    std::fs::write(&config_path, job.replace("<source>", "src_short")).unwrap();
    let lint = idem(&config_path, &["lint"]);
    exits(kind, &lint, 1);

    // Pointed at its source, it lints clean and loads every value as it is.
    std::fs::write(&config_path, job.replace("<source>", "src_orders")).unwrap();
    let lint = idem(&config_path, &["lint"]);
    exits(kind, &lint, 0);
    let run = idem(
        &config_path,
        &[
            "run",
            "Orders",
            "--from",
            "2026-03-01",
            "--to",
            "2026-03-02",
        ],
    );
    exits(kind, &run, 0);
    assert_eq!(
        values(read(&orders)).await,
        ["1,alice,1,2,3,40", "2,bob,5,6,7,80"],
        "{kind:?}"
    );
    wh.close().await;
}

/// What init leaves out it names, with why: PostgreSQL's partitions (the
/// parent is offered), views, materialized views, names a config cannot
/// write, tables with a column a run cannot name (QA: they were offered, their
/// SELECT leaving the column out, and every load of them was refused), tables
/// with no date column. A placeholder smallest value
/// (`-infinity`, a BC date, MariaDB's `0000-00-00`) is not the start.
async fn init_says_what_it_leaves_out(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    let mut script = vec![
        "CREATE TABLE counters (id INTEGER NOT NULL, n INTEGER)".to_string(),
        format!("CREATE TABLE {} (dt DATE NOT NULL)", q(kind, "my table")),
        // A column a run cannot name: its starter job could never load.
        format!(
            "CREATE TABLE priced (dt DATE NOT NULL, {} INTEGER)",
            q(kind, "unit price")
        ),
        format!("CREATE TABLE dated_oddly ({} DATE)", q(kind, "créé")),
        "CREATE TABLE daily (d DATE NOT NULL, n INTEGER)".to_string(),
        "INSERT INTO daily VALUES ('2026-03-02', 1), ('2026-03-01', 2)".to_string(),
        "CREATE VIEW v_daily AS SELECT d, n FROM daily".to_string(),
    ];
    match kind {
        Kind::Postgres => script.extend([
            "INSERT INTO daily VALUES ('-infinity', 3), ('0044-03-15 BC', 4)".to_string(),
            "CREATE TABLE events (id INTEGER, ts TIMESTAMPTZ NOT NULL) PARTITION BY RANGE (ts)".into(),
            "CREATE TABLE events_2026_01 PARTITION OF events FOR VALUES FROM ('2026-01-01') TO ('2026-02-01')".into(),
            "CREATE TABLE events_2026_02 PARTITION OF events FOR VALUES FROM ('2026-02-01') TO ('2026-03-01')".into(),
            "INSERT INTO events VALUES (1, '2026-01-05 10:00:00+00'), (2, '2026-02-05 10:00:00+00')".into(),
            "CREATE MATERIALIZED VIEW mv_daily AS SELECT d, n FROM daily".into(),
            // A range of dates is no date: its type name begins with "date",
            // and min() of it is an error that stopped init as a whole.
            // A partition of a partition is loaded through the topmost table.
            "CREATE TABLE sales (id INTEGER, region TEXT, d DATE NOT NULL) PARTITION BY RANGE (d)".into(),
            "CREATE TABLE sales_2026 PARTITION OF sales FOR VALUES FROM ('2026-01-01') TO ('2027-01-01') PARTITION BY LIST (region)".into(),
            "CREATE TABLE sales_2026_eu PARTITION OF sales_2026 FOR VALUES IN ('eu')".into(),
            "CREATE TABLE spans (id INTEGER, valid DATERANGE)".into(),
            "INSERT INTO spans VALUES (1, '[2026-01-01,2026-02-01)')".into(),
        ]),
        Kind::MySql => script.extend([
            "SET SESSION sql_mode = ''".to_string(),
            "INSERT INTO daily VALUES ('0000-00-00', 3)".into(),
            // A zero day in a real month is no date either (QA: the
            // comment said "first value 2026-02-00").
            "INSERT INTO daily VALUES ('2026-02-00', 5)".into(),
        ]),
        Kind::Sqlite => {}
    }
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();
    wh.close().await;

    let path = db.path().join("starter.toml");
    let out = idem(&path, &["init", &db.url]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let starter = std::fs::read_to_string(&path).unwrap();
    let jobs = jobs_of(&path, &uncommented(&starter));
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    for (what, names) in [
        ("views (idem loads into tables): ", "v_daily"),
        ("names a config cannot write", "\"my table\""),
        ("no date or timestamp column", "counters"),
        (
            "a column whose name idem cannot write",
            "priced (\"unit price\")",
        ),
        (
            "a column whose name idem cannot write",
            "dated_oddly (\"créé\")",
        ),
    ] {
        let line = said
            .lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("{kind:?} {what}: {said}"));
        assert!(line.contains(names), "{kind:?}: {line}");
        assert!(
            starter.contains(line.trim()),
            "{kind:?}: {line} in\n{starter}"
        );
    }
    let daily = jobs.iter().find(|j| j.name == "daily").unwrap();
    assert_eq!(
        daily.start.name(),
        "2026-03-01",
        "{kind:?}: the first real date"
    );
    let about = starter
        .lines()
        .find(|l| l.starts_with("# daily: partitioned by d"))
        .unwrap_or_else(|| panic!("{kind:?}: {starter}"));
    assert!(
        about.contains(", first value 2026-03-01"),
        "{kind:?}: the comment says the start's value: {about}"
    );
    if kind == Kind::Postgres {
        assert!(names.contains(&"events"), "{names:?}");
        assert!(!names.iter().any(|n| n.starts_with("events_")), "{names:?}");
        assert!(
            said.contains("partitions of events (loaded through it, offered as events): events_2026_01, events_2026_02"),
            "{said}"
        );
        assert!(
            said.contains("materialized views") && said.contains("mv_daily"),
            "{said}"
        );
        assert!(
            said.lines()
                .any(|l| l.contains("no date or timestamp column") && l.contains("spans")),
            "{said}"
        );
        assert!(
            said.contains("partitions of sales (loaded through it, offered as sales): sales_2026, sales_2026_eu"),
            "{said}"
        );
    }
    assert_eq!(
        names.len(),
        if kind == Kind::Postgres { 3 } else { 1 },
        "{kind:?} {names:?}"
    );
}

/// A column the table computes (generated, stored or virtual) cannot be
/// written by an INSERT: the starter's SELECT leaves it out, and says so,
/// so that the job loads as written (QA: it selected it, lint passed and
/// every load failed with "cannot insert a non-DEFAULT value").
async fn a_starter_leaves_out_what_the_table_computes(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE sales (id INTEGER NOT NULL, n INTEGER, doubled INTEGER GENERATED ALWAYS AS (n * 2) STORED, d DATE NOT NULL)",
        "CREATE TABLE src_sales (id INTEGER NOT NULL, n INTEGER, d DATE NOT NULL)",
        "INSERT INTO src_sales (id, n, d) VALUES (1, 5, '2026-03-01'), (2, 7, '2026-03-02')",
        "INSERT INTO sales (id, n, d) VALUES (1, 1, '2026-03-01')",
    ])
    .await
    .unwrap();

    let path = db.path().join("starter.toml");
    let out = idem(&path, &["init", &db.url]);
    exits(kind, &out, 0);
    let starter = std::fs::read_to_string(&path).unwrap();
    assert!(
        starter.contains("# Left out of the SELECT, as the table computes them and an INSERT may not write them: doubled (generated)"),
        "{kind:?}: {starter}"
    );
    let job = only_job(&starter, "sales");
    let select = job.lines().find(|l| l.starts_with("select ")).unwrap();
    assert!(!select.contains("doubled"), "{kind:?}: {job}");
    assert!(
        select.contains("id") && select.contains("n"),
        "{kind:?}: {job}"
    );

    let config_path = db.path().join("idem.toml");
    std::fs::write(&config_path, job.replace("<source>", "src_sales")).unwrap();
    let lint = idem(&config_path, &["lint"]);
    exits(kind, &lint, 0);
    let run = idem(
        &config_path,
        &["run", "sales", "--from", "2026-03-01", "--to", "2026-03-02"],
    );
    exits(kind, &run, 0);
    let rows = sqlx::query(sqlx::AssertSqlSafe(
        "SELECT CAST(SUM(doubled) AS INTEGER) FROM sales".to_string(),
    ))
    .fetch_one(wh.pool())
    .await
    .unwrap();
    use sqlx::Row;
    let sum: i64 = rows
        .try_get::<i64, _>(0)
        .or_else(|_| rows.try_get::<i32, _>(0).map(i64::from))
        .unwrap();
    assert_eq!(sum, 24, "{kind:?}: the table computed doubled");
    wh.close().await;
}

/// The grain a starter job suggests follows a sample of the column's
/// values, not its first alone: a table whose first row lies at midnight
/// and the others on the hour is hourly, one whose dates are all months'
/// first days monthly, and midnights of several days are daily whatever
/// the column is called (QA: each was guessed from the first value).
async fn init_guesses_the_grain_from_a_sample_of_values(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    let timestamp = if kind == Kind::MySql {
        "DATETIME"
    } else {
        "TIMESTAMP"
    };
    let script = [
        format!("CREATE TABLE by_hour (id INTEGER NOT NULL, ts {timestamp} NOT NULL)"),
        "INSERT INTO by_hour VALUES (1, '2026-03-01 00:00:00'), (2, '2026-03-01 01:00:00'), (3, '2026-03-01 02:00:00'), (4, '2026-03-02 23:00:00')".to_string(),
        "CREATE TABLE by_month (id INTEGER NOT NULL, d DATE NOT NULL)".to_string(),
        "INSERT INTO by_month VALUES (1, '2026-01-01'), (2, '2026-02-01'), (3, '2026-03-01')".to_string(),
        format!("CREATE TABLE by_day (id INTEGER NOT NULL, at_hour {timestamp} NOT NULL)"),
        "INSERT INTO by_day VALUES (1, '2026-03-01 00:00:00'), (2, '2026-03-02 00:00:00')".to_string(),
    ];
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();
    wh.close().await;

    let path = db.path().join("starter.toml");
    let out = idem(&path, &["init", &db.url]);
    exits(kind, &out, 0);
    let starter = std::fs::read_to_string(&path).unwrap();
    let jobs = jobs_of(&path, &uncommented(&starter));
    let guess = |name: &str| {
        let job = jobs
            .iter()
            .find(|j| j.name == name)
            .unwrap_or_else(|| panic!("{kind:?}: {name} in {starter}"));
        (job.grain.as_str(), job.start.name())
    };
    assert_eq!(
        guess("by_hour"),
        ("hour", "2026-03-01T00".into()),
        "{kind:?}"
    );
    assert_eq!(guess("by_month"), ("month", "2026-01".into()), "{kind:?}");
    assert_eq!(guess("by_day"), ("day", "2026-03-01".into()), "{kind:?}");
}

on_every_engine!(
    init_lists_the_dated_tables,
    a_starter_job_quotes_its_names_and_reads_no_target,
    init_says_what_it_leaves_out,
    a_starter_leaves_out_what_the_table_computes,
    init_guesses_the_grain_from_a_sample_of_values
);

/// SQLite: a column is a date column when its values are dates whole, not
/// text that begins with one. The URL is written to work from any folder,
/// without `mode=rwc`. The starter's comments read right.
#[test]
fn sqlite_starters_read_whole_dates_and_keep_a_url_that_works_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let setup = Command::new("sqlite3")
        .arg(&db)
        .arg(
            "CREATE TABLE notes (note TEXT, dt TEXT, at);
             INSERT INTO notes VALUES ('2026-01-01 is a note', '2026-02-03', '2026-02-03 10:00:00'),
                                      ('zzz', '2026-02-04', '2026-02-04 10:00:00');
             CREATE TABLE hourly (hour_at, n INTEGER);
             INSERT INTO hourly VALUES ('2026-02-03 10:00:00', 1);
             CREATE TABLE monthly (month TEXT, n INTEGER);
             INSERT INTO monthly VALUES ('2026-02', 1);",
        )
        .output()
        .expect("sqlite3");
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    // Relative to the folder init runs in, with mode=rwc.
    let config = dir.path().join("conf/idem.toml");
    std::fs::create_dir(dir.path().join("conf")).unwrap();
    let out = crate::common::idem_command()
        .current_dir(dir.path())
        .args([
            "--config",
            "conf/idem.toml",
            "init",
            "sqlite://s.db?mode=rwc",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let starter = std::fs::read_to_string(&config).unwrap();
    let jobs = jobs_of(&config, &uncommented(&starter));
    let notes = jobs.iter().find(|j| j.name == "notes").expect("notes");
    assert_eq!(
        notes.partition_column.as_ref().unwrap().as_str(),
        "dt",
        "{starter}"
    );
    assert_eq!(notes.start.name(), "2026-02-03");
    let canonical = std::fs::canonicalize(&db).unwrap();
    assert!(
        starter.contains(&format!(
            "url = \"sqlite://{}\"   # or",
            canonical.display()
        )),
        "{starter}"
    );
    assert!(!starter.contains("mode=rwc"), "{starter}");
    // Comments: no `()` for an untyped column, aligned after any grain.
    assert!(
        starter.contains("# hourly: partitioned by hour_at, first value"),
        "{starter}"
    );
    for grain in ["hour", "day", "month"] {
        let line = format!("# grain = \"{grain}\"");
        let at = starter
            .lines()
            .find(|l| l.starts_with(&line))
            .unwrap_or_else(|| panic!("{grain} in {starter}"));
        assert_eq!(at.find("# hour | day | month"), Some(35), "{at}");
    }
    // From another folder, the config names the same warehouse.
    std::fs::write(&config, uncommented(&starter).replace("<source>", "notes")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let status = crate::common::idem_command()
        .current_dir(elsewhere.path())
        .arg("--config")
        .arg(&config)
        .args(["status", "notes", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );

    // A URL from the environment is written as it was given.
    let from_env = dir.path().join("env.toml");
    let out = crate::common::idem_command()
        .env("DATABASE_URL", format!("sqlite://{}", db.display()))
        .arg("--config")
        .arg(&from_env)
        .args(["init", "${DATABASE_URL}"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let starter = std::fs::read_to_string(&from_env).unwrap();
    assert!(
        starter.contains("url = \"${DATABASE_URL}\"   # ${VAR} expands from the environment\n"),
        "{starter}"
    );
}

/// A warehouse with no dated table: the starter and the output say to add
/// jobs, not to uncomment ones that are not there.
#[test]
fn a_warehouse_without_dated_tables_is_told_to_add_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let setup = Command::new("sqlite3")
        .arg(&db)
        .arg("CREATE TABLE counters (id INTEGER, n INTEGER);")
        .output()
        .expect("sqlite3");
    assert!(setup.status.success());
    let config = dir.path().join("idem.toml");
    let out = idem(&config, &["init", &format!("sqlite://{}", db.display())]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("0 candidate jobs"), "{said}");
    assert!(!said.contains("uncomment"), "{said}");
    assert!(
        said.contains("next: add a [[jobs]] table per load"),
        "{said}"
    );
    // The commands it prints name the config it wrote, so they run as
    // printed from anywhere.
    let config_flag = format!(
        "--config {}",
        std::fs::canonicalize(&config).unwrap().display()
    );
    assert!(
        said.contains(&format!(
            "then `idem {config_flag} lint` and `idem {config_flag} status`"
        )),
        "{said}"
    );
    let starter = std::fs::read_to_string(&config).unwrap();
    assert!(starter.contains("Add jobs"), "{starter}");
    assert!(jobs_of(&config, &starter).is_empty());
}

/// A URL init refuses before connecting is named without its password.
#[test]
fn a_refused_url_is_said_without_its_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = idem(
        &dir.path().join("idem.toml"),
        &["init", "mysql://root:s3cret@127.0.0.1:1"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("names no database"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

/// A --config in a folder that is not there is a usage error said before
/// the warehouse is read, naming the folder to make.
#[test]
fn a_config_in_a_missing_folder_is_refused_first() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("conf/sub/idem.toml");
    // A URL that would fail to connect: the folder is said first.
    let out = idem(&config, &["init", "postgres://postgres@127.0.0.1:1/none"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "there is no folder {}; make it first",
            dir.path().join("conf/sub").display()
        )),
        "{stderr}"
    );
}

/// `--config` a symlink: init writes the file it names, and the link stays
/// a link. A dangling link (a dotfiles link made before its file) has its
/// file made, where that file's folder is there; where it is not, init
/// refuses before reading the warehouse, naming both; an existing file
/// behind a link needs --force as any existing config does; a loop of
/// links is refused (QA: a dangling link was replaced by a plain file).
#[test]
fn init_writes_through_a_symlink_even_a_dangling_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    std::fs::File::create(&db).unwrap();
    let url = format!("sqlite://{}", db.display());
    let is_link = |p: &Path| {
        std::fs::symlink_metadata(p)
            .unwrap()
            .file_type()
            .is_symlink()
    };

    // Dangling, relative, into a folder that is there.
    std::fs::create_dir(dir.path().join("dotfiles")).unwrap();
    let link = dir.path().join("idem.toml");
    std::os::unix::fs::symlink("dotfiles/idem.toml", &link).unwrap();
    let out = idem(&link, &["init", &url]);
    exits(Kind::Sqlite, &out, 0);
    assert!(is_link(&link), "the link was replaced");
    let written = std::fs::read_to_string(dir.path().join("dotfiles/idem.toml")).unwrap();
    assert!(written.contains("[warehouse]"), "{written}");

    // Now it names a file: as any existing config, it needs --force.
    let again = idem(&link, &["init", &url]);
    exits(Kind::Sqlite, &again, 2);
    assert!(String::from_utf8_lossy(&again.stderr).contains("pass --force"));
    exits(Kind::Sqlite, &idem(&link, &["init", &url, "--force"]), 0);
    assert!(is_link(&link));

    // A chain of links, the last dangling: the file at its end.
    let chained = dir.path().join("chained.toml");
    std::os::unix::fs::symlink(dir.path().join("middle.toml"), &chained).unwrap();
    std::os::unix::fs::symlink("dotfiles/end.toml", dir.path().join("middle.toml")).unwrap();
    exits(Kind::Sqlite, &idem(&chained, &["init", &url]), 0);
    assert!(is_link(&chained) && is_link(&dir.path().join("middle.toml")));
    assert!(dir.path().join("dotfiles/end.toml").is_file());

    // Into a folder that is not there: refused, naming the link's file.
    let nowhere = dir.path().join("nowhere.toml");
    std::os::unix::fs::symlink(dir.path().join("gone/idem.toml"), &nowhere).unwrap();
    let out = idem(&nowhere, &["init", &url]);
    exits(Kind::Sqlite, &out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot write {} (a symlink to {}): there is no folder {}",
            nowhere.display(),
            dir.path().join("gone/idem.toml").display(),
            dir.path().join("gone").display()
        )),
        "{stderr}"
    );
    assert!(is_link(&nowhere));

    // A loop.
    let looped = dir.path().join("loop.toml");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    let out = idem(&looped, &["init", &url]);
    exits(Kind::Sqlite, &out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("a symlink that leads to itself"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(is_link(&looped));
}

/// PostgreSQL: a role that may not read every table. A table in a schema
/// it has no USAGE on (QA: init failed whole with "permission denied for
/// schema"), or without SELECT on it (QA: left out without a word), is
/// named as one the role may not read; the tables it reads are offered.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_init_names_the_tables_its_role_may_not_read() {
    let db = TestDb::new(Kind::Postgres).await.expect("server");
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    let database = db
        .url
        .split('?')
        .next()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let role = format!("{database}_init");
    wh.execute_script(&[
        "CREATE SCHEMA hidden",
        "CREATE SCHEMA closed",
        "CREATE TABLE hidden.salaries (paid_on DATE NOT NULL)",
        "CREATE TABLE closed.bonuses (paid_on DATE NOT NULL)",
        "CREATE TABLE orders (id INTEGER, dt DATE NOT NULL)",
        "INSERT INTO orders VALUES (1, '2026-01-02')",
        &format!("CREATE ROLE {role} LOGIN"),
        &format!("GRANT USAGE ON SCHEMA closed TO {role}"),
        &format!("GRANT SELECT ON orders, hidden.salaries TO {role}"),
        // The ledger the test's warehouse made, which init reads.
        &format!("GRANT USAGE ON SCHEMA idem TO {role}"),
        &format!("GRANT SELECT ON idem.attempts, idem.definitions TO {role}"),
    ])
    .await
    .unwrap();
    let (scheme, rest) = db.url.split_once("://").unwrap();
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    let path = db.path().join("starter.toml");
    let out = idem(&path, &["init", &format!("{scheme}://{role}@{host}")]);
    let starter = std::fs::read_to_string(&path).unwrap_or_default();
    wh.execute_script(&[
        &format!("DROP OWNED BY {role}"),
        &format!("DROP ROLE {role}"),
    ])
    .await
    .unwrap();
    wh.close().await;

    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let jobs = jobs_of(&path, &uncommented(&starter));
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["orders"], "{starter}");
    let line = "tables this role may not read (a run needs USAGE on the schema and SELECT on the table): closed.bonuses, hidden.salaries";
    assert!(said.contains(line), "{said}");
    assert!(starter.contains(line), "{starter}");
}

/// `idem init` of the warehouse once `script` has run on it: what it said
/// on stdout, the starter it wrote, and the starter's jobs (its candidates
/// uncommented).
async fn starter_after(
    db: &TestDb,
    wh: idem::warehouse::Warehouse,
    kind: Kind,
    script: &[String],
) -> (String, String, Vec<idem::config::Job>) {
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();
    wh.close().await;
    let path = db.path().join("starter.toml");
    let out = idem(&path, &["init", &db.url]);
    exits(kind, &out, 0);
    let starter = std::fs::read_to_string(&path).unwrap();
    let jobs = jobs_of(&path, &uncommented(&starter));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        starter,
        jobs,
    )
}

/// QA: `idem init` read each candidate's first and last dates with a
/// MIN/MAX over the whole table where no index begins with the column: on
/// a billion rows, minutes of a silent terminal (and, once killed, of the
/// server's time). An index gives them exactly; without one only the first
/// rows read are, and the starter and the terminal say so. A column of
/// NULLs is not read to its end either.
mod big_tables {
    use super::*;

    async fn init_reads_no_big_table_whole(kind: Kind) {
        let Some(db) = TestDb::new(kind).await else {
            return;
        };
        let (_, config) = db.config("");
        let wh = db.warehouse(&config).await;
        let rows = |table: &str, value: &str| match kind {
            Kind::Postgres => format!(
                "INSERT INTO {table} SELECT i, {value} FROM generate_series(1, 120000) AS s(i)"
            ),
            Kind::MySql => format!("INSERT INTO {table} SELECT seq, {value} FROM seq_1_to_120000"),
            Kind::Sqlite => format!(
                "INSERT INTO {table} WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 120000) SELECT i, {value} FROM s"
            ),
        };
        // 120,000 rows of 2026 in the order they were written, then one of
        // 2020: the first value is read from the index, or said to be of
        // the first rows only.
        let day = match kind {
            Kind::Postgres => "DATE '2026-01-01' + (i % 300)",
            Kind::MySql => "DATE '2026-01-01' + INTERVAL (seq % 300) DAY",
            Kind::Sqlite => "date('2026-01-01', '+' || (i % 300) || ' days')",
        };
        let mut script = Vec::new();
        for table in ["plain", "indexed"] {
            script.push(format!(
                "CREATE TABLE {table} (id INTEGER NOT NULL PRIMARY KEY, d DATE)"
            ));
            script.push(rows(table, day));
            script.push(format!("INSERT INTO {table} VALUES (200000, '2020-01-01')"));
        }
        script.push("CREATE INDEX indexed_d ON indexed (d)".into());
        script.push("CREATE TABLE nulls (id INTEGER NOT NULL PRIMARY KEY, d DATE)".into());
        script.push(rows("nulls", "NULL"));
        script.push("INSERT INTO nulls VALUES (200000, '2020-01-01')".into());
        let (said, starter, jobs) = starter_after(&db, wh, kind, &script).await;
        let start = |name: &str| {
            let job = jobs.iter().find(|j| j.name == name);
            job.unwrap_or_else(|| panic!("{kind:?}: {name} in {starter}"))
                .start
                .name()
        };
        assert_eq!(start("indexed"), "2020-01-01", "{kind:?}: {starter}");
        let about = |table: &str| {
            let head = format!("# {table}: partitioned by d (");
            let line = starter.lines().find(|l| l.starts_with(&head));
            line.unwrap_or_else(|| panic!("{kind:?}: {head} in {starter}"))
                .to_string()
        };
        assert!(
            about("indexed").ends_with("), first value 2020-01-01"),
            "{kind:?}: {starter}"
        );
        let partial =
            "in the first 100,000 rows read (d has no index; earlier rows may follow: check start)";
        assert_eq!(start("plain"), "2026-01-01", "{kind:?}: {starter}");
        assert!(
            about("plain").ends_with(&format!("), first value 2026-01-01 {partial}")),
            "{kind:?}: {starter}"
        );
        assert!(
            said.contains(&format!("plain: first value 2026-01-01 {partial}\n")),
            "{kind:?}: {said}"
        );
        assert!(!said.contains("indexed:"), "{kind:?}: {said}");
        assert!(about("nulls").ends_with("), empty"), "{kind:?}: {starter}");
    }

    on_every_engine!(init_reads_no_big_table_whole);
}

/// QA: a date column holding "unknown" written as a date (`0001-01-01`,
/// `1900-01-01`, `9999-12-31`) was started at `0001-01-01`, and `idem
/// status` then listed 742,831 partitions. The start is now the first date
/// from 1970 to today, read through an index or from the rows read without
/// one; the grain is read from those dates alone; and the starter and the
/// terminal name what was left out, and on how many rows.
mod placeholders {
    use super::*;

    async fn init_leaves_out_placeholder_dates(kind: Kind) {
        let Some(db) = TestDb::new(kind).await else {
            return;
        };
        let (_, config) = db.config("");
        let wh = db.warehouse(&config).await;
        let timestamp = if kind == Kind::MySql {
            "DATETIME"
        } else {
            "TIMESTAMP"
        };
        let mut script = Vec::new();
        for table in ["unknowns", "unknowns_indexed"] {
            script.push(format!(
                "CREATE TABLE {table} (id INTEGER NOT NULL PRIMARY KEY, d DATE)"
            ));
            script.push(format!(
                "INSERT INTO {table} VALUES (1, '1900-01-01'), (2, '2026-03-02'), (3, '0001-01-01'), \
                 (4, '9999-12-31'), (5, '2026-03-01'), (6, '1900-01-01'), (7, NULL)"
            ));
        }
        script.push("CREATE INDEX unknowns_indexed_d ON unknowns_indexed (d)".into());
        // Months' first days, and a far end: monthly all the same.
        script.push(format!(
            "CREATE TABLE periods (id INTEGER NOT NULL PRIMARY KEY, period {timestamp})"
        ));
        script.push(
            "INSERT INTO periods VALUES (1, '2026-01-01 00:00:00'), (2, '2026-02-01 00:00:00'), \
             (3, '9999-12-31 23:59:59'), (4, '2026-03-01 00:00:00')"
                .into(),
        );
        // Days and months ahead are real dates (a zone ahead of the
        // warehouse's clock, a delivery day): only beyond a year is a
        // value taken for "never" written as a date.
        let today = chrono::Utc::now().date_naive();
        let ahead = |days: u64| (today + chrono::Days::new(days)).to_string();
        for table in ["ahead", "ahead_indexed"] {
            script.push(format!(
                "CREATE TABLE {table} (id INTEGER NOT NULL PRIMARY KEY, d DATE)"
            ));
            script.push(format!(
                "INSERT INTO {table} VALUES (1, '2026-03-01'), (2, '{}'), (3, '{}'), (4, '2999-01-01')",
                ahead(1),
                ahead(40)
            ));
        }
        script.push("CREATE INDEX ahead_indexed_d ON ahead_indexed (d)".into());
        script.push("CREATE TABLE all_unknown (id INTEGER NOT NULL PRIMARY KEY, d DATE)".into());
        script.push("INSERT INTO all_unknown VALUES (1, '1900-01-01')".into());
        let (said, starter, jobs) = starter_after(&db, wh, kind, &script).await;
        let job = |name: &str| {
            let job = jobs.iter().find(|j| j.name == name);
            let job = job.unwrap_or_else(|| panic!("{kind:?}: {name} in {starter}"));
            (job.grain.as_str(), job.start.name())
        };
        let left_out = "as likely placeholders: 3 rows of 0001-01-01 to 1900-01-01, \
                        before 1970-01-01; 1 row of 9999-12-31, after ";
        for table in ["unknowns", "unknowns_indexed"] {
            assert_eq!(
                job(table),
                ("day", "2026-03-01".into()),
                "{kind:?}: {starter}"
            );
            let head = format!("# {table}: partitioned by d (");
            let mut lines = starter.lines().skip_while(|l| !l.starts_with(&head));
            let about = lines
                .next()
                .unwrap_or_else(|| panic!("{kind:?}: {head} in {starter}"));
            assert!(
                about.ends_with("), first value 2026-03-01"),
                "{kind:?}: {starter}"
            );
            assert!(
                lines
                    .next()
                    .is_some_and(|l| l.starts_with(&format!("# Left out {left_out}"))),
                "{kind:?}: {starter}"
            );
            assert_eq!(
                lines.next(),
                Some(
                    "# (if any before 1970-01-01 are real dates, move start back to the first of them)"
                ),
                "{kind:?}: {starter}"
            );
            assert!(
                said.contains(&format!(
                    "\n{table}: start 2026-03-01, leaving out {left_out}"
                )),
                "{kind:?}: {said}"
            );
        }
        assert_eq!(
            job("periods"),
            ("month", "2026-01".into()),
            "{kind:?}: {starter}"
        );
        assert!(
            said.contains(
                "\nperiods: start 2026-01, leaving out as likely placeholders: 1 row of 9999-12-31"
            ),
            "{kind:?}: {said}"
        );
        let a_year_on = today
            .checked_add_months(chrono::Months::new(12))
            .unwrap_or(today);
        for table in ["ahead", "ahead_indexed"] {
            assert!(
                said.contains(&format!(
                    "\n{table}: start 2026-03-01, leaving out as likely placeholders: \
                     1 row of 2999-01-01, after {a_year_on} (a year from today)\n"
                )),
                "{kind:?}: {said}"
            );
        }
        // Nothing plausible: started as an empty table is, and said so.
        let this_month = chrono::Utc::now().format("%Y-%m-01").to_string();
        assert_eq!(
            job("all_unknown"),
            ("day", this_month),
            "{kind:?}: {starter}"
        );
        assert!(
            starter.contains(
                "), no date from 1970-01-01 to a year from today (start is this month's first day)\n\
                 # Left out as likely placeholders: 1 row of 1900-01-01, before 1970-01-01\n"
            ),
            "{kind:?}: {starter}"
        );
    }

    on_every_engine!(init_leaves_out_placeholder_dates);
}

/// QA: Ctrl-C or SIGTERM while `idem init` read the warehouse ended it
/// without a word (and a kill in its final write could leave a
/// `.idem.toml.PID.part` beside the config). It now says it was cancelled,
/// exits 130 and writes nothing: a config `--force` was replacing is as it
/// was, and no file is left beside it. The warehouse is kept busy by
/// another writer (SQLite's exclusive lock), so the signal lands while init
/// waits to read it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_init_stopped_by_a_signal_writes_nothing() {
    use sqlx::Connection;
    for (signal, existing) in [("INT", Some("# mine\n")), ("TERM", None)] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("w.db");
        let url = format!("sqlite://{}?mode=rwc", db.display());
        let mut writer = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::raw_sql("CREATE TABLE t (id INTEGER, dt DATE); BEGIN EXCLUSIVE")
            .execute(&mut writer)
            .await
            .unwrap();
        let config = dir.path().join("idem.toml");
        if let Some(text) = existing {
            std::fs::write(&config, text).unwrap();
        }
        let child = crate::common::idem_command()
            .arg("--config")
            .arg(&config)
            .args(["init", "--force", &format!("sqlite://{}", db.display())])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let out = child.wait_with_output().unwrap();
        sqlx::raw_sql("COMMIT").execute(&mut writer).await.unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        exits(Kind::Sqlite, &out, 130);
        assert!(stderr.contains("idem: init cancelled: "), "{stderr}");
        assert_eq!(std::fs::read_to_string(&config).ok().as_deref(), existing);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with("w.db"))
            .collect();
        left.sort();
        let expected: Vec<&str> = existing.map(|_| "idem.toml").into_iter().collect();
        assert_eq!(left, expected, "{stderr}");
    }
}
