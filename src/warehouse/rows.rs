//! Reads that bring back many rows: a job's ledger summed up per partition,
//! its row counts per partition. A ten-year hourly job has 87,600 of each.
//!
//! SQLite's driver runs each connection on a thread of its own and hands
//! every row to idem's runtime through a channel, one wake-up of the reading
//! task per row. For `idem status` of such a job (SQLite, 87,600 ledger
//! rows) that was most of its 1.25 s: thread switches, the driver's
//! conversion of each row to a generic one, and the allocator, with SQLite's
//! own work at 2 % of the profile. On SQLite such a read therefore comes
//! back in batches ([`Dialect::row_batches`]), each one text of JSON, and
//! idem takes the rows out of it; elsewhere each row is read as the driver
//! gives it. Either way the caller reads a row's cells by place and type
//! ([`Cells::get`]), so one decoder serves both.

use futures::TryStreamExt;
use serde_json::Value as Json;
use sqlx::any::AnyRow;
use sqlx::{Any, Row};

use super::sql::Sql;
use super::{Warehouse, WarehouseError};

/// One row of a read, as the driver gave it or out of a JSON batch.
#[derive(Clone, Copy)]
pub(super) enum Cells<'a> {
    Driver(&'a AnyRow),
    Json(&'a [Json]),
}

impl Cells<'_> {
    /// The cell at `index` (from 0) as a `T`.
    pub fn get<T: Cell>(&self, index: usize) -> Result<T, WarehouseError> {
        match self {
            Cells::Driver(row) => Ok(row.try_get::<T, _>(index)?),
            Cells::Json(cells) => cells.get(index).and_then(T::from_json).ok_or_else(|| {
                WarehouseError::Sql(sqlx::Error::ColumnDecode {
                    index: index.to_string(),
                    source: format!(
                        "expected {}, found {}",
                        std::any::type_name::<T>(),
                        cells
                            .get(index)
                            .map_or("no such cell".into(), Json::to_string)
                    )
                    .into(),
                })
            }),
        }
    }
}

/// A type a cell can be read as, from the driver or from JSON.
pub(super) trait Cell: Sized + for<'r> sqlx::Decode<'r, Any> + sqlx::Type<Any> {
    fn from_json(value: &Json) -> Option<Self>;
}

impl Cell for i64 {
    fn from_json(value: &Json) -> Option<i64> {
        value.as_i64()
    }
}

impl Cell for String {
    fn from_json(value: &Json) -> Option<String> {
        value.as_str().map(str::to_owned)
    }
}

impl<T: Cell> Cell for Option<T>
where
    Option<T>: for<'r> sqlx::Decode<'r, Any> + sqlx::Type<Any>,
{
    fn from_json(value: &Json) -> Option<Option<T>> {
        match value {
            Json::Null => Some(None),
            v => T::from_json(v).map(Some),
        }
    }
}

impl Warehouse {
    /// Runs `SELECT` `list` `rest` and hands each row to `each`. `list` is
    /// the select list alone (the query's outer level must not group: on
    /// SQLite it is wrapped to be read in batches); `rest` is everything
    /// after it, binds included.
    pub(super) async fn each_row(
        &self,
        list: impl FnOnce(&mut Sql),
        rest: impl FnOnce(&mut Sql),
        mut each: impl FnMut(Cells<'_>) -> Result<(), WarehouseError>,
    ) -> Result<(), WarehouseError> {
        let mut sql = self.sql();
        let Some([open, middle, close]) = self.dialect().row_batches() else {
            sql.push("SELECT ");
            list(&mut sql);
            rest(&mut sql);
            let mut conn = self.pooled().await?;
            let mut rows = sql.query().fetch(&mut *conn);
            while let Some(row) = rows.try_next().await? {
                each(Cells::Driver(&row))?;
            }
            return Ok(());
        };
        sql.push(open);
        list(&mut sql);
        sql.push(middle);
        rest(&mut sql);
        sql.push(close);
        let mut conn = self.pooled().await?;
        let mut batches = sql.query().fetch(&mut *conn);
        while let Some(batch) = batches.try_next().await? {
            let text: String = batch.try_get(0)?;
            let rows: Vec<Vec<Json>> = serde_json::from_str(&text)
                .map_err(|e| WarehouseError::Sql(sqlx::Error::Decode(Box::new(e))))?;
            for row in &rows {
                each(Cells::Json(row))?;
            }
        }
        Ok(())
    }
}

/// Each column of a row of [`Dialect::value_text`]s, as text.
pub(crate) fn text_columns(row: &AnyRow) -> Result<Vec<Option<String>>, sqlx::Error> {
    (0..row.len()).map(|i| text_column(row, i)).collect()
}

/// Column `i` of a row of [`super::Dialect::value_text`]s: text, or bytes (a
/// SQLite TEXT, which need not be UTF-8) as [`text_of_bytes`] writes them.
pub(crate) fn text_column(row: &AnyRow, i: usize) -> Result<Option<String>, sqlx::Error> {
    match row.try_get::<Option<String>, _>(i) {
        Err(sqlx::Error::ColumnDecode { .. }) => {
            let bytes = row.try_get::<Option<Vec<u8>>, _>(i)?;
            Ok(bytes.map(|b| text_of_bytes(&b)))
        }
        text => text,
    }
}

/// The text of a value read as bytes (a SQLite TEXT need not be UTF-8):
/// as it is where it is UTF-8, each byte that is not written `\xNN`.
fn text_of_bytes(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        for b in chunk.invalid() {
            text.push_str(&format!("\\x{b:02x}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::WarehouseConfig;
    use std::time::Duration;

    /// On SQLite, a read of 2,500 rows comes back in three batches: every
    /// row arrives once, with texts JSON must escape, NULLs, and numbers as
    /// they were (2^53 + 1 and beyond, which a double would round).
    #[tokio::test]
    async fn a_read_in_batches_brings_every_row_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let config = WarehouseConfig {
            url: format!("sqlite://{}/w.db?mode=rwc", dir.path().display()),
            statement_timeout: None,
            lock_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
        };
        let wh = Warehouse::connect(&config, 1).await.unwrap();
        assert!(wh.dialect().row_batches().is_some());
        let odd = "a \"quote\", a \\ backslash,\na newline, a\ttab, é ✗ \u{1} \u{7f}";
        let mut seen = Vec::new();
        wh.each_row(
            |sql| {
                sql.push("value, CASE WHEN value % 3 = 0 THEN NULL ELSE ")
                    .bind(odd)
                    .push(" || value END, -9007199254740993 - value");
            },
            |sql| {
                sql.push(
                    " FROM (WITH RECURSIVE s(value) AS (SELECT 1 UNION ALL \
                     SELECT value + 1 FROM s WHERE value < ",
                )
                .bind(2500i64)
                .push(") SELECT value FROM s)");
            },
            |row| {
                let n: i64 = row.get(0)?;
                seen.push((n, row.get::<Option<String>>(1)?, row.get::<i64>(2)?));
                Ok(())
            },
        )
        .await
        .unwrap();
        seen.sort();
        let expected: Vec<_> = (1..=2500i64)
            .map(|n| {
                let text = (n % 3 != 0).then(|| format!("{odd}{n}"));
                (n, text, -9007199254740993 - n)
            })
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn json_cells_read_as_their_types_and_refuse_others() {
        let row: Vec<Json> = serde_json::from_str(r#"["2026-06-04", 7, null, "x"]"#).unwrap();
        let cells = Cells::Json(&row);
        assert_eq!(cells.get::<String>(0).unwrap(), "2026-06-04");
        assert_eq!(cells.get::<i64>(1).unwrap(), 7);
        assert_eq!(cells.get::<Option<i64>>(1).unwrap(), Some(7));
        assert_eq!(cells.get::<Option<String>>(2).unwrap(), None);
        assert_eq!(cells.get::<Option<i64>>(2).unwrap(), None);
        // A NULL where a value must be, a text where a number must be, a
        // cell past the row's end: each is an error naming the cell.
        for error in [
            cells.get::<String>(2).unwrap_err(),
            cells.get::<i64>(3).unwrap_err(),
            cells.get::<Option<i64>>(0).unwrap_err(),
            cells.get::<String>(4).unwrap_err(),
        ] {
            assert!(error.to_string().contains("expected"), "{error}");
        }
    }
}
