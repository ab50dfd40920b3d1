//! What a run without `--cascade` leaves downstream: the partitions of
//! the jobs that read what it loads, named in its plan, and, once it is
//! over, those it made stale with the command that loads them.

use std::path::Path;

use super::run_args::config_flag;
use crate::engine::{self, Backfill};
use crate::numbers::n_partitions;
use crate::partition::Partition;
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
    /// What the plan says of them, in one line.
    pub note: String,
}

fn names<S: serde::Serializer>(partitions: &[Partition], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(partitions.iter().map(Partition::name))
}

/// The partitions of jobs downstream of `root` that read what it loads,
/// which a run without `--cascade` leaves as they are: one per job, in
/// dependency order, for the plan. Those never loaded are said to be, not
/// to go stale (a partition with no success stays missing); where their
/// ledger cannot be read, every partition is taken as loaded.
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
    let mut lines = Vec::new();
    // Both in partition order: the downstream partitions, and the statuses
    // read over their span.
    for (job, partitions) in engine::cascade::downstream_partitions(config, lineage, root, now) {
        let never: Vec<Partition> =
            ledger_states(warehouse, config, lineage, job, &partitions, now)
                .await
                .map(|statuses| {
                    statuses
                        .iter()
                        .filter(|s| {
                            s.last_success.is_none()
                                && partitions.binary_search(&s.partition).is_ok()
                        })
                        .map(|s| s.partition)
                        .collect()
                })
                .unwrap_or_default();
        let loaded: Vec<Partition> = partitions
            .iter()
            .filter(|p| never.binary_search(p).is_err())
            .copied()
            .collect();
        let them = if partitions.len() == 1 { "it" } else { "them" };
        let what = match (span(&loaded), span(&never)) {
            (Some(loaded_span), never_span) => {
                let go = if loaded.len() == 1 { "goes" } else { "go" };
                let mut what = format!(
                    "its {} {loaded_span} {go} stale if those rows change",
                    n_partitions(loaded.len() as i64)
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
        let note = format!(
            "{} {} replaces: {what} (--cascade loads {them} after the run)",
            job.name,
            reads(lineage, &job.name, &root.job.name),
        );
        lines.push(LeftDownstream {
            job: job.name.clone(),
            goes_stale: loaded,
            never_loaded: never,
            note,
        });
    }
    lines
}

/// The ledger's states of `job` over the span of `partitions` (its target
/// not read), or `None` where they cannot be read.
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
        to: partitions.last().copied(),
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
}

/// After a run without `--cascade`: the downstream partitions that read
/// what it changed (stale, upstream), per job in dependency order, each with
/// the command that loads them again. Read from the ledger; nothing is
/// said where that read fails.
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
    let attempts = match mark {
        Some(mark) => {
            warehouse
                .attempts_after(&loaded.job.name, mark.last_id)
                .await
        }
        None => warehouse.attempts(&loaded.job.name, None).await,
    };
    let Ok(attempts) = attempts else {
        return Vec::new();
    };
    let mut changed = loaded.clone();
    changed.partitions.retain(|p| {
        let name = p.name();
        attempts.iter().any(|a| {
            a.run_id == run_id
                && a.partition == name
                && a.status == crate::warehouse::ledger::AttemptStatus::Succeeded
                && a.content_changed != Some(false)
        })
    });
    if changed.partitions.is_empty() {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for (job, partitions) in engine::cascade::downstream_partitions(config, lineage, &changed, now)
    {
        let Some(statuses) = ledger_states(warehouse, config, lineage, job, &partitions, now).await
        else {
            continue;
        };
        let stale: Vec<Partition> = statuses
            .iter()
            .filter(|s| !s.stale_upstream.is_empty() && partitions.contains(&s.partition))
            .map(|s| s.partition)
            .collect();
        let (Some(span), Some(first), Some(last)) = (span(&stale), stale.first(), stale.last())
        else {
            continue;
        };
        lines.push(format!(
            "{} {} changed: its {} {span} {} stale until loaded again: idem{} run {} --only stale --from {} --to {}",
            job.name,
            reads(lineage, &job.name, &loaded.job.name),
            n_partitions(stale.len() as i64),
            if stale.len() == 1 { "is" } else { "are" },
            config_flag(config_path),
            job.name,
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
