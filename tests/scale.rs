//! Reading states at scale: counts grouped by the partition column itself
//! (named after grouping) on every engine and grain, a status read narrowed
//! to a range, and refreshes that read no rows of an unchanged target but
//! see every change made behind idem's back.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{Kind, TestDb};
use idem::config::{Config, Job};
use idem::engine::{self, Backfill, Selection};
use idem::partition::{Partition, RangeEnd};
use idem::state::{self, StatesRead, StatusScope};
use idem::tui::{Msg, Seen};
use idem::warehouse::{CountSource, RefreshCache, Warehouse};
use sqlx::{Connection, Row};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn job_toml(name: &str, column: &str, grain: &str, start: &str, end: &str) -> String {
    format!(
        "[[jobs]]\nname = \"{name}\"\ntarget = \"ev\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"{column}\"\ngrain = \"{grain}\"\nstart = \"{start}\"\nend = \"{end}\"\n\
         sql = \"select id, ts, d from src where {column} >= :start and {column} < :end\"\n\n"
    )
}

async fn events_table(kind: Kind) -> Option<(TestDb, Config, Warehouse)> {
    let db = TestDb::new(kind).await?;
    let jobs = [
        job_toml("by_hour", "ts", "hour", "2026-01-01T00", "2026-02-15T12"),
        job_toml("by_month", "ts", "month", "2026-01", "2026-02"),
        job_toml("by_day_of_date", "d", "day", "2026-01-01", "2026-02-15"),
        job_toml("by_month_of_date", "d", "month", "2026-01", "2026-02"),
    ]
    .concat();
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    let timestamp = if kind == Kind::MySql {
        "DATETIME"
    } else {
        "TIMESTAMP"
    };
    let rows = [
        "(1, '2026-01-01 00:30:00', '2026-01-01')",
        "(2, '2026-01-01 00:59:59', '2026-01-01')",
        "(3, '2026-01-01 01:00:00', '2026-01-01')",
        "(4, '2026-01-31 23:59:59', '2026-01-31')",
        "(5, '2026-02-01 00:00:00', '2026-02-01')",
        "(6, '2026-02-15 12:00:00', '2026-02-15')",
        // Outside every job's range.
        "(7, '2025-12-31 23:59:59', '2025-12-31')",
    ];
    for table in ["src", "ev"] {
        wh.execute_script(&[
            &format!("CREATE TABLE {table} (id INTEGER NOT NULL, ts {timestamp} NOT NULL, d DATE NOT NULL)"),
            &format!("INSERT INTO {table} (id, ts, d) VALUES {}", rows.join(", ")),
        ])
        .await
        .expect("fixture");
    }
    Some((db, config, wh))
}

fn job<'a>(config: &'a Config, name: &str) -> &'a Job {
    config.jobs.iter().find(|j| j.name == name).expect("job")
}

fn range(job: &Job) -> (Partition, Partition) {
    (job.start, job.end.expect("end"))
}

fn sorted(counts: &idem::warehouse::Counts) -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = counts.iter().map(|(k, v)| (k.clone(), *v)).collect();
    v.sort();
    v
}

fn expect(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Loads one partition of `job` by the engine, and checks that it did not fail.
async fn load_day(wh: &Warehouse, job: &Job, day: Partition) {
    let selection = Selection {
        from: Some(day),
        to: Some(day),
        ..Selection::default()
    };
    let backfill = Backfill::plan(wh, job, &selection, 1, 0)
        .await
        .expect("plan");
    let (tx, _rx) = mpsc::unbounded_channel();
    let summary = engine::run(wh, &backfill, &tx, &CancellationToken::new()).await;
    assert_eq!(summary.failed, 0);
}

async fn counts_are_named_after_grouping_by_the_column(kind: Kind) {
    let Some((_db, config, wh)) = events_table(kind).await else {
        return;
    };
    assert_counts(&config, &wh).await;
    // Indexed, the count may read the index alone (MariaDB drops its range
    // filter when the whole table lies inside the range): the row of
    // 2025-12-31 still lies outside every job's range.
    wh.execute_script(&[
        "CREATE INDEX ev_ts ON ev (ts)",
        "CREATE INDEX ev_d ON ev (d)",
    ])
    .await
    .expect("indexes");
    assert_counts(&config, &wh).await;
    // Now every row lies inside every job's range.
    wh.execute_script(&["DELETE FROM ev WHERE id = 7"])
        .await
        .expect("delete");
    assert_counts(&config, &wh).await;
    // A range narrower than the table keeps its filter.
    let days = job(&config, "by_day_of_date");
    let day = |d: &str| Partition::parse(days.grain, d, RangeEnd::From).expect("day");
    let narrow = wh
        .partition_counts(days, day("2026-01-31"), day("2026-02-01"))
        .await
        .expect("counts");
    assert_eq!(
        sorted(&narrow.partitions),
        expect(&[("2026-01-31", 1), ("2026-02-01", 1)])
    );
}

/// The counts of the events table's jobs, whose range leaves out its row 7.
async fn assert_counts(config: &Config, wh: &Warehouse) {
    let count = |name: &'static str| {
        let job = job(config, name).clone();
        let wh = wh.clone();
        async move {
            let (first, last) = range(&job);
            sorted(
                &wh.partition_counts(&job, first, last)
                    .await
                    .expect("counts")
                    .partitions,
            )
        }
    };
    assert_eq!(
        count("by_hour").await,
        expect(&[
            ("2026-01-01T00", 2),
            ("2026-01-01T01", 1),
            ("2026-01-31T23", 1),
            ("2026-02-01T00", 1),
            ("2026-02-15T12", 1),
        ])
    );
    let months = expect(&[("2026-01", 4), ("2026-02", 2)]);
    assert_eq!(count("by_month").await, months);
    assert_eq!(count("by_month_of_date").await, months);
    assert_eq!(
        count("by_day_of_date").await,
        expect(&[
            ("2026-01-01", 3),
            ("2026-01-31", 1),
            ("2026-02-01", 1),
            ("2026-02-15", 1),
        ])
    );
}

async fn status_reads_only_the_range_asked_for(kind: Kind) {
    let Some((_db, config, wh)) = events_table(kind).await else {
        return;
    };
    let job = job(&config, "by_day_of_date");
    let day = |d: &str| Partition::parse(job.grain, d, RangeEnd::From).expect("day");
    let scope = StatusScope {
        from: Some(day("2026-01-31")),
        to: Some(day("2026-02-01")),
        cache: None,
        ledger_only: false,
    };
    let now = day("2026-03-01").start;
    let statuses = state::job_status_scoped(&wh, job, now, &HashSet::new(), &scope)
        .await
        .expect("status");
    let seen: Vec<(String, Option<i64>)> = statuses
        .iter()
        .map(|s| (s.partition.name(), s.rows_now))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("2026-01-31".to_string(), Some(1)),
            ("2026-02-01".to_string(), Some(1))
        ]
    );
}

/// Refreshes through one cache until the engine's change signal has settled
/// (MariaDB's update time has a one-second tick): the last one read nothing.
async fn refresh_until_unchanged(db: &TestDb, config: &Config, cache: &RefreshCache, job: &Job) {
    for _ in 0..40 {
        if refresh_alone(db, config, cache, job).await.1 == CountSource::Unchanged {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("the change signal of an untouched table never settled");
}

async fn refresh_sees_a_row_deleted_behind_idems_back(kind: Kind) {
    let Some((db, config, wh)) = events_table(kind).await else {
        return;
    };
    wh.close().await;
    settle(&db).await;
    let job = job(&config, "by_day_of_date");
    let cache = RefreshCache::default();
    refresh_until_unchanged(&db, &config, &cache, job).await;
    let (counts, source) = refresh_alone(&db, &config, &cache, job).await;
    assert_eq!(source, CountSource::Unchanged);
    assert_eq!(counts.partitions.get("2026-01-01"), Some(&3));

    // Another session deletes a row and ends (so that PostgreSQL has
    // published its counters: see `settle`).
    external(&db, "DELETE FROM ev WHERE id = 2").await;
    settle(&db).await;
    let (counts, source) = refresh_alone(&db, &config, &cache, job).await;
    assert_eq!(source, CountSource::Scanned);
    assert_eq!(counts.partitions.get("2026-01-01"), Some(&2));
}

/// The rows of a target whose partition column is NULL ride the refresh
/// cache with the partitions' counts: kept by a refresh that reads nothing
/// and by one that takes an idem load's counts from the ledger (a replace
/// never deletes or writes one), and counted again once another session
/// adds one (QA: no count said they were there at all).
async fn refresh_keeps_the_null_partition_rows_and_sees_new_ones(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config(&job_toml(
        "by_day_of_date",
        "d",
        "day",
        "2026-01-01",
        "2026-01-03",
    ));
    let job = job(&config, "by_day_of_date");
    let wh = db.warehouse(&config).await;
    let rows = "(1, '2026-01-01 10:00:00', '2026-01-01'), (2, '2026-01-02 10:00:00', '2026-01-02')";
    let timestamp = if kind == Kind::MySql {
        "DATETIME"
    } else {
        "TIMESTAMP"
    };
    for table in ["src", "ev"] {
        wh.execute_script(&[
            &format!(
                "CREATE TABLE {table} (id INTEGER NOT NULL, ts {timestamp} NOT NULL, d DATE NULL)"
            ),
            &format!("INSERT INTO {table} (id, ts, d) VALUES {rows}"),
        ])
        .await
        .expect("fixture");
    }
    wh.execute_script(&[
        "INSERT INTO ev (id, ts, d) VALUES (3, '2026-01-02 11:00:00', NULL), (4, '2026-01-02 12:00:00', NULL)",
    ])
    .await
    .expect("rows with no partition");
    wh.close().await;
    settle(&db).await;
    let cache = RefreshCache::default();
    refresh_until_unchanged(&db, &config, &cache, job).await;
    let (counts, source) = refresh_alone(&db, &config, &cache, job).await;
    assert_eq!(source, CountSource::Unchanged);
    assert_eq!(counts.null_partition, 2, "{counts:?}");
    assert_eq!(counts.partitions.get("2026-01-02"), Some(&1));

    let wh = db.warehouse(&config).await;
    let day = Partition::parse(job.grain, "2026-01-02", RangeEnd::From).expect("day");
    load_day(&wh, job, day).await;
    wh.close().await;
    settle(&db).await;
    let (counts, source) = refresh_alone(&db, &config, &cache, job).await;
    if kind == Kind::Postgres {
        // Its counters moved by the load's own rows: read from the ledger.
        assert_eq!(source, CountSource::Ledger);
    }
    assert_eq!(counts.null_partition, 2, "the load left them: {counts:?}");
    assert_eq!(counts.partitions.get("2026-01-02"), Some(&1));

    external(
        &db,
        "INSERT INTO ev (id, ts, d) VALUES (5, '2026-01-03 10:00:00', NULL)",
    )
    .await;
    settle(&db).await;
    let (counts, source) = refresh_alone(&db, &config, &cache, job).await;
    assert_eq!(source, CountSource::Scanned);
    assert_eq!(counts.null_partition, 3, "{counts:?}");
}

/// Runs a statement on a connection of its own, outside idem's pool.
async fn external(db: &TestDb, sql: &str) {
    use sqlx::Executor;
    let mut conn = sqlx::AnyConnection::connect(&db.url)
        .await
        .expect("connect");
    conn.execute(sqlx::AssertSqlSafe(sql.to_string()))
        .await
        .expect(sql);
    conn.close().await.expect("close");
}

/// On PostgreSQL, waits until no other session is connected to the test's
/// database: a session publishes its statistics as it exits, so every read
/// and write made so far shows in `pg_stat_user_tables`.
async fn settle(db: &TestDb) {
    if db.kind != Kind::Postgres {
        return;
    }
    let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    for _ in 0..100 {
        let others: i64 = sqlx::query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_one(&mut conn)
        .await
        .expect("activity")
        .get(0);
        if others == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("sessions on the test database never ended");
}

/// Rows PostgreSQL's statistics say were read from a table by scans and
/// index fetches.
async fn rows_read(db: &TestDb, table: &str) -> i64 {
    let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let n: i64 = sqlx::query(
        "SELECT CAST(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0) AS bigint) FROM pg_stat_user_tables WHERE relname = $1",
    )
    .bind(table)
    .fetch_one(&mut conn)
    .await
    .expect("stats")
    .get(0);
    conn.close().await.expect("close");
    n
}

/// A PostgreSQL table of 200,000 events over 278 days (720 a day), and its
/// rows; autovacuum off, so that only the test's statements read it.
const BIG_TABLE: &str = "(id INTEGER NOT NULL, ts TIMESTAMP NOT NULL, d DATE NOT NULL) WITH (autovacuum_enabled = false)";
const BIG_ROWS: &str = "SELECT i, TIMESTAMP '2026-01-01' + i * INTERVAL '2 minutes', DATE '2026-01-01' + i / 720 FROM generate_series(0, 199999) i";

/// A refresh through a fresh connection pool, closed afterwards so that its
/// session's statistics are published before the next look at them.
async fn refresh_alone(
    db: &TestDb,
    config: &Config,
    cache: &RefreshCache,
    job: &Job,
) -> (std::sync::Arc<idem::warehouse::TargetCounts>, CountSource) {
    let wh = db.warehouse(config).await;
    let (first, last) = range(job);
    let mark = wh.ledger_mark(&job.name).await.expect("mark");
    let out = wh
        .partition_counts_cached(cache, job, first, last, mark)
        .await
        .expect("refresh");
    wh.close().await;
    settle(db).await;
    out
}

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_refresh_of_an_unchanged_large_table_reads_none_of_its_rows() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (_, config) = db.config(&job_toml("big", "d", "day", "2026-01-01", "2026-12-31"));
    let job = job(&config, "big");
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        &format!("CREATE TABLE ev {BIG_TABLE}"),
        &format!("INSERT INTO ev {BIG_ROWS}"),
    ])
    .await
    .expect("fixture");
    wh.close().await;
    settle(&db).await;

    let cache = RefreshCache::default();
    let before = rows_read(&db, "ev").await;
    let (first_counts, source) = refresh_alone(&db, &config, &cache, job).await;
    assert_eq!(source, CountSource::Scanned);
    assert_eq!(first_counts.partitions.values().sum::<i64>(), 200_000);
    let after_scan = rows_read(&db, "ev").await;
    // The way this test watches reads does see a scan.
    assert!(after_scan - before >= 200_000, "{before} → {after_scan}");

    let (counts, source) = refresh_alone(&db, &config, &cache, job).await;
    assert_eq!(source, CountSource::Unchanged);
    assert_eq!(counts, first_counts);
    assert_eq!(
        rows_read(&db, "ev").await,
        after_scan,
        "the refresh read rows"
    );
}

/// The events table on PostgreSQL with a source row for 2026-01-31 that
/// the target has not got yet, every session ended, and a cache that has
/// counted the target of `by_day_of_date` once.
async fn a_source_row_not_loaded_yet() -> Option<(TestDb, Config, RefreshCache)> {
    let (db, config, wh) = events_table(Kind::Postgres).await?;
    wh.execute_script(&[
        "INSERT INTO src (id, ts, d) VALUES (8, '2026-01-31 10:00:00', '2026-01-31')",
    ])
    .await
    .expect("source row");
    wh.close().await;
    settle(&db).await;
    let cache = RefreshCache::default();
    let (counts, _) = refresh_alone(&db, &config, &cache, job(&config, "by_day_of_date")).await;
    assert_eq!(counts.partitions.get("2026-01-31"), Some(&1));
    Some((db, config, cache))
}

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_load_by_idem_updates_counts_from_the_ledger_without_a_scan() {
    let Some((db, config, cache)) = a_source_row_not_loaded_yet().await else {
        return;
    };
    let job = job(&config, "by_day_of_date");

    let wh = db.warehouse(&config).await;
    let day = Partition::parse(job.grain, "2026-01-31", RangeEnd::From).expect("day");
    load_day(&wh, job, day).await;
    wh.close().await;
    settle(&db).await;

    let before = rows_read(&db, "ev").await;
    let (counts, source) = refresh_alone(&db, &config, &cache, job).await;
    assert_eq!(source, CountSource::Ledger);
    assert_eq!(counts.partitions.get("2026-01-31"), Some(&2));
    assert_eq!(rows_read(&db, "ev").await, before, "the refresh read rows");
    let wh = db.warehouse(&config).await;
    let (first, last) = range(job);
    assert_eq!(
        sorted(&counts.partitions),
        sorted(
            &wh.partition_counts(job, first, last)
                .await
                .expect("counts")
                .partitions
        )
    );
}

/// A load by idem shows in the very next refresh, though PostgreSQL
/// publishes the loading session's counters up to seconds after its commit
/// (the console showed the old count for some 20 s after a run): from the
/// ledger, without a scan. The counters are checked once they move, so a
/// row deleted behind idem's back after that is still seen.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_load_shows_in_the_next_refresh_before_its_counters_are_published() {
    let Some((db, config, cache)) = a_source_row_not_loaded_yet().await else {
        return;
    };
    let job = job(&config, "by_day_of_date");

    // The loading session stays open, its counters unpublished for now.
    let wh = db.warehouse(&config).await;
    let day = Partition::parse(job.grain, "2026-01-31", RangeEnd::From).expect("day");
    load_day(&wh, job, day).await;
    let reader = db.warehouse(&config).await;
    let (first, last) = range(job);
    let mark = reader.ledger_mark(&job.name).await.expect("mark");
    let (counts, source) = reader
        .partition_counts_cached(&cache, job, first, last, mark)
        .await
        .expect("refresh");
    assert_eq!(
        counts.partitions.get("2026-01-31"),
        Some(&2),
        "the load shows at once"
    );
    assert_eq!(source, CountSource::Ledger);
    reader.close().await;
    wh.close().await;
    settle(&db).await;
    // Checked against the counters now published: nothing to scan.
    let (counts, source) = refresh_alone(&db, &config, &cache, job).await;
    assert_eq!(counts.partitions.get("2026-01-31"), Some(&2));
    assert_ne!(source, CountSource::Scanned);

    let wh = db.warehouse(&config).await;
    wh.execute_script(&["DELETE FROM ev WHERE id = 8"])
        .await
        .expect("delete behind idem's back");
    wh.close().await;
    settle(&db).await;
    let (counts, source) = refresh_alone(&db, &config, &cache, job).await;
    assert_eq!(source, CountSource::Scanned);
    assert_eq!(
        counts.partitions.get("2026-01-31"),
        Some(&1),
        "the delete is seen"
    );
}

/// The real binary, which must exit 0.
fn idem_run(config: &std::path::Path, args: &[&str]) {
    common::stdout_ok(&common::idem(config, args));
}

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_run_planned_without_states_reads_only_its_windows() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (path, config) = db.config(&job_toml("big", "d", "day", "2026-01-01", "2026-12-31"));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        &format!("CREATE TABLE src {BIG_TABLE}"),
        &format!("CREATE TABLE ev {BIG_TABLE}"),
        "CREATE INDEX ev_d ON ev (d)",
        &format!("INSERT INTO src {BIG_ROWS}"),
        &format!("INSERT INTO ev {BIG_ROWS}"),
        "ANALYZE ev",
    ])
    .await
    .expect("fixture");
    wh.close().await;
    settle(&db).await;

    // One day of 720 rows in a 200,000-row target: the run reads the
    // window (its fingerprint before the DELETE and after the INSERT), and
    // none of the other days.
    let before = rows_read(&db, "ev").await;
    idem_run(
        &path,
        &["run", "big", "--from", "2026-03-01", "--to", "2026-03-01"],
    );
    settle(&db).await;
    let after_run = rows_read(&db, "ev").await;
    assert!(
        after_run - before < 10 * 720,
        "the run read {} rows of its target",
        after_run - before
    );

    // A run choosing by state counts the rows of its range (and of the
    // neighbours its anomaly flags compare with), still not the whole table.
    idem_run(
        &path,
        &[
            "run",
            "big",
            "--from",
            "2026-03-01",
            "--to",
            "2026-03-01",
            "--only",
            "loaded",
        ],
    );
    settle(&db).await;
    let after_only = rows_read(&db, "ev").await;
    assert!(
        after_only - after_run < 200_000,
        "{after_run} → {after_only}"
    );

    // The way this test watches reads does see a whole scan.
    idem_run(&path, &["status", "big"]);
    settle(&db).await;
    let after_status = rows_read(&db, "ev").await;
    assert!(
        after_status - after_only >= 200_000,
        "{after_only} → {after_status}"
    );
}

/// The fingerprint of a whole table.
async fn table_fingerprint(wh: &Warehouse, name: &str) -> idem::warehouse::Fingerprint {
    let table = idem::config::TableName::parse(name).expect("table");
    wh.table_fingerprint(&table).await.expect("fingerprint")
}

/// For each pair of row values, two tables of `columns` holding one row
/// each: their fingerprints must differ.
async fn assert_hashed_apart(wh: &Warehouse, name: &str, columns: &str, pairs: &[(&str, &str)]) {
    for (i, (a, b)) in pairs.iter().enumerate() {
        wh.execute_script(&[
            &format!("CREATE TABLE {name}_a{i} {columns}"),
            &format!("CREATE TABLE {name}_b{i} {columns}"),
            &format!("INSERT INTO {name}_a{i} VALUES ({a})"),
            &format!("INSERT INTO {name}_b{i} VALUES ({b})"),
        ])
        .await
        .expect("rows");
        assert_ne!(
            table_fingerprint(wh, &format!("{name}_a{i}")).await,
            table_fingerprint(wh, &format!("{name}_b{i}")).await,
            "({a}) and ({b}) hashed alike"
        );
    }
}

async fn fingerprints_ignore_order_but_count_duplicates(kind: Kind) {
    let Some((_db, config, wh)) = events_table(kind).await else {
        return;
    };
    wh.execute_script(&[
        "CREATE TABLE rev AS SELECT * FROM ev WHERE 1 = 0",
        "INSERT INTO rev SELECT * FROM ev ORDER BY id DESC",
        "CREATE TABLE dup AS SELECT * FROM ev WHERE 1 = 0",
        "INSERT INTO dup SELECT * FROM ev",
        "INSERT INTO dup SELECT * FROM ev WHERE id = 3",
    ])
    .await
    .expect("copies");
    let fingerprint = |name: &'static str| table_fingerprint(&wh, name);
    let (ev, rev, dup) = (
        fingerprint("ev").await,
        fingerprint("rev").await,
        fingerprint("dup").await,
    );
    assert_eq!(ev, rev, "row order changed the fingerprint");
    assert_eq!(dup.rows, ev.rows + 1);
    assert_ne!(dup.sum, ev.sum, "a duplicated row left the sum as it was");

    // Rows whose values read alike once joined as text: a separator inside
    // a value, NULL against the word 'NULL', an empty string against NULL,
    // a quote inside a value.
    let alike = [
        ("'x,', 'y'", "'x', ',y'"),
        ("NULL, 'y'", "'NULL', 'y'"),
        ("'', 'y'", "NULL, 'y'"),
        ("'x'',''', 'y'", "'x', ''',''y'"),
    ];
    assert_hashed_apart(&wh, "alike", "(p VARCHAR(10), q VARCHAR(10))", &alike).await;

    if kind == Kind::Sqlite {
        // A SQLite value keeps its own type in a column without one: a BLOB
        // against its hex as text, a number against its digits as text.
        let kinds = [
            ("X'00FF', 'y'", "'00FF', 'y'"),
            ("X'', 'y'", "'', 'y'"),
            ("1, 'y'", "'1', 'y'"),
            ("1.5, 'y'", "'1.5', 'y'"),
            // Two doubles alike in their first 15 digits.
            ("0.1 + 0.2, 'y'", "0.3, 'y'"),
        ];
        assert_hashed_apart(&wh, "typed", "(p, q)", &kinds).await;
    }

    if kind == Kind::Postgres {
        // Each type through its own hash function: two values swapped
        // between columns, a NULL against each kind of value (and against
        // the infinite dates and a zero), and the type without a callable
        // function (bytea).
        let types = "(a INTEGER, b INTEGER, d DATE, z TIMESTAMPTZ, f BOOLEAN, x BYTEA, n NUMERIC)";
        let kinds = [
            (
                "1, 2, NULL, NULL, NULL, NULL, NULL",
                "2, 1, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "NULL, NULL, NULL, NULL, NULL, NULL, NULL",
                "0, NULL, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "1, 2, 'infinity', NULL, NULL, NULL, NULL",
                "1, 2, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "1, 2, '-infinity', NULL, NULL, NULL, NULL",
                "1, 2, 'infinity', NULL, NULL, NULL, NULL",
            ),
            (
                "1, 2, '2026-01-01', NULL, NULL, NULL, NULL",
                "1, 2, '2026-01-02', NULL, NULL, NULL, NULL",
            ),
            (
                "1, 2, NULL, '2026-01-01 00:00+00', NULL, NULL, NULL",
                "1, 2, NULL, '2026-01-01 00:00+01', NULL, NULL, NULL",
            ),
            (
                "1, 2, NULL, NULL, false, NULL, NULL",
                "1, 2, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "1, 2, NULL, NULL, NULL, '\\x00', NULL",
                "1, 2, NULL, NULL, NULL, '\\x', NULL",
            ),
            (
                "1, 2, NULL, NULL, NULL, NULL, 1.5",
                "1, 2, NULL, NULL, NULL, NULL, 1.6",
            ),
        ];
        assert_hashed_apart(&wh, "typed", types, &kinds).await;
        // Values some types' own hash functions hash alike (to the bare
        // seed, or one below it), NULL against them, and values equal but
        // not the same: each hashes apart.
        let special =
            "(a NUMERIC, b NUMERIC, c NUMERIC, e DOUBLE PRECISION, r REAL, i INTERVAL, j JSONB)";
        let kinds = [
            (
                "0, 0, 0, NULL, NULL, NULL, NULL",
                "NULL, 0, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "'NaN', NULL, NULL, NULL, NULL, NULL, NULL",
                "'Infinity', NULL, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "'Infinity', NULL, NULL, NULL, NULL, NULL, NULL",
                "'-Infinity', NULL, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "1.5, NULL, NULL, NULL, NULL, NULL, NULL",
                "1.50, NULL, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "NULL, NULL, NULL, 0, NULL, NULL, NULL",
                "NULL, NULL, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "NULL, NULL, NULL, '-0', NULL, NULL, NULL",
                "NULL, NULL, NULL, 0, NULL, NULL, NULL",
            ),
            (
                "NULL, NULL, NULL, NULL, 0, NULL, NULL",
                "NULL, NULL, NULL, NULL, NULL, NULL, NULL",
            ),
            (
                "NULL, NULL, NULL, NULL, NULL, '1 day', NULL",
                "NULL, NULL, NULL, NULL, NULL, '24 hours', NULL",
            ),
            (
                "NULL, NULL, NULL, NULL, NULL, NULL, '{}'",
                "NULL, NULL, NULL, NULL, NULL, NULL, '[]'",
            ),
            (
                "NULL, NULL, NULL, NULL, NULL, NULL, '{}'",
                "NULL, NULL, NULL, NULL, NULL, NULL, NULL",
            ),
        ];
        assert_hashed_apart(&wh, "special", special, &kinds).await;
        // The same values hash alike however they are written.
        wh.execute_script(&[
            &format!("CREATE TABLE same_a {types}"),
            &format!("CREATE TABLE same_b {types}"),
            "INSERT INTO same_a VALUES (1, 2, '2026-01-01', '2026-01-01 01:00+01', true, '\\x00ff', 1.50)",
            "INSERT INTO same_b VALUES (1, 2, '2026-01-01', '2026-01-01 00:00+00', true, '\\x00FF', 1.50)",
        ])
        .await
        .expect("equal rows");
        assert_eq!(fingerprint("same_a").await, fingerprint("same_b").await);
    }

    // A load's fingerprint, computed from the rows its DELETE and INSERT
    // return, is the window's as a SELECT reads it; the ledger says which
    // version it is.
    let job = job(&config, "by_day_of_date");
    let day = Partition::parse(job.grain, "2026-01-01", RangeEnd::From).expect("day");
    let load = |wh: Warehouse| async move {
        load_day(&wh, job, day).await;
        let attempts = wh
            .attempts(&job.name, Some("2026-01-01"))
            .await
            .expect("ledger");
        attempts.last().cloned().expect("an attempt")
    };
    let first = load(wh.clone()).await;
    let window = wh.partition_fingerprint(job, &day).await.expect("window");
    assert_eq!(first.fingerprint, Some(window.to_string()));
    assert!(window.to_string().starts_with("v6:3:"), "{window}");
    // The same rows again: unchanged, though they were deleted and inserted.
    let again = load(wh.clone()).await;
    assert_eq!(again.content_changed, Some(false));
    assert_eq!(again.fingerprint, first.fingerprint);
    // One value of one row differs: changed.
    wh.execute_script(&["UPDATE src SET ts = '2026-01-01 00:31:00' WHERE id = 1"])
        .await
        .expect("source change");
    let changed = load(wh.clone()).await;
    assert_eq!(changed.content_changed, Some(true));
    assert_ne!(changed.fingerprint, first.fingerprint);
}

/// The console's refresh (`read_states`, as every 15 s and `R` run it)
/// through a fresh pool that is closed afterwards, so that PostgreSQL has
/// published the session's reads: the messages it sent.
async fn console_refresh(
    db: &TestDb,
    config: &Config,
    seen: &Seen,
    job: &Job,
    first: Option<(String, Partition, Partition)>,
) -> Vec<Msg> {
    let wh = db.warehouse(config).await;
    let sent = std::sync::Mutex::new(Vec::new());
    let lineage = idem::lineage::Lineage::of(config).expect("lineage");
    idem::tui::read_states(
        &wh,
        config,
        &lineage,
        std::slice::from_ref(job),
        first,
        seen,
        |m| sent.lock().expect("sent").push(m),
    )
    .await;
    wh.close().await;
    settle(db).await;
    sent.into_inner().expect("sent")
}

/// An attempt of `job` at `partition` as another process would record it:
/// one row inserted, content changed.
fn recorded(
    job: &str,
    partition: &str,
    status: idem::warehouse::ledger::AttemptStatus,
) -> idem::warehouse::ledger::Attempt {
    idem::warehouse::ledger::Attempt {
        run_id: "r".into(),
        job: job.into(),
        partition: partition.into(),
        attempt: 1,
        status,
        started_at: "2026-03-01T00:00:00.000Z".into(),
        locked_at: None,
        finished_at: "2026-03-01T00:00:01.000Z".into(),
        rows_deleted: 0,
        rows_inserted: 1,
        rows_updated: 0,
        rows_after: 1,
        definition_hash: "d".into(),
        fingerprint: None,
        content_changed: Some(true),
        error: None,
        operator: "ops".into(),
        host: "h".into(),
        reason: None,
    }
}

/// What a console refresh's last message shows of `day`.
fn shown<'a>(sent: &'a [Msg], day: &str) -> Option<&'a state::PartitionStatus> {
    let Some(Msg::Status { result, .. }) = sent.last() else {
        panic!("no states sent");
    };
    let Ok(StatesRead::States(statuses)) = result else {
        panic!("no states sent: {result:?}");
    };
    statuses.statuses.iter().find(|s| s.partition.name() == day)
}

/// The rows a console refresh shows for `day`.
fn rows_shown(sent: &[Msg], day: &str) -> Option<i64> {
    shown(sent, day).and_then(|s| s.rows_now)
}

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_console_refresh_of_an_unchanged_table_reads_none_of_its_rows() {
    let Some((db, config, wh)) = events_table(Kind::Postgres).await else {
        return;
    };
    wh.close().await;
    settle(&db).await;
    let job = job(&config, "by_day_of_date");
    let seen = Seen::default();
    let day = |d: &str| Partition::parse(job.grain, d, RangeEnd::From).expect("day");
    let on_screen = Some((job.name.clone(), day("2026-02-01"), day("2026-02-15")));

    // The first refresh answers the partitions on screen first, then all.
    let sent = console_refresh(&db, &config, &seen, job, on_screen).await;
    let [Msg::EarlyStatus { statuses, .. }, Msg::Status { .. }] = sent.as_slice() else {
        panic!("expected early states then all: {sent:?}");
    };
    assert_eq!(statuses.len(), 15);
    assert!(statuses.iter().all(|s| s.partition >= day("2026-02-01")));
    assert_eq!(rows_shown(&sent, "2026-01-01"), Some(3));

    // The next reads none of the table's rows, and finds nothing to send.
    let before = rows_read(&db, "ev").await;
    let sent = console_refresh(&db, &config, &seen, job, None).await;
    assert!(
        matches!(
            sent.as_slice(),
            [Msg::Status {
                result: Ok(StatesRead::Unchanged),
                ..
            }]
        ),
        "{sent:?}"
    );
    assert_eq!(
        rows_read(&db, "ev").await,
        before,
        "the second refresh read rows"
    );
    // A console that no longer holds what it was sent (a run it shows
    // changed its states) is sent the states again, still without a scan.
    seen.derivations.forget(&job.name);
    let sent = console_refresh(&db, &config, &seen, job, None).await;
    assert_eq!(rows_shown(&sent, "2026-01-01"), Some(3));
    assert_eq!(rows_read(&db, "ev").await, before);

    external(&db, "DELETE FROM ev WHERE id = 2").await;
    settle(&db).await;
    let sent = console_refresh(&db, &config, &seen, job, None).await;
    assert_eq!(rows_shown(&sent, "2026-01-01"), Some(2));
    assert!(
        rows_read(&db, "ev").await > before,
        "the change was not read"
    );

    // An attempt another process records is shown at the next refresh,
    // though the refresh before kept the ledger it read.
    let state_shown = |sent: &[Msg], day: &str| shown(sent, day).map(|s| s.state);
    assert_eq!(
        state_shown(&sent, "2026-01-02"),
        Some(state::LoadState::Missing)
    );
    let elsewhere = db.warehouse(&config).await;
    elsewhere
        .record_attempt(&idem::warehouse::ledger::Attempt {
            definition_hash: job.definition_hash(),
            error: Some("boom".into()),
            ..recorded(
                &job.name,
                "2026-01-02",
                idem::warehouse::ledger::AttemptStatus::Failed,
            )
        })
        .await
        .expect("record");
    elsewhere.close().await;
    let sent = console_refresh(&db, &config, &seen, job, None).await;
    assert_eq!(
        state_shown(&sent, "2026-01-02"),
        Some(state::LoadState::Failed)
    );
}

/// Binary values in a window (a zero byte, bytes that are not UTF-8) and
/// floating-point ones: the load succeeds, its fingerprint stays the same
/// for the same values and changes with one byte, or with a double's last
/// digit (0.1 + 0.2 against 0.3). On SQLite the window's plain JSON read
/// cannot hold a BLOB and writes a REAL to 15 digits, so such a window is
/// read again with those values exact.
async fn a_window_of_binary_and_float_values_loads_and_fingerprints(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config(
        "[[jobs]]\nname = \"bin\"\ntarget = \"bin_t\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"d\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\n\
         sql = \"select id, d, b, r, s from bin_src where d >= :start and d < :end\"\n",
    );
    let wh = db.warehouse(&config).await;
    let (binary, before, after, double, tenth) = match kind {
        Kind::Sqlite => ("BLOB", "X'", "'", "REAL", "0.1"),
        Kind::Postgres => (
            "BYTEA",
            "decode('",
            "', 'hex')",
            "DOUBLE PRECISION",
            "CAST(0.1 AS DOUBLE PRECISION)",
        ),
        Kind::MySql => ("VARBINARY(16)", "X'", "'", "DOUBLE", "0.1e0"),
    };
    let bytes = |hex: &str| format!("{before}{hex}{after}");
    for table in ["bin_src", "bin_t"] {
        wh.execute_script(&[&format!(
            "CREATE TABLE {table} (id INTEGER NOT NULL, d DATE NOT NULL, b {binary}, r {double}, s VARCHAR(20))"
        )])
        .await
        .expect("table");
    }
    wh.execute_script(&[&format!(
        "INSERT INTO bin_src VALUES (1, '2026-01-01', {}, 1.5, 'a,''b'), (2, '2026-01-01', {}, {tenth} * 3, 'ünï'), (3, '2026-01-01', NULL, NULL, NULL)",
        bytes("00FF"),
        bytes("C328")
    )])
    .await
    .expect("rows");
    let job = job(&config, "bin");
    let day = Partition::parse(job.grain, "2026-01-01", RangeEnd::From).expect("day");
    let load = || async {
        load_day(&wh, job, day).await;
        let attempts = wh
            .attempts("bin", Some("2026-01-01"))
            .await
            .expect("ledger");
        attempts.last().cloned().expect("an attempt")
    };
    // A load's fingerprint, however the engine makes it (MariaDB: from the
    // hashes its statements return, as hexadecimal digits), is the
    // window's as a SELECT reads it.
    let read = || async {
        let window = wh.partition_fingerprint(job, &day).await.expect("window");
        Some(window.to_string())
    };
    let first = load().await;
    assert_eq!(first.rows_after, 3);
    assert_eq!(first.fingerprint, read().await);
    let again = load().await;
    assert_eq!(again.content_changed, Some(false));
    assert_eq!(again.fingerprint, first.fingerprint);
    wh.execute_script(&[&format!(
        "UPDATE bin_src SET b = {} WHERE id = 1",
        bytes("00FE")
    )])
    .await
    .expect("one byte changed");
    let changed = load().await;
    assert_eq!(changed.content_changed, Some(true));
    assert_ne!(changed.fingerprint, first.fingerprint);
    // 0.1 × 3 is 0.30000000000000004 as a double: 0.3 is another value.
    wh.execute_script(&["UPDATE bin_src SET r = 0.3 WHERE id = 2"])
        .await
        .expect("one double changed");
    let changed_again = load().await;
    assert_eq!(changed_again.content_changed, Some(true));
    assert_ne!(changed_again.fingerprint, changed.fingerprint);
    assert_eq!(changed_again.fingerprint, read().await);
}

/// A state read takes from the ledger each partition's latest attempt, its
/// latest success, its count and its latest content change, grouped by the
/// warehouse: the same as summing up the whole history in memory, whatever
/// the order, statuses and content flags of the attempts, and narrowed to a
/// range of partitions without touching the others. A downstream job's
/// read of it, each partition's latest content change alone, agrees.
async fn the_ledger_summary_is_the_history_summed_up(kind: Kind) {
    use idem::warehouse::ledger::{Attempt, AttemptStatus, PartitionLedger};
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    let statuses = [
        AttemptStatus::Succeeded,
        AttemptStatus::Failed,
        AttemptStatus::Cancelled,
        AttemptStatus::Refused,
    ];
    let mut history = Vec::new();
    // Partition i has i % 7 attempts; attempt n of it has a status, a
    // content flag (changed, unchanged, not said) and a finish that are
    // not in the order the attempts were recorded.
    for n in 0..6i64 {
        for i in 0..40i64 {
            if n >= i % 7 {
                continue;
            }
            let k = (i * 7 + n * 3) as usize;
            let day = format!("2026-02-{:02}", i % 28 + 1);
            history.push(Attempt {
                run_id: format!("run {n}"),
                job: "j".into(),
                partition: if i >= 28 { format!("{day}x") } else { day },
                attempt: n + 1,
                status: statuses[k % 4],
                started_at: format!("2026-03-01T00:00:{n:02}.000Z"),
                locked_at: k
                    .is_multiple_of(3)
                    .then(|| "2026-03-01T00:00:00.500Z".to_string()),
                finished_at: format!("2026-03-01T00:{:02}:00.000Z", (k * 13) % 60),
                rows_deleted: n,
                rows_inserted: i,
                rows_updated: 0,
                rows_after: i + n,
                definition_hash: format!("def{}", n % 2),
                fingerprint: k.is_multiple_of(2).then(|| format!("v5:{i}:{k:032x}")),
                content_changed: [Some(true), Some(false), None][k % 3],
                // An error's text as a driver or the job may write it,
                // with what JSON escapes (SQLite reads it as JSON).
                error: match statuses[k % 4] {
                    AttemptStatus::Failed => Some(format!("boom: \"{i}\" \\ \n\tline 2 é ✗ \u{1}")),
                    // The shrink guard's refusals stand until a success;
                    // a lock another run held is no such refusal.
                    AttemptStatus::Refused if k % 8 == 3 => Some(format!(
                        "source looks incomplete: would replace {i} rows with 0"
                    )),
                    AttemptStatus::Refused => Some("could not take the lock".into()),
                    _ => None,
                },
                operator: "ops".into(),
                host: "h".into(),
                reason: None,
            });
        }
    }
    // Another job's attempts are not this job's.
    let mut other = history[0].clone();
    other.job = "k".into();
    history.push(other);
    for a in &history {
        wh.record_attempt(a).await.unwrap();
    }
    // Read back as a terminal may show it: a tab becomes a space, line
    // breaks are kept, other control characters are written visibly.
    let as_read = history
        .iter()
        .filter(|a| a.job == "j")
        .cloned()
        .map(|mut a| {
            a.error = a
                .error
                .map(|e| e.replace('\t', " ").replace('\u{1}', "\\u{1}"));
            a
        });
    let whole = PartitionLedger::summarize(as_read);
    assert!(whole.values().any(|p| p.latest.is_none() && p.attempts > 0));
    assert!(
        whole
            .values()
            .any(|p| p.latest.is_some() && p.latest != p.success)
    );
    // The latest success is most often the latest attempt, sent once.
    assert!(
        whole
            .values()
            .any(|p| p.success.is_some() && p.latest == p.success)
    );
    assert!(
        whole
            .values()
            .any(|p| p.success.is_some() && p.changed_at.is_none())
    );
    // Refusals of the shrink guard that stand, and ones a success ended.
    assert!(whole.values().any(|p| p.refused.is_some()));
    assert!(
        whole
            .values()
            .any(|p| p.refused.is_none() && p.attempts > 1 && p.success.is_some())
    );
    assert_eq!(wh.ledger_summary(&"j".into(), None).await.unwrap(), whole);

    let narrowed = wh
        .ledger_summary(&"j".into(), Some(("2026-02-05", "2026-02-09")))
        .await
        .unwrap();
    let expected: std::collections::HashMap<_, _> = whole
        .iter()
        .filter(|(p, _)| p.as_str() >= "2026-02-05" && p.as_str() <= "2026-02-09")
        .map(|(p, l)| (p.clone(), l.clone()))
        .collect();
    assert!(expected.len() >= 4, "{expected:?}");
    assert_eq!(narrowed, expected);
    assert!(
        wh.ledger_summary(&"none".into(), None)
            .await
            .unwrap()
            .is_empty()
    );

    // What a downstream job reads of this one: the content changes alone.
    let changes = |summary: &std::collections::HashMap<String, PartitionLedger>| {
        summary
            .iter()
            .filter_map(|(p, l)| Some((p.clone(), l.changed_at.clone()?)))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert!(changes(&whole).len() >= 10, "{whole:?}");
    assert_eq!(
        wh.content_changes(&"j".into(), None).await.unwrap(),
        changes(&whole)
    );
    assert_eq!(
        wh.content_changes(&"j".into(), Some(("2026-02-05", "2026-02-09")))
            .await
            .unwrap(),
        changes(&expected)
    );
    assert!(
        wh.content_changes(&"none".into(), None)
            .await
            .unwrap()
            .is_empty()
    );
    wh.close().await;
}

/// A refresh reads a job's ledger again only when it moved: an attempt
/// recorded, a row pruned, or (PostgreSQL, MariaDB) a row whose id was
/// drawn before one already seen, committed after it.
async fn a_refresh_reads_the_ledger_again_only_when_it_moved(kind: Kind) {
    use idem::warehouse::ledger::AttemptStatus;
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    let attempt = |partition: &str, status| recorded("j", partition, status);
    for day in ["2026-02-01", "2026-02-02"] {
        wh.record_attempt(&attempt(day, AttemptStatus::Succeeded))
            .await
            .unwrap();
    }
    let cache = RefreshCache::default();
    let range = Some(("2026-02-01", "2026-02-28"));
    let read = |cache: RefreshCache| {
        let wh = &wh;
        async move {
            let mark = wh.ledger_mark("j").await.unwrap();
            let (summary, read) = wh
                .ledger_summary_cached(Some((&cache, mark)), &"j".into(), range)
                .await
                .unwrap();
            let (changes, read_changes) = wh
                .content_changes_cached(Some((&cache, mark)), &"j".into(), range)
                .await
                .unwrap();
            assert_eq!(read, read_changes);
            assert_eq!(
                *summary,
                wh.ledger_summary(&"j".into(), range).await.unwrap()
            );
            assert_eq!(
                *changes,
                wh.content_changes(&"j".into(), range).await.unwrap()
            );
            let mut days: Vec<String> = summary.keys().cloned().collect();
            days.sort();
            (days, read)
        }
    };
    let two = vec!["2026-02-01".to_string(), "2026-02-02".to_string()];
    assert_eq!(read(cache.clone()).await, (two.clone(), true));
    assert_eq!(read(cache.clone()).await, (two.clone(), false), "unchanged");

    // Another job's attempt is not this job's move.
    let mut other = attempt("2026-02-03", AttemptStatus::Failed);
    other.job = "k".into();
    wh.record_attempt(&other).await.unwrap();
    assert_eq!(read(cache.clone()).await, (two.clone(), false));

    wh.record_attempt(&attempt("2026-02-03", AttemptStatus::Failed))
        .await
        .unwrap();
    let three = vec![
        "2026-02-01".to_string(),
        "2026-02-02".to_string(),
        "2026-02-03".to_string(),
    ];
    assert_eq!(read(cache.clone()).await, (three.clone(), true), "recorded");
    assert_eq!(read(cache.clone()).await, (three.clone(), false));

    // Pruned behind idem's back.
    let ledger = wh.dialect().quote_table(&wh.dialect().ledger_table());
    wh.execute_script(&[&format!(
        "DELETE FROM {ledger} WHERE job = 'j' AND partition_key = '2026-02-02'"
    )])
    .await
    .unwrap();
    let pruned = vec!["2026-02-01".to_string(), "2026-02-03".to_string()];
    assert_eq!(read(cache.clone()).await, (pruned.clone(), true), "pruned");

    if kind != Kind::Sqlite {
        // Two writers: the first draws its id, the second draws a higher
        // one and commits first; a refresh sees the second. The first
        // commits after: the next refresh must see it too.
        let copy = |day: &str| {
            format!(
                "INSERT INTO {ledger} (run_id, job, partition_key, attempt, status, started_at, \
                 locked_at, finished_at, rows_deleted, rows_inserted, rows_updated, rows_after, \
                 definition_hash, fingerprint, content_changed, error, operator, host, reason) \
                 SELECT run_id, job, '{day}', attempt, status, started_at, locked_at, finished_at, \
                 rows_deleted, rows_inserted, rows_updated, rows_after, definition_hash, \
                 fingerprint, content_changed, error, operator, host, reason FROM {ledger} \
                 WHERE job = 'j' AND partition_key = '2026-02-01'"
            )
        };
        let mut early = sqlx::AnyConnection::connect(&db.url).await.unwrap();
        let mut late = sqlx::AnyConnection::connect(&db.url).await.unwrap();
        if kind == Kind::MySql {
            // As idem's sessions: no shared locks on the rows copied.
            for conn in [&mut early, &mut late] {
                sqlx::raw_sql("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
                    .execute(conn)
                    .await
                    .unwrap();
            }
        }
        sqlx::raw_sql("BEGIN").execute(&mut early).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(copy("2026-02-10")))
            .execute(&mut early)
            .await
            .unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(copy("2026-02-11")))
            .execute(&mut late)
            .await
            .unwrap();
        let mut seen = pruned.clone();
        seen.push("2026-02-11".into());
        assert_eq!(read(cache.clone()).await, (seen.clone(), true));
        sqlx::raw_sql("COMMIT").execute(&mut early).await.unwrap();
        let mut all = pruned.clone();
        all.extend(["2026-02-10".to_string(), "2026-02-11".to_string()]);
        assert_eq!(read(cache.clone()).await, (all, true), "committed late");
        early.close().await.unwrap();
        late.close().await.unwrap();
    }
    wh.close().await;
}

/// A ledger made before the summary's index keeps only the new one: the
/// old index on (job, partition_key), left beside it, would have MariaDB
/// read through it row by row. The next start drops it, once.
async fn an_old_ledgers_superseded_index_is_dropped_at_the_next_start(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let (old, index_names) = match kind {
        Kind::Postgres => (
            "CREATE INDEX attempts_by_job ON idem.attempts (job, partition_key)",
            "SELECT CAST(indexname AS text) FROM pg_indexes WHERE schemaname = 'idem' AND tablename = 'attempts'",
        ),
        Kind::MySql => (
            "CREATE INDEX idem_attempts_by_job ON idem_attempts (job, partition_key)",
            "SELECT DISTINCT CAST(index_name AS CHAR) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'idem_attempts'",
        ),
        Kind::Sqlite => (
            "CREATE INDEX idem_attempts_by_job ON idem_attempts (job, partition_key)",
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'idem_attempts' AND sql IS NOT NULL",
        ),
    };
    let indexes = |wh: Warehouse| async move {
        let mut names: Vec<String> = sqlx::query(index_names)
            .fetch_all(wh.pool())
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<String, _>(0))
            .filter(|n| n.ends_with("by_job") || n.ends_with("by_partition"))
            .collect();
        names.sort();
        wh.close().await;
        names
    };
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[old]).await.unwrap();
    let before = indexes(wh).await;
    assert_eq!(before.len(), 2, "{before:?}");
    // Two starts at once both find it: one drops it, the other's DROP
    // fails, and its next try finds nothing left to drop.
    let (a, b) = tokio::join!(db.warehouse(&config), db.warehouse(&config));
    b.close().await;
    let after = indexes(a).await;
    assert_eq!(after.len(), 1, "{after:?}");
    for _ in 0..2 {
        let after = indexes(db.warehouse(&config).await).await;
        assert_eq!(after.len(), 1, "{after:?}");
        assert!(after[0].ends_with("_by_partition"), "{after:?}");
    }
}

on_every_engine!(
    a_refresh_reads_the_ledger_again_only_when_it_moved,
    an_old_ledgers_superseded_index_is_dropped_at_the_next_start,
    the_ledger_summary_is_the_history_summed_up,
    fingerprints_ignore_order_but_count_duplicates,
    a_window_of_binary_and_float_values_loads_and_fingerprints,
    counts_are_named_after_grouping_by_the_column,
    status_reads_only_the_range_asked_for,
    refresh_sees_a_row_deleted_behind_idems_back,
    refresh_keeps_the_null_partition_rows_and_sees_new_ones,
);

/// A `timestamp with time zone` partition column on PostgreSQL: windows are
/// UTC instants, so a row written with another offset falls in the hour it
/// is in UTC, both when counted and when loaded (the window check passes and
/// the load keeps every row).
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_zoned_timestamps_count_and_load_in_their_utc_hour() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (path, config) = db.config(&job_toml(
        "by_hour",
        "ts",
        "hour",
        "2026-01-01T00",
        "2026-01-01T03",
    ));
    let wh = db.warehouse(&config).await;
    // Every pooled connection (4) moves to another time zone than the UTC
    // idem sets: windows and buckets must not depend on the session's.
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut conn = wh.pool().acquire().await.expect("connection");
        sqlx::query("SET TIME ZONE 'Europe/Berlin'")
            .execute(&mut *conn)
            .await
            .expect("set time zone");
        held.push(conn);
    }
    drop(held);
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL, d DATE NOT NULL)",
        "CREATE TABLE ev (id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL, d DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01 00:30:00+00', '2026-01-01'), \
         (2, '2026-01-01 02:59:59+02', '2026-01-01'), (3, '2026-01-01 01:00:00+00', '2026-01-01'), \
         (4, '2026-01-01 03:00:00+00', '2026-01-01'), (5, '2025-12-31 23:59:59+00', '2025-12-31')",
        "INSERT INTO ev SELECT * FROM src",
    ])
    .await
    .expect("fixture");
    let job = job(&config, "by_hour");
    let (first, last) = range(job);
    let expected = expect(&[
        ("2026-01-01T00", 2),
        ("2026-01-01T01", 1),
        ("2026-01-01T03", 1),
    ]);
    let counts = wh.partition_counts(job, first, last).await.expect("counts");
    assert_eq!(sorted(&counts.partitions), expected);
    let run = common::idem(&path, &["run", "by_hour", "--yes"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let counts = wh.partition_counts(job, first, last).await.expect("counts");
    assert_eq!(
        sorted(&counts.partitions),
        expected,
        "the loads kept every row in its hour"
    );
}

/// Loads every partition of `job` at `concurrency`, none failing: the
/// run's events, as their debug text (a load's log lines among them).
async fn loaded(wh: &Warehouse, job: &Job, concurrency: usize) -> String {
    let backfill = Backfill::plan(wh, job, &Selection::default(), concurrency, 0)
        .await
        .expect("plan");
    let (summary, events) = common::run(wh, &backfill).await;
    assert_eq!(summary.failed, 0, "{:?}", common::errors(&events));
    format!("{events:?}")
}

/// The relation file of a table: TRUNCATE gives it a new one, DELETE does not.
async fn relfilenode(db: &TestDb, table: &str) -> i64 {
    let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let n: i64 = sqlx::query("SELECT CAST(relfilenode AS bigint) FROM pg_class WHERE relname = $1")
        .bind(table)
        .fetch_one(&mut conn)
        .await
        .expect("pg_class")
        .get(0);
    conn.close().await.expect("close");
    n
}

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_native_partition_is_truncated_in_the_transaction_and_a_killed_load_leaves_it_whole()
 {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let job_toml = |name: &str, from: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"pev\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"d\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\n\
             sql = \"select id, ts, d from {from} where d >= :start and d < :end\"\n\n"
        )
    };
    let jobs = [
        job_toml("native", "src"),
        // The same rows, three seconds after the partition was emptied.
        job_toml("native_slow", "src cross join (select pg_sleep(3)) z"),
    ]
    .concat();
    let (config_path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, ts TIMESTAMP NOT NULL, d DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01 01:00', '2026-01-01'), (2, '2026-01-01 02:00', '2026-01-01'), \
         (3, '2026-01-01 03:00', '2026-01-01'), (4, '2026-01-02 01:00', '2026-01-02'), (5, '2026-01-02 02:00', '2026-01-02')",
        "CREATE TABLE pev (id INTEGER NOT NULL, ts TIMESTAMP NOT NULL, d DATE NOT NULL) PARTITION BY RANGE (d)",
        "CREATE TABLE pev_0101 PARTITION OF pev FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')",
        "CREATE TABLE pev_0102 PARTITION OF pev FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')",
    ])
    .await
    .expect("fixture");
    let native = job(&config, "native");
    let run = |wh: Warehouse| async move { loaded(&wh, native, 2).await };
    // A first load finds the partitions empty: nothing to truncate.
    let empty_file = relfilenode(&db, "pev_0101").await;
    let logs = run(wh.clone()).await;
    assert!(
        logs.contains("pev_0101 is empty: nothing to TRUNCATE"),
        "{logs}"
    );
    assert_eq!(relfilenode(&db, "pev_0101").await, empty_file);
    let day = Partition::parse(native.grain, "2026-01-01", RangeEnd::From).expect("day");
    let loaded = wh
        .partition_fingerprint(native, &day)
        .await
        .expect("window");
    assert_eq!(loaded.rows, 3);
    let file = relfilenode(&db, "pev_0101").await;
    let logs = run(wh.clone()).await;
    assert!(logs.contains("TRUNCATE"), "{logs}");
    assert_ne!(relfilenode(&db, "pev_0101").await, file, "not truncated");
    assert_eq!(
        wh.partition_fingerprint(native, &day)
            .await
            .expect("window"),
        loaded
    );
    let latest = wh
        .attempts("native", Some("2026-01-01"))
        .await
        .expect("ledger");
    assert_eq!(latest.last().and_then(|a| a.content_changed), Some(false));

    // Killed after the TRUNCATE, before its COMMIT: the partition is whole.
    let child = common::spawn_idem(
        &config_path,
        &[
            "run",
            "native_slow",
            "--from",
            "2026-01-01",
            "--to",
            "2026-01-01",
        ],
    );
    let mut admin = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let truncate_held = "SELECT count(*) FROM pg_locks WHERE relation = CAST('pev_0101' AS regclass) \
                         AND mode = 'AccessExclusiveLock' AND granted";
    common::kill_idem_mid_load(
        &mut admin,
        child,
        truncate_held,
        "the slow load never truncated the partition",
    )
    .await;
    assert_eq!(
        wh.partition_fingerprint(native, &day)
            .await
            .expect("window"),
        loaded,
        "the killed load left the partition changed"
    );
    let slow = wh.attempts("native_slow", None).await.expect("ledger");
    assert!(
        slow.iter()
            .all(|a| a.status != idem::warehouse::ledger::AttemptStatus::Succeeded),
        "{slow:?}"
    );
}

/// The target's columns come from `pg_catalog` (the information schema
/// checks privileges on every column of the database first), named as the
/// information schema names them: the row hash and the window bounds go by
/// those names. Domains, arrays, enums, typmods, a dropped column and a
/// table of the same name in another schema.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_columns_from_the_catalogue_are_named_as_the_information_schema_names_them() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE DOMAIN day AS date",
        "CREATE DOMAIN code AS varchar(8) NOT NULL",
        "CREATE DOMAIN days AS date[]",
        "CREATE TYPE mood AS ENUM ('ok', 'sad')",
        "CREATE TABLE wide (id bigint NOT NULL, gone int, d day, c code, ds days, \
         ints int[], m mood, v varchar(10), n numeric(10, 2), tz timestamptz, \
         ts timestamp(3), ch char(3), b bytea, j jsonb, u uuid, t time, f float4, \
         g bigint GENERATED ALWAYS AS (id * 2) STORED)",
        "ALTER TABLE wide DROP COLUMN gone",
        "CREATE SCHEMA other",
        "CREATE TABLE other.wide (x text)",
        "CREATE VIEW wide_view AS SELECT id, d FROM wide",
    ])
    .await
    .expect("fixture");

    let information_schema = |schema: &str, table: &str| {
        format!(
            "SELECT CAST(column_name AS text), CAST(data_type AS text), \
             CASE WHEN is_nullable = 'YES' THEN 1 ELSE 0 END FROM information_schema.columns \
             WHERE table_schema = {schema} AND table_name = '{table}' ORDER BY ordinal_position"
        )
    };
    for (name, schema) in [
        ("wide", "current_schema()"),
        ("other.wide", "'other'"),
        ("wide_view", "current_schema()"),
    ] {
        let table = idem::config::TableName::parse(name).unwrap();
        let from_catalogue: Vec<(String, String, bool)> = wh
            .columns(&table)
            .await
            .unwrap()
            .into_iter()
            .map(|c| (c.name.as_str().to_string(), c.type_name, c.nullable))
            .collect();
        let expected: Vec<(String, String, bool)> = sqlx::query(sqlx::AssertSqlSafe(
            information_schema(schema, &table.name.to_string()),
        ))
        .fetch_all(wh.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| {
            (
                r.get::<String, _>(0),
                r.get::<String, _>(1),
                r.get::<i64, _>(2) == 1,
            )
        })
        .collect();
        assert!(!expected.is_empty(), "{name}");
        assert_eq!(from_catalogue, expected, "{name}");
    }
    let wide = wh
        .columns(&idem::config::TableName::parse("wide").unwrap())
        .await
        .unwrap();
    let kind = |name: &str| {
        wide.iter()
            .find(|c| c.name.as_str() == name)
            .unwrap()
            .kind(idem::warehouse::Engine::Postgres)
    };
    assert_eq!(kind("d"), idem::warehouse::ColumnKind::Date);
    assert_eq!(kind("tz"), idem::warehouse::ColumnKind::TimestampTz);
    assert!(matches!(
        wh.columns(&idem::config::TableName::parse("nowhere.wide").unwrap())
            .await,
        Err(idem::warehouse::WarehouseError::NoTarget { .. })
    ));
    wh.close().await;
}

/// PostgreSQL's TRUNCATE is not MVCC-safe: a reader whose snapshot was
/// taken before a load's COMMIT sees a truncated partition empty after it,
/// where after a DELETE it still sees the old rows. A job with
/// `truncate_partitions = false` (for consumers that read in REPEATABLE
/// READ across a re-run) deletes the window's rows instead.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_truncate_partitions_false_keeps_a_snapshot_readers_rows() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let job_toml = |name: &str, extra: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"pev\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"d\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-01\"\n{extra}\
             sql = \"select id, d from src where d >= :start and d < :end\"\n\n"
        )
    };
    let jobs = job_toml("truncating", "") + &job_toml("deleting", "truncate_partitions = false\n");
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, d DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-01'), (3, '2026-01-01')",
        "CREATE TABLE pev (id INTEGER NOT NULL, d DATE NOT NULL) PARTITION BY RANGE (d)",
        "CREATE TABLE pev_0101 PARTITION OF pev FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')",
    ])
    .await
    .expect("fixture");
    let load = async |name: &str| {
        let backfill = Backfill::plan(&wh, job(&config, name), &Selection::default(), 1, 0)
            .await
            .expect("plan");
        let (summary, events) = common::run(&wh, &backfill).await;
        assert_eq!(summary.failed, 0, "{:?}", common::errors(&events));
    };
    load("truncating").await;
    // A reader's snapshot, taken before the re-run (reading another table,
    // so that it holds no lock the TRUNCATE would wait on); what it sees of
    // the partition once the re-run has committed.
    let seen_by_a_snapshot_across = async |name: &str| -> i64 {
        let mut reader = sqlx::PgConnection::connect(&db.url).await.expect("connect");
        sqlx::raw_sql("BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT COUNT(*) FROM src")
            .execute(&mut reader)
            .await
            .expect("snapshot");
        let file = relfilenode(&db, "pev_0101").await;
        load(name).await;
        let truncated = relfilenode(&db, "pev_0101").await != file;
        assert_eq!(truncated, name == "truncating", "{name}");
        let rows: i64 = sqlx::query("SELECT COUNT(*) FROM pev_0101")
            .fetch_one(&mut reader)
            .await
            .expect("read")
            .get(0);
        reader.close().await.expect("close");
        rows
    };
    assert_eq!(
        seen_by_a_snapshot_across("truncating").await,
        0,
        "TRUNCATE empties the partition for an older snapshot"
    );
    assert_eq!(
        seen_by_a_snapshot_across("deleting").await,
        3,
        "a DELETE leaves an older snapshot its rows"
    );
    let day =
        Partition::parse(idem::partition::Grain::Day, "2026-01-01", RangeEnd::From).expect("day");
    assert_eq!(
        wh.partition_fingerprint(job(&config, "deleting"), &day)
            .await
            .expect("window")
            .rows,
        3
    );
    wh.close().await;
}

/// A native partition that a TRUNCATE would wrong is emptied by DELETE in
/// its load's transaction, and the load's log says why: a DELETE trigger
/// (an audit trail) would not fire, a foreign key refers to it (the
/// TRUNCATE fails), or the role may DELETE but not TRUNCATE it (as the
/// README's grants have it).
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_partition_a_truncate_would_wrong_is_deleted() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let job_toml = |name: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{name}\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"d\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-01\"\n\
             sql = \"select id, d from src where d >= :start and d < :end\"\n\n"
        )
    };
    let jobs = ["audited", "referred", "limited", "plain"]
        .map(job_toml)
        .concat();
    let (config_path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    let role = format!(
        "idem_truncate_{}_{}",
        std::process::id(),
        chrono::Utc::now().timestamp_subsec_nanos()
    );
    let mut script = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, d DATE NOT NULL)".to_string(),
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-01'), (3, '2026-01-01')".into(),
        "CREATE TABLE gone (id INTEGER NOT NULL)".into(),
        "CREATE FUNCTION note_gone() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO gone VALUES (OLD.id); RETURN OLD; END $$".into(),
        "CREATE TABLE refs (id INTEGER, d DATE)".into(),
    ];
    for name in ["audited", "referred", "limited", "plain"] {
        script.push(format!(
            "CREATE TABLE {name} (id INTEGER NOT NULL, d DATE NOT NULL, PRIMARY KEY (id, d)) PARTITION BY RANGE (d)"
        ));
        script.push(format!(
            "CREATE TABLE {name}_0101 PARTITION OF {name} FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')"
        ));
    }
    script.extend([
        "CREATE TRIGGER audited_gone AFTER DELETE ON audited FOR EACH ROW EXECUTE FUNCTION note_gone()".to_string(),
        "ALTER TABLE refs ADD FOREIGN KEY (id, d) REFERENCES referred (id, d)".into(),
        format!("DROP ROLE IF EXISTS {role}"),
        format!("CREATE ROLE {role} LOGIN"),
    ]);
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.expect("fixture");

    let load = async |wh: &Warehouse, config: &Config, name: &str| -> Vec<String> {
        let backfill = Backfill::plan(wh, job(config, name), &Selection::default(), 1, 0)
            .await
            .expect("plan");
        let (summary, events) = common::run(wh, &backfill).await;
        assert_eq!(summary.failed, 0, "{name}: {:?}", common::errors(&events));
        events
            .into_iter()
            .filter_map(|e| match e {
                engine::Event::PartitionLog { line, .. } => Some(line),
                _ => None,
            })
            .collect()
    };
    for name in ["audited", "referred", "limited", "plain"] {
        load(&wh, &config, name).await;
    }
    wh.execute_script(&[
        &format!("GRANT USAGE ON SCHEMA idem TO {role}"),
        &format!("GRANT SELECT, INSERT ON idem.attempts, idem.definitions TO {role}"),
        &format!("GRANT SELECT ON src TO {role}"),
        &format!("GRANT SELECT, INSERT, DELETE ON limited TO {role}"),
    ])
    .await
    .expect("grants");
    let text = std::fs::read_to_string(&config_path)
        .expect("config")
        .replace("postgres://postgres@", &format!("postgres://{role}@"));
    let role_path = config_path.with_file_name("as_loader.toml");
    std::fs::write(&role_path, &text).expect("write");
    let role_config = idem::config::parse(&role_path, &text, &|_| None).expect("parse");
    let role_wh = Warehouse::connect(&role_config.warehouse, 2)
        .await
        .expect("connect as the loader");

    for (name, why) in [
        ("audited", "a TRUNCATE would not fire its DELETE triggers"),
        ("referred", "a foreign key refers to it"),
        ("limited", "this role may not TRUNCATE it"),
    ] {
        let file = relfilenode(&db, &format!("{name}_0101")).await;
        let (wh, config) = match name {
            "limited" => (&role_wh, &role_config),
            _ => (&wh, &config),
        };
        let log = load(wh, config, name).await;
        assert!(
            log.iter()
                .any(|l| l.contains("emptied by DELETE rather than TRUNCATE") && l.ends_with(why)),
            "{name}: {log:#?}"
        );
        assert_eq!(
            relfilenode(&db, &format!("{name}_0101")).await,
            file,
            "{name} was truncated"
        );
    }
    let audited: i64 = {
        let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
        sqlx::query("SELECT COUNT(*) FROM gone")
            .fetch_one(&mut conn)
            .await
            .expect("gone")
            .get(0)
    };
    assert_eq!(audited, 3, "the DELETE trigger saw every replaced row");
    // And a partition nothing stands in the way of is truncated as before.
    let file = relfilenode(&db, "plain_0101").await;
    load(&wh, &config, "plain").await;
    assert_ne!(relfilenode(&db, "plain_0101").await, file);
    role_wh.close().await;
    wh.execute_script(&[
        &format!("DROP OWNED BY {role}"),
        &format!("DROP ROLE {role}"),
    ])
    .await
    .expect("drop the role");
    wh.close().await;
}

/// A partition detached while a run goes on (a retention job archiving
/// it) is a table of its own by the time the run loads its window: the
/// load leaves it as it is and deletes the window's rows from the target,
/// where it used to TRUNCATE it, emptying the archive, because the run had
/// read the target's partitions at its start.
/// A two-day job `arch` over a PostgreSQL target partitioned by day, one
/// child a day (`arch_0101`, `arch_0102`) but those `without` names, and a
/// DEFAULT partition if `default`; loaded once.
async fn arch_fixture(
    db: &TestDb,
    default: bool,
    without: &[&str],
) -> (Config, Warehouse, Backfill) {
    let (_, config) = db.config(
        "[[jobs]]\nname = \"arch\"\ntarget = \"arch\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"d\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\n\
         sql = \"select id, d from src cross join (select pg_sleep(1)) z where d >= :start and d < :end\"\n",
    );
    let wh = db.warehouse(&config).await;
    let mut fixture = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, d DATE NOT NULL)".to_string(),
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-01'), (3, '2026-01-02'), (4, '2026-01-02')".to_string(),
        "CREATE TABLE arch (id INTEGER NOT NULL, d DATE NOT NULL) PARTITION BY RANGE (d)".to_string(),
    ];
    for day in ["0101", "0102"].iter().filter(|d| !without.contains(d)) {
        let next = if *day == "0101" { "0102" } else { "0103" };
        fixture.push(format!(
            "CREATE TABLE arch_{day} PARTITION OF arch FOR VALUES FROM ('2026-{}-{}') TO ('2026-{}-{}')",
            &day[..2],
            &day[2..],
            &next[..2],
            &next[2..]
        ));
    }
    if default {
        fixture.push("CREATE TABLE arch_rest PARTITION OF arch DEFAULT".to_string());
    }
    let fixture: Vec<&str> = fixture.iter().map(String::as_str).collect();
    wh.execute_script(&fixture).await.expect("fixture");
    let backfill = Backfill::plan(&wh, job(&config, "arch"), &Selection::default(), 1, 0)
        .await
        .expect("plan");
    let (summary, events) = common::run(&wh, &backfill).await;
    if without.is_empty() || default {
        assert_eq!(summary.failed, 0, "{:?}", common::errors(&events));
    }
    (config, wh, backfill)
}

/// Runs `backfill` again, and while its first partition loads (the run
/// having read the target's shape), runs `change` of the other day
/// (`0101` or `0102`) on a session of its own. The run's summary and
/// events, and that other day.
async fn run_changing_the_other_day(
    db: &TestDb,
    wh: &Warehouse,
    backfill: &Backfill,
    change: impl Fn(&str) -> Vec<String>,
) -> (engine::RunSummary, Vec<engine::Event>, &'static str) {
    let gate = engine::Gate::default();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let run = {
        let (wh, backfill, gate) = (wh.clone(), backfill.clone(), gate.clone());
        tokio::spawn(async move {
            engine::run_gated(&wh, &backfill, &tx, &CancellationToken::new(), &gate).await
        })
    };
    let mut events = Vec::new();
    let first = loop {
        let event = rx.recv().await.expect("a partition starts");
        let started = match &event {
            engine::Event::PartitionStarted { partition, .. } => Some(partition.clone()),
            _ => None,
        };
        events.push(event);
        if let Some(partition) = started {
            gate.shut();
            break partition;
        }
    };
    let other = if first == "2026-01-01" {
        "0102"
    } else {
        "0101"
    };
    // The run reads the target's partitions at its first load: the change
    // comes after that read, as the run's start, not before it. Once the
    // first load has inserted, a plain DETACH (or DROP) waits for its
    // COMMIT.
    loop {
        let event = rx.recv().await.expect("the first load inserts");
        let inserted = matches!(&event, engine::Event::PartitionLog { line, .. } if line.starts_with("INSERT"))
            || matches!(
                &event,
                engine::Event::PartitionSucceeded { .. } | engine::Event::PartitionFailed { .. }
            );
        events.push(event);
        if inserted {
            break;
        }
    }
    for sql in change(other) {
        external(db, &sql).await;
    }
    gate.open();
    let summary = run.await.expect("run");
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    (summary, events, other)
}

/// The target's rows per day.
async fn arch_days(db: &TestDb) -> Vec<(String, i64)> {
    let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let loaded = sqlx::query("SELECT CAST(d AS text), COUNT(*) FROM arch GROUP BY d ORDER BY d")
        .fetch_all(&mut conn)
        .await
        .expect("target")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    conn.close().await.expect("close");
    loaded
}

fn partition_logs(events: &[engine::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            engine::Event::PartitionLog { line, .. } => Some(line.clone()),
            _ => None,
        })
        .collect()
}

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_partition_detached_during_the_run_keeps_its_rows() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (_, wh, backfill) = arch_fixture(&db, true, &[]).await;
    let (summary, events, other) = run_changing_the_other_day(&db, &wh, &backfill, |other| {
        vec![format!("ALTER TABLE arch DETACH PARTITION arch_{other}")]
    })
    .await;
    assert_eq!(summary.failed, 0, "{:?}", common::errors(&events));
    let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let kept: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM arch_{other}"
    )))
    .fetch_one(&mut conn)
    .await
    .expect("archive")
    .get(0);
    assert_eq!(kept, 2, "the detached partition was emptied");
    conn.close().await.expect("close");
    assert_eq!(
        arch_days(&db).await,
        expect(&[("2026-01-01", 2), ("2026-01-02", 2)]),
        "each window holds its rows, the detached one's in the DEFAULT partition"
    );
    let logs = partition_logs(&events);
    assert!(
        logs.iter().any(|l| l.contains(&format!(
            "arch_{other} is no longer this window's partition of arch"
        ))),
        "{logs:#?}"
    );
    wh.close().await;
}

/// A partition dropped while a run goes on (the run having read the
/// target's shape) is no longer the window's: its rows go to the DEFAULT
/// partition, or without one the window fails saying which partition to
/// create, not `relation "arch_0102" does not exist` on every retry.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_partition_dropped_during_the_run_is_no_longer_the_windows() {
    for default in [true, false] {
        for detach_first in [false, true] {
            let case = format!("default {default}, detached first {detach_first}");
            let Some(db) = TestDb::new(Kind::Postgres).await else {
                return;
            };
            let (_, wh, backfill) = arch_fixture(&db, default, &[]).await;
            let (summary, events, other) =
                run_changing_the_other_day(&db, &wh, &backfill, |other| {
                    let mut change = Vec::new();
                    if detach_first {
                        change.push(format!("ALTER TABLE arch DETACH PARTITION arch_{other}"));
                    }
                    change.push(format!("DROP TABLE arch_{other}"));
                    change
                })
                .await;
            let errors = common::errors(&events);
            let day = format!("2026-{}-{}", &other[..2], &other[2..]);
            if default {
                assert_eq!(summary.failed, 0, "{case}: {errors:?}");
                assert_eq!(
                    arch_days(&db).await,
                    expect(&[("2026-01-01", 2), ("2026-01-02", 2)]),
                    "{case}: the dropped partition's window is in the DEFAULT partition"
                );
            } else {
                assert_eq!(summary.failed, 1, "{case}: {errors:?}");
                assert!(
                    errors.iter().all(|e| e.contains(&format!(
                        "arch has no partition for {day} (FOR VALUES FROM ('{day}')"
                    ))),
                    "{case}: {errors:?}"
                );
            }
            assert!(
                !errors.iter().any(|e| e.contains("does not exist")),
                "{case}: {errors:?}"
            );
            wh.close().await;
        }
    }
}

/// A partition attached while a run goes on, for a window that had none,
/// takes that window's rows (the run read the target before it was there).
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_partition_attached_during_the_run_takes_its_window() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (_, wh, backfill) = arch_fixture(&db, false, &["0101", "0102"]).await;
    // Neither day has a partition yet: the first fails, and while it loads
    // the other day's is made.
    let (_, events, other) = run_changing_the_other_day(&db, &wh, &backfill, |other| {
        let day = format!("2026-{}-{}", &other[..2], &other[2..]);
        vec![
            format!("CREATE TABLE arch_{other} (id INTEGER NOT NULL, d DATE NOT NULL)"),
            format!(
                "ALTER TABLE arch ATTACH PARTITION arch_{other} FOR VALUES FROM ('{day}') TO ('{day}'::date + 1)"
            ),
        ]
    })
    .await;
    let day = format!("2026-{}-{}", &other[..2], &other[2..]);
    let failed: Vec<&String> = events
        .iter()
        .filter_map(|e| match e {
            engine::Event::PartitionFailed { partition, .. } => Some(partition),
            _ => None,
        })
        .collect();
    assert!(
        !failed.contains(&&day),
        "the attached partition's window failed: {:?}",
        common::errors(&events)
    );
    assert_eq!(arch_days(&db).await, expect(&[(day.as_str(), 2)]));
    wh.close().await;
}

/// A table of `n` integer columns `c0`…: the job's SQL (each column the
/// source's `v` plus its number) and the columns' definitions.
fn wide_columns(n: usize) -> (String, String) {
    let columns: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
    let select = columns
        .iter()
        .enumerate()
        .map(|(i, c)| format!("s.v + {i} AS {c}"))
        .collect::<Vec<_>>()
        .join(", ");
    let defs = columns
        .iter()
        .map(|c| format!("{c} INTEGER"))
        .collect::<Vec<_>>()
        .join(", ");
    (
        format!("SELECT s.id, s.dt, {select} FROM src s WHERE s.dt >= :start AND s.dt < :end"),
        defs,
    )
}

/// `idem run JOB --json`'s partition_succeeded events, the run having
/// exited 0.
fn run_succeeded(path: &std::path::Path, job: &str) -> Vec<serde_json::Value> {
    let out = common::idem(path, &["run", job, "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{job}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["event"] == "partition_succeeded")
        .collect()
}

/// Loads `jobs` (40 source rows over two days), loads them again
/// unchanged, verifies a day, then changes one source row: its day alone
/// changes content, and a merge updates that row alone.
async fn wide_jobs_load_again_and_verify(
    wh: &idem::warehouse::Warehouse,
    path: &std::path::Path,
    jobs: &[&str],
) {
    for &job in jobs {
        assert_eq!(run_succeeded(path, job).len(), 2, "{job}");
        let again = run_succeeded(path, job);
        assert!(
            again
                .iter()
                .all(|e| e["rows_updated"] == 0 && e["content_changed"] == false),
            "{job}: {again:?}"
        );
        let said = common::stdout_ok(&common::idem(path, &["verify", job, "2026-01-02"]));
        assert!(said.starts_with("idempotent"), "{job}: {said}");
    }
    wh.execute_script(&["UPDATE src SET v = 1000 WHERE id = 2"])
        .await
        .expect("update");
    for &job in jobs {
        let events = run_succeeded(path, job);
        let changed: Vec<&str> = events
            .iter()
            .filter(|e| e["content_changed"] == true)
            .map(|e| e["partition"].as_str().unwrap())
            .collect();
        assert_eq!(changed, ["2026-01-01"], "{job}: {events:?}");
        let updated: i64 = events
            .iter()
            .map(|e| e["rows_updated"].as_i64().unwrap())
            .sum();
        let merged = job.contains("merge");
        assert_eq!(updated, i64::from(merged), "{job}: {events:?}");
    }
}

/// A merge into a table of more than 832 columns on PostgreSQL: comparing
/// the target's rows with the staged ones joined both sides' columns, past
/// the 1,664 a row may hold, so every window that matched a key failed
/// ("number of columns (…) exceeds limit (1664)") from its second load
/// on, and so did `idem verify`.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_merge_into_a_table_of_900_columns_loads_again_and_verifies() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (sql, defs) = wide_columns(900);
    let (path, config) = db.config(&common::merge_job("wide_merge", "wide", "2026-01-02", &sql));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL, v INTEGER NOT NULL)",
        "INSERT INTO src SELECT i, DATE '2026-01-01' + i % 2, i FROM generate_series(1, 40) i",
        &format!("CREATE TABLE wide (id INTEGER PRIMARY KEY, dt DATE NOT NULL, {defs})"),
    ])
    .await
    .expect("fixture");
    wide_jobs_load_again_and_verify(&wh, &path, &["wide_merge"]).await;
}

/// A SQLite table may hold 2,000 columns, but a function takes at most
/// 1,000 arguments, an expression nests at most 1,000 deep and an
/// aggregate query reads at most 2,000 columns: a table of 1,200 columns
/// loads, loads again unchanged, merges one changed row, and verifies, by
/// replace and by merge (QA: the fingerprint's row array and the merge's
/// change test failed every load, writing nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_tables_of_1200_columns_load_again_and_verify() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let (sql, defs) = wide_columns(1200);
    let (path, config) = db.config(&format!(
        "{}{}",
        common::replace_job("wide_replace", "wide_replace", "2026-01-02", &sql),
        common::merge_job("wide_merge", "wide_merge", "2026-01-02", &sql)
    ));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt TEXT NOT NULL, v INTEGER NOT NULL)",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) \
         INSERT INTO src SELECT i, date('2026-01-01', '+' || (i % 2) || ' days'), i FROM n",
        &format!("CREATE TABLE wide_replace (id INTEGER NOT NULL, dt TEXT NOT NULL, {defs})"),
        &format!("CREATE TABLE wide_merge (id INTEGER PRIMARY KEY, dt TEXT NOT NULL, {defs})"),
    ])
    .await
    .expect("fixture");
    wide_jobs_load_again_and_verify(&wh, &path, &["wide_replace", "wide_merge"]).await;
    let c1199: i64 = sqlx::query_scalar("SELECT c1199 FROM wide_merge WHERE id = 2")
        .fetch_one(wh.pool())
        .await
        .expect("read");
    assert_eq!(c1199, 1000 + 1199);
}

/// The partitions a `run --dry-run --json` plan says no native partition
/// covers.
fn uncovered(plan: &serde_json::Value) -> Vec<&str> {
    plan["partitions"]
        .as_array()
        .expect("partitions")
        .iter()
        .filter(|p| p["uncovered"] == true)
        .map(|p| p["partition"].as_str().unwrap())
        .collect()
}

/// QA: a `timestamptz` target whose daily partitions were made in the
/// operator's own time zone (America/New_York: their bounds read
/// `'2026-11-03 05:00:00+00'` in idem's UTC session) was taken as covering
/// every window, so an hourly dry run past its last partition said nothing
/// and the run then failed those hours. Such bounds are read as the UTC
/// instants they are, and the uncovered hours are named beforehand.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_dry_run_reads_zoned_native_partition_bounds() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (path, config) = db.config(&common::zoned_job("hour", "2026-11-04T03", "2026-11-04T06"));
    let wh = db.warehouse(&config).await;
    // New York's 2026-11-03, as a session there writes it.
    let tables = common::zoned_tables(
        "FOR VALUES FROM ('2026-11-03 00:00:00-05') TO ('2026-11-04 00:00:00-05')",
    );
    let script: Vec<&str> = tables.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.expect("fixture");
    let out = common::idem(&path, &["run", "fct", "--dry-run", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    assert_eq!(
        uncovered(&plan),
        ["2026-11-04T05", "2026-11-04T06"],
        "{plan}"
    );
    wh.close().await;
}

/// `idem run --dry-run` on a target partitioned by range on the job's
/// partition column, with no DEFAULT partition, says which windows no
/// partition covers (the run would fail them) and what to create; and
/// says nothing of targets whose partitions take every row, or that are
/// partitioned otherwise.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_dry_run_says_which_windows_no_native_partition_covers() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let targets = ["gap", "with_default", "sub", "by_id", "by_list", "plain"];
    let jobs: String = targets
        .iter()
        .map(|t| {
            format!(
                "[[jobs]]\nname = \"{t}\"\ntarget = \"{t}\"\nstrategy = \"replace_partition\"\n\
                 partition_column = \"d\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-03\"\n\
                 sql = \"select id, d from src where d >= :start and d < :end\"\n\n"
            )
        })
        .collect();
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    let day = |t: &str, from: &str, to: &str| {
        format!(
            "CREATE TABLE {t}_{from} PARTITION OF {t} FOR VALUES FROM ('2026-01-{from}') TO ('2026-01-{to}')"
        )
    };
    let mut fixture = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, d DATE NOT NULL)".to_string(),
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-03')"
            .to_string(),
    ];
    for t in ["gap", "with_default"] {
        fixture.push(format!(
            "CREATE TABLE {t} (id INTEGER NOT NULL, d DATE NOT NULL) PARTITION BY RANGE (d)"
        ));
        fixture.push(day(t, "01", "02"));
        fixture.push(day(t, "03", "04"));
    }
    fixture.extend([
        "CREATE TABLE with_default_rest PARTITION OF with_default DEFAULT".to_string(),
        "CREATE TABLE sub (id INTEGER NOT NULL, d DATE NOT NULL) PARTITION BY RANGE (d)"
            .to_string(),
        "CREATE TABLE sub_all PARTITION OF sub FOR VALUES FROM (MINVALUE) TO ('2026-02-01') PARTITION BY RANGE (id)".to_string(),
        "CREATE TABLE sub_all_low PARTITION OF sub_all FOR VALUES FROM (0) TO (100)".to_string(),
        "CREATE TABLE by_id (id INTEGER NOT NULL, d DATE NOT NULL) PARTITION BY RANGE (id)"
            .to_string(),
        "CREATE TABLE by_id_low PARTITION OF by_id FOR VALUES FROM (0) TO (100)".to_string(),
        "CREATE TABLE by_list (id INTEGER NOT NULL, d DATE NOT NULL) PARTITION BY LIST (d)"
            .to_string(),
        "CREATE TABLE by_list_1 PARTITION OF by_list FOR VALUES IN ('2026-01-01')".to_string(),
        "CREATE TABLE plain (id INTEGER NOT NULL, d DATE NOT NULL)".to_string(),
    ]);
    let fixture: Vec<&str> = fixture.iter().map(String::as_str).collect();
    wh.execute_script(&fixture).await.expect("fixture");
    for t in targets {
        let out = common::idem(&path, &["run", t, "--dry-run"]);
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{t}: {said}");
        if t == "gap" {
            assert!(
                said.contains(
                    "1 partition would fail: no partition of gap covers it, and it has no DEFAULT partition"
                ) && said.contains(
                    "  2026-01-02: CREATE TABLE … PARTITION OF gap FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')"
                ) && !said.contains("2026-01-01: CREATE")
                    && !said.contains("2026-01-03: CREATE"),
                "{said}"
            );
        } else {
            assert!(!said.contains("would fail"), "{t}: {said}");
        }
        // `--json` says the same: which partitions would fail, and what to
        // create for each.
        let out = common::idem(&path, &["run", t, "--dry-run", "--json"]);
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
        let uncovered = uncovered(&plan);
        let to_create = &plan["partitions_to_create"];
        if t == "gap" {
            assert_eq!(uncovered, ["2026-01-02"], "{plan}");
            assert_eq!(
                to_create,
                &serde_json::json!([{
                    "partition": "2026-01-02",
                    "create": ["FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')"]
                }]),
                "{plan}"
            );
        } else {
            assert!(uncovered.is_empty(), "{t}: {plan}");
            assert_eq!(to_create, &serde_json::json!([]), "{t}: {plan}");
        }
    }
    wh.close().await;
}

/// A `timestamptz` target partitioned by UTC day (bounds made as
/// `'2026-01-01 00:00:00+00'`, as idem advises them): a re-run of a day
/// truncates its partition, as for a date column. Before, a zoned bound
/// was no window's, so every load of such a table (the commonest way to
/// partition events) deleted row by row. A partition made for New York's
/// day holds another window than UTC's, and is still deleted from.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_timestamptz_partition_of_a_utc_day_is_truncated() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let job_toml = |name: &str, target: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"ts\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-01\"\n\
             sql = \"select id, ts from src where ts >= :start and ts < :end\"\n\n"
        )
    };
    let jobs = [job_toml("utc", "utc_days"), job_toml("ny", "ny_days")].concat();
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01 01:00+00'), (2, '2026-01-01 13:00+00'), \
         (3, '2026-01-01 23:30+00')",
        "CREATE TABLE utc_days (id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL) PARTITION BY RANGE (ts)",
        "CREATE TABLE utc_0101 PARTITION OF utc_days \
         FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2026-01-02 00:00:00+00')",
        "CREATE TABLE ny_days (id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL) PARTITION BY RANGE (ts)",
        "CREATE TABLE ny_1231 PARTITION OF ny_days \
         FOR VALUES FROM ('2025-12-31 00:00:00-05') TO ('2026-01-01 00:00:00-05')",
        "CREATE TABLE ny_0101 PARTITION OF ny_days \
         FOR VALUES FROM ('2026-01-01 00:00:00-05') TO ('2026-01-02 00:00:00-05')",
    ])
    .await
    .expect("fixture");
    let run = async |name: &str| loaded(&wh, job(&config, name), 1).await;
    run("utc").await;
    let file = relfilenode(&db, "utc_0101").await;
    let logs = run("utc").await;
    assert!(logs.contains("TRUNCATE"), "{logs}");
    assert_ne!(relfilenode(&db, "utc_0101").await, file, "not truncated");
    let day =
        Partition::parse(idem::partition::Grain::Day, "2026-01-01", RangeEnd::From).expect("day");
    let loaded = wh
        .partition_fingerprint(job(&config, "utc"), &day)
        .await
        .expect("window");
    assert_eq!(loaded.rows, 3);

    // UTC's day spans two New York days: each row lands where it belongs,
    // and neither partition is the window's, so nothing is truncated.
    run("ny").await;
    let files = (
        relfilenode(&db, "ny_1231").await,
        relfilenode(&db, "ny_0101").await,
    );
    let logs = run("ny").await;
    assert!(!logs.contains("TRUNCATE"), "{logs}");
    assert_eq!(
        (
            relfilenode(&db, "ny_1231").await,
            relfilenode(&db, "ny_0101").await
        ),
        files
    );
    let rows = |table: &'static str| {
        let wh = wh.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(format!(
                "SELECT count(*) FROM {table}"
            )))
            .fetch_one(wh.pool())
            .await
            .expect("count")
        }
    };
    assert_eq!((rows("ny_1231").await, rows("ny_0101").await), (1, 2));
    wh.close().await;
}
