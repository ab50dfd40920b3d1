//! `idem lint`: every job's findings as `FILE:LINE: job NAME: SEVERITY:
//! MESSAGE — fix: FIX`, or JSON. Exit 1 when any finding is an error, 0 when
//! there are only warnings, 2 for usage and config errors.

use std::path::Path;

use serde::Serialize;

use super::output::{noteln, outln};
use super::{Stop, connect_to_read, find_job, load_config};
use crate::config::Job;
use crate::exit::Exit;
use crate::lint::{self, Finding, LintFormat, Severity};

#[derive(Serialize)]
struct JobFinding<'a> {
    job: &'a str,
    file: String,
    #[serde(flatten)]
    finding: &'a Finding,
}

/// `offline` skips the checks that need the warehouse.
pub async fn lint(
    config_path: &Path,
    job: Option<&str>,
    format: LintFormat,
    offline: bool,
) -> Exit {
    match lint_inner(config_path, job, format, offline).await {
        Ok(code) => code,
        Err(stop) => stop.report(),
    }
}

async fn lint_inner(
    config_path: &Path,
    job: Option<&str>,
    format: LintFormat,
    offline: bool,
) -> Result<Exit, Stop> {
    let config = load_config(config_path)?;
    super::note_no_jobs(&config);
    if let Some(note) = crate::warehouse::session_zone_note(&config.warehouse.url) {
        noteln!("idem: {note}");
    }
    let jobs: Vec<&Job> = match job {
        Some(name) => vec![find_job(&config, name)?],
        None => config.jobs.iter().collect(),
    };
    let mut findings: Vec<(&Job, Vec<Finding>)> = jobs
        .iter()
        .map(|job| {
            let found = lint::config_findings(
                &config.jobs,
                job,
                job.engine.into(),
                job.engine.table_names(),
            );
            (*job, found)
        })
        .collect();
    // Jobs whose warehouse checks could not be made.
    let mut unchecked = 0;
    if !offline {
        match connect_to_read(&config, 2).await {
            Ok(warehouse) => {
                if let Some(note) = warehouse.server_zone_note().await {
                    noteln!("idem: {note}");
                }
                for (job, found) in &mut findings {
                    *found = match lint::all_findings(&warehouse, &config.jobs, job).await {
                        Ok(all) => all,
                        Err((own, e)) => {
                            unchecked += 1;
                            noteln!("idem: job {}: warehouse checks failed: {e}", job.name);
                            own
                        }
                    };
                }
                warehouse.close().await;
            }
            Err(stop) => {
                unchecked = jobs.len();
                noteln!(
                    "idem: warehouse checks skipped: {} (use --offline for the SQL checks alone)",
                    stop.message
                );
            }
        }
    }

    let file = config.path.display().to_string();
    match format {
        LintFormat::Json => {
            let rows: Vec<JobFinding> = findings
                .iter()
                .flat_map(|(job, found)| {
                    found.iter().map(|f| JobFinding {
                        job: &job.name,
                        file: file.clone(),
                        finding: f,
                    })
                })
                .collect();
            let text =
                serde_json::to_string_pretty(&rows).map_err(|e| Stop::failed(e.to_string()))?;
            super::output::json(&text)?;
        }
        LintFormat::Table => {
            for (job, found) in &findings {
                for f in found {
                    outln!(
                        "{file}:{}: job {}: {}: {} — fix: {}",
                        f.line,
                        job.name,
                        f.severity,
                        f.message,
                        f.fix
                    );
                }
            }
        }
    }
    let count = |s: Severity| {
        findings
            .iter()
            .flat_map(|(_, f)| f)
            .filter(|f| f.severity == s)
            .count()
    };
    let (errors, warnings) = (count(Severity::Error), count(Severity::Warning));
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let unchecked_note = match unchecked {
        0 => String::new(),
        n if n == jobs.len() => "; the warehouse checks could not be made".to_string(),
        n => format!(
            "; the warehouse checks of {n} job{} could not be made",
            plural(n)
        ),
    };
    noteln!(
        "{errors} error{}, {warnings} warning{} in {} job{}{unchecked_note}",
        plural(errors),
        plural(warnings),
        jobs.len(),
        plural(jobs.len()),
    );
    Ok(if errors > 0 || unchecked > 0 {
        Exit::Failed
    } else {
        Exit::Ok
    })
}
