//! Cascades: a backfill plus every downstream partition it makes stale,
//! transitively, run in dependency order. Each job's step runs to the end
//! before the jobs that read it start, so an upstream partition always
//! commits before any downstream partition that reads it begins; inside a
//! step, partitions run with the step's concurrency. A downstream partition
//! that reads an upstream partition which did not succeed is skipped. A
//! merge may move rows in or out of windows beyond those it merged: before
//! each step begins, its windows over those are added to it, and a job
//! that reads them with no step of its own is given one.

mod partial;
mod reached;

use std::collections::{BTreeSet, HashMap, HashSet};

use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::{Backfill, Event, PlanError, RunSummary, Selection};
use crate::config::{Config, Job};
use crate::lineage::{Lineage, overlapping, read_by};
use crate::partition::Partition;
use crate::state::PartitionStatus;
use crate::warehouse::Warehouse;
pub use partial::{
    NoticeSlow, PartlyRead, UpstreamStates, fill, further_line, own_partly_read, partly_read_line,
    reaching_further, read_partly_read, upstream_states,
};
use reached::Reached;

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

/// Which windows of a downstream job a cascade loads over a partition
/// upstream of it: those within the job's range up to the window open
/// `now` (past it, nothing has rows yet), and of those the ones not ended
/// yet only when the run allows incomplete windows.
#[derive(Debug, Clone, Copy)]
pub struct Reach {
    pub now: chrono::NaiveDateTime,
    pub allow_incomplete: bool,
}

impl Reach {
    /// `job`'s windows over `upstream` (a partition of a job it reads):
    /// those a cascade loads, and those it leaves, not ended yet.
    pub fn over(&self, job: &Job, upstream: &Partition) -> (Vec<Partition>, Vec<Partition>) {
        let latest = job.latest_partition(self.now);
        let last_complete = job.last_partition(self.now);
        overlapping(upstream.start, upstream.end(), job.grain)
            .into_iter()
            .filter(|d| *d >= job.start && *d <= latest)
            .partition(|d| self.allow_incomplete || *d <= last_complete)
    }
}

/// [`downstream_partitions`] one job at a time, so that what a job's step
/// runs beyond them (a merge step goes on through its latest window) is
/// planned for the jobs that read it too: [`Downstream::planned`].
pub struct Downstream<'c, 'l> {
    config: &'c Config,
    lineage: &'l Lineage,
    reach: Reach,
    /// The jobs downstream of the root not yet planned, in dependency order.
    order: std::vec::IntoIter<String>,
    /// Per job, the partitions planned so far (the root's among them).
    planned: HashMap<String, BTreeSet<Partition>>,
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
            reach: Reach {
                now,
                allow_incomplete: false,
            },
            order: lineage.downstream_closure(&root.job.name).into_iter(),
            planned,
            not_ended: Vec::new(),
        }
    }

    /// Plans the windows not ended yet too, as a run given
    /// `--allow-incomplete` loads its own (`allow`).
    pub fn allowing_incomplete(mut self, allow: bool) -> Self {
        self.reach.allow_incomplete = allow;
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
            let (mut mine, mut open) = (BTreeSet::new(), BTreeSet::new());
            for (up, _) in self.lineage.upstream(&name) {
                for p in self.planned.get(up).into_iter().flatten() {
                    let (loads, left) = self.reach.over(job, p);
                    mine.extend(loads);
                    open.extend(left);
                }
            }
            if !open.is_empty() {
                self.not_ended.push((job, open.into_iter().collect()));
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
#[derive(Debug, Clone, Default)]
pub struct StepOutcome {
    pub job: String,
    /// None when every partition of the step was skipped.
    pub summary: Option<RunSummary>,
    /// Partitions added to the step as planned, before it began, with why
    /// (the steps before it moved rows into or out of what they read).
    pub added: Vec<(Partition, String)>,
    /// Partitions not run, with why: an upstream partition they read did
    /// not succeed (`"job partition did not load"`), or, in a merge step,
    /// they were there only to merge on through after a skipped window.
    pub skipped: Vec<(Partition, String)>,
    /// Partitions of a step the run was cancelled before it began: left
    /// undone, and a repeat must cover them.
    pub not_started: Vec<Partition>,
    /// Windows a merge before the step moved rows in or out of what they
    /// read, left out because they have not ended yet, with why: due for a
    /// run once they have.
    pub left: Vec<(Partition, String)>,
    /// Its windows, as it ran, that read upstream partitions not loaded:
    /// those planned, and those `added` (checked as they were added).
    pub reads_not_loaded: Vec<PartlyRead>,
}

/// Runs each step in order (upstream first), skipping what reads a failure
/// and adding, before a step begins, its windows over those the steps
/// before it moved rows in or out of (within `reach`). A job of `jobs`
/// that reads a step's job but has no step of its own (nothing it reads
/// was planned) is given one once that step moved rows in or out of
/// windows beyond its plan: its windows over them are added, as to a
/// planned step, and it runs in its place in dependency order (QA: it was
/// left stale, and nothing said so).
pub async fn run(
    warehouse: &Warehouse,
    lineage: &Lineage,
    (steps, reach, jobs): (&[Backfill], Reach, &[Job]),
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> Vec<StepOutcome> {
    run_gated(
        warehouse,
        lineage,
        (steps, reach, jobs),
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
    (steps, reach, jobs): (&[Backfill], Reach, &[Job]),
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
    gate: &super::Gate,
) -> Vec<StepOutcome> {
    // Per job: the partitions that did not succeed (failed, never started,
    // skipped), which the jobs downstream must not build on.
    let mut unfinished: HashMap<String, HashSet<Partition>> = HashMap::new();
    let mut grains = HashMap::new();
    let mut reached = Reached::default();
    let mut outcomes = Vec::new();
    // The steps as planned, and those given to readers without one as the
    // run goes (by job name): only windows added to them make them run.
    let mut steps = steps.to_vec();
    let mut unplanned: HashSet<String> = HashSet::new();
    let mut k = 0;
    while k < steps.len() {
        let step = &steps[k];
        grains.insert(step.job.name.clone(), step.job.grain);
        let mut backfill = step.clone();
        // The root's partitions are the run's own: nothing is added to them.
        let reached::Additions { added, left } = if k == 0 {
            reached::Additions::default()
        } else {
            reached.add_to(&mut backfill, lineage, reach)
        };
        // The windows added are checked as the planned ones were, against
        // what their upstream jobs hold now that the steps before have run
        // (QA: they were not, and a window added over hours not loaded was
        // loaded from the rest unsaid).
        if !added.is_empty() {
            let windows = Backfill::of(step.job.clone(), added.iter().map(|(p, _)| *p).collect());
            let (partly, unread) = read_partly_read(
                warehouse,
                (jobs, lineage),
                &windows,
                (reach.now, &|_: &Job| {}),
            )
            .await;
            backfill.reads_not_loaded.extend(partly);
            for u in unread {
                if !backfill.upstream_unread.contains(&u) {
                    backfill.upstream_unread.push(u);
                }
            }
            backfill
                .reads_not_loaded
                .sort_by(|a, b| (a.window, &a.upstream).cmp(&(b.window, &b.upstream)));
        }
        for (partition, because) in &added {
            let _ = events.send(Event::PartitionAdded {
                job: step.job.name.clone(),
                partition: partition.name(),
                because: because.clone(),
            });
        }
        for (partition, because) in &left {
            let _ = events.send(Event::PartitionLeft {
                job: step.job.name.clone(),
                partition: partition.name(),
                because: because.clone(),
            });
        }
        let mut skipped = Vec::new();
        backfill.partitions.retain(|d| {
            let cause = lineage.upstream(&step.job.name).iter().find_map(|(up, _)| {
                let bad = unfinished.get(up)?;
                read_by(d, *grains.get(up)?)
                    .into_iter()
                    .find(|p| bad.contains(p))
                    .map(|p| format!("{up} {} did not load", p.name()))
            });
            match cause {
                Some(cause) => {
                    skipped.push((*d, cause));
                    false
                }
                None => true,
            }
        });
        if let Some(first) = skipped.first().map(|(p, _)| *p) {
            let through = reached.through_only(&backfill, lineage, reach);
            backfill.partitions.retain(|p| !through.contains(p));
            skipped.extend(through.into_iter().map(|p| {
                (
                    p,
                    format!(
                        "{} {} was skipped, and this window was only to be merged on through after it",
                        step.job.name,
                        first.name()
                    ),
                )
            }));
            skipped.sort();
        }
        for (partition, because) in &skipped {
            let _ = events.send(Event::PartitionSkipped {
                job: step.job.name.clone(),
                partition: partition.name(),
                because: because.clone(),
            });
        }
        let mut not_started = Vec::new();
        let summary = if backfill.partitions.is_empty() {
            // None of its partitions runs: the step ends here, whether they
            // were skipped or left as not ended (a stream ends with its
            // last step's end, not with a partition_left).
            let ended: Vec<String> = skipped.iter().chain(&left).map(|(p, _)| p.name()).collect();
            if !ended.is_empty() {
                let _ = events.send(Event::StepSkipped {
                    job: step.job.name.clone(),
                    partitions: ended,
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
        reached.ran(&backfill, &added, summary.as_ref());
        let bad = unfinished.entry(step.job.name.clone()).or_default();
        bad.extend(skipped.iter().map(|(p, _)| *p));
        match &summary {
            Some(s) => bad.extend(s.unfinished.iter().copied()),
            None if cancel.is_cancelled() => bad.extend(backfill.partitions.iter().copied()),
            None => {}
        }
        let job = step.job.name.clone();
        // A reader given a step nothing reached ran nothing: not a step.
        if !unplanned.contains(&job) || !added.is_empty() || !left.is_empty() {
            outcomes.push(StepOutcome {
                job: job.clone(),
                summary,
                added,
                skipped,
                not_started,
                left,
                reads_not_loaded: backfill.reads_not_loaded.clone(),
            });
        }
        if reached.moved_beyond(&job) {
            for reader in readers_without_a_step(&steps, k, lineage, jobs) {
                unplanned.insert(reader.job.name.clone());
                let after = (k..steps.len())
                    .filter(|&i| {
                        lineage
                            .downstream_closure(&steps[i].job.name)
                            .contains(&reader.job.name)
                    })
                    .max()
                    .unwrap_or(k);
                steps.insert(after + 1, reader);
            }
        }
        k += 1;
    }
    outcomes
}

/// The jobs of `jobs` that read the job of `steps[k]` and have no step in
/// `steps`, each as a step of no partition yet, run as the root's are
/// (concurrency, retries, reason, shrink allowance).
fn readers_without_a_step(
    steps: &[Backfill],
    k: usize,
    lineage: &Lineage,
    jobs: &[Job],
) -> Vec<Backfill> {
    let root = &steps[0];
    lineage
        .downstream(&steps[k].job.name)
        .iter()
        .filter(|r| !steps.iter().any(|s| s.job.name == **r))
        .filter_map(|r| jobs.iter().find(|j| j.name == *r))
        .map(|job| Backfill::step_as(root, job))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::partition::{Grain, RangeEnd};

    /// An hourly job read by a daily one, both from 2026-06-14.
    pub(crate) fn hourly_and_daily() -> Config {
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
