//! A load's session on the server: stopped there when the load is
//! cancelled, and watched while it runs.
//!
//! Dropping a load's future closes its connection, but a server notices a
//! closed connection only when it next talks to it: a long `INSERT … SELECT`
//! runs on to its end, holding the partition's lock, after idem has said
//! "rolled back" and exited. So a cancelled load that holds its lock has its
//! session ended by the server (`pg_terminate_backend`, `KILL`), which rolls
//! it back and frees the lock at once; one whose COMMIT is on its way is let
//! finish, and reports what the server did.
//!
//! The other way round, a connection whose server went silent (a failover,
//! a network that drops everything) leaves the load waiting for an answer
//! that never comes: the driver sets no keepalive. So while a load holds its
//! lock, a connection of its own asks the server every [`WATCH`] whether the
//! load's session is still there: a server that cannot be reached twice in
//! a row ends the load as lost (the run stops, as for any unreachable
//! warehouse), and a session the server no longer has ends it as a failure
//! to retry. Before it holds its lock (describing the job's SELECT, reading
//! the target's shape, waiting for the lock) it is watched as a read is
//! (`Warehouse::answering`): a warehouse found not answering ends it, not
//! started.
//!
//! A statement waiting on another session's lock (a colleague's
//! transaction left open on the window's rows, a `LOCK TABLE`) ends after
//! `lock_timeout` with the server's words alone, which name nobody; and once
//! it has ended, the server no longer says whom it waited for. So while a
//! load runs long enough to have waited, the server is asked, now and then,
//! which session its session waits for: the load's error names the last one
//! seen.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::{Any, Connection, Row};
use tokio_util::sync::CancellationToken;

use super::LoadStep;
use crate::warehouse::{Warehouse, WarehouseError, redact};

/// How long a load whose session was ended (or whose COMMIT was sent) is
/// given to end by itself before it is dropped.
const GRACE: Duration = Duration::from_secs(5);

/// How long a load found to have lost its session is given to end with an
/// error of its own, the better account of what happened.
const OWN_ACCOUNT: Duration = Duration::from_secs(2);

/// How long the server is given to say whom a load's session waits for.
const ASK: Duration = Duration::from_secs(5);

/// How often a load holding its lock has its session looked for.
pub(super) const WATCH: Duration = Duration::from_secs(20);

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
    /// The session, where the server can be asked about it.
    Committing(Option<SessionHolder>),
}

/// How the server knows the session of a load holding its lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionHolder {
    /// The session of this name (PostgreSQL's `application_name`, the
    /// partition lock's `session`) holding the lock of this key, the
    /// load's first. The name alone could be taken by anyone; the key
    /// alone is held by another session once the load's is gone.
    Named { session: String, key: String },
    /// The session of this id (MariaDB/MySQL `CONNECTION_ID()`).
    Session(i64),
}

/// What is asked of the server about a load's session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionAsk {
    End,
    Count,
}

/// The load's stage, set by the load as it goes and read when it is
/// cancelled or watched; and the session its session waited for when last
/// asked, in words.
#[derive(Default)]
pub(super) struct StageCell {
    stage: Mutex<Stage>,
    blocker: Mutex<Option<String>>,
}

impl StageCell {
    pub(super) fn set(&self, stage: Stage) {
        if let Ok(mut now) = self.stage.lock() {
            *now = stage;
        }
    }

    fn get(&self) -> Stage {
        self.stage.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The session the load's session was last seen waiting for on a
    /// lock, described; None if it was never seen waiting.
    pub(super) fn blocker(&self) -> Option<String> {
        self.blocker.lock().ok()?.clone()
    }

    fn set_blocker(&self, blocker: String) {
        if let Ok(mut now) = self.blocker.lock() {
            *now = Some(blocker);
        }
    }

    /// The load sends its COMMIT.
    pub(super) fn committing(&self) {
        let holder = match self.get() {
            Stage::Holding(holder) => Some(holder),
            _ => None,
        };
        self.set(Stage::Committing(holder));
    }
}

/// While when a load is watched as a read is (`Warehouse::answering`): a
/// warehouse found not answering then ends it, dropped.
#[derive(Clone, Copy)]
pub(super) enum WatchedAsARead {
    /// Until it holds its lock (then its session is looked for): dropped
    /// later, a load's COMMIT may be on its way.
    UntilItHolds,
    /// From start to end: a proof, which never commits.
    Throughout,
}

/// What a look for a load's session found.
enum Seen {
    /// There, or the server answered something else than "gone" (busy,
    /// out of connections, none of the pool's free): nothing to conclude.
    There,
    Gone,
    /// No connection could be had.
    Unreachable(sqlx::Error),
}

impl Warehouse {
    /// Runs `load` to its end, or until `cancel` fires (then stops it as its
    /// stage allows: `Err(Cancelled)` means it did not commit), or until its
    /// session is found gone from the server or the server unreachable, or
    /// the warehouse not answering while it is `watched` as a read.
    pub(super) async fn supervised<T>(
        &self,
        load: impl Future<Output = Result<T, WarehouseError>>,
        (stage, watched): (&StageCell, WatchedAsARead),
        cancel: &CancellationToken,
        log: &(dyn Fn(LoadStep) + Send + Sync),
    ) -> Result<T, WarehouseError> {
        tokio::pin!(load);
        let as_a_read = || match watched {
            WatchedAsARead::UntilItHolds => matches!(stage.get(), Stage::Starting),
            WatchedAsARead::Throughout => true,
        };
        let lost = tokio::select! {
            done = &mut load => return done,
            // Nothing on the server is the load's own yet, or nothing it
            // does is ever committed: dropped, it ends, and nothing was
            // written.
            silent = self.silent_while(as_a_read) => return Err(silent),
            lost = self.watch(stage) => lost,
            never = self.ask_blockers(stage) => match never {},
            () = cancel.cancelled() => return self.cancelled(load, stage, log).await,
        };
        // An error the load met itself (its rollback freed the lock the
        // watch looked for) is the better account.
        match tokio::time::timeout(OWN_ACCOUNT, &mut load).await {
            Ok(done) => done,
            Err(_) => {
                log(format!("ROLLBACK: {lost}"));
                Err(lost)
            }
        }
    }

    /// Stops a cancelled load as its stage allows. The load is not polled
    /// while its stage is read and acted on: the stage stays as read.
    async fn cancelled<T>(
        &self,
        mut load: std::pin::Pin<&mut impl Future<Output = Result<T, WarehouseError>>>,
        stage: &StageCell,
        log: &(dyn Fn(LoadStep) + Send + Sync),
    ) -> Result<T, WarehouseError> {
        let stage_now = stage.get();
        let committing = matches!(stage_now, Stage::Committing(_));
        match stage_now {
            Stage::Starting => return Err(WarehouseError::Cancelled),
            Stage::Committing(_) => {
                log(
                    "cancelled while its COMMIT is on its way: it ends as the server ends it"
                        .into(),
                );
            }
            Stage::Holding(holder) => match self.ask(&holder, SessionAsk::End).await {
                Ok(Some(0)) => log(
                    "cancelled: its session is gone from the server already (nothing was committed)"
                        .into(),
                ),
                Ok(_) => {
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
            // One that failed is the server's account of it.
            Ok(Err(e)) if committing => Err(e),
            // One still on its way when the load is dropped may yet take
            // (a server waiting on a synchronous standby has committed
            // locally): neither "rolled back" nor "loaded" is known.
            Err(_) if committing => Err(WarehouseError::CancelledCommitting),
            Ok(Err(_)) | Err(_) => Err(WarehouseError::Cancelled),
        }
    }

    /// Ends only when the load has lost its session: the error to end it
    /// with. During its COMMIT only an unreachable server counts (the
    /// commit frees the lock the look is for).
    async fn watch(&self, stage: &StageCell) -> WarehouseError {
        let mut unreachable = 0;
        loop {
            tokio::time::sleep(WATCH).await;
            let (holder, committing) = match stage.get() {
                Stage::Holding(holder) => (holder, false),
                Stage::Committing(Some(holder)) => (holder, true),
                _ => {
                    unreachable = 0;
                    continue;
                }
            };
            match self.look_for(&holder).await {
                Seen::Gone if !committing => return WarehouseError::SessionLost,
                Seen::There | Seen::Gone => unreachable = 0,
                Seen::Unreachable(source) => {
                    unreachable += 1;
                    if unreachable == 2 {
                        return WarehouseError::Lost {
                            url: redact(&self.config().url),
                            source,
                            committing,
                        };
                    }
                }
            }
        }
    }

    /// Never ends: every third of `lock_timeout` (so that a wait of that
    /// long is seen at least twice) while the load holds its lock, asks the
    /// server whom its session waits for, on a connection of its own kept
    /// for the load's life, and notes the answer in `stage`. Where the pool
    /// may hold every connection the warehouse grants the role, or the
    /// warehouse refuses the role that connection (it limits connections),
    /// none is opened (it would take the one a load was about to open):
    /// each question borrows one of the pool's (a run keeps one beside its
    /// loads), or is skipped where none comes.
    async fn ask_blockers(&self, stage: &StageCell) -> std::convert::Infallible {
        let every = (self.config().lock_timeout / 3).clamp(Duration::from_millis(300), WATCH);
        let mut conn: Option<sqlx::AnyConnection> = None;
        let mut borrowing = self.pool_holds_the_grant();
        let mut failures = 0;
        loop {
            tokio::time::sleep(every).await;
            let Stage::Holding(holder) = stage.get() else {
                continue;
            };
            let mut sql = self.sql();
            if !self.dialect().blocker_query(&mut sql, &holder) {
                return std::future::pending().await;
            }
            if conn.is_none() && !borrowing {
                match self.connection_aside().await {
                    Ok(own) => conn = Some(own),
                    Err(e) => borrowing = e.connection_refusal().is_some(),
                }
            }
            let mut borrowed = None;
            let asking = match conn.as_mut() {
                Some(own) => own,
                None if borrowing => match self.borrowed().await {
                    Some(pooled) => &mut **borrowed.insert(pooled),
                    None => continue,
                },
                None => continue,
            };
            let answer = tokio::time::timeout(ASK, sql.query().fetch_optional(asking)).await;
            if !matches!(answer, Ok(Ok(_)))
                && let Some(pooled) = borrowed.as_mut()
            {
                pooled.close_on_drop();
            }
            match answer {
                Ok(Ok(row)) => {
                    failures = 0;
                    let holder = row.and_then(|row| {
                        super::super::lock_holder::LockHolder::from_row(
                            self.dialect().engine(),
                            &row,
                        )
                        .ok()
                    });
                    // Kept until another is seen: the wait that ends in a
                    // lock timeout is over by the time the load reports it,
                    // and an ask in between finds nobody.
                    if let Some(holder) = holder {
                        stage.set_blocker(self.blocker_words(holder));
                    }
                }
                // A connection in an unknown state is not asked again; a
                // server that never says (a role without the right to see
                // others' locks) is asked no more after a few tries.
                _ => {
                    conn = None;
                    failures += 1;
                    if failures == 3 {
                        return std::future::pending().await;
                    }
                }
            }
        }
    }

    /// Whether the load's session is still there. A warehouse that
    /// refuses a connection to look with for its limit, and has none of
    /// the pool's free, answers: nothing to conclude, never unreachable.
    async fn look_for(&self, holder: &SessionHolder) -> Seen {
        match self.ask(holder, SessionAsk::Count).await {
            Ok(Some(0)) => Seen::Gone,
            Err(WarehouseError::Sql(e @ (sqlx::Error::PoolTimedOut | sqlx::Error::Io(_)))) => {
                Seen::Unreachable(e)
            }
            _ => Seen::There,
        }
    }

    /// A connection of its own, outside the pool (whose connections may
    /// all be busy with loads), within the connect timeout.
    pub(in crate::warehouse) async fn connection_aside(
        &self,
    ) -> Result<sqlx::AnyConnection, WarehouseError> {
        tokio::time::timeout(
            self.config().connect_timeout,
            sqlx::AnyConnection::connect(&self.config().url),
        )
        .await
        .map_err(|_| WarehouseError::Sql(sqlx::Error::PoolTimedOut))?
        .map_err(WarehouseError::from)
    }

    /// One of the pool's connections, where one comes within [`ASK`].
    async fn borrowed(&self) -> Option<PoolConnection<Any>> {
        tokio::time::timeout(ASK, self.pool().acquire())
            .await
            .ok()?
            .ok()
    }

    /// A connection to ask about a load's session on: one of its own (the
    /// pool's may all be busy with loads); but where the pool may hold
    /// every connection the warehouse grants the role, or the warehouse
    /// refuses one for its limit, one of the pool's (a run keeps one beside
    /// its loads), rather than one that takes the slot a load was about to
    /// open. Where none comes, the refusal.
    async fn connection_to_ask(&self) -> Result<Asking, WarehouseError> {
        let holds_the_grant = self.pool_holds_the_grant();
        if holds_the_grant && let Some(pooled) = self.borrowed().await {
            return Ok(Asking::Pooled(pooled));
        }
        let refused = match self.connection_aside().await {
            Ok(own) => return Ok(Asking::Own(own)),
            Err(e) if e.connection_refusal().is_some() && !holds_the_grant => e,
            Err(e) => return Err(e),
        };
        self.borrowed().await.map(Asking::Pooled).ok_or(refused)
    }

    /// Asks the server about the session holding `holder`
    /// ([`Warehouse::connection_to_ask`]). How many sessions the ask found
    /// (or ended), where the server says.
    async fn ask(
        &self,
        holder: &SessionHolder,
        ask: SessionAsk,
    ) -> Result<Option<i64>, WarehouseError> {
        let mut sql = self.sql();
        if !self.dialect().load_session(&mut sql, holder, ask) {
            return Ok(None);
        }
        let mut conn = self.connection_to_ask().await?;
        // Each ask answers a count, but for MariaDB's `KILL`, which answers
        // nothing (and an error for an id it does not know).
        let answer = sql
            .query()
            .fetch_optional(conn.connection())
            .await
            .and_then(|row| row.map(|row| row.try_get::<i64, _>(0)).transpose());
        conn.done(answer.is_ok()).await;
        Ok(answer?)
    }
}

/// A connection a load's session is asked about on.
enum Asking {
    /// Its own, closed once asked.
    Own(sqlx::AnyConnection),
    /// One of the pool's, given back once asked.
    Pooled(PoolConnection<Any>),
}

impl Asking {
    fn connection(&mut self) -> &mut sqlx::AnyConnection {
        match self {
            Asking::Own(own) => own,
            Asking::Pooled(pooled) => pooled,
        }
    }

    /// Closes its own; the pool's goes back, or is closed where the ask
    /// failed on it (its state unknown).
    async fn done(self, answered: bool) {
        match self {
            Asking::Own(own) => {
                let _ = own.close().await;
            }
            Asking::Pooled(mut pooled) => {
                if !answered {
                    pooled.close_on_drop();
                }
            }
        }
    }
}

/// How long a COMMIT whose reply never came is given to be decided on the
/// server (its session gone, or its lock freed) before it is unknown.
const COMMIT_DECIDED: Duration = Duration::from_secs(30);

/// How many connect timeouts in a row a server that cannot be reached is
/// given to come back and say how a COMMIT went, before it is unknown: a
/// warehouse that stays down answers nothing in 30 s either, and the run
/// would wait that long to say so (QA: a run whose warehouse went away
/// during a COMMIT stopped after 30 s, not within seconds).
const UNREACHABLE_TIMEOUTS: u32 = 2;

impl Warehouse {
    /// After a COMMIT whose reply never came (its connection failed under
    /// it, not the server refusing it): whether it took, read from the
    /// success row the load wrote in the same transaction, once the load's
    /// session is gone from the server (its transaction is then decided
    /// either way). None when that cannot be told: the server cannot be
    /// reached, or still holds the session.
    pub(super) async fn commit_outcome(
        &self,
        stage: &StageCell,
        attempt: &crate::warehouse::ledger::Attempt,
    ) -> Option<bool> {
        if let Stage::Committing(Some(holder)) = stage.get() {
            let deadline = tokio::time::Instant::now() + COMMIT_DECIDED;
            let unreachable_for = self.config().connect_timeout * UNREACHABLE_TIMEOUTS;
            let mut unreachable_since = None;
            loop {
                let now = tokio::time::Instant::now();
                match self.look_for(&holder).await {
                    Seen::Gone => break,
                    Seen::Unreachable(_)
                        if now >= deadline
                            || now - *unreachable_since.get_or_insert(now) >= unreachable_for =>
                    {
                        return None;
                    }
                    Seen::There if now >= deadline => return None,
                    seen => {
                        if matches!(seen, Seen::There) {
                            unreachable_since = None;
                        }
                        tokio::time::sleep(Duration::from_millis(250)).await;
                    }
                }
            }
        }
        self.succeeded_attempt(attempt).await.ok()
    }
}
