//! The calendar pane: a job's partitions as month blocks (day grain), days ×
//! 24 hours (hour grain) or years × 12 months (month grain), each cell a
//! state glyph on its colour; the cursor, range selection and mouse here.

use chrono::{Datelike, Months, NaiveDate, NaiveDateTime, NaiveTime, Weekday};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::job::JobView;
use super::keymap;
use super::keys::{Action, Scope};
use super::layout::{DAY_BLOCK_H, DAY_BLOCK_W, HOUR_LABEL_W, MONTH_LABEL_W, units_in};
use super::theme::Theme;
use super::widgets::{block, controls_shown, put};
use crate::partition::{Grain, Partition};
use crate::state::LoadState;

/// The calendar's own state; the cursor, selection and scroll are the job's.
#[derive(Debug, Clone, Default)]
pub struct Calendar {
    /// Cells show row-count intensity instead of state.
    pub(super) rows_mode: bool,
    /// Where a mouse drag started.
    drag_from: Option<usize>,
    /// Month steps taken in a row: moved on from where they began, not
    /// from the day the last one landed on (Jan 31 to Feb 28 to Mar 31,
    /// not Mar 28).
    month_steps: Option<MonthSteps>,
}

/// The month steps in a row that left `job`'s cursor at `cursor`: `months`
/// from `origin`.
#[derive(Debug, Clone)]
struct MonthSteps {
    job: String,
    cursor: usize,
    origin: NaiveDateTime,
    months: i32,
}

/// Why the calendar has no cells to show yet.
pub enum Waiting<'a> {
    /// Reading the states; with what the read may wait on once it is slow.
    Loading(Option<&'a str>),
    Unreadable(&'a str),
    NotConnected {
        error: &'a str,
        retry_secs: i64,
    },
}

impl Calendar {
    /// Does a main-screen action on `job`; answers with a note for the
    /// status bar when there is one.
    pub fn act(&mut self, job: &mut JobView, action: Action, now: NaiveDateTime) -> Option<String> {
        match action {
            Action::Left => job.step(-1),
            Action::Right => job.step(1),
            Action::Up => job.step(-rows_of(job.grain())),
            Action::Down => job.step(rows_of(job.grain())),
            Action::PrevMonth | Action::NextMonth => {
                let grain = job.grain();
                let step = if grain == Grain::Month { 12 } else { 1 };
                let step = if action == Action::PrevMonth {
                    -step
                } else {
                    step
                };
                let (origin, months) = match self.month_steps.take() {
                    Some(m) if m.job == job.job.name && m.cursor == job.cursor => {
                        (Some(m.origin), m.months + step)
                    }
                    _ => (job.partitions.get(job.cursor).map(|p| p.start), step),
                };
                let origin = origin?;
                let to = Months::new(months.unsigned_abs());
                job.move_to(|_| {
                    let t = if months < 0 {
                        origin.checked_sub_months(to)
                    } else {
                        origin.checked_add_months(to)
                    }?;
                    Some(Partition::containing(grain, t))
                });
                self.month_steps = Some(MonthSteps {
                    job: job.job.name.clone(),
                    cursor: job.cursor,
                    origin,
                    months,
                });
            }
            Action::First => job.set_cursor(0),
            Action::Last => {
                let i = job.last_complete(now);
                job.set_cursor(i);
            }
            Action::RangeSelect => {
                if job.anchor.is_some() {
                    job.anchor = None;
                } else {
                    job.anchor = Some(job.cursor);
                    job.selected = [job.cursor].into_iter().collect();
                }
            }
            Action::SelectFailed | Action::SelectMissing | Action::SelectStale => {
                if let Some(why) = job.unread() {
                    return Some(why);
                }
                let state = match action {
                    Action::SelectFailed => LoadState::Failed,
                    Action::SelectMissing => LoadState::Missing,
                    _ => LoadState::Stale,
                };
                let matching: Vec<usize> = (0..job.partitions.len())
                    .filter(|i| job.state_at(*i) == Some(state))
                    .collect();
                let n = matching.len();
                // Refusals are no failures, but are what an operator looking
                // for failures wants next: with none failed, `f` takes them.
                let refused: Vec<usize> = (0..job.partitions.len())
                    .filter(|i| job.status_at(*i).is_some_and(|s| s.refused.is_some()))
                    .collect();
                let name = job.job.name.clone();
                if n == 0 && state == LoadState::Failed && !refused.is_empty() {
                    let k = refused.len();
                    job.select(refused);
                    return Some(format!(
                        "no failed partitions in {name}; selected the {k} the shrink guard refused (marked {}): they keep their rows until their source is complete ({} runs them, {} in its dialog allows the shrink)",
                        super::glyphs::REFUSED_FLAG,
                        crate::tui::keymap::key(crate::tui::keys::Scope::Main, Action::Run),
                        crate::tui::keymap::key(
                            crate::tui::keys::Scope::Confirm,
                            Action::AllowShrink
                        ),
                    ));
                }
                job.select(matching);
                let name = &name;
                return Some(if n == 0 {
                    format!("no {} partitions in {name}", state.name())
                } else {
                    format!(
                        "selected {n} {} {} of {name}",
                        state.name(),
                        if n == 1 { "partition" } else { "partitions" }
                    )
                });
            }
            Action::SelectOutOfDate => {
                if let Some(why) = job.unread() {
                    return Some(why);
                }
                let late: Vec<usize> = (0..job.partitions.len())
                    .filter(|i| job.status_at(*i).is_some_and(|s| s.out_of_date().is_some()))
                    .collect();
                let n = late.len();
                job.select(late);
                let name = &job.job.name;
                let key = |action| keymap::key(Scope::Main, action);
                return Some(if n == 0 {
                    format!(
                        "no partition of {name} is out of date with its source ({} reconciles)",
                        key(Action::Reconcile)
                    )
                } else {
                    format!(
                        "selected {n} out-of-date partitions of {name}; {} re-runs them",
                        key(Action::Run)
                    )
                });
            }
            Action::ClearSelection => job.clear_selection(),
            Action::ToggleRows => self.rows_mode = !self.rows_mode,
            _ => {}
        }
        None
    }

    /// A click on cell `i`: the cursor goes there, and a drag may start.
    pub fn press(&mut self, job: &mut JobView, i: usize) {
        self.drag_from = Some(i);
        job.clear_selection();
        job.set_cursor(i);
    }

    /// A drag over cell `i` selects from where it started.
    pub fn drag(&mut self, job: &mut JobView, i: usize) {
        if let Some(from) = self.drag_from {
            job.anchor = Some(from);
            job.set_cursor(i);
            job.anchor = None;
        }
    }

    pub fn release(&mut self) {
        self.drag_from = None;
    }

    /// Draws the calendar box of `job` in `r`.
    pub fn render(
        &self,
        frame: &mut Frame,
        r: Rect,
        theme: &Theme,
        job: &JobView,
        focused: bool,
        waiting: Option<Waiting>,
    ) {
        let t = theme;
        // The target only where it says more than the job's name.
        let target = job.job.target.to_string();
        let into = if target == job.job.name {
            String::new()
        } else {
            format!(" → {target}")
        };
        let mut title = vec![Span::styled(
            format!(
                " {} · {} · {}{into} ",
                job.job.name,
                job.job.strategy.as_str(),
                job.job.grain,
            ),
            t.style("text"),
        )];
        if self.rows_mode {
            title.push(Span::styled("rows view ", t.style("volume")));
        }
        if job.shows_loading() {
            let spinner = if job.slow.is_some() {
                "⟳ still reading: busy, locked or unreachable? "
            } else {
                "⟳ "
            };
            title.push(Span::styled(spinner, t.style("muted")));
        }
        let b = block(t, Line::from(title), focused);
        let area = b.inner(r);
        frame.render_widget(b, r);
        if let Some(waiting) = waiting {
            let text = match waiting {
                Waiting::Unreadable(e) => format!("cannot read states: {e}"),
                Waiting::NotConnected { error, retry_secs } => {
                    format!("not connected ({error}); retrying every {retry_secs} s")
                }
                Waiting::Loading(None) => "loading states…".to_string(),
                Waiting::Loading(Some(note)) => note.to_string(),
            };
            // An error or what the read waits on can be long: wrapped.
            let inset = Rect {
                x: area.x + 1,
                width: area.width.saturating_sub(2),
                ..area
            };
            let text = Paragraph::new(controls_shown(Span::styled(text, t.style("muted"))))
                .wrap(Wrap { trim: true });
            frame.render_widget(text, inset);
            return;
        }
        let buf = frame.buffer_mut();
        let layout = cells(job, area);
        for (x, y, text) in &layout.labels {
            put(buf, area, *x, *y, text, t.style("muted"));
        }
        let max_rows = volume_scale(job);
        for (x, y, i) in &layout.cells {
            let (text, mut style) = self.cell_text(t, job, *i, layout.cell_w, max_rows);
            let anomaly = job
                .status_at(*i)
                .is_some_and(|s| s.anomaly && s.out_of_date().is_none());
            if job.selected.contains(i) {
                style = style.patch(t.style("selection"));
            }
            if *i == job.cursor {
                style = style.patch(t.style("cursor"));
            }
            let end = put(buf, area, *x, *y, &text, style);
            if anomaly && end > *x {
                // The anomaly mark keeps its own colour on any state.
                let fx = end - if layout.cell_w == 4 { 2 } else { 1 };
                put(buf, area, fx, *y, "*", style.patch(t.style("anomaly")));
            }
        }
    }

    fn cell_text(
        &self,
        t: &Theme,
        job: &JobView,
        i: usize,
        width: u16,
        max_rows: i64,
    ) -> (String, Style) {
        let state = job.state_at(i).unwrap_or(LoadState::Future);
        let status = job.status_at(i);
        let anomaly = status.is_some_and(|s| s.anomaly);
        let (glyph, style) = if self.rows_mode && state != LoadState::Running {
            match status.and_then(|s| s.rows()) {
                Some(n) if n > 0 && max_rows > 0 => {
                    // Typical volumes are ▓, quieter ones lighter, spikes █.
                    const LEVELS: [char; 5] = ['▁', '░', '▒', '▓', '█'];
                    let k = ((n as f64 / max_rows as f64) * 3.0).round() as usize;
                    (LEVELS[k.min(4)], t.style("volume"))
                }
                Some(0) => ('0', t.style("muted")),
                _ => (job.glyph_at(i), t.style("muted")),
            }
        } else {
            (job.glyph_at(i), t.state(state))
        };
        // Out of date with its source (after a reconciliation) outranks an
        // anomaly: it is what the operator just asked about.
        let flag = match status.and_then(|s| s.out_of_date()) {
            Some(d) if d > 0 => '+',
            Some(_) => '-',
            // A refusal waits on the operator; an anomaly only asks a look.
            None if status.is_some_and(|s| s.refused.is_some()) => super::glyphs::REFUSED_FLAG,
            None if anomaly => '*',
            None => ' ',
        };
        let text = match width {
            2 => format!("{glyph}{flag}"),
            4 => format!(" {glyph}{flag} "),
            _ => format!(" {glyph}{flag}"),
        };
        (text, style)
    }
}

/// Partitions in one calendar row: a week, a day of hours, a year of months.
fn rows_of(grain: Grain) -> i64 {
    match grain {
        Grain::Day => 7,
        Grain::Hour => 24,
        Grain::Month => 12,
    }
}

/// The scale of the rows view: the 90th percentile, so that one spike does
/// not flatten every other partition.
fn volume_scale(job: &JobView) -> i64 {
    let mut volumes: Vec<i64> = job
        .statuses
        .iter()
        .filter_map(|s| s.rows())
        .filter(|n| *n > 0)
        .collect();
    volumes.sort_unstable();
    volumes
        .get(volumes.len() * 9 / 10)
        .or(volumes.last())
        .copied()
        .unwrap_or(0)
}

/// A drawn calendar: labels and the position of each partition's cell.
pub struct Cells {
    pub labels: Vec<(u16, u16, String)>,
    /// (x, y, partition index) of each cell.
    pub cells: Vec<(u16, u16, usize)>,
    pub cell_w: u16,
}

fn month_start(first: NaiveDateTime, unit: usize) -> Option<NaiveDate> {
    let d = NaiveDate::from_ymd_opt(first.year(), first.month(), 1)?;
    d.checked_add_months(Months::new(unit as u32))
}

fn weekday(w: Weekday) -> &'static str {
    match w {
        Weekday::Mon => "Mo",
        Weekday::Tue => "Tu",
        Weekday::Wed => "We",
        Weekday::Thu => "Th",
        Weekday::Fri => "Fr",
        Weekday::Sat => "Sa",
        Weekday::Sun => "Su",
    }
}

/// Where the visible units of `job` go inside the calendar box `inner`.
pub fn cells(job: &JobView, inner: Rect) -> Cells {
    let mut out = Cells {
        labels: Vec::new(),
        cells: Vec::new(),
        cell_w: 3,
    };
    let Some(first) = job.partitions.first().map(|p| p.start) else {
        return out;
    };
    let from = job.scroll;
    let to = (from + units_in(inner, job.grain())).min(job.unit_count());
    let at = |grain: Grain, d: NaiveDate| {
        job.index_of(Partition::containing(grain, d.and_time(NaiveTime::MIN)))
    };
    match job.grain() {
        Grain::Day => {
            let per_row = ((inner.width + 1) / DAY_BLOCK_W).max(1) as usize;
            for unit in from..to {
                let k = unit - from;
                let bx = inner.x + (k % per_row) as u16 * DAY_BLOCK_W;
                let by = inner.y + (k / per_row) as u16 * DAY_BLOCK_H;
                let Some(m) = month_start(first, unit) else {
                    continue;
                };
                let title = m.format("%B %Y").to_string();
                let pad = (21usize.saturating_sub(title.chars().count())) / 2;
                out.labels
                    .push((bx, by, format!("{}{title}", " ".repeat(pad + 1))));
                out.labels
                    .push((bx, by + 1, " Mo Tu We Th Fr Sa Su".to_string()));
                let offset = m.weekday().num_days_from_monday() as u16;
                let mut d = m;
                while d.month() == m.month() {
                    if let Some(i) = at(Grain::Day, d) {
                        let n = d.day0() as u16 + offset;
                        out.cells.push((bx + (n % 7) * 3, by + 2 + n / 7, i));
                    }
                    match d.succ_opt() {
                        Some(next) => d = next,
                        None => break,
                    }
                }
            }
        }
        Grain::Hour => {
            out.cell_w = 2;
            let mut header = String::new();
            for h in (0..24).step_by(3) {
                header.push_str(&format!("{h:02}    "));
            }
            out.labels.push((
                inner.x + HOUR_LABEL_W,
                inner.y,
                header.trim_end().to_string(),
            ));
            for unit in from..to {
                let row = inner.y + 1 + (unit - from) as u16;
                let day = first.date() + chrono::Duration::days(unit as i64);
                out.labels.push((
                    inner.x,
                    row,
                    format!("{} {}", weekday(day.weekday()), day.format("%m-%d")),
                ));
                for h in 0..24u16 {
                    let Some(t) = day.and_hms_opt(h as u32, 0, 0) else {
                        continue;
                    };
                    if let Some(i) = job.index_of(Partition::containing(Grain::Hour, t)) {
                        out.cells.push((inner.x + HOUR_LABEL_W + h * 2, row, i));
                    }
                }
            }
        }
        Grain::Month => {
            out.cell_w = 4;
            out.labels.push((
                inner.x + MONTH_LABEL_W,
                inner.y,
                "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".to_string(),
            ));
            for unit in from..to {
                let row = inner.y + 1 + (unit - from) as u16;
                let year = first.year() + unit as i32;
                out.labels.push((inner.x, row, format!("{year}")));
                for m in 1..=12u32 {
                    let Some(d) = NaiveDate::from_ymd_opt(year, m, 1) else {
                        continue;
                    };
                    if let Some(i) = at(Grain::Month, d) {
                        out.cells
                            .push((inner.x + MONTH_LABEL_W + (m as u16 - 1) * 4, row, i));
                    }
                }
            }
        }
    }
    out
}

/// The partition whose cell is at (x, y) inside the calendar box `inner`.
pub fn hit(job: &JobView, inner: Rect, x: u16, y: u16) -> Option<usize> {
    let layout = cells(job, inner);
    layout
        .cells
        .iter()
        .find(|(cx, cy, _)| *cy == y && x >= *cx && x < *cx + layout.cell_w)
        .map(|(_, _, i)| *i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::RangeEnd;
    use crate::tui::fixture::{draw, job_view, now};

    #[test]
    fn keys_move_by_days_and_weeks_and_a_range_follows() {
        let mut cal = Calendar::default();
        let mut job = job_view("j", false, "■■✗■·■■✗■■");
        cal.act(&mut job, Action::First, now());
        cal.act(&mut job, Action::Down, now());
        assert_eq!(job.cursor, 7, "a row is a week");
        cal.act(&mut job, Action::RangeSelect, now());
        cal.act(&mut job, Action::Right, now());
        cal.act(&mut job, Action::Right, now());
        assert_eq!(
            job.selected.iter().copied().collect::<Vec<_>>(),
            vec![7, 8, 9]
        );
        cal.act(&mut job, Action::Right, now());
        assert_eq!(job.cursor, 9, "the history ends there");
        cal.act(&mut job, Action::ClearSelection, now());
        assert!(job.selected.is_empty());
    }

    /// Month steps in a row keep to the day they began on where a month
    /// has it: from Jan 31, `]` lands on Feb 28 and then Mar 31, and `[`
    /// back on Jan 31; any other move begins anew.
    #[test]
    fn month_steps_keep_to_the_day_they_began_on() {
        let mut cal = Calendar::default();
        let mut job = job_view("j", false, &"■".repeat(160));
        let day = |job: &JobView| job.partitions[job.cursor].name();
        job.move_to(|_| Partition::parse(Grain::Day, "2026-01-31", RangeEnd::From));
        assert_eq!(day(&job), "2026-01-31");
        cal.act(&mut job, Action::NextMonth, now());
        assert_eq!(day(&job), "2026-02-28");
        cal.act(&mut job, Action::NextMonth, now());
        assert_eq!(day(&job), "2026-03-31");
        cal.act(&mut job, Action::PrevMonth, now());
        cal.act(&mut job, Action::PrevMonth, now());
        assert_eq!(day(&job), "2026-01-31");
        cal.act(&mut job, Action::NextMonth, now());
        cal.act(&mut job, Action::Left, now());
        assert_eq!(day(&job), "2026-02-27");
        cal.act(&mut job, Action::NextMonth, now());
        assert_eq!(
            day(&job),
            "2026-03-27",
            "a step after another move begins anew"
        );
    }

    #[test]
    fn selecting_by_state_takes_every_such_partition_and_says_so() {
        let mut cal = Calendar::default();
        let mut job = job_view("j", false, "■■✗■·■■✗■■");
        let note = cal.act(&mut job, Action::SelectFailed, now());
        assert_eq!(job.selected.iter().copied().collect::<Vec<_>>(), vec![2, 7]);
        assert_eq!(job.cursor, 2);
        assert_eq!(note.as_deref(), Some("selected 2 failed partitions of j"));
        let none = cal.act(&mut job, Action::SelectStale, now());
        assert_eq!(none.as_deref(), Some("no stale partitions in j"));
    }

    /// A partition the shrink guard refused is marked beside its state in
    /// the calendar and counted in the jobs pane, and `f` finding no
    /// failure says where the refusals are.
    #[test]
    fn a_standing_refusal_is_marked_and_said_when_failures_are_asked_for() {
        let mut job = job_view("j", false, "■■■■■■■■■■");
        job.statuses[3].refused = Some(std::sync::Arc::new(crate::warehouse::ledger::Refusal {
            attempt: 2,
            finished_at: "2026-06-05T03:00:00.000Z".into(),
            error: "source looks incomplete: would replace 2 rows with 0".into(),
        }));
        let (text, _) = Calendar::default().cell_text(&Theme::default_theme(), &job, 3, 3, 1);
        assert_eq!(text, " ■⊖");
        let (text, _) = Calendar::default().cell_text(&Theme::default_theme(), &job, 2, 3, 1);
        assert_eq!(text, " ■ ");
        let note = Calendar::default().act(&mut job, Action::SelectFailed, now());
        assert_eq!(
            note.as_deref(),
            Some(
                "no failed partitions in j; selected the 1 the shrink guard refused (marked ⊖): they keep their rows until their source is complete (r runs them, S in its dialog allows the shrink)"
            )
        );
        assert_eq!(job.selected.iter().copied().collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn a_drag_selects_between_press_and_release() {
        let mut cal = Calendar::default();
        let mut job = job_view("j", false, "■■✗■·■■✗■■");
        cal.press(&mut job, 6);
        cal.drag(&mut job, 3);
        cal.release();
        assert_eq!(job.cursor, 3);
        assert_eq!(job.selected.len(), 4);
        cal.drag(&mut job, 9);
        assert_eq!(job.cursor, 3, "no drag without a press");
    }

    #[test]
    fn cells_are_drawn_where_hits_find_them() {
        let job = job_view("j", false, "■■✗■·■■✗■■");
        let area = Rect::new(0, 0, 60, 10);
        let inner = Rect::new(1, 1, 58, 8);
        let layout = cells(&job, inner);
        assert_eq!(layout.cells.len(), 10);
        for (x, y, i) in &layout.cells {
            assert_eq!(hit(&job, inner, *x + 1, *y), Some(*i));
        }
        let screen = draw(60, 10, |f| {
            Calendar::default().render(f, area, &Theme::default_theme(), &job, true, None)
        });
        assert!(screen.contains("June 2026"), "{screen}");
        assert!(screen.contains(" ■  ■  ✗  ■  ·  ■  ■"), "{screen}");
        // The target is named only where it differs from the job's name.
        assert!(
            screen.contains(" j · replace_partition · day → t "),
            "{screen}"
        );
        let waiting = draw(60, 10, |f| {
            let w = Some(Waiting::Unreadable("no such table"));
            Calendar::default().render(f, area, &Theme::default_theme(), &job, true, w)
        });
        assert!(waiting.contains("cannot read states: no such table"));
    }
}
