//! The command that repeats what a run left undone. It covers every
//! partition the run left undone and never one the shrink guard refused
//! (a repeat would refuse it again): a `--from`/`--to` range cannot skip a
//! partition inside it, so around a refusal it is a command on each side,
//! joined with ` ; `.

use super::{AsRun, yes_for};
use crate::cli::run_args::config_flag;
use crate::engine;
use crate::partition::Partition;

/// The command that runs again exactly what this run left undone, or more
/// (re-running a partition that succeeded is safe), never less: `--only
/// failed` only when every unfinished partition failed and is in the ledger.
/// It names the config by its absolute path, so that it runs as it stands
/// from any directory.
/// Partitions the shrink guard refused are left out: a repeat would refuse
/// them again ([`super::refused_advice`] says what to do for them).
pub(super) fn repeat_command(
    run: &AsRun<'_>,
    job: &str,
    summary: &engine::RunSummary,
) -> Option<String> {
    let undone: Vec<Partition> = summary
        .unfinished
        .iter()
        .filter(|p| !summary.refused_partitions.contains(p))
        .copied()
        .collect();
    let only_failed = summary.unrecorded == 0 && summary.not_started == 0;
    repeat_line(run, job, &undone, &summary.refused_partitions, only_failed)
}

/// [`repeat_command`] for a job's step of a cascade: what it left undone
/// (unfinished, skipped for an upstream partition that did not load, or
/// never begun because the run was cancelled), repeated as a cascade, so
/// that the jobs downstream of it are brought up to date too.
pub(super) fn repeat_step(
    run: &AsRun<'_>,
    outcome: &engine::cascade::StepOutcome,
) -> Option<String> {
    let refused: &[Partition] = outcome
        .summary
        .as_ref()
        .map_or(&[], |s| &s.refused_partitions);
    let mut undone: Vec<Partition> = outcome
        .summary
        .iter()
        .flat_map(|s| s.unfinished.iter())
        .filter(|p| !refused.contains(p))
        .chain(outcome.skipped.iter().map(|(p, _)| p))
        .chain(&outcome.not_started)
        .copied()
        .collect();
    undone.sort();
    undone.dedup();
    let only_failed = outcome.skipped.is_empty()
        && outcome.not_started.is_empty()
        && outcome
            .summary
            .as_ref()
            .is_some_and(|s| s.unrecorded == 0 && s.not_started == 0);
    repeat_line(run, &outcome.job, &undone, refused, only_failed)
}

/// `idem run JOB --from FIRST --to LAST` over each span of `undone`
/// (oldest first; see [`spans_between`]), as the run was asked for: its
/// `--only` (with `failed`, as a partition it selected may have failed
/// since) or `--only failed` where every undone partition failed; its
/// `--allow-incomplete`; `--yes` for a cascade, whose downstream steps a
/// range does not count, or a wide range. Several are joined with ` ; `.
pub(super) fn repeat_line(
    run: &AsRun<'_>,
    job: &str,
    undone: &[Partition],
    refused: &[Partition],
    only_failed: bool,
) -> Option<String> {
    if undone.is_empty() {
        return None;
    }
    let mut only: Vec<&str> = run.only.iter().map(|w| w.trim()).collect();
    if (only_failed || !only.is_empty()) && !only.contains(&"failed") {
        only.push("failed");
    }
    let only = if only.is_empty() {
        String::new()
    } else {
        format!(" --only {}", only.join(","))
    };
    let commands: Vec<String> = spans_between(undone, refused)
        .into_iter()
        .map(|(first, last)| {
            format!(
                "idem{} run {job}{only} --from {} --to {}{}{}{}",
                config_flag(run.config),
                first.name(),
                last.name(),
                run.incomplete(),
                run.cascading(),
                yes_for(first, last, run.cascade),
            )
        })
        .collect();
    Some(commands.join(" ; "))
}

/// The `--from`/`--to` spans that cover `undone` (oldest first) and no
/// partition of `refused`: one span, from the first undone partition to
/// the last, where no refusal lies between them; else one on each side of
/// each refusal. A span may take partitions between undone ones that
/// loaded (a repeat loads them again, safely) or that the run's `--only`
/// did not choose (the repeat's `--only` leaves them alike).
fn spans_between(undone: &[Partition], refused: &[Partition]) -> Vec<(Partition, Partition)> {
    let mut spans: Vec<(Partition, Partition)> = Vec::new();
    for &p in undone {
        match spans.last_mut() {
            Some((_, end)) if !refused.iter().any(|r| *r > *end && *r < p) => *end = p,
            _ => spans.push((p, p)),
        }
    }
    spans
}
