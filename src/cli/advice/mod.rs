//! What a run says to do once it is over: its counts in words, the command
//! that repeats what it left undone (and whether a repeat as it stands
//! would meet the same failures), what to do about the partitions the
//! shrink guard refused or that loaded empty, and what loads the upstream
//! partitions a cascade's step read not loaded. Each command runs as printed,
//! from any directory and without a terminal.

use std::path::Path;

use super::run::CONFIRM_ABOVE;
use super::run_args::config_flag;
use crate::config::{Job, Strategy};
use crate::engine;
use crate::numbers::n_partitions;
use crate::partition::Partition;
pub(super) use fill::partly_read_note;
use repeat::{repeat_command, repeat_step};

mod fill;
mod repeat;

/// How the run that printed a command was asked for, as its commands must
/// repeat it: the config, `--only`, `--allow-incomplete`, `--cascade`.
pub(super) struct AsRun<'a> {
    pub config: &'a Path,
    /// `--only` as typed (none: every partition of the range).
    pub only: &'a [String],
    pub allow_incomplete: bool,
    /// A cascade's commands cascade too, so that the jobs downstream of
    /// what they load are brought up to date with it.
    pub cascade: bool,
}

impl<'a> AsRun<'a> {
    #[cfg(test)]
    fn plain(config: &'a Path) -> AsRun<'a> {
        AsRun {
            config,
            only: &[],
            allow_incomplete: false,
            cascade: false,
        }
    }

    /// ` --allow-incomplete` where the run had it: a window still open is
    /// refused without it.
    fn incomplete(&self) -> &'static str {
        if self.allow_incomplete {
            " --allow-incomplete"
        } else {
            ""
        }
    }

    /// ` --cascade` where the run was one.
    fn cascading(&self) -> &'static str {
        if self.cascade { " --cascade" } else { "" }
    }
}

/// `1 succeeded, 0 failed, 1 refused by the shrink guard, 3 not started`:
/// the engine counts refusals among failures; they read apart, as in the
/// console and the ledger.
pub(super) fn counted(s: &engine::RunSummary) -> String {
    format!(
        "{} succeeded, {} failed{}{}",
        s.succeeded,
        s.failed.saturating_sub(s.refused + s.lock_held),
        crate::engine::refusals_counted(s.refused, s.lock_held, ", "),
        s.stopped_short()
    )
}

/// What to do about partitions this run loaded empty that were not empty
/// before: their source had no rows in their windows, which is what a late
/// source looks like. Said on stderr, with the command that loads them
/// again once it lands; a cron run's exit code stays 0. A merge's command
/// goes on through its latest loaded window, whose keys a late row of an
/// older window would otherwise roll back.
fn empty_note(
    run: &AsRun<'_>,
    job: &Job,
    summary: &engine::RunSummary,
    empty_before: &[Partition],
) -> Option<String> {
    let now_empty: Vec<Partition> = summary
        .empty
        .iter()
        .filter(|p| !empty_before.contains(p))
        .copied()
        .collect();
    let (first, last) = (now_empty.first()?, now_empty.last()?);
    let them = if first == last { "it" } else { "them" };
    let span = if first != last && crate::partition::range(*first, *last).len() == now_empty.len() {
        format!("{} .. {}", first.name(), last.name())
    } else {
        listed(&now_empty)
    };
    let one = now_empty.len() == 1;
    // A merge reads change data: a window in which no row changed merged
    // nothing, as is usual, and is said as such; a replace's window with no
    // rows at all is more likely a source that has not landed.
    let said = if job.strategy == Strategy::MergeKey {
        format!(
            "{} merged no rows, the source having no changes in {} ({span}). Should rows for {them} land later, merge {them} again",
            crate::numbers::count(now_empty.len() as i64, "window", "windows"),
            if one { "it" } else { "them" },
        )
    } else {
        format!(
            "{} loaded empty, the source having no rows in {} ({span}). If it is late, load {them} again once it lands",
            n_partitions(now_empty.len() as i64),
            if one { "its window" } else { "their windows" },
        )
    };
    Some(format!(
        "{said}: idem{} run {} --only empty --from {} --to {}{}{}{}{}",
        config_flag(run.config),
        job.name,
        first.name(),
        last.name(),
        if job.strategy == Strategy::MergeKey {
            " --through-latest"
        } else {
            ""
        },
        run.incomplete(),
        run.cascading(),
        yes_for(
            *first,
            *last,
            job.strategy == Strategy::MergeKey || run.cascade
        ),
    ))
}

/// The first five partitions' names, and how many more there are.
fn listed(partitions: &[Partition]) -> String {
    let named: Vec<String> = partitions.iter().take(5).map(Partition::name).collect();
    match partitions.len() - named.len() {
        0 => named.join(", "),
        more => format!("{} and {more} more", named.join(", ")),
    }
}

/// ` --yes` where a command's range holds more partitions than a run
/// takes without a terminal unasked ([`CONFIRM_ABOVE`]), or where it takes
/// more than its range says (`beyond`: a cascade's downstream steps, a
/// merge through its latest window): printed for a script or a cron line,
/// it must run as printed.
fn yes_for(first: Partition, last: Partition, beyond: bool) -> &'static str {
    if beyond || crate::partition::range(first, last).len() > CONFIRM_ABOVE {
        " --yes"
    } else {
        ""
    }
}

/// The notes after a run of one job, in the order to act on them: why it
/// stopped, what loaded empty, the repeat (and whether a repeat as things
/// stand would meet the same failures), the refusals.
pub(super) fn after_run(
    run: &AsRun<'_>,
    job: &Job,
    summary: &engine::RunSummary,
    empty_before: &[Partition],
) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(why) = &summary.unreachable {
        notes.push(format!(
            "stopped: the warehouse cannot be reached ({why}). The {} partition{} that did not succeed were left exactly as they were.",
            summary.unfinished.len(),
            if summary.unfinished.len() == 1 { "" } else { "s" }
        ));
    }
    if let Some(why) = &summary.connections_refused {
        notes.push(format!(
            "stopped: the warehouse refused every connection a partition asked for ({why}). The {} partition{} that did not succeed were left exactly as they were.",
            summary.unfinished.len(),
            if summary.unfinished.len() == 1 { "" } else { "s" }
        ));
    }
    if let Some(why) = &summary.misfit {
        notes.push(format!(
            "stopped: {} does not fit its warehouse as written, so every partition would fail alike ({why})",
            job.name
        ));
    }
    notes.extend(empty_note(run, job, summary, empty_before));
    if let Some(repeat) = repeat_command(run, &job.name, summary) {
        notes.push(if summary.misfit.is_some() {
            format!("once the job is fixed, repeat: {repeat}")
        } else if summary.repeat_fails_alike() {
            format!("once the cause of these failures is fixed, repeat: {repeat}")
        } else if summary.only_locks_held() {
            format!("locks held elsewhere kept them waiting: once they are free, repeat: {repeat}")
        } else {
            format!("to finish, repeat: {repeat}")
        });
    }
    notes.extend(refused_advice(run, &job.name, summary));
    notes
}

/// The notes after a cascade, step by step: each step's repeat (as a
/// cascade), its refusals and what it loaded empty that was not empty
/// before (`empty_before`, by step). A step whose only
/// undone partitions were skipped, for an upstream partition that did not
/// load, is in the repeat of that upstream step, which cascades to it; it
/// is named apart only where no such repeat was given (the upstream was
/// refused by its shrink guard), for once the upstream loads.
pub(super) fn after_cascade(
    run: &AsRun<'_>,
    steps: &[engine::Backfill],
    empty_before: &[Vec<Partition>],
    outcomes: &[engine::cascade::StepOutcome],
) -> Vec<String> {
    let mut notes = Vec::new();
    let mut repeated_upstream = false;
    // `--only` chose the root's partitions; each step downstream loads
    // those its upstream made stale, whatever their states.
    let downstream = AsRun {
        config: run.config,
        only: &[],
        allow_incomplete: run.allow_incomplete,
        cascade: true,
    };
    for (k, outcome) in outcomes.iter().enumerate() {
        let run = if k == 0 { run } else { &downstream };
        let own_undone = outcome.summary.as_ref().is_some_and(|s| {
            s.unfinished
                .iter()
                .any(|p| !s.refused_partitions.contains(p))
        });
        let only_skipped =
            !own_undone && outcome.not_started.is_empty() && !outcome.skipped.is_empty();
        if let Some(repeat) = repeat_step(run, outcome) {
            if only_skipped && repeated_upstream {
                // In the upstream step's repeat, which cascades to it.
            } else if only_skipped {
                notes.push(format!(
                    "once what {} reads has loaded, repeat: {repeat}",
                    outcome.job
                ));
                // Its repeat cascades to the steps it skipped in turn.
                repeated_upstream = true;
            } else {
                // Where only its own partitions are undone, what they wait for.
                let own_only = outcome.skipped.is_empty() && outcome.not_started.is_empty();
                let summary = outcome.summary.as_ref().filter(|_| own_only);
                notes.push(if summary.is_some_and(|s| s.repeat_fails_alike()) {
                    format!(
                        "once the cause of {}'s failures is fixed, repeat: {repeat}",
                        outcome.job
                    )
                } else if summary.is_some_and(|s| s.only_locks_held()) {
                    format!(
                        "locks held elsewhere kept {} waiting: once they are free, repeat: {repeat}",
                        outcome.job
                    )
                } else {
                    format!("to finish {}, repeat: {repeat}", outcome.job)
                });
                repeated_upstream = true;
            }
        }
        if let Some(s) = &outcome.summary {
            if let Some(refused) = refused_advice(run, &outcome.job, s) {
                notes.push(format!("{}: {refused}", outcome.job));
                // Its commands cascade to the steps the refusals skipped.
                repeated_upstream = true;
            }
            if let Some(k) = steps.iter().position(|b| b.job.name == outcome.job) {
                let before = empty_before.get(k).map_or(&[][..], Vec::as_slice);
                notes.extend(empty_note(run, &steps[k].job, s, before));
            }
        }
    }
    notes
}

/// What to do about the partitions the shrink guard refused: their source
/// looks incomplete, so a plain repeat would be refused again. Fix the
/// source and run them again, or allow the shrink: a command per run of
/// consecutive refused partitions, each taking the refused ones alone
/// (`--only refused`); past three runs, one over their whole span, which
/// also takes any partition refused before between them, and says so.
pub(super) fn refused_advice(
    run: &AsRun<'_>,
    job: &str,
    summary: &engine::RunSummary,
) -> Option<String> {
    let refused = &summary.refused_partitions;
    let (first, last) = (refused.first()?, refused.last()?);
    let mut spans: Vec<(Partition, Partition)> = Vec::new();
    for &p in refused {
        match spans.last_mut() {
            Some((_, end)) if end.next() == p => *end = p,
            _ => spans.push((p, p)),
        }
    }
    let widened = spans.len() > 3;
    if widened {
        spans = vec![(*first, *last)];
    }
    let command = |allow: &str| {
        spans
            .iter()
            .map(|(from, to)| {
                format!(
                    "idem{} run {job} --only refused --from {} --to {}{}{allow}{}{}",
                    config_flag(run.config),
                    from.name(),
                    to.name(),
                    run.incomplete(),
                    run.cascading(),
                    yes_for(*from, *to, run.cascade),
                )
            })
            .collect::<Vec<_>>()
            .join(" ; ")
    };
    let (them, their) = if refused.len() == 1 {
        ("it", "its")
    } else {
        ("them", "their")
    };
    Some(format!(
        "the source looks incomplete for {} (the shrink guard refused {them}, and kept {their} rows): fix the source and run {them} again ({}), or if it really shrank: {}{}",
        listed(refused),
        command(""),
        command(" --allow-shrink"),
        if widened {
            " (over their whole span, which also takes any partition refused before between them)"
        } else {
            ""
        },
    ))
}

#[cfg(test)]
mod tests;
