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
use crate::state::LoadState;

/// The steps after the root run, in dependency order, and why a downstream
/// job could not be planned.
#[derive(Debug, Clone, Default)]
pub struct CascadePlan {
    pub steps: Vec<Backfill>,
    /// Per step, how many of its partitions were never loaded (missing):
    /// those are loaded for the first time, not made stale.
    pub never_loaded: Vec<usize>,
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
                Ok(Some(step)) => {
                    let missing = step
                        .partitions
                        .iter()
                        .filter(|p| {
                            view.index_of(**p).and_then(|i| view.state_at(i))
                                == Some(LoadState::Missing)
                        })
                        .count();
                    plan.never_loaded.push(missing);
                    plan.steps.push(step);
                }
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
            let missing = self.never_loaded.get(k).copied().unwrap_or(0).min(n);
            let partitions = |n: usize| if n == 1 { "partition" } else { "partitions" };
            let what = match (n - missing, missing) {
                (stale, 0) => format!("{stale} {} made stale, loaded again", partitions(stale)),
                (0, missing) => format!("{missing} {} never loaded, loaded", partitions(missing)),
                (stale, missing) => {
                    format!("{n} partitions loaded: {stale} made stale, {missing} never loaded")
                }
            };
            lines.push(Line::from(vec![
                label(if k == 0 { "cascade" } else { "" }),
                Span::styled(format!("then {} ", step.job.name), t.style("text")),
                Span::styled(format!("{what}: {span}"), t.style("warning")),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Selection;
    use crate::tui::fixture::{job_view, now};

    /// Partitions never loaded are not "made stale, loaded again".
    #[test]
    fn never_loaded_partitions_are_not_called_stale() {
        let job = job_view("agg", false, "■■·■··■■■■");
        let backfill =
            Backfill::plan_from(&job.job, &Selection::default(), &job.statuses, now(), 4, 2)
                .expect("a plan");
        let t = Theme::default_theme();
        let line = |never_loaded: usize| {
            let plan = CascadePlan {
                steps: vec![backfill.clone()],
                never_loaded: vec![never_loaded],
                problems: Vec::new(),
            };
            plan.lines(&t, |s| Span::raw(s.to_string()))[0].to_string()
        };
        assert!(
            line(0).contains("10 partitions made stale, loaded again: 2026-06-01 .. 2026-06-10")
        );
        assert!(line(3).contains("10 partitions loaded: 7 made stale, 3 never loaded"));
        assert!(line(10).contains("10 partitions never loaded, loaded: 2026-06-01"));
    }
}
