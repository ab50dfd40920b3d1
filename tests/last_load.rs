//! A re-run's "content changed" compares the window after it with the
//! window before it. On PostgreSQL the window before is not read again when
//! its rows say the partition's last load wrote every one of them (each row
//! names its writing transaction) and none is gone: that load's fingerprint
//! stands for them. These tests write into the window behind idem's back
//! every way a person could, and check that "content changed" stays exact
//! on every engine, and that on PostgreSQL the trusted path is taken only
//! when nothing but the last load wrote the window.

mod common;

use common::{Kind, TestDb};
use idem::config::Config;
use idem::engine::{Backfill, Event, Selection};
use idem::warehouse::Warehouse;
use sqlx::{Connection, Row};

const TRUSTED: &str = "all written by its last load";
const STARTED_OVER: &str = "starting over, reading it whole";

/// A day-grained job copying `src` (id, v, dt) into `fct`, whose source
/// sleeps three seconds while the table `pause` has a row (PostgreSQL).
async fn fixture(kind: Kind) -> (TestDb, Config, Warehouse) {
    let db = TestDb::new(kind).await.expect("test database");
    let pause = match kind {
        Kind::Postgres => {
            " cross join (select pg_sleep(case when exists (select 1 from pause) then 3 else 0 end) as z) p"
        }
        _ => "",
    };
    let job = common::replace_job(
        "fct",
        "fct",
        "2026-01-01",
        &format!("select id, v, dt from src{pause} where dt >= :start and dt < :end"),
    );
    let (_, config) = db.config(&job);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, v VARCHAR(10), dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, v VARCHAR(10), dt DATE NOT NULL)",
        "CREATE TABLE pause (x INTEGER)",
        "INSERT INTO src VALUES (1, 'a', '2026-01-01'), (2, 'b', '2026-01-01'), (3, NULL, '2026-01-01')",
    ])
    .await
    .expect("fixture");
    (db, config, wh)
}

/// What one load of the job's day did: whether its content changed, and
/// its log.
async fn load(wh: &Warehouse, config: &Config) -> (bool, String) {
    let backfill = Backfill::plan(wh, &config.jobs[0], &Selection::default(), 1, 0)
        .await
        .expect("plan");
    let (summary, events) = common::run(wh, &backfill).await;
    assert_eq!(
        (summary.succeeded, summary.failed),
        (1, 0),
        "{:?}",
        common::errors(&events)
    );
    let mut changed = None;
    let mut log = Vec::new();
    for e in &events {
        match e {
            Event::PartitionSucceeded {
                content_changed, ..
            } => changed = Some(*content_changed),
            Event::PartitionLog { line, .. } => log.push(line.clone()),
            _ => {}
        }
    }
    (changed.expect("a success"), log.join("\n"))
}

/// The path a re-run took, as its log tells it, where the engine has one.
fn assert_path(kind: Kind, log: &str, trusted: bool, started_over: bool) {
    if kind != Kind::Postgres {
        assert!(
            !log.contains(TRUSTED) && !log.contains(STARTED_OVER),
            "{log}"
        );
        return;
    }
    assert_eq!(log.contains(TRUSTED), trusted, "trusted path?\n{log}");
    assert_eq!(
        log.contains(STARTED_OVER),
        started_over,
        "started over?\n{log}"
    );
}

async fn content_changed_stays_exact_whoever_wrote_the_window(kind: Kind) {
    let (_db, config, wh) = fixture(kind).await;
    let (changed, log) = load(&wh, &config).await;
    assert!(changed, "a first load changes the window\n{log}");
    assert_path(kind, &log, false, false);

    let (changed, log) = load(&wh, &config).await;
    assert!(!changed, "{log}");
    assert_path(kind, &log, true, false);

    // Each: what a person does to the window, and whether the re-run then
    // changes its content (it puts the source's rows back).
    let edits: [(&[&str], bool); 6] = [
        // The same values, written by another transaction.
        (&["UPDATE fct SET v = v WHERE id = 1"], false),
        (&["UPDATE fct SET v = 'z' WHERE id = 1"], true),
        (&["UPDATE fct SET v = 'b' WHERE id = 3"], true),
        (&["DELETE FROM fct WHERE id = 2"], true),
        (&["INSERT INTO fct VALUES (9, 'x', '2026-01-01')"], true),
        // Deleted and put back as it was.
        (
            &[
                "DELETE FROM fct WHERE id = 2",
                "INSERT INTO fct VALUES (2, 'b', '2026-01-01')",
            ],
            false,
        ),
    ];
    for (script, expect_changed) in edits {
        wh.execute_script(script).await.expect("edit");
        let (changed, log) = load(&wh, &config).await;
        assert_eq!(changed, expect_changed, "after {script:?}\n{log}");
        assert_path(kind, &log, false, true);
        // Loaded by idem again: the next re-run trusts it.
        let (changed, log) = load(&wh, &config).await;
        assert!(!changed, "{log}");
        assert_path(kind, &log, true, false);
    }

    // Emptied by hand (or its table made again): the DELETE finds no row,
    // so the window was empty, and nothing is read again.
    wh.execute_script(&["DELETE FROM fct"]).await.expect("edit");
    let (changed, log) = load(&wh, &config).await;
    assert!(changed, "{log}");
    assert_path(kind, &log, false, false);
    let (changed, log) = load(&wh, &config).await;
    assert!(!changed, "{log}");
    assert_path(kind, &log, true, false);

    // A row written by hand outside the window does not concern it.
    wh.execute_script(&["INSERT INTO fct VALUES (7, 'q', '2026-01-02')"])
        .await
        .expect("edit");
    let (changed, log) = load(&wh, &config).await;
    assert!(!changed, "{log}");
    assert_path(kind, &log, true, false);
}

on_every_engine!(content_changed_stays_exact_whoever_wrote_the_window);

/// A re-run that reads the window whole, without starting over (nothing
/// changed it), and the re-run after it, which trusts that one.
async fn read_whole_then_trusted(wh: &Warehouse, config: &Config) {
    let (changed, log) = load(wh, config).await;
    assert!(!changed, "{log}");
    assert_path(Kind::Postgres, &log, false, false);
    let (_, log) = load(wh, config).await;
    assert_path(Kind::Postgres, &log, true, false);
}

/// The fixture's one partition.
fn the_day(job: &idem::config::Job) -> idem::partition::Partition {
    idem::partition::Partition::parse(job.grain, "2026-01-01", idem::partition::RangeEnd::From)
        .expect("day")
}

async fn pg(db: &TestDb) -> sqlx::PgConnection {
    sqlx::PgConnection::connect(&db.url).await.expect("connect")
}

/// Transaction ids in rows are 32 bits: a last load 2^32 ids back could
/// share its rows' id with a later writer, so one 2^30 ids old or more is
/// not trusted.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_last_load_too_old_to_tell_apart_is_not_trusted() {
    let (_db, config, wh) = fixture(Kind::Postgres).await;
    load(&wh, &config).await;
    // The same low 32 bits the rows carry, one wraparound earlier.
    wh.execute_script(&["UPDATE idem.attempts SET txid = txid - 4294967296"])
        .await
        .expect("age the ledger");
    read_whole_then_trusted(&wh, &config).await;
}

/// A ledger made before idem recorded transactions gets the column at the
/// next start; its rows without one are not trusted.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_older_ledger_gains_the_transaction_column() {
    let (db, config, wh) = fixture(Kind::Postgres).await;
    load(&wh, &config).await;
    wh.close().await;
    let mut conn = pg(&db).await;
    sqlx::query("ALTER TABLE idem.attempts DROP COLUMN txid")
        .execute(&mut conn)
        .await
        .expect("an older ledger");
    let wh = db.warehouse(&config).await;
    let n: i64 = sqlx::query(
        "SELECT count(*) FROM information_schema.columns \
         WHERE table_schema = 'idem' AND table_name = 'attempts' AND column_name = 'txid'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("columns")
    .get(0);
    assert_eq!(n, 1, "the column is back");
    read_whole_then_trusted(&wh, &config).await;
}

/// Killed after the trusted DELETE, before COMMIT: the window is as the
/// last load left it, and the next re-run trusts that load again.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_load_killed_after_the_trusted_delete_leaves_the_window_trusted() {
    let (db, config, wh) = fixture(Kind::Postgres).await;
    let job = &config.jobs[0];
    let day = the_day(job);
    load(&wh, &config).await;
    let loaded = wh.partition_fingerprint(job, &day).await.expect("window");
    wh.execute_script(&["INSERT INTO pause VALUES (1)"])
        .await
        .expect("pause");
    let mut conn = pg(&db).await;
    let config_path = db.path().join("idem.toml");
    let child = common::spawn_idem(
        &config_path,
        &["run", "fct", "--from", "2026-01-01", "--to", "2026-01-01"],
    );
    // The INSERT sleeping in its source: the DELETE before it is done.
    let sleeping = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                    AND state = 'active' AND query LIKE 'INSERT INTO%pg_sleep%'";
    common::kill_idem_mid_load(
        &mut conn,
        child,
        sleeping,
        "the slow load never reached its INSERT",
    )
    .await;
    assert_eq!(
        wh.partition_fingerprint(job, &day).await.expect("window"),
        loaded,
        "the killed load left the window changed"
    );
    wh.execute_script(&["DELETE FROM pause"])
        .await
        .expect("unpause");
    let (changed, log) = load(&wh, &config).await;
    assert!(!changed, "{log}");
    assert_path(Kind::Postgres, &log, true, false);
    assert_eq!(
        wh.partition_fingerprint(job, &day).await.expect("window"),
        loaded
    );
}

/// The last loads a run reads at its start may be overtaken before a
/// partition's lock is taken (another run loads it meanwhile): the window's
/// rows then name another writer, and the load reads the window whole.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_last_load_overtaken_before_the_lock_is_not_trusted() {
    let (_db, config, wh) = fixture(Kind::Postgres).await;
    let job = &config.jobs[0];
    load(&wh, &config).await;
    let read_at_start = wh
        .last_loads(&"fct".into(), ("2026-01-01", "2026-01-01"))
        .await
        .expect("last loads");
    let first = read_at_start.get("2026-01-01").cloned().expect("trusted");
    // Another run loads the day, with other content, after that read.
    wh.execute_script(&["UPDATE src SET v = 'w' WHERE id = 1"])
        .await
        .expect("source");
    let (changed, log) = load(&wh, &config).await;
    assert!(changed, "{log}");
    assert_path(Kind::Postgres, &log, true, false);
    wh.execute_script(&["UPDATE src SET v = 'a' WHERE id = 1"])
        .await
        .expect("source");
    let day = the_day(job);
    let meta = idem::warehouse::AttemptMeta {
        run_id: "overtaken".into(),
        attempt: 9,
        started_at: idem::warehouse::ledger::timestamp(chrono::Utc::now()),
        operator: "test".into(),
        host: "test".into(),
        reason: None,
        allow_shrink: false,
        last_load: Some(first.clone()),
        merges_before_run: idem::warehouse::MergesBefore::NotAMerge,
    };
    let lines = std::sync::Mutex::new(Vec::new());
    let outcome = wh
        .load_partition(
            job,
            &day,
            &meta,
            &|line| lines.lock().unwrap().push(line),
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("load")
        .outcome;
    let log = lines.into_inner().unwrap().join("\n");
    // The window held the second run's rows ('w'); the source has 'a'
    // again, which is what the overtaken last load had written.
    assert!(outcome.content_changed, "{log}");
    assert_eq!(outcome.fingerprint, first.fingerprint, "{log}");
    assert_path(Kind::Postgres, &log, false, true);
}

/// A view's rows name no writer: a replace into an updatable view reads
/// its window whole at every re-run, as before, and never fails on it.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_view_target_is_read_whole() {
    let db = TestDb::new(Kind::Postgres).await.expect("test database");
    let job = common::replace_job(
        "fct",
        "fct_view",
        "2026-01-01",
        "select id, v, dt from src where dt >= :start and dt < :end",
    );
    let (_, config) = db.config(&job);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, v VARCHAR(10), dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, v VARCHAR(10), dt DATE NOT NULL)",
        "CREATE VIEW fct_view AS SELECT id, v, dt FROM fct",
        "INSERT INTO src VALUES (1, 'a', '2026-01-01'), (2, 'b', '2026-01-01')",
    ])
    .await
    .expect("fixture");
    let (changed, _) = load(&wh, &config).await;
    assert!(changed);
    for _ in 0..2 {
        let (changed, log) = load(&wh, &config).await;
        assert!(!changed, "{log}");
        assert_path(Kind::Postgres, &log, false, false);
    }
}
