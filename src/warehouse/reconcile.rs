//! Source reconciliation: how many rows each partition's SQL would write
//! now, counted by the warehouse in one read-only statement per job, to
//! compare with what is loaded. A partition whose source gained or lost rows
//! since its load is out of date; counts cannot see changed values.

use futures::TryStreamExt;
use sqlx::{Acquire, Row};

use super::sql::Sql;
use super::{Counts, Engine, Warehouse, WarehouseError};
use crate::config::Job;
use crate::partition::Partition;

impl Warehouse {
    /// The one statement that counts the rows the job's SQL gives each
    /// partition from `first` through `last`: grouped by the partition column
    /// of the SELECT's output where the job has one, otherwise one bounded
    /// subquery per window in a single `UNION ALL`.
    pub fn source_counts_sql(
        &self,
        job: &Job,
        first: Partition,
        last: Partition,
    ) -> Result<Sql, WarehouseError> {
        let dialect = self.dialect();
        let unknown = |e: super::sql::UnknownParameter| WarehouseError::Job(e.to_string());
        let mut sql = self.sql();
        match &job.partition_column {
            Some(col) => {
                let name =
                    dialect.partition_name_expr(&format!("src.{}", dialect.quote(col)), job.grain);
                sql.push("SELECT ")
                    .push(&name)
                    .push(" AS p, COUNT(*) AS n FROM (");
                sql.job_sql_over(&job.sql, &first, &last).map_err(unknown)?;
                sql.push(") src GROUP BY ").push(&name);
            }
            None => {
                let text = match dialect.engine() {
                    Engine::MySql => "CHAR",
                    _ => "TEXT",
                };
                for (i, p) in crate::partition::range(first, last).iter().enumerate() {
                    if i > 0 {
                        sql.push(" UNION ALL ");
                    }
                    sql.push("SELECT CAST(")
                        .bind(p.name())
                        .push(&format!(" AS {text}) AS p, COUNT(*) AS n FROM ("));
                    sql.job_sql(&job.sql, p).map_err(unknown)?;
                    sql.push(") src");
                }
            }
        }
        Ok(sql)
    }

    /// Rows per partition the job's SQL would write now, from `first`
    /// through `last`, in one read-only transaction that is rolled back.
    pub async fn source_counts(
        &self,
        job: &Job,
        first: Partition,
        last: Partition,
    ) -> Result<Counts, WarehouseError> {
        let sql = self.source_counts_sql(job, first, last)?;
        let mut conn = self.pool().acquire().await?;
        let mut tx = conn.begin().await?;
        if self.dialect().engine() == Engine::Postgres {
            sqlx::query("SET TRANSACTION READ ONLY")
                .execute(&mut *tx)
                .await?;
        }
        let mut counts = Counts::new();
        {
            let mut rows = sql.query().fetch(&mut *tx);
            while let Some(row) = rows.try_next().await? {
                let name: Option<String> = row.try_get(0)?;
                let n: i64 = row.try_get(1)?;
                if let Some(name) = name {
                    *counts.entry(name).or_default() += n;
                }
            }
        }
        tx.rollback().await?;
        Ok(counts)
    }
}
