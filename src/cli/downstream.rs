//! What a run does downstream: the steps `--cascade` plans for the jobs
//! that read what it loads, and, from that same plan, what a run without
//! `--cascade` leaves: named in its plan, and, once it is over, those it
//! made stale with the command that loads them.

use std::path::Path;

use super::Stop;
use super::output::noteln;
use super::run_args::config_flag;
use crate::engine::cascade::{Downstream, PartlyRead};
use crate::engine::{self, Backfill};
use crate::numbers::n_partitions;
use crate::partition::{Partition, RangeEnd};
use crate::state;

/// A job downstream of a run without `--cascade`, which the run leaves
/// reading what it replaces: its partitions over the run's range.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct LeftDownstream {
    pub job: String,
    /// Loaded partitions that go stale if the run changes their rows.
    #[serde(serialize_with = "names")]
    pub goes_stale: Vec<Partition>,
    /// Partitions never loaded: they stay missing.
    #[serde(serialize_with = "names")]
    pub never_loaded: Vec<Partition>,
    /// A merge job's later loaded windows, which loading it again merges
    /// on through (and `--cascade` loads, with what reads them).
    #[serde(serialize_with = "names")]
    pub merges_on_through: Vec<Partition>,
    /// What the plan says of them, in one line.
    pub note: String,
}

fn names<S: serde::Serializer>(partitions: &[Partition], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(partitions.iter().map(Partition::name))
}

/// A downstream step of a cascade as planned: the step, the states it was
/// planned from, and the windows a merge step goes on through beyond those
/// the run upstream of it reaches (its later loaded windows).
pub(super) struct PlannedStep {
    pub step: Backfill,
    pub statuses: Vec<state::PartitionStatus>,
    pub merged_on: Vec<Partition>,
}

/// What [`plan_downstream`] plans: the steps, and per job the windows left
/// out because they have not ended yet (see
/// [`engine::cascade::Downstream::not_ended`]).
#[derive(Default)]
pub(super) struct DownstreamPlan {
    pub steps: Vec<PlannedStep>,
    pub not_ended: Vec<(String, Vec<Partition>)>,
}

impl DownstreamPlan {
    /// A line per job whose windows the cascade leaves, not ended yet: which,
    /// until when, and the command that loads them once they have (or now,
    /// partly, with `--allow-incomplete`).
    pub fn not_ended_notes(&self, config_path: &Path) -> Vec<String> {
        self.not_ended
            .iter()
            .filter_map(|(job, windows)| not_ended_note(config_path, job, windows))
            .collect()
    }
}

/// The line for `job`'s `windows` (oldest first) a cascade leaves because
/// they have not ended yet, planned so or met as it ran: which, until when,
/// and the command that loads them once they have.
pub(super) fn not_ended_note(
    config_path: &Path,
    job: &str,
    windows: &[Partition],
) -> Option<String> {
    let (first, last) = (windows.first()?, windows.last()?);
    Some(format!(
        "{job} {} {} not ended yet (until {}): the cascade leaves {}; once {} ended: idem{} run {job} --from {} --to {} (now, with what has landed: add --allow-incomplete)",
        span(windows)?,
        if windows.len() == 1 { "has" } else { "have" },
        last.end().format("%Y-%m-%d %H:%M"),
        if windows.len() == 1 { "it" } else { "them" },
        if windows.len() == 1 {
            "it has"
        } else {
            "they have"
        },
        config_flag(config_path),
        first.name(),
        last.name(),
    ))
}

/// How [`plan_downstream`] reads each downstream job's states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum States {
    /// Every partition's, its target read too; a read that fails stops
    /// the plan (a cascade about to run, or its preview).
    Whole,
    /// The ledger's alone; where they cannot be read, the job is planned as
    /// if every partition were loaded (what a run without `--cascade` says).
    LedgerIfReadable,
}

/// The downstream steps of a cascade from `root`: for each job that reads
/// it (transitively), the partitions the root's run makes stale, and those
/// a merge step goes on through, planned from that job's own states so
/// that attempt numbers continue. The one plan of what lies downstream: a
/// cascade runs it, and a run without `--cascade` names what it leaves
/// from it. Windows not ended yet are planned with `allow_incomplete` alone.
pub(super) async fn plan_downstream(
    warehouse: &crate::warehouse::Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    (root, allow_incomplete): (&Backfill, bool),
    now: chrono::NaiveDateTime,
    states: States,
) -> Result<DownstreamPlan, Stop> {
    let mut steps = Vec::new();
    let mut downstream = engine::cascade::Downstream::of(config, lineage, root, now)
        .allowing_incomplete(allow_incomplete);
    while let Some((job, partitions)) = downstream.next_job() {
        let statuses = match states {
            States::Whole => super::read_states(warehouse, config, lineage, job, now).await?,
            States::LedgerIfReadable => {
                ledger_states(warehouse, config, lineage, job, &partitions, now)
                    .await
                    .unwrap_or_default()
            }
        };
        let step = engine::cascade::plan_step(job, &partitions, &statuses, root, now)
            .map_err(|e| Stop::usage(format!("{}: {e}", job.name)))?;
        if let Some(mut step) = step {
            downstream.planned(&step);
            // Read for a cascade's plan alone.
            (step.reads_not_loaded, step.upstream_unread) = match states {
                States::Whole => {
                    partly_read(
                        warehouse,
                        config,
                        lineage,
                        (&downstream, &step),
                        &steps,
                        now,
                    )
                    .await
                }
                States::LedgerIfReadable => Default::default(),
            };
            let merged_on = step
                .partitions
                .iter()
                .filter(|p| partitions.binary_search(p).is_err())
                .copied()
                .collect();
            steps.push(PlannedStep {
                step,
                statuses,
                merged_on,
            });
        }
    }
    let not_ended = downstream
        .not_ended()
        .iter()
        .map(|(job, windows)| (job.name.clone(), windows.clone()))
        .collect();
    Ok(DownstreamPlan { steps, not_ended })
}

/// The windows of a cascade's `step` that read upstream partitions neither
/// loaded nor in the cascade ([`Downstream::partly_read`]), walked further
/// up ([`engine::cascade::reaching_further`]): each upstream job's states
/// are those its step was planned from (`planned`), or, for the root and
/// the jobs outside the cascade, read over the step's windows.
async fn partly_read(
    warehouse: &crate::warehouse::Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    (downstream, step): (&Downstream<'_, '_>, &Backfill),
    planned: &[PlannedStep],
    now: chrono::NaiveDateTime,
) -> (Vec<PartlyRead>, Vec<engine::UpstreamUnread>) {
    let planned_states = |name: &str| {
        planned
            .iter()
            .find(|p| p.step.job.name == name)
            .map(|p| &p.statuses[..])
    };
    let unplanned = |name: &str| planned_states(name).is_none();
    let notice = slow_notice(warehouse);
    let jobs = (&config.jobs[..], lineage);
    let found =
        engine::cascade::upstream_states(warehouse, jobs, step, unplanned, (now, &notice)).await;
    let partly = downstream.partly_read(step, |name| {
        planned_states(name).or_else(|| found.read.get(name).map(Vec::as_slice))
    });
    let partly = engine::cascade::reaching_further(warehouse, jobs, partly, (now, &notice)).await;
    (partly, found.unread)
}

/// The windows of a run's own job (without `--cascade`, or a cascade's
/// root) that read upstream partitions not loaded
/// ([`engine::cascade::read_partly_read`]): nothing is read for a job that
/// reads none. With it, the upstream jobs whose states could not be read.
pub(super) async fn own_partly_read(
    warehouse: &crate::warehouse::Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    run: &Backfill,
    now: chrono::NaiveDateTime,
) -> (Vec<PartlyRead>, Vec<engine::UpstreamUnread>) {
    let notice = slow_notice(warehouse);
    engine::cascade::read_partly_read(warehouse, (&config.jobs, lineage), run, (now, &notice)).await
}

/// What the command line says of a state read that outlasts
/// [`state::SLOW_READ`].
fn slow_notice(warehouse: &crate::warehouse::Warehouse) -> impl Fn(&crate::config::Job) + Sync {
    let lock_timeout = warehouse.config().lock_timeout;
    move |job: &crate::config::Job| noteln!("idem: {}", state::slow_read_note(job, lock_timeout))
}

/// The partitions of jobs downstream of `root` that read what it loads,
/// which a run without `--cascade` leaves as they are: one per job, in
/// dependency order, for the plan; those `--cascade` would load (from
/// [`plan_downstream`]: past a merge job, the windows it merges on through
/// too). Those never loaded are said to be, not to go stale (a partition
/// with no success stays missing); where their ledger cannot be read,
/// every partition is taken as loaded.
pub(super) async fn downstream_words(
    warehouse: &crate::warehouse::Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    root: &Backfill,
    now: chrono::NaiveDateTime,
) -> Vec<LeftDownstream> {
    if root.partitions.is_empty() {
        return Vec::new();
    }
    let plan = plan_downstream(
        warehouse,
        config,
        lineage,
        (root, false),
        now,
        States::LedgerIfReadable,
    )
    .await
    .unwrap_or_default()
    .steps;
    let mut lines = Vec::new();
    for PlannedStep {
        step,
        statuses,
        merged_on,
        ..
    } in plan
    {
        let partitions = &step.partitions;
        let never: Vec<Partition> = statuses
            .iter()
            .filter(|s| s.last_success.is_none() && partitions.binary_search(&s.partition).is_ok())
            .map(|s| s.partition)
            .collect();
        let loaded: Vec<Partition> = partitions
            .iter()
            .filter(|p| never.binary_search(p).is_err())
            .copied()
            .collect();
        let them = if partitions.len() == 1 { "it" } else { "them" };
        // The windows a merge goes on through do not go stale: they are
        // merged again after those that do.
        let goes_stale: Vec<Partition> = loaded
            .iter()
            .filter(|p| !merged_on.contains(p))
            .copied()
            .collect();
        let what = match (span(&goes_stale), span(&never)) {
            (Some(loaded_span), never_span) => {
                let go = if goes_stale.len() == 1 { "goes" } else { "go" };
                let mut what = format!(
                    "its {} {loaded_span} {go} stale if those rows change",
                    n_partitions(goes_stale.len() as i64)
                );
                if never_span.is_some() {
                    what.push_str(&format!(
                        ", and {} more over this range {} never loaded",
                        never.len(),
                        if never.len() == 1 { "was" } else { "were" }
                    ));
                }
                what
            }
            (None, Some(never_span)) => format!(
                "its {} {never_span} {} never loaded",
                n_partitions(never.len() as i64),
                if never.len() == 1 { "was" } else { "were" }
            ),
            (None, None) => continue,
        };
        let merge = match span(&merged_on) {
            Some(later) => format!(
                ", and merging again goes on through its later loaded {} {later}, whose keys an older window merged alone would roll back",
                if merged_on.len() == 1 {
                    "window"
                } else {
                    "windows"
                }
            ),
            None => String::new(),
        };
        let note = format!(
            "{} {} replaces: {what}{merge} (--cascade loads {them} after the run)",
            step.job.name,
            reads(lineage, &step.job.name, &root.job.name),
        );
        lines.push(LeftDownstream {
            job: step.job.name.clone(),
            goes_stale,
            never_loaded: never,
            merges_on_through: merged_on,
            note,
        });
    }
    lines
}

/// The ledger's states of `job` from the first of `partitions` on (its
/// target not read: a merge plan reads the windows after them), or `None`
/// where they cannot be read.
async fn ledger_states(
    warehouse: &crate::warehouse::Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    job: &crate::config::Job,
    partitions: &[Partition],
    now: chrono::NaiveDateTime,
) -> Option<Vec<state::PartitionStatus>> {
    let scope = state::StatusScope {
        from: partitions.first().copied(),
        ledger_only: true,
        ..Default::default()
    };
    state::job_status_in(
        warehouse,
        config,
        lineage,
        job,
        now,
        &Default::default(),
        &scope,
    )
    .await
    .ok()
    .map(|states| states.statuses)
}

/// After a run without `--cascade`: the downstream partitions that read
/// what it changed (stale, upstream), per job in dependency order, each with
/// the command that loads them again. Read from the ledger; nothing is
/// said where that read fails, but for a warehouse that stopped answering.
pub(super) async fn stale_downstream(
    warehouse: &crate::warehouse::Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    loaded: &Backfill,
    (run_id, mark): (&str, Option<crate::warehouse::ledger::LedgerMark>),
    now: chrono::NaiveDateTime,
    config_path: &Path,
) -> Vec<String> {
    if engine::cascade::downstream_partitions(config, lineage, loaded, now).is_empty() {
        return Vec::new();
    }
    // Of the partitions loaded, those whose content this run changed: an
    // unchanged re-run makes nothing stale, whatever was stale before it.
    // Read from where the ledger stood before the run, where that is known.
    let attempts = async {
        match mark {
            Some(mark) => {
                warehouse
                    .attempts_after(&loaded.job.name, mark.last_id)
                    .await
            }
            None => warehouse.attempts(&loaded.job.name, None).await,
        }
    };
    let attempts = match warehouse.answering(attempts).await {
        Ok(attempts) => attempts,
        Err(e @ crate::warehouse::WarehouseError::NotAnswering { .. }) => {
            return vec![format!(
                "which partitions downstream this run made stale could not be read: {e}; `idem{} status` says once it answers",
                config_flag(config_path)
            )];
        }
        Err(_) => return Vec::new(),
    };
    // Its merges' rows moved in or out of other windows changed those too.
    use crate::warehouse::ledger::AttemptStatus;
    let mut changed = loaded.clone();
    changed.partitions = attempts
        .iter()
        .filter(|a| {
            a.run_id == run_id
                && (a.status == AttemptStatus::Moved
                    || a.status == AttemptStatus::Succeeded && a.content_changed != Some(false))
        })
        .filter_map(|a| Partition::parse(loaded.job.grain, &a.partition, RangeEnd::From))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if changed.partitions.is_empty() {
        return Vec::new();
    }
    let plan = plan_downstream(
        warehouse,
        config,
        lineage,
        (&changed, false),
        now,
        States::LedgerIfReadable,
    )
    .await
    .unwrap_or_default()
    .steps;
    let mut lines = Vec::new();
    for PlannedStep {
        step,
        statuses,
        merged_on,
        ..
    } in plan
    {
        let stale: Vec<Partition> = statuses
            .iter()
            .filter(|s| !s.stale_upstream.is_empty() && step.partitions.contains(&s.partition))
            .map(|s| s.partition)
            .collect();
        let (Some(span), Some(first), Some(last)) = (span(&stale), stale.first(), stale.last())
        else {
            continue;
        };
        // A merge job's stale windows are merged on through its latest.
        let through_latest = if merged_on.is_empty() {
            ""
        } else {
            " --through-latest"
        };
        lines.push(format!(
            "{} {} changed: its {} {span} {} stale until loaded again: idem{} run {} --only stale --from {} --to {}{through_latest}",
            step.job.name,
            reads(lineage, &step.job.name, &loaded.job.name),
            n_partitions(stale.len() as i64),
            if stale.len() == 1 { "is" } else { "are" },
            config_flag(config_path),
            step.job.name,
            first.name(),
            last.name(),
        ));
    }
    lines
}

/// How a downstream `job` reads what a run of `root` does: "reads what
/// this run", or, a step further down, "reads daily, downstream of what this
/// run" (followed by "replaces" or "changed").
fn reads(lineage: &crate::lineage::Lineage, job: &str, root: &str) -> String {
    let upstream: Vec<&str> = lineage
        .upstream(job)
        .iter()
        .map(|(u, _)| u.as_str())
        .collect();
    if upstream.contains(&root) {
        "reads what this run".to_string()
    } else {
        format!("reads {}, downstream of what this run", upstream.join(", "))
    }
}

/// `FIRST .. LAST`, or the one partition's name.
fn span(partitions: &[Partition]) -> Option<String> {
    let (first, last) = (partitions.first()?, partitions.last()?);
    Some(if first == last {
        first.name()
    } else {
        format!("{} .. {}", first.name(), last.name())
    })
}
