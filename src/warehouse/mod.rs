//! The warehouse: one SQL database reached by URL. Each engine is a module
//! implementing [`Dialect`]; everything engine-specific lives there, and the
//! rest of idem speaks to the warehouse through [`Warehouse`].

mod columns;
mod fingerprint;
pub mod ledger;
mod load;
mod mysql;
mod postgres;
pub mod sql;
mod sqlite;
mod verify;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::TryStreamExt;
use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, AssertSqlSafe, Connection, Executor, Row};

pub use columns::Column;
pub use fingerprint::Fingerprint;
pub use load::{AttemptMeta, LoadOutcome, LoadStep};
pub use verify::{Difference, Verification};

use crate::config::{Ident, Job, TableName, WarehouseConfig};
use crate::partition::{Grain, Partition};
use sql::Sql;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
    MySql,
}

/// How an engine serialises writers of one partition.
pub enum LockPlan {
    /// The transaction's own BEGIN takes the lock (SQLite `BEGIN IMMEDIATE`).
    Begin,
    /// A statement inside the transaction, released at COMMIT/ROLLBACK
    /// (PostgreSQL advisory transaction locks).
    InTransaction,
    /// A session lock taken before BEGIN and released after (MariaDB GET_LOCK).
    Session,
}

/// What differs between engines. Implemented once per engine module.
pub trait Dialect: Send + Sync {
    fn engine(&self) -> Engine;
    fn quote(&self, ident: &str) -> String;
    fn quote_table(&self, table: &TableName) -> String {
        match &table.schema {
            Some(s) => format!(
                "{}.{}",
                self.quote(s.as_str()),
                self.quote(table.name.as_str())
            ),
            None => self.quote(table.name.as_str()),
        }
    }
    /// Placeholder for the n-th bound value (1-based).
    fn placeholder(&self, n: usize) -> String;
    /// Wraps a placeholder bound with [`Dialect::instant_value`] text.
    fn instant_param(&self, placeholder: &str) -> String;
    /// The text a window boundary is bound as.
    fn instant_value(&self, t: chrono::NaiveDateTime, grain: Grain) -> String;
    /// Statements run on every new connection.
    fn session_setup(&self) -> &'static [&'static str];
    /// Statements bounding a session's lock waits by `lock_timeout` (where
    /// the engine needs them per session) and its statements by
    /// `statement_timeout`.
    fn session_timeouts(&self, _lock: Duration, _statement: Option<Duration>) -> Vec<Sql> {
        Vec::new()
    }
    /// A custom BEGIN statement, when the default is not enough.
    fn begin_statement(&self) -> Option<&'static str> {
        None
    }
    fn lock_plan(&self) -> LockPlan;
    /// Statements taking the lock named `key`, for [`LockPlan::InTransaction`]
    /// and [`LockPlan::Session`]; each returns one row whose first column is
    /// 1 when the lock was granted (or no row at all when it cannot fail).
    fn lock(&self, _key: &str, _timeout: Duration) -> Vec<Sql> {
        Vec::new()
    }
    /// Releases a [`LockPlan::Session`] lock.
    fn unlock(&self, _key: &str) -> Vec<Sql> {
        Vec::new()
    }
    /// Column types of the ledger.
    fn ledger_types(&self) -> ledger::ColumnTypes;
    /// Where the ledger lives: `idem.attempts` or `idem_attempts`.
    fn ledger_table(&self) -> TableName;
    /// A query returning the target's column names, one per row.
    /// `(column name, declared type)` rows of a table, in order.
    fn columns_query(&self, sql: &mut Sql, table: &TableName);
    /// `(schema, table)` rows of the tables a job could write, the schema
    /// NULL where it is the connection's own; idem's ledger schema left out.
    fn tables_query(&self, sql: &mut Sql);
    /// An expression naming the partition (of `grain`) a column's value lies in.
    fn partition_name_expr(&self, column: &str, grain: Grain) -> String;
    /// An expression rendering a column's value as text, for fingerprints.
    fn text_expr(&self, column: &str) -> String;
    /// A non-negative integer hash (below 2^60) of a row of these columns,
    /// where the engine can compute one; its sum fingerprints a set of rows
    /// without sending them.
    fn row_hash(&self, _columns: &[String]) -> Option<String> {
        None
    }
    /// A null-safe "values differ" test.
    fn differs(&self, a: &str, b: &str) -> String;
    /// Creates the staging table of a merge from a SELECT.
    fn create_stage(&self, stage: &str) -> String;
    fn drop_stage(&self, stage: &str) -> String;
    /// Upserts every row of the stage into the target by key.
    fn upsert(&self, target: &TableName, stage: &str, columns: &[Ident], keys: &[Ident]) -> String;
    /// True for errors worth retrying: lost connection, deadlock,
    /// serialisation failure, lock timeout.
    fn is_transient(&self, err: &sqlx::Error) -> bool;
    /// A query returning `(index name, column name)` rows, as text, for the
    /// primary key and every unique index of a table (partial and expression
    /// indexes left out: they do not make a column set unique).
    fn unique_key_sets_query(&self, sql: &mut Sql, table: &TableName);
}

/// A connection to the warehouse through which idem reads and writes.
#[derive(Clone)]
pub struct Warehouse {
    pool: AnyPool,
    dialect: &'static dyn Dialect,
    config: WarehouseConfig,
    /// Output column names per SELECT text, described once per process.
    described: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum WarehouseError {
    #[error("cannot connect to {url}: {source}")]
    Connect { url: String, source: sqlx::Error },
    #[error("{}", sql_message(.0))]
    Sql(#[from] sqlx::Error),
    #[error("target table {0} does not exist or has no columns")]
    NoTarget(String),
    #[error("{0}")]
    Job(String),
    #[error(
        "could not take the lock on partition {0} within the lock timeout: another run is writing it"
    )]
    LockTimeout(String),
}

impl WarehouseError {
    pub fn is_transient(&self, dialect: &dyn Dialect) -> bool {
        match self {
            WarehouseError::Sql(e) | WarehouseError::Connect { source: e, .. } => {
                dialect.is_transient(e)
            }
            WarehouseError::LockTimeout(_) => true,
            _ => false,
        }
    }
}

/// Row counts per partition name, read from the target table.
pub type Counts = HashMap<String, i64>;

impl Warehouse {
    pub async fn connect(
        config: &WarehouseConfig,
        max_connections: u32,
    ) -> Result<Warehouse, WarehouseError> {
        sqlx::any::install_default_drivers();
        let url = config.url.clone();
        let dialect: &'static dyn Dialect = if url.starts_with("sqlite:") {
            &sqlite::Sqlite
        } else if url.starts_with("postgres") {
            &postgres::Postgres
        } else {
            &mysql::MySql
        };
        let url = if dialect.engine() == Engine::Sqlite && !url.contains("mode=") {
            format!("{url}{}mode=rwc", if url.contains('?') { "&" } else { "?" })
        } else {
            url
        };
        let timeouts = (config.lock_timeout, config.statement_timeout);
        let connect_error = |source| WarehouseError::Connect {
            url: redact(&config.url),
            source,
        };
        // One connection first, so that a wrong URL, a server that is down or
        // a failing session setup says so at once, in the driver's words,
        // rather than as a pool timing out.
        let mut first = tokio::time::timeout(CONNECT_TIMEOUT, sqlx::AnyConnection::connect(&url))
            .await
            .map_err(|_| connect_error(sqlx::Error::PoolTimedOut))?
            .map_err(connect_error)?;
        prepare_session(dialect, &mut first, timeouts)
            .await
            .map_err(connect_error)?;
        let _ = first.close().await;
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections.max(1))
            .acquire_timeout(Duration::from_secs(30))
            .after_connect(move |conn, _| Box::pin(prepare_session(dialect, conn, timeouts)))
            .connect(&url)
            .await
            .map_err(connect_error)?;
        let warehouse = Warehouse {
            pool,
            dialect,
            config: config.clone(),
            described: Arc::default(),
        };
        warehouse.ensure_ledger().await?;
        Ok(warehouse)
    }

    pub fn dialect(&self) -> &'static dyn Dialect {
        self.dialect
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub fn sql(&self) -> Sql {
        Sql::new(self.dialect)
    }

    pub fn config(&self) -> &WarehouseConfig {
        &self.config
    }

    /// The URL without its password, for display.
    pub fn display_url(&self) -> String {
        redact(&self.config.url)
    }

    async fn ensure_ledger(&self) -> Result<(), WarehouseError> {
        // Two processes starting at once may race on CREATE … IF NOT EXISTS.
        let mut result = Ok(());
        for _ in 0..3 {
            result = async {
                for ddl in ledger::ddl(self.dialect) {
                    self.pool.execute(AssertSqlSafe(ddl)).await?;
                }
                Ok::<_, sqlx::Error>(())
            }
            .await;
            if result.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(result?)
    }

    /// Runs a statement of static SQL (DDL, demo data).
    pub async fn execute_script(&self, statements: &[&str]) -> Result<(), WarehouseError> {
        for s in statements {
            self.pool.execute(AssertSqlSafe(s.to_string())).await?;
        }
        Ok(())
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
        let names = match self.dialect.engine() {
            Engine::Sqlite => sqlite::describe(url, select).await?,
            Engine::Postgres => postgres::describe(url, select).await?,
            Engine::MySql => mysql::describe(url, select).await?,
        };
        if let Ok(mut m) = self.described.lock() {
            m.insert(select.to_string(), names.clone());
        }
        Ok(names)
    }

    /// The partitions of a job whose lock another session holds right now:
    /// an attempt in flight in another console or process. Engines without
    /// per-partition locks (SQLite) cannot tell and report none.
    pub async fn partitions_locked_elsewhere(
        &self,
        job: &Job,
        partitions: &[Partition],
    ) -> Result<std::collections::HashSet<String>, WarehouseError> {
        let keys: Vec<(String, String)> = partitions
            .iter()
            .map(|p| (p.name(), partition_lock_key(job, p)))
            .collect();
        Ok(match self.dialect.engine() {
            Engine::Sqlite => Default::default(),
            Engine::Postgres => postgres::held(&self.pool, &keys).await?,
            Engine::MySql => mysql::held(&self.pool, &keys).await?,
        })
    }

    pub async fn target_columns(&self, table: &TableName) -> Result<Vec<Ident>, WarehouseError> {
        let mut sql = self.sql();
        self.dialect.columns_query(&mut sql, table);
        let rows = sql.query().fetch_all(&self.pool).await?;
        let mut cols = Vec::new();
        for row in rows {
            let name: String = row.try_get(0)?;
            if let Ok(id) = Ident::parse(&name) {
                cols.push(id);
            }
        }
        if cols.is_empty() {
            return Err(WarehouseError::NoTarget(table.to_string()));
        }
        Ok(cols)
    }

    /// Row counts per partition of a job's target, for its whole history, in
    /// one query. Jobs without a partition column have none.
    pub async fn partition_counts(
        &self,
        job: &Job,
        first: Partition,
        last: Partition,
    ) -> Result<Counts, WarehouseError> {
        let Some(col) = &job.partition_column else {
            return Ok(Counts::new());
        };
        let quoted = self.dialect.quote(col.as_str());
        let bucket = self.dialect.partition_name_expr(&quoted, job.grain);
        let mut sql = self.sql();
        sql.push("SELECT ")
            .push(&bucket)
            .push(" AS p, COUNT(*) AS n FROM ")
            .table(&job.target)
            .push(" WHERE ");
        sql.ident(col).push(" >= ");
        sql.bind_instant(first.start, &first);
        sql.push(" AND ").ident(col).push(" < ");
        sql.bind_instant(last.end(), &last);
        sql.push(" GROUP BY ").push(&bucket);
        let mut counts = Counts::new();
        let mut rows = sql.query().fetch(&self.pool);
        while let Some(row) = rows.try_next().await? {
            let name: Option<String> = row.try_get(0)?;
            let n: i64 = row.try_get(1)?;
            if let Some(name) = name {
                counts.insert(name, n);
            }
        }
        Ok(counts)
    }

    /// Count and fingerprint of a replace job's partition as it is now.
    pub async fn partition_fingerprint(
        &self,
        job: &Job,
        partition: &Partition,
    ) -> Result<Fingerprint, WarehouseError> {
        let mut conn = self.pool.acquire().await?;
        let columns = self.target_columns(&job.target).await?;
        load::fingerprint_window(self.dialect, &mut conn, job, &columns, partition).await
    }

    /// Fingerprint of a whole table: every row, in no particular order.
    pub async fn table_fingerprint(
        &self,
        table: &TableName,
    ) -> Result<Fingerprint, WarehouseError> {
        let columns = self.target_columns(table).await?;
        let mut conn = self.pool.acquire().await?;
        fingerprint::of(&mut conn, self.dialect, &columns, "", |sql| {
            sql.push(" FROM ").table(table);
        })
        .await
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The column sets (lower-cased) that the table's primary key and unique
    /// indexes make unique, for checking a merge job's `unique_key`.
    pub async fn unique_key_sets(
        &self,
        table: &TableName,
    ) -> Result<Vec<Vec<String>>, WarehouseError> {
        let mut sql = self.sql();
        self.dialect.unique_key_sets_query(&mut sql, table);
        let rows = sql.query().fetch_all(&self.pool).await?;
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
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Session settings every connection gets: UTC, isolation, timeouts.
async fn prepare_session(
    dialect: &'static dyn Dialect,
    conn: &mut sqlx::AnyConnection,
    (lock, statement): (Duration, Option<Duration>),
) -> Result<(), sqlx::Error> {
    for stmt in dialect.session_setup() {
        conn.execute(*stmt).await?;
    }
    for stmt in dialect.session_timeouts(lock, statement) {
        stmt.query().execute(&mut *conn).await?;
    }
    if let (Engine::MySql, Some(t)) = (dialect.engine(), statement) {
        mysql::set_statement_timeout(conn, t).await?;
    }
    Ok(())
}

/// The name of a partition's lock: the target and the window, so that two
/// jobs writing one table's partition exclude each other too.
pub(crate) fn partition_lock_key(job: &Job, partition: &Partition) -> String {
    format!("{}:{}", job.target, partition.name())
}

/// A 64-bit lock key for a partition's lock name, the same in every process.
pub(crate) fn lock_key_i64(key: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_le_bytes(first)
}

pub(crate) fn text_columns(row: &AnyRow) -> Result<Vec<Option<String>>, sqlx::Error> {
    (0..row.len())
        .map(|i| row.try_get::<Option<String>, _>(i))
        .collect()
}

/// The database's own words for an error, without the driver's wrapping.
fn sql_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) => db.message().to_string(),
        other => other.to_string(),
    }
}

/// Hides the password of a URL.
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let rest = &url[scheme_end + 3..];
    let Some(at) = rest.find('@') else {
        return url.to_string();
    };
    let userinfo = &rest[..at];
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{}{user}:***@{}", &url[..scheme_end + 3], &rest[at + 1..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("sqlite://demo.db"), "sqlite://demo.db");
    }
}
