//! What `idem init` reads of a dated column: its first and last plausible
//! dates, the values left out as likely placeholders (`0001-01-01`,
//! `1900-01-01`, `9999-12-31`: "unknown" written as a date; a date days
//! ahead is no placeholder: a zone ahead of the warehouse's clock, a
//! scheduled row), and a sample of
//! its values, each without reading a big table whole: an index gives the
//! range in a few seeks; without one, only the first rows the warehouse
//! reads are, and the range says so. Values that are no dates at all
//! (PostgreSQL's `-infinity`, MariaDB's `0000-00-00`) are left out unsaid.

use chrono::NaiveDate;
use sqlx::Row;

use super::sql::Sql;
use super::{Column, Engine, Warehouse, WarehouseError};
use crate::config::TableName;

/// Rows read at most for a column's range or sample where no index gives
/// it: a fraction of a second on any engine, where the whole of a billion
/// rows takes minutes.
pub const ROWS_READ_WITHOUT_INDEX: u32 = 100_000;

/// The last date taken for a real one: a year after `today`. Rows dated
/// days or months ahead are real (a zone ahead of the warehouse's clock,
/// an order's delivery day, a scheduled event); `9999-12-31`, `2999-01-01`
/// are "unknown" or "never" written as a date.
fn last_plausible(today: NaiveDate) -> NaiveDate {
    today
        .checked_add_months(chrono::Months::new(12))
        .unwrap_or(today)
}

/// The smallest date written in full taken for a date at all.
const FIRST_REAL_DATE: &str = "0001-01-01";

/// The first date taken for a real one in a table a batch job loads:
/// earlier values (`0001-01-01`, `1900-01-01`) are most often "unknown"
/// written as a date. The last is a year after today ([`last_plausible`]).
pub const FIRST_PLAUSIBLE_DATE: NaiveDate = match NaiveDate::from_ymd_opt(1970, 1, 1) {
    Some(date) => date,
    None => panic!("1970-01-01 is a date"),
};

/// A column's first and last plausible dates as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateRange {
    /// `None` where no plausible date was read.
    pub values: Option<(String, String)>,
    /// Whether of every row: an index gave it, or the table has no more
    /// rows than [`ROWS_READ_WITHOUT_INDEX`]. Otherwise of the first rows
    /// read alone, so the table may hold earlier and later dates.
    pub exact: bool,
    /// Dates before [`FIRST_PLAUSIBLE_DATE`], then over a year after today,
    /// left out.
    pub placeholders: Vec<Placeholders>,
}

/// Dates on one side of the plausible ones, left out of a [`DateRange`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholders {
    /// Whether after the last plausible date, not before the first.
    pub after: bool,
    /// The date they lie beyond: [`FIRST_PLAUSIBLE_DATE`], or the last
    /// plausible one ([`last_plausible`]).
    pub beyond: NaiveDate,
    pub least: String,
    pub greatest: String,
    /// Rows that hold them: of the rows read, or counted up to
    /// [`ROWS_READ_WITHOUT_INDEX`] through an index.
    pub rows: i64,
    /// Whether more rows than `rows` may hold them.
    pub at_least: bool,
}

/// The conditions `idem init` sorts a column's values by.
struct Conditions {
    /// A date from [`FIRST_PLAUSIBLE_DATE`] to [`last_plausible`].
    plausible: String,
    before: String,
    after: String,
    last_plausible: NaiveDate,
}

impl Warehouse {
    /// The smallest and largest plausible dates of `column` (from
    /// [`FIRST_PLAUSIBLE_DATE`] to [`last_plausible`]; on
    /// SQLite, whose dates are text, no number either, as numbers sort
    /// before any text), and what lies on either side. Read in a few seeks
    /// where an index begins with the column; otherwise from the first
    /// [`ROWS_READ_WITHOUT_INDEX`] rows, and exact only where that is all
    /// of them.
    pub async fn date_range_as_text(
        &self,
        table: &TableName,
        column: &Column,
    ) -> Result<DateRange, WarehouseError> {
        let quoted = self.dialect.quote(&column.name);
        let c = self.conditions(&quoted);
        if self.leads_an_index(table, &column.name).await? {
            return self.date_range_by_index(table, &quoted, &c).await;
        }
        let mut sql = self.sql();
        sql.push("SELECT ");
        for cond in [&c.plausible, &c.before, &c.after] {
            let kept = format!("CASE WHEN {cond} THEN {quoted} END");
            sql.push(&self.dialect.text_expr(&format!("MIN({kept})")))
                .push(", ")
                .push(&self.dialect.text_expr(&format!("MAX({kept})")))
                .push(&format!(", COUNT({kept}), "));
        }
        sql.push("COUNT(*) FROM ");
        self.first_rows(&mut sql, table, &quoted, ROWS_READ_WITHOUT_INDEX + 1);
        let row = sql.query().fetch_one(&self.pool).await?;
        let read: i64 = row.try_get(9)?;
        let exact = read <= i64::from(ROWS_READ_WITHOUT_INDEX);
        let mut sides = Vec::new();
        for side in 0..3 {
            let least: Option<String> = row.try_get(side * 3)?;
            let greatest: Option<String> = row.try_get(side * 3 + 1)?;
            let rows: i64 = row.try_get(side * 3 + 2)?;
            sides.push((least.zip(greatest), rows));
        }
        let mut sides = sides.into_iter();
        let values = sides.next().and_then(|(values, _)| values);
        let placeholders = sides
            .zip([false, true])
            .filter_map(|((values, rows), after)| {
                let (least, greatest) = values?;
                Some(c.placeholders(after, least, greatest, rows, !exact))
            })
            .collect();
        Ok(DateRange {
            values,
            exact,
            placeholders,
        })
    }

    /// [`Warehouse::date_range_as_text`] through an index that begins with
    /// the column: a seek to each end of the plausible dates and to the
    /// outer end of the values beyond it; where there are some, a seek to
    /// their inner end and a count of their rows up to
    /// [`ROWS_READ_WITHOUT_INDEX`].
    async fn date_range_by_index(
        &self,
        table: &TableName,
        quoted: &str,
        c: &Conditions,
    ) -> Result<DateRange, WarehouseError> {
        let mut ends = [None, None];
        let mut placeholders = Vec::new();
        for (end, after) in ends.iter_mut().zip([false, true]) {
            let (outward, inward, beyond) = match after {
                false => ("ASC", "DESC", &c.before),
                true => ("DESC", "ASC", &c.after),
            };
            *end = self.seek(table, quoted, &c.plausible, outward).await?;
            let Some(outer) = self.seek(table, quoted, beyond, outward).await? else {
                continue;
            };
            let inner = self.seek(table, quoted, beyond, inward).await?;
            let inner = inner.unwrap_or_else(|| outer.clone());
            let mut sql = self.sql();
            sql.push("SELECT COUNT(*) FROM (SELECT 1 AS one FROM ")
                .table(table)
                .push(&format!(
                    " WHERE {beyond} LIMIT {}) AS beyond",
                    ROWS_READ_WITHOUT_INDEX + 1
                ));
            let rows: i64 = sql.query().fetch_one(&self.pool).await?.try_get(0)?;
            let counted = rows.min(i64::from(ROWS_READ_WITHOUT_INDEX));
            let (least, greatest) = if after {
                (inner, outer)
            } else {
                (outer, inner)
            };
            placeholders.push(c.placeholders(after, least, greatest, counted, rows > counted));
        }
        let [first, last] = ends;
        Ok(DateRange {
            values: first.zip(last),
            exact: true,
            placeholders,
        })
    }

    /// The value of `quoted` first in `order` among the rows where `cond`
    /// holds, as text: one seek where an index begins with the column.
    async fn seek(
        &self,
        table: &TableName,
        quoted: &str,
        cond: &str,
        order: &str,
    ) -> Result<Option<String>, WarehouseError> {
        let mut sql = self.sql();
        sql.push("SELECT ")
            .push(&self.dialect.text_expr(quoted))
            .push(" FROM ")
            .table(table)
            .push(&format!(" WHERE {cond} ORDER BY {quoted} {order} LIMIT 1"));
        Ok(match sql.query().fetch_optional(&self.pool).await? {
            Some(row) => row.try_get::<Option<String>, _>(0)?,
            None => None,
        })
    }

    /// Up to `n` of `column`'s plausible dates as text (as
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
        let plausible = self.conditions(&quoted).plausible;
        sql.push(&format!(" WHERE {plausible} LIMIT {n}"));
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

    /// How `idem init` sorts the values of the column `quoted`: no date,
    /// a plausible one (from [`FIRST_PLAUSIBLE_DATE`] to
    /// [`last_plausible`]), or one before or after those.
    fn conditions(&self, quoted: &str) -> Conditions {
        let real = self.real_date(quoted);
        let first = FIRST_PLAUSIBLE_DATE;
        let last = last_plausible(crate::clock::now().date_naive());
        let next = last.succ_opt().unwrap_or(last);
        Conditions {
            plausible: format!("{real} AND {quoted} >= '{first}' AND {quoted} < '{next}'"),
            before: format!("{real} AND {quoted} < '{first}'"),
            after: format!("{real} AND {quoted} >= '{next}'"),
            last_plausible: last,
        }
    }

    /// The condition that the column `quoted` holds a date at all. idem's own
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

impl Conditions {
    fn placeholders(
        &self,
        after: bool,
        least: String,
        greatest: String,
        rows: i64,
        at_least: bool,
    ) -> Placeholders {
        Placeholders {
            after,
            beyond: if after {
                self.last_plausible
            } else {
                FIRST_PLAUSIBLE_DATE
            },
            least,
            greatest,
            rows,
            at_least,
        }
    }
}
