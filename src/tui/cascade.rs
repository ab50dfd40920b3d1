//! A cascade in the console: the downstream partitions a confirmed run makes
//! stale, planned by the engine (`engine::cascade`) from the states the
//! console holds for each downstream job, and how the confirm dialog lists
//! them.

use chrono::NaiveDateTime;
use ratatui::text::{Line, Span};

use super::job::JobView;
use super::theme::Theme;
use super::widgets::first_line;
use crate::config::Config;
use crate::engine::Backfill;
use crate::engine::cascade;
use crate::lineage::Lineage;
use crate::partition::Partition;
use crate::state::LoadState;

/// The steps after the root run, in dependency order, and why a downstream
/// job could not be planned.
#[derive(Debug, Clone, Default)]
pub struct CascadePlan {
    /// The job the run loads first.
    pub root: String,
    /// Every job downstream of it, planned or not.
    pub readers: Vec<String>,
    pub steps: Vec<Backfill>,
    /// Per step, how many of its partitions were never loaded (missing):
    /// those are loaded for the first time, not made stale.
    pub never_loaded: Vec<usize>,
    pub problems: Vec<String>,
    /// The downstream jobs it could not plan for want of their states
    /// (still being read, or unreadable): a run waits for them.
    pub unread: Vec<String>,
    /// Per job, the windows reading the run that the cascade leaves, not
    /// ended yet (none when the run allows incomplete windows).
    pub not_ended: Vec<(String, Vec<Partition>)>,
    /// The root's windows that read upstream partitions not loaded
    /// ([`cascade::own_partly_read`]), by the upstream jobs' views: said
    /// with the cascade on or off, and carried into the run's events.
    pub reads_not_loaded: Vec<cascade::PartlyRead>,
}

impl CascadePlan {
    /// Plans the downstream steps of `root`, each from its job's view in
    /// the console (found by name); windows not ended yet with
    /// `allow_incomplete` alone.
    pub fn of<'a>(
        config: &Config,
        lineage: &Lineage,
        (root, allow_incomplete): (&Backfill, bool),
        find: impl Fn(&str) -> Option<&'a JobView>,
        now: NaiveDateTime,
    ) -> CascadePlan {
        let states = |name: &str| find(name).filter(|v| v.loaded).map(|v| &v.statuses[..]);
        let mut plan = CascadePlan {
            root: root.job.name.clone(),
            readers: lineage.downstream_closure(&root.job.name),
            reads_not_loaded: cascade::own_partly_read((config, lineage), root, states),
            ..CascadePlan::default()
        };
        let mut downstream = cascade::Downstream::of(config, lineage, root, now)
            .allowing_incomplete(allow_incomplete);
        while let Some((job, partitions)) = downstream.next_job() {
            let Some(view) = find(&job.name).filter(|v| v.loaded) else {
                plan.unread.push(job.name.clone());
                // A read that failed is no read still on its way: waiting
                // would not plan the step.
                plan.problems
                    .push(match find(&job.name).and_then(|v| v.error.as_deref()) {
                        Some(e) => {
                            format!("{}: its states cannot be read: {}", job.name, first_line(e))
                        }
                        None => format!("{}: states are still loading", job.name),
                    });
                continue;
            };
            match cascade::plan_step(job, &partitions, &view.statuses, root, now) {
                Ok(Some(mut step)) if !step.partitions.is_empty() => {
                    let missing = step
                        .partitions
                        .iter()
                        .filter(|p| {
                            view.index_of(**p).and_then(|i| view.state_at(i))
                                == Some(LoadState::Missing)
                        })
                        .count();
                    plan.never_loaded.push(missing);
                    downstream.planned(&step);
                    step.reads_not_loaded = downstream.partly_read(&step, states);
                    plan.steps.push(step);
                }
                Ok(_) => {}
                Err(e) => plan.problems.push(format!("{}: {e}", job.name)),
            }
        }
        plan.not_ended = downstream
            .not_ended()
            .iter()
            .map(|(job, windows)| (job.name.clone(), windows.clone()))
            .collect();
        plan
    }

    /// The root's line for its windows that read upstream partitions not
    /// loaded, as `idem run` says it (the run loads them as they stand);
    /// none when there are none.
    pub fn upstream_line(&self, t: &Theme, label: Span<'static>) -> Option<Line<'static>> {
        let line = cascade::partly_read_line(&self.root, &self.reads_not_loaded)?;
        Some(Line::from(vec![
            label,
            Span::styled(line, t.style("warning")),
        ]))
    }

    /// The confirm dialog's lines: per downstream job, how many partitions
    /// the run makes stale and will load again, and from which to which.
    pub fn lines(&self, t: &Theme, label: impl Fn(&str) -> Span<'static>) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        if self.steps.is_empty() && self.problems.is_empty() {
            lines.push(Line::from(vec![
                label("cascade"),
                Span::styled(self.nothing_downstream(), t.style("muted")),
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
                (stale, 0) => format!("loads again {stale} {} made stale", partitions(stale)),
                (0, missing) => format!("loads {missing} {} never loaded", partitions(missing)),
                (stale, missing) => {
                    format!("loads {n} partitions: {stale} made stale, {missing} never loaded")
                }
            };
            lines.push(Line::from(vec![
                label(if k == 0 { "cascade" } else { "" }),
                Span::styled(format!("then {} ", step.job.name), t.style("text")),
                Span::styled(format!("{what}: {span}"), t.style("warning")),
            ]));
            if let Some(partly) = cascade::partly_read_line(&step.job.name, &step.reads_not_loaded)
            {
                lines.push(Line::from(vec![
                    label(""),
                    Span::styled(partly, t.style("warning")),
                ]));
            }
        }
        for (job, windows) in &self.not_ended {
            let (Some(first), Some(last)) = (windows.first(), windows.last()) else {
                continue;
            };
            let span = if first == last {
                first.name()
            } else {
                format!("{} .. {}", first.name(), last.name())
            };
            lines.push(Line::from(vec![
                label(""),
                Span::styled(
                    format!(
                        "leaves {job} {span}: not ended yet (until {}; --allow-incomplete loads it now)",
                        last.end().format("%Y-%m-%d %H:%M")
                    ),
                    t.style("muted"),
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

    /// With cascade off: the downstream partitions the run leaves to go
    /// stale, on one line, and the key that takes them along. None when
    /// nothing downstream reads the run's partitions.
    pub fn off_line(&self, t: &Theme, label: Span<'static>, key: &str) -> Option<Line<'static>> {
        if self.steps.is_empty() {
            return None;
        }
        let n: usize = self.steps.iter().map(|s| s.partitions.len()).sum();
        // A partition never loaded stays missing: it does not go stale.
        let never = self.never_loaded.iter().sum::<usize>().min(n);
        let fate = match (n - never, never) {
            (_, 0) => "may go stale".to_string(),
            (0, _) => "never loaded".to_string(),
            (stale, never) => format!("{stale} may go stale, {never} never loaded"),
        };
        let words = match self.steps.as_slice() {
            [one] if n == 1 => format!(
                "off: {} {} reads these: {fate} ({key} loads it too)",
                one.job.name,
                one.partitions.first().map(|p| p.name()).unwrap_or_default()
            ),
            steps => format!(
                "off: {} downstream ({}) read these: {fate} ({key} loads them too)",
                crate::numbers::n_partitions(n as i64),
                steps
                    .iter()
                    .map(|s| format!("{} {}", s.job.name, s.partitions.len()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Some(Line::from(vec![
            label,
            Span::styled(words, t.style("muted")),
        ]))
    }

    /// Why a cascade that is on loads nothing after the run: no job reads
    /// the root, or those that do have no partition over this range that
    /// can run now (one still open, in the future or running).
    fn nothing_downstream(&self) -> String {
        match self.readers.as_slice() {
            [] => format!(
                "on, but no job reads {}: nothing to load after it",
                self.root
            ),
            [one] => format!(
                "on: {one} reads {}, but none of its partitions over this range can run now (past its end, not complete yet, or running)",
                self.root
            ),
            many => format!(
                "on: {} read {}, but none of their partitions over this range can run now (past their ends, not complete yet, or running)",
                many.join(", "),
                self.root
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Selection;
    use crate::tui::fixture::{job_view, now};

    /// Partitions never loaded are not said to be made stale: the line
    /// reads as what the step does to them.
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
                ..CascadePlan::default()
            };
            plan.lines(&t, |s| Span::raw(s.to_string()))[0].to_string()
        };
        assert_eq!(
            line(0),
            "cascadethen agg loads again 10 partitions made stale: 2026-06-01 .. 2026-06-10"
        );
        assert_eq!(
            line(3),
            "cascadethen agg loads 10 partitions: 7 made stale, 3 never loaded: 2026-06-01 .. 2026-06-10"
        );
        assert_eq!(
            line(10),
            "cascadethen agg loads 10 partitions never loaded: 2026-06-01 .. 2026-06-10"
        );
    }

    /// A day the cascade plans over five of its hours, whose other hours
    /// are neither loaded nor in the run, says so under its step (it was
    /// loaded from those five, unsaid).
    #[test]
    fn a_day_over_hours_not_loaded_says_so_under_its_step() {
        let config = crate::engine::cascade::tests::hourly_and_daily();
        let lineage = Lineage::of(&config).unwrap();
        // The first four hours of 2026-06-14 loaded, the rest missing.
        let mut ev = JobView::new(config.jobs[0].clone(), now());
        let statuses = ev
            .partitions
            .iter()
            .map(|p| {
                let state = if p.name().as_str() < "2026-06-14T04" {
                    LoadState::Loaded
                } else {
                    LoadState::Missing
                };
                crate::state::PartitionStatus::in_state(*p, state)
            })
            .collect();
        ev.apply_statuses(statuses);
        let mut daily = JobView::new(config.jobs[1].clone(), now());
        let never_loaded = daily
            .partitions
            .iter()
            .map(|p| crate::state::PartitionStatus::in_state(*p, LoadState::Missing))
            .collect();
        daily.apply_statuses(never_loaded);
        let hour = |name: &str| {
            Partition::parse(
                crate::partition::Grain::Hour,
                name,
                crate::partition::RangeEnd::From,
            )
            .expect("an hour")
        };
        let root = Backfill {
            partitions: crate::partition::range(hour("2026-06-14T08"), hour("2026-06-14T12")),
            ..Backfill::plan_from(&config.jobs[0], &Selection::default(), &[], now(), 4, 2)
                .expect("a plan")
        };
        let plan = CascadePlan::of(
            &config,
            &lineage,
            (&root, false),
            |name| [&ev, &daily].into_iter().find(|v| v.job.name == name),
            now(),
        );
        let lines: Vec<String> = plan
            .lines(&Theme::default_theme(), |s| Span::raw(s.to_string()))
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert_eq!(
            lines,
            [
                "cascadethen daily loads 1 partition never loaded: 2026-06-14",
                "daily 2026-06-14 reads 9 of its 24 ev hours loaded (15 missing: 2026-06-14T04 .. 2026-06-14T07, 2026-06-14T13 .. 2026-06-14T23): loaded as it stands, it goes stale (upstream) once the rest loads",
            ]
        );
    }

    /// The daily job run itself over a day whose hours are not all
    /// loaded: the dialog says so, cascade on or off, as `idem run` does,
    /// and the run's events carry it (the console said nothing of it: only
    /// a cascade's later steps were checked).
    #[test]
    fn a_day_run_over_hours_not_loaded_says_so_itself() {
        let config = crate::engine::cascade::tests::hourly_and_daily();
        let lineage = Lineage::of(&config).unwrap();
        // 2026-06-14T00..T07 loaded but T02, failed; the rest missing.
        let mut ev = JobView::new(config.jobs[0].clone(), now());
        let statuses = ev
            .partitions
            .iter()
            .map(|p| {
                let state = match p.name().as_str() {
                    "2026-06-14T02" => LoadState::Failed,
                    h if h < "2026-06-14T08" => LoadState::Loaded,
                    _ => LoadState::Missing,
                };
                crate::state::PartitionStatus::in_state(*p, state)
            })
            .collect();
        ev.apply_statuses(statuses);
        let day = Partition::parse(
            crate::partition::Grain::Day,
            "2026-06-14",
            crate::partition::RangeEnd::From,
        )
        .expect("a day");
        let root = Backfill::of(config.jobs[1].clone(), vec![day]);
        let plan = |ev: Option<&JobView>| {
            CascadePlan::of(&config, &lineage, (&root, false), |_| ev, now())
        };
        let line = plan(Some(&ev))
            .upstream_line(&Theme::default_theme(), Span::raw("upstream "))
            .map(|l| l.to_string());
        assert_eq!(
            line.as_deref(),
            Some(
                "upstream daily 2026-06-14 reads 7 of its 24 ev hours loaded (1 failed, 16 missing: 2026-06-14T02, 2026-06-14T08 .. 2026-06-14T23): loaded as it stands, it goes stale (upstream) once the rest loads"
            )
        );
        // Its hours' states not read yet: nothing is said of them.
        assert!(plan(None).reads_not_loaded.is_empty());
    }

    /// A downstream job whose states could not be read is said so, with
    /// why, not as still loading: no wait plans its step.
    #[test]
    fn a_reader_whose_states_cannot_be_read_is_not_said_to_be_loading() {
        let toml = r#"
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
name = "reader"
target = "r"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-06-01"
end = "2026-06-10"
sql = "select dt from d where dt >= :start and dt < :end"
"#;
        let config =
            crate::config::parse(std::path::Path::new("idem.toml"), toml, &|_| None).unwrap();
        let lineage = Lineage::of(&config).unwrap();
        let daily = job_view("daily", false, "■■■■■■■■■■");
        let root = Backfill::plan_from(
            &config.jobs[0],
            &Selection::default(),
            &daily.statuses,
            now(),
            4,
            2,
        )
        .expect("a plan");
        let mut reader = JobView::new(config.jobs[1].clone(), now());
        let plan = |reader: &JobView| {
            CascadePlan::of(
                &config,
                &lineage,
                (&root, false),
                |name| (name == "reader").then_some(reader),
                now(),
            )
            .problems
        };
        assert_eq!(plan(&reader), ["reader: states are still loading"]);
        reader.error = Some("target table r does not exist or has no columns".into());
        assert_eq!(
            plan(&reader),
            ["reader: its states cannot be read: target table r does not exist or has no columns"]
        );
    }

    /// A cascade with nothing to load says why: no reader, or readers
    /// whose partitions over the range cannot run yet; never a line that
    /// says a reading job reads nothing.
    #[test]
    fn an_empty_cascade_says_why() {
        let t = Theme::default_theme();
        let line = |readers: &[&str]| {
            let plan = CascadePlan {
                root: "fct_orders".into(),
                readers: readers.iter().map(|s| s.to_string()).collect(),
                ..CascadePlan::default()
            };
            let lines = plan.lines(&t, |s| Span::raw(s.to_string()));
            assert_eq!(lines.len(), 1);
            lines[0].to_string()
        };
        assert_eq!(
            line(&[]),
            "cascadeon, but no job reads fct_orders: nothing to load after it"
        );
        assert!(
            line(&["agg_revenue_monthly"]).contains(
                "on: agg_revenue_monthly reads fct_orders, but none of its partitions over this range can run now"
            ),
            "{}",
            line(&["agg_revenue_monthly"])
        );
        assert!(
            line(&["a", "b"]).starts_with("cascadeon: a, b read fct_orders, but none of their")
        );
    }

    /// A day the cascade leaves because it has not ended is named in the
    /// dialog, as `idem run --cascade` names it, with what loads it now.
    #[test]
    fn a_window_not_ended_is_named() {
        let plan = CascadePlan {
            not_ended: vec![(
                "daily".into(),
                vec![
                    Partition::parse(
                        crate::partition::Grain::Day,
                        "2026-06-15",
                        crate::partition::RangeEnd::From,
                    )
                    .expect("a day"),
                ],
            )],
            ..CascadePlan::default()
        };
        let lines: Vec<String> = plan
            .lines(&Theme::default_theme(), |s| Span::raw(s.to_string()))
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert!(
            lines.contains(
                &"leaves daily 2026-06-15: not ended yet (until 2026-06-16 00:00; --allow-incomplete loads it now)"
                    .to_string()
            ),
            "{lines:?}"
        );
    }

    /// With cascade off, one line names what is left to go stale (or was
    /// never loaded), and the key that takes it along; nothing when nothing
    /// reads the run.
    #[test]
    fn cascade_off_names_what_goes_stale() {
        let job = job_view("agg", false, "■■■■■■■■■■");
        let backfill =
            Backfill::plan_from(&job.job, &Selection::default(), &job.statuses, now(), 4, 2)
                .expect("a plan");
        let t = Theme::default_theme();
        let off = |steps: Vec<Backfill>| {
            let plan = CascadePlan {
                steps,
                ..CascadePlan::default()
            };
            plan.off_line(&t, Span::raw("cascade "), "c")
                .map(|l| l.to_string())
        };
        assert_eq!(off(Vec::new()), None);
        let mut one = backfill.clone();
        one.partitions.truncate(1);
        assert_eq!(
            off(vec![one.clone()]).as_deref(),
            Some("cascade off: agg 2026-06-01 reads these: may go stale (c loads it too)")
        );
        assert_eq!(
            off(vec![backfill.clone(), one.clone()]).as_deref(),
            Some(
                "cascade off: 11 partitions downstream (agg 10, agg 1) read these: may go stale (c loads them too)"
            )
        );
        // Partitions never loaded stay missing: they are not said to go stale.
        let off_never = |steps: Vec<Backfill>, never_loaded: Vec<usize>| {
            CascadePlan {
                steps,
                never_loaded,
                ..CascadePlan::default()
            }
            .off_line(&t, Span::raw("cascade "), "c")
            .map(|l| l.to_string())
        };
        assert_eq!(
            off_never(vec![one.clone()], vec![1]).as_deref(),
            Some("cascade off: agg 2026-06-01 reads these: never loaded (c loads it too)")
        );
        assert_eq!(
            off_never(vec![backfill, one], vec![3, 0]).as_deref(),
            Some(
                "cascade off: 11 partitions downstream (agg 10, agg 1) read these: 8 may go stale, 3 never loaded (c loads them too)"
            )
        );
    }
}
