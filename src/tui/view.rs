//! Rendering: reads the app state, draws, does no IO. The geometry
//! functions here are shared with `update` for scrolling and mouse hits.

use chrono::{Datelike, NaiveDate, NaiveDateTime, Weekday};
use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Gauge, Paragraph, Wrap};

use super::app::{
    App, ConfirmState, DiffView, Focus, JobView, Modal, Question, RunPartState, RunView,
    VerifyView, short,
};
use super::keys::{BINDINGS, Scope, footer};
use crate::config::Strategy;
use crate::partition::Grain;
use crate::state::LoadState;

pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 15;

/// Where each part of the screen goes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Screen {
    pub title: Rect,
    pub jobs: Rect,
    pub calendar: Rect,
    pub chart: Rect,
    pub detail: Rect,
    pub runs: Rect,
    pub footer: Rect,
}

fn grain_calendar_height(grain: Grain, units: usize, width: u16, avail: u16) -> u16 {
    match grain {
        // Month blocks of 8 lines; two rows of them when there is room and
        // history to fill them.
        Grain::Day => {
            let per_row = (width.saturating_sub(2) + 1) / DAY_BLOCK_W;
            if avail >= 2 + 16 + 9 && units > per_row.max(1) as usize {
                18
            } else {
                10
            }
        }
        Grain::Hour => avail.saturating_sub(9).clamp(6, 26),
        Grain::Month => avail.saturating_sub(9).clamp(5, 10),
    }
}

pub fn screen(area: Rect, grain: Grain, units: usize, has_runs: bool) -> Screen {
    let (x, y, w, h) = (area.x, area.y, area.width, area.height);
    let body_h = h.saturating_sub(2);
    let jobs_w = if w >= 110 { 26 } else { 20 }.min(w);
    let run_h = if !has_runs {
        0
    } else if body_h >= 30 {
        (body_h - 22).max(10)
    } else {
        body_h.saturating_sub(10).max(5).min(body_h)
    };
    let top_h = body_h - run_h;
    let right_x = x + jobs_w;
    let right_w = w - jobs_w;
    let cal_h = grain_calendar_height(grain, units, right_w, top_h).min(top_h);
    let rest = top_h - cal_h;
    let chart_h = if rest >= 8 { 2 } else { 0 };
    let detail_h = rest - chart_h;
    Screen {
        title: Rect::new(x, y, w, h.min(1)),
        jobs: Rect::new(x, y + 1, jobs_w, top_h),
        calendar: Rect::new(right_x, y + 1, right_w, cal_h),
        chart: Rect::new(right_x, y + 1 + cal_h, right_w, chart_h),
        detail: Rect::new(right_x, y + 1 + cal_h + chart_h, right_w, detail_h),
        runs: Rect::new(x, y + 1 + top_h, w, run_h),
        footer: Rect::new(x, y + h.saturating_sub(1), w, h.min(1)),
    }
}

fn inner(r: Rect) -> Rect {
    Rect::new(
        r.x + 1,
        r.y + 1,
        r.width.saturating_sub(2),
        r.height.saturating_sub(2),
    )
}

const DAY_BLOCK_W: u16 = 22;
const DAY_BLOCK_H: u16 = 8;
const HOUR_LABEL_W: u16 = 10;
const MONTH_LABEL_W: u16 = 6;

/// Calendar units (months, days or years) that fit in a calendar box.
fn units_in(inner: Rect, grain: Grain) -> usize {
    match grain {
        Grain::Day => {
            let per_row = ((inner.width + 1) / DAY_BLOCK_W).max(1);
            let rows = (inner.height / DAY_BLOCK_H).max(1);
            (per_row * rows) as usize
        }
        Grain::Hour | Grain::Month => inner.height.saturating_sub(1).max(1) as usize,
    }
}

/// How many calendar units the screen shows for a grain.
pub fn calendar_capacity(area: Rect, grain: Grain, units: usize, has_runs: bool) -> usize {
    let s = screen(area, grain, units, has_runs);
    units_in(inner(s.calendar), grain)
}

/// A drawn calendar: labels and the position of each partition's cell.
struct CalendarLayout {
    labels: Vec<(u16, u16, String)>,
    cells: Vec<(u16, u16, usize)>,
    cell_w: u16,
}

fn month_start(first: NaiveDateTime, unit: usize) -> Option<NaiveDate> {
    let d = NaiveDate::from_ymd_opt(first.year(), first.month(), 1)?;
    d.checked_add_months(chrono::Months::new(unit as u32))
}

fn calendar_layout(job: &JobView, inner: Rect) -> CalendarLayout {
    let mut out = CalendarLayout {
        labels: Vec::new(),
        cells: Vec::new(),
        cell_w: 3,
    };
    let Some(first) = job.partitions.first().map(|p| p.start) else {
        return out;
    };
    let cap = units_in(inner, job.grain());
    let from = job.scroll;
    let to = from + cap;
    match job.grain() {
        Grain::Day => {
            let per_row = ((inner.width + 1) / DAY_BLOCK_W).max(1) as usize;
            for unit in from..to.min(job.unit_count()) {
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
                    let p = crate::partition::Partition::containing(
                        Grain::Day,
                        d.and_time(chrono::NaiveTime::MIN),
                    );
                    if let Some(i) = job.index_of(p) {
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
            let first_day = first.date();
            for unit in from..to.min(job.unit_count()) {
                let row = inner.y + 1 + (unit - from) as u16;
                let day = first_day + chrono::Duration::days(unit as i64);
                out.labels.push((
                    inner.x,
                    row,
                    format!("{} {}", weekday(day.weekday()), day.format("%m-%d")),
                ));
                for h in 0..24u16 {
                    let Some(t) = day.and_hms_opt(h as u32, 0, 0) else {
                        continue;
                    };
                    let p = crate::partition::Partition::containing(Grain::Hour, t);
                    if let Some(i) = job.index_of(p) {
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
            for unit in from..to.min(job.unit_count()) {
                let row = inner.y + 1 + (unit - from) as u16;
                let year = first.year() + unit as i32;
                out.labels.push((inner.x, row, format!("{year}")));
                for m in 1..=12u32 {
                    let Some(d) = NaiveDate::from_ymd_opt(year, m, 1) else {
                        continue;
                    };
                    let p = crate::partition::Partition::containing(
                        Grain::Month,
                        d.and_time(chrono::NaiveTime::MIN),
                    );
                    if let Some(i) = job.index_of(p) {
                        out.cells
                            .push((inner.x + MONTH_LABEL_W + (m as u16 - 1) * 4, row, i));
                    }
                }
            }
        }
    }
    out
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

/// What a mouse position points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    Cell(usize),
    Job(usize),
    Run(usize),
    RunRow(usize),
}

pub fn hit_test(app: &App, area: Rect, x: u16, y: u16) -> Option<Hit> {
    let job = app.job()?;
    let s = screen(area, job.grain(), job.unit_count(), !app.runs.is_empty());
    let pos = ratatui::layout::Position::new(x, y);
    let cal = inner(s.calendar);
    if cal.contains(pos) && job.loaded {
        let layout = calendar_layout(job, cal);
        return layout
            .cells
            .iter()
            .find(|(cx, cy, _)| *cy == y && x >= *cx && x < *cx + layout.cell_w)
            .map(|(_, _, i)| Hit::Cell(*i));
    }
    let jobs = inner(s.jobs);
    if jobs.contains(pos) {
        let row = ((y - jobs.y) / 2) as usize;
        return app.visible_jobs().get(row).map(|i| Hit::Job(*i));
    }
    let runs = inner(s.runs);
    if runs.contains(pos) && y == runs.y {
        let mut left = runs.x;
        for (k, label) in run_labels(app).iter().enumerate() {
            let w = label.chars().count() as u16;
            if x >= left && x < left + w {
                return Some(Hit::Run(k));
            }
            left += w;
        }
        return None;
    }
    if runs.contains(pos) && y >= runs.y + 2 {
        let run = app.runs.get(app.selected_run)?;
        let body = Rect::new(runs.x, runs.y + 2, runs.width, runs.height - 2);
        let (table, _) = run_split(body);
        if !table.contains(pos) {
            return None;
        }
        let rows = table.height as usize;
        let first = run.selected.saturating_sub(rows.saturating_sub(1));
        return Some(Hit::RunRow(first + (y - table.y) as usize));
    }
    None
}

/// Writes text clipped to `clip`; returns the x after it.
fn put(buf: &mut Buffer, clip: Rect, x: u16, y: u16, text: &str, style: Style) -> u16 {
    if y < clip.y || y >= clip.bottom() || x < clip.x || x >= clip.right() {
        return x;
    }
    let (end, _) = buf.set_stringn(x, y, text, (clip.right() - x) as usize, style);
    end
}

pub use crate::numbers::thousands;

fn duration_text(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

fn abbreviate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else if max <= 1 {
        "…".chars().take(max).collect()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

fn block<'a>(app: &App, title: impl Into<Line<'a>>, focused: bool) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(if focused {
            app.theme.style("focus_border")
        } else {
            app.theme.style("border")
        })
        .title(title)
}

/// Draws the whole console.
pub fn render(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        render_too_small(frame, area);
        return;
    }
    let grain = app.job().map_or(Grain::Day, |j| j.grain());
    let units = app.job().map_or(0, |j| j.unit_count());
    let s = screen(area, grain, units, !app.runs.is_empty());
    render_title(frame, app, s.title);
    render_jobs(frame, app, s.jobs);
    if let Some(job) = app.job() {
        render_calendar(frame, app, job, s.calendar);
        if s.chart.height > 0 {
            render_chart(frame, app, job, s.chart);
        }
        if s.detail.height > 2 {
            render_detail(frame, app, job, s.detail);
        }
    }
    if s.runs.height > 0 {
        render_runs(frame, app, s.runs);
    }
    render_footer(frame, app, s.footer);
    match &app.modal {
        Modal::Help { scroll } => render_help(frame, app, area, *scroll),
        Modal::Confirm(c) => render_confirm(frame, app, c, area),
        Modal::Question(q) => render_question(frame, app, q, area),
        Modal::Errors { selected } => render_errors(frame, app, *selected, area),
        Modal::Diff { scroll } => render_diff(frame, app, area, *scroll),
        _ => {}
    }
}

fn render_too_small(frame: &mut Frame, area: Rect) {
    let text = vec![
        Line::from("terminal too small"),
        Line::from(format!(
            "{}×{} — idem needs at least {MIN_WIDTH}×{MIN_HEIGHT}",
            area.width, area.height
        )),
        Line::from("q quits"),
    ];
    let y = area.height / 2;
    let r = Rect::new(
        area.x,
        area.y + y.saturating_sub(1),
        area.width,
        area.height.min(3),
    );
    frame.render_widget(
        Paragraph::new(text)
            .alignment(Alignment::Center)
            .wrap(Wrap { trim: true }),
        r.intersection(area),
    );
}

fn render_title(frame: &mut Frame, app: &App, r: Rect) {
    let t = &app.theme;
    let buf = frame.buffer_mut();
    buf.set_style(r, t.style("title"));
    let left = format!(" idem · {}", app.url);
    let mut right = String::new();
    if let Some(e) = &app.db_error {
        right.push_str(&format!("✗ database: {} · ", abbreviate(e, 50)));
    } else if app.connecting && !app.connected {
        right.push_str("connecting… · ");
    } else if app.loading() {
        right.push_str("⟳ loading · ");
    }
    let active = app.active_runs();
    if active > 0 {
        right.push_str(&format!("▶ {active} running · "));
    }
    right.push_str(&format!("{} UTC ", app.now.format("%H:%M")));
    let rw = right.chars().count() as u16;
    let lw = r.width.saturating_sub(rw + 1) as usize;
    put(buf, r, r.x, r.y, &abbreviate(&left, lw), t.style("title"));
    let style = if app.db_error.is_some() {
        t.style("title")
            .patch(t.style("error"))
            .add_modifier(Modifier::BOLD)
    } else {
        t.style("title")
    };
    put(buf, r, r.right().saturating_sub(rw), r.y, &right, style);
}

fn render_jobs(frame: &mut Frame, app: &App, r: Rect) {
    let t = &app.theme;
    let editing = matches!(app.modal, Modal::Filter);
    let title = if editing || !app.filter.value().is_empty() {
        format!(
            " Jobs /{}{} ",
            app.filter.value(),
            if editing { "▏" } else { "" }
        )
    } else {
        " Jobs ".to_string()
    };
    let b = block(app, title, app.focus == Focus::Jobs);
    let area = b.inner(r);
    frame.render_widget(b, r);
    let buf = frame.buffer_mut();
    let visible = app.visible_jobs();
    if visible.is_empty() {
        put(
            buf,
            area,
            area.x + 1,
            area.y,
            "no job matches",
            t.style("muted"),
        );
    }
    for (row, i) in visible.iter().enumerate() {
        let y = area.y + row as u16 * 2;
        if y >= area.bottom() {
            break;
        }
        let j = &app.jobs[*i];
        let current = *i == app.current;
        let name_style = if current {
            t.style("highlight")
        } else {
            t.style("text")
        };
        let marker = if current { "▶" } else { " " };
        let errors = j.lint.iter().filter(|l| l.error).count();
        let warnings = j.lint.len() - errors;
        let badge = if errors > 0 {
            format!("✗{errors}")
        } else if warnings > 0 {
            format!("⚠{warnings}")
        } else {
            String::new()
        };
        let bw = badge.chars().count() as u16;
        let name_w = area.width.saturating_sub(2 + bw) as usize;
        let x = put(buf, area, area.x, y, marker, name_style);
        put(
            buf,
            area,
            x,
            y,
            &abbreviate(&j.job.name, name_w),
            name_style,
        );
        if bw > 0 {
            let style = if errors > 0 {
                t.style("error")
            } else {
                t.style("warning")
            };
            put(buf, area, area.right().saturating_sub(bw), y, &badge, style);
        }
        let y2 = y + 1;
        let strategy = match j.job.strategy {
            Strategy::ReplacePartition => "repl",
            Strategy::MergeKey => "merge",
        };
        let mut x = put(
            buf,
            area,
            area.x + 1,
            y2,
            &format!("{strategy}·{} ", j.job.grain),
            t.style("muted"),
        );
        if j.error.is_some() && !j.loaded {
            put(buf, area, x, y2, "unreadable", t.style("error"));
        } else if !j.loaded {
            put(buf, area, x, y2, "loading…", t.style("muted"));
        } else {
            let mut any = false;
            for st in [
                LoadState::Running,
                LoadState::Failed,
                LoadState::Vanished,
                LoadState::Missing,
                LoadState::Stale,
            ] {
                let n = j.count(st);
                if n > 0 {
                    x = put(
                        buf,
                        area,
                        x,
                        y2,
                        &format!("{}{n} ", st.glyph()),
                        t.state(st),
                    );
                    any = true;
                }
            }
            if !any {
                put(buf, area, x, y2, "■ ok", t.state(LoadState::Loaded));
            }
        }
    }
}

fn cell_text(app: &App, job: &JobView, i: usize, width: u16, max_rows: i64) -> (String, Style) {
    let t = &app.theme;
    let state = job.state_at(i).unwrap_or(LoadState::Future);
    let status = job.status_at(i);
    let anomaly = status.is_some_and(|s| s.anomaly);
    let (glyph, style) = if app.rows_mode && state != LoadState::Running {
        match status.and_then(|s| s.rows()) {
            Some(n) if n > 0 && max_rows > 0 => {
                // Typical volumes are ▓, quieter ones lighter, spikes █.
                const LEVELS: [char; 5] = ['▁', '░', '▒', '▓', '█'];
                let k = ((n as f64 / max_rows as f64) * 3.0).round() as usize;
                (LEVELS[k.min(4)], t.style("volume"))
            }
            Some(0) => ('0', t.style("muted")),
            _ => (state.glyph(), t.style("muted")),
        }
    } else {
        (state.glyph(), t.state(state))
    };
    let flag = if anomaly { '*' } else { ' ' };
    let text = match width {
        2 => format!("{glyph}{flag}"),
        4 => format!(" {glyph}{flag} "),
        _ => format!(" {glyph}{flag}"),
    };
    (text, style)
}

fn render_calendar(frame: &mut Frame, app: &App, job: &JobView, r: Rect) {
    let t = &app.theme;
    let mut title = vec![Span::styled(
        format!(
            " {} · {} · {} · {} ",
            job.job.name,
            job.job.strategy.as_str(),
            job.job.grain,
            job.job.target
        ),
        t.style("text"),
    )];
    if app.rows_mode {
        title.push(Span::styled("rows view ", t.style("volume")));
    }
    if job.loading {
        title.push(Span::styled("⟳ ", t.style("muted")));
    }
    let b = block(app, Line::from(title), app.focus == Focus::Calendar);
    let area = b.inner(r);
    frame.render_widget(b, r);
    let buf = frame.buffer_mut();
    if !job.loaded {
        let text = match (&job.error, &app.db_error) {
            (Some(e), _) => format!("cannot read states: {e}"),
            (None, Some(e)) if !app.connected => {
                format!(
                    "not connected ({e}); retrying every {} s",
                    super::app::REFRESH_SECS
                )
            }
            _ => "loading states…".to_string(),
        };
        put(buf, area, area.x + 1, area.y, &text, t.style("muted"));
        return;
    }
    let layout = calendar_layout(job, area);
    for (x, y, text) in &layout.labels {
        put(buf, area, *x, *y, text, t.style("muted"));
    }
    // The scale of the rows view: the 90th percentile, so that one spike
    // does not flatten every other day.
    let mut volumes: Vec<i64> = job
        .statuses
        .iter()
        .filter_map(|s| s.rows())
        .filter(|n| *n > 0)
        .collect();
    volumes.sort_unstable();
    let max_rows = volumes
        .get(volumes.len() * 9 / 10)
        .or(volumes.last())
        .copied()
        .unwrap_or(0);
    for (x, y, i) in &layout.cells {
        let (text, mut style) = cell_text(app, job, *i, layout.cell_w, max_rows);
        let anomaly = job.status_at(*i).is_some_and(|s| s.anomaly);
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

fn render_chart(frame: &mut Frame, app: &App, job: &JobView, r: Rect) {
    let t = &app.theme;
    let buf = frame.buffer_mut();
    let label = format!(" rows/{} ", job.grain());
    let lw = label.chars().count() as u16 + 1;
    put(buf, r, r.x, r.y, &label, t.style("muted"));
    let width = r.width.saturating_sub(lw + 1) as usize;
    if width == 0 || job.statuses.is_empty() {
        return;
    }
    // The partitions of the visible calendar, narrowed around the cursor.
    let cap = calendar_capacity(
        Rect::new(0, 0, app.size.0, app.size.1),
        job.grain(),
        job.unit_count(),
        !app.runs.is_empty(),
    );
    let visible: Vec<usize> = (0..job.partitions.len())
        .filter(|i| {
            let u = job.unit_of(*i);
            u >= job.scroll && u < job.scroll + cap
        })
        .collect();
    let (Some(&lo), Some(&hi)) = (visible.first(), visible.last()) else {
        return;
    };
    let mut from = lo;
    let mut to = hi;
    if to - from + 1 > width {
        from = job.cursor.saturating_sub(width / 2).max(lo);
        to = (from + width - 1).min(hi);
        from = to + 1 - width.min(to + 1);
    }
    let max = (from..=to)
        .filter_map(|i| job.status_at(i).and_then(|s| s.rows()))
        .max()
        .unwrap_or(0);
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    for (k, i) in (from..=to).enumerate() {
        let x = r.x + lw + k as u16;
        let s = job.status_at(i);
        let (ch, mut style) = match s.and_then(|s| s.rows()) {
            Some(n) if max > 0 && n > 0 => {
                let level = ((n as f64 / max as f64) * 7.0).round() as usize;
                (BARS[level.min(7)], t.style("volume"))
            }
            _ => ('_', t.style("muted")),
        };
        if s.is_some_and(|s| s.anomaly) {
            style = t.style("anomaly");
        }
        if i == job.cursor {
            style = t.style("highlight");
            put(buf, r, x, r.y + 1, "▲", t.style("highlight"));
        }
        put(buf, r, x, r.y, &ch.to_string(), style);
    }
    let name = job
        .partitions
        .get(job.cursor)
        .map(|p| p.name())
        .unwrap_or_default();
    let rows = job
        .status_at(job.cursor)
        .and_then(|s| s.rows())
        .map(thousands)
        .unwrap_or_else(|| "—".into());
    let note = format!("{name}: {rows} rows · max {}", thousands(max));
    let cursor_x = r.x + lw + (job.cursor.saturating_sub(from)) as u16;
    let nx = if cursor_x + 2 + note.chars().count() as u16 <= r.right() {
        cursor_x + 2
    } else {
        r.x + 1
    };
    if nx > cursor_x || cursor_x > r.x + lw + note.chars().count() as u16 {
        put(buf, r, nx, r.y + 1, &note, t.style("muted"));
    }
}

fn attempt_time(ts: &str) -> String {
    // "2026-06-04T03:12:45.123Z" → "2026-06-04 03:12 UTC"
    match (ts.get(..10), ts.get(11..16)) {
        (Some(d), Some(hm)) => format!("{d} {hm} UTC"),
        _ => ts.to_string(),
    }
}

fn attempt_duration(started: &str, finished: &str) -> Option<u64> {
    let a = chrono::DateTime::parse_from_rfc3339(started).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(finished).ok()?;
    Some((b - a).num_milliseconds().max(0) as u64)
}

fn pct(delta: i64, base: f64) -> String {
    if base <= 0.0 {
        return String::new();
    }
    format!(" ({:+.1}%)", delta as f64 * 100.0 / base)
}

fn render_detail(frame: &mut Frame, app: &App, job: &JobView, r: Rect) {
    let t = &app.theme;
    let i = job.cursor;
    let name = job.partitions.get(i).map(|p| p.name()).unwrap_or_default();
    let mut title = format!(" {name} ");
    if !job.selected.is_empty() {
        title.push_str(&format!(
            "· {} selected{} ",
            job.selected.len(),
            if job.anchor.is_some() { " (range)" } else { "" }
        ));
    }
    let b = block(app, title, false);
    let area = b.inner(r);
    frame.render_widget(b, r);
    let Some(s) = job.status_at(i) else {
        frame.render_widget(
            Paragraph::new(Span::styled(" loading…", t.style("muted"))),
            area,
        );
        return;
    };
    let state = job.state_at(i).unwrap_or(s.state);
    let muted = t.style("muted");
    let text_style = t.style("text");
    let mut first = vec![
        Span::styled(
            format!("{} {}", state.glyph(), state.name()),
            t.state(state),
        ),
        Span::styled(format!(" · {} attempts", s.attempts), muted),
    ];
    if s.anomaly {
        first.push(Span::styled(" · * anomaly", t.style("anomaly")));
    }
    if s.drift {
        first.push(Span::styled(" · drift since last load", t.style("warning")));
    }
    let mut lines = vec![Line::from(first)];
    if let Some(v) = app.cursor_verification() {
        lines.extend(verification_lines(app, v));
    }

    let rows = s.rows().filter(|n| *n > 0);
    let mut parts = vec![format!(
        "rows now {}",
        s.rows_now.map(thousands).unwrap_or_else(|| "—".into())
    )];
    parts.push(format!(
        "at last load {}",
        s.rows_at_load.map(thousands).unwrap_or_else(|| "—".into())
    ));
    if let (Some(n), Some(prev)) = (
        rows,
        i.checked_sub(1)
            .and_then(|p| job.status_at(p))
            .and_then(|p| p.rows()),
    ) {
        let d = n - prev;
        parts.push(format!("vs previous {}{}", signed(d), pct(d, prev as f64)));
    }
    let before: Vec<f64> = (i.saturating_sub(7)..i)
        .filter_map(|k| job.status_at(k).and_then(|s| s.rows()))
        .map(|n| n as f64)
        .collect();
    if let Some(n) = rows
        && !before.is_empty()
    {
        let mut v = before.clone();
        let med = crate::state::median(&mut v);
        let d = n - med.round() as i64;
        parts.push(format!(
            "vs 7-partition median {} {}{}",
            thousands(med.round() as i64),
            signed(d),
            pct(d, med)
        ));
    }
    lines.push(Line::from(Span::styled(parts.join(" · "), text_style)));

    if let Some(l) = job.live.get(&name) {
        let (word, style) = if l.succeeded {
            ("succeeded", t.style("ok"))
        } else {
            ("failed", t.style("error"))
        };
        lines.push(Line::from(vec![
            Span::styled(format!("last attempt #{} ", l.attempt), muted),
            Span::styled(word, style),
            Span::styled(
                format!(
                    " · in this console's run · {}",
                    duration_text(l.duration_ms)
                ),
                muted,
            ),
        ]));
        if let Some(e) = &l.error {
            lines.push(Line::from(Span::styled(
                format!("error: {}", e.lines().next().unwrap_or("")),
                t.style("error"),
            )));
        }
    } else {
        match &s.last_attempt {
            Some(a) => {
                let dur = attempt_duration(&a.started_at, &a.finished_at)
                    .map(duration_text)
                    .unwrap_or_default();
                let status_style = if a.error.is_some() {
                    t.style("error")
                } else {
                    t.style("ok")
                };
                lines.push(Line::from(vec![
                    Span::styled(format!("last attempt #{} ", a.attempt), muted),
                    Span::styled(a.status.as_str().to_string(), status_style),
                    Span::styled(
                        format!(
                            " · {} · {dur} · by {}{}",
                            attempt_time(&a.finished_at),
                            a.operator,
                            a.reason
                                .as_ref()
                                .map(|r| format!(" · “{r}”"))
                                .unwrap_or_default()
                        ),
                        muted,
                    ),
                ]));
                if let Some(e) = &a.error {
                    let same = app
                        .error_groups()
                        .into_iter()
                        .find(|g| g.partitions.contains(&i))
                        .map(|g| g.partitions.len())
                        .unwrap_or(1);
                    let mut spans = vec![Span::styled(
                        format!("error: {}", e.lines().next().unwrap_or("")),
                        t.style("error"),
                    )];
                    if same > 1 {
                        spans.push(Span::styled(format!(" (×{same}, e groups)"), muted));
                    }
                    lines.push(Line::from(spans));
                }
            }
            None => lines.push(Line::from(Span::styled("no attempt recorded", muted))),
        }
    }
    if let Some(fp) = s
        .last_success
        .as_ref()
        .and_then(|a| a.fingerprint.as_deref())
    {
        lines.push(Line::from(Span::styled(
            format!("fingerprint {}", short(fp)),
            muted,
        )));
    }
    // The job's failures by error signature, when there is room for them.
    let groups = app.error_groups();
    if !groups.is_empty() && area.height >= 12 {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!("failures of {} by error (e selects a group):", job.job.name),
            muted,
        )));
        for g in groups.iter().take(3) {
            lines.push(Line::from(vec![
                Span::styled(format!("  ×{:<4}", g.partitions.len()), t.style("error")),
                Span::styled(g.signature.clone(), text_style),
            ]));
        }
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), area);
    // A legend, so that no state is told by colour alone.
    if area.height >= 7 {
        let mut spans = Vec::new();
        for st in LoadState::ALL {
            if st == LoadState::Future {
                continue;
            }
            spans.push(Span::styled(format!("{} ", st.glyph()), t.state(st)));
            spans.push(Span::styled(format!("{}  ", st.name()), muted));
        }
        spans.push(Span::styled("* ", t.style("anomaly")));
        spans.push(Span::styled("anomaly", muted));
        let y = area.bottom() - 1;
        frame.render_widget(
            Paragraph::new(Line::from(spans)),
            Rect::new(area.x, y, area.width, 1),
        );
    }
}

/// The short name of a run in a verification ("run 2 (on top of run 1)"
/// reads "run 2").
fn run_name(label: &str) -> &str {
    label.split(" (").next().unwrap_or(label)
}

/// What the latest verification of the cursor's partition found.
fn verification_lines(app: &App, v: &VerifyView) -> Vec<Line<'static>> {
    let t = &app.theme;
    let muted = t.style("muted");
    let label = Span::styled("verify ", muted);
    match &v.result {
        None => vec![Line::from(vec![
            label,
            Span::styled(
                "verifying… (loads it twice, then rolls back)",
                t.style("running"),
            ),
        ])],
        Some(Err(e)) => vec![Line::from(vec![
            label,
            Span::styled(
                format!("error: {}", e.lines().next().unwrap_or("")),
                t.style("error"),
            ),
        ])],
        Some(Ok(r)) => match &r.difference {
            None => vec![Line::from(vec![
                label,
                Span::styled("idempotent", t.style("ok")),
                Span::styled(
                    format!(
                        ": same {} rows on every run; rolled back",
                        thousands(r.rows.first().copied().unwrap_or(0) as i64)
                    ),
                    t.style("text"),
                ),
            ])],
            Some(d) => {
                let (a, b) = (run_name(d.first), run_name(d.second));
                let mut lines = vec![Line::from(vec![
                    label,
                    Span::styled("NOT idempotent", t.style("error")),
                    Span::styled(
                        format!(
                            ": {} and {} differ: {} rows only in {a}, {} only in {b}; rolled back",
                            d.first,
                            d.second,
                            thousands(d.only_in_first as i64),
                            thousands(d.only_in_second as i64)
                        ),
                        t.style("text"),
                    ),
                ])];
                for (name, sample) in [(a, &d.sample_first), (b, &d.sample_second)] {
                    for row in sample.iter().take(2) {
                        lines.push(Line::from(vec![
                            Span::styled(format!("  only in {name}: "), muted),
                            Span::styled(row.clone(), t.style("text")),
                        ]));
                    }
                }
                lines
            }
        },
    }
}

fn signed(n: i64) -> String {
    if n >= 0 {
        format!("+{}", thousands(n))
    } else {
        format!("−{}", thousands(-n))
    }
}

/// The run pane's per-partition table and, where there is room, the log
/// beside it (wide terminals) or below it.
fn run_split(body: Rect) -> (Rect, Option<Rect>) {
    if body.width >= 100 {
        let tw = body.width * 11 / 20;
        (
            Rect::new(body.x, body.y, tw, body.height),
            Some(Rect::new(
                body.x + tw + 1,
                body.y,
                body.width - tw - 1,
                body.height,
            )),
        )
    } else if body.height >= 6 {
        let th = body.height / 2;
        (
            Rect::new(body.x, body.y, body.width, th),
            Some(Rect::new(body.x, body.y + th, body.width, body.height - th)),
        )
    } else {
        (body, None)
    }
}

/// The label of each run in the run pane's list.
fn run_labels(app: &App) -> Vec<String> {
    app.runs
        .iter()
        .map(|run| {
            let glyph = match &run.finished {
                Some(f) if f.cancelled => '⊘',
                Some(f) if f.failed > 0 => '✗',
                Some(_) => '✓',
                None if run.error.is_some() => '✗',
                None => '▶',
            };
            format!(
                " {glyph} #{} {} {}/{} ",
                run.id,
                run.job,
                run.done(),
                run.partitions.len()
            )
        })
        .collect()
}

fn run_summary(run: &RunView, now: NaiveDateTime) -> String {
    let total = run.partitions.len();
    let failed = run.count(RunPartState::Failed);
    match &run.finished {
        Some(f) => format!(
            "{} {}/{} · {} failed{} · {}",
            if f.cancelled { "cancelled" } else { "finished" },
            f.succeeded,
            total,
            f.failed,
            if f.not_started > 0 {
                format!(" · {} not started", f.not_started)
            } else {
                String::new()
            },
            duration_text(f.duration_ms)
        ),
        None if run.error.is_some() => "not started".to_string(),
        None => {
            let (rate, eta) = run.rate_eta(now);
            format!(
                "{}/{} · {} failed · {:.1} p/s · ETA {}{}",
                run.done(),
                total,
                failed,
                rate,
                eta.map(|s| format!("{}:{:02}", s / 60, s % 60))
                    .unwrap_or_else(|| "–".into()),
                if run.cancel_requested {
                    " · cancelling…"
                } else {
                    ""
                }
            )
        }
    }
}

fn render_runs(frame: &mut Frame, app: &App, r: Rect) {
    let t = &app.theme;
    let b = block(
        app,
        format!(" Runs ({}) ", app.runs.len()),
        app.focus == Focus::Runs,
    );
    let area = b.inner(r);
    frame.render_widget(b, r);
    if area.height == 0 {
        return;
    }
    // The list of runs, the selected one marked.
    let mut spans = Vec::new();
    for (k, text) in run_labels(app).into_iter().enumerate() {
        let style = if k == app.selected_run {
            t.style("highlight").add_modifier(Modifier::REVERSED)
        } else {
            t.style("text")
        };
        spans.push(Span::styled(text, style));
    }
    frame.render_widget(
        Paragraph::new(Line::from(spans)),
        Rect::new(area.x, area.y, area.width, 1),
    );
    let Some(run) = app.runs.get(app.selected_run) else {
        return;
    };
    if area.height < 2 {
        return;
    }
    let total = run.partitions.len().max(1);
    let gauge = Gauge::default()
        .gauge_style(t.style("gauge"))
        .ratio((run.done() as f64 / total as f64).clamp(0.0, 1.0))
        .label(run_summary(run, app.now));
    frame.render_widget(gauge, Rect::new(area.x, area.y + 1, area.width, 1));
    if area.height < 3 {
        return;
    }
    let body = Rect::new(area.x, area.y + 2, area.width, area.height - 2);
    let (table, log_area) = run_split(body);
    let buf = frame.buffer_mut();
    let rows = table.height as usize;
    let first = run.selected.saturating_sub(rows.saturating_sub(1));
    for (k, p) in run.partitions.iter().enumerate().skip(first).take(rows) {
        let y = table.y + (k - first) as u16;
        let (word, glyph) = p.state.label();
        let style = match p.state {
            RunPartState::Succeeded => t.style("ok"),
            RunPartState::Failed => t.style("error"),
            RunPartState::Running | RunPartState::Retrying => t.state(LoadState::Running),
            _ => t.style("muted"),
        };
        let sel = k == run.selected && app.focus == Focus::Runs;
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
        let dur = p.duration_ms.map(duration_text).unwrap_or_default();
        x = put(buf, table, x, y, &format!("{dur:>8}  "), t.style("muted"));
        let rows_text = match p.state {
            RunPartState::Succeeded => {
                let mut s = format!(
                    "−{} → +{}",
                    thousands(p.rows_deleted),
                    thousands(p.rows_inserted)
                );
                if p.rows_updated > 0 {
                    s.push_str(&format!(" ~{}", thousands(p.rows_updated)));
                }
                match p.content_changed {
                    Some(true) => s.push_str(" · changed"),
                    Some(false) => s.push_str(" · same content"),
                    None => {}
                }
                s
            }
            RunPartState::Failed | RunPartState::Retrying => p
                .error
                .as_deref()
                .map(|e| e.lines().next().unwrap_or("").to_string())
                .unwrap_or_default(),
            _ => String::new(),
        };
        put(buf, table, x, y, &rows_text, t.style("text"));
    }
    if let Some(log_area) = log_area {
        let p = run.partitions.get(run.selected);
        let title = format!(" log {} ", p.map(|p| p.name.as_str()).unwrap_or(""));
        let b = block(app, title, false);
        let inner_log = b.inner(log_area);
        frame.render_widget(b, log_area);
        if let Some(p) = p {
            let n = inner_log.height as usize;
            let lines: Vec<Line> = p
                .log
                .iter()
                .skip(p.log.len().saturating_sub(n))
                .map(|l| Line::from(Span::styled(l.clone(), t.style("text"))))
                .collect();
            // Long lines wrap; the newest stay in view.
            let w = inner_log.width.max(1) as usize;
            let wrapped: usize = lines.iter().map(|l| l.width().max(1).div_ceil(w)).sum();
            let scroll = wrapped.saturating_sub(n).min(u16::MAX as usize) as u16;
            frame.render_widget(
                Paragraph::new(lines)
                    .wrap(Wrap { trim: false })
                    .scroll((scroll, 0)),
                inner_log,
            );
        }
    }
}

fn render_footer(frame: &mut Frame, app: &App, r: Rect) {
    let t = &app.theme;
    let buf = frame.buffer_mut();
    match &app.modal {
        Modal::Command(input) => {
            let x = put(buf, r, r.x, r.y, ":", t.style("highlight"));
            let w = r.width.saturating_sub(2) as usize;
            let scroll = input.visual_scroll(w);
            let shown: String = input.value().chars().skip(scroll).collect();
            put(buf, r, x, r.y, &shown, t.style("text"));
            let cx = x + (input.visual_cursor().saturating_sub(scroll)) as u16;
            frame.set_cursor_position((cx.min(r.right().saturating_sub(1)), r.y));
            return;
        }
        Modal::Filter => {
            put(
                buf,
                r,
                r.x,
                r.y,
                &format!(
                    " filter jobs: {}▏  Enter keep · Esc clear",
                    app.filter.value()
                ),
                t.style("text"),
            );
            return;
        }
        _ => {}
    }
    if let Some((error, text)) = &app.message {
        let style = if *error {
            t.style("error")
        } else {
            t.style("text")
        };
        put(buf, r, r.x + 1, r.y, text, style);
        return;
    }
    let mut x = r.x + 1;
    for (key, word) in footer(app.scope()) {
        if x + (key.chars().count() + word.len() + 3) as u16 > r.right() {
            break;
        }
        x = put(buf, r, x, r.y, key, t.style("highlight"));
        x = put(buf, r, x, r.y, &format!(" {word}  "), t.style("muted"));
    }
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width.saturating_sub(2));
    let h = h.min(area.height.saturating_sub(2));
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// The help overlay, from the key registry.
pub fn help_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut lines = Vec::new();
    let mut scope: Option<Scope> = None;
    for b in BINDINGS {
        if scope != Some(b.scope) {
            if scope.is_some() {
                lines.push(Line::from(""));
            }
            lines.push(Line::from(Span::styled(
                b.scope.title().to_string(),
                t.style("highlight"),
            )));
            scope = Some(b.scope);
        }
        // Long descriptions wrap under themselves, not under the keys.
        let room = (width as usize).saturating_sub(13).max(20);
        for (k, part) in wrap_words(b.description, room).into_iter().enumerate() {
            let keys = if k == 0 { b.label } else { "" };
            lines.push(Line::from(vec![
                Span::styled(
                    format!("  {keys:<10} "),
                    t.style("text").add_modifier(Modifier::BOLD),
                ),
                Span::styled(part, t.style("text")),
            ]));
        }
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("States", t.style("highlight"))));
    for st in LoadState::ALL {
        lines.push(Line::from(vec![
            Span::styled(format!("  {}  ", st.glyph()), t.state(st)),
            Span::styled(st.name().to_string(), t.style("text")),
        ]));
    }
    lines.push(Line::from(vec![
        Span::styled("  *  ", t.style("anomaly")),
        Span::styled("anomaly: row count is an outlier", t.style("text")),
    ]));
    lines
}

fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    for word in text.split(' ') {
        let last = out.last_mut().map(|l| l.chars().count()).unwrap_or(0);
        if last > 0 && last + 1 + word.chars().count() > width {
            out.push(String::new());
        }
        if let Some(line) = out.last_mut() {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    out
}

fn render_help(frame: &mut Frame, app: &App, area: Rect, scroll: u16) {
    let r = centered(area, 96, area.height.saturating_sub(2));
    frame.render_widget(Clear, r);
    let b = block(app, " Help · keys ", true);
    let inner_r = b.inner(r);
    frame.render_widget(b, r);
    let lines = help_lines(app, inner_r.width);
    let max_scroll = (lines.len() as u16).saturating_sub(inner_r.height);
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll.min(max_scroll), 0)),
        inner_r,
    );
}

fn strategy_words(app: &App, c: &ConfirmState) -> String {
    let Some(j) = app.jobs.get(c.job) else {
        return String::new();
    };
    let target = j.job.target.to_string();
    match j.job.strategy {
        Strategy::ReplacePartition => format!(
            "each {}: delete its window from {target} and insert the job's rows, in one transaction under a lock",
            j.job.grain
        ),
        Strategy::MergeKey => format!(
            "each window in order: upsert rows into {target} by {}, updating only rows that differ, in one transaction",
            j.job
                .unique_key
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn render_confirm(frame: &mut Frame, app: &App, c: &ConfirmState, area: Rect) {
    let t = &app.theme;
    let Some(j) = app.jobs.get(c.job) else {
        return;
    };
    let chosen = app.confirm_partitions(c);
    let filtered = app.confirm_filtered(c).len();
    let risk = app.merge_order_risk(c);
    let label = |s: &str| Span::styled(format!("{s:<10}"), t.style("muted"));
    let text = t.style("text");
    let mut lines = Vec::new();
    let range = match (chosen.first(), chosen.last()) {
        (Some(a), Some(z)) if chosen.len() > filtered => format!(
            "{} .. {}  ({} partitions: {} of {} selected + {} later windows)",
            j.partitions[*a].name(),
            j.partitions[*z].name(),
            chosen.len(),
            filtered,
            c.candidates.len(),
            chosen.len() - filtered
        ),
        (Some(a), Some(z)) => format!(
            "{} .. {}  ({} of {} selected partitions)",
            j.partitions[*a].name(),
            j.partitions[*z].name(),
            chosen.len(),
            c.candidates.len()
        ),
        _ => format!(
            "nothing matches the filter ({} selected)",
            c.candidates.len()
        ),
    };
    lines.push(Line::from(vec![label("range"), Span::styled(range, text)]));
    let mut filter = vec![label("only")];
    for (key, name, states) in [
        ("a", "all", vec![]),
        ("f", "failed", vec![LoadState::Failed]),
        ("m", "missing", vec![LoadState::Missing]),
        ("s", "stale", vec![LoadState::Stale]),
    ] {
        let on = c.only == states;
        let style = if on {
            t.style("highlight").add_modifier(Modifier::REVERSED)
        } else {
            t.style("muted")
        };
        filter.push(Span::styled(format!(" {key} {name} "), style));
        filter.push(Span::raw(" "));
    }
    if !c.only.is_empty()
        && ![LoadState::Failed, LoadState::Missing, LoadState::Stale].contains(&c.only[0])
        || c.only.len() > 1
    {
        let names: Vec<&str> = c.only.iter().map(|s| s.name()).collect();
        filter.push(Span::styled(
            format!("--only {}", names.join(",")),
            t.style("highlight"),
        ));
    }
    lines.push(Line::from(filter));
    let mut states = vec![label("states")];
    for st in LoadState::ALL {
        let n = chosen
            .iter()
            .filter(|i| j.state_at(**i) == Some(st))
            .count();
        if n > 0 {
            states.push(Span::styled(
                format!("{} {} {n}  ", st.glyph(), st.name()),
                t.state(st),
            ));
        }
    }
    lines.push(Line::from(states));
    let rows_now: i64 = chosen
        .iter()
        .filter_map(|i| j.status_at(*i).and_then(|s| s.rows_now))
        .sum();
    let replaces = match j.job.strategy {
        Strategy::ReplacePartition => format!(
            "{} rows now in {} will be deleted and loaded again",
            thousands(rows_now),
            j.job.target
        ),
        Strategy::MergeKey => {
            let merged: i64 = chosen
                .iter()
                .filter_map(|i| j.status_at(*i).and_then(|s| s.rows()))
                .sum();
            let windows = match chosen.len() {
                1 => "this window".to_string(),
                n => format!("these {n} windows"),
            };
            format!(
                "no rows are deleted; of the {} rows {windows} merged at their last loads, those whose values differ are updated",
                thousands(merged)
            )
        }
    };
    lines.push(Line::from(vec![
        label("replaces"),
        Span::styled(replaces, t.style("warning")),
    ]));
    lines.push(Line::from(vec![
        label("strategy"),
        Span::styled(strategy_words(app, c), text),
    ]));
    let conc = match j.job.strategy {
        Strategy::MergeKey => "1 window at a time, oldest first".to_string(),
        Strategy::ReplacePartition => format!(
            "{} partitions at once · {} retries of transient errors",
            app.config.defaults.concurrency, app.config.defaults.retries
        ),
    };
    lines.push(Line::from(vec![
        label("parallel"),
        Span::styled(conc, text),
    ]));
    if let Some(risk) = &risk {
        if c.through_latest {
            lines.push(Line::from(vec![
                label("extended"),
                Span::styled(
                    format!(
                        "through {}, the latest loaded window, so that the newest values win; x undoes",
                        risk.latest().name()
                    ),
                    t.style("ok"),
                ),
            ]));
        } else {
            lines.push(Line::from(vec![
                label("warning"),
                Span::styled(risk.warning(), t.style("warning")),
                Span::styled(" (x)", t.style("highlight")),
            ]));
        }
    }
    if j.lint.is_empty() {
        lines.push(Line::from(vec![
            label("lint"),
            Span::styled("no findings", t.style("ok")),
        ]));
    } else {
        for (k, l) in j.lint.iter().take(3).enumerate() {
            lines.push(Line::from(vec![
                label(if k == 0 { "lint" } else { "" }),
                Span::styled(
                    format!("{} {}", if l.error { "✗" } else { "⚠" }, l.message),
                    if l.error {
                        t.style("error")
                    } else {
                        t.style("warning")
                    },
                ),
            ]));
        }
    }
    let reason_style = if c.editing_reason {
        t.style("text").add_modifier(Modifier::UNDERLINED)
    } else {
        t.style("muted")
    };
    let reason = if c.reason.value().is_empty() && !c.editing_reason {
        "(optional; Tab to type)".to_string()
    } else {
        format!(
            "{}{}",
            c.reason.value(),
            if c.editing_reason { "▏" } else { "" }
        )
    };
    lines.push(Line::from(vec![
        label("reason"),
        Span::styled(reason, reason_style),
    ]));
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled("same as:", t.style("muted"))));
    lines.push(Line::from(Span::styled(
        app.equivalent_command(c),
        t.style("highlight"),
    )));
    lines.push(Line::from(""));
    let mut hints = vec![
        Span::styled("Enter", t.style("highlight")),
        Span::styled(" run  ", t.style("muted")),
        Span::styled("Esc", t.style("highlight")),
        Span::styled(" back  ", t.style("muted")),
        Span::styled("a f m s", t.style("highlight")),
        Span::styled(" filter  ", t.style("muted")),
        Span::styled("Tab", t.style("highlight")),
        Span::styled(" reason", t.style("muted")),
    ];
    if risk.is_some() {
        hints.push(Span::styled("  x", t.style("highlight")));
        hints.push(Span::styled(" through latest", t.style("muted")));
    }
    lines.push(Line::from(hints));
    let width = area.width.saturating_sub(2).min(92);
    let inner_w = width.saturating_sub(2).max(1) as usize;
    let height: usize = lines
        .iter()
        .map(|l| match l.width() {
            w if w <= inner_w => 1,
            // Word wrapping may need a line more than the characters do.
            w => w.div_ceil(inner_w) + 1,
        })
        .sum::<usize>()
        + 2;
    let r = centered(area, width, height.min(u16::MAX as usize) as u16);
    frame.render_widget(Clear, r);
    let b = block(app, format!(" Run {}? ", j.job.name), true);
    let inner_r = b.inner(r);
    frame.render_widget(b, r);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner_r);
}

fn render_question(frame: &mut Frame, app: &App, q: &Question, area: Rect) {
    let t = &app.theme;
    let text = match q {
        Question::Quit => format!(
            "{} run(s) in flight. Quit and cancel them? In-flight partitions roll back.",
            app.active_runs()
        ),
        Question::CancelRun(id) => {
            let job = app
                .runs
                .iter()
                .find(|r| r.id == *id)
                .map(|r| r.job.clone())
                .unwrap_or_default();
            format!("Cancel run #{id} of {job}? No new partitions start; in-flight ones roll back.")
        }
    };
    let r = centered(area, 64, 6);
    frame.render_widget(Clear, r);
    let b = block(app, " Are you sure? ", true);
    let inner_r = b.inner(r);
    frame.render_widget(b, r);
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(Span::styled(text, t.style("text"))),
            Line::from(""),
            Line::from(vec![
                Span::styled("y", t.style("highlight")),
                Span::styled(" yes   ", t.style("muted")),
                Span::styled("n", t.style("highlight")),
                Span::styled(" no", t.style("muted")),
            ]),
        ])
        .wrap(Wrap { trim: true }),
        inner_r,
    );
}

fn render_errors(frame: &mut Frame, app: &App, selected: usize, area: Rect) {
    let t = &app.theme;
    let groups = app.error_groups();
    let r = centered(area, 100, (groups.len() as u16 * 2 + 4).max(8));
    frame.render_widget(Clear, r);
    let b = block(app, " Failures by error signature ", true);
    let inner_r = b.inner(r);
    frame.render_widget(b, r);
    let mut lines = Vec::new();
    let Some(j) = app.job() else { return };
    for (k, g) in groups.iter().enumerate() {
        let style = if k == selected {
            t.style("cursor")
        } else {
            t.style("text")
        };
        let first = g
            .partitions
            .first()
            .map(|i| j.partitions[*i].name())
            .unwrap_or_default();
        let last = g
            .partitions
            .last()
            .map(|i| j.partitions[*i].name())
            .unwrap_or_default();
        lines.push(Line::from(vec![
            Span::styled(format!(" ×{:<4}", g.partitions.len()), t.style("error")),
            Span::styled(g.signature.clone(), style),
        ]));
        lines.push(Line::from(Span::styled(
            format!("       {first} .. {last} · e.g. {}", g.example),
            t.style("muted"),
        )));
    }
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        " Enter selects the group's partitions (then r re-runs them) · Esc closes",
        t.style("muted"),
    )));
    frame.render_widget(Paragraph::new(lines), inner_r);
}

/// The lines of the "what changed" overlay: a line on the two definitions,
/// then the unified diff with `+` and `-` lines coloured.
pub fn diff_lines(app: &App, d: &DiffView) -> Vec<Line<'static>> {
    let t = &app.theme;
    let muted = t.style("muted");
    let mut lines = vec![
        Line::from(Span::styled(
            format!(
                "{} was loaded under definition {}; {} is now {}",
                d.partition.name(),
                d.loaded_under,
                d.job,
                d.current
            ),
            t.style("text"),
        )),
        Line::from(""),
    ];
    match &d.result {
        None => lines.push(Line::from(Span::styled(
            "reading the definition it was loaded under…",
            t.style("running"),
        ))),
        Some(Err(e)) => lines.push(Line::from(Span::styled(
            format!("error: {}", e.lines().next().unwrap_or("")),
            t.style("error"),
        ))),
        Some(Ok(None)) => lines.push(Line::from(Span::styled(
            format!(
                "the ledger does not hold definition {}, so there is nothing to compare with",
                d.loaded_under
            ),
            muted,
        ))),
        Some(Ok(Some(diff))) if diff.trim().is_empty() => lines.push(Line::from(Span::styled(
            "the two definitions read the same",
            muted,
        ))),
        Some(Ok(Some(diff))) => {
            for l in diff.lines() {
                let style = if l.starts_with("+++") || l.starts_with("---") {
                    muted.add_modifier(Modifier::BOLD)
                } else if l.starts_with("@@") {
                    t.style("highlight")
                } else if l.starts_with('+') {
                    t.style("ok")
                } else if l.starts_with('-') {
                    t.style("error")
                } else {
                    t.style("text")
                };
                lines.push(Line::from(Span::styled(l.to_string(), style)));
            }
        }
    }
    lines
}

fn render_diff(frame: &mut Frame, app: &App, area: Rect, scroll: u16) {
    let Some(d) = &app.definition_diff else {
        return;
    };
    let lines = diff_lines(app, d);
    let r = centered(
        area,
        100,
        (lines.len() as u16).saturating_add(4).min(area.height),
    );
    frame.render_widget(Clear, r);
    let b = block(
        app,
        format!(" What changed · {} {} ", d.job, d.partition.name()),
        true,
    );
    let inner_r = b.inner(r);
    frame.render_widget(b, r);
    let body = Rect::new(
        inner_r.x,
        inner_r.y,
        inner_r.width,
        inner_r.height.saturating_sub(1),
    );
    let max_scroll = (lines.len() as u16).saturating_sub(body.height);
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll.min(max_scroll), 0)),
        body,
    );
    if inner_r.height > 1 {
        let y = inner_r.bottom() - 1;
        let mut spans = vec![
            Span::styled("Esc", app.theme.style("highlight")),
            Span::styled(" close", app.theme.style("muted")),
        ];
        if max_scroll > 0 {
            spans.push(Span::styled("  j k", app.theme.style("highlight")));
            spans.push(Span::styled(" scroll", app.theme.style("muted")));
        }
        frame.render_widget(
            Paragraph::new(Line::from(spans)),
            Rect::new(inner_r.x, y, inner_r.width, 1),
        );
    }
}
