//! An unknown key in `idem.toml`: which table holds it (a job by its
//! name), the valid key nearest to it, and, for a misspelt table such as
//! `[[job]]`, the tables a config has.

use std::ops::Range;

use serde_spanned::Spanned;
use toml::de::{DeTable, DeValue};

/// The TOML reader's "unknown field `x`, expected one of `a`, `b`" read
/// back: the key, and the keys its table takes.
fn read_message(message: &str) -> Option<(&str, Vec<&str>)> {
    let mut quoted = message.split('`').skip(1).step_by(2);
    let key = quoted.next()?;
    Some((key, quoted.collect()))
}

/// The valid name a misspelt one most likely meant (a config's key, a
/// job's name on the command line): the nearest by edit distance (a swap
/// of two letters counts one), ignoring case, if it is near enough to be a
/// typo rather than another word.
pub(super) fn nearest<'a>(written: &str, valid: &[&'a str]) -> Option<&'a str> {
    let written = written.to_ascii_lowercase();
    let limit = (written.chars().count() / 3).max(1);
    valid
        .iter()
        .map(|v| {
            (
                strsim::damerau_levenshtein(&written, &v.to_ascii_lowercase()),
                *v,
            )
        })
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v)
}

/// `did you mean "fct_orders"? ` where a job name that is none of `jobs`
/// is a typo of one (as a config's unknown key is said), else nothing:
/// said before the list of jobs.
pub fn did_you_mean_job(written: &str, jobs: &[&str]) -> String {
    nearest(written, jobs)
        .map(|meant| format!("did you mean \"{meant}\"? "))
        .unwrap_or_default()
}

/// Where the key at `offset` is written: the table holding it, named as
/// errors name tables (`""` for the top level, `warehouse`,
/// `jobs[0] (fct_orders)`), and whether the key's value is a table or a
/// list of them (a table header, `[job]` or `[[job]]`).
fn holder(text: &str, offset: usize) -> Option<(String, bool)> {
    fn walk(table: &DeTable<'_>, name: &str, offset: usize) -> Option<(String, bool)> {
        table.iter().find_map(|(key, value)| {
            if key.span().contains(&offset) {
                let is_table = match value.get_ref() {
                    DeValue::Table(_) => true,
                    DeValue::Array(items) => items
                        .iter()
                        .all(|i| matches!(i.get_ref(), DeValue::Table(_))),
                    _ => false,
                };
                return Some((name.to_string(), is_table));
            }
            let child = match name {
                "" => key.get_ref().to_string(),
                _ => format!("{name}.{}", key.get_ref()),
            };
            inside(value, &child, offset)
        })
    }
    fn inside(value: &Spanned<DeValue<'_>>, name: &str, offset: usize) -> Option<(String, bool)> {
        match value.get_ref() {
            DeValue::Table(table) => walk(table, &named(name, table), offset),
            DeValue::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| inside(item, &format!("{name}[{i}]"), offset)),
            _ => None,
        }
    }
    // A job is named by its name too, as the config's other errors name it.
    fn named(name: &str, table: &DeTable<'_>) -> String {
        match table.get("name").and_then(|n| n.get_ref().as_str()) {
            Some(n) => format!("{name} ({n})"),
            None => name.to_string(),
        }
    }
    let document = DeTable::parse(text).ok()?;
    walk(document.get_ref(), "", offset)
}

/// How a top-level table is written: `[[jobs]]` is a list of tables, the
/// others one table each.
fn header(table: &str) -> String {
    match table {
        "jobs" => "[[jobs]]".to_string(),
        _ => format!("[{table}]"),
    }
}

/// The field an unknown key's error names and its message, or None where
/// the reader's message is not about an unknown key.
pub(super) fn explain(text: &str, span: &Range<usize>, message: &str) -> Option<(String, String)> {
    let (key, valid) = read_message(message.strip_prefix("unknown field ")?)?;
    let (table, is_table) = holder(text, span.start).unwrap_or_default();
    let guess = nearest(key, &valid)
        .map(|v| format!("did you mean `{v}`? "))
        .unwrap_or_default();
    let list = |items: Vec<String>| match items.as_slice() {
        [] => "none".to_string(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    if table.is_empty() && is_table {
        // A misspelt table header: said as written, with the tables there are.
        let before = text.get(..span.start).unwrap_or_default();
        let written = if before.trim_end().ends_with("[[") {
            format!("[[{key}]]")
        } else {
            format!("[{key}]")
        };
        let guess = nearest(key, &valid)
            .map(|v| format!("did you mean {}? ", header(v)))
            .unwrap_or_default();
        let tables = list(valid.iter().map(|t| header(t)).collect());
        return Some((
            String::new(),
            format!("{written} is not a table idem reads; {guess}a config has {tables}"),
        ));
    }
    let keys = list(valid.iter().map(|k| format!("`{k}`")).collect());
    let place = if table.is_empty() {
        " at the top level"
    } else {
        ""
    };
    Some((
        table,
        format!("unknown key `{key}`{place}; {guess}valid keys: {keys}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_key_is_a_typo_away_or_none() {
        let job = ["name", "grain", "start", "end", "strategy", "target"];
        assert_eq!(nearest("grian", &job), Some("grain"));
        assert_eq!(nearest("Strategy", &job), Some("strategy"));
        assert_eq!(nearest("stat", &job), Some("start"));
        assert_eq!(nearest("concurrency", &job), None);
        assert_eq!(
            nearest("job", &["warehouse", "defaults", "jobs"]),
            Some("jobs")
        );
    }
}
