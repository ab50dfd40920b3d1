//! A PostgreSQL server killed with SIGKILL in the middle of a backfill, then
//! restarted: every partition is whole or untouched, every success the
//! ledger recorded is there, and a re-run converges. The server is a
//! throwaway cluster of this test's own (initdb in a temp dir, its own
//! port), never the shared one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sqlx::{Connection, Executor, Row};

const DAYS: i64 = 20;
const ROWS: i64 = 2000;

/// A PostgreSQL cluster in a temp dir, run as the postgres user.
struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
    port: u16,
}

fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop()
}

fn as_postgres(bin: &Path, tool: &str, args: &[&str]) -> std::process::Output {
    let tool = bin.join(tool);
    Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(&tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.display()))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Cluster {
    /// None (skipped) where this machine cannot run a cluster of its own;
    /// under CI=true that is a failure.
    fn new() -> Option<Cluster> {
        // Starting a cluster as the postgres user takes root (as CI runs).
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
        let runnable = postgres_bin().filter(|_| root && Path::new("/usr/sbin/runuser").exists());
        let Some(bin) = runnable else {
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!(
                    "CI must run the server-crash test: it needs root, runuser and the PostgreSQL binaries"
                );
            }
            eprintln!(
                "skipped: starting a throwaway cluster needs root, runuser and the PostgreSQL binaries"
            );
            return None;
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("data dir");
        let chown = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(dir.path())
            .status()
            .expect("chown");
        assert!(chown.success());
        let data_arg = data.to_str().expect("path");
        let init = as_postgres(
            &bin,
            "initdb",
            &["-D", data_arg, "-A", "trust", "-U", "postgres", "--no-sync"],
        );
        assert!(
            init.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&init.stderr)
        );
        let cluster = Cluster {
            bin,
            data,
            _dir: dir,
            port: free_port(),
        };
        cluster.start();
        Some(cluster)
    }

    fn start(&self) {
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=on",
            self.port
        );
        let log = self.data.join("server.log");
        let out = as_postgres(
            &self.bin,
            "pg_ctl",
            &[
                "-D",
                self.data.to_str().expect("path"),
                "-o",
                &options,
                "-l",
                log.to_str().expect("path"),
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl start: {} {}",
            String::from_utf8_lossy(&out.stdout),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// SIGKILL to the postmaster and every process it started: a crash,
    /// not a shutdown.
    fn crash(&self) {
        let pid_file = std::fs::read_to_string(self.data.join("postmaster.pid")).expect("pid");
        let pid = pid_file
            .lines()
            .next()
            .expect("pid line")
            .trim()
            .to_string();
        let _ = Command::new("kill").args(["-STOP", &pid]).status();
        let _ = Command::new("pkill").args(["-KILL", "-P", &pid]).status();
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
        // Wait until the port is closed.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(Instant::now() < deadline, "the server did not die");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = as_postgres(
            &self.bin,
            "pg_ctl",
            &[
                "-D",
                self.data.to_str().unwrap_or_default(),
                "-m",
                "immediate",
                "stop",
            ],
        );
    }
}

fn config(url: &str) -> String {
    format!(
        "[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"2s\"\n\n[defaults]\nconcurrency = 3\nretries = 1\n\n\
         [[jobs]]\nname = \"fct\"\ntarget = \"fct\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\n\
         grain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-20\"\n\
         sql = \"select src.id, src.amount, src.dt from src cross join (select pg_sleep(0.2)) pause where src.dt >= :start and src.dt < :end\"\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_crash_mid_run_leaves_every_partition_whole() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let mut c = sqlx::PgConnection::connect(&url).await.expect("connect");
    for ddl in [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        format!(
            "INSERT INTO src SELECT i, i % 97, date '2026-01-01' + (i / {ROWS})::int FROM generate_series(0, {}) i",
            DAYS * ROWS - 1
        ),
    ] {
        c.execute(sqlx::AssertSqlSafe(ddl)).await.expect("setup");
    }
    c.close().await.expect("close");

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("idem.toml");
    std::fs::write(&path, config(&url)).expect("config");
    let idem = |args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_idem"));
        cmd.arg("--config").arg(&path).args(args);
        cmd
    };
    let child = idem(&["run", "fct"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("idem run");
    std::thread::sleep(Duration::from_millis(1200));
    cluster.crash();
    let crashed_at = Instant::now();
    let output = child.wait_with_output().expect("idem ended");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        crashed_at.elapsed() < Duration::from_secs(20),
        "idem took {:?} to give up on a dead server: {stderr}",
        crashed_at.elapsed()
    );

    cluster.start();
    let mut c = sqlx::PgConnection::connect(&url).await.expect("reconnect");
    let days = sqlx::query("SELECT CAST(dt AS text), COUNT(*) FROM fct GROUP BY dt")
        .fetch_all(&mut c)
        .await
        .expect("counts");
    for row in &days {
        let (dt, n): (String, i64) = (row.get(0), row.get(1));
        assert_eq!(n, ROWS, "{dt} is half-written after the crash");
    }
    assert!(
        (days.len() as i64) < DAYS,
        "the crash came too late to test anything"
    );
    // Every success the ledger recorded survived the crash with its rows.
    let recorded = sqlx::query(
        "SELECT a.partition_key FROM idem.attempts a WHERE a.status = 'succeeded' \
         AND NOT EXISTS (SELECT 1 FROM fct WHERE CAST(fct.dt AS text) = a.partition_key)",
    )
    .fetch_all(&mut c)
    .await
    .expect("ledger");
    assert!(recorded.is_empty(), "ledger says loaded, rows are gone");

    let again = idem(&["run", "fct"]).output().expect("re-run");
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let row = sqlx::query("SELECT COUNT(*), COUNT(DISTINCT id) FROM fct")
        .fetch_one(&mut c)
        .await
        .expect("totals");
    let (rows, ids): (i64, i64) = (row.get(0), row.get(1));
    assert_eq!((rows, ids), (DAYS * ROWS, DAYS * ROWS));
}
