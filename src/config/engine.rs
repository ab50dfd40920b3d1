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

    /// What a URL of a known engine lacks, if anything, and why it cannot
    /// do without: a config error's words.
    pub fn url_lacks(url: &str) -> Option<(String, &'static str)> {
        if Engine::sqlite_in_memory(url) {
            Some((
                format!("\"{url}\" names no database file"),
                "SQLite would open an empty one in memory, gone when idem exits; expected sqlite://PATH, e.g. sqlite:///srv/idem/warehouse.db",
            ))
        } else if Engine::mysql_without_database(url) {
            // Not the URL itself: it may hold a password.
            Some((
                "the URL names no database".into(),
                "idem keeps its ledger in the connection's database, and MariaDB/MySQL selects none without one; expected mysql://USER@HOST:PORT/DATABASE",
            ))
        } else {
            None
        }
    }

    /// Whether a SQLite URL names no database file (`sqlite://`,
    /// `sqlite::memory:`, `mode=memory`, or `sqlite://${DB}` with `DB`
    /// empty): SQLite would open an empty database in memory, gone when
    /// idem exits, where every target reads as missing.
    fn sqlite_in_memory(url: &str) -> bool {
        let Some(rest) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        else {
            return false;
        };
        let (file, query) = rest.split_once('?').unwrap_or((rest, ""));
        file.is_empty() || file == ":memory:" || query.split('&').any(|p| p == "mode=memory")
    }

    /// Whether a MariaDB/MySQL URL names no database
    /// (`mysql://root@db:3306`): the server then has none selected, where
    /// idem's ledger and unqualified targets live.
    fn mysql_without_database(url: &str) -> bool {
        url.starts_with("mysql://") && Engine::mysql_database(url).is_none()
    }

    /// The database a MariaDB/MySQL URL names: the path after its host (a
    /// password may hold `/` or `@`, so the host follows the last `@`).
    fn mysql_database(url: &str) -> Option<&str> {
        let rest = url.split_once("://")?.1;
        let rest = rest.split(['?', '#']).next()?;
        let host = rest.rfind('@').map_or(rest, |at| &rest[at + 1..]);
        let database = host.split_once('/')?.1.trim_matches('/');
        (!database.is_empty()).then_some(database)
    }

    /// A backslash in a quoted string escapes the next character (MariaDB
    /// and MySQL by default; PostgreSQL only in `E'…'` strings, SQLite
    /// never): where a job's strings end, and so which `:start` is a
    /// parameter.
    pub fn backslash_escapes(self) -> bool {
        self == Engine::MySql
    }

    /// A double quote quotes a name, as the SQL standard has it
    /// (PostgreSQL, SQLite), not a string (MariaDB and MySQL by default,
    /// unless the `sql_mode` has `ANSI_QUOTES`): whether a job's `"fct"`
    /// reads the table fct.
    pub fn ansi_quotes(self) -> bool {
        self != Engine::MySql
    }

    /// A table (or schema) name as a job's SQL writes it, as the warehouse
    /// stores it: PostgreSQL folds an unquoted name to lower case; a quoted
    /// one, and any name elsewhere, is kept as written.
    pub fn stored_name(self, written: &str, quoted: bool) -> String {
        match self {
            Engine::Postgres if !quoted => written.to_lowercase(),
            _ => written.to_string(),
        }
    }

    /// How the engine tells table (and schema) names apart where the
    /// server is not asked (before connecting): SQLite by no case,
    /// PostgreSQL by case, MariaDB/MySQL as on Linux, by case
    /// (`lower_case_table_names = 0`); a connected warehouse reads the
    /// server's own ([`crate::warehouse::Warehouse::table_names`]). As
    /// told apart by case, two spellings are one table only when they are
    /// one name, which is so on every server.
    pub fn table_names(self) -> TableNames {
        match self {
            Engine::Sqlite => TableNames::AnyCase,
            Engine::Postgres | Engine::MySql => TableNames::ByCase,
        }
    }

    /// The schema a table name without one means on a warehouse at `url`:
    /// PostgreSQL's `public` (the default `search_path`; None where the URL
    /// sets its own), the database a MariaDB/MySQL URL names, SQLite's
    /// `main`. None when it cannot be told from the URL.
    pub fn home_schema(self, url: &str) -> Option<String> {
        match self {
            Engine::Sqlite => Some("main".into()),
            Engine::Postgres if url.contains("search_path") => None,
            Engine::Postgres => Some("public".into()),
            Engine::MySql => Engine::mysql_database(url).map(str::to_string),
        }
    }
}

/// Whether a warehouse tells `Orders` from `orders` as table (and schema)
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableNames {
    /// Two tables: PostgreSQL (stored names), MariaDB/MySQL with
    /// `lower_case_table_names = 0`, the default on Linux.
    ByCase,
    /// One table: SQLite, and MariaDB/MySQL with `lower_case_table_names`
    /// 1 or 2 (the default on Windows and macOS, and on some managed
    /// services).
    AnyCase,
}

impl TableNames {
    /// How a MariaDB/MySQL server with this `@@lower_case_table_names`
    /// compares names.
    pub fn of_lower_case_table_names(setting: i64) -> TableNames {
        if setting == 0 {
            TableNames::ByCase
        } else {
            TableNames::AnyCase
        }
    }

    /// Whether two stored table (or schema) names name one table (names
    /// are ASCII: [`super::Ident`]).
    pub fn same(self, a: &str, b: &str) -> bool {
        match self {
            TableNames::ByCase => a == b,
            TableNames::AnyCase => a.eq_ignore_ascii_case(b),
        }
    }

    /// One text for every spelling of a name that names the same table.
    pub fn key(self, name: &str) -> String {
        match self {
            TableNames::ByCase => name.to_string(),
            TableNames::AnyCase => name.to_ascii_lowercase(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Engine;

    #[test]
    fn a_name_without_a_schema_is_in_the_urls_home_schema() {
        let home = |engine: Engine, url: &str| engine.home_schema(url);
        assert_eq!(
            home(Engine::MySql, "mysql://u:p@h:3306/shop?ssl-mode=disabled").as_deref(),
            Some("shop")
        );
        assert_eq!(home(Engine::MySql, "mysql://u@h"), None);
        assert_eq!(home(Engine::MySql, "mysql://u@h/"), None);
        assert_eq!(
            home(Engine::Postgres, "postgres://u@h/db").as_deref(),
            Some("public")
        );
        assert_eq!(
            home(
                Engine::Postgres,
                "postgres://u@h/db?options=-c%20search_path%3Draw"
            ),
            None
        );
        assert_eq!(
            home(Engine::Sqlite, "sqlite://w.db").as_deref(),
            Some("main")
        );
    }
}
