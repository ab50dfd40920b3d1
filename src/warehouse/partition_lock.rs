//! The locks a partition's load takes, named the same in every process.

use std::sync::atomic::{AtomicU64, Ordering};

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
    /// What the load's session is called on the server while it holds the
    /// locks (PostgreSQL's `application_name`): the load's own, unlike
    /// the locks, which another session may hold once this one is gone.
    /// Also what an operator sees in `pg_stat_activity`.
    pub session: String,
}

/// The name of a session no other load's session has: this process's id
/// and a count of its loads first (the server keeps 63 bytes of a name),
/// then what it loads. Only characters that need no escaping in a string
/// literal, under any setting of the server's.
fn session_name(job: &str, partition: &str) -> String {
    static LOADS: AtomicU64 = AtomicU64::new(0);
    let n = LOADS.fetch_add(1, Ordering::Relaxed);
    let name = format!("idem#{}.{n} {job} {partition}", std::process::id());
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || " #._:-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(63)
        .collect()
}

/// The name of the lock of one hour of `job`'s target.
fn key(job: &Job, hour: &Partition) -> String {
    format!("{}:{}", job.target, hour.name())
}

impl PartitionLock {
    /// The locks of a load of `partition`, and its session's name.
    pub fn of(job: &Job, partition: &Partition) -> PartitionLock {
        let mut keys = Vec::new();
        let mut hour = Partition::containing(Grain::Hour, partition.start);
        while hour.start < partition.end() {
            keys.push(key(job, &hour));
            hour = hour.next();
        }
        PartitionLock {
            label: format!("{} [{}, {})", job.target, partition.start, partition.end()),
            keys,
            session: session_name(&job.name, &partition.name()),
        }
    }

    /// The key whose holder is taken to be loading the partition, for
    /// showing it as running elsewhere: the first of its keys, which every
    /// load of the window holds. Made alone, without the rest of a lock:
    /// the console asks for every partition of a job at each refresh.
    pub fn probe_key(job: &Job, partition: &Partition) -> String {
        key(job, &Partition::containing(Grain::Hour, partition.start))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_key_is_the_first_key_of_the_partitions_lock() {
        for (grain, name) in [
            ("day", "2026-01-07"),
            ("month", "2026-02"),
            ("hour", "2026-01-07T05"),
        ] {
            let text = format!(
                "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"j\"\ntarget = \"t\"\n\
                 strategy = \"replace_partition\"\npartition_column = \"d\"\ngrain = \"{grain}\"\n\
                 start = \"{name}\"\nsql = \"select d from s where d >= :start and d < :end\"\n"
            );
            let config = crate::config::parse(std::path::Path::new("idem.toml"), &text, &|_| None)
                .expect("config");
            let job = &config.jobs[0];
            let partition = job.start;
            let lock = PartitionLock::of(job, &partition);
            assert_eq!(
                PartitionLock::probe_key(job, &partition),
                lock.keys[0],
                "{grain}"
            );
        }
    }

    #[test]
    fn each_load_has_a_session_name_of_its_own_that_needs_no_quoting() {
        let (a, b) = (
            session_name("fct", "2026-01-01"),
            session_name("fct", "2026-01-01"),
        );
        assert_ne!(a, b);
        assert!(
            a.starts_with(&format!("idem#{}.", std::process::id())),
            "{a}"
        );
        assert!(a.ends_with(" fct 2026-01-01"), "{a}");
        let odd = session_name(&format!("o'k\\{}", "j".repeat(80)), "2026-01-01T05");
        assert!(odd.len() <= 63, "{odd}");
        assert!(odd.contains(" o_k_jjj"), "{odd}");
        assert!(!odd.contains(['\'', '\\']), "{odd}");
    }
}
