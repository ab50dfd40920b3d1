//! The dialog's "parallel" line: how many partitions the run loads at once,
//! and how often it retries.

use crate::config::{Job, Strategy};
use crate::numbers::{count, n_partitions};

/// The words for a run of `job` with `concurrency` partitions at once
/// (lowered from what was asked where `lowered` says why) and `retries`.
pub(super) fn words(job: &Job, concurrency: usize, lowered: Option<&str>, retries: u32) -> String {
    if job.strategy == Strategy::MergeKey {
        return "1 window at a time, oldest first".to_string();
    }
    let at_once = match concurrency {
        1 if job.engine.max_writers() == 1 => {
            "1 partition at a time (SQLite has one writer)".into()
        }
        1 => "1 partition at a time".to_string(),
        n => format!("{} at once", n_partitions(n as i64)),
    };
    let lowered = lowered.map(|why| format!(" ({why})")).unwrap_or_default();
    format!(
        "{at_once}{lowered} · {} of transient errors",
        count(retries, "retry", "retries")
    )
}
