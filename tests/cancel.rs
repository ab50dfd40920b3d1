//! A cancelled run or verification stops on the server, not only in idem:
//! the statement it had in flight ends with it, its partition lock is free at once, and
//! the next run of those partitions starts without waiting. A load whose
//! COMMIT was already on its way when the cancel came is reported as what
//! the server made of it.

mod common;

use std::time::Duration;

use common::proxy::Proxy;
use common::{Kind, TestDb};
use idem::config::Config;
use idem::engine::{self, Backfill, Event, Selection};
use idem::partition::{Grain, Partition, RangeEnd};
use idem::warehouse::Warehouse;
use idem::warehouse::ledger::AttemptStatus;
use sqlx::{Connection, Row};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Two rows a day; the slow job sleeps this long per row it reads.
const SLEEP_PER_ROW_S: u32 = 15;

fn sleep_per_row(kind: Kind, seconds: u32) -> String {
    match kind {
        Kind::Postgres => format!("pg_sleep({seconds}) IS NOT NULL"),
        Kind::MySql => format!("SLEEP({seconds}) = 0"),
        Kind::Sqlite => unreachable!("SQLite runs inside idem"),
    }
}

async fn setup(kind: Kind, ddl_extra: &[&str]) -> (TestDb, Config, Warehouse) {
    let db = TestDb::new(kind).await.expect("test database");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let jobs = [
        common::replace_job(
            "slow",
            "fct",
            "2026-01-04",
            &format!("{select} and {}", sleep_per_row(kind, SLEEP_PER_ROW_S)),
        ),
        // Two rows of 13 s: longer than one period of the session watch.
        common::replace_job(
            "long",
            "fct_long",
            "2026-01-04",
            &format!("{select} and {}", sleep_per_row(kind, 13)),
        ),
        common::replace_job("quick", "fct", "2026-01-04", select),
        common::replace_job("slow_commit", "fct_slow_commit", "2026-01-04", select),
    ]
    .concat();
    // A held lock fails a load within a second rather than the usual 20.
    let (_, config) = db.config_with("lock_timeout = \"1s\"", &jobs);
    let wh = db.warehouse(&config).await;
    let mut ddl = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-01'), (3, '2026-01-02'), \
         (4, '2026-01-02'), (5, '2026-01-03'), (6, '2026-01-03')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct_slow_commit (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct_long (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ];
    ddl.extend_from_slice(ddl_extra);
    wh.execute_script(&ddl).await.expect("setup");
    (db, config, wh)
}

fn days(from: &str, to: &str) -> Selection {
    let day = |d: &str| Partition::parse(Grain::Day, d, RangeEnd::From).expect("day");
    Selection {
        from: Some(day(from)),
        to: Some(day(to)),
        ..Selection::default()
    }
}

async fn plan(wh: &Warehouse, config: &Config, job: &str, selection: &Selection) -> Backfill {
    let job = config.jobs.iter().find(|j| j.name == job).expect("job");
    Backfill::plan(wh, job, selection, 2, 0)
        .await
        .expect("plan")
}

/// Runs `backfill`, cancelling it once `ready` has held of `wanted` of its
/// partitions' log lines and a moment has passed (the next statement sent).
/// Returns every event.
async fn run_cancelled(
    wh: &Warehouse,
    backfill: &Backfill,
    ready: impl Fn(&str) -> bool,
    wanted: usize,
) -> Vec<Event> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let mut run = Box::pin(engine::run(wh, backfill, &tx, &cancel));
    let mut events = Vec::new();
    let mut seen = 0;
    let never = tokio::time::Instant::now() + Duration::from_secs(3600);
    let cancel_at = tokio::time::sleep_until(never);
    tokio::pin!(cancel_at);
    loop {
        tokio::select! {
            _ = &mut run => break,
            () = &mut cancel_at, if !cancel.is_cancelled() => cancel.cancel(),
            Some(e) = rx.recv() => {
                if let Event::PartitionLog { line, .. } = &e
                    && ready(line)
                {
                    seen += 1;
                    if seen == wanted {
                        // The run goes on meanwhile, sending its next statement.
                        cancel_at
                            .as_mut()
                            .reset(tokio::time::Instant::now() + Duration::from_millis(500));
                    }
                }
                events.push(e);
            }
        }
    }
    assert_eq!(seen, wanted, "the partitions never got there: {events:#?}");
    drop(run);
    drop(tx);
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    events
}

/// Sessions of this database other than the asking one that are running a
/// statement.
fn busy_sessions(kind: Kind) -> &'static str {
    match kind {
        Kind::Postgres => {
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND pid <> pg_backend_pid() AND state = 'active'"
        }
        _ => {
            "SELECT count(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() \
             AND ID <> CONNECTION_ID() AND COMMAND IN ('Query', 'Execute')"
        }
    }
}

async fn count(wh: &Warehouse, sql: &str) -> i64 {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(wh.pool())
        .await
        .expect(sql)
        .get(0)
}

/// Polls `sql` every 100 ms for up to 3 s until it gives 0.
async fn comes_to_zero(wh: &Warehouse, sql: &str) -> bool {
    for _ in 0..30 {
        if count(wh, sql).await == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

fn statuses(attempts: &[idem::warehouse::ledger::Attempt], day: &str) -> Vec<AttemptStatus> {
    attempts
        .iter()
        .filter(|a| a.partition == day)
        .map(|a| a.status)
        .collect()
}

async fn a_cancelled_load_stops_on_the_server_and_frees_its_lock(kind: Kind) {
    let (db, config, wh) = setup(kind, &[]).await;
    let slow = plan(&wh, &config, "slow", &days("2026-01-01", "2026-01-02")).await;
    // Both partitions have deleted their window and sent their INSERT,
    // which would read its two rows for 2 × 15 s.
    let events = run_cancelled(&wh, &slow, |line| line.starts_with("DELETE"), 2).await;
    let ended = events.iter().filter(|e| {
        matches!(e, Event::PartitionLog { line, .. } if line.contains("its session on the server is ended"))
    });
    assert_eq!(ended.count(), 2, "{events:#?}");

    assert!(
        comes_to_zero(&wh, busy_sessions(kind)).await,
        "the cancelled INSERTs still run on the server"
    );
    assert_eq!(count(&wh, "SELECT count(*) FROM fct").await, 0);
    let attempts = wh.attempts("slow", None).await.expect("ledger");
    for day in ["2026-01-01", "2026-01-02"] {
        assert_eq!(
            statuses(&attempts, day),
            [AttemptStatus::Cancelled],
            "{day}"
        );
    }

    quick_run_loads(&wh, &config, "2026-01-01", "2026-01-02").await;
    assert_eq!(count(&wh, "SELECT count(*) FROM fct").await, 4);
    drop(db);
}

/// A run of one day of `slow_commit`, whose COMMIT a deferred trigger makes
/// take `seconds` a row (two rows), cancelled while that COMMIT is on its
/// way: the database, the warehouse and the run's events.
async fn cancelled_during_commit(seconds: u32) -> (TestDb, Warehouse, Vec<Event>) {
    let function = format!(
        "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN PERFORM pg_sleep({seconds}); RETURN NULL; END $$"
    );
    let trigger = [
        function.as_str(),
        "CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON fct_slow_commit \
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()",
    ];
    let (db, config, wh) = setup(Kind::Postgres, &trigger).await;
    let one_day = plan(
        &wh,
        &config,
        "slow_commit",
        &days("2026-01-01", "2026-01-01"),
    )
    .await;
    // The fingerprint is the last step before the ledger row and COMMIT.
    let events = run_cancelled(&wh, &one_day, |line| line.starts_with("fingerprint"), 1).await;
    (db, wh, events)
}

/// A deferred trigger makes each COMMIT of `fct_slow_commit` take a second
/// a row; the cancel comes while it is on its way. The server commits it,
/// so idem reports the partition loaded, and records no cancellation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
async fn postgres_a_load_cancelled_during_its_commit_reports_what_the_server_did() {
    let (db, wh, events) = cancelled_during_commit(1).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::PartitionLog { line, .. } if line.contains("while its COMMIT is on its way"))),
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::PartitionSucceeded { partition, .. } if partition == "2026-01-01")),
        "{events:#?}"
    );
    assert_eq!(count(&wh, "SELECT count(*) FROM fct_slow_commit").await, 2);
    let attempts = wh.attempts("slow_commit", None).await.expect("ledger");
    assert_eq!(
        statuses(&attempts, "2026-01-01"),
        [AttemptStatus::Succeeded]
    );
    drop(db);
}

/// The same with a COMMIT longer than idem waits for once cancelled (4 s a
/// row, 8 s in all): idem lets go not knowing what the server made of it,
/// and says so. It neither says "rolled back" nor records a cancellation:
/// a COMMIT on its way may take (a server waiting on a synchronous standby
/// has committed locally). Here the server sees idem gone and rolls back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
async fn postgres_a_commit_still_on_its_way_when_idem_lets_go_is_reported_unknown() {
    let (db, wh, events) = cancelled_during_commit(4).await;
    let errors = common::errors(&events);
    assert_eq!(errors.len(), 1, "{events:#?}");
    assert!(
        errors[0].starts_with("its COMMIT was under way when the run was cancelled"),
        "{errors:?}"
    );
    let finished = events.iter().find_map(|e| match e {
        Event::RunFinished {
            failed,
            rolled_back,
            ..
        } => Some((*failed, *rolled_back)),
        _ => None,
    });
    assert_eq!(finished, Some((1, 0)), "not counted as rolled back");
    // Whole either way, and no row says it was cancelled.
    let rows = count(&wh, "SELECT count(*) FROM fct_slow_commit").await;
    assert!(rows == 0 || rows == 2, "{rows}");
    let attempts = wh.attempts("slow_commit", None).await.expect("ledger");
    let said = statuses(&attempts, "2026-01-01");
    assert!(
        said.is_empty() || said == [AttemptStatus::Succeeded],
        "{said:?}"
    );
    assert_eq!(
        rows == 2,
        !said.is_empty(),
        "the ledger says what the table holds"
    );
    drop(db);
}

/// `idem verify` runs the job twice under the partition's lock and rolls
/// back; SIGTERM mid-way ends its statement on the server too.
/// Starts idem with `args` and waits until the server runs a statement of
/// it, and a moment more.
async fn idem_mid_statement(
    db: &TestDb,
    wh: &Warehouse,
    kind: Kind,
    args: &[&str],
) -> std::process::Child {
    let child = crate::common::idem_command()
        .arg("--config")
        .arg(db.path().join("idem.toml"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn idem");
    let mut started = false;
    for _ in 0..100 {
        if count(wh, busy_sessions(kind)).await > 0 {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(started, "idem {args:?} never reached the server");
    tokio::time::sleep(Duration::from_millis(300)).await;
    child
}

fn signal(child: &std::process::Child, signal: &str) {
    let signalled = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(signalled.success());
}

/// The partitions' locks are free: a run of them takes them at once (its
/// lock timeout is 1 s, and a slow INSERT would hold them for 30 s).
async fn quick_run_loads(wh: &Warehouse, config: &Config, from: &str, to: &str) {
    let quick = plan(wh, config, "quick", &days(from, to)).await;
    let (summary, events) = common::run(wh, &quick).await;
    assert_eq!(
        summary.succeeded,
        quick.partitions.len(),
        "{:?}",
        common::errors(&events)
    );
}

/// `idem verify` runs the job twice under the partition's lock and rolls
/// back; SIGTERM mid-way ends its statement on the server too.
async fn a_verification_stopped_by_sigterm_stops_on_the_server(kind: Kind) {
    let (db, config, wh) = setup(kind, &[]).await;
    let child = idem_mid_statement(&db, &wh, kind, &["verify", "slow", "2026-01-01"]).await;
    signal(&child, "-TERM");
    let out = child.wait_with_output().expect("idem ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("verify cancelled"), "{stderr}");
    assert!(
        comes_to_zero(&wh, busy_sessions(kind)).await,
        "the cancelled verification still runs on the server"
    );
    quick_run_loads(&wh, &config, "2026-01-01", "2026-01-01").await;
    drop(db);
}

/// idem killed outright (SIGKILL: the OOM killer, an orchestrator's last
/// word) cannot end anything itself; PostgreSQL notices the closed
/// connection within the second idem's sessions ask it to check at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
async fn postgres_a_killed_run_leaves_nothing_running_on_the_server() {
    let kind = Kind::Postgres;
    let (db, config, wh) = setup(kind, &[]).await;
    let mut child = idem_mid_statement(
        &db,
        &wh,
        kind,
        &["run", "slow", "--from", "2026-01-01", "--to", "2026-01-02"],
    )
    .await;
    signal(&child, "-KILL");
    child.wait().expect("idem ends");
    assert!(
        comes_to_zero(&wh, busy_sessions(kind)).await,
        "the killed run's INSERTs still run on the server"
    );
    quick_run_loads(&wh, &config, "2026-01-01", "2026-01-02").await;
    drop(db);
}

/// A load longer than the watch's period has its session looked for (and
/// found) while it runs, and goes on undisturbed: one attempt, loaded.
async fn a_long_load_is_watched_and_left_alone(kind: Kind) {
    let (db, config, wh) = setup(kind, &[]).await;
    let one_day = plan(&wh, &config, "long", &days("2026-01-01", "2026-01-01")).await;
    let (summary, events) = common::run(&wh, &one_day).await;
    assert_eq!(summary.succeeded, 1, "{:?}", common::errors(&events));
    let attempts = wh.attempts("long", None).await.expect("ledger");
    assert_eq!(
        statuses(&attempts, "2026-01-01"),
        [AttemptStatus::Succeeded]
    );
    drop(db);
}

/// A warehouse whose every connection goes through a [`Proxy`],
/// and the plan of one job of `select` loading the one-row `src` into `fct`
/// for 2026-01-01.
async fn through_forgetting_proxy(
    db: &TestDb,
    select: &str,
    retries: u32,
) -> (Proxy, Warehouse, Backfill) {
    let (proxy, through_proxy) = Proxy::before(&db.url).await;
    let job = common::replace_job("forgotten", "fct", "2026-01-01", select);
    let text = format!(
        "[warehouse]\nurl = \"{through_proxy}\"\nlock_timeout = \"1s\"\n\n[defaults]\nconcurrency = 1\nretries = {retries}\n\n{job}"
    );
    let path = db.path().join("idem.toml");
    std::fs::write(&path, &text).expect("config");
    let config = idem::config::parse(&path, &text, &|_| None).expect("config");
    let wh = Warehouse::connect(&config.warehouse, 4)
        .await
        .expect("connect");
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE gate (open INTEGER)",
    ])
    .await
    .expect("setup");
    let backfill = Backfill::plan(
        &wh,
        &config.jobs[0],
        &days("2026-01-01", "2026-01-01"),
        1,
        retries,
    )
    .await
    .expect("plan");
    (proxy, wh, backfill)
}

/// The server forgets a load's session while idem's end of it stays open
/// and silent: the load would wait forever for an answer. The watch finds
/// the session gone within its period, and the partition is retried and
/// loads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
async fn postgres_a_load_whose_session_the_server_forgot_is_retried() {
    let db = TestDb::new(Kind::Postgres).await.expect("test database");
    let server = db.url.clone();
    // The first attempt sleeps 30 s; once `gate` has a row, none do.
    let select = "select id, dt from src where dt >= :start and dt < :end \
                  and pg_sleep(CASE WHEN EXISTS (SELECT 1 FROM gate) THEN 0 ELSE 30 END) IS NOT NULL";
    let (proxy, wh, backfill) = through_forgetting_proxy(&db, select, 1).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let mut run = Box::pin(engine::run(&wh, &backfill, &tx, &cancel));
    let mut events = Vec::new();
    let summary = loop {
        tokio::select! {
            summary = &mut run => break summary,
            Some(e) = rx.recv() => {
                if matches!(&e, Event::PartitionLog { line, .. } if line.starts_with("DELETE")) {
                    // The INSERT is on its way; then the server forgets it.
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    let direct = sqlx::PgConnection::connect(&server);
                    let mut direct = direct.await.expect("direct connection");
                    sqlx::Executor::execute(&mut direct, "INSERT INTO gate VALUES (1)")
                        .await
                        .expect("open the gate");
                    proxy.forget();
                }
                events.push(e);
            }
            () = tokio::time::sleep(Duration::from_secs(75)) => {
                panic!("the load still waits on a session the server forgot: {events:#?}")
            }
        }
    };
    drop(run);
    drop(tx);
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    assert_eq!(summary.succeeded, 1, "{:?}", common::errors(&events));
    let errors = common::errors(&events);
    assert!(
        errors.len() == 1 && errors[0].contains("ended without a word"),
        "{errors:?}"
    );
    eprintln!("loaded {:?} after the start", started.elapsed());
    drop(db);
}

/// The server ends a load's session behind idem's back (a failover, an
/// operator's `pg_terminate_backend`), which frees the partition's lock,
/// and another session takes the lock before idem has noticed. A cancel of
/// the load then ends no session: the lock's holder is not the load's own
/// session. (Found by this test: the cancel ended the lock's holder,
/// whoever it was.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
async fn postgres_a_cancel_ends_the_loads_own_session_and_no_other() {
    let db = TestDb::new(Kind::Postgres).await.expect("test database");
    let server = db.url.clone();
    let select =
        "select id, dt from src where dt >= :start and dt < :end and pg_sleep(30) IS NOT NULL";
    let (proxy, wh, backfill) = through_forgetting_proxy(&db, select, 0).await;
    let held = "SELECT CAST((CAST(classid AS bigint) << 32) | CAST(objid AS bigint) AS bigint) \
                FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid() \
                AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let mut run = Box::pin(engine::run(&wh, &backfill, &tx, &cancel));
    let mut events = Vec::new();
    let mut other = None;
    loop {
        tokio::select! {
            _ = &mut run => break,
            Some(e) = rx.recv() => {
                let deleted = matches!(&e, Event::PartitionLog { line, .. } if line.starts_with("DELETE"));
                events.push(e);
                if !deleted || other.is_some() {
                    continue;
                }
                // The INSERT sleeps on the server, holding the locks.
                tokio::time::sleep(Duration::from_millis(300)).await;
                let mut direct = sqlx::PgConnection::connect(&server)
                    .await
                    .expect("direct connection");
                let keys: Vec<i64> = sqlx::query_scalar(held)
                    .fetch_all(&mut direct)
                    .await
                    .expect("the load's locks");
                assert_eq!(keys.len(), 2, "the day's month, shared, and the day");
                // The server ends the forgotten session within its
                // connection check (1 s), which frees the locks; this
                // session then takes them.
                proxy.forget();
                for key in &keys {
                    let take = sqlx::query("SELECT pg_advisory_lock($1)").bind(key);
                    tokio::time::timeout(Duration::from_secs(10), take.execute(&mut direct))
                        .await
                        .expect("the forgotten session's locks freed")
                        .expect("lock");
                }
                other = Some((direct, keys.len()));
                cancel.cancel();
            }
            () = tokio::time::sleep(Duration::from_secs(60)) => panic!("the run did not end: {events:#?}"),
        }
    }
    drop(run);
    drop(tx);
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    let (mut other, taken) = other.expect("the load got to its DELETE");
    let still_held = sqlx::query_scalar::<_, i64>(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()",
    )
    .fetch_one(&mut other)
    .await;
    assert_eq!(
        still_held.ok(),
        Some(taken as i64),
        "the cancel ended the session that took the locks after the load's was gone"
    );
    let gone = events.iter().any(|e| {
        matches!(e, Event::PartitionLog { line, .. } if line.contains("its session is gone from the server already"))
    });
    assert!(gone, "{events:#?}");
    let attempts = wh.attempts("forgotten", None).await.expect("ledger");
    assert_eq!(
        statuses(&attempts, "2026-01-01"),
        [AttemptStatus::Cancelled]
    );
    drop(db);
}

/// A pooled connection that went silent while it sat idle (a failover or
/// a NAT dropped it) is not waited on: its ping gets 2 s, then the pool
/// opens another, well inside the connect timeout (10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
async fn postgres_a_pooled_connection_gone_silent_is_replaced_not_waited_on() {
    let db = TestDb::new(Kind::Postgres).await.expect("test database");
    let server = db.url.clone();
    let (proxy, through_proxy) = Proxy::before(&server).await;
    let text = format!("[warehouse]\nurl = \"{through_proxy}\"\nconnect_timeout = \"10s\"\n");
    let path = db.path().join("idem.toml");
    std::fs::write(&path, &text).expect("config");
    let config = idem::config::parse(&path, &text, &|_| None).expect("config");
    let wh = Warehouse::connect(&config.warehouse, 2)
        .await
        .expect("connect");
    assert_eq!(count(&wh, "SELECT 1").await, 1);
    // Idle long enough to be pinged before its next use, then silent.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    proxy.forget();
    let asked = std::time::Instant::now();
    let answer = tokio::time::timeout(Duration::from_secs(8), count(&wh, "SELECT 2")).await;
    assert_eq!(
        answer.ok(),
        Some(2),
        "the pool waited on a silent connection ({:?})",
        asked.elapsed()
    );
    drop(db);
}

on_server_engines!(
    a_cancelled_load_stops_on_the_server_and_frees_its_lock,
    a_verification_stopped_by_sigterm_stops_on_the_server,
    a_long_load_is_watched_and_left_alone,
    a_commit_whose_reply_is_lost_is_read_back_from_the_ledger,
);

/// The server commits a load and its reply is lost (the connection fails
/// under the COMMIT): the load reads the success row it committed with its
/// data, once its session is gone from the server, and reports the
/// partition loaded. Before, it reported and recorded a failure after the
/// success row the server had committed: the ledger said both.
async fn a_commit_whose_reply_is_lost_is_read_back_from_the_ledger(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (proxy, wh, backfill) = through_forgetting_proxy(&db, select, 0).await;
    proxy.lose_the_next_commit_reply();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let summary = engine::run(&wh, &backfill, &tx, &CancellationToken::new()).await;
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    assert_eq!(
        (summary.succeeded, summary.failed),
        (1, 0),
        "{kind:?}: {:?}",
        common::errors(&events)
    );
    let said_lost = events.iter().any(
        |e| matches!(e, Event::PartitionLog { line, .. } if line.contains("its reply was lost")),
    );
    assert!(said_lost, "{kind:?}: {events:#?}");
    let attempts = wh.attempts("forgotten", Some("2026-01-01")).await.unwrap();
    assert_eq!(
        attempts.iter().map(|a| a.status).collect::<Vec<_>>(),
        [AttemptStatus::Succeeded],
        "{kind:?}"
    );
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM fct")
        .fetch_one(wh.pool())
        .await
        .unwrap();
    assert_eq!(rows, 1, "{kind:?}");
    wh.close().await;
}
