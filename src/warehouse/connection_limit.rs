//! Warehouses that limit connections (a role's or database's CONNECTION
//! LIMIT, a server's max_connections, MariaDB's max_user_connections, a
//! pooler's): a refusal of a new connection is told apart from a server
//! that is down and from a job that does not fit, so that a run lowers
//! its concurrency to what the warehouse grants instead of failing.

use std::time::Duration;

use sqlx::Any;
use sqlx::mysql::MySqlDatabaseError;
use sqlx::pool::PoolConnection;

use super::{Warehouse, WarehouseError};

/// How long a load waits on the pool for a new connection before the
/// server is asked, on a connection of its own, whether it refuses one.
/// Opening one takes milliseconds; PostgreSQL's refusal ("too many
/// connections", SQLSTATE 53300) the pool retries in silence until
/// `connect_timeout`, and then says only that none came.
const ASK_WHY_AFTER: Duration = Duration::from_millis(300);

/// The server's words, where `e` is its refusal of a new connection for a
/// limit on connections: PostgreSQL's `too_many_connections` (53300: a
/// role's or database's CONNECTION LIMIT, max_connections), pgbouncer's
/// `no more connections allowed`, MariaDB/MySQL's 1040 (Too many
/// connections), 1203 (max_user_connections) and 1226 (a user's resource
/// limit).
pub(crate) fn refusal(e: &sqlx::Error) -> Option<&str> {
    let sqlx::Error::Database(db) = e else {
        return None;
    };
    let limited = match db.try_downcast_ref::<MySqlDatabaseError>() {
        Some(e) => matches!(e.number(), 1040 | 1203 | 1226),
        None => {
            db.code().as_deref() == Some("53300")
                || db.message().starts_with("no more connections allowed")
        }
    };
    limited.then(|| db.message())
}

impl WarehouseError {
    /// The server's words, where the error is its refusal of a new
    /// connection for a limit on connections: nothing was started.
    pub fn connection_refusal(&self) -> Option<&str> {
        match self {
            WarehouseError::Sql(e) | WarehouseError::Connect { source: e, .. } => refusal(e),
            _ => None,
        }
    }
}

impl Warehouse {
    /// A pooled connection for a load; or, where the pool has none to give
    /// and the server refuses another, that refusal (in the server's
    /// words) at once rather than after `connect_timeout`.
    pub(super) async fn load_connection(&self) -> Result<PoolConnection<Any>, WarehouseError> {
        let acquire = self.pool().acquire();
        tokio::pin!(acquire);
        loop {
            tokio::select! {
                got = &mut acquire => return self.granted(got).await,
                () = tokio::time::sleep(ASK_WHY_AFTER) => {}
            }
            // Asked again while the pool has none to give: a connection
            // the server granted the question may be taken meanwhile.
            tokio::select! {
                got = &mut acquire => return self.granted(got).await,
                refused = self.refused_now() => if let Some(e) = refused {
                    return Err(WarehouseError::Sql(e));
                },
            }
        }
    }

    /// The pool's answer; where it gave up waiting, the server's refusal
    /// of a connection, where it refuses one now, rather than a server
    /// that reads as down.
    async fn granted(
        &self,
        got: Result<PoolConnection<Any>, sqlx::Error>,
    ) -> Result<PoolConnection<Any>, WarehouseError> {
        match got {
            Err(sqlx::Error::PoolTimedOut) => match self.refused_now().await {
                Some(refused) => Err(WarehouseError::Sql(refused)),
                None => Err(WarehouseError::Sql(sqlx::Error::PoolTimedOut)),
            },
            got => Ok(got?),
        }
    }

    /// The server's refusal of a new connection for a limit on
    /// connections, asked on a connection of its own; None if it grants
    /// one (closed at once) or fails otherwise.
    async fn refused_now(&self) -> Option<sqlx::Error> {
        use sqlx::{ConnectOptions, Connection};
        let options = self.pool().connect_options();
        match tokio::time::timeout(self.config().connect_timeout, options.connect()).await {
            Ok(Ok(conn)) => {
                let _ = conn.close().await;
                None
            }
            Ok(Err(e)) if refusal(&e).is_some() => Some(e),
            _ => None,
        }
    }

    /// Closes one of the pool's idle connections, so that a connection of
    /// its own (a describe) the warehouse refused for a limit on
    /// connections may be had: whether there was one. The server is given
    /// a moment to count it gone.
    pub(super) async fn make_room(&self) -> bool {
        use sqlx::Connection;
        let Some(idle) = self.pool().try_acquire() else {
            return false;
        };
        let _ = idle.detach().close().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        true
    }
}
