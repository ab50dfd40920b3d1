//! Test warehouses: a temp SQLite file, or a fresh database on the PostgreSQL
//! / MariaDB server named by IDEM_TEST_POSTGRES_URL / IDEM_TEST_MYSQL_URL,
//! dropped afterwards. Without a server an engine's tests are reported as
//! ignored ("no PostgreSQL server: set …", see build.rs), except under
//! CI=true, where they run and fail.
#![allow(dead_code)]

pub mod proxy;
pub mod throwaway;

use std::path::{Path, PathBuf};

use idem::config::{self, Config};
use idem::warehouse::Warehouse;
use sqlx::{AssertSqlSafe, Connection, Executor};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
    MySql,
}

pub struct TestDb {
    pub kind: Kind,
    pub url: String,
    pub dir: tempfile::TempDir,
    admin: Option<(String, String)>,
}

/// The server a test of `kind` runs on. The test was not ignored, so it was
/// meant to run there: without one it fails.
fn server_url(kind: Kind) -> String {
    let var = match kind {
        Kind::Postgres => "IDEM_TEST_POSTGRES_URL",
        _ => "IDEM_TEST_MYSQL_URL",
    };
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => url,
        _ => panic!("{var} is not set: this test needs a real {kind:?} server"),
    }
}

fn unique_name() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "idem_test_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst),
        nanos % 100_000
    )
}

/// Swaps the database name at the end of a server URL.
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let host_end = base[scheme_end..]
        .find('/')
        .map(|i| i + scheme_end)
        .unwrap_or(base.len());
    let mut out = format!("{}/{db}", &base[..host_end]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

impl TestDb {
    /// A fresh, empty warehouse. Never `None` any more: a test whose server
    /// is not named is ignored (build.rs), and one that runs without it
    /// fails. The Option keeps every test file's `let Some(db) = … else`
    /// setup as it is while branches that still use it merge.
    pub async fn new(kind: Kind) -> Option<TestDb> {
        TestDb::created(kind, "").await
    }

    /// A fresh PostgreSQL database made with these options of `CREATE
    /// DATABASE` (`ENCODING 'LATIN1' …`).
    pub async fn postgres_with(options: &str) -> TestDb {
        TestDb::created(Kind::Postgres, options)
            .await
            .expect("a database")
    }

    async fn created(kind: Kind, options: &str) -> Option<TestDb> {
        let dir = tempfile::tempdir().expect("temp dir");
        match kind {
            Kind::Sqlite => {
                let file = dir.path().join("warehouse.db");
                // An empty file is an empty database; idem makes none itself.
                std::fs::File::create(&file).expect("database file");
                let url = format!("sqlite://{}", file.display());
                Some(TestDb {
                    kind,
                    url,
                    dir,
                    admin: None,
                })
            }
            Kind::Postgres | Kind::MySql => {
                let server = server_url(kind);
                let name = unique_name();
                let create = format!("CREATE DATABASE {name} {options}");
                if kind == Kind::Postgres {
                    let mut c = sqlx::PgConnection::connect(&server)
                        .await
                        .expect("connect to PostgreSQL");
                    c.execute(AssertSqlSafe(create))
                        .await
                        .expect("create database");
                } else {
                    let mut c = sqlx::MySqlConnection::connect(&server)
                        .await
                        .expect("connect to MariaDB");
                    c.execute(AssertSqlSafe(create))
                        .await
                        .expect("create database");
                }
                Some(TestDb {
                    kind,
                    url: with_database(&server, &name),
                    dir,
                    admin: Some((server, name)),
                })
            }
        }
    }

    /// Writes an idem.toml for this warehouse with the given jobs and parses it.
    pub fn config(&self, jobs_toml: &str) -> (PathBuf, Config) {
        self.config_with("lock_timeout = \"20s\"", jobs_toml)
    }

    /// A config whose `[warehouse]` table also has these lines.
    pub fn config_with(&self, warehouse_lines: &str, jobs_toml: &str) -> (PathBuf, Config) {
        let text = format!(
            "[warehouse]\nurl = \"{}\"\n{warehouse_lines}\n\n[defaults]\nconcurrency = 3\nretries = 1\n\n{jobs_toml}",
            self.url
        );
        let path = self.dir.path().join("idem.toml");
        std::fs::write(&path, &text).expect("write config");
        let config = config::parse(&path, &text, &|_| None).unwrap_or_else(|e| panic!("{e}"));
        (path, config)
    }

    pub async fn warehouse(&self, config: &Config) -> Warehouse {
        Warehouse::connect(&config.warehouse, 4)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some((server, name)) = self.admin.take() else {
            return;
        };
        let kind = self.kind;
        // Dropping runs outside the test's runtime, which may be shutting down.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if kind == Kind::Postgres {
                    if let Ok(mut c) = sqlx::PgConnection::connect(&server).await {
                        let _ = c
                            .execute(AssertSqlSafe(format!(
                                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                            )))
                            .await;
                    }
                } else if let Ok(mut c) = sqlx::MySqlConnection::connect(&server).await {
                    let _ = c
                        .execute(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name}")))
                        .await;
                }
            });
        })
        .join();
    }
}

/// Generates one `#[tokio::test]` per server engine (PostgreSQL, MariaDB)
/// from an async fn taking a `Kind`: for what SQLite, inside idem, has no
/// part in (a server's sessions, locks and processes).
#[macro_export]
macro_rules! on_server_engines {
    ($($name:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[cfg_attr(
                    not(idem_test_postgres),
                    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
                )]
                async fn $name() {
                    super::$name($crate::common::Kind::Postgres).await;
                }
            )*
        }
        mod mysql {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[cfg_attr(
                    not(idem_test_mysql),
                    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
                )]
                async fn $name() {
                    super::$name($crate::common::Kind::MySql).await;
                }
            )*
        }
    };
}

/// Generates one `#[tokio::test]` per engine from an async fn taking a `Kind`.
#[macro_export]
macro_rules! on_every_engine {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::common::Kind::Sqlite).await;
                }
            )*
        }
        $crate::on_server_engines!($($name),*);
    };
}

/// The smallest warehouse a job loads: `src` and `fct` of `(id, dt)`, the
/// source holding a row on each of 2026-01-01 and 2026-01-02.
pub const TWO_DAYS: [&str; 3] = [
    "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
    "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')",
];

/// A `[[jobs]]` entry of a day-grained replace_partition job on column `dt`.
pub fn replace_job(name: &str, target: &str, end: &str, sql: &str) -> String {
    job_toml(
        name,
        target,
        "replace_partition",
        "partition_column = \"dt\"",
        end,
        sql,
    )
}

/// A `[[jobs]]` entry of a replace job `fct` of `grain` from `start` to
/// `end` over the zoned (`timestamptz`) column `ts`, reading `src (id, ts)`.
pub fn zoned_job(grain: &str, start: &str, end: &str) -> String {
    format!(
        "[[jobs]]\nname = \"fct\"\ntarget = \"fct\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"ts\"\ngrain = \"{grain}\"\nstart = \"{start}\"\nend = \"{end}\"\n\
         sql = \"select id, ts from src where ts >= :start and ts < :end\"\n"
    )
}

/// The script of [`zoned_job`]'s tables on PostgreSQL: `src`, and `fct`
/// partitioned by range on `ts` with one partition, `fct_first`, of
/// `first` (`FOR VALUES FROM … TO …`).
pub fn zoned_tables(first: &str) -> [String; 3] {
    [
        "CREATE TABLE src (id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL)".into(),
        "CREATE TABLE fct (id INTEGER NOT NULL, ts TIMESTAMPTZ NOT NULL) PARTITION BY RANGE (ts)"
            .into(),
        format!("CREATE TABLE fct_first PARTITION OF fct {first}"),
    ]
}

/// A `[[jobs]]` entry of a day-grained merge_key job on key `id`.
pub fn merge_job(name: &str, target: &str, end: &str, sql: &str) -> String {
    job_toml(name, target, "merge_key", "unique_key = [\"id\"]", end, sql)
}

fn job_toml(name: &str, target: &str, strategy: &str, key: &str, end: &str, sql: &str) -> String {
    format!(
        "[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"{strategy}\"\n{key}\ngrain = \"day\"\n\
         start = \"2026-01-01\"\nend = \"{end}\"\nsql = \"\"\"\n{sql}\n\"\"\"\n\n"
    )
}

/// How a test's idem writes its marks: in UTF-8 whatever the locale
/// `cargo test` runs under (`LC_ALL=C cargo test` makes the CLI write
/// ASCII, and the tests that expect `■` failed). A test of the locale's
/// rule removes it and sets its own locale.
pub const UNICODE_GLYPHS: (&str, &str) = ("IDEM_GLYPHS", "unicode");

/// The idem binary, to be given its arguments, with [`UNICODE_GLYPHS`].
pub fn idem_command() -> std::process::Command {
    let mut idem = std::process::Command::new(env!("CARGO_BIN_EXE_idem"));
    idem.env(UNICODE_GLYPHS.0, UNICODE_GLYPHS.1);
    idem
}

/// The idem binary run on a config file.
pub fn idem(config: &Path, args: &[&str]) -> std::process::Output {
    idem_command()
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .expect("idem ran")
}

/// What a command printed on stdout, once it is known to have exited 0.
pub fn stdout_ok(out: &std::process::Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a backfill to its end: its summary and every event it sent.
pub async fn run(
    wh: &Warehouse,
    backfill: &idem::engine::Backfill,
) -> (idem::engine::RunSummary, Vec<idem::engine::Event>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let summary = idem::engine::run(wh, backfill, &tx, &Default::default()).await;
    drop(tx);
    let mut events = Vec::new();
    while let Some(e) = rx.recv().await {
        events.push(e);
    }
    (summary, events)
}

/// The errors of the partitions that failed, in the order they failed.
pub fn errors(events: &[idem::engine::Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            idem::engine::Event::PartitionFailed { error, .. } => Some(error.clone()),
            _ => None,
        })
        .collect()
}

/// Polls a PostgreSQL query giving one count, every 100 ms and at most
/// `tries` times, until `done` holds of the count: whether it came to.
pub async fn poll_count(
    conn: &mut sqlx::PgConnection,
    query: &str,
    tries: usize,
    done: impl Fn(i64) -> bool,
) -> bool {
    use sqlx::Row;
    for _ in 0..tries {
        let n: i64 = sqlx::query(AssertSqlSafe(query.to_string()))
            .fetch_one(&mut *conn)
            .await
            .expect("poll")
            .get(0);
        if done(n) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    false
}

/// The idem binary started on a config file, its output dropped.
pub fn spawn_idem(config: &Path, args: &[&str]) -> std::process::Child {
    idem_command()
        .arg("--config")
        .arg(config)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn idem")
}

/// Kills a spawned idem once the PostgreSQL count `in_flight` shows it mid
/// load (panicking with `never` if it never does within 15 s), and waits
/// until its session is gone: the server ends it once it notices the
/// client is.
pub async fn kill_idem_mid_load(
    conn: &mut sqlx::PgConnection,
    mut child: std::process::Child,
    in_flight: &str,
    never: &str,
) {
    assert!(poll_count(conn, in_flight, 150, |n| n > 0).await, "{never}");
    child.kill().expect("kill idem");
    child.wait().expect("reap idem");
    poll_count(conn, in_flight, 200, |n| n == 0).await;
}

/// The console's screen as drawn now, a line per row.
pub fn screen_text(app: &idem::tui::App) -> String {
    let (w, h) = app.size;
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| idem::tui::view::render(f, app)).expect("draw");
    let buf = t.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs each statement on `wh`, as the test's admin; a failure names it.
pub async fn exec(wh: &Warehouse, statements: &[String]) {
    for s in statements {
        wh.pool()
            .execute(AssertSqlSafe(s.clone()))
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

/// The URL with `user` in place of its user (and no password).
pub fn as_user(url: &str, user: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let rest = rest.split_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{user}@{rest}")
}

/// The database a URL names.
pub fn database(url: &str) -> String {
    let path = url.split('?').next().expect("a URL");
    path.rsplit('/').next().expect("a database").to_string()
}

/// Runs `body`, then `cleanup` whether or not the body panicked: a role
/// outlives the test's database.
pub async fn with_cleanup(
    body: impl std::future::Future<Output = ()>,
    cleanup: impl std::future::Future<Output = ()>,
) {
    let outcome = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(body)).await;
    cleanup.await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
