//! Which engine a warehouse URL names, and what that means for reading a
//! job's SQL.

/// The engine behind a warehouse URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
    MySql,
}

impl Engine {
    /// How many partitions can usefully write at once: SQLite has one
    /// writer per database, so more would only queue on its lock.
    pub fn max_writers(self) -> usize {
        match self {
            Engine::Sqlite => 1,
            Engine::Postgres | Engine::MySql => usize::MAX,
        }
    }

    /// The engine a warehouse URL names (`sqlite:`, `postgres…`, `mysql:`),
    /// if it names one.
    pub fn of_url(url: &str) -> Option<Engine> {
        if url.starts_with("sqlite:") {
            Some(Engine::Sqlite)
        } else if url.starts_with("postgres") {
            Some(Engine::Postgres)
        } else if url.starts_with("mysql:") {
            Some(Engine::MySql)
        } else {
            None
        }
    }

    /// A backslash in a quoted string escapes the next character (MariaDB
    /// and MySQL by default; PostgreSQL only in `E'…'` strings, SQLite
    /// never): where a job's strings end, and so which `:start` is a
    /// parameter.
    pub fn backslash_escapes(self) -> bool {
        self == Engine::MySql
    }
}
