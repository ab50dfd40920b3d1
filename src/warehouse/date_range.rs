//! What `idem init` reads of a dated column: its first and last real dates
//! (placeholders such as PostgreSQL's `-infinity` or MariaDB's
//! `0000-00-00` left out) and a sample of its values, each without reading
//! a big table whole: an index gives the range in two seeks; without one,
//! only the first rows the warehouse reads are, and the range says so.

use sqlx::Row;

use super::sql::Sql;
use super::{Column, Engine, Warehouse, WarehouseError};
use crate::config::TableName;

/// Rows read at most for a column's range or sample where no index gives
/// it: a fraction of a second on any engine, where the whole of a billion
/// rows takes minutes.
pub const ROWS_READ_WITHOUT_INDEX: u32 = 100_000;

/// The smallest date written in full taken for a real one.
const FIRST_REAL_DATE: &str = "0001-01-01";

/// A column's first and last real dates as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateRange {
    /// `None` where no real date was read.
    pub values: Option<(String, String)>,
    /// Whether of every row: an index gave it, or the table has no more
    /// rows than [`ROWS_READ_WITHOUT_INDEX`]. Otherwise of the first rows
    /// read alone, so the table may hold earlier and later dates.
    pub exact: bool,
}

impl Warehouse {
    /// The smallest and largest real dates of `column` (year 1 AD or later,
    /// finite; on SQLite, whose dates are text, no number either, as
    /// numbers sort before any text). Read in two seeks where an index
    /// begins with the column; otherwise from the first
    /// [`ROWS_READ_WITHOUT_INDEX`] rows, and exact only where that is all
    /// of them.
    pub async fn date_range_as_text(
        &self,
        table: &TableName,
        column: &Column,
    ) -> Result<DateRange, WarehouseError> {
        let quoted = self.dialect.quote(&column.name);
        let real = self.real_date(&quoted);
        if self.leads_an_index(table, &column.name).await? {
            let mut ends = [None, None];
            for (end, order) in ends.iter_mut().zip(["ASC", "DESC"]) {
                let mut sql = self.sql();
                sql.push("SELECT ")
                    .push(&self.dialect.text_expr(&quoted))
                    .push(" FROM ")
                    .table(table)
                    .push(&format!(" WHERE {real} ORDER BY {quoted} {order} LIMIT 1"));
                if let Some(row) = sql.query().fetch_optional(&self.pool).await? {
                    *end = row.try_get::<Option<String>, _>(0)?;
                }
            }
            let [first, last] = ends;
            return Ok(DateRange {
                values: first.zip(last),
                exact: true,
            });
        }
        let mut sql = self.sql();
        let kept = format!("CASE WHEN {real} THEN {quoted} END");
        sql.push("SELECT ")
            .push(&self.dialect.text_expr(&format!("MIN({kept})")))
            .push(", ")
            .push(&self.dialect.text_expr(&format!("MAX({kept})")))
            .push(", COUNT(*) FROM ");
        self.first_rows(&mut sql, table, &quoted, ROWS_READ_WITHOUT_INDEX + 1);
        let row = sql.query().fetch_one(&self.pool).await?;
        let min: Option<String> = row.try_get(0)?;
        let max: Option<String> = row.try_get(1)?;
        let read: i64 = row.try_get(2)?;
        Ok(DateRange {
            values: min.zip(max),
            exact: read <= i64::from(ROWS_READ_WITHOUT_INDEX),
        })
    }

    /// Up to `n` of `column`'s real dates as text (as
    /// [`Warehouse::date_range_as_text`] counts them), in whatever order
    /// the warehouse reads them first, from its first
    /// [`ROWS_READ_WITHOUT_INDEX`] rows: a column of NULLs is not read to
    /// its end for them.
    pub async fn date_sample_as_text(
        &self,
        table: &TableName,
        column: &Column,
        n: u32,
    ) -> Result<Vec<String>, WarehouseError> {
        let quoted = self.dialect.quote(&column.name);
        let mut sql = self.sql();
        sql.push("SELECT ")
            .push(&self.dialect.text_expr(&quoted))
            .push(" FROM ");
        self.first_rows(&mut sql, table, &quoted, ROWS_READ_WITHOUT_INDEX);
        sql.push(&format!(" WHERE {} LIMIT {n}", self.real_date(&quoted)));
        let mut values = Vec::new();
        for row in sql.query().fetch_all(&self.pool).await? {
            if let Some(value) = row.try_get::<Option<String>, _>(0)? {
                values.push(value);
            }
        }
        Ok(values)
    }

    /// `(SELECT column FROM table LIMIT n) AS first_rows`.
    fn first_rows(&self, sql: &mut Sql, table: &TableName, quoted: &str, n: u32) {
        sql.push(&format!("(SELECT {quoted} FROM "))
            .table(table)
            .push(&format!(" LIMIT {n}) AS first_rows"));
    }

    /// The condition that the column `quoted` holds a real date. idem's own
    /// constants, not values: a bound parameter would be text, which
    /// PostgreSQL does not compare with a date.
    fn real_date(&self, quoted: &str) -> String {
        let mut real = format!("{quoted} >= '{FIRST_REAL_DATE}'");
        match self.dialect.engine() {
            Engine::Postgres => real.push_str(&format!(" AND {quoted} < 'infinity'")),
            // MariaDB's zero month or day (`2026-02-00`, allowed without
            // NO_ZERO_IN_DATE) is no date, as its zero year is none: no
            // window holds it, and `idem init` would name it as the first
            // value of a table its starter job starts later.
            Engine::MySql => real.push_str(&format!(
                " AND MONTH({quoted}) <> 0 AND DAYOFMONTH({quoted}) <> 0"
            )),
            Engine::Sqlite => {}
        }
        real
    }
}
