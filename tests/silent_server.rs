//! A warehouse that stops answering outside a load (a hung primary, a
//! failover in progress, a network dropping every packet): it takes
//! connections, acknowledges what is sent and answers nothing. The server
//! is a throwaway PostgreSQL cluster of the test's own whose processes the
//! test stops (SIGSTOP) and lets go on (SIGCONT), never the shared one.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::throwaway::{Cluster, Throwaway};
use sqlx::{Connection, Executor, PgConnection, Row};

/// A spawned idem, killed if the test ends before it does.
struct Spawned(Child);

impl Spawned {
    fn idem(config: &std::path::Path, args: &[&str]) -> Spawned {
        let child = crate::common::idem_command()
            .arg("--config")
            .arg(config)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("idem");
        Spawned(child)
    }

    /// Its exit code and stderr, once it ended within `within` (else the
    /// test fails, saying what it waited for).
    async fn ended_within(&mut self, within: Duration, what: &str) -> (Option<i32>, String) {
        let since = Instant::now();
        let status = loop {
            if let Some(status) = self.0.try_wait().expect("idem") {
                break status;
            }
            assert!(
                since.elapsed() < within,
                "{what} still waits on a server that stopped answering {:?} ago",
                since.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let mut stderr = String::new();
        let mut pipe = self.0.stderr.take().expect("stderr");
        std::io::Read::read_to_string(&mut pipe, &mut stderr).expect("stderr");
        (status.code(), stderr)
    }
}

impl Spawned {
    fn signal(&self, signal: &str) {
        let pid = self.0.id().to_string();
        let sent = Command::new("kill").args([signal, &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill {signal} {pid}");
    }

    /// It ended within `within` with exit 1, saying the warehouse is not
    /// answering.
    async fn says_not_answering(&mut self, within: Duration, what: &str) {
        let (code, stderr) = self.ended_within(within, what).await;
        assert_eq!(code, Some(1), "{what}: {stderr}");
        assert!(stderr.contains("is not answering"), "{what}: {stderr}");
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A job `fct` of two days from `src` on the server at `url`, and its
/// config (in the temp dir, kept while the test holds it): connect_timeout
/// 2 s, lock_timeout a minute (a wait on a lock is never what ends a
/// command here).
async fn two_days(url: &str) -> (PgConnection, tempfile::TempDir, std::path::PathBuf) {
    let mut admin = PgConnection::connect(url).await.expect("connect");
    for ddl in common::TWO_DAYS {
        admin.execute(ddl).await.expect("setup");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("idem.toml");
    let job = common::replace_job(
        "fct",
        "fct",
        "2026-01-02",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    std::fs::write(
        &config,
        format!(
            "[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"2s\"\nlock_timeout = \"60s\"\n\n{job}"
        ),
    )
    .expect("config");
    (admin, dir, config)
}

/// A session of its own on the server at `url` holding `LOCK TABLE
/// tables` in an open transaction (COMMIT lets it go).
async fn locking(url: &str, tables: &str) -> PgConnection {
    let mut holder = PgConnection::connect(url).await.expect("connect");
    holder.execute("BEGIN").await.expect("begin");
    holder
        .execute(sqlx::AssertSqlSafe(format!("LOCK TABLE {tables}")))
        .await
        .expect("lock");
    holder
}

/// [`two_days`], both days loaded.
async fn two_days_loaded(url: &str) -> (PgConnection, tempfile::TempDir, std::path::PathBuf) {
    let (admin, dir, config) = two_days(url).await;
    common::stdout_ok(&common::idem(&config, &["run", "fct"]));
    (admin, dir, config)
}

const LOCK_WAITERS: &str = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'";

/// Another session's lock on `table`, taken once idem's first `reads`
/// reads of it went through (`start_idem`'s commands, each waiting on a
/// lock meanwhile): a session that asked for the table behind idem's read
/// holds it when idem's next read of it comes, which waits. Returns that
/// session, holding the lock, and the commands.
async fn held_after_reads(
    url: &str,
    admin: &mut PgConnection,
    table: &str,
    reads: usize,
    start_idem: impl FnOnce() -> Vec<Spawned>,
) -> (PgConnection, Vec<Spawned>) {
    let lock = format!("LOCK TABLE {table}");
    let mut holder = locking(url, table).await;
    let idem = start_idem();
    let n = idem.len() as i64;
    assert!(
        common::poll_count(admin, LOCK_WAITERS, 300, |w| w >= n).await,
        "idem never read {table}"
    );
    for read in 1..=reads {
        holder = next_read_held(url, admin, (table, &lock), holder, (n, read)).await;
    }
    (holder, idem)
}

/// Lets idem's `n` commands waiting on `holder`'s `lock` of `table` go on
/// with their read `read`, their next read of it held (by the session
/// returned) as it comes.
async fn next_read_held(
    url: &str,
    admin: &mut PgConnection,
    (table, lock): (&str, &str),
    mut holder: PgConnection,
    (n, read): (i64, usize),
) -> PgConnection {
    let mut next = PgConnection::connect(url).await.expect("connect");
    let lock = lock.to_string();
    let queued = tokio::spawn(async move {
        next.execute("BEGIN").await.expect("begin");
        next.execute(sqlx::AssertSqlSafe(lock)).await.expect("lock");
        next
    });
    assert!(
        common::poll_count(admin, LOCK_WAITERS, 300, |w| w > n).await,
        "no lock queued behind idem's read {read} of {table}"
    );
    holder.execute("COMMIT").await.expect("commit");
    let holder = queued.await.expect("the next lock");
    assert!(
        common::poll_count(admin, LOCK_WAITERS, 300, |w| w >= n).await,
        "idem never read {table} after its read {read}"
    );
    holder
}

/// [`held_after_reads`] of `start_idem`'s one command, its reads of
/// `table` let through one by one until the one waiting is a statement
/// that holds `statement` (a count of the reads before it would depend
/// on how many of them go on a connection at once).
async fn held_at(
    url: &str,
    admin: &mut PgConnection,
    (table, statement): (&str, &str),
    start_idem: impl FnOnce() -> Spawned,
) -> (PgConnection, Spawned) {
    let (mut holder, mut idem) =
        held_after_reads(url, admin, table, 0, || vec![start_idem()]).await;
    let lock = format!("LOCK TABLE {table}");
    let waiting = "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                   AND query NOT LIKE 'LOCK TABLE%'";
    for read in 1..=20 {
        let waits: Vec<String> = sqlx::query(waiting)
            .fetch_all(&mut *admin)
            .await
            .expect("the statement waiting")
            .iter()
            .map(|r| r.get(0))
            .collect();
        if waits.iter().any(|w| w.contains(statement)) {
            return (holder, idem.remove(0));
        }
        holder = next_read_held(url, admin, (table, &lock), holder, (1, read)).await;
    }
    panic!("idem never read {table} with {statement}");
}

/// `start_idem`'s one command, caught on `table` after `reads` reads of it
/// ([`held_after_reads`]), the server then stopped: it ends within 30 s
/// saying the warehouse is not answering (else the test fails naming
/// `what`). The server goes on and the lock is let go after.
async fn ends_not_answering_on(
    cluster: &Cluster,
    admin: &mut PgConnection,
    (table, reads): (&str, usize),
    start_idem: impl FnOnce() -> Spawned,
    what: &str,
) {
    let (mut holder, mut caught) =
        held_after_reads(&cluster.url(), admin, table, reads, || vec![start_idem()]).await;
    cluster.freeze();
    caught[0]
        .says_not_answering(Duration::from_secs(30), what)
        .await;
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");
}

/// The server stops answering while `idem status`, `idem jobs` and `idem
/// run --dry-run` read the target's states (another session's `LOCK TABLE`, so
/// that each is caught after they connected, a statement sent). Each
/// ends within seconds, exit 1, saying the warehouse is not answering,
/// rather than wait for a reply that never comes (lock_timeout is the
/// server's to enforce, and it is stopped). Once the server goes on, the
/// states are as they were and a run loads each partition once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reads_end_when_the_server_stops_answering() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, config) = two_days(&url).await;

    let mut holder = locking(&url, "fct").await;
    let mut status = Spawned::idem(&config, &["status"]);
    let mut jobs = Spawned::idem(&config, &["jobs"]);
    let mut preview = Spawned::idem(&config, &["run", "fct", "--dry-run"]);
    assert!(
        common::poll_count(&mut admin, LOCK_WAITERS, 300, |n| n >= 3).await,
        "status, jobs and run --dry-run never waited on the locked target"
    );

    cluster.freeze();
    for (idem, what) in [
        (&mut status, "idem status"),
        (&mut jobs, "idem jobs"),
        (&mut preview, "idem run --dry-run"),
    ] {
        let (code, stderr) = idem.ended_within(Duration::from_secs(30), what).await;
        assert_eq!(code, Some(1), "{what}: {stderr}");
        assert!(stderr.contains("is not answering"), "{what}: {stderr}");
    }
    cluster.thaw();

    holder.execute("COMMIT").await.expect("commit");
    let out = common::idem(&config, &["status", "--format", "csv"]);
    let states = common::stdout_ok(&out);
    assert_eq!(states.matches(",missing,").count(), 2, "{states}");
    common::stdout_ok(&common::idem(&config, &["run", "fct"]));
    let rows: Vec<(String, i64)> =
        sqlx::query("SELECT CAST(dt AS text), count(*) FROM fct GROUP BY dt ORDER BY dt")
            .fetch_all(&mut admin)
            .await
            .expect("rows")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
    assert_eq!(
        rows,
        [("2026-01-01".to_string(), 1), ("2026-01-02".to_string(), 1)]
    );
    let attempts = attempts_in_ledger(&mut admin).await;
    assert_eq!(
        attempts, 2,
        "one attempt a partition, none while it was silent"
    );
}

/// The server stops answering while `idem log`, `idem verify` and `idem
/// diff` check idem's ledger right after connecting (another session's
/// `LOCK TABLE` of it catches each there, a statement sent): each ends
/// within seconds, exit 1, saying the warehouse is not answering. QA: they
/// waited forever, connecting being bounded only until its first session
/// was open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connecting_ends_when_the_server_stops_answering() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, config) = two_days_loaded(&url).await;
    let mut holder = locking(&url, "idem.attempts").await;
    let mut log = Spawned::idem(&config, &["log", "fct"]);
    let mut verify = Spawned::idem(&config, &["verify", "fct", "2026-01-01"]);
    let mut diff = Spawned::idem(&config, &["diff", "fct"]);
    assert!(
        common::poll_count(&mut admin, LOCK_WAITERS, 300, |n| n >= 3).await,
        "log, verify and diff never waited on the locked ledger"
    );
    cluster.freeze();
    let within = Duration::from_secs(30);
    log.says_not_answering(within, "idem log").await;
    verify.says_not_answering(within, "idem verify").await;
    diff.says_not_answering(within, "idem diff").await;
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");
    let out = common::idem(&config, &["log", "fct"]);
    assert_eq!(common::stdout_ok(&out).matches("succeeded").count(), 2);
}

/// The server stops answering while `idem log` reads the attempts, once
/// connected: it ends within seconds, exit 1, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_log_ends_when_the_server_stops_answering_mid_read() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, config) = two_days_loaded(&url).await;
    let within = Duration::from_secs(30);

    // The ledger's check at connect reads the attempts once; log's read next.
    let (mut holder, mut log) = held_after_reads(&url, &mut admin, "idem.attempts", 1, || {
        vec![Spawned::idem(&config, &["log", "fct"])]
    })
    .await;
    cluster.freeze();
    log[0].says_not_answering(within, "idem log").await;
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");

    let out = common::idem(&config, &["log", "fct"]);
    assert_eq!(common::stdout_ok(&out).matches("succeeded").count(), 2);
}

/// Ctrl-C or SIGTERM to `idem status`, `idem jobs` or `idem log` waiting on
/// a server that stopped answering ends it at once, saying so, exit 130
/// (as a run's does): QA, the default handlers ended them without a word,
/// SIGTERM's exit 143.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_signal_ends_reads_of_a_silent_server_at_once() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, config) = two_days_loaded(&url).await;
    let mut holder = locking(&url, "idem.attempts").await;
    let mut status = Spawned::idem(&config, &["status"]);
    let mut jobs = Spawned::idem(&config, &["jobs"]);
    let mut log = Spawned::idem(&config, &["log", "fct"]);
    assert!(
        common::poll_count(&mut admin, LOCK_WAITERS, 300, |n| n >= 3).await,
        "status, jobs and log never waited on the locked ledger"
    );
    cluster.freeze();
    for (idem, signal, what, said) in [
        (&mut status, "-TERM", "idem status", "SIGTERM"),
        (&mut jobs, "-INT", "idem jobs", "Ctrl-C"),
        (&mut log, "-TERM", "idem log", "SIGTERM"),
    ] {
        idem.signal(signal);
        // Well before the silence would end it (2 s, then two connects).
        let (code, stderr) = idem.ended_within(Duration::from_secs(2), what).await;
        assert_eq!(code, Some(130), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!("{said}: cancelled; it only reads")),
            "{what}: {stderr}"
        );
    }
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");
}

/// The server stops answering while `idem diff JOB PARTITION` reads: the
/// target's rows (its states), then the definition the partition was
/// loaded under. Each time it ends within seconds, exit 1, saying the
/// warehouse is not answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_diff_ends_when_the_server_stops_answering_mid_read() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, config) = two_days_loaded(&url).await;
    // Loaded under another definition: the partitions are stale, and diff
    // reads the one they were loaded under.
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, text.replace("dt < :end", "dt < :end and id > 0")).expect("config");
    let diff = || Spawned::idem(&config, &["diff", "fct", "2026-01-01"]);
    let reading_rows = ("fct", 0);
    ends_not_answering_on(
        &cluster,
        &mut admin,
        reading_rows,
        diff,
        "idem diff reading the target",
    )
    .await;
    // The states read the definitions once (the job's own loads); diff's
    // read of the old definition comes next.
    let reading_definition = ("idem.definitions", 1);
    ends_not_answering_on(
        &cluster,
        &mut admin,
        reading_definition,
        diff,
        "idem diff reading the old definition",
    )
    .await;

    let out = common::idem(&config, &["diff", "fct", "2026-01-01"]);
    assert!(
        common::stdout_ok(&out).contains("was loaded under definition"),
        "{out:?}"
    );
}

/// The server stops answering while `idem verify JOB PARTITION` proves it,
/// once connected: while its SQL's columns are read (`src` locked, before
/// the proof takes its partition's lock) and while a run writes the target
/// (`fct` locked). Each time it ends within seconds, exit 1, saying the
/// warehouse is not answering; nothing is left behind. QA: both waited past
/// 30 s, the first with nothing watching it (the load's watch begins once
/// it holds its lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_verify_ends_when_the_server_stops_answering_mid_proof() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, config) = two_days_loaded(&url).await;
    let verify = || Spawned::idem(&config, &["verify", "fct", "2026-01-01"]);
    for table in ["src", "fct"] {
        let what = format!("idem verify waiting on {table}");
        ends_not_answering_on(&cluster, &mut admin, (table, 0), verify, &what).await;
    }

    let out = common::idem(&config, &["verify", "fct", "2026-01-01"]);
    assert!(common::stdout_ok(&out).contains("idempotent: fct 2026-01-01"));
    let out = common::idem(&config, &["log", "fct"]);
    assert_eq!(common::stdout_ok(&out).matches("succeeded").count(), 2);
}

/// The server stops answering while `idem log OLDNAME` looks for a renamed
/// job's old name in the ledger: connecting (the attempts locked), then
/// reading the names (the definitions locked). Each time it ends within
/// seconds, exit 1, saying the warehouse is not answering. QA: caught
/// connecting it said there was no job of that name (exit 2), as if the
/// name were mistyped; caught reading the names it waited forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_old_job_name_is_not_called_unknown_when_the_server_stops_answering() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, config) = two_days(&url).await;
    let text = std::fs::read_to_string(&config).expect("config");
    let renamed = text.replace("name = \"fct\"", "name = \"fct_new\"");
    assert_ne!(renamed, text, "the job's name line");
    common::stdout_ok(&common::idem(&config, &["run", "fct"]));
    std::fs::write(&config, renamed).expect("config");
    let log = || Spawned::idem(&config, &["log", "fct"]);
    for (table, when) in [
        ("idem.attempts", "connecting"),
        ("idem.definitions", "reading the ledger's names"),
    ] {
        let what = format!("idem log OLDNAME {when}");
        ends_not_answering_on(&cluster, &mut admin, (table, 0), log, &what).await;
    }

    let out = common::idem(&config, &["log", "fct"]);
    assert_eq!(common::stdout_ok(&out).matches("succeeded").count(), 2);
}

/// `read`, caught waiting on another session's lock of `tables` (its
/// statement sent), and the server then stopped: it ends within 30 s (else
/// the test fails, saying what waited); its answer.
async fn caught_waiting<T>(
    cluster: &Cluster,
    admin: &mut PgConnection,
    tables: &str,
    what: &str,
    read: impl std::future::Future<Output = T>,
) -> T {
    let mut holder = locking(&cluster.url(), tables).await;
    tokio::pin!(read);
    let waited = tokio::select! {
        _ = &mut read => panic!("{what} never waited on {tables}"),
        waited = common::poll_count(admin, LOCK_WAITERS, 300, |n| n >= 1) => waited,
    };
    assert!(waited, "{what} never waited on {tables}");
    cluster.freeze();
    let ended = tokio::time::timeout(Duration::from_secs(30), &mut read).await;
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");
    ended.unwrap_or_else(|_| panic!("{what} still waits on a server that stopped answering"))
}

/// The server stops answering while the console reads beside its refresh,
/// each caught once its statement is sent: the check for history under
/// other job names (the ledger locked), the run dialog's check of the
/// target's native partitions (the partitioned target locked), and the
/// checks before a console run (a ledger short of an index, made then).
/// Each ends within seconds, the run refused saying the warehouse is not
/// answering and that nothing was run. QA: each waited for good, holding
/// one of the console's connections, and the run sat "starting".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_console_reads_beside_a_refresh_end_when_the_server_stops_answering() {
    use idem::partition::{Grain, Partition, RangeEnd};
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, path) = two_days(&url).await;
    for ddl in [
        "DROP TABLE fct",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL) PARTITION BY RANGE (dt)",
        "CREATE TABLE fct_january PARTITION OF fct FOR VALUES FROM ('2026-01-01') TO ('2026-02-01')",
    ] {
        admin.execute(ddl).await.expect(ddl);
    }
    common::stdout_ok(&common::idem(&path, &["run", "fct"]));
    admin
        .execute("DROP INDEX idem.attempts_by_attempt")
        .await
        .expect("drop an index of the ledger");
    let config = idem::config::load(&path).expect("config");
    let wh = idem::warehouse::Warehouse::connect_to_read(&config.warehouse, 4)
        .await
        .expect("connect");
    let job = &config.jobs[0];
    let day = |d| Partition::parse(Grain::Day, d, RangeEnd::From).expect("day");
    let cover = idem::tui::app::CoverRequest {
        id: 1,
        job: job.clone(),
        partitions: vec![day("2026-01-01"), day("2026-01-02")],
    };

    let ledger = "idem.attempts, idem.definitions";
    let history = idem::tui::read_history_elsewhere(&wh, &config);
    caught_waiting(&cluster, &mut admin, ledger, "the history check", history).await;
    let covered = idem::tui::read_cover(&wh, &cover);
    caught_waiting(&cluster, &mut admin, "fct", "the partition check", covered).await;
    let checks = idem::tui::refusal_before_a_run(&wh, std::iter::once(job), None);
    let refusal = caught_waiting(&cluster, &mut admin, ledger, "a run's checks", checks).await;
    let refusal = refusal.expect("the run refused");
    assert!(refusal.contains("is not answering"), "{refusal}");
    assert!(refusal.contains("nothing was run"), "{refusal}");

    // The server answering again, the checks pass and make the ledger.
    let checks = idem::tui::refusal_before_a_run(&wh, std::iter::once(job), None).await;
    assert_eq!(checks, None);
    wh.close().await;
}

/// A two-day job whose target is partitioned (January), loaded once, its
/// ledger then short of an index (a run makes it again before it starts).
async fn partitioned_and_loaded(
    url: &str,
) -> (PgConnection, tempfile::TempDir, std::path::PathBuf) {
    let (mut admin, dir, config) = two_days(url).await;
    for ddl in [
        "DROP TABLE fct",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL) PARTITION BY RANGE (dt)",
        "CREATE TABLE fct_january PARTITION OF fct FOR VALUES FROM ('2026-01-01') TO ('2026-02-01')",
    ] {
        admin.execute(ddl).await.expect(ddl);
    }
    common::stdout_ok(&common::idem(&config, &["run", "fct"]));
    admin
        .execute("DROP INDEX idem.attempts_by_attempt")
        .await
        .expect("drop an index of the ledger");
    (admin, dir, config)
}

/// `idem` caught waiting on a lock of `table` (`LOCK TABLE`'s words, after
/// `reads` reads waited on it), then the
/// server stopped: it ends within 30 s, exit 1, saying the warehouse is not
/// answering and that nothing was run; the ledger holds the first run's
/// two attempts of `fct`, none since.
async fn caught_says_nothing_was_run(
    cluster: &Cluster,
    admin: &mut PgConnection,
    config: &std::path::Path,
    args: &[&str],
    (table, reads): (&str, usize),
    what: &str,
) {
    let idem = || vec![Spawned::idem(config, args)];
    let (mut holder, mut caught) =
        held_after_reads(&cluster.url(), admin, table, reads, idem).await;
    cluster.freeze();
    let ended = caught[0].ended_within(Duration::from_secs(30), what).await;
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");
    said_nothing_was_run(admin, ended, what).await;
}

/// A command that `ended` (its exit code, its stderr) exit 1, saying the
/// warehouse is not answering and that nothing was run; the ledger holds
/// the first run's two attempts of `fct`, none since.
/// How many attempts the ledger holds.
async fn attempts_in_ledger(admin: &mut PgConnection) -> i64 {
    sqlx::query("SELECT count(*) FROM idem.attempts")
        .fetch_one(admin)
        .await
        .expect("ledger")
        .get(0)
}

async fn said_nothing_was_run(
    admin: &mut PgConnection,
    (code, stderr): (Option<i32>, String),
    what: &str,
) {
    assert_eq!(code, Some(1), "{what}: {stderr}");
    assert!(stderr.contains("is not answering"), "{what}: {stderr}");
    assert!(stderr.contains("nothing was run"), "{what}: {stderr}");
    let attempts: i64 = sqlx::query("SELECT count(*) FROM idem.attempts WHERE job = 'fct'")
        .fetch_one(&mut *admin)
        .await
        .expect("ledger")
        .get(0);
    assert_eq!(attempts, 2, "{what}: the first run's attempts, none since");
}

/// The server stops answering while `idem run` makes a ledger short of an
/// index before it starts (the attempts locked against that, not against
/// the reads of them): it ends within seconds, exit 1, saying the warehouse is not
/// answering and that nothing was run. QA: it waited for good, the checks
/// before a run being watched in the console only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_run_ends_when_the_server_stops_answering_while_it_makes_the_ledger() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let (mut admin, _dir, config) = partitioned_and_loaded(&cluster.url()).await;
    let args = ["run", "fct", "--yes"];
    let what = "idem run making the ledger";
    caught_says_nothing_was_run(
        &cluster,
        &mut admin,
        &config,
        &args,
        ("idem.attempts IN EXCLUSIVE MODE", 0),
        what,
    )
    .await;
}

/// The server stops answering while `idem run --dry-run` reads which
/// windows no native partition of the target covers (the target locked
/// once the states read it): it ends within seconds, exit 1, saying the
/// warehouse is not answering and that nothing was run. QA: it waited for
/// good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_dry_run_ends_when_the_server_stops_answering_while_it_reads_partitions() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let (mut admin, _dir, config) = partitioned_and_loaded(&cluster.url()).await;
    let args = ["run", "fct", "--dry-run"];
    let what = "idem run --dry-run reading the target's partitions";
    caught_says_nothing_was_run(&cluster, &mut admin, &config, &args, ("fct", 2), what).await;
}

/// The server stops answering while `idem run` describes the job's SELECT
/// before its first load (its source locked): it ends within seconds, exit
/// 1, saying the warehouse is not answering and that nothing was run. QA:
/// it waited for good, the describe being watched by nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_run_ends_when_the_server_stops_answering_while_it_describes_the_select() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let (mut admin, _dir, config) = two_days_loaded(&cluster.url()).await;
    let args = ["run", "fct", "--yes"];
    let what = "idem run describing the job's SELECT";
    caught_says_nothing_was_run(&cluster, &mut admin, &config, &args, ("src", 0), what).await;
}

/// The server stops answering while a load waits for its partition's lock
/// (another run holds it, itself waiting on the locked target): the waiting
/// run ends within seconds, exit 1, saying the warehouse is not answering,
/// and records nothing for the partition it never started. QA: it waited
/// for good, a load being watched only once it held its lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_load_waiting_for_its_lock_ends_when_the_server_stops_answering() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, config) = two_days_loaded(&url).await;
    let day = [
        "run",
        "fct",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-01",
        "--yes",
    ];
    let (mut holder, holding) = held_after_reads(&url, &mut admin, "fct", 0, || {
        vec![Spawned::idem(&config, &day)]
    })
    .await;
    let mut waiting = Spawned::idem(&config, &day);
    let lock_waits = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted";
    assert!(
        common::poll_count(&mut admin, lock_waits, 300, |n| n >= 1).await,
        "the second run never waited for the partition's lock"
    );
    cluster.freeze();
    waiting
        .says_not_answering(Duration::from_secs(30), "a load waiting for its lock")
        .await;
    drop(holding);
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");
    let attempts = attempts_in_ledger(&mut admin).await;
    assert_eq!(attempts, 2, "the first run's attempts, none since");
}

/// The server stops answering while the preview counts the job's source
/// (its source locked): `idem run --dry-run`'s count for each partition
/// (`rows_source`) and the console's run dialog's. The dry run ends within
/// seconds, exit 1, saying the warehouse is not answering and that nothing
/// was run; the dialog's count ends so too, saying so. QA: both waited for
/// good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_previews_source_count_ends_when_the_server_stops_answering() {
    use idem::partition::{Grain, Partition, RangeEnd};
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let (mut admin, _dir, path) = two_days_loaded(&cluster.url()).await;
    let args = ["run", "fct", "--dry-run"];
    let what = "idem run --dry-run counting the source";
    caught_says_nothing_was_run(&cluster, &mut admin, &path, &args, ("src", 0), what).await;

    let config = idem::config::load(&path).expect("config");
    let wh = idem::warehouse::Warehouse::connect_to_read(&config.warehouse, 4)
        .await
        .expect("connect");
    let day = |d| Partition::parse(Grain::Day, d, RangeEnd::From).expect("day");
    let request = idem::tui::app::ReconcileRequest {
        id: 1,
        job: config.jobs[0].clone(),
        first: day("2026-01-01"),
        last: day("2026-01-02"),
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let count = idem::tui::reconcile(&wh, &request, &cancel);
    let counted = caught_waiting(&cluster, &mut admin, "src", "the dialog's count", count).await;
    let idem::tui::Msg::Reconciled { result, .. } = counted else {
        panic!("not a count: {counted:?}");
    };
    let error = result.expect_err("the count ended by the silence");
    assert!(error.contains("is not answering"), "{error}");
    wh.close().await;
}

/// The server stops answering as a run begins, while it reads the
/// partitions' last loads from the ledger (the ledger locked): the run ends
/// within seconds, every partition not started, saying the warehouse is
/// not answering; nothing is recorded. QA: it waited for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_run_ends_when_the_server_stops_answering_as_it_begins() {
    use idem::engine::{Backfill, Selection};
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let (mut admin, _dir, path) = two_days_loaded(&cluster.url()).await;
    let config = idem::config::load(&path).expect("config");
    let wh = idem::warehouse::Warehouse::connect_to_read(&config.warehouse, 4)
        .await
        .expect("connect");
    let backfill = Backfill::plan(&wh, &config.jobs[0], &Selection::default(), 2, 0)
        .await
        .expect("plan");
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let run = idem::engine::run(&wh, &backfill, &tx, &cancel);
    let ledger = "idem.attempts, idem.definitions";
    let summary = caught_waiting(&cluster, &mut admin, ledger, "the run's start", run).await;
    let why = summary.unreachable.expect("stopped as unreachable");
    assert!(why.contains("is not answering"), "{why}");
    assert_eq!((summary.not_started, summary.failed), (2, 0));
    let attempts = attempts_in_ledger(&mut admin).await;
    assert_eq!(attempts, 2, "the first run's attempts, none since");
    wh.close().await;
}

/// The server stops answering while a run records a partition's failure
/// in the ledger (the job writes outside its window; the attempts locked
/// against writes): the run ends within seconds, the failure said but not
/// recorded. QA: it waited for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_failure_not_recorded_when_the_server_stops_answering() {
    use idem::engine::{Backfill, Selection};
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let (mut admin, _dir, path) = two_days_loaded(&cluster.url()).await;
    let text = std::fs::read_to_string(&path).expect("config");
    let outside = text.replace("select id, dt from", "select id, dt + 1 as dt from");
    assert_ne!(outside, text, "the job's SELECT");
    std::fs::write(&path, outside).expect("config");
    let config = idem::config::load(&path).expect("config");
    let wh = idem::warehouse::Warehouse::connect_to_read(&config.warehouse, 4)
        .await
        .expect("connect");
    let backfill = Backfill::plan(&wh, &config.jobs[0], &Selection::default(), 1, 0)
        .await
        .expect("plan");
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let run = idem::engine::run(&wh, &backfill, &tx, &cancel);
    let ledger = "idem.attempts IN EXCLUSIVE MODE";
    let summary = caught_waiting(&cluster, &mut admin, ledger, "recording a failure", run).await;
    assert!(summary.failed >= 1, "{summary:?}");
    let attempts = attempts_in_ledger(&mut admin).await;
    assert_eq!(attempts, 2, "the first run's attempts, none since");
    wh.close().await;
}

/// [`two_days_loaded`], with a job `rdr` that reads what `fct` loads
/// (its target `rdr`, both days loaded): a run of `fct` marks the ledger
/// before it starts and reads what it changed after it, for the partitions
/// it leaves stale downstream.
async fn two_days_read_downstream(
    url: &str,
) -> (PgConnection, tempfile::TempDir, std::path::PathBuf) {
    let (mut admin, dir, config) = two_days(url).await;
    admin
        .execute("CREATE TABLE rdr (id INTEGER NOT NULL, dt DATE NOT NULL)")
        .await
        .expect("the reader's target");
    let reader = common::replace_job(
        "rdr",
        "rdr",
        "2026-01-02",
        "select id, dt from fct where dt >= :start and dt < :end",
    );
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, format!("{text}\n{reader}")).expect("config");
    common::stdout_ok(&common::idem(&config, &["run", "fct"]));
    common::stdout_ok(&common::idem(&config, &["run", "rdr"]));
    (admin, dir, config)
}

/// A run of the first day of `fct`, whose job `rdr` reads.
const FIRST_DAY_READ_DOWNSTREAM: [&str; 7] = [
    "run",
    "fct",
    "--from",
    "2026-01-01",
    "--to",
    "2026-01-01",
    "--yes",
];

/// The server stops answering while `idem run` of a job others read marks
/// where its ledger stands before it starts (the attempts locked once the
/// reads of them before it went through: connecting's, the checks before a
/// run, the states'): it ends within seconds, exit 1, saying the
/// warehouse is not answering and that nothing was run. QA: it waited for
/// good, the mark being watched by nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_run_ends_when_the_server_stops_answering_as_it_marks_the_ledger() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let (mut admin, _dir, config) = two_days_read_downstream(&cluster.url()).await;
    let (mut holder, mut run) = held_at(
        &cluster.url(),
        &mut admin,
        ("idem.attempts", "SELECT COALESCE(MAX(id), 0), COUNT(*)"),
        || Spawned::idem(&config, &FIRST_DAY_READ_DOWNSTREAM),
    )
    .await;
    cluster.freeze();
    let what = "idem run marking the ledger";
    let ended = run.ended_within(Duration::from_secs(30), what).await;
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");
    said_nothing_was_run(&mut admin, ended, what).await;
}

/// The server stops answering once `idem run` of a job others read has
/// loaded, while it reads what the run changed for the partitions it left
/// stale downstream (the attempts locked after the run's own reads and its
/// load's write of them went through): the run ends within seconds, exit 0 (its
/// partition loaded), saying which partitions it made stale could not be
/// read for a warehouse not answering. QA: it waited for good after its
/// outcome, the read being watched by nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_run_ends_when_the_server_stops_answering_as_it_reads_what_it_made_stale() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, _dir, config) = two_days_read_downstream(&url).await;
    let (mut holder, mut run) = held_at(
        &url,
        &mut admin,
        ("idem.attempts", "SELECT run_id, job, partition_key"),
        || Spawned::idem(&config, &FIRST_DAY_READ_DOWNSTREAM),
    )
    .await;
    cluster.freeze();
    let what = "idem run reading what it made stale";
    let (code, stderr) = run.ended_within(Duration::from_secs(30), what).await;
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");
    assert_eq!(code, Some(0), "{what}: {stderr}");
    assert!(stderr.contains("2026-01-01 ■ loaded"), "{what}: {stderr}");
    assert!(
        stderr.contains("which partitions downstream this run made stale could not be read"),
        "{what}: {stderr}"
    );
    assert!(stderr.contains("is not answering"), "{what}: {stderr}");
}

/// The server stops answering while `idem init` reads the range of dates
/// of a table's date column (`src` locked): it ends, exit 1, saying the
/// warehouse is not answering, and writes no config; within a minute, its
/// URL alone setting no connect_timeout (10 s each try, 10 s to close). QA:
/// it waited for good, its survey of the tables being watched by nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_init_ends_when_the_server_stops_answering_mid_survey() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let (mut admin, dir, _) = two_days(&url).await;
    let written = dir.path().join("init.toml");
    let (mut holder, mut init) = held_after_reads(&url, &mut admin, "src", 0, || {
        vec![Spawned::idem(&written, &["init", &url])]
    })
    .await;
    cluster.freeze();
    init[0]
        .says_not_answering(Duration::from_secs(60), "idem init reading a table's dates")
        .await;
    cluster.thaw();
    holder.execute("COMMIT").await.expect("commit");
    assert!(!written.exists(), "a config was written");
}
