//! A `replace_partition` target that foreign keys refer to: each load
//! DELETEs its window, so a key that deletes or rewrites the referring rows
//! would do so at every re-run (a run refuses such a target), and a key
//! that restricts the DELETE fails every re-run while rows refer to the
//! window.

use super::{Finding, Severity};
use crate::config::{Job, Strategy};
use crate::warehouse::{DELETING_REFERENCE_ADVICE, Warehouse, WarehouseError};

/// The findings for the foreign keys referring to a replace job's target.
pub(super) async fn findings(
    wh: &Warehouse,
    job: &Job,
    out: &mut Vec<Finding>,
) -> Result<(), WarehouseError> {
    if job.strategy != Strategy::ReplacePartition {
        return Ok(());
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
    Ok(())
}
