//! Keys, mouse and the command line: each goes to the pane or overlay it
//! concerns; what spans panes (focus, runs, quitting) is decided here.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;

use super::{App, Focus, Hit, Modal, Question};
use crate::partition::{Partition, RangeEnd};
use crate::tui::command::{self, Command, CommandLine, CommandStep};
use crate::tui::confirm::ConfirmStep;
use crate::tui::diff::{self, DiffView};
use crate::tui::errors::{ErrorList, ErrorListStep};
use crate::tui::help;
use crate::tui::jobs::FilterStep;
use crate::tui::keymap::action_for;
use crate::tui::keys::{Action, Scope};
use crate::tui::layout::calendar_capacity;
use crate::tui::lineage_view::{self, LineageStep, LineageView};
use crate::tui::msg::Effect;
use crate::tui::runs::{self, Scroll};
use crate::tui::widgets::scrolled;

impl App {
    /// Pasted text goes into the input being typed, whole; anywhere else it
    /// is dropped, never read as keys (a pasted "ry" would run).
    pub(super) fn paste(&mut self, text: &str) -> Vec<Effect> {
        let taken = match &mut self.shared.modal {
            Modal::Command(line) => {
                line.paste(text);
                true
            }
            Modal::Filter => {
                self.shared.jobs.filter_paste(text);
                true
            }
            Modal::Confirm(c) => {
                let taken = c.paste(text);
                if taken && let Some(job) = self.shared.jobs.get(c.job) {
                    c.replan(job, &self.config.defaults, self.shared.now);
                }
                taken
            }
            _ => false,
        };
        if !taken {
            self.shared.message = Some((
                false,
                "pasted text ignored: paste into the command line (:), the job filter (/) or a run's reason"
                    .into(),
            ));
        }
        Vec::new()
    }

    pub(super) fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
        // Ctrl-C quits from anywhere, asking first while a run is in flight.
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            if matches!(self.shared.modal, Modal::Question(Question::Quit))
                || self.active_runs() == 0
            {
                return self.quit_now();
            }
            self.shared.modal = Modal::Question(Question::Quit);
            return vec![Effect::Gate {
                run: None,
                shut: true,
            }];
        }
        if self.too_small()
            && let Some(effects) = self.key_too_small(&key)
        {
            return effects;
        }
        let modal = std::mem::replace(&mut self.shared.modal, Modal::None);
        match modal {
            Modal::None => {
                if let Some(action) = action_for(Scope::Main, &key) {
                    return self.action(action);
                }
            }
            Modal::Help { scroll } => {
                let screen = Rect::new(0, 0, self.shared.size.0, self.shared.size.1);
                let extent = help::extent(screen, &self.shared.theme);
                if let Some(scroll) = help::key(scroll, &key, extent) {
                    self.shared.modal = Modal::Help { scroll };
                }
            }
            Modal::Diff { scroll } => {
                let screen = Rect::new(0, 0, self.shared.size.0, self.shared.size.1);
                let extent = self
                    .shared
                    .definition_diff
                    .as_ref()
                    .map_or((0, 0), |d| d.extent(screen, &self.shared.theme));
                if let Some(scroll) = diff::key(scroll, &key, extent) {
                    self.shared.modal = Modal::Diff { scroll };
                }
            }
            Modal::Filter => match self.shared.jobs.filter_key(&key) {
                FilterStep::Editing => self.shared.modal = Modal::Filter,
                FilterStep::Done => {}
                FilterStep::NoMatch(typed) => {
                    self.shared.message = Some((
                        true,
                        format!("no job's name contains \"{typed}\": filter cleared"),
                    ));
                }
            },
            Modal::Command(mut line) => match line.key(&key) {
                CommandStep::Submitted(text) => return self.command(&text),
                CommandStep::Cancelled => {}
                CommandStep::Editing => self.shared.modal = Modal::Command(line),
            },
            Modal::Confirm(mut c) => {
                let Some(job) = self.shared.jobs.get(c.job) else {
                    return Vec::new();
                };
                let mut effects = Vec::new();
                let step = c.key(&key, job, &self.config.defaults, self.shared.now);
                if step != ConfirmStep::Run {
                    c.unconfirm();
                }
                match step {
                    // A count in flight answers still: the source counts
                    // mark the run's partitions as a reconciliation does.
                    ConfirmStep::Run => effects = self.confirm_run(c),
                    // Closed without running: the count is not needed.
                    ConfirmStep::Close => effects.extend(self.shared.reconciler.stop_for_run()),
                    ConfirmStep::Stay => self.shared.modal = Modal::Confirm(c),
                    ConfirmStep::Say(note) => {
                        self.shared.message = note.map(|n| (false, n));
                        self.shared.modal = Modal::Confirm(c);
                    }
                    ConfirmStep::Copy(command) => {
                        self.shared.message = Some((
                            false,
                            format!(
                                "sent to the clipboard through the terminal (OSC 52): {command}"
                            ),
                        ));
                        effects.push(Effect::Copy(command));
                        self.shared.modal = Modal::Confirm(c);
                    }
                }
                effects.extend(self.replan_cascade());
                return effects;
            }
            Modal::Question(q) => match action_for(Scope::Question, &key) {
                Some(Action::Yes) => match q {
                    Question::Quit => return self.quit_now(),
                    Question::CancelRun(id) => {
                        if let Some(r) = self.shared.runs.iter_mut().find(|r| r.id == id) {
                            r.cancel_requested = true;
                        }
                        return vec![Effect::Cancel(id)];
                    }
                },
                // Answered no: the runs held while it was asked go on.
                Some(Action::No) => {
                    let run = match q {
                        Question::CancelRun(id) => Some(id),
                        Question::Quit => None,
                    };
                    return vec![Effect::Gate { run, shut: false }];
                }
                _ => self.shared.modal = Modal::Question(q),
            },
            Modal::Lineage(mut view) => {
                let job = self.job().map(|j| j.job.name.clone()).unwrap_or_default();
                let neighbours = lineage_view::neighbours(&self.shared.lineage, &job);
                match view.key(&key, neighbours.len()) {
                    LineageStep::Stay => self.shared.modal = Modal::Lineage(view),
                    LineageStep::Close => {}
                    LineageStep::Jump(k) => {
                        if let Some(n) = neighbours.get(k) {
                            match self.shared.jobs.find(&n.name) {
                                Ok(i) => self.shared.jobs.show(i),
                                Err(e) => self.shared.message = Some((true, e)),
                            }
                        }
                    }
                }
            }
            Modal::Errors(mut list) => {
                let groups = self.error_groups().len();
                match list.key(&key, groups) {
                    ErrorListStep::Open => self.shared.modal = Modal::Errors(list),
                    ErrorListStep::Closed => {}
                    ErrorListStep::Chosen(k) => self.select_error_group(k),
                }
            }
        }
        Vec::new()
    }

    fn select_error_group(&mut self, k: usize) {
        let Some(j) = self.shared.jobs.current_mut() else {
            return;
        };
        let Some(g) = j.error_groups().get(k).cloned() else {
            return;
        };
        j.select(g.partitions.iter().copied());
        self.shared.focus = Focus::Calendar;
        self.shared.message = Some((
            false,
            format!(
                "selected {} failing with: {}; {} re-runs them",
                crate::numbers::n_partitions(g.partitions.len() as i64),
                g.signature,
                crate::tui::keymap::key(Scope::Main, Action::Run)
            ),
        ));
    }

    pub(super) fn quit_now(&mut self) -> Vec<Effect> {
        self.shared.quit = true;
        let as_left: Vec<(usize, String)> = (self.shared.runs.iter())
            .filter(|r| r.active())
            .map(|r| (r.id, r.as_left()))
            .collect();
        let mut effects: Vec<Effect> = as_left.iter().map(|(r, _)| Effect::Cancel(*r)).collect();
        effects.push(Effect::Quit { as_left });
        effects
    }

    /// Does what a main-screen action asks.
    pub(super) fn action(&mut self, action: Action) -> Vec<Effect> {
        self.shared.message = None;
        match action {
            Action::Left | Action::Right | Action::Up | Action::Down => self.direction(action),
            // In the runs pane these scroll the selected partition's log.
            Action::PrevMonth | Action::NextMonth | Action::First | Action::Last
                if self.shared.focus == Focus::Runs =>
            {
                self.direction(action)
            }
            // The selected run's partitions, from any pane: its focus goes
            // to the runs pane, where the cursor is.
            Action::NextFailed | Action::PrevFailed | Action::FirstRow | Action::LastRow
                if !self.shared.runs.is_empty() =>
            {
                self.shared.focus = Focus::Runs;
                self.direction(action);
            }
            Action::NextFailed | Action::PrevFailed | Action::FirstRow | Action::LastRow => {
                self.shared.message = Some((
                    false,
                    format!(
                        "no run yet: {} step through a run's partitions; {} runs the selection",
                        [
                            Action::PrevFailed,
                            Action::NextFailed,
                            Action::FirstRow,
                            Action::LastRow
                        ]
                        .map(|a| crate::tui::keymap::key(Scope::Main, a))
                        .join(" "),
                        crate::tui::keymap::key(Scope::Main, Action::Run)
                    ),
                ));
            }
            Action::PrevMonth | Action::NextMonth if self.shared.chart.large => {
                if let Some(j) = self.shared.jobs.current_mut() {
                    self.shared.chart.shift(j, action == Action::PrevMonth);
                }
            }
            Action::ToggleChart => self.shared.chart.large = !self.shared.chart.large,
            Action::ChartSpan => {
                if let Some(j) = self.shared.jobs.current() {
                    let note = self.shared.chart.next_span(j.grain());
                    self.shared.message = Some((false, note));
                }
            }
            Action::Reconcile => return self.reconcile(),
            Action::PrevMonth
            | Action::NextMonth
            | Action::First
            | Action::Last
            | Action::ClearSelection
            | Action::ToggleRows => self.calendar_action(action),
            Action::RangeSelect
            | Action::SelectFailed
            | Action::SelectMissing
            | Action::SelectStale
            | Action::SelectOutOfDate => {
                self.calendar_action(action);
                self.shared.focus = Focus::Calendar;
            }
            Action::NextJob | Action::PrevJob => self.shared.jobs.step(action == Action::NextJob),
            Action::FocusNext | Action::FocusPrev => {
                let order: &[Focus] = if self.shared.runs.is_empty() {
                    &[Focus::Jobs, Focus::Calendar]
                } else {
                    &[Focus::Jobs, Focus::Calendar, Focus::Runs]
                };
                let i = order
                    .iter()
                    .position(|f| *f == self.shared.focus)
                    .unwrap_or(0);
                let n = order.len();
                let next = if action == Action::FocusNext {
                    (i + 1) % n
                } else {
                    (i + n - 1) % n
                };
                self.shared.focus = order[next];
            }
            Action::Activate => match self.shared.focus {
                Focus::Jobs => self.shared.focus = Focus::Calendar,
                Focus::Calendar => return self.open_confirm(None, None),
                Focus::Runs => self.show_run_partition(),
            },
            Action::ErrorGroups => {
                if self.error_groups().is_empty() {
                    self.shared.message = Some((false, "no failed partitions in this job".into()));
                } else {
                    self.shared.modal = Modal::Errors(ErrorList::default());
                }
            }
            Action::Run => return self.open_confirm(None, None),
            Action::Verify => return self.verify(),
            Action::WhatChanged => return self.what_changed(),
            Action::Lineage => self.shared.modal = Modal::Lineage(LineageView::default()),
            Action::Cancel => {
                let run = self
                    .shared
                    .runs
                    .get(self.shared.selected_run)
                    .filter(|r| r.active())
                    .or_else(|| self.shared.runs.iter().rev().find(|r| r.active()));
                match run {
                    Some(r) if r.cancel_requested => {
                        self.shared.message = Some((false, "cancelling…".into()));
                    }
                    Some(r) => {
                        self.shared.modal = Modal::Question(Question::CancelRun(r.id));
                        return vec![Effect::Gate {
                            run: Some(r.id),
                            shut: true,
                        }];
                    }
                    None => self.shared.message = Some((false, "no run in flight".into())),
                }
            }
            Action::Filter => {
                self.shared.modal = Modal::Filter;
                self.shared.focus = Focus::Jobs;
            }
            Action::Command => self.shared.modal = Modal::Command(CommandLine::default()),
            Action::Refresh => {
                for j in self.shared.jobs.iter_mut() {
                    j.forget_source();
                }
                self.shared.message = Some((false, super::REFRESHING.into()));
                return self.refresh_all(false);
            }
            Action::Help => self.shared.modal = Modal::Help { scroll: 0 },
            Action::Quit | Action::Interrupt => {
                if self.active_runs() > 0 {
                    self.shared.modal = Modal::Question(Question::Quit);
                    return vec![Effect::Gate {
                        run: None,
                        shut: true,
                    }];
                } else {
                    return self.quit_now();
                }
            }
            _ => {}
        }
        Vec::new()
    }

    fn calendar_action(&mut self, action: Action) {
        if let Some(j) = self.shared.jobs.current_mut()
            && let Some(note) = self.shared.calendar.act(j, action, self.shared.now)
        {
            self.shared.message = Some((false, note));
        }
    }

    fn direction(&mut self, action: Action) {
        self.direction_in(self.shared.focus, action);
    }

    fn direction_in(&mut self, pane: Focus, action: Action) {
        match pane {
            Focus::Jobs => match action {
                Action::Down => self.shared.jobs.step(true),
                Action::Up => self.shared.jobs.step(false),
                Action::Right => self.shared.focus = Focus::Calendar,
                _ => {}
            },
            Focus::Runs => {
                let log = self.run_log_area();
                let runs = &mut self.shared.runs;
                if let Some(note) =
                    runs::direction(runs, &mut self.shared.selected_run, action, log)
                {
                    self.shared.message = Some((false, note));
                }
            }
            Focus::Calendar => self.calendar_action(action),
        }
    }

    /// Moves the calendar to the partition selected in the run pane.
    fn show_run_partition(&mut self) {
        let Some(run) = self.shared.runs.get(self.shared.selected_run) else {
            return;
        };
        let Some(name) = run.partitions.get(run.selected).map(|p| p.name.clone()) else {
            return;
        };
        let Ok(i) = self.shared.jobs.find(&run.job) else {
            return;
        };
        self.shared.jobs.show(i);
        if let Some(j) = self.shared.jobs.current_mut()
            && let Some(p) = Partition::parse(j.grain(), &name, RangeEnd::From)
        {
            j.clear_selection();
            j.move_to(|_| Some(p));
        }
        self.shared.focus = Focus::Calendar;
    }

    /// Starts proving the cursor's partition idempotent, in the background.
    fn verify(&mut self) -> Vec<Effect> {
        let Some(j) = self.shared.jobs.current() else {
            return Vec::new();
        };
        match self.shared.detail.verify(
            j,
            self.shared.connected,
            self.next_request,
            self.shared.now,
        ) {
            Ok(effect) => {
                self.next_request += 1;
                let partition = j.partitions.get(j.cursor).map(Partition::name);
                self.shared.message = Some((
                    false,
                    format!(
                        "verifying {} {}: loading it twice, then rolling back…",
                        j.job.name,
                        partition.unwrap_or_default()
                    ),
                ));
                vec![effect]
            }
            Err(why) => {
                self.shared.message = Some((true, why));
                Vec::new()
            }
        }
    }

    /// `O`: reconciles the partitions on screen with their source in the
    /// background, or stops the reconciliation in flight.
    fn reconcile(&mut self) -> Vec<Effect> {
        let Some(j) = self.shared.jobs.current() else {
            return Vec::new();
        };
        let area = Rect::new(0, 0, self.shared.size.0, self.shared.size.1);
        let capacity = calendar_capacity(
            area,
            j.grain(),
            j.unit_count(),
            !self.shared.runs.is_empty(),
        );
        let (effect, note) =
            self.shared
                .reconciler
                .toggle(j, capacity, self.shared.connected, self.next_request);
        self.next_request += 1;
        self.shared.message = Some((effect.is_none(), note));
        effect.into_iter().collect()
    }

    /// Opens what changed since the cursor's stale partition was loaded; the
    /// old definition is read in the background.
    fn what_changed(&mut self) -> Vec<Effect> {
        let Some(j) = self.shared.jobs.current() else {
            return Vec::new();
        };
        match DiffView::open(j, self.shared.connected, self.next_request) {
            Ok((view, effect)) => {
                self.next_request += 1;
                self.shared.definition_diff = Some(view);
                self.shared.modal = Modal::Diff { scroll: 0 };
                vec![effect]
            }
            Err(why) => {
                self.shared.message = Some((false, why));
                Vec::new()
            }
        }
    }

    pub(super) fn mouse_event(&mut self, m: MouseEvent) -> Vec<Effect> {
        if !self.shared.mouse || self.too_small() {
            return Vec::new();
        }
        let area = Rect::new(0, 0, self.shared.size.0, self.shared.size.1);
        match m.kind {
            MouseEventKind::ScrollDown => return self.wheel(area, Action::Down, m.column, m.row),
            MouseEventKind::ScrollUp => return self.wheel(area, Action::Up, m.column, m.row),
            // A release ends a drag in the calendar even over a dialog
            // opened meanwhile: a later drag must not select from there.
            MouseEventKind::Up(MouseButton::Left) => {
                self.shared.calendar.release();
                return Vec::new();
            }
            // Any other click over an overlay or dialog does nothing: none
            // closes on it (Esc does), and the panes behind take none.
            _ if !matches!(self.shared.modal, Modal::None) => return Vec::new(),
            _ => {}
        }
        let hit = self.hit_test(area, m.column, m.row);
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => match hit {
                Some(Hit::Cell(i)) => {
                    self.shared.focus = Focus::Calendar;
                    if let Some(j) = self.shared.jobs.current_mut() {
                        self.shared.calendar.press(j, i);
                    }
                }
                Some(Hit::Job(i)) => {
                    self.shared.focus = Focus::Jobs;
                    self.shared.jobs.show(i);
                }
                Some(Hit::Run(k)) => {
                    self.shared.focus = Focus::Runs;
                    self.shared.selected_run = k.min(self.shared.runs.len().saturating_sub(1));
                }
                Some(Hit::RunRow(i)) => {
                    self.shared.focus = Focus::Runs;
                    if let Some(r) = self.shared.runs.get_mut(self.shared.selected_run) {
                        r.selected = i.min(r.partitions.len().saturating_sub(1));
                    }
                }
                None => {}
            },
            MouseEventKind::Drag(MouseButton::Left) => {
                if let Some(Hit::Cell(i)) = hit
                    && let Some(j) = self.shared.jobs.current_mut()
                {
                    self.shared.calendar.drag(j, i);
                }
            }
            _ => {}
        }
        Vec::new()
    }

    /// The wheel scrolls as the arrow keys do what it is turned over: the
    /// open overlay (help, the definition's diff, the error groups, the
    /// lineage), else the pane under the pointer, focused or not, and in
    /// the runs pane the log when over it. A dialog that does not scroll
    /// (the run's, a question) keeps it from the panes behind.
    fn wheel(&mut self, area: Rect, action: Action, x: u16, y: u16) -> Vec<Effect> {
        let theme = &self.shared.theme;
        match &mut self.shared.modal {
            Modal::Help { scroll } => {
                let (page, most) = help::extent(area, theme);
                *scroll = scrolled(*scroll, action, page, most).unwrap_or(*scroll);
            }
            Modal::Diff { scroll } => {
                let (page, most) = self
                    .shared
                    .definition_diff
                    .as_ref()
                    .map_or((0, 0), |d| d.extent(area, theme));
                *scroll = scrolled(*scroll, action, page, most).unwrap_or(*scroll);
            }
            Modal::Errors(list) => {
                let groups = self
                    .shared
                    .jobs
                    .current()
                    .map_or(0, |j| j.error_groups().len());
                list.step(action, groups);
            }
            Modal::Lineage(view) => {
                let job = self.shared.jobs.current().map(|j| j.job.name.as_str());
                let count =
                    lineage_view::neighbours(&self.shared.lineage, job.unwrap_or_default()).len();
                view.step(action, count);
            }
            Modal::None => match self.pane_at(area, x, y) {
                Some(Focus::Runs)
                    if self
                        .screen_of(area)
                        .is_some_and(|s| runs::on_log(s.runs, x, y)) =>
                {
                    // Up shows older lines, as `[` does.
                    let scroll = if action == Action::Up {
                        Scroll::Older(runs::WHEEL_ROWS)
                    } else {
                        Scroll::Newer(runs::WHEEL_ROWS)
                    };
                    let log = self.run_log_area();
                    if let Some(run) = self.shared.runs.get_mut(self.shared.selected_run) {
                        run.scroll_log(log, scroll);
                    }
                }
                Some(pane) => self.direction_in(pane, action),
                None => {}
            },
            Modal::Confirm(_) | Modal::Question(_) | Modal::Filter | Modal::Command(_) => {}
        }
        Vec::new()
    }

    fn command(&mut self, text: &str) -> Vec<Effect> {
        let job = self.shared.jobs.current().map(|j| j.job.name.clone());
        let command = match command::parse(text, job.as_deref()) {
            Ok(Some(command)) => command,
            Ok(None) => return Vec::new(),
            Err(e) => {
                self.shared.message = Some((true, e));
                return Vec::new();
            }
        };
        match command {
            Command::Quit => return self.action(Action::Quit),
            Command::Goto(word) => {
                let Some(j) = self.shared.jobs.current_mut() else {
                    return Vec::new();
                };
                let grain = j.grain();
                match Partition::parse(grain, &word, RangeEnd::From) {
                    Some(p) => {
                        j.move_to(|_| Some(p));
                        self.shared.focus = Focus::Calendar;
                        // Outside the job's partitions the cursor stops at
                        // the nearest end: said, not left to be noticed.
                        let (name, first, last) = (
                            &j.job.name,
                            j.partitions.first().copied(),
                            j.partitions.last().copied(),
                        );
                        let note = match (first, last) {
                            (Some(first), _) if p < first => Some(format!(
                                "{} is before {name}'s first partition: at {}",
                                p.name(),
                                first.name()
                            )),
                            (_, Some(last)) if p > last => Some(format!(
                                "{} is after {name}'s last partition: at {}",
                                p.name(),
                                last.name()
                            )),
                            _ => None,
                        };
                        if let Some(note) = note {
                            self.shared.message = Some((false, note));
                        }
                    }
                    None => {
                        // Shaped like a date (digits where the format has
                        // them) yet not one: 2026-02-30.
                        let shaped = |format: &str| {
                            format.len() == word.len()
                                && format.chars().zip(word.chars()).all(|(f, w)| {
                                    f.is_ascii_uppercase() && f != 'T' && w.is_ascii_digit()
                                        || f == w
                                })
                        };
                        let why = if grain
                            .name_format()
                            .split(" (or ")
                            .any(|f| shaped(f.trim_end_matches(')')))
                        {
                            format!("{word}: no such date")
                        } else {
                            format!(":goto needs a partition like {}", grain.name_format())
                        };
                        self.shared.message = Some((true, why))
                    }
                }
            }
            // The operator named the job: its partitions take the keys.
            Command::Job(name) => match self.shared.jobs.find(&name) {
                Ok(i) => {
                    self.shared.jobs.show(i);
                    self.shared.focus = Focus::Calendar;
                }
                Err(e) => self.shared.message = Some((true, e)),
            },
            Command::Theme(name) => return self.theme_command(&name),
            Command::Run(args) => {
                let Some(j) = self.shared.jobs.current() else {
                    return Vec::new();
                };
                match command::run_range(&args, j, self.shared.now) {
                    Err(e) => self.shared.message = Some((true, e)),
                    Ok(Some(range)) if range.is_empty() => {
                        self.shared.message =
                            Some((true, "that range has no partitions of this job".into()));
                    }
                    Ok(range) => return self.open_confirm(range, Some(*args)),
                }
            }
        }
        Vec::new()
    }
}
