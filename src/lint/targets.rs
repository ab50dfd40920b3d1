//! Findings across jobs: two jobs that write the same target table undo
//! each other's loads, which neither job's own SQL shows.

use crate::config::{Job, Strategy, TableNames, same_table};

use super::{Finding, Severity};

/// The findings of `job` against the jobs written before it in `jobs` (the
/// whole config), on `job`'s `target` line, targets being the same table
/// where table `names` compare as they do: a second job replacing
/// partitions of the same target is an error, a replace and a merge on one
/// target a warning.
pub fn shared_target_findings(jobs: &[Job], job: &Job, names: TableNames) -> Vec<Finding> {
    let earlier: Vec<&Job> = jobs
        .iter()
        .take_while(|other| other.name != job.name)
        .filter(|other| same_table(&other.target, &job.target, names))
        .collect();
    let first = |strategy: Strategy| earlier.iter().find(|o| o.strategy == strategy);
    let mut out = Vec::new();
    let line = job.lines.target;
    let target = &job.target;
    match job.strategy {
        Strategy::ReplacePartition => {
            if let Some(other) = first(Strategy::ReplacePartition) {
                out.push(Finding::new(
                    Severity::Error,
                    line,
                    format!(
                        "job {} (line {}) also replaces partitions of {target}: each job's load deletes the other's rows in its windows, and each counts the other's rows as unmanaged",
                        other.name, other.lines.target
                    ),
                    "give each target one replace_partition job (one job can load several sources with a UNION), or load both with merge_key",
                ));
            }
            if let Some(other) = first(Strategy::MergeKey) {
                out.push(Finding::new(
                    Severity::Warning,
                    line,
                    format!(
                        "job {} (line {}) merges into {target}, whose partitions this job replaces: each load here deletes the rows it merged in the window",
                        other.name, other.lines.target
                    ),
                    "give each target one job, or load both with merge_key",
                ));
            }
        }
        Strategy::MergeKey => {
            if let Some(other) = first(Strategy::ReplacePartition) {
                out.push(Finding::new(
                    Severity::Warning,
                    line,
                    format!(
                        "job {} (line {}) replaces partitions of {target}, which this job merges into: each of its loads deletes the rows this job merged in the window",
                        other.name, other.lines.target
                    ),
                    "give each target one job, or load both with merge_key",
                ));
            }
        }
    }
    out
}

/// What a run of `job` says when another job of `jobs` writes its target
/// (the same table where table `names` compare as they do) by the other
/// strategy, whichever comes first in the config (`idem lint`
/// says it once, on the later one): the run takes turns with that job's
/// loads, but their rows still undo each other's.
pub fn merged_and_replaced(jobs: &[Job], job: &Job, names: TableNames) -> Option<String> {
    let other = jobs.iter().find(|o| {
        o.name != job.name
            && o.strategy != job.strategy
            && same_table(&o.target, &job.target, names)
    })?;
    let (merge, replace) = match job.strategy {
        Strategy::MergeKey => (job, other),
        Strategy::ReplacePartition => (other, job),
    };
    Some(format!(
        "job {} merges into {}, whose partitions job {} replaces: each replace deletes the rows merged in its window (their loads take turns, so neither fails on the other's rows half-written); give the target one job, or load both with merge_key",
        merge.name, job.target, replace.name
    ))
}
