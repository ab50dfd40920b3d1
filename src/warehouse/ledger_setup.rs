//! How a start makes sure of the ledger: it probes each of its objects and
//! creates only what is missing, and brings an older ledger up to date. A
//! command that only reads probes and creates nothing: on a warehouse idem
//! never ran on, `status` or `run --dry-run` leave no schema behind them,
//! and a role that may only read can use them.

use std::time::Duration;

use sqlx::{AssertSqlSafe, Executor};

use super::error::sql_message;
use super::ledger::{COLUMNS, TXID, definitions_table};
use super::sql::Sql;
use super::{Dialect, WarehouseError};
use crate::config::TableName;

/// Which of the ledger's objects a probe found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LedgerPresence {
    /// The attempts table: without it, a read finds no attempt.
    pub attempts: bool,
    /// The definitions table: without it, a read finds no definition.
    pub definitions: bool,
    /// The attempts' `txid` column (engines whose rows name their writer).
    pub txid: bool,
    /// Everything a run writes through is there, as a start would make it.
    pub complete: bool,
}

impl LedgerPresence {
    /// As [`ensure`] leaves it.
    pub const COMPLETE: LedgerPresence = LedgerPresence {
        attempts: true,
        definitions: true,
        txid: true,
        complete: true,
    };
}

/// Which of the ledger's objects are there, creating none of them.
pub(super) async fn probe(
    dialect: &'static dyn Dialect,
    conn: &mut sqlx::AnyConnection,
) -> Result<LedgerPresence, sqlx::Error> {
    let mut found = LedgerPresence {
        txid: dialect.transaction_ids().is_none(),
        complete: true,
        ..LedgerPresence::default()
    };
    for object in objects(dialect) {
        let there = exists(&object.exists, conn).await?;
        match object.kind {
            Kind::Attempts => found.attempts = there,
            Kind::Definitions => found.definitions = there,
            Kind::Txid => found.txid = there && found.attempts,
            Kind::Schema | Kind::Index => {}
        }
        found.complete &= there;
    }
    let (check, _) = superseded_index(dialect);
    if found.attempts && check.query().fetch_optional(&mut *conn).await?.is_some() {
        found.complete = false;
    }
    Ok(found)
}

/// Makes whatever of the ledger is missing (an older one's `txid` column
/// among it), and drops an older one's superseded index.
pub(super) async fn ensure(
    dialect: &'static dyn Dialect,
    conn: &mut sqlx::AnyConnection,
) -> Result<(), sqlx::Error> {
    // Two processes starting at once may race on CREATE … IF NOT EXISTS.
    let mut result = Ok(());
    for _ in 0..3 {
        result = async {
            for object in objects(dialect) {
                if !exists(&object.exists, conn).await? {
                    let made = conn.execute(AssertSqlSafe(object.create)).await;
                    only_for_speed(matches!(object.kind, Kind::Index), made, lasting(dialect))?;
                }
            }
            let (check, drop) = superseded_index(dialect);
            if check.query().fetch_optional(&mut *conn).await?.is_some() {
                only_for_speed(
                    true,
                    conn.execute(AssertSqlSafe(drop)).await,
                    lasting(dialect),
                )?;
            }
            Ok(())
        }
        .await;
        if result.as_ref().err().is_none_or(lasting(dialect)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    result
}

/// A ledger that is there but not as idem made it (a column dropped or
/// renamed by hand), as the error that says so: every read and write of it
/// would fail on the server's bare words.
pub(super) async fn check_shape(
    dialect: &'static dyn Dialect,
    conn: &mut sqlx::AnyConnection,
    presence: LedgerPresence,
) -> Result<(), WarehouseError> {
    let attempts = dialect.ledger_table();
    let definitions = definitions_table(dialect);
    let reads = [
        (
            presence.attempts,
            attempts,
            format!("id, {}", COLUMNS.join(", ")),
        ),
        (
            presence.definitions,
            definitions,
            "definition_hash, job, recorded_at, definition".to_string(),
        ),
    ];
    for (there, table, columns) in reads {
        if !there {
            continue;
        }
        let read = format!(
            "SELECT {columns} FROM {} WHERE 1 = 0",
            dialect.quote_table(&table)
        );
        match conn.execute(AssertSqlSafe(read)).await {
            Err(e) if missing(&e) => {
                return Err(WarehouseError::LedgerShape {
                    table: table.to_string(),
                    message: sql_message(&e),
                });
            }
            Err(e) => return Err(e.into()),
            Ok(_) => {}
        }
    }
    Ok(())
}

/// Whether a probe finds its object.
async fn exists(probe: &Probe, conn: &mut sqlx::AnyConnection) -> Result<bool, sqlx::Error> {
    match probe {
        Probe::Rows(query) => Ok(query.query().fetch_optional(&mut *conn).await?.is_some()),
        // Only "no such table or column" says it is missing: a lock wait or
        // a lost connection says nothing of it.
        Probe::Runs(statement) => match conn.execute(AssertSqlSafe(statement.clone())).await {
            Ok(_) => Ok(true),
            Err(e) if missing(&e) => Ok(false),
            Err(e) => Err(e),
        },
    }
}

/// One object of the ledger (its schema, a table, a column, an index), and
/// how a start tells that it is there. A start creates only what is missing: a
/// `CREATE … IF NOT EXISTS` of an object that exists still asks for the
/// right to create it (PostgreSQL checks CREATE on the database before it
/// looks for the schema, ownership of the table before it looks for the
/// index; MariaDB its CREATE and INDEX privileges), so an operator whose
/// role was granted a ledger another role made could not start at all.
struct LedgerObject {
    kind: Kind,
    exists: Probe,
    create: String,
}

/// Which object of the ledger it is.
#[derive(Clone, Copy)]
enum Kind {
    Schema,
    Attempts,
    Txid,
    Definitions,
    Index,
}

/// How a start tells that a ledger object is there.
enum Probe {
    /// When this query returns a row.
    Rows(Sql),
    /// When this statement runs (it reads no row).
    Runs(String),
}

/// The ledger's objects, each before those that live in it.
fn objects(dialect: &'static dyn Dialect) -> Vec<LedgerObject> {
    let t = dialect.ledger_types();
    let table = dialect.ledger_table();
    let mut out = Vec::new();
    if let Some(schema) = &table.schema {
        let mut exists = Sql::new(dialect);
        dialect.schema_exists_query(&mut exists, schema);
        out.push(LedgerObject {
            kind: Kind::Schema,
            exists: Probe::Rows(exists),
            create: format!("CREATE SCHEMA IF NOT EXISTS {}", dialect.quote(schema)),
        });
    }
    let readable = |table: &TableName| {
        Probe::Runs(format!(
            "SELECT 1 FROM {} WHERE 1 = 0",
            dialect.quote_table(table)
        ))
    };
    let (text, long, int) = (t.text, t.long_text, t.int);
    out.push(LedgerObject {
        kind: Kind::Attempts,
        exists: readable(&table),
        create: format!(
            "CREATE TABLE IF NOT EXISTS {quoted} (id {id}, run_id {text} NOT NULL, job {text} NOT NULL, \
             partition_key {text} NOT NULL, attempt {int} NOT NULL, status {text} NOT NULL, \
             started_at {text} NOT NULL, locked_at {text}, finished_at {text} NOT NULL, \
             rows_deleted {int} NOT NULL, rows_inserted {int} NOT NULL, rows_updated {int} NOT NULL, \
             rows_after {int} NOT NULL, definition_hash {text} NOT NULL, fingerprint {text}, \
             content_changed {int}, error {long}, operator {text} NOT NULL, host {text} NOT NULL, reason {long}{txid})",
            quoted = dialect.quote_table(&table),
            id = t.id,
            txid = match dialect.transaction_ids() {
                Some(_) => format!(", {TXID} {int}"),
                None => String::new(),
            },
        ),
    });
    // A ledger made before it had the column gets it (the ALTER waits for
    // loads in flight, once).
    if dialect.transaction_ids().is_some() {
        let quoted = dialect.quote_table(&table);
        out.push(LedgerObject {
            kind: Kind::Txid,
            exists: Probe::Runs(format!("SELECT {TXID} FROM {quoted} WHERE 1 = 0")),
            create: format!("ALTER TABLE {quoted} ADD COLUMN IF NOT EXISTS {TXID} {int}"),
        });
    }
    let defs = definitions_table(dialect);
    out.push(LedgerObject {
        kind: Kind::Definitions,
        exists: readable(&defs),
        create: format!(
            "CREATE TABLE IF NOT EXISTS {} (definition_hash {text} NOT NULL, job {text} NOT NULL, \
             recorded_at {text} NOT NULL, definition {long} NOT NULL)",
            dialect.quote_table(&defs)
        ),
    });
    // It covers a state read's summary (`Warehouse::ledger_summary`), so
    // that reads no whole row but the two or three it sends back: MariaDB
    // took 0.58 s to group a job's 100,000 rows through an index on (job,
    // partition_key) alone, 0.12 s through this one.
    let index = table.name.with_suffix("_by_partition");
    let mut exists = Sql::new(dialect);
    dialect.index_exists_query(&mut exists, &table, &index);
    let key = if dialect.indexes_hold_the_key() {
        ""
    } else {
        ", id"
    };
    out.push(LedgerObject {
        kind: Kind::Index,
        exists: Probe::Rows(exists),
        create: format!(
            "CREATE INDEX IF NOT EXISTS {} ON {} (job, partition_key, status, content_changed{key})",
            dialect.quote(&index),
            dialect.quote_table(&table)
        ),
    });
    // It answers the MAX that numbers an attempt (`ledger::insert`) and the
    // check that a load's row is there (`succeeded_attempt`) with one entry,
    // where the index above read every prior attempt of the partition. A
    // ledger made before it gets it at a start that may make it. The
    // partition first: led by the job, MariaDB grouped a state read's
    // summary through it rather than through the index above, and looked up
    // every row (`idem status` over 100,000 attempts: 0.15 → 0.29 s); and
    // `attempt` cannot join the index above there (past MariaDB's 3,072
    // bytes of a key). bench/RESULTS.md §25.
    let numbers = table.name.with_suffix("_by_attempt");
    let mut exists = Sql::new(dialect);
    dialect.index_exists_query(&mut exists, &table, &numbers);
    out.push(LedgerObject {
        kind: Kind::Index,
        exists: Probe::Rows(exists),
        create: format!(
            "CREATE INDEX IF NOT EXISTS {} ON {} (partition_key, job, attempt)",
            dialect.quote(&numbers),
            dialect.quote_table(&table)
        ),
    });
    out
}

/// A right the role lacks stays lacking, and a lock another session holds
/// has been waited for as long as the role allows.
fn lasting(dialect: &'static dyn Dialect) -> impl Fn(&sqlx::Error) -> bool {
    move |e| {
        denied(e)
            || e.as_database_error()
                .is_some_and(|db| dialect.waited_on_lock(db))
    }
}

/// `done`, where a failure that trying again would not mend is none when
/// the statement was `optional`: an index only speeds reads up, so a role
/// granted the ledger but not its ownership starts on one an older idem
/// made (without the index, or with the superseded one), and so does a
/// start that would wait on loads in flight to change it (the next start
/// tries again).
fn only_for_speed<T>(
    optional: bool,
    done: Result<T, sqlx::Error>,
    lasting: impl Fn(&sqlx::Error) -> bool,
) -> Result<(), sqlx::Error> {
    match done {
        Err(e) if !(optional && lasting(&e)) => Err(e),
        _ => Ok(()),
    }
}

/// A failure to make the ledger (or, `reading`, to read one that is there)
/// for want of a privilege, as the error that names the ledger and the
/// privileges a role needs to use one that another role made: it reads and
/// appends, nothing more.
pub(super) fn denied_error(
    dialect: &'static dyn Dialect,
    url: &str,
    e: &sqlx::Error,
    reading: bool,
) -> Option<WarehouseError> {
    if !denied(e) {
        return None;
    }
    let attempts = dialect.ledger_table();
    let ledger = format!("{attempts} and {}", definitions_table(dialect));
    let grants = match &attempts.schema {
        Some(schema) => format!("USAGE on schema {schema} and SELECT, INSERT on {ledger}"),
        None => format!("SELECT, INSERT on {ledger}"),
    };
    Some(WarehouseError::LedgerDenied {
        url: url.to_string(),
        ledger,
        grants,
        message: sql_message(e),
        reading,
    })
}

/// The index on (job, partition_key) that ledgers were made with before
/// the summary's index superseded it: left beside that one, MariaDB reads
/// through it and looks up every row (0.65 s against 0.16 s for `idem
/// status` of a job with 100,000 attempts). A query giving a row if it is
/// still there, and the statement that drops it: checked first, so that a
/// start never alters the ledger for nothing (on MariaDB that would wait on
/// every load in flight).
fn superseded_index(dialect: &'static dyn Dialect) -> (Sql, String) {
    let table = dialect.ledger_table();
    let index = table.name.with_suffix("_by_job");
    let mut check = Sql::new(dialect);
    dialect.index_exists_query(&mut check, &table, &index);
    (check, dialect.drop_index(&table, &index))
}

/// The server refused a statement for want of a privilege (PostgreSQL's
/// SQLSTATE 42501; MariaDB/MySQL say "denied" under the generic 42000).
fn denied(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|db| db.code().as_deref() == Some("42501") || db.message().contains("denied"))
}

/// The server said a table, column or schema is not there (PostgreSQL's
/// SQLSTATE 42P01, 42703, 3F000; MariaDB/MySQL 42S02, 42S22; SQLite's
/// words).
fn missing(e: &sqlx::Error) -> bool {
    e.as_database_error().is_some_and(|db| {
        matches!(
            db.code().as_deref(),
            Some("42P01" | "42703" | "3F000" | "42S02" | "42S22")
        ) || db.message().contains("no such table")
            || db.message().contains("no such column")
    })
}
