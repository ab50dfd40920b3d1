//! One partition, one transaction: lock, write by the job's strategy, check,
//! record the ledger row, commit. Any error rolls the whole partition back.

use std::time::Duration;

use sqlx::AnyConnection;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AssertSqlSafe, Connection, Executor, Row};
use tokio_util::sync::CancellationToken;

use super::fingerprint::{self, Fingerprint};
use super::ledger::{self, Attempt, AttemptStatus};
use super::sql::Sql;
use super::{
    Column, Dialect, LockPlan, PartitionLock, WRITTEN_ELSEWHERE, Warehouse, WarehouseError,
};
use crate::config::{Ident, Job, Strategy};
use crate::partition::Partition;

mod later_merges;
pub use later_merges::MergesBefore;
mod merge;
mod moves;
mod replace;
mod session;
mod shape;
mod window;

pub use session::{SessionAsk, SessionHolder};
use session::{Stage, StageCell, WatchedAsARead};

use merge::merge;
use replace::replace;
pub(super) use shape::RunShape;
use shape::TargetShape;
use window::Window;

/// The temporary table a merge stages its window's rows in.
fn stage() -> Ident {
    Ident::from_static("idem_stage")
}

/// Who is writing, and why: what the ledger row records besides counts.
#[derive(Debug, Clone)]
pub struct AttemptMeta {
    pub run_id: String,
    pub attempt: i64,
    pub started_at: String,
    pub operator: String,
    pub host: String,
    pub reason: Option<String>,
    /// The operator allows a replace to shrink a partition past the job's
    /// shrink guard.
    pub allow_shrink: bool,
    /// The partition's last load as the run found it in the ledger
    /// ([`Warehouse::last_loads`]): a replace that finds the window as
    /// that load left it takes its fingerprint for the window's.
    pub last_load: Option<super::LastLoad>,
    /// A merge's [`Warehouse::merges_before_run`]: a later window merged
    /// past it by another run refuses this load, and so does a ledger that
    /// could not be read for it.
    pub merges_before_run: MergesBefore,
}

/// What a committed partition load did.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOutcome {
    pub rows_deleted: i64,
    pub rows_inserted: i64,
    pub rows_updated: i64,
    pub rows_after: i64,
    pub fingerprint: Fingerprint,
    pub content_changed: bool,
    /// The windows besides its own whose rows a merge changed: moved out
    /// or in by their partition column, or rewritten there. Each gets an
    /// [`AttemptStatus::Moved`] ledger row with the load's.
    pub other_windows: Vec<String>,
}

/// A committed load: what it wrote, and the number the ledger recorded the
/// attempt under (the partition's next once its lock was held, which is
/// the planned [`AttemptMeta::attempt`] unless another run recorded an
/// attempt at the partition meanwhile).
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub outcome: LoadOutcome,
    pub attempt: i64,
}

/// A step of a load, as it happens; consumers render these as log lines.
pub type LoadStep = String;

/// What to do with a partition once it is locked.
enum Work<'a> {
    /// Write it, record the ledger row, commit.
    Load(&'a AttemptMeta),
    /// Write it `runs` times, capturing its rows after each, then roll back.
    Verify { runs: usize },
}

enum Done {
    Loaded(Loaded),
    Verified(Vec<Vec<Vec<Option<String>>>>),
}

impl Warehouse {
    /// Loads one partition of a job in one transaction under its lock. Once
    /// `cancel` fires the load is stopped, on the server too
    /// (`Err(Cancelled)`), unless its COMMIT was already sent.
    pub async fn load_partition(
        &self,
        job: &Job,
        partition: &Partition,
        meta: &AttemptMeta,
        log: &(dyn Fn(LoadStep) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Loaded, WarehouseError> {
        let stage = StageCell::default();
        let load = self.locked(job, partition, Work::Load(meta), log, &stage);
        match self
            .supervised(load, (&stage, WatchedAsARead::UntilItHolds), cancel, log)
            .await?
        {
            Done::Loaded(loaded) => Ok(loaded),
            Done::Verified(_) => Err(WarehouseError::Job(
                "internal: load returned a verification".into(),
            )),
        }
    }

    /// Runs a partition's load `runs` times in one transaction, returning its
    /// rows (as text) after each run, and rolls everything back; stopped,
    /// on the server too, once `cancel` fires (`Err(Cancelled)`).
    pub(super) async fn rows_after_runs(
        &self,
        job: &Job,
        partition: &Partition,
        runs: usize,
        cancel: &CancellationToken,
    ) -> Result<Vec<Vec<Vec<Option<String>>>>, WarehouseError> {
        let stage = StageCell::default();
        // Boxed: a load's future is deep, and a proof nests it deeper (the
        // watches beside it, the proofs around it) than the compiler lays
        // out by default.
        let verify = Box::pin(self.locked(job, partition, Work::Verify { runs }, &|_| {}, &stage));
        match self
            .supervised(
                verify,
                (&stage, WatchedAsARead::Throughout),
                cancel,
                &|_| {},
            )
            .await?
        {
            Done::Verified(rows) => Ok(rows),
            Done::Loaded(_) => Err(WarehouseError::Job(
                "internal: verification committed".into(),
            )),
        }
    }

    /// [`Warehouse::locked_work`], naming the session whose lock (on a row
    /// or the table) a statement waited on past `lock_timeout`: the one the
    /// server last said it waited for, or one holding the table.
    async fn locked(
        &self,
        job: &Job,
        partition: &Partition,
        work: Work<'_>,
        log: &(dyn Fn(LoadStep) + Send + Sync),
        stage: &StageCell,
    ) -> Result<Done, WarehouseError> {
        let done = self.locked_work(job, partition, work, log, stage).await;
        match done.map_err(|e| self.naming_file_holder(e)) {
            Err(WarehouseError::Sql(sqlx::Error::Database(e)))
                if self.dialect().waited_on_lock(&*e) =>
            {
                let holder = match stage.blocker() {
                    Some(holder) => Some(holder),
                    None => self.table_lock_holder(&job.target).await,
                };
                match holder {
                    Some(holder) => Err(WarehouseError::TableLocked {
                        table: job.target.to_string(),
                        message: e.message().to_string(),
                        holder,
                    }),
                    None => Err(WarehouseError::Sql(sqlx::Error::Database(e))),
                }
            }
            Err(WarehouseError::Sql(sqlx::Error::Database(e)))
                if super::error::is_missing_partition(&*e) =>
            {
                Err(WarehouseError::Job(
                    self.no_partition_for(job, partition, e.message()).await,
                ))
            }
            result => result,
        }
    }

    async fn locked_work(
        &self,
        job: &Job,
        partition: &Partition,
        work: Work<'_>,
        log: &(dyn Fn(LoadStep) + Send + Sync),
        stage: &StageCell,
    ) -> Result<Done, WarehouseError> {
        let dialect = self.dialect();
        let run_id = match &work {
            Work::Load(meta) => Some(meta.run_id.as_str()),
            Work::Verify { .. } => None,
        };
        // The job's columns are described on a connection of their own
        // (once a process), before the load takes its own: where the
        // warehouse limits connections, one of the pool's idle ones then
        // makes room for it. Any other failure is the shape's to report.
        if let Err(e) = self.job_output_columns(job, partition).await
            && e.connection_refusal().is_some()
        {
            return Err(e);
        }
        // The shape is read on the load's own connection: a connection
        // goes back to the pool only after a round trip of its own, so the
        // load would otherwise open another.
        let mut conn = self.load_connection().await?;
        let shape = self.target_shape(&mut conn, job, partition, run_id).await?;
        let mut conn = WriteConnection { conn, clean: false };
        let conn = &mut conn;
        let lock =
            super::PartitionLock::of(job, partition, shape.partition_kind, self.table_names());
        let timeout = self.config().lock_timeout;

        let session_lock = matches!(dialect.lock_plan(), LockPlan::Session);
        // Kept until the load ends: another of this run's loads waiting
        // for this one's session says whose it is.
        let mut own = None;
        if session_lock {
            // If this future is dropped (cancellation) or the lock is not
            // released, the connection is closed (it is not `clean`), and
            // that releases a session lock; once released, it goes back to
            // the pool for the next partition.
            let names = self.session_lock_names(&mut conn.conn, &lock).await?;
            let taking = take_lock(dialect, &mut conn.conn, &names, timeout);
            let session = match waiting_said(taking, &lock, log).await? {
                Granted::Yes(session) => session,
                Granted::No => {
                    // The hours it did take go first, so that the holder
                    // asked about is the other session.
                    conn.clean = release(dialect, &mut conn.conn).await;
                    return Err(self.lock_timeout_error(partition, &lock, conn).await);
                }
            };
            if let Some(id) = session {
                stage.set(Stage::Holding(SessionHolder::Session(id)));
                own = Some(self.own_load(id, format!("{} {}", job.name, partition.name())));
            }
            log(format!("lock on {} taken", lock.label));
        }
        let shrink_guard = match &work {
            Work::Load(meta) if !meta.allow_shrink => Some(job.shrink_guard),
            // A verification rolls back: it may shrink what it likes.
            _ => None,
        };
        let target = Target {
            job,
            partition,
            shape: &shape,
            shrink_guard,
            // A verification writes the window again in its own
            // transaction: what the last load left is gone by then.
            last_load: match &work {
                Work::Load(meta) => meta.last_load.as_ref(),
                Work::Verify { .. } => None,
            },
        };
        let result = transact(self, &mut conn.conn, &target, work, &lock, log, stage).await;
        drop(own);
        let released = !session_lock || release(dialect, &mut conn.conn).await;
        conn.clean = result.is_ok() && released;
        match result {
            Err(WarehouseError::LockTimeout { .. }) => {
                // The BEGIN's transaction holds the keys it took before the
                // refused one until it ends: it goes first, so that the
                // holder asked about is the other session.
                let _ = run(&mut conn.conn, "ROLLBACK".into()).await;
                Err(self.lock_timeout_error(partition, &lock, conn).await)
            }
            result => result,
        }
    }

    /// The error of a load that could not take its partition's lock within
    /// `lock_timeout`, naming the session that holds it (asked on the
    /// load's own connection).
    async fn lock_timeout_error(
        &self,
        partition: &Partition,
        lock: &PartitionLock,
        conn: &mut WriteConnection,
    ) -> WarehouseError {
        let clean = std::mem::replace(&mut conn.clean, false);
        let holder = self.lock_holder(&mut conn.conn, lock).await;
        // A question cut short (it is given 5 s) may have left its
        // statement running: that connection is closed, not reused.
        conn.clean = clean && holder.is_some();
        WarehouseError::LockTimeout {
            partition: partition.name(),
            holder,
        }
    }
}

/// Releases a session's [`LockPlan::Session`] locks; false if that failed.
/// A failed release is harmless: the locks end with the connection, which
/// is then closed rather than reused.
async fn release(dialect: &dyn Dialect, conn: &mut AnyConnection) -> bool {
    let mut released = true;
    for unlock in dialect.unlock() {
        released &= unlock.query().execute(&mut *conn).await.is_ok();
    }
    released
}

/// A pooled connection that goes back to the pool only after its load ended
/// as idem meant it to (committed, or a verification rolled back). After an
/// error, or when the load is dropped mid-way (cancelled), the transaction's
/// state is unknown: SQLite, for one, rolls back by itself on a full disk
/// while the driver still counts a transaction open; and a connection whose
/// session lock (MariaDB) was not released would keep holding it. Such a
/// connection is closed, never handed to the next partition.
struct WriteConnection {
    conn: PoolConnection<Any>,
    clean: bool,
}

impl Drop for WriteConnection {
    fn drop(&mut self) {
        if !self.clean {
            self.conn.close_on_drop();
        }
    }
}

/// The partition being written and the columns involved.
#[derive(Clone, Copy)]
struct Target<'a> {
    job: &'a Job,
    partition: &'a Partition,
    shape: &'a TargetShape,
    /// Refuse a replace leaving fewer than this fraction of the rows.
    shrink_guard: Option<f64>,
    /// The partition's last load, whose fingerprint a replace may take for
    /// the window's before it, where the engine can check that the window
    /// still holds exactly that load's rows (see `replace`).
    last_load: Option<&'a super::LastLoad>,
}

/// Whether a load's session locks were granted within the lock timeout.
enum Granted {
    /// Yes, to the session of this id where the statement says.
    Yes(Option<i64>),
    No,
}

async fn take_lock(
    dialect: &dyn Dialect,
    conn: &mut AnyConnection,
    names: &[String],
    timeout: Duration,
) -> Result<Granted, WarehouseError> {
    let mut session = None;
    for stmt in dialect.lock(names, timeout) {
        let row = match stmt.query().fetch_optional(&mut *conn).await {
            Err(sqlx::Error::Database(e)) if dialect.lock_refused(&*e) => return Ok(Granted::No),
            row => row?,
        };
        if let Some(row) = row {
            let granted: Option<i64> = row.try_get(0)?;
            if granted != Some(1) {
                return Ok(Granted::No);
            }
            // The statement may name the session holding the lock.
            session = session.or(row.try_get::<Option<i64>, _>(1).ok().flatten());
        }
    }
    Ok(Granted::Yes(session))
}

async fn transact(
    warehouse: &Warehouse,
    conn: &mut PoolConnection<Any>,
    t: &Target<'_>,
    work: Work<'_>,
    lock: &PartitionLock,
    log: &(dyn Fn(LoadStep) + Send + Sync),
    stage: &StageCell,
) -> Result<Done, WarehouseError> {
    let dialect = warehouse.dialect();
    let (job, partition) = (t.job, t.partition);
    let mut tx = begin(dialect, conn, lock, log, stage).await?;
    let mut locked_at = ledger::timestamp(crate::clock::now());

    let meta = match work {
        Work::Load(meta) => meta,
        Work::Verify { runs } => {
            let mut captured = Vec::new();
            for _ in 0..runs {
                write(dialect, &mut tx, t, log).await?;
                captured.push(rows_of(dialect, &mut tx, t).await?);
                drop_stage(dialect, &mut tx, job).await?;
            }
            tx.rollback().await?;
            return Ok(Done::Verified(captured));
        }
    };
    later_merges::refuse_if_overtaken(dialect, &mut tx, t, meta).await?;
    let outcome = match write(dialect, &mut tx, t, log).await {
        Err(WarehouseError::WrittenSinceLastLoad(_)) => {
            // Nothing was written yet but the trusted DELETE, which the
            // rollback undoes; the lock is taken again with the BEGIN.
            stage.set(Stage::Starting);
            tx.rollback().await?;
            log(
                "ROLLBACK: the window is not as its last load left it (written since by another session or job); starting over, reading it whole"
                    .into(),
            );
            tx = begin(dialect, conn, lock, log, stage).await?;
            locked_at = ledger::timestamp(crate::clock::now());
            let whole = Target {
                last_load: None,
                ..*t
            };
            write(dialect, &mut tx, &whole, log).await?
        }
        outcome => outcome?,
    };
    drop_stage(dialect, &mut tx, job).await?;

    let mut attempt = Attempt {
        run_id: meta.run_id.clone(),
        job: job.name.clone(),
        partition: partition.name(),
        attempt: meta.attempt,
        status: AttemptStatus::Succeeded,
        started_at: meta.started_at.clone(),
        locked_at: Some(locked_at),
        finished_at: ledger::timestamp(crate::clock::now()),
        rows_deleted: outcome.rows_deleted,
        rows_inserted: outcome.rows_inserted,
        rows_updated: outcome.rows_updated,
        rows_after: outcome.rows_after,
        definition_hash: job.definition_hash(),
        fingerprint: Some(outcome.fingerprint.to_string()),
        content_changed: Some(outcome.content_changed),
        error: None,
        operator: meta.operator.clone(),
        host: meta.host.clone(),
        reason: meta.reason.clone(),
    };
    let timeout = warehouse.config().lock_timeout;
    attempt.attempt = ledger::record(&mut tx, dialect, &attempt, timeout).await?;
    if attempt.attempt != meta.attempt {
        log(renumbered(meta.attempt, attempt.attempt));
    }
    for window in &outcome.other_windows {
        ledger::record(&mut tx, dialect, &attempt.moving(window), timeout).await?;
    }
    let loaded = Loaded {
        outcome,
        attempt: attempt.attempt,
    };
    // Once committed, a definition stays recorded: later loads skip it.
    let hash = &attempt.definition_hash;
    let recorded = |w: &Warehouse| {
        w.recorded_definitions
            .lock()
            .is_ok_and(|known| known.contains(hash))
    };
    let recording = !recorded(warehouse);
    if recording {
        let mut sql = Sql::new(dialect);
        ledger::record_definition(&mut sql, job);
        sql.query().execute(&mut *tx).await?;
    }
    stage.committing();
    if let Err(e) = tx.commit().await {
        // The server refused it: rolled back. Its connection failed under
        // it: the COMMIT may have taken, and the ledger row it carried says.
        if matches!(e, sqlx::Error::Database(_)) {
            return Err(e.into());
        }
        match warehouse.commit_outcome(stage, &attempt).await {
            Some(true) => {
                log(format!(
                    "COMMIT (its reply was lost: {e}; the ledger holds its row, so it took)"
                ));
                return Ok(Done::Loaded(loaded));
            }
            Some(false) => return Err(e.into()),
            None => {
                return Err(WarehouseError::Lost {
                    url: crate::warehouse::redact(&warehouse.config().url),
                    source: e,
                    committing: true,
                });
            }
        }
    }
    if recording && let Ok(mut known) = warehouse.recorded_definitions.lock() {
        known.insert(hash.clone());
    }
    log("COMMIT".into());
    Ok(Done::Loaded(loaded))
}

/// The log line of an attempt the ledger recorded under another number
/// than its run planned: another run recorded an attempt at the partition
/// after this run read its history (most often while this one waited for
/// the partition's lock).
pub fn renumbered(planned: i64, recorded: i64) -> String {
    format!(
        "recorded as attempt {recorded}, not {planned}: another run recorded an attempt at this partition since this run read its history"
    )
}

/// How long a BEGIN taking the partition's lock runs before its log says
/// it is waiting for the lock: the console shows the load as running, and
/// without a word it reads as stuck.
const LOCK_WAIT_SAID: std::time::Duration = std::time::Duration::from_secs(1);

/// `begin`, saying in the log once it has waited [`LOCK_WAIT_SAID`].
async fn waiting_said<T>(
    begin: impl std::future::Future<Output = T>,
    lock: &PartitionLock,
    log: &(dyn Fn(LoadStep) + Send + Sync),
) -> T {
    tokio::pin!(begin);
    tokio::select! {
        done = &mut begin => done,
        () = tokio::time::sleep(LOCK_WAIT_SAID) => {
            log(format!(
                "waiting for the lock covering {}: another session holds it (waits up to lock_timeout)",
                lock.label
            ));
            begin.await
        }
    }
}

/// Begins a partition's transaction, taking its lock where the BEGIN does
/// (an `Err(LockTimeout)` whose partition and holder
/// [`Warehouse::lock_timeout_error`] fills in).
async fn begin<'c>(
    dialect: &'static dyn Dialect,
    conn: &'c mut PoolConnection<Any>,
    lock: &PartitionLock,
    log: &(dyn Fn(LoadStep) + Send + Sync),
    stage: &StageCell,
) -> Result<sqlx::Transaction<'c, Any>, WarehouseError> {
    let tx = match dialect.begin_statement(lock) {
        // The BEGIN takes the partition's locks and nothing else: a lock
        // timeout there is the partition's.
        Some(begin) => match waiting_said(conn.begin_with(AssertSqlSafe(begin)), lock, log).await {
            Err(sqlx::Error::Database(e)) if dialect.lock_refused(&*e) => {
                return Err(WarehouseError::LockTimeout {
                    partition: String::new(),
                    holder: None,
                });
            }
            tx => tx?,
        },
        None => conn.begin().await?,
    };
    if dialect.lock_plan() == LockPlan::InTransaction {
        stage.set(Stage::Holding(SessionHolder::Named {
            session: lock.session.clone(),
            key: lock.own_key().to_string(),
        }));
    }
    match dialect.lock_plan() {
        LockPlan::Begin => log(format!(
            "BEGIN IMMEDIATE: write lock covering {}",
            lock.label
        )),
        LockPlan::InTransaction => {
            log("BEGIN".into());
            log(format!("lock on {} taken", lock.label));
        }
        LockPlan::Session => log("BEGIN".into()),
    }
    Ok(tx)
}

/// Merges stage the window's rows in a temporary table; it goes before COMMIT.
async fn drop_stage(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    job: &Job,
) -> Result<(), WarehouseError> {
    if job.strategy == Strategy::MergeKey {
        run(tx, dialect.drop_stage(&stage())).await?;
    }
    Ok(())
}

/// Writes the partition by the job's strategy (inside the caller's transaction).
async fn write(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    t: &Target<'_>,
    log: &(dyn Fn(LoadStep) + Send + Sync),
) -> Result<LoadOutcome, WarehouseError> {
    match t.job.strategy {
        Strategy::ReplacePartition => replace(dialect, tx, *t, log).await,
        Strategy::MergeKey => merge(dialect, tx, *t, log).await,
    }
}

/// The rows a load owns, as text: the window's for replace jobs, the rows
/// whose keys the staged window touched for merge jobs.
async fn rows_of(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    t: &Target<'_>,
) -> Result<Vec<Vec<Option<String>>>, WarehouseError> {
    let mut sql = Sql::new(dialect);
    match t.job.strategy {
        Strategy::ReplacePartition => {
            fingerprint::select_as_text(&mut sql, &t.shape.columns, "");
            Window::of(t)?.from(&mut sql);
        }
        Strategy::MergeKey => {
            fingerprint::select_as_text(&mut sql, &t.shape.columns, "t.");
            touched_rows(dialect, &mut sql, t.job);
        }
    }
    let rows = sql.query().fetch_all(&mut *tx).await?;
    Ok(rows
        .iter()
        .map(super::text_columns)
        .collect::<Result<_, _>>()?)
}

/// ` FROM target t WHERE` its key is among the staged rows' keys.
fn touched_rows(dialect: &'static dyn Dialect, sql: &mut Sql, job: &Job) {
    let key_match = dialect.key_match(&job.unique_key);
    sql.push(" FROM ")
        .table(&job.target)
        .push(" t WHERE EXISTS (SELECT 1 FROM ")
        .push(&dialect.quote(&stage()))
        .push(" s WHERE ")
        .push(&key_match)
        .push(")");
}

/// `INSERT INTO <into> (cols) SELECT src.cols FROM (<the job's SQL for the
/// window>) src`: how every load writes the job's rows, into the target or a
/// merge's stage (`into` already quoted).
fn insert_job_rows(
    sql: &mut Sql,
    into: &str,
    columns: &[Ident],
    job: &Job,
    partition: &Partition,
) -> Result<(), WarehouseError> {
    sql.push("INSERT INTO ")
        .push(into)
        .push(" (")
        .ident_list("", columns);
    sql.push(") SELECT ")
        .ident_list("src.", columns)
        .push(" FROM (");
    sql.job_sql(&job.sql, partition)?;
    sql.push(") src");
    Ok(())
}

fn log_fingerprint(log: &(dyn Fn(LoadStep) + Send + Sync), after: &Fingerprint, changed: bool) {
    let what = if changed {
        "content changed"
    } else {
        "content unchanged"
    };
    log(format!("fingerprint {after} ({what})"));
}

async fn run(conn: &mut AnyConnection, statement: String) -> Result<(), WarehouseError> {
    conn.execute(AssertSqlSafe(statement)).await?;
    Ok(())
}

fn partition_column(job: &Job) -> Result<&Ident, WarehouseError> {
    job.partition_column
        .as_ref()
        .ok_or_else(|| WarehouseError::Job(format!("job {} has no partition_column", job.name)))
}

async fn count_window(
    dialect: &'static dyn Dialect,
    conn: &mut AnyConnection,
    window: &Window<'_>,
) -> Result<i64, WarehouseError> {
    let mut sql = Sql::new(dialect);
    sql.push("SELECT COUNT(*)");
    window.from(&mut sql);
    Ok(sql.query().fetch_one(&mut *conn).await?.try_get(0)?)
}

/// Count and fingerprint of the target rows in a partition's window.
pub(super) async fn fingerprint_window(
    dialect: &'static dyn Dialect,
    conn: &mut AnyConnection,
    job: &Job,
    target_columns: &[Column],
    partition: &Partition,
) -> Result<Fingerprint, WarehouseError> {
    let pcol = partition_column(job)?;
    fingerprint::of(conn, dialect, target_columns, "", |sql| {
        sql.push(" FROM ").table(&job.target).push(" WHERE ");
        sql.window_filter("", pcol, partition);
    })
    .await
}
