//! One job as the console holds it: its partitions and their states, the
//! cursor, the selection and the calendar's scroll, and what this console's
//! runs did to it since the last read.

use std::collections::{BTreeSet, HashMap};

use chrono::NaiveDateTime;

use super::errors::{ErrorGroup, group_failures};
use super::widgets::first_in_view;
use crate::config::{Job, TableNames};
use crate::engine::Event;
use crate::partition::{Grain, Partition, RangeEnd};
use crate::state::{self, AttemptEnd, LoadState, PartitionStatus};
use crate::warehouse::Counts;
use crate::warehouse::sql::Syntax;

/// A lint finding as the console shows it.
#[derive(Debug, Clone)]
pub struct LintNote {
    pub error: bool,
    pub message: String,
}

/// The static lint findings of a job, its SQL read as `syntax` reads it
/// and table names compared as `names` compare: what the console shows
/// until the warehouse's lint answers.
pub fn lint_notes(job: &Job, syntax: Syntax, names: TableNames) -> Vec<LintNote> {
    notes_of(crate::lint::static_findings_as(job, syntax, names))
}

/// Lint findings as the console shows them.
pub fn notes_of(findings: Vec<crate::lint::Finding>) -> Vec<LintNote> {
    findings
        .into_iter()
        .map(|f| LintNote {
            error: f.severity == crate::lint::Severity::Error,
            message: format!("line {}: {}", f.line, f.message),
        })
        .collect()
}

/// An attempt that ended in this console's run.
#[derive(Debug, Clone)]
pub struct LiveAttempt {
    pub attempt: i64,
    pub succeeded: bool,
    pub duration_ms: u64,
    pub error: Option<String>,
    /// Reads of the job's states begun when it ended: one landing that
    /// began later and lacks it found no ledger row for it.
    reads_begun: u64,
    /// A read of the states begun after it ended found no ledger row for
    /// it: the warehouse could not be written, and `idem log` cannot list it.
    pub unrecorded: bool,
}

pub struct JobView {
    pub job: Job,
    /// Every partition of the job's history, in order.
    pub partitions: Vec<Partition>,
    /// States aligned with `partitions`, once read.
    pub statuses: Vec<PartitionStatus>,
    pub cursor: usize,
    pub selected: BTreeSet<usize>,
    /// Partitions in flight in this console's runs.
    pub in_flight: BTreeSet<Partition>,
    /// Attempts this console saw end, until the ledger read shows them.
    pub live: HashMap<String, LiveAttempt>,
    pub(super) loaded: bool,
    /// States of the partitions on screen, read ahead of the full read and
    /// shown until it lands (by partition index).
    pub(super) early: HashMap<usize, LoadState>,
    pub(super) loading: bool,
    /// Reads of the states begun; the one landing is the last of them.
    pub(super) reads_begun: u64,
    /// The read in flight is the periodic one: it shows no spinner unless
    /// it is slow, so an idle console draws nothing.
    pub(super) quiet: bool,
    /// `statuses` are the last read's as it sent them (nothing this console
    /// saw since has changed them): a read finding the same inputs may
    /// answer "unchanged".
    pub(super) as_read: bool,
    /// While a read of the states outlasts [`crate::state::SLOW_READ`], what
    /// it may be waiting on.
    pub(super) slow: Option<String>,
    /// A refresh was asked for while one was in flight.
    pub(super) refresh_again: bool,
    pub(super) error: Option<String>,
    /// Where a `v` range selection started.
    pub(super) anchor: Option<usize>,
    /// First calendar unit shown (month, day or year by grain).
    pub(super) scroll: usize,
    pub(super) lint: Vec<LintNote>,
    /// Renamed in the config with no load of its own yet: the names the
    /// ledger holds its target's loads under, the one loaded last first.
    pub(super) renamed_from: Vec<String>,
    /// The loads the ledger holds under its name into other tables than
    /// its target now, which its partitions do not count: each table, with
    /// how many.
    pub(super) loads_elsewhere: Vec<(crate::config::TableName, i64)>,
    /// The failed partitions by error signature, most first.
    pub(super) groups: Vec<ErrorGroup>,
    /// The latest reconciliation's source counts and the partitions it
    /// covered, kept across reads of the states.
    source: Option<(Counts, Partition, Partition)>,
    /// Rows of the target whose partition column is NULL, as the latest
    /// read of the states counted them (see [`crate::state::JobStates`]).
    pub(super) null_partition: Option<i64>,
}

impl JobView {
    /// Why the job's states are not on screen, while they are not: still
    /// being read, or unreadable (and why). What acting on states says
    /// instead of finding none.
    pub fn unread(&self) -> Option<String> {
        if self.loaded {
            return None;
        }
        Some(match &self.error {
            Some(e) => format!(
                "the states of {} could not be read: {}",
                self.job.name,
                super::widgets::first_line(e)
            ),
            None => format!(
                "the states of {} are still being read; try again in a moment",
                self.job.name
            ),
        })
    }

    pub fn new(job: Job, now: NaiveDateTime) -> JobView {
        let partitions = job.partitions(now);
        let last = job.last_partition(now);
        let cursor = partitions
            .binary_search(&last)
            .unwrap_or_else(|i| i.saturating_sub(1));
        let lint = lint_notes(&job, job.engine.into(), job.engine.table_names());
        JobView {
            job,
            partitions,
            statuses: Vec::new(),
            cursor,
            selected: BTreeSet::new(),
            in_flight: BTreeSet::new(),
            live: HashMap::new(),
            loaded: false,
            early: HashMap::new(),
            loading: false,
            reads_begun: 0,
            quiet: false,
            as_read: false,
            slow: None,
            refresh_again: false,
            error: None,
            anchor: None,
            scroll: 0,
            lint,
            renamed_from: Vec::new(),
            loads_elsewhere: Vec::new(),
            groups: Vec::new(),
            source: None,
            null_partition: None,
        }
    }

    pub fn grain(&self) -> Grain {
        self.job.grain
    }

    /// The lint notes, the SQL read and table names compared as the
    /// connected server does (until then, by the engine's default: a
    /// MariaDB/MySQL `sql_mode` may turn backslash escapes off, and its
    /// `lower_case_table_names` fold names).
    pub fn read_lint_as(&mut self, syntax: Syntax, names: TableNames) {
        self.lint = lint_notes(&self.job, syntax, names);
    }

    /// What the warehouse answered of the config's renamed jobs
    /// ([`crate::warehouse::Warehouse::renamed_jobs`]), for this job.
    pub fn read_renamed(&mut self, renamed: &[crate::warehouse::Renamed]) {
        self.renamed_from = renamed
            .iter()
            .find(|r| r.job == self.job.name)
            .map(|r| r.before.clone())
            .unwrap_or_default();
    }

    /// What the warehouse answered of the loads under the config's jobs'
    /// names into other tables ([`crate::warehouse::Warehouse::loads_elsewhere`]),
    /// for this job.
    pub fn read_loads_elsewhere(&mut self, elsewhere: &[crate::warehouse::LoadsElsewhere]) {
        self.loads_elsewhere = elsewhere
            .iter()
            .filter(|e| e.job == self.job.name)
            .map(|e| (e.table.clone(), e.loads))
            .collect();
    }

    /// The detail's line for a job whose name has loads into other tables
    /// than its target now: how many, where, and the command that shows them.
    pub fn loads_elsewhere_line(&self) -> Option<String> {
        if self.loads_elsewhere.is_empty() {
            return None;
        }
        let each: Vec<String> = self
            .loads_elsewhere
            .iter()
            .map(|(table, n)| format!("{n} into {table}"))
            .collect();
        Some(format!(
            "loads elsewhere (not counted): {}; idem log {}",
            each.join(", "),
            self.job.name
        ))
    }

    /// The detail's line for a job renamed with no load of its own yet:
    /// where its history is and the command that shows it.
    pub fn renamed_line(&self) -> Option<String> {
        let last = self.renamed_from.first()?;
        let names: Vec<String> = self
            .renamed_from
            .iter()
            .map(|n| format!("\"{n}\""))
            .collect();
        Some(format!(
            "renamed? its loads are under {} (not counted): idem log {last}",
            names.join(", ")
        ))
    }

    /// The job's lint findings as the console shows them.
    pub fn lint(&self) -> &[LintNote] {
        &self.lint
    }

    /// The job's lint as the warehouse answered it for the job as
    /// `linted`; an answer for a job reloaded since is dropped, its lines
    /// moved too (its findings name lines).
    pub fn linted(&mut self, linted: &Job, notes: Vec<LintNote>) -> bool {
        if format!("{:?}", self.job) != format!("{linted:?}") {
            return false;
        }
        self.lint = notes;
        true
    }

    /// Whether the job's pane says its states are being read: a read the
    /// user is waiting on, or a periodic one that is slow.
    pub fn shows_loading(&self) -> bool {
        self.loading && (!self.quiet || self.slow.is_some())
    }

    /// The state shown for partition `i`: running while in flight here.
    pub fn state_at(&self, i: usize) -> Option<LoadState> {
        let p = self.partitions.get(i)?;
        if self.in_flight.contains(p) {
            return Some(LoadState::Running);
        }
        self.statuses
            .get(i)
            .map(|s| s.state)
            .or_else(|| self.early.get(&i).copied())
    }

    /// The glyph shown for partition `i`: its state's, or
    /// [`LoadState::UPSTREAM_GLYPH`] when it is stale only because of
    /// upstream partitions (not its own definition too), so that the cause
    /// reads without colour.
    pub fn glyph_at(&self, i: usize) -> char {
        let state = self.state_at(i).unwrap_or(LoadState::Future);
        let upstream_only = |s: &PartitionStatus| {
            !s.stale_upstream.is_empty()
                && s.last_success
                    .as_ref()
                    .is_some_and(|a| a.definition_hash == self.job.definition_hash())
        };
        if state == LoadState::Stale && self.status_at(i).is_some_and(upstream_only) {
            LoadState::UPSTREAM_GLYPH
        } else {
            state.glyph()
        }
    }

    pub fn status_at(&self, i: usize) -> Option<&PartitionStatus> {
        self.statuses.get(i)
    }

    pub fn index_of(&self, p: Partition) -> Option<usize> {
        self.partitions.binary_search(&p).ok()
    }

    /// How many partitions are in each state, in one pass over them (a
    /// frame asks for several states of every job).
    pub fn state_counts(&self) -> std::collections::BTreeMap<LoadState, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for i in 0..self.partitions.len() {
            if let Some(st) = self.state_at(i) {
                *counts.entry(st).or_default() += 1;
            }
        }
        counts
    }

    /// The failed partitions grouped by error signature.
    pub fn error_groups(&self) -> &[ErrorGroup] {
        &self.groups
    }

    /// The calendar unit (month for days, day for hours, year for months)
    /// partition `i` is drawn in.
    pub fn unit_of(&self, i: usize) -> usize {
        use chrono::Datelike;
        let (Some(first), Some(p)) = (self.partitions.first(), self.partitions.get(i)) else {
            return 0;
        };
        let (a, b) = (first.start, p.start);
        match self.grain() {
            Grain::Day => {
                let months = |t: NaiveDateTime| t.year() as i64 * 12 + t.month0() as i64;
                (months(b) - months(a)).max(0) as usize
            }
            Grain::Hour => (b.date() - a.date()).num_days().max(0) as usize,
            Grain::Month => (b.year() - a.year()).max(0) as usize,
        }
    }

    pub fn unit_count(&self) -> usize {
        if self.partitions.is_empty() {
            0
        } else {
            self.unit_of(self.partitions.len() - 1) + 1
        }
    }

    /// The first and last partition of the `capacity` calendar units on
    /// screen, while the job's states are not read yet: the range to read
    /// first.
    pub(super) fn unread_on_screen(&self, capacity: usize) -> Option<(Partition, Partition)> {
        if self.loaded {
            return None;
        }
        let units = self.scroll..self.scroll + capacity.max(1);
        let mut on_screen = (0..self.partitions.len())
            .skip_while(|i| self.unit_of(*i) < units.start)
            .take_while(|i| units.contains(&self.unit_of(*i)));
        let from = on_screen.next()?;
        let to = on_screen.last().unwrap_or(from);
        Some((*self.partitions.get(from)?, *self.partitions.get(to)?))
    }

    /// Shows the states of a range read ahead, unless the full read landed.
    pub(super) fn apply_early(&mut self, statuses: Vec<PartitionStatus>) {
        self.slow = None;
        if self.loaded {
            return;
        }
        for s in statuses {
            if let Some(i) = self.index_of(s.partition) {
                self.early.insert(i, s.state);
            }
        }
    }

    /// Scrolls so that the cursor's unit is among the `capacity` shown.
    pub(super) fn fix_scroll(&mut self, capacity: usize) {
        let unit = self.unit_of(self.cursor);
        self.scroll = first_in_view(self.scroll, unit, capacity.max(1), self.unit_count());
    }

    pub(super) fn last_complete(&self, now: NaiveDateTime) -> usize {
        let last = self.job.last_partition(now);
        self.partitions
            .binary_search(&last)
            .unwrap_or_else(|i| i.saturating_sub(1))
    }

    /// Moves the cursor, extending a range selection in progress.
    pub(super) fn set_cursor(&mut self, i: usize) {
        if self.partitions.is_empty() {
            self.cursor = 0;
            return;
        }
        self.cursor = i.min(self.partitions.len() - 1);
        if let Some(a) = self.anchor {
            self.selected = (a.min(self.cursor)..=a.max(self.cursor)).collect();
        }
    }

    /// Moves the cursor to the partition `f` gives, clamped to the history.
    pub(super) fn move_to(&mut self, f: impl Fn(Partition) -> Option<Partition>) {
        let Some(p) = self.partitions.get(self.cursor).copied() else {
            return;
        };
        let Some(target) = f(p) else { return };
        let i = match self.partitions.binary_search(&target) {
            Ok(i) => i,
            Err(0) => 0,
            Err(i) => i - 1,
        };
        self.set_cursor(i);
    }

    pub(super) fn step(&mut self, delta: i64) {
        if self.partitions.is_empty() {
            return;
        }
        let i = (self.cursor as i64 + delta).clamp(0, self.partitions.len() as i64 - 1);
        self.set_cursor(i as usize);
    }

    /// Selects exactly `indices`, the cursor on the first; ends range mode.
    pub(super) fn select(&mut self, indices: impl IntoIterator<Item = usize>) {
        self.anchor = None;
        self.selected = indices.into_iter().collect();
        if let Some(first) = self.selected.iter().next() {
            self.cursor = *first;
        }
    }

    pub(super) fn clear_selection(&mut self) {
        self.anchor = None;
        self.selected.clear();
    }

    /// The partitions a run would take: the selection, else the cursor's.
    pub(super) fn chosen(&self) -> Vec<usize> {
        if self.selected.is_empty() {
            vec![self.cursor]
        } else {
            self.selected.iter().copied().collect()
        }
    }

    /// A read of the states starts; `quiet` for the periodic one.
    pub(super) fn begin_read(&mut self, quiet: bool) {
        self.loading = true;
        self.quiet = quiet;
        self.reads_begun += 1;
    }

    /// Applies fresh states, keeping cursor and selection.
    pub(super) fn apply_statuses(&mut self, statuses: Vec<PartitionStatus>) {
        if !self.live.is_empty() {
            let seen: HashMap<String, i64> = statuses
                .iter()
                .filter_map(|s| {
                    let name = s.partition.name();
                    let attempt = s.last_attempt.as_ref()?.attempt;
                    self.live.contains_key(&name).then_some((name, attempt))
                })
                .collect();
            self.live
                .retain(|name, l| seen.get(name).is_none_or(|a| *a < l.attempt));
            // A read begun after the attempt ended that still lacks it: the
            // ledger row was never written (the server went away).
            for l in self.live.values_mut() {
                l.unrecorded |= self.reads_begun > l.reads_begun;
            }
        }
        self.partitions = statuses.iter().map(|s| s.partition).collect();
        // Loaded under its new name since: the old names' loads are history.
        // Loaded into its target now: its loads elsewhere are history too.
        if statuses.iter().any(|s| s.last_attempt.is_some()) {
            self.renamed_from.clear();
            self.loads_elsewhere.clear();
        }
        self.statuses = statuses;
        if let Some((counts, first, last)) = &self.source {
            state::reconcile(&mut self.statuses, counts, *first, *last);
        }
        self.groups = group_failures(&self.statuses);
        self.loaded = true;
        self.as_read = true;
        self.early.clear();
        self.error = None;
        let n = self.partitions.len();
        if n > 0 {
            self.cursor = self.cursor.min(n - 1);
        }
        self.selected.retain(|i| *i < n);
    }

    /// Forgets the source counts: an operator's refresh reads what is
    /// there now, and a count of the source from before would be shown as
    /// if it were as new.
    pub(super) fn forget_source(&mut self) {
        for s in &mut self.statuses {
            s.rows_source = None;
        }
        self.source = None;
    }

    /// A reconciliation counted the source of `first..=last`: it replaces
    /// the one before.
    pub(super) fn reconciled(&mut self, counts: Counts, first: Partition, last: Partition) {
        for s in &mut self.statuses {
            s.rows_source = None;
        }
        state::reconcile(&mut self.statuses, &counts, first, last);
        self.source = Some((counts, first, last));
    }

    /// Shows what a run of this job reported: partitions in flight, the
    /// attempts that ended, and their states as the next read will show.
    /// `definition` is the hash of the job's definition the run loads with
    /// (the config may have changed it since the run started).
    pub(super) fn apply_event(&mut self, event: &Event, definition: &str) {
        if let Some((partition, end)) = event.attempt_end() {
            state::apply_attempt(&self.job, &mut self.statuses, partition, end, definition);
            self.groups = group_failures(&self.statuses);
            self.as_read = false;
        }
        // Every attempt that ended counts, a retried one too: the count
        // beside "last attempt #N" says N.
        if let Event::PartitionSucceeded {
            partition, attempt, ..
        }
        | Event::PartitionFailed {
            partition, attempt, ..
        } = event
            && let Some(s) = self
                .statuses
                .iter_mut()
                .find(|s| s.partition.name() == *partition)
            && (s.attempts as i64) < *attempt
        {
            s.attempts = *attempt as usize;
            self.as_read = false;
        }
        self.follow_flight(event);
        match event {
            Event::PartitionSucceeded {
                partition,
                attempt,
                duration_ms,
                ..
            } => {
                self.live.insert(
                    partition.clone(),
                    LiveAttempt {
                        attempt: *attempt,
                        succeeded: true,
                        duration_ms: *duration_ms,
                        error: None,
                        reads_begun: self.reads_begun,
                        unrecorded: false,
                    },
                );
            }
            Event::PartitionFailed {
                partition,
                attempt,
                error,
                will_retry: false,
                duration_ms,
                ..
            } if event.attempt_end().map(|(_, end)| end) == Some(AttemptEnd::Failed) => {
                self.live.insert(
                    partition.clone(),
                    LiveAttempt {
                        attempt: *attempt,
                        succeeded: false,
                        duration_ms: *duration_ms,
                        error: Some(error.clone()),
                        reads_begun: self.reads_begun,
                        unrecorded: false,
                    },
                );
            }
            _ => {}
        }
    }

    /// Shows which partitions a run reports in flight, and no more: what
    /// a run under another name loads, the ledger records under that name.
    pub(super) fn follow_flight(&mut self, event: &Event) {
        match event {
            Event::PartitionStarted { partition, .. } => self.enter_flight(partition),
            Event::PartitionSucceeded { partition, .. }
            | Event::PartitionFailed {
                partition,
                will_retry: false,
                ..
            } => self.leave_flight(partition),
            _ => {}
        }
    }

    /// A run of these partitions ended: none of them is in flight any more.
    pub(super) fn run_ended<'a>(&mut self, partitions: impl IntoIterator<Item = &'a str>) {
        for p in partitions {
            self.leave_flight(p);
        }
    }

    /// The partition of this job a run's event names.
    fn named(&self, name: &str) -> Option<Partition> {
        Partition::parse(self.grain(), name, RangeEnd::From)
    }

    /// Partition `name` is in flight in a run of this console.
    pub(super) fn enter_flight(&mut self, name: &str) {
        if let Some(p) = self.named(name) {
            self.in_flight.insert(p);
        }
    }

    fn leave_flight(&mut self, name: &str) {
        if let Some(p) = self.named(name) {
            self.in_flight.remove(&p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::job_view;

    #[test]
    fn states_read_ahead_show_until_the_full_read_lands() {
        let all = job_view("j", false, "■■✗■·■■✗■■").statuses;
        let mut job = JobView::new(
            crate::tui::fixture::job("j", false),
            crate::tui::fixture::now(),
        );
        let (from, to) = job.unread_on_screen(1).expect("nothing read yet");
        assert_eq!((from, to), (job.partitions[0], job.partitions[9]));
        job.apply_early(all[2..4].to_vec());
        assert_eq!(job.state_at(2), Some(LoadState::Failed));
        assert_eq!(job.state_at(3), Some(LoadState::Loaded));
        assert_eq!(job.state_at(0), None, "not read yet");
        job.apply_statuses(all.clone());
        assert!(job.early.is_empty());
        assert!(job.unread_on_screen(1).is_none());
        // An early answer that comes after the full read changes nothing.
        job.apply_early(vec![all[0].clone()]);
        assert!(job.early.is_empty());
    }

    fn started(partition: &str) -> Event {
        Event::PartitionStarted {
            run_id: "r".into(),
            job: "j".into(),
            partition: partition.into(),
            attempt: 2,
        }
    }

    #[test]
    fn a_run_shows_running_then_its_results_until_the_next_read() {
        let mut job = job_view("j", false, "■■✗■·■■✗■■");
        let hash = job.job.definition_hash();
        job.apply_event(&started("2026-06-03"), &hash);
        assert_eq!(job.state_at(2), Some(LoadState::Running));
        assert_eq!(job.state_counts().get(&LoadState::Failed), Some(&1));
        job.apply_event(
            &Event::PartitionSucceeded {
                run_id: "r".into(),
                job: "j".into(),
                partition: "2026-06-03".into(),
                attempt: 2,
                rows_deleted: 0,
                rows_inserted: 7,
                rows_updated: 0,
                rows_after: 7,
                duration_ms: 5,
                fingerprint: "7:abc".into(),
                content_changed: true,
            },
            &hash,
        );
        assert_eq!(job.state_at(2), Some(LoadState::Loaded));
        assert_eq!(job.status_at(2).and_then(|s| s.rows_now), Some(7));
        assert!(job.live["2026-06-03"].succeeded);
        assert_eq!(job.error_groups()[0].partitions, vec![7], "regrouped");
        job.apply_event(&started("2026-06-05"), &hash);
        job.run_ended(["2026-06-05"]);
        assert!(job.in_flight.is_empty());
    }

    #[test]
    fn a_cancelled_attempt_leaves_the_state_as_it_was() {
        let mut job = job_view("j", false, "■■✗■·■■✗■■");
        let hash = job.job.definition_hash();
        job.apply_event(&started("2026-06-05"), &hash);
        job.apply_event(
            &Event::PartitionFailed {
                run_id: "r".into(),
                job: "j".into(),
                partition: "2026-06-05".into(),
                attempt: 2,
                error: "cancelled; rolled back".into(),
                cause: crate::engine::FailureCause::Cancelled,
                will_retry: false,
                duration_ms: 5,
            },
            &hash,
        );
        assert_eq!(job.state_at(4), Some(LoadState::Missing));
        assert!(job.live.is_empty());
    }

    #[test]
    fn the_scroll_keeps_the_cursor_in_view() {
        let mut job = job_view("j", false, "■■✗■·■■✗■■");
        job.scroll = 3;
        job.fix_scroll(1);
        assert_eq!(job.scroll, 0, "one month of history, and the cursor in it");
    }
}
