//! Servers of a test's own, never the shared ones: a PostgreSQL cluster
//! in a temp dir (initdb, run as the postgres user) to crash, stop or
//! start again; and what a test needs to make one (root, a free port).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A server of the test's own, to crash and start again.
pub trait Throwaway {
    fn url(&self) -> String;
    /// SIGKILL to the server and everything it started: a crash, not a
    /// shutdown. Returns once its port is closed.
    fn crash(&self);
    fn start(&self);
}

/// None (skipped) where this machine cannot run a server of its own
/// (`what` says what it needs); under CI=true that is a failure.
pub fn needed<T>(found: Option<T>, what: &str) -> Option<T> {
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI must run this test: it needs {what}");
        }
        eprintln!("skipped: a throwaway server needs {what}");
    }
    found
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
}

/// Waits until nothing listens on `port`.
pub fn wait_closed(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(Instant::now() < deadline, "the server did not die");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A PostgreSQL cluster in a temp dir, run as the postgres user.
pub struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
    pub port: u16,
    /// `listen_addresses`: 127.0.0.1, and others a test connects from.
    listen: String,
}

pub fn postgres_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop()
}

pub fn as_postgres(bin: &Path, tool: &str, args: &[&str]) -> std::process::Output {
    let tool = bin.join(tool);
    Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(&tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", tool.display()))
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Cluster {
    pub fn new() -> Option<Cluster> {
        Cluster::listening("127.0.0.1")
    }

    /// A cluster listening on `listen`; any 10.x client may connect.
    pub fn listening(listen: &str) -> Option<Cluster> {
        // Starting a cluster as the postgres user takes root (as CI runs).
        let bin = needed(
            postgres_bin().filter(|_| is_root() && Path::new("/usr/sbin/runuser").exists()),
            "root, runuser and the PostgreSQL binaries",
        )?;
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
        let mut hba = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("pg_hba.conf"))
            .expect("pg_hba.conf");
        std::io::Write::write_all(&mut hba, b"host all all 10.0.0.0/8 trust\n")
            .expect("pg_hba.conf");
        let cluster = Cluster {
            bin,
            data,
            _dir: dir,
            port: free_port(),
            listen: listen.to_string(),
        };
        cluster.start();
        Some(cluster)
    }
}

impl Cluster {
    /// Every process of the server stopped (SIGSTOP): its host's kernel
    /// still takes connections and acknowledges what is sent, and nothing
    /// answers, as a hung server (or one whose network drops the replies).
    pub fn freeze(&self) {
        self.signal_every_process("-STOP");
    }

    /// What the server has logged so far (its FATAL refusals of
    /// connections; statements, where a role logs them).
    pub fn log(&self) -> String {
        let log = self.data.join("server.log");
        String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).into_owned()
    }

    /// The server's processes go on (SIGCONT) where they stopped.
    pub fn thaw(&self) {
        self.signal_every_process("-CONT");
    }

    fn signal_every_process(&self, signal: &str) {
        let Ok(pid_file) = std::fs::read_to_string(self.data.join("postmaster.pid")) else {
            return;
        };
        let pid = pid_file
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string();
        let _ = Command::new("kill").args([signal, &pid]).status();
        let _ = Command::new("pkill").args([signal, "-P", &pid]).status();
    }
}

impl Throwaway for Cluster {
    fn start(&self) {
        let options = format!(
            "-p {} -c listen_addresses={} -c unix_socket_directories='' -c fsync=on",
            self.port, self.listen
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
        wait_closed(self.port);
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // A stopped server would never see the stop.
        self.thaw();
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
