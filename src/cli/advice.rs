//! What a run says to do once it is over: its counts in words, the command
//! that repeats what it left undone (and whether a repeat as it stands
//! would meet the same failures), what to do about the partitions the
//! shrink guard refused or that loaded empty. Each command runs as printed,
//! from any directory and without a terminal.

use std::path::Path;

use super::run::CONFIRM_ABOVE;
use super::run_args::config_flag;
use crate::config::{Job, Strategy};
use crate::engine;
use crate::numbers::n_partitions;
use crate::partition::Partition;

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
        s.failed.saturating_sub(s.refused),
        if s.refused > 0 {
            format!(", {} refused by the shrink guard", s.refused)
        } else {
            String::new()
        },
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
            } else if outcome
                .summary
                .as_ref()
                .is_some_and(|s| s.repeat_fails_alike())
                && outcome.skipped.is_empty()
                && outcome.not_started.is_empty()
            {
                notes.push(format!(
                    "once the cause of {}'s failures is fixed, repeat: {repeat}",
                    outcome.job
                ));
                repeated_upstream = true;
            } else {
                notes.push(format!("to finish {}, repeat: {repeat}", outcome.job));
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

/// The command that runs again exactly what this run left undone, or more
/// (re-running a partition that succeeded is safe), never less: `--only
/// failed` only when every unfinished partition failed and is in the ledger.
/// It names the config by its absolute path, so that it runs as it stands
/// from any directory.
/// Partitions the shrink guard refused are left out: a repeat would refuse
/// them again ([`refused_advice`] says what to do for them).
fn repeat_command(run: &AsRun<'_>, job: &str, summary: &engine::RunSummary) -> Option<String> {
    let undone: Vec<Partition> = summary
        .unfinished
        .iter()
        .filter(|p| !summary.refused_partitions.contains(p))
        .copied()
        .collect();
    let only_failed = summary.unrecorded == 0 && summary.not_started == 0;
    repeat_line(run, job, &undone, only_failed)
}

/// [`repeat_command`] for a job's step of a cascade: what it left undone
/// (unfinished, skipped for an upstream partition that did not load, or
/// never begun because the run was cancelled), repeated as a cascade, so
/// that the jobs downstream of it are brought up to date too.
fn repeat_step(run: &AsRun<'_>, outcome: &engine::cascade::StepOutcome) -> Option<String> {
    let mut undone: Vec<Partition> = outcome
        .summary
        .iter()
        .flat_map(|s| {
            s.unfinished
                .iter()
                .filter(|p| !s.refused_partitions.contains(p))
        })
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
    repeat_line(run, &outcome.job, &undone, only_failed)
}

/// `idem run JOB --from FIRST --to LAST` over `undone` (oldest first), as
/// the run was asked for: its `--only` (with `failed`, as a partition it
/// selected may have failed since) or `--only failed` where every undone
/// partition failed; its `--allow-incomplete`; `--yes` for a cascade,
/// whose downstream steps a range does not count, or a wide range.
fn repeat_line(
    run: &AsRun<'_>,
    job: &str,
    undone: &[Partition],
    only_failed: bool,
) -> Option<String> {
    let (first, last) = (undone.first()?, undone.last()?);
    let mut only: Vec<&str> = run.only.iter().map(|w| w.trim()).collect();
    if (only_failed || !only.is_empty()) && !only.contains(&"failed") {
        only.push("failed");
    }
    let only = if only.is_empty() {
        String::new()
    } else {
        format!(" --only {}", only.join(","))
    };
    Some(format!(
        "idem{} run {job}{only} --from {} --to {}{}{}{}",
        config_flag(run.config),
        first.name(),
        last.name(),
        run.incomplete(),
        run.cascading(),
        yes_for(*first, *last, run.cascade),
    ))
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
mod tests {
    use super::*;

    fn day(name: &str) -> Partition {
        Partition::parse(
            crate::partition::Grain::Day,
            name,
            crate::partition::RangeEnd::From,
        )
        .expect("a day")
    }

    /// A command whose range holds more partitions than a run without a
    /// terminal takes unasked carries --yes: printed for a cron line, it
    /// runs as printed (QA: it exited 2 asking for --yes).
    #[test]
    fn a_wide_command_carries_yes() {
        let config = &AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG));
        let cascading = AsRun {
            cascade: true,
            ..AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG))
        };
        let narrow = [day("2026-01-01"), day("2026-01-05")];
        assert_eq!(
            repeat_line(config, "j", &narrow, true).as_deref(),
            Some("idem run j --only failed --from 2026-01-01 --to 2026-01-05")
        );
        let wide = [day("2026-01-01"), day("2026-06-30")];
        assert_eq!(
            repeat_line(&cascading, "j", &wide, false).as_deref(),
            Some("idem run j --from 2026-01-01 --to 2026-06-30 --cascade --yes")
        );
        let summary = engine::RunSummary {
            refused: 2,
            failed: 2,
            refused_partitions: wide.to_vec(),
            ..Default::default()
        };
        let apart = refused_advice(config, "j", &summary).unwrap_or_default();
        assert!(
            apart.ends_with(
                "idem run j --only refused --from 2026-01-01 --to 2026-01-01 --allow-shrink ; idem run j --only refused --from 2026-06-30 --to 2026-06-30 --allow-shrink"
            ),
            "{apart}"
        );
        let scattered = engine::RunSummary {
            refused: 4,
            failed: 4,
            refused_partitions: vec![
                day("2026-01-01"),
                day("2026-02-01"),
                day("2026-03-01"),
                day("2026-06-30"),
            ],
            ..Default::default()
        };
        let wide = refused_advice(config, "j", &scattered).unwrap_or_default();
        assert!(
            wide.ends_with(
                "idem run j --only refused --from 2026-01-01 --to 2026-06-30 --allow-shrink --yes (over their whole span, which also takes any partition refused before between them)"
            ),
            "{wide}"
        );
    }

    /// A replace's window with no rows at all is likely a source that has
    /// not landed, and is said so, with the command for once it has.
    #[test]
    fn an_empty_replace_window_is_said_as_a_late_source() {
        let config = &AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG));
        let text = "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"fct\"\n\
                    target = \"fct\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\n\
                    grain = \"day\"\nstart = \"2026-01-01\"\n\
                    sql = \"select id, dt from s where dt >= :start and dt < :end\"\n";
        let parsed = crate::config::parse(config.config, text, &|_| None).expect("a config");
        let summary = engine::RunSummary {
            empty: vec![day("2026-01-03"), day("2026-01-04")],
            ..Default::default()
        };
        assert_eq!(
            empty_note(config, &parsed.jobs[0], &summary, &[]).as_deref(),
            Some(
                "2 partitions loaded empty, the source having no rows in their windows (2026-01-03 .. 2026-01-04). If it is late, load them again once it lands: idem run fct --only empty --from 2026-01-03 --to 2026-01-04"
            )
        );
    }

    /// A merge's late window is loaded again through its latest window:
    /// merged alone, a late row of an older window would roll back the
    /// newer values later windows gave its keys (QA).
    #[test]
    fn an_empty_merge_window_is_loaded_again_through_the_latest() {
        let config = &AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG));
        let text = "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"dim\"\n\
                    target = \"dim\"\nstrategy = \"merge_key\"\nunique_key = [\"id\"]\n\
                    grain = \"day\"\nstart = \"2026-01-01\"\n\
                    sql = \"select id from s where dt >= :start and dt < :end\"\n";
        let parsed = crate::config::parse(config.config, text, &|_| None).expect("a config");
        let summary = engine::RunSummary {
            succeeded: 2,
            empty: vec![day("2026-01-03"), day("2026-01-04")],
            ..Default::default()
        };
        // Days apart are named, not spanned as though the days between
        // loaded empty too (QA).
        let apart = engine::RunSummary {
            empty: vec![day("2026-01-03"), day("2026-01-05"), day("2026-01-06")],
            ..Default::default()
        };
        let note = empty_note(config, &parsed.jobs[0], &apart, &[]).unwrap();
        assert!(
            note.starts_with("3 windows merged no rows, the source having no changes in them (2026-01-03, 2026-01-05, 2026-01-06). Should rows for them land later, merge them again: idem run dim --only empty"),
            "{note}"
        );
        let note = empty_note(config, &parsed.jobs[0], &summary, &[day("2026-01-04")]);
        // A merge window in which no row changed is usual for change data:
        // said as what it is, not as a source that may be late (QA).
        let said = "1 window merged no rows, the source having no changes in it (2026-01-03). Should rows for it land later, merge it again: idem run dim --only empty --from 2026-01-03 --to 2026-01-03 --through-latest --yes";
        assert_eq!(note.as_deref(), Some(said));
        // A cascade's step says so too (QA: only a run without --cascade
        // did), with what that step had empty before.
        let step = engine::Backfill {
            job: parsed.jobs[0].clone(),
            partitions: vec![day("2026-01-03"), day("2026-01-04")],
            concurrency: 1,
            retries: 0,
            reason: None,
            prior_attempts: Default::default(),
            allow_shrink: false,
        };
        let outcome = engine::cascade::StepOutcome {
            added: Vec::new(),
            job: "dim".into(),
            summary: Some(summary),
            skipped: Vec::new(),
            not_started: Vec::new(),
            left: Vec::new(),
        };
        // Its command cascades, as the run did.
        let cascade = &AsRun {
            cascade: true,
            ..AsRun::plain(config.config)
        };
        assert_eq!(
            after_cascade(cascade, &[step], &[vec![day("2026-01-04")]], &[outcome]),
            [said.replace(" --yes", " --cascade --yes")]
        );
    }

    /// A cascade step whose only undone partitions were skipped, for an
    /// upstream partition that failed, is in the upstream's repeat (which
    /// cascades); where the upstream's were refused, it is named for once
    /// they load (QA: it said "to finish", which reloaded nothing new).
    #[test]
    fn a_step_skipped_for_its_upstream_is_in_the_upstreams_repeat() {
        // A cascade's notes are made for a cascade.
        let config = &AsRun {
            cascade: true,
            ..AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG))
        };
        let upstream = |refused: bool| engine::cascade::StepOutcome {
            added: Vec::new(),
            job: "fct".into(),
            summary: Some(engine::RunSummary {
                failed: 1,
                refused: usize::from(refused),
                lasting: usize::from(!refused),
                unfinished: vec![day("2026-01-06")],
                refused_partitions: if refused {
                    vec![day("2026-01-06")]
                } else {
                    Vec::new()
                },
                ..Default::default()
            }),
            skipped: Vec::new(),
            not_started: Vec::new(),
            left: Vec::new(),
        };
        let agg = engine::cascade::StepOutcome {
            added: Vec::new(),
            job: "agg".into(),
            summary: None,
            skipped: vec![(day("2026-01-06"), "fct 2026-01-06".into())],
            not_started: Vec::new(),
            left: Vec::new(),
        };
        let failed = after_cascade(config, &[], &[], &[upstream(false), agg.clone()]);
        assert_eq!(
            failed,
            [
                "once the cause of fct's failures is fixed, repeat: idem run fct --only failed --from 2026-01-06 --to 2026-01-06 --cascade --yes"
            ]
        );
        // A step skipped in turn, for agg's skipped day, is in agg's
        // repeat, which cascades to it (QA: it was named again).
        let monthly = engine::cascade::StepOutcome {
            added: Vec::new(),
            job: "monthly".into(),
            summary: None,
            skipped: vec![(
                Partition::parse(
                    crate::partition::Grain::Month,
                    "2026-01",
                    crate::partition::RangeEnd::From,
                )
                .unwrap(),
                "agg 2026-01-06".into(),
            )],
            not_started: Vec::new(),
            left: Vec::new(),
        };
        // The refusal's commands cascade, as the run did: they load the
        // steps it skipped, which are not named again (QA: agg's and
        // monthly's repeats followed, each naming what the first loads).
        let cascade = &AsRun {
            cascade: true,
            ..AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG))
        };
        let refused = after_cascade(cascade, &[], &[], &[upstream(true), agg, monthly]);
        assert_eq!(
            refused,
            [
                "fct: the source looks incomplete for 2026-01-06 (the shrink guard refused it, and kept its rows): fix the source and run it again (idem run fct --only refused --from 2026-01-06 --to 2026-01-06 --cascade --yes), or if it really shrank: idem run fct --only refused --from 2026-01-06 --to 2026-01-06 --allow-shrink --cascade --yes"
            ]
        );
    }

    /// A cancelled cascade: the root rolled one day back and left one
    /// unstarted; the step downstream never began. Each is repeated as a
    /// cascade, and the downstream job's undone days are named.
    #[test]
    fn a_cancelled_cascade_is_repeated_as_a_cascade_naming_what_is_undone() {
        // A cascade's notes are made for a cascade.
        let config = &AsRun {
            cascade: true,
            ..AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG))
        };
        let root = engine::cascade::StepOutcome {
            added: Vec::new(),
            job: "ev".into(),
            summary: Some(engine::RunSummary {
                succeeded: 1,
                not_started: 2,
                rolled_back: 1,
                cancelled: true,
                unfinished: vec![day("2026-01-02"), day("2026-01-03")],
                ..Default::default()
            }),
            skipped: Vec::new(),
            not_started: Vec::new(),
            left: Vec::new(),
        };
        assert_eq!(
            repeat_step(config, &root).as_deref(),
            Some("idem run ev --from 2026-01-02 --to 2026-01-03 --cascade --yes")
        );
        let downstream = engine::cascade::StepOutcome {
            added: Vec::new(),
            job: "daily".into(),
            summary: None,
            skipped: vec![(day("2026-01-02"), "ev 2026-01-02".into())],
            not_started: vec![day("2026-01-01"), day("2026-01-03")],
            left: Vec::new(),
        };
        assert_eq!(
            repeat_step(config, &downstream).as_deref(),
            Some("idem run daily --from 2026-01-01 --to 2026-01-03 --cascade --yes")
        );
        // The root's --only is the root's: the step downstream loads what
        // it made stale, whatever their states.
        let only = ["failed".to_string()];
        let asked = AsRun {
            config: config.config,
            only: &only,
            allow_incomplete: false,
            cascade: true,
        };
        assert_eq!(
            after_cascade(&asked, &[], &[], &[root.clone(), downstream.clone()]),
            [
                "to finish ev, repeat: idem run ev --only failed --from 2026-01-02 --to 2026-01-03 --cascade --yes",
                "to finish daily, repeat: idem run daily --from 2026-01-01 --to 2026-01-03 --cascade --yes"
            ]
        );
        // A run that is not a cascade is repeated as it was.
        let summary = root.summary.as_ref().expect("summary");
        assert_eq!(
            repeat_command(&AsRun::plain(config.config), "ev", summary).as_deref(),
            Some("idem run ev --from 2026-01-02 --to 2026-01-03")
        );
        // With its --only (and failed: a partition it chose may have
        // failed since) and --allow-incomplete (QA: the repeat of an --only
        // run reloaded every partition between, and an open window's was
        // refused without the flag).
        let only = ["stale".to_string()];
        let as_asked = AsRun {
            config: config.config,
            only: &only,
            allow_incomplete: true,
            cascade: false,
        };
        assert_eq!(
            repeat_command(&as_asked, "ev", summary).as_deref(),
            Some(
                "idem run ev --only stale,failed --from 2026-01-02 --to 2026-01-03 --allow-incomplete"
            )
        );
    }
}
