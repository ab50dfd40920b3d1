//! Cascades: a backfill plus every downstream partition it makes stale,
//! transitively, run in dependency order. Each job's step runs to the end
//! before the jobs that read it start, so an upstream partition always
//! commits before any downstream partition that reads it begins; inside a
//! step, partitions run with the step's concurrency. A downstream partition
//! that reads an upstream partition which did not succeed is skipped.

use std::collections::{BTreeSet, HashMap, HashSet};

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::{Backfill, Event, PlanError, RunSummary, Selection};
use crate::config::{Config, Job};
use crate::lineage::{Lineage, overlapping, read_by};
use crate::partition::Partition;
use crate::state::PartitionStatus;
use crate::warehouse::Warehouse;

/// The downstream partitions a backfill of `root` makes stale, per job in
/// dependency order: every partition (within the job's complete range) whose
/// window overlaps a partition planned upstream of it.
pub fn downstream_partitions<'c>(
    config: &'c Config,
    lineage: &Lineage,
    root: &Backfill,
    now: chrono::NaiveDateTime,
) -> Vec<(&'c Job, Vec<Partition>)> {
    let mut downstream = Downstream::of(config, lineage, root, now);
    std::iter::from_fn(|| downstream.next_job()).collect()
}

/// [`downstream_partitions`] one job at a time, so that what a job's step
/// runs beyond them (a merge step goes on through its latest window) is
/// planned for the jobs that read it too: [`Downstream::planned`].
pub struct Downstream<'c, 'l> {
    config: &'c Config,
    lineage: &'l Lineage,
    now: chrono::NaiveDateTime,
    /// The jobs downstream of the root not yet planned, in dependency order.
    order: std::vec::IntoIter<String>,
    /// Per job, the partitions planned so far (the root's among them).
    planned: HashMap<String, BTreeSet<Partition>>,
    /// Whether windows that have not ended yet are planned too (the run
    /// was given `--allow-incomplete`).
    allow_incomplete: bool,
    /// Per job, in dependency order, the windows over what is planned
    /// upstream that were left out because they have not ended yet.
    not_ended: Vec<(&'c Job, Vec<Partition>)>,
}

impl<'c, 'l> Downstream<'c, 'l> {
    pub fn of(
        config: &'c Config,
        lineage: &'l Lineage,
        root: &Backfill,
        now: chrono::NaiveDateTime,
    ) -> Self {
        let planned = HashMap::from([(
            root.job.name.clone(),
            root.partitions.iter().copied().collect(),
        )]);
        Downstream {
            config,
            lineage,
            now,
            order: lineage.downstream_closure(&root.job.name).into_iter(),
            planned,
            allow_incomplete: false,
            not_ended: Vec::new(),
        }
    }

    /// Plans the windows not ended yet too, as a run given
    /// `--allow-incomplete` loads its own (`allow`).
    pub fn allowing_incomplete(mut self, allow: bool) -> Self {
        self.allow_incomplete = allow;
        self
    }

    /// The windows of the jobs planned so far that read what is planned
    /// upstream of them but were left out, not having ended yet (none when
    /// incomplete windows are allowed): a cascade does not run them, and
    /// says so.
    pub fn not_ended(&self) -> &[(&'c Job, Vec<Partition>)] {
        &self.not_ended
    }

    /// The next downstream job with partitions over what is planned
    /// upstream of it, and those partitions.
    pub fn next_job(&mut self) -> Option<(&'c Job, Vec<Partition>)> {
        for name in self.order.by_ref() {
            let Some(job) = self.config.jobs.iter().find(|j| j.name == name) else {
                continue;
            };
            // Up to the window open now: past it, nothing has rows yet.
            let latest = job.latest_partition(self.now);
            let mut mine = BTreeSet::new();
            for (up, _) in self.lineage.upstream(&name) {
                for p in self.planned.get(up).into_iter().flatten() {
                    mine.extend(
                        overlapping(p.start, p.end(), job.grain)
                            .into_iter()
                            .filter(|d| *d >= job.start && *d <= latest),
                    );
                }
            }
            if !self.allow_incomplete {
                let last_complete = job.last_partition(self.now);
                let open = mine.split_off(&last_complete.next());
                if !open.is_empty() {
                    self.not_ended.push((job, open.into_iter().collect()));
                }
            }
            if mine.is_empty() {
                continue;
            }
            self.planned.insert(name, mine.clone());
            return Some((job, mine.into_iter().collect()));
        }
        None
    }

    /// What the step of a job [`Downstream::next_job`] gave runs: the jobs
    /// after it read its partitions beyond those too.
    pub fn planned(&mut self, step: &Backfill) {
        self.planned
            .entry(step.job.name.clone())
            .or_default()
            .extend(step.partitions.iter().copied());
    }
}

/// The step of a cascade that re-runs `partitions` of a downstream `job`
/// (from [`downstream_partitions`]), planned from that job's `statuses` with
/// the root's concurrency, retries, reason and shrink allowance; `None` when
/// there is nothing to run. A merge step runs on through its latest loaded
/// window (as `--through-latest` does).
pub fn plan_step(
    job: &Job,
    partitions: &[Partition],
    statuses: &[PartitionStatus],
    root: &Backfill,
    now: chrono::NaiveDateTime,
) -> Result<Option<Backfill>, PlanError> {
    let (Some(&from), Some(&to)) = (partitions.first(), partitions.last()) else {
        return Ok(None);
    };
    // The partitions are the planner's ([`Downstream`]), which leaves out
    // the windows not ended yet unless the run allows them.
    let selection = Selection {
        from: Some(from),
        to: Some(to),
        allow_incomplete: true,
        ..Selection::default()
    };
    let mut step = Backfill::plan_from(
        job,
        &selection,
        statuses,
        now,
        root.concurrency,
        root.retries,
    )?;
    step.partitions.retain(|p| partitions.contains(p));
    // A merge step that re-merged older windows alone would roll the keys
    // later windows updated back to their older rows: it goes on through
    // its latest loaded window, in order, so the newest values win again.
    if let Some(risk) = step.merge_order_risk_in(statuses) {
        step.extend_through_latest(&risk);
    }
    step.reason = root.reason.clone();
    step.allow_shrink = root.allow_shrink;
    Ok(Some(step))
}

/// How one step of a cascade ended.
#[derive(Debug, Clone)]
pub struct StepOutcome {
    pub job: String,
    /// None when every partition of the step was skipped.
    pub summary: Option<RunSummary>,
    /// Partitions not run because an upstream partition they read did not
    /// succeed, with that partition (`"job partition"`).
    pub skipped: Vec<(Partition, String)>,
    /// Partitions of a step the run was cancelled before it began: left
    /// undone, and a repeat must cover them.
    pub not_started: Vec<Partition>,
}

/// Runs each step in order (upstream first), skipping what reads a failure.
pub async fn run(
    warehouse: &Warehouse,
    lineage: &Lineage,
    steps: &[Backfill],
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> Vec<StepOutcome> {
    run_gated(
        warehouse,
        lineage,
        steps,
        events,
        cancel,
        &super::Gate::default(),
    )
    .await
}

/// [`run`], starting no attempt while `gate` is shut.
pub async fn run_gated(
    warehouse: &Warehouse,
    lineage: &Lineage,
    steps: &[Backfill],
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
    gate: &super::Gate,
) -> Vec<StepOutcome> {
    // Per job: the partitions that did not succeed (failed, never started,
    // skipped), which the jobs downstream must not build on.
    let mut unfinished: HashMap<String, HashSet<Partition>> = HashMap::new();
    let mut grains = HashMap::new();
    let mut outcomes = Vec::new();
    for step in steps {
        grains.insert(step.job.name.clone(), step.job.grain);
        let mut skipped = Vec::new();
        let mut backfill = step.clone();
        backfill.partitions.retain(|d| {
            let cause = lineage.upstream(&step.job.name).iter().find_map(|(up, _)| {
                let bad = unfinished.get(up)?;
                read_by(d, *grains.get(up)?)
                    .into_iter()
                    .find(|p| bad.contains(p))
                    .map(|p| format!("{up} {}", p.name()))
            });
            match cause {
                Some(cause) => {
                    skipped.push((*d, cause));
                    false
                }
                None => true,
            }
        });
        for (partition, cause) in &skipped {
            let _ = events.send(Event::PartitionSkipped {
                job: step.job.name.clone(),
                partition: partition.name(),
                because: format!("{cause} did not load"),
            });
        }
        let mut not_started = Vec::new();
        let summary = if backfill.partitions.is_empty() {
            if !skipped.is_empty() {
                let _ = events.send(Event::StepSkipped {
                    job: step.job.name.clone(),
                    partitions: skipped.iter().map(|(p, _)| p.name()).collect(),
                    cancelled: false,
                });
            }
            None
        } else if cancel.is_cancelled() {
            not_started = backfill.partitions.clone();
            None
        } else {
            Some(super::run_gated(warehouse, &backfill, events, cancel, gate).await)
        };
        let bad = unfinished.entry(step.job.name.clone()).or_default();
        bad.extend(skipped.iter().map(|(p, _)| *p));
        match &summary {
            Some(s) => bad.extend(s.unfinished.iter().copied()),
            None if cancel.is_cancelled() => bad.extend(backfill.partitions.iter().copied()),
            None => {}
        }
        outcomes.push(StepOutcome {
            job: step.job.name.clone(),
            summary,
            skipped,
            not_started,
        });
    }
    outcomes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::{Grain, RangeEnd};

    /// An hourly job read by a daily one, both from 2026-06-14.
    fn hourly_and_daily() -> Config {
        let job = |name: &str, grain: &str, column: &str, reads: &str| {
            format!(
                "[[jobs]]\nname = \"{name}\"\ntarget = \"{name}\"\nstrategy = \"replace_partition\"\n\
                 partition_column = \"{column}\"\ngrain = \"{grain}\"\nstart = \"2026-06-14\"\n\
                 sql = '''select {column} from {reads} where {column} >= :start and {column} < :end'''\n"
            )
        };
        let text = format!(
            "[warehouse]\nurl = \"sqlite://w.db\"\n{}{}",
            job("ev", "hour", "hr", "src"),
            job("daily", "day", "dt", "ev")
        );
        crate::config::parse(std::path::Path::new("idem.toml"), &text, &|_| None)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A cascade from hours of a day not over yet leaves that day out of
    /// the daily job's step, and says which (it was left out silently);
    /// allowed incomplete windows, it plans the day.
    #[test]
    fn a_day_not_ended_is_left_out_and_named_unless_allowed() {
        let config = hourly_and_daily();
        let lineage = Lineage::of(&config).expect("lineage");
        // 03:12 on the 15th: the 14th has ended, the 15th has not.
        let now = chrono::NaiveDate::from_ymd_opt(2026, 6, 15)
            .and_then(|d| d.and_hms_opt(3, 12, 0))
            .expect("a time");
        let hour = |name: &str| {
            Partition::parse(Grain::Hour, name, RangeEnd::From).unwrap_or_else(|| panic!("{name}"))
        };
        let root = Backfill {
            partitions: crate::partition::range(hour("2026-06-14T22"), hour("2026-06-15T02")),
            ..Backfill::plan_from(&config.jobs[0], &Selection::default(), &[], now, 1, 0)
                .expect("a plan")
        };
        let names = |ps: &[Partition]| ps.iter().map(Partition::name).collect::<Vec<_>>();
        let mut left = Downstream::of(&config, &lineage, &root, now);
        let (job, planned) = left.next_job().expect("the daily job");
        assert_eq!(
            (job.name.as_str(), names(&planned)),
            ("daily", vec!["2026-06-14".to_string()])
        );
        assert!(left.next_job().is_none());
        let not_ended: Vec<(&str, Vec<String>)> = left
            .not_ended()
            .iter()
            .map(|(job, ps)| (job.name.as_str(), names(ps)))
            .collect();
        assert_eq!(not_ended, [("daily", vec!["2026-06-15".to_string()])]);

        let mut allowed = Downstream::of(&config, &lineage, &root, now).allowing_incomplete(true);
        let (_, planned) = allowed.next_job().expect("the daily job");
        assert_eq!(names(&planned), ["2026-06-14", "2026-06-15"]);
        assert!(allowed.not_ended().is_empty());
        // The step plans the open day without refusing it.
        let step = plan_step(job, &planned, &[], &root, now)
            .expect("planned")
            .expect("a step");
        assert_eq!(names(&step.partitions), ["2026-06-14", "2026-06-15"]);
    }
}
