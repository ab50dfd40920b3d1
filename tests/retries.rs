//! Transient errors are retried with backoff: a partition whose lock is held
//! past the lock timeout fails once, then loads when the lock is released.

mod common;

use std::time::Duration;

use common::{Kind, TestDb};
use idem::engine::{self, Backfill, Event, FailureCause, Selection};
use idem::warehouse::ledger::AttemptStatus;
use sqlx::{AssertSqlSafe, Connection, Executor};

async fn a_held_lock_fails_once_then_the_retry_loads(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let job = common::replace_job(
        "fct",
        "fct",
        "2026-01-01",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    let (_, config) = db.config_with("lock_timeout = \"1s\"", &job);
    let wh = db.warehouse(&config).await;
    source_and_target(&wh, 2).await;
    let job = &config.jobs[0];
    let backfill = Backfill::plan(&wh, job, &Selection::default(), 1, 2)
        .await
        .unwrap();
    // Warm up the description cache so the run goes straight to the lock.
    let _ = wh.output_columns("SELECT 1").await;

    // Another session holds a conflicting lock for longer than lock_timeout.
    let blocker = match kind {
        Kind::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
            c.execute("BEGIN IMMEDIATE").await.unwrap();
            Blocker::Sqlite(c)
        }
        Kind::Postgres => {
            let mut c = sqlx::PgConnection::connect(&db.url).await.unwrap();
            c.execute("BEGIN").await.unwrap();
            c.execute(AssertSqlSafe(
                "LOCK TABLE fct IN ACCESS EXCLUSIVE MODE".to_string(),
            ))
            .await
            .unwrap();
            Blocker::Postgres(c)
        }
        Kind::MySql => {
            let mut c = sqlx::MySqlConnection::connect(&db.url).await.unwrap();
            c.execute(AssertSqlSafe("LOCK TABLES fct WRITE".to_string()))
                .await
                .unwrap();
            Blocker::MySql(c)
        }
    };
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1600)).await;
        match blocker {
            Blocker::Sqlite(mut c) => c.execute("ROLLBACK").await.map(|_| ()),
            Blocker::Postgres(mut c) => c.execute("ROLLBACK").await.map(|_| ()),
            Blocker::MySql(mut c) => c.execute("UNLOCK TABLES").await.map(|_| ()),
        }
    });
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let summary = engine::run(&wh, &backfill, &tx, &Default::default()).await;
    release.await.unwrap().unwrap();
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    assert_eq!((summary.succeeded, summary.failed), (1, 0), "{events:#?}");
    let retried = events.iter().any(|e| {
        matches!(
            e,
            Event::PartitionFailed {
                will_retry: true,
                ..
            }
        )
    });
    assert!(
        retried,
        "the first attempt should time out on the lock: {events:#?}"
    );
    let attempts = wh.attempts("fct", Some("2026-01-01")).await.unwrap();
    assert!(attempts.len() >= 2, "{attempts:#?} {events:#?}");
    assert_eq!(attempts.last().unwrap().attempt, attempts.len() as i64);
}

/// `src` with `rows` rows on 2026-01-01 and an empty `fct`, both (id, dt).
async fn source_and_target(wh: &idem::warehouse::Warehouse, rows: usize) {
    let values: Vec<String> = (1..=rows)
        .map(|id| format!("({id}, '2026-01-01')"))
        .collect();
    let insert = format!("INSERT INTO src (id, dt) VALUES {}", values.join(", "));
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        &insert,
    ])
    .await
    .unwrap();
}

enum Blocker {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
    MySql(sqlx::MySqlConnection),
}

async fn statement_timeout_stops_a_slow_partition_without_retrying(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let pause = match kind {
        Kind::Postgres => "(select pg_sleep(3)) pause",
        Kind::MySql => "(select sleep(3)) pause",
        // SQLite has neither a sleep nor a statement timeout.
        Kind::Sqlite => "(select 1) pause",
    };
    let sql = format!("select id, dt from src, {pause} where dt >= :start and dt < :end");
    let job = common::replace_job("fct", "fct", "2026-01-01", &sql);
    let (_, config) = db.config_with("statement_timeout = \"500ms\"", &job);
    let wh = db.warehouse(&config).await;
    source_and_target(&wh, 1).await;
    let backfill = Backfill::plan(&wh, &config.jobs[0], &Selection::default(), 1, 2)
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let started = std::time::Instant::now();
    let summary = engine::run(&wh, &backfill, &tx, &Default::default()).await;
    drop(tx);
    let mut errors = Vec::new();
    while let Some(e) = rx.recv().await {
        if let Event::PartitionFailed {
            error, will_retry, ..
        } = e
        {
            assert!(!will_retry, "a statement timeout is not retried");
            errors.push(error);
        }
    }
    if kind == Kind::Sqlite {
        assert_eq!(summary.succeeded, 1);
        return;
    }
    assert_eq!((summary.succeeded, summary.failed), (0, 1), "{errors:?}");
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "stopped by the timeout, not the sleep"
    );
    let error = errors.join(" ").to_lowercase();
    assert!(
        error.contains("timeout") || error.contains("max_statement_time"),
        "{error}"
    );
}

/// `lock_timeout = "0s"` means "do not wait" on every engine (PostgreSQL
/// alone would read 0 as "wait forever").
async fn a_zero_lock_timeout_fails_at_once(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let pause = match kind {
        Kind::Postgres => "(select pg_sleep(5)) pause",
        Kind::MySql => "(select sleep(5)) pause",
        Kind::Sqlite => "(select 1) pause",
    };
    let slow = common::replace_job(
        "fct",
        "fct",
        "2026-01-01",
        &format!("select id, dt from src, {pause} where dt >= :start and dt < :end"),
    );
    let (_, slow_config) = db.config_with("lock_timeout = \"20s\"", &slow);
    let (_, config) = db.config_with("lock_timeout = \"0s\"", &slow);
    let holder = db.warehouse(&slow_config).await;
    source_and_target(&holder, 1).await;
    let wh = db.warehouse(&config).await;
    let plan = |wh: idem::warehouse::Warehouse, job: idem::config::Job| async move {
        Backfill::plan(&wh, &job, &Selection::default(), 1, 0)
            .await
            .unwrap()
    };
    let held = plan(holder.clone(), slow_config.jobs[0].clone()).await;
    let backfill = plan(wh.clone(), config.jobs[0].clone()).await;
    let _ = wh.columns(&config.jobs[0].target).await;

    // The partition's lock is held for seconds: by a slow load of the same
    // partition on the servers, by another writer on SQLite.
    let holding = match kind {
        Kind::Sqlite => {
            let mut c = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
            c.execute("BEGIN IMMEDIATE").await.unwrap();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                c.execute("ROLLBACK").await.map(|_| ()).unwrap();
            })
        }
        Kind::Postgres | Kind::MySql => tokio::spawn(async move {
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let summary = engine::run(&holder, &held, &tx, &Default::default()).await;
            assert_eq!(summary.succeeded, 1);
        }),
    };
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let started = std::time::Instant::now();
    let summary = engine::run(&wh, &backfill, &tx, &Default::default()).await;
    let waited = started.elapsed();
    drop(tx);
    let mut errors = Vec::new();
    let mut finished = None;
    while let Some(e) = rx.recv().await {
        match e {
            Event::PartitionFailed { error, cause, .. } => errors.push((error, cause)),
            Event::RunFinished {
                failed, lock_held, ..
            } => finished = Some((failed, lock_held)),
            _ => {}
        }
    }
    assert!(!holding.is_finished(), "the lock was still held");
    assert_eq!((summary.succeeded, summary.failed), (0, 1), "{errors:?}");
    // Recorded refused, as it wrote nothing: every surface says so, from
    // the event's cause, not its words.
    assert!(
        errors.iter().all(|(_, c)| *c == FailureCause::LockHeld),
        "{errors:?}"
    );
    assert_eq!(summary.lock_held, 1);
    assert_eq!(
        finished,
        Some((1, 1)),
        "failed, of which refused for the lock"
    );
    // Recorded refused where the ledger could be written (SQLite's writer
    // holds the whole file, the ledger too); the holder's own load is not
    // committed yet.
    let attempts = wh.attempts("fct", None).await.expect("ledger");
    let statuses: Vec<AttemptStatus> = attempts.iter().map(|a| a.status).collect();
    assert_eq!(
        statuses.contains(&AttemptStatus::Refused),
        kind != Kind::Sqlite,
        "{statuses:?}"
    );
    assert!(!statuses.contains(&AttemptStatus::Failed), "{statuses:?}");
    let errors: Vec<String> = errors.into_iter().map(|(e, _)| e).collect();
    assert!(waited < Duration::from_millis(900), "waited {waited:?}");
    let error = errors.join(" ").to_lowercase();
    assert!(error.contains("lock"), "{error}");
    holding.await.unwrap();
}

on_every_engine!(
    a_held_lock_fails_once_then_the_retry_loads,
    statement_timeout_stops_a_slow_partition_without_retrying,
    a_zero_lock_timeout_fails_at_once,
);

/// A job `fct` of one day and one source row in `db`, planned without
/// retries under this `lock_timeout`.
async fn one_day(db: &TestDb, lock_timeout: &str) -> (idem::warehouse::Warehouse, Backfill) {
    let job = common::replace_job(
        "fct",
        "fct",
        "2026-01-01",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    let (_, config) = db.config_with(&format!("lock_timeout = \"{lock_timeout}\""), &job);
    let wh = db.warehouse(&config).await;
    source_and_target(&wh, 1).await;
    let backfill = Backfill::plan(&wh, &config.jobs[0], &Selection::default(), 1, 0)
        .await
        .unwrap();
    (wh, backfill)
}

/// MariaDB's partition locks are named by idem (a hash of the database and
/// the hour). Builds before had the server make the same names in the lock
/// statement, so a lock taken the server's way, as an older idem loading
/// the same day takes it, must stop this load: here on the day's sixth
/// hour, not the first one that the console probes.
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_lock_named_by_the_server_stops_the_load() {
    let db = TestDb::new(Kind::MySql).await.expect("mysql");
    let (wh, backfill) = one_day(&db, "0s").await;
    let mut older = sqlx::MySqlConnection::connect(&db.url).await.unwrap();
    let taken: i64 = sqlx::query_scalar(
        "SELECT GET_LOCK(CONCAT('idem:', LEFT(SHA2(CONCAT(COALESCE(DATABASE(), ''), ':', 'fct:2026-01-01T05'), 256), 40)), 0)",
    )
    .fetch_one(&mut older)
    .await
    .unwrap();
    assert_eq!(taken, 1);
    let (summary, events) = common::run(&wh, &backfill).await;
    let errors = common::errors(&events);
    assert_eq!((summary.succeeded, summary.failed), (0, 1), "{errors:?}");
    assert!(
        errors.join(" ").to_lowercase().contains("lock"),
        "{errors:?}"
    );
    let rows = || sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM fct");
    assert_eq!(rows().fetch_one(&mut older).await.unwrap(), 0);

    older.execute("SELECT RELEASE_ALL_LOCKS()").await.unwrap();
    let (summary, events) = common::run(&wh, &backfill).await;
    assert_eq!(
        (summary.succeeded, summary.failed),
        (1, 0),
        "{:?}",
        common::errors(&events)
    );
    assert_eq!(rows().fetch_one(&mut older).await.unwrap(), 1);
}

/// Other sessions hold a day's first three hours and let go one after the
/// other, each within the lock timeout: a load of the day still waits no
/// longer than `lock_timeout` in all (it waited for each hour in turn,
/// here 4.5 s against a 2 s timeout; a month's 744 hours could add up to
/// hours).
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_hours_held_one_after_another_wait_lock_timeout_in_all() {
    let db = TestDb::new(Kind::MySql).await.expect("mysql");
    let (wh, backfill) = one_day(&db, "2s").await;
    let mut holders = Vec::new();
    for (hour, held_ms) in [("00", 1500u64), ("01", 3000), ("02", 4500)] {
        let mut c = sqlx::MySqlConnection::connect(&db.url).await.unwrap();
        let take = format!(
            "SELECT GET_LOCK(CONCAT('idem:', LEFT(SHA2(CONCAT(COALESCE(DATABASE(), ''), ':', 'fct:2026-01-01T{hour}'), 256), 40)), 0)"
        );
        let taken: i64 = sqlx::query_scalar(AssertSqlSafe(take))
            .fetch_one(&mut c)
            .await
            .unwrap();
        assert_eq!(taken, 1);
        holders.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(held_ms)).await;
            c.execute("SELECT RELEASE_ALL_LOCKS()").await.map(|_| ())
        }));
    }
    let started = std::time::Instant::now();
    let (summary, events) = common::run(&wh, &backfill).await;
    let waited = started.elapsed();
    for h in holders {
        h.await.unwrap().unwrap();
    }
    let errors = common::errors(&events);
    assert_eq!((summary.succeeded, summary.failed), (0, 1), "{errors:?}");
    assert!(
        errors[0]
            .starts_with("could not take the lock on partition 2026-01-01 within the lock timeout"),
        "{errors:?}"
    );
    assert!(waited < Duration::from_millis(3500), "waited {waited:?}");
}

/// A run whose partition's lock another writer holds past `lock_timeout`
/// (SQLite's write lock, here held by another session until the refused
/// attempt is being recorded) records that attempt as refused: it wrote
/// nothing, and the partition loaded before stays loaded, where "failed"
/// would have marked it for a re-run it does not need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_past_the_timeout_is_refused_and_changes_no_state() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let job = common::replace_job(
        "fct",
        "fct",
        "2026-01-01",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    let path = db.path().join("idem.toml");
    std::fs::write(
        &path,
        format!(
            "[warehouse]\nurl = \"{}\"\nlock_timeout = \"3s\"\n\n[defaults]\nretries = 0\n\n{job}",
            db.url
        ),
    )
    .expect("config");
    let mut holder = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
    for s in [
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ] {
        holder.execute(s).await.unwrap();
    }
    common::stdout_ok(&common::idem(&path, &["run", "fct", "-y"]));

    holder.execute("BEGIN IMMEDIATE").await.unwrap();
    let refused = crate::common::idem_command()
        .arg("--config")
        .arg(&path)
        .args(["run", "fct", "-y"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("idem ran");
    // Past its lock timeout (3 s from its start), while its attempt waits
    // to be recorded (up to 3 s more).
    tokio::time::sleep(Duration::from_millis(4500)).await;
    holder.execute("ROLLBACK").await.unwrap();
    let out = refused.wait_with_output().expect("idem ended");
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("could not take the lock"), "{said}");
    // The partition's state is as it was (loaded): the repeat covers it by
    // its range, not by `--only failed`, which would pick nothing, once the
    // lock is free.
    assert!(
        said.contains("locks held elsewhere kept them waiting: once they are free, repeat:")
            && !said.contains("--only failed"),
        "{said}"
    );

    let status: String =
        sqlx::query_scalar("SELECT status FROM idem_attempts ORDER BY id DESC LIMIT 1")
            .fetch_one(&mut holder)
            .await
            .unwrap();
    assert_eq!(status, "refused", "{said}");
    let states = common::stdout_ok(&common::idem(&path, &["status", "fct"]));
    assert!(
        states.contains("loaded") && !states.contains("failed"),
        "{states}"
    );
}

/// A partition whose attempt failed, waiting to retry when the run is
/// cancelled, counts as failed, as the ledger has it, not as never started
/// (QA: a console quit said "0 failed, 18 not started" where `idem status`
/// showed the failures).
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_partition_cancelled_before_its_retry_counts_as_failed() {
    let db = TestDb::new(Kind::Postgres).await.expect("postgres");
    let (wh, mut backfill) = one_day(&db, "1s").await;
    backfill.retries = 3;
    let mut blocker = sqlx::PgConnection::connect(&db.url).await.unwrap();
    blocker.execute("BEGIN").await.unwrap();
    blocker
        .execute(AssertSqlSafe(
            "LOCK TABLE fct IN ACCESS EXCLUSIVE MODE".to_string(),
        ))
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let run = {
        let (wh, backfill, cancel) = (wh.clone(), backfill.clone(), cancel.clone());
        tokio::spawn(async move { engine::run(&wh, &backfill, &tx, &cancel).await })
    };
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        let retrying = matches!(
            e,
            Event::PartitionFailed {
                will_retry: true,
                ..
            }
        );
        events.push(e);
        if retrying {
            cancel.cancel();
        }
    }
    let summary = run.await.unwrap();
    blocker.execute("ROLLBACK").await.unwrap();
    assert!(summary.cancelled, "{events:#?}");
    assert_eq!(
        (summary.failed, summary.not_started),
        (1, 0),
        "{summary:?}\n{events:#?}"
    );
    assert_eq!(summary.unfinished.len(), 1, "the repeat still covers it");
    let attempts = wh.attempts("fct", Some("2026-01-01")).await.unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:#?}");
}
