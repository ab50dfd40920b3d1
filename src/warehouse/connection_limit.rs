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

    /// Runs `own`, which opens a connection of idem's own beside the pool
    /// (a describe on the engine's own driver), taking its turn with the
    /// pool rather than racing it: where the pool may hold every connection
    /// the server grants the role, or the server refuses `own` one (sessions
    /// of the role's elsewhere), one of the pool's places is held empty for
    /// it ([`EmptySlot`]), so that no reader waiting on the pool opens a
    /// connection into the place meanwhile. A refusal is asked again within
    /// the connect timeout (the server counts a closed session gone a moment
    /// later). Then the place is filled again, as the pool fills it, once the
    /// server counts `own`'s session gone: the pool opens none into it that
    /// the server would refuse.
    pub(super) async fn beside_the_pool<T, F>(&self, own: impl Fn() -> F) -> Result<T, sqlx::Error>
    where
        F: std::future::Future<Output = Result<T, sqlx::Error>>,
    {
        let until = tokio::time::Instant::now() + self.config().connect_timeout;
        let mut slot = None;
        if self.pool_holds_the_grant() {
            slot = self.empty_slot().await;
        }
        let mut done = own().await;
        while let Err(e) = &done
            && refusal(e).is_some()
            && tokio::time::Instant::now() < until
        {
            if slot.is_none() {
                slot = self.empty_slot().await;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            done = own().await;
        }
        if let Some(slot) = slot {
            self.fill(slot).await;
        }
        done
    }

    /// One of the pool's places, its session closed, once one is idle (a
    /// connection goes back to the pool a moment after its last use); None
    /// where none comes within the connect timeout.
    async fn empty_slot(&self) -> Option<EmptySlot> {
        use sqlx::Connection;
        let pool = self.pool();
        let pooled = match pool.try_acquire() {
            Some(idle) => idle,
            // Where the pool has room and holds less than the grant, one
            // opened only to be closed would free no place.
            None if pool.size() < pool.options().get_max_connections()
                && !self.pool_holds_the_grant() =>
            {
                return None;
            }
            None => pool.acquire().await.ok()?,
        };
        // sqlx holds a pool's place only with a connection in it: one with
        // no server session stands in (an in-memory SQLite database).
        let stand_in = sqlx::AnyConnection::connect("sqlite::memory:").await.ok()?;
        let mut pooled = pooled;
        let session = std::mem::replace(&mut *pooled, stand_in);
        let slot = EmptySlot(Some(pooled));
        let _ = session.close().await;
        Some(slot)
    }

    /// Gives `slot` back to the pool with a session in it, opened and set up
    /// as the pool's are, asked again on a refusal within the connect
    /// timeout; where none comes, given back empty (the pool opens one when
    /// it needs it).
    async fn fill(&self, mut slot: EmptySlot) {
        use sqlx::{ConnectOptions, Connection};
        let options = self.pool().connect_options();
        let until = tokio::time::Instant::now() + self.config().connect_timeout;
        let timeouts = (self.config().lock_timeout, self.config().statement_timeout);
        let session = loop {
            let opened = match tokio::time::timeout_at(until, options.connect()).await {
                Ok(opened) => opened,
                Err(_) => return,
            };
            match opened {
                Ok(mut conn) => {
                    match super::connect::prepare_session(self.dialect(), &mut conn, timeouts).await
                    {
                        Ok(()) => break conn,
                        Err(_) => return,
                    }
                }
                Err(e) if refusal(&e).is_some() && tokio::time::Instant::now() < until => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(_) => return,
            }
        };
        if let Some(mut pooled) = slot.0.take() {
            let stand_in = std::mem::replace(&mut *pooled, session);
            // Back to the pool, with its session.
            drop(pooled);
            let _ = stand_in.close().await;
        }
    }
}

/// One of the pool's places held with no server session in it, for a
/// connection of idem's own: dropped, it is given back empty (its stand-in
/// never goes back to the pool).
struct EmptySlot(Option<PoolConnection<Any>>);

impl Drop for EmptySlot {
    fn drop(&mut self) {
        if let Some(pooled) = self.0.take() {
            drop(pooled.detach());
        }
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
