//! How a job's definition now differs from one a partition was loaded
//! under: the unified diff that `idem diff` prints and the console's
//! "what changed" overlay shows, and whether the change is layout alone.

use similar::TextDiff;

use super::Engine;

/// What is said when two definitions differ only in whitespace or comments.
pub const LAYOUT_ONLY_NOTE: &str = "they differ only in whitespace or comments: the same statement, but a definition is its text to the byte; re-run the stale partitions to mark them current, or restore the old text";

/// The change from a definition text ([`super::Job::definition_text`]) a
/// partition was loaded under to the job's now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionChange {
    /// The unified diff, headed by the two labels.
    pub unified: String,
    /// The two differ only in their SQL's whitespace and comments.
    pub layout_only: bool,
}

impl DefinitionChange {
    pub fn between(old: &str, new: &str, engine: Engine, (from, to): (&str, &str)) -> Self {
        DefinitionChange {
            unified: TextDiff::from_lines(old, new)
                .unified_diff()
                .header(from, to)
                .to_string(),
            layout_only: differs_only_in_layout(old, new, engine),
        }
    }

    /// [`LAYOUT_ONLY_NOTE`] where the change is layout alone.
    pub fn note(&self) -> Option<&'static str> {
        self.layout_only.then_some(LAYOUT_ONLY_NOTE)
    }
}

/// Whether two definition texts differ only in their SQL's whitespace and
/// comments, as the engine reads them (QA: a re-indented SQL showed a diff
/// of lines that looked alike). A comment the server acts on stays: MySQL's
/// `/*! … */` runs, and `/*+ … */` is an optimizer hint.
fn differs_only_in_layout(old: &str, new: &str, engine: Engine) -> bool {
    use sqlparser::dialect::{Dialect, MySqlDialect, PostgreSqlDialect, SQLiteDialect};
    use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};
    let dialect: &dyn Dialect = match engine {
        Engine::Postgres => &PostgreSqlDialect {},
        Engine::MySql => &MySqlDialect {},
        Engine::Sqlite => &SQLiteDialect {},
    };
    let code = |sql: &str| -> Option<Vec<Token>> {
        let tokens = Tokenizer::new(dialect, sql).tokenize().ok()?;
        Some(
            tokens
                .into_iter()
                .filter(|t| match t {
                    Token::Whitespace(Whitespace::MultiLineComment(c)) => c.starts_with(['!', '+']),
                    Token::Whitespace(_) => false,
                    _ => true,
                })
                .collect(),
        )
    };
    let (Some((old_settings, old_sql)), Some((new_settings, new_sql))) =
        (old.split_once("\nsql:\n"), new.split_once("\nsql:\n"))
    else {
        return false;
    };
    old != new
        && old_settings == new_settings
        && code(old_sql).is_some_and(|o| code(new_sql).is_some_and(|n| o == n))
}

#[cfg(test)]
mod tests {
    use super::differs_only_in_layout;
    use crate::config::Engine;

    /// A comment the server acts on is part of the statement.
    #[test]
    fn executable_comments_and_hints_are_not_layout() {
        let def = |sql: &str| format!("strategy = merge_key\ntarget = t\nsql:\n{sql}\n");
        let plain = def("select a from t");
        for (engine, sql) in [
            (Engine::MySql, "select /*! STRAIGHT_JOIN */ a from t"),
            (
                Engine::MySql,
                "select /*+ MAX_EXECUTION_TIME(1) */ a from t",
            ),
            (Engine::Postgres, "/*+ SeqScan(t) */ select a from t"),
        ] {
            assert!(!differs_only_in_layout(&plain, &def(sql), engine), "{sql}");
        }
        let commented = def("select a /* note */ from t -- more");
        assert!(differs_only_in_layout(&plain, &commented, Engine::MySql));
        assert!(!differs_only_in_layout(&plain, &plain, Engine::Sqlite));
        // Another setting is another definition, whatever the SQL.
        let retargeted = commented.replace("target = t", "target = u");
        assert!(!differs_only_in_layout(&plain, &retargeted, Engine::Sqlite));
    }
}
