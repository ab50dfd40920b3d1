//! PostgreSQL 15+ and Postgres-wire engines: advisory transaction locks,
//! MERGE for upserts, the ledger in schema `idem`.

use std::time::Duration;

use chrono::NaiveDateTime;

use super::columns::DescribeLimits;
use super::fingerprint::RowHash;
use super::ledger::ColumnTypes;
use super::sql::{Sql, Value};
use super::{
    Column, ColumnKind, Dialect, Engine, LockPlan, MatchForm, PartitionLock, SessionAsk,
    SessionHolder, TransactionIds, lock_key_i64,
};
use crate::config::{Ident, TableName};
use crate::partition::Grain;

mod compare;
mod cover;
mod row_hash;

use row_hash::{hash_value, null_hash};

pub struct Postgres;

/// An index of `table` by its qualified name: an index lives in its
/// table's schema.
fn index_of(table: &TableName, index: &Ident) -> TableName {
    TableName {
        schema: table.schema.clone(),
        name: index.clone(),
    }
}

impl Dialect for Postgres {
    fn engine(&self) -> Engine {
        Engine::Postgres
    }

    /// A join's rows hold both sides' columns, at most 1,664: past 800
    /// columns (with room to spare) the compare runs per target row.
    fn match_form(&self, columns: usize) -> MatchForm {
        if 2 * columns > 1600 {
            MatchForm::Lateral
        } else {
            MatchForm::Join
        }
    }

    fn quote(&self, ident: &Ident) -> String {
        format!("\"{ident}\"")
    }

    fn placeholder(&self, n: usize) -> String {
        format!("${n}")
    }

    fn instant_param(&self, placeholder: &str, kind: ColumnKind) -> String {
        // The bound is seconds since the epoch, made the column's type by
        // immutable functions only: each execution is planned with its own
        // values (plan_cache_mode, below), so the planner folds the whole
        // expression into a constant. It estimates the window by its real
        // bounds and nothing is cast per row (a cast of text to a date is
        // only stable: it would run for every row a filter reads).
        match kind {
            ColumnKind::Date => {
                format!("(DATE '1970-01-01' + CAST({placeholder} / 86400 AS integer))")
            }
            ColumnKind::TimestampTz => format!("to_timestamp({placeholder})"),
            ColumnKind::Timestamp | ColumnKind::Other => {
                format!("(TIMESTAMP '1970-01-01 00:00:00' + {placeholder} * INTERVAL '1 second')")
            }
        }
    }

    fn instant_value(&self, t: NaiveDateTime, _grain: Grain) -> Value {
        Value::Int(t.and_utc().timestamp())
    }

    fn session_setup(&self) -> &'static [&'static str] {
        // One simple query, one round trip for all of them. Windows are UTC
        // instants whatever the server's time zone. A load's statements are
        // prepared once and run for every partition while the target grows:
        // a generic plan made when it was empty (a sequential scan) would
        // then read the whole table for every window, so each execution is
        // planned for its own window.
        //
        // A statement whose client is gone stops rather than running on
        // under its partition's lock: PostgreSQL 14 and later look at the
        // connection every second while they work, which sees idem killed
        // (its kernel closes the connection) at once, and a client host or
        // network gone silent once the server's keepalive probes (from 15 s
        // idle) or the data it sent have gone unanswered for 30 s. The
        // probes also keep a NAT or load balancer from dropping the
        // connection of a long statement as idle.
        //
        // The texts some values are hashed by (`hash_value`) are made
        // under settings of idem's own, whatever the role's or database's:
        // floats' shortest exact digits, intervals in PostgreSQL's words,
        // bytes in hexadecimal (a row of a type without a hash function is
        // hashed by its text, and a load's fingerprint is compared with
        // one another session took).
        //
        // Each statement sees what committed before it, whatever isolation
        // the role or database defaults to: under `serializable`, loads of
        // one table's windows at once failed each other with serialization
        // failures, past their retries.
        &["SET TIME ZONE 'UTC'; SET application_name = 'idem'; \
           SET default_transaction_isolation = 'read committed'; \
           SET extra_float_digits = 1; SET IntervalStyle = 'postgres'; \
           SET bytea_output = 'hex'; \
           SET plan_cache_mode = force_custom_plan; \
           SET tcp_keepalives_idle = 15; SET tcp_keepalives_interval = 5; \
           SET tcp_keepalives_count = 3; SET tcp_user_timeout = 30000; \
           SELECT set_config('client_connection_check_interval', '1s', false) \
           WHERE current_setting('server_version_num')::int >= 140000"]
    }

    /// Every statement of the session, not only the partition lock, waits
    /// at most `lock_timeout` for a lock another session holds (a reader of
    /// the target behind an `ALTER TABLE` must not hang).
    fn session_timeouts(&self, lock: Duration, statement: Option<Duration>) -> Vec<Sql> {
        let setting = |name: &str, ms: u128| {
            let mut sql = Sql::new(&Postgres);
            sql.push("SELECT 1 FROM (SELECT set_config(")
                .bind(name)
                .push(", ")
                .bind(format!("{ms}ms"))
                .push(", false)) t");
            sql
        };
        // PostgreSQL reads 0 as "wait forever"; idem's 0 lock timeout is
        // "do not wait", its 0 statement timeout "no limit", as PostgreSQL's.
        let mut out = vec![setting("lock_timeout", lock.as_millis().max(1))];
        out.extend(statement.map(|t| setting("statement_timeout", t.as_millis())));
        out
    }

    fn lock_plan(&self) -> LockPlan {
        LockPlan::InTransaction
    }

    /// BEGIN and the advisory locks in one round trip; the target list is
    /// evaluated in order, so the keys are taken oldest first. The
    /// session's own `lock_timeout` (set at connect, see
    /// [`Dialect::session_timeouts`]) bounds the wait.
    fn deletes_in_with(&self) -> bool {
        true
    }

    fn transaction_ids(&self) -> Option<TransactionIds> {
        Some(TransactionIds {
            current: "CAST(CAST(pg_current_xact_id() AS text) AS bigint)",
            next: "CAST(CAST(pg_snapshot_xmax(pg_current_snapshot()) AS text) AS bigint)",
        })
    }

    /// Ordinary and partitioned tables; the name resolved as the load's
    /// own statements resolve it.
    fn rows_name_writer_query(&self, sql: &mut Sql, table: &TableName) -> bool {
        sql.push("SELECT 1 FROM pg_catalog.pg_class WHERE oid = CAST(")
            .bind(self.quote_table(table))
            .push(" AS regclass) AND relkind IN ('r', 'p')");
        true
    }

    /// `xmin` holds the low 32 bits of the writer's id. The error is a
    /// failed cast of text naming the row's writer: core PostgreSQL has no
    /// function raising one, and it depends on the row, so the planner
    /// cannot fold it. `scope` keeps it from rows the statement does not
    /// touch, whatever order the planner tests conditions in.
    fn written_by(&self, sql: &mut Sql, txid: i64, scope: &dyn Fn(&mut Sql)) {
        sql.push("CASE WHEN xmin = CAST(")
            .bind((txid & 0xffff_ffff).to_string())
            .push(" AS xid) THEN TRUE WHEN ");
        scope(sql);
        sql.push(" THEN CAST('")
            .push(super::WRITTEN_ELSEWHERE)
            .push(", by transaction ' || CAST(xmin AS text) AS integer) > 0 ELSE FALSE END");
    }

    /// The session is named for the transaction (`SET LOCAL`): a cancel
    /// ends the session of that name holding the lock, never one that took
    /// the lock after the load's own session was gone. The tiers are taken
    /// coarsest first, shared but for the window's own unit (see
    /// [`PartitionLock::tiers`]).
    fn begin_statement(&self, lock: &PartitionLock) -> Option<String> {
        let locks: Vec<String> = lock
            .tiers
            .iter()
            .map(|tier| {
                let f = if tier.exclusive {
                    "pg_advisory_xact_lock"
                } else {
                    "pg_advisory_xact_lock_shared"
                };
                format!("{f}({})", lock_key_i64(&tier.key))
            })
            .collect();
        Some(format!(
            "BEGIN; SET LOCAL application_name = '{}'; SELECT {}",
            lock.session,
            locks.join(", ")
        ))
    }

    /// Under the two-key form, which the server holds apart from the
    /// partitions' one-key locks; `lock_timeout` bounds the wait.
    fn numbering_lock(&self, sql: &mut Sql, job: &str, part: &str, _timeout: Duration) -> bool {
        let key = lock_key_i64(&format!("ledger\n{job}\n{part}"));
        let (high, low) = ((key >> 32) as i32, key as i32);
        sql.push(&format!(
            "SELECT CAST(count(pg_advisory_xact_lock({high}, {low})) AS bigint)"
        ));
        true
    }

    /// The holder of a tier in a mode that excludes the load's: of its
    /// exclusive key in any mode, of its shared ones exclusively. From the
    /// activity view (a role sees another role's statement only with
    /// `pg_read_all_stats`).
    fn lock_holder_query(&self, sql: &mut Sql, lock: &PartitionLock, _names: &[String]) -> bool {
        let keys = |exclusive: bool| -> String {
            let keys: Vec<String> = lock
                .tiers
                .iter()
                .filter(|t| t.exclusive == exclusive)
                .map(|t| lock_key_i64(&t.key).to_string())
                .collect();
            if keys.is_empty() {
                "NULL".into()
            } else {
                keys.join(", ")
            }
        };
        sql.push(SESSIONS)
            .push(" WHERE a.pid IN (SELECT pid ")
            .push(ADVISORY_LOCKS_HELD)
            .push(" AND pid <> pg_backend_pid() AND (")
            .push(ADVISORY_KEY)
            .push(" IN (")
            .push(&keys(true))
            .push(") OR mode = 'ExclusiveLock' AND ")
            .push(ADVISORY_KEY)
            .push(" IN (")
            .push(&keys(false))
            .push("))) ORDER BY a.xact_start LIMIT 1");
        true
    }

    /// A session holding a lock on the table (or one of its partitions)
    /// in a mode a load's DELETE, INSERT or TRUNCATE waits on: an `ALTER
    /// TABLE`, a `LOCK TABLE`, a `VACUUM FULL`, an index built without
    /// `CONCURRENTLY`. The oldest such transaction first.
    fn table_lock_holder_query(&self, sql: &mut Sql, table: &TableName) -> bool {
        sql.push(SESSIONS)
            .push(
                " WHERE a.pid IN (SELECT l.pid FROM pg_catalog.pg_locks l \
                 WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid() \
                 AND l.mode IN ('ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock') \
                 AND l.relation IN (WITH RECURSIVE tree (oid) AS (SELECT CAST(CAST(",
            )
            .bind(self.quote_table(table))
            // The partitions from the catalogue: `pg_partition_tree` opens
            // the table, which waits on the very lock asked about.
            .push(
                " AS regclass) AS oid) UNION ALL SELECT i.inhrelid FROM pg_catalog.pg_inherits i \
                 JOIN tree t ON i.inhparent = t.oid) SELECT oid FROM tree)) \
                 ORDER BY a.xact_start LIMIT 1",
            );
        true
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

    /// A PostgreSQL index holds only what it names.
    fn indexes_hold_the_key(&self) -> bool {
        false
    }

    /// By the names as the server resolves them (`to_regclass`, NULL for
    /// none): one probe of `pg_index` by its key. Joining `pg_class` and
    /// `pg_namespace` to match the names took 2.4 ms of a new session's
    /// time (planning, with its catalogue caches cold), the `pg_indexes`
    /// view 3.1–4.2 ms.
    fn index_exists_query(&self, sql: &mut Sql, table: &TableName, index: &Ident) {
        sql.push("SELECT 1 FROM pg_catalog.pg_index WHERE indexrelid = to_regclass(")
            .bind(self.quote_table(&index_of(table, index)))
            .push(") AND indrelid = to_regclass(")
            .bind(self.quote_table(table))
            .push(")");
    }

    /// The session of the load's name holding its first advisory lock in
    /// this database. A role may end its own sessions.
    fn load_session(&self, sql: &mut Sql, holder: &SessionHolder, ask: SessionAsk) -> bool {
        let SessionHolder::Named { session, key } = holder else {
            return false;
        };
        sql.push(match ask {
            SessionAsk::End => "SELECT count(pg_terminate_backend(pid)) ",
            SessionAsk::Count => "SELECT count(*) ",
        })
        .push(ADVISORY_LOCKS_HELD)
        .push(" AND pid <> pg_backend_pid() AND ")
        .push(ADVISORY_KEY)
        .push(" = ")
        .bind(lock_key_i64(key))
        .push(" AND pid IN (SELECT pid FROM pg_catalog.pg_stat_activity WHERE application_name = ")
        .bind(session.as_str())
        .push(")");
        true
    }

    fn read_only_query(&self) -> Option<&'static str> {
        Some(
            "SELECT CASE WHEN pg_is_in_recovery() THEN 'the server is a standby (in recovery)' \
             WHEN current_setting('transaction_read_only') = 'on' \
             THEN 'its sessions are read-only (default_transaction_read_only is on for this role or database)' END",
        )
    }

    fn schema_exists_query(&self, sql: &mut Sql, schema: &Ident) {
        sql.push("SELECT 1 FROM pg_catalog.pg_namespace WHERE nspname = ")
            .bind(schema.as_str());
    }

    fn drop_index(&self, table: &TableName, index: &Ident) -> String {
        format!("DROP INDEX {}", self.quote_table(&index_of(table, index)))
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

    /// From `pg_catalog`, with types named as `information_schema.columns`
    /// names them (`data_type`: a domain as its base type, `ARRAY`,
    /// `USER-DEFINED`), which the row hash and window bounds go by. That
    /// view checks privileges on every column of the database before it
    /// filters: a first read in a new session took 9–14 ms against 6–7 ms
    /// here, on a catalogue of a few hundred columns; it grows with the
    /// warehouse's catalogue, this does not.
    fn columns_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push(
            "SELECT CAST(a.attname AS text), CAST(CASE \
             WHEN t.typtype = 'd' THEN CASE \
               WHEN b.typelem <> 0 AND b.typlen = -1 THEN 'ARRAY' \
               WHEN b.typnamespace = 'pg_catalog'::regnamespace THEN format_type(t.typbasetype, NULL) \
               ELSE 'USER-DEFINED' END \
             WHEN t.typelem <> 0 AND t.typlen = -1 THEN 'ARRAY' \
             WHEN t.typnamespace = 'pg_catalog'::regnamespace THEN format_type(a.atttypid, NULL) \
             ELSE 'USER-DEFINED' END AS text), \
             CASE WHEN a.attnotnull OR (t.typtype = 'd' AND t.typnotnull) THEN 0 ELSE 1 END \
             FROM pg_catalog.pg_attribute a \
             JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
             LEFT JOIN pg_catalog.pg_type b ON t.typtype = 'd' AND b.oid = t.typbasetype \
             WHERE a.attnum > 0 AND NOT a.attisdropped \
             AND c.relkind IN ('r', 'v', 'f', 'p', 'm') AND n.nspname = ",
        );
        sql.table_named(table, "current_schema()", "c.relname")
            .push(" ORDER BY a.attnum");
    }

    fn partition_name_expr(&self, column: &str, grain: Grain) -> String {
        let format = match grain {
            Grain::Hour => "YYYY-MM-DD\"T\"HH24",
            Grain::Day => "YYYY-MM-DD",
            Grain::Month => "YYYY-MM",
        };
        format!("to_char({column}, '{format}')")
    }

    /// Cast first, so that a date and a timestamp of either kind (a zoned
    /// one by the session's time zone, which idem sets to UTC) bucket alike.
    fn source_bucket(&self, column: &str, grain: Grain) -> String {
        match grain {
            Grain::Day => format!("CAST({column} AS date)"),
            Grain::Hour => format!("date_trunc('hour', CAST({column} AS timestamp))"),
            Grain::Month => format!("date_trunc('month', CAST({column} AS timestamp))"),
        }
    }

    fn partition_bucket(&self, column: &str, grain: Grain, kind: ColumnKind) -> String {
        // A zoned timestamp is bucketed by its UTC wall time, whatever the
        // session's time zone (idem sets UTC, but a session may change it).
        let utc;
        let column = if kind == ColumnKind::TimestampTz {
            utc = format!("({column} AT TIME ZONE 'UTC')");
            utc.as_str()
        } else {
            column
        };
        match (grain, kind) {
            (Grain::Day, ColumnKind::Date) => column.to_string(),
            (Grain::Hour, _) => format!("date_trunc('hour', {column})"),
            (Grain::Day, _) => format!("date_trunc('day', {column})"),
            (Grain::Month, _) => format!("date_trunc('month', {column})"),
        }
    }

    fn leading_index_query(&self, sql: &mut Sql, table: &TableName, column: &Ident) {
        sql.push(
            "SELECT COUNT(*) FROM pg_catalog.pg_index i \
             JOIN pg_catalog.pg_class c ON c.oid = i.indrelid \
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid \
             JOIN pg_catalog.pg_am am ON am.oid = ic.relam \
             JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0] \
             WHERE am.amname = 'btree' AND i.indpred IS NULL AND a.attname = ",
        )
        .bind(column.as_str())
        .push(" AND n.nspname = ")
        .table_named(table, "current_schema()", "c.relname");
    }

    /// The relations holding the table's rows (itself, or the leaf
    /// partitions of a partitioned table): their file nodes, which TRUNCATE
    /// replaces transactionally, and the statistics collector's tuple
    /// counters, which every committed (or rolled back) write moves but
    /// which a backend publishes up to a second or so after it commits.
    fn change_signal_query(&self, sql: &mut Sql, table: &TableName) {
        sql.push(
            "SELECT string_agg(CAST(c.oid AS text) || ':' || CAST(c.relfilenode AS text), ',' ORDER BY c.oid), \
             CAST(SUM(s.n_tup_ins) AS bigint), CAST(SUM(s.n_tup_upd) AS bigint), \
             CAST(SUM(s.n_tup_del) AS bigint), CAST(1 AS bigint) \
             FROM pg_class c LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid \
             WHERE c.relkind <> 'p' AND c.oid IN (SELECT CAST(",
        )
        .bind(self.quote_table(table))
        .push(" AS regclass) UNION ALL SELECT relid FROM pg_partition_tree(CAST(")
        .bind(self.quote_table(table))
        .push(" AS regclass)))");
    }

    fn text_expr(&self, column: &str) -> String {
        format!("CAST({column} AS text)")
    }

    /// The row's values hashed by [`hash_value`], each seeded by its
    /// column's place, combined by XOR and kept to 60 bits. Calling each
    /// type's function costs a third of `hash_record_extended(ROW(…))`,
    /// which builds a record per row (100k rows: 13 ms against 30 ms, the
    /// bare read 11 ms). A NULL hashes as a constant of its own per place,
    /// not as the seed, which some types' hash functions return for a value
    /// (version 5 hashed NULL as its place: a NULL against 0.0 hashed alike).
    /// The XOR is not hashed again: that folded it to 32 bits. A row with
    /// a column of a type without a hash function falls back to the first
    /// 60 bits of the MD5 of the row's text.
    fn row_hash(&self, columns: &[(String, String)]) -> RowHash {
        let hashed: Option<Vec<String>> = columns
            .iter()
            .enumerate()
            .map(|(i, (c, t))| {
                hash_value(c, t, i + 1).map(|h| format!("COALESCE({h}, {})", null_hash(i + 1)))
            })
            .collect();
        if let Some(values) = hashed {
            RowHash::Sql(format!("(({}) & 1152921504606846975)", values.join(" # ")))
        } else {
            let values = columns
                .iter()
                .map(|(c, _)| c.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            RowHash::Sql(format!(
                "CAST(CAST('x' || LEFT(md5(CAST(ROW({values}) AS text)), 15) AS bit(60)) AS bigint)"
            ))
        }
    }

    fn native_partitions_query(&self, sql: &mut Sql, table: &TableName, column: &str) -> bool {
        sql.push(
            "SELECT CAST(n.nspname AS text), CAST(c.relname AS text), pg_get_expr(c.relpartbound, c.oid), \
             CASE WHEN NOT has_table_privilege(c.oid, 'TRUNCATE') THEN 'this role may not TRUNCATE it' \
             WHEN EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid IN (c.oid, i.inhparent) \
             AND NOT t.tgisinternal AND (CAST(t.tgtype AS integer) & 8) <> 0) \
             THEN 'a TRUNCATE would not fire its DELETE triggers' \
             WHEN EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' \
             AND f.confrelid IN (c.oid, i.inhparent)) THEN 'a foreign key refers to it' END \
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind = 'r' AND i.inhparent = CAST(",
        )
        .bind(self.quote_table(table))
        .push(" AS regclass) AND pg_get_partkeydef(CAST(")
        .bind(self.quote_table(table))
        .push(" AS regclass)) = 'RANGE (' || quote_ident(")
        .bind(column)
        .push(") || ')'");
        true
    }

    fn partition_cover_query(&self, sql: &mut Sql, table: &TableName, column: &str) -> bool {
        cover::partition_cover_query(self, sql, table, column)
    }

    fn partition_bound_query(&self, sql: &mut Sql, table: &TableName, child: &TableName) -> bool {
        sql.push(
            "SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i \
             JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhrelid = to_regclass(",
        )
        .bind(self.quote_table(child))
        .push(") AND i.inhparent = to_regclass(")
        .bind(self.quote_table(table))
        .push(")");
        true
    }

    /// By [`compare::differs`].
    fn differs(&self, a: &str, b: &str, column: &Column) -> String {
        compare::differs(a, b, &column.type_name)
    }

    fn create_stage(&self, stage: &Ident) -> String {
        format!("CREATE TEMP TABLE {} ON COMMIT DROP AS ", self.quote(stage))
    }

    fn drop_stage(&self, stage: &Ident) -> String {
        format!("DROP TABLE IF EXISTS pg_temp.{}", self.quote(stage))
    }

    fn analyze_stage(&self, stage: &Ident) -> Option<String> {
        Some(format!("ANALYZE pg_temp.{}", self.quote(stage)))
    }

    fn upsert(
        &self,
        target: &TableName,
        stage: &Ident,
        columns: &[Column],
        keys: &[Ident],
    ) -> String {
        let q = |c: &Ident| self.quote(c);
        let on = self.key_match(keys);
        let mut merge = format!(
            "MERGE INTO {} AS t USING {} AS s ON {on}",
            self.quote_table(target),
            self.quote(stage)
        );
        // Every column, keys among them: a key matched by its type's or
        // collation's equality (citext, a nondeterministic collation) may
        // still be spelled otherwise, and takes the source's spelling.
        let changed = self.any_differs("t", "s", columns);
        let set = columns
            .iter()
            .map(|c| format!("{0} = s.{0}", q(&c.name)))
            .collect::<Vec<_>>()
            .join(", ");
        merge.push_str(&format!(
            " WHEN MATCHED AND ({changed}) THEN UPDATE SET {set}"
        ));
        let cols = self.column_list(columns);
        let vals = columns
            .iter()
            .map(|c| format!("s.{}", q(&c.name)))
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
                    "40001" | "40P01" | LOCK_NOT_AVAILABLE | "57P01" | "57P02" | "57P03"
                ) || code.starts_with("08")
            }
            sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::Protocol(_) => true,
            _ => false,
        }
    }

    /// `lock_not_available`.
    fn lock_refused(&self, err: &dyn sqlx::error::DatabaseError) -> bool {
        err.code().as_deref() == Some(LOCK_NOT_AVAILABLE)
    }

    fn waited_on_lock(&self, err: &dyn sqlx::error::DatabaseError) -> bool {
        err.code().as_deref() == Some(LOCK_NOT_AVAILABLE)
    }

    /// Any lock the server keeps waits in `pg_locks`: a row's (as its
    /// writer's transaction id), the table's, an advisory one.
    fn blocker_query(&self, sql: &mut Sql, holder: &SessionHolder) -> bool {
        let SessionHolder::Named { session, .. } = holder else {
            return false;
        };
        sql.push(SESSIONS)
            .push(
                " WHERE a.pid IN (SELECT unnest(pg_catalog.pg_blocking_pids(w.pid)) \
                 FROM pg_catalog.pg_stat_activity w WHERE w.wait_event_type = 'Lock' \
                 AND w.application_name = ",
            )
            .bind(session.as_str())
            .push(") ORDER BY a.xact_start LIMIT 1");
        true
    }

    fn references_query(&self, sql: &mut Sql, table: &TableName) -> bool {
        sql.push(
            "SELECT CAST(c.conname AS text), CAST(CAST(c.conrelid AS regclass) AS text), \
             CASE c.confdeltype WHEN 'c' THEN 'CASCADE' WHEN 'n' THEN 'SET NULL' \
             WHEN 'd' THEN 'SET DEFAULT' WHEN 'r' THEN 'RESTRICT' ELSE 'NO ACTION' END \
             FROM pg_constraint c JOIN pg_class t ON t.oid = c.confrelid \
             JOIN pg_namespace n ON n.oid = t.relnamespace \
             WHERE c.contype = 'f' AND c.conparentid = 0 AND n.nspname = ",
        );
        sql.table_named(table, "current_schema()", "t.relname");
        true
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
        sql.table_named(table, "current_schema()", "t.relname");
    }
}

/// Output column names of a SELECT, from the driver's own prepare, on a connection of its own that waits on
/// a lock (a source table being reloaded under `LOCK TABLE` or an `ALTER`)
/// no longer than the sessions' `lock_timeout`.
pub(super) async fn describe(
    url: &str,
    select: &str,
    limits: DescribeLimits,
) -> Result<Vec<String>, sqlx::Error> {
    use sqlx::{Column, Connection, Executor, SqlSafeStr, Statement};
    let mut conn = limits
        .connect(sqlx::postgres::PgConnection::connect(url))
        .await?;
    sqlx::query("SELECT set_config('lock_timeout', $1, false)")
        .bind(format!("{}ms", limits.lock.as_millis().max(1)))
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

/// SQLSTATE lock_not_available: a wait for a lock ended by `lock_timeout`.
const LOCK_NOT_AVAILABLE: &str = "55P03";

/// Sessions as [`super::lock_holder::LockHolder::from_row`] reads them:
/// pid, name, user, client, running, seconds in its transaction, its
/// statement, and whether it comes from idem's own host.
const SESSIONS: &str = "SELECT CAST(a.pid AS bigint), a.application_name, CAST(a.usename AS text), \
     CAST(host(a.client_addr) AS text), \
     CAST(CASE WHEN a.state = 'active' THEN 1 ELSE 0 END AS bigint), \
     CAST(EXTRACT(EPOCH FROM now() - a.xact_start) AS bigint), a.query, \
     CAST(CASE WHEN a.client_addr IS NOT DISTINCT FROM inet_client_addr() \
     THEN 1 ELSE 0 END AS bigint) \
     FROM pg_catalog.pg_stat_activity a";

/// The advisory locks granted in this database, as `pg_locks` rows.
const ADVISORY_LOCKS_HELD: &str = "FROM pg_catalog.pg_locks \
     WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
     AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())";

/// A `pg_locks` row's bigint advisory key, from its high and low 32 bits.
const ADVISORY_KEY: &str =
    "CAST((CAST(classid AS bigint) << 32) | CAST(objid AS bigint) AS bigint)";

/// Which partitions some session is loading, by the granted advisory locks
/// (their 64-bit key: classid high, objid low): for each, its name, its
/// own unit's key (held in any mode) and the keys of the units holding it
/// (held exclusively), see [`PartitionLock::probe_tiers`]. The names are
/// made only when some advisory lock is held.
pub(super) async fn held(
    pool: &sqlx::AnyPool,
    keys: impl FnOnce() -> Vec<(String, String, Vec<String>)>,
) -> Result<std::collections::HashSet<String>, sqlx::Error> {
    use sqlx::Row;
    let mut sql = Sql::new(&Postgres);
    sql.push("SELECT ")
        .push(ADVISORY_KEY)
        .push(", CAST(CASE WHEN mode = 'ExclusiveLock' THEN 1 ELSE 0 END AS bigint) ")
        .push(ADVISORY_LOCKS_HELD);
    let rows = sql.query().fetch_all(pool).await?;
    let mut any = std::collections::HashSet::new();
    let mut exclusive = std::collections::HashSet::new();
    for row in &rows {
        let key: i64 = row.try_get(0)?;
        any.insert(key);
        if row.try_get::<i64, _>(1)? == 1 {
            exclusive.insert(key);
        }
    }
    if any.is_empty() {
        return Ok(Default::default());
    }
    Ok(keys()
        .into_iter()
        .filter(|(_, own, covering)| {
            any.contains(&lock_key_i64(own))
                || covering
                    .iter()
                    .any(|k| exclusive.contains(&lock_key_i64(k)))
        })
        .map(|(name, _, _)| name)
        .collect())
}
