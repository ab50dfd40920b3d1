//! Connecting to a warehouse: the first session (which says at once what
//! is wrong with a URL or a server), the pool, each session's settings, and
//! what a connection does about idem's ledger.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{Connection, Executor};

use super::answering::Beside;
use super::error::sql_message;
use super::ledger_setup::{self, LedgerPresence};
use super::{
    Dialect, Engine, Warehouse, WarehouseError, connection_limit, mysql, postgres, redact, sqlite,
};
use crate::config::WarehouseConfig;

/// How often a connection that found no ledger looks for one again.
const LEDGER_PROBE_EVERY: Duration = Duration::from_secs(1);

/// A SQLite file the process may not write, as the error that says so.
fn read_only_error(dialect: &dyn Dialect, url: &str, e: &sqlx::Error) -> Option<WarehouseError> {
    let message = sql_message(e);
    (dialect.engine() == Engine::Sqlite && message.contains("readonly database")).then(|| {
        WarehouseError::ReadOnly {
            url: redact(url),
            message,
        }
    })
}

/// A failure to probe or make idem's ledger, as the error that says why.
fn ledger_error(
    dialect: &'static dyn Dialect,
    url: &str,
    e: sqlx::Error,
    reading: bool,
) -> WarehouseError {
    read_only_error(dialect, url, &e)
        .or_else(|| ledger_setup::denied_error(dialect, &redact(url), &e, reading))
        .unwrap_or_else(|| super::lock_holder::file_holder_named(dialect, url, e.into()))
}

/// What a connection does about idem's ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LedgerUse {
    /// Makes whatever of it is missing, as a run needs.
    Make,
    /// Only looks: what is not there reads as empty.
    Read,
}

impl Warehouse {
    /// A connection for a run: idem's ledger is made if it is missing.
    pub async fn connect(
        config: &WarehouseConfig,
        max_connections: u32,
    ) -> Result<Warehouse, WarehouseError> {
        Self::connect_for(config, max_connections, LedgerUse::Make).await
    }

    /// A connection that reads (`status`, `run --dry-run`, `log`, the
    /// console until it runs): it creates nothing, so that a warehouse
    /// idem never ran on is left as it was and a role that may only read
    /// can use it; a ledger that is not there reads as no attempts. A run
    /// on it calls [`Warehouse::make_ledger`] first.
    pub async fn connect_to_read(
        config: &WarehouseConfig,
        max_connections: u32,
    ) -> Result<Warehouse, WarehouseError> {
        Self::connect_for(config, max_connections, LedgerUse::Read).await
    }

    async fn connect_for(
        config: &WarehouseConfig,
        max_connections: u32,
        ledger_use: LedgerUse,
    ) -> Result<Warehouse, WarehouseError> {
        sqlx::any::install_default_drivers();
        let url = config.url.clone();
        let dialect: &'static dyn Dialect = match config.engine() {
            Engine::Sqlite => &sqlite::Sqlite,
            Engine::Postgres => &postgres::Postgres,
            Engine::MySql => &mysql::MySql::DEFAULT,
        };
        // A file that is not there is a mistyped path far more often than
        // a new warehouse: made empty, it would read as every partition
        // missing, and a run would load into it.
        if dialect.engine() == Engine::Sqlite
            && !url.contains("mode=")
            && let Some(file) = sqlite::database_file(&url)
            && !file.exists()
        {
            return Err(WarehouseError::NoDatabaseFile {
                url: redact(&config.url),
                file: file.display().to_string(),
            });
        }
        let url = if dialect.engine() == Engine::Sqlite && !url.contains("mode=") {
            format!("{url}{}mode=rwc", if url.contains('?') { "&" } else { "?" })
        } else {
            url
        };
        // A server that stops answering while the first session is set up
        // or the ledger looked at (a failover, a hung primary) is found so
        // as a read is; connecting itself is bounded by connect_timeout.
        let options =
            url.parse::<AnyConnectOptions>()
                .map_err(|source| WarehouseError::Connect {
                    url: redact(&config.url),
                    source,
                })?;
        let beside = Beside {
            engine: dialect.engine(),
            options: &options,
            config,
            at_the_limit: None,
        };
        let open = Self::open(config, dialect, &url, max_connections, ledger_use);
        beside.answering(open).await
    }

    /// [`Warehouse::connect_for`] once the URL is known: the first
    /// session, the pool and the ledger.
    async fn open(
        config: &WarehouseConfig,
        dialect: &'static dyn Dialect,
        url: &str,
        max_connections: u32,
        ledger_use: LedgerUse,
    ) -> Result<Warehouse, WarehouseError> {
        let timeouts = (config.lock_timeout, config.statement_timeout);
        let connect_error = |source: sqlx::Error| {
            read_only_error(dialect, &config.url, &source).unwrap_or_else(|| {
                WarehouseError::Connect {
                    url: redact(&config.url),
                    source,
                }
            })
        };
        // One connection first, so that a wrong URL, a server that is down or
        // a failing session setup says so at once, in the driver's words,
        // rather than as a pool timing out. It also makes sure of the
        // ledger; the pool opens its connections as they are needed.
        let mut first =
            tokio::time::timeout(config.connect_timeout, sqlx::AnyConnection::connect(url))
                .await
                .map_err(|_| WarehouseError::ConnectTimeout {
                    url: redact(&config.url),
                    after: format!("{:?}", config.connect_timeout),
                })?
                .map_err(connect_error)?;
        prepare_session(dialect, &mut first, timeouts)
            .await
            .map_err(connect_error)?;
        let (dialect, table_names): (&'static dyn Dialect, _) = match dialect.engine() {
            Engine::MySql => {
                let (mysql, names) = mysql::as_the_server_reads(&mut first)
                    .await
                    .map_err(connect_error)?;
                (mysql, names)
            }
            engine => (dialect, engine.table_names()),
        };
        super::clock::measure(dialect, &mut first).await;
        // A pool kept within what the server grants the role waits for one
        // of its own connections rather than opening one the server refuses
        // (MariaDB at once, PostgreSQL after `connect_timeout` of retries).
        let granted = connection_limit::granted(dialect.engine(), &mut first).await;
        let asked = max_connections;
        let max_connections = match &granted {
            Some(grant) => max_connections.min(grant.connections),
            None => max_connections,
        }
        .max(1);
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(config.connect_timeout)
            // A connection used moments ago is alive: a ping before each use
            // would cost a round trip per partition. One that sat idle is
            // checked first (the server may have restarted meanwhile); one
            // whose ping goes unanswered (a failover or a NAT left it open
            // and silent) is closed for another, not waited on.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for > PING_WHEN_IDLE {
                        match tokio::time::timeout(PING_TIMEOUT, conn.ping()).await {
                            Ok(pinged) => pinged?,
                            Err(_) => return Ok(false),
                        }
                    }
                    Ok(true)
                })
            })
            .after_connect(move |conn, _| Box::pin(prepare_session(dialect, conn, timeouts)))
            .connect_lazy(url)
            .map_err(connect_error)?;
        // A server's session takes milliseconds to open (a new process on
        // PostgreSQL, then its setup): the pool's first two open while the
        // ledger is made sure of, rather than one after the other when a
        // command's first reads ask for them (with the describe run beside the
        // state read, a 1-day PostgreSQL re-run took 55 ms instead of 65,
        // median of 20).
        // Within the grant, less `first`, still open meanwhile.
        let warm = match &granted {
            Some(grant) => max_connections.min(2).min(grant.connections - 1),
            None => max_connections.min(2),
        };
        if dialect.engine() != Engine::Sqlite && warm > 0 {
            let pool = pool.clone();
            tokio::spawn(async move {
                let opened = futures::future::join_all((0..warm).map(|_| pool.acquire())).await;
                drop(opened);
            });
        }
        let ledger = match ledger_use {
            LedgerUse::Make => ledger_setup::ensure(dialect, &mut first)
                .await
                .map(|()| LedgerPresence::COMPLETE),
            LedgerUse::Read => ledger_setup::probe(dialect, &mut first).await,
        };
        let ledger = match ledger {
            Ok(presence) => ledger_setup::check_shape(dialect, &mut first, presence)
                .await
                .map(|()| presence),
            Err(e) => {
                let reading = ledger_use == LedgerUse::Read;
                Err(ledger_error(dialect, &config.url, e, reading))
            }
        };
        let _ = first.close().await;
        let ledger = match ledger {
            Ok(presence) => presence,
            Err(e) => {
                // The warm-up's sessions end as any other would, not dropped.
                pool.close().await;
                return Err(e);
            }
        };
        if granted.as_ref().is_some_and(|g| g.connections <= asked) {
            connection_limit::open_within_grant(&pool, max_connections, config.connect_timeout)
                .await;
        }
        Ok(Warehouse {
            pool,
            dialect,
            config: config.clone(),
            described: Arc::default(),
            shapes: Arc::default(),
            recorded_definitions: Arc::default(),
            lock_probes: Arc::default(),
            own_loads: Arc::default(),
            ledger: Arc::new(Mutex::new((ledger, Some(std::time::Instant::now())))),
            grant: granted,
            table_names,
        })
    }

    /// Whether the warehouse answers now: a new connection, made beside
    /// the pool (whose idle connections may be ones the server or network
    /// closed since, and fail only when used), within the connect timeout.
    /// A server that answers with a refusal of its own (too many clients, a
    /// password changed since) is there: the pool's sessions may still serve.
    pub async fn reach(&self) -> Result<(), WarehouseError> {
        super::answering::reach(&self.pool.connect_options(), &self.config).await
    }

    /// Makes whatever of idem's ledger is missing, before a run on a
    /// connection made to read; nothing when it is all there.
    pub async fn make_ledger(&self) -> Result<(), WarehouseError> {
        if self.ledger.lock().is_ok_and(|p| p.0.complete) {
            return Ok(());
        }
        let mut conn = self.pooled().await?;
        if let Err(e) = ledger_setup::ensure(self.dialect, &mut conn).await {
            return Err(ledger_error(self.dialect, &self.config.url, e, false));
        }
        if let Ok(mut presence) = self.ledger.lock() {
            *presence = (LedgerPresence::COMPLETE, Some(std::time::Instant::now()));
        }
        Ok(())
    }

    /// Which of idem's ledger objects are there. A ledger without its
    /// attempts is looked for again (a second at most since it was last
    /// looked for): a run elsewhere may have made it since this connection,
    /// which the console keeps open for hours, found none.
    pub(crate) async fn ledger_presence(&self) -> Result<LedgerPresence, WarehouseError> {
        let (known, probed_at) = self
            .ledger
            .lock()
            .map(|p| *p)
            .unwrap_or((LedgerPresence::default(), None));
        if known.attempts || probed_at.is_some_and(|at| at.elapsed() < LEDGER_PROBE_EVERY) {
            return Ok(known);
        }
        let mut conn = self.pooled().await?;
        let found = ledger_setup::probe(self.dialect, &mut conn).await?;
        if let Ok(mut presence) = self.ledger.lock() {
            *presence = (found, Some(std::time::Instant::now()));
        }
        Ok(found)
    }
}

/// Session settings every connection gets: UTC, isolation, timeouts; and
/// those it goes without where they are refused.
pub(super) async fn prepare_session(
    dialect: &'static dyn Dialect,
    conn: &mut sqlx::AnyConnection,
    (lock, statement): (Duration, Option<Duration>),
) -> Result<(), sqlx::Error> {
    for stmt in dialect.session_preferences() {
        let _ = conn.execute(*stmt).await;
    }
    for stmt in dialect.session_setup() {
        conn.execute(*stmt).await?;
    }
    for stmt in dialect.session_timeouts(lock, statement) {
        stmt.query().execute(&mut *conn).await?;
    }
    if let (Engine::MySql, Some(t)) = (dialect.engine(), statement) {
        mysql::session::set_statement_timeout(conn, t).await?;
    }
    Ok(())
}

/// A pooled connection idle longer than this is pinged before its next use,
/// and given this long to answer.
const PING_WHEN_IDLE: Duration = Duration::from_secs(1);
const PING_TIMEOUT: Duration = Duration::from_secs(2);
