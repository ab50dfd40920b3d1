//! PostgreSQL 15+ and Postgres-wire engines: advisory transaction locks,
//! MERGE for upserts, the ledger in schema `idem`.

use std::time::Duration;

use chrono::NaiveDateTime;

use super::ledger::ColumnTypes;
use super::sql::Sql;
use super::{Dialect, Engine, LockPlan, lock_key_i64};
use crate::config::{Ident, TableName};
use crate::partition::Grain;

pub struct Postgres;

impl Dialect for Postgres {
    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    fn quote(&self, ident: &str) -> String {
        format!("\"{ident}\"")
    }

    fn placeholder(&self, n: usize) -> String {
        format!("${n}")
    }

    fn instant_param(&self, placeholder: &str) -> String {
        format!("CAST({placeholder} AS timestamp)")
    }

    fn instant_value(&self, t: NaiveDateTime, _grain: Grain) -> String {
        t.format("%Y-%m-%d %H:%M:%S").to_string()
    }

    fn session_setup(&self) -> &'static [&'static str] {
        // Windows are UTC instants whatever the server's time zone.
        &["SET TIME ZONE 'UTC'", "SET application_name = 'idem'"]
    }

    fn session_timeouts(&self, _lock: Duration, statement: Option<Duration>) -> Vec<Sql> {
        let Some(t) = statement else {
            return Vec::new();
        };
        let mut sql = Sql::new(&Postgres);
        sql.push("SELECT 1 FROM (SELECT set_config('statement_timeout', ")
            .bind(format!("{}ms", t.as_millis()))
            .push(", false)) t");
        vec![sql]
    }

    fn lock_plan(&self) -> LockPlan {
        LockPlan::InTransaction
    }

    fn lock(&self, key: &str, timeout: Duration) -> Vec<Sql> {
        // PostgreSQL reads 0 as "wait forever"; idem's 0 is "do not wait".
        let mut timeout_sql = Sql::new(&Postgres);
        timeout_sql
            .push("SELECT 1 FROM (SELECT set_config('lock_timeout', ")
            .bind(format!("{}ms", timeout.as_millis().max(1)))
            .push(", true)) t");
        let mut lock = Sql::new(&Postgres);
        lock.push("SELECT 1 FROM (SELECT pg_advisory_xact_lock(")
            .bind(lock_key_i64(key))
            .push(")) l");
        vec![timeout_sql, lock]
    }

    fn ledger_types(&self) -> ColumnTypes {
        ColumnTypes {
            id: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
            text: "TEXT",
            long_text: "TEXT",
            int: "BIGINT",
        }
    }

    fn ledger_table(&self) -> TableName {
        TableName {
            schema: Some(Ident::from_static("idem")),
            name: Ident::from_static("attempts"),
        }
    }

    fn tables_query(&self, sql: &mut Sql) {
        sql.push(
            "SELECT CASE WHEN table_schema = current_schema() THEN NULL ELSE CAST(table_schema AS text) END, \
             CAST(table_name AS text) FROM information_schema.tables \
             WHERE table_type = 'BASE TABLE' \
             AND table_schema NOT IN ('pg_catalog', 'information_schema', 'idem') \
             ORDER BY table_schema <> current_schema(), table_schema, table_name",
        );
    }

    fn columns_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push("SELECT CAST(column_name AS text), CAST(data_type AS text) FROM information_schema.columns WHERE table_schema = ");
        match &table.schema {
            Some(s) => sql.bind(s.as_str()),
            None => sql.push("current_schema()"),
        };
        sql.push(" AND table_name = ")
            .bind(table.name.as_str())
            .push(" ORDER BY ordinal_position");
    }

    fn partition_name_expr(&self, column: &str, grain: Grain) -> String {
        let format = match grain {
            Grain::Hour => "YYYY-MM-DD\"T\"HH24",
            Grain::Day => "YYYY-MM-DD",
            Grain::Month => "YYYY-MM",
        };
        format!("to_char({column}, '{format}')")
    }

    fn text_expr(&self, column: &str) -> String {
        format!("CAST({column} AS text)")
    }

    /// The first 60 bits of the MD5 of the row's text form, which quotes
    /// values and tells NULL from an empty string.
    fn row_hash(&self, columns: &[String]) -> Option<String> {
        Some(format!(
            "CAST(CAST('x' || LEFT(md5(CAST(ROW({}) AS text)), 15) AS bit(60)) AS bigint)",
            columns.join(", ")
        ))
    }

    fn differs(&self, a: &str, b: &str) -> String {
        format!("{a} IS DISTINCT FROM {b}")
    }

    fn create_stage(&self, stage: &str) -> String {
        format!("CREATE TEMP TABLE {} ON COMMIT DROP AS ", self.quote(stage))
    }

    fn drop_stage(&self, stage: &str) -> String {
        format!("DROP TABLE IF EXISTS pg_temp.{}", self.quote(stage))
    }

    fn upsert(&self, target: &TableName, stage: &str, columns: &[Ident], keys: &[Ident]) -> String {
        let q = |c: &Ident| self.quote(c.as_str());
        let on = keys
            .iter()
            .map(|k| format!("t.{0} = s.{0}", q(k)))
            .collect::<Vec<_>>()
            .join(" AND ");
        let values: Vec<&Ident> = columns.iter().filter(|c| !keys.contains(c)).collect();
        let mut merge = format!(
            "MERGE INTO {} AS t USING {} AS s ON {on}",
            self.quote_table(target),
            self.quote(stage)
        );
        if !values.is_empty() {
            let changed = values
                .iter()
                .map(|c| self.differs(&format!("t.{}", q(c)), &format!("s.{}", q(c))))
                .collect::<Vec<_>>()
                .join(" OR ");
            let set = values
                .iter()
                .map(|c| format!("{0} = s.{0}", q(c)))
                .collect::<Vec<_>>()
                .join(", ");
            merge.push_str(&format!(
                " WHEN MATCHED AND ({changed}) THEN UPDATE SET {set}"
            ));
        }
        let cols = columns.iter().map(q).collect::<Vec<_>>().join(", ");
        let vals = columns
            .iter()
            .map(|c| format!("s.{}", q(c)))
            .collect::<Vec<_>>()
            .join(", ");
        merge.push_str(&format!(
            " WHEN NOT MATCHED THEN INSERT ({cols}) VALUES ({vals})"
        ));
        merge
    }

    fn is_transient(&self, err: &sqlx::Error) -> bool {
        match err {
            sqlx::Error::Database(db) => {
                let code = db.code().unwrap_or_default();
                matches!(
                    code.as_ref(),
                    "40001" | "40P01" | "55P03" | "57P01" | "57P02" | "57P03"
                ) || code.starts_with("08")
            }
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Protocol(_) => true,
            _ => false,
        }
    }

    fn unique_key_sets_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push(
            "SELECT CAST(i.relname AS text), CAST(a.attname AS text) \
             FROM pg_index x \
             JOIN pg_class t ON t.oid = x.indrelid \
             JOIN pg_namespace n ON n.oid = t.relnamespace \
             JOIN pg_class i ON i.oid = x.indexrelid \
             JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY(x.indkey) \
             WHERE x.indisunique AND x.indpred IS NULL AND x.indexprs IS NULL AND n.nspname = ",
        );
        match &table.schema {
            Some(s) => sql.bind(s.as_str()),
            None => sql.push("current_schema()"),
        };
        sql.push(" AND t.relname = ").bind(table.name.as_str());
    }
}

/// Output column names of a SELECT, from the driver's own prepare.
pub(super) async fn describe(url: &str, select: &str) -> Result<Vec<String>, sqlx::Error> {
    use sqlx::{Column, Connection, Executor, SqlSafeStr, Statement};
    let mut conn = sqlx::postgres::PgConnection::connect(url).await?;
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

/// Which of the named locks some session holds: granted advisory locks whose
/// 64-bit key (classid high, objid low) is one of ours.
pub(super) async fn held(
    pool: &sqlx::AnyPool,
    keys: &[(String, String)],
) -> Result<std::collections::HashSet<String>, sqlx::Error> {
    use sqlx::Row;
    let rows = sqlx::query(
        "SELECT CAST((CAST(classid AS bigint) << 32) | CAST(objid AS bigint) AS bigint) FROM pg_locks \
         WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .fetch_all(pool)
    .await?;
    let held: std::collections::HashSet<i64> =
        rows.iter().filter_map(|r| r.try_get(0).ok()).collect();
    Ok(keys
        .iter()
        .filter(|(_, key)| held.contains(&lock_key_i64(key)))
        .map(|(name, _)| name.clone())
        .collect())
}
