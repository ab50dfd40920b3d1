//! Who holds a partition's lock that a load waited for in vain: the session
//! on the server, what it is doing and since when, and how to end it.
//!
//! At 3 a.m. the usual holder is not a colleague's run but a dead one: an
//! idem killed by the OOM killer or an orchestrator's timeout, whose
//! statement MariaDB runs to its end before it lets go of the lock, or a
//! headless run suspended with Ctrl-Z, idle in its transaction. "Another
//! run is writing it" leaves the operator to find that session by hand; the
//! lock timeout's message names it, and says what would end it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Engine, PartitionLock, Warehouse, WarehouseError};

/// The session holding a partition's lock, as the server describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct LockHolder {
    pub engine: Engine,
    /// The server's id of the session: PostgreSQL's backend pid, MariaDB's
    /// connection id.
    pub session: i64,
    /// The session's name (PostgreSQL's `application_name`); an idem load
    /// names its session `idem#<pid>.<n> <job> <partition>`.
    pub name: Option<String>,
    pub user: Option<String>,
    /// Where the client connects from, as the server sees it.
    pub client: Option<String>,
    /// The client connects from where this process does.
    pub same_host: bool,
    /// What the session is doing: running a statement, or idle.
    pub running: bool,
    /// Seconds in its transaction (PostgreSQL), or in its current command.
    pub seconds: Option<i64>,
    /// Its current (or, idle, last) statement.
    pub statement: Option<String>,
}

/// Of an idem process named by a holder's session, on this host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    Running,
    /// Suspended (Ctrl-Z, SIGSTOP): it holds its locks until resumed.
    Stopped,
    /// No process of that id runs idem here any more.
    Gone,
}

impl LockHolder {
    /// From a row of [`super::Dialect::lock_holder_query`]: session, name,
    /// user, client, running (0/1), seconds, statement, same host (0/1).
    pub(super) fn from_row(engine: Engine, row: &AnyRow) -> Result<LockHolder, sqlx::Error> {
        Ok(LockHolder {
            engine,
            session: row.try_get(0)?,
            name: row.try_get(1)?,
            user: row.try_get(2)?,
            client: row.try_get(3)?,
            running: row.try_get::<Option<i64>, _>(4)? == Some(1),
            seconds: row.try_get(5)?,
            statement: row.try_get(6)?,
            same_host: row.try_get::<Option<i64>, _>(7)? == Some(1),
        })
    }

    /// The idem process whose load holds the lock, when its session's name
    /// says so: `idem#<pid>.…`.
    pub fn idem_pid(&self) -> Option<u32> {
        let rest = self.name.as_deref()?.strip_prefix("idem#")?;
        rest.split('.').next()?.parse().ok()
    }

    /// The statement that ends the holder's session (and rolls back its
    /// transaction, releasing the lock).
    pub fn end_statement(&self) -> String {
        match self.engine {
            Engine::Postgres => format!("SELECT pg_terminate_backend({})", self.session),
            Engine::MySql | Engine::Sqlite => format!("KILL {}", self.session),
        }
    }

    /// The words for it, with what would end it: what follows "could not
    /// take the lock … within the lock timeout: ".
    pub fn describe(&self, process: Option<ProcessState>) -> String {
        let session = match self.engine {
            Engine::Postgres => format!("session {}", self.session),
            Engine::MySql | Engine::Sqlite => format!("connection {}", self.session),
        };
        let mut who = Vec::new();
        if let Some(name) = self.name.as_deref().filter(|n| !n.is_empty()) {
            who.push(format!("\"{name}\""));
        }
        match (self.user.as_deref(), self.client.as_deref()) {
            (Some(user), Some(client)) if !client.is_empty() => {
                who.push(format!("{user}@{client}"))
            }
            (Some(user), _) => who.push(user.to_string()),
            (None, Some(client)) => who.push(client.to_string()),
            (None, None) => {}
        }
        if self.same_host {
            who.push("from this host".into());
        }
        let mut out = format!("held by {session}");
        if !who.is_empty() {
            out.push_str(&format!(" ({})", who.join(", ")));
        }
        let doing = if self.running {
            "running"
        } else if self.engine == Engine::Postgres {
            "idle in its transaction"
        } else {
            "idle"
        };
        out.push_str(&format!(", {doing}"));
        if let Some(s) = self.seconds {
            let span = match self.engine {
                Engine::Postgres => "its transaction began",
                Engine::MySql | Engine::Sqlite => "its current command began",
            };
            out.push_str(&format!(" ({} since {span})", seconds(s)));
        }
        if let Some(statement) = self.statement.as_deref().map(one_line)
            && !statement.is_empty()
        {
            let what = if self.running { "" } else { "after " };
            out.push_str(&format!(", {what}{statement}"));
        }
        let end = self.end_statement();
        match (self.idem_pid(), process) {
            (Some(pid), Some(ProcessState::Stopped)) => out.push_str(&format!(
                ". It is idem process {pid} on this host, stopped (Ctrl-Z or SIGSTOP): \
                 `kill -CONT {pid}` lets it go on, or end its session with {end}"
            )),
            (Some(pid), Some(ProcessState::Gone)) => out.push_str(&format!(
                ". It was idem process {pid} on this host, which is no longer running: \
                 end its session with {end}"
            )),
            (Some(pid), Some(ProcessState::Running)) => out.push_str(&format!(
                ". It is idem process {pid} on this host, still running: wait for it, or stop it"
            )),
            _ if self.engine == Engine::MySql => out.push_str(&format!(
                ". If the run that began it is gone (killed, or its terminal closed), \
                 the server runs its statement to the end before it lets go of the lock: \
                 end it with {end}"
            )),
            _ => out.push_str(&format!(
                ". If whatever began it is gone, end its session with {end}"
            )),
        }
        out
    }
}

/// `37 s`, `12 min 5 s`, `3 h 2 min`.
fn seconds(s: i64) -> String {
    let s = s.max(0);
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s % 3600 / 60),
    }
}

/// A statement on one line, cut to a length an error line can carry.
fn one_line(statement: &str) -> String {
    const MAX: usize = 120;
    let words: Vec<&str> = statement.split_whitespace().collect();
    let line = words.join(" ");
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The state of process `pid` on this host, where the system says (Linux's
/// `/proc`); None where it cannot tell. A process of that id that is not
/// idem (the id was reused) counts as gone.
pub fn process_state(pid: u32) -> Option<ProcessState> {
    let proc = std::path::Path::new("/proc");
    if !proc.join("self").exists() {
        return None;
    }
    let dir = proc.join(pid.to_string());
    let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
        return Some(ProcessState::Gone);
    };
    let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
    if !comm.contains("idem") {
        return Some(ProcessState::Gone);
    }
    // `pid (comm) S …`: the state follows the last parenthesis.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim().chars().next());
    Some(match state {
        Some('T' | 't') => ProcessState::Stopped,
        Some('Z' | 'X' | 'x') | None => ProcessState::Gone,
        Some(_) => ProcessState::Running,
    })
}

impl Warehouse {
    /// Who holds `lock` right now, as the server tells it; None where the
    /// engine cannot say (SQLite), nobody does any more, or the question
    /// failed (the answer only adds to an error's message). Asked on the
    /// load's own connection `conn`, which no longer waits for the lock:
    /// another may be more than the warehouse grants the role, or keep
    /// one from a load.
    pub(super) async fn lock_holder(
        &self,
        conn: &mut sqlx::AnyConnection,
        lock: &PartitionLock,
    ) -> Option<String> {
        if self.dialect().engine() == Engine::Sqlite {
            return super::sqlite::database_file(&self.config().url)
                .and_then(|file| std::fs::canonicalize(file).ok())
                .and_then(|file| sqlite_holder(&file));
        }
        let ask = async {
            let names = self.session_lock_names(conn, lock).await.ok()?;
            let mut sql = self.sql();
            if !self.dialect().lock_holder_query(&mut sql, lock, &names) {
                return None;
            }
            let row = sql.query().fetch_optional(&mut *conn).await.ok()??;
            LockHolder::from_row(self.dialect().engine(), &row).ok()
        };
        described(ask).await
    }
}

/// The holder `ask` finds, in words, its idem process looked up on this
/// host; None when the question finds nobody, fails, or takes over 5 s.
async fn described(ask: impl std::future::Future<Output = Option<LockHolder>>) -> Option<String> {
    let holder = tokio::time::timeout(std::time::Duration::from_secs(5), ask)
        .await
        .ok()??;
    Some(in_words(&holder))
}

/// A holder described, its idem process looked up on this host.
fn in_words(holder: &LockHolder) -> String {
    let process = holder
        .idem_pid()
        .filter(|_| holder.same_host)
        .and_then(process_state);
    holder.describe(process)
}

/// While kept, notes a MariaDB/MySQL session as one of this process's loads
/// holding its partition's lock (see [`Warehouse::own_load`]).
pub(super) struct OwnLoad {
    loads: Arc<Mutex<HashMap<i64, String>>>,
    session: i64,
}

impl Drop for OwnLoad {
    fn drop(&mut self) {
        if let Ok(mut loads) = self.loads.lock() {
            loads.remove(&self.session);
        }
    }
}

impl Warehouse {
    /// Notes `session` as this process's load of `load` (its job and
    /// partition) until the note is dropped.
    pub(super) fn own_load(&self, session: i64, load: String) -> OwnLoad {
        if let Ok(mut loads) = self.own_loads.lock() {
            loads.insert(session, load);
        }
        OwnLoad {
            loads: Arc::clone(&self.own_loads),
            session,
        }
    }

    /// The words for the session a load waited for: a load of this very
    /// process says so (on InnoDB, the neighbouring partition's, whose
    /// rows hold the first row past the window); anyone else as
    /// [`LockHolder::describe`] has it.
    pub(super) fn blocker_words(&self, holder: LockHolder) -> String {
        let own = match holder.engine {
            Engine::Postgres => holder
                .idem_pid()
                .filter(|&pid| holder.same_host && pid == std::process::id())
                .and_then(|_| Some(holder.name.as_deref()?.split_once(' ')?.1.to_string())),
            Engine::MySql | Engine::Sqlite => self
                .own_loads
                .lock()
                .ok()
                .and_then(|loads| loads.get(&holder.session).cloned()),
        };
        let Some(load) = own else {
            return in_words(&holder);
        };
        let session = match holder.engine {
            Engine::Postgres => format!("session {}", holder.session),
            Engine::MySql | Engine::Sqlite => format!("connection {}", holder.session),
        };
        let why = match holder.engine {
            Engine::MySql => {
                ": InnoDB locks the first row past the window a DELETE clears, so a load waits for its \
                 neighbour's COMMIT; a lock_timeout above a partition's load time lets it wait its turn"
            }
            Engine::Postgres | Engine::Sqlite => "",
        };
        format!("held by this run's own load of {load} ({session}) until it commits{why}")
    }

    /// `e`, naming the session that holds a lock on `table` (or one of its
    /// partitions) where the statement waited on it past `lock_timeout`:
    /// a state read behind a load's TRUNCATE of a native partition said
    /// only what such a session might be.
    pub(super) async fn naming_table_holder(
        &self,
        table: &crate::config::TableName,
        e: WarehouseError,
    ) -> WarehouseError {
        match self.naming_file_holder(e) {
            WarehouseError::Sql(sqlx::Error::Database(db))
                if self.dialect().waited_on_lock(&*db) =>
            {
                match self.table_lock_holder(table).await {
                    Some(holder) => WarehouseError::TableLocked {
                        table: table.to_string(),
                        message: db.message().to_string(),
                        holder,
                    },
                    None => WarehouseError::Sql(sqlx::Error::Database(db)),
                }
            }
            e => e,
        }
    }

    /// Who holds a lock on `table` that a load waits on (see
    /// [`super::Dialect::table_lock_holder_query`]); None as for
    /// [`Warehouse::lock_holder`].
    pub(super) async fn table_lock_holder(
        &self,
        table: &crate::config::TableName,
    ) -> Option<String> {
        let mut sql = self.sql();
        if !self.dialect().table_lock_holder_query(&mut sql, table) {
            return None;
        }
        described(async {
            let mut conn = self.pooled().await.ok()?;
            let row = sql.query().fetch_optional(&mut *conn).await.ok()??;
            LockHolder::from_row(self.dialect().engine(), &row).ok()
        })
        .await
    }
}

impl Warehouse {
    /// `e`, where it is SQLite's busy answer past `lock_timeout` (`database
    /// is locked`), naming who else has the file open and what lets idem
    /// go on: a load that had the write lock waited for a reader (in the
    /// rollback journal mode a COMMIT waits for every reader to finish), a
    /// read or the ledger's making for another program's write.
    pub(super) fn naming_file_holder(&self, e: WarehouseError) -> WarehouseError {
        file_holder_named(self.dialect(), &self.config().url, e)
    }
}

/// [`Warehouse::naming_file_holder`], before there is a warehouse (the
/// first connection's making of the ledger).
pub(super) fn file_holder_named(
    dialect: &dyn super::Dialect,
    url: &str,
    e: WarehouseError,
) -> WarehouseError {
    match e {
        WarehouseError::Sql(sqlx::Error::Database(db))
            if dialect.engine() == Engine::Sqlite && dialect.lock_refused(&*db) =>
        {
            let file = super::sqlite::database_file(url);
            WarehouseError::FileLocked {
                file: file
                    .as_ref()
                    .map_or_else(|| super::redact(url), |f| f.display().to_string()),
                message: db.message().to_string(),
                holder: file.map_or_else(
                    || "another session of this process holds it".to_string(),
                    |f| sqlite_busy_words(&f),
                ),
            }
        }
        e => e,
    }
}

/// Who else has the SQLite file open, and what lets idem go on, by the
/// file's journal mode (read from its header, which needs no lock).
fn sqlite_busy_words(file: &std::path::Path) -> String {
    let canonical = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let mut openers = sqlite_openers(&canonical);
    openers.sort_by_key(|(_, comm)| comm.contains("idem"));
    let who = match openers.as_slice() {
        [] => "another program (none of this user's processes on this host has it open: one of another user's, or on another host over a network file system)".to_string(),
        [(pid, comm)] => format!("{comm} (process {pid}) on this host"),
        [(pid, comm), rest @ ..] => format!(
            "{comm} (process {pid}) on this host, or one of {} other process{} with it open",
            rest.len(),
            if rest.len() == 1 { "" } else { "es" }
        ),
    };
    // Bytes 18 and 19 of the header are 2 in WAL mode, 1 in the rollback
    // journal modes.
    let wal = std::fs::File::open(&canonical).ok().and_then(|mut f| {
        use std::io::Read;
        let mut header = [0u8; 20];
        f.read_exact(&mut header).ok()?;
        Some(header[18] == 2)
    });
    let mode = if wal == Some(false) {
        ". In the rollback journal mode this file is in, a COMMIT waits for every reader and a \
         read for a COMMIT; in WAL mode they never wait for each other (idem switches the file to \
         WAL when a run finds no one else in it, or run `PRAGMA journal_mode = WAL` then)"
    } else {
        ""
    };
    format!(
        "a transaction of {who} holds it; nothing was written. End that transaction and run \
         again, or raise warehouse.lock_timeout{mode}"
    )
}

/// SQLite's one write lock has no holder to ask about: the words name the
/// other processes of this host that have the database open (this user's,
/// as Linux's `/proc` shows them), idem's first.
fn sqlite_holder(file: &std::path::Path) -> Option<String> {
    let mut openers = sqlite_openers(file);
    openers.sort_by_key(|(_, comm)| !comm.contains("idem"));
    let (pid, comm) = openers.first()?;
    let others = match openers.len() {
        1 => String::new(),
        n => format!(
            " (and {} other process{})",
            n - 1,
            if n == 2 { "" } else { "es" }
        ),
    };
    let words = match comm.contains("idem").then(|| process_state(*pid)).flatten() {
        Some(ProcessState::Stopped) => format!(
            "the database is open in idem process {pid} on this host{others}, stopped (Ctrl-Z or SIGSTOP) \
             with SQLite's one write lock: `kill -CONT {pid}` lets it go on, or `kill -9 {pid}` ends it \
             and its transaction rolls back"
        ),
        Some(ProcessState::Running) => format!(
            "the database is open in idem process {pid} on this host{others}, still running: SQLite \
             has one writer at a time; wait for it, or stop it"
        ),
        _ => format!(
            "the database is open in {} (process {pid}) on this host{others}: SQLite has one writer \
             at a time, and a write transaction there holds its lock",
            comm.trim()
        ),
    };
    Some(words)
}

/// This host's processes but this one with `file` open, with their names
/// (`comm`); only those whose descriptors this user may read.
pub(crate) fn sqlite_openers(file: &std::path::Path) -> Vec<(u32, String)> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut out = Vec::new();
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let open = fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == file));
        if open {
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            out.push((pid, comm.trim().to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(engine: Engine) -> LockHolder {
        LockHolder {
            engine,
            session: 4711,
            name: Some("idem#4242.7 fct 2026-01-02".into()),
            user: Some("etl".into()),
            client: Some("10.0.0.7".into()),
            same_host: true,
            running: false,
            seconds: Some(754),
            statement: Some("INSERT INTO fct (id, dt)\n   SELECT id, dt FROM src".into()),
        }
    }

    #[test]
    fn a_suspended_idem_is_named_with_how_to_resume_or_end_it() {
        let words = holder(Engine::Postgres).describe(Some(ProcessState::Stopped));
        assert_eq!(
            words,
            "held by session 4711 (\"idem#4242.7 fct 2026-01-02\", etl@10.0.0.7, from this host), \
             idle in its transaction (12 min 34 s since its transaction began), \
             after INSERT INTO fct (id, dt) SELECT id, dt FROM src. \
             It is idem process 4242 on this host, stopped (Ctrl-Z or SIGSTOP): \
             `kill -CONT 4242` lets it go on, or end its session with SELECT pg_terminate_backend(4711)"
        );
        let gone = holder(Engine::Postgres).describe(Some(ProcessState::Gone));
        assert!(gone.ends_with("It was idem process 4242 on this host, which is no longer running: end its session with SELECT pg_terminate_backend(4711)"), "{gone}");
    }

    #[test]
    fn a_mariadb_connection_is_named_with_its_kill() {
        let h = LockHolder {
            name: None,
            running: true,
            seconds: Some(37),
            same_host: false,
            client: Some("localhost:51234".into()),
            ..holder(Engine::MySql)
        };
        assert_eq!(h.idem_pid(), None);
        let words = h.describe(None);
        assert!(
            words.starts_with(
                "held by connection 4711 (etl@localhost:51234), running (37 s since its current command began), INSERT INTO fct"
            ),
            "{words}"
        );
        assert!(words.ends_with("end it with KILL 4711"), "{words}");
    }

    #[test]
    fn long_statements_are_cut_and_spans_read_as_time() {
        let long = format!("SELECT {}", "x, ".repeat(100));
        let line = one_line(&long);
        assert_eq!(line.chars().count(), 121, "{line}");
        assert!(line.ends_with('…'));
        assert_eq!(seconds(59), "59 s");
        assert_eq!(seconds(3600 * 3 + 125), "3 h 2 min");
    }

    #[test]
    fn this_process_is_running_and_an_unknown_one_is_gone() {
        if !std::path::Path::new("/proc/self").exists() {
            return;
        }
        // The test binary's name holds "idem" (idem-<hash>).
        assert_eq!(
            process_state(std::process::id()),
            Some(ProcessState::Running)
        );
        assert_eq!(process_state(u32::MAX - 1), Some(ProcessState::Gone));
    }
}
