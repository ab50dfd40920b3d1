//! A server killed with SIGKILL in the middle of a backfill, then
//! restarted: every partition is whole or untouched, every success the
//! ledger recorded is there, and a re-run converges. And the other way
//! round: a client host gone silent mid-load loses its lock on the server,
//! and a server gone silent stops the run. Last, a server configured unlike
//! the shared one (MariaDB with autocommit off, without backslash
//! escapes, folding table names, in a global time zone of its own). The
//! server is a throwaway of this test's own (PostgreSQL: initdb in a temp dir;
//! MariaDB: mariadb-install-db in a temp dir; each on its own port), never
//! the shared one.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::throwaway::{Cluster, Throwaway, free_port, is_root, needed, wait_closed};
use sqlx::{AnyConnection, Connection, Executor, Row};

const DAYS: i64 = 20;
const ROWS: i64 = 2000;

/// A MariaDB server in a temp dir, run as the mysql user.
struct Maria {
    dir: tempfile::TempDir,
    port: u16,
    /// More of the server's options (`--autocommit=0`).
    options: Vec<String>,
}

impl Maria {
    fn new() -> Option<Maria> {
        Maria::with(&[])
    }

    fn with(options: &[&str]) -> Option<Maria> {
        let runnable = is_root()
            && Path::new("/usr/sbin/mariadbd").exists()
            && Path::new("/usr/bin/mariadb-install-db").exists()
            && Path::new("/sbin/start-stop-daemon").exists();
        needed(
            runnable.then_some(()),
            "root, start-stop-daemon and the MariaDB server binaries",
        )?;
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("tmp")).expect("the server's tmpdir");
        let chown = Command::new("chown")
            .args(["-R", "mysql:mysql"])
            .arg(dir.path())
            .status()
            .expect("chown");
        assert!(chown.success());
        // One bootstrap at a time, each with its own tmpdir: two at once in
        // the shared /tmp once lost a bootstrap's temporary table (CI, stop 26).
        static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let installing = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
        let install = Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", dir.path().join("data").display()))
            .arg(format!("--tmpdir={}", dir.path().join("tmp").display()))
            .args([
                "--user=mysql",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
            ])
            .stdin(Stdio::null())
            .output()
            .expect("mariadb-install-db");
        assert!(
            install.status.success(),
            "mariadb-install-db: {}",
            String::from_utf8_lossy(&install.stderr)
        );
        drop(installing);
        let maria = Maria {
            dir,
            port: free_port(),
            options: options.iter().map(|o| o.to_string()).collect(),
        };
        maria.start();
        let made = Command::new("mariadb")
            .args(["-uroot", "-h127.0.0.1", &format!("-P{}", maria.port)])
            .args(["-e", "CREATE DATABASE crash"])
            .status()
            .expect("mariadb client");
        assert!(made.success(), "CREATE DATABASE crash");
        Some(maria)
    }

    fn pid(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join("pid"))
            .ok()
            .map(|p| p.trim().to_string())
    }
}

impl Throwaway for Maria {
    fn start(&self) {
        let at = |name: &str| self.dir.path().join(name).display().to_string();
        // In the background, as its own daemon: nothing here waits on it.
        let started = Command::new("start-stop-daemon")
            .args(["--start", "--background", "--chuid", "mysql"])
            // Matched by its own pid file, not by the shared server's binary.
            .arg("--pidfile")
            .arg(at("pid"))
            .args(["--exec", "/usr/sbin/mariadbd", "--", "--no-defaults"])
            .arg(format!("--datadir={}", at("data")))
            .arg(format!("--socket={}", at("sock")))
            .arg(format!("--tmpdir={}", at("tmp")))
            .arg(format!("--pid-file={}", at("pid")))
            .arg(format!("--log-error={}", at("error.log")))
            .arg(format!("--port={}", self.port))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=32M",
                "--innodb-flush-log-at-trx-commit=1",
            ])
            .args(&self.options)
            .stdin(Stdio::null())
            .status()
            .expect("start-stop-daemon");
        assert!(started.success(), "start-stop-daemon mariadbd");
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "mariadbd did not start: {}",
                std::fs::read_to_string(at("error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn crash(&self) {
        let pid = self.pid().expect("mariadbd's pid file");
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
        wait_closed(self.port);
        let _ = std::fs::remove_file(self.dir.path().join("pid"));
    }

    fn url(&self) -> String {
        format!("mysql://root@127.0.0.1:{}/crash", self.port)
    }
}

impl Drop for Maria {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            wait_closed(self.port);
        }
    }
}

/// What differs between the engines in this test.
struct Dialect {
    /// The job's SQL, slowed to 0.2 s a partition so that the crash falls
    /// in the middle of the run.
    select: &'static str,
    fill: String,
    day_counts: &'static str,
    recorded_without_rows: &'static str,
}

fn postgres() -> Dialect {
    Dialect {
        select: "select src.id, src.amount, src.dt from src cross join (select pg_sleep(0.2)) pause where src.dt >= :start and src.dt < :end",
        fill: format!(
            "INSERT INTO src SELECT i, i % 97, date '2026-01-01' + (i / {ROWS})::int FROM generate_series(0, {}) i",
            DAYS * ROWS - 1
        ),
        day_counts: "SELECT CAST(dt AS text), COUNT(*) FROM fct GROUP BY dt",
        recorded_without_rows: "SELECT a.partition_key FROM idem.attempts a WHERE a.status = 'succeeded' \
             AND NOT EXISTS (SELECT 1 FROM fct WHERE CAST(fct.dt AS text) = a.partition_key)",
    }
}

fn mariadb() -> Dialect {
    Dialect {
        select: "select src.id, src.amount, src.dt from src cross join (select sleep(0.2) as s) pause where src.dt >= :start and src.dt < :end",
        fill: format!(
            "INSERT INTO src SELECT seq, seq % 97, DATE_ADD('2026-01-01', INTERVAL (seq DIV {ROWS}) DAY) FROM seq_0_to_{}",
            DAYS * ROWS - 1
        ),
        day_counts: "SELECT CAST(dt AS CHAR), COUNT(*) FROM fct GROUP BY dt",
        recorded_without_rows: "SELECT a.partition_key FROM idem_attempts a WHERE a.status = 'succeeded' \
             AND NOT EXISTS (SELECT 1 FROM fct WHERE CAST(fct.dt AS CHAR) = a.partition_key)",
    }
}

fn config(url: &str, select: &str) -> String {
    format!(
        "[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"2s\"\n\n[defaults]\nconcurrency = 3\nretries = 1\n\n\
         [[jobs]]\nname = \"fct\"\ntarget = \"fct\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\n\
         grain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-20\"\nsql = \"{select}\"\n"
    )
}

async fn connect(url: &str) -> AnyConnection {
    sqlx::any::install_default_drivers();
    AnyConnection::connect(url).await.expect("connect")
}

async fn a_server_crash_mid_run_leaves_every_partition_whole(
    server: &dyn Throwaway,
    dialect: Dialect,
) {
    let url = server.url();
    let mut c = connect(&url).await;
    for ddl in [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)"
            .to_string(),
        dialect.fill,
    ] {
        c.execute(sqlx::AssertSqlSafe(ddl)).await.expect("setup");
    }
    c.close().await.expect("close");

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("idem.toml");
    std::fs::write(&path, config(&url, dialect.select)).expect("config");
    let idem = |args: &[&str]| {
        let mut cmd = crate::common::idem_command();
        cmd.arg("--config").arg(&path).args(args);
        cmd
    };
    let child = idem(&["run", "fct"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("idem run");
    std::thread::sleep(Duration::from_millis(1200));
    server.crash();
    let crashed_at = Instant::now();
    let output = child.wait_with_output().expect("idem ended");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        crashed_at.elapsed() < Duration::from_secs(20),
        "idem took {:?} to give up on a dead server: {stderr}",
        crashed_at.elapsed()
    );

    server.start();
    let mut c = connect(&url).await;
    let days = sqlx::query(dialect.day_counts)
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
    let recorded = sqlx::query(dialect.recorded_without_rows)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_server_crash_mid_run_leaves_every_partition_whole() {
    let Some(cluster) = Cluster::new() else {
        return;
    };
    a_server_crash_mid_run_leaves_every_partition_whole(&cluster, postgres()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_server_crash_mid_run_leaves_every_partition_whole() {
    let Some(maria) = Maria::new() else {
        return;
    };
    a_server_crash_mid_run_leaves_every_partition_whole(&maria, mariadb()).await;
}

/// A host of the test's own: a network namespace joined to this one by a
/// veth pair, whose link the test can cut as a network or a host dies:
/// without a word to the other end.
struct ClientHost {
    name: String,
    host_side: String,
    server_ip: String,
    client_ip: String,
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl ClientHost {
    fn new() -> Option<ClientHost> {
        // One per test of this process, whatever else runs on the machine.
        static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("{}{n}", std::process::id());
        let subnet = 1 + (std::process::id() * 8 + n) % 250;
        let host = ClientHost {
            name: format!("idemv{id}"),
            host_side: format!("iv{id}h"),
            server_ip: format!("10.231.{subnet}.1"),
            client_ip: format!("10.231.{subnet}.2"),
        };
        let client_side = format!("iv{id}c");
        let made = is_root()
            && ip(&["netns", "add", &host.name])
            && ip(&[
                "link",
                "add",
                &host.host_side,
                "type",
                "veth",
                "peer",
                "name",
                &client_side,
            ])
            && ip(&["link", "set", &client_side, "netns", &host.name])
            && ip(&[
                "addr",
                "add",
                &format!("{}/30", host.server_ip),
                "dev",
                &host.host_side,
            ])
            && ip(&["link", "set", &host.host_side, "up"])
            && ip(&[
                "-n",
                &host.name,
                "addr",
                "add",
                &format!("{}/30", host.client_ip),
                "dev",
                &client_side,
            ])
            && ip(&["-n", &host.name, "link", "set", &client_side, "up"])
            && ip(&["-n", &host.name, "link", "set", "lo", "up"]);
        needed(
            made.then_some(host),
            "root and ip (iproute2) with network namespaces",
        )
    }

    /// A command run on this host.
    fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// The link goes dead: nothing more passes, and neither end is told.
    fn cut(&self) {
        assert!(
            ip(&["link", "set", &self.host_side, "down"]),
            "ip link set down"
        );
    }
}

impl Drop for ClientHost {
    fn drop(&mut self) {
        // The pair goes with the namespace its one end is in.
        ip(&["netns", "del", &self.name]);
        ip(&["link", "del", &self.host_side]);
    }
}

/// The server a [`SilentLoad`] goes to, and where the load is caught.
#[derive(Clone, Copy, PartialEq)]
enum SilentAt {
    /// PostgreSQL, in its INSERT.
    PostgresInsert,
    /// PostgreSQL, in its COMMIT (a deferred trigger slows it).
    PostgresCommit,
    /// MariaDB, in its INSERT.
    MariaDbInsert,
}

/// A load from the client host into a throwaway server, caught holding
/// its partition's lock in a statement of five minutes that sends nothing
/// while it runs (its INSERT's, or its COMMIT's).
struct SilentLoad {
    client: ClientHost,
    _server: Box<dyn Throwaway>,
    /// To the server from this host, past the link the test cuts.
    conn: AnyConnection,
    idem: std::process::Child,
    _dir: tempfile::TempDir,
}

impl SilentLoad {
    async fn start(at: SilentAt) -> Option<SilentLoad> {
        let client = ClientHost::new()?;
        let listen = format!("127.0.0.1,{}", client.server_ip);
        let (server, url, pause): (Box<dyn Throwaway>, _, _) = if at == SilentAt::MariaDbInsert {
            let maria = Maria::with(&[&format!("--bind-address={listen}")])?;
            let url = format!("mysql://idem@{}:{}/crash", client.server_ip, maria.port);
            (Box::new(maria), url, "sleep(300)")
        } else {
            let cluster = Cluster::listening(&listen)?;
            let url = format!(
                "postgres://postgres@{}:{}/postgres",
                client.server_ip, cluster.port
            );
            (Box::new(cluster), url, "pg_sleep(300)")
        };
        let mut conn = connect(&server.url()).await;
        let mut ddl = vec![
            "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
            "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
            "INSERT INTO src VALUES (1, 1, '2026-01-01')",
        ];
        match at {
            // The client host's sessions come from another address.
            SilentAt::MariaDbInsert => ddl.extend([
                "CREATE USER idem@'10.231.%'",
                "GRANT ALL ON *.* TO idem@'10.231.%'",
            ]),
            SilentAt::PostgresCommit => ddl.extend([
                "CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN PERFORM pg_sleep(300); RETURN NULL; END $$",
                "CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON fct \
                 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit()",
            ]),
            SilentAt::PostgresInsert => {}
        }
        for statement in ddl {
            conn.execute(statement).await.expect("setup");
        }
        let select = if at == SilentAt::PostgresCommit {
            "select id, amount, dt from src where dt >= :start and dt < :end".to_string()
        } else {
            format!(
                "select src.id, src.amount, src.dt from src cross join (select {pause} as s) pause where src.dt >= :start and src.dt < :end"
            )
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("idem.toml");
        std::fs::write(&path, config(&url, &select)).expect("config");
        let idem = client
            .command(env!("CARGO_BIN_EXE_idem"))
            .env(
                crate::common::UNICODE_GLYPHS.0,
                crate::common::UNICODE_GLYPHS.1,
            )
            .arg("--config")
            .arg(&path)
            .args(["run", "fct", "--from", "2026-01-01", "--to", "2026-01-01"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("idem on the client host");
        let mut load = SilentLoad {
            client,
            _server: server,
            conn,
            idem,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !load.caught(at).await {
            assert!(Instant::now() < deadline, "the load never got there");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Some(load)
    }

    /// Whether the load is where `at` catches it.
    async fn caught(&mut self, at: SilentAt) -> bool {
        let running = |statement: &str| match at {
            SilentAt::MariaDbInsert => format!(
                "SELECT count(*) FROM information_schema.PROCESSLIST WHERE HOST LIKE '{}:%' \
                 AND COMMAND IN ('Query', 'Execute') AND INFO LIKE '{statement}%'",
                self.client.client_ip
            ),
            _ => format!(
                "SELECT count(*) FROM pg_stat_activity WHERE client_addr = '{}' \
                 AND state = 'active' AND query LIKE '{statement}%'",
                self.client.client_ip
            ),
        };
        let asked = match at {
            SilentAt::PostgresCommit => running("COMMIT"),
            _ => running("INSERT"),
        };
        let n: i64 = sqlx::query(sqlx::AssertSqlSafe(asked))
            .fetch_one(&mut self.conn)
            .await
            .expect("activity")
            .get(0);
        n > 0 && (at == SilentAt::MariaDbInsert || self.locks_held().await > 0)
    }

    /// The advisory locks the client host's sessions hold (PostgreSQL).
    async fn locks_held(&mut self) -> i64 {
        let held = format!(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
             WHERE l.locktype = 'advisory' AND l.granted AND a.client_addr = '{}'",
            self.client.client_ip
        );
        sqlx::query(sqlx::AssertSqlSafe(held))
            .fetch_one(&mut self.conn)
            .await
            .expect("locks")
            .get(0)
    }
}

impl Drop for SilentLoad {
    fn drop(&mut self) {
        let _ = self.idem.kill();
        let _ = self.idem.wait();
    }
}

/// idem's host (or its network) dies mid-load, as a laptop's VPN drops at
/// 3 a.m.: no FIN, no RST, the server's session idle in a long statement.
/// PostgreSQL's own keepalive would wait two hours before it looked;
/// idem's sessions have the server probe after 15 s, so it ends the
/// session and frees the partition's lock within a minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_client_host_that_goes_silent_mid_load_frees_its_lock() {
    let Some(mut load) = SilentLoad::start(SilentAt::PostgresInsert).await else {
        return;
    };
    load.client.cut();
    // The host is gone: idem's process with it (its FIN goes nowhere).
    let _ = load.idem.kill();
    let _ = load.idem.wait();
    let cut_at = Instant::now();
    while load.locks_held().await > 0 {
        assert!(
            cut_at.elapsed() < Duration::from_secs(90),
            "the silent client's session still holds the partition's lock"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eprintln!(
        "the lock was freed {:?} after the link went dead",
        cut_at.elapsed()
    );
    let rows: i64 = sqlx::query("SELECT count(*) FROM fct")
        .fetch_one(&mut load.conn)
        .await
        .expect("rows")
        .get(0);
    assert_eq!(rows, 0, "the load rolled back");
}

/// The other end goes silent: the server (a failover that black-holes the
/// old address, a network dropping everything) while a load waits on a
/// long statement. The driver sets no keepalive, so without a watch the
/// run would wait forever; idem looks for the load's session from a
/// connection of its own every 20 s, and two looks that cannot connect end
/// the load as lost and stop the run (exit 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_server_that_goes_silent_mid_load_stops_the_run() {
    let Some(stderr) = a_server_gone_silent_stops_the_run(SilentAt::PostgresInsert).await else {
        return;
    };
    assert!(stderr.contains("never committed"), "{stderr}");
}

/// The same on MariaDB, whose driver sets no keepalive either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_server_that_goes_silent_mid_load_stops_the_run() {
    let Some(stderr) = a_server_gone_silent_stops_the_run(SilentAt::MariaDbInsert).await else {
        return;
    };
    assert!(stderr.contains("never committed"), "{stderr}");
}

/// The same, the server going silent while the load's COMMIT is under way:
/// whether it took, only the server knows, and idem says so rather than
/// wait on it forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_server_that_goes_silent_during_a_commit_stops_the_run() {
    let Some(stderr) = a_server_gone_silent_stops_the_run(SilentAt::PostgresCommit).await else {
        return;
    };
    assert!(stderr.contains("its COMMIT was under way"), "{stderr}");
}

/// Cuts the link under a load (in its INSERT, or in its COMMIT) and waits
/// for idem to give up: its stderr, once it exited 1 (None: skipped).
async fn a_server_gone_silent_stops_the_run(at: SilentAt) -> Option<String> {
    let mut load = SilentLoad::start(at).await?;
    load.client.cut();
    let cut_at = Instant::now();
    let status = loop {
        if let Some(status) = load.idem.try_wait().expect("idem") {
            break status;
        }
        if cut_at.elapsed() > Duration::from_secs(90) {
            let _ = load.idem.kill();
            let _ = load.idem.wait();
            panic!("idem still waits on a server gone silent 90 s ago");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut stderr = String::new();
    let mut pipe = load.idem.stderr.take().expect("stderr");
    std::io::Read::read_to_string(&mut pipe, &mut stderr).expect("stderr");
    eprintln!(
        "idem gave up {:?} after the link went dead",
        cut_at.elapsed()
    );
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("mid-load"), "{stderr}");
    Some(stderr)
}

/// A throwaway MariaDB started with `options`, its tables made by
/// `setup`, and idem connected to it with one daily job, `fct`, reading
/// `select` over 2026-01-01 and 2026-01-02 (its config written at `path`).
/// The fields drop in order: idem's pool before the server.
struct MariaJob {
    wh: idem::warehouse::Warehouse,
    admin: AnyConnection,
    config: idem::config::Config,
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
    maria: Maria,
}

impl MariaJob {
    async fn start(options: &[&str], setup: &[&'static str], select: &str) -> Option<MariaJob> {
        let maria = Maria::with(options)?;
        let url = maria.url();
        let mut admin = connect(&url).await;
        for ddl in setup {
            admin.execute(*ddl).await.expect("setup");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("idem.toml");
        let text = config(&url, select).replace("end = \"2026-01-20\"", "end = \"2026-01-02\"");
        std::fs::write(&path, &text).expect("config");
        let config = idem::config::parse(&path, &text, &|_| None).expect("config");
        let wh = idem::warehouse::Warehouse::connect(&config.warehouse, 4)
            .await
            .expect("connect");
        Some(MariaJob {
            wh,
            admin,
            config,
            path,
            _dir: dir,
            maria,
        })
    }

    fn job(&self) -> &idem::config::Job {
        &self.config.jobs[0]
    }

    /// Runs every partition of the job, one at a time: how many loaded,
    /// how many failed, and the failures' errors.
    async fn run(&self) -> (usize, usize, Vec<String>) {
        use idem::engine::{Backfill, Selection};
        let backfill = Backfill::plan(&self.wh, self.job(), &Selection::default(), 1, 0)
            .await
            .expect("plan");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let summary = idem::engine::run(&self.wh, &backfill, &tx, &Default::default()).await;
        drop(tx);
        let mut errors = Vec::new();
        while let Some(event) = rx.recv().await {
            if let idem::engine::Event::PartitionFailed { error, .. } = event {
                errors.push(error);
            }
        }
        (summary.succeeded, summary.failed, errors)
    }

    /// `idem COMMAND…` on the job's config: its exit code and its output.
    fn idem(&self, args: &[&str]) -> (Option<i32>, String) {
        let out = crate::common::idem_command()
            .arg("--config")
            .arg(&self.path)
            .args(args)
            .output()
            .expect("idem");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    }
}

/// A MariaDB whose sessions start with autocommit off (`autocommit = 0` in
/// its configuration, as some shops have it). idem's statements outside a
/// load's transaction must still commit by themselves: a failure recorded
/// in the ledger stays recorded, and a console's state read leaves no table
/// locked against an ALTER while its session waits in the pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_server_defaulting_to_autocommit_off_is_committed_to_as_usual() {
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL CHECK (amount < 2), dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 1, '2026-01-01'), (2, 5, '2026-01-02')",
        "COMMIT",
    ];
    let select = "select id, amount, dt from src where dt >= :start and dt < :end";
    let Some(m) = MariaJob::start(&["--autocommit=0"], &setup, select).await else {
        return;
    };
    // The second day breaks the CHECK: a failure, recorded outside a load.
    let (succeeded, failed, _) = m.run().await;
    assert_eq!((succeeded, failed), (1, 1));
    let states = idem::state::job_status(
        &m.wh,
        m.job(),
        idem::partition::now_utc(),
        &Default::default(),
    )
    .await
    .expect("states");
    assert_eq!(states.len(), 2);

    // Another session sees the failure in the ledger: it committed.
    let mut other = connect(&m.maria.url()).await;
    let failed: i64 = sqlx::query("SELECT COUNT(*) FROM idem_attempts WHERE status = 'failed'")
        .fetch_one(&mut other)
        .await
        .expect("ledger")
        .get(0);
    assert_eq!(failed, 1, "the recorded failure never committed");
    // And the tables idem read are free for an ALTER, with idem's sessions
    // still open in its pool.
    other
        .execute("SET SESSION lock_wait_timeout = 3")
        .await
        .expect("lock_wait_timeout");
    other
        .execute("ALTER TABLE fct ADD COLUMN note INTEGER")
        .await
        .expect("an ALTER of the target, with idem's sessions idle in the pool");
}

/// A MariaDB whose `sql_mode` has NO_BACKSLASH_ESCAPES (set in its
/// configuration, as shops porting from other engines have it) reads
/// `'C:\'` as a whole string. idem's sessions take the server's mode, so a
/// job's parameters must be found as that server reads its strings: read
/// with escapes, the `:end` inside the second string would be bound and
/// the real `:start` and `:end` left inside a string.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_server_without_backslash_escapes_reads_a_jobs_strings_as_it_does() {
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, path VARCHAR(20) NOT NULL, label VARCHAR(20) NOT NULL, note VARCHAR(20) NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-02')",
    ];
    // In TOML, `\\` is one backslash: the job's SQL has `'C:\'`.
    let select = "select id, 'C:\\\\' as path, ':end' as label, ':later' as note, dt from src where dt >= :start and dt < :end";
    let Some(mut m) = MariaJob::start(&["--sql-mode=NO_BACKSLASH_ESCAPES"], &setup, select).await
    else {
        return;
    };
    assert!(m.job().sql.contains("'C:\\'"), "{}", m.job().sql);
    let (succeeded, failed, errors) = m.run().await;
    assert_eq!((succeeded, failed), (2, 0), "{errors:?}");
    let rows: Vec<(i64, String, String, String)> =
        sqlx::query("SELECT id, path, label, note FROM fct ORDER BY id")
            .fetch_all(&mut m.admin)
            .await
            .expect("rows")
            .iter()
            .map(|r| (r.get::<i32, _>(0) as i64, r.get(1), r.get(2), r.get(3)))
            .collect();
    let row = |id: i64| -> (i64, String, String, String) {
        (id, "C:\\".into(), ":end".into(), ":later".into())
    };
    assert_eq!(rows, [row(1), row(2), row(3)]);
    // A re-run finds the window as its load left it.
    let (succeeded, failed, errors) = m.run().await;
    assert_eq!((succeeded, failed), (2, 0), "{errors:?}");

    // `idem lint` reads the SQL as the server does once connected: no
    // `:later` parameter, and `idem jobs` shows the job's lint as ok.
    // Without a connection it reads by the engine's default, as the README
    // says, and finds one.
    let (code, text) = m.idem(&["lint"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("later"), "{text}");
    let (code, text) = m.idem(&["jobs"]);
    assert_eq!(code, Some(0), "{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("fct "))
        .unwrap_or_default();
    assert!(line.contains(" ok "), "{text}");
    let (code, text) = m.idem(&["lint", "--offline"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains(":later"), "{text}");
}

/// A MariaDB whose `sql_mode` has ANSI_QUOTES and NO_BACKSLASH_ESCAPES
/// (as shops porting from PostgreSQL set it) reads `"created_at"` as a
/// column and `'C:\'` as a whole string. idem asks the server when it
/// connects and reads its jobs' SQL so: `idem jobs` and a cascade follow a
/// job reading `"fct"` after such a string and a `#` comment, and `idem
/// lint` finds a window filtered on another column than the partition's,
/// all written in double quotes. (Lineage read the SQL by MariaDB's
/// default: the string ran on over the table; and so did lint, to which
/// the quoted columns were strings.) Without a connection, `idem lint
/// --offline` reads by the engine's default, as the README says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_server_with_ansi_quotes_has_its_jobs_read_as_it_reads_them() {
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, created_at DATETIME NOT NULL, loaded_at DATETIME NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE report (id INTEGER NOT NULL, path VARCHAR(10) NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01 10:00:00', '2026-01-01 10:00:00'), (2, '2026-01-02 10:00:00', '2026-01-02 11:00:00')",
    ];
    // TOML strings: `\"` is a double quote, `\\` one backslash.
    let select = r#"select \"id\", cast(\"created_at\" as date) as \"dt\" from \"src\" where \"loaded_at\" >= :start and \"loaded_at\" < :end"#;
    let options = ["--sql-mode=ANSI_QUOTES,NO_BACKSLASH_ESCAPES,STRICT_TRANS_TABLES"];
    let Some(mut m) = MariaJob::start(&options, &setup, select).await else {
        return;
    };
    assert!(m.job().sql.contains("\"loaded_at\""), "{}", m.job().sql);
    let reads_fct = r#"select \"id\", 'C:\\' as \"path\", \"dt\" from \"fct\" # today's rows\n where \"dt\" >= :start and \"dt\" < :end"#;
    let one_job = std::fs::read_to_string(&m.path).expect("config");
    std::fs::write(
        &m.path,
        one_job + &another_job("report", "report", reads_fct),
    )
    .expect("config");

    let (code, text) = m.idem(&["jobs"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("← reads fct (its SQL reads fct)"), "{text}");
    let (code, text) = m.idem(&["run", "fct", "--cascade", "--yes"]);
    assert_eq!(code, Some(0), "{text}");
    let paths: Vec<String> = sqlx::query("SELECT path FROM report ORDER BY id")
        .fetch_all(&mut m.admin)
        .await
        .expect("report")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(
        paths,
        ["C:\\", "C:\\"],
        "the cascade should have loaded report: {text}"
    );

    let watermark =
        "the window filters on loaded_at but partition column dt takes its value from created_at";
    let (_, text) = m.idem(&["lint"]);
    assert!(text.contains(watermark), "{text}");
    let (_, text) = m.idem(&["lint", "--offline"]);
    assert!(!text.contains(watermark), "{text}");

    // report's `"dt"` bounds are filters on its partition column as the
    // server reads them: `status --reconcile` counts its source in one
    // statement grouped by day (QA: read by MariaDB's default, to which
    // they were strings, it was counted window by window), as the server's
    // own log of the statements shows.
    for setting in [
        "SET GLOBAL log_output = 'TABLE'",
        "SET GLOBAL general_log = 1",
    ] {
        m.admin.execute(setting).await.expect(setting);
    }
    let (code, text) = m.idem(&["status", "report", "--reconcile"]);
    assert_eq!(code, Some(0), "{text}");
    let counts: Vec<String> = sqlx::query(
        "SELECT CAST(argument AS CHAR) FROM mysql.general_log \
         WHERE argument LIKE '%COUNT(*)%' AND argument LIKE '%today''s rows%'",
    )
    .fetch_all(&mut m.admin)
    .await
    .expect("the general log")
    .iter()
    .map(|r| r.get(0))
    .collect();
    assert!(
        !counts.is_empty()
            && counts
                .iter()
                .all(|s| s.contains("GROUP BY") && !s.contains("UNION ALL")),
        "{counts:#?}"
    );
}

/// A MariaDB that folds table names (`lower_case_table_names = 1`, the
/// default on Windows and macOS and on some managed services), where `fct`
/// and `FCT` are one table. idem asks the server how it compares names:
/// a job's target rewritten `FCT` is still the table its loads went into
/// (stale, for a changed definition, as on SQLite), not "another table"
/// whose loads its partitions leave out; and a job renamed as its target
/// is rewritten so is told where its history is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB server: set IDEM_TEST_MYSQL_URL"
)]
async fn mysql_a_server_that_folds_table_names_takes_fct_and_fct_in_capitals_as_one() {
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 1, '2026-01-01'), (2, 5, '2026-01-02')",
    ];
    let select = "select id, amount, dt from src where dt >= :start and dt < :end";
    let Some(m) = MariaJob::start(&["--lower-case-table-names=1"], &setup, select).await else {
        return;
    };
    let (succeeded, failed, errors) = m.run().await;
    assert_eq!((succeeded, failed), (2, 0), "{errors:?}");
    let rewrite = |from: &str, to: &str| {
        let text = std::fs::read_to_string(&m.path).expect("config");
        let changed = text.replace(from, to);
        assert_ne!(text, changed, "{from}");
        std::fs::write(&m.path, changed).expect("config");
    };
    rewrite("target = \"fct\"", "target = \"FCT\"");
    let (code, text) = m.idem(&["status", "--format", "csv"]);
    assert_eq!(code, Some(0), "{text}");
    for day in ["2026-01-01", "2026-01-02"] {
        assert!(text.contains(&format!("fct,{day},stale")), "{text}");
    }
    assert!(!text.contains("not its target"), "{text}");

    rewrite("name = \"fct\"", "name = \"fct_daily\"");
    let (code, text) = m.idem(&["status", "--format", "csv"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("the ledger holds loads of FCT under the job name \"fct\""),
        "{text}"
    );
}

/// On a server folding table names, `Orders` and `orders` are one table,
/// and so one lock: a load of a partition of `FCT` is refused (here,
/// within its 1 s `lock_timeout`) while another process loads the same
/// partition of `fct`, and the console shows it running elsewhere. (Their
/// locks were once named by the target as written: both loaded the
/// partition at once, the second waiting only on the first's rows.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB server: set IDEM_TEST_MYSQL_URL"
)]
async fn mysql_a_server_that_folds_table_names_locks_fct_and_fct_in_capitals_as_one() {
    use std::io::BufRead;
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 1, '2026-01-01')",
    ];
    let holding = "select id, amount, dt from src cross join (select sleep(4) as p) pause \
                   where dt >= :start and dt < :end";
    let Some(m) = MariaJob::start(&["--lower-case-table-names=1"], &setup, holding).await else {
        return;
    };
    let one_day = std::fs::read_to_string(&m.path)
        .expect("config")
        .replace("end = \"2026-01-02\"", "end = \"2026-01-01\"");
    std::fs::write(&m.path, &one_day).expect("config");
    let capitals = one_day
        .replace("target = \"fct\"", "target = \"FCT\"")
        .replace("connect_timeout", "lock_timeout = \"1s\"\nconnect_timeout")
        .replace(" cross join (select sleep(4) as p) pause", "");
    let capitals_path = m.path.with_file_name("capitals.toml");
    std::fs::write(&capitals_path, &capitals).expect("config");
    let capitals_job = idem::config::parse(&capitals_path, &capitals, &|_| None)
        .expect("config")
        .jobs
        .remove(0);

    let mut holder = crate::common::idem_command()
        .arg("--config")
        .arg(&m.path)
        .args(["run", "fct", "--json", "--yes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("idem");
    let mut lines = std::io::BufReader::new(holder.stdout.take().expect("stdout")).lines();
    // The DELETE is logged once done, under the lock; the slow INSERT follows.
    assert!(
        lines.any(|l| l.is_ok_and(|l| l.contains("\"partition_log\"") && l.contains("DELETE"))),
        "the holder should reach its DELETE"
    );
    let day = capitals_job.start;
    let elsewhere =
        m.wh.partitions_locked_elsewhere(&capitals_job, &[day])
            .await
            .expect("probe");
    let refused = crate::common::idem_command()
        .arg("--config")
        .arg(&capitals_path)
        .args(["run", "fct", "--json", "--yes"])
        .output()
        .expect("idem");
    let held = holder.wait().expect("holder");
    assert!(held.success(), "the holder's load failed");
    let out = String::from_utf8_lossy(&refused.stdout);
    let error = out
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "partition_failed")
        .map(|e| e["error"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("FCT's load should have been refused the lock: {out}"));
    assert!(
        error
            .starts_with("could not take the lock on partition 2026-01-01 within the lock timeout"),
        "{error}"
    );
    assert!(
        elsewhere.contains("2026-01-01"),
        "FCT's 2026-01-01 should show as loaded elsewhere: {elsewhere:?}"
    );
}

/// A job of [`MariaJob`]'s config's shape: `name` loading `target` with
/// `select` over the same two days, to append to its config file.
fn another_job(name: &str, target: &str, select: &str) -> String {
    format!(
        "\n[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\n\
         sql = \"{select}\"\n"
    )
}

/// On a server folding table names, a job whose SQL reads `FCT` reads the
/// target of the job loading `fct`: lineage asks the server how it compares
/// names once connected. `idem jobs` shows the dependency, `idem run fct
/// --cascade` loads the reader after it, and `idem status` marks the
/// reader's day stale (upstream) once `fct` reloads it with other rows. Two
/// jobs each reading the other's target in capitals read each other: a
/// cycle, a config error. (Lineage once compared names by case, as the
/// server had not been asked: none of this happened.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB server: set IDEM_TEST_MYSQL_URL"
)]
async fn mysql_a_server_that_folds_table_names_follows_a_read_of_fct_in_capitals_downstream() {
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE report (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 1, '2026-01-01'), (2, 5, '2026-01-02')",
    ];
    let select = "select id, amount, dt from src where dt >= :start and dt < :end";
    let Some(mut m) = MariaJob::start(&["--lower-case-table-names=1"], &setup, select).await else {
        return;
    };
    let one_job = std::fs::read_to_string(&m.path).expect("config");
    let reads_capitals = "select id, amount, dt from FCT where dt >= :start and dt < :end";
    std::fs::write(
        &m.path,
        one_job.clone() + &another_job("report", "report", reads_capitals),
    )
    .expect("config");

    let (code, text) = m.idem(&["jobs"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("← reads fct (its SQL reads FCT)"), "{text}");

    let (code, text) = m.idem(&["run", "fct", "--cascade", "--yes"]);
    assert_eq!(code, Some(0), "{text}");
    let report_rows: i64 = sqlx::query("SELECT COUNT(*) FROM report")
        .fetch_one(&mut m.admin)
        .await
        .expect("report")
        .get(0);
    assert_eq!(
        report_rows, 2,
        "the cascade should have loaded report: {text}"
    );
    // Loaded again by itself, it is loaded as of fct's first load either way.
    let (code, text) = m.idem(&["run", "report", "--yes"]);
    assert_eq!(code, Some(0), "{text}");

    m.admin
        .execute("UPDATE src SET amount = 7 WHERE id = 1")
        .await
        .expect("late change");
    let (code, text) = m.idem(&[
        "run",
        "fct",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-01",
        "--yes",
    ]);
    assert_eq!(code, Some(0), "{text}");
    let (code, text) = m.idem(&["status", "report", "--format", "json"]);
    assert_eq!(code, Some(0), "{text}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&text).expect("json");
    let of_day = |day: &str| {
        rows.iter()
            .find(|r| r["partition"] == day)
            .map(|r| (r["state"].clone(), r["stale_upstream"].clone()))
            .unwrap_or_else(|| panic!("no {day}: {text}"))
    };
    let (state, causes) = of_day("2026-01-01");
    assert_eq!(state, "stale", "{text}");
    assert!(causes.to_string().contains("fct"), "{text}");
    assert_eq!(of_day("2026-01-02").0, "loaded", "{text}");

    let reads_report = select.replace("from src", "from REPORT");
    let cycle =
        one_job.replace(select, &reads_report) + &another_job("report", "report", reads_capitals);
    std::fs::write(&m.path, cycle).expect("config");
    let (code, text) = m.idem(&["status"]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("jobs depend on each other in a cycle: "),
        "{text}"
    );
}

/// On a server folding table names, `idem lint` compares targets as the
/// server does: a job replacing partitions of `FCT` is a second job on
/// `fct`'s table, and a job reading its own target in capitals reads its
/// own target. Without a connection (`--offline`) names compare as on
/// Linux by default, by case, as the README says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB server: set IDEM_TEST_MYSQL_URL"
)]
async fn mysql_a_server_that_folds_table_names_lints_fct_and_fct_in_capitals_as_one() {
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE reworked (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
    ];
    let select = "select id, amount, dt from src where dt >= :start and dt < :end";
    let Some(m) = MariaJob::start(&["--lower-case-table-names=1"], &setup, select).await else {
        return;
    };
    let text = std::fs::read_to_string(&m.path).expect("config")
        + &another_job("fct_again", "FCT", select)
        + &another_job(
            "reworked",
            "reworked",
            "select id, amount, dt from REWORKED where dt >= :start and dt < :end",
        );
    std::fs::write(&m.path, text).expect("config");

    let (code, text) = m.idem(&["lint"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("job fct_again: error: job fct (line 11) also replaces partitions of FCT"),
        "{text}"
    );
    assert!(
        text.contains("job reworked: error: the SQL reads REWORKED, the job's own target"),
        "{text}"
    );
    let (code, text) = m.idem(&["lint", "--offline"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("also replaces partitions"), "{text}");
    assert!(!text.contains("own target"), "{text}");
}

/// A MariaDB whose global `time_zone` is +05:30 (`default-time-zone` in
/// its configuration): the operator's own `mariadb` sessions read in it,
/// idem's never (the driver sets UTC on connecting, and idem again), so a
/// job's `CAST(at AS DATE)` of a `TIMESTAMP` loads UTC days. `idem lint`
/// said nothing of it (QA: the operator's days were not idem's); it says
/// so once, with what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_servers_global_time_zone_is_told_and_never_taken() {
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, at TIMESTAMP NOT NULL)",
        "CREATE TABLE fct (dt DATE NOT NULL, n INTEGER NOT NULL)",
        // One event an hour through the UTC days 2026-01-01 and -02,
        // written in this session's UTC.
        "INSERT INTO src SELECT seq, TIMESTAMP '2026-01-01 00:00:00' + INTERVAL seq HOUR FROM seq_0_to_47",
    ];
    let select = "select CAST(at AS DATE) as dt, count(*) as n from src where at >= :start and at < :end group by CAST(at AS DATE)";
    let Some(mut m) = MariaJob::start(&["--default-time-zone=+05:30"], &setup, select).await else {
        return;
    };
    let operators = Command::new("mariadb")
        .args(["-uroot", "-h127.0.0.1", &format!("-P{}", m.maria.port)])
        .args(["-N", "-e", "SELECT @@session.time_zone"])
        .output()
        .expect("mariadb client");
    assert_eq!(String::from_utf8_lossy(&operators.stdout).trim(), "+05:30");
    let (succeeded, failed, errors) = m.run().await;
    assert_eq!((succeeded, failed), (2, 0), "{errors:?}");
    let per_day: Vec<(String, i64)> =
        sqlx::query("SELECT CAST(dt AS CHAR), CAST(n AS SIGNED) FROM fct ORDER BY dt")
            .fetch_all(&mut m.admin)
            .await
            .expect("fct")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
    assert_eq!(
        per_day,
        [
            ("2026-01-01".to_string(), 24),
            ("2026-01-02".to_string(), 24)
        ],
        "idem's sessions read UTC days, not the server's +05:30 ones"
    );
    let (_, text) = m.idem(&["lint"]);
    let told = "the server gives sessions that ask for no time zone +05:30 (the server's global time_zone)";
    assert_eq!(text.matches(told).count(), 1, "{text}");
    for part in [
        "SET time_zone = '+00:00'",
        "CAST(CONVERT_TZ(ts, '+00:00', '+05:30') AS DATE)",
    ] {
        assert!(text.contains(part), "{part}:\n{text}");
    }
}

/// QA: a MariaDB whose `character_set_server` is latin1 (its databases
/// default to it) made idem's ledger latin1: a run with a reason outside
/// latin1 failed every partition ("Incorrect string value … for column
/// `idem_attempts`.`reason`"), and the failures went unrecorded. The
/// ledger's text is utf8mb4 whatever the server's default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_latin1_server_records_a_reason_outside_latin1() {
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 1, '2026-01-01'), (2, 5, '2026-01-02')",
    ];
    let select = "select id, amount, dt from src where dt >= :start and dt < :end";
    let options = [
        "--character-set-server=latin1",
        "--collation-server=latin1_swedish_ci",
    ];
    let Some(mut m) = MariaJob::start(&options, &setup, select).await else {
        return;
    };
    let reason = "re-run après panne — 重跑";
    let (code, text) = m.idem(&["run", "fct", "--yes", "--reason", reason]);
    assert_eq!(code, Some(0), "{text}");
    let recorded: Vec<String> =
        sqlx::query("SELECT reason FROM idem_attempts WHERE status = 'succeeded'")
            .fetch_all(&mut m.admin)
            .await
            .expect("the ledger")
            .iter()
            .map(|r| r.get(0))
            .collect();
    assert_eq!(recorded, [reason, reason]);
}

/// A MariaDB whose defaults are strict where the shared one's are not:
/// SERIALIZABLE transactions, statements cut at half a second, DDL lock
/// waits of one second, and a `sql_mode` with PIPES_AS_CONCAT and
/// NO_ZERO_DATE. A backfill at concurrency 4 and a merge job load as
/// anywhere else, and `idem status` and `idem lint` read them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_server_with_strict_defaults_runs_reads_and_lints_as_usual() {
    let setup = [
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE dim (id INTEGER NOT NULL PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src SELECT seq, seq % 7, '2026-01-01' + INTERVAL (seq % 8) DAY FROM seq_1_to_400",
    ];
    let select = "select id, amount, dt from src where dt >= :start and dt < :end";
    let options = [
        "--transaction-isolation=SERIALIZABLE",
        "--max-statement-time=0.5",
        "--lock-wait-timeout=1",
        "--sql-mode=PIPES_AS_CONCAT,NO_ZERO_DATE,NO_ZERO_IN_DATE,STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO",
    ];
    let Some(mut m) = MariaJob::start(&options, &setup, select).await else {
        return;
    };
    let set: (String, String, String) = sqlx::query(
        "SELECT CAST(@@GLOBAL.tx_isolation AS CHAR), CAST(@@GLOBAL.max_statement_time AS CHAR), CAST(@@GLOBAL.sql_mode AS CHAR)",
    )
    .fetch_one(&mut m.admin)
    .await
    .map(|r| (r.get(0), r.get(1), r.get(2)))
    .expect("the server's settings");
    assert_eq!(
        (&set.0[..], &set.1[..]),
        ("SERIALIZABLE", "0.500000"),
        "{set:?}"
    );
    for mode in ["PIPES_AS_CONCAT", "NO_ZERO_DATE"] {
        assert!(set.2.split(',').any(|m| m == mode), "{mode}: {set:?}");
    }
    let text = config(&m.maria.url(), select)
        .replace("end = \"2026-01-20\"", "end = \"2026-01-08\"")
        + "\n[[jobs]]\nname = \"dim\"\ntarget = \"dim\"\nstrategy = \"merge_key\"\nunique_key = [\"id\"]\n\
           grain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-08\"\n"
        + &format!("sql = \"{select}\"\n");
    std::fs::write(&m.path, text).expect("config");
    for job in ["fct", "dim"] {
        let (code, text) = m.idem(&["run", job, "--concurrency", "4", "--yes"]);
        assert_eq!(code, Some(0), "{job}: {text}");
    }
    for table in ["fct", "dim"] {
        let n: i64 = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT CAST(COUNT(*) AS SIGNED) FROM {table}"
        )))
        .fetch_one(&mut m.admin)
        .await
        .expect("count")
        .get(0);
        assert_eq!(n, 400, "{table}");
    }
    // Again: unchanged input, nothing merged.
    let (code, text) = m.idem(&["run", "dim", "--concurrency", "4", "--yes", "--json"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("\"rows_updated\":1"), "{text}");
    let (code, text) = m.idem(&["status", "--format", "csv"]);
    assert_eq!(code, Some(0), "{text}");
    assert_eq!(text.matches(",loaded,").count(), 16, "{text}");
    let (code, text) = m.idem(&["lint"]);
    assert!(code == Some(0) || code == Some(1), "{text}");
    assert!(!text.contains("max_statement_time"), "{text}");
}
