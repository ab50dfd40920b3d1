//! The confirm dialog's plain words on what a run replaces and how its
//! job's strategy loads.

use crate::config::Strategy;
use crate::tui::job::JobView;
use crate::tui::widgets::thousands;

/// What the run replaces, in rows.
pub fn replaces(job: &JobView, chosen: &[usize]) -> String {
    match job.job.strategy {
        Strategy::ReplacePartition => {
            let rows_now: i64 = chosen
                .iter()
                .filter_map(|i| job.status_at(*i).and_then(|s| s.rows_now))
                .sum();
            format!(
                "{} rows now in {} will be deleted and loaded again",
                thousands(rows_now),
                job.job.target
            )
        }
        Strategy::MergeKey => {
            let merged: i64 = chosen
                .iter()
                .filter_map(|i| job.status_at(*i).and_then(|s| s.rows()))
                .sum();
            let windows = match chosen.len() {
                1 => "this window".to_string(),
                n => format!("these {n} windows"),
            };
            format!(
                "no rows are deleted; of the {} rows {windows} merged at their last loads, those whose values differ are updated",
                thousands(merged)
            )
        }
    }
}

/// The job's strategy in one line of plain words.
pub fn strategy_words(job: &JobView) -> String {
    let target = job.job.target.to_string();
    match job.job.strategy {
        Strategy::ReplacePartition => format!(
            "each {}: delete its window from {target} and insert the job's rows, in one transaction under a lock",
            job.job.grain
        ),
        Strategy::MergeKey => format!(
            "each window in order: upsert rows into {target} by {}, updating only rows that differ, in one transaction",
            job.job
                .unique_key
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
