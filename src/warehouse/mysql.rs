//! MySQL 8 and MariaDB 10.11: named session locks (GET_LOCK) around each
//! partition's transaction, `INSERT … ON DUPLICATE KEY UPDATE` for upserts.

use std::time::Duration;

use chrono::NaiveDateTime;
use sqlx::mysql::MySqlDatabaseError;

use super::ledger::ColumnTypes;
use super::sql::Sql;
use super::{Dialect, Engine, LockPlan};
use crate::config::{Ident, TableName};
use crate::partition::Grain;

pub struct MySql;

/// Where a lock's key comes from: bound, or a column of the query.
enum Key<'a> {
    Bound(&'a str),
    Column(&'a str),
}

/// The lock name for a key. Named locks are server-wide, so the name
/// includes the database; GET_LOCK names are at most 64 characters, so it is
/// hashed.
fn push_lock_name(sql: &mut Sql, key: Key<'_>) {
    sql.push("CONCAT('idem:', LEFT(SHA2(CONCAT(COALESCE(DATABASE(), ''), ':', ");
    match key {
        Key::Bound(k) => sql.bind(k),
        Key::Column(c) => sql.push(c),
    };
    sql.push("), 256), 40))");
}

impl Dialect for MySql {
    fn engine(&self) -> Engine {
        Engine::MySql
    }

    fn quote(&self, ident: &str) -> String {
        format!("`{ident}`")
    }

    fn placeholder(&self, _n: usize) -> String {
        "?".into()
    }

    fn instant_param(&self, placeholder: &str) -> String {
        format!("CAST({placeholder} AS DATETIME)")
    }

    fn instant_value(&self, t: NaiveDateTime, _grain: Grain) -> String {
        t.format("%Y-%m-%d %H:%M:%S").to_string()
    }

    fn session_setup(&self) -> &'static [&'static str] {
        &[
            "SET time_zone = '+00:00'",
            // Each statement sees what committed before it, as on PostgreSQL.
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
        ]
    }

    fn session_timeouts(&self, lock: Duration, _statement: Option<Duration>) -> Vec<Sql> {
        let seconds = lock.as_secs().max(1) as i64;
        let mut sql = Sql::new(&MySql);
        sql.push("SET SESSION innodb_lock_wait_timeout = ")
            .bind(seconds)
            .push(", lock_wait_timeout = ")
            .bind(seconds);
        vec![sql]
    }

    fn lock_plan(&self) -> LockPlan {
        LockPlan::Session
    }

    fn lock(&self, key: &str, timeout: Duration) -> Vec<Sql> {
        let mut sql = Sql::new(&MySql);
        sql.push("SELECT GET_LOCK(");
        push_lock_name(&mut sql, Key::Bound(key));
        sql.push(", ")
            // Whole seconds, rounded up; 0 does not wait, as everywhere.
            .bind(timeout.as_millis().div_ceil(1000) as i64)
            .push(")");
        vec![sql]
    }

    fn unlock(&self, key: &str) -> Vec<Sql> {
        let mut sql = Sql::new(&MySql);
        sql.push("SELECT RELEASE_LOCK(");
        push_lock_name(&mut sql, Key::Bound(key));
        sql.push(")");
        vec![sql]
    }

    fn ledger_types(&self) -> ColumnTypes {
        ColumnTypes {
            id: "BIGINT AUTO_INCREMENT PRIMARY KEY",
            text: "VARCHAR(255)",
            long_text: "TEXT",
            int: "BIGINT",
        }
    }

    fn ledger_table(&self) -> TableName {
        TableName {
            schema: None,
            name: Ident::from_static("idem_attempts"),
        }
    }

    fn tables_query(&self, sql: &mut Sql) {
        sql.push(
            "SELECT CAST(NULL AS CHAR), CAST(table_name AS CHAR) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY table_name",
        );
    }

    fn columns_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push("SELECT CAST(column_name AS CHAR), CAST(data_type AS CHAR) FROM information_schema.columns WHERE table_schema = ");
        match &table.schema {
            Some(s) => sql.bind(s.as_str()),
            None => sql.push("DATABASE()"),
        };
        sql.push(" AND table_name = ")
            .bind(table.name.as_str())
            .push(" ORDER BY ordinal_position");
    }

    fn partition_name_expr(&self, column: &str, grain: Grain) -> String {
        let format = match grain {
            Grain::Hour => "%Y-%m-%dT%H",
            Grain::Day => "%Y-%m-%d",
            Grain::Month => "%Y-%m",
        };
        format!("CAST(DATE_FORMAT({column}, '{format}') AS CHAR)")
    }

    fn text_expr(&self, column: &str) -> String {
        format!("CAST({column} AS CHAR)")
    }

    /// The first 60 bits of the MD5 of the row's values, each prefixed by
    /// its length (NULL as `~`) so that no two rows read alike.
    fn row_hash(&self, columns: &[String]) -> Option<String> {
        let values: Vec<String> = columns
            .iter()
            .map(|c| format!("COALESCE(CONCAT(LENGTH({c}), ':', {c}), '~')"))
            .collect();
        Some(format!(
            "CAST(CONV(LEFT(MD5(CONCAT_WS(',', {})), 15), 16, 10) AS UNSIGNED)",
            values.join(", ")
        ))
    }

    fn differs(&self, a: &str, b: &str) -> String {
        format!("NOT ({a} <=> {b})")
    }

    fn create_stage(&self, stage: &str) -> String {
        format!("CREATE TEMPORARY TABLE {} AS ", self.quote(stage))
    }

    fn drop_stage(&self, stage: &str) -> String {
        format!("DROP TEMPORARY TABLE IF EXISTS {}", self.quote(stage))
    }

    fn upsert(&self, target: &TableName, stage: &str, columns: &[Ident], keys: &[Ident]) -> String {
        let q = |c: &Ident| self.quote(c.as_str());
        let cols = columns.iter().map(q).collect::<Vec<_>>().join(", ");
        let values: Vec<&Ident> = columns.iter().filter(|c| !keys.contains(c)).collect();
        // With nothing but keys, a no-op assignment keeps duplicates from erroring.
        let assigned: Vec<&Ident> = if values.is_empty() {
            keys.iter().take(1).collect()
        } else {
            values
        };
        let set = assigned
            .iter()
            .map(|c| format!("{0} = VALUES({0})", q(c)))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "INSERT INTO {} ({cols}) SELECT {cols} FROM {} ON DUPLICATE KEY UPDATE {set}",
            self.quote_table(target),
            self.quote(stage)
        )
    }

    fn is_transient(&self, err: &sqlx::Error) -> bool {
        match err {
            sqlx::Error::Database(db) => match db.try_downcast_ref::<MySqlDatabaseError>() {
                Some(e) => matches!(e.number(), 1205 | 1213 | 2006 | 2013 | 1927 | 1053),
                None => db.code().as_deref() == Some("40001"),
            },
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Protocol(_) => true,
            _ => false,
        }
    }

    /// A functional key part (MySQL 8) has no column name: its NULL makes the
    /// whole index drop out of the sets.
    fn unique_key_sets_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push("SELECT CAST(index_name AS CHAR), CAST(column_name AS CHAR) FROM information_schema.statistics WHERE non_unique = 0 AND table_schema = ");
        match &table.schema {
            Some(s) => sql.bind(s.as_str()),
            None => sql.push("DATABASE()"),
        };
        sql.push(" AND table_name = ")
            .bind(table.name.as_str())
            .push(" ORDER BY index_name, seq_in_index");
    }
}

/// Output column names of a SELECT, from the driver's own prepare.
pub(super) async fn describe(url: &str, select: &str) -> Result<Vec<String>, sqlx::Error> {
    use sqlx::{Column, Connection, Executor, SqlSafeStr, Statement};
    let mut conn = sqlx::mysql::MySqlConnection::connect(url).await?;
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

/// Which of the named locks some session holds, asked in one query.
pub(super) async fn held(
    pool: &sqlx::AnyPool,
    keys: &[(String, String)],
) -> Result<std::collections::HashSet<String>, sqlx::Error> {
    use sqlx::Row;
    let mut out = std::collections::HashSet::new();
    for chunk in keys.chunks(500) {
        let mut sql = Sql::new(&MySql);
        sql.push("SELECT p FROM (");
        for (i, (name, key)) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push(" UNION ALL ");
            }
            sql.push("SELECT ")
                .bind(name.as_str())
                .push(" AS p, ")
                .bind(key.as_str())
                .push(" AS k");
        }
        sql.push(") t WHERE IS_USED_LOCK(");
        push_lock_name(&mut sql, Key::Column("t.k"));
        sql.push(") IS NOT NULL");
        for row in sql.query().fetch_all(pool).await? {
            out.insert(row.try_get::<String, _>(0)?);
        }
    }
    Ok(out)
}

/// Bounds every statement of a session: MariaDB's `max_statement_time`
/// (seconds), or MySQL's `max_execution_time` (milliseconds, SELECTs only).
pub(super) async fn set_statement_timeout(
    conn: &mut sqlx::AnyConnection,
    timeout: Duration,
) -> Result<(), sqlx::Error> {
    use sqlx::Row;
    let version: String = sqlx::query("SELECT CAST(VERSION() AS CHAR)")
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
    let mut sql = Sql::new(&MySql);
    if version.contains("MariaDB") {
        sql.push("SET SESSION max_statement_time = ")
            .bind(timeout.as_millis() as i64)
            .push(" / 1000");
    } else {
        sql.push("SET SESSION max_execution_time = ")
            .bind(timeout.as_millis() as i64);
    }
    sql.query().execute(&mut *conn).await?;
    Ok(())
}
