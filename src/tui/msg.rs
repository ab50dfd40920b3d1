//! What flows in and out of `update`: messages in (keys, mouse, ticks and
//! the background's answers), effects out (work for the event loop).

use std::ops::Deref;
use std::path::PathBuf;

use chrono::NaiveDateTime;
use crossterm::event::{Event as TermEvent, KeyEvent, KeyEventKind, MouseEvent};

use super::theme::Theme;
use crate::config::{DefinitionChange, Job, TableNames};
use crate::engine::{Backfill, Event};
use crate::partition::Partition;
use crate::state::{PartitionStatus, StatesRead};
use crate::warehouse::ledger::Attempt;
use crate::warehouse::sql::Syntax;
use crate::warehouse::{SourceCounts, UncoveredWindow, Verification};

/// A warehouse connection as the console shows and uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    /// The URL without its password.
    pub url: String,
    /// How the server reads SQL text: a job's lint is read that way.
    pub syntax: Syntax,
    /// How the server compares table names: lineage and lint compare them
    /// that way.
    pub table_names: TableNames,
    /// The partitions at once the warehouse grants a run (its role's limit
    /// on connections), and why; none where it sets no lower limit.
    pub granted: Option<(usize, String)>,
}

/// Why a job's states could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    pub why: String,
    /// The warehouse itself could not be read (no connection, the SQLite
    /// file held by another program), not only this job's tables: the
    /// title bar says so for every job.
    pub whole_warehouse: bool,
}

impl Unread {
    /// This job's trouble: its target or ledger, its SQL, its config.
    pub fn of_job(why: impl Into<String>) -> Self {
        Unread {
            why: why.into(),
            whole_warehouse: false,
        }
    }

    /// The warehouse's trouble, which every job meets alike.
    pub fn of_warehouse(why: impl Into<String>) -> Self {
        Unread {
            why: why.into(),
            whole_warehouse: true,
        }
    }
}

impl From<&crate::warehouse::WarehouseError> for Unread {
    fn from(e: &crate::warehouse::WarehouseError) -> Self {
        Unread {
            why: e.to_string(),
            whole_warehouse: e.is_whole_warehouse(),
        }
    }
}

/// Everything that can happen to the console.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    /// Text pasted into the terminal (bracketed paste), whole.
    Paste(String),
    Mouse(MouseEvent),
    Resize(u16, u16),
    Tick(NaiveDateTime),
    /// The screen was drawn as it stands.
    Drawn,
    /// The process is asked to stop (SIGTERM, the terminal went away):
    /// cancel what runs and quit without asking.
    Terminate,
    /// The warehouse connection is up, or could not be made.
    Connected(Result<Connection, String>),
    Status {
        job: String,
        result: Result<StatesRead, Unread>,
    },
    /// The states of the partitions on screen, read ahead of the job's
    /// full read (which follows as [`Msg::Status`]).
    EarlyStatus {
        job: String,
        statuses: Vec<PartitionStatus>,
    },
    /// A job's state read outlasted [`crate::state::SLOW_READ`]: what it
    /// may be waiting on.
    SlowRead {
        job: String,
        note: String,
    },
    Engine {
        run: usize,
        event: Event,
    },
    /// Run `run`'s log could not be kept on disk (`idem log --lines`
    /// will not have it), and why; said once a run.
    RunLogNotKept {
        run: usize,
        why: String,
    },
    /// An attempt of run `run` at `partition` ended, and its log on disk
    /// is not whole: why, as the mark beside it says.
    PartitionLogUnwritten {
        run: usize,
        partition: String,
        why: String,
    },
    RunRejected {
        run: usize,
        error: String,
    },
    /// A verification the console asked for ended.
    Verified {
        id: usize,
        result: Result<Verification, String>,
    },
    /// The diff from the definition a partition was loaded under to the
    /// job's current one; `None` when the ledger does not hold the old one.
    DefinitionDiff {
        id: usize,
        result: Result<Option<DefinitionChange>, String>,
    },
    /// The windows of a [`CoverRequest`] that no native partition of the
    /// job's target covers (none where that cannot be read).
    Covered {
        id: usize,
        windows: Vec<UncoveredWindow>,
    },
    /// A reconciliation the console asked for counted the source.
    Reconciled {
        id: usize,
        result: Result<SourceCounts, String>,
    },
    /// The ledger's attempts of the partition a [`LoadsRequest`] named.
    Loads {
        id: usize,
        result: Result<Vec<Attempt>, String>,
    },
    /// The config's jobs renamed with no load of their own, as the ledger
    /// holds their targets' loads ([`Effect::ReadHistoryElsewhere`]).
    Renamed(Vec<crate::warehouse::Renamed>),
    /// The loads the ledger holds under the config's jobs' names into
    /// other tables than their targets now ([`Effect::ReadHistoryElsewhere`]).
    LoadsElsewhere(Vec<crate::warehouse::LoadsElsewhere>),
    /// A theme file `:theme` asked for was read.
    ThemeLoaded(Result<Theme, String>),
    /// The config file, read again (a refresh's read, the run dialog's):
    /// what it says now. `id` is its [`Effect::ReadConfig`]'s: reads run
    /// side by side, and one that lands after a newer one is dropped.
    ConfigRead {
        id: usize,
        read: Result<crate::config::Config, String>,
    },
    /// A job's lint on the connected warehouse, as `idem lint` says it, for
    /// the job as read then (a reload since makes it stale).
    Linted {
        job: Box<crate::config::Job>,
        notes: Vec<crate::tui::job::LintNote>,
    },
}

impl Msg {
    /// The message for a terminal event, if it means anything to the console.
    pub fn from_terminal(event: TermEvent) -> Option<Msg> {
        match event {
            TermEvent::Key(k) if k.kind != KeyEventKind::Release => Some(Msg::Key(k)),
            TermEvent::Mouse(m) => Some(Msg::Mouse(m)),
            TermEvent::Resize(w, h) => Some(Msg::Resize(w, h)),
            TermEvent::Paste(text) => Some(Msg::Paste(text)),
            _ => None,
        }
    }
}

/// A run the operator confirmed, planned by the engine from the states the
/// console holds: the event loop runs exactly this backfill.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The console's number for the run.
    pub run: usize,
    pub backfill: Backfill,
    /// A cascade's downstream steps after `backfill`, in dependency order,
    /// each with the console's number for its run.
    pub cascade: Vec<(usize, Backfill)>,
    /// The equivalent `idem run`'s arguments: the commands of the run's
    /// report repeat them.
    pub args: crate::cli::RunArgs,
    /// Per step (`backfill` first), its partitions loaded empty before:
    /// the report says what this run loaded empty anew.
    pub empty_before: Vec<Vec<Partition>>,
}

/// A run request reads as the backfill it carries.
impl Deref for RunRequest {
    type Target = Backfill;

    fn deref(&self) -> &Backfill {
        &self.backfill
    }
}

/// Prove a partition idempotent: load it twice, compare, roll back.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    pub id: usize,
    pub job: Job,
    pub partition: Partition,
}

/// Read the definition a partition was loaded under and diff it against the
/// job's current one.
#[derive(Debug, Clone)]
pub struct DiffRequest {
    pub id: usize,
    pub job: Job,
    pub hash: String,
}

/// Count what a job's SQL would write now for `first..=last`.
#[derive(Debug, Clone)]
pub struct ReconcileRequest {
    pub id: usize,
    pub job: Job,
    pub first: Partition,
    pub last: Partition,
}

/// Which of `partitions` no native partition of `job`'s target covers, for
/// the confirm dialog (PostgreSQL; nothing elsewhere).
#[derive(Debug, Clone)]
pub struct CoverRequest {
    pub id: usize,
    pub job: Job,
    pub partitions: Vec<Partition>,
}

/// Read every attempt of one partition from the ledger.
#[derive(Debug, Clone)]
pub struct LoadsRequest {
    pub id: usize,
    pub job: String,
    pub partition: Partition,
}

/// Work `update` asks the event loop to do in the background.
#[derive(Debug)]
pub enum Effect {
    Connect,
    Refresh(Vec<String>),
    StartRun(Box<RunRequest>),
    Verify(Box<VerifyRequest>),
    DefinitionDiff(Box<DiffRequest>),
    Reconcile(Box<ReconcileRequest>),
    /// Read which windows no native partition covers: answered by a
    /// [`Msg::Covered`].
    ReadCover(Box<CoverRequest>),
    Loads(Box<LoadsRequest>),
    /// Stop the reconciliation of that id, if it still runs.
    StopReconcile(usize),
    Cancel(usize),
    /// Start no new partition of that run (`None`: of any run) while a
    /// question about stopping it is open (`shut`), or again once it is
    /// answered no.
    Gate {
        run: Option<usize>,
        shut: bool,
    },
    /// Read a theme file; the answer comes back as [`Msg::ThemeLoaded`].
    LoadTheme(PathBuf),
    /// Read the config file again; the answer comes back as
    /// [`Msg::ConfigRead`] with the same `id`, which counts up from one
    /// read asked to the next.
    ReadConfig {
        id: usize,
        path: PathBuf,
    },
    /// Put this text on the clipboard through the terminal (OSC 52), which
    /// works over ssh and in tmux (with `set-clipboard on`), where the
    /// console's mouse capture keeps the terminal from selecting text.
    Copy(String),
    /// Lint every job of the config on the warehouse, as `idem lint` does:
    /// answered by a [`Msg::Linted`] per job.
    Lint,
    /// Read which jobs of the config were renamed with no load of their
    /// own, and which have loads under their names into other tables:
    /// answered by one [`Msg::Renamed`] and one [`Msg::LoadsElsewhere`].
    ReadHistoryElsewhere,
    /// Leave: the console's runs in flight (cancelled by the effects
    /// before it) are reported once the terminal is restored; `as_left`
    /// names each, with how far it had got, for a run that does not end in
    /// time to report itself.
    Quit {
        as_left: Vec<(usize, String)>,
    },
}
