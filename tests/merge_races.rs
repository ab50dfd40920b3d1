//! Merge jobs under races and crashes: two `idem run` processes merging
//! windows of one target at once, and a run killed mid-merge.

mod common;

use std::time::Duration;

use common::{Kind, TestDb};
use sqlx::Row;

const SELECT: &str = "select id, amount, dt from src where dt >= :start and dt < :end";

/// A warehouse whose merge job `dim` (days 2026-01-01 … 2026-01-06) finds
/// key 1 on every day (amount = the day × 10), key 7 on days 2 and 3 only
/// (amount = the day), a key of each day's own (100 + the day) and three
/// more on day 1, into a target whose inserts and updates each take a
/// while (a trigger sleeps after every row) and are written to `audit`
/// with the amount before and after.
async fn slow_target(kind: Kind) -> (TestDb, std::path::PathBuf) {
    let db = TestDb::new(kind).await.expect("server");
    let (path, config) = db.config(&common::merge_job("dim", "dim", "2026-01-06", SELECT));
    let wh = db.warehouse(&config).await;
    let mut values = vec![
        "(201, 1, '2026-01-01'), (202, 1, '2026-01-01'), (203, 1, '2026-01-01')".to_string(),
        "(7, 2, '2026-01-02'), (7, 3, '2026-01-03')".to_string(),
    ];
    for d in 1..=6 {
        values.push(format!("(1, {}, '2026-01-0{d}')", d * 10));
        values.push(format!("({}, {d}, '2026-01-0{d}')", 100 + d));
    }
    let fill = format!("INSERT INTO src VALUES {}", values.join(", "));
    let mut script = vec![
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        "CREATE TABLE audit (id INTEGER NOT NULL, was INTEGER, now INTEGER NOT NULL)".to_string(),
        fill,
    ];
    match kind {
        Kind::Postgres => script.extend([
            "CREATE FUNCTION audit_row() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN \
             INSERT INTO audit VALUES (NEW.id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.amount END, NEW.amount); \
             PERFORM pg_sleep(0.3); RETURN NEW; END $$"
                .to_string(),
            "CREATE TRIGGER dim_audit AFTER INSERT OR UPDATE ON dim \
             FOR EACH ROW EXECUTE FUNCTION audit_row()"
                .to_string(),
        ]),
        Kind::MySql => script.extend([
            "CREATE TRIGGER dim_ins AFTER INSERT ON dim FOR EACH ROW \
             BEGIN INSERT INTO audit VALUES (NEW.id, NULL, NEW.amount); DO SLEEP(0.3); END"
                .to_string(),
            "CREATE TRIGGER dim_upd AFTER UPDATE ON dim FOR EACH ROW \
             BEGIN INSERT INTO audit VALUES (NEW.id, OLD.amount, NEW.amount); DO SLEEP(0.3); END"
                .to_string(),
        ]),
        Kind::Sqlite => unreachable!("a server's sessions race"),
    }
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();
    wh.close().await;
    (db, path)
}

fn spawn_run(config: &std::path::Path, args: &[&str]) -> std::process::Child {
    crate::common::idem_command()
        .arg("--config")
        .arg(config)
        .args(["run", "dim"])
        .args(args)
        .arg("-y")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn idem")
}

/// A run's exit code and everything it said.
fn finished(child: std::process::Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().expect("idem ran");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// The type a count or an integer is cast to, read as an i64.
fn int(kind: Kind) -> &'static str {
    match kind {
        Kind::MySql => "SIGNED",
        _ => "BIGINT",
    }
}

async fn amounts(kind: Kind, wh: &idem::warehouse::Warehouse) -> Vec<(i64, i64)> {
    let int = int(kind);
    let query = format!("SELECT CAST(id AS {int}), CAST(amount AS {int}) FROM dim ORDER BY id");
    sqlx::query(sqlx::AssertSqlSafe(query))
        .fetch_all(wh.pool())
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// Two `idem run` processes merging windows of one job at once: an older
/// window (day 2) and the later ones (days 3 … 6) an orchestrator runs.
/// Before, each merge took only its own window's lock: on PostgreSQL two
/// windows inserting one new key at once failed the second with a raw
/// "duplicate key value violates unique constraint"; and a window merged
/// after a later one set the later one's keys back (key 7 to day 2's
/// value), with no word. Now merges into one table take turns, and the one
/// overtaken by a later window is refused, saying by which run and how to
/// merge through; the repair it names ends as one clean run.
async fn two_runs_merging_one_job_take_turns_and_never_roll_keys_back(kind: Kind) {
    let (db, path) = slow_target(kind).await;
    let (_, config) = db.config(&common::merge_job("dim", "dim", "2026-01-06", SELECT));
    let wh = db.warehouse(&config).await;
    let older = spawn_run(&path, &["--from", "2026-01-01", "--to", "2026-01-02"]);
    // The later run starts while day 1 merges (its rows take a while).
    tokio::time::sleep(Duration::from_millis(700)).await;
    let later = spawn_run(&path, &["--from", "2026-01-03", "--to", "2026-01-06"]);
    let (older, later) = (finished(older), finished(later));
    for (code, said) in [&older, &later] {
        assert!(
            !said.contains("duplicate key") && !said.contains("Duplicate entry"),
            "{kind:?}: {code:?} {said}"
        );
    }
    assert_eq!(later.0, Some(0), "{kind:?}: {}", later.1);
    match older.0 {
        Some(0) => {}
        Some(1) => assert!(
            older.1.contains("window 2026-01-02 not merged: run ")
                && older.1.contains("merged the later window 2026-01-0")
                && older.1.contains("--from 2026-01-02 --through-latest"),
            "{kind:?}: {}",
            older.1
        ),
        code => panic!("{kind:?}: {code:?} {}", older.1),
    }
    let now = amounts(kind, &wh).await;
    assert!(now.contains(&(1, 60)), "{kind:?}: {now:?}");
    assert!(
        now.contains(&(7, 3)),
        "{kind:?}: key 7 rolled back: {now:?}"
    );
    // Each trigger fired for a real change.
    let idle: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT CAST(COUNT(*) AS {}) FROM audit WHERE was IS NOT NULL AND was = now",
        int(kind)
    )))
    .fetch_one(wh.pool())
    .await
    .unwrap();
    assert_eq!(idle, 0, "{kind:?}: updates that changed nothing");

    common::stdout_ok(&common::idem(
        &path,
        &[
            "run",
            "dim",
            "--from",
            "2026-01-02",
            "--through-latest",
            "-y",
        ],
    ));
    let mut clean = vec![(1, 60), (7, 3)];
    clean.extend((1..=6).map(|d| (100 + d, d)));
    clean.extend([(201, 1), (202, 1), (203, 1)]);
    clean.sort();
    assert_eq!(amounts(kind, &wh).await, clean, "{kind:?}");
    // The ledger agrees: every window's latest attempt succeeded.
    let status = common::stdout_ok(&common::idem(&path, &["status", "dim", "--format", "csv"]));
    assert_eq!(status.matches(",loaded,").count(), 6, "{kind:?}: {status}");
    wh.close().await;
}

on_server_engines!(two_runs_merging_one_job_take_turns_and_never_roll_keys_back);

/// A merge run reads, as it begins, the ledger's latest merge of its job:
/// a later window merged past that by another run refuses an older one.
/// Before, a read that failed (the ledger refused for a moment, a pool
/// closing) turned the check off, so a racing run's later window went
/// unseen and an older window set its keys back. Now each window refuses,
/// writing nothing and saying why.
mod unread_ledger {
    use super::*;
    use idem::warehouse::{AttemptMeta, MergesBefore};

    async fn a_merge_whose_earlier_merges_were_not_read_writes_nothing(kind: Kind) {
        let Some(db) = TestDb::new(kind).await else {
            return;
        };
        let (path, config) = db.config(&common::merge_job("dim", "dim", "2026-01-01", SELECT));
        let wh = db.warehouse(&config).await;
        wh.execute_script(&[
            "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
            "CREATE TABLE dim (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)",
            "INSERT INTO src VALUES (1, 10, '2026-01-01')",
        ])
        .await
        .expect("tables");
        wh.make_ledger().await.expect("ledger");
        let job = &config.jobs[0];
        let day = idem::partition::Partition::parse(
            job.grain,
            "2026-01-01",
            idem::partition::RangeEnd::From,
        )
        .expect("day");
        let meta = AttemptMeta {
            run_id: "unread".into(),
            attempt: 1,
            started_at: idem::warehouse::ledger::timestamp(chrono::Utc::now()),
            operator: "test".into(),
            host: "test".into(),
            reason: None,
            allow_shrink: false,
            last_load: None,
            merges_before_run: MergesBefore::Unread("the server is down".into()),
        };
        let refused = wh
            .load_partition(
                job,
                &day,
                &meta,
                &|_| {},
                &tokio_util::sync::CancellationToken::new(),
            )
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| panic!("{kind:?}: merged unchecked"));
        assert!(
            refused.starts_with("window 2026-01-01 not merged: which windows of dim were merged before this run began could not be read from the ledger (the server is down)")
                && refused.contains("nothing was written"),
            "{kind:?}: {refused}"
        );
        assert_eq!(amounts(kind, &wh).await, vec![], "{kind:?}");
        // Read, the run merges.
        common::stdout_ok(&common::idem(&path, &["run", "dim", "-y"]));
        assert_eq!(amounts(kind, &wh).await, vec![(1, 10)], "{kind:?}");
        let read = wh.merges_before_run(job).await;
        assert!(
            matches!(read, MergesBefore::Read(n) if n > 0),
            "{kind:?}: {read:?}"
        );
        // A read that fails says so, where it said nothing to check.
        wh.close().await;
        assert!(
            matches!(wh.merges_before_run(job).await, MergesBefore::Unread(_)),
            "{kind:?}"
        );
    }

    on_every_engine!(a_merge_whose_earlier_merges_were_not_read_writes_nothing);
}
