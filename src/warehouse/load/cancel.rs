//! A cancelled load stops on the server, not only in idem.
//!
//! Dropping a load's future closes its connection, but a server notices a
//! closed connection only when it next talks to it: a long `INSERT … SELECT`
//! runs on to its end, holding the partition's lock, after idem has said
//! "rolled back" and exited. So a cancelled load that holds its lock has its
//! session ended by the server (`pg_terminate_backend`, `KILL`), which rolls
//! it back and frees the lock at once; one whose COMMIT is on its way is let
//! finish, and reports what the server did.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use sqlx::Connection;
use tokio_util::sync::CancellationToken;

use super::LoadStep;
use crate::warehouse::{Warehouse, WarehouseError};

/// How long a load whose session was ended (or whose COMMIT was sent) is
/// given to end by itself before it is dropped.
const GRACE: Duration = Duration::from_secs(5);

/// Where a load stands, as far as stopping it on the server goes.
#[derive(Clone, Debug, Default)]
pub(super) enum Stage {
    /// Nothing on the server is the load's own yet (it is connecting, or
    /// waiting for its lock): dropping it is enough.
    #[default]
    Starting,
    /// Its session holds the partition's lock and works in it.
    Holding(SessionHolder),
    /// Its COMMIT is sent: the server decides, and the load reports it.
    Committing,
}

/// How the server knows the session of a load holding its lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionHolder {
    /// The session holding the lock of this key, the load's first
    /// (PostgreSQL: the lock is exclusive, so while the load holds it, its
    /// holder is the load's session).
    LockKey(String),
    /// The session of this id (MariaDB/MySQL `CONNECTION_ID()`).
    Session(i64),
}

/// The load's stage, set by the load as it goes and read when it is cancelled.
#[derive(Default)]
pub(super) struct StageCell(Mutex<Stage>);

impl StageCell {
    pub(super) fn set(&self, stage: Stage) {
        if let Ok(mut now) = self.0.lock() {
            *now = stage;
        }
    }

    fn get(&self) -> Stage {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Warehouse {
    /// Runs `load` to its end, or until `cancel` fires; then stops it as its
    /// stage allows. `Err(Cancelled)` means the load did not commit.
    pub(super) async fn unless_cancelled<T>(
        &self,
        load: impl Future<Output = Result<T, WarehouseError>>,
        stage: &StageCell,
        cancel: &CancellationToken,
        log: &(dyn Fn(LoadStep) + Send + Sync),
    ) -> Result<T, WarehouseError> {
        tokio::pin!(load);
        tokio::select! {
            done = &mut load => return done,
            () = cancel.cancelled() => {}
        }
        // The load is not polled while this runs: its stage stays as read.
        match stage.get() {
            Stage::Starting => return Err(WarehouseError::Cancelled),
            Stage::Committing => {
                log(
                    "cancelled while its COMMIT is on its way: it ends as the server ends it"
                        .into(),
                );
            }
            Stage::Holding(holder) => match self.end_session(holder).await {
                Ok(()) => {
                    log("cancelled: its session on the server is ended, which rolls it back".into())
                }
                Err(e) => log(format!(
                    "cancelled: its session on the server could not be ended ({e}); it rolls back when the server sees the connection closed"
                )),
            },
        }
        match tokio::time::timeout(GRACE, &mut load).await {
            // A COMMIT that went through stays what it is: loaded.
            Ok(Ok(done)) => Ok(done),
            Ok(Err(_)) | Err(_) => Err(WarehouseError::Cancelled),
        }
    }

    /// Ends the server session holding `holder`, on a connection of its own:
    /// the pool's may all be busy with the loads being cancelled.
    async fn end_session(&self, holder: SessionHolder) -> Result<(), WarehouseError> {
        let mut sql = self.sql();
        if !self.dialect().end_session(&mut sql, &holder) {
            return Ok(());
        }
        let url = &self.config().url;
        let mut conn = tokio::time::timeout(
            self.config().connect_timeout,
            sqlx::AnyConnection::connect(url),
        )
        .await
        .map_err(|_| WarehouseError::Sql(sqlx::Error::PoolTimedOut))??;
        let ended = sql.query().execute(&mut conn).await;
        let _ = conn.close().await;
        ended?;
        Ok(())
    }
}
