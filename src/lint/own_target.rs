//! A `replace_partition` job whose SQL reads its own target: the load
//! deletes the window's rows before its SELECT runs, so the SELECT sees
//! none of them, while a dry run (before the delete) counts them.

use super::{Finding, Severity, file_line, sql::Reading};
use crate::config::{Job, Strategy};

/// Whether a table as the SQL names it (lower-cased, qualified as written)
/// is `job`'s target: the same name, and the same schema where both say one
/// (as lineage matches a job's reads with other jobs' targets).
fn names_target(read: &str, job: &Job) -> bool {
    let target = &job.target;
    let (schema, name) = match read.rsplit_once('.') {
        Some((schema, name)) => (Some(schema.rsplit('.').next().unwrap_or(schema)), name),
        None => (None, read),
    };
    name.eq_ignore_ascii_case(target.name.as_str())
        && match (schema, &target.schema) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b.as_str()),
            _ => true,
        }
}

pub(super) fn findings(job: &Job, reading: &Reading, out: &mut Vec<Finding>) {
    // SQL that writes a table is a finding of its own, which names it.
    let one_query = matches!(reading.statements.as_slice(), [s] if s.is_query);
    if job.strategy != Strategy::ReplacePartition || !one_query {
        return;
    }
    let Some(read) = reading.tables.iter().find(|t| names_target(t, job)) else {
        return;
    };
    out.push(Finding::new(
        Severity::Error,
        file_line(job, 1),
        format!(
            "the SQL reads {read}, the job's own target: a load deletes the window's rows before its SELECT runs, so the SELECT sees none of them and the window is loaded empty (a dry run, reading before the delete, counts them; past the shrink guard, --allow-shrink deletes them)"
        ),
        format!(
            "read the sources {} is built from; to rework a table's own rows, write them to another target, or load with merge_key (which deletes nothing)",
            job.target
        ),
    ));
}
