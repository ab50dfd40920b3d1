//! The jobs pane: every job with its strategy, health summary and lint
//! badge; `/` filters it by name. It holds the jobs and which one is shown.

use std::cell::Cell;

use chrono::NaiveDateTime;
use crossterm::event::{Event as TermEvent, KeyEvent};
use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use tui_input::Input;
use tui_input::backend::crossterm::to_input_request;

use super::health::health;
use super::job::JobView;
use super::keymap::action_for;
use super::keys::{Action, Scope};
use super::theme::Theme;
use super::widgets::{
    self, abbreviate, abbreviate_name, block, columns, first_in_view, from_column, inner, put,
};
use crate::config::{Job, Strategy, TableNames};
use crate::state::LoadState;
use crate::warehouse::sql::Syntax;

pub struct JobsPane {
    jobs: Vec<JobView>,
    current: usize,
    filter: Input,
    /// How many visible jobs the list scrolled past when last drawn; the
    /// next draw moves it as little as keeps the current job in view.
    scrolled: Cell<usize>,
}

/// The jobs a config read again changed, added and removed, by name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    pub changed: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Jobs written anew in the file with the same definition and windows
    /// (moved by a line added above them, their retries or guards edited):
    /// their states hold, their lint is read again at their new lines.
    pub rewritten: Vec<String>,
}

/// What a key did to the filter being typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterStep {
    Editing,
    Done,
    /// Enter on a filter no job matches: it is cleared rather than kept, so
    /// the calendar never shows (and acts on) a job the list hides.
    NoMatch(String),
}

impl JobsPane {
    pub fn new(jobs: &[Job], now: NaiveDateTime) -> JobsPane {
        JobsPane {
            jobs: jobs.iter().map(|j| JobView::new(j.clone(), now)).collect(),
            current: 0,
            filter: Input::default(),
            scrolled: Cell::new(0),
        }
    }

    /// Takes the jobs of a config read again. A job whose definition and
    /// windows are as they were keeps its view (its states, cursor and
    /// selection); one that changed starts again from its definition,
    /// keeping the partition under its cursor and what this console has in
    /// flight for it. The job on screen stays on screen while it exists.
    /// A job added, changed or rewritten is linted by what its SQL alone
    /// shows, read as the warehouse reads it (`read_as`: the engine's default until
    /// connected, then the server's), until the warehouse's lint answers.
    pub fn reload(
        &mut self,
        jobs: &[Job],
        now: NaiveDateTime,
        read_as: (Syntax, TableNames),
    ) -> Reloaded {
        let shown = self.current().map(|j| j.job.name.clone());
        let mut old = std::mem::take(&mut self.jobs);
        let mut reloaded = Reloaded::default();
        let fresh = |job: &Job| {
            let mut view = JobView::new(job.clone(), now);
            view.read_lint_as(read_as.0, read_as.1);
            view
        };
        for job in jobs {
            let Some(i) = old.iter().position(|v| v.job.name == job.name) else {
                reloaded.added.push(job.name.clone());
                self.jobs.push(fresh(job));
                continue;
            };
            let mut view = old.swap_remove(i);
            if format!("{:?}", view.job) == format!("{job:?}") {
                self.jobs.push(view);
                continue;
            }
            let same_windows = view.job.definition_hash() == job.definition_hash()
                && job.partitions(now) == view.partitions;
            if same_windows {
                // Lines, retries, guards: the states read still hold; the
                // findings are said at the lines they are on now.
                view.job = job.clone();
                view.read_lint_as(read_as.0, read_as.1);
                reloaded.rewritten.push(job.name.clone());
                self.jobs.push(view);
                continue;
            }
            reloaded.changed.push(job.name.clone());
            let mut fresh = fresh(job);
            if let Some(at) = view.partitions.get(view.cursor)
                && let Ok(i) = fresh.partitions.binary_search(at)
            {
                fresh.cursor = i;
            }
            fresh.in_flight = std::mem::take(&mut view.in_flight);
            fresh.live = std::mem::take(&mut view.live);
            fresh.reads_begun = view.reads_begun;
            self.jobs.push(fresh);
        }
        reloaded.removed = old.into_iter().map(|v| v.job.name).collect();
        self.current = shown
            .and_then(|name| self.jobs.iter().position(|j| j.job.name == name))
            .unwrap_or(0);
        self.keep_current_visible();
        reloaded
    }

    /// The job on screen.
    pub fn current(&self) -> Option<&JobView> {
        self.jobs.get(self.current)
    }

    pub fn current_mut(&mut self) -> Option<&mut JobView> {
        self.jobs.get_mut(self.current)
    }

    pub fn current_index(&self) -> usize {
        self.current
    }

    pub fn get(&self, i: usize) -> Option<&JobView> {
        self.jobs.get(i)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut JobView> {
        self.jobs.get_mut(i)
    }

    pub fn iter(&self) -> impl Iterator<Item = &JobView> {
        self.jobs.iter()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut JobView> {
        self.jobs.iter_mut()
    }

    pub fn by_name(&self, name: &str) -> Option<&JobView> {
        self.jobs.iter().find(|j| j.job.name == name)
    }

    pub fn by_name_mut(&mut self, name: &str) -> Option<&mut JobView> {
        self.jobs.iter_mut().find(|j| j.job.name == name)
    }

    /// Shows job `i`, clearing a filter that would hide it.
    pub fn show(&mut self, i: usize) {
        if i < self.jobs.len() {
            self.filter.reset();
            self.current = i;
        }
    }

    /// The job `:job NAME` names: by its whole name, or else the one job whose
    /// name begins with it, or else contains it. Two or more such are named
    /// back, not one of them picked; a name matching none is said with the
    /// job it most likely meant, as the CLI says it.
    pub fn find(&self, name: &str) -> Result<usize, String> {
        let names: Vec<&str> = self.jobs.iter().map(|j| j.job.name.as_str()).collect();
        if name.is_empty() {
            return Err(format!(
                ":job needs a job's name; jobs: {}",
                names.join(", ")
            ));
        }
        let matching = |f: &dyn Fn(&str) -> bool| -> Vec<usize> {
            (0..self.jobs.len())
                .filter(|i| f(&self.jobs[*i].job.name))
                .collect()
        };
        let tiers: [&dyn Fn(&str) -> bool; 3] = [&|n| n == name, &|n| n.starts_with(name), &|n| {
            n.contains(name)
        }];
        for tier in tiers.iter().filter(|_| !name.is_empty()) {
            match matching(tier).as_slice() {
                [] => continue,
                [one] => return Ok(*one),
                many => {
                    let named: Vec<&str> = many.iter().map(|i| names[*i]).collect();
                    return Err(format!(
                        "\"{name}\" names {} jobs: {}; type more of one",
                        many.len(),
                        named.join(", ")
                    ));
                }
            }
        }
        Err(format!(
            "no job \"{name}\"; {}jobs: {}",
            crate::config::did_you_mean_job(name, &names),
            names.join(", ")
        ))
    }

    pub fn filter_text(&self) -> &str {
        self.filter.value()
    }

    /// Jobs whose names match the `/` filter.
    pub fn visible(&self) -> Vec<usize> {
        let f = self.filter.value().to_lowercase();
        (0..self.jobs.len())
            .filter(|i| f.is_empty() || self.jobs[*i].job.name.to_lowercase().contains(&f))
            .collect()
    }

    /// Steps to the next or previous visible job.
    pub fn step(&mut self, forward: bool) {
        let visible = self.visible();
        if visible.is_empty() {
            return;
        }
        let pos = visible.iter().position(|i| *i == self.current).unwrap_or(0);
        let next = if forward {
            (pos + 1).min(visible.len() - 1)
        } else {
            pos.saturating_sub(1)
        };
        self.current = visible[next];
    }

    /// A key while the filter is typed: Enter keeps it, Esc clears it.
    pub fn filter_key(&mut self, key: &KeyEvent) -> FilterStep {
        let step = match action_for(Scope::Input, key) {
            Some(Action::Confirm) if self.visible().is_empty() => {
                let typed = self.filter.value().to_string();
                self.filter.reset();
                FilterStep::NoMatch(typed)
            }
            Some(Action::Confirm) => return FilterStep::Done,
            Some(Action::Close) => {
                self.filter.reset();
                FilterStep::Done
            }
            _ => {
                if let Some(req) = to_input_request(&TermEvent::Key(*key)) {
                    self.filter.handle(req);
                }
                FilterStep::Editing
            }
        };
        self.keep_current_visible();
        step
    }

    /// Text pasted while the filter is typed.
    pub fn filter_paste(&mut self, text: &str) {
        super::widgets::paste_into(&mut self.filter, text);
        self.keep_current_visible();
    }

    /// The cursor's job, or the first shown when the filter hides it.
    fn keep_current_visible(&mut self) {
        let visible = self.visible();
        if !visible.contains(&self.current)
            && let Some(first) = visible.first()
        {
            self.current = *first;
        }
    }

    /// The jobs that fit a list `height` lines high, two lines each (one
    /// when a single line is all there is).
    fn rows(height: u16) -> usize {
        (height / 2).max(height.min(1)) as usize
    }

    /// The first of `visible` listed in `rows` rows: where the list was
    /// scrolled, moved just enough to show the current job.
    fn first_listed(&self, visible: &[usize], rows: usize) -> usize {
        let pos = visible.iter().position(|i| *i == self.current).unwrap_or(0);
        first_in_view(self.scrolled.get(), pos, rows, visible.len())
    }

    /// The job listed at (x, y) of the pane `area` (its border included).
    pub fn hit(&self, area: Rect, x: u16, y: u16) -> Option<usize> {
        let list = inner(area);
        if !list.contains(Position::new(x, y)) {
            return None;
        }
        let visible = self.visible();
        let first = self.first_listed(&visible, Self::rows(list.height));
        visible.get(first + ((y - list.y) / 2) as usize).copied()
    }

    /// What the jobs scrolled out of the list hold: how many, and how many
    /// of them have failed and missing partitions, in as much as `width`
    /// takes ("↓12 more · ✗ in 2 · · in 5").
    fn hidden_note(&self, hidden: &[usize], arrow: char, width: usize) -> Option<String> {
        let with = |st: LoadState| {
            hidden
                .iter()
                .filter(|i| self.jobs[**i].state_counts().get(&st).copied().unwrap_or(0) > 0)
                .count()
        };
        let of_them: Vec<String> = [LoadState::Failed, LoadState::Missing]
            .into_iter()
            .map(|st| (st, with(st)))
            .filter(|(_, n)| *n > 0)
            .map(|(st, n)| format!("{} in {n}", st.glyph()))
            .collect();
        widgets::hidden_note(arrow, hidden.len(), &of_them, width)
    }

    /// The list's title with the filter, in `width` columns: scrolled, as
    /// the command line is, to show the cursor (`▏` while it is typed) and
    /// what is just typed; what no longer fits after it ends in "…" (a
    /// filter wider than the pane showed only its start, and what was
    /// typed next went on out of sight).
    fn filter_title(&self, editing: bool, width: usize) -> String {
        let value = self.filter.value();
        let caret = if editing { "▏" } else { "" };
        let mut room = width.saturating_sub(columns(" Jobs / ") + columns(caret));
        let scrolled = self.filter.visual_cursor() > room;
        room -= usize::from(scrolled);
        let at = value
            .char_indices()
            .nth(self.filter.cursor())
            .map_or(value.len(), |(i, _)| i);
        let before = from_column(&value[..at], self.filter.visual_scroll(room));
        let after = abbreviate(&value[at..], room.saturating_sub(columns(before)));
        let mark = if scrolled { "…" } else { "" };
        format!(" Jobs /{mark}{before}{caret}{after} ")
    }

    pub fn render(&self, frame: &mut Frame, r: Rect, t: &Theme, focused: bool, editing: bool) {
        let width = r.width.saturating_sub(2) as usize;
        let title = if editing || !self.filter.value().is_empty() {
            self.filter_title(editing, width)
        } else {
            " Jobs ".to_string()
        };
        let visible = self.visible();
        let rows = Self::rows(inner(r).height);
        let first = self.first_listed(&visible, rows);
        self.scrolled.set(first);
        let shown = &visible[first..visible.len().min(first + rows)];
        let mut b = block(t, title.clone(), focused);
        let above = self.hidden_note(
            &visible[..first],
            '↑',
            width.saturating_sub(columns(&title)),
        );
        if let Some(note) = above {
            b = b.title(ratatui::text::Line::styled(note, t.style("muted")).right_aligned());
        }
        if let Some(note) = self.hidden_note(&visible[first + shown.len()..], '↓', width) {
            b = b.title_bottom(ratatui::text::Line::styled(note, t.style("muted")));
        }
        let area = b.inner(r);
        frame.render_widget(b, r);
        if visible.is_empty() {
            // A config with no jobs yet (a starter of `idem init` whose
            // candidates are all still commented out) is not a filter
            // that matched none.
            let said: &[&str] = if self.jobs.is_empty() {
                &[
                    "no jobs yet: add",
                    "[[jobs]] to the",
                    "config; idem init",
                    "writes candidates",
                ]
            } else {
                &["no job matches"]
            };
            let buf = frame.buffer_mut();
            for (row, line) in (area.y..area.bottom()).zip(said) {
                put(buf, area, area.x + 1, row, line, t.style("muted"));
            }
        }
        for (row, i) in shown.iter().enumerate() {
            let y = area.y + row as u16 * 2;
            if y >= area.bottom() {
                break;
            }
            self.render_job(frame, area, y, t, *i);
        }
    }

    /// Two lines for job `i` from `y`: name and lint badge, then strategy,
    /// grain and the counts of states that need attention.
    fn render_job(&self, frame: &mut Frame, area: Rect, y: u16, t: &Theme, i: usize) {
        let buf = frame.buffer_mut();
        let j = &self.jobs[i];
        let current = i == self.current;
        let name_style = if current {
            t.style("highlight")
        } else {
            t.style("text")
        };
        let errors = j.lint.iter().filter(|l| l.error).count();
        let warnings = j.lint.len() - errors;
        let badge = if errors > 0 {
            format!("✗{errors}")
        } else if warnings > 0 {
            format!("⚠{warnings}")
        } else {
            String::new()
        };
        let bw = columns(&badge) as u16;
        let name_w = area.width.saturating_sub(2 + bw) as usize;
        let x = put(
            buf,
            area,
            area.x,
            y,
            if current { "▶" } else { " " },
            name_style,
        );
        put(
            buf,
            area,
            x,
            y,
            &abbreviate_name(&j.job.name, name_w),
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
        let kind = format!("{strategy}·{} ", j.job.grain);
        let health = health(j, t);
        // Counts come whole or not at all: a count cut at the pane's edge
        // read as another number (·13 as ·1). The job's kind, also in the
        // calendar's title, gives way to them first; what still does not
        // fit ends in "…".
        let len = |s: &str| columns(s) as u16;
        let all: u16 = health.iter().map(|(s, _)| len(s) + 1).sum();
        let room = area.right().saturating_sub(area.x + 1);
        let mut x = area.x + 1;
        if len(&kind) + all.saturating_sub(1) <= room {
            x = put(buf, area, x, y2, &kind, t.style("muted"));
        }
        for (n, (text, style)) in health.iter().enumerate() {
            let rest = area.right().saturating_sub(x);
            // This one, and room for " …" after it unless it is the last.
            let needs = len(text) + if n + 1 == health.len() { 0 } else { 2 };
            if needs > rest {
                put(buf, area, x, y2, "…", t.style("muted"));
                break;
            }
            x = put(buf, area, x, y2, text, *style);
            x = put(buf, area, x, y2, " ", t.style("muted"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::{code, draw, job, job_view, key, now};

    fn pane() -> JobsPane {
        let mut pane = JobsPane::new(
            &[
                job("fct_orders", false),
                job("dim_customers", true),
                job("fct_pages", false),
            ],
            now(),
        );
        for (i, glyphs) in ["■■✗■·■■✗■■", "~~~■■■■■■■", "■■■■■■■■■■"]
            .iter()
            .enumerate()
        {
            let statuses = job_view("x", false, glyphs).statuses;
            if let Some(j) = pane.get_mut(i) {
                j.apply_statuses(statuses);
            }
        }
        pane
    }

    #[test]
    fn job_names_match_exactly_then_by_start_then_anywhere() {
        let pane = pane();
        assert_eq!(pane.find("fct_pages"), Ok(2));
        assert_eq!(pane.find("dim"), Ok(1));
        assert_eq!(pane.find("pages"), Ok(2));
        assert_eq!(
            pane.find("nosuch"),
            Err("no job \"nosuch\"; jobs: fct_orders, dim_customers, fct_pages".into())
        );
        // QA: a typo was said without the job it most likely meant, as
        // the CLI says it.
        assert_eq!(
            pane.find("fct_ordres"),
            Err(concat!(
                "no job \"fct_ordres\"; did you mean \"fct_orders\"? ",
                "jobs: fct_orders, dim_customers, fct_pages"
            )
            .into())
        );
        assert_eq!(
            pane.find(""),
            Err(":job needs a job's name; jobs: fct_orders, dim_customers, fct_pages".into())
        );
    }

    #[test]
    fn the_filter_hides_jobs_and_keeps_a_visible_one_current() {
        let mut pane = pane();
        for c in "pag".chars() {
            assert_eq!(pane.filter_key(&key(c)), FilterStep::Editing);
        }
        assert_eq!(pane.visible(), vec![2]);
        assert_eq!(pane.current_index(), 2);
        assert_eq!(
            pane.filter_key(&code(crossterm::event::KeyCode::Esc)),
            FilterStep::Done
        );
        assert_eq!(pane.visible().len(), 3);
        pane.step(false);
        assert_eq!(pane.current_index(), 1);
    }

    /// A filter that hides every job is not kept: the calendar would show
    /// and act on a job the list no longer shows.
    #[test]
    fn a_filter_matching_no_job_is_cleared_not_kept() {
        let mut pane = pane();
        pane.step(true);
        for c in "zz".chars() {
            pane.filter_key(&key(c));
        }
        assert!(pane.visible().is_empty());
        assert_eq!(
            pane.filter_key(&code(crossterm::event::KeyCode::Enter)),
            FilterStep::NoMatch("zz".into())
        );
        assert_eq!(pane.filter_text(), "");
        assert_eq!(pane.visible().len(), 3);
        assert_eq!(pane.current_index(), 1, "the job shown stays current");
    }

    #[test]
    fn each_job_shows_its_health_and_rows_are_hit_by_two_lines() {
        let pane = pane();
        let area = Rect::new(0, 0, 24, 10);
        let screen = draw(24, 10, |f| {
            pane.render(f, area, &Theme::default_theme(), true, false)
        });
        assert!(screen.contains("▶fct_orders"), "{screen}");
        assert!(screen.contains("repl·day ✗2 ·1"), "{screen}");
        assert!(screen.contains("merge·day ~3"), "{screen}");
        assert!(screen.contains("■ ok"), "{screen}");
        assert_eq!(pane.hit(area, 3, 1), Some(0));
        assert_eq!(pane.hit(area, 3, 4), Some(1));
        assert_eq!(pane.hit(area, 3, 8), None);

        // A refusal of the shrink guard that stands is counted, not "ok".
        let mut pane = pane;
        if let Some(j) = pane.get_mut(2) {
            let mut statuses = job_view("x", false, "■■■■■■■■■■").statuses;
            statuses[4].refused = Some(std::sync::Arc::new(crate::warehouse::ledger::Refusal {
                attempt: 2,
                finished_at: String::new(),
                error: "source looks incomplete".into(),
            }));
            j.apply_statuses(statuses);
        }
        let screen = draw(24, 10, |f| {
            pane.render(f, area, &Theme::default_theme(), true, false)
        });
        assert!(screen.contains("repl·day ⊖1"), "{screen}");
        assert!(!screen.contains("■ ok"), "{screen}");

        // Rows of the target in no partition, as the state read counted
        // them, are marked with their number, not "ok".
        if let Some(j) = pane.get_mut(2) {
            j.apply_statuses(job_view("x", false, "■■■■■■■■■■").statuses);
            j.null_partition = Some(12);
        }
        let screen = draw(24, 10, |f| {
            pane.render(f, area, &Theme::default_theme(), true, false)
        });
        assert!(screen.contains("repl·day ∅12"), "{screen}");
        assert!(!screen.contains("■ ok"), "{screen}");
    }

    /// A config without jobs says so, and what to do; it is no filter that
    /// matched none.
    #[test]
    fn no_jobs_at_all_says_how_to_add_some() {
        let pane = JobsPane::new(&[], now());
        let area = Rect::new(0, 0, 24, 8);
        let screen = draw(24, 8, |f| {
            pane.render(f, area, &Theme::default_theme(), true, false)
        });
        assert!(!screen.contains("no job matches"), "{screen}");
        assert!(screen.contains("no jobs yet: add"), "{screen}");
        assert!(screen.contains("[[jobs]] to the"), "{screen}");
    }

    /// Jobs whose long names share their start are told apart by their
    /// ends, which a cut at the end hid: both rows read the same.
    #[test]
    fn long_names_that_share_a_start_still_differ() {
        let names = [
            "marketing_attribution_pipeline_eu",
            "marketing_attribution_pipeline_us",
        ];
        let jobs: Vec<Job> = names.iter().map(|n| job(n, false)).collect();
        let pane = JobsPane::new(&jobs, now());
        let screen = draw(24, 8, |f| {
            pane.render(
                f,
                Rect::new(0, 0, 24, 8),
                &Theme::default_theme(),
                true,
                false,
            )
        });
        assert!(screen.contains("marketing_…peline_eu"), "{screen}");
        assert!(screen.contains("marketing_…peline_us"), "{screen}");
    }

    /// At 80 columns the pane is 20 wide: counts that do not all fit come
    /// whole or not at all. "·13" was cut to "·1", and the stale count
    /// after it was not drawn, with nothing to say so.
    #[test]
    fn health_counts_are_never_cut_into_other_numbers() {
        let mut pane = JobsPane::new(&[job("fct_orders", false)], now());
        let draw_pane = |pane: &JobsPane, w: u16| {
            draw(w, 4, |f| {
                pane.render(
                    f,
                    Rect::new(0, 0, w, 4),
                    &Theme::default_theme(),
                    true,
                    false,
                )
            })
        };
        let statuses = job_view("x", false, "■✗✗✗!·············~~").statuses;
        pane.get_mut(0).unwrap().apply_statuses(statuses);
        // Wide enough: the kind and every count.
        let wide = draw_pane(&pane, 30);
        assert!(wide.contains("repl·day ✗3 !1 ·13 ~2"), "{wide}");
        // Not: the kind gives way, then the counts that fit, then "…".
        let narrow = draw_pane(&pane, 20);
        assert!(narrow.contains("┃ ✗3 !1 ·13 ~2"), "{narrow}");
        let narrower = draw_pane(&pane, 12);
        assert!(narrower.contains("┃ ✗3 !1 …"), "{narrower}");
        assert!(!narrower.contains("·1"), "{narrower}");
    }

    /// Fifty-six jobs, the 1st, 30th and 50th with a failed partition.
    fn many() -> JobsPane {
        let jobs: Vec<Job> = (0..56)
            .map(|i| job(&format!("bulk_{i:03}"), false))
            .collect();
        let mut pane = JobsPane::new(&jobs, now());
        for i in 0..56 {
            let glyphs = if [0, 30, 50].contains(&i) {
                "■✗■■■■■■■■"
            } else {
                "■■■■■■■■■■"
            };
            let statuses = job_view("x", false, glyphs).statuses;
            if let Some(j) = pane.get_mut(i) {
                j.apply_statuses(statuses);
            }
        }
        pane
    }

    /// The list scrolls to keep the current job in view, says what it hides
    /// above and below (and how many of those jobs failed), and a click hits
    /// the job drawn where it lands.
    #[test]
    fn the_list_scrolls_to_the_current_job_and_counts_what_it_hides() {
        let mut pane = many();
        let area = Rect::new(0, 0, 24, 12);
        let t = Theme::default_theme();
        let draw_pane = |pane: &JobsPane| draw(24, 12, |f| pane.render(f, area, &t, true, false));
        let screen = draw_pane(&pane);
        assert!(screen.contains("▶bulk_000"), "{screen}");
        assert!(screen.contains("↓51 more · ✗ in 2"), "{screen}");
        pane.show(pane.find("bulk_048").unwrap());
        let screen = draw_pane(&pane);
        assert!(screen.contains("▶bulk_048"), "{screen}");
        assert!(screen.contains("Jobs ━━ ↑44 · ✗ in 2"), "{screen}");
        assert!(screen.contains("↓7 more · ✗ in 1"), "{screen}");
        // bulk_048 is the last of five rows: lines 9 and 10.
        assert_eq!(pane.hit(area, 3, 9), Some(48));
        assert_eq!(pane.hit(area, 3, 1), Some(44));
        // Moving up within the rows shown does not scroll.
        for _ in 0..4 {
            pane.step(false);
        }
        let screen = draw_pane(&pane);
        assert!(screen.contains("▶bulk_044"), "{screen}");
        assert!(screen.contains("bulk_048"), "{screen}");
        assert_eq!(pane.hit(area, 3, 1), Some(44));
        for _ in 0..60 {
            pane.step(true);
        }
        let screen = draw_pane(&pane);
        assert!(screen.contains("▶bulk_055"), "{screen}");
        assert!(!screen.contains("↓"), "{screen}");
        assert_eq!(pane.hit(area, 3, 9), Some(55));
    }
}
