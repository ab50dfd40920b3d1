//! How a job's definition now differs from one a partition was loaded
//! under: the unified diff that `idem diff` prints and the console's
//! "what changed" overlay shows, and whether the change is layout alone.

use similar::TextDiff;

use super::{Engine, TableNames};

/// What is said when two definitions differ only in whitespace or comments.
pub const LAYOUT_ONLY_NOTE: &str = "they differ only in whitespace or comments: the same statement, but a definition is its text to the byte; re-run the stale partitions to mark them current, or restore the old text";

/// What is said when two definitions differ only in the case of the
/// target's name, which names one table on the warehouse (SQLite, a
/// MariaDB/MySQL server that folds table names).
pub const TARGET_CASE_NOTE: &str = "they differ only in how the target's name is cased, and this warehouse takes both for the same table: the same load, but a definition is its text to the byte; re-run the stale partitions to mark them current, or restore the old spelling";

/// [`TARGET_CASE_NOTE`], where the SQL's layout differs too.
pub const TARGET_CASE_AND_LAYOUT_NOTE: &str = "they differ only in how the target's name is cased, which this warehouse takes for the same table, and in whitespace or comments: the same load, but a definition is its text to the byte; re-run the stale partitions to mark them current, or restore the old text";

/// The change from a definition text ([`super::Job::definition_text`]) a
/// partition was loaded under to the job's now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionChange {
    /// The unified diff, headed by the two labels.
    pub unified: String,
    /// Why the two load alike though their texts differ, as it is said:
    /// only their layout or their target's case differs.
    pub alike: Option<&'static str>,
}

impl DefinitionChange {
    /// The change from `old` to `new` on a warehouse of `engine` that
    /// compares table names by `names`.
    pub fn between(
        old: &str,
        new: &str,
        engine: Engine,
        names: TableNames,
        (from, to): (&str, &str),
    ) -> Self {
        DefinitionChange {
            unified: TextDiff::from_lines(old, new)
                .unified_diff()
                .header(from, to)
                .to_string(),
            alike: alike(old, new, engine, names),
        }
    }

    /// What is said of a change that loads alike, where it does.
    pub fn note(&self) -> Option<&'static str> {
        self.alike
    }
}

/// Whether two different definition texts load alike, and so what is
/// said: their settings the same but for the target's case where `names`
/// takes both for one table, their SQL the same statement.
fn alike(old: &str, new: &str, engine: Engine, names: TableNames) -> Option<&'static str> {
    let (old_settings, old_sql) = old.split_once("\nsql:\n")?;
    let (new_settings, new_sql) = new.split_once("\nsql:\n")?;
    if old == new {
        return None;
    }
    let same_table = old_settings.lines().count() == new_settings.lines().count()
        && old_settings
            .lines()
            .zip(new_settings.lines())
            .all(|(o, n)| {
                o == n
                    || (o.starts_with("target = ")
                        && n.starts_with("target = ")
                        && names.same(o, n))
            });
    let same_sql = old_sql == new_sql;
    let layout = !same_sql && differs_only_in_layout(old_sql, new_sql, engine);
    match (old_settings == new_settings, same_table) {
        (true, _) if layout => Some(LAYOUT_ONLY_NOTE),
        (false, true) if same_sql => Some(TARGET_CASE_NOTE),
        (false, true) if layout => Some(TARGET_CASE_AND_LAYOUT_NOTE),
        _ => None,
    }
}

/// Whether two SQL texts differ only in whitespace and comments, as the
/// engine reads them (QA: a re-indented SQL showed a diff of lines that
/// looked alike). A comment the server acts on stays: MySQL's `/*! … */`
/// runs, and `/*+ … */` is an optimizer hint.
fn differs_only_in_layout(old_sql: &str, new_sql: &str, engine: Engine) -> bool {
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
    code(old_sql).is_some_and(|o| code(new_sql).is_some_and(|n| o == n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(target: &str, sql: &str) -> String {
        format!("strategy = merge_key\ntarget = {target}\nsql:\n{sql}\n")
    }

    /// A comment the server acts on is part of the statement.
    #[test]
    fn executable_comments_and_hints_are_not_layout() {
        let plain = def("t", "select a from t");
        let alike = |new: &str, engine| alike(&plain, new, engine, TableNames::ByCase);
        for (engine, sql) in [
            (Engine::MySql, "select /*! STRAIGHT_JOIN */ a from t"),
            (
                Engine::MySql,
                "select /*+ MAX_EXECUTION_TIME(1) */ a from t",
            ),
            (Engine::Postgres, "/*+ SeqScan(t) */ select a from t"),
        ] {
            assert_eq!(alike(&def("t", sql), engine), None, "{sql}");
        }
        let commented = def("t", "select a /* note */ from t -- more");
        assert_eq!(alike(&commented, Engine::MySql), Some(LAYOUT_ONLY_NOTE));
        assert_eq!(alike(&plain, Engine::Sqlite), None);
        // Another setting is another definition, whatever the SQL.
        let retargeted = def("u", "select a /* note */ from t -- more");
        assert_eq!(alike(&retargeted, Engine::Sqlite), None);
    }

    /// QA: on SQLite a target rewritten `fct` → `FCT` (one table there)
    /// marked every partition stale, and the diff showed the target
    /// changed with no word that it is the same table.
    #[test]
    fn a_target_cased_otherwise_is_the_same_table_where_names_fold() {
        let old = def("fct", "select a from t");
        let recased = def("FCT", "select a from t");
        let relaid = def("FCT", "select a\n  from t");
        assert_eq!(
            alike(&old, &recased, Engine::Sqlite, TableNames::AnyCase),
            Some(TARGET_CASE_NOTE)
        );
        assert_eq!(
            alike(&old, &relaid, Engine::Sqlite, TableNames::AnyCase),
            Some(TARGET_CASE_AND_LAYOUT_NOTE)
        );
        // Two tables where names are compared by case (PostgreSQL).
        assert_eq!(
            alike(&old, &recased, Engine::Postgres, TableNames::ByCase),
            None
        );
        // Another table, or another SQL, is another load.
        let other = def("FCT", "select b from t");
        assert_eq!(
            alike(&old, &other, Engine::Sqlite, TableNames::AnyCase),
            None
        );
        let elsewhere = def("fct2", "select a from t");
        assert_eq!(
            alike(&old, &elsewhere, Engine::Sqlite, TableNames::AnyCase),
            None
        );
    }
}
