//! The console's state and `update`, the only place it changes. `update`
//! does no IO: what needs the warehouse comes back as an [`Effect`] for the
//! event loop to start in the background.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use chrono::{Months, NaiveDateTime};
use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};
use ratatui::layout::Rect;
use tui_input::Input;
use tui_input::backend::crossterm::to_input_request;

use super::keys::{Action, Scope, action_for};
use super::theme::Theme;
use super::view;
use crate::config::{Config, Job, Strategy};
use crate::engine::{Backfill, Event, MergeOrderRisk};
use crate::partition::{Grain, Partition, RangeEnd};
use crate::state::{LoadState, PartitionStatus};
use crate::warehouse::Verification;

/// Log lines kept per partition of a run.
pub const LOG_LINES: usize = 200;
/// Seconds between background refreshes of every job's states.
pub const REFRESH_SECS: i64 = 15;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Jobs,
    Calendar,
    Runs,
}

/// A lint finding as the console shows it.
#[derive(Debug, Clone)]
pub struct LintNote {
    pub error: bool,
    pub message: String,
}

/// The static lint findings of a job.
pub fn lint_notes(job: &Job) -> Vec<LintNote> {
    crate::lint::static_findings(job)
        .into_iter()
        .map(|f| LintNote {
            error: f.severity == crate::lint::Severity::Error,
            message: format!("line {}: {}", f.line, f.message),
        })
        .collect()
}

pub struct JobView {
    pub job: Job,
    /// Every partition of the job's history, in order.
    pub partitions: Vec<Partition>,
    /// States aligned with `partitions`, once read.
    pub statuses: Vec<PartitionStatus>,
    pub loaded: bool,
    pub loading: bool,
    refresh_again: bool,
    pub error: Option<String>,
    pub cursor: usize,
    /// Where a `v` range selection started.
    pub anchor: Option<usize>,
    pub selected: BTreeSet<usize>,
    /// First calendar unit shown (month, day or year by grain).
    pub scroll: usize,
    pub lint: Vec<LintNote>,
    /// Partitions in flight in this console's runs.
    pub in_flight: HashSet<String>,
    /// Attempts this console saw end, until the ledger read shows them.
    pub live: HashMap<String, LiveAttempt>,
}

/// An attempt that ended in this console's run.
#[derive(Debug, Clone)]
pub struct LiveAttempt {
    pub attempt: i64,
    pub succeeded: bool,
    pub duration_ms: u64,
    pub error: Option<String>,
}

impl JobView {
    fn new(job: Job, now: NaiveDateTime) -> JobView {
        let partitions = job.partitions(now);
        let last = job.last_partition(now);
        let cursor = partitions
            .binary_search(&last)
            .unwrap_or_else(|i| i.saturating_sub(1));
        let lint = lint_notes(&job);
        JobView {
            job,
            partitions,
            statuses: Vec::new(),
            loaded: false,
            loading: false,
            refresh_again: false,
            error: None,
            cursor,
            anchor: None,
            selected: BTreeSet::new(),
            scroll: 0,
            lint,
            in_flight: HashSet::new(),
            live: HashMap::new(),
        }
    }

    pub fn grain(&self) -> Grain {
        self.job.grain
    }

    /// The state shown for partition `i`: running while in flight here.
    pub fn state_at(&self, i: usize) -> Option<LoadState> {
        let p = self.partitions.get(i)?;
        if !self.in_flight.is_empty() && self.in_flight.contains(&p.name()) {
            return Some(LoadState::Running);
        }
        self.statuses.get(i).map(|s| s.state)
    }

    pub fn status_at(&self, i: usize) -> Option<&PartitionStatus> {
        self.statuses.get(i)
    }

    pub fn index_of(&self, p: Partition) -> Option<usize> {
        self.partitions.binary_search(&p).ok()
    }

    pub fn count(&self, state: LoadState) -> usize {
        (0..self.partitions.len())
            .filter(|i| self.state_at(*i) == Some(state))
            .count()
    }

    /// The calendar unit (month for days, day for hours, year for months)
    /// partition `i` is drawn in.
    pub fn unit_of(&self, i: usize) -> usize {
        let (Some(first), Some(p)) = (self.partitions.first(), self.partitions.get(i)) else {
            return 0;
        };
        let (a, b) = (first.start, p.start);
        match self.grain() {
            Grain::Day => {
                let months = |t: NaiveDateTime| {
                    use chrono::Datelike;
                    t.year() as i64 * 12 + t.month0() as i64
                };
                (months(b) - months(a)).max(0) as usize
            }
            Grain::Hour => (b.date() - a.date()).num_days().max(0) as usize,
            Grain::Month => {
                use chrono::Datelike;
                (b.year() - a.year()).max(0) as usize
            }
        }
    }

    pub fn unit_count(&self) -> usize {
        if self.partitions.is_empty() {
            0
        } else {
            self.unit_of(self.partitions.len() - 1) + 1
        }
    }

    fn last_complete(&self, now: NaiveDateTime) -> usize {
        let last = self.job.last_partition(now);
        self.partitions
            .binary_search(&last)
            .unwrap_or_else(|i| i.saturating_sub(1))
    }

    fn set_cursor(&mut self, i: usize) {
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
    fn move_to(&mut self, f: impl Fn(Partition) -> Option<Partition>) {
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

    fn step(&mut self, delta: i64) {
        if self.partitions.is_empty() {
            return;
        }
        let i = (self.cursor as i64 + delta).clamp(0, self.partitions.len() as i64 - 1);
        self.set_cursor(i as usize);
    }

    fn select_state(&mut self, state: LoadState) -> usize {
        self.anchor = None;
        self.selected = (0..self.partitions.len())
            .filter(|i| self.state_at(*i) == Some(state))
            .collect();
        if let Some(first) = self.selected.iter().next() {
            self.cursor = *first;
        }
        self.selected.len()
    }

    /// Applies fresh states, keeping cursor and selection.
    fn apply_statuses(&mut self, statuses: Vec<PartitionStatus>) {
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
        }
        self.partitions = statuses.iter().map(|s| s.partition).collect();
        self.statuses = statuses;
        self.loaded = true;
        self.error = None;
        let n = self.partitions.len();
        if n > 0 {
            self.cursor = self.cursor.min(n - 1);
        }
        self.selected.retain(|i| *i < n);
    }
}

/// Failed partitions whose errors read the same once numbers, literals and
/// identifiers are set aside.
#[derive(Debug, Clone)]
pub struct ErrorGroup {
    pub signature: String,
    pub example: String,
    pub partitions: Vec<usize>,
}

/// The error with numbers, quoted literals and identifiers normalised.
pub fn error_signature(message: &str) -> String {
    let first = message.lines().next().unwrap_or("");
    let mut out = String::new();
    let mut chars = first.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' || c == '"' || c == '`' {
            for d in chars.by_ref() {
                if d == c {
                    break;
                }
            }
            out.push_str(if c == '\'' { "'…'" } else { "<id>" });
        } else if c.is_alphanumeric() || c == '_' {
            let mut word = String::from(c);
            while let Some(&d) = chars.peek() {
                if d.is_alphanumeric() || d == '_' || d == '.' || d == '-' || d == ':' {
                    // Keep a trailing ':' or '.' as punctuation.
                    if matches!(d, '.' | ':' | '-') {
                        let mut ahead = chars.clone();
                        ahead.next();
                        if !ahead
                            .peek()
                            .is_some_and(|e| e.is_alphanumeric() || *e == '_')
                        {
                            break;
                        }
                    }
                    word.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            let digits = word.chars().any(|c| c.is_ascii_digit());
            let letters = word.chars().any(|c| c.is_alphabetic());
            if digits && !letters {
                out.push_str("<n>");
            } else if digits || word.contains(['_', '.']) {
                out.push_str("<id>");
            } else {
                out.push_str(&word);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPartState {
    Queued,
    Running,
    Retrying,
    Succeeded,
    Failed,
    Cancelled,
}

impl RunPartState {
    pub fn label(self) -> (&'static str, char) {
        match self {
            RunPartState::Queued => ("queued", '·'),
            RunPartState::Running => ("running", '▶'),
            RunPartState::Retrying => ("retrying", '↻'),
            RunPartState::Succeeded => ("done", '✓'),
            RunPartState::Failed => ("failed", '✗'),
            RunPartState::Cancelled => ("cancelled", '⊘'),
        }
    }
}

pub struct RunPartition {
    pub name: String,
    pub state: RunPartState,
    pub attempt: i64,
    pub duration_ms: Option<u64>,
    pub rows_deleted: i64,
    pub rows_inserted: i64,
    pub rows_updated: i64,
    pub content_changed: Option<bool>,
    pub error: Option<String>,
    pub log: VecDeque<String>,
}

impl RunPartition {
    fn push_log(&mut self, line: String) {
        if self.log.len() >= LOG_LINES {
            self.log.pop_front();
        }
        self.log.push_back(line);
    }
}

pub struct RunFinish {
    pub succeeded: usize,
    pub failed: usize,
    pub not_started: usize,
    pub cancelled: bool,
    pub duration_ms: u64,
}

pub struct RunView {
    pub id: usize,
    pub run_id: Option<String>,
    pub job: String,
    pub strategy: Strategy,
    pub concurrency: usize,
    pub reason: Option<String>,
    pub started: NaiveDateTime,
    pub partitions: Vec<RunPartition>,
    index: HashMap<String, usize>,
    pub selected: usize,
    pub cancel_requested: bool,
    pub finished: Option<RunFinish>,
    pub error: Option<String>,
}

impl RunView {
    pub fn active(&self) -> bool {
        self.finished.is_none() && self.error.is_none()
    }

    /// Partitions that ran to an end, succeeded or failed.
    pub fn done(&self) -> usize {
        self.partitions
            .iter()
            .filter(|p| matches!(p.state, RunPartState::Succeeded | RunPartState::Failed))
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Question {
    CancelRun(usize),
    Quit,
}

pub struct ConfirmState {
    pub job: usize,
    /// Partition indices chosen before the state filter.
    pub candidates: Vec<usize>,
    /// Only partitions in these states (empty: all).
    pub only: Vec<LoadState>,
    pub reason: Input,
    pub editing_reason: bool,
    /// Merge jobs: also run every window after the chosen ones through the
    /// latest loaded one (`--through-latest`).
    pub through_latest: bool,
}

pub enum Modal {
    None,
    Help {
        scroll: u16,
    },
    Filter,
    Command(Input),
    Confirm(ConfirmState),
    Question(Question),
    Errors {
        selected: usize,
    },
    /// What changed since a stale partition was loaded ([`App::definition_diff`]).
    Diff {
        scroll: u16,
    },
}

/// Everything that can happen to the console.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    Tick(NaiveDateTime),
    /// The warehouse connection is up (its display URL), or could not be made.
    Connected(Result<String, String>),
    Status {
        job: String,
        result: Result<Vec<PartitionStatus>, String>,
    },
    Engine {
        run: usize,
        event: Event,
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
        result: Result<Option<String>, String>,
    },
}

impl Msg {
    /// The message for a terminal event, if it means anything to the console.
    pub fn from_terminal(event: TermEvent) -> Option<Msg> {
        match event {
            TermEvent::Key(k) if k.kind != KeyEventKind::Release => Some(Msg::Key(k)),
            TermEvent::Mouse(m) => Some(Msg::Mouse(m)),
            TermEvent::Resize(w, h) => Some(Msg::Resize(w, h)),
            _ => None,
        }
    }
}

/// A run the operator confirmed: the event loop plans it with the engine,
/// keeps exactly these partitions, and runs it.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub run: usize,
    pub job: Job,
    pub partitions: Vec<Partition>,
    pub concurrency: usize,
    pub retries: u32,
    pub reason: Option<String>,
}

/// Prove a partition idempotent: load it twice, compare, roll back.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    pub id: usize,
    pub job: Job,
    pub partition: Partition,
}

/// The latest verification: of one job's partition, running or ended.
#[derive(Debug, Clone)]
pub struct VerifyView {
    pub id: usize,
    pub job: String,
    pub partition: Partition,
    /// `None` while verifying.
    pub result: Option<Result<Verification, String>>,
}

/// Read the definition a partition was loaded under and diff it against the
/// job's current one.
#[derive(Debug, Clone)]
pub struct DiffRequest {
    pub id: usize,
    pub job: Job,
    pub hash: String,
}

/// What changed in a job's definition since a stale partition was loaded.
#[derive(Debug, Clone)]
pub struct DiffView {
    pub id: usize,
    pub job: String,
    pub partition: Partition,
    /// The definition the partition was loaded under, and the job's now.
    pub loaded_under: String,
    pub current: String,
    /// `None` while reading; then the unified diff, or `None` inside when
    /// the ledger does not hold the old definition.
    pub result: Option<Result<Option<String>, String>>,
}

/// Work `update` asks the event loop to do in the background.
#[derive(Debug)]
pub enum Effect {
    Connect,
    Refresh(Vec<String>),
    StartRun(Box<RunRequest>),
    Verify(Box<VerifyRequest>),
    DefinitionDiff(Box<DiffRequest>),
    Cancel(usize),
    Quit,
}

pub struct App {
    pub config: Config,
    pub jobs: Vec<JobView>,
    pub current: usize,
    pub focus: Focus,
    pub modal: Modal,
    pub filter: Input,
    pub theme: Theme,
    pub mouse: bool,
    pub now: NaiveDateTime,
    pub size: (u16, u16),
    pub url: String,
    pub connected: bool,
    pub connecting: bool,
    pub db_error: Option<String>,
    /// A one-line note in the status bar: (is an error, text).
    pub message: Option<(bool, String)>,
    pub rows_mode: bool,
    pub runs: Vec<RunView>,
    pub selected_run: usize,
    /// The latest verification; another one replaces it.
    pub verification: Option<VerifyView>,
    /// The latest "what changed" of a stale partition.
    pub definition_diff: Option<DiffView>,
    pub quit: bool,
    /// Something changed since the last draw.
    pub dirty: bool,
    last_refresh: Option<NaiveDateTime>,
    last_connect: Option<NaiveDateTime>,
    drag_from: Option<usize>,
    next_run: usize,
    next_request: usize,
}

impl App {
    pub fn new(config: Config, theme: Theme, now: NaiveDateTime) -> App {
        let jobs = config
            .jobs
            .iter()
            .map(|j| JobView::new(j.clone(), now))
            .collect();
        let url = crate::warehouse::redact(&config.warehouse.url);
        let mut app = App {
            config,
            jobs,
            current: 0,
            focus: Focus::Calendar,
            modal: Modal::None,
            filter: Input::default(),
            theme,
            mouse: true,
            now,
            size: (80, 24),
            url,
            connected: false,
            connecting: false,
            db_error: None,
            message: None,
            rows_mode: false,
            runs: Vec::new(),
            selected_run: 0,
            verification: None,
            definition_diff: None,
            quit: false,
            dirty: true,
            last_refresh: None,
            last_connect: None,
            drag_from: None,
            next_run: 1,
            next_request: 1,
        };
        app.fix_scroll_all();
        app
    }

    /// The first effects: connect to the warehouse.
    pub fn start(&mut self) -> Vec<Effect> {
        self.connecting = true;
        self.last_connect = Some(self.now);
        vec![Effect::Connect]
    }

    pub fn job(&self) -> Option<&JobView> {
        self.jobs.get(self.current)
    }

    fn job_mut(&mut self) -> Option<&mut JobView> {
        self.jobs.get_mut(self.current)
    }

    /// Jobs whose names match the `/` filter.
    pub fn visible_jobs(&self) -> Vec<usize> {
        let f = self.filter.value().to_lowercase();
        (0..self.jobs.len())
            .filter(|i| f.is_empty() || self.jobs[*i].job.name.to_lowercase().contains(&f))
            .collect()
    }

    pub fn active_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.active()).count()
    }

    pub fn loading(&self) -> bool {
        self.connecting || self.jobs.iter().any(|j| j.loading)
    }

    /// The key scope in force.
    pub fn scope(&self) -> Scope {
        match &self.modal {
            Modal::Confirm(_) => Scope::Confirm,
            Modal::Question(_) => Scope::Question,
            Modal::Errors { .. } => Scope::List,
            Modal::Help { .. } => Scope::Help,
            Modal::Diff { .. } => Scope::Diff,
            Modal::Filter | Modal::Command(_) => Scope::Input,
            Modal::None => Scope::Main,
        }
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Tick(now) => self.tick(now),
            other => {
                self.dirty = true;
                let effects = match other {
                    Msg::Key(k) => self.key(k),
                    Msg::Mouse(m) => self.mouse_event(m),
                    Msg::Resize(w, h) => {
                        self.size = (w, h);
                        self.fix_scroll_all();
                        Vec::new()
                    }
                    Msg::Connected(r) => self.connected_msg(r),
                    Msg::Status { job, result } => self.status_msg(&job, result),
                    Msg::Engine { run, event } => self.engine_event(run, event),
                    Msg::RunRejected { run, error } => {
                        if let Some(r) = self.runs.iter_mut().find(|r| r.id == run) {
                            r.error = Some(error.clone());
                        }
                        self.message = Some((true, format!("run not started: {error}")));
                        Vec::new()
                    }
                    Msg::Verified { id, result } => {
                        self.verified(id, result);
                        Vec::new()
                    }
                    Msg::DefinitionDiff { id, result } => {
                        if let Some(d) = self.definition_diff.as_mut().filter(|d| d.id == id) {
                            d.result = Some(result);
                        }
                        Vec::new()
                    }
                    Msg::Tick(_) => Vec::new(),
                };
                self.fix_scroll_all();
                effects
            }
        }
    }

    fn tick(&mut self, now: NaiveDateTime) -> Vec<Effect> {
        let minute_changed =
            now.format("%H:%M").to_string() != self.now.format("%H:%M").to_string();
        self.now = now;
        if minute_changed || self.active_runs() > 0 {
            self.dirty = true;
        }
        let due = |last: Option<NaiveDateTime>| {
            last.is_none_or(|t| (now - t).num_seconds() >= REFRESH_SECS)
        };
        if self.connected {
            if due(self.last_refresh) {
                return self.refresh_all();
            }
        } else if !self.connecting && due(self.last_connect) {
            self.connecting = true;
            self.last_connect = Some(now);
            self.dirty = true;
            return vec![Effect::Connect];
        }
        Vec::new()
    }

    fn refresh_all(&mut self) -> Vec<Effect> {
        self.last_refresh = Some(self.now);
        if !self.connected {
            if self.connecting {
                return Vec::new();
            }
            self.connecting = true;
            self.last_connect = Some(self.now);
            return vec![Effect::Connect];
        }
        let names: Vec<String> = self
            .jobs
            .iter_mut()
            .filter_map(|j| {
                if j.loading {
                    j.refresh_again = true;
                    None
                } else {
                    j.loading = true;
                    Some(j.job.name.clone())
                }
            })
            .collect();
        self.dirty = true;
        if names.is_empty() {
            Vec::new()
        } else {
            vec![Effect::Refresh(names)]
        }
    }

    fn refresh_job(&mut self, name: &str) -> Vec<Effect> {
        if !self.connected {
            return Vec::new();
        }
        let Some(j) = self.jobs.iter_mut().find(|j| j.job.name == name) else {
            return Vec::new();
        };
        if j.loading {
            j.refresh_again = true;
            return Vec::new();
        }
        j.loading = true;
        vec![Effect::Refresh(vec![name.to_string()])]
    }

    fn connected_msg(&mut self, result: Result<String, String>) -> Vec<Effect> {
        self.connecting = false;
        match result {
            Ok(url) => {
                self.url = url;
                self.connected = true;
                self.db_error = None;
                self.refresh_all()
            }
            Err(e) => {
                self.connected = false;
                self.db_error = Some(e);
                Vec::new()
            }
        }
    }

    fn status_msg(
        &mut self,
        name: &str,
        result: Result<Vec<PartitionStatus>, String>,
    ) -> Vec<Effect> {
        let Some(j) = self.jobs.iter_mut().find(|j| j.job.name == name) else {
            return Vec::new();
        };
        j.loading = false;
        match result {
            Ok(statuses) => {
                j.apply_statuses(statuses);
                self.db_error = None;
            }
            Err(e) => {
                j.error = Some(e.clone());
                self.db_error = Some(e);
            }
        }
        let again = std::mem::take(&mut j.refresh_again);
        if again {
            return self.refresh_job(name);
        }
        Vec::new()
    }

    // ---- keys -------------------------------------------------------------

    fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
        // Ctrl-C quits from anywhere, asking first while a run is in flight.
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            if matches!(self.modal, Modal::Question(Question::Quit)) || self.active_runs() == 0 {
                return self.quit_now();
            }
            self.modal = Modal::Question(Question::Quit);
            return Vec::new();
        }
        let modal = std::mem::replace(&mut self.modal, Modal::None);
        match modal {
            Modal::None => self.main_key(key),
            Modal::Help { scroll } => {
                match action_for(Scope::Help, &key) {
                    Some(Action::Down) => {
                        self.modal = Modal::Help {
                            scroll: scroll.saturating_add(1),
                        }
                    }
                    Some(Action::Up) => {
                        self.modal = Modal::Help {
                            scroll: scroll.saturating_sub(1),
                        }
                    }
                    _ => {}
                }
                Vec::new()
            }
            Modal::Diff { scroll } => {
                match action_for(Scope::Diff, &key) {
                    Some(Action::Down) => {
                        self.modal = Modal::Diff {
                            scroll: scroll.saturating_add(1),
                        }
                    }
                    Some(Action::Up) => {
                        self.modal = Modal::Diff {
                            scroll: scroll.saturating_sub(1),
                        }
                    }
                    Some(Action::Close) => {}
                    _ => self.modal = Modal::Diff { scroll },
                }
                Vec::new()
            }
            Modal::Filter => {
                match action_for(Scope::Input, &key) {
                    Some(Action::Confirm) => {}
                    Some(Action::Close) => {
                        self.filter.reset();
                        self.ensure_visible_job();
                    }
                    _ => {
                        if let Some(req) = to_input_request(&TermEvent::Key(key)) {
                            self.filter.handle(req);
                        }
                        self.ensure_visible_job();
                        self.modal = Modal::Filter;
                    }
                }
                Vec::new()
            }
            Modal::Command(mut input) => match action_for(Scope::Input, &key) {
                Some(Action::Confirm) => self.command(input.value().trim()),
                Some(Action::Close) => Vec::new(),
                _ => {
                    if let Some(req) = to_input_request(&TermEvent::Key(key)) {
                        input.handle(req);
                    }
                    self.modal = Modal::Command(input);
                    Vec::new()
                }
            },
            Modal::Confirm(mut c) => {
                if c.editing_reason {
                    match key.code {
                        KeyCode::Enter | KeyCode::Tab | KeyCode::Esc => c.editing_reason = false,
                        _ => {
                            if let Some(req) = to_input_request(&TermEvent::Key(key)) {
                                c.reason.handle(req);
                            }
                        }
                    }
                    self.modal = Modal::Confirm(c);
                    return Vec::new();
                }
                match action_for(Scope::Confirm, &key) {
                    Some(Action::Confirm) => return self.start_run(c),
                    Some(Action::Close) => return Vec::new(),
                    Some(Action::OnlyAll) => c.only.clear(),
                    Some(Action::OnlyFailed) => c.only = vec![LoadState::Failed],
                    Some(Action::OnlyMissing) => c.only = vec![LoadState::Missing],
                    Some(Action::OnlyStale) => c.only = vec![LoadState::Stale],
                    Some(Action::EditReason) => c.editing_reason = true,
                    Some(Action::ThroughLatest) => {
                        if c.through_latest || self.merge_order_risk(&c).is_some() {
                            c.through_latest = !c.through_latest;
                            self.message = None;
                        } else {
                            self.message = Some((
                                false,
                                "no later window is loaded: nothing to extend".into(),
                            ));
                        }
                    }
                    _ => {}
                }
                self.modal = Modal::Confirm(c);
                Vec::new()
            }
            Modal::Question(q) => match action_for(Scope::Question, &key) {
                Some(Action::Yes) => match q {
                    Question::Quit => self.quit_now(),
                    Question::CancelRun(id) => {
                        if let Some(r) = self.runs.iter_mut().find(|r| r.id == id) {
                            r.cancel_requested = true;
                        }
                        vec![Effect::Cancel(id)]
                    }
                },
                Some(Action::No) => Vec::new(),
                _ => {
                    self.modal = Modal::Question(q);
                    Vec::new()
                }
            },
            Modal::Errors { selected } => {
                let groups = self.error_groups();
                match action_for(Scope::List, &key) {
                    Some(Action::Down) => {
                        self.modal = Modal::Errors {
                            selected: (selected + 1).min(groups.len().saturating_sub(1)),
                        }
                    }
                    Some(Action::Up) => {
                        self.modal = Modal::Errors {
                            selected: selected.saturating_sub(1),
                        }
                    }
                    Some(Action::Confirm) => {
                        if let (Some(g), Some(j)) = (groups.get(selected), self.job_mut()) {
                            j.anchor = None;
                            j.selected = g.partitions.iter().copied().collect();
                            if let Some(first) = g.partitions.first() {
                                j.cursor = *first;
                            }
                            self.focus = Focus::Calendar;
                            self.message = Some((
                                false,
                                format!(
                                    "selected {} partitions failing with: {}; r re-runs them",
                                    g.partitions.len(),
                                    g.signature
                                ),
                            ));
                        }
                    }
                    Some(Action::Close) => {}
                    _ => self.modal = Modal::Errors { selected },
                }
                Vec::new()
            }
        }
    }

    fn quit_now(&mut self) -> Vec<Effect> {
        self.quit = true;
        let mut effects: Vec<Effect> = self
            .runs
            .iter()
            .filter(|r| r.active())
            .map(|r| Effect::Cancel(r.id))
            .collect();
        effects.push(Effect::Quit);
        effects
    }

    fn ensure_visible_job(&mut self) {
        let visible = self.visible_jobs();
        if !visible.contains(&self.current)
            && let Some(first) = visible.first()
        {
            self.current = *first;
        }
    }

    fn main_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        match action_for(Scope::Main, &key) {
            Some(action) => self.action(action),
            None => Vec::new(),
        }
    }

    /// Does what a main-screen action asks.
    pub fn action(&mut self, action: Action) -> Vec<Effect> {
        self.message = None;
        let now = self.now;
        match action {
            Action::Left | Action::Right | Action::Up | Action::Down => {
                self.direction(action);
            }
            Action::PrevMonth | Action::NextMonth => {
                let back = action == Action::PrevMonth;
                if let Some(j) = self.job_mut() {
                    let grain = j.grain();
                    j.move_to(|p| {
                        let t = match (grain, back) {
                            (Grain::Month, true) => p.start.checked_sub_months(Months::new(12)),
                            (Grain::Month, false) => p.start.checked_add_months(Months::new(12)),
                            (_, true) => p.start.checked_sub_months(Months::new(1)),
                            (_, false) => p.start.checked_add_months(Months::new(1)),
                        }?;
                        Some(Partition::containing(grain, t))
                    });
                }
            }
            Action::First => {
                if let Some(j) = self.job_mut() {
                    j.set_cursor(0);
                }
            }
            Action::Last => {
                if let Some(j) = self.job_mut() {
                    let i = j.last_complete(now);
                    j.set_cursor(i);
                }
            }
            Action::NextJob | Action::PrevJob => self.step_job(action == Action::NextJob),
            Action::FocusNext | Action::FocusPrev => {
                let order = if self.runs.is_empty() {
                    vec![Focus::Jobs, Focus::Calendar]
                } else {
                    vec![Focus::Jobs, Focus::Calendar, Focus::Runs]
                };
                let i = order.iter().position(|f| *f == self.focus).unwrap_or(0);
                let n = order.len();
                let next = if action == Action::FocusNext {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.focus = order[next];
            }
            Action::Activate => match self.focus {
                Focus::Jobs => self.focus = Focus::Calendar,
                Focus::Calendar => return self.open_confirm(None),
                Focus::Runs => self.show_run_partition(),
            },
            Action::RangeSelect => {
                if let Some(j) = self.job_mut() {
                    if j.anchor.is_some() {
                        j.anchor = None;
                    } else {
                        j.anchor = Some(j.cursor);
                        j.selected = [j.cursor].into_iter().collect();
                    }
                }
                self.focus = Focus::Calendar;
            }
            Action::SelectFailed | Action::SelectMissing | Action::SelectStale => {
                let state = match action {
                    Action::SelectFailed => LoadState::Failed,
                    Action::SelectMissing => LoadState::Missing,
                    _ => LoadState::Stale,
                };
                if let Some(j) = self.job_mut() {
                    let n = j.select_state(state);
                    let name = j.job.name.clone();
                    self.message = Some((
                        false,
                        if n == 0 {
                            format!("no {} partitions in {name}", state.name())
                        } else {
                            format!("selected {n} {} partitions of {name}", state.name())
                        },
                    ));
                }
                self.focus = Focus::Calendar;
            }
            Action::ClearSelection => {
                if let Some(j) = self.job_mut() {
                    j.anchor = None;
                    j.selected.clear();
                }
            }
            Action::ErrorGroups => {
                if self.error_groups().is_empty() {
                    self.message = Some((false, "no failed partitions in this job".into()));
                } else {
                    self.modal = Modal::Errors { selected: 0 };
                }
            }
            Action::Run => return self.open_confirm(None),
            Action::Verify => return self.verify(),
            Action::WhatChanged => return self.what_changed(),
            Action::Cancel => {
                let run = self
                    .runs
                    .get(self.selected_run)
                    .filter(|r| r.active())
                    .or_else(|| self.runs.iter().rev().find(|r| r.active()));
                match run {
                    Some(r) if r.cancel_requested => {
                        self.message = Some((false, "cancelling…".into()));
                    }
                    Some(r) => self.modal = Modal::Question(Question::CancelRun(r.id)),
                    None => self.message = Some((false, "no run in flight".into())),
                }
            }
            Action::ToggleRows => self.rows_mode = !self.rows_mode,
            Action::Filter => {
                self.modal = Modal::Filter;
                self.focus = Focus::Jobs;
            }
            Action::Command => self.modal = Modal::Command(Input::default()),
            Action::Refresh => {
                self.message = Some((false, "refreshing…".into()));
                return self.refresh_all();
            }
            Action::Help => self.modal = Modal::Help { scroll: 0 },
            Action::Quit | Action::Interrupt => {
                if self.active_runs() > 0 {
                    self.modal = Modal::Question(Question::Quit);
                } else {
                    return self.quit_now();
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn direction(&mut self, action: Action) {
        match self.focus {
            Focus::Jobs => match action {
                Action::Down => self.step_job(true),
                Action::Up => self.step_job(false),
                Action::Right => self.focus = Focus::Calendar,
                _ => {}
            },
            Focus::Runs => {
                let Some(run) = self.runs.get_mut(self.selected_run) else {
                    return;
                };
                match action {
                    Action::Down => {
                        run.selected =
                            (run.selected + 1).min(run.partitions.len().saturating_sub(1))
                    }
                    Action::Up => run.selected = run.selected.saturating_sub(1),
                    Action::Left => self.selected_run = self.selected_run.saturating_sub(1),
                    Action::Right => {
                        self.selected_run = (self.selected_run + 1).min(self.runs.len() - 1)
                    }
                    _ => {}
                }
            }
            Focus::Calendar => {
                if let Some(j) = self.job_mut() {
                    let vertical = match j.grain() {
                        Grain::Day => 7,
                        Grain::Hour => 24,
                        Grain::Month => 12,
                    };
                    match action {
                        Action::Left => j.step(-1),
                        Action::Right => j.step(1),
                        Action::Up => j.step(-vertical),
                        Action::Down => j.step(vertical),
                        _ => {}
                    }
                }
            }
        }
    }

    /// Moves the calendar to the partition selected in the run pane.
    fn show_run_partition(&mut self) {
        let Some(run) = self.runs.get(self.selected_run) else {
            return;
        };
        let Some(name) = run.partitions.get(run.selected).map(|p| p.name.clone()) else {
            return;
        };
        let Some(i) = self.jobs.iter().position(|j| j.job.name == run.job) else {
            return;
        };
        self.filter.reset();
        self.current = i;
        let j = &mut self.jobs[i];
        if let Some(p) = Partition::parse(j.grain(), &name, RangeEnd::From) {
            j.anchor = None;
            j.move_to(|_| Some(p));
        }
        self.focus = Focus::Calendar;
    }

    fn step_job(&mut self, forward: bool) {
        let visible = self.visible_jobs();
        if visible.is_empty() {
            return;
        }
        let pos = visible.iter().position(|i| *i == self.current).unwrap_or(0);
        let next = if forward {
            (pos + 1).min(visible.len() - 1)
        } else {
            pos.saturating_sub(1)
        };
        self.current = visible[next];
    }

    // ---- selection and runs ----------------------------------------------

    /// The partitions a run would take: the selection, else the cursor's.
    fn chosen(&self) -> Vec<usize> {
        let Some(j) = self.job() else {
            return Vec::new();
        };
        if j.selected.is_empty() {
            vec![j.cursor]
        } else {
            j.selected.iter().copied().collect()
        }
    }

    fn open_confirm(&mut self, preset: Option<(Vec<usize>, Vec<LoadState>)>) -> Vec<Effect> {
        let (candidates, only) = preset.unwrap_or_else(|| (self.chosen(), Vec::new()));
        let Some(j) = self.job() else {
            return Vec::new();
        };
        if !j.loaded {
            self.message = Some((
                true,
                "states are still loading; try again in a moment".into(),
            ));
            return Vec::new();
        }
        let runnable: Vec<usize> = candidates
            .into_iter()
            .filter(|i| {
                !matches!(
                    j.state_at(*i),
                    None | Some(LoadState::Future) | Some(LoadState::Running)
                )
            })
            .collect();
        if runnable.is_empty() {
            self.message = Some((
                true,
                "nothing to run: the selection is in the future or already running".into(),
            ));
            return Vec::new();
        }
        self.modal = Modal::Confirm(ConfirmState {
            job: self.current,
            candidates: runnable,
            only,
            reason: Input::default(),
            editing_reason: false,
            through_latest: false,
        });
        Vec::new()
    }

    /// The partitions chosen in the confirm dialog, after its state filter
    /// and before any extension through the latest loaded window.
    pub fn confirm_filtered(&self, c: &ConfirmState) -> Vec<usize> {
        let Some(j) = self.jobs.get(c.job) else {
            return Vec::new();
        };
        c.candidates
            .iter()
            .copied()
            .filter(|i| c.only.is_empty() || j.state_at(*i).is_some_and(|s| c.only.contains(&s)))
            .collect()
    }

    /// The confirm dialog's choice as the engine's backfill, and the job.
    fn confirm_backfill(&self, c: &ConfirmState) -> Option<(&JobView, Backfill)> {
        let j = self.jobs.get(c.job)?;
        let partitions = self
            .confirm_filtered(c)
            .into_iter()
            .filter_map(|i| j.partitions.get(i).copied())
            .collect();
        let backfill = Backfill {
            job: j.job.clone(),
            partitions,
            concurrency: self.config.defaults.concurrency,
            retries: self.config.defaults.retries,
            reason: None,
            prior_attempts: HashMap::new(),
        };
        Some((j, backfill))
    }

    /// For merge jobs: windows loaded after the chosen ones, which re-running
    /// the older ones alone would set back to older values (the engine's
    /// rule, from the states the console holds).
    pub fn merge_order_risk(&self, c: &ConfirmState) -> Option<MergeOrderRisk> {
        let (j, backfill) = self.confirm_backfill(c)?;
        backfill.merge_order_risk_in(&j.statuses)
    }

    /// The partitions the confirm dialog will run, in ascending order: the
    /// filtered choice, extended through the latest loaded window when asked.
    pub fn confirm_partitions(&self, c: &ConfirmState) -> Vec<usize> {
        if !c.through_latest {
            return self.confirm_filtered(c);
        }
        let Some((j, mut backfill)) = self.confirm_backfill(c) else {
            return Vec::new();
        };
        if let Some(risk) = backfill.merge_order_risk_in(&j.statuses) {
            backfill.extend_through_latest(&risk);
        }
        backfill
            .partitions
            .iter()
            .filter_map(|p| j.index_of(*p))
            .collect()
    }

    fn start_run(&mut self, c: ConfirmState) -> Vec<Effect> {
        let chosen = self.confirm_partitions(&c);
        let Some(j) = self.jobs.get_mut(c.job) else {
            return Vec::new();
        };
        if chosen.is_empty() {
            self.message = Some((true, "no partition matches the filter; nothing ran".into()));
            return Vec::new();
        }
        if !self.connected {
            self.message = Some((true, "not connected to the warehouse; nothing ran".into()));
            return Vec::new();
        }
        let reason = c.reason.value().trim().to_string();
        let reason = (!reason.is_empty()).then_some(reason);
        let partitions: Vec<Partition> = chosen.iter().map(|i| j.partitions[*i]).collect();
        let concurrency = match j.job.strategy {
            Strategy::MergeKey => 1,
            Strategy::ReplacePartition => self.config.defaults.concurrency.max(1),
        };
        j.selected.clear();
        j.anchor = None;
        let id = self.next_run;
        self.next_run += 1;
        let names: Vec<String> = partitions.iter().map(Partition::name).collect();
        self.runs.push(RunView {
            id,
            run_id: None,
            job: j.job.name.clone(),
            strategy: j.job.strategy,
            concurrency,
            reason: reason.clone(),
            started: self.now,
            index: names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect(),
            partitions: names
                .into_iter()
                .map(|name| RunPartition {
                    name,
                    state: RunPartState::Queued,
                    attempt: 0,
                    duration_ms: None,
                    rows_deleted: 0,
                    rows_inserted: 0,
                    rows_updated: 0,
                    content_changed: None,
                    error: None,
                    log: VecDeque::new(),
                })
                .collect(),
            selected: 0,
            cancel_requested: false,
            finished: None,
            error: None,
        });
        self.selected_run = self.runs.len() - 1;
        vec![Effect::StartRun(Box::new(RunRequest {
            run: id,
            job: j.job.clone(),
            partitions,
            concurrency: self.config.defaults.concurrency,
            retries: self.config.defaults.retries,
            reason,
        }))]
    }

    // ---- verification ------------------------------------------------------

    /// Starts proving the cursor's partition idempotent, in the background.
    fn verify(&mut self) -> Vec<Effect> {
        let connected = self.connected;
        let Some(j) = self.job() else {
            return Vec::new();
        };
        let Some(partition) = j.partitions.get(j.cursor).copied() else {
            return Vec::new();
        };
        let refuse = match j.state_at(j.cursor) {
            Some(LoadState::Future) => Some("is in the future"),
            Some(LoadState::Running) => Some("is running; verify it when the run ends"),
            _ if !connected => Some("cannot be verified: not connected to the warehouse"),
            _ => None,
        };
        if let Some(why) = refuse {
            self.message = Some((true, format!("{} {why}", partition.name())));
            return Vec::new();
        }
        let job = j.job.clone();
        let id = self.next_request;
        self.next_request += 1;
        self.verification = Some(VerifyView {
            id,
            job: job.name.clone(),
            partition,
            result: None,
        });
        self.message = Some((
            false,
            format!(
                "verifying {} {}: loading it twice, then rolling back…",
                job.name,
                partition.name()
            ),
        ));
        vec![Effect::Verify(Box::new(VerifyRequest {
            id,
            job,
            partition,
        }))]
    }

    fn verified(&mut self, id: usize, result: Result<Verification, String>) {
        // A result of a verification since replaced is dropped.
        let Some(v) = self.verification.as_mut().filter(|v| v.id == id) else {
            return;
        };
        let what = format!("{} {}", v.job, v.partition.name());
        self.message = Some(match &result {
            Ok(r) if r.is_idempotent() => (false, format!("{what}: idempotent; rolled back")),
            Ok(_) => (true, format!("{what}: NOT idempotent; rolled back")),
            Err(e) => (true, format!("{what}: verify failed: {e}")),
        });
        v.result = Some(result);
    }

    /// Opens what changed since the cursor's stale partition was loaded; the
    /// old definition is read in the background.
    fn what_changed(&mut self) -> Vec<Effect> {
        let connected = self.connected;
        let Some(j) = self.job() else {
            return Vec::new();
        };
        let Some(partition) = j.partitions.get(j.cursor).copied() else {
            return Vec::new();
        };
        let name = partition.name();
        let success = j.status_at(j.cursor).and_then(|s| s.last_success.clone());
        let refuse = match (j.state_at(j.cursor), &success) {
            (None, _) => Some("states are still loading; try again in a moment".to_string()),
            (Some(LoadState::Stale), Some(_)) if !connected => {
                Some("not connected to the warehouse".to_string())
            }
            (Some(LoadState::Stale), Some(_)) => None,
            (Some(LoadState::Loaded | LoadState::Empty), _) => Some(format!(
                "{name} is not stale: it was loaded under the job's current definition"
            )),
            (Some(state), _) => Some(format!(
                "{name} is not stale ({}): d shows what changed since a stale partition was loaded",
                state.name()
            )),
        };
        if let Some(why) = refuse {
            self.message = Some((false, why));
            return Vec::new();
        }
        let Some(success) = success else {
            return Vec::new();
        };
        let job = j.job.clone();
        let id = self.next_request;
        self.next_request += 1;
        self.definition_diff = Some(DiffView {
            id,
            job: job.name.clone(),
            partition,
            loaded_under: success.definition_hash.clone(),
            current: job.definition_hash(),
            result: None,
        });
        self.modal = Modal::Diff { scroll: 0 };
        vec![Effect::DefinitionDiff(Box::new(DiffRequest {
            id,
            job,
            hash: success.definition_hash,
        }))]
    }

    /// The verification of the cursor's partition, if it is the latest one.
    pub fn cursor_verification(&self) -> Option<&VerifyView> {
        let j = self.job()?;
        let p = j.partitions.get(j.cursor)?;
        self.verification
            .as_ref()
            .filter(|v| v.job == j.job.name && v.partition == *p)
    }

    /// The equivalent headless command of a confirm dialog.
    pub fn equivalent_command(&self, c: &ConfirmState) -> String {
        let chosen = self.confirm_filtered(c);
        let Some(j) = self.jobs.get(c.job) else {
            return String::new();
        };
        let (Some(first), Some(last)) = (chosen.first(), chosen.last()) else {
            return format!("idem run {}", j.job.name);
        };
        let mut cmd = format!(
            "idem run {} --from {} --to {}",
            j.job.name,
            j.partitions[*first].name(),
            j.partitions[*last].name()
        );
        let span: Vec<usize> = (*first..=*last).collect();
        let only: Vec<LoadState> = if !c.only.is_empty() {
            c.only.clone()
        } else if span != chosen {
            let mut states: Vec<LoadState> = chosen.iter().filter_map(|i| j.state_at(*i)).collect();
            states.sort();
            states.dedup();
            states
        } else {
            Vec::new()
        };
        let mut note = String::new();
        if !only.is_empty() {
            let covered = span
                .iter()
                .filter(|i| j.state_at(**i).is_some_and(|s| only.contains(&s)))
                .count();
            let names: Vec<&str> = only.iter().map(|s| s.name()).collect();
            cmd.push_str(&format!(" --only {}", names.join(",")));
            if covered > chosen.len() {
                note = format!(
                    "   # also takes {} more {} in between",
                    covered - chosen.len(),
                    names.join("/")
                );
            }
        }
        if c.through_latest && self.merge_order_risk(c).is_some() {
            cmd.push_str(" --through-latest");
        }
        let reason = c.reason.value().trim();
        if !reason.is_empty() {
            cmd.push_str(&format!(" --reason '{}'", reason.replace('\'', "'\\''")));
        }
        cmd.push_str(&note);
        cmd
    }

    pub fn error_groups(&self) -> Vec<ErrorGroup> {
        let Some(j) = self.job() else {
            return Vec::new();
        };
        let mut groups: Vec<ErrorGroup> = Vec::new();
        for (i, s) in j.statuses.iter().enumerate() {
            if s.state != LoadState::Failed {
                continue;
            }
            let error = s
                .last_attempt
                .as_ref()
                .and_then(|a| a.error.clone())
                .unwrap_or_else(|| "(no error recorded)".into());
            let sig = error_signature(&error);
            match groups.iter_mut().find(|g| g.signature == sig) {
                Some(g) => g.partitions.push(i),
                None => groups.push(ErrorGroup {
                    signature: sig,
                    example: error.lines().next().unwrap_or("").to_string(),
                    partitions: vec![i],
                }),
            }
        }
        groups.sort_by_key(|g| std::cmp::Reverse(g.partitions.len()));
        groups
    }

    // ---- engine events -----------------------------------------------------

    fn engine_event(&mut self, run: usize, event: Event) -> Vec<Effect> {
        let Some(r) = self.runs.iter_mut().find(|r| r.id == run) else {
            return Vec::new();
        };
        let job_name = r.job.clone();
        let Some(j) = self.jobs.iter_mut().find(|j| j.job.name == job_name) else {
            return Vec::new();
        };
        if let Some((partition, end)) = event.attempt_end() {
            crate::state::apply_attempt(&j.job, &mut j.statuses, partition, end);
        }
        match event {
            Event::RunStarted {
                run_id,
                concurrency,
                ..
            } => {
                r.run_id = Some(run_id);
                r.concurrency = concurrency;
            }
            Event::PartitionStarted {
                partition, attempt, ..
            } => {
                if let Some(p) = r
                    .index
                    .get(&partition)
                    .and_then(|i| r.partitions.get_mut(*i))
                {
                    p.state = RunPartState::Running;
                    p.attempt = attempt;
                    p.push_log(format!("attempt {attempt}"));
                }
                j.in_flight.insert(partition);
            }
            Event::PartitionLog {
                partition, line, ..
            } => {
                if let Some(p) = r
                    .index
                    .get(&partition)
                    .and_then(|i| r.partitions.get_mut(*i))
                {
                    p.push_log(line);
                }
            }
            Event::PartitionSucceeded {
                partition,
                attempt,
                rows_deleted,
                rows_inserted,
                rows_updated,
                duration_ms,
                fingerprint,
                content_changed,
                ..
            } => {
                if let Some(p) = r
                    .index
                    .get(&partition)
                    .and_then(|i| r.partitions.get_mut(*i))
                {
                    p.state = RunPartState::Succeeded;
                    p.duration_ms = Some(duration_ms);
                    p.rows_deleted = rows_deleted;
                    p.rows_inserted = rows_inserted;
                    p.rows_updated = rows_updated;
                    p.content_changed = Some(content_changed);
                    p.push_log(format!(
                        "fingerprint {} · content {}",
                        short(&fingerprint),
                        if content_changed {
                            "changed"
                        } else {
                            "unchanged"
                        }
                    ));
                }
                j.in_flight.remove(&partition);
                j.live.insert(
                    partition.clone(),
                    LiveAttempt {
                        attempt,
                        succeeded: true,
                        duration_ms,
                        error: None,
                    },
                );
            }
            Event::PartitionFailed {
                partition,
                attempt,
                error,
                will_retry,
                duration_ms,
                ..
            } => {
                let cancelled = error.starts_with("cancelled");
                if let Some(p) = r
                    .index
                    .get(&partition)
                    .and_then(|i| r.partitions.get_mut(*i))
                {
                    p.state = if will_retry {
                        RunPartState::Retrying
                    } else if cancelled {
                        RunPartState::Cancelled
                    } else {
                        RunPartState::Failed
                    };
                    p.duration_ms = Some(duration_ms);
                    p.error = Some(error.clone());
                    p.push_log(format!(
                        "{}: {error}",
                        if will_retry { "will retry" } else { "failed" }
                    ));
                }
                if !will_retry {
                    j.in_flight.remove(&partition);
                    if !cancelled {
                        j.live.insert(
                            partition.clone(),
                            LiveAttempt {
                                attempt,
                                succeeded: false,
                                duration_ms,
                                error: Some(error.clone()),
                            },
                        );
                    }
                }
            }
            Event::RunFinished {
                succeeded,
                failed,
                not_started,
                cancelled,
                duration_ms,
                ..
            } => {
                for p in &mut r.partitions {
                    j.in_flight.remove(&p.name);
                    if matches!(
                        p.state,
                        RunPartState::Queued | RunPartState::Running | RunPartState::Retrying
                    ) {
                        p.state = RunPartState::Cancelled;
                    }
                }
                r.finished = Some(RunFinish {
                    succeeded,
                    failed,
                    not_started,
                    cancelled,
                    duration_ms,
                });
                self.message = Some((
                    failed > 0 || cancelled,
                    format!(
                        "run of {job_name} {}: {succeeded} succeeded, {failed} failed{}",
                        if cancelled { "cancelled" } else { "finished" },
                        if not_started > 0 {
                            format!(", {not_started} not started")
                        } else {
                            String::new()
                        }
                    ),
                ));
                return self.refresh_job(&job_name);
            }
        }
        Vec::new()
    }

    // ---- mouse -------------------------------------------------------------

    fn mouse_event(&mut self, m: MouseEvent) -> Vec<Effect> {
        if !self.mouse || !matches!(self.modal, Modal::None) {
            return Vec::new();
        }
        let area = Rect::new(0, 0, self.size.0, self.size.1);
        let hit = view::hit_test(self, area, m.column, m.row);
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => match hit {
                Some(view::Hit::Cell(i)) => {
                    self.focus = Focus::Calendar;
                    self.drag_from = Some(i);
                    if let Some(j) = self.job_mut() {
                        j.anchor = None;
                        j.selected.clear();
                        j.set_cursor(i);
                    }
                }
                Some(view::Hit::Job(i)) => {
                    self.focus = Focus::Jobs;
                    self.current = i;
                }
                Some(view::Hit::Run(k)) => {
                    self.focus = Focus::Runs;
                    self.selected_run = k.min(self.runs.len().saturating_sub(1));
                }
                Some(view::Hit::RunRow(i)) => {
                    self.focus = Focus::Runs;
                    if let Some(r) = self.runs.get_mut(self.selected_run) {
                        r.selected = i.min(r.partitions.len().saturating_sub(1));
                    }
                }
                None => {}
            },
            MouseEventKind::Drag(MouseButton::Left) => {
                if let (Some(view::Hit::Cell(i)), Some(from)) = (hit, self.drag_from)
                    && let Some(j) = self.job_mut()
                {
                    j.anchor = Some(from);
                    j.set_cursor(i);
                    j.anchor = None;
                }
            }
            MouseEventKind::Up(MouseButton::Left) => self.drag_from = None,
            MouseEventKind::ScrollDown => self.direction(Action::Down),
            MouseEventKind::ScrollUp => self.direction(Action::Up),
            _ => {}
        }
        Vec::new()
    }

    // ---- command line --------------------------------------------------------

    fn command(&mut self, text: &str) -> Vec<Effect> {
        let mut words = text.split_whitespace();
        let Some(cmd) = words.next() else {
            return Vec::new();
        };
        let rest: Vec<&str> = words.collect();
        match cmd {
            "q" | "quit" | "q!" => self.action(Action::Quit),
            "goto" | "g" => {
                let Some(j) = self.job_mut() else {
                    return Vec::new();
                };
                let grain = j.grain();
                match rest
                    .first()
                    .and_then(|t| Partition::parse(grain, t, RangeEnd::From))
                {
                    Some(p) => {
                        j.move_to(|_| Some(p));
                        self.focus = Focus::Calendar;
                    }
                    None => {
                        self.message = Some((
                            true,
                            format!(":goto needs a partition like {}", grain.name_format()),
                        ))
                    }
                }
                Vec::new()
            }
            "job" => {
                let name = rest.join(" ");
                let found = self
                    .jobs
                    .iter()
                    .position(|j| j.job.name == name)
                    .or_else(|| self.jobs.iter().position(|j| j.job.name.starts_with(&name)))
                    .or_else(|| self.jobs.iter().position(|j| j.job.name.contains(&name)));
                match found {
                    Some(i) if !name.is_empty() => {
                        self.filter.reset();
                        self.current = i;
                    }
                    _ => {
                        let names: Vec<&str> =
                            self.jobs.iter().map(|j| j.job.name.as_str()).collect();
                        self.message = Some((
                            true,
                            format!("no job \"{name}\"; jobs: {}", names.join(", ")),
                        ));
                    }
                }
                Vec::new()
            }
            "theme" => {
                match Theme::load(rest.first().copied().unwrap_or("")) {
                    Ok(t) => {
                        self.message = Some((false, format!("theme {}", t.name)));
                        self.theme = t;
                    }
                    Err(e) => self.message = Some((true, e)),
                }
                Vec::new()
            }
            "run" => self.run_command(&rest),
            other => {
                self.message = Some((
                    true,
                    format!(
                        "unknown command :{other}; try :run A..B [--only failed,missing,stale], :goto DATE, :job NAME, :theme NAME, :q"
                    ),
                ));
                Vec::new()
            }
        }
    }

    fn run_command(&mut self, args: &[&str]) -> Vec<Effect> {
        let Some(j) = self.job() else {
            return Vec::new();
        };
        let grain = j.grain();
        let mut only = Vec::new();
        let mut range: Option<&str> = None;
        let mut i = 0;
        while i < args.len() {
            let a = args[i];
            let list = if let Some(v) = a.strip_prefix("--only=") {
                Some(v)
            } else if a == "--only" {
                i += 1;
                args.get(i).copied()
            } else {
                None
            };
            if a.starts_with("--only") {
                for name in list.unwrap_or("").split(',').filter(|s| !s.is_empty()) {
                    match LoadState::parse(name) {
                        Some(s) => only.push(s),
                        None => {
                            self.message =
                                Some((true, format!("--only: \"{name}\" is not a state")));
                            return Vec::new();
                        }
                    }
                }
            } else if range.is_none() {
                range = Some(a);
            } else {
                self.message = Some((true, format!(":run: unexpected \"{a}\"")));
                return Vec::new();
            }
            i += 1;
        }
        let candidates: Vec<usize> = match range {
            None => self.chosen(),
            Some(r) => {
                let (a, b) = r.split_once("..").unwrap_or((r, r));
                let from = Partition::parse(grain, a, RangeEnd::From);
                let to = Partition::parse(grain, b, RangeEnd::To);
                match (from, to) {
                    (Some(f), Some(t)) if f <= t => (0..j.partitions.len())
                        .filter(|i| j.partitions[*i] >= f && j.partitions[*i] <= t)
                        .collect(),
                    _ => {
                        self.message = Some((
                            true,
                            format!(
                                ":run needs A..B with A ≤ B, partitions like {}",
                                grain.name_format()
                            ),
                        ));
                        return Vec::new();
                    }
                }
            }
        };
        if candidates.is_empty() {
            self.message = Some((true, "that range has no partitions of this job".into()));
            return Vec::new();
        }
        self.open_confirm(Some((candidates, only)))
    }

    // ---- scrolling -----------------------------------------------------------

    fn fix_scroll_all(&mut self) {
        let area = Rect::new(0, 0, self.size.0, self.size.1);
        let has_runs = !self.runs.is_empty();
        for j in &mut self.jobs {
            let count = j.unit_count();
            let cap = view::calendar_capacity(area, j.grain(), count, has_runs).max(1);
            let unit = j.unit_of(j.cursor);
            if unit < j.scroll {
                j.scroll = unit;
            } else if unit >= j.scroll + cap {
                j.scroll = unit + 1 - cap;
            }
            j.scroll = j.scroll.min(count.saturating_sub(cap));
        }
    }
}

pub fn short(fingerprint: &str) -> &str {
    fingerprint.get(..12).unwrap_or(fingerprint)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_normalise_numbers_literals_and_identifiers() {
        let a = error_signature("CHECK constraint failed: amount_usd >= 0");
        let b = error_signature("CHECK constraint failed: amount_eur >= 10");
        assert_eq!(a, b);
        assert_eq!(a, "CHECK constraint failed: <id> >= <n>");
        assert_eq!(
            error_signature("duplicate key value \"orders_pkey\" (id)=(4711)"),
            error_signature("duplicate key value \"items_pkey\" (id)=(12)")
        );
        assert_ne!(
            error_signature("NOT NULL constraint failed: t.url"),
            error_signature("CHECK constraint failed: t.url")
        );
        assert_eq!(
            error_signature("job wrote 12 rows outside its partition 2026-06-04"),
            "job wrote <n> rows outside its partition <n>"
        );
    }
}
