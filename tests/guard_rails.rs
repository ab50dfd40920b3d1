//! Guard rails beyond running SQL: stale partitions after a definition
//! change (and what changed), the merge-order warning, and merge windows
//! whose rows later windows moved out read loaded, not vanished.

mod common;

use common::{Kind, TestDb};
use idem::config::{Config, Job};
use idem::engine::{self, Backfill, Selection};
use idem::partition::{Grain, Partition, RangeEnd};
use idem::state::{self, LoadState};
use idem::warehouse::Warehouse;
use sqlx::Row;

const SELECT: &str = "select id, amount, dt from src where dt >= :start and dt < :end";

async fn setup(kind: Kind) -> Option<(TestDb, Config, Warehouse)> {
    setup_with_path(kind)
        .await
        .map(|(db, _, config, wh)| (db, config, wh))
}

/// [`setup`], with the path of its config file for the real binary.
async fn setup_with_path(kind: Kind) -> Option<(TestDb, std::path::PathBuf, Config, Warehouse)> {
    let db = TestDb::new(kind).await?;
    let jobs = [
        common::merge_job("dim", "dim", "2026-01-05", SELECT),
        common::replace_job("fct", "fct", "2026-01-05", SELECT),
    ]
    .concat();
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    // Customer 1 changes every day; customer 2 only on the first.
    let mut values = vec!["(2, 200, '2026-01-01')".to_string()];
    for d in 1..=5 {
        values.push(format!("(1, {}, '2026-01-0{d}')", d * 10));
    }
    let fill = format!(
        "INSERT INTO src (id, amount, dt) VALUES {}",
        values.join(", ")
    );
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        &fill,
    ])
    .await
    .unwrap();
    Some((db, path, config, wh))
}

fn job<'a>(config: &'a Config, name: &str) -> &'a Job {
    config.jobs.iter().find(|j| j.name == name).unwrap()
}

fn day(d: &str) -> Partition {
    Partition::parse(Grain::Day, d, RangeEnd::From).unwrap()
}

async fn run(wh: &Warehouse, backfill: &Backfill) {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let summary = engine::run(wh, backfill, &tx, &Default::default()).await;
    assert_eq!(summary.failed, 0);
}

async fn amount_of(wh: &Warehouse, id: i64) -> i64 {
    let mut sql = wh.sql();
    sql.push("SELECT amount FROM dim WHERE id = ").bind(id);
    sql.query()
        .fetch_one(wh.pool())
        .await
        .unwrap()
        .try_get(0)
        .unwrap()
}

async fn old_merge_window_alone_warns_and_extending_restores(kind: Kind) {
    let Some((_db, config, wh)) = setup(kind).await else {
        return;
    };
    let dim = job(&config, "dim");
    let all = Backfill::plan(&wh, dim, &Selection::default(), 4, 0)
        .await
        .unwrap();
    assert!(all.merge_order_risk(&wh).await.unwrap().is_none());
    run(&wh, &all).await;
    assert_eq!(amount_of(&wh, 1).await, 50, "the newest window wins");

    let second_day = Selection {
        from: Some(day("2026-01-02")),
        to: Some(day("2026-01-02")),
        ..Selection::default()
    };
    let alone = Backfill::plan(&wh, dim, &second_day, 4, 0).await.unwrap();
    let risk = alone
        .merge_order_risk(&wh)
        .await
        .unwrap()
        .expect("a warning");
    assert_eq!(risk.later_loaded.len(), 3);
    assert!(
        risk.warning().contains("extend the run through 2026-01-05"),
        "{}",
        risk.warning()
    );
    // What the warning is about: run alone, the old value comes back.
    run(&wh, &alone).await;
    assert_eq!(amount_of(&wh, 1).await, 20);

    let mut extended = Backfill::plan(&wh, dim, &second_day, 4, 0).await.unwrap();
    extended.extend_through_latest(&risk);
    let names: Vec<String> = extended.partitions.iter().map(Partition::name).collect();
    assert_eq!(
        names,
        ["2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05"]
    );
    assert!(extended.merge_order_risk(&wh).await.unwrap().is_none());
    run(&wh, &extended).await;
    assert_eq!(
        amount_of(&wh, 1).await,
        50,
        "extending restores the newest values"
    );
    assert_eq!(amount_of(&wh, 2).await, 200);
}

/// A merge plan with a gap (`--only stale` picking the 2nd and the 5th)
/// leaves out a loaded window between its windows: merging the 2nd set a
/// key the 3rd had updated back to its older value, and the 5th, which
/// does not hold the key, never restored it. It was no order risk, as
/// only windows after the plan's last were looked at; a gap is one now,
/// and extending fills it.
async fn a_gap_in_a_merge_plan_is_an_order_risk_extending_fills(kind: Kind) {
    let Some((_db, config, wh)) = setup(kind).await else {
        return;
    };
    // Customer 3 is in the 2nd and the 3rd only.
    wh.execute_script(&[
        "INSERT INTO src (id, amount, dt) VALUES (3, 2, '2026-01-02'), (3, 3, '2026-01-03')",
    ])
    .await
    .unwrap();
    let dim = job(&config, "dim");
    let all = Backfill::plan(&wh, dim, &Selection::default(), 4, 0)
        .await
        .unwrap();
    run(&wh, &all).await;
    assert_eq!(amount_of(&wh, 3).await, 3, "the newest window wins");

    let mut gapped = Backfill::plan(&wh, dim, &Selection::default(), 4, 0)
        .await
        .unwrap();
    gapped
        .partitions
        .retain(|p| [day("2026-01-02"), day("2026-01-05")].contains(p));
    let risk = gapped
        .merge_order_risk(&wh)
        .await
        .unwrap()
        .expect("a gap is an order risk");
    let left_out: Vec<String> = risk.later_loaded.iter().map(Partition::name).collect();
    assert_eq!(left_out, ["2026-01-03", "2026-01-04"]);
    assert_eq!(risk.latest(), day("2026-01-05"));

    // What the risk is: run as planned, customer 3 goes back to the 2nd's.
    run(&wh, &gapped).await;
    assert_eq!(amount_of(&wh, 3).await, 2);

    gapped.extend_through_latest(&risk);
    let names: Vec<String> = gapped.partitions.iter().map(Partition::name).collect();
    assert_eq!(
        names,
        ["2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05"]
    );
    assert!(gapped.merge_order_risk(&wh).await.unwrap().is_none());
    run(&wh, &gapped).await;
    assert_eq!(amount_of(&wh, 3).await, 3, "extending restores it");
}

async fn changed_sql_turns_loaded_partitions_stale_until_rerun(kind: Kind) {
    let Some((_db, config, wh)) = setup(kind).await else {
        return;
    };
    let fct = job(&config, "fct").clone();
    let plan = Backfill::plan(&wh, &fct, &Selection::default(), 2, 0)
        .await
        .unwrap();
    run(&wh, &plan).await;
    let now = chrono::NaiveDate::from_ymd_opt(2026, 2, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    let states =
        |s: Vec<state::PartitionStatus>| s.into_iter().map(|s| s.state).collect::<Vec<_>>();
    let loaded = state::job_status(&wh, &fct, now, &Default::default())
        .await
        .unwrap();
    assert!(states(loaded).iter().all(|s| *s == LoadState::Loaded));

    let mut changed = fct.clone();
    changed.sql =
        "select id, amount * 2 as amount, dt from src where dt >= :start and dt < :end".into();
    let stale = state::job_status(&wh, &changed, now, &Default::default())
        .await
        .unwrap();
    assert!(states(stale.clone()).iter().all(|s| *s == LoadState::Stale));
    // What changed is on record: the definition the partitions were loaded under.
    let hash = &stale[0].last_success.as_ref().unwrap().definition_hash;
    let old = wh
        .definition(hash)
        .await
        .unwrap()
        .expect("definition recorded");
    assert!(old.contains("select id, amount, dt"));
    assert!(!changed.definition_text().contains("select id, amount, dt"));

    let only_stale = Selection {
        only: vec![LoadState::Stale],
        ..Selection::default()
    };
    let rerun = Backfill::plan(&wh, &changed, &only_stale, 2, 0)
        .await
        .unwrap();
    assert_eq!(rerun.partitions.len(), 5);
    run(&wh, &rerun).await;
    let after = state::job_status(&wh, &changed, now, &Default::default())
        .await
        .unwrap();
    assert!(states(after).iter().all(|s| *s == LoadState::Loaded));
}

async fn a_partition_in_flight_elsewhere_shows_running(kind: Kind) {
    let Some((_db, config, wh)) = setup(kind).await else {
        return;
    };
    let mut slow = job(&config, "fct").clone();
    let pause = match kind {
        Kind::Postgres => "(select pg_sleep(2)) pause",
        Kind::MySql => "(select sleep(2)) pause",
        // SQLite has no sleep, and no per-partition lock to see from outside:
        // its writers hold the whole database.
        Kind::Sqlite => "(select 1) pause",
    };
    slow.sql = format!("select id, amount, dt from src, {pause} where dt >= :start and dt < :end");
    let now = chrono::NaiveDate::from_ymd_opt(2026, 2, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    let first_day = Selection {
        from: Some(day("2026-01-01")),
        to: Some(day("2026-01-01")),
        ..Selection::default()
    };
    let plan = Backfill::plan(&wh, &slow, &first_day, 1, 0).await.unwrap();
    // Another process's view: a second pool on the same warehouse.
    let observer = Warehouse::connect(&config.warehouse, 1).await.unwrap();
    let runner = wh.clone();
    let run = tokio::spawn(async move {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        engine::run(&runner, &plan, &tx, &Default::default()).await
    });
    let mut seen = false;
    for _ in 0..30 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let statuses = state::job_status(&observer, &slow, now, &Default::default())
            .await
            .unwrap();
        if statuses[0].state == LoadState::Running {
            seen = true;
            break;
        }
        if run.is_finished() {
            break;
        }
    }
    let summary = run.await.unwrap();
    assert_eq!(summary.succeeded, 1);
    assert_eq!(
        seen,
        kind != Kind::Sqlite,
        "running elsewhere is visible where the engine has partition locks"
    );
    let after = state::job_status(&observer, &slow, now, &Default::default())
        .await
        .unwrap();
    assert_eq!(after[0].state, LoadState::Loaded);
}

async fn a_failed_merge_window_stops_the_later_ones(kind: Kind) {
    let Some((_db, config, wh)) = setup(kind).await else {
        return;
    };
    // Two rows for one key in the second window: a merge needs one per key.
    wh.execute_script(&["INSERT INTO src (id, amount, dt) VALUES (1, 99, '2026-01-02')"])
        .await
        .unwrap();
    let dim = job(&config, "dim");
    let plan = Backfill::plan(&wh, dim, &Selection::default(), 4, 0)
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let summary = engine::run(&wh, &plan, &tx, &Default::default()).await;
    drop(tx);
    assert_eq!(
        (summary.succeeded, summary.failed, summary.not_started),
        (1, 1, 3)
    );
    assert_eq!(summary.exit_code(), idem::exit::Exit::Failed);
    let mut error = String::new();
    while let Some(e) = rx.recv().await {
        if let engine::Event::PartitionFailed {
            partition,
            error: e,
            ..
        } = e
        {
            assert_eq!(partition, "2026-01-02");
            error = e;
        }
    }
    assert!(
        error.contains(
            "job emitted 1 value of unique_key (id) more than once in window 2026-01-02 (2 rows share id = 1)"
        ),
        "{error}"
    );
    // Nothing of the failed window landed: customer 1 still has day 1's value.
    assert_eq!(amount_of(&wh, 1).await, 10);
}

/// `idem run` of a merge job over older windows only: its plan (read from
/// the ledger, no row counts needed) still sees the windows loaded after
/// its range, warns, and `--through-latest` merges through them.
async fn a_narrowed_merge_run_warns_of_later_windows(kind: Kind) {
    let Some((_db, path, _config, wh)) = setup_with_path(kind).await else {
        return;
    };
    let idem = |args: &[&str]| {
        let out = common::idem(&path, args);
        let stdout = common::stdout_ok(&out);
        (stdout, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    idem(&["run", "dim"]);
    let (_, warned) = idem(&["run", "dim", "--from", "2026-01-02", "--to", "2026-01-03"]);
    assert!(
        warned.contains("2 later windows (2026-01-04…2026-01-05)")
            && warned.contains("--through-latest"),
        "{warned}"
    );
    // The older windows alone rolled customer 1 back to an older amount.
    assert_eq!(amount_of(&wh, 1).await, 30);
    let (events, _) = idem(&[
        "run",
        "dim",
        "--from",
        "2026-01-02",
        "--to",
        "2026-01-03",
        "--through-latest",
        "--json",
    ]);
    let succeeded = events
        .lines()
        .filter(|l| l.contains("\"partition_succeeded\""))
        .count();
    assert_eq!(succeeded, 4, "{events}");
    assert_eq!(amount_of(&wh, 1).await, 50);
}

/// A merge job counted by its partition column: a key loaded again by a
/// later window moves its row there, out of the older window. The older
/// window reads loaded (moved out, no drift), not vanished, so `--only
/// vanished` leaves it alone and the key keeps its newer value; rows
/// deleted behind idem's back, with no later load, still read drift and
/// vanished, and their re-run restores them.
async fn rows_later_windows_moved_out_are_no_vanished_window(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (ts, dt) = match kind {
        Kind::Sqlite => ("TEXT", "date(_loaded_at)"),
        Kind::Postgres => ("TIMESTAMP", "cast(_loaded_at as date)"),
        Kind::MySql => ("DATETIME", "cast(_loaded_at as date)"),
    };
    let job = format!(
        "[[jobs]]\nname = \"dim2\"\ntarget = \"dim2\"\nstrategy = \"merge_key\"\n\
         unique_key = [\"customer_id\"]\npartition_column = \"dt\"\ngrain = \"day\"\n\
         start = \"2026-11-01\"\nend = \"2026-11-05\"\nsql = \"\"\"\n\
         select customer_id, email, {dt} as dt from src2\n\
         where _loaded_at >= :start and _loaded_at < :end\n\"\"\"\n"
    );
    let (path, config) = db.config(&job);
    let wh = db.warehouse(&config).await;
    // Key 3 again on 11-04 (2 rows on 11-03 at its load), key 2 again on
    // 11-05 (11-02's only row).
    wh.execute_script(&[
        &format!("CREATE TABLE src2 (customer_id INT NOT NULL, email TEXT NOT NULL, _loaded_at {ts} NOT NULL)"),
        "CREATE TABLE dim2 (customer_id INT PRIMARY KEY, email TEXT NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src2 (customer_id, email, _loaded_at) VALUES \
         (1, 'a1', '2026-11-01 08:00:00'), (2, 'b1', '2026-11-02 08:00:00'), \
         (3, 'c1', '2026-11-03 08:00:00'), (4, 'd1', '2026-11-03 09:00:00'), \
         (3, 'c2', '2026-11-04 08:00:00'), (5, 'e1', '2026-11-05 08:00:00'), \
         (2, 'b2', '2026-11-05 09:00:00')",
    ])
    .await
    .unwrap();
    let idem = |args: &[&str]| common::stdout_ok(&common::idem(&path, args));
    let status = || -> Vec<(String, String, i64, i64, bool, bool)> {
        let rows: Vec<serde_json::Value> =
            serde_json::from_str(&idem(&["status", "dim2", "--format", "json"])).unwrap();
        rows.iter()
            .map(|r| {
                (
                    r["partition"].as_str().unwrap().to_string(),
                    r["state"].as_str().unwrap().to_string(),
                    r["rows_now"].as_i64().unwrap(),
                    r["rows_at_load"].as_i64().unwrap(),
                    r["moved_out"].as_bool().unwrap(),
                    r["drift"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    let vanished_plan = || -> Vec<String> {
        let plan = idem(&["run", "dim2", "--only", "vanished", "--dry-run", "--json"]);
        let plan: serde_json::Value = serde_json::from_str(plan.trim()).unwrap();
        plan["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["partition"].as_str().unwrap().to_string())
            .collect()
    };
    let email = |id: i64| {
        let wh = wh.clone();
        async move {
            let mut sql = wh.sql();
            sql.push("SELECT email FROM dim2 WHERE customer_id = ")
                .bind(id);
            let email: String = sql.query().fetch_one(wh.pool()).await.unwrap().get(0);
            email
        }
    };
    let row = |p: &str, st: &str, now: i64, at_load: i64, moved: bool, drift: bool| {
        (p.to_string(), st.to_string(), now, at_load, moved, drift)
    };

    idem(&["run", "dim2"]);
    assert_eq!(
        status(),
        [
            row("2026-11-01", "loaded", 1, 1, false, false),
            row("2026-11-02", "loaded", 0, 1, true, false),
            row("2026-11-03", "loaded", 1, 2, true, false),
            row("2026-11-04", "loaded", 1, 1, false, false),
            row("2026-11-05", "loaded", 2, 2, false, false),
        ],
        "{kind:?}"
    );
    let table = idem(&["status", "dim2"]);
    assert!(!table.contains("vanished"), "{kind:?}: {table}");
    assert!(
        table.contains(
            "1 row moved out by later windows' loads (newer values of its keys, not a deletion)"
        ),
        "{kind:?}: {table}"
    );
    let jobs = idem(&["jobs"]);
    assert!(
        jobs.contains("■5 loaded") && !jobs.contains("vanished"),
        "{kind:?}: {jobs}"
    );
    assert_eq!(vanished_plan(), Vec::<String>::new(), "{kind:?}");
    idem(&["run", "dim2", "--only", "vanished"]);
    assert_eq!(
        (email(2).await, email(3).await),
        ("b2".to_string(), "c2".to_string()),
        "{kind:?}: the keys keep their newer values"
    );

    // Rows deleted behind idem's back from the latest window: no load
    // since explains them. One of two is drift; both, vanished.
    wh.execute_script(&["DELETE FROM dim2 WHERE customer_id = 5"])
        .await
        .unwrap();
    assert_eq!(
        status()[4],
        row("2026-11-05", "loaded", 1, 2, false, true),
        "{kind:?}"
    );
    wh.execute_script(&["DELETE FROM dim2 WHERE customer_id = 2"])
        .await
        .unwrap();
    assert_eq!(
        status()[4],
        row("2026-11-05", "vanished", 0, 2, false, true),
        "{kind:?}"
    );
    assert_eq!(vanished_plan(), ["2026-11-05"], "{kind:?}");
    idem(&["run", "dim2", "--only", "vanished"]);
    let after = status();
    assert_eq!(
        after[4],
        row("2026-11-05", "loaded", 2, 2, false, false),
        "{kind:?}"
    );
    assert_eq!(
        after[1],
        row("2026-11-02", "loaded", 0, 1, true, false),
        "{kind:?}"
    );
    assert_eq!(
        (email(2).await, email(3).await),
        ("b2".to_string(), "c2".to_string()),
        "{kind:?}"
    );
    wh.close().await;
}

/// QA: a merge window's rows deleted behind idem's back read vanished even
/// when later windows were loaded after it, so long as those loads only
/// inserted: no later merge updated a key, so none moved its rows out.
async fn rows_deleted_after_insert_only_later_loads_read_vanished(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let job = "[[jobs]]\nname = \"dim3\"\ntarget = \"dim3\"\nstrategy = \"merge_key\"\n\
               unique_key = [\"k\"]\npartition_column = \"dt\"\ngrain = \"day\"\n\
               start = \"2026-01-01\"\nend = \"2026-01-03\"\n\
               sql = \"select k, v, dt from src3 where dt >= :start and dt < :end\"\n";
    let (path, config) = db.config(job);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src3 (k INT NOT NULL, v TEXT NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE dim3 (k INT PRIMARY KEY, v TEXT NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src3 VALUES (1, 'a', '2026-01-01'), (2, 'b', '2026-01-02'), (3, 'c', '2026-01-03')",
    ])
    .await
    .unwrap();
    common::stdout_ok(&common::idem(&path, &["run", "dim3"]));
    wh.execute_script(&["DELETE FROM dim3 WHERE k = 1"])
        .await
        .unwrap();
    let rows: Vec<serde_json::Value> = serde_json::from_str(&common::stdout_ok(&common::idem(
        &path,
        &["status", "dim3", "--format", "json"],
    )))
    .unwrap();
    assert_eq!(rows[0]["partition"], "2026-01-01", "{kind:?}");
    assert_eq!(
        (&rows[0]["state"], &rows[0]["moved_out"]),
        (&"vanished".into(), &false.into()),
        "{kind:?}: {rows:?}"
    );
    wh.close().await;
}

/// A replace target that a foreign key refers to `ON DELETE CASCADE`: each
/// load's DELETE of its window would delete the referring rows at every
/// re-run, so a run refuses it before writing and lint says so; a key that
/// restricts the DELETE is a warning (a re-run fails while rows refer).
async fn a_replace_target_a_cascading_key_refers_to_is_refused(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let job = common::replace_job(
        "orders",
        "orders",
        "2026-01-01",
        "select id, dt from orders_src where dt >= :start and dt < :end",
    );
    let (path, config) = db.config(&job);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE orders_src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO orders_src VALUES (1, '2026-01-01'), (2, '2026-01-01')",
        "CREATE TABLE orders (id INTEGER NOT NULL PRIMARY KEY, dt DATE NOT NULL)",
        "INSERT INTO orders VALUES (1, '2026-01-01'), (2, '2026-01-01')",
        "CREATE TABLE notes (note TEXT, order_id INTEGER REFERENCES orders (id) ON DELETE CASCADE)",
        "INSERT INTO notes VALUES ('call the customer', 1), ('refund', 2)",
    ])
    .await
    .unwrap();
    let count = |table: &'static str| {
        let wh = wh.clone();
        async move {
            let n: i64 =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                    .fetch_one(wh.pool())
                    .await
                    .unwrap();
            n
        }
    };

    let lint = common::idem(&path, &["lint"]);
    let said = String::from_utf8_lossy(&lint.stdout);
    assert_eq!(lint.status.code(), Some(1), "{kind:?}: {said}");
    assert!(said.contains("ON DELETE CASCADE"), "{kind:?}: {said}");
    let out = common::idem(&path, &["run", "orders", "-y"]);
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{kind:?}: {said}");
    assert!(
        said.contains("is referred to by foreign key") && said.contains("nothing was written"),
        "{kind:?}: {said}"
    );
    assert_eq!(count("notes").await, 2, "{kind:?}: the notes are kept");
    assert_eq!(count("orders").await, 2, "{kind:?}: the window is kept");

    // A key that restricts: the run is not refused, lint warns.
    wh.execute_script(&[
        "DROP TABLE notes",
        "CREATE TABLE notes (note TEXT, order_id INTEGER REFERENCES orders (id))",
    ])
    .await
    .unwrap();
    common::stdout_ok(&common::idem(&path, &["run", "orders", "-y"]));
    let lint = common::idem(&path, &["lint"]);
    let said = String::from_utf8_lossy(&lint.stdout);
    assert!(
        said.contains("fails while rows of") && said.contains("warning"),
        "{kind:?}: {said}"
    );
    wh.close().await;
}

/// A merge window it cannot take names a key to look for: of repeated
/// keys, the one the most rows share (and how many); of a key of several
/// columns with NULLs, which columns, and one such row by its key.
async fn a_failed_merge_names_a_key_value(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs = "[[jobs]]\nname = \"regional\"\ntarget = \"regional\"\nstrategy = \"merge_key\"\n\
        unique_key = [\"region\", \"id\"]\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\n\
        sql = \"select region, id, amount, dt from rsrc where dt >= :start and dt < :end\"\n";
    let (_, config) = db.config(jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE rsrc (region VARCHAR(10), id INTEGER, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE regional (region VARCHAR(10), id INTEGER, amount INTEGER NOT NULL, dt DATE NOT NULL, UNIQUE (region, id))",
        "INSERT INTO rsrc VALUES ('EU', 1, 1, '2026-01-01'), ('EU', 1, 2, '2026-01-01'), \
         ('EU', 1, 3, '2026-01-01'), ('O''Hare', 2, 4, '2026-01-01'), ('O''Hare', 2, 5, '2026-01-01'), \
         ('US', 3, 6, '2026-01-01'), \
         ('EU', NULL, 7, '2026-01-02'), (NULL, 5, 8, '2026-01-02'), (NULL, 5, 9, '2026-01-02'), \
         ('US', 4, 10, '2026-01-02')",
    ])
    .await
    .unwrap();
    let regional = job(&config, "regional");
    let error_of = |d: &'static str| {
        let wh = wh.clone();
        async move {
            let one_day = Selection {
                from: Some(day(d)),
                to: Some(day(d)),
                ..Selection::default()
            };
            let plan = Backfill::plan(&wh, regional, &one_day, 1, 0).await.unwrap();
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let summary = engine::run(&wh, &plan, &tx, &Default::default()).await;
            drop(tx);
            assert_eq!(summary.failed, 1, "{kind:?} {d}");
            let mut error = String::new();
            while let Some(e) = rx.recv().await {
                if let engine::Event::PartitionFailed { error: e, .. } = e {
                    error = e;
                }
            }
            error
        }
    };
    let error = error_of("2026-01-01").await;
    assert!(
        error.contains(
            "job emitted 2 values of unique_key (region, id) more than once in window 2026-01-01 \
             (the most: 3 rows share region = 'EU', id = 1); a merge needs one row per key"
        ),
        "{kind:?}: {error}"
    );
    let error = error_of("2026-01-02").await;
    let said = "job emitted 3 rows with a NULL unique_key (region, id) in window 2026-01-02 \
                (region is NULL in 2 rows, id is NULL in 1 row; one of them has ";
    assert!(
        ["region = NULL, id = 5);", "region = 'EU', id = NULL);"]
            .iter()
            .any(|row| error.contains(&format!("{said}{row}"))),
        "{kind:?}: {error}"
    );
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM regional")
        .fetch_one(wh.pool())
        .await
        .unwrap();
    assert_eq!(count, 0, "nothing written");
    wh.close().await;
}

/// A later merge window that merged no rows rolls no key back when older
/// windows merge alone: the warning counts, and the extension reaches, only
/// the later windows that loaded rows (QA: "27 later windows are already
/// loaded" of a month of mostly empty change windows).
async fn empty_later_merge_windows_are_no_order_risk(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config(&common::merge_job("dim", "dim", "2026-01-08", SELECT));
    let wh = db.warehouse(&config).await;
    // Rows on days 1, 2, 3 and 5; none on 4, 6, 7 and 8.
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src (id, amount, dt) VALUES (1, 10, '2026-01-01'), (1, 20, '2026-01-02'), \
         (1, 30, '2026-01-03'), (1, 50, '2026-01-05')",
    ])
    .await
    .unwrap();
    let dim = job(&config, "dim");
    let all = Backfill::plan(&wh, dim, &Selection::default(), 4, 0)
        .await
        .unwrap();
    run(&wh, &all).await;

    let first_day = Selection {
        from: Some(day("2026-01-01")),
        to: Some(day("2026-01-01")),
        ..Selection::default()
    };
    let alone = Backfill::plan(&wh, dim, &first_day, 4, 0).await.unwrap();
    let risk = alone
        .merge_order_risk(&wh)
        .await
        .unwrap()
        .expect("a warning");
    let later: Vec<String> = risk.later_loaded.iter().map(Partition::name).collect();
    assert_eq!(
        later,
        ["2026-01-02", "2026-01-03", "2026-01-05"],
        "{kind:?}"
    );
    assert!(
        risk.warning().starts_with(
            "3 later windows (2026-01-02…2026-01-05) are already loaded: merging older windows alone can roll their rows back to older values; extend the run through 2026-01-05"
        ),
        "{kind:?}: {}",
        risk.warning()
    );
    // After the latest window with rows, nothing is set back: a run of
    // the empty windows alone is no risk.
    let last_days = Selection {
        from: Some(day("2026-01-06")),
        to: Some(day("2026-01-07")),
        ..Selection::default()
    };
    let tail = Backfill::plan(&wh, dim, &last_days, 4, 0).await.unwrap();
    assert_eq!(tail.merge_order_risk(&wh).await.unwrap(), None, "{kind:?}");
    wh.close().await;
}

/// QA: a merge target without a unique index on its key. PostgreSQL's
/// MERGE needs none, and set every row of a key the target held twice to
/// the window's one row, logging "inserted -1, updated 2"; it now fails
/// that window naming the key (a target whose keys are each once still
/// loads). SQLite's ON CONFLICT, and MariaDB's ON DUPLICATE KEY, cannot
/// match by the key without one: the run says which index to add.
async fn a_merge_target_without_a_key_index(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs = "[[jobs]]\nname = \"keyless\"\ntarget = \"keyless\"\nstrategy = \"merge_key\"\n\
        unique_key = [\"k\"]\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-01\"\n\
        sql = \"select k, v from ksrc where dt >= :start and dt < :end\"\n";
    let (_, config) = db.config(jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE ksrc (k INTEGER NOT NULL, v VARCHAR(10) NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE keyless (k INTEGER NOT NULL, v VARCHAR(10) NOT NULL)",
        "INSERT INTO ksrc VALUES (1, 'new', '2026-01-01'), (2, 'two', '2026-01-01')",
        "INSERT INTO keyless VALUES (1, 'x'), (1, 'y')",
    ])
    .await
    .unwrap();
    let keyless = job(&config, "keyless");
    let load = || {
        let wh = wh.clone();
        async move {
            let plan = Backfill::plan(&wh, keyless, &Selection::default(), 1, 0)
                .await
                .unwrap();
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let summary = engine::run(&wh, &plan, &tx, &Default::default()).await;
            drop(tx);
            let mut error = String::new();
            while let Some(e) = rx.recv().await {
                if let engine::Event::PartitionFailed { error: e, .. } = e {
                    error = e;
                }
            }
            (summary.failed, error)
        }
    };
    let rows = || {
        let wh = wh.clone();
        async move {
            let rows: Vec<(i64, String)> = sqlx::query("SELECT k, v FROM keyless ORDER BY k, v")
                .fetch_all(wh.pool())
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get::<i64, _>(0), r.get::<String, _>(1)))
                .collect();
            rows
        }
    };
    let (failed, error) = load().await;
    assert_eq!(failed, 1, "{kind:?}");
    let said = match kind {
        Kind::Postgres => {
            "keyless holds 2 rows of k = 1 that window 2026-01-01 merges, and has no primary key or unique index on (k)"
        }
        Kind::Sqlite => {
            "no primary key or unique index of keyless is (k): INSERT … ON CONFLICT (k) needs one to match rows by; add one: create unique index on keyless (k)"
        }
        Kind::MySql => "no primary key or unique index of keyless is (k) alone",
    };
    assert!(error.contains(said), "{kind:?}: {error}");
    let before = vec![(1, "x".to_string()), (1, "y".to_string())];
    assert_eq!(rows().await, before, "{kind:?}: nothing written");
    if kind == Kind::Postgres {
        wh.execute_script(&["DELETE FROM keyless WHERE v = 'y'"])
            .await
            .unwrap();
        assert_eq!(load().await, (0, String::new()));
        assert_eq!(
            rows().await,
            [(1, "new".to_string()), (2, "two".to_string())]
        );
    }
    wh.close().await;
}

/// A re-run of a merge window whose rows did not change writes no row:
/// only those whose values differ are updated, so a target's update
/// trigger (an audit, an `updated_at`) fires for them alone. MariaDB's
/// `ON DUPLICATE KEY UPDATE` fired its update triggers on every row the
/// window matched, changed or not (a `BEFORE UPDATE` counter went up on
/// every re-run, and the run said "content changed").
async fn a_merge_rerun_fires_update_triggers_for_changed_rows_only(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs = "[[jobs]]\nname = \"audited\"\ntarget = \"audited\"\nstrategy = \"merge_key\"\n\
        unique_key = [\"k\"]\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-01\"\n\
        sql = \"select k, v from asrc where dt >= :start and dt < :end\"\n";
    let (_, config) = db.config(jobs);
    let wh = db.warehouse(&config).await;
    let mut script = vec![
        "CREATE TABLE asrc (k INTEGER NOT NULL, v VARCHAR(10), dt DATE NOT NULL)",
        "CREATE TABLE audited (k INTEGER NOT NULL PRIMARY KEY, v VARCHAR(10))",
        "CREATE TABLE audit (k INTEGER NOT NULL)",
        "INSERT INTO asrc VALUES (1, 'one', '2026-01-01'), (2, NULL, '2026-01-01'), (3, 'three', '2026-01-01')",
    ];
    script.extend(match kind {
        Kind::Postgres => vec![
            "CREATE FUNCTION audit_update() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN INSERT INTO audit VALUES (NEW.k); RETURN NEW; END $$",
            "CREATE TRIGGER audited_update BEFORE UPDATE ON audited \
             FOR EACH ROW EXECUTE FUNCTION audit_update()",
        ],
        Kind::MySql => vec![
            "CREATE TRIGGER audited_update BEFORE UPDATE ON audited \
             FOR EACH ROW INSERT INTO audit VALUES (NEW.k)",
        ],
        Kind::Sqlite => vec![
            "CREATE TRIGGER audited_update BEFORE UPDATE ON audited \
             BEGIN INSERT INTO audit VALUES (NEW.k); END",
        ],
    });
    wh.execute_script(&script).await.unwrap();
    let audited = job(&config, "audited");
    let load = || async {
        let plan = Backfill::plan(&wh, audited, &Selection::default(), 1, 0)
            .await
            .unwrap();
        let (summary, events) = common::run(&wh, &plan).await;
        assert_eq!(summary.failed, 0, "{kind:?}: {:?}", common::errors(&events));
        events
            .into_iter()
            .find_map(|e| match e {
                engine::Event::PartitionSucceeded {
                    rows_inserted,
                    rows_updated,
                    content_changed,
                    ..
                } => Some((rows_inserted, rows_updated, content_changed)),
                _ => None,
            })
            .expect("a loaded window")
    };
    let audit = || async {
        let keys: Vec<i64> = sqlx::query("SELECT k FROM audit ORDER BY k")
            .fetch_all(wh.pool())
            .await
            .unwrap()
            .iter()
            .map(|r| r.get::<i64, _>(0))
            .collect();
        keys
    };
    assert_eq!(load().await, (3, 0, true), "{kind:?}: the first load");
    assert_eq!(audit().await, Vec::<i64>::new(), "{kind:?}");
    assert_eq!(
        load().await,
        (0, 0, false),
        "{kind:?}: a re-run of the same rows"
    );
    assert_eq!(
        audit().await,
        Vec::<i64>::new(),
        "{kind:?}: nothing updated"
    );
    wh.execute_script(&["UPDATE asrc SET v = 'two' WHERE k = 2"])
        .await
        .unwrap();
    assert_eq!(load().await, (0, 1, true), "{kind:?}: one row changed");
    assert_eq!(audit().await, vec![2], "{kind:?}: that row alone updated");
    wh.close().await;
}

on_every_engine!(
    a_merge_rerun_fires_update_triggers_for_changed_rows_only,
    a_merge_target_without_a_key_index,
    empty_later_merge_windows_are_no_order_risk,
    a_failed_merge_names_a_key_value,
    a_replace_target_a_cascading_key_refers_to_is_refused,
    a_failed_merge_window_stops_the_later_ones,
    a_narrowed_merge_run_warns_of_later_windows,
    a_partition_in_flight_elsewhere_shows_running,
    old_merge_window_alone_warns_and_extending_restores,
    a_gap_in_a_merge_plan_is_an_order_risk_extending_fills,
    rows_later_windows_moved_out_are_no_vanished_window,
    rows_deleted_after_insert_only_later_loads_read_vanished,
    changed_sql_turns_loaded_partitions_stale_until_rerun,
);

#[test]
fn idem_diff_shows_what_changed() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((db, config, wh)) = rt.block_on(setup(Kind::Sqlite)) else {
        return;
    };
    rt.block_on(async {
        let plan = Backfill::plan(&wh, job(&config, "fct"), &Selection::default(), 2, 0)
            .await
            .unwrap();
        run(&wh, &plan).await;
        wh.close().await;
    });
    let path = db.path().join("idem.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen(
            "select id, amount, dt from src",
            "select id, amount + 1 as amount, dt from src",
            2,
        ),
    )
    .unwrap();
    let out = crate::common::idem_command()
        .arg("--config")
        .arg(&path)
        .args(["diff", "fct"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("(5 stale partitions)"), "{stdout}");
    assert!(
        stdout.contains("-select id, amount, dt from src"),
        "{stdout}"
    );
    assert!(
        stdout.contains("+select id, amount + 1 as amount, dt from src"),
        "{stdout}"
    );
}

/// PostgreSQL: a target column whose name is not a plain identifier
/// (`"unit price"`) is refused before writing, naming it, rather than left
/// out of the load and its fingerprint; and of two columns named but for
/// case (`a`, `A`), each SELECT column fills the one it names exactly.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_columns_are_named_as_written_or_refused() {
    let db = TestDb::new(Kind::Postgres).await.expect("server");
    let jobs = common::replace_job(
        "ev",
        "ev",
        "2026-01-01",
        "select id, dt from ev_src where dt >= :start and dt < :end",
    ) + &common::replace_job(
        "twocase",
        "twocase",
        "2026-01-01",
        "select 1 as id, 'low' as a, 'UP' as \"A\", dt from ev_src where dt >= :start and dt < :end",
    );
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE ev_src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO ev_src VALUES (1, '2026-01-01')",
        "CREATE TABLE ev (id INTEGER, dt DATE NOT NULL, \"unit price\" NUMERIC, \"Größe\" TEXT)",
        "INSERT INTO ev VALUES (7, '2026-01-01', 9.5, 'XL')",
        "CREATE TABLE twocase (id INTEGER, a TEXT, \"A\" TEXT, dt DATE NOT NULL)",
    ])
    .await
    .unwrap();
    let out = common::idem(&path, &["run", "ev", "-y"]);
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("column \"unit price\" of ev is not a plain identifier")
            && said.contains("nor are 1 other"),
        "{said}"
    );
    let lint = common::idem(&path, &["lint", "ev"]);
    let said = String::from_utf8_lossy(&lint.stdout);
    assert!(
        said.contains("column \"unit price\" of ev is not a plain identifier")
            && said.contains("nor are Größe"),
        "{said}"
    );
    let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM ev WHERE \"Größe\" = 'XL'")
        .fetch_one(wh.pool())
        .await
        .unwrap();
    assert_eq!(kept, 1, "the window is as it was");

    common::stdout_ok(&common::idem(&path, &["run", "twocase", "-y"]));
    let row = sqlx::query("SELECT a, \"A\" FROM twocase")
        .fetch_one(wh.pool())
        .await
        .unwrap();
    let (low, up): (String, String) = (row.get(0), row.get(1));
    assert_eq!((low.as_str(), up.as_str()), ("low", "UP"));
    wh.close().await;
}
