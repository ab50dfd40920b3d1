//! The "what changed" overlay: how a stale partition's definition (the one
//! it was loaded under, read from the ledger) differs from the job's now.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::job::JobView;
use super::keymap::{self, action_for};
use super::keys::{Action, Scope};
use super::msg::{DiffRequest, Effect};
use super::theme::Theme;
use super::widgets::{block, centered, controls_shown, first_line, scrolled, wrap_words};
use crate::config::DefinitionChange;
use crate::partition::Partition;
use crate::state::LoadState;

/// The overlay's columns at most, borders included.
const WIDTH: u16 = 100;

/// What changed in a job's definition since a stale partition was loaded.
#[derive(Debug, Clone)]
pub struct DiffView {
    pub id: usize,
    pub job: String,
    pub partition: Partition,
    /// The definition the partition was loaded under, and the job's now.
    pub loaded_under: String,
    pub current: String,
    /// `None` while reading; then the change, or `None` inside when the
    /// ledger does not hold the old definition.
    pub result: Option<Result<Option<DefinitionChange>, String>>,
}

impl DiffView {
    /// What changed since the cursor's partition of `job` was loaded: the
    /// view and the effect that reads the old definition, or why there is
    /// nothing to show.
    pub fn open(job: &JobView, connected: bool, id: usize) -> Result<(DiffView, Effect), String> {
        let Some(partition) = job.partitions.get(job.cursor).copied() else {
            return Err("no partition under the cursor".into());
        };
        let name = partition.name();
        let success = job
            .status_at(job.cursor)
            .and_then(|s| s.last_success.clone());
        let status = job.status_at(job.cursor);
        let upstream = status.map_or(&[][..], |s| s.stale_upstream.as_slice());
        let success = match (job.state_at(job.cursor), success) {
            (None, _) => {
                return Err(job
                    .unread()
                    .unwrap_or_else(|| format!("{name} has no state read yet")));
            }
            // Stale only because what it read upstream changed: its own
            // definition is as it was, so a diff would show nothing.
            (Some(LoadState::Stale), Some(success))
                if !upstream.is_empty() && success.definition_hash == job.job.definition_hash() =>
            {
                let more = upstream.len().saturating_sub(3);
                let mut names = upstream
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                if more > 0 {
                    names.push_str(&format!(" and {more} more"));
                }
                return Err(format!(
                    "{name} is stale because upstream partitions it read changed since its load ({names}); its definition is unchanged"
                ));
            }
            (Some(LoadState::Stale), Some(_)) if !connected => {
                return Err("not connected to the warehouse".into());
            }
            (Some(LoadState::Stale), Some(success)) => success,
            (Some(LoadState::Loaded | LoadState::Empty), _) => {
                return Err(format!(
                    "{name} is not stale: it was loaded under the job's current definition"
                ));
            }
            (Some(state), _) => {
                return Err(format!(
                    "{name} is not stale ({}): {} shows what changed since a stale partition was loaded",
                    state.name(),
                    keymap::key(Scope::Main, Action::WhatChanged)
                ));
            }
        };
        let view = DiffView {
            id,
            job: job.job.name.clone(),
            partition,
            loaded_under: success.definition_hash.clone(),
            current: job.job.definition_hash(),
            result: None,
        };
        let effect = Effect::DefinitionDiff(Box::new(DiffRequest {
            id,
            job: job.job.clone(),
            hash: success.definition_hash.clone(),
        }));
        Ok((view, effect))
    }

    /// The lines of the overlay, `width` columns wide: a line on the two
    /// definitions, then the unified diff with `+` and `-` lines coloured
    /// (after a note where they differ only in layout).
    pub fn lines(&self, t: &Theme, width: u16) -> Vec<Line<'static>> {
        let muted = t.style("muted");
        let mut lines = vec![
            Line::from(Span::styled(
                format!(
                    "{} was loaded under definition {}; {} is now {}",
                    self.partition.name(),
                    self.loaded_under,
                    self.job,
                    self.current
                ),
                t.style("text"),
            )),
            Line::from(""),
        ];
        match &self.result {
            None => lines.push(Line::from(Span::styled(
                "reading the definition it was loaded under…",
                t.style("running"),
            ))),
            Some(Err(e)) => lines.push(Line::from(Span::styled(
                format!("error: {}", first_line(e)),
                t.style("error"),
            ))),
            Some(Ok(None)) => lines.push(Line::from(Span::styled(
                format!(
                    "the ledger does not hold definition {}, so there is nothing to compare with",
                    self.loaded_under
                ),
                muted,
            ))),
            Some(Ok(Some(change))) if change.unified.trim().is_empty() => lines.push(Line::from(
                Span::styled("the two definitions read the same", muted),
            )),
            Some(Ok(Some(change))) => {
                if let Some(note) = change.note() {
                    for l in wrap_words(note, width.into()) {
                        lines.push(Line::from(Span::styled(l, t.style("warning"))));
                    }
                    lines.push(Line::from(""));
                }
                for l in change.unified.lines() {
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

    /// The columns of the body its lines scroll in, on a screen of `area`.
    fn body_width(area: Rect) -> u16 {
        centered(area, WIDTH, area.height).width.saturating_sub(2)
    }

    /// The overlay's frame and the body its lines scroll in.
    fn frames(&self, area: Rect, t: &Theme, lines: usize) -> (Rect, Block<'static>, Rect) {
        let r = centered(
            area,
            WIDTH,
            (lines as u16).saturating_add(4).min(area.height),
        );
        let b = block(
            t,
            format!(" What changed · {} {} ", self.job, self.partition.name()),
            true,
        );
        let inner_r = b.inner(r);
        let body = Rect::new(
            inner_r.x,
            inner_r.y,
            inner_r.width,
            inner_r.height.saturating_sub(1),
        );
        (r, b, body)
    }

    /// The lines the view shows on a screen of `area`, and the farthest it
    /// scrolls: a key past it is not kept, so that the first key back
    /// moves the view.
    pub fn extent(&self, area: Rect, t: &Theme) -> (u16, u16) {
        let lines = self.lines(t, Self::body_width(area)).len();
        let (_, _, body) = self.frames(area, t, lines);
        (body.height, (lines as u16).saturating_sub(body.height))
    }

    pub fn render(&self, frame: &mut Frame, area: Rect, t: &Theme, scroll: u16) {
        let lines = self.lines(t, Self::body_width(area));
        let (r, b, body) = self.frames(area, t, lines.len());
        frame.render_widget(Clear, r);
        let inner_r = b.inner(r);
        frame.render_widget(b, r);
        let max_scroll = (lines.len() as u16).saturating_sub(body.height);
        frame.render_widget(
            Paragraph::new(controls_shown(lines)).scroll((scroll.min(max_scroll), 0)),
            body,
        );
        if inner_r.height > 1 {
            let y = inner_r.bottom() - 1;
            let mut spans = vec![
                Span::styled(
                    keymap::key(Scope::Diff, Action::Close),
                    t.style("highlight"),
                ),
                Span::styled(" close", t.style("muted")),
            ];
            if max_scroll > 0 {
                spans.push(Span::styled(
                    format!(
                        "  {}",
                        keymap::key_pair(Scope::Diff, Action::Down, Action::Up)
                    ),
                    t.style("highlight"),
                ));
                spans.push(Span::styled(" scroll", t.style("muted")));
            }
            frame.render_widget(
                Paragraph::new(controls_shown(Line::from(spans))),
                Rect::new(inner_r.x, y, inner_r.width, 1),
            );
        }
    }
}

/// A key in the overlay: the new scroll, or `None` when it closes.
pub fn key(scroll: u16, key: &KeyEvent, (page, most): (u16, u16)) -> Option<u16> {
    match action_for(Scope::Diff, key) {
        Some(Action::Close) => None,
        Some(a) => Some(scrolled(scroll, a, page, most).unwrap_or(scroll)),
        None => Some(scroll),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::{self, code, draw, job_view};

    #[test]
    fn only_a_stale_partition_has_something_to_show() {
        let mut job = job_view("dim_customers", true, "■~~■■·■■··");
        let refused = DiffView::open(&job, true, 1);
        assert!(refused.is_err_and(|e| e.contains("is not stale (missing)")));
        job.cursor = 1;
        assert!(DiffView::open(&job, false, 1).is_err_and(|e| e.contains("not connected")));
        let Ok((mut view, Effect::DefinitionDiff(req))) = DiffView::open(&job, true, 7) else {
            panic!("no diff");
        };
        assert_eq!((req.id, req.hash.as_str()), (7, "old-definition"));
        view.result = Some(Ok(Some(DefinitionChange {
            unified: "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n".into(),
            alike: None,
        })));
        let t = Theme::default_theme();
        let lines = view.lines(&t, 100);
        let new = lines.iter().find(|l| l.to_string() == "+new").unwrap();
        assert_eq!(new.spans[0].style, t.style("ok"));
        let screen = draw(100, 14, |f| view.render(f, f.area(), &t, 0));
        assert!(
            screen.contains("What changed · dim_customers 2026-06-02"),
            "{screen}"
        );
        assert!(screen.contains("-old"), "{screen}");
    }

    /// A job whose states were not read says why, not "still loading"; a
    /// partition stale only through its upstream names those partitions
    /// rather than opening a diff of two equal definitions.
    #[test]
    fn d_says_why_there_is_no_diff() {
        let seen = job_view("dim_customers", true, "■~~■■·■■··");
        let mut job = JobView::new(seen.job.clone(), fixture::now());
        job.error = Some("no such table: dim_customers".into());
        let refused = DiffView::open(&job, true, 1).unwrap_err();
        assert!(
            refused.contains("could not be read: no such table: dim_customers"),
            "{refused}"
        );
        let mut job = job_view("dim_customers", true, "■~~■■·■■··");
        let mut statuses = job.statuses.clone();
        let current = job.job.definition_hash();
        for st in &mut statuses[1..3] {
            st.stale_upstream = vec![
                "fct_orders 2026-06-02".into(),
                "fct_orders 2026-06-03".into(),
            ];
            if let Some(s) = &mut st.last_success {
                std::sync::Arc::make_mut(s).definition_hash = current.clone();
            }
        }
        job.apply_statuses(statuses);
        job.cursor = 1;
        let refused = DiffView::open(&job, true, 1).unwrap_err();
        assert_eq!(
            refused,
            "2026-06-02 is stale because upstream partitions it read changed since its load (fct_orders 2026-06-02, fct_orders 2026-06-03); its definition is unchanged"
        );
    }

    #[test]
    fn keys_scroll_and_close() {
        use crossterm::event::KeyCode;
        // 10 lines shown of 40: it scrolls to 30 at most.
        let extent = (10, 30);
        assert_eq!(key(3, &fixture::key('j'), extent), Some(4));
        assert_eq!(key(3, &fixture::key('k'), extent), Some(2));
        assert_eq!(
            key(3, &fixture::key('z'), extent),
            Some(3),
            "other keys keep it open"
        );
        assert_eq!(key(3, &code(KeyCode::PageDown), extent), Some(12));
        assert_eq!(key(25, &code(KeyCode::PageDown), extent), Some(30));
        assert_eq!(key(12, &code(KeyCode::PageUp), extent), Some(3));
        assert_eq!(key(12, &fixture::key('g'), extent), Some(0));
        assert_eq!(key(0, &fixture::key('G'), extent), Some(30));
        assert_eq!(key(0, &code(KeyCode::Esc), extent), None);
    }
}
