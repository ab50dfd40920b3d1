//! Events of a run, in the order they happen. Serialised as one JSON object
//! per line by `idem run --json`, for orchestrators, each with the
//! [`SCHEMA_VERSION`] it follows.

use serde::Serialize;

use crate::config::Strategy;
use crate::state::AttemptEnd;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    RunStarted {
        run_id: String,
        job: String,
        strategy: Strategy,
        partitions: Vec<String>,
        concurrency: usize,
        reason: Option<String>,
        /// Its partitions that read, of an upstream job, partitions
        /// neither loaded nor in the run (a cascade's steps included):
        /// they load from what is there, and go stale (upstream) once the
        /// rest loads; as `dry_run`'s. Empty for a job that reads none.
        upstream_not_loaded: Vec<NotLoadedUpstream>,
        /// The upstream jobs whose partitions could not be read (a target
        /// dropped), with why: whether its partitions read them loaded is
        /// not known. As `dry_run`'s.
        upstream_unread: Vec<UpstreamUnread>,
    },
    PartitionStarted {
        run_id: String,
        job: String,
        partition: String,
        attempt: i64,
    },
    PartitionLog {
        run_id: String,
        job: String,
        partition: String,
        line: String,
    },
    PartitionSucceeded {
        run_id: String,
        job: String,
        partition: String,
        attempt: i64,
        rows_deleted: i64,
        rows_inserted: i64,
        rows_updated: i64,
        rows_after: i64,
        duration_ms: u64,
        fingerprint: String,
        content_changed: bool,
    },
    PartitionFailed {
        run_id: String,
        job: String,
        partition: String,
        attempt: i64,
        error: String,
        /// What ended the attempt, as its ledger row says it.
        cause: FailureCause,
        will_retry: bool,
        duration_ms: u64,
    },
    /// A cascade added this downstream partition to its job's step before
    /// the step began, beyond what it planned: a merge before it moved rows
    /// in or out of a window it reads (or a partition added so upstream
    /// of it loads too). The step's `RunStarted` lists it.
    PartitionAdded {
        job: String,
        partition: String,
        because: String,
    },
    /// A cascade left this downstream window out although a merge before it
    /// moved rows in or out of a window it reads: it has not ended yet, and
    /// the run does not allow incomplete windows. It stays due, for a run
    /// once it has ended. Never in its step's `RunStarted`. A step whose
    /// windows are all left so (a job given a step as the run went, as
    /// nothing it reads was planned) starts no run: its `StepSkipped`
    /// ends it.
    PartitionLeft {
        job: String,
        partition: String,
        because: String,
    },
    /// A cascade did not run this downstream partition: an upstream
    /// partition it reads did not load.
    PartitionSkipped {
        job: String,
        partition: String,
        because: String,
    },
    /// A cascade step none of whose partitions ran: each was skipped (its
    /// `PartitionSkipped` says why) or left as not ended (its
    /// `PartitionLeft`). It ends the step, as `RunFinished` ends one that
    /// ran: no run began, so there is no run id.
    StepSkipped {
        job: String,
        partitions: Vec<String>,
        /// The run was cancelled before the step began (otherwise an
        /// upstream partition each reads did not load).
        cancelled: bool,
    },
    /// The warehouse grants the role fewer connections than the run asked
    /// for (asked at connect), or refused a partition's load a connection
    /// (a limit on connections: a role's or database's CONNECTION LIMIT, a
    /// server's max_connections or max_user_connections, a pooler's): from here on
    /// the run has `concurrency` partitions in flight at once, of the
    /// `asked`. A refused partition made no attempt (nothing recorded, no
    /// retry spent): it waits its turn again, its `PartitionStarted` not
    /// sent again (one per attempt). Sent once per lowering.
    ConcurrencyLowered {
        run_id: String,
        job: String,
        concurrency: usize,
        asked: usize,
        /// The server's words.
        because: String,
    },
    RunFinished {
        run_id: String,
        job: String,
        succeeded: usize,
        failed: usize,
        not_started: usize,
        /// Of `not_started`, those in flight when the run was cancelled:
        /// begun, and rolled back.
        rolled_back: usize,
        /// Of `failed`, those the shrink guard refused (they kept their
        /// rows).
        refused: usize,
        /// Of `failed`, those refused because another session held their
        /// lock past `lock_timeout`: they wrote nothing, and a repeat once
        /// that session is done loads them.
        lock_held: usize,
        /// Of `succeeded`, those loaded with no rows: their source had
        /// none in their windows (a late source loads so).
        empty: usize,
        cancelled: bool,
        duration_ms: u64,
    },
}

/// A partition of a run (or of a cascade's step) that reads, of one
/// upstream job, partitions neither loaded nor in the run.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NotLoadedUpstream {
    pub partition: String,
    pub upstream: String,
    /// The upstream job's partitions under it.
    pub upstream_partitions: usize,
    /// Of those, the ones neither loaded nor in the run.
    pub not_loaded: Vec<NotLoaded>,
}

/// An upstream job of a run's job (or of a cascade's step) whose
/// partitions could not be read, and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct UpstreamUnread {
    pub upstream: String,
    pub error: String,
}

impl UpstreamUnread {
    /// One line for `job`'s upstream jobs that could not be read: `daily
    /// reads ev, whose partitions could not be read (…): whether what it
    /// reads there is loaded is not known`. None when every one was read.
    pub fn line(job: &str, unread: &[UpstreamUnread]) -> Option<String> {
        let said: Vec<String> = unread
            .iter()
            .map(|u| {
                format!(
                    "{}, whose partitions could not be read ({})",
                    u.upstream, u.error
                )
            })
            .collect();
        (!said.is_empty()).then(|| {
            format!(
                "{job} reads {}: whether what it reads there is loaded is not known",
                said.join("; and ")
            )
        })
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NotLoaded {
    pub partition: String,
    pub state: &'static str,
}

/// What ended a partition's failed attempt. The engine knows it from the
/// error's kind, and records the ledger row's status by it: every surface
/// says what the ledger says.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FailureCause {
    /// The load failed: the warehouse's error, a connection lost, a COMMIT
    /// whose outcome is not known. Recorded failed, where it could be.
    Error,
    /// The shrink guard refused it: its source looks incomplete, and it
    /// kept its rows. Recorded refused.
    ShrinkGuard,
    /// Another session held its lock past `lock_timeout`: it wrote nothing,
    /// and that session's load is the partition's word. Recorded refused.
    LockHeld,
    /// The run was cancelled while it was in flight: it rolled back.
    Cancelled,
}

impl FailureCause {
    /// Refused, as the ledger records it: it wrote nothing, and nothing
    /// was wrong with the job or its data.
    pub fn refused(self) -> bool {
        matches!(self, FailureCause::ShrinkGuard | FailureCause::LockHeld)
    }
}

impl Event {
    /// The job the event is about.
    pub fn job(&self) -> &str {
        match self {
            Event::RunStarted { job, .. }
            | Event::PartitionStarted { job, .. }
            | Event::PartitionLog { job, .. }
            | Event::PartitionSucceeded { job, .. }
            | Event::PartitionFailed { job, .. }
            | Event::PartitionAdded { job, .. }
            | Event::PartitionLeft { job, .. }
            | Event::PartitionSkipped { job, .. }
            | Event::StepSkipped { job, .. }
            | Event::ConcurrencyLowered { job, .. }
            | Event::RunFinished { job, .. } => job,
        }
    }

    /// The partition and how its attempt ended, for the events that end one
    /// for good (a failure that will be retried does not).
    pub fn attempt_end(&self) -> Option<(&str, AttemptEnd)> {
        match self {
            Event::PartitionSucceeded {
                partition,
                rows_after,
                ..
            } => Some((
                partition,
                AttemptEnd::Succeeded {
                    rows_after: *rows_after,
                },
            )),
            Event::PartitionFailed {
                partition,
                cause,
                will_retry: false,
                ..
            } => Some((
                partition,
                match cause {
                    FailureCause::Error => AttemptEnd::Failed,
                    FailureCause::ShrinkGuard => AttemptEnd::Refused,
                    FailureCause::LockHeld => AttemptEnd::LockHeld,
                    FailureCause::Cancelled => AttemptEnd::RolledBack,
                },
            )),
            _ => None,
        }
    }

    /// How a failed attempt ended, in the word that its partition's run
    /// log (`idem log JOB PARTITION --lines`) and the console's log pane
    /// both say: "refused" where the shrink guard refused it, as `idem
    /// status` and the ledger call it (QA: the run log said "attempt 3
    /// failed"), or where another run held its lock (retried or not: the
    /// ledger records each such attempt refused), otherwise "failed".
    pub fn failure_word(&self) -> &'static str {
        match self {
            Event::PartitionFailed { cause, .. } if cause.refused() => "refused",
            _ => "failed",
        }
    }
}

/// What a run says when the warehouse's limit on connections (what it
/// grants the role at connect, or its refusal of one) lowered its
/// partitions in flight.
pub fn concurrency_lowered(concurrency: usize, asked: usize, because: &str) -> String {
    format!(
        "the warehouse limits connections ({because}): {} at once from here on, of --concurrency {asked} asked",
        crate::numbers::n_partitions(concurrency as i64)
    )
}

/// The version of the `--json` event lines. It changes only when a field is
/// removed or changes meaning; new fields and events may appear within one
/// version, so consumers ignore what they do not know.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Versioned<'a> {
    schema_version: u32,
    #[serde(flatten)]
    event: &'a Event,
    /// On `partition_failed`: the shrink guard refused the partition (it
    /// kept its rows): `cause` is `shrink_guard`. Older than `cause`, and
    /// kept for those who read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<bool>,
}

impl Event {
    /// The event as one line of JSON, with its schema version.
    pub fn to_json_line(&self) -> serde_json::Result<String> {
        let refused = match self {
            Event::PartitionFailed { cause, .. } => Some(*cause == FailureCause::ShrinkGuard),
            _ => None,
        };
        serde_json::to_string(&Versioned {
            schema_version: SCHEMA_VERSION,
            event: self,
            refused,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(cause: FailureCause, will_retry: bool) -> Event {
        Event::PartitionFailed {
            run_id: "r".into(),
            job: "j".into(),
            partition: "2026-06-03".into(),
            attempt: 1,
            error: "the error".into(),
            cause,
            will_retry,
            duration_ms: 1,
        }
    }

    fn json(e: &Event) -> serde_json::Value {
        serde_json::from_str(&e.to_json_line().expect("json")).expect("a JSON line")
    }

    /// Each cause ends its attempt as the ledger records it, reads in the
    /// word the run log and the console say, and is named in its JSON
    /// line; `refused` there stays the shrink guard's alone.
    #[test]
    fn a_failure_ends_reads_and_is_written_as_its_cause() {
        use FailureCause::*;
        for (cause, end, word, named) in [
            (Error, AttemptEnd::Failed, "failed", "error"),
            (ShrinkGuard, AttemptEnd::Refused, "refused", "shrink_guard"),
            (LockHeld, AttemptEnd::LockHeld, "refused", "lock_held"),
            (Cancelled, AttemptEnd::RolledBack, "failed", "cancelled"),
        ] {
            let event = failed(cause, false);
            assert_eq!(event.attempt_end(), Some(("2026-06-03", end)), "{cause:?}");
            assert_eq!(event.failure_word(), word, "{cause:?}");
            let line = json(&event);
            assert_eq!(line["event"], "partition_failed");
            assert_eq!(line["cause"], named, "{cause:?}");
            assert_eq!(line["refused"], cause == ShrinkGuard, "{cause:?}");
        }
    }

    /// QA: a partition whose lock another run held past `lock_timeout` is
    /// recorded in the ledger as refused (it wrote nothing), but its run
    /// log and the console's log pane said "failed", and its JSON line said
    /// nothing of it. A retried one is no end yet.
    #[test]
    fn a_lock_held_elsewhere_is_said_refused_as_the_ledger_records_it() {
        let retried = failed(FailureCause::LockHeld, true);
        assert_eq!(retried.failure_word(), "refused");
        assert_eq!(retried.attempt_end(), None);
        assert_eq!(json(&retried)["cause"], "lock_held");
        assert_eq!(json(&retried)["will_retry"], true);
    }
}
