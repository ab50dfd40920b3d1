//! A cascade in the console: the downstream partitions a confirmed run makes
//! stale, planned by the engine (`engine::cascade`) from the states the
//! console holds for each downstream job, and how the confirm dialog lists
//! them.

use chrono::NaiveDateTime;
use ratatui::text::{Line, Span};

use super::job::JobView;
use super::theme::Theme;
use crate::config::Config;
use crate::engine::{Backfill, cascade};
use crate::lineage::Lineage;

/// The steps after the root run, in dependency order, and why a downstream
/// job could not be planned.
#[derive(Debug, Clone, Default)]
pub struct CascadePlan {
    pub steps: Vec<Backfill>,
    pub problems: Vec<String>,
}

impl CascadePlan {
    /// Plans the downstream steps of `root`, each from its job's view in
    /// the console (found by name).
    pub fn of<'a>(
        config: &Config,
        lineage: &Lineage,
        root: &Backfill,
        find: impl Fn(&str) -> Option<&'a JobView>,
        now: NaiveDateTime,
    ) -> CascadePlan {
        let mut plan = CascadePlan::default();
        for (job, partitions) in cascade::downstream_partitions(config, lineage, root, now) {
            let Some(view) = find(&job.name).filter(|v| v.loaded) else {
                plan.problems
                    .push(format!("{}: states are still loading", job.name));
                continue;
            };
            match cascade::plan_step(job, &partitions, &view.statuses, root, now) {
                Ok(Some(step)) => plan.steps.push(step),
                Ok(None) => {}
                Err(e) => plan.problems.push(format!("{}: {e}", job.name)),
            }
        }
        plan
    }

    /// The confirm dialog's lines: per downstream job, how many partitions
    /// the run makes stale and will load again, and from which to which.
    pub fn lines(&self, t: &Theme, label: impl Fn(&str) -> Span<'static>) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if self.steps.is_empty() && self.problems.is_empty() {
            lines.push(Line::from(vec![
                label("cascade"),
                Span::styled(
                    "on, but no downstream partition reads what this run loads",
                    t.style("muted"),
                ),
            ]));
        }
        for (k, step) in self.steps.iter().enumerate() {
            let (Some(first), Some(last)) = (step.partitions.first(), step.partitions.last())
            else {
                continue;
            };
            let n = step.partitions.len();
            let span = if n == 1 {
                first.name()
            } else {
                format!("{} .. {}", first.name(), last.name())
            };
            lines.push(Line::from(vec![
                label(if k == 0 { "cascade" } else { "" }),
                Span::styled(format!("then {} ", step.job.name), t.style("text")),
                Span::styled(
                    format!(
                        "{n} {} made stale, loaded again: {span}",
                        if n == 1 { "partition" } else { "partitions" }
                    ),
                    t.style("warning"),
                ),
            ]));
        }
        for p in &self.problems {
            lines.push(Line::from(vec![
                label(if self.steps.is_empty() { "cascade" } else { "" }),
                Span::styled(format!("cannot plan {p}"), t.style("error")),
            ]));
        }
        lines
    }
}
