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

use super::{RunPartState, RunPartition, RunView};
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

/// Lines of `log`, scrolled to `back` in a box of `size`, out of view
/// above it, wholly or in part.
fn older(log: &VecDeque<String>, back: LogBack, size: Rect) -> usize {
    let width = size.width.max(1);
    let mut above = log
        .iter()
        .map(|l| rows(l, width))
        .sum::<usize>()
        .saturating_sub(size.height as usize + rows_below(log, back, width));
    let mut lines = 0;
    for line in log.iter() {
        if above == 0 {
            break;
        }
        above = above.saturating_sub(rows(line, width));
        lines += 1;
    }
    lines
}

/// Draws the selected partition's log of `run` in `area`, its box included.
pub fn render(frame: &mut Frame, area: Rect, t: &Theme, run: &RunView) {
    let p = run.partitions.get(run.selected);
    let log = run.logs.of(run.selected);
    let size = crate::tui::widgets::inner(area);
    let back = bounded(log, run.log_back, size);
    let mut title = format!(" log {} ", p.map(|p| p.name.as_str()).unwrap_or(""));
    // Why is in the status bar when it happens: the title has no room.
    if run.log_not_kept.is_some() {
        title.push_str("· not kept on disk ");
    } else if p.is_some_and(|p| p.log_unwritten.is_some()) {
        title.push_str("· not written on disk ");
    }
    if back.newer() > 0 {
        title.push_str(&format!(
            "· {} newer below ({} or {}) ",
            back.newer(),
            keymap::key(Scope::Main, Action::NextMonth),
            keymap::key(Scope::Main, Action::Last)
        ));
    }
    // Followed, a long log's first row in the box may be the tail of a
    // line: what is above it is said, as what is below is.
    let older = older(log, back, size);
    if older > 0 {
        title.push_str(&format!(
            "· {older} older above ({}) ",
            keymap::key(Scope::Main, Action::PrevMonth)
        ));
    }
    let b = block(t, title, false);
    frame.render_widget(b, area);
    let Some(p) = p.filter(|_| size.width > 0) else {
        return;
    };
    if log.is_empty() {
        let words = Paragraph::new(controls_shown(no_lines(run, p)))
            .wrap(Wrap { trim: false })
            .style(t.style("muted"));
        frame.render_widget(words, size);
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

/// What the box of partition `p` of `run` says while its log has no line:
/// what it waits for, or why it has none (a queued partition's box was
/// empty, as if its log had been lost; a partition early in a long run,
/// whose lines the run's bound let go, said "no lines", as if it had
/// logged nothing).
fn no_lines(run: &RunView, p: &RunPartition) -> String {
    let dropped = run.logs.dropped(run.selected);
    if dropped > 0 {
        let on_disk = match (&run.log_not_kept, &p.log_unwritten) {
            (None, None) => format!(
                "; the run log on disk has them: idem log {} {} --lines",
                run.job, p.name
            ),
            _ => String::new(),
        };
        return format!(
            "its {} log line{} let go: the console keeps a run's newest {} lines{on_disk}",
            crate::numbers::thousands(dropped as i64),
            if dropped == 1 { " was" } else { "s were" },
            crate::numbers::thousands(crate::tui::run_logs::RUN_LOG_LINES as i64),
        );
    }
    match p.state {
        RunPartState::Queued if run.cancel_requested => {
            "queued: it will not start, the run is being cancelled".into()
        }
        RunPartState::Queued => {
            let ahead = run
                .partitions
                .iter()
                .take_while(|q| q.name != p.name)
                .filter(|q| q.state == RunPartState::Queued)
                .count();
            format!(
                "queued: not started yet ({}; the run loads {})",
                match ahead {
                    0 => "next to start".to_string(),
                    n => format!("{n} queued before it"),
                },
                match run.concurrency {
                    1 => "one partition at a time".to_string(),
                    n => format!("{n} partitions at a time"),
                }
            )
        }
        RunPartState::Running => "running: no lines yet".into(),
        RunPartState::Cancelled => "cancelled before it started".into(),
        RunPartState::NotRun => "not run: the run ended before it started".into(),
        _ => "no lines".into(),
    }
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Rect;

    use super::super::tests::{Finish, finished, run, started};
    use super::super::{RunView, direction, render};
    use crate::tui::fixture::{draw, now};
    use crate::tui::keys::Action;
    use crate::tui::run_logs::RUN_LOG_LINES;
    use crate::tui::theme::Theme;

    /// The selected partition's log box, its text on one line.
    fn log_box(runs: &[RunView]) -> String {
        let area = Rect::new(0, 0, 99, 16);
        let shown = draw(99, 16, |f| {
            render(f, area, &Theme::default_theme(), runs, 0, true, now())
        });
        let rows: Vec<&str> = shown.lines().skip_while(|l| !l.contains("┌ log")).collect();
        rows.iter()
            .skip(1)
            .take_while(|l| !l.contains("└"))
            .map(|l| l.trim_matches(|c| matches!(c, '│' | '┃' | ' ')))
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// QA: in a run of 3,650 days the first days' log lines were let go to
    /// keep the run's bound, and their boxes said "no lines", as if those
    /// loads had logged nothing. The box says they were let go, and where
    /// they are kept.
    #[test]
    fn a_log_the_runs_bound_let_go_says_so_and_where_it_is_kept() {
        let mut runs = vec![run()];
        let first = runs[0].partitions[0].name.clone();
        runs[0].apply(&started(&first), now());
        runs[0].logs.push(0, "BEGIN\nCOMMIT");
        assert_eq!(log_box(&runs), "attempt 2 BEGIN COMMIT");
        for k in 0..RUN_LOG_LINES {
            runs[0].logs.push(1, &format!("line {k}"));
        }
        assert_eq!(runs[0].logs.dropped(0), 3);
        assert_eq!(
            log_box(&runs),
            format!(
                "its 3 log lines were let go: the console keeps a run's newest 20,000 lines; \
                 the run log on disk has them: idem log fct_orders {first} --lines"
            )
        );
        // Without a log on disk, no command that would find nothing.
        runs[0].log_not_kept = Some("no state directory".into());
        assert_eq!(
            log_box(&runs),
            "its 3 log lines were let go: the console keeps a run's newest 20,000 lines"
        );
    }

    /// QA: a queued partition's log box was empty, as if its log had been
    /// lost. It says what the partition waits for, or why it has no line.
    #[test]
    fn a_partition_without_log_lines_says_what_it_waits_for() {
        let mut runs = vec![run()];
        let mut selected = 0;
        let first = runs[0].partitions[0].name.clone();
        let one_at_a_time = "the run loads one partition at a time";
        assert_eq!(
            log_box(&runs),
            format!("queued: not started yet (next to start; {one_at_a_time})")
        );
        direction(&mut runs, &mut selected, Action::Down, None);
        assert_eq!(
            log_box(&runs),
            format!("queued: not started yet (1 queued before it; {one_at_a_time})")
        );
        runs[0].apply(&started(&first), now());
        assert_eq!(
            log_box(&runs),
            format!("queued: not started yet (next to start; {one_at_a_time})")
        );
        runs[0].cancel_requested = true;
        assert_eq!(
            log_box(&runs),
            "queued: it will not start, the run is being cancelled"
        );
        runs[0].apply(
            &finished(Finish {
                not_started: 2,
                cancelled: true,
                ..Finish::default()
            }),
            now(),
        );
        assert_eq!(log_box(&runs), "cancelled before it started");
        // A partition with lines shows them.
        direction(&mut runs, &mut selected, Action::Up, None);
        assert_eq!(log_box(&runs), "attempt 2");
    }
}
