//! A table's columns with their declared types, and which of them can hold a
//! partition's window: the bounds `:start`/`:end` compare with them as dates
//! or timestamps. Also a job SELECT's output columns, as the target columns
//! they fill; and the column sets its primary key and unique indexes make
//! unique.

use std::time::Duration;

use sqlx::Row;

use super::{Engine, Warehouse, WarehouseError, mysql, postgres, sqlite};
use crate::config::{Ident, Job, TableName};
use crate::partition::Partition;

/// One column of a table as the warehouse declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// Its name; a column whose name is not a plain identifier is left out
    /// of [`Warehouse::columns`], as idem quotes only plain names.
    pub name: Ident,
    /// The declared type, as the engine spells it (`date`, `timestamp
    /// without time zone`, `datetime`, `TEXT`, `integer`…).
    pub type_name: String,
    /// The column accepts NULL.
    pub nullable: bool,
}

impl Column {
    /// What the column holds on `engine`, as window bounds compare with it
    /// ([`ColumnKind::of_type_name`]).
    pub fn kind(&self, engine: Engine) -> ColumnKind {
        ColumnKind::of_type_name(&self.type_name, engine)
    }

    /// Why the job's SELECT column `name`, this column of `table` but for
    /// case, cannot fill it on PostgreSQL (see [`names_column`]).
    pub fn case_misfit(&self, name: &str, table: &TableName) -> String {
        case_misfit(name, &self.name, table)
    }

    /// A date or a timestamp, not a range of them (PostgreSQL's
    /// `daterange` also begins with "date", and has no `min()`).
    pub fn holds_instants(&self, engine: Engine) -> bool {
        let t = self.type_name.trim().to_ascii_lowercase();
        match engine {
            Engine::Sqlite => {
                t.is_empty()
                    || ["date", "time", "text", "char", "clob"]
                        .iter()
                        .any(|word| t.contains(word))
            }
            Engine::Postgres | Engine::MySql => {
                t == "date" || t.starts_with("datetime") || t.starts_with("timestamp")
            }
        }
    }
}

/// What a partition column holds, as far as comparing it with a window's
/// boundaries and grouping it by partition care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Date,
    Timestamp,
    /// An instant, whatever zone wrote it, read and compared in the
    /// session's time zone, which idem sets to UTC: PostgreSQL's
    /// `timestamptz`, and MariaDB's and MySQL's `TIMESTAMP` (stored in UTC,
    /// shown in the session's zone).
    TimestampTz,
    /// Anything else (text dates, or a type idem does not know).
    Other,
}

impl ColumnKind {
    /// The kind of a column of `engine` from its type name as the catalogue
    /// spells it (`date`, `timestamp without time zone`, `datetime`,
    /// SQLite's declared `DATE`, …). SQLite has no date type: dates live
    /// there as ISO text (`TEXT`, `DATE`, `DATETIME`, `TIMESTAMP` or no
    /// declared type), compared as written whatever the declared type
    /// says of a zone.
    pub fn of_type_name(type_name: &str, engine: Engine) -> ColumnKind {
        let t = type_name.trim().to_ascii_lowercase();
        let zoned = match engine {
            Engine::Postgres => {
                t.contains("with time zone") && !t.contains("without") || t == "timestamptz"
            }
            Engine::MySql => t.starts_with("timestamp"),
            Engine::Sqlite => false,
        };
        if zoned {
            ColumnKind::TimestampTz
        } else if t == "date" {
            ColumnKind::Date
        } else if t.starts_with("timestamp") || t.starts_with("datetime") {
            ColumnKind::Timestamp
        } else {
            ColumnKind::Other
        }
    }

    /// `partition`'s window as log lines and errors write it for a column
    /// of this kind: `[2026-11-02 10:00:00 UTC, 2026-11-02 11:00:00 UTC)`
    /// on a zoned column, whose values in it are those instants (QA:
    /// unmarked, an operator whose session runs in New York read them as
    /// local times). A date's or a timestamp's values without a zone are
    /// compared as written, in no zone: its bounds are written so.
    pub fn bounds(self, partition: &Partition) -> String {
        let zone = match self {
            ColumnKind::TimestampTz => " UTC",
            ColumnKind::Date | ColumnKind::Timestamp | ColumnKind::Other => "",
        };
        format!("[{}{zone}, {}{zone})", partition.start, partition.end())
    }
}

impl Warehouse {
    /// The column sets (lower-cased) that the table's primary key and unique
    /// indexes make unique, for checking a merge job's `unique_key`.
    pub async fn unique_key_sets(
        &self,
        table: &TableName,
    ) -> Result<Vec<Vec<String>>, WarehouseError> {
        let mut sql = self.sql();
        self.dialect().unique_key_sets_query(&mut sql, table);
        let rows = sql.query().fetch_all(&mut *self.pooled().await?).await?;
        // An index with a column the query cannot name (an expression part)
        // does not make a plain column set unique.
        let mut sets: Vec<(String, Option<Vec<String>>)> = Vec::new();
        for row in rows {
            let index: String = row.try_get(0)?;
            let column: Option<String> = row.try_get(1)?;
            let at = match sets.iter().position(|(name, _)| *name == index) {
                Some(at) => at,
                None => {
                    sets.push((index, Some(Vec::new())));
                    sets.len() - 1
                }
            };
            let entry = &mut sets[at].1;
            match (column, entry.as_mut()) {
                (Some(c), Some(cols)) => {
                    let c = c.to_lowercase();
                    if !cols.contains(&c) {
                        cols.push(c);
                    }
                }
                _ => *entry = None,
            }
        }
        Ok(sets
            .into_iter()
            .filter_map(|(_, cols)| cols)
            .filter(|cols| !cols.is_empty())
            .collect())
    }

    /// The tables of the warehouse a job could write, idem's ledger left out.
    pub async fn tables(&self) -> Result<Vec<TableName>, WarehouseError> {
        let mut sql = self.sql();
        self.dialect.tables_query(&mut sql);
        // Without schemas, idem's own tables are named `idem_…`.
        let ledger_by_prefix = self.dialect.ledger_table().schema.is_none();
        let mut tables = Vec::new();
        for row in sql.query().fetch_all(&self.pool).await? {
            let schema: Option<String> = row.try_get(0)?;
            let name: String = row.try_get(1)?;
            if ledger_by_prefix && name.starts_with("idem_") {
                continue;
            }
            let text = match schema {
                Some(schema) => format!("{schema}.{name}"),
                None => name,
            };
            // A name idem could not quote safely is not offered.
            if let Ok(table) = TableName::parse(&text) {
                tables.push(table);
            }
        }
        Ok(tables)
    }

    /// The smallest value of a column, as text (`None` for an empty table).
    pub async fn min_as_text(
        &self,
        table: &TableName,
        column: &Ident,
    ) -> Result<Option<String>, WarehouseError> {
        let mut sql = self.sql();
        let quoted = self.dialect.quote(column);
        sql.push("SELECT ")
            .push(&self.dialect.text_expr(&format!("MIN({quoted})")))
            .push(" FROM ")
            .table(table);
        Ok(sql.query().fetch_one(&self.pool).await?.try_get(0)?)
    }

    /// The columns of a table with their declared types, in order.
    pub async fn columns(&self, table: &TableName) -> Result<Vec<Column>, WarehouseError> {
        self.columns_on(&self.pool, table).await
    }

    /// [`Warehouse::columns`], read through `executor`.
    pub(super) async fn columns_on<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = sqlx::Any>,
        table: &TableName,
    ) -> Result<Vec<Column>, WarehouseError> {
        Ok(self.all_columns_on(executor, table).await?.0)
    }

    /// The names of the columns of `table` that are not plain identifiers,
    /// which [`Warehouse::columns`] leaves out (a run refuses such a target).
    pub async fn columns_not_plain(
        &self,
        table: &TableName,
    ) -> Result<Vec<String>, WarehouseError> {
        Ok(self.all_columns_on(&self.pool, table).await?.1)
    }

    /// [`Warehouse::columns`], read through `executor`, and the names of
    /// those left out: not plain identifiers (`unit price`, `Größe`), which
    /// idem names in no statement it writes.
    pub(super) async fn all_columns_on<'e>(
        &self,
        executor: impl sqlx::Executor<'e, Database = sqlx::Any>,
        table: &TableName,
    ) -> Result<(Vec<Column>, Vec<String>), WarehouseError> {
        let mut sql = self.sql();
        self.dialect.columns_query(&mut sql, table);
        let mut columns = Vec::new();
        let mut odd = Vec::new();
        for row in sql.query().fetch_all(executor).await? {
            let text: String = row.try_get(0)?;
            let Ok(name) = Ident::parse(&text) else {
                odd.push(text);
                continue;
            };
            columns.push(Column {
                name,
                type_name: row.try_get::<Option<String>, _>(1)?.unwrap_or_default(),
                nullable: row.try_get::<i64, _>(2)? == 1,
            });
        }
        if columns.is_empty() && odd.is_empty() {
            return Err(WarehouseError::NoTarget {
                table: table.to_string(),
                alike: self.tables_alike(table).await,
            });
        }
        Ok((columns, odd))
    }

    /// The tables `table` names but for case, or but for its schema: what
    /// an operator who wrote it most likely meant. Empty when the catalogue
    /// cannot be read.
    async fn tables_alike(&self, table: &TableName) -> Vec<String> {
        let Ok(tables) = self.tables().await else {
            return Vec::new();
        };
        let same = |a: &Ident, b: &Ident| a.as_str().eq_ignore_ascii_case(b.as_str());
        let mut alike: Vec<String> = tables
            .iter()
            .filter(|t| {
                same(&t.name, &table.name)
                    && match (&t.schema, &table.schema) {
                        (Some(a), Some(b)) => same(a, b),
                        _ => true,
                    }
            })
            .map(|t| t.to_string())
            .collect();
        if alike.is_empty() {
            alike = tables
                .iter()
                .filter(|t| same(&t.name, &table.name))
                .map(|t| t.to_string())
                .collect();
        }
        alike.retain(|t| *t != table.to_string());
        alike.truncate(5);
        alike
    }

    /// The output column names of a SELECT, without running it. The engine's
    /// own driver describes it: the generic driver cannot map every column type.
    pub async fn output_columns(&self, select: &str) -> Result<Vec<String>, WarehouseError> {
        if let Some(names) = self
            .described
            .lock()
            .ok()
            .and_then(|m| m.get(select).cloned())
        {
            return Ok(names);
        }
        let url = &self.config.url;
        let limits = DescribeLimits {
            connect: self.config.connect_timeout,
            lock: self.config.lock_timeout,
        };
        // Its connection takes its turn with the pool's.
        let described = self
            .beside_the_pool(|| async {
                match self.dialect.engine() {
                    Engine::Sqlite => sqlite::describe(url, select, limits).await,
                    Engine::Postgres => postgres::describe(url, select, limits).await,
                    Engine::MySql => mysql::describe(url, select, limits).await,
                }
            })
            .await;
        let names = described?;
        if let Ok(mut m) = self.described.lock() {
            m.insert(select.to_string(), names.clone());
        }
        Ok(names)
    }

    /// The output column names of the job's SELECT, as the engine's driver
    /// describes it (once per process: the text is the same for every
    /// partition, its bounds being parameters). A run asks for them while
    /// it reads the states, so that the describe's own connection opens
    /// beside that read rather than before the first load.
    pub async fn job_output_columns(
        &self,
        job: &Job,
        partition: &Partition,
    ) -> Result<Vec<String>, WarehouseError> {
        let mut sql = self.sql();
        sql.push("SELECT * FROM (");
        sql.job_sql(&job.sql, partition)?;
        sql.push(") src");
        // The warehouse rejecting the SELECT (a table or column it reads is
        // not there, a syntax error) rejects it for every partition alike:
        // its bounds are parameters, its text the same.
        self.output_columns(sql.text()).await.map_err(|e| match e {
            WarehouseError::Sql(ref err @ sqlx::Error::Database(_))
                if !self.dialect.is_transient(err)
                    && super::connection_limit::refusal(err).is_none() =>
            {
                WarehouseError::Misfit(e.to_string())
            }
            e => e,
        })
    }
}

/// What [`WarehouseError::NoTarget`] adds when the warehouse has tables of
/// the name but for case or schema.
pub fn alike_tables(alike: &[String]) -> String {
    match alike {
        [] => String::new(),
        [one] => format!(
            "; the warehouse has {one}: idem quotes a name as written, so it must match the table's own, case and schema; write target = \"{one}\""
        ),
        many => format!(
            "; the warehouse has {}: idem quotes a name as written, so it must match the table's own, case and schema",
            many.join(", ")
        ),
    }
}

/// What bounds the waits of a describe's own connection: its connect, as
/// the pool's, and its locks, as the sessions' `lock_timeout`.
#[derive(Clone, Copy)]
pub(super) struct DescribeLimits {
    pub connect: Duration,
    pub lock: Duration,
}

impl DescribeLimits {
    /// `connect`, given up after the connect timeout as the pool gives up.
    pub async fn connect<C>(
        self,
        connect: impl std::future::Future<Output = Result<C, sqlx::Error>>,
    ) -> Result<C, sqlx::Error> {
        tokio::time::timeout(self.connect, connect)
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
    }
}

/// Whether `name`, quoted as idem quotes every name, names the column
/// `column` on `engine`: PostgreSQL matches a quoted name by case,
/// MariaDB/MySQL and SQLite match column names whatever their case (SQLite
/// knows the case of ASCII letters only: `MONTÖ` does not name `montö`).
pub fn names_column(name: &str, column: &str, engine: Engine) -> bool {
    column == name
        || match engine {
            Engine::Postgres => false,
            Engine::Sqlite => column.eq_ignore_ascii_case(name),
            Engine::MySql => column.to_lowercase() == name.to_lowercase(),
        }
}

/// The column of `columns` (`table`'s) that a job's partition column
/// `name` names on `engine`, or the misfit that says how to write it.
pub(super) fn partition_column<'c>(
    columns: &'c [Column],
    name: &Ident,
    table: &TableName,
    engine: Engine,
) -> Result<&'c Column, WarehouseError> {
    columns
        .iter()
        .find(|c| names_column(name.as_str(), c.name.as_str(), engine))
        .ok_or_else(|| {
            let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            WarehouseError::Misfit(no_such_column(
                "partition_column",
                name.as_str(),
                table,
                &names,
            ))
        })
}

/// Why a job's `field` (`partition_column`, `unique_key`) names none of
/// `table`'s `columns` ([`names_column`]): the column it names but for
/// case, and how to write it, or else the columns there are.
pub fn no_such_column(field: &str, name: &str, table: &TableName, columns: &[&str]) -> String {
    match columns.iter().find(|c| c.eq_ignore_ascii_case(name)) {
        Some(alike) => format!(
            "{field} \"{name}\" is not a column of {table}, but \"{alike}\" is: idem quotes a name as written, and PostgreSQL then matches it by case; write \"{alike}\" in {field}"
        ),
        None => format!(
            "{field} \"{name}\" is not a column of {table} (its columns: {})",
            columns.join(", ")
        ),
    }
}

/// Why a SELECT column spelled `name` cannot fill `table`'s column
/// `column`, which differs from it only by case (PostgreSQL).
fn case_misfit(name: &str, column: &Ident, table: &TableName) -> String {
    format!(
        "column \"{name}\" of the job's SELECT differs from column \"{column}\" of {table} only by case: PostgreSQL matches quoted names by case, so the load could not read \"{column}\" from the SELECT; alias it as {column} (or leave it unquoted)"
    )
}

/// Why a merge's upsert would match a row by something other than its
/// `unique_key`, on an engine whose upsert matches by any unique index
/// (MariaDB/MySQL's `ON DUPLICATE KEY UPDATE`): no unique index is the key
/// itself (a row of a new key colliding on a wider one is counted as an
/// update), or [`other_unique_index`]. `sets`: the target's unique column
/// sets, lower-cased; `written`: the target columns the job fills.
pub(super) fn upsert_misfit(job: &Job, sets: &[Vec<String>], written: &[Ident]) -> Option<String> {
    let key = lower_key(job);
    if !key_has_index(job, sets) {
        return Some(format!(
            "no primary key or unique index of {} is ({}) alone: INSERT … ON DUPLICATE KEY UPDATE matches rows by the table's own unique indexes, so a new key could update another key's row, or be counted as an update; add one: create unique index on {} ({})",
            job.target,
            key.join(", "),
            job.target,
            key.join(", ")
        ));
    }
    other_unique_index(job, sets, written).map(|why| format!("{why}; {OTHER_INDEX_ADVICE}"))
}

/// What to do about [`other_unique_index`].
pub const OTHER_INDEX_ADVICE: &str =
    "drop that index or make it part of unique_key, or load with replace_partition";

/// A unique column set of the target that the job writes whole and that
/// does not hold the merge's `unique_key`: where the upsert matches by any
/// unique index, a source row whose values there another key's row holds
/// overwrites that row.
pub fn other_unique_index(job: &Job, sets: &[Vec<String>], written: &[Ident]) -> Option<String> {
    let key = lower_key(job);
    let written: Vec<String> = written.iter().map(|c| c.as_str().to_lowercase()).collect();
    let other = sets
        .iter()
        .find(|set| !holds(set, &key) && set.iter().all(|c| written.contains(c)))?;
    Some(format!(
        "{} has a unique index on ({}) besides unique_key ({}): INSERT … ON DUPLICATE KEY UPDATE matches a row by any unique index, so a source row whose ({}) another key's row holds would overwrite that row",
        job.target,
        other.join(", "),
        key.join(", "),
        other.join(", ")
    ))
}

/// Whether one of the target's unique column sets is the merge's
/// `unique_key` itself.
pub fn key_has_index(job: &Job, sets: &[Vec<String>]) -> bool {
    let key = lower_key(job);
    sets.iter()
        .any(|set| set.len() == key.len() && holds(set, &key))
}

fn lower_key(job: &Job) -> Vec<String> {
    job.unique_key
        .iter()
        .map(|k| k.as_str().to_lowercase())
        .collect()
}

fn holds(set: &[String], key: &[String]) -> bool {
    key.iter().all(|k| set.contains(k))
}

/// The job's output columns, checked against the target's.
pub(super) async fn select_columns(
    warehouse: &Warehouse,
    job: &Job,
    partition: &Partition,
    target_columns: &[Ident],
) -> Result<Vec<Ident>, WarehouseError> {
    let names = warehouse.job_output_columns(job, partition).await?;
    let engine = warehouse.dialect().engine();
    let mut columns = Vec::new();
    for name in &names {
        // The column the SELECT names as the engine reads names, before
        // one named but for case (PostgreSQL's `a` beside `A`).
        let Some(target) = target_columns
            .iter()
            .find(|t| names_column(t.as_str(), name, engine))
            .or_else(|| {
                target_columns
                    .iter()
                    .find(|t| t.as_str().eq_ignore_ascii_case(name))
            })
        else {
            if let Some(first) = renamed_duplicate(name, &names) {
                return Err(WarehouseError::Misfit(format!(
                    "the job's SELECT returns two columns named {first} (in any case, as SQLite matches names; it calls the second \"{name}\"): each target column is filled by one SELECT column, so give each its own name"
                )));
            }
            let names: Vec<&str> = target_columns.iter().map(Ident::as_str).collect();
            return Err(WarehouseError::Misfit(format!(
                "column \"{name}\" of the job's SELECT is not a column of {} (its columns: {})",
                job.target,
                names.join(", ")
            )));
        };
        // The load reads `src."target"`: on PostgreSQL that names the
        // SELECT's column only if spelled as the SELECT spells it.
        if !names_column(target.as_str(), name, engine) {
            return Err(WarehouseError::Misfit(case_misfit(
                name,
                target,
                &job.target,
            )));
        }
        columns.push(target.clone());
    }
    for key in &job.unique_key {
        let named = |c: &Ident| names_column(key.as_str(), c.as_str(), engine);
        if !columns.iter().any(named) {
            let names: Vec<&str> = target_columns.iter().map(Ident::as_str).collect();
            return Err(WarehouseError::Misfit(
                if target_columns.iter().any(named) {
                    format!("unique_key column \"{key}\" is not among the job's SELECT columns")
                } else {
                    no_such_column("unique_key", key.as_str(), &job.target, &names)
                },
            ));
        }
    }
    Ok(columns)
}

/// Why a load into `table` is refused when some of its columns have names
/// idem cannot write (`odd`, not plain identifiers): its statements could
/// not name them, and a fingerprint without them would miss their changes.
pub(super) fn odd_columns_misfit(table: &TableName, odd: &[String]) -> Option<String> {
    let first = odd.first()?;
    Some(format!(
        "column \"{first}\" of {table} is not a plain identifier (ASCII letters, digits and _, not beginning with a digit){}: idem names every column of a target in the statements it writes and in its fingerprints, and cannot name this one; nothing was written. Rename the column, or load a view of {table} that names it plainly",
        match odd.len() {
            1 => String::new(),
            n => format!(", nor are {} other{}", n - 1, if n == 2 { "" } else { "s" }),
        }
    ))
}

/// SQLite names a SELECT's second column of a name (in any case) `name:1`:
/// the first of that name, where `name` is such a renaming.
pub fn renamed_duplicate<'a>(name: &str, names: &'a [String]) -> Option<&'a str> {
    let (base, n) = name.rsplit_once(':')?;
    if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    names
        .iter()
        .find(|other| other.eq_ignore_ascii_case(base))
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(type_name: &str) -> Column {
        Column {
            name: Ident::from_static("dt"),
            type_name: type_name.into(),
            nullable: true,
        }
    }

    #[test]
    fn a_name_sqlite_gave_a_second_column_is_told_apart() {
        let names: Vec<String> = ["id", "v", "V:1", "dt"].map(String::from).into();
        assert_eq!(renamed_duplicate("V:1", &names), Some("v"));
        assert_eq!(renamed_duplicate("a:b", &names), None);
        assert_eq!(renamed_duplicate("x:1", &names), None);
    }

    /// As each server was seen to match a name beyond ASCII: MariaDB in
    /// any case, SQLite only where ASCII letters differ, PostgreSQL exactly.
    #[test]
    fn names_match_as_each_engine_matches_them() {
        assert!(names_column("MONTÖ", "montö", Engine::MySql));
        assert!(!names_column("MONTÖ", "montö", Engine::Sqlite));
        assert!(names_column("MONTö", "montö", Engine::Sqlite));
        assert!(!names_column("Montö", "montö", Engine::Postgres));
        assert!(names_column("montö", "montö", Engine::Postgres));
    }

    /// QA: MariaDB's `TIMESTAMP` holds instants, stored in UTC and read in
    /// the session's zone (idem's is UTC), but was taken for a timestamp
    /// without a zone: its window's bounds went unmarked. SQLite compares
    /// text as written, whatever its declared type says.
    #[test]
    fn a_zoned_column_is_told_as_its_engine_stores_it() {
        use ColumnKind::{Date, Timestamp, TimestampTz};
        for (type_name, engine, kind) in [
            ("timestamp with time zone", Engine::Postgres, TimestampTz),
            ("timestamp without time zone", Engine::Postgres, Timestamp),
            ("date", Engine::Postgres, Date),
            ("timestamp", Engine::MySql, TimestampTz),
            ("datetime", Engine::MySql, Timestamp),
            ("date", Engine::MySql, Date),
            ("TIMESTAMPTZ", Engine::Sqlite, Timestamp),
            ("DATETIME", Engine::Sqlite, Timestamp),
        ] {
            assert_eq!(
                column(type_name).kind(engine),
                kind,
                "{type_name} on {engine:?}"
            );
        }
    }

    #[test]
    fn dates_and_timestamps_hold_instants() {
        for t in [
            "date",
            "timestamp without time zone",
            "timestamp with time zone",
        ] {
            assert!(column(t).holds_instants(Engine::Postgres), "{t}");
        }
        for t in [
            "integer",
            "text",
            "character varying",
            "time without time zone",
            "daterange",
            "datemultirange",
        ] {
            assert!(!column(t).holds_instants(Engine::Postgres), "{t}");
        }
        for t in ["date", "datetime", "timestamp"] {
            assert!(column(t).holds_instants(Engine::MySql), "{t}");
        }
        for t in ["int", "bigint", "varchar", "time", "year"] {
            assert!(!column(t).holds_instants(Engine::MySql), "{t}");
        }
        for t in ["DATE", "TEXT", "DATETIME", "TIMESTAMP", "VARCHAR(10)", ""] {
            assert!(column(t).holds_instants(Engine::Sqlite), "{t}");
        }
        for t in ["INTEGER", "INT", "REAL", "NUMERIC", "BLOB"] {
            assert!(!column(t).holds_instants(Engine::Sqlite), "{t}");
        }
    }
}
