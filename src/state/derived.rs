//! What the last derivation of each job's states was made from, so that a
//! refresh finding the same inputs says "unchanged" instead of deriving tens
//! of thousands of states again (and the console drawing them again).
//!
//! Inputs are compared by identity where the refresh cache shares them
//! ([`crate::warehouse::RefreshCache`] hands out the same `Arc` while a
//! target or ledger has not moved); a kept derivation holds those `Arc`s, so
//! an address cannot be reused by another read while it is compared with.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use chrono::NaiveDateTime;

use crate::config::Job;
use crate::partition::Partition;
use crate::warehouse::TargetCounts;
use crate::warehouse::ledger::{ContentChanges, LedgerSummary};

use super::PartitionStatus;

/// A job's partition states, and the rows of its target that no partition
/// holds.
#[derive(Debug, Clone, Default)]
pub struct JobStates {
    pub statuses: Vec<PartitionStatus>,
    /// Rows of the target whose partition column is NULL: counted in no
    /// partition's `rows_now`, and never deleted by a replace. None where
    /// the target was not counted (a job without a partition column, a
    /// read of the ledger alone).
    pub null_partition: Option<i64>,
}

/// States alone: their target's rows in no partition not known.
impl From<Vec<PartitionStatus>> for JobStates {
    fn from(statuses: Vec<PartitionStatus>) -> JobStates {
        JobStates {
            statuses,
            null_partition: None,
        }
    }
}

/// A state read that may answer "unchanged".
#[derive(Debug)]
pub enum StatesRead {
    States(JobStates),
    /// Derived from the same inputs as the states this memo last answered
    /// for the job: they are still right.
    Unchanged,
}

/// The inputs of each job's latest derivation, by job name. Cloning shares
/// it.
#[derive(Clone, Default)]
pub struct Derivations {
    inner: Arc<Mutex<HashMap<String, Derivation>>>,
}

/// One derivation's inputs: what the job's own read found, then the
/// upstream ledgers its loaded partitions sent it to.
struct Derivation {
    from: DerivedFrom,
    upstream: Vec<UpstreamRead>,
}

/// What a job's states were derived from, before upstream staleness.
pub(super) struct DerivedFrom {
    pub definition: String,
    /// First and last partition derived, and how many.
    pub partitions: Option<(Partition, Partition, usize)>,
    /// How many of them had ended by the read's `now` (the rest are future).
    pub ended: usize,
    /// The scope's bounds.
    pub bounds: (Option<Partition>, Option<Partition>),
    pub counts: Option<Arc<TargetCounts>>,
    pub ledger: Arc<LedgerSummary>,
    /// Partitions in flight (here or in another session).
    pub running: HashSet<String>,
}

impl DerivedFrom {
    pub fn of(
        job: &Job,
        partitions: &[Partition],
        now: NaiveDateTime,
        bounds: (Option<Partition>, Option<Partition>),
        counts: Option<Arc<TargetCounts>>,
        ledger: Arc<LedgerSummary>,
        running: HashSet<String>,
    ) -> DerivedFrom {
        DerivedFrom {
            definition: job.definition_hash(),
            partitions: partitions
                .first()
                .zip(partitions.last())
                .map(|(a, b)| (*a, *b, partitions.len())),
            // Partitions are in order, so the future ones are a tail.
            ended: partitions.partition_point(|p| !p.is_future(now)),
            bounds,
            counts,
            ledger,
            running,
        }
    }

    fn same_as(&self, other: &DerivedFrom) -> bool {
        let same_counts = match (&self.counts, &other.counts) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        same_counts
            && Arc::ptr_eq(&self.ledger, &other.ledger)
            && self.definition == other.definition
            && self.partitions == other.partitions
            && self.ended == other.ended
            && self.bounds == other.bounds
            && self.running == other.running
    }
}

/// An upstream job's content changes over the range a derivation read.
#[derive(Clone)]
pub(super) struct UpstreamRead {
    pub job: String,
    pub range: (String, String),
    pub changes: Arc<ContentChanges>,
}

impl Derivations {
    /// The upstream reads of `job`'s latest derivation, if it was made
    /// from the same inputs as `from`.
    pub(super) fn upstream_if_same(
        &self,
        job: &str,
        from: &DerivedFrom,
    ) -> Option<Vec<UpstreamRead>> {
        let kept = self.inner.lock().ok()?;
        let d = kept.get(job).filter(|d| d.from.same_as(from))?;
        Some(d.upstream.clone())
    }

    /// Keeps what `job`'s states were just derived from.
    pub(super) fn keep(&self, job: &str, from: DerivedFrom, upstream: Vec<UpstreamRead>) {
        if let Ok(mut kept) = self.inner.lock() {
            kept.insert(job.to_string(), Derivation { from, upstream });
        }
    }

    /// Forgets `job`'s derivation: its next read answers with its states.
    pub fn forget(&self, job: &str) {
        if let Ok(mut kept) = self.inner.lock() {
            kept.remove(job);
        }
    }
}
