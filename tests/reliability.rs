//! The holes found by attacking idem, each closed and tried again the way the
//! world tries it: two grains racing on one table, NULL merge keys, windows
//! that have not ended, a late source, on every engine.

mod common;

use common::proxy::Proxy;
use common::{Kind, TestDb, errors, run};
use idem::config::{Config, Job};
use idem::engine::{Backfill, Event, PlanError, Selection};
use idem::partition::{Grain, Partition, RangeEnd, now_utc};
use idem::state::{self, LoadState};
use idem::warehouse::Warehouse;
use idem::warehouse::ledger::AttemptStatus;
use sqlx::Row;

/// `src` and `target`, both `(id, dt)`, then the `rest` of the script: the
/// fixture most tests here start from.
async fn id_and_day_tables(wh: &Warehouse, target: &str, rest: &[&str]) {
    let target = format!("CREATE TABLE {target} (id INTEGER NOT NULL, dt DATE NOT NULL)");
    let mut script = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        &target,
    ];
    script.extend_from_slice(rest);
    wh.execute_script(&script).await.expect("setup");
}

/// Fills `src` with one row on each of the first `days` days of 2026.
fn one_row_a_day(days: u32) -> String {
    let values: Vec<String> = (1..=days)
        .map(|d| format!("({d}, '2026-01-{d:02}')"))
        .collect();
    format!("INSERT INTO src (id, dt) VALUES {}", values.join(", "))
}

fn job<'a>(config: &'a Config, name: &str) -> &'a Job {
    config
        .jobs
        .iter()
        .find(|j| j.name == name)
        .expect("job in config")
}

fn day(d: &str) -> Partition {
    Partition::parse(Grain::Day, d, RangeEnd::From).expect("day")
}

async fn plan(wh: &Warehouse, job: &Job, from: &str, to: &str) -> Backfill {
    let selection = Selection {
        from: Some(day(from)),
        to: Some(day(to)),
        ..Selection::default()
    };
    Backfill::plan(wh, job, &selection, 2, 0)
        .await
        .expect("plan")
}

async fn scalar(wh: &Warehouse, sql: &str) -> i64 {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(wh.pool())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .try_get::<i64, _>(0)
        .expect("an integer")
}

// 1. An hourly and a daily job writing one table: overlapping windows of
// different grains must exclude each other.

const HOURS: i64 = 24;
const ROWS_PER_HOUR: i64 = 40;

async fn two_grains_on_one_target_never_duplicate(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select id, ts from src where ts >= :start and ts < :end";
    let jobs = format!(
        "[[jobs]]\nname = \"ev_hourly\"\ntarget = \"ev\"\nstrategy = \"replace_partition\"\npartition_column = \"ts\"\n\
         grain = \"hour\"\nstart = \"2026-01-01T00\"\nend = \"2026-01-01T23\"\nsql = \"{select}\"\n\n\
         [[jobs]]\nname = \"ev_daily\"\ntarget = \"ev\"\nstrategy = \"replace_partition\"\npartition_column = \"ts\"\n\
         grain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-01\"\nsql = \"{select}\"\n"
    );
    let (_, config) = db.config(&jobs);
    let wh = Warehouse::connect(&config.warehouse, 8)
        .await
        .expect("connect");
    let ts = if kind == Kind::MySql {
        "DATETIME"
    } else {
        "TIMESTAMP"
    };
    let mut values = Vec::new();
    for h in 0..HOURS {
        for k in 0..ROWS_PER_HOUR {
            values.push(format!(
                "({}, '2026-01-01 {h:02}:{:02}:00')",
                h * ROWS_PER_HOUR + k,
                k % 60
            ));
        }
    }
    let mut ddl = vec![
        format!("CREATE TABLE src (id INTEGER NOT NULL, ts {ts} NOT NULL)"),
        format!("CREATE TABLE ev (id INTEGER NOT NULL, ts {ts} NOT NULL)"),
        format!("INSERT INTO src (id, ts) VALUES {}", values.join(", ")),
    ];
    if kind == Kind::Postgres {
        // Commits that take a while: the window in which two writers of one
        // hour would both have deleted before either inserted.
        ddl.push(
            "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep(0.01); RETURN NULL; END $$"
                .into(),
        );
        ddl.push(format!(
            "CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON ev DEFERRABLE INITIALLY DEFERRED \
             FOR EACH ROW WHEN (NEW.id % {ROWS_PER_HOUR} = 0) EXECUTE FUNCTION slow_commit()"
        ));
    }
    let refs: Vec<&str> = ddl.iter().map(String::as_str).collect();
    wh.execute_script(&refs).await.expect("setup");

    let hourly = Backfill::plan(&wh, job(&config, "ev_hourly"), &Selection::default(), 3, 0)
        .await
        .expect("plan hourly");
    let daily = Backfill::plan(&wh, job(&config, "ev_daily"), &Selection::default(), 1, 0)
        .await
        .expect("plan daily");
    assert_eq!((hourly.partitions.len(), daily.partitions.len()), (24, 1));
    let total = HOURS * ROWS_PER_HOUR;
    for round in 0..20 {
        let ((h, h_events), (d, d_events)) = tokio::join!(run(&wh, &hourly), run(&wh, &daily));
        let rows = scalar(&wh, "SELECT COUNT(*) FROM ev").await;
        let ids = scalar(&wh, "SELECT COUNT(DISTINCT id) FROM ev").await;
        assert_eq!(
            (rows, ids),
            (total, total),
            "round {round}: {rows} rows for {ids} ids; hourly {h:?} {:?}, daily {d:?} {:?}",
            errors(&h_events),
            errors(&d_events)
        );
        assert_eq!(
            (h.failed, d.failed),
            (0, 0),
            "round {round}: hourly {:?}, daily {:?}",
            errors(&h_events),
            errors(&d_events)
        );
    }
}

/// A job `monthly` of `select` into `m`, January to March 2026, a source
/// row in each, beside the jobs `more`: its config and warehouse.
async fn three_months(db: &TestDb, select: &str, more: &str) -> (Config, Warehouse) {
    let jobs = format!(
        "[[jobs]]\nname = \"monthly\"\ntarget = \"m\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\n\
         grain = \"month\"\nstart = \"2026-01\"\nend = \"2026-03\"\nsql = \"{select}\"\n\n{more}"
    );
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    id_and_day_tables(
        &wh,
        "m",
        &["INSERT INTO src VALUES (1, '2026-01-15'), (2, '2026-02-15'), (3, '2026-03-31')"],
    )
    .await;
    (config, wh)
}

/// A month's load takes its locks in one statement (on MariaDB its ~744
/// hours, on PostgreSQL its month), on every engine, three months at once.
async fn month_partitions_load_under_their_locks(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (config, wh) = three_months(&db, select, "").await;
    let monthly = Backfill::plan(&wh, job(&config, "monthly"), &Selection::default(), 3, 0)
        .await
        .expect("plan");
    let (summary, events) = run(&wh, &monthly).await;
    assert_eq!(summary.succeeded, 3, "{:?}", errors(&events));
    let logged = events.iter().any(|e| {
        matches!(e, Event::PartitionLog { line, .. }
            if line.contains("m [2026-03-01 00:00:00, 2026-04-01 00:00:00)"))
    });
    assert!(logged, "the lock names the window it covers");
    assert_eq!(scalar(&wh, "SELECT COUNT(*) FROM m").await, 3);
}

/// A monthly backfill on PostgreSQL holds one advisory lock per load in
/// flight (its month), not one per hour: 744 a load filled the server's
/// shared lock table at a concurrency of 8 or so, and every other session
/// needing a lock then failed with "out of shared memory".
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_monthly_backfill_holds_a_lock_per_load_not_per_hour() {
    let db = TestDb::new(Kind::Postgres).await.expect("postgres");
    let select =
        "select id, dt from src where dt >= :start and dt < :end and pg_sleep(1) IS NOT NULL";
    let daily = format!(
        "[[jobs]]\nname = \"daily\"\ntarget = \"m\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\n\
         grain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-03-31\"\nsql = \"{select}\"\n"
    );
    let (config, wh) = three_months(&db, select, &daily).await;
    let monthly = Backfill::plan(&wh, job(&config, "monthly"), &Selection::default(), 3, 0)
        .await
        .expect("plan");
    let watch = Warehouse::connect(&config.warehouse, 1)
        .await
        .expect("watch");
    // A day inside a month being loaded shows as loaded elsewhere, as the
    // month does.
    let mid_january = [day("2026-01-15")];
    let months: Vec<Partition> = ["2026-01", "2026-02", "2026-03"]
        .iter()
        .map(|m| Partition::parse(Grain::Month, m, RangeEnd::From).unwrap())
        .collect();
    let (mut day_seen, mut months_seen) = (false, 0);
    let mut run = Box::pin(run(&wh, &monthly));
    let mut most = 0;
    let (summary, events) = loop {
        tokio::select! {
            done = &mut run => break done,
            () = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                // Partition locks are one-key (objsubid 1); the ledger's
                // numbering lock, held a moment as each attempt is
                // recorded, is two-key (objsubid 2) and is none.
                let held = scalar(
                    &watch,
                    "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
                     AND objsubid = 1 \
                     AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                )
                .await;
                most = most.max(held);
                let daily = watch
                    .partitions_locked_elsewhere(job(&config, "daily"), &mid_january)
                    .await
                    .expect("probe");
                day_seen |= daily.contains("2026-01-15");
                let monthly = watch
                    .partitions_locked_elsewhere(job(&config, "monthly"), &months)
                    .await
                    .expect("probe");
                months_seen = months_seen.max(monthly.len());
            }
        }
    };
    assert_eq!(summary.succeeded, 3, "{:?}", errors(&events));
    assert!(most >= 1, "the loads were seen holding their locks");
    assert!(most <= 3, "{most} advisory locks for three monthly loads");
    assert!(
        months_seen >= 1,
        "the months in flight show as loaded elsewhere"
    );
    assert!(
        day_seen,
        "a day of a month in flight shows as loaded elsewhere"
    );
    assert_eq!(scalar(&wh, "SELECT COUNT(*) FROM m").await, 3);
}

// 2. A NULL in a merge key matches nothing, so each re-run would add it again.

async fn null_merge_key_fails_the_window_before_writing(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select customer_id, name, dt from src where dt >= :start and dt < :end";
    let jobs = format!(
        "[[jobs]]\nname = \"dim\"\ntarget = \"dim\"\nstrategy = \"merge_key\"\nunique_key = [\"customer_id\"]\n\
         grain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-03\"\nsql = \"{select}\"\n"
    );
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (customer_id INTEGER, name VARCHAR(20) NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE dim (customer_id INTEGER UNIQUE, name VARCHAR(20) NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 'ann', '2026-01-01'), (NULL, 'ghost', '2026-01-01'), \
         (2, 'bob', '2026-01-02'), (NULL, 'ghost', '2026-01-02'), \
         (3, 'cy', '2026-01-03'), (NULL, 'ghost', '2026-01-03')",
    ])
    .await
    .expect("setup");
    let dim = job(&config, "dim");
    for _ in 0..2 {
        let backfill = plan(&wh, dim, "2026-01-01", "2026-01-03").await;
        let (summary, events) = run(&wh, &backfill).await;
        // The first window fails; a failed merge window stops the later ones.
        assert_eq!(summary.failed, 1, "{:?}", errors(&events));
        let error = &errors(&events)[0];
        assert!(
            error.contains("NULL unique_key (customer_id)") && error.contains("2026-01-01"),
            "{error}"
        );
        assert_eq!(
            scalar(&wh, "SELECT COUNT(*) FROM dim").await,
            0,
            "nothing written"
        );
    }
    // lint warns of the nullable key column, and only of it.
    let findings = idem::lint::warehouse_findings(&wh, dim)
        .await
        .expect("lint");
    let nullable: Vec<_> = findings
        .iter()
        .filter(|f| f.message.contains("accepts NULL"))
        .collect();
    assert_eq!(nullable.len(), 1, "{findings:?}");
    assert!(nullable[0].message.contains("customer_id"), "{findings:?}");
    // verify cannot call it idempotent.
    let verdict = wh
        .verify_partition(dim, &day("2026-01-02"), &Default::default())
        .await;
    match verdict {
        Ok(v) => panic!("verify called a NULL-keyed merge {v:?}"),
        Err(e) => assert!(e.to_string().contains("NULL unique_key"), "{e}"),
    }
    // Without the NULL rows, the windows load and re-run to the same rows.
    wh.execute_script(&["DELETE FROM src WHERE customer_id IS NULL"])
        .await
        .expect("clean source");
    for _ in 0..2 {
        let backfill = plan(&wh, dim, "2026-01-01", "2026-01-03").await;
        let (summary, events) = run(&wh, &backfill).await;
        assert_eq!(summary.failed, 0, "{:?}", errors(&events));
        assert_eq!(scalar(&wh, "SELECT COUNT(*) FROM dim").await, 3);
    }
}

// 3. Windows that have not ended, and windows outside the job.

async fn open_and_out_of_range_windows_are_refused(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let now = now_utc();
    let today = Partition::containing(Grain::Day, now);
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let jobs = format!(
        "[[jobs]]\nname = \"live\"\ntarget = \"live\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\n\
         grain = \"day\"\nstart = \"{}\"\nsql = \"{select}\"\n",
        today.prev().prev().name()
    );
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    id_and_day_tables(&wh, "live", &[]).await;
    let live = job(&config, "live");
    let through = |to: Partition, allow_incomplete: bool| Selection {
        from: Some(live.start),
        to: Some(to),
        allow_incomplete,
        ..Selection::default()
    };

    // Today and the days after it have not ended.
    for to in [today, today.next().next()] {
        match Backfill::plan(&wh, live, &through(to, false), 2, 0).await {
            Err(PlanError::Incomplete {
                partition,
                last_complete,
                ..
            }) => {
                assert_eq!(partition, today.name());
                assert_eq!(last_complete, today.prev().name());
            }
            other => panic!("planned an open window: {other:?}"),
        }
    }
    // A range that starts after today names the last complete window, not
    // the day before its own start (which has not ended either).
    let later = Selection {
        from: Some(today.next().next()),
        to: Some(today.next().next()),
        ..Selection::default()
    };
    match Backfill::plan(&wh, live, &later, 2, 0).await {
        Err(PlanError::Incomplete { last_complete, .. }) => {
            assert_eq!(last_complete, today.prev().name());
        }
        other => panic!("planned a later window: {other:?}"),
    }
    // Even allowed, a window that has not begun is refused: it has no rows
    // yet, and its load would record an empty success.
    match Backfill::plan(&wh, live, &through(today.next().next(), true), 2, 0).await {
        Err(PlanError::NotBegun { partition, open }) => {
            assert_eq!((partition, open), (today.next().name(), today.name()));
        }
        other => panic!("planned a window that has not begun: {other:?}"),
    }
    // Before the job's start.
    let early = Selection {
        from: Some(live.start.prev()),
        ..Selection::default()
    };
    assert!(matches!(
        Backfill::plan(&wh, live, &early, 2, 0).await,
        Err(PlanError::OutOfRange { .. })
    ));

    // Allowed explicitly, today loads but is never final: while open it is
    // future, and once it has ended it is due again (missing), not empty.
    let backfill = Backfill::plan(&wh, live, &through(today, true), 2, 0)
        .await
        .expect("plan with --allow-incomplete");
    assert_eq!(backfill.partitions.len(), 3);
    let (summary, _) = run(&wh, &backfill).await;
    assert_eq!(summary.failed, 0);
    let statuses = state::job_status(&wh, live, now_utc(), &Default::default())
        .await
        .expect("status");
    let state_of = |statuses: &[state::PartitionStatus], p: Partition| {
        statuses.iter().find(|s| s.partition == p).map(|s| s.state)
    };
    assert_eq!(state_of(&statuses, today.prev()), Some(LoadState::Empty));
    assert_eq!(state_of(&statuses, today), Some(LoadState::Future));
    let tomorrow = today.end() + chrono::Duration::hours(1);
    let later = state::job_status(&wh, live, tomorrow, &Default::default())
        .await
        .expect("status later");
    assert_eq!(state_of(&later, today), Some(LoadState::Missing));
    let due = Selection {
        only: vec![LoadState::Missing],
        ..Selection::default()
    };
    let statuses_later = later.clone();
    let rerun = Backfill::plan_from(live, &due, &statuses_later, tomorrow, 2, 0).expect("plan");
    assert_eq!(rerun.partitions, vec![today]);
}

// 4. A late source: the day's rows have not landed, and a re-run would wipe
// what was loaded.

async fn late_source_does_not_wipe_a_loaded_partition(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select id, dt from src where dt >= :start and dt < :end";
    // Day 3's source has not landed at all.
    let jobs = common::replace_job("fct", "fct", "2026-01-03", select);
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    let mut values = Vec::new();
    for d in 1..=2 {
        for k in 0..2000 {
            values.push(format!("({}, '2026-01-0{d}')", d * 10_000 + k));
        }
    }
    let fill = format!("INSERT INTO src (id, dt) VALUES {}", values.join(", "));
    id_and_day_tables(&wh, "fct", &[&fill]).await;
    let fct = job(&config, "fct");
    let (summary, _) = run(&wh, &plan(&wh, fct, "2026-01-01", "2026-01-02").await).await;
    assert_eq!(summary.failed, 0);

    // Day 1's source is empty again (its upstream load is being redone);
    // day 2's lost most of its rows.
    wh.execute_script(&[
        "DELETE FROM src WHERE dt = '2026-01-01'",
        "DELETE FROM src WHERE dt = '2026-01-02' AND id >= 20100",
    ])
    .await
    .expect("late source");
    // The preview says so before anything runs.
    let preview = common::stdout_ok(&common::idem(&path, &["run", "fct", "--dry-run"]));
    assert!(
        preview
            .contains("2026-01-01 ■ loaded    rows now 2,000 → source 0: the shrink guard refuses")
            && preview.contains("2 partitions would be refused"),
        "{preview}"
    );
    // A partition without rows is not the guard's: the preview says it
    // would load empty, and then count as loaded.
    assert!(
        preview.contains("→ source 0: loads empty (a late source?)")
            && preview.contains("1 partition would load empty"),
        "{preview}"
    );
    let (summary, events) = run(&wh, &plan(&wh, fct, "2026-01-01", "2026-01-02").await).await;
    assert_eq!((summary.failed, summary.refused), (2, 2));
    assert_eq!(summary.exit_code(), idem::exit::Exit::Failed);
    let errors = errors(&events);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("source looks incomplete: would replace 2,000 rows with 0")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.contains("2,000 rows with 100")),
        "{errors:?}"
    );
    assert_eq!(
        scalar(&wh, "SELECT COUNT(*) FROM fct").await,
        4000,
        "both days kept"
    );
    // Recorded as refused, and the partitions still read as loaded.
    let attempts = wh.attempts("fct", None).await.expect("ledger");
    assert_eq!(
        attempts
            .iter()
            .filter(|a| a.status == AttemptStatus::Refused)
            .count(),
        2
    );
    let statuses = state::job_status(&wh, fct, now_utc(), &Default::default())
        .await
        .expect("status");
    assert!(
        statuses
            .iter()
            .filter(|s| s.partition.name() != "2026-01-03")
            .all(|s| s.state == LoadState::Loaded)
    );
    // ...and can be found afterwards: flagged refused, with the refusal
    // that stands (QA: they read as plain loaded everywhere but `idem log`).
    let refused = |path: &std::path::Path| -> Vec<(String, i64, String)> {
        let out = common::stdout_ok(&common::idem(
            path,
            &["status", "--refused", "--format", "json"],
        ));
        let rows: Vec<serde_json::Value> = serde_json::from_str(&out).expect("json");
        rows.iter()
            .map(|r| {
                (
                    r["partition"].as_str().unwrap_or("").to_string(),
                    r["refused"]["attempt"].as_i64().unwrap_or(0),
                    r["refused"]["error"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let standing = refused(&path);
    assert_eq!(
        standing
            .iter()
            .map(|(p, attempt, _)| (p.as_str(), *attempt))
            .collect::<Vec<_>>(),
        [("2026-01-01", 2), ("2026-01-02", 2)],
        "{standing:?}"
    );
    assert!(
        standing[0]
            .2
            .starts_with("source looks incomplete: would replace 2,000 rows with 0")
    );
    let table = common::stdout_ok(&common::idem(&path, &["status"]));
    assert!(
        table.lines().any(|l| l.contains("2026-01-02")
            && l.contains(" refused ")
            && l.contains("attempt 2 refused")),
        "{table}"
    );
    let health = common::stdout_ok(&common::idem(&path, &["jobs"]));
    assert!(
        health.contains("⊖2 refused by the shrink guard"),
        "{health}"
    );

    // The operator says the source really shrank.
    let mut allowed = plan(&wh, fct, "2026-01-01", "2026-01-02").await;
    allowed.allow_shrink = true;
    let (summary, _) = run(&wh, &allowed).await;
    assert_eq!(summary.failed, 0);
    assert_eq!(scalar(&wh, "SELECT COUNT(*) FROM fct").await, 100);
    // A success since: no refusal stands, which is said.
    assert_eq!(refused(&path), Vec::new());
    let none = common::idem(&path, &["status", "--refused"]);
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("idem: no partition matches"),
        "{none:?}"
    );
}

// A job that writes a NULL partition value: the row lies in no window, so
// the window check (the window's count after the INSERT) refuses the load
// and the partition keeps what it had.
async fn a_null_partition_value_fails_the_window_check(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select id, case when id = 2 then null else dt end as dt \
                  from src where dt >= :start and dt < :end";
    let (_, config) = db.config(&common::replace_job("fct", "fct", "2026-01-03", select));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE)",
        "INSERT INTO src (id, dt) VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-03')",
        "INSERT INTO fct (id, dt) VALUES (20, '2026-01-02')",
    ])
    .await
    .expect("setup");
    let (summary, events) = run(
        &wh,
        &plan(&wh, job(&config, "fct"), "2026-01-01", "2026-01-03").await,
    )
    .await;
    let errors = errors(&events);
    assert_eq!((summary.succeeded, summary.failed), (2, 1), "{errors:?}");
    assert!(
        errors[0].contains("job wrote 1 row outside its partition 2026-01-02")
            && errors[0].contains("a NULL dt lies in none"),
        "{errors:?}"
    );
    assert_eq!(
        scalar(&wh, "SELECT COUNT(*) FROM fct WHERE dt IS NULL").await,
        0
    );
    assert_eq!(
        scalar(&wh, "SELECT COUNT(*) FROM fct WHERE id = 20").await,
        1,
        "the refused day kept its row"
    );
}

// A row written into the window by something else while the load runs (a
// trigger here; in the world, a session outside idem): the window then
// holds more rows than the load inserted, so the load is refused and the
// partition keeps what it had. (MariaDB forbids a trigger writing the table
// that fired it; there the load's statements return its own rows and
// nothing reads the window after them.)
async fn a_row_written_into_the_window_during_the_load_refuses_it(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (_, config) = db.config(&common::replace_job("fct", "fct", "2026-01-01", select));
    let wh = db.warehouse(&config).await;
    let mut script = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE)",
        "INSERT INTO src (id, dt) VALUES (1, '2026-01-01'), (2, '2026-01-01')",
        "INSERT INTO fct (id, dt) VALUES (20, '2026-01-01')",
    ];
    match kind {
        Kind::Sqlite => script.push(
            "CREATE TRIGGER sneak AFTER INSERT ON fct WHEN NEW.id = 1 \
             BEGIN INSERT INTO fct (id, dt) VALUES (99, NEW.dt); END",
        ),
        Kind::Postgres => script.extend([
            "CREATE FUNCTION sneak() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN INSERT INTO fct (id, dt) VALUES (99, NEW.dt); RETURN NULL; END $$",
            "CREATE TRIGGER sneak AFTER INSERT ON fct FOR EACH ROW WHEN (NEW.id = 1) \
             EXECUTE FUNCTION sneak()",
        ]),
        Kind::MySql => unreachable!("MariaDB triggers cannot write the table that fired them"),
    }
    wh.execute_script(&script).await.expect("setup");
    let (summary, events) = run(
        &wh,
        &plan(&wh, job(&config, "fct"), "2026-01-01", "2026-01-01").await,
    )
    .await;
    let errors = errors(&events);
    assert_eq!((summary.succeeded, summary.failed), (0, 1), "{errors:?}");
    assert!(
        errors[0].contains(
            "partition 2026-01-01 holds 1 row more than the load inserted: something else wrote into it"
        ),
        "{errors:?}"
    );
    assert_eq!(
        scalar(&wh, "SELECT COUNT(*) FROM fct").await,
        1,
        "the partition kept its one row"
    );
    assert_eq!(
        scalar(&wh, "SELECT COUNT(*) FROM fct WHERE id = 20").await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_written_into_the_window_during_the_load_refuses_it_sqlite() {
    a_row_written_into_the_window_during_the_load_refuses_it(Kind::Sqlite).await;
}

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_written_into_the_window_during_the_load_refuses_it_postgres() {
    a_row_written_into_the_window_during_the_load_refuses_it(Kind::Postgres).await;
}

/// idem's ledger altered by hand (a column dropped): every command says
/// the ledger is not as idem made it and what to do, not the server's bare
/// "column l.reason does not exist".
async fn a_ledger_altered_by_hand_is_said_as_such(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let job = common::replace_job(
        "fct",
        "fct",
        "2026-01-01",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    let (path, config) = db.config(&job);
    let wh = db.warehouse(&config).await;
    let ledger = match kind {
        Kind::Postgres => "idem.attempts",
        _ => "idem_attempts",
    };
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        &format!("ALTER TABLE {ledger} DROP COLUMN reason"),
    ])
    .await
    .unwrap();
    wh.close().await;
    for args in [
        &["status", "fct"][..],
        &["run", "fct", "-y"][..],
        &["log", "fct"][..],
    ] {
        let out = common::idem(&path, args);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{kind:?} {args:?}: {said}");
        assert!(
            said.contains(&format!("idem's ledger {ledger} is not as idem made it"))
                && said.contains("reason"),
            "{kind:?} {args:?}: {said}"
        );
    }
}

on_every_engine!(
    a_ledger_altered_by_hand_is_said_as_such,
    a_null_partition_value_fails_the_window_check,
    two_grains_on_one_target_never_duplicate,
    month_partitions_load_under_their_locks,
    null_merge_key_fails_the_window_before_writing,
    open_and_out_of_range_windows_are_refused,
    late_source_does_not_wipe_a_loaded_partition,
);

// 7. SQLite rolls a transaction back by itself on a full disk; the driver
// still counts it open. The connection must not serve the next partition.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_self_rollback_does_not_poison_later_partitions() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (_, config) = db.config(&common::replace_job("fct", "fct", "2026-01-10", select));
    let wh = db.warehouse(&config).await;
    id_and_day_tables(
        &wh,
        "fct",
        &[
            &one_row_a_day(10),
            // What SQLITE_FULL does: the statement fails and SQLite rolls the
            // whole transaction back on its own.
            "CREATE TRIGGER disk_full BEFORE INSERT ON fct WHEN NEW.dt = '2026-01-03' \
             BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full'); END",
        ],
    )
    .await;
    let fct = job(&config, "fct");
    let (summary, events) = run(&wh, &plan(&wh, fct, "2026-01-01", "2026-01-10").await).await;
    let errors = errors(&events);
    assert_eq!(summary.failed, 1, "only the full day fails: {errors:?}");
    assert!(errors[0].contains("database or disk is full"), "{errors:?}");
    assert_eq!(summary.succeeded, 9);
    assert_eq!(scalar(&wh, "SELECT COUNT(*) FROM fct").await, 9);
}

// 8. MariaDB's partition locks are session locks, and a load's connection
// goes back to the pool for the next partition: it must not take the lock
// with it, whether its load committed or failed.

#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_pooled_connection_holds_no_partition_lock_after_its_load() {
    let db = TestDb::new(Kind::MySql).await.expect("mysql");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (_, config) = db.config(&common::replace_job("fct", "fct", "2026-01-06", select));
    let wh = db.warehouse(&config).await;
    id_and_day_tables(&wh, "fct", &[&one_row_a_day(6)]).await;
    let fct = job(&config, "fct");
    let days: Vec<Partition> = (1..=6).map(|d| day(&format!("2026-01-{d:02}"))).collect();
    let held = |wh: Warehouse| {
        let days = days.clone();
        async move {
            wh.partitions_locked_elsewhere(fct, &days)
                .await
                .expect("locks")
        }
    };
    let (summary, _) = run(&wh, &plan(&wh, fct, "2026-01-01", "2026-01-06").await).await;
    assert_eq!(summary.succeeded, 6);
    assert!(
        held(wh.clone()).await.is_empty(),
        "a committed load kept its lock"
    );
    // Day 3's source is gone: its load fails inside the transaction (the
    // shrink guard), after taking the lock.
    wh.execute_script(&["DELETE FROM src WHERE dt = '2026-01-03'"])
        .await
        .expect("late source");
    let (summary, _) = run(&wh, &plan(&wh, fct, "2026-01-01", "2026-01-06").await).await;
    assert_eq!((summary.succeeded, summary.failed), (5, 1));
    assert!(
        held(wh.clone()).await.is_empty(),
        "a failed load kept its lock"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writes_one_partition_at_a_time() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (_, config) = db.config(&common::replace_job("fct", "fct", "2026-01-10", select));
    let wh = db.warehouse(&config).await;
    id_and_day_tables(&wh, "fct", &[]).await;
    let mut backfill = plan(&wh, job(&config, "fct"), "2026-01-01", "2026-01-10").await;
    backfill.concurrency = 4;
    let (summary, events) = run(&wh, &backfill).await;
    assert_eq!(summary.succeeded, 10);
    let Some(Event::RunStarted { concurrency, .. }) = events.first() else {
        panic!("no RunStarted: {events:?}");
    };
    assert_eq!(*concurrency, 1, "SQLite has one writer");
    // Never two partitions in flight: each starts after the last one ended.
    let mut in_flight = 0;
    for e in &events {
        match e {
            Event::PartitionStarted { .. } => {
                in_flight += 1;
                assert_eq!(in_flight, 1, "two SQLite partitions in flight");
            }
            Event::PartitionSucceeded { .. } | Event::PartitionFailed { .. } => in_flight -= 1,
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_sqlite_warehouse_says_so() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    // An empty database file that cannot be written (as root, file modes do
    // not stop writes; SQLite's read-only mode does the same thing).
    let path = db.path().join("warehouse.db");
    std::fs::write(&path, b"").expect("create file");
    let url = format!("sqlite://{}?mode=ro", path.display());
    let config = idem::config::WarehouseConfig {
        url,
        statement_timeout: None,
        lock_timeout: std::time::Duration::from_secs(1),
        connect_timeout: std::time::Duration::from_secs(5),
    };
    let error = match Warehouse::connect(&config, 1).await {
        Ok(_) => panic!("a read-only warehouse connected for writing"),
        Err(e) => e.to_string(),
    };
    assert!(
        error.contains("is read-only") && error.contains("writable"),
        "{error}"
    );
}

// 5. A warehouse that goes away mid-run and stays away: idem stops starting
// partitions within the connect timeout, says nothing changed, and prints a
// command that selects what is left.

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warehouse_that_stays_down_stops_the_run_within_seconds() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    const DAYS: u32 = 20;
    const ROWS: u32 = 50;
    // Each partition takes a moment, so that the warehouse dies mid-run.
    let select = "select src.id, src.dt from src cross join (select pg_sleep(0.25)) pause \
                  where src.dt >= :start and src.dt < :end";
    let (_, config) = db.config(&common::replace_job("fct", "fct", "2026-01-20", select));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        &format!(
            "INSERT INTO src SELECT i, date '2026-01-01' + (i / {ROWS}) FROM generate_series(0, {}) i",
            DAYS * ROWS - 1
        ),
    ])
    .await
    .expect("setup");

    let (proxy, proxied) = Proxy::before(&db.url).await;
    let config_text = |url: &str| {
        format!(
            "[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"2s\"\n\n[defaults]\nconcurrency = 2\nretries = 2\n\n{}",
            common::replace_job("fct", "fct", "2026-01-20", select)
        )
    };
    let path = db.path().join("outage.toml");
    std::fs::write(&path, config_text(&proxied)).expect("config");
    let child = crate::common::idem_command()
        .args(["--config", path.to_str().expect("path"), "run", "fct"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => panic!("idem: {e}"),
    };
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let cut_at = std::time::Instant::now();
    proxy.cut();
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("join")
        .expect("idem ran");
    let stopped_after = cut_at.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stopped_after < std::time::Duration::from_secs(15),
        "took {stopped_after:?} after the warehouse went away: {stderr}"
    );
    assert!(
        stderr.contains("the warehouse cannot be reached")
            && stderr.contains("left exactly as they were"),
        "{stderr}"
    );
    // Every day is whole or untouched.
    let rows = sqlx::query("SELECT CAST(COUNT(*) AS BIGINT) FROM fct GROUP BY dt")
        .fetch_all(wh.pool())
        .await
        .expect("counts");
    for r in &rows {
        assert_eq!(r.try_get::<i64, _>(0).expect("count"), i64::from(ROWS));
    }
    assert!((rows.len() as u32) < DAYS, "the run was cut short");

    // The printed command, run as it stands (it names the config) from
    // another directory once the warehouse is back, finishes the job.
    let repeat = stderr
        .lines()
        .find_map(|l| l.strip_prefix("idem: to finish, repeat: idem "))
        .unwrap_or_else(|| panic!("no command to repeat: {stderr}"));
    assert!(
        repeat.starts_with(&format!("--config {} run ", path.display())),
        "{repeat}"
    );
    std::fs::write(&path, config_text(&db.url)).expect("config");
    let args: Vec<&str> = repeat.split_whitespace().collect();
    let again = crate::common::idem_command()
        .args(&args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("repeat ran");
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(
        scalar(&wh, "SELECT CAST(COUNT(*) AS BIGINT) FROM fct").await,
        i64::from(DAYS * ROWS)
    );
}

/// A warehouse that goes away as a load's COMMIT is sent, and stays away:
/// whether the COMMIT took cannot be learnt, and the run says so within
/// a few connect timeouts, not after the 30 s a server that answers is
/// given to decide it (QA: the test above took 30 s when its cut landed
/// on a COMMIT).
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warehouse_gone_with_a_commits_reply_stops_the_run_within_seconds() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (_, config) = db.config(&common::replace_job("fct", "fct", "2026-01-01", select));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01')",
    ])
    .await
    .expect("setup");
    let (proxy, proxied) = Proxy::before(&db.url).await;
    let path = db.path().join("commit_lost.toml");
    std::fs::write(
        &path,
        format!(
            "[warehouse]\nurl = \"{proxied}\"\nconnect_timeout = \"2s\"\n\n{}",
            common::replace_job("fct", "fct", "2026-01-01", select)
        ),
    )
    .expect("config");
    proxy.lose_the_next_commit_reply();
    let mut child = crate::common::idem_command()
        .args(["--config", path.to_str().expect("path"), "run", "fct"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("idem");
    let waited = std::time::Instant::now();
    while !proxy.lost_the_commit_reply() {
        assert!(
            waited.elapsed() < std::time::Duration::from_secs(30),
            "the load's COMMIT never came"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    proxy.cut();
    let cut_at = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("idem") {
            break status;
        }
        if cut_at.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("idem still waits on a warehouse gone 60 s ago");
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let stopped_after = cut_at.elapsed();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr)
        .expect("stderr");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("its COMMIT was under way"), "{stderr}");
    assert!(
        stopped_after < std::time::Duration::from_secs(15),
        "took {stopped_after:?} after the warehouse went away: {stderr}"
    );
    // It did take: the server had the COMMIT.
    assert_eq!(
        scalar(&wh, "SELECT CAST(COUNT(*) AS BIGINT) FROM fct").await,
        1
    );
}

// 6. A lock held on the target (an ALTER TABLE, a LOCK TABLE): reading the
// states waits at most lock_timeout, says what it waits on, and fails with
// the reason instead of hanging.

async fn a_locked_target_bounds_status_and_run(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (path, config) = db.config_with(
        "lock_timeout = \"3s\"",
        &common::replace_job("fct", "fct", "2026-01-05", select),
    );
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .expect("setup");
    let mut holder = wh.pool().acquire().await.expect("connection");
    let lock = match kind {
        Kind::Postgres => vec!["BEGIN", "LOCK TABLE fct IN ACCESS EXCLUSIVE MODE"],
        _ => vec!["LOCK TABLES fct WRITE"],
    };
    for stmt in lock {
        sqlx::query(stmt)
            .execute(&mut *holder)
            .await
            .expect("take the lock");
    }
    // PostgreSQL names the session holding the table; MariaDB does not
    // say who holds a metadata lock.
    let said_held = match kind {
        Kind::Postgres => "the lock on fct is held by session",
        _ => "another session held a lock",
    };
    for command in [vec!["status", "fct"], vec!["run", "fct", "--dry-run"]] {
        let started = std::time::Instant::now();
        let mut args = vec!["--config", path.to_str().expect("path")];
        args.extend(&command);
        let output = tokio::task::spawn_blocking({
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            move || crate::common::idem_command().args(&args).output()
        })
        .await
        .expect("join")
        .expect("idem ran");
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{command:?}: {stderr}");
        assert!(
            took < std::time::Duration::from_secs(20),
            "{command:?} took {took:?}"
        );
        assert!(
            stderr.contains("still reading fct from fct") && stderr.contains("lock_timeout"),
            "{command:?} did not say what it waits on: {stderr}"
        );
        assert!(stderr.contains(said_held), "{command:?}: {stderr}");
    }
    // The console's read says the same while it waits, then gives up.
    let said = std::sync::Mutex::new(Vec::new());
    let lineage = idem::lineage::Lineage::of(&config).expect("lineage");
    let seen = idem::tui::Seen::default();
    idem::tui::read_states(&wh, &config, &lineage, &config.jobs, None, &seen, |m| {
        said.lock().expect("lock").push(m)
    })
    .await;
    match said.into_inner().expect("lock").as_slice() {
        [
            idem::tui::Msg::SlowRead { job, note },
            idem::tui::Msg::Status {
                result: Err(error), ..
            },
        ] => {
            assert_eq!(job, "fct");
            assert!(
                note.contains("still reading fct from fct") && note.contains("lock_timeout = 3s"),
                "{note}"
            );
            assert!(error.why.contains(said_held), "{error:?}");
            // One table held is this job's trouble: the title bar does
            // not say the warehouse is down.
            assert!(!error.whole_warehouse, "{error:?}");
        }
        other => panic!("the console was not told what the read waits on: {other:?}"),
    }
    let release = match kind {
        Kind::Postgres => "ROLLBACK",
        _ => "UNLOCK TABLES",
    };
    sqlx::query(release)
        .execute(&mut *holder)
        .await
        .expect("release");
    drop(holder);
    let output = crate::common::idem_command()
        .args(["--config", path.to_str().expect("path"), "status", "fct"])
        .output()
        .expect("idem ran");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_target_bounds_status_and_run_postgres() {
    a_locked_target_bounds_status_and_run(Kind::Postgres).await;
}

#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_target_bounds_status_and_run_mysql() {
    a_locked_target_bounds_status_and_run(Kind::MySql).await;
}

mod locked_source {
    use super::*;

    /// The source is being reloaded under a lock (`LOCK TABLE` in the
    /// upstream's transaction, an `ALTER`) while idem runs: describing the job's
    /// SELECT waits on it no longer than `lock_timeout`, as every other
    /// statement does, and the partition fails naming the lock instead of the
    /// run hanging without a word. Once the lock is gone, a re-run loads.
    async fn a_locked_source_bounds_a_run(kind: Kind) {
        let Some(db) = TestDb::new(kind).await else {
            return;
        };
        let select = "select id, dt from src where dt >= :start and dt < :end";
        let (path, config) = db.config_with(
            "lock_timeout = \"1s\"",
            &common::replace_job("fct", "fct", "2026-01-01", select),
        );
        let wh = db.warehouse(&config).await;
        wh.execute_script(&[
            "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
            "INSERT INTO src VALUES (1, '2026-01-01')",
            "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        ])
        .await
        .expect("setup");
        let mut holder = wh.pool().acquire().await.expect("connection");
        let (lock, release) = match kind {
            Kind::Postgres => (
                vec!["BEGIN", "LOCK TABLE src IN ACCESS EXCLUSIVE MODE"],
                "ROLLBACK",
            ),
            _ => (vec!["LOCK TABLES src WRITE"], "UNLOCK TABLES"),
        };
        for stmt in lock {
            sqlx::query(stmt)
                .execute(&mut *holder)
                .await
                .expect("take the lock");
        }
        let run = || {
            let path = path.clone();
            tokio::task::spawn_blocking(move || {
                let started = std::time::Instant::now();
                // Bounded here too: without the bound, a describe waited forever.
                let out = std::process::Command::new("timeout")
                    .arg("30")
                    .arg(env!("CARGO_BIN_EXE_idem"))
                    .args(["--config", path.to_str().expect("path"), "run", "fct"])
                    .env(
                        crate::common::UNICODE_GLYPHS.0,
                        crate::common::UNICODE_GLYPHS.1,
                    )
                    .output()
                    .expect("idem ran");
                (out, started.elapsed())
            })
        };
        let (out, took) = run().await.expect("join");
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{kind:?}: {said}");
        assert!(
            took < std::time::Duration::from_secs(15),
            "{kind:?}: a run on a locked source took {took:?}: {said}"
        );
        assert!(
            said.contains("another session held a lock"),
            "{kind:?}: {said}"
        );
        sqlx::query(release)
            .execute(&mut *holder)
            .await
            .expect("release");
        drop(holder);
        let (out, _) = run().await.expect("join");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{kind:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        wh.close().await;
    }

    on_server_engines!(a_locked_source_bounds_a_run);
}

/// A SQLite file this user may not write (its folder writable): `status`
/// and a dry run read it, and a run is refused before it starts, naming
/// the file, instead of failing every partition. Run as another user
/// (`nobody`), since file modes do not stop root.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_this_user_may_not_write_refuses_a_run_up_front() {
    use std::os::unix::fs::PermissionsExt;
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let job = common::replace_job(
        "fct",
        "fct",
        "2026-01-02",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    let (path, config) = db.config(&job);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .unwrap();
    wh.close().await;
    let file = db.path().join("warehouse.db");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(db.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let as_nobody = |args: &[&str]| {
        std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_idem"))
            .arg("--config")
            .arg(&path)
            .args(args)
            .env("XDG_STATE_HOME", db.path())
            .env(
                crate::common::UNICODE_GLYPHS.0,
                crate::common::UNICODE_GLYPHS.1,
            )
            .output()
            .expect("setpriv ran")
    };
    let probe = as_nobody(&["--version"]);
    if !probe.status.success() {
        // Not root: this user cannot become another, and file modes
        // stop this one already.
        eprintln!(
            "skipped: cannot run as another user ({})",
            String::from_utf8_lossy(&probe.stderr)
        );
        return;
    }
    let status = as_nobody(&["status", "fct"]);
    assert!(status.status.success(), "{status:?}");
    let out = as_nobody(&["run", "fct", "-y"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("is read-only for idem: this user may not write"),
        "{said}"
    );
    assert!(
        !said.contains("attempt to write a readonly database"),
        "{said}"
    );
}

/// The check the console makes before a run, that the warehouse answers,
/// opens a connection of its own: a server that refuses it itself (here the
/// role's connection limit, reached by the pool's busy session) is there,
/// and the run may use the pool; an address nothing answers is not.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reach_tells_a_server_that_refuses_from_one_that_is_gone() {
    use sqlx::{Connection, Executor};
    let db = TestDb::new(Kind::Postgres).await.expect("test database");
    let database = db.url.rsplit('/').next().expect("database").to_string();
    let role = format!("idem_limited_{}", std::process::id());
    let mut admin = sqlx::PgConnection::connect(&db.url).await.expect("admin");
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "CREATE ROLE {role} LOGIN; GRANT ALL ON DATABASE {database} TO {role}"
        )))
        .await
        .expect("role");
    let limited = db.url.replacen("://postgres@", &format!("://{role}@"), 1);
    let parse = |url: &str| {
        let text = format!("[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"2s\"\n");
        idem::config::parse(&db.path().join("idem.toml"), &text, &|_| None).expect("config")
    };
    let wh = Warehouse::connect(&parse(&limited).warehouse, 2)
        .await
        .expect("connect");
    let busy = wh.pool().acquire().await.expect("a session of the pool");
    // The role may open no session beside those it has.
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "ALTER ROLE {role} CONNECTION LIMIT 1"
        )))
        .await
        .expect("limit");
    let another = sqlx::PgConnection::connect(&limited).await;
    let refused_by_server = wh.reach().await;
    drop(busy);
    wh.close().await;

    let (proxy, through) = Proxy::before(&db.url).await;
    let gone = Warehouse::connect(&parse(&through).warehouse, 2)
        .await
        .expect("connect");
    proxy.cut();
    let unreachable = gone.reach().await;
    gone.close().await;
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "DROP OWNED BY {role}; DROP ROLE {role}"
        )))
        .await
        .expect("drop role");

    let code = match another {
        Err(sqlx::Error::Database(e)) => e.code().map(|c| c.to_string()),
        other => panic!("the role's limit did not refuse: {other:?}"),
    };
    assert_eq!(code.as_deref(), Some("53300"), "too many connections");
    assert!(refused_by_server.is_ok(), "{refused_by_server:?}");
    match unreachable {
        Err(e) => assert!(e.is_unreachable(), "{e}"),
        Ok(()) => panic!("a cut proxy answered"),
    }
}
