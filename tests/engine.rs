//! The engine's promises, on SQLite, PostgreSQL and MariaDB: re-running is
//! a no-op, failures leave nothing half-written, and the warehouse converges
//! to what a clean run would give.

mod common;

use common::{Kind, TestDb};
use idem::config::{Config, Job};
use idem::engine::{self, Backfill, Event, RunSummary, Selection};
use idem::partition::{Grain, Partition, RangeEnd};
use idem::state::LoadState;
use idem::warehouse::ledger::AttemptStatus;
use idem::warehouse::{Fingerprint, Warehouse};
use sqlx::{Connection, Row};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const DAYS: i64 = 10;

const SELECT: &str = "select id, amount, dt from src where dt >= :start and dt < :end";

fn jobs() -> String {
    [
        common::replace_job("fct", "fct", "2026-01-10", SELECT),
        common::replace_job("fct_clean", "fct_clean", "2026-01-10", SELECT),
        // No upper bound: rows of later days land outside the partition.
        common::replace_job("leaky", "fct", "2026-01-10", "select id, amount, dt from src where dt >= :start"),
        common::merge_job(
            "dim",
            "dim",
            "2026-01-10",
            "select id, amount, dt\nfrom src -- :ignored in a comment\nwhere dt >= :start and dt < :end",
        ),
        // As pasted from an editor: a semicolon, then comments.
        common::replace_job(
            "pasted",
            "fct_pasted",
            "2026-01-10",
            "select id, amount, dt from src where dt >= :start and dt < :end; -- ';' done\n/* end */",
        ),
        common::merge_job(
            "dim_pasted",
            "dim_pasted",
            "2026-01-10",
            "select id, amount, dt from src where dt >= :start and dt < :end -- no semicolon",
        ),
    ]
    .concat()
}

pub struct Fixture {
    pub db: TestDb,
    pub config: Config,
    pub wh: Warehouse,
}

pub async fn fixture(kind: Kind) -> Option<Fixture> {
    let db = TestDb::new(kind).await?;
    let (_, config) = db.config(&jobs());
    let wh = db.warehouse(&config).await;
    let mut ddl = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)".to_string(),
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL CHECK (amount >= 0), dt DATE NOT NULL)".to_string(),
        "CREATE TABLE fct_clean (id INTEGER NOT NULL, amount INTEGER NOT NULL CHECK (amount >= 0), dt DATE NOT NULL)".to_string(),
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)".to_string(),
        "CREATE TABLE fct_pasted (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)".to_string(),
        "CREATE TABLE dim_pasted (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)".to_string(),
    ];
    let mut values = Vec::new();
    for d in 0..DAYS {
        for k in 0..5 {
            values.push(format!(
                "({}, {}, '2026-01-{:02}')",
                d * 100 + k,
                k * 10 + d,
                d + 1
            ));
        }
    }
    ddl.push(format!(
        "INSERT INTO src (id, amount, dt) VALUES {}",
        values.join(", ")
    ));
    let refs: Vec<&str> = ddl.iter().map(String::as_str).collect();
    wh.execute_script(&refs).await.expect("fixture");
    Some(Fixture { db, config, wh })
}

impl Fixture {
    pub fn job(&self, name: &str) -> &Job {
        self.config
            .jobs
            .iter()
            .find(|j| j.name == name)
            .expect("job")
    }

    pub async fn run(&self, job: &str, selection: Selection) -> (RunSummary, Vec<Event>) {
        let job = self.job(job);
        let backfill = Backfill::plan(&self.wh, job, &selection, 3, 1)
            .await
            .expect("plan");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let summary = engine::run(&self.wh, &backfill, &tx, &CancellationToken::new()).await;
        drop(tx);
        let mut events = Vec::new();
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        (summary, events)
    }

    pub async fn fingerprints(&self, job: &str) -> Vec<(String, Fingerprint)> {
        let job = self.job(job);
        let mut out = Vec::new();
        for p in idem::partition::range(job.start, job.end.expect("end")) {
            out.push((
                p.name(),
                self.wh
                    .partition_fingerprint(job, &p)
                    .await
                    .expect("fingerprint"),
            ));
        }
        out
    }

    pub async fn exec(&self, sql: &str) {
        self.wh.execute_script(&[sql]).await.expect(sql);
    }

    pub async fn count(&self, table: &str) -> i64 {
        let table = idem::config::TableName::parse(table).expect("table");
        self.wh.table_fingerprint(&table).await.expect("count").rows
    }
}

pub fn day(d: &str) -> Partition {
    Partition::parse(Grain::Day, d, RangeEnd::From).expect("day")
}

fn only(states: &[LoadState]) -> Selection {
    Selection {
        only: states.to_vec(),
        ..Selection::default()
    }
}

fn succeeded(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| matches!(e, Event::PartitionSucceeded { .. }))
        .collect()
}

async fn running_twice_equals_running_once(kind: Kind) {
    let Some(f) = fixture(kind).await else { return };
    let (first, _) = f.run("fct", Selection::default()).await;
    assert_eq!((first.succeeded, first.failed), (DAYS as usize, 0));
    let once = f.fingerprints("fct").await;
    let (second, events) = f.run("fct", Selection::default()).await;
    assert_eq!(second.exit_code(), idem::exit::Exit::Ok);
    assert_eq!(f.fingerprints("fct").await, once);
    assert_eq!(f.count("fct").await, DAYS * 5);
    for e in succeeded(&events) {
        let Event::PartitionSucceeded {
            rows_deleted,
            rows_inserted,
            content_changed,
            ..
        } = e
        else {
            unreachable!()
        };
        assert_eq!(
            (*rows_deleted, *rows_inserted, *content_changed),
            (5, 5, false)
        );
    }

    let (merge1, events1) = f.run("dim", Selection::default()).await;
    assert_eq!(merge1.succeeded, DAYS as usize);
    let inserted: i64 = succeeded(&events1)
        .iter()
        .map(|e| match e {
            Event::PartitionSucceeded { rows_inserted, .. } => *rows_inserted,
            _ => 0,
        })
        .sum();
    assert_eq!(inserted, DAYS * 5);
    let table_once = f.wh.table_fingerprint(&f.job("dim").target).await.unwrap();
    let (merge2, events2) = f.run("dim", Selection::default()).await;
    assert_eq!(merge2.succeeded, DAYS as usize);
    for e in succeeded(&events2) {
        let Event::PartitionSucceeded {
            rows_inserted,
            rows_updated,
            content_changed,
            ..
        } = e
        else {
            unreachable!()
        };
        assert_eq!(
            (*rows_inserted, *rows_updated, *content_changed),
            (0, 0, false),
            "{e:?}"
        );
    }
    assert_eq!(
        f.wh.table_fingerprint(&f.job("dim").target).await.unwrap(),
        table_once
    );
}

/// SQL as pasted from an editor (a semicolon, comments after it, a line
/// comment last) loads as the same SQL without them.
async fn pasted_sql_with_a_semicolon_and_comments_loads(kind: Kind) {
    let Some(f) = fixture(kind).await else { return };
    for (job, like) in [("pasted", "fct"), ("dim_pasted", "dim")] {
        let (pasted, events) = f.run(job, Selection::default()).await;
        assert_eq!(
            pasted.succeeded,
            DAYS as usize,
            "{:?}",
            common::errors(&events)
        );
        let (plain, _) = f.run(like, Selection::default()).await;
        assert_eq!(plain.succeeded, DAYS as usize);
        assert_eq!(
            f.wh.table_fingerprint(&f.job(job).target).await.unwrap(),
            f.wh.table_fingerprint(&f.job(like).target).await.unwrap(),
            "{job}"
        );
    }
}

/// `'\'` is a whole string on PostgreSQL and SQLite; MariaDB writes it
/// `'\\'`. Either way the `:start` after it is a parameter, for the load
/// and for lint.
async fn a_backslash_in_a_string_is_read_as_the_engine_reads_it(kind: Kind) {
    let db = TestDb::new(kind).await.expect("test database");
    let backslash = if kind == Kind::MySql { r"'\\'" } else { r"'\'" };
    let job = format!(
        "[[jobs]]\nname = \"paths\"\ntarget = \"paths_out\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-01\"\n\
         sql = '''\nselect id, dt, replace(p, {backslash}, '/') as p from paths where dt >= :start and dt < :end\n'''\n"
    );
    let (_, config) = db.config(&job);
    let wh = db.warehouse(&config).await;
    let value = if kind == Kind::MySql {
        r"'a\\b'"
    } else {
        r"'a\b'"
    };
    wh.execute_script(&[
        "CREATE TABLE paths (id INTEGER NOT NULL, dt DATE NOT NULL, p VARCHAR(20) NOT NULL)",
        "CREATE TABLE paths_out (id INTEGER NOT NULL, dt DATE NOT NULL, p VARCHAR(20) NOT NULL)",
        &format!("INSERT INTO paths VALUES (1, '2026-01-01', {value})"),
    ])
    .await
    .expect("setup");
    let job = &config.jobs[0];
    let errors: Vec<_> = idem::lint::static_findings(job)
        .into_iter()
        .filter(|f| f.severity == idem::lint::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let backfill = Backfill::plan(&wh, job, &Selection::default(), 1, 0)
        .await
        .expect("plan");
    let (summary, events) = common::run(&wh, &backfill).await;
    assert_eq!(summary.succeeded, 1, "{:?}", common::errors(&events));
    let row = sqlx::query("SELECT p FROM paths_out")
        .fetch_one(wh.pool())
        .await
        .expect("row");
    assert_eq!(sqlx::Row::get::<String, _>(&row, 0), "a/b");
    drop(db);
}

async fn naive_insert_doubles_but_replace_does_not(kind: Kind) {
    let Some(f) = fixture(kind).await else { return };
    let naive = "INSERT INTO fct (id, amount, dt) SELECT id, amount, dt FROM src WHERE dt >= '2026-01-01' AND dt < '2026-01-02'";
    f.exec(naive).await;
    f.exec(naive).await;
    assert_eq!(
        f.count("fct").await,
        10,
        "the seed's naive INSERT run twice doubles the rows"
    );

    let first_day = Selection {
        from: Some(day("2026-01-01")),
        to: Some(day("2026-01-01")),
        ..Selection::default()
    };
    f.run("fct", first_day.clone()).await;
    f.run("fct", first_day.clone()).await;
    assert_eq!(
        f.count("fct").await,
        5,
        "replace_partition run twice leaves one copy"
    );
    f.run("fct_clean", first_day).await;
    assert_eq!(
        f.fingerprints("fct").await,
        f.fingerprints("fct_clean").await
    );
}

async fn partial_failure_then_only_failed_converges(kind: Kind) {
    let Some(f) = fixture(kind).await else { return };
    f.exec("UPDATE src SET amount = -1 WHERE id IN (302, 704)")
        .await;
    let (summary, events) = f.run("fct", Selection::default()).await;
    assert_eq!((summary.succeeded, summary.failed), (8, 2));
    assert_eq!(summary.exit_code(), idem::exit::Exit::Failed);
    let failed: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::PartitionFailed {
                partition,
                will_retry: false,
                ..
            } => Some(partition.as_str()),
            _ => None,
        })
        .collect();
    let mut failed = failed;
    failed.sort();
    assert_eq!(failed, vec!["2026-01-04", "2026-01-08"]);
    let attempts = f.wh.attempts("fct", Some("2026-01-04")).await.unwrap();
    let last = attempts.last().expect("recorded");
    assert_eq!(last.status, AttemptStatus::Failed);
    let error = last.error.as_deref().unwrap_or_default().to_lowercase();
    assert!(
        error.contains("check") || error.contains("constraint"),
        "{error}"
    );
    // The failed days wrote nothing; the others committed.
    let fps = f.fingerprints("fct").await;
    for (name, fp) in &fps {
        let expected = if name == "2026-01-04" || name == "2026-01-08" {
            0
        } else {
            5
        };
        assert_eq!(fp.rows, expected, "{name}");
    }

    f.exec("UPDATE src SET amount = 1 WHERE amount < 0").await;
    let plan = Backfill::plan(&f.wh, f.job("fct"), &only(&[LoadState::Failed]), 3, 0)
        .await
        .unwrap();
    let planned: Vec<String> = plan.partitions.iter().map(Partition::name).collect();
    assert_eq!(planned, vec!["2026-01-04", "2026-01-08"]);
    let (rerun, _) = f.run("fct", only(&[LoadState::Failed])).await;
    assert_eq!((rerun.succeeded, rerun.failed), (2, 0));

    f.run("fct_clean", Selection::default()).await;
    assert_eq!(
        f.fingerprints("fct").await,
        f.fingerprints("fct_clean").await
    );
}

async fn late_arriving_row_changes_only_its_day(kind: Kind) {
    let Some(f) = fixture(kind).await else { return };
    f.run("fct", Selection::default()).await;
    let before = f.fingerprints("fct").await;
    f.exec("INSERT INTO src (id, amount, dt) VALUES (9999, 77, '2026-01-03')")
        .await;
    let (summary, _) = f
        .run(
            "fct",
            Selection {
                from: Some(day("2026-01-03")),
                to: Some(day("2026-01-03")),
                ..Selection::default()
            },
        )
        .await;
    assert_eq!(summary.succeeded, 1);
    let after = f.fingerprints("fct").await;
    for ((name, b), (_, a)) in before.iter().zip(&after) {
        if name == "2026-01-03" {
            assert_eq!(a.rows, 6);
            assert_ne!(a, b);
        } else {
            assert_eq!(a, b, "{name} must not change");
        }
    }
}

async fn rows_outside_the_window_roll_back(kind: Kind) {
    let Some(f) = fixture(kind).await else { return };
    f.run("fct", Selection::default()).await;
    let before = f.fingerprints("fct").await;
    let (summary, events) = f
        .run(
            "leaky",
            Selection {
                from: Some(day("2026-01-03")),
                to: Some(day("2026-01-03")),
                ..Selection::default()
            },
        )
        .await;
    assert_eq!(summary.failed, 1);
    let error = events
        .iter()
        .find_map(|e| match e {
            Event::PartitionFailed { error, .. } => Some(error.clone()),
            _ => None,
        })
        .expect("a failure");
    assert!(
        error.contains("job wrote 35 rows outside its partition"),
        "{error}"
    );
    assert_eq!(f.fingerprints("fct").await, before);
}

async fn statuses_follow_the_warehouse(kind: Kind) {
    let Some(f) = fixture(kind).await else { return };
    let range = Selection {
        from: Some(day("2026-01-01")),
        to: Some(day("2026-01-05")),
        ..Selection::default()
    };
    f.run("fct", range).await;
    f.exec("DELETE FROM fct WHERE dt = '2026-01-02'").await;
    f.exec("DELETE FROM fct WHERE id = 300").await;
    f.exec("INSERT INTO fct (id, amount, dt) VALUES (1, 1, '2026-01-09')")
        .await;
    let now = chrono::NaiveDate::from_ymd_opt(2026, 3, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap();
    let statuses = idem::state::job_status(&f.wh, f.job("fct"), now, &Default::default())
        .await
        .unwrap();
    let state = |name: &str| {
        statuses
            .iter()
            .find(|s| s.partition.name() == name)
            .unwrap()
    };
    assert_eq!(state("2026-01-01").state, LoadState::Loaded);
    assert_eq!(state("2026-01-02").state, LoadState::Vanished);
    assert_eq!(state("2026-01-04").state, LoadState::Loaded);
    assert!(state("2026-01-04").drift);
    assert_eq!(state("2026-01-04").rows_now, Some(4));
    assert_eq!(state("2026-01-06").state, LoadState::Missing);
    assert_eq!(state("2026-01-09").state, LoadState::Unmanaged);
}

/// A target or partition column written in another case than the table's:
/// idem quotes every name as written, so it matches as the engine matches a
/// quoted name. SQLite matches table and column names whatever their case,
/// MariaDB column names but not table names (on Linux), PostgreSQL neither.
/// Where it does not match, every command says which name the warehouse has
/// and how to write it, rather than the server's "column "DT" does not exist".
async fn a_name_in_another_case_loads_or_says_how_to_write_it(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let job = |name: &str, target: &str, column: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"{column}\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\n\
             sql = \"select id, dt from src where dt >= :start and dt < :end\"\n\n"
        )
    };
    let (path, config) = db.config(
        &(job("upper_target", "FCT_Orders", "dt") + &job("upper_column", "fct_cased", "DT")),
    );
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct_orders (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct_cased (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-02')",
    ])
    .await
    .expect("setup");
    wh.close().await;
    let text = |out: &std::process::Output| {
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let loads = |job: &str| {
        let out = common::idem(&path, &["run", job]);
        assert_eq!(out.status.code(), Some(0), "{kind:?} {job}: {}", text(&out));
        let out = common::idem(&path, &["status", job]);
        assert_eq!(out.status.code(), Some(0), "{kind:?} {job}: {}", text(&out));
        let out = common::idem(&path, &["lint", job]);
        assert_eq!(out.status.code(), Some(0), "{kind:?} {job}: {}", text(&out));
    };
    // Each command fails naming the fix; lint as a finding, its checks made.
    // A target the warehouse does not have is refused before a run starts
    // (exit 2, nothing recorded); a column that does not fit fails the run.
    let says = |job: &str, fix: &str, lint_fix: &str| {
        let run_code = if job == "upper_target" { 2 } else { 1 };
        for (args, code) in [(&["run", job][..], run_code), (&["status", job], 1)] {
            let out = common::idem(&path, args);
            let said = text(&out);
            assert_eq!(out.status.code(), Some(code), "{kind:?} {args:?}: {said}");
            assert!(said.contains(fix), "{kind:?} {args:?}: {said}");
            assert!(
                !said.contains("does not exist\n"),
                "{kind:?} {args:?}: {said}"
            );
        }
        let out = common::idem(&path, &["lint", job]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{kind:?}: {said}");
        assert!(said.contains(lint_fix), "{kind:?}: {said}");
        assert!(
            said.contains("1 error, 0 warnings in 1 job\n"),
            "{kind:?}: {said}"
        );
    };
    let target_fix = "the warehouse has fct_orders: idem quotes a name as written, so it must match the table's own, case and schema; write target = \"fct_orders\"";
    let loaded: &[&str] = match kind {
        Kind::Sqlite => &["upper_target", "upper_column"],
        Kind::MySql => {
            says(
                "upper_target",
                target_fix,
                "fix: write target = \"fct_orders\"",
            );
            &["upper_column"]
        }
        Kind::Postgres => {
            says(
                "upper_target",
                target_fix,
                "fix: write target = \"fct_orders\"",
            );
            says(
                "upper_column",
                "partition_column \"DT\" is not a column of fct_cased, but \"dt\" is: idem quotes a name as written, and PostgreSQL then matches it by case; write \"dt\" in partition_column",
                "fix: write partition_column = \"dt\"",
            );
            // A job that does not fit its target fails every partition
            // alike: the run stops at the first, and says what is left.
            let out = common::idem(&path, &["run", "upper_column", "--concurrency", "1"]);
            let said = text(&out);
            assert_eq!(out.status.code(), Some(1), "{said}");
            assert!(
                said.contains("0 succeeded, 1 failed, 1 not started"),
                "{said}"
            );
            &[]
        }
    };
    // Where it loads, the rows are there.
    let wh = db.warehouse(&config).await;
    for name in loaded {
        loads(name);
        let job = config.jobs.iter().find(|j| j.name == *name).expect("job");
        let rows = wh
            .partition_fingerprint(job, &day("2026-01-02"))
            .await
            .expect("fingerprint")
            .rows;
        assert_eq!(rows, 2, "{kind:?} {name}");
    }
    wh.close().await;
}

mod without_equality {
    use super::*;

    /// Values of types a plain `=` cannot compare: PostgreSQL's `json`, `xml`
    /// and `point` have no equality, its `box` compares areas, a domain over
    /// `json` has none either; MariaDB's spatial values cannot be cast to text.
    /// A merge of such a window loads, re-runs as a no-op, sees each changed
    /// value (a box moved but of the same area included), and `idem verify`
    /// reads the rows of both strategies.
    async fn values_without_a_plain_equality_merge_and_verify(kind: Kind) {
        let Some(db) = TestDb::new(kind).await else {
            return;
        };
        let select = "select * from src where dt >= :start and dt < :end";
        let jobs = common::merge_job("merged", "merged", "2026-01-01", select)
            + &common::replace_job("replaced", "replaced", "2026-01-01", select);
        let (path, config) = db.config(&jobs);
        let wh = db.warehouse(&config).await;
        let (setup, changes, same): (Vec<&str>, Vec<&str>, &str) = match kind {
            Kind::Postgres => (
                vec![
                    "CREATE DOMAIN doc AS json",
                    "CREATE TABLE src (id INTEGER PRIMARY KEY, dt DATE NOT NULL, j json, x xml, p point, b box, d doc, a json[], jb jsonb)",
                    "INSERT INTO src SELECT g, DATE '2026-01-01', json_build_object('k', g), xmlparse(content '<a/>'), point(g, g), box(point(0, 0), point(2, 2)), '[1]', ARRAY['{}'::json], jsonb_build_object('g', g) FROM generate_series(1, 5) g",
                    "CREATE TABLE merged (LIKE src INCLUDING ALL)",
                    "CREATE TABLE replaced (LIKE src)",
                ],
                vec![
                    "UPDATE src SET j = '{\"k\": -1}' WHERE id = 1",
                    // Of the same area: equal by box's own `=`.
                    "UPDATE src SET b = box(point(1, 1), point(3, 3)) WHERE id = 2",
                    "UPDATE src SET p = point(9, 9) WHERE id = 3",
                    "UPDATE src SET d = '[2]', a = ARRAY['[]'::json] WHERE id = 4",
                ],
                "SELECT COUNT(*) FROM (SELECT id, CAST(j AS text), CAST(x AS text), CAST(p AS text), CAST(b AS text), CAST(d AS text), CAST(a AS text), jb FROM src \
                 EXCEPT SELECT id, CAST(j AS text), CAST(x AS text), CAST(p AS text), CAST(b AS text), CAST(d AS text), CAST(a AS text), jb FROM merged) e",
            ),
            Kind::MySql => (
                vec![
                    "CREATE TABLE src (id INTEGER PRIMARY KEY, dt DATE NOT NULL, j JSON, p POINT, g GEOMETRY)",
                    "INSERT INTO src VALUES (1, '2026-01-01', '{\"k\": 1}', POINT(1, 1), POINT(0, 0)), (2, '2026-01-01', '[]', POINT(2, 2), ST_GeomFromText('LINESTRING(0 0, 1 1)')), (3, '2026-01-01', NULL, NULL, NULL), (4, '2026-01-01', '{}', POINT(4, 4), POINT(4, 4))",
                    "CREATE TABLE merged LIKE src",
                    "CREATE TABLE replaced LIKE src",
                ],
                vec![
                    "UPDATE src SET j = '{\"k\": -1}' WHERE id = 1",
                    "UPDATE src SET g = ST_GeomFromText('LINESTRING(0 0, 2 2)') WHERE id = 2",
                    "UPDATE src SET p = POINT(9, 9) WHERE id = 3",
                    "UPDATE src SET p = POINT(5, 5) WHERE id = 4",
                ],
                "SELECT COUNT(*) FROM src s LEFT JOIN merged m ON m.id = s.id AND m.j <=> s.j AND ST_AsText(m.p) <=> ST_AsText(s.p) AND ST_AsText(m.g) <=> ST_AsText(s.g) WHERE m.id IS NULL",
            ),
            Kind::Sqlite => unreachable!("server engines only"),
        };
        wh.execute_script(&setup).await.expect("setup");
        let load = async |name: &str| {
            let job = config.jobs.iter().find(|j| j.name == name).expect("job");
            let backfill = Backfill::plan(&wh, job, &Selection::default(), 1, 0)
                .await
                .expect("plan");
            let (summary, events) = common::run(&wh, &backfill).await;
            assert_eq!(
                summary.failed,
                0,
                "{kind:?} {name}: {:?}",
                common::errors(&events)
            );
            events
                .iter()
                .find_map(|e| match e {
                    Event::PartitionSucceeded {
                        rows_inserted,
                        rows_updated,
                        content_changed,
                        ..
                    } => Some((*rows_inserted, *rows_updated, *content_changed)),
                    _ => None,
                })
                .expect("a load")
        };
        let rows = if kind == Kind::Postgres { 5 } else { 4 };
        assert_eq!(load("merged").await, (rows, 0, true), "{kind:?}");
        assert_eq!(
            load("merged").await,
            (0, 0, false),
            "{kind:?}: a re-run changes nothing"
        );
        assert_eq!(load("replaced").await, (rows, 0, true), "{kind:?}");
        wh.execute_script(&changes).await.expect("changes");
        assert_eq!(
            load("merged").await,
            (0, 4, true),
            "{kind:?}: every changed row is updated"
        );
        assert_eq!(load("replaced").await, (rows, 0, true), "{kind:?}");
        let mut check = wh.sql();
        check.push(same);
        let differing: i64 = check
            .query()
            .fetch_one(wh.pool())
            .await
            .expect("compare")
            .get(0);
        assert_eq!(
            differing, 0,
            "{kind:?}: the target holds the source's values"
        );
        for job in ["merged", "replaced"] {
            let out = common::idem(&path, &["verify", job, "2026-01-01"]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{kind:?} {job}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        wh.close().await;
    }

    on_server_engines!(values_without_a_plain_equality_merge_and_verify);
}

/// A SELECT the warehouse rejects (it reads a table that is not there), or
/// one naming a parameter idem does not bind (QA: `:stop` failed and
/// recorded every partition), is rejected for every partition alike, its
/// bounds being parameters: the run stops at its first failure instead of
/// recording one per partition, and the partitions it did not start keep
/// their state.
async fn a_select_the_warehouse_rejects_stops_the_run_at_its_first_partition(kind: Kind) {
    let Some(f) = fixture(kind).await else { return };
    f.run("fct", Selection::default()).await;
    let before = f.fingerprints("fct").await;
    let db = &f.db;
    for (what, sql) in [
        (
            "a table not there",
            "select id, amount, dt from src_renamed where dt >= :start and dt < :end",
        ),
        (
            "a parameter idem does not bind",
            "select id, amount, dt from src where dt >= :start and dt < :stop",
        ),
    ] {
        let jobs = common::replace_job("gone", "fct", "2026-01-10", sql);
        let (_, config) = db.config(&jobs);
        let job = &config.jobs[0];
        let backfill = Backfill::plan(&f.wh, job, &Selection::default(), 1, 1)
            .await
            .expect("plan");
        let (summary, events) = common::run(&f.wh, &backfill).await;
        assert_eq!(
            (summary.succeeded, summary.failed, summary.not_started),
            (0, 1, DAYS as usize - 1),
            "{kind:?}, {what}: {:?}",
            common::errors(&events)
        );
        let states =
            idem::state::job_status(&f.wh, job, idem::partition::now_utc(), &Default::default())
                .await
                .expect("states");
        let failed = states
            .iter()
            .filter(|s| s.state == LoadState::Failed)
            .count();
        assert_eq!(
            failed, 1,
            "{kind:?}, {what}: only the partition tried is failed"
        );
        assert_eq!(
            f.fingerprints("fct").await,
            before,
            "{kind:?}, {what}: nothing was written"
        );
    }
}

on_every_engine!(
    a_name_in_another_case_loads_or_says_how_to_write_it,
    a_select_the_warehouse_rejects_stops_the_run_at_its_first_partition,
    running_twice_equals_running_once,
    pasted_sql_with_a_semicolon_and_comments_loads,
    a_backslash_in_a_string_is_read_as_the_engine_reads_it,
    naive_insert_doubles_but_replace_does_not,
    partial_failure_then_only_failed_converges,
    late_arriving_row_changes_only_its_day,
    rows_outside_the_window_roll_back,
    statuses_follow_the_warehouse,
);

/// MariaDB reads `||` as OR by default; the driver's session would read it
/// as concatenation (PIPES_AS_CONCAT). A job's SQL loads as the operator's
/// own client would run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
async fn mysql_a_job_reads_or_as_the_servers_default_sql_mode_does() {
    let db = TestDb::new(Kind::MySql).await.expect("test database");
    let mut admin = sqlx::MySqlConnection::connect(&db.url)
        .await
        .expect("connect");
    let default_mode: String = sqlx::query("SELECT @@GLOBAL.sql_mode")
        .fetch_one(&mut admin)
        .await
        .expect("sql_mode")
        .get(0);
    assert!(!default_mode.contains("PIPES_AS_CONCAT"), "{default_mode}");
    let select =
        "select id, dt, (id > 5 || id < 0) as flag from src where dt >= :start and dt < :end";
    let (_, config) = db.config(&common::replace_job("flags", "flags", "2026-01-01", select));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (9, '2026-01-01')",
        "CREATE TABLE flags (id INTEGER NOT NULL, dt DATE NOT NULL, flag INTEGER NOT NULL)",
    ])
    .await
    .expect("setup");
    let backfill = Backfill::plan(&wh, &config.jobs[0], &Selection::default(), 1, 0)
        .await
        .expect("plan");
    let (summary, events) = common::run(&wh, &backfill).await;
    assert_eq!(summary.succeeded, 1, "{:?}", common::errors(&events));
    let flags: Vec<(i64, i64)> = sqlx::query("SELECT id, flag FROM flags ORDER BY id")
        .fetch_all(&mut admin)
        .await
        .expect("flags")
        .iter()
        .map(|r| (r.get::<i32, _>(0).into(), r.get::<i32, _>(1).into()))
        .collect();
    assert_eq!(flags, [(1, 0), (9, 1)], "|| was read as a concatenation");
    drop(db);
}

/// A shut gate (the console asking whether to cancel) starts no partition;
/// opened, the run goes on to the end; cancelled while shut, nothing
/// starts at all.
#[tokio::test]
async fn a_shut_gate_starts_no_partition_until_it_opens() {
    let Some(f) = fixture(Kind::Sqlite).await else {
        return;
    };
    let backfill = Backfill::plan(&f.wh, f.job("fct"), &Selection::default(), 1, 1)
        .await
        .expect("plan");
    let started = |events: &[Event]| {
        events
            .iter()
            .filter(|e| matches!(e, Event::PartitionStarted { .. }))
            .count()
    };
    for cancel_while_shut in [false, true] {
        let gate = engine::Gate::default();
        gate.shut();
        let cancel = CancellationToken::new();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let run = {
            let (wh, backfill, gate, cancel) =
                (f.wh.clone(), backfill.clone(), gate.clone(), cancel.clone());
            tokio::spawn(
                async move { engine::run_gated(&wh, &backfill, &tx, &cancel, &gate).await },
            )
        };
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        let mut events = Vec::new();
        while let Ok(e) = rx.try_recv() {
            events.push(e);
        }
        assert!(
            matches!(events.as_slice(), [Event::RunStarted { .. }]),
            "{events:?}"
        );
        if cancel_while_shut {
            cancel.cancel();
        } else {
            gate.open();
        }
        let summary = run.await.expect("run");
        while let Some(e) = rx.recv().await {
            events.push(e);
        }
        if cancel_while_shut {
            assert_eq!(started(&events), 0);
            assert_eq!(summary.not_started, DAYS as usize);
        } else {
            assert_eq!(started(&events), DAYS as usize);
            assert_eq!(summary.succeeded, DAYS as usize);
        }
    }
}
