//! What the steps of a cascade run so far reached, as it runs: the windows
//! each step loaded and those its merges moved rows in or out of. A step
//! is planned before any runs, so a merge that moves a key into or out of
//! a window beyond its plan leaves that window's readers unplanned: before
//! each step runs, the windows over what the steps before it moved are
//! added to it ([`Reached::add_to`]). And a merge step whose windows over
//! what upstream loaded were all skipped has nothing to go on through:
//! the later windows it planned only for that are left out too
//! ([`Reached::through_only`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::Reach;
use crate::config::Strategy;
use crate::engine::{Backfill, RunSummary};
use crate::lineage::Lineage;
use crate::partition::Partition;

/// What [`Reached::add_to`] did to a step: the windows it added, and those
/// it would have added but for their not having ended, each with why,
/// oldest first.
#[derive(Debug, Default)]
pub(super) struct Additions {
    pub added: Vec<(Partition, String)>,
    pub left: Vec<(Partition, String)>,
}

#[derive(Debug, Default)]
pub(super) struct Reached {
    /// Per job that ran a step: its step's windows, and those its merges
    /// moved rows in or out of.
    windows: HashMap<String, BTreeSet<Partition>>,
    /// Of those, per job, the windows beyond its step as planned (rows
    /// moved there, or added to it), each with why.
    beyond: HashMap<String, BTreeMap<Partition, String>>,
}

impl Reached {
    /// Adds to `step` (a downstream job's, as planned) its windows within
    /// `reach` over the windows the steps before it reached beyond their
    /// plans, and, for a merge step, the windows between, so that it still
    /// merges every window from its first on in order. Gives back those
    /// added, each with why, oldest first; and those left out because they
    /// have not ended (outside `reach`), each with why.
    pub fn add_to(&self, step: &mut Backfill, lineage: &Lineage, reach: Reach) -> Additions {
        let job = step.job.clone();
        let mut added: BTreeMap<Partition, String> = BTreeMap::new();
        let mut left: BTreeMap<Partition, String> = BTreeMap::new();
        for (up, _) in lineage.upstream(&job.name) {
            for (window, why) in self.beyond.get(up).into_iter().flatten() {
                let (within, not_ended) = reach.over(&job, window);
                let why = || format!("{up} {} {why}", window.name());
                for p in within {
                    if !step.partitions.contains(&p) {
                        added.entry(p).or_insert_with(why);
                    }
                }
                for p in not_ended {
                    if !step.partitions.contains(&p) {
                        left.entry(p).or_insert_with(why);
                    }
                }
            }
        }
        let left = left
            .into_iter()
            .map(|(p, why)| {
                let until = p.end().format("%Y-%m-%d %H:%M");
                (
                    p,
                    format!(
                        "{why}; this window has not ended yet (until {until} UTC), so the cascade leaves it: load it once it has ended (or now, with --allow-incomplete)"
                    ),
                )
            })
            .collect();
        let (Some(&first_added), Some(&last_added)) = (added.keys().next(), added.keys().last())
        else {
            return Additions {
                added: Vec::new(),
                left,
            };
        };
        if job.strategy == Strategy::MergeKey {
            let first = step
                .partitions
                .first()
                .map_or(first_added, |&p| p.min(first_added));
            let last = step
                .partitions
                .last()
                .map_or(last_added, |&p| p.max(last_added));
            for p in crate::partition::range(first, last) {
                if !step.partitions.contains(&p) && !added.contains_key(&p) {
                    added.insert(
                        p,
                        format!(
                            "merged on through, in order, after the added {} {}",
                            job.name,
                            first_added.name()
                        ),
                    );
                }
            }
        }
        step.partitions.extend(added.keys().copied());
        step.partitions.sort();
        Additions {
            added: added.into_iter().collect(),
            left,
        }
    }

    /// Of a downstream merge `step`'s partitions (once those reading what
    /// did not load are skipped), the windows it planned only to merge on
    /// through after a window that was skipped: those before its first
    /// window over what upstream reached. Merged alone, they would merge
    /// again what they merged last; their readers need nothing.
    pub fn through_only(&self, step: &Backfill, lineage: &Lineage, reach: Reach) -> Vec<Partition> {
        if step.job.strategy != Strategy::MergeKey {
            return Vec::new();
        }
        let mut over_upstream = BTreeSet::new();
        for (up, _) in lineage.upstream(&step.job.name) {
            for window in self.windows.get(up).into_iter().flatten() {
                over_upstream.extend(reach.over(&step.job, window).0);
            }
        }
        step.partitions
            .iter()
            .take_while(|p| !over_upstream.contains(p))
            .copied()
            .collect()
    }

    /// Whether `job`'s step reached windows beyond its plan: rows its
    /// merges moved, or windows added to it, which its readers read.
    pub fn moved_beyond(&self, job: &str) -> bool {
        self.beyond.get(job).is_some_and(|b| !b.is_empty())
    }

    /// What `step` (as it ran, `added` among its partitions) reached: its
    /// windows, and those `summary`'s merges moved rows in or out of.
    pub fn ran(
        &mut self,
        step: &Backfill,
        added: &[(Partition, String)],
        summary: Option<&RunSummary>,
    ) {
        let job = &step.job.name;
        let windows = self.windows.entry(job.clone()).or_default();
        windows.extend(step.partitions.iter().copied());
        let beyond = self.beyond.entry(job.clone()).or_default();
        for (p, why) in added {
            beyond.insert(*p, format!("loads too ({why})"));
        }
        for (window, by) in summary.map_or(&[][..], |s| s.moved.as_slice()) {
            if windows.insert(*window) {
                beyond.entry(*window).or_insert_with(|| {
                    format!(
                        "changed: its merge of {} moved rows in or out of it",
                        by.name()
                    )
                });
            }
        }
    }
}
