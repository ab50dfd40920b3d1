//! Findings across jobs: two jobs that write the same target table undo
//! each other's loads, which neither job's own SQL shows.

use crate::config::{Engine, Ident, Job, Strategy, TableName};

use super::{Finding, Severity};

/// Whether two targets, each quoted as written, name the same table on
/// `engine` (PostgreSQL and MariaDB/MySQL on Linux tell `Orders` from
/// `orders`, SQLite does not; `fct` and `public.fct` are not compared).
fn same_table(a: &TableName, b: &TableName, engine: Engine) -> bool {
    let same = |x: &Ident, y: &Ident| engine.same_table_name(x.as_str(), y.as_str());
    let schemas = match (&a.schema, &b.schema) {
        (Some(x), Some(y)) => same(x, y),
        (None, None) => true,
        _ => false,
    };
    schemas && same(&a.name, &b.name)
}

/// The findings of `job` against the jobs written before it in `jobs` (the
/// whole config), on `job`'s `target` line: a second job replacing
/// partitions of the same target is an error, a replace and a merge on one
/// target a warning.
pub fn shared_target_findings(jobs: &[Job], job: &Job) -> Vec<Finding> {
    let earlier: Vec<&Job> = jobs
        .iter()
        .take_while(|other| other.name != job.name)
        .filter(|other| same_table(&other.target, &job.target, job.engine))
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
