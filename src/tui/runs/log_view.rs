//! The selected partition's log in the run pane: where it is scrolled to,
//! counted in rows as drawn (a long line, a server's error, wraps to
//! several, each of which can be brought into view), and bounded by the
//! box it is drawn in, so that it never scrolls past its first line into
//! blank rows.

use std::collections::VecDeque;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

use super::RunView;
use crate::tui::keymap;
use crate::tui::keys::{Action, Scope};
use crate::tui::theme::Theme;
use crate::tui::widgets::{block, controls_shown};

/// Where a log is scrolled to: its lines wholly below the box, and the
/// rows of the line at the box's foot below it too. Counted from the
/// newest line, so that lines arriving leave the view where it is; both 0
/// follow the log, its newest line at the foot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogBack {
    pub lines: usize,
    pub rows: usize,
}

impl LogBack {
    /// Lines newer than the box shows whole: out of view below, or in part.
    pub fn newer(self) -> usize {
        self.lines + usize::from(self.rows > 0)
    }

    /// `added` lines arrived: a log scrolled back stays on the lines it
    /// shows, one that follows shows them.
    pub fn arrived(&mut self, added: usize) {
        if *self != LogBack::default() {
            self.lines += added;
        }
    }
}

/// A move of the log in its box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scroll {
    /// Rows back, toward the first line.
    Older(usize),
    /// Rows on, toward the newest line.
    Newer(usize),
    Oldest,
    Newest,
}

/// Rows a notch of the wheel scrolls the log.
pub const WHEEL_ROWS: usize = 1;

/// Rows `[` (PgUp) and `]` (PgDn) scroll the log in a box `page` rows
/// high: all but one, which stays in view to read on from.
pub fn page_rows(page: u16) -> usize {
    (page as usize).saturating_sub(1).max(1)
}

/// The log's lines as the box draws them, wrapped at words.
fn paragraph<'a>(lines: impl IntoIterator<Item = &'a String>) -> Paragraph<'a> {
    let lines: Vec<Line> = lines.into_iter().map(|l| Line::raw(l.as_str())).collect();
    Paragraph::new(controls_shown(lines)).wrap(Wrap { trim: false })
}

/// Rows a line takes in a box `width` wide.
fn rows(line: &String, width: u16) -> usize {
    paragraph([line]).line_count(width.max(1)).max(1)
}

/// Rows of `log` below the box when scrolled to `back`.
fn rows_below(log: &VecDeque<String>, back: LogBack, width: u16) -> usize {
    let lines: usize = log
        .iter()
        .rev()
        .take(back.lines)
        .map(|l| rows(l, width))
        .sum();
    lines + back.rows
}

/// Where `log` is with `below` rows of it below the box.
fn at_rows_below(log: &VecDeque<String>, below: usize, width: u16) -> LogBack {
    let mut back = LogBack {
        lines: 0,
        rows: below,
    };
    for line in log.iter().rev() {
        let r = rows(line, width);
        if back.rows < r {
            break;
        }
        back.rows -= r;
        back.lines += 1;
    }
    back
}

/// Where `log`, scrolled to `back` in a box of `size`, is after `scroll`:
/// never further back than its first line at the top of the box, full.
pub fn scrolled(log: &VecDeque<String>, back: LogBack, size: Rect, scroll: Scroll) -> LogBack {
    let width = size.width.max(1);
    let total: usize = log.iter().map(|l| rows(l, width)).sum();
    let most = total.saturating_sub(size.height as usize);
    let below = rows_below(log, back, width);
    let to = match scroll {
        Scroll::Older(n) => below.saturating_add(n),
        Scroll::Newer(n) => below.saturating_sub(n),
        Scroll::Oldest => most,
        Scroll::Newest => 0,
    };
    at_rows_below(log, to.min(most), width)
}

/// `back` within the bounds of a box of `size`: one made bigger, or a log
/// whose oldest lines went, shows no blank rows above its first line.
pub fn bounded(log: &VecDeque<String>, back: LogBack, size: Rect) -> LogBack {
    scrolled(log, back, size, Scroll::Older(0))
}

/// Draws the selected partition's log of `run` in `area`, its box included.
pub fn render(frame: &mut Frame, area: Rect, t: &Theme, run: &RunView) {
    let p = run.partitions.get(run.selected);
    let log = run.logs.of(run.selected);
    let size = crate::tui::widgets::inner(area);
    let back = bounded(log, run.log_back, size);
    let mut title = format!(" log {} ", p.map(|p| p.name.as_str()).unwrap_or(""));
    if back.newer() > 0 {
        title.push_str(&format!(
            "· {} newer below ({} or {}) ",
            back.newer(),
            keymap::key(Scope::Main, Action::NextMonth),
            keymap::key(Scope::Main, Action::Last)
        ));
    }
    // Why is in the status bar when it happens: the title has no room.
    if run.log_not_kept.is_some() {
        title.push_str("· not kept on disk ");
    }
    let b = block(t, title, false);
    frame.render_widget(b, area);
    if p.is_none() || size.width == 0 {
        return;
    }
    // The lines down to the box's foot, as many as fill it.
    let height = size.height as usize;
    let end = log.len().saturating_sub(back.lines);
    let mut start = end;
    let mut wanted = height + back.rows;
    while start > 0 && wanted > 0 {
        start -= 1;
        wanted = wanted.saturating_sub(rows(&log[start], size.width));
    }
    let text = paragraph(log.range(start..end)).style(t.style("text"));
    let wrapped = text.line_count(size.width);
    let scroll = wrapped.saturating_sub(height + back.rows);
    let scroll = scroll.min(u16::MAX as usize) as u16;
    frame.render_widget(text.scroll((scroll, 0)), size);
}
