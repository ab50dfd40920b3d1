//! Row counts per partition, read from the target table, and a cache that
//! spares a refresh the scan when the table has not changed since its last
//! count (each engine's change signal says so), or changed only by idem's
//! own loads (the ledger then says what the counts became).

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::Row;
use tokio::sync::Mutex;

use super::ledger::LedgerMark;
use super::ledger_reads::LedgerReads;
use super::sql::Sql;
use super::{ColumnKind, Engine, Warehouse, WarehouseError, WholeTable};
use crate::config::{Ident, Job, Strategy, TableName};
use crate::partition::{Grain, Partition};

/// Row counts per partition name, read from the target table.
pub type Counts = HashMap<String, i64>;

/// One count of a job's target: its rows per partition, and the rows no
/// partition holds, whose partition column is NULL. They lie in no window,
/// so no partition's count includes them and no replace's delete reaches
/// them; only this says they are there. Read in the same grouped scan
/// (the NULLs are a group of their own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetCounts {
    pub partitions: Counts,
    /// Rows whose partition column is NULL (0 for a column declared NOT
    /// NULL, which is not asked).
    pub null_partition: i64,
}

/// Where a refresh's counts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountSource {
    /// The target's rows were counted.
    Scanned,
    /// The table had not changed since the last count: no row was read.
    Unchanged,
    /// Only idem's own loads changed it: their ledger rows gave the counts.
    Ledger,
}

/// What a refresh read, remembered for the next one: row counts per job,
/// with the target's change signal, and ledger summaries per job and range,
/// with where the ledger stood. Cloning shares the cache. It may outlive a
/// [`Warehouse`]: each refresh passes the one to read.
#[derive(Clone, Default)]
pub struct RefreshCache {
    inner: Arc<Mutex<CacheState>>,
}

#[derive(Default)]
struct CacheState {
    entries: HashMap<String, Entry>,
    /// SQLite's `data_version` only moves for commits of *other*
    /// connections, so one connection that never writes watches the file.
    watcher: Option<(String, sqlx::AnyConnection)>,
    ledgers: LedgerReads,
}

impl RefreshCache {
    /// Runs `f` on the ledger reads kept.
    pub(super) async fn with_ledgers<R>(&self, f: impl FnOnce(&mut LedgerReads) -> R) -> R {
        f(&mut self.inner.lock().await.ledgers)
    }
}

/// The counts of one job's target over a range, and what the table looked
/// like when they were read.
struct Entry {
    job: String,
    target: TableName,
    column: Ident,
    grain: Grain,
    first: Partition,
    last: Partition,
    signal: Signal,
    /// Shared with the refreshes that found them unchanged.
    counts: Arc<TargetCounts>,
    /// The job's highest ledger id when the counts were read.
    ledger_mark: i64,
}

impl Entry {
    /// The counts the job's successful loads left: each one's `rows_after`.
    /// The NULL rows stay as counted: a replace's delete never matches one,
    /// and its window check refuses to write one.
    fn apply(&mut self, loads: Vec<super::ledger::Attempt>) {
        let counts = &mut Arc::make_mut(&mut self.counts).partitions;
        for a in loads {
            counts.insert(a.partition, a.rows_after);
        }
    }
}

/// One reading of an engine's change signal.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Signal {
    token: String,
    /// Cumulative rows inserted, updated and deleted, where the engine keeps
    /// such counters for the table (PostgreSQL).
    counters: Option<[i64; 3]>,
    settled: bool,
}

impl Signal {
    /// True when nothing can have committed to the table in between.
    fn unchanged_since(&self, before: &Signal) -> bool {
        before.settled && self == before
    }
}

/// What a grouping by partition groups a value of a partition column
/// (`column`, an expression) by, and the expression naming a group's
/// partition from that bucket, selected as `alias` (where it names none,
/// [`super::Dialect::bucket_window`] names it from its text).
pub(super) fn buckets(
    dialect: &dyn super::Dialect,
    column: &str,
    grain: Grain,
    kind: ColumnKind,
    alias: &str,
) -> (String, String) {
    match kind {
        // A column of unknown type is named row by row, as a last
        // resort; on SQLite every column is text (or holds it), and
        // groups by its text.
        ColumnKind::Other if dialect.engine() != Engine::Sqlite => (
            dialect.partition_name_expr(column, grain),
            alias.to_string(),
        ),
        _ => (
            dialect.partition_bucket(column, grain, kind),
            dialect.partition_name_expr(alias, grain),
        ),
    }
}

impl Warehouse {
    /// A table's partition column, from the catalogue. On PostgreSQL a
    /// column of no date or time type (text holding dates, an integer) is
    /// refused in the words `idem lint` uses: no partition can be named from
    /// its values (QA: `idem status` said `function to_char(text, unknown)
    /// does not exist`).
    async fn countable_partition_column(
        &self,
        table: &TableName,
        column: &Ident,
    ) -> Result<super::Column, WarehouseError> {
        let columns = self.columns(table).await?;
        let engine = self.dialect.engine();
        let found = super::columns::partition_column(&columns, column, table, engine)?;
        if engine == Engine::Postgres && !found.holds_instants(engine) {
            return Err(WarehouseError::Misfit(format!(
                "partition column {column} of {table} is {}, not a date or timestamp: its rows cannot be counted by partition, nor compared with a window's bounds (idem lint says how to fix it)",
                found.type_name
            )));
        }
        Ok(found.clone())
    }

    /// Row counts per partition of a job's target from `first` through
    /// `last`, in one query. It groups by the partition column itself (or
    /// its truncation to the grain) and compares it with boundaries of its
    /// own type, so it costs what the engine's plain `GROUP BY` costs and an
    /// index on the column can serve a narrow range; partitions are named
    /// after grouping. The rows whose partition column is NULL are read in
    /// the same scan, whatever the range. Jobs without a partition column
    /// have none.
    pub async fn partition_counts(
        &self,
        job: &Job,
        first: Partition,
        last: Partition,
    ) -> Result<TargetCounts, WarehouseError> {
        Ok(self
            .partition_counts_around_loads(job, first, last)
            .await?
            .0)
    }

    /// [`Warehouse::partition_counts`], and whether some were left out: the
    /// count goes around the native partitions idem loads hold (a
    /// TRUNCATE's lock, until its COMMIT), which a state read shows as
    /// running, rather than wait on them: asked first, so that a status
    /// during a long load does not wait out `lock_timeout` each time, and
    /// again after a count that waited past it on a load that took one
    /// since. A lock of any other session's is named as the error.
    async fn partition_counts_around_loads(
        &self,
        job: &Job,
        first: Partition,
        last: Partition,
    ) -> Result<(TargetCounts, bool), WarehouseError> {
        let mut held = self.partitions_held_by_loads(&job.target).await?;
        // Loads may take other partitions between the tries.
        for _ in 0..3 {
            let e = match self.count_rows(job, first, last, &held).await {
                Ok(counts) => return Ok((counts, !held.is_empty())),
                Err(e) => e,
            };
            let waited = matches!(&e, WarehouseError::Sql(sqlx::Error::Database(db))
                if self.dialect().waited_on_lock(&**db));
            let now_held = match waited {
                true => self.partitions_held_by_loads(&job.target).await?,
                false => Vec::new(),
            };
            let more: Vec<_> = now_held.into_iter().filter(|h| !held.contains(h)).collect();
            if more.is_empty() {
                return Err(self.naming_table_holder(&job.target, e).await);
            }
            held.extend(more);
        }
        Err(WarehouseError::Job(format!(
            "{} could not be counted: idem loads kept taking its partitions' locks; try again",
            job.target
        )))
    }

    /// The counts, read around the `held` ranges (see
    /// [`super::held_partitions::around`]). A column that accepts NULL is
    /// also read where it is NULL (`OR col IS NULL`, which an index on it
    /// serves), those rows told apart by `COUNT(col)`: the NULLs fall in
    /// a bucket of their own, which names no partition. A native
    /// partitioned table keeps them in its default partition, which no load
    /// truncates, so none is held.
    async fn count_rows(
        &self,
        job: &Job,
        first: Partition,
        last: Partition,
        held: &[(chrono::NaiveDateTime, chrono::NaiveDateTime)],
    ) -> Result<TargetCounts, WarehouseError> {
        let Some(col) = &job.partition_column else {
            return Ok(TargetCounts::default());
        };
        let dialect = self.dialect();
        let column = self.countable_partition_column(&job.target, col).await?;
        let (kind, nullable) = (column.kind(dialect.engine()), column.nullable);
        let (bucket, name) = buckets(dialect, &dialect.quote(col), job.grain, kind, "b");
        // Only a column of a date or time type orders its values as the
        // range compares them.
        let whole = match dialect.whole_table() {
            WholeTable::Filtered => WholeTable::Filtered,
            _ if kind == ColumnKind::Other || !self.leads_an_index(&job.target, col).await? => {
                WholeTable::Filtered
            }
            WholeTable::AskedFirst
                if !self.lies_within(job, col, (&first, &last), kind).await? =>
            {
                WholeTable::Filtered
            }
            whole => whole,
        };
        let parts = super::held_partitions::around((first.start, last.end()), held);
        let whole = if held.is_empty() {
            whole
        } else if parts.is_empty() && !nullable {
            return Ok(TargetCounts::default());
        } else {
            WholeTable::Filtered
        };
        let bucket_window = dialect.bucket_window();
        let mut counts = TargetCounts::default();
        let read = self
            .each_row(
                |sql| {
                    sql.push(&name).push(", n");
                    if nullable {
                        sql.push(", n - v");
                    }
                    if bucket_window.is_some() {
                        sql.push(", CAST(b AS TEXT)");
                    }
                },
                |sql| {
                    sql.push(" FROM (SELECT ")
                        .push(&bucket)
                        .push(" AS b, COUNT(*) AS n");
                    if nullable {
                        sql.push(", COUNT(").ident(col).push(") AS v");
                    }
                    sql.push(" FROM ").table(&job.target);
                    match whole {
                        // The table lies in the range: no row needs testing.
                        WholeTable::AskedFirst => {}
                        WholeTable::WithinOrRange => {
                            sql.push(" WHERE ");
                            push_table_within(sql, &job.target, col, (&first, &last), kind);
                            sql.push(" OR (")
                                .range_filter_as("", col, (&first, &last), kind)
                                .push(")");
                        }
                        WholeTable::Filtered if held.is_empty() => {
                            sql.push(" WHERE (")
                                .range_filter_as("", col, (&first, &last), kind)
                                .push(")");
                        }
                        // Bounds the planner folds into constants, so that
                        // it prunes the held partitions and locks none.
                        WholeTable::Filtered if parts.is_empty() => {
                            sql.push(" WHERE (1 = 0)");
                        }
                        WholeTable::Filtered => {
                            for (i, (start, end)) in parts.iter().enumerate() {
                                sql.push(if i == 0 { " WHERE ((" } else { " OR (" })
                                    .ident(col)
                                    .push(" >= ");
                                sql.bind_instant_as(*start, &first, kind)
                                    .push(" AND ")
                                    .ident(col)
                                    .push(" < ");
                                sql.bind_instant_as(*end, &first, kind).push(")");
                            }
                            sql.push(")");
                        }
                    }
                    // Every filter above is one disjunction: the NULLs join
                    // it (a whole table's read has them already).
                    if nullable && !matches!(whole, WholeTable::AskedFirst) {
                        sql.push(" OR ").ident(col).push(" IS NULL");
                    }
                    sql.push(" GROUP BY ").push(&bucket).push(") g");
                },
                |row| {
                    let mut name: Option<String> = row.get(0)?;
                    let n: i64 = row.get(1)?;
                    let nulls: i64 = if nullable { row.get(2)? } else { 0 };
                    counts.null_partition += nulls;
                    if name.is_none()
                        && let Some(window) = bucket_window
                    {
                        let text: Option<String> = row.get(if nullable { 3 } else { 2 })?;
                        name = text.and_then(|t| window(&t, job.grain));
                    }
                    // Several buckets can share a name (a date column holding times).
                    if let Some(name) = name {
                        *counts.partitions.entry(name).or_insert(0) += n - nulls;
                    }
                    Ok(())
                },
            )
            .await;
        read.map(|()| counts)
    }

    /// Whether an index of the table that can be read in order starts
    /// with the column (see [`super::Dialect::leading_index_query`]).
    pub(super) async fn leads_an_index(
        &self,
        table: &TableName,
        column: &Ident,
    ) -> Result<bool, WarehouseError> {
        let mut sql = self.sql();
        self.dialect().leading_index_query(&mut sql, table, column);
        Ok(sql
            .query()
            .fetch_one(&mut *self.pooled().await?)
            .await?
            .try_get::<i64, _>(0)?
            > 0)
    }

    /// Whether every row of the job's target lies in the range from
    /// `first` through `last` (false for an empty table). A row written
    /// after this answer and outside the range is counted under its own
    /// partition by the count that follows, never under another: the range
    /// only narrows what the count reads.
    async fn lies_within(
        &self,
        job: &Job,
        column: &Ident,
        range: (&Partition, &Partition),
        kind: ColumnKind,
    ) -> Result<bool, WarehouseError> {
        let mut sql = self.sql();
        sql.push("SELECT CASE WHEN ");
        push_table_within(&mut sql, &job.target, column, range, kind);
        sql.push(" THEN 1 ELSE 0 END");
        Ok(sql
            .query()
            .fetch_one(&mut *self.pooled().await?)
            .await?
            .try_get::<i64, _>(0)?
            == 1)
    }

    /// [`Warehouse::partition_counts`] through a cache: when the engine's
    /// change signal for the target has not moved since the cached count
    /// (over a range covering this one), no row is read; when it moved by
    /// exactly what idem's own replace loads recorded in the ledger since,
    /// their row counts are applied; otherwise the range is counted again.
    /// `mark` is where the job's ledger stands ([`Warehouse::ledger_mark`]),
    /// read before the counts.
    pub async fn partition_counts_cached(
        &self,
        cache: &RefreshCache,
        job: &Job,
        first: Partition,
        last: Partition,
        mark: LedgerMark,
    ) -> Result<(Arc<TargetCounts>, CountSource), WarehouseError> {
        let Some(col) = &job.partition_column else {
            return Ok((Arc::default(), CountSource::Unchanged));
        };
        let mut state = cache.inner.lock().await;
        // Read before counting: a change committed while counting moves the
        // signal past the one stored, so the next refresh counts again.
        let signal = self.change_signal(&mut state, &job.target).await?;
        let mark = mark.last_id;
        if let Some(entry) = state.entries.get_mut(&job.name)
            && entry.target == job.target
            && entry.column == *col
            && entry.grain == job.grain
            && entry.first <= first
            && last <= entry.last
        {
            if signal.unchanged_since(&entry.signal) {
                if mark <= entry.ledger_mark {
                    return Ok((Arc::clone(&entry.counts), CountSource::Unchanged));
                }
                // The job's ledger moved but the table's signal did not yet:
                // PostgreSQL publishes a session's counters up to a second
                // after its commit. Its own loads since give their counts
                // now; the entry keeps its signal and mark, so the next
                // refresh checks the counters against those loads.
                if job.strategy == Strategy::ReplacePartition
                    && let Some((loads, _)) = self.own_loads_since(entry).await?
                {
                    entry.apply(loads);
                    return Ok((Arc::clone(&entry.counts), CountSource::Ledger));
                }
            }
            if job.strategy == Strategy::ReplacePartition
                && self.apply_own_loads(entry, &signal, mark).await?
            {
                return Ok((Arc::clone(&entry.counts), CountSource::Ledger));
            }
        }
        let (counts, partial) = self.partition_counts_around_loads(job, first, last).await?;
        let counts = Arc::new(counts);
        // Counts that left out partitions loads held are not kept as the
        // table's: the next refresh counts again.
        let signal = Signal {
            settled: signal.settled && !partial,
            ..signal
        };
        state.entries.insert(
            job.name.clone(),
            Entry {
                job: job.name.clone(),
                target: job.target.clone(),
                column: col.clone(),
                grain: job.grain,
                first,
                last,
                signal,
                counts: Arc::clone(&counts),
                ledger_mark: mark,
            },
        );
        Ok((counts, CountSource::Scanned))
    }

    /// When the table's counters moved by exactly the rows that the job's
    /// successful loads since the entry's mark deleted, inserted and
    /// updated, nothing else wrote it: their `rows_after` are the partitions'
    /// counts now. Any failed attempt (its rolled-back rows moved the
    /// counters too), a reset or a truncation makes it count again instead.
    async fn apply_own_loads(
        &self,
        entry: &mut Entry,
        signal: &Signal,
        mark: i64,
    ) -> Result<bool, WarehouseError> {
        let (Some(before), Some(now)) = (entry.signal.counters, signal.counters) else {
            return Ok(false);
        };
        if !entry.signal.settled || signal.token != entry.signal.token {
            return Ok(false);
        }
        let Some((loads, expected)) = self.own_loads_since(entry).await? else {
            return Ok(false);
        };
        let moved = [now[0] - before[0], now[1] - before[1], now[2] - before[2]];
        if moved != expected {
            return Ok(false);
        }
        entry.apply(loads);
        entry.signal = signal.clone();
        entry.ledger_mark = mark;
        Ok(true)
    }

    /// The job's attempts since the entry's ledger mark, when every one
    /// succeeded, with the rows they inserted, updated and deleted in all.
    async fn own_loads_since(
        &self,
        entry: &Entry,
    ) -> Result<Option<(Vec<super::ledger::Attempt>, [i64; 3])>, WarehouseError> {
        let loads = self.attempts_after(&entry.job, entry.ledger_mark).await?;
        let mut expected = [0i64; 3];
        for a in &loads {
            if a.status != super::ledger::AttemptStatus::Succeeded {
                return Ok(None);
            }
            expected[0] += a.rows_inserted;
            expected[1] += a.rows_updated;
            expected[2] += a.rows_deleted;
        }
        Ok(Some((loads, expected)))
    }

    async fn change_signal(
        &self,
        state: &mut CacheState,
        table: &TableName,
    ) -> Result<Signal, WarehouseError> {
        let mut sql = self.sql();
        self.dialect().change_signal_query(&mut sql, table);
        let row = match self.dialect().engine() {
            Engine::Sqlite => {
                let url = self.config().url.clone();
                if state.watcher.as_ref().is_none_or(|(u, _)| *u != url) {
                    let conn = self.pooled().await?.detach();
                    state.watcher = Some((url, conn));
                }
                let Some((_, conn)) = state.watcher.as_mut() else {
                    return Err(WarehouseError::Job("no SQLite watch connection".into()));
                };
                sql.query().fetch_one(&mut *conn).await?
            }
            Engine::MySql => {
                let mut conn = self.pooled().await?;
                // MySQL 8 caches table metadata for a day unless told not
                // to; MariaDB has no such cache (nor the variable).
                let _ = sqlx::query("SET SESSION information_schema_stats_expiry = 0")
                    .execute(&mut *conn)
                    .await;
                // MariaDB and MySQL have no row for a table that is not
                // there: said as the missing target `idem status` names,
                // not as a query that expected a row.
                match sql.query().fetch_optional(&mut *conn).await? {
                    Some(row) => row,
                    None => {
                        drop(conn);
                        self.columns(table).await?;
                        return Err(WarehouseError::Job(format!(
                            "the table {table} is not in information_schema.tables"
                        )));
                    }
                }
            }
            Engine::Postgres => sql.query().fetch_one(&mut *self.pooled().await?).await?,
        };
        let token: Option<String> = row.try_get(0)?;
        let ins: Option<i64> = row.try_get(1)?;
        let upd: Option<i64> = row.try_get(2)?;
        let del: Option<i64> = row.try_get(3)?;
        let settled: i64 = row.try_get(4)?;
        Ok(Signal {
            token: token.unwrap_or_default(),
            counters: match (ins, upd, del) {
                (Some(i), Some(u), Some(d)) => Some([i, u, d]),
                _ => None,
            },
            settled: settled == 1,
        })
    }
}

/// `(SELECT MIN(col) FROM table) >= start AND (SELECT MAX(col) FROM
/// table) < end`: every row of the table lies in the range. Two scalar
/// subqueries, not one `SELECT MIN(col), MAX(col)`: each alone is read from
/// an end of an index leading on the column (SQLite scans for the pair).
fn push_table_within(
    sql: &mut Sql,
    table: &TableName,
    column: &Ident,
    (first, last): (&Partition, &Partition),
    kind: ColumnKind,
) {
    sql.push("((SELECT MIN(")
        .ident(column)
        .push(") FROM ")
        .table(table)
        .push(") >= ");
    sql.bind_instant_as(first.start, first, kind);
    sql.push(" AND (SELECT MAX(")
        .ident(column)
        .push(") FROM ")
        .table(table)
        .push(") < ");
    sql.bind_instant_as(last.end(), last, kind);
    sql.push(")");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::RangeEnd;

    /// The two questions a SQLite count asks before it drops its range
    /// filter: does an index lead on the column, and does the whole table
    /// lie in the range.
    #[tokio::test]
    async fn a_sqlite_count_drops_its_filter_only_for_an_indexed_table_inside_the_range() {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[warehouse]\nurl = \"sqlite://{}/w.db?mode=rwc\"\n\n[[jobs]]\nname = \"j\"\n\
             target = \"ev\"\nstrategy = \"replace_partition\"\npartition_column = \"d\"\n\
             grain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-31\"\n\
             sql = \"select d, k from src where d >= :start and d < :end\"\n",
            dir.path().display()
        );
        let config = crate::config::parse(std::path::Path::new("idem.toml"), &text, &|_| None)
            .expect("config");
        let wh = Warehouse::connect(&config.warehouse, 1).await.unwrap();
        let job = &config.jobs[0];
        let (d, k) = (Ident::parse("d").unwrap(), Ident::parse("k").unwrap());
        let day = |d: &str| Partition::parse(job.grain, d, RangeEnd::From).unwrap();
        let january = (&day("2026-01-01"), &day("2026-01-31"));
        let within = async |range| {
            wh.lies_within(job, &d, range, ColumnKind::Date)
                .await
                .unwrap()
        };
        wh.execute_script(&[
            "CREATE TABLE ev (d DATE NOT NULL, k INTEGER NOT NULL)",
            "CREATE INDEX ev_k_d ON ev (k, d)",
        ])
        .await
        .unwrap();
        // An empty table lies in no range; an index must lead on the column.
        assert!(!within(january).await);
        assert!(!wh.leads_an_index(&job.target, &d).await.unwrap());
        assert!(wh.leads_an_index(&job.target, &k).await.unwrap());
        wh.execute_script(&[
            "CREATE INDEX ev_d ON ev (D)",
            "INSERT INTO ev VALUES ('2026-01-01', 1), ('2026-01-31', 2)",
        ])
        .await
        .unwrap();
        assert!(wh.leads_an_index(&job.target, &d).await.unwrap());
        assert!(within(january).await);
        let narrow = (&day("2026-01-02"), &day("2026-01-31"));
        assert!(!within(narrow).await);
        // A row past the range's end: the filter stays, and keeps it out.
        wh.execute_script(&["INSERT INTO ev VALUES ('2026-02-01', 3)"])
            .await
            .unwrap();
        assert!(!within(january).await);
        let counts = wh
            .partition_counts(job, *january.0, *january.1)
            .await
            .unwrap();
        let mut counts: Vec<_> = counts.partitions.into_iter().collect();
        counts.sort();
        assert_eq!(
            counts,
            [("2026-01-01".to_string(), 1), ("2026-01-31".to_string(), 1)]
        );
    }
}
