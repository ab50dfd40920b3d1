//! How a run ended: its partitions counted by result, and the words for
//! those that stopped short.

use crate::exit::Exit;
use crate::partition::Partition;

/// How a run ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunSummary {
    pub run_id: String,
    pub succeeded: usize,
    /// Of the succeeded, those loaded with no rows, oldest first: their
    /// source had none in their windows, as a late one has none yet.
    pub empty: Vec<Partition>,
    pub failed: usize,
    /// Of the failed, those the shrink guard refused (they kept their rows).
    pub refused: usize,
    /// Of the failed, those refused because another session held their
    /// lock past `lock_timeout`: they wrote nothing, and a repeat once that
    /// session is done loads them.
    pub lock_held: usize,
    /// Partitions that committed nothing because the run stopped: never
    /// started (after cancellation, after a merge window failed, or once
    /// the warehouse stopped answering), or in flight when the run was
    /// cancelled and rolled back.
    pub not_started: usize,
    /// Of the not started, those that had begun and rolled back when the
    /// run was cancelled.
    pub rolled_back: usize,
    pub cancelled: bool,
    /// Every partition that did not succeed (failed, refused, rolled back
    /// or never started), oldest first: what a repeat of the run must cover.
    pub unfinished: Vec<Partition>,
    /// Of the unfinished, those the shrink guard refused, oldest first: a
    /// repeat refuses them again unless the source is fixed or the run
    /// allows the shrink.
    pub refused_partitions: Vec<Partition>,
    /// Of the failed, those whose error is not of the passing kind (a
    /// deadlock, a lock wait, a connection lost): the job's SQL, its data or
    /// the schema, which fail a plain repeat alike until fixed.
    pub lasting: usize,
    /// Failures the ledger could not record (the warehouse was gone), or
    /// recorded as refused (those of [`RunSummary::lock_held`]), so `--only
    /// failed` would not select them.
    pub unrecorded: usize,
    /// Why the run stopped starting partitions early: the warehouse could
    /// not be reached.
    pub unreachable: Option<String>,
    /// Why the run stopped starting partitions early: the job does not
    /// fit its warehouse as written (a source or column not there, SQL the
    /// server rejects), so every partition would fail alike.
    pub misfit: Option<String>,
    /// Why the run stopped starting partitions early: the warehouse
    /// refused every connection a load asked for (a limit on connections
    /// other sessions had taken) while none of the run's had one.
    pub connections_refused: Option<String>,
    /// The windows besides its own whose rows a merge of this run changed
    /// (moved in or out by the partition column), each with the window
    /// whose merge did, oldest first: what reads them goes stale too.
    pub moved: Vec<(Partition, Partition)>,
}

impl RunSummary {
    /// Counts one partition's result; a partition that did not succeed is
    /// also kept in [`RunSummary::unfinished`] (sorted once the run ends).
    pub(super) fn count(&mut self, partition: Partition, result: PartitionResult) {
        match result {
            PartitionResult::Succeeded { empty, moved } => {
                self.succeeded += 1;
                if empty {
                    self.empty.push(partition);
                }
                self.moved.extend(moved.into_iter().map(|w| (w, partition)));
                return;
            }
            PartitionResult::Failed { recorded, lasting } => {
                self.failed += 1;
                self.unrecorded += usize::from(!recorded);
                self.lasting += usize::from(lasting);
            }
            PartitionResult::Refused => {
                self.failed += 1;
                self.refused += 1;
                self.refused_partitions.push(partition);
            }
            PartitionResult::LockHeld => {
                self.failed += 1;
                self.lock_held += 1;
                self.unrecorded += 1;
            }
            PartitionResult::RolledBack => {
                self.not_started += 1;
                self.rolled_back += 1;
            }
            PartitionResult::NotStarted => self.not_started += 1,
        }
        self.unfinished.push(partition);
    }

    /// Whether the run ended cancelled, a cancel having been `requested`:
    /// only if it stopped something short. One that came once every
    /// partition had ended (a signal in the run's last instant) stopped
    /// nothing, and the run ends as its partitions did.
    pub(super) fn ended_cancelled(&self, requested: bool) -> bool {
        requested && !self.unfinished.is_empty()
    }

    /// The summary line's words for the partitions that stopped short
    /// (", 1 rolled back, 20 not started"), or nothing.
    pub fn stopped_short(&self) -> String {
        stopped_short(self.not_started, self.rolled_back, ", ")
    }

    /// Whether every partition a repeat would cover failed for a lasting
    /// cause (see [`RunSummary::lasting`]), or was left unstarted because
    /// of one (a merge stops at its first failed window): a repeat as
    /// things stand fails them again, so it is advised for after the fix,
    /// not to finish.
    pub fn repeat_fails_alike(&self) -> bool {
        self.misfit.is_some()
            || (self.lasting > 0
                && !self.cancelled
                && self.unreachable.is_none()
                && self.connections_refused.is_none()
                && self.lasting + self.refused == self.failed)
    }

    /// Whether every partition a repeat would cover was refused for a lock
    /// held elsewhere (see [`RunSummary::lock_held`]): a repeat once it is
    /// free loads them.
    pub fn only_locks_held(&self) -> bool {
        self.lock_held > 0
            && !self.cancelled
            && self.not_started == 0
            && self.lock_held + self.refused == self.failed
    }

    /// How the process ends after this run.
    pub fn exit_code(&self) -> Exit {
        if self.cancelled {
            Exit::Cancelled
        } else if self.failed > 0 || self.not_started > 0 {
            Exit::Failed
        } else {
            Exit::Ok
        }
    }
}

/// How a run's partitions that committed nothing read, each part after
/// `sep`: those rolled back in flight, then those never started (of
/// `not_started`, which counts both).
pub fn stopped_short(not_started: usize, rolled_back: usize, sep: &str) -> String {
    let mut words = String::new();
    if rolled_back > 0 {
        words.push_str(&format!("{sep}{rolled_back} rolled back"));
    }
    let never = not_started.saturating_sub(rolled_back);
    if never > 0 {
        words.push_str(&format!("{sep}{never} not started"));
    }
    words
}

/// How a run's refused partitions read, each kind after `sep`: those the
/// shrink guard refused, then those refused for a lock another session
/// held (", 1 refused by the shrink guard, 2 refused for a lock held
/// elsewhere"), or nothing.
pub fn refusals_counted(shrink_guard: usize, lock_held: usize, sep: &str) -> String {
    let mut words = String::new();
    if shrink_guard > 0 {
        words.push_str(&format!("{sep}{shrink_guard} refused by the shrink guard"));
    }
    if lock_held > 0 {
        words.push_str(&format!(
            "{sep}{lock_held} refused for a lock held elsewhere"
        ));
    }
    words
}

pub(super) enum PartitionResult {
    Succeeded {
        /// Loaded with no rows.
        empty: bool,
        /// The other windows a merge moved rows in or out of.
        moved: Vec<Partition>,
    },
    Failed {
        /// Recorded in the ledger as failed: a state `--only failed` picks.
        recorded: bool,
        /// Its error is not of the passing kind: a repeat fails alike.
        lasting: bool,
    },
    /// Refused by the shrink guard: it kept its rows.
    Refused,
    /// Refused for a lock another session held: recorded as refused, it
    /// changes no state.
    LockHeld,
    /// In flight when the run was cancelled: its transaction rolled back.
    RolledBack,
    NotStarted,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> Partition {
        let name = format!("2026-01-{d:02}");
        Partition::parse(
            crate::partition::Grain::Day,
            &name,
            crate::partition::RangeEnd::From,
        )
        .expect("day")
    }

    #[test]
    fn a_cancel_that_stopped_nothing_does_not_end_the_run_cancelled() {
        let mut summary = RunSummary::default();
        summary.count(
            day(1),
            PartitionResult::Succeeded {
                empty: false,
                moved: Vec::new(),
            },
        );
        summary.count(
            day(2),
            PartitionResult::Succeeded {
                empty: true,
                moved: Vec::new(),
            },
        );
        assert!(!summary.ended_cancelled(true));
        assert!(!summary.ended_cancelled(false));
        summary.count(day(3), PartitionResult::RolledBack);
        assert!(summary.ended_cancelled(true));
        assert!(!summary.ended_cancelled(false));
        let mut never_begun = RunSummary::default();
        never_begun.count(day(1), PartitionResult::NotStarted);
        assert!(never_begun.ended_cancelled(true));
    }

    /// A run whose only undone partitions another session held is told to
    /// wait for that session, not to finish: one failed for another cause,
    /// or left unstarted, is not so.
    #[test]
    fn only_partitions_another_session_held_wait_for_it() {
        let mut summary = RunSummary::default();
        summary.count(day(1), PartitionResult::LockHeld);
        summary.count(day(2), PartitionResult::Refused);
        assert!(summary.only_locks_held());
        assert_eq!(
            (summary.failed, summary.lock_held, summary.unrecorded),
            (2, 1, 1)
        );
        let mut not_started = summary.clone();
        not_started.count(day(3), PartitionResult::NotStarted);
        assert!(!not_started.only_locks_held());
        summary.count(
            day(3),
            PartitionResult::Failed {
                recorded: true,
                lasting: false,
            },
        );
        assert!(!summary.only_locks_held());
        assert!(!RunSummary::default().only_locks_held());
    }

    /// The summary a run keeps grows with the partitions that did not
    /// succeed, never with those that did.
    #[test]
    fn a_summary_keeps_no_entry_per_succeeded_partition() {
        let day = |d: i64| {
            let start = chrono::NaiveDate::from_ymd_opt(2016, 1, 1)
                .and_then(|s| s.and_hms_opt(0, 0, 0))
                .map(|s| s + chrono::Duration::days(d));
            Partition::containing(crate::partition::Grain::Day, start.unwrap_or_default())
        };
        let mut summary = RunSummary::default();
        for d in (0..3650).rev() {
            let result = match d {
                7 => PartitionResult::Failed {
                    recorded: true,
                    lasting: true,
                },
                3 => PartitionResult::Refused,
                1 => PartitionResult::NotStarted,
                _ => PartitionResult::Succeeded {
                    empty: false,
                    moved: Vec::new(),
                },
            };
            summary.count(day(d), result);
        }
        assert_eq!(
            (summary.succeeded, summary.failed, summary.refused),
            (3647, 2, 1)
        );
        assert_eq!(summary.not_started, 1);
        assert_eq!(summary.lasting, 1);
        assert_eq!(summary.unfinished, vec![day(7), day(3), day(1)]);
        assert!(summary.unfinished.capacity() < 16, "one slot per partition");
    }
}
