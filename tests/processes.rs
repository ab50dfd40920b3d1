//! The real binary under stress: killed with SIGKILL mid-backfill, and two
//! processes on overlapping ranges. Partitions are always whole, never mixed.

mod common;

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Kind, TestDb};
use idem::config::Config;
use idem::partition::{Grain, Partition, RangeEnd, range};
use idem::warehouse::ledger::AttemptStatus;
use idem::warehouse::{Fingerprint, Warehouse};

const DAYS: i64 = 24;
const ROWS_PER_DAY: i64 = 3000;

const SELECT: &str = "select id, amount, dt from src where dt >= :start and dt < :end";

/// [`SELECT`], a few tenths of a second slower per partition: a run of it
/// is still going when a test stops it.
fn slow_select(kind: Kind) -> String {
    select_pausing(kind, 0.3)
}

/// [`SELECT`], about `seconds` slower per partition.
fn select_pausing(kind: Kind, seconds: f64) -> String {
    let pause = match kind {
        Kind::Postgres => format!("(select pg_sleep({seconds}) as p)"),
        Kind::MySql => format!("(select sleep({seconds}) as p)"),
        // Counting, as SQLite has no sleep: to a million takes about 0.3 s.
        Kind::Sqlite => format!(
            "(with recursive c(i) as (select 1 union all select i + 1 from c where i < {}) select max(i) as p from c)",
            (seconds / 0.3 * 1e6) as i64
        ),
    };
    format!(
        "select id, amount, dt from src cross join {pause} pause where dt >= :start and dt < :end"
    )
}

struct Setup {
    db: TestDb,
    config_path: std::path::PathBuf,
    config: Config,
    wh: Warehouse,
}

async fn setup(kind: Kind) -> Option<Setup> {
    let db = TestDb::new(kind).await?;
    let jobs = [
        common::replace_job("fct", "fct", "2026-01-24", SELECT),
        common::replace_job("fct_clean", "fct_clean", "2026-01-24", SELECT),
        common::replace_job("fct_slow", "fct", "2026-01-24", &slow_select(kind)),
    ]
    .concat();
    let (config_path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    let n = DAYS * ROWS_PER_DAY - 1;
    let fill = match kind {
        Kind::Sqlite => format!(
            "INSERT INTO src (id, amount, dt) WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < {n}) \
             SELECT i, i % 1000, date('2026-01-01', '+' || (i / {ROWS_PER_DAY}) || ' days') FROM seq"
        ),
        Kind::Postgres => format!(
            "INSERT INTO src (id, amount, dt) SELECT i, i % 1000, date '2026-01-01' + (i / {ROWS_PER_DAY})::int FROM generate_series(0, {n}) i"
        ),
        Kind::MySql => format!(
            "INSERT INTO src (id, amount, dt) SELECT seq, seq % 1000, DATE_ADD('2026-01-01', INTERVAL (seq DIV {ROWS_PER_DAY}) DAY) FROM seq_0_to_{n}"
        ),
    };
    let ddl = [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        "CREATE TABLE fct_clean (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        fill,
    ];
    let refs: Vec<&str> = ddl.iter().map(String::as_str).collect();
    wh.execute_script(&refs).await.expect("setup");
    Some(Setup {
        db,
        config_path,
        config,
        wh,
    })
}

impl Setup {
    fn idem(&self, args: &[&str]) -> Command {
        let mut c = crate::common::idem_command();
        c.arg("--config").arg(&self.config_path).args(args);
        c
    }

    /// Starts idem with `args` (a `--json` run) and reads its events up to
    /// the `n`th `event`: the process, and its events still to come.
    fn run_until(
        &self,
        args: &[&str],
        event: &str,
        n: usize,
    ) -> (Child, Lines<BufReader<ChildStdout>>) {
        let mut child = self
            .idem(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let needle = format!("\"{event}\"");
        let mut seen = 0;
        while let Some(Ok(line)) = lines.next() {
            if line.contains(&needle) {
                seen += 1;
                if seen == n {
                    break;
                }
            }
        }
        (child, lines)
    }

    async fn fingerprints(&self, job: &str) -> Vec<Fingerprint> {
        let job = self.config.jobs.iter().find(|j| j.name == job).unwrap();
        let mut out = Vec::new();
        for p in range(job.start, job.end.unwrap()) {
            out.push(self.wh.partition_fingerprint(job, &p).await.unwrap());
        }
        out
    }

    async fn clean_run(&self) -> Vec<Fingerprint> {
        let status = self.idem(&["run", "fct_clean"]).output().unwrap();
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
        self.fingerprints("fct_clean").await
    }
}

async fn sigkill_leaves_every_partition_whole(kind: Kind) {
    let Some(s) = setup(kind).await else { return };
    let first = s.idem(&["run", "fct"]).output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let old = s.fingerprints("fct").await;
    s.wh.execute_script(&["UPDATE src SET amount = amount + 1"])
        .await
        .unwrap();
    let new = s.clean_run().await;

    let mut child = s
        .idem(&["run", "fct", "--json", "--concurrency", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let mut succeeded = 0;
    while let Some(Ok(line)) = lines.next() {
        if line.contains("\"partition_succeeded\"") {
            succeeded += 1;
            if succeeded == 3 {
                break;
            }
        }
    }
    assert_eq!(succeeded, 3, "the run should get going before the kill");
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();

    let after = s.fingerprints("fct").await;
    let mut whole_new = 0;
    for (i, fp) in after.iter().enumerate() {
        assert!(
            *fp == old[i] || *fp == new[i],
            "partition {i} is neither old nor new: {fp}"
        );
        if *fp == new[i] {
            whole_new += 1;
        }
    }
    assert!(
        whole_new >= 3 && whole_new < DAYS as usize,
        "killed mid-run: {whole_new} new"
    );

    let rerun = s.idem(&["run", "fct"]).output().unwrap();
    assert!(
        rerun.status.success(),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    assert_eq!(s.fingerprints("fct").await, new);
}

async fn overlapping_processes_never_write_one_partition_at_once(kind: Kind) {
    let Some(s) = setup(kind).await else { return };
    let mut a = s
        .idem(&["run", "fct", "--to", "2026-01-16", "--concurrency", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut b = s
        .idem(&["run", "fct", "--from", "2026-01-05", "--concurrency", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(300);
    let (sa, sb) = loop {
        if let (Some(x), Some(y)) = (a.try_wait().unwrap(), b.try_wait().unwrap()) {
            break (x, y);
        }
        assert!(Instant::now() < deadline, "runs did not finish");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(sa.success() && sb.success(), "{sa:?} {sb:?}");

    // Both wrote the overlap; their lock-holding intervals never overlap.
    let attempts = s.wh.attempts("fct", None).await.unwrap();
    let overlap = Partition::parse(Grain::Day, "2026-01-05", RangeEnd::From).unwrap();
    for p in range(
        overlap,
        Partition::parse(Grain::Day, "2026-01-16", RangeEnd::From).unwrap(),
    ) {
        let name = p.name();
        let done: Vec<_> = attempts.iter().filter(|a| a.partition == name).collect();
        assert_eq!(done.len(), 2, "{name} written by both runs");
        let (x, y) = (done[0], done[1]);
        let (xl, yl) = (x.locked_at.clone().unwrap(), y.locked_at.clone().unwrap());
        assert!(
            x.finished_at <= yl || y.finished_at <= xl,
            "{name}: [{xl}, {}] and [{yl}, {}] overlap",
            x.finished_at,
            y.finished_at
        );
    }
    let clean = s.clean_run().await;
    assert_eq!(s.fingerprints("fct").await, clean);
    drop(s.db);
}

/// Two runs of one range at once, each holding a partition longer than
/// the other waits for it (`lock_timeout` 1 s, loads of 1.5 s, no
/// retries): each partition the other held is said refused for the lock,
/// never failed, counted so in the run's end, and (PostgreSQL, whose locks
/// are the partitions') the other run loaded it; nothing is recorded
/// failed, and the repeat each prints loads the rest as printed. Where a
/// load's lock covers more than its partition (MariaDB's DELETE reads every
/// row of a target with no index on `dt`, and waits on the rows the other
/// run is writing in another day; SQLite's one writer holds the whole
/// file) a partition may be refused by both: there the repeat loads it.
/// QA: on MariaDB such a wait was recorded failed, marking days loaded
/// before failed.
async fn racing_runs_say_each_partition_the_other_held(kind: Kind) {
    let Some(s) = setup(kind).await else { return };
    let first = s.idem(&["run", "fct"]).output().unwrap();
    assert!(first.status.success(), "{first:?}");
    let text = std::fs::read_to_string(&s.config_path).expect("config");
    let racing = s.db.path().join("racing.toml");
    std::fs::write(
        &racing,
        text.replace("lock_timeout = \"20s\"", "lock_timeout = \"1s\"")
            .replace(
                "[defaults]\nconcurrency = 3\nretries = 1",
                "[defaults]\nconcurrency = 2\nretries = 0",
            )
            .replace(&slow_select(kind), &select_pausing(kind, 1.5)),
    )
    .expect("racing config");
    let run = || {
        crate::common::idem_command()
            .arg("--config")
            .arg(&racing)
            .args(["run", "fct_slow", "--to", "2026-01-04", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (run(), run());
    let (a, b) = (
        std::thread::spawn(move || a.wait_with_output().unwrap()),
        std::thread::spawn(move || b.wait_with_output().unwrap()),
    );
    let runs = [a.join().unwrap(), b.join().unwrap()];
    let events: Vec<Vec<serde_json::Value>> = runs
        .iter()
        .map(|r| {
            String::from_utf8_lossy(&r.stdout)
                .lines()
                .map(|l| serde_json::from_str(l).expect("a JSON line"))
                .collect()
        })
        .collect();
    let named = |events: &[serde_json::Value], event: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["event"] == event)
            .map(|e| e["partition"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    // The operator raises lock_timeout above a load's time, as the
    // refusals advise, before repeating.
    let text = std::fs::read_to_string(&racing).expect("racing config");
    std::fs::write(
        &racing,
        text.replace("lock_timeout = \"1s\"", "lock_timeout = \"20s\""),
    )
    .expect("racing config");
    let mut held_anywhere = 0;
    for (k, run) in runs.iter().enumerate() {
        let stderr = String::from_utf8_lossy(&run.stderr);
        let failed: Vec<&serde_json::Value> = events[k]
            .iter()
            .filter(|e| e["event"] == "partition_failed")
            .collect();
        for f in &failed {
            assert_eq!(f["cause"], "lock_held", "{f}\n{stderr}");
            assert_eq!(f["refused"], false, "{f}");
        }
        let finished = events[k]
            .iter()
            .find(|e| e["event"] == "run_finished")
            .unwrap_or_else(|| panic!("no run_finished: {stderr}"));
        assert_eq!(finished["failed"], failed.len(), "{finished}");
        assert_eq!(finished["lock_held"], failed.len(), "{finished}");
        assert_eq!(
            run.status.code(),
            Some(if failed.is_empty() { 0 } else { 1 }),
            "{stderr}"
        );
        held_anywhere += failed.len();
        if kind == Kind::Postgres {
            // The other run held it, and loaded it. (MariaDB's DELETE of a
            // window reads every row of a target with no index on `dt`,
            // and waits on the rows the other run is inserting into
            // another day; SQLite's one writer holds the whole file.)
            let loaded_by_other = named(&events[1 - k], "partition_succeeded");
            for p in named(&events[k], "partition_failed") {
                assert!(loaded_by_other.contains(&p), "{p}: {stderr}");
            }
        }
        if !failed.is_empty() {
            let said = "idem: locks held elsewhere kept them waiting: once they are free, repeat: ";
            let repeat = stderr
                .lines()
                .find_map(|l| l.strip_prefix(said))
                .unwrap_or_else(|| panic!("no repeat: {stderr}"));
            for each in repeat.split(" ; ") {
                let args: Vec<&str> = each.split(' ').skip(1).collect();
                let again = crate::common::idem_command().args(&args).output().unwrap();
                assert_eq!(again.status.code(), Some(0), "{each}: {again:?}");
            }
        }
    }
    assert!(held_anywhere > 0, "the two runs never met on a partition");
    let attempts = s.wh.attempts("fct_slow", None).await.unwrap();
    assert!(
        attempts.iter().all(|a| a.status != AttemptStatus::Failed),
        "{attempts:#?}"
    );
    // Every partition loaded, as a clean run loads it.
    let clean = s.clean_run().await;
    assert_eq!(s.fingerprints("fct").await, clean);
}

/// Ctrl-C, an orchestrator's SIGTERM and a closed terminal's SIGHUP each
/// cancel the same way.
async fn a_signal_cancels_rolls_back_and_exits_130(kind: Kind) {
    let Some(s) = setup(kind).await else { return };
    // "TERM TERM": two at once, as `timeout` sends them (to the command,
    // then to its process group): one request, not a second to quit now.
    for signals in ["INT", "TERM", "HUP", "TERM TERM"] {
        let (child, lines) = s.run_until(
            &["run", "fct", "--json", "--concurrency", "2"],
            "partition_succeeded",
            2,
        );
        let signal = signals.replace(' ', "+");
        for each in signals.split(' ') {
            let signalled = Command::new("kill")
                .args([&format!("-{each}"), &child.id().to_string()])
                .status()
                .unwrap();
            assert!(signalled.success());
        }
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(130),
            "SIG{signal}: {rest:?} {stderr}"
        );
        assert!(stderr.contains("cancelling"), "SIG{signal}: {stderr}");
        // The way to quit at once it names is the signal received: no
        // Ctrl-C for a run an orchestrator stopped or whose terminal closed.
        let received = match signals {
            "INT" => "Ctrl-C",
            _ => &format!("SIG{}", signals.split(' ').next().unwrap()),
        };
        assert!(
            stderr.contains(&format!("({received} again to quit now)")),
            "SIG{signal}: {stderr}"
        );
        assert_eq!(
            stderr.contains("Ctrl-C"),
            signals == "INT",
            "SIG{signal}: {stderr}"
        );
        let finished = rest
            .iter()
            .find(|l| l.contains("\"run_finished\""))
            .expect("run_finished event");
        assert!(
            finished.contains("\"cancelled\":true"),
            "SIG{signal}: {finished}"
        );
        assert!(
            !finished.contains("\"not_started\":0"),
            "SIG{signal}: {finished}"
        );
        // Whatever was in flight rolled back: every partition is whole or empty.
        for fp in s.fingerprints("fct").await {
            assert!(fp.rows == 0 || fp.rows == ROWS_PER_DAY, "SIG{signal}: {fp}");
        }
    }
}

/// The terminal a run was started from goes away (an ssh session drops at
/// 3 a.m.): the kernel hangs up its session, idem gets SIGHUP, and every
/// write to the terminal fails from then on. The run cancels as for any
/// signal (exit 130, the partition in flight rolled back), its progress
/// and notes to the dead terminal are dropped rather than fatal, and a
/// re-run loads the rest.
async fn a_run_whose_terminal_closes_cancels_and_a_rerun_converges(kind: Kind) {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    use std::io::Read;
    let Some(s) = setup(kind).await else { return };
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("openpty");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_idem"));
    cmd.env(
        crate::common::UNICODE_GLYPHS.0,
        crate::common::UNICODE_GLYPHS.1,
    );
    cmd.arg("--config");
    cmd.arg(&s.config_path);
    cmd.args(["run", "fct_slow", "--concurrency", "1", "--yes"]);
    cmd.env("TERM", "xterm-256color");
    let mut child = pty.slave.spawn_command(cmd).expect("spawn idem");
    drop(pty.slave);
    // The terminal's screen, read on a thread of its own until two
    // partitions have loaded; then the thread lets go of its end.
    let mut reader = pty.master.try_clone_reader().expect("reader");
    let watching = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if String::from_utf8_lossy(&seen).contains("2/24 partitions") {
                break;
            }
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let seen = watching.join().expect("the reader");
    assert!(seen.contains("2/24 partitions"), "{seen}");
    // The last of the terminal's ends closes: the kernel hangs up.
    drop(pty.master);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "idem runs on 30 s after its terminal closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.exit_code(), 130, "{status:?}");
    let attempts = s.wh.attempts("fct_slow", None).await.expect("ledger");
    let loaded = attempts
        .iter()
        .filter(|a| a.status == idem::warehouse::ledger::AttemptStatus::Succeeded)
        .count();
    assert!(
        (2..24).contains(&loaded),
        "{loaded} loaded before the hangup"
    );
    for fp in s.fingerprints("fct").await {
        assert!(fp.rows == 0 || fp.rows == ROWS_PER_DAY, "{fp}");
    }
    let rerun = s.idem(&["run", "fct"]).output().expect("idem");
    assert!(
        rerun.status.success(),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    for fp in s.fingerprints("fct").await {
        assert_eq!(fp.rows, ROWS_PER_DAY, "{fp}");
    }
}

/// A cancelled run's `run_finished` tells the partition that was in flight
/// (begun, then rolled back) from those that never started, and its ledger
/// holds that partition's cancelled attempt.
async fn a_cancelled_run_tells_rolled_back_from_not_started(kind: Kind) {
    let Some(s) = setup(kind).await else { return };
    let (child, lines) = s.run_until(
        &["run", "fct_slow", "--json", "--concurrency", "1", "--yes"],
        "partition_started",
        3,
    );
    // The third partition's slow SELECT has just begun.
    let signalled = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{rest:?}");
    let finished: serde_json::Value = serde_json::from_str(
        rest.iter()
            .find(|l| l.contains("\"run_finished\""))
            .expect("run_finished event"),
    )
    .unwrap();
    assert_eq!(finished["succeeded"], 2, "{finished}");
    assert_eq!(finished["failed"], 0, "{finished}");
    assert_eq!(finished["rolled_back"], 1, "{finished}");
    assert_eq!(finished["not_started"], 22, "{finished}");
    let attempts = s.wh.attempts("fct_slow", None).await.expect("ledger");
    let cancelled: Vec<String> = attempts
        .iter()
        .filter(|a| a.status == idem::warehouse::ledger::AttemptStatus::Cancelled)
        .map(|a| a.partition.clone())
        .collect();
    assert_eq!(cancelled, ["2026-01-03"], "{attempts:?}");
}

on_every_engine!(
    a_cancelled_run_tells_rolled_back_from_not_started,
    a_signal_cancels_rolls_back_and_exits_130,
    a_run_whose_terminal_closes_cancels_and_a_rerun_converges,
    sigkill_leaves_every_partition_whole,
    overlapping_processes_never_write_one_partition_at_once,
    racing_runs_say_each_partition_the_other_held,
);

/// A run that dies holding a partition's lock leaves it held on the server:
/// MariaDB runs a SIGKILLed idem's statement to its end (it reads the
/// closed connection only then), and a run suspended with Ctrl-Z (SIGSTOP)
/// keeps its transaction open. The next run's lock timeout names the
/// holding session and the statement that ends it; doing as it says frees
/// the partition at once.
async fn a_lock_held_by_a_dead_or_stopped_run_names_its_session(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    // MariaDB's SLEEP ends when its client is gone; a statement at work,
    // as a long INSERT … SELECT is, runs on (some 100 s here, unless ended).
    let pause = match kind {
        Kind::Postgres => "(select pg_sleep(120) as p)",
        Kind::MySql => "(select (select sum(seq % 7) from seq_1_to_2000000000) as p)",
        Kind::Sqlite => {
            "(with recursive c(i) as (select 1 union all select i + 1 from c where i < 1000000000) select max(i) as p from c)"
        }
    };
    let jobs = [
        common::replace_job(
            "held",
            "fct",
            "2026-01-01",
            &format!(
                "select id, amount, dt from src cross join {pause} pause where dt >= :start and dt < :end"
            ),
        ),
        common::replace_job("fct", "fct", "2026-01-01", SELECT),
    ]
    .concat();
    let (config_path, config) = db.config_with("lock_timeout = \"1s\"", &jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&TWO_ROWS).await.unwrap();
    let idem = |args: &[&str]| {
        let mut c = crate::common::idem_command();
        c.arg("--config").arg(&config_path).args(args);
        c
    };
    let mut holder = idem(&["run", "held", "--json", "--yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    // The DELETE is logged once done, under the lock; the INSERT follows.
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("\"partition_log\"") && l.contains("DELETE"))),
        "the held load should reach its DELETE"
    );
    let pid = holder.id();
    match kind {
        Kind::MySql => {
            // Killed once its INSERT runs on the server, which then runs it
            // to its end holding the lock (killed before sending it, the
            // connection would close and free the lock).
            let mut conn = {
                use sqlx::Connection;
                sqlx::MySqlConnection::connect(&db.url).await.unwrap()
            };
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let inserting: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                     WHERE DB = DATABASE() AND INFO LIKE 'INSERT INTO%'",
                )
                .fetch_one(&mut conn)
                .await
                .unwrap();
                if inserting > 0 {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "the held load never sent its INSERT"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            holder.kill().unwrap(); // SIGKILL
            holder.wait().unwrap();
        }
        Kind::Postgres | Kind::Sqlite => {
            // Stopped under the lock: its transaction holds it however long.
            let stopped = Command::new("kill")
                .args(["-STOP", &pid.to_string()])
                .status()
                .unwrap();
            assert!(stopped.success());
        }
    }

    let started = Instant::now();
    let blocked = idem(&["run", "fct", "--json", "--yes"]).output().unwrap();
    assert!(!blocked.status.success());
    // Two attempts of a 1 s lock timeout, not one per hour of the day held
    // (MariaDB's grants were once all asked for, each waiting in turn).
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "waited {:?}",
        started.elapsed()
    );
    let error = failure_of(&blocked);
    let refused = "could not take the lock on partition 2026-01-01 within the lock timeout: ";
    if kind == Kind::Sqlite {
        // SQLite's lock has no holder to ask: the processes with the file
        // open are named, idem's first.
        assert!(
            error.starts_with(&format!(
                "{refused}the database is open in idem process {pid} on this host"
            )),
            "{error}"
        );
        assert!(
            error.contains(&format!("stopped (Ctrl-Z or SIGSTOP) with SQLite's one write lock: `kill -CONT {pid}` lets it go on, or `kill -9 {pid}` ends it")),
            "{error}"
        );
        holder.kill().unwrap();
        holder.wait().unwrap();
        return rerun_loads(&mut idem(&["run", "fct", "--yes"]), &wh, &config).await;
    }
    assert!(error.starts_with(&format!("{refused}held by ")), "{error}");
    let end = match kind {
        Kind::MySql => {
            assert!(error.contains("running ("), "{error}");
            assert!(error.contains("INSERT INTO"), "{error}");
            assert!(error.contains("runs its statement to the end"), "{error}");
            error.rsplit_once("end it with ").unwrap().1.to_string()
        }
        _ => {
            let said = format!(
                "It is idem process {pid} on this host, stopped (Ctrl-Z or SIGSTOP): `kill -CONT {pid}` lets it go on, or end its session with "
            );
            assert!(error.contains(&said), "{error}");
            assert!(error.contains(&format!("\"idem#{pid}.")), "{error}");
            error.rsplit_once(&said).unwrap().1.to_string()
        }
    };
    assert!(
        end.starts_with("KILL ") || end.starts_with("SELECT pg_terminate_backend("),
        "{end}"
    );
    // As the operator would: the statement the message gives, as it gives it.
    wh.execute_script(&[end.as_str()]).await.unwrap();
    if kind == Kind::Postgres {
        holder.kill().unwrap();
        holder.wait().unwrap();
    }
    rerun_loads(&mut idem(&["run", "fct", "--yes"]), &wh, &config).await;
}

/// Runs `rerun`, which must load the day's two rows into job fct's target.
async fn rerun_loads(rerun: &mut Command, wh: &Warehouse, config: &Config) {
    let out = rerun.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fp = wh
        .partition_fingerprint(
            config.jobs.iter().find(|j| j.name == "fct").unwrap(),
            &Partition::parse(Grain::Day, "2026-01-01", RangeEnd::From).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(fp.rows, 2);
}

/// A source of two rows on 2026-01-01, and an empty target.
const TWO_ROWS: [&str; 3] = [
    "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
    "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
    "INSERT INTO src (id, amount, dt) VALUES (1, 10, '2026-01-01'), (2, 20, '2026-01-01')",
];

/// `idem --config CONFIG run fct --yes ARGS…`.
fn fct_run(config: &std::path::Path, args: &[&str]) -> Command {
    let mut run = crate::common::idem_command();
    run.arg("--config")
        .arg(config)
        .args(["run", "fct", "--yes"])
        .args(args);
    run
}

/// The error of the first failed partition of an `idem run --json`.
fn failure_of(run: &std::process::Output) -> String {
    let out = String::from_utf8_lossy(&run.stdout);
    out.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "partition_failed")
        .map(|e| e["error"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("no failure: {out}"))
}

mod held_by_another {
    use super::*;
    on_every_engine!(a_lock_held_by_a_dead_or_stopped_run_names_its_session);
}

/// A PostgreSQL job `fct` of one day (`lock_timeout` 1 s) whose target
/// another session, named "nightly-maintenance", holds in ACCESS EXCLUSIVE
/// mode inside its open transaction.
struct Locked {
    config_path: std::path::PathBuf,
    config: idem::config::Config,
    wh: idem::warehouse::Warehouse,
    other: sqlx::PgConnection,
    pid: i32,
}

async fn locked_by_maintenance(db: &TestDb) -> Locked {
    let (config_path, config) = db.config_with(
        "lock_timeout = \"1s\"",
        &common::replace_job("fct", "fct", "2026-01-01", SELECT),
    );
    let wh = db.warehouse(&config).await;
    wh.execute_script(&TWO_ROWS).await.unwrap();
    use sqlx::Connection;
    let mut other = sqlx::PgConnection::connect(&db.url).await.unwrap();
    sqlx::query("SET application_name = 'nightly-maintenance'")
        .execute(&mut other)
        .await
        .unwrap();
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut other)
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut other).await.unwrap();
    sqlx::query("LOCK TABLE fct IN ACCESS EXCLUSIVE MODE")
        .execute(&mut other)
        .await
        .unwrap();
    Locked {
        config_path,
        config,
        wh,
        other,
        pid,
    }
}

/// A load that waits on a lock on the target table itself (another session
/// holds it through `LOCK TABLE`, an `ALTER TABLE`…) past `lock_timeout`
/// names that session and the statement that ends it, as a partition's
/// lock does; ended as the message says, the load goes through.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_a_table_locked_by_another_session_names_it() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let Locked {
        config_path,
        config,
        wh,
        other,
        pid,
    } = locked_by_maintenance(&db).await;
    let blocked = fct_run(&config_path, &["--json"]).output().unwrap();
    assert!(!blocked.status.success());
    let error = failure_of(&blocked);
    assert!(
        error.contains(&format!(
            "the lock on fct is held by session {pid} (\"nightly-maintenance\""
        )),
        "{error}"
    );
    assert!(
        error.contains("LOCK TABLE fct IN ACCESS EXCLUSIVE MODE"),
        "{error}"
    );
    let end = format!("SELECT pg_terminate_backend({pid})");
    assert!(error.ends_with(&end), "{error}");
    wh.execute_script(&[end.as_str()]).await.unwrap();
    drop(other);
    rerun_loads(&mut fct_run(&config_path, &[]), &wh, &config).await;
}

/// `idem status` that waits on a lock on the target past `lock_timeout` (a
/// load's TRUNCATE of a native partition holds one until its COMMIT) names
/// the session holding it, as a load does; it said only what kind of
/// session it might be ("an ALTER TABLE, LOCK TABLE or long transaction").
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_status_behind_a_table_lock_names_its_holder() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let Locked {
        config_path,
        config: _,
        wh,
        mut other,
        pid,
    } = locked_by_maintenance(&db).await;
    let status = common::idem(&config_path, &["status", "fct"]);
    assert_eq!(status.status.code(), Some(1));
    let said = String::from_utf8_lossy(&status.stderr);
    assert!(
        said.contains(&format!(
            "fct: unreadable: canceling statement due to lock timeout: the lock on fct is held by session {pid} (\"nightly-maintenance\""
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!("SELECT pg_terminate_backend({pid})")),
        "{said}"
    );
    sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();
    let status = common::idem(&config_path, &["status", "fct"]);
    assert_eq!(status.status.code(), Some(0), "{status:?}");
    wh.close().await;
}

/// `idem status` while a load TRUNCATEs one native partition of the target
/// (its ACCESS EXCLUSIVE lock held until the load's COMMIT) answers at once
/// for every other partition, and shows the one being loaded as running:
/// the job was unreadable (exit 1) for as long as the load ran, a
/// backfill's whole night, and then each read waited out `lock_timeout`
/// before it counted around the load. The rows whose partition column is
/// NULL, in the DEFAULT partition no load truncates, are counted too.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_status_during_a_native_partitions_truncate_reads_the_others() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let slow = "select id, amount, dt from src cross join (select pg_sleep(8) as p) pause \
                where dt >= :start and dt < :end";
    let jobs = [
        common::replace_job("fct", "fct", "2026-01-03", SELECT),
        common::replace_job("fct_slow", "fct", "2026-01-03", slow),
    ]
    .concat();
    // A lock_timeout longer than the load: a status that waited on its
    // partition (as it did, a lock_timeout at each read) would find it
    // loaded, not running.
    let (config_path, config) = db.config_with("lock_timeout = \"30s\"", &jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NULL) \
         PARTITION BY RANGE (dt)",
        "CREATE TABLE fct_0101 PARTITION OF fct FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')",
        "CREATE TABLE fct_0102 PARTITION OF fct FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')",
        "CREATE TABLE fct_0103 PARTITION OF fct FOR VALUES FROM ('2026-01-03') TO ('2026-01-04')",
        "CREATE TABLE fct_rest PARTITION OF fct DEFAULT",
        "INSERT INTO fct (id, amount, dt) VALUES (9, 90, NULL)",
        "INSERT INTO src (id, amount, dt) VALUES (1, 10, '2026-01-01'), (2, 20, '2026-01-01'), \
         (3, 30, '2026-01-02'), (4, 40, '2026-01-03')",
    ])
    .await
    .unwrap();
    let loaded = fct_run(&config_path, &[]).output().unwrap();
    assert!(loaded.status.success(), "{loaded:?}");
    let load = crate::common::idem_command()
        .arg("--config")
        .arg(&config_path)
        .args([
            "run",
            "fct_slow",
            "--from",
            "2026-01-02",
            "--to",
            "2026-01-02",
        ])
        .args(["--yes", "--reason", "backfill"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the load's TRUNCATE holds its partition.
    let started = Instant::now();
    loop {
        let mut sql = wh.sql();
        sql.push(
            "SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.relation = CAST('fct_0102' AS regclass) AND l.mode = 'AccessExclusiveLock' \
             AND l.granted AND a.application_name LIKE 'idem#%'",
        );
        if sql
            .query()
            .fetch_optional(wh.pool())
            .await
            .unwrap()
            .is_some()
        {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no TRUNCATE");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = common::idem(&config_path, &["status", "fct", "--format", "json"]);
    let said = String::from_utf8_lossy(&status.stderr);
    assert_eq!(status.status.code(), Some(0), "{said}");
    let rows: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(row_of(&rows, "2026-01-01")["rows_now"], 2, "{rows}");
    assert_eq!(row_of(&rows, "2026-01-03")["rows_now"], 1, "{rows}");
    assert_eq!(row_of(&rows, "2026-01-02")["state"], "running", "{rows}");
    assert_eq!(
        row_of(&rows, "2026-01-01")["rows_null_partition"],
        1,
        "{rows}"
    );
    let out = load.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    // Once it committed, the partition is counted again.
    let status = common::idem(&config_path, &["status", "fct", "--format", "json"]);
    assert_eq!(status.status.code(), Some(0), "{status:?}");
    let rows: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(row_of(&rows, "2026-01-02")["rows_now"], 1, "{rows}");
    wh.close().await;
}

/// A window no native partition of the target covers fails saying which
/// bounds are missing and that creating that partition (or a DEFAULT one)
/// lets it load: it said only the server's `no partition of relation "fct"
/// found for row`. Once created, the window loads.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_a_window_no_native_partition_covers_says_which_to_create() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (config_path, config) = db.config(&common::replace_job("fct", "fct", "2026-01-02", SELECT));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL) \
         PARTITION BY RANGE (dt)",
        "CREATE TABLE fct_0101 PARTITION OF fct FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')",
        "INSERT INTO src (id, amount, dt) VALUES (1, 10, '2026-01-01'), (2, 20, '2026-01-02')",
    ])
    .await
    .unwrap();
    let run = fct_run(&config_path, &["--json"]).output().unwrap();
    assert_eq!(run.status.code(), Some(1));
    let error = failure_of(&run);
    assert!(
        error.starts_with("no partition of relation \"fct\" found for row"),
        "{error}"
    );
    assert!(
        error.contains(
            "fct has no partition for 2026-01-02 (FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')). \
             Create it (CREATE TABLE … PARTITION OF fct FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')), \
             or a DEFAULT partition (CREATE TABLE … PARTITION OF fct DEFAULT)"
        ),
        "{error}"
    );
    wh.execute_script(&[
        "CREATE TABLE fct_0102 PARTITION OF fct FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')",
    ])
    .await
    .unwrap();
    let again = fct_run(&config_path, &[]).output().unwrap();
    assert!(again.status.success(), "{again:?}");
    wh.close().await;
}

/// QA: the bounds an hourly window's failure advised for a `timestamptz`
/// target (`FOR VALUES FROM ('2026-01-02 05:00:00') …`) had no offset, so
/// created from a session in the operator's own time zone (a database set
/// to America/New_York) they made a partition five hours off, and the
/// window still failed. They carry the UTC offset, and created as advised
/// from such a session the partition takes the window.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_the_partition_advised_for_an_hour_is_its_window_in_any_session_zone() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    advised_in_new_york_takes_the_window(
        db,
        ("hour", "2026-01-02T05"),
        "FOR VALUES FROM ('2026-01-02 00:00:00+00') TO ('2026-01-02 05:00:00+00')",
        "2026-01-02 05:30:00+00",
        "FOR VALUES FROM ('2026-01-02 05:00:00+00') TO ('2026-01-02 06:00:00+00')",
    )
    .await;
}

/// In `db`, the window `(grain, partition)` of a [`zoned_fct`] whose one partition
/// is `first`, with one row at `at`: its run fails advising `advised`, and
/// created so by a session in New York, the partition takes the window.
async fn advised_in_new_york_takes_the_window(
    db: TestDb,
    (grain, partition): (&str, &str),
    first: &str,
    at: &str,
    advised: &str,
) {
    let fill = format!("INSERT INTO src (id, ts) VALUES (1, '{at}')");
    let (config_path, wh) = zoned_fct(&db, (grain, partition, partition), first, &fill).await;
    let run = fct_run(&config_path, &["--json"]).output().unwrap();
    assert_eq!(run.status.code(), Some(1));
    let said = advised_bounds(&failure_of(&run));
    assert_eq!(said, [advised]);
    let create = create_in_new_york(&said);
    let create: Vec<&str> = create.iter().map(String::as_str).collect();
    wh.execute_script(&create).await.unwrap();
    let again = fct_run(&config_path, &[]).output().unwrap();
    assert!(again.status.success(), "{said:?}: {again:?}");
    wh.close().await;
}

/// [`common::zoned_job`] of `(grain, start, end)` and its tables, `fct`'s
/// first partition of `first`, `src` filled by `fill`.
async fn zoned_fct(
    db: &TestDb,
    (grain, start, end): (&str, &str, &str),
    first: &str,
    fill: &str,
) -> (std::path::PathBuf, idem::warehouse::Warehouse) {
    let (config_path, config) = db.config(&common::zoned_job(grain, start, end));
    let wh = db.warehouse(&config).await;
    let tables = common::zoned_tables(first);
    let mut script: Vec<&str> = tables.iter().map(String::as_str).collect();
    script.push(fill);
    wh.execute_script(&script).await.unwrap();
    (config_path, wh)
}

/// The bounds a failed window's error advises creating, each
/// `FOR VALUES FROM (…) TO (…)`.
fn advised_bounds(error: &str) -> Vec<String> {
    error
        .split_once("). Create ")
        .and_then(|(_, rest)| rest.split_once("), or a DEFAULT"))
        .map(|(statements, _)| {
            statements
                .split("; ")
                .filter_map(|s| s.split_once(" PARTITION OF fct "))
                .map(|(_, bounds)| bounds.to_string())
                .collect::<Vec<_>>()
        })
        .filter(|bounds| !bounds.is_empty())
        .unwrap_or_else(|| panic!("no bounds advised: {error}"))
}

/// Creates `fct_N` partitions of fct with `bounds`, as an operator's psql
/// session in New York would.
fn create_in_new_york(bounds: &[String]) -> Vec<String> {
    bounds
        .iter()
        .enumerate()
        .map(|(i, bounds)| {
            format!(
                "DO $$ BEGIN PERFORM set_config('TimeZone', 'America/New_York', true); \
                 EXECUTE $c$CREATE TABLE fct_{i} PARTITION OF fct {bounds}$c$; END $$"
            )
        })
        .collect()
}

/// QA: the partition advised for a day of a `timestamptz` target
/// (`FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')`) was plain dates,
/// which a session in the operator's own time zone (New York) reads as
/// New York's day: created as advised, it missed the UTC day's first five
/// hours and the window still failed. The bounds carry the UTC offset, and
/// created as advised from such a session the partition takes the window.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_the_partition_advised_for_a_day_is_its_window_in_any_session_zone() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    advised_in_new_york_takes_the_window(
        db,
        ("day", "2026-01-02"),
        "FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2026-01-02 00:00:00+00')",
        // 21:00 on the 1st in New York.
        "2026-01-02 02:00:00+00",
        "FOR VALUES FROM ('2026-01-02 00:00:00+00') TO ('2026-01-03 00:00:00+00')",
    )
    .await;
}

/// QA: an hourly job into a target partitioned by day was advised one
/// partition per missing hour (before the run and in each hour's
/// failure), where the table's partitions are days. It is advised the
/// day's partition around them, one statement a day, written so that a
/// session in New York creating it makes the UTC day; created as advised,
/// every hour loads.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_an_hourly_job_into_daily_partitions_is_advised_the_days() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (config_path, wh) = zoned_fct(
        &db,
        ("hour", "2026-01-01T22", "2026-01-03T01"),
        "FOR VALUES FROM ('2026-01-01 00:00:00+00') TO ('2026-01-02 00:00:00+00')",
        "INSERT INTO src (id, ts) SELECT i, TIMESTAMPTZ '2026-01-01 22:30:00+00' + i * INTERVAL '1 hour' \
         FROM generate_series(0, 27) i",
    )
    .await;
    let days = [
        "FOR VALUES FROM ('2026-01-02 00:00:00+00') TO ('2026-01-03 00:00:00+00')",
        "FOR VALUES FROM ('2026-01-03 00:00:00+00') TO ('2026-01-04 00:00:00+00')",
    ];
    let dry = common::idem(&config_path, &["run", "fct", "--dry-run"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&dry.stdout),
        String::from_utf8_lossy(&dry.stderr)
    );
    let creates: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("  2026-") && l.contains(": CREATE"))
        .collect();
    assert_eq!(
        creates,
        [
            format!(
                "  2026-01-02T00 to 2026-01-02T23: CREATE TABLE … PARTITION OF fct {}",
                days[0]
            ),
            format!(
                "  2026-01-03T00 to 2026-01-03T01: CREATE TABLE … PARTITION OF fct {}",
                days[1]
            ),
        ],
        "{said}"
    );
    let dry = common::idem(&config_path, &["run", "fct", "--dry-run", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&dry.stdout).unwrap();
    let to_create = plan["partitions_to_create"].as_array().unwrap();
    assert_eq!(to_create.len(), 26, "{plan}");
    assert_eq!(to_create[5]["partition"], "2026-01-02T05", "{plan}");
    assert_eq!(
        to_create[5]["create"],
        serde_json::json!([days[0]]),
        "{plan}"
    );
    // Every hour of the 2nd fails advising its day, whichever fails first.
    let run = fct_run(&config_path, &["--json", "--to", "2026-01-02T23"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let advised = advised_bounds(&failure_of(&run));
    assert_eq!(advised, [days[0]]);
    let create = create_in_new_york(&days.map(String::from));
    let create: Vec<&str> = create.iter().map(String::as_str).collect();
    wh.execute_script(&create).await.unwrap();
    let again = fct_run(&config_path, &[]).output().unwrap();
    assert!(again.status.success(), "{again:?}");
    wh.close().await;
}

/// The row of `partition` in `idem status --format json`.
fn row_of<'a>(rows: &'a serde_json::Value, partition: &str) -> &'a serde_json::Value {
    rows.as_array()
        .and_then(|rows| rows.iter().find(|r| r["partition"] == partition))
        .unwrap_or_else(|| panic!("{partition}: {rows}"))
}

/// A statement someone stopped once (`pg_cancel_backend`) is not retried,
/// but need not recur: the run's advice is to finish, not to fix a cause
/// first (QA: it said "once the cause of these failures is fixed"). A
/// statement timeout, which the same load meets again, says to fix it.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_a_statement_cancelled_once_is_repeated_to_finish() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let slow = "select id, amount, dt from src cross join (select pg_sleep(30) as p) pause \
                where dt >= :start and dt < :end";
    let (config_path, config) = db.config(&common::replace_job("fct", "fct", "2026-01-01", slow));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&TWO_ROWS).await.unwrap();
    let child = fct_run(&config_path, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The load's statement, once it sleeps in the server.
    let started = Instant::now();
    let pid = loop {
        let mut sql = wh.sql();
        sql.push(
            "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'idem%' \
             AND state = 'active' AND query LIKE '%pg_sleep(30)%' AND pid <> pg_backend_pid()",
        );
        if let Some(row) = sql.query().fetch_optional(wh.pool()).await.unwrap() {
            break sqlx::Row::get::<i32, _>(&row, 0);
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no load began");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    wh.execute_script(&[format!("SELECT pg_cancel_backend({pid})").as_str()])
        .await
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("canceling statement due to user request"),
        "{stderr}"
    );
    assert!(stderr.contains("idem: to finish, repeat: "), "{stderr}");
    assert!(!stderr.contains("once the cause"), "{stderr}");

    // A statement timeout recurs: fix it (or raise it) first.
    let (config_path, _) = db.config_with(
        "statement_timeout = \"1s\"",
        &common::replace_job("fct", "fct", "2026-01-01", slow),
    );
    let out = fct_run(&config_path, &[]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("idem: once the cause of these failures is fixed, repeat: "),
        "{stderr}"
    );
    wh.close().await;
}

/// A load that waits on rows another session has written and not committed
/// (a fix by hand left open in a shell) past `lock_timeout` names that
/// session, which the server no longer says once the wait has ended, and
/// the statement that ends it; ended so, the load goes through.
async fn a_load_waiting_on_another_sessions_rows_names_it(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    // Asked every third of lock_timeout: a wait of 4 s is asked about
    // three times or four, however slow a busy machine makes the load's
    // start.
    let (config_path, config) = db.config_with(
        "lock_timeout = \"4s\"",
        &common::replace_job("fct", "fct", "2026-01-01", SELECT),
    );
    let wh = db.warehouse(&config).await;
    wh.execute_script(&TWO_ROWS).await.unwrap();
    let run = |args: &[&str]| fct_run(&config_path, args).output().unwrap();
    assert!(run(&[]).status.success());

    use sqlx::Connection;
    let mut other = sqlx::AnyConnection::connect(&db.url).await.unwrap();
    let id: i64 = sqlx::query_scalar(match kind {
        Kind::Postgres => "SELECT CAST(pg_backend_pid() AS bigint)",
        _ => "SELECT CAST(CONNECTION_ID() AS SIGNED)",
    })
    .fetch_one(&mut other)
    .await
    .unwrap();
    sqlx::raw_sql("BEGIN").execute(&mut other).await.unwrap();
    sqlx::raw_sql("UPDATE fct SET amount = amount + 1 WHERE id = 1")
        .execute(&mut other)
        .await
        .unwrap();

    let blocked = run(&["--json"]);
    assert!(!blocked.status.success());
    let error = failure_of(&blocked);
    let (session, end) = match kind {
        Kind::Postgres => (
            format!("the lock on fct is held by session {id} ("),
            format!("SELECT pg_terminate_backend({id})"),
        ),
        _ => (
            format!("the lock on fct is held by connection {id} ("),
            format!("KILL {id}"),
        ),
    };
    assert!(error.contains(&session), "{error}");
    assert!(error.contains("idle"), "{error}");
    if kind == Kind::Postgres {
        assert!(
            error.contains("after UPDATE fct SET amount = amount + 1 WHERE id = 1"),
            "{error}"
        );
    }
    assert!(error.ends_with(&end), "{error}");
    wh.execute_script(&[end.as_str()]).await.unwrap();
    drop(other);
    rerun_loads(&mut fct_run(&config_path, &[]), &wh, &config).await;
}

#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_a_load_waiting_on_another_sessions_rows_names_it() {
    a_load_waiting_on_another_sessions_rows_names_it(Kind::Postgres).await;
}

#[cfg_attr(not(idem_test_mysql), ignore = "needs IDEM_TEST_MYSQL_URL")]
#[tokio::test]
async fn mysql_a_load_waiting_on_another_sessions_rows_names_it() {
    a_load_waiting_on_another_sessions_rows_names_it(Kind::MySql).await;
}

/// A start that waits on another session's lock on the ledger (an
/// `ALTER`, a `LOCK TABLE`, a long maintenance) says it waited on a lock,
/// once: not that its role may not make the ledger (a failed probe read as
/// "not there"), after trying to make it three times over.
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
#[tokio::test]
async fn postgres_a_locked_ledger_is_a_lock_wait_not_a_missing_ledger() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (config_path, config) = db.config_with(
        "lock_timeout = \"1s\"",
        &common::replace_job("fct", "fct", "2026-01-01", SELECT),
    );
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .unwrap();
    use sqlx::Connection;
    let mut other = sqlx::PgConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql("BEGIN; LOCK TABLE idem.attempts IN ACCESS EXCLUSIVE MODE")
        .execute(&mut other)
        .await
        .unwrap();
    let began = Instant::now();
    let out = crate::common::idem_command()
        .arg("--config")
        .arg(&config_path)
        .args(["status", "fct"])
        .output()
        .unwrap();
    let took = began.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("lock timeout"), "{stderr}");
    assert!(!stderr.contains("permission"), "{stderr}");
    assert!(!stderr.contains("cannot make"), "{stderr}");
    // One wait of lock_timeout, where three rounds of three took 9.7 s.
    assert!(took < Duration::from_secs(5), "{took:?}: {stderr}");
    drop(other);
    let out = crate::common::idem_command()
        .arg("--config")
        .arg(&config_path)
        .args(["status", "fct"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A load waiting for its lock says so in its log after a second, rather
/// than show as running with nothing said (SQLite: another writer holds
/// the database's write lock); it loads once the lock is let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_waiting_for_its_lock_says_so() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let (_, config) = db.config(&common::replace_job("fct", "fct", "2026-01-01", SELECT));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&TWO_ROWS).await.unwrap();
    use sqlx::Connection;
    let mut writer = sqlx::SqliteConnection::connect(&db.url).await.unwrap();
    sqlx::raw_sql("BEGIN IMMEDIATE")
        .execute(&mut writer)
        .await
        .unwrap();
    let release = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(2500)).await;
        sqlx::raw_sql("COMMIT").execute(&mut writer).await.unwrap();
        writer
    });
    let backfill = idem::engine::Backfill::plan(
        &wh,
        &config.jobs[0],
        &idem::engine::Selection::default(),
        1,
        0,
    )
    .await
    .unwrap();
    let (summary, events) = common::run(&wh, &backfill).await;
    assert_eq!(summary.failed, 0, "{:?}", common::errors(&events));
    let log: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            idem::engine::Event::PartitionLog { line, .. } => Some(line.clone()),
            _ => None,
        })
        .collect();
    let waited = log
        .iter()
        .position(|l| l.starts_with("waiting for the lock covering fct"))
        .unwrap_or_else(|| panic!("{log:#?}"));
    let began = log
        .iter()
        .position(|l| l.starts_with("BEGIN IMMEDIATE"))
        .unwrap_or_else(|| panic!("{log:#?}"));
    assert!(waited < began, "{log:#?}");
    drop(release.await.unwrap());
    wh.close().await;
}

/// A process stopped (SIGSTOP) until this is dropped, which lets it go on
/// (SIGCONT), a test's panic included.
struct Stopped(u32);

impl Stopped {
    fn now(pid: u32) -> Stopped {
        let signalled = Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status()
            .unwrap();
        assert!(signalled.success());
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

/// QA: two runs of one partition, the second started while the first held
/// its lock, both read a history without the first's attempt and recorded
/// the same number (`idem log` showed `#1` twice). The second now records
/// the partition's next number once it holds the lock, says so in its log,
/// and its last event carries the number the ledger has. On MariaDB the
/// second run takes the path of a server without `RETURNING` (MySQL 8),
/// which reads the number back.
async fn runs_racing_one_partition_record_attempts_in_turn(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (path, config) = db.config(&common::replace_job(
        "race",
        "fct",
        "2026-01-01",
        &select_pausing(kind, 3.0),
    ));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 10, '2026-01-01')",
    ])
    .await
    .unwrap();
    let run = |no_returning: bool| {
        let mut c = crate::common::idem_command();
        c.arg("--config")
            .arg(&path)
            .args(["run", "race", "--json", "--yes"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if no_returning {
            c.env("IDEM_TEST_NO_RETURNING", "1");
        }
        c
    };
    let mut first = run(false).spawn().unwrap();
    let mut first_lines = BufReader::new(first.stdout.take().unwrap()).lines();
    let mut first_events = Vec::new();
    // The first run holds the partition's lock (its SELECT pauses 3 s):
    // stopped there, it holds it until the second run says it waits for
    // it, however slowly the second starts.
    for line in first_lines.by_ref() {
        let line = line.unwrap();
        let holding = line.contains("BEGIN IMMEDIATE") || line.contains(" taken\"");
        first_events.push(line);
        if holding {
            break;
        }
    }
    let stopped = Stopped::now(first.id());
    let mut second = run(kind == Kind::MySql).spawn().unwrap();
    let mut second_lines: Vec<String> = Vec::new();
    let mut second_out = BufReader::new(second.stdout.take().unwrap()).lines();
    for line in second_out.by_ref() {
        let line = line.unwrap();
        let waiting = line.contains("waiting for the lock covering");
        second_lines.push(line);
        if waiting {
            break;
        }
    }
    drop(stopped);
    second_lines.extend(second_out.map(Result::unwrap));
    let second = second.wait_with_output().unwrap();
    first_events.extend(first_lines.map(Result::unwrap));
    assert!(first.wait().unwrap().success(), "{first_events:#?}");
    let events = |lines: &[String]| -> Vec<serde_json::Value> {
        lines
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let first_events = events(&first_events);
    let second_events = events(&second_lines);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let attempt_of = |events: &[serde_json::Value], kind: &str| {
        events
            .iter()
            .find(|e| e["event"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {events:#?}"))["attempt"]
            .as_i64()
    };
    assert_eq!(attempt_of(&first_events, "partition_succeeded"), Some(1));
    // The second run read the history before the first recorded its
    // attempt (else this test raced nothing).
    assert_eq!(
        attempt_of(&second_events, "partition_started"),
        Some(1),
        "{second_events:#?}"
    );
    assert_eq!(
        attempt_of(&second_events, "partition_succeeded"),
        Some(2),
        "{second_events:#?}"
    );
    let said = second_events.iter().any(|e| {
        e["event"] == "partition_log"
            && e["line"]
                .as_str()
                .is_some_and(|l| l.starts_with("recorded as attempt 2, not 1: another run"))
    });
    assert!(said, "{second_events:#?}");
    let mut numbers: Vec<i64> = wh
        .attempts("race", None)
        .await
        .unwrap()
        .iter()
        .map(|a| a.attempt)
        .collect();
    numbers.sort();
    assert_eq!(numbers, [1, 2]);
    let log = common::stdout_ok(&common::idem(&path, &["log", "race"]));
    assert!(log.contains("#1") && log.contains("#2"), "{log}");
    wh.close().await;
}

mod racing {
    use super::*;
    on_every_engine!(runs_racing_one_partition_record_attempts_in_turn);
}

/// Whether a session of this database is waiting as `waiting` says: on
/// PostgreSQL a lock wait whose statement is like `statement`, on MariaDB a
/// session in that state whose statement is like it.
async fn a_session_waits(wh: &Warehouse, kind: Kind, waiting: &str, statement: &str) -> bool {
    use sqlx::Row;
    let query = match kind {
        Kind::Postgres => format!(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND wait_event_type = 'Lock' AND wait_event = '{waiting}' AND query LIKE '{statement}'"
        ),
        _ => format!(
            "SELECT COUNT(*) FROM information_schema.processlist WHERE db = DATABASE() \
             AND state = '{waiting}' AND info LIKE '{statement}'"
        ),
    };
    let n: i64 = sqlx::query(sqlx::AssertSqlSafe(query))
        .fetch_one(wh.pool())
        .await
        .unwrap()
        .try_get(0)
        .unwrap();
    n > 0
}

/// Waits, a minute at most, until `done` says so.
async fn wait_until<F: std::future::Future<Output = bool>>(
    what: &str,
    mut done: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done().await {
        assert!(Instant::now() < deadline, "still not {what} after a minute");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// QA: a run refused its partition's lock (another run held it past
/// `lock_timeout`) records its refusal outside any lock. When the holder
/// had inserted its own row and not yet committed it, neither read saw the
/// other's row, and `idem log` showed the refused attempt and the load
/// under one number. The number is now drawn under a lock of its own,
/// which the refused run waits for: its attempt comes after the holder's.
/// The holder is kept between its ledger row and its COMMIT by a lock the
/// test holds on the definitions table, written just after that row.
async fn a_refused_attempt_is_numbered_after_the_holders_uncommitted_one(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (path, config) = db.config(&common::replace_job("race", "fct", "2026-01-01", SELECT));
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 10, '2026-01-01')",
    ])
    .await
    .unwrap();
    // The refused run gives up on the partition's lock after 5 s.
    let short = db.path().join("short.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &short,
        text.replace("lock_timeout = \"20s\"", "lock_timeout = \"5s\""),
    )
    .unwrap();
    let run = |config: &std::path::Path| {
        let mut c = crate::common::idem_command();
        c.arg("--config")
            .arg(config)
            .args(["run", "race", "--json", "--yes"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    };
    let mut blocker = wh.pool().acquire().await.unwrap();
    let (block, unblock, definitions) = match kind {
        Kind::Postgres => (
            "BEGIN; LOCK TABLE idem.definitions IN EXCLUSIVE MODE",
            "COMMIT",
            "relation",
        ),
        _ => (
            "LOCK TABLES idem_definitions READ",
            "UNLOCK TABLES",
            "Waiting for table metadata lock",
        ),
    };
    sqlx::raw_sql(sqlx::AssertSqlSafe(block))
        .execute(&mut *blocker)
        .await
        .unwrap();

    let holder = run(&path).spawn().unwrap();
    wait_until("holding before its COMMIT", || {
        a_session_waits(&wh, kind, definitions, "INSERT INTO %definitions%")
    })
    .await;
    let mut refused = run(&short).spawn().unwrap();
    // Refused, it records its attempt: at once (the defect), or once the
    // holder's number is committed (waiting on the numbering lock).
    let numbering = match kind {
        Kind::Postgres => ("advisory", "%count(pg_advisory_xact_lock%"),
        _ => ("User lock", "%idem-ledger%"),
    };
    wait_until("recorded or waiting to number", || {
        let exited = refused.try_wait().unwrap().is_some();
        let wh = &wh;
        async move { exited || a_session_waits(wh, kind, numbering.0, numbering.1).await }
    })
    .await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(unblock))
        .execute(&mut *blocker)
        .await
        .unwrap();
    drop(blocker);
    let holder_out = holder.wait_with_output().unwrap();
    assert!(
        holder_out.status.success(),
        "{}",
        String::from_utf8_lossy(&holder_out.stderr)
    );
    refused.wait().unwrap();
    let attempts = wh.attempts("race", None).await.unwrap();
    let of = |status: AttemptStatus| {
        attempts
            .iter()
            .filter(|a| a.status == status)
            .map(|a| a.attempt)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        of(AttemptStatus::Refused).first(),
        Some(&2),
        "{attempts:#?}"
    );
    assert_eq!(
        of(AttemptStatus::Succeeded).first(),
        Some(&1),
        "{attempts:#?}"
    );
    let mut numbers: Vec<i64> = attempts.iter().map(|a| a.attempt).collect();
    numbers.sort();
    numbers.dedup();
    assert_eq!(numbers.len(), attempts.len(), "{attempts:#?}");
    wh.close().await;
}

mod refused_numbers {
    use super::*;
    on_server_engines!(a_refused_attempt_is_numbered_after_the_holders_uncommitted_one);
}
