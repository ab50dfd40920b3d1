//! The rows chart: a bar of rows per partition over a range, on a y-axis
//! labelled in thousands or millions, with the typical band (median ± MAD
//! of comparable partitions: same weekday, same hour) drawn behind the bars
//! so that a low count shows at a glance. The cursor's bar, anomalies and
//! out-of-date partitions are marked by glyphs, never by colour alone. It is
//! small under the calendar, or large in the detail area with a span of its
//! own (month, quarter, year; day, week for hourly jobs).

use chrono::{Datelike, Months, NaiveDateTime, TimeDelta};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;

use super::job::JobView;
use super::theme::Theme;
use super::widgets::put;
use crate::numbers::{compact, n_rows};
use crate::partition::{Grain, Partition};
use crate::state::{Seasonality, median};

/// How much of the history the large chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Span {
    #[default]
    Month,
    Quarter,
    Year,
    Day,
    Week,
}

impl Span {
    /// The spans a job of `grain` offers, the first its default.
    fn of(grain: Grain) -> &'static [Span] {
        match grain {
            Grain::Day => &[Span::Month, Span::Quarter, Span::Year],
            Grain::Hour => &[Span::Day, Span::Week],
            Grain::Month => &[Span::Year],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Span::Month => "month",
            Span::Quarter => "quarter",
            Span::Year => "year",
            Span::Day => "day",
            Span::Week => "week",
        }
    }

    /// Whether `t` falls in the span that holds `at`.
    fn holds(self, at: NaiveDateTime, t: NaiveDateTime) -> bool {
        match self {
            Span::Month => (at.year(), at.month()) == (t.year(), t.month()),
            Span::Quarter => (at.year(), at.month0() / 3) == (t.year(), t.month0() / 3),
            Span::Year => at.year() == t.year(),
            Span::Day => at.date() == t.date(),
            Span::Week => at.iso_week() == t.iso_week(),
        }
    }

    /// `t` moved by one span, back or forth.
    fn shift(self, t: NaiveDateTime, back: bool) -> Option<NaiveDateTime> {
        let months = |n: u32| {
            if back {
                t.checked_sub_months(Months::new(n))
            } else {
                t.checked_add_months(Months::new(n))
            }
        };
        let days = |n: i64| {
            let d = TimeDelta::days(if back { -n } else { n });
            t.checked_add_signed(d)
        };
        match self {
            Span::Month => months(1),
            Span::Quarter => months(3),
            Span::Year => months(12),
            Span::Day => days(1),
            Span::Week => days(7),
        }
    }
}

/// The chart's own state: large or not, and the large chart's span.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    pub large: bool,
    span: Span,
}

impl Chart {
    /// The span in force for a job of `grain`.
    pub fn span(&self, grain: Grain) -> Span {
        let spans = Span::of(grain);
        if spans.contains(&self.span) {
            self.span
        } else {
            spans[0]
        }
    }

    /// Switches to the next span a job of `grain` offers; says which.
    pub fn next_span(&mut self, grain: Grain) -> String {
        let spans = Span::of(grain);
        let now = self.span(grain);
        let k = spans.iter().position(|s| *s == now).unwrap_or(0);
        self.span = spans[(k + 1) % spans.len()];
        self.large = true;
        format!("chart: a {} of partitions", self.span.name())
    }

    /// `[` / `]` on the large chart: the cursor moves a whole span.
    pub fn shift(&self, job: &mut JobView, back: bool) {
        let grain = job.grain();
        let span = self.span(grain);
        job.move_to(|p| Some(Partition::containing(grain, span.shift(p.start, back)?)));
    }

    /// Draws the chart of `job` in `r`: the large chart's span, else the
    /// calendar's visible units (`capacity` of them) narrowed around the
    /// cursor to fit.
    pub fn render(&self, frame: &mut Frame, r: Rect, t: &Theme, job: &JobView, capacity: usize) {
        if r.height < 2 || job.statuses.is_empty() {
            return;
        }
        let mut plot = r;
        if self.large {
            let span = self.span(job.grain());
            let at = job.partitions.get(job.cursor).map(|p| p.start);
            let indices: Vec<usize> = (0..job.partitions.len())
                .filter(|i| at.is_some_and(|at| span.holds(at, job.partitions[*i].start)))
                .collect();
            let first = indices.first().map_or(String::new(), |i| name(job, *i));
            let last = indices.last().map_or(String::new(), |i| name(job, *i));
            let span = span.name();
            let title = format!(
                " rows/{} · {span} {first}..{last} · [ ] ±{span} · Z span · z back ",
                job.grain()
            );
            put(frame.buffer_mut(), r, r.x, r.y, &title, t.style("muted"));
            plot.y += 1;
            plot.height -= 1;
            draw(frame, plot, t, job, &indices);
        } else {
            let indices = visible(job, capacity, r.width.saturating_sub(8) as usize);
            draw(frame, plot, t, job, &indices);
        }
    }
}

fn name(job: &JobView, i: usize) -> String {
    job.partitions
        .get(i)
        .map(Partition::name)
        .unwrap_or_default()
}

/// The partitions of the calendar's visible units, narrowed to `width`
/// around the cursor.
fn visible(job: &JobView, capacity: usize, width: usize) -> Vec<usize> {
    let shown: Vec<usize> = (0..job.partitions.len())
        .filter(|i| {
            let u = job.unit_of(*i);
            u >= job.scroll && u < job.scroll + capacity
        })
        .collect();
    let (Some(&lo), Some(&hi)) = (shown.first(), shown.last()) else {
        return Vec::new();
    };
    if width == 0 {
        return Vec::new();
    }
    let (mut from, mut to) = (lo, hi);
    if to - from + 1 > width {
        from = job.cursor.saturating_sub(width / 2).max(lo);
        to = (from + width - 1).min(hi);
        from = to + 1 - width.min(to + 1);
    }
    (from..=to).collect()
}

/// The typical range of a count: median ± MAD of its comparable partitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub lo: f64,
    pub mid: f64,
    pub hi: f64,
}

/// The typical band of partition `i` among `rows`, from at least three
/// comparable partitions on either side (never itself).
pub fn band(rows: &[Option<i64>], i: usize, season: Seasonality) -> Option<Band> {
    let mut around: Vec<f64> = crate::state::comparable(rows, i, season)
        .filter(|n| *n > 0)
        .map(|n| n as f64)
        .collect();
    if around.len() < 3 {
        return None;
    }
    let mid = median(&mut around);
    let mut dev: Vec<f64> = around.iter().map(|v| (v - mid).abs()).collect();
    let mad = median(&mut dev);
    Some(Band {
        lo: (mid - mad).max(0.0),
        mid,
        hi: mid + mad,
    })
}

/// The y-axis's top: the least round number (1, 2, 2.5 or 5 × 10ⁿ) at or
/// above `max`.
pub fn axis_top(max: f64) -> i64 {
    if max <= 1.0 {
        return 1;
    }
    let mut unit = 1_i64;
    loop {
        for m in [10, 20, 25, 50] {
            let top = unit * m / 10;
            if top as f64 >= max && top > 0 {
                return top;
            }
        }
        unit *= 10;
    }
}

/// The highest count the axis must show: the largest, unless a spike
/// dwarfs the rest (over twice the 90th percentile), when the axis stops at
/// 1.5 × that percentile and the spike's bar is cut with a `↑`, so that the
/// ordinary days stay readable.
pub fn ceiling(counts: &[i64]) -> f64 {
    let mut sorted: Vec<i64> = counts.iter().copied().filter(|n| *n > 0).collect();
    sorted.sort_unstable();
    let Some(&max) = sorted.last() else {
        return 0.0;
    };
    let p90 = sorted[(sorted.len() - 1) * 9 / 10] as f64;
    if max as f64 > 2.0 * p90 {
        1.5 * p90
    } else {
        max as f64
    }
}

/// The y-axis labels of a plot `rows` high topped at `top`: (row from the
/// top, the value at that row's top edge); the top, and the middle on a
/// plot of four rows or more.
pub fn axis_labels(top: i64, rows: u16) -> Vec<(u16, String)> {
    let mut labels = vec![(0, compact(top))];
    if rows >= 4 {
        let k = rows / 2;
        let value = top * (rows - k) as i64 / rows as i64;
        if value > 0 && value < top {
            labels.push((k, compact(value)));
        }
    }
    labels
}

/// A value's height in eighths of a row on a plot `rows` high topped at
/// `top`; anything above zero shows at least one eighth.
pub fn eighths(value: f64, top: i64, rows: u16) -> u16 {
    let full = rows as f64 * 8.0;
    let e = (value / top.max(1) as f64 * full).round().clamp(0.0, full) as u16;
    if value > 0.0 { e.max(1) } else { e }
}

/// What one column shows.
struct Bar {
    /// Not due yet: nothing is drawn.
    future: bool,
    value: Option<f64>,
    band: Option<Band>,
    cursor: bool,
    anomaly: bool,
    out_of_date: bool,
}

/// The bars of `indices`, several partitions to a column (their mean) when
/// they outnumber the `width` columns.
fn bars(job: &JobView, indices: &[usize], width: usize) -> Vec<Bar> {
    let rows: Vec<Option<i64>> = job.statuses.iter().map(|s| s.rows()).collect();
    let season = Seasonality::of(job.grain());
    let per = indices.len().div_ceil(width.max(1)).max(1);
    indices
        .chunks(per)
        .map(|chunk| {
            let mean =
                |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            let value = mean(
                chunk
                    .iter()
                    .filter_map(|i| rows.get(*i).copied().flatten())
                    .map(|n| n as f64)
                    .collect(),
            );
            let bands: Vec<Band> = chunk
                .iter()
                .filter_map(|i| band(&rows, *i, season))
                .collect();
            let band = (!bands.is_empty()).then(|| {
                let n = bands.len() as f64;
                Band {
                    lo: bands.iter().map(|b| b.lo).sum::<f64>() / n,
                    mid: bands.iter().map(|b| b.mid).sum::<f64>() / n,
                    hi: bands.iter().map(|b| b.hi).sum::<f64>() / n,
                }
            });
            let status = |i: &usize| job.status_at(*i);
            let future = chunk
                .iter()
                .all(|i| job.state_at(*i) == Some(crate::state::LoadState::Future));
            Bar {
                future,
                value,
                band,
                cursor: chunk.contains(&job.cursor),
                anomaly: chunk.iter().filter_map(status).any(|s| s.anomaly),
                out_of_date: chunk
                    .iter()
                    .filter_map(status)
                    .any(|s| s.out_of_date().is_some()),
            }
        })
        .collect()
}

/// Columns from one bar to the next and columns a bar fills: several when
/// `n` bars leave room (a gap between bars three columns apart or more).
pub fn bar_width(n: usize, width: usize) -> (usize, usize) {
    let step = (width / n.max(1)).clamp(1, 4);
    (step, if step >= 3 { step - 1 } else { step })
}

const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Draws the bars of `indices` with their axis, band and marks; the last
/// row tells the cursor's partition.
fn draw(frame: &mut Frame, r: Rect, t: &Theme, job: &JobView, indices: &[usize]) {
    let rows_h = r.height.saturating_sub(1);
    if rows_h == 0 || indices.is_empty() {
        return;
    }
    let counts: Vec<i64> = indices
        .iter()
        .filter_map(|i| job.status_at(*i).and_then(|s| s.rows()))
        .collect();
    let rows: Vec<Option<i64>> = job.statuses.iter().map(|s| s.rows()).collect();
    let season = Seasonality::of(job.grain());
    let band_max = indices
        .iter()
        .filter_map(|i| band(&rows, *i, season))
        .map(|b| b.hi)
        .fold(0.0, f64::max);
    let top = axis_top(ceiling(&counts).max(band_max));
    let labels = axis_labels(top, rows_h);
    let axis_w = labels
        .iter()
        .map(|(_, l)| l.chars().count())
        .max()
        .unwrap_or(1)
        .max(1) as u16
        + 2;
    let muted = t.style("muted");
    let buf = frame.buffer_mut();
    for y in 0..rows_h {
        let text = labels
            .iter()
            .find(|(row, _)| *row == y)
            .map_or(String::new(), |(_, l)| l.clone());
        let cell = format!("{text:>w$} ┤", w = (axis_w - 2) as usize);
        let cell = if text.is_empty() {
            format!("{:>w$}│", "", w = (axis_w - 1) as usize)
        } else {
            cell
        };
        put(buf, r, r.x, r.y + y, &cell, muted);
    }
    let base = r.y + rows_h;
    put(
        buf,
        r,
        r.x,
        base,
        &format!("{:>w$} └", "0", w = (axis_w - 2) as usize),
        muted,
    );
    let x0 = r.x + axis_w;
    let width = r.right().saturating_sub(x0 + 1) as usize;
    let bars = bars(job, indices, width);
    let (step, bar_w) = bar_width(bars.len(), width);
    let mut cursor_x = None;
    for (k, bar) in bars.iter().enumerate() {
        let x = x0 + (k * step) as u16;
        let mut style = if bar.anomaly {
            t.style("anomaly")
        } else {
            t.style("volume")
        };
        if bar.cursor {
            style = t.style("highlight");
            cursor_x = Some(x);
        }
        for dx in 0..bar_w as u16 {
            draw_bar(buf, r, x + dx, rows_h, top, bar, style, muted);
        }
        if bar.cursor {
            put(buf, r, x, base, "▲", t.style("highlight"));
        }
    }
    if let Some(cx) = cursor_x {
        let (full, short) = cursor_notes(job, &rows, season);
        let fits = |note: &str| {
            let len = note.chars().count() as u16;
            if cx + 2 + len <= r.right() {
                Some(cx + 2)
            } else {
                cx.checked_sub(len + 1).filter(|x| *x >= x0)
            }
        };
        let placed = fits(&full)
            .map(|x| (x, &full))
            .or_else(|| fits(&short).map(|x| (x, &short)))
            .unwrap_or((cx + 2, &short));
        put(buf, r, placed.0, base, placed.1, muted);
    }
}

/// One column: the bar in eighths over the band's shade, its mark above.
#[allow(clippy::too_many_arguments)]
fn draw_bar(
    buf: &mut ratatui::buffer::Buffer,
    r: Rect,
    x: u16,
    rows_h: u16,
    top: i64,
    bar: &Bar,
    style: Style,
    muted: Style,
) {
    if bar.future {
        return;
    }
    let e = bar.value.map_or(0, |v| eighths(v, top, rows_h));
    let band = bar
        .band
        .map(|b| (eighths(b.lo, top, rows_h), eighths(b.hi, top, rows_h)));
    for k in 0..rows_h {
        let y = r.y + rows_h - 1 - k;
        let (lo, hi) = (k * 8, k * 8 + 8);
        if e >= hi {
            put(buf, r, x, y, "█", style);
        } else if e > lo {
            put(
                buf,
                r,
                x,
                y,
                &LEVELS[(e - lo - 1) as usize].to_string(),
                style,
            );
        } else if band.is_some_and(|(bl, bh)| bh > lo && bl < hi) {
            put(buf, r, x, y, "░", muted);
        }
    }
    if bar.value.is_none_or(|v| v <= 0.0) {
        put(buf, r, x, r.y + rows_h - 1, "_", muted);
    }
    let clipped = bar.value.is_some_and(|v| v > top as f64);
    if clipped && !bar.anomaly {
        put(buf, r, x, r.y, "↑", style);
    }
    // An anomaly's `*`, else an out-of-date partition's `+`, just above the
    // bar (on its top cell when it fills the plot).
    let mark = if bar.anomaly {
        Some("*")
    } else {
        bar.out_of_date.then_some("+")
    };
    if let Some(mark) = mark {
        let above = e.div_ceil(8);
        let y = if above >= rows_h {
            r.y
        } else {
            r.y + rows_h - 1 - above
        };
        put(buf, r, x, y, mark, style);
    }
}

/// The cursor's partition under the chart: its rows and typical band, and
/// a shorter form for where that does not fit. A partition whose window
/// has not ended is not measured against the band: its rows are so far.
fn cursor_notes(job: &JobView, rows: &[Option<i64>], season: Seasonality) -> (String, String) {
    let i = job.cursor;
    let count = rows.get(i).copied().flatten();
    if job.state_at(i) == Some(crate::state::LoadState::Future) {
        let note = match count {
            Some(n) if n > 0 => format!("{}: {} so far, not complete yet", name(job, i), n_rows(n)),
            _ => format!("{}: not complete yet", name(job, i)),
        };
        return (note.clone(), note);
    }
    let count = count.map_or("— rows".into(), n_rows);
    let short = format!("{}: {count}", name(job, i));
    let mut full = short.clone();
    if let Some(b) = band(rows, i, season) {
        let (lo, hi) = (compact(b.lo.round() as i64), compact(b.hi.round() as i64));
        if lo == hi {
            full.push_str(&format!(" · typical {lo}"));
        } else {
            full.push_str(&format!(" · typical {lo}–{hi}"));
        }
    }
    (full, short)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::{draw as draw_screen, job_view};

    #[test]
    fn the_axis_tops_at_a_round_number_labelled_in_thousands_and_millions() {
        assert_eq!(axis_top(0.0), 1);
        assert_eq!(axis_top(7.0), 10);
        assert_eq!(axis_top(180.0), 200);
        assert_eq!(axis_top(2_100.0), 2_500);
        assert_eq!(axis_top(12_001.0), 20_000);
        assert_eq!(axis_top(3_400_000.0), 5_000_000);
        assert_eq!(axis_labels(20_000, 3), vec![(0, "20k".to_string())]);
        assert_eq!(
            axis_labels(1, 5),
            vec![(0, "1".to_string())],
            "no 0 halfway"
        );
        assert_eq!(
            axis_labels(5_000_000, 6),
            vec![(0, "5M".to_string()), (3, "2.5M".to_string())]
        );
    }

    #[test]
    fn a_spike_is_cut_so_that_ordinary_days_stay_readable() {
        let mut days = vec![10_000; 20];
        assert_eq!(ceiling(&days), 10_000.0);
        days[7] = 50_000;
        assert_eq!(ceiling(&days), 15_000.0);
        assert_eq!(axis_top(ceiling(&days)), 20_000);
        assert_eq!(ceiling(&[0, 0]), 0.0);
    }

    #[test]
    fn few_bars_are_wide_and_many_are_one_column() {
        assert_eq!(bar_width(15, 57), (3, 2), "a gap between wide bars");
        assert_eq!(bar_width(10, 25), (2, 2));
        assert_eq!(bar_width(3, 100), (4, 3), "never wider than four");
        assert_eq!(bar_width(90, 57), (1, 1));
    }

    #[test]
    fn bars_are_measured_in_eighths_and_never_vanish() {
        assert_eq!(eighths(10_000.0, 10_000, 3), 24);
        assert_eq!(eighths(5_000.0, 10_000, 3), 12);
        assert_eq!(eighths(1.0, 10_000, 3), 1, "a trickle still shows");
        assert_eq!(eighths(0.0, 10_000, 3), 0);
        assert_eq!(eighths(99_999.0, 10_000, 3), 24, "clamped to the plot");
    }

    #[test]
    fn the_band_is_median_and_mad_of_the_same_weekday() {
        // Weekdays are 100, the partition under test (index 14) and its
        // weekday neighbours 7 apart are 1,000 ± 100.
        let mut rows = vec![Some(100); 35];
        for (i, n) in [(0, 900), (7, 1_000), (21, 1_100), (28, 1_000)] {
            rows[i] = Some(n);
        }
        rows[14] = Some(40);
        let b = band(&rows, 14, Seasonality::of(Grain::Day)).expect("a band");
        assert_eq!(
            b,
            Band {
                lo: 950.0,
                mid: 1_000.0,
                hi: 1_050.0
            }
        );
        assert_eq!(
            band(&rows[..10], 5, Seasonality::of(Grain::Day)),
            None,
            "too few"
        );
    }

    #[test]
    fn the_chart_draws_axis_bars_cursor_and_anomaly() {
        let mut job = job_view("fct_orders", false, "■■✗■·■■✗■■");
        job.statuses[5].anomaly = true;
        job.statuses[3].rows_now = Some(50);
        let screen = draw_screen(60, 4, |f| {
            Chart::default().render(f, f.area(), &Theme::default_theme(), &job, 1)
        });
        let lines: Vec<&str> = screen.lines().collect();
        // Ten bars in 53 columns are three wide with a gap; failed and
        // missing days sit on the floor; 50 of 100 rows is half as high;
        // the anomaly's `*` tops its bar; the note goes left of the cursor
        // when it does not fit on its right.
        assert_eq!(
            lines[0], "100 ┤███ ███             *** ███     ███ ███",
            "{screen}"
        );
        assert_eq!(
            lines[1], "    │███ ███     ▄▄▄     ███ ███     ███ ███",
            "{screen}"
        );
        assert_eq!(
            lines[2], "    │███ ███ ___ ███ ___ ███ ███ ___ ███ ███",
            "{screen}"
        );
        assert_eq!(
            lines[3], "  0 └               2026-06-10: 100 rows ▲",
            "{screen}"
        );
    }

    #[test]
    fn the_cursor_note_counts_one_row_as_a_row() {
        let mut job = job_view("fct_orders", false, "■■■");
        job.cursor = 1;
        let rows =
            |job: &JobView| -> Vec<Option<i64>> { job.statuses.iter().map(|s| s.rows()).collect() };
        let season = Seasonality::of(Grain::Day);
        job.statuses[1].rows_now = Some(1);
        let (_, short) = cursor_notes(&job, &rows(&job), season);
        assert!(short.ends_with(": 1 row"), "{short}");
        job.statuses[1].rows_now = Some(1_200);
        let (_, short) = cursor_notes(&job, &rows(&job), season);
        assert!(short.ends_with(": 1,200 rows"), "{short}");
    }

    /// QA (new user): the day not over yet read "2026-12-05: 0 rows ·
    /// typical 39", as if it were a low day.
    #[test]
    fn a_partition_not_complete_yet_is_not_measured_against_the_band() {
        let days = format!("{} ", "■".repeat(28));
        let mut job = job_view("fct_orders", false, &days);
        job.cursor = 28;
        let rows =
            |job: &JobView| -> Vec<Option<i64>> { job.statuses.iter().map(|s| s.rows()).collect() };
        let season = Seasonality::of(Grain::Day);
        let day = job.partitions[28].name();
        let (full, short) = cursor_notes(&job, &rows(&job), season);
        assert_eq!(full, format!("{day}: not complete yet"));
        assert_eq!(short, full);
        job.statuses[28].rows_now = Some(12);
        let (full, _) = cursor_notes(&job, &rows(&job), season);
        assert_eq!(full, format!("{day}: 12 rows so far, not complete yet"));
        job.cursor = 27;
        let (full, _) = cursor_notes(&job, &rows(&job), season);
        assert!(full.contains(" · typical "), "{full}");
    }

    #[test]
    fn the_large_chart_shows_a_span_and_moves_by_it() {
        let mut job = job_view("fct_orders", false, "■■✗■·■■✗■■");
        let mut chart = Chart::default();
        assert_eq!(
            chart.next_span(Grain::Day),
            "chart: a quarter of partitions"
        );
        assert!(chart.large);
        let screen = draw_screen(80, 6, |f| {
            chart.render(f, f.area(), &Theme::default_theme(), &job, 1)
        });
        assert!(
            screen.contains("quarter 2026-06-01..2026-06-10"),
            "{screen}"
        );
        chart.shift(&mut job, true);
        assert_eq!(job.cursor, 0, "no earlier quarter: the first partition");
        assert_eq!(chart.span(Grain::Hour), Span::Day);
    }
}
