//! The ledger: one row per attempt, inside the warehouse. History and
//! evidence only; what is loaded is always read from the target itself.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use serde::Serialize;
use sqlx::Row;

use super::rows::Cells;
use super::sql::Sql;
use super::{Dialect, Warehouse, WarehouseError};
use crate::config::{Ident, Job, TableName};
use crate::terminal_text::visible_line;

pub struct ColumnTypes {
    pub id: &'static str,
    pub text: &'static str,
    pub long_text: &'static str,
    pub int: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AttemptStatus {
    Succeeded,
    Failed,
    Cancelled,
    /// Refused before writing (the shrink guard, or its partition's lock
    /// held elsewhere past the lock timeout): the data was not at fault and
    /// the partition kept its rows.
    Refused,
    /// No attempt at this partition: the load of another window of a
    /// `merge_key` job (the row's run, at its finish) changed rows here,
    /// moving them in or out by their partition column (or rewriting
    /// them in place). Its content changed, which the jobs that read it
    /// see; its own loads and state are untouched.
    Moved,
}

impl AttemptStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptStatus::Succeeded => "succeeded",
            AttemptStatus::Failed => "failed",
            AttemptStatus::Cancelled => "cancelled",
            AttemptStatus::Refused => "refused",
            AttemptStatus::Moved => "moved",
        }
    }

    fn parse(s: &str) -> AttemptStatus {
        match s {
            "succeeded" => AttemptStatus::Succeeded,
            "cancelled" => AttemptStatus::Cancelled,
            "refused" => AttemptStatus::Refused,
            "moved" => AttemptStatus::Moved,
            _ => AttemptStatus::Failed,
        }
    }
}

/// One attempt at one partition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    pub run_id: String,
    pub job: String,
    pub partition: String,
    pub attempt: i64,
    pub status: AttemptStatus,
    pub started_at: String,
    /// When the partition lock was granted (absent when the attempt failed
    /// before it).
    pub locked_at: Option<String>,
    pub finished_at: String,
    pub rows_deleted: i64,
    pub rows_inserted: i64,
    pub rows_updated: i64,
    /// Rows of the partition after the attempt (the window's rows for merges).
    pub rows_after: i64,
    pub definition_hash: String,
    pub fingerprint: Option<String>,
    pub content_changed: Option<bool>,
    pub error: Option<String>,
    pub operator: String,
    pub host: String,
    pub reason: Option<String>,
}

/// What the ledger holds of one partition, as a state read needs it: not
/// its whole history, which grows with every run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartitionLedger {
    /// Its latest attempt that could have changed something (a cancelled or
    /// refused one rolled back and changed nothing).
    pub latest: Option<Arc<Attempt>>,
    /// Its latest success: most often the same attempt, held once.
    pub success: Option<Arc<Attempt>>,
    /// How many attempts it had.
    pub attempts: usize,
    /// When a load last changed its content: the finish of its latest
    /// success that changed it (or did not say). Attempts at one partition
    /// run one at a time, under its lock.
    pub changed_at: Option<String>,
    /// Its latest refused attempt, where the shrink guard refused it and no
    /// success came since: the source looked incomplete, and the rows it
    /// kept wait for the source to be fixed (or the shrink allowed). A
    /// later refusal for a lock held elsewhere ends it: most often another
    /// run's, whose load is the partition's word; the next run's guard
    /// says again whether the source still looks incomplete.
    pub refused: Option<Arc<Refusal>>,
}

/// An attempt the shrink guard refused, as a partition's state shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refusal {
    pub attempt: i64,
    pub finished_at: String,
    pub error: String,
}

/// How the shrink guard's refusals begin (`WarehouseError::SourceShrank`):
/// the ledger's refused rows that are not a lock another run held.
pub const SHRINK_REFUSAL: &str = "source looks incomplete";

/// Each partition's [`PartitionLedger`], by partition name.
pub type LedgerSummary = HashMap<String, PartitionLedger>;

/// When each partition's content last changed, by partition name: in name
/// order, which within one grain is time order, so that the partitions a
/// downstream partition reads are one range of it.
pub type ContentChanges = BTreeMap<String, String>;

/// Where a job's ledger stood when it was read: its latest row's id and
/// how many rows it has. An attempt recorded since moves one or the other,
/// even one whose id was drawn before a row already seen (PostgreSQL draws
/// ids at INSERT, and transactions commit in any order); so does a row
/// deleted (the ledger is only appended to by idem, but may be pruned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerMark {
    pub last_id: i64,
    pub rows: i64,
}

impl Attempt {
    /// The [`AttemptStatus::Moved`] row of `window`, whose rows this
    /// successful merge (of another window) changed: of the same run, job
    /// and times, no attempt at the window (numbered 0), its content
    /// changed, no counts or fingerprint of its own (the window was not read
    /// whole), and the merged window named as its reason.
    pub fn moving(&self, window: &str) -> Attempt {
        Attempt {
            partition: window.to_string(),
            status: AttemptStatus::Moved,
            attempt: 0,
            rows_deleted: 0,
            rows_inserted: 0,
            rows_updated: 0,
            rows_after: 0,
            fingerprint: None,
            content_changed: Some(true),
            error: None,
            reason: Some(format!("rows moved by the merge of {}", self.partition)),
            ..self.clone()
        }
    }
}

impl PartitionLedger {
    /// The summary of a history held in memory, oldest attempt first: what
    /// [`Warehouse::ledger_summary`] reads from the ledger.
    pub fn summarize(attempts: impl IntoIterator<Item = Attempt>) -> LedgerSummary {
        let mut out = LedgerSummary::new();
        // A moved row is no attempt at its partition (see
        // `AttemptStatus::Moved`): only downstream staleness reads it.
        for a in attempts
            .into_iter()
            .filter(|a| a.status != AttemptStatus::Moved)
        {
            let a = Arc::new(a);
            let p = out.entry(a.partition.clone()).or_default();
            p.attempts += 1;
            if a.status == AttemptStatus::Succeeded {
                if a.content_changed != Some(false) {
                    p.changed_at = Some(a.finished_at.clone());
                }
                p.success = Some(Arc::clone(&a));
                p.refused = None;
            }
            if a.status == AttemptStatus::Refused {
                p.refused = a
                    .error
                    .as_deref()
                    .filter(|e| e.starts_with(SHRINK_REFUSAL))
                    .map(|error| {
                        Arc::new(Refusal {
                            attempt: a.attempt,
                            finished_at: a.finished_at.clone(),
                            error: error.to_string(),
                        })
                    });
            }
            if !matches!(a.status, AttemptStatus::Cancelled | AttemptStatus::Refused) {
                p.latest = Some(a);
            }
        }
        out
    }
}

/// An attempt's columns, as every read and write of the ledger names them.
pub(super) const COLUMNS: &[&str] = &[
    "run_id",
    "job",
    "partition_key",
    "attempt",
    "status",
    "started_at",
    "locked_at",
    "finished_at",
    "rows_deleted",
    "rows_inserted",
    "rows_updated",
    "rows_after",
    "definition_hash",
    "fingerprint",
    "content_changed",
    "error",
    "operator",
    "host",
    "reason",
];

/// The column of the id of the transaction that wrote an attempt's row,
/// on engines whose rows name their writer ([`Dialect::transaction_ids`]).
pub(super) const TXID: &str = "txid";

/// Where job definitions live, beside the attempts.
pub(super) fn definitions_table(dialect: &dyn Dialect) -> TableName {
    let attempts = dialect.ledger_table();
    let name = if attempts.schema.is_some() {
        "definitions"
    } else {
        "idem_definitions"
    };
    TableName {
        schema: attempts.schema,
        name: Ident::from_static(name),
    }
}

/// Records a job's definition under its hash, once for each job name: a
/// job renamed with its definition unchanged has its new name recorded too,
/// so a later rename still finds the loads under it ([`Warehouse::renamed_jobs`]).
pub(super) fn record_definition(sql: &mut Sql, job: &Job) {
    let table = definitions_table(sql.dialect());
    let hash = job.definition_hash();
    sql.push("INSERT INTO ")
        .table(&table)
        .push(" (definition_hash, job, recorded_at, definition) SELECT ")
        .bind(hash.as_str())
        .push(", ")
        .bind(job.name.as_str())
        .push(", ")
        .bind(timestamp(crate::clock::now()))
        .push(", ")
        .bind(job.definition_text())
        .push(" FROM (SELECT 1 AS one) d WHERE NOT EXISTS (SELECT 1 FROM ")
        .table(&table)
        .push(" WHERE definition_hash = ")
        .bind(hash.as_str())
        .push(" AND ")
        .job_is("job", job.name.as_str())
        .push(")");
}

/// Appends the INSERT of one attempt row, numbered one past the highest
/// attempt the ledger holds for its job and partition, as the INSERT reads
/// it, not `a.attempt`: a run that planned its number and then waited on
/// the partition's lock while another run recorded an attempt would
/// otherwise record the same number again. A load records under the
/// partition's lock, so the number is the partition's next; what it was is
/// given back ([`record`]).
fn insert(sql: &mut Sql, a: &Attempt) {
    let table = sql.dialect().ledger_table();
    let txid = sql.dialect().transaction_ids();
    sql.push("INSERT INTO ")
        .table(&table)
        .push(" (")
        .push(&COLUMNS.join(", "));
    if txid.is_some() {
        sql.push(", ").push(TXID);
    }
    sql.push(") SELECT ");
    sql.bind(a.run_id.as_str()).push(", ");
    sql.bind(a.job.as_str()).push(", ");
    sql.bind(a.partition.as_str()).push(", ");
    // A moved row is no attempt (`AttemptStatus::Moved`): numbered 0, it
    // takes no number from the partition's attempts.
    let numbered = a.status != AttemptStatus::Moved;
    sql.push(if numbered {
        "COALESCE(MAX(prior.attempt), 0) + 1, "
    } else {
        "0, "
    });
    sql.bind(a.status.as_str()).push(", ");
    sql.bind(a.started_at.as_str()).push(", ");
    sql.bind(a.locked_at.clone()).push(", ");
    sql.bind(a.finished_at.as_str()).push(", ");
    sql.bind(a.rows_deleted).push(", ");
    sql.bind(a.rows_inserted).push(", ");
    sql.bind(a.rows_updated).push(", ");
    sql.bind(a.rows_after).push(", ");
    sql.bind(a.definition_hash.as_str()).push(", ");
    sql.bind(a.fingerprint.clone()).push(", ");
    sql.bind(a.content_changed.map(i64::from)).push(", ");
    sql.bind(a.error.clone()).push(", ");
    sql.bind(a.operator.as_str()).push(", ");
    sql.bind(a.host.as_str()).push(", ");
    sql.bind(a.reason.as_deref().map(visible_line));
    if let Some(ids) = txid {
        sql.push(", ").push(ids.current);
    }
    if !numbered {
        return;
    }
    sql.push(" FROM ")
        .table(&table)
        .push(" prior WHERE ")
        .job_is("prior.job", a.job.as_str())
        .push(" AND prior.partition_key = ")
        .bind(a.partition.as_str());
}

/// Records one attempt row on `conn`, inside a transaction ([`insert`]), and
/// gives back the number it was recorded under: returned by the INSERT
/// itself where the engine has `RETURNING`, else read back by the row's id
/// (MySQL 8, MariaDB before 10.5), on the same connection.
///
/// The number is drawn under the partition's numbering lock
/// ([`Dialect::numbering_lock`], waiting up to `timeout`), held until the
/// transaction ends (PostgreSQL) or the session's locks are released
/// (MariaDB): the partition's own lock does not cover every writer. A run
/// refused that lock records its refusal while the holder's row, already
/// inserted, is not yet committed, and neither session's read sees the
/// other's row; both took the same number.
pub(super) async fn record(
    conn: &mut sqlx::AnyConnection,
    dialect: &'static dyn Dialect,
    a: &Attempt,
    timeout: std::time::Duration,
) -> Result<i64, WarehouseError> {
    let mut lock = Sql::new(dialect);
    // A moved row takes no number (`insert`).
    if a.status != AttemptStatus::Moved
        && dialect.numbering_lock(&mut lock, &a.job, &a.partition, timeout)
    {
        let busy = || WarehouseError::LedgerNumbering {
            partition: a.partition.clone(),
        };
        let granted: Option<i64> = match lock.query().fetch_one(&mut *conn).await {
            Err(sqlx::Error::Database(e)) if dialect.lock_refused(&*e) => return Err(busy()),
            row => row?.try_get(0)?,
        };
        if granted != Some(1) {
            return Err(busy());
        }
    }
    let mut sql = Sql::new(dialect);
    insert(&mut sql, a);
    if dialect.insert_returning() {
        sql.push(" RETURNING attempt");
        return Ok(sql.query().fetch_one(&mut *conn).await?.try_get(0)?);
    }
    sql.query().execute(&mut *conn).await?;
    let mut read = Sql::new(dialect);
    read.push("SELECT attempt FROM ")
        .table(&dialect.ledger_table())
        .push(" WHERE id = LAST_INSERT_ID()");
    Ok(read.query().fetch_one(&mut *conn).await?.try_get(0)?)
}

/// The pattern of a ledger timestamp.
const TIMESTAMP: &str = "%Y-%m-%dT%H:%M:%S%.3fZ";

/// Ledger timestamps: RFC 3339 UTC with milliseconds, so text order is time
/// order. Written out rather than through the pattern, which is parsed again
/// on every call (a state read compares each partition's end with its load's
/// start); a year of other than four digits goes through it.
pub fn timestamp(t: DateTime<Utc>) -> String {
    use chrono::{Datelike, Timelike};
    let (y, mo, d) = (t.year(), t.month(), t.day());
    if !(0..=9999).contains(&y) {
        return t.format(TIMESTAMP).to_string();
    }
    let (h, mi) = (t.hour(), t.minute());
    // A leap second is second 60, as the pattern writes it.
    let nanos = t.nanosecond();
    let (s, ms) = (
        t.second() + nanos / 1_000_000_000,
        nanos % 1_000_000_000 / 1_000_000,
    );
    let mut out = String::with_capacity(24);
    for (n, width, then) in [
        (y.unsigned_abs(), 4, '-'),
        (mo, 2, '-'),
        (d, 2, 'T'),
        (h, 2, ':'),
        (mi, 2, ':'),
        (s, 2, '.'),
        (ms, 3, 'Z'),
    ] {
        crate::partition::push_digits(&mut out, n, width);
        out.push(then);
    }
    out
}

impl Warehouse {
    /// Records an attempt outside any load transaction (failures, after
    /// rollback), giving back the number it was recorded under ([`insert`]).
    pub async fn record_attempt(&self, attempt: &Attempt) -> Result<i64, WarehouseError> {
        let dialect = self.dialect();
        let mut conn = self.pooled().await?;
        let recorded = async {
            let mut tx = sqlx::Connection::begin(&mut *conn).await?;
            let n = record(&mut tx, dialect, attempt, self.config().lock_timeout).await?;
            tx.commit().await?;
            Ok(n)
        }
        .await;
        // The numbering lock of a session-locking engine goes with the
        // session if it cannot be released.
        for unlock in dialect.unlock() {
            if unlock.query().execute(&mut *conn).await.is_err() {
                conn.close_on_drop();
            }
        }
        recorded
    }

    /// Whether the ledger holds the success row of this attempt (its run,
    /// job, partition and number): the row a load commits with its data.
    pub(super) async fn succeeded_attempt(&self, a: &Attempt) -> Result<bool, WarehouseError> {
        let mut sql = self.sql();
        sql.push("SELECT 1 FROM ")
            .table(&self.dialect().ledger_table())
            .push(" WHERE run_id = ")
            .bind(a.run_id.as_str())
            .push(" AND ")
            .job_is("job", a.job.as_str())
            .push(" AND partition_key = ")
            .bind(a.partition.as_str())
            .push(" AND attempt = ")
            .bind(a.attempt)
            .push(" AND status = ")
            .bind(AttemptStatus::Succeeded.as_str());
        Ok(sql
            .query()
            .fetch_optional(&mut *self.pooled().await?)
            .await?
            .is_some())
    }

    /// The definition text recorded under a hash, if any.
    pub async fn definition(&self, hash: &str) -> Result<Option<String>, WarehouseError> {
        if !self.ledger_presence().await?.definitions {
            return Ok(None);
        }
        let mut sql = self.sql();
        sql.push("SELECT definition FROM ")
            .table(&definitions_table(self.dialect()))
            .push(" WHERE definition_hash = ")
            .bind(hash);
        let row = sql
            .query()
            .fetch_optional(&mut *self.pooled().await?)
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    /// Every attempt of a job (optionally of one partition), oldest first.
    pub async fn attempts(
        &self,
        job: &str,
        partition: Option<&str>,
    ) -> Result<Vec<Attempt>, WarehouseError> {
        self.read_attempts(job, partition, None).await
    }

    /// The attempts of a job recorded after the ledger row `mark`.
    pub async fn attempts_after(
        &self,
        job: &str,
        mark: i64,
    ) -> Result<Vec<Attempt>, WarehouseError> {
        self.read_attempts(job, None, Some(mark)).await
    }

    /// Where a job's ledger stands: its latest row and how many it has.
    /// A refresh reads it once per job, for its counts and its summary.
    pub async fn ledger_mark(&self, job: &str) -> Result<LedgerMark, WarehouseError> {
        if !self.ledger_presence().await?.attempts {
            return Ok(LedgerMark {
                last_id: 0,
                rows: 0,
            });
        }
        let mut sql = self.sql();
        sql.push("SELECT COALESCE(MAX(id), 0), COUNT(*) FROM ")
            .table(&self.dialect().ledger_table())
            .push(" WHERE ")
            .job_is("job", job);
        let row = sql.query().fetch_one(&mut *self.pooled().await?).await?;
        Ok(LedgerMark {
            last_id: row.try_get(0)?,
            rows: row.try_get(1)?,
        })
    }

    async fn read_attempts(
        &self,
        job: &str,
        partition: Option<&str>,
        after: Option<i64>,
    ) -> Result<Vec<Attempt>, WarehouseError> {
        if !self.ledger_presence().await?.attempts {
            return Ok(Vec::new());
        }
        let dialect = self.dialect();
        let mut sql = self.sql();
        sql.push("SELECT ");
        push_columns(&mut sql, "");
        sql.push(" FROM ")
            .table(&dialect.ledger_table())
            .push(" WHERE ")
            .job_is("job", job);
        if let Some(p) = partition {
            sql.push(" AND partition_key = ").bind(p);
        }
        if let Some(mark) = after {
            sql.push(" AND id > ").bind(mark);
        }
        sql.push(" ORDER BY id");
        let mut conn = self.pooled().await?;
        let mut rows = sql.query().fetch(&mut *conn);
        let mut out = Vec::new();
        while let Some(row) = rows.try_next().await? {
            out.push(attempt_at(Cells::Driver(&row), 0)?);
        }
        Ok(out)
    }
}

/// `alias.run_id, alias.job, …`: an attempt's [`COLUMNS`], as
/// [`attempt_at`] reads them.
pub(super) fn push_columns(sql: &mut Sql, alias: &str) {
    for (i, c) in COLUMNS.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push(alias).push(c);
    }
}

/// [`visible_line`] for each line of `text`, line breaks kept.
fn visible_lines(text: &str) -> String {
    text.split('\n')
        .map(visible_line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The attempt whose [`COLUMNS`] start at column `at` of `row`; its words
/// made plain for a terminal.
pub(super) fn attempt_at(row: Cells<'_>, at: usize) -> Result<Attempt, WarehouseError> {
    let status: String = row.get(at + 4)?;
    let changed: Option<i64> = row.get(at + 14)?;
    Ok(Attempt {
        run_id: row.get(at)?,
        job: row.get(at + 1)?,
        partition: row.get(at + 2)?,
        attempt: row.get(at + 3)?,
        status: AttemptStatus::parse(&status),
        started_at: row.get(at + 5)?,
        locked_at: row.get(at + 6)?,
        finished_at: row.get(at + 7)?,
        rows_deleted: row.get(at + 8)?,
        rows_inserted: row.get(at + 9)?,
        rows_updated: row.get(at + 10)?,
        rows_after: row.get(at + 11)?,
        definition_hash: row.get(at + 12)?,
        fingerprint: row.get(at + 13)?,
        content_changed: changed.map(|c| c != 0),
        error: row
            .get::<Option<String>>(at + 15)?
            .as_deref()
            .map(visible_lines),
        operator: visible_line(&row.get::<String>(at + 16)?),
        host: visible_line(&row.get::<String>(at + 17)?),
        reason: row
            .get::<Option<String>>(at + 18)?
            .as_deref()
            .map(visible_line),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shrink-guard refusal stands until a success, or a refusal for a
    /// lock another run held, comes after it; such a lock refusal alone is
    /// no refusal of the guard.
    #[test]
    fn a_refusal_stands_until_a_success_follows_it() {
        let attempt = |n: i64, status: AttemptStatus, error: Option<&str>| Attempt {
            run_id: "r".into(),
            job: "j".into(),
            partition: "2026-01-01".into(),
            attempt: n,
            status,
            started_at: format!("t{n}"),
            locked_at: None,
            finished_at: format!("t{n}"),
            rows_deleted: 0,
            rows_inserted: 0,
            rows_updated: 0,
            rows_after: 0,
            definition_hash: String::new(),
            fingerprint: None,
            content_changed: None,
            error: error.map(str::to_string),
            operator: String::new(),
            host: String::new(),
            reason: None,
        };
        let shrink = Some("source looks incomplete: would replace 2 rows with 0");
        let lock = Some("could not take the lock of 2026-01-01");
        let of = |attempts: Vec<Attempt>| {
            PartitionLedger::summarize(attempts)
                .remove("2026-01-01")
                .and_then(|p| p.refused)
                .map(|r| r.attempt)
        };
        use AttemptStatus::{Refused, Succeeded};
        assert_eq!(
            of(vec![
                attempt(1, Succeeded, None),
                attempt(2, Refused, shrink)
            ]),
            Some(2)
        );
        assert_eq!(
            of(vec![
                attempt(1, Succeeded, None),
                attempt(2, Refused, shrink),
                attempt(3, Refused, lock)
            ]),
            None,
            "another run held the partition since: its load is the word"
        );
        assert_eq!(
            of(vec![
                attempt(1, Succeeded, None),
                attempt(2, Refused, lock),
                attempt(3, Refused, shrink)
            ]),
            Some(3)
        );
        assert_eq!(
            of(vec![
                attempt(1, Refused, shrink),
                attempt(2, Succeeded, None)
            ]),
            None
        );
        assert_eq!(
            of(vec![attempt(1, Succeeded, None), attempt(2, Refused, lock)]),
            None
        );
    }

    #[test]
    fn timestamps_are_written_as_their_pattern_writes_them() {
        use chrono::{NaiveDate, TimeZone};
        let at = |y, mo, d, h, mi, s, nanos| {
            let t = NaiveDate::from_ymd_opt(y, mo, d)
                .and_then(|d| d.and_hms_nano_opt(h, mi, s, nanos))
                .expect("a time");
            Utc.from_utc_datetime(&t)
        };
        for t in [
            at(2026, 12, 1, 3, 4, 5, 6_789_000),
            at(2026, 1, 31, 23, 59, 59, 999_999_999),
            at(0, 1, 1, 0, 0, 0, 0),
            at(9999, 12, 31, 23, 59, 59, 1_000_000),
            at(-1, 6, 15, 12, 0, 0, 0),
            at(10_000, 1, 1, 0, 0, 0, 0),
            // A leap second.
            at(2016, 12, 31, 23, 59, 59, 1_500_000_000),
        ] {
            assert_eq!(timestamp(t), t.format(TIMESTAMP).to_string(), "{t:?}");
        }
    }
}
