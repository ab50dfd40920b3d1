//! SQLite files as the world leaves them at 3 a.m.: made by another tool in
//! its rollback journal mode, open in another program's transaction. idem
//! reads beside them, waits `lock_timeout` at most, names who holds the
//! file and writes nothing half-done.

mod common;

use common::{Kind, TestDb, idem};

/// What the `sqlite3` shell prints for `sql` on the file, as another
/// program would run it; None, said, where there is no `sqlite3` (in CI
/// it fails).
fn sqlite3(db: &TestDb, sql: &str) -> Option<String> {
    let out = match std::process::Command::new("sqlite3")
        .arg(db.path().join("warehouse.db"))
        .arg(sql)
        .output()
    {
        Ok(out) => out,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: no sqlite3 shell ({e})");
            return None;
        }
        Err(e) => panic!("no sqlite3 shell: {e}"),
    };
    assert!(out.status.success(), "{sql}: {}", stderr(&out));
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The `sqlite3` shell with a transaction open on the file, as at 3 a.m.
struct Shell {
    child: std::process::Child,
}

impl Shell {
    /// The shell once it has run `sql` (whose last statement prints a
    /// line).
    fn reading(db: &TestDb, sql: &str) -> Shell {
        use std::io::{BufRead, Write};
        use std::process::{Command, Stdio};
        let file = db.path().join("warehouse.db");
        let spawned = Command::new("sqlite3")
            .arg(&file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn();
        let mut child = spawned.expect("sqlite3");
        let stdin = child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{sql}").expect("to sqlite3");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("from sqlite3");
        Shell { child }
    }

    /// Rolls back and quits.
    fn end(mut self) {
        use std::io::Write;
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = writeln!(stdin, "ROLLBACK;");
        }
        let _ = self.child.wait();
    }
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A database another tool made, in the default rollback journal mode,
/// with a reader's transaction open on it: `status` reads beside it in
/// the file's mode (it used to insist on switching it to WAL first, which
/// needs the file to itself, and failed after 5 s with "cannot connect:
/// database is locked"); a run's COMMIT, which waits for every reader in
/// that mode,
/// gives up after `lock_timeout`, names the reader's process and writes
/// nothing; once the reader is gone the run loads, and the file is WAL.
#[test]
fn a_reader_in_rollback_journal_mode_is_read_beside_and_named_by_a_run() {
    let (db, config) = fct_beside_src();
    let Some(_) = sqlite3(
        &db,
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL); \
         INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'); \
         CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ) else {
        return;
    };
    // A first run makes the ledger (and the file WAL); the other tool then
    // puts the file back in its own mode.
    let first = idem(&config, &["run", "fct", "--to", "2026-01-01", "-y"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let mode = sqlite3(&db, "PRAGMA journal_mode = DELETE");
    assert_eq!(mode.as_deref(), Some("delete"));

    let reader = Shell::reading(&db, "BEGIN; SELECT count(*) FROM src;");
    let started = std::time::Instant::now();
    let status = idem(&config, &["status", "fct"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "status waited {:?}",
        started.elapsed()
    );

    let run = idem(&config, &["run", "fct", "--from", "2026-01-02", "-y"]);
    let said = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{said}");
    let pid = reader.child.id();
    assert!(
        said.contains("stayed locked for longer than lock_timeout")
            && said.contains(&format!("sqlite3 (process {pid}) on this host holds it"))
            && said.contains("nothing was written")
            && said.contains("rollback journal mode"),
        "{said}"
    );
    reader.end();
    let rows = "SELECT dt, count(*) FROM fct GROUP BY dt; PRAGMA journal_mode";
    assert_eq!(
        sqlite3(&db, rows).as_deref(),
        Some("2026-01-01|1\ndelete"),
        "the refused partition is as it was"
    );

    let again = idem(&config, &["run", "fct", "--from", "2026-01-02", "-y"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(
        sqlite3(&db, rows).as_deref(),
        Some("2026-01-01|1\n2026-01-02|1\nwal")
    );
}

/// An empty warehouse file and the config of a day job `fct` reading
/// `src`, waiting a second for locks.
fn fct_beside_src() -> (TestDb, std::path::PathBuf) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let db = runtime.block_on(TestDb::new(Kind::Sqlite)).expect("sqlite");
    let job = common::replace_job(
        "fct",
        "fct",
        "2026-01-02",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    let (config, _) = db.config_with("lock_timeout = \"1s\"", &job);
    (db, config)
}

/// A write transaction another program holds on a rollback-journal file
/// (`BEGIN EXCLUSIVE`, or a bulk load that spilled its cache) keeps even
/// readers out: `status` says after `lock_timeout` whose it is, not a bare
/// "database is locked".
#[test]
fn status_behind_an_exclusive_writer_names_it() {
    let (db, config) = fct_beside_src();
    let Some(_) = sqlite3(
        &db,
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL); \
         CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ) else {
        return;
    };
    let writer = Shell::reading(&db, "BEGIN EXCLUSIVE; SELECT 1;");
    let status = idem(&config, &["status", "fct"]);
    let said = stderr(&status);
    assert_eq!(status.status.code(), Some(1), "{said}");
    let pid = writer.child.id();
    assert!(
        said.contains(&format!("sqlite3 (process {pid}) on this host holds it")),
        "{said}"
    );
    writer.end();
}
