//! Config errors: each positioned in the file (line, column) and named by
//! its field, with what would be valid.

use std::ops::Range;

use serde_spanned::Spanned;

/// A config error, positioned in the file; line 0 is the file as a whole
/// (it could not be read), shown without a position.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        let sep = if self.field.is_empty() { "" } else { ": " };
        write!(f, ": {}{sep}{}", self.field, self.message)
    }
}

/// Why a config file could not be read, and what to do about it.
pub(super) fn unreadable(path: &std::path::Path, e: &std::io::Error) -> ConfigError {
    use std::io::ErrorKind;
    let message = match e.kind() {
        ErrorKind::NotFound => {
            "cannot read config: there is no such file (create one, or pass --config PATH)"
                .to_string()
        }
        ErrorKind::PermissionDenied => "cannot read config: permission denied; check the file's permissions and owner (ls -l shows them)".to_string(),
        ErrorKind::IsADirectory => format!(
            "cannot read config: it is a directory; pass the config file inside it, e.g. --config {}",
            path.join("idem.toml").display()
        ),
        _ => format!("cannot read config: {e}"),
    };
    ConfigError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        field: String::new(),
        message,
    }
}

/// A config file past [`super::MAX_CONFIG_BYTES`]: not a config.
pub(super) fn too_large(path: &std::path::Path) -> ConfigError {
    ConfigError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        field: String::new(),
        message: format!(
            "cannot read config: it is larger than {} MiB, which no config is; pass the idem.toml that has [warehouse] and [[jobs]]",
            super::MAX_CONFIG_BYTES >> 20
        ),
    }
}

/// Config bytes that are not UTF-8: the first bad byte's place.
pub(super) fn not_utf8(path: &std::path::Path, bytes: &[u8], valid_up_to: usize) -> ConfigError {
    let before = &bytes[..valid_up_to.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let column = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    ConfigError {
        file: path.display().to_string(),
        line,
        column,
        field: String::new(),
        message: "cannot read config: the file is not UTF-8 text; save it as UTF-8".to_string(),
    }
}

/// Of a TOML value, what [`field_at`]'s callers tell apart.
enum TomlKind {
    Datetime,
    Other,
}

/// The field whose value lies at `offset` in the config text, as errors
/// name fields (`warehouse.lock_timeout`, `jobs[1].grain`), and what kind
/// of value it holds: a type error from the TOML reader gives the value's
/// place only.
fn field_at(text: &str, offset: usize) -> Option<(String, TomlKind)> {
    use toml::de::{DeTable, DeValue};
    fn walk(table: &DeTable<'_>, prefix: &str, offset: usize) -> Option<(String, TomlKind)> {
        table.iter().find_map(|(key, value)| {
            let name = format!("{prefix}{}", key.get_ref());
            within(value, &name, offset)
        })
    }
    fn within(
        value: &Spanned<DeValue<'_>>,
        name: &str,
        offset: usize,
    ) -> Option<(String, TomlKind)> {
        let here = |value: &Spanned<DeValue<'_>>| {
            let kind = match value.get_ref() {
                DeValue::Datetime(_) => TomlKind::Datetime,
                _ => TomlKind::Other,
            };
            value
                .span()
                .contains(&offset)
                .then(|| (name.to_string(), kind))
        };
        match value.get_ref() {
            // Nothing in the table: the table itself (a key missing from it),
            // a job named by its name too.
            DeValue::Table(table) => walk(table, &format!("{name}."), offset).or_else(|| {
                let named = table
                    .get("name")
                    .and_then(|n| n.get_ref().as_str())
                    .map_or(name.to_string(), |n| format!("{name} ({n})"));
                here(value).map(|(_, kind)| (named, kind))
            }),
            // An item of the list, else the list itself (a list where one
            // value was expected: the error is at its bracket).
            DeValue::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, item)| match item.get_ref() {
                    DeValue::Table(_) => within(item, &format!("{name}[{i}]"), offset),
                    _ => here(item),
                })
                .or_else(|| here(value)),
            _ => here(value),
        }
    }
    let document = DeTable::parse(text).ok()?;
    walk(document.get_ref(), "", offset)
}

/// What to write instead, after the TOML reader's "invalid type" message.
fn type_hint(field: &str, message: &str) -> String {
    let key = field.rsplit('.').next().unwrap_or(field);
    if !message.starts_with("invalid type") {
        return String::new();
    }
    // `[jobs]` makes one table where idem reads a list of them; the field is
    // named `jobs (NAME)` by the job's name.
    if !field.contains('.') && field.split(' ').next() == Some("jobs") {
        return "; write each job under [[jobs]] (two brackets: one table per job), not [jobs]"
            .into();
    }
    match key {
        "strategy" => format!("; write {key} = \"replace_partition\" or \"merge_key\""),
        "grain" => format!("; expected one of hour, day, month, e.g. {key} = \"day\""),
        "url" => format!(
            "; write it in quotes: sqlite://PATH, postgres://… or mysql://…, e.g. {key} = \"${{DATABASE_URL}}\""
        ),
        "statement_timeout" | "lock_timeout" | "connect_timeout" => {
            format!("; write a duration in quotes, e.g. {key} = \"10s\"")
        }
        "concurrency" | "retries" => format!("; write a whole number, e.g. {key} = 4"),
        "shrink_guard" => {
            format!("; write a fraction from 0 to below 1, without quotes, e.g. {key} = 0.5")
        }
        "unique_key" => format!("; write a list of column names, e.g. {key} = [\"id\"]"),
        "depends_on" => format!("; write a list of job names, e.g. {key} = [\"stg_orders\"]"),
        "start" | "end" => format!("; write the date in quotes, e.g. {key} = \"2026-01-01\""),
        _ if message.ends_with("expected a boolean") => format!("; write {key} = true or false"),
        _ if message.ends_with("expected a string") => {
            format!("; write it in quotes, e.g. {key} = \"…\"")
        }
        _ => String::new(),
    }
}

pub(super) struct Positions<'a> {
    pub(super) file: String,
    pub(super) text: &'a str,
}

impl Positions<'_> {
    /// The TOML reader's error, reworded where it is terse and named by
    /// the field it is about.
    pub(super) fn toml_error(&self, e: &toml::de::Error) -> ConfigError {
        let text = self.text;
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim().to_string();
        if let Some((field, message)) = super::unknown_key::explain(text, &span, &message) {
            return self.error(span, &field, message);
        }
        let message = if let Some(rest) = message.strip_prefix("missing field ") {
            let example = match rest.trim_matches('`') {
                "warehouse" => " (add [warehouse] with url = \"sqlite://warehouse.db\")",
                "url" => " (e.g. url = \"${DATABASE_URL}\")",
                "name" => " (e.g. name = \"fct_orders\")",
                "target" => " (the table the job loads, e.g. target = \"analytics.fct_orders\")",
                "strategy" => " (strategy = \"replace_partition\" or \"merge_key\")",
                "grain" => " (grain = \"hour\", \"day\" or \"month\")",
                "start" => " (its first partition, e.g. start = \"2026-01-01\")",
                "sql" => " (the SELECT of one partition, with :start and :end)",
                _ => "",
            };
            format!("missing required key {rest}{example}")
        } else if message == "duplicate key" {
            // The reader names neither the key nor what to do.
            let key = text.get(span.clone()).unwrap_or_default().trim();
            if text[..span.start.min(text.len())].trim_end().ends_with('[') {
                format!("[{key}] is given twice; write its keys under one [{key}]")
            } else {
                format!("duplicate key `{key}`: a table takes each key once; keep one")
            }
        } else {
            message
        };
        // `warehouse` is missing from the file as a whole, not from the
        // table that happens to begin it (`[[jobs]]`, `[defaults]`).
        let top_level = message.starts_with("missing required key `warehouse`");
        match field_at(text, span.start).filter(|_| !top_level) {
            // `[[warehouse]]` makes a list of tables where idem reads one.
            Some((field, _))
                if ["warehouse[", "defaults["]
                    .iter()
                    .any(|t| field.starts_with(t)) =>
            {
                let table = field.split('[').next().unwrap_or_default();
                self.error(
                    span,
                    table,
                    format!("[[{table}]] makes a list of tables; write [{table}] (one bracket): there is one"),
                )
            }
            Some((field, value)) => {
                // TOML reads a date written without quotes as a date-time,
                // which the reader's message calls a map.
                let message = match value {
                    TomlKind::Datetime if message.starts_with("invalid type") => {
                        "invalid type: a TOML date (written without quotes), expected text"
                            .to_string()
                    }
                    // A shrink guard of another kind than those read
                    // (a list, a table): the reader's words name a Rust type.
                    _ if message.contains("untagged enum Fraction") => {
                        "invalid type, expected a number".to_string()
                    }
                    // The reader's words for Rust's types, in the config's.
                    _ => message
                        .replace("expected i64", "expected a whole number")
                        .replace("expected a sequence", "expected a list"),
                };
                let hint = type_hint(&field, &message);
                self.error(span, &field, format!("{message}{hint}"))
            }
            None => self.error(span, "", message),
        }
    }

    pub(super) fn line_col(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    /// The line where a string value's text begins: after the opening
    /// quotes, past the line end TOML trims there (`\n` or `\r\n`: QA, a
    /// config saved with Windows line ends put every lint finding a line
    /// early) and, in a basic string, past a line-ending backslash and the
    /// blank lines it swallows.
    pub(super) fn content_line(&self, span: Range<usize>) -> usize {
        let value = self.text.get(span.clone()).unwrap_or_default();
        let (line, _) = self.line_col(span.start);
        let Some(rest) = value
            .strip_prefix("\"\"\"")
            .or_else(|| value.strip_prefix("'''"))
        else {
            return line;
        };
        let mut text = rest
            .strip_prefix("\r\n")
            .or_else(|| rest.strip_prefix('\n'))
            .unwrap_or(rest);
        if value.starts_with('"')
            && let Some(escaped) = text.trim_start_matches([' ', '\t']).strip_prefix('\\')
            && escaped
                .trim_start_matches([' ', '\t'])
                .starts_with(['\n', '\r'])
        {
            text = escaped.trim_start();
        }
        line + rest[..rest.len() - text.len()].matches('\n').count()
    }

    pub(super) fn error(&self, span: Range<usize>, field: &str, message: String) -> ConfigError {
        let (line, column) = self.line_col(span.start);
        ConfigError {
            file: self.file.clone(),
            line,
            column,
            field: field.to_string(),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Error, ErrorKind};
    use std::path::Path;

    use super::*;

    #[test]
    fn an_unreadable_file_says_why_without_a_position() {
        let path = Path::new("unread.toml");
        let denied = unreadable(path, &Error::from(ErrorKind::PermissionDenied)).to_string();
        assert_eq!(
            denied,
            "unread.toml: cannot read config: permission denied; check the file's permissions and owner (ls -l shows them)"
        );
        assert!(!denied.contains("create one"), "{denied}");
        let missing = unreadable(path, &Error::from(ErrorKind::NotFound)).to_string();
        assert!(!missing.contains(":0:0"), "{missing}");
        assert!(
            missing.contains("create one, or pass --config PATH"),
            "{missing}"
        );
        let dir = unreadable(Path::new("conf"), &Error::from(ErrorKind::IsADirectory));
        assert!(
            dir.to_string().ends_with(
                "it is a directory; pass the config file inside it, e.g. --config conf/idem.toml"
            ),
            "{dir}"
        );
    }

    #[test]
    fn a_non_utf8_file_names_the_first_bad_byte() {
        let bytes = b"[warehouse]\nurl = \"caf\xe9\"\n";
        // The bytes before "\xe9".
        let e = not_utf8(Path::new("idem.toml"), bytes, 22);
        assert_eq!((e.line, e.column), (2, 11));
        assert_eq!(
            e.to_string(),
            "idem.toml:2:11: cannot read config: the file is not UTF-8 text; save it as UTF-8"
        );
    }
}
