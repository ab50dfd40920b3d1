//! A `replace_partition` job that gives a `unique_key`: a replace deletes
//! and inserts each window whole and matches no row by key, so the key
//! does nothing, though it reads as deduplication (or as dbt's
//! `delete+insert`, which deletes by it).

use super::{Finding, Severity};
use crate::config::{Job, Strategy};

pub(super) fn findings(job: &Job, out: &mut Vec<Finding>) {
    if job.strategy != Strategy::ReplacePartition || job.unique_key.is_empty() {
        return;
    }
    let keys: Vec<&str> = job.unique_key.iter().map(|k| k.as_str()).collect();
    out.push(Finding::new(
        Severity::Warning,
        job.lines.unique_key,
        format!(
            "unique_key ({}) is not used by replace_partition: each load replaces its window whole, matching no row by key, so two rows of one key both land and a key whose {} moves to another window keeps its old row there",
            keys.join(", "),
            job.partition_column
                .as_ref()
                .map_or("partition column", |c| c.as_str())
        ),
        "remove unique_key, or load with strategy = \"merge_key\", which upserts by it",
    ));
}
