//! The note `idem status` and `idem jobs` give where a job's target has
//! ledger history under a job name the config no longer has: a renamed
//! job's partitions show as unmanaged, its loads kept under the old name.

use super::output::noteln;
use crate::config::{Config, Job, same_table};
use crate::warehouse::Warehouse;

/// Says once, on stderr, each name the ledger holds loads of a shown job's
/// target under that the config no longer has, while that job has no loads
/// of its own. A ledger that cannot be read for it says nothing: the states
/// read says why.
pub(super) async fn note_retired_names(warehouse: &Warehouse, config: &Config, shown: &[&Job]) {
    let kept: Vec<&str> = config.jobs.iter().map(|j| j.name.as_str()).collect();
    let Ok(retired) = warehouse.retired_names(&kept).await else {
        return;
    };
    for old in retired {
        let Some(job) = shown
            .iter()
            .find(|j| same_table(&j.target, &old.target, config.warehouse.engine()))
        else {
            continue;
        };
        // Loaded under its new name since, the job was renamed on purpose:
        // its old name's loads are history, not lost.
        if warehouse.job_has_attempts(&job.name).await.unwrap_or(true) {
            continue;
        }
        noteln!(
            "idem: the ledger holds loads of {} under the job name \"{}\", which {} no longer has: {}'s partitions do not count them (a renamed job starts without its history); name the job \"{}\" again to take them back",
            old.target,
            old.job,
            config.path.display(),
            job.name,
            old.job
        );
    }
}
