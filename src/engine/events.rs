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
        /// Of `succeeded`, those loaded with no rows: their source had
        /// none in their windows (a late source loads so).
        empty: usize,
        cancelled: bool,
        duration_ms: u64,
    },
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
                error,
                will_retry: false,
                ..
            } => Some((
                partition,
                if error.starts_with(CANCELLED) {
                    AttemptEnd::RolledBack
                } else if error.starts_with(REFUSED) {
                    AttemptEnd::Refused
                } else {
                    AttemptEnd::Failed
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
            Event::PartitionFailed { error, .. } if error.starts_with(LOCK_REFUSED) => "refused",
            _ => match self.attempt_end() {
                Some((_, AttemptEnd::Refused)) => "refused",
                _ => "failed",
            },
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

/// How the error of a cancelled attempt begins.
pub(crate) const CANCELLED: &str = "cancelled";

/// How the error of an attempt the shrink guard refused begins
/// ([`crate::warehouse::WarehouseError::SourceShrank`]).
const REFUSED: &str = crate::warehouse::ledger::SHRINK_REFUSAL;

/// How the error of an attempt refused for a lock another run held begins.
const LOCK_REFUSED: &str = crate::warehouse::ledger::LOCK_REFUSAL;

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
    /// kept its rows), read from its error as the ledger reads it.
    #[serde(skip_serializing_if = "Option::is_none")]
    refused: Option<bool>,
}

impl Event {
    /// The event as one line of JSON, with its schema version.
    pub fn to_json_line(&self) -> serde_json::Result<String> {
        let refused = match self {
            Event::PartitionFailed { error, .. } => Some(error.starts_with(REFUSED)),
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
    use crate::warehouse::WarehouseError;

    #[test]
    fn a_refusal_of_the_shrink_guard_ends_as_refused() {
        let error = WarehouseError::SourceShrank {
            partition: "2026-06-03".into(),
            before: 1000,
            after: 10,
            floor: 0.5,
        }
        .to_string();
        let failed = |error: String| Event::PartitionFailed {
            run_id: "r".into(),
            job: "j".into(),
            partition: "2026-06-03".into(),
            attempt: 1,
            error,
            will_retry: false,
            duration_ms: 1,
        };
        assert_eq!(
            failed(error).attempt_end(),
            Some(("2026-06-03", AttemptEnd::Refused))
        );
        assert_eq!(
            failed("CHECK constraint failed".into()).attempt_end(),
            Some(("2026-06-03", AttemptEnd::Failed))
        );
    }

    /// QA: a partition whose lock another run held past `lock_timeout` is
    /// recorded in the ledger as refused (it wrote nothing), but its run
    /// log and the console's log pane said "failed". Its JSON line stays
    /// `refused: false`: that field is the shrink guard's.
    #[test]
    fn a_lock_held_elsewhere_is_said_refused_as_the_ledger_records_it() {
        let error = WarehouseError::LockTimeout {
            partition: "2026-06-03".into(),
            holder: Some("held by connection 63".into()),
        }
        .to_string();
        for will_retry in [false, true] {
            let failed = Event::PartitionFailed {
                run_id: "r".into(),
                job: "j".into(),
                partition: "2026-06-03".into(),
                attempt: 1,
                error: error.clone(),
                will_retry,
                duration_ms: 1,
            };
            assert_eq!(failed.failure_word(), "refused", "will retry: {will_retry}");
            let json: serde_json::Value =
                serde_json::from_str(&failed.to_json_line().expect("json")).expect("a JSON line");
            assert_eq!(json["refused"], false);
        }
        let check = Event::PartitionFailed {
            run_id: "r".into(),
            job: "j".into(),
            partition: "2026-06-03".into(),
            attempt: 1,
            error: "CHECK constraint failed".into(),
            will_retry: false,
            duration_ms: 1,
        };
        assert_eq!(check.failure_word(), "failed");
    }

    #[test]
    fn a_refused_partition_says_so_in_its_json_line() {
        let failed = |error: &str| Event::PartitionFailed {
            run_id: "r".into(),
            job: "j".into(),
            partition: "2026-06-03".into(),
            attempt: 1,
            error: error.into(),
            will_retry: false,
            duration_ms: 1,
        };
        let json = |e: Event| -> serde_json::Value {
            serde_json::from_str(&e.to_json_line().expect("json")).expect("a JSON line")
        };
        let refused = json(failed(&format!("{REFUSED}: 10 rows, was 1000")));
        assert_eq!(refused["refused"], true);
        assert_eq!(refused["event"], "partition_failed");
        assert_eq!(json(failed("CHECK constraint failed"))["refused"], false);
    }
}
