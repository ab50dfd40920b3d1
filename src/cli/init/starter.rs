//! The text of the starter `idem.toml`: the warehouse's settings and each
//! candidate job, commented out.

use std::fmt::Write as _;

use super::candidates::Survey;
use crate::config::{Ident, TableName};
use crate::warehouse::{Dialect, FIRST_PLAUSIBLE_DATE, Placeholders, redact};

/// What the SQL of a candidate job reads until someone names its source:
/// no engine parses it, so `idem lint` fails on it and no run starts with it
/// (a job left reading its own target would delete a window, then read it
/// back empty).
pub(super) const SOURCE_PLACEHOLDER: &str = "<source>";

/// Where the comment after a job's key begins, so that they line up.
const COMMENT_AT: usize = 33;

fn commented(key_value: String, comment: &str) -> String {
    format!("{key_value:<COMMENT_AT$}# {comment}")
}

pub(super) fn starter(url: &str, url_toml: &str, survey: &Survey, dialect: &dyn Dialect) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# idem.toml for {}, written by `idem init`.\n\
         # The README's \"Configuration\" explains every key. `idem lint` checks the\n\
         # jobs, `idem status` shows their partitions, `idem` opens the console.\n",
        redact(url)
    );
    let url_comment = if url.contains("${") {
        "${VAR} expands from the environment"
    } else {
        "or \"${DATABASE_URL}\", read from the environment"
    };
    let _ = writeln!(
        text,
        "[warehouse]\n\
         url = {url_toml}   # {url_comment}\n\
         # statement_timeout = \"30m\"   # bounds every statement; \"0s\" is no limit\n\
         # lock_timeout = \"10s\"        # waits for a partition's lock; \"0s\" does not wait\n\n\
         [defaults]\n\
         concurrency = 4                 # partitions in flight at once\n\
         retries = 2                     # retries of transient errors, with backoff\n"
    );
    let skipped = survey.skipped_lines();
    if !skipped.is_empty() {
        let _ = writeln!(text, "# Not offered as jobs:");
        for line in &skipped {
            let _ = writeln!(text, "# - {line}");
        }
        let _ = writeln!(text);
    }
    if survey.candidates.is_empty() {
        let _ = writeln!(
            text,
            "# No table here has a date or timestamp column to partition by. Add jobs\n\
             # as the README shows: [[jobs]] with name, target, strategy, grain, start, sql."
        );
        return text;
    }
    let _ = writeln!(
        text,
        "# Candidate jobs: each table below has a date or timestamp column that can\n\
         # partition it. Uncomment a job, replace {SOURCE_PLACEHOLDER} in its SQL with the table\n\
         # it loads from (until then `idem lint` and every load of the job fail on it),\n\
         # and keep the window on the source's time column: >= :start and < :end."
    );
    // SQLite reads a double-quoted name that no table of the query has as
    // a string (QA: a source without the target's `created_at` loaded the
    // text 'created_at', and lint passed); quoted with backticks, such a
    // name is "no such column".
    let quote = |name: &Ident| match dialect.engine() {
        crate::warehouse::Engine::Sqlite => format!("`{name}`"),
        _ => dialect.quote(name),
    };
    let mut names: Vec<String> = Vec::new();
    for c in &survey.candidates {
        let name = job_name(&names, &c.table);
        names.push(name.clone());
        let pcol = &c.partition_column.name;
        let mut about = format!("\n# {}: partitioned by {pcol}", c.table);
        if !c.partition_column.type_name.trim().is_empty() {
            about.push_str(&format!(" ({})", c.partition_column.type_name));
        }
        match &c.first_value {
            Some(v) if c.first_value_exact => {
                about.push_str(&format!(", first value {}", v.trim()));
            }
            Some(v) => about.push_str(&format!(
                ", first value {} {}",
                v.trim(),
                first_rows_only(pcol)
            )),
            None if c.placeholders.is_empty() => about.push_str(", empty"),
            None => about.push_str(&format!(
                ", no date from {FIRST_PLAUSIBLE_DATE} to a year from today (start is this month's first day)"
            )),
        }
        if let Some(left_out) = left_out(&c.placeholders) {
            about.push_str(&format!("\n# Left out{left_out}"));
            if let Some(early) = c.placeholders.iter().find(|p| !p.after) {
                about.push_str(&format!(
                    "\n# (if any before {} are real dates, move start back to the first of them)",
                    early.beyond
                ));
            }
        }
        if !c.other_time_columns.is_empty() {
            about.push_str(&format!(
                "; other date columns: {}",
                c.other_time_columns.join(", ")
            ));
        }
        if !c.generated.is_empty() {
            let said: Vec<String> = c
                .generated
                .iter()
                .map(|(name, what)| format!("{name} ({what})"))
                .collect();
            about.push_str(&format!(
                "\n# Left out of the SELECT, as the table computes them and an INSERT may not write them: {}",
                said.join(", ")
            ));
        }
        let _ = writeln!(text, "{about}");
        // Every name quoted as the warehouse spells it: a column named like
        // a keyword (`user` is PostgreSQL's current_user, `order` a syntax
        // error) or in mixed case reads as that column on every engine.
        let columns: Vec<String> = c
            .columns
            .iter()
            .filter(|col| !c.generated.iter().any(|(g, _)| g == col.name.as_str()))
            .map(|col| quote(&col.name))
            .collect();
        let job = [
            "[[jobs]]".to_string(),
            format!("name = \"{name}\""),
            format!("target = \"{}\"", c.table),
            commented(
                "strategy = \"replace_partition\"".into(),
                "or \"merge_key\" with unique_key = [\"…\"]",
            ),
            format!("partition_column = \"{pcol}\""),
            commented(
                format!("grain = \"{}\"", c.grain.as_str()),
                "hour | day | month",
            ),
            format!("start = \"{}\"", c.start.name()),
            "sql = \"\"\"".into(),
            format!("select {}", columns.join(", ")),
            format!(
                "from {SOURCE_PLACEHOLDER}   -- the table this job loads from, not {} (its target)",
                c.table
            ),
            format!("where {} >= :start and {} < :end", quote(pcol), quote(pcol)),
            "\"\"\"".into(),
        ];
        for line in job {
            let _ = writeln!(text, "# {line}");
        }
    }
    text
}

/// What a first value read without an index is of: `idem init` reads no
/// big table whole for it.
pub(super) fn first_rows_only(column: &Ident) -> String {
    format!(
        "in the first {} rows read ({column} has no index; earlier rows may follow: check start)",
        crate::numbers::thousands(i64::from(crate::warehouse::ROWS_READ_WITHOUT_INDEX))
    )
}

/// What was left out of a candidate's start and grain as likely
/// placeholders ("unknown" written as a date), after "left out": `as
/// likely placeholders: 2 rows of 0001-01-01 to 1900-01-01, before
/// 1970-01-01; 1 row of 9999-12-31, after 2027-12-04 (a year from
/// today)`. None where
/// nothing was.
pub(super) fn left_out(placeholders: &[Placeholders]) -> Option<String> {
    if placeholders.is_empty() {
        return None;
    }
    let sides: Vec<String> = placeholders
        .iter()
        .map(|p| {
            let rows = format!(
                "{}{} row{}",
                if p.at_least { "at least " } else { "" },
                crate::numbers::thousands(p.rows),
                if p.rows == 1 && !p.at_least { "" } else { "s" }
            );
            let (least, greatest) = (p.least.trim(), p.greatest.trim());
            let values = if least == greatest {
                least.to_string()
            } else {
                format!("{least} to {greatest}")
            };
            let beyond = if p.after {
                format!("after {} (a year from today)", p.beyond)
            } else {
                format!("before {}", p.beyond)
            };
            format!("{rows} of {values}, {beyond}")
        })
        .collect();
    Some(format!(" as likely placeholders: {}", sides.join("; ")))
}

/// The candidate job's name for `table`: the table's, unless a job before
/// it took that; then with its schema, and a number if that is taken too
/// (`raw.orders` beside a `raw_orders`): uncommented, two jobs of one name
/// would not load.
fn job_name(taken: &[String], table: &TableName) -> String {
    let name = table.name.as_str().to_string();
    if !taken.contains(&name) {
        return name;
    }
    let qualified = table.to_string().replace('.', "_");
    let mut name = qualified.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{qualified}_{n}");
        n += 1;
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_jobs_are_named_apart() {
        let mut names: Vec<String> = Vec::new();
        for table in [
            "raw_orders",
            "analytics.orders",
            "raw.orders",
            "staging.raw_orders",
        ] {
            let name = job_name(&names, &TableName::parse(table).unwrap());
            names.push(name);
        }
        assert_eq!(
            names,
            ["raw_orders", "orders", "raw_orders_2", "staging_raw_orders"]
        );
    }
}
