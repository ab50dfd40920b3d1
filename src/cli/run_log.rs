//! `idem log JOB PARTITION --lines N`: a partition's run log as this
//! machine's runs wrote it, and what kept any of it from being read.

use std::path::Path;

use super::attempt_log::job_to_log;
use super::output::{noteln, outln};
use super::{ONE_PARTITION, Stop, load_config, parse_partition};
use crate::exit::Exit;

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
            outln!(
                "{} for {} {partition} in {} (runs of this user on this machine write them)",
                if tail.found {
                    "the run log is empty"
                } else {
                    "no run log"
                },
                job.name,
                dir.display()
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
