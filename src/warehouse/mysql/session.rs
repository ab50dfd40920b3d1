//! What a MariaDB/MySQL session is set up with beyond its dialect's
//! settings.

use std::time::Duration;

use super::super::sql::Sql;
use super::MySql;

/// Bounds every statement of a session: MariaDB's `max_statement_time`
/// (seconds), or MySQL's `max_execution_time` (milliseconds, SELECTs only).
pub(in crate::warehouse) async fn set_statement_timeout(
    conn: &mut sqlx::AnyConnection,
    timeout: Duration,
) -> Result<(), sqlx::Error> {
    use sqlx::Row;
    let version: String = sqlx::query("SELECT CAST(VERSION() AS CHAR)")
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
    let mut sql = Sql::new(&MySql::DEFAULT);
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
