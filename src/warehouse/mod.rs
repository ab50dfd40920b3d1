//! The warehouse: one SQL database reached by URL. Each engine is a module
//! implementing [`Dialect`]; everything engine-specific lives there, and the
//! rest of idem speaks to the warehouse through [`Warehouse`].

mod answering;
mod before_a_run;
mod catalog;
mod clock;
mod columns;
mod connect;
mod connection_limit;
mod counts;
mod date_range;
mod error;
mod filled;
mod fingerprint;
mod held_partitions;
mod last_loads;
pub mod ledger;
mod ledger_grouped;
mod ledger_names;
mod ledger_reads;
mod ledger_setup;
mod ledger_targets;
mod load;
mod lock_holder;
mod mysql;
mod partition_cover;
mod partition_lock;
mod postgres;
mod reason_fit;
mod reconcile;
mod references;
mod rows;
mod server_zone;
mod session_zone;
pub(crate) use rows::{text_column, text_columns};
pub mod sql;
mod sqlite;
mod verify;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::{AnyPool, AssertSqlSafe, Executor, Row};

pub use before_a_run::NotToRun;
pub use catalog::{Relation, RelationKind, config_sqlite_url};
pub use columns::{
    Column, ColumnKind, OTHER_INDEX_ADVICE, alike_tables, key_has_index, names_column,
    no_such_column, other_unique_index, renamed_duplicate,
};
pub use counts::{CountSource, Counts, RefreshCache, TargetCounts};
pub use date_range::{DateRange, FIRST_PLAUSIBLE_DATE, Placeholders, ROWS_READ_WITHOUT_INDEX};
pub use error::WarehouseError;
pub use filled::{FilledColumn, Filler};
pub use fingerprint::Fingerprint;
use fingerprint::RowHash;
pub use last_loads::LastLoad;
pub use ledger_names::{Renamed, RetiredName};
use ledger_setup::LedgerPresence;
pub use ledger_targets::{JobLedger, LoadsElsewhere};
pub use load::{
    AttemptMeta, LoadOutcome, LoadStep, Loaded, MergesBefore, SessionAsk, SessionHolder, renumbered,
};
pub(crate) use lock_holder::sqlite_openers;
pub use partition_cover::UncoveredWindow;
pub(crate) use partition_lock::lock_key_i64;
pub use partition_lock::{PartitionLock, Tier};
pub use reconcile::SourceCounts;
pub use references::{DELETING_REFERENCE_ADVICE, Reference};
pub use server_zone::ServerZone;
pub use session_zone::session_zone_note;
pub use sqlite::DATE_GLOB;
pub use verify::{CLOCK_TICK, Difference, Proofs, Verification};

use crate::config::{Ident, Job, TableName, TableNames, WarehouseConfig};
use crate::partition::{Grain, Partition};
use sql::Sql;

pub use crate::config::Engine;

/// How a row count over a range of partitions ([`Warehouse::partition_counts`])
/// spares the range test on every row when the whole table lies in the
/// range (the usual whole-job read), where an index leads on the partition
/// column (its lowest and highest values are two index dives).
pub enum WholeTable {
    /// The range is tested as it is: the planner makes it cost little
    /// (PostgreSQL: 1.02–1.17× the plain `GROUP BY` at 10M rows).
    Filtered,
    /// `(the table lies within) OR (the range)` in the count itself: the
    /// engine evaluates the first part while planning and drops the filter
    /// when it holds (MariaDB).
    WithinOrRange,
    /// Asked by a statement of its own first; when the table lies within,
    /// the count has no filter at all (SQLite, which plans nothing away and
    /// tests a range on every row it groups).
    AskedFirst,
}

/// How an engine serialises writers of one partition.
#[derive(PartialEq, Eq)]
pub enum LockPlan {
    /// The transaction's own BEGIN takes the lock (SQLite `BEGIN IMMEDIATE`).
    Begin,
    /// Taken inside the transaction by statements sent with the BEGIN, in
    /// its round trip, and released at COMMIT/ROLLBACK (PostgreSQL advisory
    /// transaction locks).
    InTransaction,
    /// A session lock taken before BEGIN and released after (MariaDB GET_LOCK).
    Session,
}

/// How a merge counts its matched and changed rows ([`Dialect::match_form`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchForm {
    /// The target joined with the stage, counted at once.
    Join,
    /// Each stage row's target row looked up in a lateral subquery, which
    /// yields the test alone (the joined row would be too wide).
    Lateral,
    /// The join made in a subquery that aggregates nothing (the aggregate
    /// query would read too many terms).
    Subquery,
}

/// What differs between engines. Implemented once per engine module.
pub trait Dialect: Send + Sync {
    fn engine(&self) -> Engine;
    /// Whether a backslash in a string escapes the next character on this
    /// server (a MariaDB/MySQL `sql_mode` can turn it off).
    fn backslash_escapes(&self) -> bool {
        self.engine().backslash_escapes()
    }
    /// Whether a double quote quotes a name on this server, not a string
    /// (a MariaDB/MySQL `sql_mode` can turn it on).
    fn ansi_quotes(&self) -> bool {
        self.engine().ansi_quotes()
    }
    /// An identifier quoted for this engine. It takes an [`Ident`], a name
    /// already checked to be plain, so that nothing unchecked reaches SQL.
    fn quote(&self, ident: &Ident) -> String;
    fn quote_table(&self, table: &TableName) -> String {
        match &table.schema {
            Some(s) => format!("{}.{}", self.quote(s), self.quote(&table.name)),
            None => self.quote(&table.name),
        }
    }
    /// The quoted names of `columns`, comma-separated, in their order.
    fn column_list(&self, columns: &[Column]) -> String {
        (columns.iter())
            .map(|c| self.quote(&c.name))
            .collect::<Vec<_>>()
            .join(", ")
    }
    /// Placeholder for the n-th bound value (1-based).
    fn placeholder(&self, n: usize) -> String;
    /// Wraps a placeholder bound with [`Dialect::instant_value`] so that it
    /// has the type of the column it is compared with (an index on the
    /// column stays usable).
    fn instant_param(&self, placeholder: &str, kind: ColumnKind) -> String;
    /// The value a window boundary is bound as.
    fn instant_value(&self, t: chrono::NaiveDateTime, grain: Grain) -> sql::Value;
    /// Statements run on every new connection.
    fn session_setup(&self) -> &'static [&'static str];
    /// Statements a session runs first, going on without them where they
    /// are refused (they change how the database works for everyone, which
    /// another session's use of it may forbid for now).
    fn session_preferences(&self) -> &'static [&'static str] {
        &[]
    }
    /// Statements bounding a session's lock waits by `lock_timeout` (where
    /// the engine needs them per session) and its statements by
    /// `statement_timeout`.
    fn session_timeouts(&self, _lock: Duration, _statement: Option<Duration>) -> Vec<Sql> {
        Vec::new()
    }
    /// A custom BEGIN, when the default is not enough: for
    /// [`LockPlan::Begin`] and [`LockPlan::InTransaction`], one that takes
    /// the partition's locks, in order, in a session called `lock.session`
    /// (see [`SessionHolder::Named`]). Sent as one simple query (no
    /// parameters: the keys' numbers and the session's name are idem's
    /// own, never input).
    fn begin_statement(&self, _lock: &PartitionLock) -> Option<String> {
        None
    }
    fn lock_plan(&self) -> LockPlan;
    /// Statements taking every lock named in `names` (made by
    /// [`Warehouse::session_lock_names`]), in order, for
    /// [`LockPlan::Session`]; each returns
    /// one row whose first column is 1 when all were granted (or no row at
    /// all when it cannot fail).
    fn lock(&self, _names: &[String], _timeout: Duration) -> Vec<Sql> {
        Vec::new()
    }
    /// A statement taking the lock under which an attempt at `partition` of
    /// `job` draws its number (`ledger::record`), waiting up to `timeout`:
    /// one row, 1 when granted. Held to the transaction's end (PostgreSQL)
    /// or [`Dialect::unlock`]. False where writers take turns (SQLite).
    fn numbering_lock(&self, _sql: &mut Sql, _job: &str, _part: &str, _timeout: Duration) -> bool {
        false
    }
    /// Releases the [`LockPlan::Session`] locks a session holds.
    fn unlock(&self) -> Vec<Sql> {
        Vec::new()
    }
    /// The session holding one of `lock`'s locks in a mode that excludes
    /// its load, other than the asking one (`names`: the session locks'
    /// names, as [`Dialect::lock`] takes them): one row of the columns
    /// [`lock_holder::LockHolder::from_row`] reads. False where the engine
    /// cannot tell.
    fn lock_holder_query(&self, _sql: &mut Sql, _lock: &PartitionLock, _names: &[String]) -> bool {
        false
    }
    /// A session holding a lock on `table` that a load's statements wait
    /// on, as [`Dialect::lock_holder_query`]'s row. False where the engine
    /// cannot tell.
    fn table_lock_holder_query(&self, _sql: &mut Sql, _table: &TableName) -> bool {
        false
    }
    /// How a read of many rows ([`Warehouse::each_row`]) comes back in
    /// batches, each one text of a JSON array of row arrays: the SQL before
    /// its select list, between the list and the rest of the query, and
    /// after. None: row by row, as the driver reads them.
    fn row_batches(&self) -> Option<[&'static str; 3]> {
        None
    }
    /// Column types of the ledger.
    fn ledger_types(&self) -> ledger::ColumnTypes;
    /// Where the ledger lives: `idem.attempts` or `idem_attempts`.
    fn ledger_table(&self) -> TableName;
    /// Whether every index of a table holds the row's key without naming
    /// it (SQLite's rowid, InnoDB's primary key): an index then covers a
    /// query that also reads the key.
    fn indexes_hold_the_key(&self) -> bool {
        true
    }
    /// A query giving a row if `table` has an index named `index`.
    fn index_exists_query(&self, sql: &mut Sql, table: &TableName, index: &Ident);

    /// A query giving a row if the schema exists (engines whose ledger
    /// lives in a schema of its own).
    fn schema_exists_query(&self, sql: &mut Sql, schema: &Ident) {
        sql.push("SELECT 1 FROM information_schema.schemata WHERE schema_name = ")
            .bind(schema.as_str());
    }
    /// The statement dropping the index `index` of `table`.
    fn drop_index(&self, table: &TableName, index: &Ident) -> String;
    /// `(column name, declared type, 1 when it accepts NULL)` rows of a
    /// table, in order.
    fn columns_query(&self, sql: &mut Sql, table: &TableName);
    /// `(schema, table)` rows of the tables a job could write, the schema
    /// NULL where it is the connection's own; idem's ledger schema left out.
    fn tables_query(&self, sql: &mut Sql);
    /// An expression naming the partition (of `grain`) a column's value lies in.
    fn partition_name_expr(&self, column: &str, grain: Grain) -> String;
    /// How a count over a range treats a table that lies wholly inside it.
    fn whole_table(&self) -> WholeTable {
        WholeTable::Filtered
    }
    /// A query counting the indexes of `table` whose first column is
    /// `column` and that can be read in order: B-trees, not partial (a
    /// BRIN or a partial index gives no column's ends). Its lowest and
    /// highest values are then read from the index's ends, for `idem init`
    /// and for engines whose [`Dialect::whole_table`] asks.
    fn leading_index_query(&self, sql: &mut Sql, table: &TableName, column: &Ident);
    /// An expression a count groups by: the start of the partition (of
    /// `grain`) a column's value lies in, as a value of the column's own type
    /// (the column itself where it can be), so that grouping costs no more
    /// per row than the engine's plain `GROUP BY column`. Named afterwards
    /// by [`Dialect::partition_name_expr`].
    fn partition_bucket(&self, column: &str, grain: Grain, kind: ColumnKind) -> String;
    /// [`Dialect::partition_bucket`] of a job SELECT's output column, whose
    /// type idem does not know: valid for a date or a timestamp, zoned or
    /// not (and, on SQLite and MariaDB/MySQL, their text).
    fn source_bucket(&self, column: &str, grain: Grain) -> String {
        self.partition_bucket(column, grain, ColumnKind::Timestamp)
    }
    /// Names a bucket that [`Dialect::partition_name_expr`] leaves
    /// unnamed, from its text (SQLite: text not written as the bounds are,
    /// which lies where it sorts); None where every bucket is named in SQL.
    fn bucket_window(&self) -> Option<fn(&str, Grain) -> Option<String>> {
        None
    }
    /// A query whose one row tells whether a table may have changed: an
    /// opaque token (equal tokens: no committed change between the two
    /// reads), the table's cumulative inserted / updated / deleted row
    /// counters where the engine keeps them (else NULL), and 1 when the
    /// token is settled (a change in the same clock tick could still leave
    /// it as it is: 0).
    fn change_signal_query(&self, sql: &mut Sql, table: &TableName);
    /// An expression rendering a column's value as text, for fingerprints.
    fn text_expr(&self, column: &str) -> String;
    /// [`Dialect::text_expr`] of a column of the type the catalogue names
    /// `type_name`, for showing rows.
    fn value_text(&self, column: &str, _type_name: &str) -> String {
        self.text_expr(column)
    }
    /// How the engine hashes a row of these `(column expression, declared
    /// type)` pairs for fingerprints (see [`fingerprint`]).
    fn row_hash(&self, columns: &[(String, String)]) -> RowHash;
    /// For a table partitioned natively by range on `column` alone, a query
    /// returning `(schema, table, bound)` rows for its plain child tables,
    /// the bound as the engine writes it (`FOR VALUES FROM ('2026-06-04') TO
    /// ('2026-06-05')`); false where idem does not use native partitions.
    fn native_partitions_query(&self, _sql: &mut Sql, _table: &TableName, _column: &str) -> bool {
        false
    }
    /// Whether `table` is partitioned by range on `column`, each of its
    /// partitions' bounds, DEFAULT included, and `column`'s type: no row where it is not
    /// partitioned; false where idem does not use native partitions.
    fn partition_cover_query(&self, _sql: &mut Sql, _table: &TableName, _column: &str) -> bool {
        false
    }
    /// The bound of `child`, written as [`Dialect::native_partitions_query`]
    /// writes it, in a row where it is a partition of `table` now, and no
    /// row where it is not (detached or dropped since: a missing table is no
    /// error): false where idem does not use native partitions.
    fn partition_bound_query(
        &self,
        _sql: &mut Sql,
        _table: &TableName,
        _child: &TableName,
    ) -> bool {
        false
    }
    /// Whether an INSERT returns what it wrote (`RETURNING`): all but MySQL
    /// 8 and MariaDB before 10.5.
    fn insert_returning(&self) -> bool {
        true
    }
    /// Where a replace takes its fingerprints from the hashes its DELETE
    /// and INSERT return, row by row, instead of reading the window before
    /// and after (MariaDB, which cannot aggregate what a statement
    /// returns): an expression giving each row's [`Dialect::row_hash`] as
    /// the 15 lowercase hexadecimal digits of that same integer, which idem
    /// reads. None elsewhere.
    fn returned_row_hash(&self, _columns: &[(String, String)]) -> Option<String> {
        None
    }
    /// Whether a statement may carry a DELETE in a `WITH` clause whose
    /// SELECT still reads the rows as they were (PostgreSQL: every part of
    /// a statement sees one snapshot): a replace then reads the window's
    /// fingerprint and deletes it in one round trip.
    fn deletes_in_with(&self) -> bool {
        false
    }
    /// Where every row carries the id of the transaction that wrote it
    /// (PostgreSQL's `xmin`): expressions giving transaction ids as 64-bit
    /// integers. The ledger row of a load records its own; a replace whose
    /// window holds exactly the rows its partition's last load wrote then
    /// takes that load's fingerprint as the window's before it, instead of
    /// reading the window (see `load::replace`).
    fn transaction_ids(&self) -> Option<TransactionIds> {
        None
    }
    /// A statement about the server session of a load holding `holder`:
    /// end it (which rolls the load back), or count it (one integer, 0 once
    /// it is gone). False where nothing runs outside idem (SQLite).
    fn load_session(&self, _sql: &mut Sql, _holder: &SessionHolder, _ask: SessionAsk) -> bool {
        false
    }
    /// A query giving one text, or NULL: why this session cannot write
    /// (a standby, a role or database set read-only). None where the
    /// engine says so only when a write is refused.
    fn read_only_query(&self) -> Option<&'static str> {
        None
    }
    /// For [`Dialect::transaction_ids`]: a query giving a row if the rows
    /// of `table` carry their writer's id (a table, not a view or a
    /// foreign table); false where the engine names no writers.
    fn rows_name_writer_query(&self, _sql: &mut Sql, _table: &TableName) -> bool {
        false
    }
    /// For [`Dialect::transaction_ids`]: a condition true of a row written
    /// by transaction `txid` (as `current` gave it), false of a row for
    /// which `scope` does not hold, and failing the statement with an error
    /// naming `WRITTEN_ELSEWHERE` at any other row. Called only where
    /// [`Dialect::transaction_ids`] has ids.
    fn written_by(&self, _sql: &mut Sql, _txid: i64, _scope: &dyn Fn(&mut Sql)) {}
    /// A null-safe "values differ" test of two values of `column`'s type.
    fn differs(&self, a: &str, b: &str, column: &Column) -> String;
    /// How a merge joins the target's rows with the stage's to count the
    /// matched and changed ones, for a table of `columns` columns: a plain
    /// join, unless the engine's limits on a row's or a query's width need
    /// another form.
    fn match_form(&self, columns: usize) -> MatchForm {
        let _ = columns;
        MatchForm::Join
    }
    /// Whether any of `columns` differs between the rows named `a` and `b`
    /// ([`Dialect::differs`] of each). Past 100 columns the tests are
    /// ORed in parenthesised groups of 100: SQLite nests an expression at
    /// most 1,000 deep, and a chain of 1,200 ORs is that deep.
    fn any_differs(&self, a: &str, b: &str, columns: &[Column]) -> String {
        let tests: Vec<String> = columns
            .iter()
            .map(|c| {
                let n = self.quote(&c.name);
                self.differs(&format!("{a}.{n}"), &format!("{b}.{n}"), c)
            })
            .collect();
        if tests.len() <= 100 {
            return tests.join(" OR ");
        }
        tests
            .chunks(100)
            .map(|group| format!("({})", group.join(" OR ")))
            .collect::<Vec<_>>()
            .join(" OR ")
    }
    /// `t.k1 = s.k1 AND …`: a target row `t` and a staged row `s` share
    /// their key. The target's side first: SQLite compares by the left
    /// column's collation, and the stage (made by CREATE … AS SELECT) has
    /// none, where the target's key may be NOCASE.
    fn key_match(&self, keys: &[Ident]) -> String {
        (keys.iter())
            .map(|k| format!("t.{0} = s.{0}", self.quote(k)))
            .collect::<Vec<_>>()
            .join(" AND ")
    }
    /// Creates the staging table of a merge from a SELECT.
    fn create_stage(&self, stage: &Ident) -> String;
    fn drop_stage(&self, stage: &Ident) -> String;
    /// The statement giving the planner the filled stage's statistics,
    /// where it has none of a new table (PostgreSQL: a temporary table is
    /// never analyzed by itself, and a MERGE planned for an empty stage
    /// hashed the whole target for each window).
    fn analyze_stage(&self, _stage: &Ident) -> Option<String> {
        None
    }
    /// Upserts every row of the stage into the target by key.
    fn upsert(
        &self,
        target: &TableName,
        stage: &Ident,
        columns: &[Column],
        keys: &[Ident],
    ) -> String;
    /// True for errors worth retrying: lost connection, deadlock,
    /// serialisation failure, lock timeout.
    fn is_transient(&self, err: &sqlx::Error) -> bool;
    /// The statement taking the partition's locks ([`Dialect::begin_statement`],
    /// [`Dialect::lock`]) waited `lock_timeout` in vain, as a whole.
    fn lock_refused(&self, _err: &dyn sqlx::error::DatabaseError) -> bool {
        false
    }
    /// The upsert of a merge matches an existing row by any of the
    /// target's unique indexes, not by the merge's key alone (MariaDB and
    /// MySQL's `ON DUPLICATE KEY UPDATE`).
    fn upsert_matches_any_unique_index(&self) -> bool {
        false
    }
    /// A load's statement gave up waiting for a lock another session holds
    /// (on a row, the table, its definition) after `lock_timeout`.
    fn waited_on_lock(&self, _err: &dyn sqlx::error::DatabaseError) -> bool {
        false
    }
    /// The session that the session of the load holding `holder` waits for
    /// on a lock now, as [`Dialect::lock_holder_query`]'s row (none while
    /// it waits for nobody). False where the engine cannot tell.
    fn blocker_query(&self, _sql: &mut Sql, _holder: &SessionHolder) -> bool {
        false
    }
    /// A query returning `(key name, referring table, ON DELETE action)`
    /// rows, as text, of the foreign keys that refer to a table; false where
    /// the engine cannot tell.
    fn references_query(&self, _sql: &mut Sql, _table: &TableName) -> bool {
        false
    }
    /// A query returning `(index name, column name, collation)` rows, as
    /// text, of the unique indexes of a table, where the stage a merge makes
    /// from it loses its columns' collations (SQLite); false elsewhere.
    fn key_collations_query(&self, _sql: &mut Sql, _table: &TableName) -> bool {
        false
    }
    /// A query returning `(index name, column name)` rows, as text, for the
    /// primary key and every unique index of a table (partial and expression
    /// indexes left out: they do not make a column set unique).
    fn unique_key_sets_query(&self, sql: &mut Sql, table: &TableName);
}

/// See [`Dialect::transaction_ids`].
pub struct TransactionIds {
    /// The id of the current transaction (given it one if it had none).
    pub current: &'static str,
    /// The id the next transaction will get (giving none).
    pub next: &'static str,
}

/// What the error of a statement guarded by [`Dialect::written_by`] says
/// when it meets a row another transaction wrote.
pub(crate) const WRITTEN_ELSEWHERE: &str = "idem: a row written since the last load";

/// A connection to the warehouse through which idem reads and writes.
#[derive(Clone)]
pub struct Warehouse {
    pool: AnyPool,
    dialect: &'static dyn Dialect,
    config: WarehouseConfig,
    /// Output column names per SELECT text, described once per process.
    described: Arc<Mutex<HashMap<String, Vec<String>>>>,
    /// Per job, its target's shape as the latest run read it (run id, shape):
    /// the catalogue is read once per run, not once per partition.
    shapes: Arc<Mutex<HashMap<String, load::RunShape>>>,
    /// Definition hashes known to be recorded (committed) in the ledger.
    recorded_definitions: Arc<Mutex<std::collections::HashSet<String>>>,
    /// MariaDB/MySQL: the session's database, which lock names include,
    /// and the lists of lock names a state read probes.
    lock_probes: Arc<mysql::LockProbes>,
    /// MariaDB/MySQL: the connection ids of this process's loads that hold
    /// their partition's lock, with their job and partition, so that a load
    /// waiting for one of them says so.
    own_loads: Arc<Mutex<HashMap<i64, String>>>,
    /// Which of idem's ledger objects are there: all of them once a
    /// connection that writes made sure of them ([`Warehouse::make_ledger`]).
    /// And when they were last looked for.
    ledger: Arc<Mutex<(LedgerPresence, Option<std::time::Instant>)>>,
    /// The connections at once the server grants the role, asked at connect.
    grant: Option<connection_limit::Grant>,
    /// Whether the server tells `Orders` from `orders`, asked at connect.
    table_names: TableNames,
}

impl Warehouse {
    pub fn dialect(&self) -> &'static dyn Dialect {
        self.dialect
    }

    /// How the server compares table (and schema) names: by case or not
    /// (MariaDB/MySQL's `lower_case_table_names`, read at connect).
    pub fn table_names(&self) -> TableNames {
        self.table_names
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub fn sql(&self) -> Sql {
        Sql::new(self.dialect)
    }

    /// How this warehouse's server reads SQL text.
    pub fn syntax(&self) -> sql::Syntax {
        sql::Syntax::of(self.dialect)
    }

    pub fn config(&self) -> &WarehouseConfig {
        &self.config
    }

    /// The URL without its password, for display.
    pub fn display_url(&self) -> String {
        redact(&self.config.url)
    }

    /// Runs a statement of static SQL (DDL, demo data).
    pub async fn execute_script(&self, statements: &[&str]) -> Result<(), WarehouseError> {
        for s in statements {
            self.pool.execute(AssertSqlSafe(s.to_string())).await?;
        }
        Ok(())
    }

    /// Why a run cannot write here, if it cannot (a standby, a read-only
    /// role): a run says so before it starts, rather than failing every
    /// partition.
    pub async fn read_only_refusal(&self) -> Result<Option<String>, WarehouseError> {
        // A SQLite file this user may not write opens read-only, and
        // reads: every partition's first write would fail.
        if self.dialect.engine() == Engine::Sqlite
            && let Some(file) = sqlite::database_file(&self.config.url)
            && let Err(e) = std::fs::OpenOptions::new().write(true).open(&file)
            && e.kind() == std::io::ErrorKind::PermissionDenied
        {
            return Ok(Some(format!(
                "{} is read-only for idem: this user may not write {} ({e}); a run needs the file and its folder writable",
                self.display_url(),
                file.display()
            )));
        }
        let Some(query) = self.dialect.read_only_query() else {
            return Ok(None);
        };
        let row = sqlx::query(query).fetch_one(&self.pool).await?;
        let why: Option<String> = row.try_get(0)?;
        Ok(why.map(|why| {
            format!(
                "{} is read-only for idem: {why}; a run needs the primary, or a role that may write",
                self.display_url()
            )
        }))
    }

    /// The partitions of a job whose lock another session holds right now:
    /// an attempt in flight in another console or process. Engines without
    /// per-partition locks (SQLite) cannot tell and report none.
    pub async fn partitions_locked_elsewhere(
        &self,
        job: &Job,
        partitions: &[Partition],
    ) -> Result<std::collections::HashSet<String>, WarehouseError> {
        // Named only where needed: a ten-year hourly job has 87,600 of
        // them, and the console asks at every refresh.
        let keys = || -> Vec<(String, String, Vec<String>)> {
            partitions
                .iter()
                .map(|p| {
                    let (own, covering) = PartitionLock::probe_tiers(job, p, self.table_names);
                    (p.name(), own, covering)
                })
                .collect()
        };
        Ok(match self.dialect.engine() {
            Engine::Sqlite => Default::default(),
            Engine::Postgres => postgres::held(&self.pool, keys).await?,
            Engine::MySql => {
                let (probes, names) = (&self.lock_probes, self.table_names);
                mysql::held(&self.pool, probes, names, job, partitions).await?
            }
        })
    }

    /// The names of the session locks ([`LockPlan::Session`]) that a load
    /// of `lock`'s window takes, on `conn`.
    pub(super) async fn session_lock_names(
        &self,
        conn: &mut sqlx::AnyConnection,
        lock: &PartitionLock,
    ) -> Result<Vec<String>, WarehouseError> {
        Ok(match self.dialect.engine() {
            Engine::MySql => self.lock_probes.names(conn, &lock.keys).await?,
            Engine::Sqlite | Engine::Postgres => lock.keys.clone(),
        })
    }

    /// Count and fingerprint of a replace job's partition as it is now.
    pub async fn partition_fingerprint(
        &self,
        job: &Job,
        partition: &Partition,
    ) -> Result<Fingerprint, WarehouseError> {
        let columns = self.columns(&job.target).await?;
        let mut conn = self.pooled().await?;
        load::fingerprint_window(self.dialect, &mut conn, job, &columns, partition).await
    }

    /// Fingerprint of a whole table: every row, in no particular order.
    pub async fn table_fingerprint(
        &self,
        table: &TableName,
    ) -> Result<Fingerprint, WarehouseError> {
        let columns = self.columns(table).await?;
        let mut conn = self.pooled().await?;
        fingerprint::of(&mut conn, self.dialect, &columns, "", |sql| {
            sql.push(" FROM ").table(table);
        })
        .await
    }

    /// Ends the pool's sessions, each told so; a server that does not
    /// answer (hung, or a network dropping everything) is waited on no
    /// longer than `connect_timeout`, then left to notice by itself.
    pub async fn close(&self) {
        let _ = tokio::time::timeout(self.config.connect_timeout, self.pool.close()).await;
    }
}

/// Hides the password of a URL: the user's (`u:***@h`), taken to the last
/// `@` (a password may hold `@`, `/` or `?` as typed; an `@` in the query
/// hides more than the password, never less), and any query
/// parameter naming one (`?password=***`, `sslpassword`), which the drivers
/// read as the user's.
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let (scheme, rest) = url.split_at(scheme_end + 3);
    let (userinfo, after) = rest.rfind('@').map_or(("", rest), |at| rest.split_at(at));
    let userinfo = match userinfo.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None => userinfo.to_string(),
    };
    let (place, query) = match after.split_once('?') {
        Some((place, query)) => (place, Some(query)),
        None => (after, None),
    };
    let mut redacted = format!("{scheme}{userinfo}{place}");
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((key, _)) if key.to_ascii_lowercase().contains("password") => {
                    format!("{key}=***")
                }
                _ => param.to_string(),
            })
            .collect();
        redacted = format!("{redacted}?{}", params.join("&"));
    }
    redacted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_written_elsewhere_marker_can_sit_in_an_sql_string_literal() {
        // Dialect::written_by puts it between single quotes as it is.
        assert!(!WRITTEN_ELSEWHERE.contains(['\'', '\\']));
    }

    #[test]
    fn passwords_are_hidden() {
        assert_eq!(redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("sqlite://demo.db"), "sqlite://demo.db");
        // QA: a password given as a parameter was printed whole.
        assert_eq!(
            redact("postgres://u@h/db?sslmode=disable&password=secret"),
            "postgres://u@h/db?sslmode=disable&password=***"
        );
        assert_eq!(
            redact("mysql://u@h/db?PASSWORD=secret&sslpassword=key"),
            "mysql://u@h/db?PASSWORD=***&sslpassword=***"
        );
        // Typed unencoded (an error says to encode it): none of it shown.
        assert_eq!(
            redact("postgres://u:se@cr?et@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(
            redact("postgres://u:s/e@h/db?x=1"),
            "postgres://u:***@h/db?x=1"
        );
    }
}
