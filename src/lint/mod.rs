//! `idem lint`: what in a job breaks idempotency, found before a run does.
//! [`static_findings`] reads the job's SQL (parsed, never pattern-matched);
//! [`warehouse_findings`] asks the warehouse what the SQL alone cannot say;
//! [`shared_target_findings`] compares a job with the others in its config.
//!
//! Severities: an **error** is a job that re-runs differently or cannot run
//! (non-deterministic functions, sequences and session ids,
//! duplicate-swallowing inserts, no window parameters on a replace job, a
//! partition or key column missing, a SELECT column that differs from its
//! target column only by case on PostgreSQL, a merge key without a unique
//! index, a replace target's column the table numbers or stamps on every
//! insert while the SELECT leaves it out, LIMIT without ORDER BY, a replace
//! job reading its own target, a SELECT writing a column the table
//! computes). A **warning** is a likely mistake that lint cannot prove (a
//! `row_number()` key, LIMIT over an ORDER BY that may tie, a window filter on another column than the
//! partition's, NULLs or MariaDB zero-in-date values left in the partition
//! column, a merge job that reads its whole source every window).

mod filled;
mod generated;
mod outputs;
mod own_target;
pub use own_target::names_target;
mod refusals;
mod row_limits;
mod sql;
mod sqlite_quotes;
mod sqlite_text;
mod targets;
mod unused_keys;
mod watermark;
mod zero_dates;

use serde::Serialize;

use crate::config::{Ident, Job, Strategy, TableNames};
use crate::warehouse::sql::Syntax;
use crate::warehouse::{Column, Engine, Warehouse, WarehouseError, names_column};
use sql::{Reading, Volatile};
pub use targets::{merged_and_replaced, shared_target_findings};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing wrong with a job, at a line of `idem.toml`, with its fix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// Line in the config file (the job's SQL starts at [`Job::sql_line`]).
    pub line: usize,
    pub message: String,
    pub fix: String,
}

/// How `idem lint` prints its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintFormat {
    Table,
    Json,
}

impl Finding {
    fn new(severity: Severity, line: usize, message: String, fix: impl Into<String>) -> Finding {
        Finding {
            severity,
            line,
            message,
            fix: fix.into(),
        }
    }
}

/// The SQL's own line `n` (1-based) as a line of the config file.
fn file_line(job: &Job, n: usize) -> usize {
    job.sql_line + n.max(1) - 1
}

/// The tables a job's SQL reads, its text read as `syntax` reads it (a
/// MariaDB/MySQL server with `ANSI_QUOTES` reads `"fct"` as a table), for
/// lineage: each part of a name as written with whether it was quoted, for
/// matching names as the job's engine does; empty when no SQL dialect
/// parses it.
pub fn tables_read_as_written(
    job: &Job,
    syntax: Syntax,
) -> std::collections::BTreeSet<Vec<(String, bool)>> {
    sql::read(&job.sql, syntax).tables_written
}

/// Whether one statement over a range of windows, grouped by the job's
/// partition column, counts each window's rows as the windows one by one
/// would: the SQL's `:start` and `:end` are only half-open filters
/// (`col >= :start and col < :end`) on a column the partition column is
/// computed from, no `:partition`, and no row of a window depends on rows
/// of another (window functions, DISTINCT ON, LIMIT, aggregates other than
/// per partition, outer joins to the windowed rows, subquery expressions).
/// Anything else (a daily snapshot writing `:start` as its partition, a
/// latest-row-per-key dedup, a watermark filter on `loaded_at`) is
/// counted window by window. The SQL is read as `syntax` reads it: the
/// connected server's (a MariaDB/MySQL server with `ANSI_QUOTES` reads
/// `"dt" >= :start` as a filter on the column, where its default reads a
/// string).
pub fn bounds_only_filter(job: &Job, syntax: Syntax) -> bool {
    let Some(pcol) = &job.partition_column else {
        return false;
    };
    let reading = sql::read(&job.sql, syntax);
    let lineage = reading.lineage(pcol.as_str());
    reading.parsed
        && reading
            .params
            .iter()
            .all(|(name, _)| matches!(name.as_str(), "start" | "end"))
        && !reading.window_filters.is_empty()
        && reading
            .window_filters
            .iter()
            .all(|w| lineage.contains(&w.column))
        && sql::bounds_as_row_filters(&reading.ast, pcol.as_str()) == Some(reading.params.len())
}

/// The findings that need no warehouse, the job's SQL read by its
/// engine's default syntax.
pub fn static_findings(job: &Job) -> Vec<Finding> {
    static_findings_as(job, job.engine.into(), job.engine.table_names())
}

/// What a job's config says without the warehouse, as `idem lint` and the
/// job listings say it: its SQL read as `syntax` reads it, and what it does
/// to the jobs of `jobs` before it that write the same target; table names
/// compared as `names` compare them; by line.
pub fn config_findings(jobs: &[Job], job: &Job, syntax: Syntax, names: TableNames) -> Vec<Finding> {
    let mut found = [
        static_findings_as(job, syntax, names),
        shared_target_findings(jobs, job, names),
    ]
    .concat();
    found.sort_by_key(|f| (f.line, f.severity));
    found
}

/// A job's whole lint on a connected warehouse, as `idem lint` says it:
/// [`config_findings`] and [`warehouse_findings`], by line. The error is
/// the warehouse's, with the findings that need none.
pub async fn all_findings(
    wh: &Warehouse,
    jobs: &[Job],
    job: &Job,
) -> Result<Vec<Finding>, (Vec<Finding>, WarehouseError)> {
    let mut found = config_findings(jobs, job, wh.syntax(), wh.table_names());
    match wh.answering(warehouse_findings(wh, job)).await {
        Ok(more) => {
            found.extend(more);
            found.sort_by_key(|f| (f.line, f.severity));
            Ok(found)
        }
        Err(e) => Err((found, e)),
    }
}

/// [`static_findings`], the SQL read as a connected server reads it (a
/// MariaDB/MySQL `sql_mode` may turn backslash escapes off), its table
/// names compared as the server compares them (`lower_case_table_names`).
pub fn static_findings_as(job: &Job, syntax: Syntax, names: TableNames) -> Vec<Finding> {
    let reading = sql::read(&job.sql, syntax);
    let mut out = Vec::new();
    let at = |n: usize| file_line(job, n);

    if let Some(problem) = &reading.unreadable {
        out.push(Finding::new(
            Severity::Warning,
            at(1),
            format!("lint cannot read this SQL ({problem}), so it was not checked"),
            "check the SQL's quotes and comments are closed",
        ));
        return out;
    }

    if reading.statements.is_empty() {
        out.push(Finding::new(
            Severity::Error,
            at(1),
            "the SQL holds no statement, only comments: every load of the job would fail".into(),
            "give the SELECT that computes one partition's rows",
        ));
        return out;
    }
    if let Some(second) = reading.statements.get(1) {
        out.push(Finding::new(
            Severity::Error,
            at(second.line),
            format!(
                "the SQL has {} statements; a job is one SELECT, which idem runs in the partition's transaction",
                reading.statements.len()
            ),
            "keep only the SELECT that computes one partition; idem deletes, inserts and merges by the job's strategy",
        ));
    }
    for statement in reading.statements.iter().filter(|s| !s.is_query) {
        out.push(Finding::new(
            Severity::Error,
            at(statement.line),
            format!(
                "the SQL is {} {} statement, not a SELECT: idem writes the target itself, by the job's strategy",
                if statement.keyword.starts_with(['A', 'E', 'I', 'O', 'U']) {
                    "an"
                } else {
                    "a"
                },
                statement.keyword
            ),
            "give only the SELECT that computes one partition's rows",
        ));
    }
    for (name, line) in &reading.params {
        if !matches!(name.as_str(), "start" | "end" | "partition") {
            out.push(Finding::new(
                Severity::Error,
                at(*line),
                format!("unknown parameter :{name}; idem binds only :start, :end and :partition"),
                "use :start / :end (the partition's window) or :partition (its name)",
            ));
        }
    }
    let windowed = reading
        .params
        .iter()
        .any(|(n, _)| matches!(n.as_str(), "start" | "end" | "partition"));
    if !windowed {
        let (severity, consequence) = match job.strategy {
            Strategy::ReplacePartition => (
                Severity::Error,
                "every partition would be loaded with the whole source",
            ),
            Strategy::MergeKey => (Severity::Warning, "every window re-merges the whole source"),
        };
        out.push(Finding::new(
            severity,
            at(1),
            format!("the SQL never uses :start or :end, so {consequence}"),
            "filter the source on the window: where COLUMN >= :start and COLUMN < :end",
        ));
    }

    for call in &reading.volatile {
        let (what, fix) = volatile_said(call.kind);
        out.push(Finding::new(
            Severity::Error,
            at(call.line),
            format!(
                "{} {what}: a re-run of the same partition writes different values",
                call.call
            ),
            fix,
        ));
    }

    for ignore in &reading.ignores {
        out.push(Finding::new(
            Severity::Error,
            at(ignore.line),
            format!(
                "{} hides duplicates instead of preventing them: a re-run silently drops rows that changed",
                ignore.clause
            ),
            "let idem write the target: replace_partition, or merge_key with unique_key",
        ));
    }

    row_limits::findings(job, &reading, &mut out);
    for rank in &reading.ranks {
        let column = rank
            .alias
            .as_ref()
            .map(|a| format!(" (column {a})"))
            .unwrap_or_default();
        let key = job.strategy == Strategy::MergeKey
            && rank.alias.as_ref().is_some_and(|a| {
                job.unique_key
                    .iter()
                    .any(|k| k.as_str().eq_ignore_ascii_case(a))
            });
        out.push(Finding::new(
            if key {
                Severity::Error
            } else {
                Severity::Warning
            },
            at(rank.line),
            format!(
                "{}() numbers rows{column}{}: ties and input order change the numbers between runs",
                rank.function,
                if key { " and is the merge key" } else { "" }
            ),
            "use a hash of the natural key instead, e.g. md5(order_id || event_type)",
        ));
    }

    required_outputs_static(job, &reading, &mut out);
    watermark::findings(job, &reading, &mut out);
    own_target::findings(job, &reading, names, &mut out);
    unused_keys::findings(job, &mut out);
    out.sort_by_key(|f| (f.line, f.severity));
    out
}

/// What a volatile call does, after its name, and how to do without it.
fn volatile_said(kind: Volatile) -> (&'static str, &'static str) {
    match kind {
        Volatile::Clock => ("reads the clock", "pass the run date in: use :start / :end"),
        Volatile::Random => (
            "is random",
            "derive the value from the row (e.g. a hash of its natural key), or pass the run date in: use :start / :end",
        ),
        Volatile::Uuid => (
            "generates a new UUID each time",
            "use a hash of the natural key instead, e.g. md5(order_id || event_type)",
        ),
        Volatile::Sequence => (
            "takes new numbers from a sequence",
            "use the source's own id, or a hash of the natural key, e.g. md5(order_id || event_type)",
        ),
        Volatile::Session => (
            "is the id of the connection or transaction running it",
            "drop it from the SELECT; record the run in idem's ledger instead (idem log)",
        ),
        Volatile::Sample => (
            "picks rows at random",
            "drop TABLESAMPLE, or sample by a hash of the natural key, e.g. where abs(hashtext(order_id::text)) % 10 = 0",
        ),
    }
}

/// The columns the job's SELECT must output for its strategy.
fn required_outputs(job: &Job) -> Vec<&str> {
    match job.strategy {
        Strategy::ReplacePartition => job.partition_column.iter().map(|c| c.as_str()).collect(),
        Strategy::MergeKey => job.unique_key.iter().map(|c| c.as_str()).collect(),
    }
}

fn missing_output_finding(job: &Job, column: &str, outputs: &[String]) -> Finding {
    let (role, fix) = match job.strategy {
        Strategy::ReplacePartition => (
            "partition column",
            format!("select the partition column, e.g. cast(created_at as date) as {column}"),
        ),
        Strategy::MergeKey => (
            "unique_key column",
            format!("select the key column {column}"),
        ),
    };
    Finding::new(
        Severity::Error,
        file_line(job, 1),
        format!(
            "{role} {column} is not among the SELECT's output columns ({})",
            outputs.join(", ")
        ),
        fix,
    )
}

/// Required columns missing from a SELECT whose column names the SQL alone
/// says; the rest is left to [`warehouse_findings`].
fn required_outputs_static(job: &Job, reading: &Reading, out: &mut Vec<Finding>) {
    let Some(outputs) = &reading.outputs else {
        return;
    };
    let names: Vec<String> = outputs.iter().filter_map(|o| o.name.clone()).collect();
    let all_named = names.len() == outputs.len();
    for column in required_outputs(job) {
        let found = names.iter().any(|n| n.eq_ignore_ascii_case(column));
        if !found && all_named {
            out.push(missing_output_finding(job, column, &names));
        }
    }
}

/// Whether the SELECT's output columns can be known without the warehouse.
fn outputs_known(reading: &Reading, job: &Job) -> bool {
    let Some(outputs) = &reading.outputs else {
        return false;
    };
    let all_named = outputs.iter().all(|o| o.name.is_some());
    all_named
        || required_outputs(job).iter().all(|c| {
            outputs
                .iter()
                .any(|o| o.name.as_deref().is_some_and(|n| n.eq_ignore_ascii_case(c)))
        })
}

/// The window's bounds compare with the partition column as instants: an
/// integer or text column (on the servers) makes every partition's query
/// fail, or match the wrong rows.
async fn partition_column_type(
    wh: &Warehouse,
    job: &Job,
    columns: &[Column],
    pcol: &crate::config::Ident,
    out: &mut Vec<Finding>,
) -> Result<(), WarehouseError> {
    let engine = wh.dialect().engine();
    let Some(column) = columns
        .iter()
        .find(|c| names_column(pcol.as_str(), c.name.as_str(), engine))
    else {
        return Ok(());
    };
    if !column.holds_instants(engine) {
        out.push(Finding::new(
            Severity::Error,
            job.lines.partition_column,
            format!(
                "partition column {pcol} of {} is {}, not a date or timestamp: the window's bounds cannot be compared with it",
                job.target, column.type_name
            ),
            format!(
                "partition on a date or timestamp column, or change {pcol} to one ({})",
                if engine == crate::warehouse::Engine::Sqlite {
                    "DATE or TEXT holding ISO dates"
                } else {
                    "date, or timestamp for hourly jobs"
                }
            ),
        ));
    }
    Ok(())
}

/// Findings only the warehouse can give: the target's columns, keys and
/// partition values, and the output columns of a SELECT with `*`. Together
/// with [`static_findings`] they are the job's whole lint; none repeats.
pub async fn warehouse_findings(wh: &Warehouse, job: &Job) -> Result<Vec<Finding>, WarehouseError> {
    let mut out = Vec::new();
    let first = job.sql_line;
    let target_columns = match wh.columns(&job.target).await {
        Ok(cols) => cols,
        Err(WarehouseError::NoTarget { alike, .. }) => {
            out.push(Finding::new(
                Severity::Error,
                job.lines.target,
                format!("target table {} does not exist", job.target),
                match alike.as_slice() {
                    [one] => format!(
                        "write target = \"{one}\" (idem quotes a name as written: its case and schema must be the table's own), or create {}",
                        job.target
                    ),
                    [] => format!("create {} before running the job", job.target),
                    many => format!(
                        "name one of {} (idem quotes a name as written: its case and schema must be the table's own), or create {}",
                        many.join(", "),
                        job.target
                    ),
                },
            ));
            return Ok(out);
        }
        Err(e) => return Err(e),
    };
    let has_column = |name: &str| {
        target_columns
            .iter()
            .any(|c| names_column(name, c.name.as_str(), job.engine))
    };

    if let Some(pcol) = &job.partition_column {
        if !has_column(pcol.as_str()) {
            let names: Vec<&str> = target_columns.iter().map(|c| c.name.as_str()).collect();
            let alike = names.iter().find(|c| c.eq_ignore_ascii_case(pcol.as_str()));
            out.push(Finding::new(
                Severity::Error,
                job.lines.partition_column,
                match alike {
                    Some(alike) => format!(
                        "partition column {pcol} is not a column of {}, but {alike} is: idem quotes a name as written, and PostgreSQL then matches it by case",
                        job.target
                    ),
                    None => format!(
                        "partition column {pcol} is not a column of {} ({}): renamed? the partition delete would match nothing",
                        job.target,
                        names.join(", ")
                    ),
                },
                match alike {
                    Some(alike) => format!("write partition_column = \"{alike}\""),
                    None => format!(
                        "set partition_column to the target's partition column, or add {pcol} to {}",
                        job.target
                    ),
                },
            ));
        } else {
            partition_column_type(wh, job, &target_columns, pcol, &mut out).await?;
        }
        if has_column(pcol.as_str()) && job.strategy == Strategy::ReplacePartition {
            let mut sql = wh.sql();
            sql.push("SELECT COUNT(*) FROM ")
                .table(&job.target)
                .push(" WHERE ")
                .ident(pcol)
                // MariaDB's IS NULL also matches a NOT NULL date's zero date.
                .push(match job.engine {
                    Engine::MySql => " <=> NULL",
                    _ => " IS NULL",
                });
            let nulls: i64 =
                sqlx::Row::try_get(&sql.query().fetch_one(&mut *wh.pooled().await?).await?, 0)?;
            if nulls > 0 {
                out.push(Finding::new(
                    Severity::Warning,
                    job.lines.partition_column,
                    format!(
                        "{} of {} {} NULL in partition column {pcol}: no partition's delete ever matches them, the signature of a renamed partition column",
                        crate::numbers::n_rows(nulls),
                        job.target,
                        if nulls == 1 { "has" } else { "have" }
                    ),
                    format!("fill {pcol} for those rows from the old column, or delete them, then re-run the affected partitions"),
                ));
            }
        }
        if has_column(pcol.as_str()) {
            sqlite_text::findings(wh, job, pcol, &mut out).await?;
            zero_dates::findings(wh, job, pcol, &target_columns, &mut out).await?;
        }
    }

    let not_plain = refusals::findings(wh, job, &mut out).await?;

    if job.strategy == Strategy::MergeKey {
        let wanted: Vec<String> = job
            .unique_key
            .iter()
            .map(|k| k.as_str().to_lowercase())
            .collect();
        let nullable: Vec<String> = target_columns
            .iter()
            .filter(|c| c.nullable)
            .map(|c| c.name.as_str().to_lowercase())
            .collect();
        let nullable_keys: Vec<&str> = wanted
            .iter()
            .filter(|k| nullable.contains(k))
            .map(String::as_str)
            .collect();
        if !nullable_keys.is_empty() {
            out.push(Finding::new(
                Severity::Warning,
                job.lines.unique_key,
                format!(
                    "unique_key column{} {} of {} accept{} NULL: a NULL key matches no row, so a merge could only insert it again on every re-run (idem fails such a window)",
                    if nullable_keys.len() == 1 { "" } else { "s" },
                    nullable_keys.join(", "),
                    job.target,
                    if nullable_keys.len() == 1 { "s" } else { "" },
                ),
                format!(
                    "declare {} NOT NULL in {}, and filter or coalesce NULL keys in the job's SQL",
                    nullable_keys.join(", "),
                    job.target
                ),
            ));
        }
        let sets = wh.unique_key_sets(&job.target).await?;
        let matched = sets
            .iter()
            .any(|set| set.len() == wanted.len() && wanted.iter().all(|k| set.contains(k)));
        if !matched {
            let keys = wanted.join(", ");
            out.push(Finding::new(
                Severity::Error,
                job.lines.unique_key,
                format!(
                    "no primary key or unique index on ({keys}) in {}: nothing stops duplicate keys, and the upsert cannot match on them",
                    job.target
                ),
                format!(
                    "add one: create unique index on {} ({keys})",
                    job.target
                ),
            ));
        }
    }

    let reading = sql::read(&job.sql, wh.syntax());
    let one_query = matches!(reading.statements.as_slice(), [s] if s.is_query);
    // The SELECT is described even where its text names every output: the
    // warehouse alone knows whether the tables and columns it reads are
    // there, and a run would otherwise be the first to say.
    if one_query {
        let mut sql = wh.sql();
        sql.push("SELECT * FROM (");
        // An unknown parameter is a static finding already.
        if sql.job_sql(&job.sql, &job.start).is_ok() {
            sql.push(") src");
            match wh.output_columns(sql.text()).await {
                Ok(names) => {
                    // Outputs the text names were checked without the warehouse.
                    let mut missing = false;
                    if !outputs_known(&reading, job) {
                        for column in required_outputs(job) {
                            if !names.iter().any(|n| n.eq_ignore_ascii_case(column)) {
                                out.push(missing_output_finding(job, column, &names));
                                missing = true;
                            }
                        }
                    }
                    // Every output fills a target column of its name: one
                    // that is not there fails every partition's load. (A
                    // missing partition column or key says it already, as
                    // does the field check of one the target lacks.)
                    let required = required_outputs(job);
                    let engine = wh.dialect().engine();
                    let computed = generated::findings(wh, job, &names, &mut out).await?;
                    for name in names.iter().filter(|_| !missing) {
                        // A column the target has but for case (PostgreSQL).
                        let alike = target_columns.iter().find(|c| {
                            c.name.as_str().eq_ignore_ascii_case(name)
                                && !names_column(c.name.as_str(), name, engine)
                        });
                        if let Some(column) = alike {
                            out.push(Finding::new(
                                Severity::Error,
                                first,
                                column.case_misfit(name, &job.target),
                                format!("write {} as {}", name, column.name),
                            ));
                        }
                    }
                    let checked = names.iter().filter(|n| {
                        !missing && !required.iter().any(|r| r.eq_ignore_ascii_case(n))
                    });
                    for name in checked {
                        // A column not named plainly is a column still
                        // (the refusal above names it).
                        let fits = target_columns
                            .iter()
                            .any(|c| c.name.as_str().eq_ignore_ascii_case(name))
                            || not_plain.iter().any(|c| names_column(name, c, engine))
                            || computed.iter().any(|c| names_column(name, c, engine));
                        if let (false, Some(twin)) =
                            (fits, crate::warehouse::renamed_duplicate(name, &names))
                        {
                            out.push(Finding::new(
                                Severity::Error,
                                first,
                                format!(
                                    "the job's SELECT returns two columns named {twin} (in any case, as SQLite matches names; it calls the second {name}): every load would fail"
                                ),
                                "give each column of the SELECT its own name",
                            ));
                        } else if !fits {
                            let columns: Vec<&str> = target_columns
                                .iter()
                                .map(|c| c.name.as_str())
                                .chain(not_plain.iter().map(String::as_str))
                                .collect();
                            out.push(Finding::new(
                                Severity::Error,
                                first,
                                format!(
                                    "the job's SELECT returns {name}, which is not a column of {} (its columns: {}): every load would fail",
                                    job.target,
                                    columns.join(", ")
                                ),
                                format!(
                                    "drop {name} from the SELECT, or add it to {}",
                                    job.target
                                ),
                            ));
                        }
                    }
                    filled::findings(wh, job, &names, &mut out).await?;
                    outputs::findings(wh, job, &names, &target_columns, &computed, &mut out)
                        .await?;
                    if engine == crate::warehouse::Engine::Sqlite {
                        sqlite_quotes::findings(wh, job, &mut out).await?;
                    }
                    if job.strategy == Strategy::MergeKey
                        && wh.dialect().upsert_matches_any_unique_index()
                    {
                        let written: Vec<Ident> = target_columns
                            .iter()
                            .filter(|c| {
                                names
                                    .iter()
                                    .any(|n| c.name.as_str().eq_ignore_ascii_case(n))
                            })
                            .map(|c| c.name.clone())
                            .collect();
                        let sets = wh.unique_key_sets(&job.target).await?;
                        // Without an index on the key itself, that is the
                        // finding already.
                        if crate::warehouse::key_has_index(job, &sets)
                            && let Some(why) =
                                crate::warehouse::other_unique_index(job, &sets, &written)
                        {
                            out.push(Finding::new(
                                Severity::Error,
                                job.lines.unique_key,
                                why,
                                crate::warehouse::OTHER_INDEX_ADVICE,
                            ));
                        }
                    }
                }
                // A connection refused for a limit on connections is no
                // word on the SELECT: said as the error it is.
                Err(e) if e.connection_refusal().is_some() => return Err(e),
                Err(WarehouseError::Sql(sqlx::Error::Database(db))) => {
                    out.push(Finding::new(
                        Severity::Error,
                        first,
                        format!(
                            "the warehouse rejects the job's SELECT: {}",
                            db.message().replace('\n', " ")
                        ),
                        "fix the SQL so that it runs on the warehouse",
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}
