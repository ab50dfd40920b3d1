//! A server that stops answering (a hung primary, a failover under way, a
//! network that drops everything) leaves a statement waiting for a reply
//! that never comes: the driver sets no keepalive, and a server whose
//! processes are stopped still has its host's kernel acknowledge every
//! packet. A load holding its lock is watched for that (`load::session`);
//! the reads around it (states, plans, the ledger, the console's refresh, a
//! verification's runs, which never commit) and a load not yet holding its
//! lock are watched here: once one has waited a
//! moment, new connections are tried beside it, and two in a row that get
//! no answer end it, saying the warehouse is not answering. Where the pool
//! may hold every connection the warehouse grants the role, one of its idle
//! connections is asked first: a new one would be refused, or take the one
//! a load was about to open.
//! A slow read on a server that answers is left alone, however long.
//! Connecting is watched so too, from its first session's setup on.

use std::future::Future;
use std::time::{Duration, Instant};

use sqlx::AnyPool;
use sqlx::any::AnyConnectOptions;

use super::error::sql_message;
use super::{Engine, Warehouse, WarehouseError, redact};
use crate::config::WarehouseConfig;

/// How long work runs before the server is first asked whether it answers.
const FIRST_ASK: Duration = Duration::from_secs(2);

/// How long between asks after one that could not connect.
const NEXT_ASK: Duration = Duration::from_secs(1);

/// How long between asks while the server answers them.
const ASK_AGAIN: Duration = Duration::from_secs(5);

impl Warehouse {
    /// Runs `work` to its end, or until the warehouse is found not to
    /// answer: two new connections in a row that could not be made while
    /// it waited. Then `work` is dropped (its connection with it) and the
    /// error says so.
    pub async fn answering<T>(
        &self,
        work: impl Future<Output = Result<T, WarehouseError>>,
    ) -> Result<T, WarehouseError> {
        let options = self.pool.connect_options();
        self.beside(&options).answering(work).await
    }

    /// Ends only when the warehouse is found not to answer while
    /// `waiting()` holds ([`Beside::silence_while`]): what watches a load
    /// before it holds its lock, where dropping it is all it takes to end it.
    pub(super) async fn silent_while(&self, waiting: impl Fn() -> bool) -> WarehouseError {
        let options = self.pool.connect_options();
        self.beside(&options).silence_while(waiting).await
    }

    fn beside<'a>(&'a self, options: &'a AnyConnectOptions) -> Beside<'a> {
        Beside {
            engine: self.dialect().engine(),
            options,
            config: &self.config,
            at_the_limit: self
                .grant
                .as_ref()
                .filter(|_| self.pool_holds_the_grant())
                .map(|grant| (&self.pool, grant.connections)),
        }
    }
}

/// Where new connections are tried beside a read: before a [`Warehouse`]
/// is made (its session setup and ledger check), as after.
pub(super) struct Beside<'a> {
    pub engine: Engine,
    pub options: &'a AnyConnectOptions,
    pub config: &'a WarehouseConfig,
    /// The pool, where it may hold every connection the warehouse grants
    /// the role, and how many that is.
    pub at_the_limit: Option<(&'a AnyPool, u32)>,
}

impl Beside<'_> {
    /// [`Warehouse::answering`].
    pub async fn answering<T>(
        &self,
        work: impl Future<Output = Result<T, WarehouseError>>,
    ) -> Result<T, WarehouseError> {
        tokio::pin!(work);
        tokio::select! {
            done = &mut work => done,
            silent = self.silence() => Err(silent),
        }
    }

    /// Ends only when the warehouse is found not to answer.
    async fn silence(&self) -> WarehouseError {
        self.silence_while(|| true).await
    }

    /// Ends only when the warehouse is found not to answer while
    /// `waiting()` holds (a load that holds nothing on the server yet):
    /// [`FIRST_ASK`] after it began to hold, new connections are tried;
    /// once it no longer holds, the count starts again.
    async fn silence_while(&self, waiting: impl Fn() -> bool) -> WarehouseError {
        // A SQLite file is no server: a wait on it is a lock, bounded by
        // lock_timeout.
        if self.engine == Engine::Sqlite {
            return std::future::pending().await;
        }
        let mut since = None;
        let mut unanswered = 0;
        loop {
            if !waiting() {
                (since, unanswered) = (None, 0);
                tokio::time::sleep(NEXT_ASK).await;
                continue;
            }
            let began = *since.get_or_insert_with(Instant::now);
            if began.elapsed() < FIRST_ASK {
                tokio::time::sleep(FIRST_ASK - began.elapsed()).await;
                continue;
            }
            match self.answers().await {
                Ok(()) => {
                    unanswered = 0;
                    tokio::time::sleep(ASK_AGAIN).await;
                }
                Err(e) => {
                    unanswered += 1;
                    if unanswered >= 2 && waiting() {
                        return WarehouseError::NotAnswering {
                            url: redact(&self.config.url),
                            waited: began.elapsed().as_secs(),
                            probe: match e {
                                WarehouseError::ConnectTimeout { after, .. } => {
                                    format!("no answer within connect_timeout, {after}")
                                }
                                WarehouseError::Connect { source, .. } => sql_message(&source),
                                other => other.to_string(),
                            },
                        };
                    }
                    tokio::time::sleep(NEXT_ASK).await;
                }
            }
        }
    }
}

impl Beside<'_> {
    /// Whether the warehouse answers now: where the pool may hold every
    /// connection it grants the role, one of the pool's that answers a ping
    /// within the connect timeout says so: an idle one (none is taken from
    /// a load waiting for one), or, where it holds fewer than granted, one
    /// it opens and keeps for its loads. Else, or where none answers, a new
    /// connection ([`reach`]): at the limit, refused then only where the
    /// pool's are all busy, taking no slot a load could have.
    async fn answers(&self) -> Result<(), WarehouseError> {
        use sqlx::Connection;
        if let Some((pool, granted)) = self.at_the_limit {
            let pooled = match pool.try_acquire() {
                Some(idle) => Some(idle),
                None if pool.size() < granted => {
                    tokio::time::timeout(self.config.connect_timeout, pool.acquire())
                        .await
                        .ok()
                        .and_then(Result::ok)
                }
                None => None,
            };
            if let Some(mut pooled) = pooled {
                match tokio::time::timeout(self.config.connect_timeout, pooled.ping()).await {
                    Ok(Ok(())) => return Ok(()),
                    // Its state unknown: not given back.
                    _ => pooled.close_on_drop(),
                }
            }
        }
        reach(self.options, self.config).await
    }
}

/// Whether the warehouse answers now: a new connection with `options`,
/// within the connect timeout. A server that answers with a refusal of
/// its own (too many clients, a password changed since) is there.
pub(super) async fn reach(
    options: &AnyConnectOptions,
    config: &WarehouseConfig,
) -> Result<(), WarehouseError> {
    use sqlx::{ConnectOptions, Connection};
    let timeout = config.connect_timeout;
    match tokio::time::timeout(timeout, options.connect()).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(sqlx::Error::Database(_))) => Ok(()),
        Ok(Err(source)) => Err(WarehouseError::Connect {
            url: redact(&config.url),
            source,
        }),
        Err(_) => Err(WarehouseError::ConnectTimeout {
            url: redact(&config.url),
            after: format!("{timeout:?}"),
        }),
    }
}
