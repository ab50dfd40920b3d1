//! Merge jobs and crashes: an `idem run` killed with SIGKILL in the middle
//! of a merge window (in its source query, in its upsert, between its
//! statements) leaves the target as it was and the ledger without a word of
//! the window, frees its locks (or, on MariaDB, names the orphaned
//! statement that holds them and how to end it), and the next run repairs
//! it. Also a merge job and a replace job writing one target, and a window
//! whose source emptied.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Kind, TestDb};
use sqlx::{AssertSqlSafe, Row};

/// The job's rows, after a pause the test sets: once per window in the
/// source query (`pause.source`; SQLite, which has no sleep, counts to it).
fn select(kind: Kind) -> String {
    let pause = match kind {
        Kind::Postgres => "(select pg_sleep(source) as p from pause)",
        // An aggregate: MariaDB would merge a plain derived table into the
        // query and never call a function of a column nobody reads.
        Kind::MySql => "(select max(sleep(source)) as p from pause)",
        Kind::Sqlite => {
            "(with recursive c(i) as (select 1 union all select i + 1 from c \
             where i < (select source from pause)) select max(i) as p from c)"
        }
    };
    format!(
        "select src.id, src.amount, src.dt from src cross join {pause} p \
         where src.dt >= :start and src.dt < :end"
    )
}

/// A warehouse whose merge job `dim` (days 2026-01-01 and 2026-01-02, 20
/// keys each) pauses where `pause` says: in its source query, and (on the
/// servers) after each row it writes into `dim` (`pause.row`, a trigger).
/// Its locks wait 3 s at most: a lock left behind fails the next run.
async fn paused_merge(kind: Kind) -> (TestDb, std::path::PathBuf) {
    let db = TestDb::new(kind).await.expect("server");
    let jobs = common::merge_job("dim", "dim", "2026-01-02", &select(kind));
    let (path, config) = db.config_with("lock_timeout = \"3s\"", &jobs);
    let wh = db.warehouse(&config).await;
    let rows: Vec<String> = (1..=40)
        .map(|id| format!("({id}, 1, '2026-01-0{}')", 1 + (id - 1) / 20))
        .collect();
    let mut script = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        "CREATE TABLE pause (source INTEGER NOT NULL, row_s INTEGER NOT NULL)".to_string(),
        "INSERT INTO pause VALUES (0, 0)".to_string(),
        format!("INSERT INTO src VALUES {}", rows.join(", ")),
    ];
    match kind {
        Kind::Postgres => script.extend([
            "CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep((SELECT row_s FROM pause)); RETURN NEW; END $$"
                .to_string(),
            "CREATE TRIGGER dim_slow AFTER INSERT OR UPDATE ON dim \
             FOR EACH ROW EXECUTE FUNCTION slow_row()"
                .to_string(),
        ]),
        Kind::MySql => script.extend([
            "CREATE TRIGGER dim_ins AFTER INSERT ON dim FOR EACH ROW \
             DO SLEEP((SELECT row_s FROM pause))"
                .to_string(),
            "CREATE TRIGGER dim_upd AFTER UPDATE ON dim FOR EACH ROW \
             DO SLEEP((SELECT row_s FROM pause))"
                .to_string(),
        ]),
        Kind::Sqlite => {}
    }
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.expect("setup");
    wh.close().await;
    let out = common::idem(&path, &["run", "dim", "-y"]);
    common::stdout_ok(&out);
    (db, path)
}

async fn connect(db: &TestDb) -> sqlx::AnyConnection {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    sqlx::AnyConnection::connect(&db.url)
        .await
        .expect("connect")
}

async fn exec(conn: &mut sqlx::AnyConnection, statement: &str) {
    sqlx::query(AssertSqlSafe(statement.to_string()))
        .execute(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("{statement}: {e}"));
}

async fn count(conn: &mut sqlx::AnyConnection, query: &str) -> i64 {
    sqlx::query(AssertSqlSafe(query.to_string()))
        .fetch_one(&mut *conn)
        .await
        .unwrap_or_else(|e| panic!("{query}: {e}"))
        .get::<i64, _>(0)
}

/// `(id, amount)` of every row of `table`.
async fn amounts(kind: Kind, conn: &mut sqlx::AnyConnection, table: &str) -> Vec<(i64, i64)> {
    let int = if kind == Kind::MySql {
        "SIGNED"
    } else {
        "BIGINT"
    };
    let query = format!("SELECT CAST(id AS {int}), CAST(amount AS {int}) FROM {table} ORDER BY id");
    sqlx::query(AssertSqlSafe(query))
        .fetch_all(&mut *conn)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

fn ledger(kind: Kind) -> &'static str {
    match kind {
        Kind::Postgres => "idem.attempts",
        _ => "idem_attempts",
    }
}

/// Counts idem's sessions where the test waits for them: sleeping (in
/// the source query or a trigger), or (`idle`) done with a statement and
/// waiting, their transaction open, for the next.
fn idem_sessions(kind: Kind, idle: bool) -> &'static str {
    match (kind, idle) {
        (Kind::Postgres, false) => {
            "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name LIKE 'idem#%' \
             AND state = 'active' AND wait_event = 'PgSleep'"
        }
        (Kind::Postgres, true) => {
            "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name LIKE 'idem#%' \
             AND state = 'idle in transaction'"
        }
        (Kind::MySql, false) => {
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() \
             AND COMMAND IN ('Query', 'Execute') AND (INFO LIKE 'INSERT%' OR INFO LIKE 'DO SLEEP%')"
        }
        (Kind::MySql, true) => {
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX t \
             JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id \
             WHERE p.DB = DATABASE() AND p.COMMAND = 'Sleep'"
        }
        (Kind::Sqlite, _) => unreachable!("no server"),
    }
}

async fn wait_for(kind: Kind, conn: &mut sqlx::AnyConnection, idle: bool, what: &str) {
    let never = format!("{kind:?}: the run never got {what}");
    wait_for_count(conn, idem_sessions(kind, idle), &never).await;
}

/// Polls `query` until it counts something, a minute at most.
async fn wait_for_count(conn: &mut sqlx::AnyConnection, query: &str, never: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(conn, query).await == 0 {
        assert!(Instant::now() < deadline, "{never}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Where the run is killed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum KillAt {
    /// In the statement that runs the job's SQL (staging the window).
    SourceQuery,
    /// In the upsert into the target, rows of it written (servers).
    Upsert,
    /// Between statements: the window staged, its transaction open and
    /// the server waiting for the next statement (servers).
    BetweenStatements,
}

/// Events of a run still to come: they go nowhere, but the pipe stays open.
type Unread = std::io::Lines<BufReader<std::process::ChildStdout>>;

/// `idem run dim --json`, read up to its first partition's BEGIN.
fn start_run(path: &std::path::Path) -> (Child, Unread) {
    let mut child = crate::common::idem_command()
        .arg("--config")
        .arg(path)
        .args(["run", "dim", "--json", "-y"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn idem");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("\"partition_log\"") && line.contains("BEGIN") => {
                break;
            }
            Some(Ok(_)) => {}
            _ => panic!("the run ended before it began a window"),
        }
    }
    (child, lines)
}

/// A merge run killed at `at`: the target keeps every old value, the
/// ledger records nothing of the run, and the next run (whose locks wait
/// 3 s at most) finds every lock free and merges the new values.
async fn a_merge_killed_mid_window_leaves_the_target_whole(kind: Kind, at: KillAt) {
    let (db, path) = paused_merge(kind).await;
    let mut conn = connect(&db).await;
    exec(&mut conn, "UPDATE src SET amount = amount + 100").await;
    let (source, row_s) = match (kind, at) {
        (Kind::Sqlite, _) => (200_000_000, 0),
        (_, KillAt::SourceQuery) => (300, 0),
        (_, KillAt::Upsert) => (0, 300),
        (_, KillAt::BetweenStatements) => (2, 0),
    };
    exec(
        &mut conn,
        &format!("UPDATE pause SET source = {source}, row_s = {row_s}"),
    )
    .await;
    let old = amounts(kind, &mut conn, "dim").await;
    let attempts = format!("SELECT COUNT(*) FROM {}", ledger(kind));
    let recorded = count(&mut conn, &attempts).await;

    let (mut child, _unread) = start_run(&path);
    match (kind, at) {
        (Kind::Sqlite, _) => tokio::time::sleep(Duration::from_millis(500)).await,
        (_, KillAt::BetweenStatements) => {
            wait_for(kind, &mut conn, false, "into its source query").await;
            // Stopped, it reads no reply: once the statement ends, its
            // session waits in its open transaction.
            let stopped = Command::new("kill")
                .args(["-STOP", &child.id().to_string()])
                .status()
                .expect("kill -STOP");
            assert!(stopped.success());
            wait_for(kind, &mut conn, true, "between statements").await;
        }
        _ => wait_for(kind, &mut conn, false, "into its slow statement").await,
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap idem");

    exec(&mut conn, "UPDATE pause SET source = 0, row_s = 0").await;
    assert_eq!(
        amounts(kind, &mut conn, "dim").await,
        old,
        "{kind:?} {at:?}: the killed window left part of its merge"
    );
    assert_eq!(
        count(&mut conn, &attempts).await,
        recorded,
        "{kind:?} {at:?}: the ledger claims something of the killed run"
    );

    let mut out = common::idem(&path, &["run", "dim", "-y"]);
    if kind == Kind::MySql && out.status.code() != Some(0) {
        // MariaDB may run a statement whose client is gone to its end
        // (here, minutes: a trigger's sleep, row after row) before it lets
        // go of its locks: the next run says so, naming the connection and
        // how to end it.
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{at:?}: {said}");
        let kill = said
            .split("the server runs its statement to the end before it lets go of the lock: end it with ")
            .nth(1)
            .map(|rest| rest.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| panic!("{at:?}: no KILL named: {said}"));
        assert!(said.contains("from this host"), "{at:?}: {said}");
        exec(&mut conn, &kill).await;
        out = common::idem(&path, &["run", "dim", "-y"]);
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{kind:?} {at:?}: the next run did not find the locks free: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        amounts(kind, &mut conn, "dim").await,
        amounts(kind, &mut conn, "src").await,
        "{kind:?} {at:?}"
    );
    let succeeded = format!(
        "SELECT COUNT(*) FROM {} WHERE status = 'succeeded'",
        ledger(kind)
    );
    assert_eq!(
        count(&mut conn, &succeeded).await,
        recorded + 2,
        "{kind:?} {at:?}"
    );
}

async fn a_merge_killed_in_its_source_query_leaves_the_target_whole(kind: Kind) {
    a_merge_killed_mid_window_leaves_the_target_whole(kind, KillAt::SourceQuery).await;
}

on_every_engine!(a_merge_killed_in_its_source_query_leaves_the_target_whole);

/// Where a server's session is caught: SQLite's writes, in idem's own
/// process, have no other point to be killed at than its source query.
mod on_servers {
    use super::*;

    async fn a_merge_killed_in_its_upsert_leaves_the_target_whole(kind: Kind) {
        a_merge_killed_mid_window_leaves_the_target_whole(kind, KillAt::Upsert).await;
    }

    async fn a_merge_killed_between_statements_leaves_the_target_whole(kind: Kind) {
        a_merge_killed_mid_window_leaves_the_target_whole(kind, KillAt::BetweenStatements).await;
    }

    on_server_engines!(
        a_merge_killed_in_its_upsert_leaves_the_target_whole,
        a_merge_killed_between_statements_leaves_the_target_whole,
    );
}

/// A merge job and a replace job writing one target (lint warns of it).
mod merged_and_replaced {
    use super::*;

    /// The advisory key (PostgreSQL, this database's) or lock name
    /// (MariaDB, the server's: it names the database) of the gate.
    const GATE_KEY: i64 = 7_370_010;
    const GATE_NAME: &str = "CONCAT('idem-test-gate:', DATABASE())";

    /// The replace job's rows, once it may take the gate: a lock the test
    /// holds until the merge says it waits. PostgreSQL takes it in a
    /// derived table, MariaDB in an aggregate, as [`select`] sleeps.
    fn gated(kind: Kind) -> String {
        let gate = match kind {
            Kind::Postgres => format!("(select pg_advisory_xact_lock_shared({GATE_KEY}) as p)"),
            Kind::MySql => format!("(select max(get_lock({GATE_NAME}, 60)) as p from rsrc)"),
            Kind::Sqlite => unreachable!("no server"),
        };
        format!(
            "select rsrc.id, rsrc.amount, rsrc.dt from rsrc cross join {gate} g \
             where rsrc.dt >= :start and rsrc.dt < :end"
        )
    }

    /// The statements by which the test takes and lets go of the gate
    /// (each answering 1), and the count of idem's loads waiting for it in
    /// their INSERT: told apart, by their text, from a wait for a
    /// partition's lock.
    fn gate(kind: Kind) -> [String; 3] {
        match kind {
            Kind::Postgres => [
                format!("SELECT count(pg_advisory_lock({GATE_KEY}))"),
                format!("SELECT CAST(CAST(pg_advisory_unlock({GATE_KEY}) AS integer) AS bigint)"),
                format!(
                    "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
                     AND application_name LIKE 'idem#%' AND wait_event_type = 'Lock' \
                     AND wait_event = 'advisory' \
                     AND query LIKE '%INSERT INTO%pg_advisory_xact_lock_shared({GATE_KEY})%'"
                ),
            ],
            Kind::MySql => [
                format!("SELECT CAST(GET_LOCK({GATE_NAME}, 0) AS SIGNED)"),
                format!("SELECT CAST(RELEASE_LOCK({GATE_NAME}) AS SIGNED)"),
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() \
                 AND ID <> CONNECTION_ID() AND STATE = 'User lock' \
                 AND INFO LIKE '%INSERT INTO%idem-test-gate%'"
                    .to_string(),
            ],
            Kind::Sqlite => unreachable!("no server"),
        }
    }

    /// The replace job `r` (its source waits for the test's gate) and the
    /// merge job `m`, whose window 2026-01-01 brings key 500, a row of
    /// 2026-01-02: of `r`'s window. Their locks wait a minute, a bound no
    /// run of the test comes near: the merge waits for the replace, which
    /// waits for the gate until the merge says so.
    async fn one_target_two_jobs(kind: Kind) -> (TestDb, std::path::PathBuf) {
        let db = TestDb::new(kind).await.expect("server");
        let jobs = common::merge_job(
            "m",
            "t",
            "2026-01-02",
            "select id, amount, dt from msrc where loaded >= :start and loaded < :end",
        ) + &common::replace_job("r", "t", "2026-01-02", &gated(kind));
        let (path, config) = db.config_with("lock_timeout = \"60s\"", &jobs);
        let wh = db.warehouse(&config).await;
        wh.execute_script(&[
            "CREATE TABLE rsrc (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
            "CREATE TABLE msrc (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL, \
             loaded DATE NOT NULL)",
            "CREATE TABLE t (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)",
            "INSERT INTO rsrc VALUES (1, 1, '2026-01-02'), (2, 2, '2026-01-02')",
            "INSERT INTO msrc VALUES (500, 5, '2026-01-02', '2026-01-01')",
        ])
        .await
        .expect("setup");
        wh.close().await;
        (db, path)
    }

    /// Before, a merge ran while a replace of a window its rows land in was
    /// half done: on PostgreSQL the replace then found a row it had not
    /// written in its window (failing, or recording a count and
    /// fingerprint not its own), and a `-y` run said nothing of the two
    /// jobs sharing the target. Now the merge waits for the replace (and
    /// the other way round), each run warns, and both end whole.
    async fn a_merge_waits_for_a_replace_of_its_target(kind: Kind) {
        let (db, path) = one_target_two_jobs(kind).await;
        let mut conn = connect(&db).await;
        let [take, release, waiting] = gate(kind);
        assert_eq!(count(&mut conn, &take).await, 1, "{kind:?}: the gate");
        let replace = crate::common::idem_command()
            .arg("--config")
            .arg(&path)
            .args([
                "run",
                "r",
                "--from",
                "2026-01-02",
                "--to",
                "2026-01-02",
                "-y",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn idem");
        let never = format!("{kind:?}: the replace never got to the gate in its INSERT");
        wait_for_count(&mut conn, &waiting, &never).await;
        let mut merge = crate::common::idem_command()
            .arg("--config")
            .arg(&path)
            .args([
                "run",
                "m",
                "--from",
                "2026-01-01",
                "--to",
                "2026-01-01",
                "--json",
                "-y",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn idem");
        // The merge's events as they come: the gate opens once it waits
        // for the replace's lock, or once it has ended without waiting.
        let mut events = Vec::new();
        let mut lines = BufReader::new(merge.stdout.take().expect("stdout")).lines();
        for line in lines.by_ref() {
            let line = line.expect("the merge's events");
            let waits = line.contains("waiting for the lock covering t [");
            events.push(line);
            if waits {
                break;
            }
        }
        assert_eq!(count(&mut conn, &release).await, 1, "{kind:?}: the gate");
        events.extend(lines.map(|line| line.expect("the merge's events")));
        let merge = merge.wait_with_output().expect("idem ran");
        let replace = replace.wait_with_output().expect("idem ran");
        let events = events.join("\n");
        let warned = "idem: warning: job m merges into t, whose partitions job r replaces";
        let replace_stdout = String::from_utf8_lossy(&replace.stdout).into_owned();
        for (run, out, stdout) in [("r", &replace, &replace_stdout), ("m", &merge, &events)] {
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{kind:?} {run}: {stdout}{stderr}"
            );
            assert!(stderr.contains(warned), "{kind:?} {run}: {stderr}");
        }
        assert!(
            events.contains("waiting for the lock covering t [")
                && events.contains(") and every merge into t: another session holds it"),
            "{kind:?}: the merge did not wait for the replace: {events}"
        );
        assert_eq!(
            amounts(kind, &mut conn, "t").await,
            [(1, 1), (2, 2), (500, 5)],
            "{kind:?}"
        );
        // The replace's ledger row counts its own two rows.
        let rows_after = format!(
            "SELECT CAST(rows_after AS {}) FROM {} WHERE job = 'r' AND status = 'succeeded'",
            if kind == Kind::MySql {
                "SIGNED"
            } else {
                "BIGINT"
            },
            ledger(kind)
        );
        assert_eq!(count(&mut conn, &rows_after).await, 2, "{kind:?}");
    }

    on_server_engines!(a_merge_waits_for_a_replace_of_its_target);
}

/// Edge windows of a merge job's source.
mod edge_windows {
    use super::*;

    /// A window whose source is empty now, having had rows at its last
    /// load (a change table emptied once read): the merge deletes nothing,
    /// the keys it merged before keep their values, the ledger records the
    /// window merged with no rows, and the run names the job and window.
    async fn a_window_whose_source_emptied_keeps_its_keys(kind: Kind) {
        let (db, path) = paused_merge(kind).await;
        let mut conn = connect(&db).await;
        let before = amounts(kind, &mut conn, "dim").await;
        assert_eq!(before.len(), 40);
        exec(&mut conn, "DELETE FROM src WHERE dt < '2026-01-02'").await;
        let out = common::idem(&path, &["run", "dim", "-y"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{kind:?}: {stderr}");
        assert_eq!(amounts(kind, &mut conn, "dim").await, before, "{kind:?}");
        assert!(
            stderr.contains(
                "1 window merged no rows, the source having no changes in it (2026-01-01)"
            ) && stderr.contains(" run dim --only empty --from 2026-01-01 --to 2026-01-01"),
            "{kind:?}: {stderr}"
        );
        let latest = format!(
            "SELECT CAST(rows_inserted + rows_updated + rows_after AS {}) FROM {} \
             WHERE job = 'dim' AND partition_key = '2026-01-01' AND status = 'succeeded' \
             ORDER BY id DESC LIMIT 1",
            if kind == Kind::MySql {
                "SIGNED"
            } else {
                "BIGINT"
            },
            ledger(kind)
        );
        assert_eq!(count(&mut conn, &latest).await, 0, "{kind:?}");
        let status = common::stdout_ok(&common::idem(&path, &["status", "dim", "--format", "csv"]));
        assert!(status.contains("2026-01-01,empty,"), "{kind:?}: {status}");
        assert!(status.contains("2026-01-02,loaded,"), "{kind:?}: {status}");
    }

    on_every_engine!(a_window_whose_source_emptied_keeps_its_keys);
}
