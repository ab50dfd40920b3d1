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
        let child = Command::new(env!("CARGO_BIN_EXE_idem"))
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

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
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
    let mut admin = PgConnection::connect(&url).await.expect("connect");
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

    let mut holder = PgConnection::connect(&url).await.expect("connect");
    holder.execute("BEGIN").await.expect("begin");
    holder.execute("LOCK TABLE fct").await.expect("lock");
    let mut status = Spawned::idem(&config, &["status"]);
    let mut jobs = Spawned::idem(&config, &["jobs"]);
    let mut preview = Spawned::idem(&config, &["run", "fct", "--dry-run"]);
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'";
    assert!(
        common::poll_count(&mut admin, waiting, 300, |n| n >= 3).await,
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
    let attempts: i64 = sqlx::query("SELECT count(*) FROM idem.attempts")
        .fetch_one(&mut admin)
        .await
        .expect("ledger")
        .get(0);
    assert_eq!(
        attempts, 2,
        "one attempt a partition, none while it was silent"
    );
}
