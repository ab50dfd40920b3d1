//! The console's state and `update`, the only place it changes. `App` holds
//! what spans panes (focus, the open overlay, runs, the connection, the
//! status note) and routes every message to the pane it concerns. `update`
//! does no IO: what needs the warehouse or the disk comes back as an
//! [`Effect`] for the event loop to start in the background.

mod input;
mod reload;
mod run_events;
mod start;
mod state_reads;
mod too_small;

use std::ops::Deref;
use std::path::PathBuf;

use chrono::NaiveDateTime;
use ratatui::layout::{Position, Rect};

pub use super::confirm::ConfirmDialog;
pub use super::diff::DiffView;
pub use super::errors::ErrorGroup;
pub use super::job::{JobView, LintNote, LiveAttempt};
pub use super::layout::Hit;
pub use super::lineage_view::LineageView;
pub use super::msg::{
    Connection, CoverRequest, DiffRequest, Effect, LoadsRequest, Msg, ReconcileRequest, RunRequest,
    Unread, VerifyRequest,
};
pub use super::question::Question;
pub use super::runs::{LogBack, RunFinish, RunPartState, RunPartition, RunView};
pub use super::verification::VerifyView;

use super::calendar::{self, Calendar};
use super::cascade::CascadePlan;
use super::chart::Chart;
use super::command::CommandLine;
use super::detail::Detail;
use super::errors::ErrorList;
use super::jobs::JobsPane;
use super::keys::Scope;
use super::layout::{calendar_capacity, screen};
use super::reconcile::Reconciler;
use super::runs;
use super::theme::Theme;
use super::widgets::inner;
use crate::config::{Config, TableNames};
use crate::engine::{Event, MergeOrderRisk};
use crate::lineage::Lineage;
use crate::partition::Partition;
use crate::state::StatesRead;
use crate::warehouse::sql::Syntax;

/// Seconds between background refreshes of every job's states.
pub const REFRESH_SECS: i64 = 15;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Jobs,
    Calendar,
    Runs,
}

/// The overlay or input line that has the keys, if any.
pub enum Modal {
    None,
    Help {
        scroll: u16,
    },
    /// The jobs pane's `/` filter is being typed.
    Filter,
    Command(CommandLine),
    Confirm(Box<ConfirmDialog>),
    Question(Question),
    Errors(ErrorList),
    /// What changed since a stale partition was loaded.
    Diff {
        scroll: u16,
    },
    Lineage(LineageView),
}

/// How the console starts, beyond its config.
pub struct Start {
    pub theme: Theme,
    pub mouse: bool,
    /// A note for the status bar (a theme that did not load).
    pub note: Option<String>,
    /// The theme files `:theme NAME` may load.
    pub theme_files: Vec<(String, PathBuf)>,
    /// NO_COLOR is set: the terminal shows no colour, so mono stays.
    pub no_color: bool,
}

/// The state that spans panes and what the panes own. Anyone may read it
/// through [`App`] (which dereferences to it); nothing can write it but
/// `update`, since `App` never hands it out mutably.
pub struct Shared {
    pub focus: Focus,
    pub modal: Modal,
    pub theme: Theme,
    pub mouse: bool,
    pub size: (u16, u16),
    /// A one-line note in the status bar: (is an error, text).
    pub message: Option<(bool, String)>,
    pub runs: Vec<RunView>,
    pub selected_run: usize,
    pub quit: bool,
    /// It quit because the process was asked to stop, not the operator.
    pub terminated: bool,
    pub jobs: JobsPane,
    pub calendar: Calendar,
    pub detail: Detail,
    pub chart: Chart,
    pub reconciler: Reconciler,
    /// The latest "what changed" of a stale partition.
    pub definition_diff: Option<DiffView>,
    pub now: NaiveDateTime,
    pub url: String,
    pub connected: bool,
    /// The partitions at once the warehouse grants a run, and why.
    pub granted: Option<(usize, String)>,
    pub connecting: bool,
    pub db_error: Option<String>,
    /// The config file as it is now does not load, or changes what only a
    /// restart can: what the console keeps to, and why.
    pub config_error: Option<String>,
    /// Which jobs read which: for stale (upstream) states, the lineage view
    /// and cascades. Table names compared as the engine does by default
    /// until connected, then as the server does.
    pub lineage: Lineage,
    /// Why there is no lineage (jobs that read each other in a cycle, as
    /// the server compares table names), where the config says it: the
    /// title bar keeps it until a reload makes one.
    pub lineage_error: Option<String>,
}

/// The note R leaves while its reads are out.
pub(super) const REFRESHING: &str = "refreshing…";

/// The console: its state, and `update`, the one place that changes it.
pub struct App {
    shared: Shared,
    config: Config,
    /// How the warehouse reads SQL text and compares table names: by the
    /// engine's default until connected, then as the server says (a
    /// MariaDB/MySQL server's `sql_mode` may read `"fct"` as a table, its
    /// `lower_case_table_names` fold names); the lineage and lint of a
    /// reloaded config read them so.
    syntax: Syntax,
    table_names: TableNames,
    theme_files: Vec<(String, PathBuf)>,
    no_color: bool,
    /// Something changed since the last draw.
    dirty: bool,
    last_refresh: Option<NaiveDateTime>,
    last_connect: Option<NaiveDateTime>,
    next_run: usize,
    next_request: usize,
    /// An explicit refresh (`R`) asked: a config that still does not load
    /// says why in the status bar again, not only in the title bar.
    retell_config_error: bool,
    /// The id of the newest read of the config file asked for.
    config_reads_asked: usize,
    /// The id of the newest read of the config file that landed: one
    /// older landing after it is of the file as it was before.
    config_read_landed: usize,
}

/// Read access to the state, for views and tests.
impl Deref for App {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl App {
    pub fn new(config: Config, theme: Theme, now: NaiveDateTime) -> App {
        App::start_with(
            config,
            Start {
                theme,
                mouse: true,
                note: None,
                theme_files: Vec::new(),
                no_color: false,
            },
            now,
        )
    }

    pub fn start_with(config: Config, start: Start, now: NaiveDateTime) -> App {
        let jobs = JobsPane::new(&config.jobs, now);
        let url = crate::warehouse::redact(&config.warehouse.url);
        let engine = config.warehouse.engine();
        let (syntax, table_names) = (engine.into(), engine.table_names());
        let mut app = App {
            shared: Shared {
                focus: Focus::Calendar,
                modal: Modal::None,
                theme: start.theme,
                mouse: start.mouse,
                size: (80, 24),
                message: None,
                runs: Vec::new(),
                selected_run: 0,
                quit: false,
                terminated: false,
                jobs,
                calendar: Calendar::default(),
                detail: Detail::default(),
                chart: Chart::default(),
                reconciler: Reconciler::default(),
                definition_diff: None,
                now,
                url,
                connected: false,
                granted: None,
                connecting: false,
                db_error: None,
                config_error: None,
                lineage: Lineage::default(),
                lineage_error: None,
            },
            config,
            syntax,
            table_names,
            theme_files: start.theme_files,
            no_color: start.no_color,
            dirty: true,
            last_refresh: None,
            last_connect: None,
            next_run: 1,
            next_request: 1,
            retell_config_error: false,
            config_reads_asked: 0,
            config_read_landed: 0,
        };
        let lineage = Lineage::comparing(&app.config, syntax, table_names);
        let lineage_error = app.set_lineage(lineage);
        app.shared.message = start.note.or(lineage_error).map(|n| (true, n));
        app.fix_scroll_all();
        app
    }

    /// The first effects: connect to the warehouse.
    pub fn start(&mut self) -> Vec<Effect> {
        self.shared.connecting = true;
        self.last_connect = Some(self.shared.now);
        vec![Effect::Connect]
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// What the title bar says is wrong with the config: it does not load
    /// (the console keeps the one it opened with), or no lineage could be
    /// made of it.
    pub fn config_error_shown(&self) -> Option<&str> {
        let shared = &self.shared;
        shared
            .config_error
            .as_deref()
            .or(shared.lineage_error.as_deref())
    }

    /// The id of the newest read of the config file asked for (0 before
    /// the first): its answer, or a newer one, is what the file says now.
    pub fn newest_config_read(&self) -> usize {
        self.config_reads_asked
    }

    /// Asks for the config file read again, numbered after every read
    /// asked before.
    pub(super) fn read_config(&mut self) -> Effect {
        self.config_reads_asked += 1;
        Effect::ReadConfig {
            id: self.config_reads_asked,
            path: self.config.path.clone(),
        }
    }

    /// Whether the screen needs drawing again.
    pub fn needs_redraw(&self) -> bool {
        self.dirty
    }

    /// The job on screen.
    pub fn job(&self) -> Option<&JobView> {
        self.shared.jobs.current()
    }

    /// Jobs whose names match the `/` filter.
    pub fn visible_jobs(&self) -> Vec<usize> {
        self.shared.jobs.visible()
    }

    /// The jobs named in a refresh, the one on screen first.
    pub fn jobs_named(&self, names: &[String]) -> Vec<crate::config::Job> {
        let current = self.job().map(|j| j.job.name.as_str());
        let mut jobs: Vec<_> = self
            .shared
            .jobs
            .iter()
            .filter(|j| names.contains(&j.job.name))
            .map(|j| j.job.clone())
            .collect();
        jobs.sort_by_key(|j| Some(j.name.as_str()) != current);
        jobs
    }

    /// The job on screen and the partitions its calendar shows, while its
    /// states are not read yet: a refresh reads those first.
    pub fn unread_on_screen(&self) -> Option<(String, Partition, Partition)> {
        let j = self.job()?;
        let area = Rect::new(0, 0, self.shared.size.0, self.shared.size.1);
        let has_runs = !self.shared.runs.is_empty();
        let capacity = calendar_capacity(area, j.grain(), j.unit_count(), has_runs);
        let (from, to) = j.unread_on_screen(capacity)?;
        Some((j.job.name.clone(), from, to))
    }

    pub fn active_runs(&self) -> usize {
        self.shared.runs.iter().filter(|r| r.active()).count()
    }

    pub fn loading(&self) -> bool {
        self.shared.connecting || self.shared.jobs.iter().any(JobView::shows_loading)
    }

    /// Whether the console holds `job`'s states as its last read sent them,
    /// so that a read finding nothing changed may answer "unchanged".
    pub fn holds_last_read(&self, job: &str) -> bool {
        self.shared
            .jobs
            .iter()
            .any(|j| j.job.name == job && j.as_read)
    }

    /// The failures of the job on screen by error signature.
    pub fn error_groups(&self) -> &[ErrorGroup] {
        self.job().map_or(&[], |j| j.error_groups())
    }

    /// The partitions a confirm dialog will run.
    pub fn confirm_partitions(&self, c: &ConfirmDialog) -> Vec<usize> {
        c.partitions().to_vec()
    }

    /// Later merge windows a confirm dialog's run would set back.
    pub fn merge_order_risk(&self, c: &ConfirmDialog) -> Option<MergeOrderRisk> {
        c.risk().cloned()
    }

    /// The equivalent headless command of a confirm dialog.
    pub fn equivalent_command(&self, c: &ConfirmDialog) -> String {
        c.command().to_string()
    }

    /// The key scope in force.
    pub fn scope(&self) -> Scope {
        match &self.shared.modal {
            Modal::Confirm(c) if c.typed_command().is_some() => Scope::Input,
            Modal::Confirm(_) => Scope::Confirm,
            Modal::Question(_) => Scope::Question,
            Modal::Errors(_) => Scope::List,
            Modal::Help { .. } => Scope::Help,
            Modal::Diff { .. } => Scope::Diff,
            Modal::Lineage(_) => Scope::Lineage,
            Modal::Filter | Modal::Command(_) => Scope::Input,
            Modal::None => Scope::Main,
        }
    }

    /// The panes of a screen of `area` as the job on it lays them out.
    fn screen_of(&self, area: Rect) -> Option<super::layout::Screen> {
        let job = self.job()?;
        Some(screen(
            area,
            job.grain(),
            job.unit_count(),
            !self.shared.runs.is_empty(),
        ))
    }

    /// What a position on a screen of `area` points at.
    pub fn hit_test(&self, area: Rect, x: u16, y: u16) -> Option<Hit> {
        let job = self.job()?;
        let s = self.screen_of(area)?;
        let cal = inner(s.calendar);
        if cal.contains(Position::new(x, y)) && job.loaded {
            return calendar::hit(job, cal, x, y).map(Hit::Cell);
        }
        if let Some(i) = self.shared.jobs.hit(s.jobs, x, y) {
            return Some(Hit::Job(i));
        }
        runs::hit(&self.shared.runs, self.shared.selected_run, s.runs, x, y)
    }

    /// The pane a position on a screen of `area` is in, of those that
    /// take the focus.
    pub fn pane_at(&self, area: Rect, x: u16, y: u16) -> Option<Focus> {
        let s = self.screen_of(area)?;
        let at = Position::new(x, y);
        [
            (s.jobs, Focus::Jobs),
            (s.calendar, Focus::Calendar),
            (s.runs, Focus::Runs),
        ]
        .into_iter()
        .find_map(|(r, pane)| r.contains(at).then_some(pane))
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Tick(now) => return self.tick(now),
            Msg::Drawn => {
                self.dirty = false;
                return Vec::new();
            }
            Msg::Status {
                job,
                result: Ok(StatesRead::Unchanged),
            } => return self.unchanged_msg(&job),
            _ => self.dirty = true,
        }
        let effects = match msg {
            Msg::Key(k) => self.key(k),
            Msg::Paste(text) => self.paste(&text),
            Msg::Mouse(m) => self.mouse_event(m),
            Msg::Resize(w, h) => {
                self.shared.size = (w, h);
                Vec::new()
            }
            Msg::Terminate => {
                self.shared.terminated = true;
                self.quit_now()
            }
            Msg::Connected(r) => self.connected_msg(r),
            Msg::Linted { job, notes } => {
                if let Some(j) = self.shared.jobs.by_name_mut(&job.name) {
                    j.linted(&job, notes);
                }
                Vec::new()
            }
            Msg::Renamed(renamed) => {
                for j in self.shared.jobs.iter_mut() {
                    j.read_renamed(&renamed);
                }
                Vec::new()
            }
            Msg::LoadsElsewhere(elsewhere) => {
                for j in self.shared.jobs.iter_mut() {
                    j.read_loads_elsewhere(&elsewhere);
                }
                Vec::new()
            }
            Msg::Status { job, result } => {
                let mut effects = self.status_msg(&job, result);
                effects.extend(self.replan_confirm());
                effects
            }
            Msg::EarlyStatus { job, statuses } => {
                if let Some(j) = self.shared.jobs.by_name_mut(&job) {
                    j.apply_early(statuses);
                }
                Vec::new()
            }
            Msg::SlowRead { job, note } => {
                if let Some(j) = self.shared.jobs.by_name_mut(&job).filter(|j| j.loading) {
                    j.slow = Some(note);
                }
                Vec::new()
            }
            Msg::Engine { run, event } => {
                let mut effects = self.engine_event(run, event);
                effects.extend(self.replan_confirm());
                effects
            }
            Msg::RunLogNotKept { run, why } => {
                self.run_log_not_kept(run, why);
                Vec::new()
            }
            Msg::PartitionLogUnwritten {
                run,
                partition,
                why,
            } => {
                if let Some(r) = self.shared.runs.iter_mut().find(|r| r.id == run) {
                    r.log_unwritten(&partition, why);
                }
                Vec::new()
            }
            Msg::RunRejected { run, error } => {
                self.run_rejected(run, &error);
                Vec::new()
            }
            Msg::Verified { id, result } => {
                if let Some(note) = self.shared.detail.verified(id, result) {
                    self.shared.message = Some(note);
                }
                Vec::new()
            }
            Msg::DefinitionDiff { id, result } => {
                if let Some(d) = self.shared.definition_diff.as_mut().filter(|d| d.id == id) {
                    d.result = Some(result);
                }
                Vec::new()
            }
            Msg::Covered { id, windows } => {
                if let Modal::Confirm(c) = &mut self.shared.modal {
                    c.covered(id, windows);
                }
                Vec::new()
            }
            Msg::Reconciled { id, result } => {
                if let Modal::Confirm(c) = &mut self.shared.modal {
                    c.source_counted(
                        id,
                        result
                            .as_ref()
                            .map(|c| c.null_partition)
                            .map_err(String::clone),
                    );
                }
                let job = self.shared.reconciler.in_flight().map(|f| f.job.clone());
                let job = job.and_then(|name| self.shared.jobs.by_name_mut(&name));
                if let Some(note) = self.shared.reconciler.answered(id, job, result) {
                    self.shared.message = Some(note);
                }
                self.replan_confirm()
            }
            Msg::Loads { id, result } => {
                self.shared.detail.loads.answered(id, result);
                Vec::new()
            }
            Msg::ThemeLoaded(Ok(theme)) => {
                self.set_theme(theme);
                Vec::new()
            }
            Msg::ThemeLoaded(Err(e)) => {
                self.shared.message = Some((true, e));
                Vec::new()
            }
            Msg::ConfigRead { id, read } => self.config_read(id, read),
            Msg::Tick(_) | Msg::Drawn => Vec::new(),
        };
        self.fix_scroll_all();
        let current = self.job().map(|j| j.job.name.clone());
        let mut effects = effects;
        effects.extend(self.shared.reconciler.follow(current.as_deref()));
        effects.extend(self.follow_loads());
        effects
    }

    /// The detail reads the last loads of the partition under the cursor.
    fn follow_loads(&mut self) -> Option<Effect> {
        let j = self.shared.jobs.current()?;
        let e = self
            .shared
            .detail
            .loads
            .follow(j, self.shared.connected, self.next_request)?;
        self.next_request += 1;
        Some(e)
    }

    fn set_theme(&mut self, theme: Theme) {
        self.shared.message = Some((false, format!("theme {}", theme.name)));
        self.shared.theme = theme;
    }

    /// `:theme NAME`: a built-in one at once, a file in the background.
    fn theme_command(&mut self, name: &str) -> Vec<Effect> {
        if self.no_color && name != "mono" {
            self.shared.message = Some((
                true,
                format!("NO_COLOR is set: the mono theme stays, not {name}"),
            ));
            return Vec::new();
        }
        if let Some(theme) = Theme::builtin(name) {
            self.set_theme(theme);
            return Vec::new();
        }
        match Theme::file_for(name, &self.theme_files) {
            Some(path) => vec![Effect::LoadTheme(path)],
            None => {
                self.shared.message = Some((true, Theme::unknown(name)));
                Vec::new()
            }
        }
    }

    fn tick(&mut self, now: NaiveDateTime) -> Vec<Effect> {
        let minute_changed =
            now.format("%H:%M").to_string() != self.shared.now.format("%H:%M").to_string();
        // A run's clocks show whole seconds: redraw when one turns.
        let second_changed = now.and_utc().timestamp() != self.shared.now.and_utc().timestamp();
        self.shared.now = now;
        if minute_changed || (second_changed && self.active_runs() > 0) {
            self.dirty = true;
        }
        let due = |last: Option<NaiveDateTime>| {
            last.is_none_or(|t| (now - t).num_seconds() >= REFRESH_SECS)
        };
        if self.shared.connected {
            if due(self.last_refresh) {
                return self.refresh_all(true);
            }
        } else if !self.shared.connecting && due(self.last_connect) {
            self.shared.connecting = true;
            self.last_connect = Some(now);
            self.dirty = true;
            return vec![Effect::Connect];
        }
        Vec::new()
    }

    /// Reads every job's states again; a `quiet` (periodic) refresh shows
    /// no spinner unless a read is slow.
    pub(super) fn refresh_all(&mut self, quiet: bool) -> Vec<Effect> {
        self.retell_config_error |= !quiet;
        let mut effects = vec![self.read_config()];
        effects.extend(self.refresh_states(quiet));
        effects
    }

    /// A confirm dialog shows the states as they are now.
    fn replan_confirm(&mut self) -> Vec<Effect> {
        if let Modal::Confirm(c) = &mut self.shared.modal
            && let Some(j) = self.shared.jobs.get(c.job)
        {
            c.replan(j, &self.config.defaults, self.shared.now);
        }
        self.replan_cascade()
    }

    /// A confirm dialog lists the downstream steps, planned from the states
    /// of the jobs downstream: to run with cascade on, to be left off.
    fn replan_cascade(&mut self) -> Vec<Effect> {
        let Modal::Confirm(c) = &mut self.shared.modal else {
            return Vec::new();
        };
        let jobs = &self.shared.jobs;
        let plan = c.backfill().map(|root| {
            CascadePlan::of(
                &self.config,
                &self.shared.lineage,
                (&root, c.allows_incomplete()),
                |name| jobs.by_name(name),
                self.shared.now,
            )
        });
        c.set_cascade(plan);
        // Each step's windows that no native partition covers, as the
        // root's: `idem run --cascade` checks every step.
        if !self.shared.connected {
            return Vec::new();
        }
        c.cover_steps(&mut self.next_request)
            .into_iter()
            .map(|req| Effect::ReadCover(Box::new(req)))
            .collect()
    }

    fn fix_scroll_all(&mut self) {
        let area = Rect::new(0, 0, self.shared.size.0, self.shared.size.1);
        let has_runs = !self.shared.runs.is_empty();
        for j in self.shared.jobs.iter_mut() {
            j.fix_scroll(calendar_capacity(area, j.grain(), j.unit_count(), has_runs));
        }
        let log = self.run_log_area();
        for run in &mut self.shared.runs {
            run.bound_log(log);
        }
    }

    /// The text area of the selected partition's log on the screen, none
    /// when the run pane has no room for it.
    pub(super) fn run_log_area(&self) -> Option<Rect> {
        let area = Rect::new(0, 0, self.shared.size.0, self.shared.size.1);
        runs::log_text_area(self.screen_of(area)?.runs)
    }
}

#[cfg(test)]
mod tests;
