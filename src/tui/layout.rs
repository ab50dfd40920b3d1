//! Where each part of the screen goes, for drawing and for input alike:
//! `update` scrolls and hit-tests with the same geometry `render` draws with.

use ratatui::layout::Rect;

use super::widgets::inner;
use crate::partition::Grain;

pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 15;

/// A month block of the day calendar: 7 columns of 3, a title and a header.
pub const DAY_BLOCK_W: u16 = 22;
pub const DAY_BLOCK_H: u16 = 8;
/// The day label before each row of the hour calendar.
pub const HOUR_LABEL_W: u16 = 10;
/// The year label before each row of the month calendar.
pub const MONTH_LABEL_W: u16 = 6;

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

/// What a mouse position points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// A partition's calendar cell, by index in the job's history.
    Cell(usize),
    Job(usize),
    /// A run in the run pane's list.
    Run(usize),
    /// A row of the selected run's partition table.
    RunRow(usize),
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

/// The screen for a job of `grain` with `units` calendar units of history.
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
    let chart_h = match rest {
        16.. => 6,
        10.. => 4,
        8.. => 2,
        _ => 0,
    };
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

/// Calendar units (months, days or years) that fit inside a calendar box.
pub fn units_in(inner: Rect, grain: Grain) -> usize {
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

/// The run pane's per-partition table and, where there is room, the log
/// beside it (wide terminals) or below it. Below it, the table leaves its
/// last row free for the note of its rows scrolled out down, which on the
/// log's top border read as the log's.
pub fn run_split(body: Rect) -> (Rect, Option<Rect>) {
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
            Rect::new(body.x, body.y, body.width, th - 1),
            Some(Rect::new(body.x, body.y + th, body.width, body.height - th)),
        )
    } else {
        (body, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_panes_tile_the_screen() {
        let area = Rect::new(0, 0, 120, 40);
        let s = screen(area, Grain::Day, 6, true);
        assert_eq!(s.jobs.width + s.calendar.width, 120);
        assert_eq!(s.calendar.bottom(), s.chart.y);
        assert_eq!(s.chart.bottom(), s.detail.y);
        assert_eq!(s.detail.bottom(), s.runs.y);
        assert_eq!(s.runs.bottom(), s.footer.y);
        let without_runs = screen(area, Grain::Day, 6, false);
        assert_eq!(without_runs.runs.height, 0);
        assert!(without_runs.detail.height > s.detail.height);
    }

    #[test]
    fn capacity_counts_what_fits() {
        // Two rows of month blocks at 140 columns: five blocks a row.
        let cap = calendar_capacity(Rect::new(0, 0, 140, 40), Grain::Day, 12, false);
        assert_eq!(cap, 10);
        let hours = calendar_capacity(Rect::new(0, 0, 100, 32), Grain::Hour, 30, false);
        assert!(hours >= 5);
    }
}
