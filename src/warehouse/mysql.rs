//! MySQL 8 and MariaDB 10.11: named session locks (GET_LOCK) around each
//! partition's transaction, `INSERT … ON DUPLICATE KEY UPDATE` for upserts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::NaiveDateTime;
use sqlx::mysql::MySqlDatabaseError;

use super::PartitionLock;
use super::columns::DescribeLimits;
use super::fingerprint::RowHash;
use super::ledger::ColumnTypes;
use super::sql::{Sql, Value};
use super::{Column, ColumnKind, Dialect, Engine, LockPlan, SessionAsk, SessionHolder, WholeTable};
use crate::config::{Ident, Job, TableName, TableNames};
use crate::partition::{Grain, Partition};

/// MariaDB and MySQL, as the server's `sql_mode` reads SQL text, and what
/// the server can do.
#[derive(Clone, Copy)]
pub struct MySql {
    backslash_escapes: bool,
    /// `ANSI_QUOTES` in the `sql_mode`: `"fct"` is a name, not a string.
    ansi_quotes: bool,
    /// MariaDB, not MySQL: `SET STATEMENT … FOR` bounds a statement.
    mariadb: bool,
    /// `DELETE` and `INSERT` take `RETURNING` (MariaDB 10.5 and later): a
    /// replace hashes the rows its statements return. MySQL 8 and older
    /// MariaDB have no `RETURNING`; there a replace reads the window before
    /// and after, as on the other engines.
    returning: bool,
}

impl MySql {
    /// MariaDB's default: a backslash in a string escapes, a double quote
    /// quotes a string.
    pub const DEFAULT: MySql = MySql::of(1 | 4 | 8);

    /// The kind numbered by backslash escapes (1), ANSI quotes (2),
    /// MariaDB (4) and `RETURNING` (8).
    const fn of(kind: usize) -> MySql {
        MySql {
            backslash_escapes: kind & 1 != 0,
            ansi_quotes: kind & 2 != 0,
            mariadb: kind & 4 != 0,
            returning: kind & 8 != 0,
        }
    }

    /// Every kind, by its number.
    const ALL: [MySql; 16] = {
        let mut all = [MySql::of(0); 16];
        let mut i = 0;
        while i < 16 {
            all[i] = MySql::of(i);
            i += 1;
        }
        all
    };
}

/// The lock name of `key` in `database`: `idem:` and the first 40 hex
/// digits of SHA-256 of `database:key`. Named locks are server-wide, so the
/// name includes the database; GET_LOCK names are at most 64 characters, so
/// it is hashed. Earlier builds had the server make the same name in the
/// lock statement (`CONCAT('idem:', LEFT(SHA2(CONCAT(COALESCE(DATABASE(),
/// ''), ':', key), 256), 40))`), so their loads and this one's exclude each
/// other. Made here, the server hashes none of them: a daily partition's
/// lock statement (24 names) took 223 µs of its time instead of 401 µs
/// (RESULTS §12).
fn lock_name(database: &str, key: &str) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write;
    let digest = Sha256::digest(format!("{database}:{key}").as_bytes());
    let mut name = String::with_capacity(45);
    name.push_str("idem:");
    for byte in &digest[..20] {
        let _ = write!(name, "{byte:02x}");
    }
    name
}

impl Dialect for MySql {
    fn engine(&self) -> Engine {
        Engine::MySql
    }

    fn backslash_escapes(&self) -> bool {
        self.backslash_escapes
    }

    fn ansi_quotes(&self) -> bool {
        self.ansi_quotes
    }

    fn quote(&self, ident: &Ident) -> String {
        format!("`{ident}`")
    }

    fn placeholder(&self, _n: usize) -> String {
        "?".into()
    }

    fn instant_param(&self, placeholder: &str, kind: ColumnKind) -> String {
        let ty = match kind {
            ColumnKind::Date => "DATE",
            _ => "DATETIME",
        };
        format!("CAST({placeholder} AS {ty})")
    }

    fn instant_value(&self, t: NaiveDateTime, _grain: Grain) -> Value {
        Value::Text(t.format("%Y-%m-%d %H:%M:%S").to_string())
    }

    fn session_setup(&self) -> &'static [&'static str] {
        &[
            // A statement outside a load's transaction commits by itself,
            // whatever the server's default: with autocommit off, a failure
            // recorded in the ledger would never commit, and a state read
            // would keep its tables locked against DDL while the session
            // waits in the pool. And a job's SQL means what it means in the
            // operator's own client: the driver adds PIPES_AS_CONCAT to the
            // session's sql_mode, which would make `a || b` a concatenation
            // where the server's default reads it as OR.
            "SET time_zone = '+00:00', autocommit = 1, sql_mode = @@GLOBAL.sql_mode",
            // Each statement sees what committed before it, as on PostgreSQL.
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
        ]
    }

    fn session_timeouts(&self, lock: Duration, _statement: Option<Duration>) -> Vec<Sql> {
        let seconds = lock.as_secs().max(1) as i64;
        let mut sql = Sql::new(&MySql::DEFAULT);
        sql.push("SET SESSION innodb_lock_wait_timeout = ")
            .bind(seconds)
            .push(", lock_wait_timeout = ")
            .bind(seconds);
        vec![sql]
    }

    fn insert_returning(&self) -> bool {
        self.returning
    }

    /// MariaDB returns the rows a DELETE or INSERT wrote (10.5+), but cannot
    /// aggregate them in the statement: their hashes stream back, as the
    /// digest's first 15 hexadecimal digits. Turning those into an integer
    /// on the server (`CONV` and `CAST`, as [`Dialect::row_hash`] must for
    /// its `SUM`) cost more per row than the SHA-1 itself: over 90,000 rows,
    /// 65–72 ms against 10 ms for the digest (`SELECT SUM(…)`, 20 turns).
    fn returned_row_hash(&self, columns: &[(String, String)]) -> Option<String> {
        self.returning
            .then(|| format!("LEFT(SHA1({}), 15)", row_text(columns)))
    }

    fn lock_plan(&self) -> LockPlan {
        LockPlan::Session
    }

    /// The grants joined by `AND`, which MariaDB and MySQL evaluate in
    /// order and stop at the first refused: 1 only when every lock was
    /// granted, the names taken oldest first, and a load waits at most
    /// `timeout` for a held partition. (`LEAST` of the grants evaluated
    /// every one: a day's 24 names held by another run made it wait 24
    /// times the timeout, a month's 744 times.) A session holding some
    /// when another times out releases them. The second column is the
    /// session's id, by which a cancelled load's session is ended.
    fn lock(&self, names: &[String], timeout: Duration) -> Vec<Sql> {
        let mut sql = Sql::new(&MySql::DEFAULT);
        // Each grant waits up to the timeout; the statement as a whole too
        // (MariaDB), or a day whose hours other loads hold one after the
        // other would wait for each in turn.
        if self.mariadb && !timeout.is_zero() {
            sql.push(&format!(
                "SET STATEMENT max_statement_time = {:.3} FOR ",
                timeout.as_secs_f64()
            ));
        }
        sql.push("SELECT CAST(");
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                sql.push(" AND ");
            }
            sql.push("GET_LOCK(")
                .bind(name.as_str())
                .push(", ")
                // Whole seconds, rounded up; 0 does not wait, as everywhere.
                .bind(timeout.as_millis().div_ceil(1000) as i64)
                .push(") = 1");
        }
        if names.is_empty() {
            sql.push("1");
        }
        sql.push(" AS SIGNED), CAST(CONNECTION_ID() AS SIGNED)");
        vec![sql]
    }

    /// The first held name's holder in the process list, which shows a
    /// user the sessions it may see (all of them with `PROCESS`).
    fn lock_holder_query(&self, sql: &mut Sql, _lock: &PartitionLock, names: &[String]) -> bool {
        if names.is_empty() {
            return false;
        }
        sql.push(PROCESSES)
            .push(" WHERE p.ID <> CONNECTION_ID() AND p.ID = COALESCE(");
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                sql.push(", ");
            }
            sql.push("IS_USED_LOCK(").bind(name.as_str()).push(")");
        }
        sql.push(")");
        true
    }

    /// `KILL` ends the session (and its statement, which `KILL QUERY`
    /// alone would leave the session idle in its transaction after); a
    /// user may kill its own sessions, and sees them in the process list.
    fn load_session(&self, sql: &mut Sql, holder: &SessionHolder, ask: SessionAsk) -> bool {
        let SessionHolder::Session(id) = holder else {
            return false;
        };
        match ask {
            SessionAsk::End => sql.push("KILL CONNECTION ").bind(*id),
            SessionAsk::Count => sql
                .push("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ")
                .bind(*id),
        };
        true
    }

    /// Named by the database, job and partition, hashed into GET_LOCK's 64
    /// characters; released with the partition's.
    fn numbering_lock(&self, sql: &mut Sql, job: &str, part: &str, timeout: Duration) -> bool {
        sql.push(
            "SELECT CAST(GET_LOCK(CONCAT('idem-ledger:', MD5(CONCAT_WS(CHAR(10), DATABASE(), ",
        )
        .bind(job)
        .push(", ")
        .bind(part)
        .push("))), ")
        .bind(timeout.as_millis().div_ceil(1000) as i64)
        .push(") AS SIGNED)");
        true
    }

    fn unlock(&self) -> Vec<Sql> {
        let mut sql = Sql::new(&MySql::DEFAULT);
        sql.push("SELECT RELEASE_ALL_LOCKS()");
        vec![sql]
    }

    /// Text in utf8mb4 whatever the database's default: on a server whose
    /// `character_set_server` is latin1, a reason or an error outside it
    /// failed every partition's load, and its failure went unrecorded.
    fn ledger_types(&self) -> ColumnTypes {
        ColumnTypes {
            id: "BIGINT AUTO_INCREMENT PRIMARY KEY",
            text: "VARCHAR(255) CHARACTER SET utf8mb4",
            long_text: "TEXT CHARACTER SET utf8mb4",
            int: "BIGINT",
        }
    }

    fn ledger_table(&self) -> TableName {
        TableName {
            schema: None,
            name: Ident::from_static("idem_attempts"),
        }
    }

    fn index_exists_query(&self, sql: &mut Sql, table: &TableName, index: &Ident) {
        sql.push("SELECT 1 FROM information_schema.statistics WHERE table_schema = ");
        sql.table_named(table, "DATABASE()", "table_name")
            .push(" AND index_name = ")
            .bind(index.as_str())
            .push(" LIMIT 1");
    }

    fn drop_index(&self, table: &TableName, index: &Ident) -> String {
        format!(
            "DROP INDEX {} ON {}",
            self.quote(index),
            self.quote_table(table)
        )
    }

    fn tables_query(&self, sql: &mut Sql) {
        sql.push(
            "SELECT CAST(NULL AS CHAR), CAST(table_name AS CHAR) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE' ORDER BY table_name",
        );
    }

    fn columns_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push("SELECT CAST(column_name AS CHAR), CAST(data_type AS CHAR), CASE WHEN is_nullable = 'YES' THEN 1 ELSE 0 END FROM information_schema.columns WHERE table_schema = ");
        sql.table_named(table, "DATABASE()", "table_name")
            .push(" ORDER BY ordinal_position");
    }

    fn partition_name_expr(&self, column: &str, grain: Grain) -> String {
        let format = grain.name_pattern();
        format!("CAST(DATE_FORMAT({column}, '{format}') AS CHAR)")
    }

    /// Cheap arithmetic per row rather than formatting text: the day, the
    /// day plus its hour, or the month's last day (a date of that month).
    fn partition_bucket(&self, column: &str, grain: Grain, kind: ColumnKind) -> String {
        match (grain, kind) {
            (Grain::Day, ColumnKind::Date) => column.to_string(),
            (Grain::Day, _) => format!("DATE({column})"),
            (Grain::Hour, _) => format!("DATE({column}) + INTERVAL HOUR({column}) HOUR"),
            (Grain::Month, _) => format!("LAST_DAY({column})"),
        }
    }

    /// With an index leading on the column, MariaDB evaluates the table's
    /// lowest and highest values while planning (two index dives) and drops
    /// the range filter when they lie in it; otherwise it tests the range
    /// on every row even where the index range covers the whole table
    /// (+45 % CPU for a count over all of a 2M-row table).
    fn whole_table(&self) -> WholeTable {
        WholeTable::WithinOrRange
    }

    fn leading_index_query(&self, sql: &mut Sql, table: &TableName, column: &Ident) {
        sql.push("SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = ");
        sql.table_named(table, "DATABASE()", "table_name")
            .push(" AND LOWER(column_name) = LOWER(")
            .bind(column.as_str())
            .push(") AND seq_in_index = 1 AND index_type = 'BTREE'");
    }

    /// InnoDB's in-memory UPDATE_TIME, set at each commit to the table, in
    /// whole seconds: settled once the clock has moved a second past it,
    /// since a later commit in the same second would leave it as it is.
    /// CREATE_TIME moves when TRUNCATE rebuilds the table.
    fn change_signal_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push(
            "SELECT CONCAT_WS('|', COALESCE(CAST(UPDATE_TIME AS CHAR), '-'), COALESCE(CAST(CREATE_TIME AS CHAR), '-')), \
             CAST(NULL AS SIGNED), CAST(NULL AS SIGNED), CAST(NULL AS SIGNED), \
             CAST(COALESCE(UPDATE_TIME < NOW() - INTERVAL 1 SECOND, 1) AS SIGNED) \
             FROM information_schema.tables WHERE table_schema = ",
        );
        sql.table_named(table, "DATABASE()", "table_name");
    }

    fn text_expr(&self, column: &str) -> String {
        format!("CAST({column} AS CHAR)")
    }

    /// A spatial value cannot be cast to text: it is shown as its WKT;
    /// bytes and a FLOAT as below.
    fn value_text(&self, column: &str, type_name: &str) -> String {
        const SPATIAL: [&str; 8] = [
            "geometry",
            "point",
            "linestring",
            "polygon",
            "multipoint",
            "multilinestring",
            "multipolygon",
            "geometrycollection",
        ];
        const BINARY: [&str; 6] = [
            "binary",
            "varbinary",
            "tinyblob",
            "blob",
            "mediumblob",
            "longblob",
        ];
        let type_name = type_name.to_ascii_lowercase();
        if SPATIAL.contains(&type_name.as_str()) {
            format!("ST_AsText({column})")
        } else if BINARY.contains(&type_name.as_str()) {
            // Bytes need not be UTF-8: shown as the literal that writes them.
            format!("CONCAT('0x', HEX({column}))")
        } else if type_name == "float" {
            // Its text has six digits, which floats apart share
            // (1770000000 and 1770000128); the DOUBLE it widens to is exact.
            format!("CAST(CAST({column} AS DOUBLE) AS CHAR)")
        } else {
            self.text_expr(column)
        }
    }

    /// The first 60 bits of the SHA-1 of the row's text ([`row_text`]). SHA-1 costs
    /// half what MD5 does per row on MariaDB 10.11 (fingerprint version 3;
    /// version 2 was MD5 of length-prefixed values).
    fn row_hash(&self, columns: &[(String, String)]) -> RowHash {
        RowHash::Sql(format!(
            "CAST(CONV(LEFT(SHA1({}), 15), 16, 10) AS SIGNED)",
            row_text(columns)
        ))
    }

    /// Strings byte for byte: under a `_ci` collation 'alice' to 'Alice'
    /// would be no change (written by the upsert, but not counted).
    fn differs(&self, a: &str, b: &str, column: &Column) -> String {
        const STRINGS: [&str; 8] = [
            "char",
            "varchar",
            "tinytext",
            "text",
            "mediumtext",
            "longtext",
            "enum",
            "set",
        ];
        if STRINGS.contains(&column.type_name.as_str()) {
            format!("NOT (BINARY {a} <=> BINARY {b})")
        } else {
            format!("NOT ({a} <=> {b})")
        }
    }

    fn create_stage(&self, stage: &Ident) -> String {
        format!("CREATE TEMPORARY TABLE {} AS ", self.quote(stage))
    }

    fn drop_stage(&self, stage: &Ident) -> String {
        format!("DROP TEMPORARY TABLE IF EXISTS {}", self.quote(stage))
    }

    /// Only the stage's rows that are new or differ reach the upsert: `ON
    /// DUPLICATE KEY UPDATE` fires the target's update triggers on every
    /// row it matches, changed or not.
    fn upsert(
        &self,
        target: &TableName,
        stage: &Ident,
        columns: &[Column],
        keys: &[Ident],
    ) -> String {
        let q = |c: &Ident| self.quote(c);
        let cols = self.column_list(columns);
        // Every column, keys among them: a key matched under a `_ci` or
        // PAD SPACE collation may be spelled otherwise, and takes the
        // source's spelling.
        let set = columns
            .iter()
            .map(|c| format!("{0} = VALUES({0})", q(&c.name)))
            .collect::<Vec<_>>()
            .join(", ");
        let same_key = self.key_match(keys);
        let target = self.quote_table(target);
        format!(
            "INSERT INTO {target} ({cols}) SELECT {cols} FROM {} s WHERE NOT EXISTS \
             (SELECT 1 FROM {target} t WHERE {same_key} AND NOT ({})) \
             ON DUPLICATE KEY UPDATE {set}",
            self.quote(stage),
            self.any_differs("t", "s", columns)
        )
    }

    /// The lock statement's own bound passed (`ER_STATEMENT_TIMEOUT`).
    fn lock_refused(&self, err: &dyn sqlx::error::DatabaseError) -> bool {
        err.try_downcast_ref::<MySqlDatabaseError>()
            .is_some_and(|e| e.number() == 1969)
    }

    fn upsert_matches_any_unique_index(&self) -> bool {
        true
    }

    /// InnoDB's row lock wait and the wait for a table's metadata lock.
    fn waited_on_lock(&self, err: &dyn sqlx::error::DatabaseError) -> bool {
        err.try_downcast_ref::<MySqlDatabaseError>()
            .is_some_and(|e| e.number() == 1205)
    }

    /// InnoDB's row locks only: a metadata lock's holder is not shown
    /// without a plugin.
    fn blocker_query(&self, sql: &mut Sql, holder: &SessionHolder) -> bool {
        let SessionHolder::Session(id) = holder else {
            return false;
        };
        sql.push(PROCESSES)
            .push(
                " WHERE p.ID IN (SELECT b.trx_mysql_thread_id \
                 FROM information_schema.INNODB_LOCK_WAITS w \
                 JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id \
                 JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id \
                 WHERE r.trx_mysql_thread_id = ",
            )
            .bind(*id)
            .push(") ORDER BY p.TIME DESC LIMIT 1");
        true
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
    /// Keys of tables in the target's own database: the server looks up
    /// `referential_constraints` by the referring table's database, and
    /// without it reads every database's tables (14 ms for 292 tables here,
    /// 0.5 ms with it). A key from another database is not seen.
    fn references_query(&self, sql: &mut Sql, table: &TableName) -> bool {
        sql.push("SELECT CAST(constraint_name AS CHAR), CAST(CONCAT(constraint_schema, '.', table_name) AS CHAR), CAST(delete_rule AS CHAR) FROM information_schema.referential_constraints WHERE constraint_schema = unique_constraint_schema AND unique_constraint_schema = ");
        sql.table_named(table, "DATABASE()", "referenced_table_name");
        true
    }

    fn unique_key_sets_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push("SELECT CAST(index_name AS CHAR), CAST(column_name AS CHAR) FROM information_schema.statistics WHERE non_unique = 0 AND table_schema = ");
        sql.table_named(table, "DATABASE()", "table_name")
            .push(" ORDER BY index_name, seq_in_index");
    }
}

/// The sessions of the process list as
/// [`super::lock_holder::LockHolder::from_row`] reads them (`p`), "same host" as the asking session's.
const PROCESSES: &str = "SELECT CAST(p.ID AS SIGNED), CAST(NULL AS CHAR), CAST(p.USER AS CHAR), \
     CAST(p.HOST AS CHAR), CAST(p.COMMAND <> 'Sleep' AS SIGNED), CAST(p.TIME AS SIGNED), \
     CAST(p.INFO AS CHAR), CAST(SUBSTRING_INDEX(p.HOST, ':', 1) = (SELECT \
     SUBSTRING_INDEX(HOST, ':', 1) FROM information_schema.PROCESSLIST \
     WHERE ID = CONNECTION_ID()) AS SIGNED) \
     FROM information_schema.PROCESSLIST p";

/// The text a row's hash digests: its values, each `QUOTE`d (NULL as the
/// bare word) so that no two rows read alike. A `FLOAT` is quoted as the
/// `DOUBLE` it is exactly (`QUOTE` writes a float's first six digits, which
/// hid a change in the seventh); a string or binary value longer than
/// [`LONG_VALUE`] bytes by its SHA-1, which `QUOTE` could make longer than
/// `max_allowed_packet` (a backslash doubles), a NULL then (the value
/// dropped out of the hash) or, in strict mode, an error on every load.
/// The digest's 40 hexadecimal digits never begin with the quote every
/// `QUOTE`d string begins with, nor read as `NULL`.
fn row_text(columns: &[(String, String)]) -> String {
    let values: Vec<String> = columns
        .iter()
        .map(|(c, t)| match t.to_ascii_lowercase().as_str() {
            "float" => format!("QUOTE(CAST({c} AS DOUBLE))"),
            "char" | "varchar" | "binary" | "varbinary" | "tinytext" | "text" | "mediumtext"
            | "longtext" | "tinyblob" | "blob" | "mediumblob" | "longblob" | "json" => {
                // The digest as ASCII, which every column's character set
                // takes: a latin1 column's QUOTE beside SHA-1's utf8 text is
                // an illegal mix of collations.
                format!(
                    "IF(LENGTH({c}) > {LONG_VALUE}, CONVERT(SHA1({c}) USING ascii), QUOTE({c}))"
                )
            }
            _ => format!("QUOTE({c})"),
        })
        .collect();
    format!("CONCAT_WS(',', {})", values.join(", "))
}

/// Bytes of a string value above which a row's text holds its digest,
/// not the value quoted.
const LONG_VALUE: usize = 1024;

/// Output column names of a SELECT, from the driver's own prepare, on a connection of its own that waits on
/// a table's metadata lock (an `ALTER`, a `LOCK TABLES`) no longer than
/// the sessions' lock timeout.
pub(super) async fn describe(
    url: &str,
    select: &str,
    limits: DescribeLimits,
) -> Result<Vec<String>, sqlx::Error> {
    use sqlx::{Column, Connection, Executor, SqlSafeStr, Statement};
    let mut conn = limits
        .connect(sqlx::mysql::MySqlConnection::connect(url))
        .await?;
    sqlx::query("SET SESSION lock_wait_timeout = ?")
        .bind(limits.lock.as_secs().max(1) as i64)
        .execute(&mut conn)
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

/// What the console asks MariaDB/MySQL which partitions are locked with:
/// per job, each partition's name with its lock's name, as one JSON array,
/// made once per range of partitions and kept. Naming and hashing the
/// 87,600 hours of a ten-year hourly job again at every refresh, and
/// hashing them again on the server, took 0.65 % of a core in idem and
/// 0.2 % in the server while the console sat idle.
#[derive(Default)]
pub(super) struct LockProbes {
    /// The session's database (`DATABASE()`), part of every lock name.
    database: tokio::sync::OnceCell<String>,
    /// Per job: the target, first and last partition and how many, and
    /// the list made for them.
    lists: std::sync::Mutex<HashMap<String, (ProbeRange, Arc<String>)>>,
}

type ProbeRange = (String, Partition, Partition, usize);

impl LockProbes {
    /// The session's database, asked of the server once.
    async fn database<'e>(
        &self,
        conn: impl sqlx::Executor<'e, Database = sqlx::Any>,
    ) -> Result<&str, sqlx::Error> {
        use sqlx::Row;
        let database = self
            .database
            .get_or_try_init(|| async {
                let row = sqlx::query("SELECT CAST(COALESCE(DATABASE(), '') AS CHAR)")
                    .fetch_one(conn)
                    .await?;
                row.try_get::<String, _>(0)
            })
            .await?;
        Ok(database)
    }

    /// The names of a load's session locks, one per key, in order. Asked
    /// on the load's own connection: the pool may have none to spare.
    pub(super) async fn names(
        &self,
        conn: &mut sqlx::AnyConnection,
        keys: &[String],
    ) -> Result<Vec<String>, sqlx::Error> {
        let database = self.database(conn).await?;
        Ok(keys.iter().map(|key| lock_name(database, key)).collect())
    }

    /// The list for these partitions of `job`.
    async fn list(
        &self,
        pool: &sqlx::AnyPool,
        job: &Job,
        partitions: &[Partition],
        names: TableNames,
    ) -> Result<Arc<String>, sqlx::Error> {
        let (Some(first), Some(last)) = (partitions.first(), partitions.last()) else {
            return Ok(Arc::new("[]".into()));
        };
        let range = (job.target.to_string(), *first, *last, partitions.len());
        if let Ok(lists) = self.lists.lock()
            && let Some((kept, list)) = lists.get(&job.name)
            && *kept == range
        {
            return Ok(Arc::clone(list));
        }
        let database = self.database(pool).await?;
        let pairs: Vec<(String, String)> = partitions
            .iter()
            .map(|p| {
                (
                    p.name(),
                    lock_name(database, &PartitionLock::probe_key(job, p, names)),
                )
            })
            .collect();
        let list =
            Arc::new(serde_json::to_string(&pairs).map_err(|e| sqlx::Error::Encode(Box::new(e)))?);
        if let Ok(mut lists) = self.lists.lock() {
            lists.insert(job.name.clone(), (range, Arc::clone(&list)));
        }
        Ok(list)
    }
}

/// Which of `job`'s partitions some session holds the lock of, asked in
/// one query whatever their number: the `(partition, lock name)` pairs
/// travel as one JSON array that `JSON_TABLE` turns into rows (MariaDB
/// 10.6+, MySQL 8), so a status of 3,650 partitions is one round trip and
/// one short statement.
pub(super) async fn held(
    pool: &sqlx::AnyPool,
    probes: &LockProbes,
    names: TableNames,
    job: &Job,
    partitions: &[Partition],
) -> Result<std::collections::HashSet<String>, sqlx::Error> {
    use sqlx::Row;
    let mut out = std::collections::HashSet::new();
    if partitions.is_empty() {
        return Ok(out);
    }
    let list = probes.list(pool, job, partitions, names).await?;
    let mut sql = Sql::new(&MySql::DEFAULT);
    sql.push("SELECT j.p FROM JSON_TABLE(")
        .bind(list.as_str())
        .push(
            ", '$[*]' COLUMNS (p VARCHAR(64) PATH '$[0]', k VARCHAR(64) PATH '$[1]')) AS j \
             WHERE IS_USED_LOCK(j.k) IS NOT NULL",
        );
    for row in sql.query().fetch_all(pool).await? {
        out.insert(row.try_get::<String, _>(0)?);
    }
    Ok(out)
}

mod server;
pub(super) mod session;
pub(super) use server::as_the_server_reads;

#[cfg(test)]
mod tests;
