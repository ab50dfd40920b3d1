//! Targets a run refuses before writing, said by lint first: one with a
//! column whose name is not a plain identifier (idem could not name it in
//! its statements or fingerprints), and a `replace_partition` target that
//! a foreign key refers to `ON DELETE CASCADE` (each load's DELETE would
//! reach the referring rows at every re-run). A key that restricts the
//! DELETE is a warning: it fails every re-run while rows refer to the
//! window.

use super::{Finding, Severity};
use crate::config::{Job, Strategy};
use crate::warehouse::{DELETING_REFERENCE_ADVICE, Warehouse, WarehouseError};

/// The findings for what a run would refuse of the job's target; returns
/// the target's columns not named plainly, which other checks still count
/// as its columns.
pub(super) async fn findings(
    wh: &Warehouse,
    job: &Job,
    out: &mut Vec<Finding>,
) -> Result<Vec<String>, WarehouseError> {
    let odd = wh.columns_not_plain(&job.target).await?;
    if let Some(first) = odd.first() {
        out.push(Finding::new(
            Severity::Error,
            job.lines.target,
            format!(
                "column \"{first}\" of {} is not a plain identifier (ASCII letters, digits and _, not beginning with a digit){}: idem cannot name it in the statements it writes or in its fingerprints, so a run refuses this target",
                job.target,
                match odd.len() {
                    1 => String::new(),
                    _ => format!(", nor are {}", odd[1..].join(", ")),
                }
            ),
            format!("rename the column, or load a view of {} that names it plainly", job.target),
        ));
    }
    if job.strategy != Strategy::ReplacePartition {
        return Ok(odd);
    }
    for key in wh.references_to(&job.target).await? {
        let (severity, message, fix) = if key.acts_on_delete() {
            (
                Severity::Error,
                format!(
                    "foreign key {} of {} refers to {} ON DELETE {}: each load's DELETE of a window would reach {}'s rows at every re-run, so a run refuses this target",
                    key.name, key.table, job.target, key.on_delete, key.table
                ),
                DELETING_REFERENCE_ADVICE.to_string(),
            )
        } else {
            (
                Severity::Warning,
                format!(
                    "foreign key {} of {} refers to {} ({}): a re-run's DELETE of a window fails while rows of {} refer to its rows",
                    key.name, key.table, job.target, key.on_delete, key.table
                ),
                format!(
                    "load {} with merge_key, which deletes nothing, or let no table refer to it",
                    job.target
                ),
            )
        };
        out.push(Finding::new(severity, job.lines.target, message, fix));
    }
    Ok(odd)
}
