//! Draws the whole console from the app's state: the layout's panes, then
//! the overlay in force. Reads state, does no IO, computes nothing that
//! `update` keeps.

use ratatui::Frame;
use ratatui::layout::{Alignment, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

pub use super::layout::{Hit, MIN_HEIGHT, MIN_WIDTH, Screen, screen};
use super::widgets::controls_shown;
pub use super::widgets::thousands;

use super::app::{App, Focus, Modal, Question, REFRESH_SECS};
use super::bars::{Hints, Title, render_footer, render_title};
use super::calendar::Waiting;
use super::help;
use super::keymap;
use super::keys::{Action, Scope};
use super::layout::calendar_capacity;
use super::lineage_view::upstream_lines;
use crate::partition::Grain;

/// What a position on a screen of `area` points at.
pub fn hit_test(app: &App, area: Rect, x: u16, y: u16) -> Option<Hit> {
    app.hit_test(area, x, y)
}

/// Draws the whole console.
pub fn render(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        render_too_small(frame, area, app);
        return;
    }
    let t = &app.theme;
    let job = app.job();
    let grain = job.map_or(Grain::Day, |j| j.grain());
    let units = job.map_or(0, |j| j.unit_count());
    let has_runs = !app.runs.is_empty();
    let s = screen(area, grain, units, has_runs);
    render_title(
        frame,
        s.title,
        t,
        &Title {
            url: &app.url,
            db_error: app.db_error.as_deref(),
            config_error: app.config_error_shown(),
            connecting: app.connecting && !app.connected,
            loading: app.loading(),
            active_runs: app.active_runs(),
            now: app.now,
        },
    );
    app.jobs.render(
        frame,
        s.jobs,
        t,
        app.focus == Focus::Jobs,
        matches!(app.modal, Modal::Filter),
    );
    if let Some(job) = job {
        let waiting =
            (!job.loaded && job.early.is_empty()).then(|| match (&job.error, &app.db_error) {
                (Some(e), _) => Waiting::Unreadable(e),
                (None, Some(e)) if !app.connected => Waiting::NotConnected {
                    error: e,
                    retry_secs: REFRESH_SECS,
                },
                _ => Waiting::Loading(job.slow.as_deref()),
            });
        app.calendar.render(
            frame,
            s.calendar,
            t,
            job,
            app.focus == Focus::Calendar,
            waiting,
        );
        let capacity = calendar_capacity(
            Rect::new(0, 0, app.size.0, app.size.1),
            grain,
            units,
            has_runs,
        );
        if app.chart.large {
            // The large chart takes the detail area too.
            let r = s.chart.union(s.detail);
            app.chart.render(frame, r, t, job, capacity);
        } else {
            if s.chart.height > 0 {
                app.chart.render(frame, s.chart, t, job, capacity);
            }
            if s.detail.height > 2 {
                let upstream = job
                    .status_at(job.cursor)
                    .map(|st| upstream_lines(t, st, |name| app.jobs.by_name(name)))
                    .unwrap_or_default();
                app.detail.render(frame, s.detail, t, job, upstream);
            }
        }
    }
    if s.runs.height > 0 {
        super::runs::render(
            frame,
            s.runs,
            t,
            &app.runs,
            app.selected_run,
            app.focus == Focus::Runs,
            app.now,
        );
    }
    render_overlay(frame, app, area, s.footer);
}

/// The footer line, and the overlay in force over everything.
fn render_overlay(frame: &mut Frame, app: &App, area: Rect, footer: Rect) {
    let t = &app.theme;
    match &app.modal {
        Modal::Command(line) => line.render(frame, footer, t),
        Modal::Confirm(c) if let Some(line) = c.typed_command() => line.render(frame, footer, t),
        Modal::Filter => {
            let text = format!(
                " filter jobs: {}▏  Enter keep · Esc clear",
                app.jobs.filter_text()
            );
            super::widgets::put(
                frame.buffer_mut(),
                footer,
                footer.x,
                footer.y,
                &text,
                t.style("text"),
            );
        }
        _ => {
            let main = app.scope() == Scope::Main;
            let shown = |action: Action| match (&app.modal, action) {
                (Modal::Confirm(c), Action::AllowShrink | Action::ThroughLatest) => {
                    app.jobs.get(c.job).is_some_and(|j| c.offers(action, j))
                }
                _ if !main => true,
                // The runs pane names its own keys in its own words; its
                // room goes to them rather than to the calendar's selections.
                (_, Action::RangeSelect | Action::SelectFailed | Action::ErrorGroups) => {
                    app.focus != Focus::Runs
                }
                _ if app.focus == Focus::Runs => !super::runs::in_footer(action),
                (_, Action::Up | Action::Down) => app.focus == Focus::Jobs,
                _ => true,
            };
            let own = if main && app.focus == Focus::Runs {
                super::runs::footer(keymap::current())
            } else {
                Vec::new()
            };
            let hints = Hints::of(app.scope(), &shown, own);
            render_footer(frame, footer, t, app.message.as_ref(), &hints)
        }
    }
    match &app.modal {
        Modal::Help { scroll } => help::render(frame, area, t, *scroll),
        Modal::Confirm(c) => {
            if let Some(job) = app.jobs.get(c.job) {
                c.render(frame, area, t, job);
            }
        }
        Modal::Question(q) => {
            let job = question_job(app, q);
            q.render(frame, area, t, app.active_runs(), job);
        }
        Modal::Errors(list) => {
            if let Some(job) = app.job() {
                list.render(frame, area, t, job.error_groups(), &job.partitions);
            }
        }
        Modal::Diff { scroll } => {
            if let Some(d) = &app.definition_diff {
                d.render(frame, area, t, *scroll);
            }
        }
        Modal::Lineage(view) => {
            if let Some(job) = app.job() {
                view.render(frame, area, t, &job.job.name, &app.lineage, |name| {
                    app.jobs.by_name(name)
                });
            }
        }
        Modal::None | Modal::Filter | Modal::Command(_) => {}
    }
}

/// The job a question is about: the one whose run it would cancel.
fn question_job<'a>(app: &'a App, q: &Question) -> &'a str {
    match q {
        Question::CancelRun(id) => app
            .runs
            .iter()
            .find(|r| r.id == *id)
            .map_or("", |r| r.job.as_str()),
        Question::Quit => "",
    }
}

/// What a terminal below the minimum shows: its size, and how to quit, or
/// the question in force and its keys (the only keys it answers to).
fn render_too_small(frame: &mut Frame, area: Rect, app: &App) {
    let size = format!(
        "{}×{} — idem needs at least {MIN_WIDTH}×{MIN_HEIGHT}",
        area.width, area.height
    );
    let text = match &app.modal {
        Modal::Question(q) => {
            let job = question_job(app, q);
            vec![
                Line::from(format!("terminal too small: {size}")),
                Line::from(q.text(app.active_runs(), job)),
                Line::from(format!(
                    "{} yes   {} no",
                    keymap::key(Scope::Question, Action::Yes),
                    keymap::key(Scope::Question, Action::No)
                )),
            ]
        }
        _ => vec![
            Line::from("terminal too small"),
            Line::from(size),
            Line::from(format!("{} quits", keymap::key(Scope::Main, Action::Quit))),
        ],
    };
    let paragraph = Paragraph::new(controls_shown(text))
        .alignment(Alignment::Center)
        .wrap(Wrap { trim: true });
    let height = (paragraph.line_count(area.width) as u16).min(area.height);
    let r = Rect::new(
        area.x,
        area.y + (area.height - height) / 2,
        area.width,
        height,
    );
    frame.render_widget(paragraph, r.intersection(area));
}
