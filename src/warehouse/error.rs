//! What can go wrong between idem and its warehouse, as the operator reads
//! it, and which of it a run retries, stops at or reports.

use super::{Dialect, columns};

#[derive(Debug, thiserror::Error)]
pub enum WarehouseError {
    /// The server's words for why, without the driver's wrapping (sqlx
    /// shows a PostgreSQL error with the server's C source line, "at line
    /// 768", which tells the operator nothing).
    #[error("cannot connect to {url}: {}", sql_message(.source))]
    Connect { url: String, source: sqlx::Error },
    /// The server took the connection but did not answer (a firewall that
    /// drops packets, a server hung or restarting, a wrong port that a
    /// proxy holds open).
    #[error(
        "cannot connect to {url}: no answer within connect_timeout ({after}); is the host and port right and the server up? (warehouse.connect_timeout sets how long to wait)"
    )]
    ConnectTimeout { url: String, after: String },
    #[error("{}", sql_message(.0))]
    Sql(#[from] sqlx::Error),
    #[error(
        "no SQLite database at {file} ({url}): idem makes none, as a mistyped path would read as an empty warehouse; check the path, or add ?mode=rwc to the URL to have it made"
    )]
    NoDatabaseFile { url: String, file: String },
    #[error(
        "{url} is read-only ({message}): idem writes partitions and its ledger there; make the database file and its folder writable by this user"
    )]
    ReadOnly { url: String, message: String },
    #[error(
        "cannot {} idem's ledger ({ledger}) in {url}: {message}. {}",
        if *.reading { "read" } else { "make" },
        if *.reading {
            format!("idem reads every load's record there: grant this role {grants}")
        } else {
            format!("idem records every load there: run idem once as a role that may create it, then grant this one {grants}; or grant this role the right to create it")
        }
    )]
    LedgerDenied {
        url: String,
        ledger: String,
        grants: String,
        message: String,
        /// Denied a read of a ledger that is there, not its making.
        reading: bool,
    },
    /// idem's ledger is there but not as idem made it.
    #[error(
        "idem's ledger {table} is not as idem made it: {message}. A column was dropped or renamed by hand: put it back as the README's \"The ledger\" lists its columns, or rename the table aside and let idem make a new one (the loads it recorded then read as never loaded)"
    )]
    LedgerShape { table: String, message: String },
    /// The target has no columns in the catalogue; `alike` are the tables
    /// it names but for case or schema.
    #[error("target table {table} does not exist or has no columns{}", columns::alike_tables(.alike))]
    NoTarget { table: String, alike: Vec<String> },
    #[error("{0}")]
    Job(String),
    /// The job does not fit its target (a column it names is not there):
    /// every partition would fail alike.
    #[error("{0}")]
    Misfit(String),
    /// Another session held the partition's lock past `lock_timeout`:
    /// `holder` names it, as the server told (see `lock_holder`).
    #[error(
        "could not take the lock on partition {partition} within the lock timeout: {}",
        .holder.as_deref().unwrap_or("another run is writing it")
    )]
    LockTimeout {
        partition: String,
        holder: Option<String>,
    },
    /// Another session was numbering an attempt at the partition in the
    /// ledger past `lock_timeout` (`ledger::record`).
    #[error(
        "could not number the attempt at partition {partition} in the ledger within the lock timeout: another run was recording one"
    )]
    LedgerNumbering { partition: String },
    /// A statement of the load waited on a lock on the target table past
    /// `lock_timeout`: `holder` names the session holding it.
    #[error("{message}: the lock on {table} is {holder}")]
    TableLocked {
        table: String,
        message: String,
        holder: String,
    },
    /// SQLite answered busy past `lock_timeout` after idem had the
    /// database's write lock or to a read: another program's transaction
    /// holds the file. `holder` says whose, and what lets idem go on.
    #[error("{file} stayed locked for longer than lock_timeout ({message}): {holder}")]
    FileLocked {
        file: String,
        message: String,
        holder: String,
    },
    /// The shrink guard refused a replace: the source looks incomplete.
    #[error(
        "source looks incomplete: would replace {} with {} in {partition}; nothing was changed (the shrink guard keeps a loaded partition at {}% of its rows or more, and never replaces them with none; run again with --allow-shrink if the source really shrank)",
        crate::numbers::n_rows(*.before),
        crate::numbers::thousands(*.after),
        (.floor * 100.0).round()
    )]
    SourceShrank {
        partition: String,
        before: i64,
        after: i64,
        floor: f64,
    },
    /// A replace found its window other than its partition's last load
    /// left it, having trusted it was not: the load starts over and reads
    /// the window whole. Handled inside the load, never reported.
    #[error("partition {0} was written since its last load by idem")]
    WrittenSinceLastLoad(String),
    /// The load was cancelled and did not commit.
    #[error("cancelled")]
    Cancelled,
    /// The load was cancelled while its COMMIT was on its way, and the
    /// server had not answered it when idem let go.
    #[error(
        "its COMMIT was under way when the run was cancelled, and the server had not answered it: the partition holds its old rows or its new ones, never a mix (its state will say which; running it again is safe)"
    )]
    CancelledCommitting,
    /// A load's session ended on the server without a word to idem (a
    /// restart or failover, or ended there by hand): it never committed.
    #[error(
        "its session on the server ended without a word to idem (the server restarted or failed over, or the session was ended there); nothing was committed"
    )]
    SessionLost,
    /// The warehouse stopped answering while a load was in flight: the
    /// load never committed (the server rolls it back), or its COMMIT was
    /// under way and only the server knows whether it took.
    #[error(
        "lost {url} mid-load: {source}; {}",
        if *.committing {
            "its COMMIT was under way, so the partition holds its old rows or its new ones, never a mix (its state will say which; running it again is safe)"
        } else {
            "the partition's transaction was never committed, so it rolls back"
        }
    )]
    Lost {
        url: String,
        source: sqlx::Error,
        committing: bool,
    },
    /// The warehouse stopped answering outside a load (a state read, a
    /// plan, the ledger): see `answering`.
    #[error(
        "the warehouse {url} is not answering: a statement waited {waited} s for a reply, and two new connections tried meanwhile got none ({probe}); idem stopped waiting. Is the server hung or failing over, or the network to it dropping everything?"
    )]
    NotAnswering {
        url: String,
        waited: u64,
        probe: String,
    },
}

/// A parameter idem does not bind is in the job's text, the same for every
/// partition: a run stops at the first rather than fail them all.
impl From<super::sql::UnknownParameter> for WarehouseError {
    fn from(e: super::sql::UnknownParameter) -> Self {
        WarehouseError::Misfit(e.to_string())
    }
}

impl WarehouseError {
    /// A lock another session held kept the load waiting past
    /// `lock_timeout`: its partition's, one on the target's rows or the
    /// table, the ledger's numbering of an attempt at the partition, or
    /// (SQLite) the file's. It rolled back having written nothing, and
    /// nothing was wrong with the job or its data.
    pub fn is_lock_held(&self, dialect: &dyn Dialect) -> bool {
        match self {
            WarehouseError::LockTimeout { .. }
            | WarehouseError::LedgerNumbering { .. }
            | WarehouseError::TableLocked { .. }
            | WarehouseError::FileLocked { .. } => true,
            WarehouseError::Sql(sqlx::Error::Database(e)) => dialect.waited_on_lock(&**e),
            _ => false,
        }
    }

    pub fn is_transient(&self, dialect: &dyn Dialect) -> bool {
        match self {
            WarehouseError::Sql(e) | WarehouseError::Connect { source: e, .. } => {
                dialect.is_transient(e) || super::connection_limit::refusal(e).is_some()
            }
            WarehouseError::LockTimeout { .. }
            | WarehouseError::LedgerNumbering { .. }
            | WarehouseError::TableLocked { .. }
            | WarehouseError::FileLocked { .. }
            | WarehouseError::SessionLost => true,
            _ => false,
        }
    }

    /// The job does not fit its target as the catalogue has it: a run stops
    /// at the first such failure rather than fail every partition alike.
    pub fn is_misfit(&self) -> bool {
        match self {
            WarehouseError::NoTarget { .. } | WarehouseError::Misfit(_) => true,
            // The server refused the statement itself (SQLSTATE class 42:
            // a syntax error, an operator or column that is not there, a
            // type mismatch, a privilege the role lacks): every partition's
            // statement is the same but for its bounds.
            // (MariaDB's refusal of a connection past max_user_connections
            // is of class 42 too.)
            WarehouseError::Sql(e @ sqlx::Error::Database(db)) => {
                db.code().is_some_and(|code| code.starts_with("42"))
                    && super::connection_limit::refusal(e).is_none()
            }
            _ => false,
        }
    }

    /// Whether the error would meet a repeat as things stand: not of the
    /// passing kind (a deadlock, a lock wait, a lost connection), nor a
    /// statement someone stopped once (PostgreSQL's `pg_cancel_backend`,
    /// MariaDB's `KILL QUERY`), which is not retried but need not recur.
    /// A statement timeout recurs: the same load takes as long again.
    pub fn is_lasting(&self, dialect: &dyn Dialect) -> bool {
        let stopped_once = match self {
            WarehouseError::Sql(sqlx::Error::Database(db)) => match db.code().as_deref() {
                Some("57014") => db.message().contains("user request"),
                Some("70100") => true,
                _ => false,
            },
            _ => false,
        };
        !self.is_transient(dialect) && !stopped_once
    }

    /// The warehouse as a whole could not be used, whatever was asked of
    /// it: unreachable, or a SQLite file another program holds.
    pub fn is_whole_warehouse(&self) -> bool {
        self.is_unreachable() || matches!(self, WarehouseError::FileLocked { .. })
    }

    /// No connection to the warehouse could be had within the connect
    /// timeout: nothing reached it.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            WarehouseError::Sql(sqlx::Error::PoolTimedOut)
                | WarehouseError::Connect { .. }
                | WarehouseError::ConnectTimeout { .. }
                | WarehouseError::Lost { .. }
                | WarehouseError::NotAnswering { .. }
        )
    }
}

/// What a timeout's message leaves out. A lock timeout: who may have held
/// the lock (on MariaDB/MySQL that includes the load of the next partition
/// of the same run: InnoDB locks the first row past the window a DELETE
/// clears, and a neighbour's uncommitted rows hold it until that load
/// commits). A statement timeout: which setting bounds it.
fn timeout_hint(message: &str) -> Option<String> {
    const ANOTHER: &str = "another session held a lock idem needed for longer than lock_timeout (an ALTER TABLE, LOCK TABLE or long transaction on the table?)";
    if message.contains("Lock wait timeout") {
        Some(format!(
            "{ANOTHER}, or, at a concurrency above 1, this run's load of the next partition: InnoDB locks the first row past the window a DELETE clears, \
             so a load waits for its neighbour's COMMIT; a lock_timeout above a partition's load time lets it wait its turn"
        ))
    } else if message.contains("lock timeout") {
        Some(ANOTHER.to_string())
    } else if message.contains("statement timeout") || message.contains("max_statement_time") {
        Some(
            "the statement ran longer than the statement timeout: warehouse.statement_timeout in the config bounds every statement of idem's (where it is left out, the role's or server's own applies); raise it, or load smaller windows"
                .to_string(),
        )
    } else if message.contains("idle-in-transaction timeout") {
        Some(
            "the server ended the session while a load's transaction waited for idem's next statement, for longer than idle_in_transaction_session_timeout (set on the role, the database or the server): raise it for idem's role (ALTER ROLE … SET idle_in_transaction_session_timeout = '1min'); the partition was rolled back"
                .to_string(),
        )
    } else {
        None
    }
}

/// What an encoding's refusal leaves out (QA: a job's `'重'` on a LATIN1
/// database): which character, and that the limit is the warehouse's.
fn encoding_hint(message: &str) -> Option<String> {
    // PostgreSQL: `character with byte sequence 0xe9 0x87 0x8d in encoding
    // "UTF8" has no equivalent in encoding "LATIN1"`.
    let (_, rest) = message.split_once("character with byte sequence ")?;
    let (bytes, rest) = rest.split_once(" in encoding \"UTF8\" has no equivalent in encoding ")?;
    let bytes: Option<Vec<u8>> = bytes
        .split(' ')
        .map(|b| u8::from_str_radix(b.trim_start_matches("0x"), 16).ok())
        .collect();
    let character = String::from_utf8(bytes?).ok()?.chars().next()?;
    let encoding = rest.trim_matches('"');
    // Named by its code point alone: the ledger records this text in that
    // encoding, which cannot hold the character itself.
    Some(format!(
        "the job's SQL or its source gives U+{:04X}, which this database's encoding, {encoding}, cannot hold: a limit of the warehouse, not of idem; leave it out of the job's text, or keep such text in a database created with ENCODING 'UTF8'",
        u32::from(character)
    ))
}

/// The database's own words for an error, without the driver's wrapping.
pub(super) fn sql_message(e: &sqlx::Error) -> String {
    match e {
        sqlx::Error::Database(db) if super::connection_limit::refusal(e).is_some() => format!(
            "{}: the warehouse limits connections (the role's or database's CONNECTION LIMIT, the server's max_connections or max_user_connections, a pooler's), and other sessions hold them all (idem needs one for a command, and one for each partition a run has in flight: the README's \"Connections\" says how many)",
            db.message()
        ),
        sqlx::Error::Database(db) => {
            let message = db.message();
            let said = match timeout_hint(message).or_else(|| encoding_hint(message)) {
                Some(hint) => format!("{message}: {hint}"),
                None => message.to_string(),
            };
            said + &detail_and_hint(&**db)
        }
        // The pool retries refused connections too until its timeout: the
        // server may be down as well as slow.
        sqlx::Error::PoolTimedOut => {
            "no connection to the warehouse within the connect timeout: the server is down, refusing connections or not answering".to_string()
        }
        // A password with a `/` or `#` ends the URL's host part early, and
        // reads as a port or a path.
        sqlx::Error::Configuration(_) => format!(
            "{e}; a user or password in the URL holding / # ? @ : % or a space must be percent-encoded (/ as %2F, # as %23, ? as %3F, @ as %40, : as %3A, % as %25, a space as %20), also when it comes from ${{VAR}}"
        ),
        other => other.to_string(),
    }
}

/// A PostgreSQL error's DETAIL and HINT, each on a line of its own under
/// its message as psql shows them: the DETAIL is where the server says
/// which row (a unique violation's "Key (id)=(1) already exists", what a
/// trigger's RAISE adds). Nothing for MariaDB and SQLite, which have none.
fn detail_and_hint(db: &dyn sqlx::error::DatabaseError) -> String {
    let Some(pg) = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>() else {
        return String::new();
    };
    [("DETAIL", pg.detail()), ("HINT", pg.hint())]
        .into_iter()
        .filter_map(|(label, text)| text.map(|text| format!("\n{label}: {text}")))
        .collect()
}

/// Whether a load's rows found no native partition of the target for
/// them (PostgreSQL: `no partition of relation "fct" found for row`,
/// SQLSTATE 23514), which said only that: the load's error adds which
/// partition to create ([`Warehouse::no_partition_for`]).
///
/// [`Warehouse::no_partition_for`]: super::Warehouse::no_partition_for
pub(super) fn is_missing_partition(db: &dyn sqlx::error::DatabaseError) -> bool {
    db.code().as_deref() == Some("23514") && db.message().starts_with("no partition of relation")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_that_does_not_parse_says_how_to_write_a_password() {
        let e: sqlx::Error = "postgres://u:pa/ss#x@h/db"
            .parse::<sqlx::postgres::PgConnectOptions>()
            .unwrap_err();
        let said = sql_message(&e);
        assert!(
            said.contains("percent-encoded (/ as %2F, # as %23"),
            "{said}"
        );
    }

    #[test]
    fn an_encodings_refusal_names_the_character() {
        let said = encoding_hint(
            "character with byte sequence 0xe9 0x87 0x8d in encoding \"UTF8\" has no equivalent in encoding \"LATIN1\"",
        )
        .expect("a hint");
        assert!(said.starts_with("the job's SQL or its source gives U+91CD, which this database's encoding, LATIN1, cannot hold"), "{said}");
        assert_eq!(encoding_hint("duplicate key value"), None);
    }

    #[test]
    fn a_timeout_says_what_its_message_leaves_out() {
        let pg = timeout_hint("canceling statement due to lock timeout").unwrap_or_default();
        assert!(pg.starts_with("another session held a lock"), "{pg}");
        assert!(!pg.contains("InnoDB"), "{pg}");
        let maria = timeout_hint("Lock wait timeout exceeded; try restarting transaction")
            .unwrap_or_default();
        assert!(maria.starts_with("another session held a lock"), "{maria}");
        assert!(
            maria.contains("this run's load of the next partition"),
            "{maria}"
        );
        assert_eq!(timeout_hint("relation \"x\" does not exist"), None);
        let idle = timeout_hint("terminating connection due to idle-in-transaction timeout")
            .unwrap_or_default();
        assert!(idle.contains("ALTER ROLE"), "{idle}");
        for statement in [
            "canceling statement due to statement timeout",
            "Query execution was interrupted (max_statement_time exceeded)",
        ] {
            let said = timeout_hint(statement).unwrap_or_default();
            assert!(said.contains("warehouse.statement_timeout"), "{said}");
        }
    }
}
