//! The locks a partition's load takes, named the same in every process.
//!
//! Two loads whose windows overlap on one table must exclude each other,
//! whatever their jobs and grains (an hourly and a daily job writing the
//! same table); loads of disjoint windows never do. Windows are whole
//! hours, days or months, so they nest.
//!
//! PostgreSQL's advisory locks have a shared mode, so a load there takes
//! its window's own unit exclusively and the units holding it shared,
//! coarsest first ([`PartitionLock::tiers`]): at most three locks. (One per
//! hour, 744 for a month, filled the server's shared lock table at a
//! concurrency of 8 or so, and then any session on the server that needed
//! a lock failed with "out of shared memory".) MariaDB's named locks are
//! exclusive only: a load takes one per hour of its window
//! ([`PartitionLock::keys`]), kept in a table of the server's memory that
//! has no such bound.

use std::sync::atomic::{AtomicU64, Ordering};

use super::ColumnKind;
use crate::config::{Job, Strategy, TableNames};
use crate::partition::{Grain, Partition};

/// The locks of a partition's load on its target table.
pub struct PartitionLock {
    /// What the log calls it: `target [start, end)`, in UTC on a zoned
    /// column.
    pub label: String,
    /// One exclusive lock per hour of the window, oldest first (MariaDB):
    /// every process takes them in the same order, so two overlapping
    /// loads cannot deadlock, and hours are the finest grain, so every
    /// overlap shares at least one.
    pub keys: Vec<String>,
    /// The month, day and hour holding the window, coarsest first, down to
    /// its own grain (PostgreSQL): the last exclusive, the others shared.
    /// Two windows overlap only if one holds the other, and then the
    /// smaller one's tiers include the larger one's unit: exclusive against
    /// shared, they exclude each other; disjoint windows share at most
    /// shared locks. Taken coarsest first by every process: no deadlock.
    pub tiers: Vec<Tier>,
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

/// One lock of [`PartitionLock::tiers`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tier {
    pub key: String,
    pub exclusive: bool,
}

/// The name of the lock of one hour, day or month of `job`'s target (the
/// unit's partition name tells the three apart), the same for every
/// spelling of the target that names the same table where table `names`
/// compare as they do (`Orders` and `orders` on a server folding names).
fn key(job: &Job, unit: &Partition, names: TableNames) -> String {
    format!("{}:{}", table_key(job, names), unit.name())
}

/// The name of the lock every merge into `job`'s target takes.
fn merges_key(job: &Job, names: TableNames) -> String {
    format!("{}:merges", table_key(job, names))
}

fn table_key(job: &Job, names: TableNames) -> String {
    names.key(&job.target.to_string())
}

/// The units holding `partition`'s window, coarsest first, down to its own.
fn units(partition: &Partition) -> Vec<Partition> {
    [Grain::Month, Grain::Day, Grain::Hour]
        .into_iter()
        .map(|g| Partition::containing(g, partition.start))
        .take_while(|unit| unit.grain != partition.grain)
        .chain([*partition])
        .collect()
}

impl PartitionLock {
    /// The locks of a load of `partition`, and its session's name, on a
    /// warehouse whose table `names` compare as they do; its label writes
    /// the window as the load's other lines do on a partition column of
    /// `kind` (QA: `lock on t [2026-11-02 10:00:00, …)` on a zoned column,
    /// beside a DELETE in the same window's UTC bounds).
    pub fn of(
        job: &Job,
        partition: &Partition,
        kind: ColumnKind,
        names: TableNames,
    ) -> PartitionLock {
        let mut keys = Vec::new();
        let mut hour = Partition::containing(Grain::Hour, partition.start);
        while hour.start < partition.end() {
            keys.push(key(job, &hour, names));
            hour = hour.next();
        }
        let units = units(partition);
        let mut tiers: Vec<Tier> = units
            .iter()
            .enumerate()
            .map(|(i, unit)| Tier {
                key: key(job, unit, names),
                exclusive: i + 1 == units.len(),
            })
            .collect();
        let mut label = format!("{} {}", job.target, kind.bounds(partition));
        // A merge writes wherever its window's keys are, not in its window:
        // two merges into one table, of any windows, exclude each other
        // (taken first by every load that takes it: no order to deadlock
        // on). A replace into a table a merge job also writes excludes
        // the merges too, whose rows may be in its window: it takes the
        // key shared where the engine can (replaces of disjoint windows
        // still run at once), exclusively where it cannot (MariaDB).
        let merges_too = match (job.strategy, job.merged_alongside(names)) {
            (Strategy::MergeKey, _) => Some(format!("every merge into {}", job.target)),
            (Strategy::ReplacePartition, Some(merge)) => {
                Some(format!("the merges of job {merge} into {}", job.target))
            }
            (Strategy::ReplacePartition, None) => None,
        };
        if let Some(which) = merges_too {
            let merges = merges_key(job, names);
            keys.insert(0, merges.clone());
            tiers.insert(
                0,
                Tier {
                    key: merges,
                    exclusive: job.strategy == Strategy::MergeKey,
                },
            );
            label = format!("{label} and {which}");
        }
        PartitionLock {
            label,
            keys,
            tiers,
            session: session_name(&job.name, &partition.name()),
        }
    }

    /// The key whose holder is taken to be loading the partition, for
    /// showing it as running elsewhere (MariaDB): the key of the window's
    /// first hour, which every load of the window holds (the first of its
    /// keys, but for a merge's, or a replace's into a merged table, which
    /// take the table's merge lock first). Made alone, without the rest
    /// of a lock: the console asks for every partition of a job at each
    /// refresh.
    pub fn probe_key(job: &Job, partition: &Partition, names: TableNames) -> String {
        key(
            job,
            &Partition::containing(Grain::Hour, partition.start),
            names,
        )
    }

    /// What shows the partition being loaded elsewhere (PostgreSQL): its
    /// own unit's key held in any mode (a load of it, or shared by a load
    /// of a part of it), or a unit holding it held exclusively (a load of
    /// a larger window).
    pub fn probe_tiers(
        job: &Job,
        partition: &Partition,
        names: TableNames,
    ) -> (String, Vec<String>) {
        let mut keys: Vec<String> = units(partition)
            .iter()
            .map(|u| key(job, u, names))
            .collect();
        let own = keys.pop().unwrap_or_default();
        (own, keys)
    }

    /// The key of the lock this load alone holds: its exclusive tier.
    pub fn own_key(&self) -> &str {
        self.tiers.last().map_or("", |t| t.key.as_str())
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

    fn job_of_grain(grain: &str, start: &str) -> crate::config::Job {
        let text = format!(
            "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"j\"\ntarget = \"t\"\n\
             strategy = \"replace_partition\"\npartition_column = \"d\"\ngrain = \"{grain}\"\n\
             start = \"{start}\"\nsql = \"select d from s where d >= :start and d < :end\"\n"
        );
        crate::config::parse(std::path::Path::new("idem.toml"), &text, &|_| None)
            .expect("config")
            .jobs
            .remove(0)
    }

    /// PostgreSQL's tiers: two loads exclude each other exactly when their
    /// windows overlap (some key both take, one of them exclusively).
    #[test]
    fn tiers_exclude_overlapping_windows_only_and_stay_few() {
        let windows = [
            ("month", "2026-01"),
            ("month", "2026-02"),
            ("day", "2026-01-07"),
            ("day", "2026-01-08"),
            ("day", "2026-02-07"),
            ("hour", "2026-01-07T05"),
            ("hour", "2026-01-07T06"),
            ("hour", "2026-01-08T05"),
        ];
        let locks: Vec<(Partition, PartitionLock)> = windows
            .iter()
            .map(|(grain, name)| {
                let job = job_of_grain(grain, name);
                (
                    job.start,
                    PartitionLock::of(&job, &job.start, ColumnKind::Date, TableNames::ByCase),
                )
            })
            .collect();
        for (p, lock) in &locks {
            assert!(lock.tiers.len() <= 3, "{p:?}");
            assert_eq!(lock.tiers.iter().filter(|t| t.exclusive).count(), 1);
            assert!(lock.tiers.last().unwrap().exclusive);
        }
        for (a, la) in &locks {
            for (b, lb) in &locks {
                if std::ptr::eq(la, lb) {
                    continue;
                }
                let overlap = a.start < b.end() && b.start < a.end();
                let conflict = la.tiers.iter().any(|x| {
                    lb.tiers
                        .iter()
                        .any(|y| x.key == y.key && (x.exclusive || y.exclusive))
                });
                assert_eq!(conflict, overlap, "{} and {}", a.name(), b.name());
            }
        }
        let (own, covering) = PartitionLock::probe_tiers(
            &job_of_grain("hour", "2026-01-07T05"),
            &locks[5].0,
            TableNames::ByCase,
        );
        assert_eq!(own, "t:2026-01-07T05");
        assert_eq!(covering, ["t:2026-01", "t:2026-01-07"]);
    }

    /// Two merges into one table exclude each other whatever their
    /// windows (a key of both may be in either), on both engines' locks; a
    /// merge and a replace still only where their windows overlap.
    #[test]
    fn merges_into_one_table_exclude_each_other_whatever_their_windows() {
        let merge = |start: &str| {
            let text = format!(
                "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"m\"\ntarget = \"t\"\n\
                 strategy = \"merge_key\"\nunique_key = [\"k\"]\ngrain = \"day\"\n\
                 start = \"{start}\"\nsql = \"select k from s where d >= :start and d < :end\"\n"
            );
            let job = crate::config::parse(std::path::Path::new("idem.toml"), &text, &|_| None)
                .expect("config")
                .jobs
                .remove(0);
            PartitionLock::of(&job, &job.start, ColumnKind::Date, TableNames::ByCase)
        };
        let conflict = |a: &PartitionLock, b: &PartitionLock| {
            let tiers = a.tiers.iter().any(|x| {
                b.tiers
                    .iter()
                    .any(|y| x.key == y.key && (x.exclusive || y.exclusive))
            });
            let keys = a.keys.iter().any(|k| b.keys.contains(k));
            assert_eq!(tiers, keys, "{} and {}", a.label, b.label);
            tiers
        };
        let (jan, feb) = (merge("2026-01-07"), merge("2026-02-07"));
        assert!(conflict(&jan, &feb));
        assert!(
            jan.label.ends_with("and every merge into t"),
            "{}",
            jan.label
        );
        let replace = job_of_grain("day", "2026-02-07");
        let replace_feb = PartitionLock::of(
            &replace,
            &replace.start,
            ColumnKind::Date,
            TableNames::ByCase,
        );
        assert!(!conflict(&jan, &replace_feb));
        assert!(conflict(&feb, &replace_feb));
        assert_eq!(jan.own_key(), "t:2026-01-07");
    }

    /// A config at `url` of a replace job `r` into `replace_target` and a
    /// merge job `m` into `merge_target`, both daily.
    fn replace_and_merge(
        url: &str,
        replace_target: &str,
        merge_target: &str,
    ) -> crate::config::Config {
        let text = format!(
            "[warehouse]\nurl = \"{url}\"\n\n[[jobs]]\nname = \"r\"\ntarget = \"{replace_target}\"\n\
             strategy = \"replace_partition\"\npartition_column = \"d\"\ngrain = \"day\"\n\
             start = \"2026-01-01\"\nsql = \"select d from s where d >= :start and d < :end\"\n\n\
             [[jobs]]\nname = \"m\"\ntarget = \"{merge_target}\"\nstrategy = \"merge_key\"\nunique_key = [\"k\"]\n\
             grain = \"day\"\nstart = \"2026-01-01\"\nsql = \"select k from s where d >= :start and d < :end\"\n"
        );
        crate::config::parse(std::path::Path::new("idem.toml"), &text, &|_| None).expect("config")
    }

    /// A replace into a table a merge job of the config also writes
    /// excludes every merge into it, whatever their windows; on PostgreSQL
    /// it still runs beside replaces of other windows (MariaDB's named
    /// locks have no shared mode: there they take turns).
    #[test]
    fn a_replace_into_a_merged_table_excludes_its_merges() {
        let config = replace_and_merge("sqlite://w.db", "t", "t");
        let (replace, merge) = (&config.jobs[0], &config.jobs[1]);
        assert_eq!(replace.merged_alongside(TableNames::ByCase), Some("m"));
        let at = |job: &Job, day: u32| {
            let p = Partition::containing(
                Grain::Day,
                chrono::NaiveDate::from_ymd_opt(2026, 3, day)
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .expect("a date"),
            );
            PartitionLock::of(job, &p, ColumnKind::Date, TableNames::ByCase)
        };
        let tiers_conflict = |a: &PartitionLock, b: &PartitionLock| {
            a.tiers.iter().any(|x| {
                b.tiers
                    .iter()
                    .any(|y| x.key == y.key && (x.exclusive || y.exclusive))
            })
        };
        let keys_conflict =
            |a: &PartitionLock, b: &PartitionLock| a.keys.iter().any(|k| b.keys.contains(k));
        let (r1, r2, m9) = (at(replace, 1), at(replace, 2), at(merge, 9));
        assert!(tiers_conflict(&r1, &m9) && keys_conflict(&r1, &m9));
        assert!(
            !tiers_conflict(&r1, &r2),
            "replaces of two days run at once"
        );
        assert!(keys_conflict(&r1, &r2));
        assert!(
            r1.label.ends_with("and the merges of job m into t"),
            "{}",
            r1.label
        );
        // Without a merge job there, a replace takes no such lock.
        let alone = job_of_grain("day", "2026-03-01");
        assert_eq!(alone.merged_alongside(TableNames::AnyCase), None);
        assert!(!tiers_conflict(&at(&alone, 1), &m9));
    }

    /// Where the warehouse folds table names (MariaDB/MySQL with
    /// `lower_case_table_names` 1 or 2), `Orders` and `orders` are one
    /// table: their loads take the same locks, and a replace into one
    /// excludes the merges into the other. Where it compares them exactly,
    /// nothing changes: two tables, two locks, names as written.
    #[test]
    fn one_table_in_two_cases_is_one_lock_where_the_server_folds_names() {
        let config = replace_and_merge("mysql://u@h/db", "Orders", "orders");
        let (replace, merge) = (&config.jobs[0], &config.jobs[1]);
        let day = replace.start;
        let folded =
            |job: &Job| PartitionLock::of(job, &day, ColumnKind::Date, TableNames::AnyCase);
        let (r, m) = (folded(replace), folded(merge));
        assert_eq!(r.keys, m.keys);
        assert_eq!(r.keys[0], "orders:merges");
        assert_eq!(r.own_key(), "orders:2026-01-01");
        assert!(
            r.label.starts_with("Orders [2026-01-01 00:00:00"),
            "{}",
            r.label
        );
        assert!(r.label.ends_with("and the merges of job m into Orders"));
        assert_eq!(
            PartitionLock::probe_key(replace, &day, TableNames::AnyCase),
            m.keys[1]
        );
        let exact = PartitionLock::of(replace, &day, ColumnKind::Date, TableNames::ByCase);
        assert_eq!(replace.merged_alongside(TableNames::ByCase), None);
        assert_eq!(exact.own_key(), "Orders:2026-01-01");
        assert!(
            exact
                .keys
                .iter()
                .all(|k| k.starts_with("Orders:2026-01-01T"))
        );
    }

    /// QA: a run log said `lock on t [2026-11-02 10:00:00, 2026-11-02
    /// 11:00:00) taken` and then `DELETE 9 rows in [2026-11-02 10:00:00
    /// UTC, …)` of one window on a zoned column. The lock's label writes it
    /// as the DELETE does: in UTC there, as written on other columns.
    #[test]
    fn a_locks_label_writes_its_window_as_the_loads_lines_do() {
        let job = job_of_grain("hour", "2026-11-02T10");
        let label = |kind| PartitionLock::of(&job, &job.start, kind, TableNames::ByCase).label;
        assert_eq!(
            label(ColumnKind::TimestampTz),
            "t [2026-11-02 10:00:00 UTC, 2026-11-02 11:00:00 UTC)"
        );
        assert_eq!(
            label(ColumnKind::Timestamp),
            "t [2026-11-02 10:00:00, 2026-11-02 11:00:00)"
        );
    }

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
            let lock = PartitionLock::of(job, &partition, ColumnKind::Date, TableNames::ByCase);
            assert_eq!(
                PartitionLock::probe_key(job, &partition, TableNames::ByCase),
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
