//! `idem status`, `idem jobs` and `idem log`: what the warehouse and the
//! ledger say, as a table, JSON or CSV.

use std::collections::HashSet;
use std::path::Path;

use clap::ValueEnum;
use serde::Serialize;

use super::{Stop, connect, find_job, load_config, parse_bound};
use crate::config::Job;
use crate::exit::Exit;
use crate::partition::{RangeEnd, now_utc};
use crate::state::{self, LoadState, PartitionStatus};
use crate::warehouse::Warehouse;

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
}

/// One partition's line of `idem status`.
#[derive(Serialize)]
struct StatusRow<'a> {
    job: &'a str,
    partition: String,
    state: &'static str,
    rows_now: Option<i64>,
    rows_at_load: Option<i64>,
    anomaly: bool,
    drift: bool,
    attempts: usize,
    last_finished: Option<&'a str>,
    last_error: Option<&'a str>,
}

impl<'a> StatusRow<'a> {
    fn new(job: &'a Job, s: &'a PartitionStatus) -> StatusRow<'a> {
        StatusRow {
            job: &job.name,
            partition: s.partition.name(),
            state: s.state.name(),
            rows_now: s.rows_now,
            rows_at_load: s.rows_at_load,
            anomaly: s.anomaly,
            drift: s.drift,
            attempts: s.attempts,
            last_finished: s.last_attempt.as_ref().map(|a| a.finished_at.as_str()),
            last_error: s.last_attempt.as_ref().and_then(|a| a.error.as_deref()),
        }
    }
}

pub async fn status(config_path: &Path, args: StatusArgs) -> Exit {
    match status_inner(config_path, args).await {
        Ok(code) => code,
        Err(stop) => stop.report(),
    }
}

async fn status_inner(config_path: &Path, args: StatusArgs) -> Result<Exit, Stop> {
    let config = load_config(config_path)?;
    let jobs: Vec<&Job> = match &args.job {
        Some(name) => vec![find_job(&config, name)?],
        None => config.jobs.iter().collect(),
    };
    let mut ranges = Vec::new();
    for job in &jobs {
        let from = parse_bound(job, "--from", args.from.as_deref(), RangeEnd::From)?;
        let to = parse_bound(job, "--to", args.to.as_deref(), RangeEnd::To)?;
        ranges.push((from, to));
    }
    let warehouse = connect(&config, 2).await?;
    let mut all = Vec::new();
    for (job, (from, to)) in jobs.iter().zip(ranges) {
        let statuses = read_status(&warehouse, job).await?;
        let kept: Vec<PartitionStatus> = statuses
            .into_iter()
            .filter(|s| {
                from.is_none_or(|f| s.partition >= f) && to.is_none_or(|t| s.partition <= t)
            })
            .filter(|s| !args.anomalies_only || s.anomaly)
            .collect();
        all.push((*job, kept));
    }
    warehouse.close().await;
    let rows: Vec<StatusRow> = all
        .iter()
        .flat_map(|(job, statuses)| statuses.iter().map(move |s| StatusRow::new(job, s)))
        .collect();
    match args.format {
        StatusFormat::Json => {
            let text =
                serde_json::to_string_pretty(&rows).map_err(|e| Stop::failed(e.to_string()))?;
            println!("{text}");
        }
        StatusFormat::Csv => {
            println!(
                "job,partition,state,rows_now,rows_at_load,anomaly,drift,attempts,last_finished,last_error"
            );
            for r in &rows {
                println!(
                    "{},{},{},{},{},{},{},{},{},{}",
                    csv(r.job),
                    r.partition,
                    r.state,
                    opt(r.rows_now),
                    opt(r.rows_at_load),
                    r.anomaly,
                    r.drift,
                    r.attempts,
                    r.last_finished.unwrap_or(""),
                    csv(r.last_error.unwrap_or(""))
                );
            }
        }
        StatusFormat::Table => {
            println!(
                "{:<20} {:<14} {:<11} {:>9} {:>9}  {:<8} last error",
                "JOB", "PARTITION", "STATE", "ROWS", "AT LOAD", "FLAGS"
            );
            for (job, statuses) in &all {
                for s in statuses {
                    let mut flags = String::new();
                    if s.anomaly {
                        flags.push_str("anomaly ");
                    }
                    if s.drift {
                        flags.push_str("drift");
                    }
                    let error = s
                        .last_attempt
                        .as_ref()
                        .and_then(|a| a.error.as_deref())
                        .unwrap_or("");
                    println!(
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
            }
        }
    }
    Ok(Exit::Ok)
}

async fn read_status(warehouse: &Warehouse, job: &Job) -> Result<Vec<PartitionStatus>, Stop> {
    state::job_status(warehouse, job, now_utc(), &HashSet::new())
        .await
        .map_err(|e| Stop::failed(format!("{}: {e}", job.name)))
}

fn opt(n: Option<i64>) -> String {
    n.map_or(String::new(), |n| n.to_string())
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
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
    let result = async {
        let config = load_config(config_path)?;
        let warehouse = connect(&config, 2).await?;
        println!(
            "{:<22} {:<18} {:<6} {:<28} {:<10} health",
            "JOB", "STRATEGY", "GRAIN", "TARGET", "LINT"
        );
        for job in &config.jobs {
            let health = match read_status(&warehouse, job).await {
                Ok(statuses) => state_counts(&statuses)
                    .into_iter()
                    .map(|(st, n)| format!("{}{n} {}", st.glyph(), st.name()))
                    .collect::<Vec<_>>()
                    .join("  "),
                Err(e) => format!("unreadable: {}", e.message),
            };
            println!(
                "{:<22} {:<18} {:<6} {:<28} {:<10} {health}",
                job.name,
                job.strategy.as_str(),
                job.grain.as_str(),
                job.target.to_string(),
                lint_badge(job)
            );
        }
        warehouse.close().await;
        Ok::<_, Stop>(Exit::Ok)
    }
    .await;
    result.unwrap_or_else(Stop::report)
}

/// The static lint findings of a job in a word: `ok`, `2 errors`, `1 warning`.
fn lint_badge(job: &Job) -> String {
    let findings = crate::lint::static_findings(job);
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

pub async fn log(config_path: &Path, job_name: &str, partition: Option<&str>) -> Exit {
    let result = async {
        let config = load_config(config_path)?;
        let job = find_job(&config, job_name)?;
        let partition = match partition {
            Some(p) => parse_bound(job, "PARTITION", Some(p), RangeEnd::From)?.map(|p| p.name()),
            None => None,
        };
        let warehouse = connect(&config, 2).await?;
        let attempts = warehouse
            .attempts(&job.name, partition.as_deref())
            .await
            .map_err(|e| Stop::failed(e.to_string()))?;
        warehouse.close().await;
        if attempts.is_empty() {
            println!(
                "no attempts recorded for {}{}",
                job.name,
                partition.map(|p| format!(" {p}")).unwrap_or_default()
            );
        }
        for a in &attempts {
            let rows = format!(
                "-{} +{} ~{} = {}",
                a.rows_deleted, a.rows_inserted, a.rows_updated, a.rows_after
            );
            println!(
                "{} {:<14} #{:<3} {:<9} {:<26} {} by {}@{}{}{}",
                a.finished_at,
                a.partition,
                a.attempt,
                a.status.as_str(),
                rows,
                a.run_id,
                a.operator,
                a.host,
                a.reason
                    .as_ref()
                    .map(|r| format!(" · {r}"))
                    .unwrap_or_default(),
                a.error
                    .as_ref()
                    .map(|e| format!("\n    {}", first_line(e)))
                    .unwrap_or_default(),
            );
        }
        Ok::<_, Stop>(Exit::Ok)
    }
    .await;
    result.unwrap_or_else(Stop::report)
}
