//! `idem status` and `idem jobs`: what the warehouse and the ledger say,
//! as a table, JSON or CSV.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use clap::ValueEnum;
use serde::Serialize;

use super::output::outln;
use super::{Stop, connect_to_read, find_job, load_config, parse_bound, parse_states};
use crate::config::Job;
use crate::engine::PlanError;
use crate::exit::Exit;
use crate::partition::{RangeEnd, now_utc};
use crate::state::{JobStates, LoadState, PartitionStatus, StatusScope};
use crate::warehouse::Warehouse;
use crate::warehouse::ledger::Refusal;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StatusFormat {
    Table,
    Json,
    Csv,
}

pub struct StatusArgs {
    pub job: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub format: StatusFormat,
    pub anomalies_only: bool,
    /// `--refused`: only partitions with a standing shrink-guard refusal.
    pub refused_only: bool,
    /// `--state`: only partitions in these states (all when empty).
    pub states: Vec<String>,
    /// `--reconcile`: count what each partition's SQL would write now.
    pub reconcile: bool,
}

/// One partition's line of `idem status`.
#[derive(Serialize)]
struct StatusRow<'a> {
    job: &'a str,
    /// None on the one row of a job whose partitions could not be read.
    partition: Option<String>,
    state: &'static str,
    rows_now: Option<i64>,
    rows_at_load: Option<i64>,
    /// The job's target rows whose partition column is NULL, on each of
    /// its rows: counted in no partition's `rows_now`. Null where not
    /// counted (no partition column, the target unreadable).
    rows_null_partition: Option<i64>,
    anomaly: bool,
    drift: bool,
    /// A merge window whose rows later windows' loads moved out: loaded,
    /// and superseded.
    moved_out: bool,
    attempts: usize,
    last_finished: Option<&'a str>,
    last_error: Option<&'a str>,
    /// Upstream partitions changed since this one was loaded.
    stale_upstream: &'a [String],
    /// The latest attempt the shrink guard refused, where no success came
    /// since: the partition kept its rows, and waits for its source.
    refused: Option<&'a Refusal>,
    /// With `--reconcile`: rows the job's SQL would write now, and whether
    /// that differs from what is loaded. Without it both are null, never
    /// left out: a consumer reads one shape whatever the flags.
    rows_source: Option<i64>,
    out_of_date: Option<bool>,
    /// With `--reconcile`: rows the job's SQL gives over the range with a
    /// NULL partition column, on each of its rows, which a replace's load
    /// refuses (no window holds them). Null without `--reconcile`, or
    /// where the source is counted window by window.
    rows_source_null_partition: Option<i64>,
}

impl<'a> StatusRow<'a> {
    fn new(
        job: &'a Job,
        s: &'a PartitionStatus,
        null_partition: Option<i64>,
        source_null_partition: Option<i64>,
    ) -> StatusRow<'a> {
        StatusRow {
            job: &job.name,
            partition: Some(s.partition.name()),
            state: s.state.name(),
            rows_now: s.rows_now,
            rows_at_load: s.rows_at_load,
            rows_null_partition: null_partition,
            anomaly: s.anomaly,
            drift: s.drift,
            moved_out: s.moved_out,
            attempts: s.attempts,
            last_finished: s.last_attempt.as_ref().map(|a| a.finished_at.as_str()),
            last_error: s.last_attempt.as_ref().and_then(|a| a.error.as_deref()),
            stale_upstream: &s.stale_upstream,
            refused: s.refused.as_deref(),
            rows_source: s.rows_source,
            out_of_date: s.rows_source.map(|_| s.out_of_date().is_some()),
            rows_source_null_partition: source_null_partition,
        }
    }

    /// The row standing for a job whose partitions could not be read:
    /// state `unreadable`, the reason as its error.
    fn unreadable(job: &'a Job, reason: &'a str) -> StatusRow<'a> {
        StatusRow {
            job: &job.name,
            partition: None,
            state: UNREADABLE,
            rows_now: None,
            rows_at_load: None,
            rows_null_partition: None,
            anomaly: false,
            drift: false,
            moved_out: false,
            attempts: 0,
            last_finished: None,
            last_error: Some(reason),
            stale_upstream: &[],
            refused: None,
            rows_source: None,
            out_of_date: None,
            rows_source_null_partition: None,
        }
    }
}

/// The state shown for a job whose partitions could not be read (its
/// target missing, say), in its place among the others, as `idem jobs`
/// and the console show it.
const UNREADABLE: &str = "unreadable";

pub async fn status(config_path: &Path, args: StatusArgs) -> Exit {
    super::end_on_signal();
    match status_inner(config_path, args).await {
        Ok(code) => code,
        Err(stop) => stop.report(),
    }
}

async fn status_inner(config_path: &Path, args: StatusArgs) -> Result<Exit, Stop> {
    let config = load_config(config_path)?;
    super::note_no_jobs(&config);
    let states = parse_states("--state", &args.states, &LoadState::ALL).map_err(|e| {
        if args.states.iter().any(|s| s.trim() == "refused") {
            // A loaded partition may carry a refusal: it is a flag.
            Stop::usage(format!(
                "{}; the partitions the shrink guard refused are listed by --refused",
                e.message
            ))
        } else {
            e
        }
    })?;
    let jobs: Vec<&Job> = match &args.job {
        Some(name) => vec![find_job(&config, name)?],
        None => config.jobs.iter().collect(),
    };
    let mut ranges = Vec::new();
    for job in &jobs {
        let from = parse_bound(job, "--from", args.from.as_deref(), RangeEnd::From)?;
        let to = parse_bound(job, "--to", args.to.as_deref(), RangeEnd::To)?;
        if let (Some(from), Some(to)) = (from, to)
            && from > to
        {
            let empty = PlanError::EmptyRange {
                from: from.name(),
                to: to.name(),
            };
            return Err(Stop::usage(empty.to_string()));
        }
        // Asked of one job, a range wholly outside its partitions is a
        // mistyped one (a year off, say), not an empty answer. Before
        // connecting, a partition after the last is one after it on any
        // clock the warehouse's may read.
        let last = job.latest_partition(now_utc());
        let latest_possible =
            job.latest_partition(crate::clock::latest_unmeasured_now().naive_utc());
        if args.job.is_some() && last >= job.start {
            let span = format!("{} to {}", job.start.name(), last.name());
            let outside = match (from, to) {
                (Some(f), _) if f > latest_possible => Some(format!(
                    "--from {} is after {}'s last partition ({span}): nothing to show; choose --from {} or earlier",
                    f.name(),
                    job.name,
                    last.name()
                )),
                (_, Some(t)) if t < job.start => Some(format!(
                    "--to {} is before {}'s first partition ({span}): nothing to show; choose --to {} or later",
                    t.name(),
                    job.name,
                    job.start.name()
                )),
                _ => None,
            };
            if let Some(message) = outside {
                return Err(Stop::usage(message));
            }
        }
        ranges.push((from, to));
    }
    let warehouse = connect_to_read(&config, 2).await?;
    let lineage = super::lineage(&config, &warehouse)?;
    // One job that cannot be read (its target dropped, say) is reported in
    // its place; the others are still shown, and the exit code says 1.
    let mut all: Vec<(&Job, Result<JobStates, String>)> = Vec::new();
    // A job whose source could not be counted (its source table gone, say)
    // is still shown, its partitions' source counts unknown (null).
    let mut not_reconciled: Vec<(&Job, String)> = Vec::new();
    // Rows each reconciled job's SQL gives with a NULL partition column.
    let mut source_nulls: HashMap<&str, i64> = HashMap::new();
    for (job, (from, to)) in jobs.iter().zip(ranges) {
        let scope = StatusScope {
            from,
            to,
            cache: None,
            ledger_only: false,
        };
        let read = async {
            let mut read =
                super::read_states_scoped(&warehouse, &config, &lineage, job, now_utc(), &scope)
                    .await?;
            if args.reconcile {
                match reconcile(&warehouse, job, &mut read.statuses).await {
                    Ok(Some(nulls)) => {
                        source_nulls.insert(&job.name, nulls);
                    }
                    Ok(None) => {}
                    Err(e) => not_reconciled.push((*job, e.to_string())),
                }
            }
            Ok::<_, Stop>(read)
        };
        let kept = read.await.map(|mut read| {
            read.statuses.retain(|s| {
                (!args.anomalies_only || s.anomaly)
                    && (!args.refused_only || s.refused.is_some())
                    && (states.is_empty() || states.contains(&s.state))
            });
            read
        });
        all.push((*job, kept.map_err(|stop| unreadable_reason(job, &stop))));
    }
    super::retired_names::note_uncounted(&warehouse, &config, &jobs).await;
    warehouse.close().await;
    let rows: Vec<StatusRow> = all
        .iter()
        .flat_map(|(job, read)| match read {
            Ok(read) => read
                .statuses
                .iter()
                .map(|s| {
                    let source_nulls = source_nulls.get(job.name.as_str()).copied();
                    StatusRow::new(job, s, read.null_partition, source_nulls)
                })
                .collect(),
            Err(reason) => vec![StatusRow::unreadable(job, reason)],
        })
        .collect();
    // A filter that keeps nothing says so: a header alone reads as a
    // table that failed to fill.
    if rows.is_empty() && (args.refused_only || args.anomalies_only || !states.is_empty()) {
        super::output::noteln!("idem: no partition matches: nothing is listed");
    }
    match args.format {
        StatusFormat::Json => {
            let text =
                serde_json::to_string_pretty(&rows).map_err(|e| Stop::failed(e.to_string()))?;
            super::output::json(&text)?;
        }
        StatusFormat::Csv => {
            // One write for the whole table: a line at a time was a write
            // (and a flush) per partition, 87,600 of them for a ten-year
            // hourly job.
            let mut text = String::new();
            let _ = writeln!(
                text,
                "job,partition,state,rows_now,rows_at_load,anomaly,drift,attempts,last_finished,last_error,stale_upstream,rows_source,out_of_date,moved_out,refused,rows_null_partition,rows_source_null_partition"
            );
            for r in &rows {
                let _ = writeln!(
                    text,
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    csv(r.job),
                    r.partition.as_deref().unwrap_or(""),
                    r.state,
                    opt(r.rows_now),
                    opt(r.rows_at_load),
                    r.anomaly,
                    r.drift,
                    r.attempts,
                    r.last_finished.unwrap_or(""),
                    csv(r.last_error.unwrap_or("")),
                    csv(&r.stale_upstream.join("; ")),
                    opt(r.rows_source),
                    r.out_of_date.map_or(String::new(), |o| o.to_string()),
                    r.moved_out,
                    csv(r.refused.map_or("", |r| r.error.as_str())),
                    opt(r.rows_null_partition),
                    opt(r.rows_source_null_partition)
                );
            }
            super::output::data(text.trim_end_matches('\n'))?;
        }
        StatusFormat::Table => {
            let mut text = String::new();
            let _ = writeln!(
                text,
                "{:<20} {:<14} {:<11} {:>9} {:>9}  {:<8} last error or cause",
                "JOB", "PARTITION", "STATE", "ROWS", "AT LOAD", "FLAGS"
            );
            for (job, read) in &all {
                let statuses = match read {
                    Ok(read) => &read.statuses,
                    // Marked `-`, as its partition is: it has no state,
                    // and every state's glyph means that state (`?` is
                    // unmanaged); the console shows the word alone.
                    Err(reason) => {
                        let _ = writeln!(
                            text,
                            "{:<20} {:<14} - {:<9} {:>9} {:>9}  {:<8} {}",
                            job.name,
                            "-",
                            UNREADABLE,
                            "",
                            "",
                            "",
                            first_line(reason)
                        );
                        continue;
                    }
                };
                for s in statuses {
                    let mut flags = String::new();
                    if s.anomaly {
                        flags.push_str("anomaly ");
                    }
                    if s.drift {
                        flags.push_str("drift ");
                    }
                    if s.moved_out {
                        flags.push_str("moved ");
                    }
                    if s.refused.is_some() {
                        flags.push_str("refused");
                    }
                    let cause = out_of_date_text(s, job)
                        .or_else(|| s.refused.as_ref().map(|r| refusal_cause(r)))
                        .or_else(|| s.moved_out_note())
                        .or_else(|| definition_cause(s, job))
                        .unwrap_or_else(|| upstream_cause(&s.stale_upstream));
                    let error = s
                        .last_attempt
                        .as_ref()
                        .and_then(|a| a.error.as_deref())
                        .unwrap_or(&cause);
                    let _ = writeln!(
                        text,
                        "{:<20} {:<14} {} {:<9} {:>9} {:>9}  {:<8} {}",
                        job.name,
                        s.partition.name(),
                        s.state.glyph(),
                        s.state.name(),
                        opt(s.rows_now),
                        opt(s.rows_at_load),
                        flags.trim(),
                        first_line(error)
                    );
                }
                // Under the job's partitions, the rows none of them counts,
                // their number in the ROWS column, so that the column adds
                // up to the table's.
                if let Ok(read) = read
                    && !statuses.is_empty()
                    && let Some(note) = crate::state::null_partition_note(job, read.null_partition)
                {
                    let _ = writeln!(
                        text,
                        "{:<20} {:<14} - {:<9} {:>9} {:>9}  {:<8} {note}",
                        job.name,
                        "(no partition)",
                        "",
                        opt(read.null_partition),
                        "",
                        ""
                    );
                }
                // `--reconcile`: the source's rows no window holds, which
                // fail every replace load of the range before it is run.
                if !statuses.is_empty()
                    && let Some(note) = crate::state::source_null_partition_note(
                        job,
                        source_nulls.get(job.name.as_str()).copied(),
                    )
                {
                    let _ = writeln!(
                        text,
                        "{:<20} {:<14} - {:<9} {:>9} {:>9}  {:<8} {note}",
                        job.name, "(source)", "", "", "", ""
                    );
                }
            }
            outln!("{}", text.trim_end_matches('\n'));
        }
    }
    let mut exit = Exit::Ok;
    for (job, read) in &all {
        if let Err(reason) = read {
            super::output::noteln!("idem: {}: unreadable: {reason}", job.name);
            exit = Exit::Failed;
        }
    }
    for (job, reason) in &not_reconciled {
        super::output::noteln!(
            "idem: {}: not reconciled, its source could not be counted: {reason}",
            job.name
        );
        exit = Exit::Failed;
    }
    Ok(exit)
}

/// Why a job's partitions could not be read, without the job's name the
/// reading error begins with (the row already names the job).
fn unreadable_reason(job: &Job, stop: &Stop) -> String {
    let prefix = format!("{}: ", job.name);
    stop.message
        .strip_prefix(&prefix)
        .unwrap_or(&stop.message)
        .to_string()
}

/// Counts the source rows of the statuses' complete partitions, in one
/// query for the job, and records them on the statuses; where the source
/// cannot be counted, none. The rows the source gives with a NULL
/// partition column, where that query tells them apart.
async fn reconcile(
    warehouse: &Warehouse,
    job: &Job,
    statuses: &mut [PartitionStatus],
) -> Result<Option<i64>, crate::warehouse::WarehouseError> {
    let complete: Vec<_> = statuses
        .iter()
        .filter(|s| s.state != LoadState::Future)
        .map(|s| s.partition)
        .collect();
    let (Some(&first), Some(&last)) = (complete.first(), complete.last()) else {
        return Ok(None);
    };
    let counts = warehouse
        .source_counts(
            job,
            first,
            last,
            crate::lint::bounds_only_filter(job, warehouse.syntax()),
        )
        .await?;
    crate::state::reconcile(statuses, &counts.partitions, first, last);
    Ok(counts.null_partition)
}

/// `source 10,512 · loaded 10,480 · +32 late` for an out-of-date partition.
/// Of a merge window that lost source rows, that a re-run keeps them: a
/// merge never deletes.
pub fn out_of_date_text(s: &PartitionStatus, job: &Job) -> Option<String> {
    let diff = s.out_of_date()?;
    Some(format!(
        "out of date: source {} · loaded {} · {}",
        crate::numbers::thousands(s.rows_source.unwrap_or(0)),
        crate::numbers::thousands(s.rows_at_load.unwrap_or(0)),
        if diff > 0 {
            format!("+{} late", crate::numbers::thousands(diff))
        } else if job.strategy == crate::config::Strategy::MergeKey {
            format!(
                "{} removed (a merge never deletes: rows deleted at the source stay in {} after a re-run; delete them there)",
                crate::numbers::thousands(-diff),
                job.target
            )
        } else {
            format!("{} removed", crate::numbers::thousands(-diff))
        }
    ))
}

async fn read_status(
    warehouse: &Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    job: &Job,
) -> Result<JobStates, Stop> {
    let scope = StatusScope::default();
    super::read_states_scoped(warehouse, config, lineage, job, now_utc(), &scope).await
}

/// Why a partition is stale (its last load ran an older definition of the
/// job), and the command that shows what changed.
fn definition_cause(s: &PartitionStatus, job: &Job) -> Option<String> {
    (s.state == LoadState::Stale).then(|| {
        format!(
            "definition changed since its load: idem diff {} {}",
            job.name,
            s.partition.name()
        )
    })
}

/// `upstream changed: fct_orders 2026-06-03, 2026-06-04 (+3 more)`.
pub fn upstream_cause(stale_upstream: &[String]) -> String {
    if stale_upstream.is_empty() {
        return String::new();
    }
    let shown: Vec<&str> = stale_upstream.iter().take(3).map(String::as_str).collect();
    let more = stale_upstream.len().saturating_sub(shown.len());
    format!(
        "stale (upstream): {} changed since{}",
        shown.join(", "),
        if more > 0 {
            format!(" (+{more} more)")
        } else {
            String::new()
        }
    )
}

fn opt(n: Option<i64>) -> String {
    n.map_or(String::new(), |n| n.to_string())
}

pub(super) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A standing shrink-guard refusal, as the cause column says it.
fn refusal_cause(r: &Refusal) -> String {
    format!(
        "attempt {} refused {}: {}",
        r.attempt,
        r.finished_at,
        first_line(&r.error)
    )
}

/// Counts of each state, for health summaries.
pub fn state_counts(statuses: &[PartitionStatus]) -> Vec<(LoadState, usize)> {
    LoadState::ALL
        .into_iter()
        .map(|st| (st, statuses.iter().filter(|s| s.state == st).count()))
        .filter(|(_, n)| *n > 0)
        .collect()
}

pub async fn jobs(config_path: &Path) -> Exit {
    super::end_on_signal();
    let result = async {
        let config = load_config(config_path)?;
        super::note_no_jobs(&config);
        let warehouse = connect_to_read(&config, 2).await?;
        let lineage = super::lineage(&config, &warehouse)?;
        outln!(
            "{:<22} {:<18} {:<6} {:<28} {:<10} health",
            "JOB",
            "STRATEGY",
            "GRAIN",
            "TARGET",
            "LINT"
        );
        let mut unreadable = Vec::new();
        for job in &config.jobs {
            // The badge is `idem lint`'s word on the job, warehouse checks
            // and all, read alongside its states.
            let (status, lint) = futures::join!(
                read_status(&warehouse, &config, &lineage, job),
                crate::lint::all_findings(&warehouse, &config.jobs, job)
            );
            let lint = lint.unwrap_or_else(|(own, e)| {
                super::output::noteln!(
                    "idem: job {}: lint's warehouse checks failed: {e}",
                    job.name
                );
                own
            });
            let health = match status {
                Ok(JobStates {
                    statuses,
                    null_partition,
                }) => {
                    let mut parts: Vec<String> = state_counts(&statuses)
                        .into_iter()
                        .map(|(st, n)| format!("{}{n} {}", st.glyph(), st.name()))
                        .collect();
                    // Loaded, but waiting for a source the guard found short.
                    let refused = statuses.iter().filter(|s| s.refused.is_some()).count();
                    if refused > 0 {
                        parts.push(format!("⊖{refused} refused by the shrink guard"));
                    }
                    // Rows of the target no partition holds (`idem status`
                    // says them under the job), counted by the same read.
                    if let (Some(n @ 1..), Some(column)) = (null_partition, &job.partition_column) {
                        parts.push(format!("∅{} with NULL {column}", crate::numbers::n_rows(n)));
                    }
                    parts.join("  ")
                }
                Err(e) => {
                    unreadable.push((job, unreadable_reason(job, &e)));
                    format!("unreadable: {}", e.message)
                }
            };
            outln!(
                "{:<22} {:<18} {:<6} {:<28} {:<10} {health}",
                job.name,
                job.strategy.as_str(),
                job.grain.as_str(),
                job.target.to_string(),
                lint_badge(&lint)
            );
            for line in lineage_lines(&lineage, &job.name) {
                outln!("  {line}");
            }
        }
        let shown: Vec<&Job> = config.jobs.iter().collect();
        super::retired_names::note_uncounted(&warehouse, &config, &shown).await;
        warehouse.close().await;
        // As `idem status` says it: a script reading the table learns of
        // the job it could not read from the exit code.
        for (job, reason) in &unreadable {
            super::output::noteln!("idem: {}: unreadable: {reason}", job.name);
        }
        Ok::<_, Stop>(if unreadable.is_empty() {
            Exit::Ok
        } else {
            Exit::Failed
        })
    }
    .await;
    result.unwrap_or_else(Stop::report)
}

/// A job's upstream and downstream jobs, for `idem jobs`:
/// `← reads fct_orders (its SQL reads analytics.fct_orders)`,
/// `→ read by agg_revenue_monthly`.
fn lineage_lines(lineage: &crate::lineage::Lineage, job: &str) -> Vec<String> {
    use crate::lineage::Because;
    let mut out = Vec::new();
    let ups: Vec<String> = lineage
        .upstream(job)
        .iter()
        .map(|(up, why)| match why {
            Because::Declared => format!("{up} (depends_on)"),
            Because::ReadsTarget(table) => format!("{up} (its SQL reads {table})"),
        })
        .collect();
    if !ups.is_empty() {
        out.push(format!("← reads {}", ups.join(", ")));
    }
    let downs = lineage.downstream(job);
    if !downs.is_empty() {
        out.push(format!("→ read by {}", downs.join(", ")));
    }
    out
}

/// A job's lint findings in a word: `ok`, `2 errors`, `1 warning`.
fn lint_badge(findings: &[crate::lint::Finding]) -> String {
    let errors = findings
        .iter()
        .filter(|f| f.severity == crate::lint::Severity::Error)
        .count();
    let warnings = findings.len() - errors;
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    match (errors, warnings) {
        (0, 0) => "ok".into(),
        (0, w) => plural(w, "warning"),
        (e, _) => plural(e, "error"),
    }
}
