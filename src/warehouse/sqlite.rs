//! SQLite: the embedded warehouse. `BEGIN IMMEDIATE` takes the database's write
//! lock up front, which serialises writers of every partition.

use chrono::{NaiveDate, NaiveDateTime, Timelike};

use super::columns::DescribeLimits;
use super::fingerprint::RowHash;
use super::ledger::ColumnTypes;
use super::sql::{Sql, Value};
use super::{Column, ColumnKind, Dialect, Engine, LockPlan, MatchForm, WholeTable};
use crate::config::{Ident, TableName};
use crate::partition::Grain;

pub struct Sqlite;

/// The database file a SQLite URL names, as written (None for an
/// in-memory database).
pub(crate) fn database_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let file = rest.split('?').next()?;
    (!file.is_empty() && file != ":memory:").then(|| std::path::PathBuf::from(file))
}

impl Dialect for Sqlite {
    fn engine(&self) -> Engine {
        Engine::Sqlite
    }

    /// An aggregate query reads at most 2,000 terms, each column one, and
    /// the two counts.
    fn match_form(&self, columns: usize) -> MatchForm {
        if 2 * columns + 2 > 2000 {
            MatchForm::Subquery
        } else {
            MatchForm::Join
        }
    }

    fn quote(&self, ident: &Ident) -> String {
        format!("\"{ident}\"")
    }

    fn placeholder(&self, _n: usize) -> String {
        "?".into()
    }

    fn instant_param(&self, placeholder: &str, _kind: ColumnKind) -> String {
        placeholder.into()
    }

    /// SQLite compares dates and timestamps as text, so a window of whole days
    /// is bound as a date (`2026-06-04`, which sorts before every time of that
    /// day) and an hour as a full timestamp.
    fn instant_value(&self, t: NaiveDateTime, grain: Grain) -> Value {
        Value::Text(
            if grain != Grain::Hour && t.num_seconds_from_midnight() == 0 {
                t.format("%Y-%m-%d").to_string()
            } else {
                t.format("%Y-%m-%d %H:%M:%S").to_string()
            },
        )
    }

    fn session_setup(&self) -> &'static [&'static str] {
        &["PRAGMA foreign_keys = ON"]
    }

    /// WAL lets the console read while a run writes. The switch is the
    /// file's, for good, and needs the database to itself: a file another
    /// program has open in a transaction (in a rollback journal mode)
    /// refuses it. A session asks once, without waiting (`session_timeouts`
    /// sets the wait after), and otherwise reads and loads in the mode the
    /// file has, rather than failing after a wait for that program.
    fn session_preferences(&self) -> &'static [&'static str] {
        &["PRAGMA busy_timeout = 0", "PRAGMA journal_mode = WAL"]
    }

    /// A writer waits up to `lock_timeout` for the database's write lock.
    /// SQLite has no statement timeout.
    fn session_timeouts(
        &self,
        lock: std::time::Duration,
        _statement: Option<std::time::Duration>,
    ) -> Vec<Sql> {
        let mut sql = Sql::new(&Sqlite);
        // PRAGMA takes no parameters; the number is idem's own, never input.
        sql.push(&format!("PRAGMA busy_timeout = {}", lock.as_millis()));
        vec![sql]
    }

    fn begin_statement(&self, _lock: &crate::warehouse::PartitionLock) -> Option<String> {
        Some("BEGIN IMMEDIATE".into())
    }

    fn lock_plan(&self) -> LockPlan {
        LockPlan::Begin
    }

    /// 1,000 rows a batch: one wake-up of the reading task instead of
    /// 1,000 (see `rows.rs`), and a batch small enough to parse at once.
    /// Each row's array is made inside the subquery and joined as text:
    /// an array aggregated from a subquery's column would lose its JSON
    /// subtype and be quoted as a string.
    fn row_batches(&self) -> Option<[&'static str; 3]> {
        Some([
            "SELECT '[' || group_concat(r, ',') || ']' FROM (SELECT json_array(",
            ") AS r, (row_number() OVER () - 1) / 1000 AS batch",
            ") GROUP BY batch",
        ])
    }

    fn ledger_types(&self) -> ColumnTypes {
        ColumnTypes {
            id: "INTEGER PRIMARY KEY AUTOINCREMENT",
            text: "TEXT",
            long_text: "TEXT",
            int: "INTEGER",
        }
    }

    fn ledger_table(&self) -> TableName {
        TableName {
            schema: None,
            name: Ident::from_static("idem_attempts"),
        }
    }

    fn index_exists_query(&self, sql: &mut Sql, table: &TableName, index: &Ident) {
        sql.push("SELECT 1 FROM sqlite_master WHERE type = 'index' AND tbl_name = ")
            .bind(table.name.as_str())
            .push(" AND name = ")
            .bind(index.as_str());
    }

    fn drop_index(&self, _table: &TableName, index: &Ident) -> String {
        format!("DROP INDEX {}", self.quote(index))
    }

    fn tables_query(&self, sql: &mut Sql) {
        sql.push(
            "SELECT CAST(NULL AS TEXT), name FROM sqlite_master \
             WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        );
    }

    /// An `INTEGER PRIMARY KEY` is the rowid and never NULL; any other
    /// column without NOT NULL accepts NULL, primary key or not.
    fn columns_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push("SELECT name, type, CASE WHEN \"notnull\" = 0 AND NOT (pk = 1 AND upper(type) = 'INTEGER') THEN 1 ELSE 0 END FROM pragma_table_info(")
            .bind(table.name.as_str());
        if let Some(schema) = &table.schema {
            sql.push(", ").bind(schema.as_str());
        }
        sql.push(") ORDER BY cid");
    }

    /// The name of the window whose bounds the value's text sorts between
    /// ([`text_bucket`]), not of the time SQLite reads the text as.
    fn partition_name_expr(&self, column: &str, grain: Grain) -> String {
        let format = grain.name_pattern();
        format!("strftime('{format}', {})", text_bucket(column, grain))
    }

    fn bucket_window(&self) -> Option<fn(&str, Grain) -> Option<String>> {
        Some(window_of_text)
    }

    /// Dates and timestamps are ISO text: a date column groups by itself,
    /// any other by [`text_bucket`].
    fn partition_bucket(&self, column: &str, grain: Grain, kind: ColumnKind) -> String {
        match (grain, kind) {
            (Grain::Day, ColumnKind::Date) => column.to_string(),
            _ => text_bucket(column, grain),
        }
    }

    /// SQLite tests a range on every row it reads, even where the index
    /// range already covers the whole table: a count over all of a
    /// 10M-row table took 0.45 s with the filter against 0.33 s without
    /// (`sqlite3`).
    fn whole_table(&self) -> WholeTable {
        WholeTable::AskedFirst
    }

    fn leading_index_query(&self, sql: &mut Sql, table: &TableName, column: &Ident) {
        let schema = table.schema.as_ref().map_or("main", |s| s.as_str());
        sql.push("SELECT COUNT(*) FROM pragma_index_list(")
            .bind(table.name.as_str())
            .push(", ")
            .bind(schema)
            .push(") l, pragma_index_info(l.name, ")
            .bind(schema)
            .push(") i WHERE l.partial = 0 AND i.seqno = 0 AND lower(i.name) = lower(")
            .bind(column.as_str())
            .push(")");
    }

    /// `data_version` of the database (not of one table): it moves when
    /// another connection commits, so it is read on a connection that never
    /// writes.
    fn change_signal_query(&self, sql: &mut Sql, _table: &TableName) {
        sql.push(
            "SELECT CAST(data_version AS TEXT), CAST(NULL AS INTEGER), CAST(NULL AS INTEGER), \
             CAST(NULL AS INTEGER), 1 FROM pragma_data_version",
        );
    }

    fn text_expr(&self, column: &str) -> String {
        format!("CAST({column} AS TEXT)")
    }

    /// A value by what it holds, whatever its column declares: a REAL's
    /// text has 15 digits, which two values may share (1 against 1 + 2^-52,
    /// both `1.0`), so one that does not read back as itself is written
    /// with 17; a BLOB as its `X'…'` literal; a TEXT as its bytes, which
    /// need not be UTF-8 (see [`super::rows::text_column`]).
    fn value_text(&self, column: &str, _type_name: &str) -> String {
        format!(
            "CASE typeof({column}) \
             WHEN 'real' THEN iif(CAST(CAST({column} AS TEXT) AS REAL) = {column}, \
             CAST({column} AS TEXT), printf('%!.17g', {column})) \
             WHEN 'blob' THEN quote({column}) \
             WHEN 'text' THEN CAST({column} AS BLOB) ELSE CAST({column} AS TEXT) END"
        )
    }

    /// SQLite has no hash function: the window's rows reach idem as one
    /// JSON array of row arrays, and idem hashes each row's JSON text. JSON
    /// keeps a value's kind (`1`, `"1"`, `null`). A BLOB, which JSON cannot
    /// hold, fails the plain read, and JSON writes a REAL to 15 digits only
    /// (0.1 + 0.2 as 0.3): a window holding either is read again with each
    /// such value `quote()`d (every digit, a BLOB as `X'…'`) in an array of
    /// its own, unlike any text, and every other value as the plain read
    /// writes it. Built straight on the table's columns, not through a
    /// subquery, where each row's array would lose its JSON subtype and be
    /// quoted again.
    ///
    /// A function takes at most 1,000 arguments: a row of more columns is
    /// an array of arrays of 1,000 (such a table never loaded before, so no
    /// fingerprint recorded of it changes).
    fn row_hash(&self, columns: &[(String, String)]) -> RowHash {
        const MOST_ARGUMENTS: usize = 1000;
        let row = |value: &dyn Fn(&str) -> String| {
            let values: Vec<String> = columns.iter().map(|(c, _)| value(c)).collect();
            let row = if values.len() <= MOST_ARGUMENTS {
                values.join(", ")
            } else {
                values
                    .chunks(MOST_ARGUMENTS)
                    .map(|chunk| format!("json_array({})", chunk.join(", ")))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            format!("json_array({row})")
        };
        let exact =
            row(&|c| format!("iif(typeof({c}) IN ('real', 'blob'), json_array(quote({c})), {c})"));
        // As bytes: a TEXT value need not be UTF-8, and its row hashes
        // as the bytes it holds (the same as its text when it is).
        RowHash::Json {
            plain: format!(
                "CAST(json_group_array({}) AS BLOB)",
                row(&|c| c.to_string())
            ),
            exact: format!("CAST(json_group_array({exact}) AS BLOB)"),
            each_row: format!("CAST({exact} AS BLOB)"),
        }
    }

    /// Byte for byte: under a column's `NOCASE`, 'alice' to 'Alice' would
    /// be no change, never written. And by storage class: `1` and `1.0`
    /// compare equal, but a column of no numeric affinity keeps either as
    /// given, and a reader sees which (the stage has the target's
    /// affinities, so a REAL column's `1` is `1.0` on both sides).
    fn differs(&self, a: &str, b: &str, _column: &Column) -> String {
        format!("({a} IS NOT {b} COLLATE BINARY OR typeof({a}) <> typeof({b}))")
    }

    fn create_stage(&self, stage: &Ident) -> String {
        format!("CREATE TEMP TABLE {} AS ", self.quote(stage))
    }

    fn drop_stage(&self, stage: &Ident) -> String {
        format!("DROP TABLE IF EXISTS temp.{}", self.quote(stage))
    }

    fn upsert(
        &self,
        target: &TableName,
        stage: &Ident,
        columns: &[Column],
        keys: &[Ident],
    ) -> String {
        let q = |c: &Ident| self.quote(c);
        let cols = self.column_list(columns);
        let key_cols = keys.iter().map(q).collect::<Vec<_>>().join(", ");
        let target_name = self.quote(&target.name);
        // Every column, keys among them: a key matched under NOCASE or
        // RTRIM may be spelled otherwise, and takes the source's spelling.
        let set = columns
            .iter()
            .map(|c| format!("{0} = excluded.{0}", q(&c.name)))
            .collect::<Vec<_>>()
            .join(", ");
        let changed = self.any_differs(&target_name, "excluded", columns);
        let action = format!("DO UPDATE SET {set} WHERE {changed}");
        format!(
            "INSERT INTO {} ({cols}) SELECT {cols} FROM {} WHERE true ON CONFLICT ({key_cols}) {action}",
            self.quote_table(target),
            self.quote(stage)
        )
    }

    /// `SQLITE_BUSY` once `busy_timeout` has passed.
    fn lock_refused(&self, err: &dyn sqlx::error::DatabaseError) -> bool {
        err.code().as_deref() == Some("5") || err.message().contains("database is locked")
    }

    fn is_transient(&self, err: &sqlx::Error) -> bool {
        match err {
            // Busy (the lock), or locked within the database, or busy
            // recovering or snapshotting.
            sqlx::Error::Database(db) => {
                self.lock_refused(&**db)
                    || matches!(db.code().as_deref(), Some("6" | "261" | "517"))
            }
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut => true,
            _ => false,
        }
    }

    /// `INTEGER PRIMARY KEY` is the rowid and has no index of its own, so the
    /// primary key comes from `pragma_table_info`; unique constraints and
    /// indexes (and composite primary keys) from `pragma_index_list`.
    /// Keys SQLite enforces: idem's sessions turn `foreign_keys` on.
    fn references_query(&self, sql: &mut Sql, table: &TableName) -> bool {
        sql.push(
            "SELECT CAST(p.\"from\" AS TEXT), CAST(m.name AS TEXT), CAST(p.on_delete AS TEXT) \
             FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) p \
             WHERE m.type = 'table' AND p.\"table\" = ",
        )
        .bind(table.name.as_str())
        .push(" COLLATE NOCASE");
        true
    }

    fn key_collations_query(&self, sql: &mut Sql, table: &TableName) -> bool {
        let schema = |sql: &mut Sql| {
            if let Some(schema) = &table.schema {
                sql.push(", ").bind(schema.as_str());
            }
        };
        sql.push("SELECT CAST(il.name AS TEXT), CAST(ii.name AS TEXT), CAST(ii.coll AS TEXT) FROM pragma_index_list(")
            .bind(table.name.as_str());
        schema(sql);
        sql.push(") AS il JOIN pragma_index_xinfo(il.name");
        schema(sql);
        sql.push(") AS ii WHERE il.\"unique\" = 1 AND il.partial = 0 AND ii.key = 1");
        true
    }

    fn unique_key_sets_query(&self, sql: &mut Sql, table: &TableName) {
        let schema = |sql: &mut Sql| {
            if let Some(schema) = &table.schema {
                sql.push(", ").bind(schema.as_str());
            }
        };
        sql.push("SELECT CAST(")
            .bind("primary key")
            .push(" AS TEXT), CAST(name AS TEXT) FROM pragma_table_info(")
            .bind(table.name.as_str());
        schema(sql);
        sql.push(") WHERE pk > 0 UNION ALL SELECT CAST(il.name AS TEXT), CAST(ii.name AS TEXT) FROM pragma_index_list(")
            .bind(table.name.as_str());
        schema(sql);
        sql.push(") AS il JOIN pragma_index_info(il.name");
        schema(sql);
        sql.push(") AS ii WHERE il.\"unique\" = 1 AND il.partial = 0");
    }
}

/// Output column names of a SELECT, from the driver's own prepare.
pub(super) async fn describe(
    url: &str,
    select: &str,
    limits: DescribeLimits,
) -> Result<Vec<String>, sqlx::Error> {
    use sqlx::{Column, Connection, Executor, SqlSafeStr, Statement};
    let mut conn = limits
        .connect(sqlx::sqlite::SqliteConnection::connect(url))
        .await?;
    let names = conn
        .prepare(sqlx::AssertSqlSafe(select.to_string()).into_sql_str())
        .await?
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    let _ = conn.close().await;
    Ok(names)
}

/// The first bound of the window (of `grain`) that a text value sorts into
/// as a load's window takes it, its bounds bound as text (`YYYY-MM-DD`, an
/// hour `YYYY-MM-DD HH:00:00`), written as those bounds are, so that it is
/// its own bucket. Not SQLite's reading of the text as a time: `…
/// 05:30+02:00` lies in hour 05 as written; `… 05:00` (no seconds) sorts
/// before 05's bound, so in hour 04; a bare date in the day before's last
/// hour; `…T05:30` (a `T` sorts after every bound of its day) in its own
/// day's last; a month written `2026-03` in February. `idem lint` names
/// such values.
///
/// A value that does not begin with a date as bounds are written
/// (`2026-1-5`, `2026-09`) is its own bucket (a day's, its first ten
/// characters): it is not named in SQL ([`window_of_text`] names it).
fn text_bucket(column: &str, grain: Grain) -> String {
    let c = column;
    let bucket = match grain {
        // A bound of a day is a date's ten characters: how the text sorts
        // among them is how its first ten do, which name a day when they
        // are a date and are [`window_of_text`]'s otherwise. No test per
        // row (a GLOB cost a quarter more on 2M rows, `sqlite3`).
        Grain::Day => return format!("substr({c}, 1, 10)"),
        Grain::Month => format!(
            "CASE WHEN length({c}) >= 10 THEN substr({c}, 1, 7) || '-01' \
             ELSE strftime('%Y-%m-01', substr({c}, 1, 7) || '-01', '-1 month') END"
        ),
        Grain::Hour => format!(
            "CASE WHEN length({c}) <= 10 THEN strftime('%Y-%m-%d %H:00:00', {c}, '-1 hour') \
             WHEN substr({c}, 11, 1) <> ' ' THEN substr({c}, 1, 10) || ' 23:00:00' \
             WHEN {c} >= substr({c}, 1, 13) || ':00:00' THEN substr({c}, 1, 13) || ':00:00' \
             ELSE strftime('%Y-%m-%d %H:00:00', substr({c}, 1, 13) || ':00', '-1 hour') END"
        ),
    };
    format!("CASE WHEN {c} GLOB '{DATE_GLOB}' THEN {bucket} ELSE {c} END")
}

/// A text value that begins with a date written as window bounds are
/// (`YYYY-MM-DD`), as a `GLOB` pattern.
pub const DATE_GLOB: &str = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*";

/// The name of the window (of `grain`) whose bounds, bound as text as
/// [`Sqlite::instant_value`] writes them, `text` sorts between, as a load's
/// DELETE and window check compare it: `2026-1-5` lies in day 2026-09-30
/// (after `2026-09-30`, before `2026-10-01`), `2026-09` in 2026-08-31. None
/// for text before the first window of year 1; text after every bound lies
/// in the last window of year 9999.
fn window_of_text(text: &str, grain: Grain) -> Option<String> {
    let first = NaiveDate::from_ymd_opt(1, 1, 1)?.and_time(chrono::NaiveTime::MIN);
    let last = NaiveDate::from_ymd_opt(9999, 12, 31)?.and_time(chrono::NaiveTime::MIN);
    let start = |i: i64| -> Option<NaiveDateTime> {
        match grain {
            Grain::Hour => first.checked_add_signed(chrono::Duration::hours(i)),
            Grain::Day => first.checked_add_signed(chrono::Duration::days(i)),
            Grain::Month => first.checked_add_months(chrono::Months::new(u32::try_from(i).ok()?)),
        }
    };
    let bound = |i: i64| start(i).map(|t| Sqlite.instant_value(t, grain));
    let below = |i: i64| matches!(bound(i), Some(Value::Text(b)) if b.as_str() <= text);
    let mut hi = match grain {
        Grain::Hour => (last - first).num_hours(),
        Grain::Day => (last - first).num_days(),
        Grain::Month => 9999 * 12 - 1,
    };
    if !below(0) {
        return None;
    }
    // The last window whose first bound sorts at or before the text.
    let mut lo = 0;
    while lo < hi {
        let mid = lo + (hi - lo + 1) / 2;
        if below(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(start(lo)?.format(grain.name_pattern()).to_string())
}

#[cfg(test)]
mod tests {
    use super::window_of_text;
    use crate::partition::Grain;

    #[test]
    fn text_lies_in_the_window_it_sorts_into() {
        let day = |t: &str| window_of_text(t, Grain::Day);
        assert_eq!(day("2026-1-5").as_deref(), Some("2026-09-30"));
        assert_eq!(day("2026-09").as_deref(), Some("2026-08-31"));
        assert_eq!(day("2026-09-30").as_deref(), Some("2026-09-30"));
        assert_eq!(day(" 2026-09-30"), None, "a space sorts before every bound");
        assert_eq!(
            day("x").as_deref(),
            Some("9999-12-31"),
            "a letter sorts after every bound"
        );
        let hour = |t: &str| window_of_text(t, Grain::Hour);
        // '5' sorts after the '2' of 23:00:00.
        assert_eq!(hour("2026-09-30 5:00").as_deref(), Some("2026-09-30T23"));
        assert_eq!(hour("2026-09-30").as_deref(), Some("2026-09-29T23"));
        let month = |t: &str| window_of_text(t, Grain::Month);
        assert_eq!(month("2026-1").as_deref(), Some("2026-09"));
        assert_eq!(month("2026-03").as_deref(), Some("2026-02"));
    }
}
