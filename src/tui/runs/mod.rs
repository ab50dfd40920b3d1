//! The run pane: this console's runs, each with its per-partition table and
//! the selected partition's live log, fed by the engine's events.

use std::cell::Cell;
use std::collections::HashMap;

use chrono::NaiveDateTime;
use ratatui::layout::Rect;

use super::keymap;
use super::keys::{Action, Scope};
use super::run_logs::RunLogs;
use super::widgets::{duration_text, first_in_view};
use crate::config::{Job, Strategy};
use crate::engine::{Backfill, Event, refusals_counted, stopped_short};
use crate::partition::Partition;
use crate::state::AttemptEnd;

mod log_view;
mod navigate;
mod partition;
mod render;

pub use log_view::{LogBack, Scroll, WHEEL_ROWS};
pub use navigate::{direction, footer, in_footer};
pub use partition::{RunPartState, RunPartition};
pub use render::{hit, log_text_area, on_log, render};

pub struct RunFinish {
    pub succeeded: usize,
    pub failed: usize,
    pub not_started: usize,
    pub rolled_back: usize,
    pub cancelled: bool,
    pub duration_ms: u64,
}

pub struct RunView {
    pub id: usize,
    pub run_id: Option<String>,
    pub job: String,
    /// The hash of the job's definition the run loads with, which a
    /// reload of the config while it runs does not change.
    pub definition: String,
    /// The job whose calendar shows the run: its own, or the name the
    /// config renamed it to while it ran (its events, and the ledger,
    /// keep the name it started with).
    pub shown_under: String,
    pub strategy: Strategy,
    pub concurrency: usize,
    /// Retries of a transient error each partition may take.
    pub retries: u32,
    pub reason: Option<String>,
    pub started: NaiveDateTime,
    pub partitions: Vec<RunPartition>,
    index: HashMap<String, usize>,
    /// The partition row under the cursor.
    pub selected: usize,
    /// How many partition rows the table scrolled past when last drawn;
    /// the next draw moves it as little as keeps the selected row in view.
    scrolled: Cell<usize>,
    pub cancel_requested: bool,
    pub finished: Option<RunFinish>,
    /// Why the run never started.
    pub error: Option<String>,
    /// The id of the first run of the cascade this run is a step of (the
    /// first run's own id for it); none for a run on its own.
    pub cascade: Option<usize>,
    /// A cascade's first run: the config's jobs as the cascade started,
    /// with their definitions then, as the engine runs a step it gives a
    /// job as it goes; none for another run.
    pub cascade_jobs: Vec<Job>,
    /// Each partition's live log, by row.
    pub logs: RunLogs,
    /// Where the selected partition's log is scrolled to; the default
    /// keeps it pinned to its newest line.
    pub log_back: LogBack,
    /// Why this run's log is not kept on disk, when it could not be.
    pub log_not_kept: Option<String>,
    /// The warehouse refused a connection, and the run has fewer
    /// partitions in flight than asked (its `concurrency` now): why.
    pub lowered: Option<String>,
}

impl RunView {
    /// A run of `backfill` about to start, every partition queued.
    pub fn new(id: usize, backfill: &Backfill, started: NaiveDateTime) -> RunView {
        let names: Vec<String> = backfill.partitions.iter().map(Partition::name).collect();
        let mut view = RunView {
            id,
            run_id: None,
            job: backfill.job.name.clone(),
            definition: backfill.job.definition_hash(),
            shown_under: backfill.job.name.clone(),
            strategy: backfill.job.strategy,
            concurrency: backfill.effective_concurrency(),
            retries: backfill.retries,
            reason: backfill.reason.clone(),
            started,
            index: names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect(),
            partitions: names.into_iter().map(RunPartition::queued).collect(),
            selected: 0,
            scrolled: Cell::new(0),
            cancel_requested: false,
            finished: None,
            error: None,
            cascade: None,
            cascade_jobs: Vec::new(),
            logs: RunLogs::new(backfill.partitions.len()),
            log_back: LogBack::default(),
            log_not_kept: None,
            lowered: None,
        };
        view.partly_read(backfill);
        view
    }

    /// `partition`'s attempt ended and its log on disk is not whole: its
    /// log pane says so and why, as `idem log` will ([`crate::runlog::unwritten`]).
    pub fn log_unwritten(&mut self, partition: &str, why: String) {
        if let Some(i) = self.row(partition) {
            let said = match why.as_str() {
                "" => "its run log on disk could not be written".to_string(),
                why => format!("its run log on disk could not be written: {why}"),
            };
            self.log(i, said);
            self.partitions[i].log_unwritten = Some(why);
        }
    }

    /// Marks the rows of `backfill`'s windows that read upstream partitions
    /// neither loaded nor in the run, and says so first in their logs: the
    /// run loads them as they stand, and an operator reading the run later
    /// learns why a row's output may be short.
    fn partly_read(&mut self, backfill: &Backfill) {
        for (i, window) in backfill.partitions.iter().enumerate() {
            let reads: Vec<_> = backfill
                .reads_not_loaded
                .iter()
                .filter(|p| p.window == *window)
                .cloned()
                .collect();
            if let Some(line) = crate::engine::cascade::partly_read_line(&self.job, &reads) {
                self.log(i, format!("upstream not all loaded: {line}"));
                self.partitions[i].partly_read = Some(line);
            }
        }
    }

    /// The run was refused before it started: every partition not run,
    /// the reason on each row and in its log, where it stays once the
    /// status bar has moved on.
    pub fn rejected(&mut self, error: &str) {
        self.error = Some(error.to_string());
        for i in 0..self.partitions.len() {
            self.partitions[i].state = RunPartState::NotRun;
            self.partitions[i].error = Some(format!("not started: {error}"));
            self.log(i, format!("not started: {error}"));
        }
    }

    /// Adds a line to row `i`'s log; a log scrolled back stays on the
    /// lines it shows.
    fn log(&mut self, i: usize, line: String) {
        let added = self.logs.push(i, &line);
        if i == self.selected {
            self.log_back.arrived(added);
        }
    }

    /// How far this run had got when the console was left with it in
    /// flight: said once the terminal is restored if it has not ended by
    /// then, where it would otherwise report itself.
    pub fn as_left(&self) -> String {
        let loaded = match self.count(RunPartState::Succeeded) {
            0 => "none".to_string(),
            n => n.to_string(),
        };
        let in_flight = self.count(RunPartState::Running) + self.count(RunPartState::Retrying);
        let id = self
            .run_id
            .as_ref()
            .map(|id| format!("run {id}: "))
            .unwrap_or_default();
        format!(
            "{id}{loaded} of {} loaded, {in_flight} in flight when the console was left",
            crate::numbers::n_partitions(self.partitions.len() as i64)
        )
    }

    pub fn active(&self) -> bool {
        self.finished.is_none() && self.error.is_none()
    }

    /// Partitions that ran to an end: succeeded, failed or refused.
    pub fn done(&self) -> usize {
        self.partitions
            .iter()
            .filter(|p| {
                matches!(
                    p.state,
                    RunPartState::Succeeded
                        | RunPartState::Failed
                        | RunPartState::Refused
                        | RunPartState::LockHeld
                )
            })
            .count()
    }

    pub fn count(&self, state: RunPartState) -> usize {
        self.partitions.iter().filter(|p| p.state == state).count()
    }

    /// Partitions finished per second, and the estimated seconds left.
    pub fn rate_eta(&self, now: NaiveDateTime) -> (f64, Option<i64>) {
        let secs = (now - self.started).num_milliseconds().max(0) as f64 / 1000.0;
        let done = self.done();
        if secs < 0.5 || done == 0 {
            return (0.0, None);
        }
        let rate = done as f64 / secs;
        let left = self.partitions.len().saturating_sub(done);
        (rate, Some((left as f64 / rate).ceil() as i64))
    }

    /// The row of a partition of this run.
    fn row(&self, partition: &str) -> Option<usize> {
        self.index.get(partition).copied()
    }

    /// The row of `partition`, queued in its place among the others (by
    /// name, which orders partitions of one grain) if the run had none: a
    /// cascade adds partitions to a step before it begins. The row under
    /// the cursor stays under it, and the rows shown stay where they are.
    fn add_row(&mut self, partition: &str) -> usize {
        if let Some(i) = self.row(partition) {
            return i;
        }
        let i = self
            .partitions
            .partition_point(|p| p.name.as_str() < partition);
        self.partitions
            .insert(i, RunPartition::queued(partition.to_string()));
        self.logs.insert(i);
        if self.selected >= i && self.partitions.len() > 1 {
            self.selected += 1;
        }
        let first = self.scrolled.get();
        if first > 0 && i <= first {
            self.scrolled.set(first + 1);
        }
        self.index = self
            .partitions
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.clone(), i))
            .collect();
        i
    }

    /// Shows an engine event of this run in its table and logs; `now` is
    /// when the console received it.
    pub fn apply(&mut self, event: &Event, now: NaiveDateTime) {
        match event {
            Event::RunStarted {
                run_id,
                concurrency,
                ..
            } => {
                self.run_id = Some(run_id.clone());
                self.concurrency = *concurrency;
            }
            Event::PartitionStarted {
                partition, attempt, ..
            } => {
                if let Some(i) = self.row(partition) {
                    let p = &mut self.partitions[i];
                    p.state = RunPartState::Running;
                    p.running_since = Some(now);
                    p.attempt = *attempt;
                    p.tries += 1;
                    self.log(i, format!("attempt {attempt}"));
                }
            }
            Event::PartitionLog {
                partition, line, ..
            } => {
                if let Some(i) = self.row(partition) {
                    self.log(i, line.clone());
                }
            }
            Event::PartitionSucceeded {
                partition,
                rows_deleted,
                rows_inserted,
                rows_updated,
                rows_after,
                duration_ms,
                content_changed,
                ..
            } => {
                if let Some(i) = self.row(partition) {
                    let p = &mut self.partitions[i];
                    p.state = RunPartState::Succeeded;
                    p.duration_ms = Some(*duration_ms);
                    p.rows_deleted = *rows_deleted;
                    p.rows_inserted = *rows_inserted;
                    p.rows_updated = *rows_updated;
                    p.content_changed = Some(*content_changed);
                    p.loaded_empty = *rows_after == 0 && rows_inserted + rows_updated == 0;
                    // The load's own log said its fingerprint.
                }
            }
            Event::PartitionFailed {
                partition,
                error,
                will_retry,
                duration_ms,
                ..
            } => {
                let state = match event.attempt_end() {
                    None => RunPartState::Retrying,
                    Some((_, AttemptEnd::RolledBack)) => RunPartState::Cancelled,
                    Some((_, AttemptEnd::Refused)) => RunPartState::Refused,
                    Some((_, AttemptEnd::LockHeld)) => RunPartState::LockHeld,
                    Some(_) => RunPartState::Failed,
                };
                if let Some(i) = self.row(partition) {
                    let p = &mut self.partitions[i];
                    p.state = state;
                    p.duration_ms = Some(*duration_ms);
                    p.error = Some(error.clone());
                    self.log(
                        i,
                        format!(
                            "{}: {error}",
                            if *will_retry {
                                "will retry"
                            } else {
                                event.failure_word()
                            }
                        ),
                    );
                }
            }
            Event::PartitionAdded {
                partition, because, ..
            } => {
                let i = self.add_row(partition);
                self.log(i, format!("added to the cascade: {because}"));
            }
            // Not run, and due: shown as the skipped are, with why.
            Event::PartitionLeft {
                partition, because, ..
            } => {
                let i = self.add_row(partition);
                let p = &mut self.partitions[i];
                p.state = RunPartState::Skipped;
                p.error = Some(format!("left out: {because}"));
                self.log(i, format!("left out of the cascade: {because}"));
            }
            Event::PartitionSkipped {
                partition, because, ..
            } => {
                if let Some(i) = self.row(partition) {
                    let p = &mut self.partitions[i];
                    p.state = RunPartState::Skipped;
                    p.error = Some(format!("skipped: {because}"));
                    self.log(i, format!("skipped: {because}"));
                }
            }
            // A cascade step whose every partition was skipped never starts:
            // this ends it.
            Event::StepSkipped { cancelled, .. } => {
                self.finished = Some(RunFinish {
                    succeeded: 0,
                    failed: 0,
                    not_started: 0,
                    rolled_back: 0,
                    cancelled: *cancelled,
                    duration_ms: 0,
                });
            }
            Event::ConcurrencyLowered {
                concurrency,
                asked,
                because,
                ..
            } => {
                self.concurrency = *concurrency;
                self.lowered = Some(crate::engine::concurrency_lowered(
                    *concurrency,
                    *asked,
                    because,
                ));
            }
            Event::RunFinished {
                succeeded,
                failed,
                not_started,
                rolled_back,
                cancelled,
                duration_ms,
                ..
            } => {
                for p in &mut self.partitions {
                    p.state = match p.state {
                        // Its last attempt failed, and is in the ledger so;
                        // the retry did not start.
                        RunPartState::Retrying => RunPartState::Failed,
                        RunPartState::Queued | RunPartState::Running if *cancelled => {
                            RunPartState::Cancelled
                        }
                        RunPartState::Queued | RunPartState::Running => RunPartState::NotRun,
                        state => state,
                    };
                }
                self.finished = Some(RunFinish {
                    succeeded: *succeeded,
                    failed: *failed,
                    not_started: *not_started,
                    rolled_back: *rolled_back,
                    cancelled: *cancelled,
                    duration_ms: *duration_ms,
                });
            }
        }
    }

    /// Marks the partitions that were empty when the run started: loaded
    /// empty again, they are no news (a weekend with no orders).
    pub fn empty_before(&mut self, empty: impl Fn(&str) -> bool) {
        for p in &mut self.partitions {
            p.was_empty = empty(&p.name);
        }
    }

    /// Partitions this run loaded empty that were not empty before: what a
    /// late source loads.
    fn newly_empty(&self) -> usize {
        self.partitions
            .iter()
            .filter(|p| p.loaded_empty && !p.was_empty)
            .count()
    }

    /// The status-bar note on how the run ended: (is bad news, text).
    pub fn ending(&self) -> Option<(bool, String)> {
        let f = self.finished.as_ref()?;
        let (bad, words) = self.ended_words()?;
        Some((
            bad,
            format!(
                "run of {} {}: {words}",
                self.job,
                if f.cancelled { "cancelled" } else { "finished" },
            ),
        ))
    }

    /// What the run did, once ended: (is bad news, its counts in words).
    fn ended_words(&self) -> Option<(bool, String)> {
        let f = self.finished.as_ref()?;
        // The engine counts refusals among failures; they read apart.
        let refused = self.count(RunPartState::Refused);
        let lock_held = self.count(RunPartState::LockHeld);
        let skipped = self.count(RunPartState::Skipped);
        Some((
            f.failed > 0 || f.cancelled || skipped > 0,
            format!(
                "{} succeeded{}, {} failed{}{}{}{}",
                f.succeeded,
                match (self.newly_empty(), self.strategy) {
                    (0, _) => String::new(),
                    // No changed rows in a merge window is usual for change
                    // data: no sign of a late source.
                    (n, Strategy::MergeKey) => format!(" ({n} merged no rows)"),
                    (1, _) => " (1 loaded empty: a late source?)".to_string(),
                    (n, _) => format!(" ({n} loaded empty: a late source?)"),
                },
                f.failed.saturating_sub(refused + lock_held),
                if refused > 0 {
                    format!(
                        ", {refused} refused by the shrink guard ({} in the confirm allows it)",
                        keymap::key(Scope::Confirm, Action::AllowShrink)
                    )
                } else {
                    String::new()
                },
                refusals_counted(0, lock_held, ", "),
                skipped_words(skipped, ", "),
                stopped_short(f.not_started, f.rolled_back, ", ")
            ),
        ))
    }

    /// The run's outcome as a glyph and a theme style: in flight, failed,
    /// cancelled, succeeded.
    fn outcome(&self) -> (char, &'static str) {
        match &self.finished {
            Some(f) if f.cancelled => ('⊘', "warning"),
            Some(f) if f.failed > 0 => ('✗', "error"),
            // A step of a cascade that left partitions out is no success:
            // what they read did not load (a headless run exits 1).
            Some(_) if self.count(RunPartState::Skipped) > 0 => ('–', "warning"),
            Some(_) => ('✓', "ok"),
            None if self.error.is_some() => ('✗', "error"),
            None if self.count(RunPartState::Failed) > 0 => ('▶', "error"),
            None => ('▶', "gauge"),
        }
    }

    /// The first partition row shown in a table `rows` high: where it was
    /// scrolled, moved just enough to show the selected row.
    fn first_row(&self, rows: usize) -> usize {
        first_in_view(
            self.scrolled.get(),
            self.selected,
            rows,
            self.partitions.len(),
        )
    }

    /// The label in the run pane's list of runs.
    fn label(&self) -> String {
        let (glyph, _) = self.outcome();
        // In flight: how far it got; ended: how much of it succeeded, as
        // its summary says.
        let count = match &self.finished {
            Some(f) => f.succeeded,
            None => self.done(),
        };
        format!(
            " {glyph} #{} {} {count}/{} ",
            self.id,
            self.job,
            self.partitions.len()
        )
    }

    fn summary(&self, now: NaiveDateTime) -> String {
        let total = self.partitions.len();
        // The engine counts refusals among failures; they read apart, as
        // in the status bar.
        let refused = self.count(RunPartState::Refused) + self.count(RunPartState::LockHeld);
        let refused_words = if refused > 0 {
            format!(" · {refused} refused")
        } else {
            String::new()
        };
        match &self.finished {
            Some(f) => format!(
                "{}: {}/{} succeeded{} · {} failed{refused_words}{}{} · {}",
                if f.cancelled { "cancelled" } else { "finished" },
                f.succeeded,
                total,
                match self.newly_empty() {
                    0 => String::new(),
                    n => format!(" ({n} loaded empty)"),
                },
                f.failed.saturating_sub(refused),
                skipped_words(self.count(RunPartState::Skipped), " · "),
                stopped_short(f.not_started, f.rolled_back, " · "),
                duration_text(f.duration_ms)
            ),
            None if self.error.is_some() => "not started".to_string(),
            None => {
                let (rate, eta) = self.rate_eta(now);
                format!(
                    "{}/{} · {} failed{refused_words}{} · {:.1} p/s · ETA {}{}",
                    self.done(),
                    total,
                    self.count(RunPartState::Failed),
                    match self.lowered {
                        // The warehouse limits connections.
                        Some(_) => format!(" · {} at once: connection limit", self.concurrency),
                        None => String::new(),
                    },
                    rate,
                    eta.map(|s| format!("{}:{:02}", s / 60, s % 60))
                        .unwrap_or_else(|| "–".into()),
                    if self.cancel_requested {
                        " · cancelling…"
                    } else {
                        ""
                    }
                )
            }
        }
    }
}

/// The status-bar note on how a cascade ended, once each of its `steps`
/// (upstream first) has: each step's counts, so a step skipped whole, or
/// one a cancel kept from starting, is not hidden behind the last to
/// finish. None while a step is in flight, or when none began (the
/// refusal that stopped them says why).
pub fn cascade_ending(steps: &[&RunView]) -> Option<(bool, String)> {
    if steps.iter().any(|s| s.active()) || steps.iter().all(|s| s.finished.is_none()) {
        return None;
    }
    let mut bad = false;
    let mut cancelled = false;
    let words: Vec<String> = steps
        .iter()
        .map(|s| match s.ended_words() {
            Some((step_bad, words)) => {
                bad |= step_bad;
                cancelled |= s.finished.as_ref().is_some_and(|f| f.cancelled);
                format!("{}: {words}", s.job)
            }
            None => {
                bad = true;
                cancelled = true;
                format!("{}: not started", s.job)
            }
        })
        .collect();
    Some((
        bad,
        format!(
            "cascade from {} {}: {}",
            steps.first()?.job,
            if cancelled { "cancelled" } else { "finished" },
            words.join(" · ")
        ),
    ))
}

/// The partitions a cascade left out of a step, and why, after `sep`;
/// nothing when none was.
fn skipped_words(skipped: usize, sep: &str) -> String {
    match skipped {
        0 => String::new(),
        n => format!("{sep}{n} skipped: what they read did not load"),
    }
}

impl RunView {
    /// Scrolls the selected partition's log in its box's text area `log`;
    /// with no room for the box, only back to following it.
    pub fn scroll_log(&mut self, log: Option<Rect>, scroll: Scroll) {
        self.log_back = match log {
            Some(size) => {
                log_view::scrolled(self.logs.of(self.selected), self.log_back, size, scroll)
            }
            None => LogBack::default(),
        };
    }

    /// Keeps the selected partition's log within its box's text area
    /// `log` (the terminal resized, lines dropped from the log's start).
    pub fn bound_log(&mut self, log: Option<Rect>) {
        if let Some(size) = log {
            self.log_back = log_view::bounded(self.logs.of(self.selected), self.log_back, size);
        }
    }
}

#[cfg(test)]
mod tests;
