//! SQLite, a double-quoted name in the job's SQL that names no column or
//! table where it stands: SQLite then reads it as a string (its legacy
//! leniency), so `select "amount_usd" from orders`, where orders has no
//! such column, loads the text `amount_usd` into every row instead of
//! failing. A name in backticks is never read as a string: each
//! double-quoted name is tried in backticks, and one that SQLite then
//! rejects as no such column was being read as text.

use sqlparser::dialect::SQLiteDialect;
use sqlparser::tokenizer::{Location, Token, Tokenizer};

use super::{Finding, Severity, file_line};
use crate::config::Job;
use crate::warehouse::{Warehouse, WarehouseError};

/// Names tried at most, each one a description of the SQL on the warehouse.
const MOST_NAMES: usize = 32;

/// The findings for a SQLite `job` whose SQL the warehouse describes as
/// it is.
pub(super) async fn findings(
    wh: &Warehouse,
    job: &Job,
    out: &mut Vec<Finding>,
) -> Result<(), WarehouseError> {
    for (name, line, spans) in double_quoted_names(&job.sql) {
        let mut variant = job.sql.clone();
        // From the last, so that the earlier byte ranges stay where they were.
        for (start, end) in spans.iter().rev() {
            variant.replace_range(*start..*end, &format!("`{}`", name.replace('`', "``")));
        }
        let mut sql = wh.sql();
        sql.push("SELECT * FROM (");
        if sql.job_sql(&variant, &job.start).is_err() {
            continue;
        }
        sql.push(") src");
        let Err(WarehouseError::Sql(sqlx::Error::Database(db))) =
            wh.output_columns(sql.text()).await
        else {
            continue;
        };
        if !db.message().starts_with(&format!("no such column: {name}")) {
            continue;
        }
        let literal = name.replace('\'', "''");
        out.push(Finding::new(
            Severity::Warning,
            file_line(job, line),
            format!(
                "\"{name}\" names no column or table where it stands, so SQLite reads it as the text '{literal}': every load writes that string instead of failing"
            ),
            format!(
                "write the column's real name; quote a name in backticks (`{name}`), which SQLite never reads as text, or write '{literal}' in single quotes if text is meant"
            ),
        ));
    }
    Ok(())
}

/// A double-quoted name of a job's SQL: the name, the 1-based line of its
/// first use, and the byte ranges of all its uses.
type QuotedName = (String, usize, Vec<(usize, usize)>);

/// Each distinct double-quoted name of `sql` (outside strings and
/// comments).
fn double_quoted_names(sql: &str) -> Vec<QuotedName> {
    let Ok(tokens) = Tokenizer::new(&SQLiteDialect {}, sql).tokenize_with_location() else {
        return Vec::new();
    };
    let lines: Vec<usize> = std::iter::once(0)
        .chain(sql.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let offset = |at: Location| -> Option<usize> {
        let line_start = *lines.get((at.line as usize).checked_sub(1)?)?;
        let column = (at.column as usize).checked_sub(1)?;
        sql[line_start..]
            .char_indices()
            .nth(column)
            .map(|(i, _)| line_start + i)
            .or((column == sql[line_start..].chars().count()).then_some(sql.len()))
    };
    let mut names: Vec<QuotedName> = Vec::new();
    for t in &tokens {
        let Token::Word(w) = &t.token else { continue };
        if w.quote_style != Some('"') {
            continue;
        }
        let (Some(start), Some(end)) = (offset(t.span.start), offset(t.span.end)) else {
            continue;
        };
        // The token as written, quotes and all: anything else is a span
        // this reading cannot place, and is left alone.
        if !sql[start..end].starts_with('"') || !sql[start..end].ends_with('"') {
            continue;
        }
        if let Some((_, _, spans)) = names.iter_mut().find(|(n, _, _)| *n == w.value) {
            spans.push((start, end));
        } else if names.len() < MOST_NAMES {
            names.push((
                w.value.clone(),
                t.span.start.line as usize,
                vec![(start, end)],
            ));
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_quoted_names_are_found_outside_strings_and_comments() {
        let sql =
            "select \"a\", 'x \"b\" y', `c` -- \"d\"\nfrom t where \"é\" = \"a\" and e = '\"f\"'";
        let names = double_quoted_names(sql);
        let found: Vec<(&str, usize)> = names.iter().map(|(n, l, _)| (n.as_str(), *l)).collect();
        assert_eq!(found, [("a", 1), ("é", 2)]);
        for (_, _, spans) in &names {
            for (start, end) in spans {
                assert!(sql[*start..*end].starts_with('"') && sql[*start..*end].ends_with('"'));
            }
        }
        assert_eq!(names[0].2.len(), 2);
    }
}
