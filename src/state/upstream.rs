//! Staleness from upstream: a loaded partition whose upstream partitions'
//! content changed after it was loaded.

use std::sync::Arc;

use super::{LoadState, PartitionStatus};
use crate::config::Job;
use crate::warehouse::ledger::ContentChanges;

/// The first and last partition of an upstream job of `grain` that the
/// loaded partitions among `statuses` read: all [`mark_upstream_stale`]
/// looks at, so the ledger is summed up over that range only. None when
/// none of them has loaded.
pub(super) fn upstream_read(
    statuses: &[PartitionStatus],
    grain: crate::partition::Grain,
) -> Option<(String, String)> {
    let mut loaded = statuses
        .iter()
        .filter(|s| s.last_success.is_some())
        .map(|s| s.partition);
    let first = loaded.next()?;
    let (first, last) = loaded.fold((first, first), |(lo, hi), p| (lo.min(p), hi.max(p)));
    let first = crate::lineage::read_by(&first, grain).into_iter().next()?;
    let last = crate::lineage::read_by(&last, grain).into_iter().last()?;
    Some((first.name(), last.name()))
}

/// Marks the partitions of a job that read upstream partitions whose content
/// changed after they were loaded: stale (upstream), naming those partitions.
/// `upstream` is each upstream job with its content changes
/// ([`crate::warehouse::Warehouse::content_changes`]). A partition
/// already failed, running or stale for its own reasons keeps that state,
/// and still lists its upstream cause.
pub fn mark_upstream_stale(
    statuses: &mut [PartitionStatus],
    upstream: &[(&Job, Arc<ContentChanges>)],
) {
    for status in statuses.iter_mut() {
        let Some(success) = status.last_success.clone() else {
            continue;
        };
        // What the load read was read after it took its partition's lock
        // (its SELECT ran then, not when it finished): an upstream load
        // that committed while it ran, after its read, changed what it
        // read although it finished first. Rows from before `locked_at`
        // was recorded fall back on the attempt's start.
        let loaded = success
            .locked_at
            .as_deref()
            .unwrap_or(success.started_at.as_str());
        let mut causes = Vec::new();
        for (job, changed) in upstream {
            // The partitions read are one run of names in name order: looked
            // up as a range, not named one by one (a day reads 24 hours).
            let read = crate::lineage::read_by(&status.partition, job.grain);
            let (Some(first), Some(last)) = (read.first(), read.last()) else {
                continue;
            };
            let (first, last) = (first.name(), last.name());
            let width = first.len();
            for (name, at) in changed.range(first..=last) {
                // Only names of the upstream job's grain: a ledger row of
                // another grain (the job's grain was changed) sorts among them.
                if name.len() == width && at.as_str() > loaded {
                    causes.push(format!("{} {name}", job.name));
                }
            }
        }
        if !causes.is_empty() && matches!(status.state, LoadState::Loaded | LoadState::Empty) {
            status.state = LoadState::Stale;
        }
        status.stale_upstream = causes;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::partition::Partition;
    use crate::state::derive;
    use crate::state::tests::{attempt, job_and_statuses, june_10};
    use crate::warehouse::ledger::AttemptStatus;

    #[test]
    fn a_partition_is_stale_for_the_upstream_changes_in_what_it_read() {
        let (day_job, _) =
            job_and_statuses("strategy = \"replace_partition\"\npartition_column = \"dt\"");
        let now = june_10();
        let of_grain = |grain: crate::partition::Grain, name: &str| {
            let mut job = day_job.clone();
            job.name = name.into();
            job.grain = grain;
            job.start = Partition::containing(grain, day_job.start.start);
            job.end = day_job.end.map(|e| Partition::containing(grain, e.start));
            job
        };
        let loaded = |job: &Job| {
            let partitions = job.partitions(now);
            let history = partitions
                .iter()
                .map(|p| attempt(job, &p.name(), 1, AttemptStatus::Succeeded));
            let summary = crate::warehouse::ledger::PartitionLedger::summarize(history);
            derive(job, &partitions, None, &summary, now, &HashSet::new())
        };
        // Loads finished 2026-06-09T00:00:01.000Z; `late` is after, `early`
        // before.
        let (late, early) = ("2026-06-09T05:00:00.000Z", "2026-06-08T00:00:00.000Z");
        let changes = |pairs: &[(&str, &str)]| {
            Arc::new(
                pairs
                    .iter()
                    .map(|(p, at)| (p.to_string(), at.to_string()))
                    .collect::<ContentChanges>(),
            )
        };
        let causes = |statuses: &[PartitionStatus]| -> Vec<(String, LoadState, Vec<String>)> {
            statuses
                .iter()
                .map(|s| (s.partition.name(), s.state, s.stale_upstream.clone()))
                .collect()
        };

        // A day reads its 24 hours, and only those.
        let hourly = of_grain(crate::partition::Grain::Hour, "hourly");
        let mut days = loaded(&day_job);
        let hours = changes(&[
            ("2026-05-31T23", late),
            ("2026-06-01T05", late),
            ("2026-06-01T06", late),
            ("2026-06-02T23", early),
            ("2026-06-03T00", late),
            ("2026-06-04T00", late),
        ]);
        mark_upstream_stale(&mut days, &[(&hourly, hours)]);
        let stale = LoadState::Stale;
        assert_eq!(
            causes(&days),
            vec![
                (
                    "2026-06-01".into(),
                    stale,
                    vec!["hourly 2026-06-01T05".into(), "hourly 2026-06-01T06".into()]
                ),
                ("2026-06-02".into(), LoadState::Loaded, vec![]),
                (
                    "2026-06-03".into(),
                    stale,
                    vec!["hourly 2026-06-03T00".into()]
                ),
            ]
        );

        // A month reads its days; a ledger row named by hour (the upstream
        // job was hourly once) sorts among them and is not one of them.
        let monthly = of_grain(crate::partition::Grain::Month, "monthly");
        let mut months = loaded(&monthly);
        let days = changes(&[("2026-06-02T07", late), ("2026-06-30", late)]);
        mark_upstream_stale(&mut months, &[(&day_job, days)]);
        // (June had not ended at its load: it keeps its own state.)
        assert_eq!(
            causes(&months),
            vec![(
                "2026-06".into(),
                LoadState::Future,
                vec!["j 2026-06-30".into()]
            )]
        );
    }

    /// A load reads its upstream once it holds its lock and finishes later:
    /// an upstream load committed in between changed what it read, though
    /// it finished first.
    #[test]
    fn an_upstream_change_committed_while_a_load_ran_makes_it_stale() {
        let (job, _) =
            job_and_statuses("strategy = \"replace_partition\"\npartition_column = \"dt\"");
        let now = june_10();
        let partitions = vec![
            Partition::parse(job.grain, "2026-06-01", crate::partition::RangeEnd::From)
                .expect("a day"),
        ];
        let mut load = attempt(&job, "2026-06-01", 1, AttemptStatus::Succeeded);
        load.started_at = "2026-06-09T00:00:00.000Z".into();
        load.locked_at = Some("2026-06-09T00:00:00.100Z".into());
        load.finished_at = "2026-06-09T00:05:00.000Z".into();
        let summary = crate::warehouse::ledger::PartitionLedger::summarize([load]);
        let mut upstream = job.clone();
        upstream.name = "up".into();
        let state_after_upstream_change_at = |at: &str| {
            let mut statuses = derive(&job, &partitions, None, &summary, now, &HashSet::new());
            let changes: ContentChanges = [("2026-06-01".to_string(), at.to_string())]
                .into_iter()
                .collect();
            mark_upstream_stale(&mut statuses, &[(&upstream, Arc::new(changes))]);
            (statuses[0].state, statuses[0].stale_upstream.clone())
        };
        assert_eq!(
            state_after_upstream_change_at("2026-06-09T00:02:00.000Z"),
            (LoadState::Stale, vec!["up 2026-06-01".to_string()]),
            "committed while the load ran, after its lock: not what it read"
        );
        assert_eq!(
            state_after_upstream_change_at("2026-06-09T00:00:00.050Z"),
            (LoadState::Loaded, vec![]),
            "committed before the load took its lock: what it read"
        );
    }
}
