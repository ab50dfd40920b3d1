//! The locks a partition's load takes, named the same in every process.

use crate::config::Job;
use crate::partition::{Grain, Partition};

/// The locks a partition's load holds: one per hour of its window on its
/// target table. Two loads whose windows overlap on one table share an hour,
/// whatever their jobs and grains (an hourly and a daily job writing the same
/// table), so they exclude each other; loads of disjoint windows never do.
/// Hours are the finest grain, so every overlap shares at least one.
pub(crate) struct PartitionLock {
    /// What the log calls it: `target [start, end)`.
    pub label: String,
    /// Lock names, oldest hour first: every process takes them in the same
    /// order, so two overlapping loads cannot deadlock.
    pub keys: Vec<String>,
}

impl PartitionLock {
    pub fn of(job: &Job, partition: &Partition) -> PartitionLock {
        let mut keys = Vec::new();
        let mut hour = Partition::containing(Grain::Hour, partition.start);
        while hour.start < partition.end() {
            keys.push(format!("{}:{}", job.target, hour.name()));
            hour = hour.next();
        }
        PartitionLock {
            label: format!("{} [{}, {})", job.target, partition.start, partition.end()),
            keys,
        }
    }

    /// The key whose holder is taken to be loading the partition, for
    /// showing it as running elsewhere: every load of the window holds it.
    pub fn probe(&self) -> &str {
        self.keys.first().map_or("", String::as_str)
    }
}

/// A 64-bit lock key for a partition's lock name, the same in every process.
pub(crate) fn lock_key_i64(key: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_le_bytes(first)
}
