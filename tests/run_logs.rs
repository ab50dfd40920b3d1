//! Each run's per-partition log lines are kept on disk under the state
//! directory, and `idem log JOB PARTITION --lines` prints them.

mod common;

use common::{Kind, TestDb};
use sqlx::{AssertSqlSafe, Connection, Executor};

/// `idem --config CONFIG ARGS…` with its state (the run logs) under `state`.
fn idem_keeping_logs_in(
    state: &std::path::Path,
    config: &std::path::Path,
    args: &[&str],
) -> std::process::Output {
    crate::common::idem_command()
        .arg("--config")
        .arg(config)
        .args(args)
        .env("XDG_STATE_HOME", state)
        .output()
        .expect("idem ran")
}

/// A SQLite warehouse with one replace job `fct` through `end` of
/// `select`, set up by `script`: the database (kept while the test holds
/// it), the config's path and a warehouse on it.
async fn fct_of(
    end: &str,
    select: &str,
    script: &[&str],
) -> (TestDb, std::path::PathBuf, idem::warehouse::Warehouse) {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", end, select));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(script).await.expect("setup");
    (db, config, wh)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitions_run_log_is_kept_and_printed() {
    let (db, config, _wh) = fct_of(
        "2026-01-02",
        "select id, amount, dt from src where dt >= :start and dt < :end",
        &[
            "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
            "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL CHECK (amount >= 0), dt DATE NOT NULL)",
            "INSERT INTO src VALUES (1, 5, '2026-01-01'), (2, -1, '2026-01-02')",
        ],
    )
    .await;
    let state = db.path().join("state");
    let idem = |args: &[&str]| idem_keeping_logs_in(&state, &config, args);
    assert_eq!(idem(&["run", "fct"]).status.code(), Some(1));
    // One folder per warehouse, saying which it is.
    let folders: Vec<_> = std::fs::read_dir(state.join("idem/logs"))
        .expect("logs")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    let [folder] = folders.as_slice() else {
        panic!("{folders:?}");
    };
    assert!(folder.join("fct/2026-01-01.log").exists());
    let named = std::fs::read_to_string(folder.join("warehouse.txt")).expect("warehouse.txt");
    assert!(
        named.starts_with("sqlite:///") && named.trim_end().ends_with("warehouse.db"),
        "{named}"
    );
    let ok = idem(&["log", "fct", "2026-01-01", "--lines"]);
    let text = String::from_utf8_lossy(&ok.stdout);
    assert_eq!(ok.status.code(), Some(0));
    for expected in [
        "attempt 1 started",
        "INSERT 1 row\n",
        "COMMIT",
        "attempt 1 succeeded: 1 row,",
    ] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
    let failed = idem(&["log", "fct", "2026-01-02", "--lines", "2"]);
    let text = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.contains("attempt 1 failed: CHECK constraint failed"),
        "{text}"
    );
    let none = idem(&["log", "fct", "2026-01-03", "--lines"]);
    assert!(String::from_utf8_lossy(&none.stdout).contains("no run log for fct 2026-01-03"));
    // 0 lines is refused as --concurrency 0 is, not taken for a missing log.
    let zero = idem(&["log", "fct", "2026-01-01", "--lines", "0"]);
    assert_eq!(zero.status.code(), Some(2));
    assert!(
        zero.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&zero.stdout)
    );
    let stderr = String::from_utf8_lossy(&zero.stderr);
    assert!(
        stderr.contains("idem: --lines 0 is out of range; expected 1 or more"),
        "{stderr}"
    );
}

/// QA: a partition's run log ended a shrink-guard refusal with "attempt 2
/// failed: source looks incomplete…" where `idem status` and the ledger
/// call it refused. It says "attempt 2 refused", and a failure still says
/// failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_reads_as_refused_in_the_run_log() {
    let (db, config, wh) = fct_of(
        "2026-01-01",
        "select id, dt from src where dt >= :start and dt < :end",
        &[
            "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
            "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
            "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-01')",
        ],
    )
    .await;
    let state = db.path().join("state");
    let idem = |args: &[&str]| idem_keeping_logs_in(&state, &config, args);
    assert_eq!(idem(&["run", "fct", "2026-01-01"]).status.code(), Some(0));
    // The source of the day is gone: the guard refuses to empty it.
    wh.execute_script(&["DELETE FROM src"]).await.expect("late");
    assert_eq!(idem(&["run", "fct", "2026-01-01"]).status.code(), Some(1));
    let log = idem(&["log", "fct", "2026-01-01", "--lines", "1"]);
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(
        text.contains("attempt 2 refused: source looks incomplete"),
        "{text}"
    );
    wh.close().await;
}

/// QA: a run log's window bounds (`DELETE 9 rows in [2026-11-02 10:00:00,
/// …)`) are UTC instants on a zoned column but were unmarked, so an
/// operator whose session runs in New York read them as local times. They
/// say UTC there, in the lock's line as in the DELETE's (the lock's said
/// the same window unmarked). A zoned column is PostgreSQL's `timestamptz`
/// and MariaDB's `TIMESTAMP` (stored in UTC, shown in the session's zone;
/// it was unmarked there too). On PostgreSQL's `timestamp` and MariaDB's
/// `DATETIME` they are the column's values as written, which no session's
/// zone changes, and stay so. The operator's session runs at -05:00 (New
/// York's; on MariaDB, whose server settings a test must not change, the
/// URL's `timezone`, which the driver sets on connecting, and the config
/// names the same URL): idem's own sessions are UTC all the same, so the
/// row written at 05:30 there is loaded and counted in the hour from
/// 10:00 UTC. A merge job without a partition column compares its window
/// in its SQL alone, where `:start` and `:end` are those UTC bounds, read
/// in idem's UTC sessions: its lock line says UTC too (QA: it was
/// unmarked, beside the replaces' UTC lines).
async fn a_run_logs_window_bounds_say_utc_on_a_zoned_column(kind: Kind) {
    let mut db = TestDb::new(kind).await.expect("server");
    let (zoned, plain) = match kind {
        Kind::Postgres => ("TIMESTAMPTZ", "TIMESTAMP"),
        _ => ("TIMESTAMP", "DATETIME"),
    };
    if kind == Kind::MySql {
        db.url.push_str("?timezone=-05:00");
    }
    let job = |name: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{name}\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"ts\"\ngrain = \"hour\"\nstart = \"2026-11-02T10\"\n\
             end = \"2026-11-02T10\"\nsql = \"select id, ts from {name}_src where ts >= :start and ts < :end\"\n\n"
        )
    };
    let merged = "[[jobs]]\nname = \"merged\"\ntarget = \"merged\"\nstrategy = \"merge_key\"\n\
         unique_key = [\"id\"]\ngrain = \"hour\"\nstart = \"2026-11-02T10\"\nend = \"2026-11-02T10\"\n\
         sql = \"select id, ts from zoned_src where ts >= :start and ts < :end\"\n";
    let (config, _) = db.config(&format!("{}{}{merged}", job("zoned"), job("plain")));
    sqlx::any::install_default_drivers();
    let mut operator = sqlx::AnyConnection::connect(&db.url)
        .await
        .expect("connect");
    if kind == Kind::Postgres {
        operator
            .execute("SET TIME ZONE 'America/New_York'")
            .await
            .expect("session time zone");
    }
    for statement in [
        format!("CREATE TABLE zoned_src (id INTEGER NOT NULL, ts {zoned} NOT NULL)"),
        format!("CREATE TABLE zoned (id INTEGER NOT NULL, ts {zoned} NOT NULL)"),
        format!("CREATE TABLE plain_src (id INTEGER NOT NULL, ts {plain} NOT NULL)"),
        format!("CREATE TABLE plain (id INTEGER NOT NULL, ts {plain} NOT NULL)"),
        format!("CREATE TABLE merged (id INTEGER PRIMARY KEY, ts {zoned} NOT NULL)"),
        // 10:30 UTC, written in the operator's -05:00.
        "INSERT INTO zoned_src VALUES (1, '2026-11-02 05:30:00')".into(),
        "INSERT INTO plain_src VALUES (1, '2026-11-02 10:30:00')".into(),
    ] {
        operator
            .execute(AssertSqlSafe(statement.clone()))
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    operator.close().await.expect("close");
    let state = db.path().join("state");
    let idem = |args: &[&str]| idem_keeping_logs_in(&state, &config, args);
    let utc = "[2026-11-02 10:00:00 UTC, 2026-11-02 11:00:00 UTC)";
    let as_written = "[2026-11-02 10:00:00, 2026-11-02 11:00:00)";
    for (name, lines) in [
        (
            "zoned",
            [
                format!("lock on zoned {utc} taken"),
                format!("DELETE 0 rows in {utc}"),
                "INSERT 1 row".into(),
            ],
        ),
        (
            "plain",
            [
                format!("lock on plain {as_written} taken"),
                format!("DELETE 0 rows in {as_written}"),
                "INSERT 1 row".into(),
            ],
        ),
        (
            "merged",
            [
                format!("lock on merged {utc} and every merge into merged taken"),
                "MERGE 1 row by (id): 1 inserted".into(),
                "COMMIT".into(),
            ],
        ),
    ] {
        let run = idem(&["run", name]);
        assert_eq!(run.status.code(), Some(0), "{run:?}");
        let log = idem(&["log", name, "2026-11-02T10", "--lines"]);
        let text = String::from_utf8_lossy(&log.stdout);
        for line in lines {
            assert!(text.contains(&line), "{name}, {line}: {text}");
        }
        // The hour holds its row: counted in the target, or (a merge
        // without a partition column) merged in that window.
        let (rows_now, rows_at_load) = if name == "merged" {
            ("", "1")
        } else {
            ("1", "1")
        };
        let status = common::stdout_ok(&idem(&["status", name, "--format", "csv"]));
        assert!(
            status.contains(&format!(
                "{name},2026-11-02T10,loaded,{rows_now},{rows_at_load},"
            )),
            "{status}"
        );
    }
}

on_server_engines!(a_run_logs_window_bounds_say_utc_on_a_zoned_column);

/// Production and staging, each with a job `fct`: each warehouse's
/// `idem log --lines` shows its own runs only, never the other's INSERTs
/// and COMMITs beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_warehouses_with_a_job_of_one_name_keep_their_logs_apart() {
    let state = tempfile::tempdir().expect("state");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let mut keep = Vec::new();
    let mut configs = Vec::new();
    for rows in [1, 3] {
        let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
        let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-01", select));
        let wh = db.warehouse(&parsed).await;
        let values: Vec<String> = (0..rows).map(|i| format!("({i}, '2026-01-01')")).collect();
        wh.execute_script(&[
            "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
            "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
            &format!("INSERT INTO src VALUES {}", values.join(", ")),
        ])
        .await
        .expect("setup");
        wh.close().await;
        configs.push(config);
        keep.push(db);
    }
    let idem = |config: &std::path::Path, args: &[&str]| {
        let out = crate::common::idem_command()
            .arg("--config")
            .arg(config)
            .args(args)
            .env("XDG_STATE_HOME", state.path())
            .output()
            .expect("idem ran");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for config in &configs {
        idem(config, &["run", "fct"]);
    }
    let production = idem(&configs[0], &["log", "fct", "2026-01-01", "--lines"]);
    let staging = idem(&configs[1], &["log", "fct", "2026-01-01", "--lines"]);
    assert_eq!(production.matches("COMMIT").count(), 1, "{production}");
    assert!(production.contains("INSERT 1 row\n"), "{production}");
    assert!(!production.contains("INSERT 3 rows"), "{production}");
    assert_eq!(staging.matches("COMMIT").count(), 1, "{staging}");
    assert!(staging.contains("INSERT 3 rows"), "{staging}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_user_in_the_environment_the_operator_is_the_login_name() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-01", select));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .expect("setup");
    // As cron runs it: no USER, LOGNAME or IDEM_OPERATOR.
    let out = crate::common::idem_command()
        .arg("--config")
        .arg(&config)
        .args(["run", "fct"])
        .env_remove("USER")
        .env_remove("LOGNAME")
        .env_remove("IDEM_OPERATOR")
        .output()
        .expect("idem ran");
    assert_eq!(out.status.code(), Some(0));
    let login = std::process::Command::new("id")
        .arg("-un")
        .output()
        .expect("id -un");
    let login = String::from_utf8_lossy(&login.stdout).trim().to_string();
    let attempts = wh.attempts("fct", None).await.expect("ledger");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].operator, login);
}

/// QA: with no state directory (a container's job: HOME unset) or one that
/// cannot be made, a run loaded and kept no log without a word; `idem log
/// --lines` later found nothing. It still loads, and says why none was kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_can_keep_no_log_loads_and_says_why() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-02", select));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    let a_file = db.path().join("not-a-folder");
    std::fs::write(&a_file, "").expect("file");
    let run = |state: Option<&std::path::Path>, json: bool| {
        let mut idem = crate::common::idem_command();
        idem.arg("--config")
            .arg(&config)
            .args(["run", "fct", "--yes"])
            .current_dir(db.path())
            .env_remove("HOME")
            .env_remove("XDG_STATE_HOME");
        if json {
            idem.arg("--json");
        }
        if let Some(state) = state {
            idem.env("XDG_STATE_HOME", state);
        }
        idem.output().expect("idem ran")
    };
    // A relative XDG_STATE_HOME is none, as the XDG spec says: not a
    // folder under wherever idem runs.
    for state in [None, Some(std::path::Path::new("state"))] {
        let out = run(state, false);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{said}");
        assert!(
            said.contains(
                "idem: note: no run log kept: no state directory: set XDG_STATE_HOME (an absolute path) or HOME to keep run logs\n"
            ),
            "{state:?}: {said}"
        );
        assert!(!db.path().join("state").exists(), "{state:?}");
    }
    let out = run(Some(&a_file), true);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    // The file in the way is named, not the folder it stops.
    assert!(
        said.contains(&format!(
            ": {} is a file, not a folder (move it away to keep run logs)\n",
            a_file.display()
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "idem: note: no run log kept: cannot create the folder {}/idem/logs/",
            a_file.display()
        )),
        "{said}"
    );
    // The JSON stream is untouched: the note is on stderr.
    let events = String::from_utf8_lossy(&out.stdout);
    assert!(
        events
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()),
        "{events}"
    );
    let attempts = wh.attempts("fct", None).await.expect("ledger");
    assert_eq!(attempts.len(), 6, "each run loaded both days");
}

/// QA: with a file where the state directory should be, a run loaded and
/// said its log could not be written, but `idem log JOB PARTITION
/// --lines` later said only "no run log", as of a partition never run (no
/// mark that the log was not written could be left there either). It says
/// what is in the way and what to do, and what the ledger records of the
/// partition: a run on another machine keeps its log there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idem_log_says_why_a_partition_that_ran_has_no_run_log() {
    let (db, config, _wh) = fct_of(
        "2026-01-02",
        "select id, dt from src where dt >= :start and dt < :end",
        &common::TWO_DAYS,
    )
    .await;
    let a_file = db.path().join("not-a-folder");
    std::fs::write(&a_file, "").expect("file");
    let idem = |state: &std::path::Path, host: Option<&str>, args: &[&str]| {
        let mut idem = crate::common::idem_command();
        idem.arg("--config")
            .arg(&config)
            .args(args)
            .env("XDG_STATE_HOME", state);
        if let Some(host) = host {
            idem.env("HOSTNAME", host);
        }
        idem.output().expect("idem ran")
    };
    let ran = idem(&a_file, None, &["run", "fct", "2026-01-01", "--yes"]);
    assert_eq!(ran.status.code(), Some(0), "{ran:?}");
    let read = |state: &std::path::Path, partition: &str| {
        let out = idem(state, None, &["log", "fct", partition, "--lines"]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let lists_them = format!(
        "(idem --config {} log fct 2026-01-01 lists them)\n",
        config.display()
    );
    let printed = read(&a_file, "2026-01-01");
    assert!(
        printed.contains(&format!(
            ": {} is a file, not a folder, so no run could write one there (move it away, or set XDG_STATE_HOME to a folder of yours, to keep run logs); the ledger records 1 attempt of it {lists_them}",
            a_file.display()
        )),
        "{printed}"
    );
    // A folder that is there but holds no log: the ledger says where the
    // latest run was, on this machine or another one.
    let state = db.path().join("state");
    std::fs::create_dir(&state).expect("state");
    let printed = read(&state, "2026-01-01");
    assert!(
        printed.contains(": the ledger records 1 attempt of it, the latest run on this machine by ")
            && printed.contains(&format!(
                ", which left no log here: it could not write one (it said why as it ran), or the log was removed since {lists_them}"
            )),
        "{printed}"
    );
    let ran = idem(
        &a_file,
        Some("batch-7"),
        &["run", "fct", "2026-01-01", "--yes"],
    );
    assert_eq!(ran.status.code(), Some(0), "{ran:?}");
    let printed = read(&state, "2026-01-01");
    assert!(
        printed.contains(&format!(
            ": the ledger records 2 attempts of it, the latest run on batch-7, which keeps its run log there {lists_them}"
        )),
        "{printed}"
    );
    // A partition never run has no log to explain.
    let printed = read(&state, "2026-01-02");
    assert!(
        printed.starts_with("no run log for fct 2026-01-02 in ")
            && printed.ends_with(" (runs of this user on this machine write them)\n"),
        "{printed}"
    );
}

/// QA: a scheduler's system user has `HOME=/nonexistent`, and a run
/// under it (as root) made that whole path to keep its logs under
/// `~/.local/state`. It keeps none there and says why, and so does `idem
/// log --lines`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_that_is_no_folder_is_not_made_for_run_logs() {
    let (db, config, _wh) = fct_of(
        "2026-01-01",
        "select id, dt from src where dt >= :start and dt < :end",
        &common::TWO_DAYS,
    )
    .await;
    let home = db.path().join("nonexistent");
    let idem = |args: &[&str]| {
        crate::common::idem_command()
            .arg("--config")
            .arg(&config)
            .args(args)
            .env_remove("XDG_STATE_HOME")
            .env("HOME", &home)
            .output()
            .expect("idem ran")
    };
    let why = format!(
        "HOME ({}) is no folder, and idem makes none there: set XDG_STATE_HOME (an absolute path) to keep run logs",
        home.display()
    );
    let ran = idem(&["run", "fct", "--yes"]);
    let said = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("idem: note: no run log kept: {why}\n")),
        "{said}"
    );
    assert!(!home.exists(), "HOME was made");
    let out = idem(&["log", "fct", "2026-01-01", "--lines"]);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains(&format!(": {why}; the ledger records 1 attempt of it (")),
        "{printed}"
    );
    assert!(!home.exists(), "HOME was made");
}

/// QA: as the operator reads logs after a bad night. A server error that
/// echoed an escape sequence and a second line reached the terminal raw
/// (and its DETAIL line had no time); a log cut mid-character hid the
/// whole file behind "no run log"; a log that could not be read said the
/// same with exit 0; a month of a daily job printed its first day's log as
/// if it were the month's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_run_logs_read_clearly() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-02", select));
    let wh = db.warehouse(&parsed).await;
    let mut setup: Vec<String> = common::TWO_DAYS.iter().map(|s| s.to_string()).collect();
    setup.push(
        "CREATE TRIGGER boom BEFORE INSERT ON fct WHEN NEW.dt = '2026-01-02' BEGIN \
         SELECT RAISE(ABORT, 'bad \u{1b}[31mred\u{1b}[0m at row 2\nDETAIL: second'); END"
            .into(),
    );
    let setup: Vec<&str> = setup.iter().map(String::as_str).collect();
    wh.execute_script(&setup).await.expect("setup");
    let state = db.path().join("state");
    let idem = |args: &[&str]| idem_keeping_logs_in(&state, &config, args);
    assert_eq!(idem(&["run", "fct", "--yes"]).status.code(), Some(1));
    let failed = idem(&["log", "fct", "2026-01-02", "--lines", "1"]);
    let text = String::from_utf8_lossy(&failed.stdout);
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(text.ends_with("Z DETAIL: second\n"), "{text:?}");
    let text = String::from_utf8_lossy(&idem(&["log", "fct", "2026-01-02", "--lines"]).stdout)
        .into_owned();
    assert!(
        text.contains("ROLLBACK: bad \\u{1b}[31mred\\u{1b}[0m at row 2\n"),
        "{text}"
    );

    let logs = std::fs::read_dir(state.join("idem/logs"))
        .expect("logs")
        .filter_map(|e| e.ok().map(|e| e.path().join("fct")))
        .next()
        .expect("the warehouse's folder");
    let day_one = logs.join("2026-01-01.log");
    let mut torn = std::fs::read(&day_one).expect("log");
    torn.extend(b"2026-12-04T20:19:20.895Z COMMIT caf\xc3");
    std::fs::write(&day_one, torn).expect("torn");
    let out = idem(&["log", "fct", "2026-01-01", "--lines", "2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(text.contains("attempt 1 succeeded"), "{text}");
    assert!(text.ends_with("COMMIT caf\u{fffd}\n"), "{text}");

    std::fs::write(&day_one, "").expect("emptied");
    let out = idem(&["log", "fct", "2026-01-01", "--lines"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("the run log is empty for fct 2026-01-01"),
        "{text}"
    );

    std::fs::remove_file(&day_one).expect("rm");
    std::fs::create_dir(&day_one).expect("a folder in its place");
    let out = idem(&["log", "fct", "2026-01-01", "--lines"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("idem: cannot read {}", day_one.display())),
        "{said}"
    );
    assert!(out.stdout.is_empty(), "no \"no run log\" beside it");

    let month = idem(&["log", "fct", "2026-01", "--lines"]);
    assert_eq!(month.status.code(), Some(2));
    let said = String::from_utf8_lossy(&month.stderr);
    assert!(
        said.contains("--lines prints one partition's run log, and 2026-01 names each day of fct in it; name one, e.g. 2026-01-01"),
        "{said}"
    );
}

/// QA: two runs of one job at once (a cron run and an operator's), the
/// second waiting on the partition's lock while the first loads it, and
/// the partition's log at its bound. The waiting run rotated the log, and
/// the loading run wrote its INSERT, COMMIT and outcome on into the
/// rotated file, so `idem log --lines` showed them before the lines that
/// came before them (and a second rotation would have lost them). Both
/// runs' lines are kept, in the order they were written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_at_once_keep_one_partitions_log_whole_and_in_order() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    // About three seconds of SQLite's own work, so the second run waits on
    // the partition's lock, and says so, while the first loads it.
    let select = "select id, dt from src where dt >= :start and dt < :end and \
        (with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000000) \
         select count(*) from c) > 0";
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-01", select));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    wh.close().await;
    let state = db.path().join("state");
    // A first run makes the warehouse's folder of logs.
    let first = idem_keeping_logs_in(&state, &config, &["run", "fct", "--yes"]);
    assert_eq!(first.status.code(), Some(0));
    let mut logs = std::fs::read_dir(state.join("idem/logs")).expect("logs");
    let folder = logs
        .next()
        .expect("the warehouse's folder")
        .expect("entry")
        .path();
    // A log a few lines short of its bound: the first run's opening lines
    // and the second's first take it past.
    let old = "2000-01-01T00:00:00.000Z an older run's line\n";
    let lines = (idem::runlog::MAX_BYTES as usize - 300) / old.len();
    let mut text = old.repeat(lines);
    text.push_str(&"x".repeat(idem::runlog::MAX_BYTES as usize - 300 - text.len() - 1));
    text.push('\n');
    std::fs::write(folder.join("fct/2026-01-01.log"), text).expect("prefill");
    let start = |config: &std::path::Path| {
        crate::common::idem_command()
            .arg("--config")
            .arg(config)
            .args(["run", "fct", "--yes"])
            .env("XDG_STATE_HOME", &state)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("idem started")
    };
    let loading = start(&config);
    std::thread::sleep(std::time::Duration::from_millis(400));
    let waiting = start(&config);
    for run in [loading, waiting] {
        let out = run.wait_with_output().expect("idem ran");
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{said}");
        assert!(!said.contains("run log"), "{said}");
    }
    let out = idem_keeping_logs_in(
        &state,
        &config,
        &["log", "fct", "2026-01-01", "--lines", "40"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let new: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("20") && !l.starts_with("2000-"))
        .collect();
    let times: Vec<&str> = new.iter().map(|l| &l[..24]).collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "the lines as written:\n{text}");
    assert_eq!(
        new.iter().filter(|l| l.contains(" started")).count(),
        2,
        "{text}"
    );
    assert_eq!(
        new.iter()
            .filter(|l| l.contains(" succeeded: 1 row"))
            .count(),
        2,
        "{text}"
    );
    assert_eq!(
        new.iter().filter(|l| l.ends_with(" COMMIT")).count(),
        2,
        "{text}"
    );
    assert!(
        text.contains("waiting for the lock"),
        "the second run waited:\n{text}"
    );
}

/// QA: `XDG_STATE_HOME` set to a relative path was used as it was, so a
/// run kept its logs under whatever folder it ran in and `idem log
/// --lines` from another found none. As the XDG spec says, it is ignored:
/// the logs are kept under `HOME`, and found from any folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_xdg_state_home_is_ignored() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-02", select));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    let home = db.path().join("home");
    let here = db.path().join("here");
    let elsewhere = db.path().join("elsewhere");
    for folder in [&home, &here, &elsewhere] {
        std::fs::create_dir(folder).expect("folder");
    }
    let idem = |cwd: &std::path::Path, args: &[&str]| {
        crate::common::idem_command()
            .arg("--config")
            .arg(&config)
            .args(args)
            .current_dir(cwd)
            .env("HOME", &home)
            .env("XDG_STATE_HOME", "state")
            .output()
            .expect("idem ran")
    };
    let out = idem(&here, &["run", "fct", "--yes"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !here.join("state").exists(),
        "no logs under the folder it ran in"
    );
    assert!(home.join(".local/state/idem/logs").is_dir());
    let out = idem(&elsewhere, &["log", "fct", "2026-01-01", "--lines", "5"]);
    let printed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(printed.contains("attempt 1 succeeded"), "{printed}");
}

/// QA: on a full disk a run still created each partition's log file, and
/// could write nothing in it; `idem log JOB PARTITION` then said "the run
/// log is empty", as if the run had had nothing to say. The run marks a log
/// it could not write, `idem log` says so and why, and a later run that
/// writes the log whole takes the mark away. (`/dev/full` in the log's
/// place is a full disk: it opens, and every write fails.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_log_a_full_disk_kept_from_being_written_says_so() {
    let (db, config, _wh) = fct_of(
        "2026-01-02",
        "select id, dt from src where dt >= :start and dt < :end",
        &common::TWO_DAYS,
    )
    .await;
    let state = db.path().join("state");
    let idem = |args: &[&str]| idem_keeping_logs_in(&state, &config, args);
    assert_eq!(idem(&["run", "fct", "--yes"]).status.code(), Some(0));
    let folder = std::fs::read_dir(state.join("idem/logs"))
        .expect("logs")
        .find_map(|e| e.ok().map(|e| e.path()))
        .expect("the warehouse's folder");
    let log = folder.join("fct/2026-01-01.log");
    std::fs::remove_file(&log).expect("log");
    std::os::unix::fs::symlink("/dev/full", &log).expect("a full disk");
    let full = idem(&["run", "fct", "--yes"]);
    assert_eq!(full.status.code(), Some(0), "the run loads all the same");
    let read = |partition: &str| {
        let out = idem(&["log", "fct", partition, "--lines"]);
        assert_eq!(out.status.code(), Some(0));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        (stdout, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (printed, noted) = read("2026-01-01");
    assert!(
        printed.contains("2026-01-01 in ")
            && printed.contains(" is empty: a run could not write it: cannot write ")
            && printed.contains("No space left on device"),
        "{printed}{noted}"
    );
    assert!(!printed.contains("the run log is empty"), "{printed}");
    // The other day's log was written, and reads as it always did.
    let (printed, noted) = read("2026-01-02");
    assert!(printed.contains("attempt 2 succeeded"), "{printed}");
    assert!(noted.is_empty(), "{noted}");
    // Room again: the next run writes the log whole, and it reads so.
    std::fs::remove_file(&log).expect("the full disk");
    assert_eq!(idem(&["run", "fct", "--yes"]).status.code(), Some(0));
    let (printed, noted) = read("2026-01-01");
    assert!(printed.contains("attempt 3 succeeded"), "{printed}");
    assert!(noted.is_empty(), "{noted}");
}

/// QA: a PostgreSQL error's DETAIL and HINT (a trigger's RAISE … USING
/// DETAIL, HINT; a unique violation's "Key (id)=(1) already exists") were
/// dropped with the driver's wrapping: the ledger kept the message alone,
/// and `idem log JOB PARTITION` showed only that. They are recorded under
/// the message and listed whole, indented under the attempt's row; a
/// job's whole history keeps to the message.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_idem_log_of_a_partition_shows_its_errors_detail_and_hint() {
    let db = TestDb::new(Kind::Postgres).await.expect("server");
    let (config, parsed) = db.config(&common::replace_job(
        "fct",
        "fct",
        "2026-01-01",
        "select id, dt from src where dt >= :start and dt < :end",
    ));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("tables");
    wh.execute_script(&[
        "CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
         RAISE EXCEPTION 'row % is held', NEW.id USING DETAIL = 'id ' || NEW.id || ' is on hold since Monday', \
         HINT = 'release it in holds first'; END $$",
        "CREATE TRIGGER hold BEFORE INSERT ON fct FOR EACH ROW EXECUTE FUNCTION hold()",
    ])
    .await
    .expect("trigger");
    wh.close().await;
    let state = db.path().join("state");
    let idem = |args: &[&str]| idem_keeping_logs_in(&state, &config, args);
    assert_eq!(idem(&["run", "fct"]).status.code(), Some(1));
    let one = common::stdout_ok(&idem(&["log", "fct", "2026-01-01"]));
    assert!(
        one.contains(
            "\n    row 1 is held\n    DETAIL: id 1 is on hold since Monday\n    HINT: release it in holds first"
        ),
        "{one}"
    );
    let all = common::stdout_ok(&idem(&["log", "fct"]));
    assert!(all.contains("\n    row 1 is held"), "{all}");
    assert!(!all.contains("DETAIL"), "{all}");
}
