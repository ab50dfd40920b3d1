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
    /// The engine of a URL the config accepted (`sqlite:`, `postgres…`, and
    /// otherwise MariaDB/MySQL).
    pub fn of_url(url: &str) -> Engine {
        if url.starts_with("sqlite:") {
            Engine::Sqlite
        } else if url.starts_with("postgres") {
            Engine::Postgres
        } else {
            Engine::MySql
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
