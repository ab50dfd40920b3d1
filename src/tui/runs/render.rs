//! Drawing the run pane: the list of runs, the selected one's gauge, its
//! partition table and the selected partition's log; and what a click on
//! it points at.

use chrono::NaiveDateTime;
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Gauge, Paragraph};

use super::{RunPartState, RunView, log_view};
use crate::config::Strategy;
use crate::numbers::NO_ROWS_CHANGED;
use crate::state::LoadState;
use crate::tui::layout::{Hit, run_split};
use crate::tui::theme::Theme;
use crate::tui::widgets::{
    abbreviate, block, columns, controls_shown, duration_text, first_line, hidden_note, inner, put,
    thousands,
};

/// The first run whose tab is drawn in a strip `width` wide: the first of
/// all, or as far on as shows the selected run's tab whole (after a `‹`
/// that says runs are scrolled out to the left).
fn first_tab(runs: &[RunView], selected: usize, width: u16) -> usize {
    let widths: Vec<usize> = runs.iter().map(|r| r.label().chars().count()).collect();
    let through = selected.min(widths.len().saturating_sub(1));
    let mut first = 0;
    let mut used: usize = widths.iter().take(through + 1).sum();
    while first < through && used > width as usize {
        used -= widths[first];
        first += 1;
        // The ‹ takes a column once a tab is scrolled out.
        if first == 1 {
            used += 1;
        }
    }
    first
}

/// What a position in the run pane (`area`, its border included) points at.
pub fn hit(runs: &[RunView], selected: usize, area: Rect, x: u16, y: u16) -> Option<Hit> {
    let pos = Position::new(x, y);
    let body = inner(area);
    if !body.contains(pos) {
        return None;
    }
    if y == body.y {
        let first = first_tab(runs, selected, body.width);
        let mut left = body.x + u16::from(first > 0);
        for (k, run) in runs.iter().enumerate().skip(first) {
            let w = run.label().chars().count() as u16;
            if x >= left && x < left + w {
                return Some(Hit::Run(k));
            }
            left += w;
        }
        return None;
    }
    let run = runs.get(selected)?;
    let (table, _) = parts(body)?;
    if !table.contains(pos) {
        return None;
    }
    let first = run.first_row(table.height as usize);
    Some(Hit::RunRow(first + (y - table.y) as usize))
}

/// Whether a position in the run pane `area` is on the selected partition's
/// log (the wheel scrolls the log there, the partitions elsewhere).
pub fn on_log(area: Rect, x: u16, y: u16) -> bool {
    parts(inner(area))
        .and_then(|(_, log)| log)
        .is_some_and(|log| log.contains(Position::new(x, y)))
}

/// The text area of the selected partition's log in the run pane `area`
/// (its border included); none when the pane has no room for the log.
pub fn log_text_area(area: Rect) -> Option<Rect> {
    parts(inner(area)).and_then(|(_, log)| log).map(inner)
}

/// The selected run's partition table and log, under the run tabs and the
/// gauge in the pane's `body`; none when they leave no room.
fn parts(body: Rect) -> Option<(Rect, Option<Rect>)> {
    (body.height >= 3)
        .then(|| run_split(Rect::new(body.x, body.y + 2, body.width, body.height - 2)))
}

/// Draws the run pane: the list of runs, the selected one's gauge, its
/// partition table and the selected partition's log.
pub fn render(
    frame: &mut Frame,
    r: Rect,
    theme: &Theme,
    runs: &[RunView],
    selected: usize,
    focused: bool,
    now: NaiveDateTime,
) {
    let t = theme;
    let b = block(t, format!(" Runs ({}) ", runs.len()), focused);
    let area = b.inner(r);
    frame.render_widget(b, r);
    if area.height == 0 {
        return;
    }
    let first = first_tab(runs, selected, area.width);
    let mut spans: Vec<Span> = Vec::new();
    if first > 0 {
        spans.push(Span::styled("‹", t.style("muted")));
    }
    spans.extend(runs.iter().enumerate().skip(first).map(|(k, run)| {
        let style = if k == selected {
            t.style("highlight").add_modifier(Modifier::REVERSED)
        } else {
            t.style("text")
        };
        Span::styled(run.label(), style)
    }));
    frame.render_widget(
        Paragraph::new(controls_shown(Line::from(spans))),
        Rect::new(area.x, area.y, area.width, 1),
    );
    let Some(run) = runs.get(selected) else {
        return;
    };
    if area.height < 2 {
        return;
    }
    // Failures show in the error style and in words with a glyph, never
    // by the bar's colour alone: 12 of 12 failed is no full green bar.
    let total = run.partitions.len().max(1);
    let (glyph, style) = run.outcome();
    let gauge = Gauge::default()
        .gauge_style(t.style(style))
        .ratio((run.done() as f64 / total as f64).clamp(0.0, 1.0))
        .label(format!("{glyph} {}", run.summary(now)));
    frame.render_widget(gauge, Rect::new(area.x, area.y + 1, area.width, 1));
    let Some((table, log_area)) = parts(area) else {
        return;
    };
    render_table(frame, table, t, run, focused, now);
    if let Some(log_area) = log_area {
        log_view::render(frame, log_area, t, run);
    }
    // The rows scrolled out of the table, noted as the jobs pane notes its
    // own: above on the pane's top border, below on the pane's border under
    // a wide table, or on the row a narrow table leaves free over the log
    // (on the log's border the count read as the log's).
    let over_log = log_area.is_some_and(|log| log.y > table.y);
    let first = run.scrolled.get();
    let shown = (table.height as usize).min(run.partitions.len().saturating_sub(first));
    let (above, rest) = run.partitions.split_at(first);
    let below = rest.get(shown..).unwrap_or_default();
    let buf = frame.buffer_mut();
    for (hidden, arrow, y) in [(above, '↑', r.y), (below, '↓', table.bottom())] {
        let not_loaded = hidden.iter().filter(|p| p.state.not_loaded()).count();
        let of_them = match not_loaded {
            0 => vec![],
            n => vec![format!("{n} unloaded")],
        };
        let (from, to) = if arrow == '↓' && over_log {
            (table.x, table.right())
        } else {
            border_run(buf, y, table.x, table.right())
        };
        let room = to.saturating_sub(from) as usize;
        if let Some(note) = hidden_note(arrow, hidden.len(), &of_them, room) {
            let x = to.saturating_sub(columns(&note) as u16);
            put(
                buf,
                Rect::new(from, y, to - from, 1),
                x,
                y,
                &note,
                t.style("muted"),
            );
        }
    }
}

/// The bare line of border row `y` that ends at `right` (or at a corner
/// just before it), from `left` on: the columns no title or corner takes,
/// free for a note, a column of line kept at its left.
fn border_run(buf: &Buffer, y: u16, left: u16, right: u16) -> (u16, u16) {
    let symbol = |x: u16| buf.cell((x, y)).map_or("", |c| c.symbol());
    let bare = |x: u16| matches!(symbol(x), "─" | "━");
    let mut to = right;
    if to > left && !bare(to - 1) {
        to -= 1;
    }
    let mut from = to;
    while from > left && bare(from - 1) {
        from -= 1;
    }
    ((from + 1).min(to), to)
}

fn render_table(
    frame: &mut Frame,
    table: Rect,
    t: &Theme,
    run: &RunView,
    focused: bool,
    now: NaiveDateTime,
) {
    let buf = frame.buffer_mut();
    let rows = table.height as usize;
    let first = run.first_row(rows);
    run.scrolled.set(first);
    for (k, p) in run.partitions.iter().enumerate().skip(first).take(rows) {
        let y = table.y + (k - first) as u16;
        let (word, glyph) = p.state.label();
        let style = match p.state {
            RunPartState::Succeeded => t.style("ok"),
            RunPartState::Failed => t.style("error"),
            RunPartState::Refused | RunPartState::LockHeld => t.style("warning"),
            RunPartState::Running | RunPartState::Retrying => t.state(LoadState::Running),
            _ => t.style("muted"),
        };
        let sel = k == run.selected && focused;
        let row_style = |s: Style| if sel { s.patch(t.style("cursor")) } else { s };
        let mut x = put(
            buf,
            table,
            table.x,
            y,
            if k == run.selected { "›" } else { " " },
            t.style("highlight"),
        );
        x = put(
            buf,
            table,
            x,
            y,
            &format!("{glyph} {:<14}", p.name),
            row_style(style),
        );
        x = put(buf, table, x, y, &format!("{word:<9} "), row_style(style));
        let dur = match (p.state, p.running_since) {
            // Whole seconds: the clock turns once a second.
            (RunPartState::Running, Some(since)) => {
                let ms = (now - since).num_seconds().max(0) as u64 * 1000;
                if ms < 60_000 {
                    format!("{} s", ms / 1000)
                } else {
                    duration_text(ms)
                }
            }
            _ => p.duration_ms.map(duration_text).unwrap_or_default(),
        };
        x = put(buf, table, x, y, &format!("{dur:>8}  "), t.style("muted"));
        let rows_text = match p.state {
            RunPartState::Succeeded => {
                let (inserted, updated) = (p.rows_inserted, p.rows_updated);
                // A merge deletes nothing: inserted and updated, in the
                // headless run's words when it changed nothing.
                let mut s = match run.strategy {
                    Strategy::MergeKey if inserted + updated == 0 => NO_ROWS_CHANGED.to_string(),
                    Strategy::MergeKey => {
                        format!("+{} ~{}", thousands(inserted), thousands(updated))
                    }
                    Strategy::ReplacePartition => {
                        let mut s =
                            format!("−{} → +{}", thousands(p.rows_deleted), thousands(inserted));
                        if updated > 0 {
                            s.push_str(&format!(" ~{}", thousands(updated)));
                        }
                        s
                    }
                };
                match p.content_changed {
                    Some(true) => s.push_str(" · changed"),
                    // Said already of a merge that changed no row.
                    Some(false) if s != NO_ROWS_CHANGED => s.push_str(" · same content"),
                    _ => {}
                }
                s
            }
            // A retry says so, and what the attempt before it met: its
            // clock counts this attempt alone.
            RunPartState::Running if p.tries > 1 => {
                let mut s = format!("retry {} of {}", p.tries - 1, run.retries);
                if let Some(e) = &p.error {
                    s.push_str(&format!(" · after: {}", first_line(e)));
                }
                s
            }
            RunPartState::Failed if p.tries > 1 => format!(
                "after {} attempts: {}",
                p.tries,
                p.error.as_deref().map(first_line).unwrap_or_default()
            ),
            // Cancelled in flight, its transaction rolled back, or before
            // it started: both read "cancelled", and only one wrote (and
            // undid) anything.
            RunPartState::Cancelled if p.tries > 0 => "rolled back".to_string(),
            RunPartState::Cancelled => "not started".to_string(),
            RunPartState::Failed
            | RunPartState::Refused
            | RunPartState::LockHeld
            | RunPartState::Retrying
            | RunPartState::NotRun
            | RunPartState::Skipped => p
                .error
                .as_deref()
                .map(|e| first_line(e).to_string())
                .unwrap_or_default(),
            _ => String::new(),
        };
        // A window over upstream partitions not loaded says so, before and
        // after it loads: its output may be short (its log says which).
        if p.partly_read.is_some() {
            x = put(buf, table, x, y, "⚠ ", t.style("warning"));
        }
        let rows_text = match (&p.partly_read, rows_text.is_empty()) {
            (Some(_), true) => "upstream not all loaded".to_string(),
            _ => rows_text,
        };
        // Cut text ends in "…", so that it reads as cut: cut as shown.
        let room = table.right().saturating_sub(x) as usize;
        put(
            buf,
            table,
            x,
            y,
            &abbreviate(&rows_text, room),
            t.style("text"),
        );
    }
}
