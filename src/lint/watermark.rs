//! A replace job whose window filters another column than the one its
//! partition column is computed from: a row whose filtered column falls
//! outside its partition's window is never loaded, or lands in another run's.

use super::sql::Reading;
use super::{Finding, Severity, file_line};
use crate::config::{Job, Strategy};

/// The seed's "created_at as watermark" mistake: a replace job whose
/// partition column is computed from one column while the window filters
/// another, so a row can land in a partition whose run never selects it.
pub(super) fn findings(job: &Job, reading: &Reading, out: &mut Vec<Finding>) {
    if job.strategy != Strategy::ReplacePartition || reading.window_filters.is_empty() {
        return;
    }
    let Some(pcol) = &job.partition_column else {
        return;
    };
    let Some(outputs) = &reading.outputs else {
        return;
    };
    let Some(output) = outputs.iter().find(|o| {
        o.name
            .as_deref()
            .is_some_and(|n| n.eq_ignore_ascii_case(pcol.as_str()))
    }) else {
        return;
    };
    if output.sources.is_empty() {
        return;
    }
    let mut lineage = std::collections::BTreeSet::new();
    for source in &output.sources {
        lineage.extend(reading.lineage(source));
    }
    if reading
        .window_filters
        .iter()
        .any(|w| lineage.contains(&w.column))
    {
        return;
    }
    let filter = &reading.window_filters[0];
    let sources: Vec<&str> = output.sources.iter().map(String::as_str).collect();
    let source = sources.join(", ");
    out.push(Finding::new(
        Severity::Warning,
        file_line(job, filter.line),
        format!(
            "the window filters on {} but partition column {pcol} takes its value from {source}: a row whose {} falls outside its {pcol} window is never loaded, or lands in another run's partition",
            filter.column, filter.column
        ),
        format!(
            "filter on the column the partition is computed from: where {} >= :start and {} < :end",
            sources[0], sources[0]
        ),
    ));
}
