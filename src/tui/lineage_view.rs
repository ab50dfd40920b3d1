//! The lineage view: the jobs the job on screen reads (upstream) and the
//! jobs that read it (downstream), each with its health; Enter jumps to one.
//! Also the detail pane's lines on a stale (upstream) partition: which
//! upstream partitions changed, and when they were loaded.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::job::JobView;
use super::keymap::{self, action_for};
use super::keys::{Action, Scope};
use super::theme::Theme;
use super::widgets::{abbreviate_name, block, centered, controls_shown};
use crate::lineage::{Because, Lineage};
use crate::state::{LoadState, PartitionStatus};

/// One job next to the one on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    pub name: String,
    /// It feeds the job on screen (else it reads it).
    pub upstream: bool,
    /// Why: named in `depends_on`, or the table the reader's SQL reads.
    pub because: String,
}

/// The jobs `job` reads, then the jobs that read it.
pub fn neighbours(lineage: &Lineage, job: &str) -> Vec<Neighbour> {
    let mut out: Vec<Neighbour> = lineage
        .upstream(job)
        .iter()
        .map(|(name, because)| Neighbour {
            name: name.clone(),
            upstream: true,
            because: because_words(because),
        })
        .collect();
    for name in lineage.downstream(job) {
        let because = lineage
            .upstream(name)
            .iter()
            .find(|(up, _)| up == job)
            .map(|(_, b)| because_words(b))
            .unwrap_or_default();
        out.push(Neighbour {
            name: name.clone(),
            upstream: false,
            because,
        });
    }
    out
}

fn because_words(because: &Because) -> String {
    match because {
        Because::Declared => "depends_on".into(),
        Because::ReadsTarget(table) => format!("reads {table}"),
    }
}

/// The open view: which neighbour is selected.
#[derive(Debug, Clone, Default)]
pub struct LineageView {
    pub selected: usize,
}

/// What a key did in the view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineageStep {
    Stay,
    Close,
    /// Show the neighbour at this index.
    Jump(usize),
}

impl LineageView {
    pub fn key(&mut self, key: &KeyEvent, count: usize) -> LineageStep {
        match action_for(Scope::Lineage, key) {
            Some(Action::Confirm) if count > 0 => LineageStep::Jump(self.selected),
            Some(Action::Close) => LineageStep::Close,
            Some(action) => {
                self.step(action, count);
                LineageStep::Stay
            }
            None => LineageStep::Stay,
        }
    }

    /// Moves the selection among `count` neighbours (`Up` or `Down`), for a
    /// key or the wheel alike.
    pub fn step(&mut self, action: Action, count: usize) {
        match action {
            Action::Down => self.selected = (self.selected + 1).min(count.saturating_sub(1)),
            Action::Up => self.selected = self.selected.saturating_sub(1),
            _ => {}
        }
    }

    /// The view over `area`: `job`'s neighbours, each with the health of
    /// its view in `jobs` (by name).
    pub fn render<'a>(
        &self,
        frame: &mut Frame,
        area: Rect,
        t: &Theme,
        job: &str,
        lineage: &Lineage,
        find: impl Fn(&str) -> Option<&'a JobView>,
    ) {
        let list = neighbours(lineage, job);
        let width = area.width.saturating_sub(4).min(96);
        // A long name is cut in its middle rather than push its health
        // off the view's right edge.
        let name_width = list
            .iter()
            .map(|n| n.name.chars().count())
            .max()
            .unwrap_or(0)
            .clamp(28, 28.max(usize::from(width.saturating_sub(2)) * 2 / 5));
        // The health column leaves the reason its room where it can.
        let healths: Vec<(String, Style)> = list.iter().map(|n| health(t, find(&n.name))).collect();
        let longest = |texts: &mut dyn Iterator<Item = &String>| {
            texts.map(|s| s.chars().count()).max().unwrap_or(0)
        };
        let health_width =
            36.min(usize::from(width.saturating_sub(2)).saturating_sub(
                3 + name_width + 2 + longest(&mut list.iter().map(|n| &n.because)),
            ))
            .max(longest(&mut healths.iter().map(|(h, _)| h)));
        let mut lines = Vec::new();
        for (upstream, title) in [
            (true, format!("upstream: the jobs {job} reads")),
            (false, format!("downstream: the jobs that read {job}")),
        ] {
            lines.push(Line::from(Span::styled(title, t.style("highlight"))));
            let mut any = false;
            for (k, n) in list
                .iter()
                .enumerate()
                .filter(|(_, n)| n.upstream == upstream)
            {
                any = true;
                let (health, style) = &healths[k];
                let mut name_style = t.style("text");
                if k == self.selected {
                    name_style = name_style.add_modifier(Modifier::REVERSED);
                }
                lines.push(Line::from(vec![
                    Span::styled(
                        format!(
                            " {} {:<name_width$}",
                            if upstream { "↑" } else { "↓" },
                            abbreviate_name(&n.name, name_width)
                        ),
                        name_style,
                    ),
                    Span::styled(format!(" {health:<health_width$}"), *style),
                    Span::styled(format!(" {}", n.because), t.style("muted")),
                ]));
            }
            if !any {
                lines.push(Line::from(Span::styled("   none", t.style("muted"))));
            }
            lines.push(Line::from(""));
        }
        lines.push(Line::from(vec![
            Span::styled(
                keymap::key(Scope::Lineage, Action::Confirm),
                t.style("highlight"),
            ),
            Span::styled(" show the job  ", t.style("muted")),
            Span::styled(
                keymap::key_pair(Scope::Lineage, Action::Down, Action::Up),
                t.style("highlight"),
            ),
            Span::styled(" move  ", t.style("muted")),
            Span::styled(
                keymap::key(Scope::Lineage, Action::Close),
                t.style("highlight"),
            ),
            Span::styled(" close", t.style("muted")),
        ]));
        let height = (lines.len() as u16 + 2).min(area.height);
        let r = centered(area, width, height);
        frame.render_widget(Clear, r);
        let b = block(t, format!(" Lineage of {job} "), true);
        let inner = b.inner(r);
        frame.render_widget(b, r);
        frame.render_widget(Paragraph::new(controls_shown(lines)), inner);
    }
}

/// A job's health in words: the states that need attention, with counts.
pub fn health(t: &Theme, job: Option<&JobView>) -> (String, Style) {
    let Some(j) = job else {
        return ("not in this config".into(), t.style("muted"));
    };
    if j.error.is_some() && !j.loaded {
        return ("unreadable".into(), t.style("error"));
    }
    if !j.loaded {
        return ("loading…".into(), t.style("muted"));
    }
    let mut parts = Vec::new();
    let mut worst = None;
    let counts = j.state_counts();
    for st in [
        LoadState::Running,
        LoadState::Failed,
        LoadState::Vanished,
        LoadState::Stale,
        LoadState::Missing,
    ] {
        let n = counts.get(&st).copied().unwrap_or(0);
        if n > 0 {
            parts.push(format!("{} {n} {}", st.glyph(), st.name()));
            worst.get_or_insert(st);
        }
    }
    match worst {
        None => ("■ all loaded".into(), t.state(LoadState::Loaded)),
        Some(st) => (parts.join("  "), t.state(st)),
    }
}

/// The detail pane's lines for a partition stale because of upstream
/// partitions: each changed partition and when it was loaded (from its
/// job's view, found by name).
pub fn upstream_lines<'a>(
    t: &Theme,
    status: &PartitionStatus,
    find: impl Fn(&str) -> Option<&'a JobView>,
) -> Vec<Line<'static>> {
    if status.stale_upstream.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![Line::from(Span::styled(
        format!(
            "{} read upstream partitions changed since (load again with its cascade):",
            LoadState::UPSTREAM_GLYPH
        ),
        t.style("warning"),
    ))];
    for cause in status.stale_upstream.iter().take(4) {
        let loaded = cause
            .split_once(' ')
            .and_then(|(job, partition)| {
                let j = find(job)?;
                let i = j.partitions.iter().position(|p| p.name() == partition)?;
                let at = j.status_at(i)?.last_success.as_ref()?.finished_at.clone();
                Some(at)
            })
            .map(|at| format!(" loaded {}", at.get(..16).unwrap_or(&at).replace('T', " ")))
            .unwrap_or_default();
        lines.push(Line::from(vec![
            Span::styled(format!("  {cause}"), t.style("text")),
            Span::styled(loaded, t.style("muted")),
        ]));
    }
    let more = status.stale_upstream.len().saturating_sub(4);
    if more > 0 {
        lines.push(Line::from(Span::styled(
            format!("  and {more} more"),
            t.style("muted"),
        )));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::{self, key};

    #[test]
    fn neighbours_list_upstream_then_downstream_and_keys_move_and_jump() {
        let config = fixture::config("fct_orders", false);
        let lineage = Lineage::of(&config).unwrap();
        let n = neighbours(&lineage, "fct_orders");
        assert!(n.iter().all(|n| !n.upstream || n.name != "fct_orders"));
        let mut v = LineageView::default();
        assert_eq!(v.key(&key('j'), 3), LineageStep::Stay);
        assert_eq!(v.key(&key('j'), 3), LineageStep::Stay);
        assert_eq!(v.key(&key('j'), 3), LineageStep::Stay);
        assert_eq!(v.selected, 2, "stops at the last");
        v.key(&key('k'), 3);
        assert_eq!(
            v.key(
                &crate::tui::fixture::code(crossterm::event::KeyCode::Enter),
                3
            ),
            LineageStep::Jump(1)
        );
        assert_eq!(
            v.key(
                &crate::tui::fixture::code(crossterm::event::KeyCode::Enter),
                0
            ),
            LineageStep::Stay,
            "nothing to jump to"
        );
        assert_eq!(v.key(&key('q'), 3), LineageStep::Close);
    }

    /// A job with a very long name is cut in its middle: its health still
    /// shows at 80 columns.
    #[test]
    fn a_long_name_leaves_room_for_its_health() {
        let long = "agg_monthly_with_a_very_long_name_that_goes_on_and_on_forever";
        let toml = format!(
            r#"
[warehouse]
url = "sqlite://w.db"

[[jobs]]
name = "daily"
target = "d"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-06-01"
end = "2026-06-10"
sql = "select dt from s where dt >= :start and dt < :end"

[[jobs]]
name = "{long}"
target = "m"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-06-01"
end = "2026-06-10"
sql = "select dt from d where dt >= :start and dt < :end"
"#
        );
        let config =
            crate::config::parse(std::path::Path::new("idem.toml"), &toml, &|_| None).unwrap();
        let lineage = Lineage::of(&config).unwrap();
        let monthly = fixture::job_view(long, false, "■■■■■■■■■✗");
        let t = Theme::default_theme();
        let screen = fixture::draw(80, 24, |f| {
            LineageView::default().render(f, f.area(), &t, "daily", &lineage, |name| {
                (name == long).then_some(&monthly)
            })
        });
        let row = screen
            .lines()
            .find(|l| l.contains(" ↓ "))
            .unwrap_or_else(|| panic!("no downstream row:\n{screen}"));
        assert!(row.contains("✗ 1 failed"), "{screen}");
        assert!(row.contains("agg_monthly_wi…and_on_forever"), "{screen}");
        assert!(row.contains("reads d"), "{screen}");
    }
}
