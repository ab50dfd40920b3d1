//! A row of the run pane: one partition of a run, its state and what its
//! attempts did.

use chrono::NaiveDateTime;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPartState {
    Queued,
    Running,
    Retrying,
    Succeeded,
    Failed,
    /// The shrink guard refused it: nothing changed, the data was not at fault.
    Refused,
    /// Refused for a lock another session held: it wrote nothing, and
    /// that session's load is the partition's word.
    LockHeld,
    Cancelled,
    /// The run ended without starting it, not cancelled: stopped by a
    /// failure (the warehouse gone, a merge window failed).
    NotRun,
    /// A cascade left it out: an upstream partition it reads did not load,
    /// or (a window a merge moved rows into) it has not ended.
    Skipped,
}

impl RunPartState {
    /// Ended, or waiting to retry, without loading: failed (or retrying),
    /// refused, cancelled, not run or skipped; what `{` and `}` step
    /// through. Queued and running partitions have yet to end.
    pub fn not_loaded(self) -> bool {
        !matches!(
            self,
            RunPartState::Queued | RunPartState::Running | RunPartState::Succeeded
        )
    }

    pub fn label(self) -> (&'static str, char) {
        match self {
            RunPartState::Queued => ("queued", '·'),
            RunPartState::Running => ("running", '▶'),
            RunPartState::Retrying => ("retrying", '↻'),
            RunPartState::Succeeded => ("done", '✓'),
            RunPartState::Failed => ("failed", '✗'),
            RunPartState::Refused | RunPartState::LockHeld => ("refused", '⊖'),
            RunPartState::Cancelled => ("cancelled", '⊘'),
            RunPartState::NotRun => ("not run", '–'),
            RunPartState::Skipped => ("skipped", '–'),
        }
    }
}

pub struct RunPartition {
    pub name: String,
    pub state: RunPartState,
    pub attempt: i64,
    /// Attempts this run made at it: the ledger's `attempt` counts the
    /// runs before too.
    pub tries: u32,
    pub duration_ms: Option<u64>,
    /// When its attempt in flight began, as the console saw it: a running
    /// partition shows how long it has been at it (a load waiting on a
    /// lock or on a server that does not answer is not a frozen row).
    pub running_since: Option<NaiveDateTime>,
    pub rows_deleted: i64,
    pub rows_inserted: i64,
    pub rows_updated: i64,
    pub content_changed: Option<bool>,
    pub error: Option<String>,
    /// Empty before the run, as its job's states said when it started.
    pub was_empty: bool,
    /// Loaded with no rows by this run.
    pub loaded_empty: bool,
    /// It reads upstream partitions neither loaded nor in the run: what
    /// it loads may be short ([`crate::engine::cascade::partly_read_line`]).
    pub partly_read: Option<String>,
    /// Why its log on disk is not whole (`idem log` says the same), by
    /// the mark its attempt left beside it.
    pub log_unwritten: Option<String>,
}

impl RunPartition {
    pub(super) fn queued(name: String) -> RunPartition {
        RunPartition {
            name,
            state: RunPartState::Queued,
            attempt: 0,
            tries: 0,
            duration_ms: None,
            running_since: None,
            rows_deleted: 0,
            rows_inserted: 0,
            rows_updated: 0,
            content_changed: None,
            error: None,
            was_empty: false,
            loaded_empty: false,
            partly_read: None,
            log_unwritten: None,
        }
    }
}
