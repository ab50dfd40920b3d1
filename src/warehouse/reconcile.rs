//! Source reconciliation: how many rows each partition's SQL would write
//! now, counted by the warehouse in one read-only statement per job, to
//! compare with what is loaded. A partition whose source gained or lost rows
//! since its load is out of date; counts cannot see changed values.

use futures::TryStreamExt;
use sqlx::{Connection, Row};
use tokio_util::sync::CancellationToken;

use super::sql::Sql;
use super::{Counts, Engine, Warehouse, WarehouseError};
use crate::config::Job;
use crate::partition::Partition;

/// Windows counted in one statement where each is a subquery of its own.
const WINDOWS_PER_STATEMENT: usize = 100;

/// What the job's SQL gives over a range, as [`Warehouse::source_counts`]
/// counts it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceCounts {
    /// Rows per partition, by name.
    pub partitions: Counts,
    /// Rows whose partition column is NULL, which no window holds: a
    /// replace's load refuses them. Counted in the same statement as the
    /// windows' rows, grouped (their group) or window by window (each
    /// window's, summed: the rows the loads over the range would be given
    /// with it NULL); None where the job has no partition column.
    pub null_partition: Option<i64>,
}

impl Warehouse {
    /// The statements that count the rows the job's SQL gives each
    /// partition from `first` through `last`. Where the SQL provably gives
    /// each window the rows of the whole range that fall in it (`grouped`,
    /// as `lint::bounds_only_filter` reads it), one statement grouped by the
    /// partition column of the SELECT's output; otherwise (a job without a
    /// partition column, a bound or the partition's name in the output, a
    /// window function, LIMIT or aggregate across windows, a filter on a
    /// column the partition is not computed from) one bounded subquery per
    /// window, `UNION ALL`ed, [`WINDOWS_PER_STATEMENT`] to a statement;
    /// there a window's rows with a NULL partition column are counted
    /// apart, as the grouped statement's NULL group is (QA: they were
    /// counted in the window's rows, and never said).
    pub fn source_counts_sql(
        &self,
        job: &Job,
        first: Partition,
        last: Partition,
        grouped: bool,
    ) -> Result<Vec<Sql>, WarehouseError> {
        let dialect = self.dialect();
        if let Some(col) = &job.partition_column
            && grouped
        {
            // The NULL group is kept (its name NULL): the rows a load
            // refuses, said before it does.
            // Grouped by the partition's start, named after grouping: a
            // name formatted for each row cost PostgreSQL 3.5x the plain
            // GROUP BY (RESULTS §22).
            let mut sql = self.sql();
            let bucket = dialect.source_bucket(&format!("src.{}", dialect.quote(col)), job.grain);
            sql.push("SELECT ")
                .push(&dialect.partition_name_expr("g.b", job.grain))
                .push(" AS p, g.n FROM (SELECT ")
                .push(&bucket)
                .push(" AS b, COUNT(*) AS n FROM (");
            sql.job_sql_over(&job.sql, &first, &last)?;
            sql.push(") src GROUP BY ").push(&bucket).push(") g");
            return Ok(vec![sql]);
        }
        let text = match dialect.engine() {
            Engine::MySql => "CHAR",
            _ => "TEXT",
        };
        let windows = crate::partition::range(first, last);
        let mut statements = Vec::new();
        for chunk in windows.chunks(WINDOWS_PER_STATEMENT) {
            let mut sql = self.sql();
            for (i, p) in chunk.iter().enumerate() {
                if i > 0 {
                    sql.push(" UNION ALL ");
                }
                sql.push("SELECT CAST(")
                    .bind(p.name())
                    .push(&format!(" AS {text}) AS p, "));
                match &job.partition_column {
                    Some(col) => {
                        let col = format!("src.{}", dialect.quote(col));
                        sql.push(&format!(
                            "COUNT({col}) AS n, COUNT(CASE WHEN {col} IS NULL THEN 1 END) AS nulls"
                        ))
                    }
                    None => sql.push("COUNT(*) AS n"),
                };
                sql.push(" FROM (");
                sql.job_sql(&job.sql, p)?;
                sql.push(") src");
            }
            statements.push(sql);
        }
        Ok(statements)
    }

    /// Rows per partition the job's SQL would write now, from `first`
    /// through `last`, in one read-only transaction that is rolled back
    /// ([`Warehouse::source_counts_sql`]).
    pub async fn source_counts(
        &self,
        job: &Job,
        first: Partition,
        last: Partition,
        grouped: bool,
    ) -> Result<SourceCounts, WarehouseError> {
        let never = CancellationToken::new();
        self.source_counts_until(job, (first, last), grouped, &never)
            .await
    }

    /// [`Warehouse::source_counts`] until `cancel`: then the count is
    /// stopped on the server too (`pg_cancel_backend`, `KILL QUERY`), not
    /// only dropped here. A dropped read runs on to its end on the server,
    /// which notices its client gone only when it answers: a dialog closed
    /// or a reconcile asked again left a long count behind for each time.
    /// SQLite's counts run in this process, and end with it.
    pub async fn source_counts_until(
        &self,
        job: &Job,
        (first, last): (Partition, Partition),
        grouped: bool,
        cancel: &CancellationToken,
    ) -> Result<SourceCounts, WarehouseError> {
        let statements = self.source_counts_sql(job, first, last, grouped)?;
        // A count is a read like any: a warehouse that stops answering ends it.
        self.answering(self.count_until(&statements, cancel))
            .await
            .map(|(partitions, nulls)| SourceCounts {
                partitions,
                null_partition: job.partition_column.is_some().then_some(nulls),
            })
    }

    /// [`Warehouse::source_counts_until`]'s count of `statements`, on one
    /// of the pool's connections.
    async fn count_until(
        &self,
        statements: &[Sql],
        cancel: &CancellationToken,
    ) -> Result<(Counts, i64), WarehouseError> {
        let mut conn = self.pooled().await?;
        let session = match self.dialect().engine() {
            Engine::Postgres => Some("SELECT CAST(pg_backend_pid() AS bigint)"),
            Engine::MySql => Some("SELECT CAST(CONNECTION_ID() AS SIGNED)"),
            Engine::Sqlite => None,
        };
        let session: Option<i64> = match session {
            Some(sql) => Some(sqlx::query_scalar(sql).fetch_one(&mut *conn).await?),
            None => None,
        };
        tokio::select! {
            counted = count_on(self, &mut conn, statements) => counted,
            () = cancel.cancelled() => {
                // Not returned to the pool mid-statement.
                drop(conn.detach());
                if let Some(id) = session {
                    let _ = self.cancel_statement(id).await;
                }
                Err(WarehouseError::Cancelled)
            }
        }
    }

    /// Stops the statement session `id` is running (not the session), on a
    /// connection of its own.
    async fn cancel_statement(&self, id: i64) -> Result<(), WarehouseError> {
        let sql = match self.dialect().engine() {
            Engine::Postgres => format!("SELECT pg_cancel_backend({id})"),
            Engine::MySql => format!("KILL QUERY {id}"),
            Engine::Sqlite => return Ok(()),
        };
        let mut conn = self.connection_aside().await?;
        let stopped = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
        stopped.map(|_| ()).map_err(WarehouseError::from)
    }
}

/// The counts of `statements` in one read-only transaction, rolled back,
/// and the count of the rows in no partition (a NULL name, or a window's
/// third column).
async fn count_on(
    wh: &Warehouse,
    conn: &mut sqlx::AnyConnection,
    statements: &[Sql],
) -> Result<(Counts, i64), WarehouseError> {
    let mut tx = Connection::begin(conn).await?;
    if wh.dialect().engine() == Engine::Postgres {
        sqlx::query("SET TRANSACTION READ ONLY")
            .execute(&mut *tx)
            .await?;
    }
    let mut counts = Counts::new();
    let mut nulls = 0;
    for sql in statements {
        let mut rows = sql.query().fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let name: Option<String> = row.try_get(0)?;
            let n: i64 = row.try_get(1)?;
            if row.len() > 2 {
                nulls += row.try_get::<i64, _>(2)?;
            }
            match name {
                Some(name) => *counts.entry(name).or_default() += n,
                None => nulls += n,
            }
        }
    }
    tx.rollback().await?;
    Ok((counts, nulls))
}
