//! Warehouses that limit connections (a role's or database's CONNECTION
//! LIMIT, a server's max_connections, MariaDB's max_user_connections, a
//! pooler's): a refusal of a new connection is told apart from a server
//! that is down and from a job that does not fit, so that a run lowers
//! its concurrency to what the warehouse grants instead of failing.

use std::time::Duration;

use sqlx::mysql::MySqlDatabaseError;
use sqlx::pool::PoolConnection;
use sqlx::{Any, Row};

use super::{Engine, Warehouse, WarehouseError};

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

    /// A pooled connection for a read or a ledger write outside a load;
    /// where none came within `connect_timeout`, the server's refusal of
    /// one, where it refuses one now, rather than a server that reads as
    /// down.
    pub(crate) async fn pooled(&self) -> Result<PoolConnection<Any>, WarehouseError> {
        let got = self.pool().acquire().await;
        self.granted(got).await
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

    /// How many partitions a run may have in flight within what the server
    /// granted the role at connect (one connection kept for the run's own
    /// reads and ledger writes where it grants two or more), and why.
    pub fn partitions_granted(&self) -> Option<(usize, &str)> {
        self.grant.as_ref().map(|grant| {
            let partitions = (grant.connections as usize).saturating_sub(1).max(1);
            (partitions, grant.why.as_str())
        })
    }

    /// Whether the pool may hold every connection the server granted the
    /// role at connect: one opened beside it is then refused, or takes the
    /// one a load was about to open (which then waits its turn).
    pub(super) fn pool_holds_the_grant(&self) -> bool {
        let max = self.pool().options().get_max_connections();
        self.grant.as_ref().is_some_and(|g| g.connections <= max)
    }

    /// Closes one of the pool's connections where it holds all it may
    /// have, once one is idle (a connection goes back to the pool a moment
    /// after its last use), so that a connection of its own (a describe)
    /// the warehouse refused for a limit on connections may be had. The
    /// server is given a moment to count it gone.
    pub(super) async fn make_room(&self) {
        use sqlx::Connection;
        let pool = self.pool();
        if pool.size() >= pool.options().get_max_connections()
            && let Ok(Ok(pooled)) =
                tokio::time::timeout(self.config().connect_timeout, pool.acquire()).await
        {
            let _ = pooled.detach().close().await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many connections at once the server lets this role have, asked at
/// connect, and why (the tightest limit, in words): a pool and a run kept
/// within it open no connection the server refuses. PostgreSQL: the role's
/// and the database's CONNECTION LIMIT (not a superuser's), the server's
/// max_connections less its superuser_reserved_connections; MariaDB/MySQL:
/// the user's max_user_connections, the server's max_connections. Each
/// less the sessions counted against it that are not `conn`. None where
/// the server says nothing of a limit or cannot be asked.
#[derive(Clone, Debug)]
pub(crate) struct Grant {
    pub connections: u32,
    pub why: String,
}

pub(super) async fn granted(engine: Engine, conn: &mut sqlx::AnyConnection) -> Option<Grant> {
    // (limit, sessions counted against it including `conn`, its words)
    let limits: Vec<(i64, i64, String)> = match engine {
        Engine::Postgres => {
            let row = sqlx::query(POSTGRES_LIMITS)
                .fetch_one(&mut *conn)
                .await
                .ok()?;
            let role: String = row.try_get(0).ok()?;
            let superuser: bool = row.try_get(1).ok()?;
            let database: String = row.try_get(2).ok()?;
            let n = |i: usize| row.try_get::<i64, _>(i).ok();
            let (role_limit, db_limit, server_limit) = (n(3)?, n(4)?, n(5)?);
            let (role_open, db_open, server_open) = (n(6)?, n(7)?, n(8)?);
            let mut limits = vec![(
                server_limit,
                server_open,
                "the server's max_connections".to_string(),
            )];
            if !superuser && role_limit >= 0 {
                limits.push((
                    role_limit,
                    role_open,
                    format!("role \"{role}\"'s CONNECTION LIMIT"),
                ));
            }
            if !superuser && db_limit >= 0 {
                limits.push((
                    db_limit,
                    db_open,
                    format!("database \"{database}\"'s CONNECTION LIMIT"),
                ));
            }
            limits
        }
        Engine::MySql => {
            let row = sqlx::query(MYSQL_LIMITS).fetch_one(&mut *conn).await.ok()?;
            let user: String = row.try_get(0).ok()?;
            let n = |i: usize| row.try_get::<i64, _>(i).ok();
            let (user_limit, server_limit, user_open, server_open) = (n(1)?, n(2)?, n(3)?, n(4)?);
            let mut limits = vec![(
                server_limit,
                server_open,
                "the server's max_connections".to_string(),
            )];
            if user_limit > 0 {
                limits.push((
                    user_limit,
                    user_open,
                    format!("max_user_connections of {user}"),
                ));
            }
            limits
        }
        Engine::Sqlite => return None,
    };
    limits
        .into_iter()
        .map(|(limit, open, words)| {
            let others = (open - 1).max(0);
            let granted = (limit - others).max(1);
            let why = match others {
                0 => format!("{words} {limit}"),
                n => format!("{words} {limit}, {n} of them held by other sessions"),
            };
            (granted, why)
        })
        .min_by_key(|(granted, _)| *granted)
        .map(|(granted, why)| Grant {
            connections: u32::try_from(granted).unwrap_or(u32::MAX),
            why,
        })
}

/// Opens the pool's `connections` (all the server grants the role) once
/// the connect's own session is closed, and leaves them idle: a server
/// counts a closed session gone a moment later (MariaDB refuses the one
/// more at once meanwhile), so each is retried on a refusal until
/// `timeout`, rather than a command's first reads meeting it.
pub(super) async fn open_within_grant(pool: &sqlx::AnyPool, connections: u32, timeout: Duration) {
    let until = tokio::time::Instant::now() + timeout;
    let mut opened = Vec::new();
    while opened.len() < connections as usize {
        match pool.acquire().await {
            Ok(conn) => opened.push(conn),
            Err(e) if refusal(&e).is_some() && tokio::time::Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(_) => break,
        }
    }
}

/// PostgreSQL: the role, whether it is a superuser, the database; the
/// role's, the database's and the server's limits; the client sessions
/// counted against each.
const POSTGRES_LIMITS: &str = "SELECT current_user::text, r.rolsuper, current_database()::text, \
     r.rolconnlimit::bigint, d.datconnlimit::bigint, \
     current_setting('max_connections')::bigint - current_setting('superuser_reserved_connections')::bigint, \
     (SELECT count(*) FROM pg_stat_activity a WHERE a.usename = current_user AND a.backend_type = 'client backend'), \
     (SELECT count(*) FROM pg_stat_activity a WHERE a.datname = current_database() AND a.backend_type = 'client backend'), \
     (SELECT count(*) FROM pg_stat_activity a WHERE a.backend_type = 'client backend') \
     FROM pg_roles r, pg_database d WHERE r.rolname = current_user AND d.datname = current_database()";

/// MariaDB/MySQL: the user; its max_user_connections (the session's value
/// is the user's own where it has one; 0 is none), the server's
/// max_connections; its sessions and all sessions the user may see (its
/// own only, without PROCESS).
const MYSQL_LIMITS: &str = "SELECT CAST(CURRENT_USER() AS CHAR), \
     CAST(@@max_user_connections AS SIGNED), CAST(@@max_connections AS SIGNED), \
     (SELECT COUNT(*) FROM information_schema.processlist WHERE user = SUBSTRING_INDEX(CURRENT_USER(), '@', 1)), \
     (SELECT COUNT(*) FROM information_schema.processlist)";
