//! `idem log JOB PARTITION --lines N`: a partition's run log as this
//! machine's runs wrote it, and what kept any of it from being read.

use std::path::Path;

use super::attempt_log::job_to_log;
use super::output::{noteln, outln};
use super::run_args::{config_flag, shell_word};
use super::{ONE_PARTITION, Stop, load_config, parse_partition};
use crate::config::{Config, Job};
use crate::exit::Exit;
use crate::warehouse::Warehouse;
use crate::warehouse::ledger::Attempt;

/// `idem log JOB PARTITION --lines N`: the partition's run log from disk.
/// A renamed job's old name reads the logs its runs wrote under it, as
/// `idem log OLD` reads its attempts.
pub async fn run_log(
    config_path: &Path,
    job_name: &str,
    partition: Option<&str>,
    n: usize,
) -> Exit {
    let result = async {
        // As --concurrency 0 is: 0 lines would print nothing of a log there is.
        if n == 0 {
            return Err(Stop::usage(
                "--lines 0 is out of range; expected 1 or more (the last N lines of the run log; without N, 50)",
            ));
        }
        let config = load_config(config_path)?;
        let (job, warehouse) = job_to_log(&config, job_name).await?;
        if let Some(wh) = warehouse {
            wh.close().await;
        }
        let job = job.as_ref();
        let asked = partition.ok_or_else(|| Stop::usage("--lines needs a PARTITION"))?;
        let (first, last) = parse_partition(job, ONE_PARTITION, asked)?;
        // A month of a daily job names many logs; printing its first day's
        // alone would read as the month's.
        if first != last {
            return Err(Stop::usage(format!(
                "--lines prints one partition's run log, and {} names each {} of {} in it; name one, e.g. {}",
                asked.trim(),
                job.grain,
                job.name,
                first.name()
            )));
        }
        let partition = first.name();
        let Some(dir) = crate::runlog::dir(&config.warehouse.url) else {
            return Err(Stop::failed(crate::runlog::NO_STATE_DIRECTORY));
        };
        let tail = crate::runlog::tail(&dir, &job.name, &partition, n);
        for why in &tail.unreadable {
            noteln!("idem: {why}");
        }
        let unwritten = tail.unwritten.as_ref().map(|why| match why.as_str() {
            "" => "a run could not write it".to_string(),
            why => format!("a run could not write it: {why}"),
        });
        if let Some(unwritten) = &unwritten
            && !tail.lines.is_empty()
        {
            noteln!("idem: this run log is not whole: {unwritten}");
        }
        if let Some(unwritten) = &unwritten
            && tail.lines.is_empty()
            && tail.unreadable.is_empty()
        {
            outln!(
                "the run log for {} {partition} in {} is empty: {unwritten}",
                job.name,
                dir.display()
            );
        } else if tail.lines.is_empty() && tail.unreadable.is_empty() {
            let why = match tail.found {
                true => None,
                false => no_log_because(&config, job, &partition, &dir).await,
            };
            outln!(
                "{} for {} {partition} in {}{}",
                if tail.found {
                    "the run log is empty"
                } else {
                    "no run log"
                },
                job.name,
                dir.display(),
                why.map_or_else(
                    || " (runs of this user on this machine write them)".to_string(),
                    |why| format!(": {why}")
                )
            );
        }
        for line in &tail.lines {
            outln!("{line}");
        }
        // What could be read is shown; a file that could not be is a
        // failure all the same, for a script as for the operator.
        if !tail.unreadable.is_empty() {
            return Ok(Exit::Failed);
        }
        Ok::<_, Stop>(Exit::Ok)
    }
    .await;
    result.unwrap_or_else(Stop::report)
}

/// Why a partition has no run log in `dir`, where that can be told: a
/// file in the way of the folder (a run could write neither its log nor
/// the mark that it could not), and what the ledger records of it. `None`
/// where neither says anything (a partition never run is not asked about).
async fn no_log_because(config: &Config, job: &Job, partition: &str, dir: &Path) -> Option<String> {
    let in_the_way = crate::runlog::why_no_run_could_write(dir).or_else(crate::runlog::no_home);
    let recorded = recorded_attempts(config, job, partition).await;
    let repeat = format!(
        "idem{} log {} {partition} lists them",
        config_flag(&config.path),
        shell_word(&job.name)
    );
    let ledger = recorded.as_deref().and_then(|attempts| {
        let latest = attempts.last()?;
        let n = match attempts.len() {
            1 => "1 attempt".to_string(),
            n => format!("{n} attempts"),
        };
        Some(if latest.host != crate::engine::host() {
            format!(
                "the ledger records {n} of it, the latest run on {}, which keeps its run log there ({repeat})",
                latest.host
            )
        } else if in_the_way.is_some() {
            format!("the ledger records {n} of it ({repeat})")
        } else {
            format!(
                "the ledger records {n} of it, the latest run on this machine by {}, which left no log here: it could not write one (it said why as it ran), or the log was removed since ({repeat})",
                latest.operator
            )
        })
    });
    match (in_the_way, ledger) {
        (Some(why), Some(ledger)) => Some(format!("{why}; {ledger}")),
        (why, ledger) => why.or(ledger),
    }
}

/// The ledger's attempts of the partition, oldest first; `None` where the
/// warehouse cannot be read in a few seconds (the log on disk is this
/// command's business, the ledger only explains its absence).
async fn recorded_attempts(config: &Config, job: &Job, partition: &str) -> Option<Vec<Attempt>> {
    let read = async {
        let warehouse = Warehouse::connect_to_read(&config.warehouse, 1)
            .await
            .ok()?;
        let attempts = warehouse
            .answering(warehouse.attempts(&job.name, Some(partition)))
            .await;
        warehouse.close().await;
        attempts.ok()
    };
    tokio::time::timeout(std::time::Duration::from_secs(5), read)
        .await
        .ok()
        .flatten()
}
