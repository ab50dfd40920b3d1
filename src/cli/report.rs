//! What a run says once it is over: a line per job with its counts, the
//! notes on what to do next, and the exit code. `idem run` prints it; so
//! does the console, after its terminal is restored, for the runs it still
//! showed in flight at a quit (those the quit cancelled said apart from
//! those that had ended).

use std::path::Path;

use super::RunArgs;
use super::advice::{self, AsRun};
use super::output::noteln;
use super::run_args::{config_flag, shell_word};
use crate::config::Job;
use crate::engine::{Backfill, RunSummary, cascade::StepOutcome};
use crate::exit::Exit;
use crate::partition::Partition;

/// How a run ended: one job's, or a cascade's steps.
pub enum Ended {
    /// Boxed: a summary is ten times the size of a cascade's list.
    One(Box<RunSummary>),
    Cascade(Vec<StepOutcome>),
}

/// A run's report, in the words of `idem run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// A line per job: its counts and its run id.
    pub outcomes: Vec<String>,
    /// What to do next: the repeat, refusals, empty loads (each said after
    /// `idem: `).
    pub notes: Vec<String>,
    pub exit: Exit,
    /// Whether a cancel stopped the run short (a partition rolled back or
    /// never started for it): one that ended before its cancel came, or
    /// was refused before it began, ran its own course.
    pub cut_short: bool,
}

impl RunReport {
    /// The report of one job's run.
    pub(super) fn of_run(
        run: &AsRun<'_>,
        job: &Job,
        summary: &RunSummary,
        empty_before: &[Partition],
    ) -> RunReport {
        let mut outcome = format!("{}: {}", job.name, advice::counted(summary));
        if summary.cancelled {
            outcome.push_str(" (cancelled)");
        }
        outcome.push_str(&format!(" · run {}", summary.run_id));
        RunReport {
            outcomes: vec![outcome],
            notes: advice::after_run(run, job, summary, empty_before),
            exit: summary.exit_code(),
            cut_short: summary.cancelled,
        }
    }

    /// The report of a cascade: a line per step, in dependency order.
    pub(super) fn of_cascade(
        run: &AsRun<'_>,
        steps: &[Backfill],
        empty_before: &[Vec<Partition>],
        outcomes: &[StepOutcome],
    ) -> RunReport {
        let mut exit = Exit::Ok;
        let mut cut_short = false;
        let mut lines = Vec::new();
        for outcome in outcomes {
            let mut line = match &outcome.summary {
                Some(s) => {
                    exit = exit.max(s.exit_code());
                    cut_short |= s.cancelled;
                    let cancelled = if s.cancelled { " (cancelled)" } else { "" };
                    format!("{}: {}{cancelled}", outcome.job, advice::counted(s))
                }
                None => format!("{}: nothing run", outcome.job),
            };
            if !outcome.added.is_empty() {
                line.push_str(&format!(
                    ", {} added (a merge upstream moved rows in or out of what {} read{})",
                    outcome.added.len(),
                    if outcome.added.len() == 1 {
                        "it"
                    } else {
                        "they"
                    },
                    if outcome.added.len() == 1 { "s" } else { "" }
                ));
            }
            if !outcome.skipped.is_empty() {
                exit = exit.max(Exit::Failed);
                line.push_str(&format!(
                    ", {} skipped (what they read, or merge on through after, did not load)",
                    outcome.skipped.len()
                ));
            }
            if !outcome.not_started.is_empty() {
                exit = exit.max(Exit::Cancelled);
                cut_short = true;
                line.push_str(&format!(
                    ", {} not started (cancelled before its step began)",
                    outcome.not_started.len()
                ));
            }
            if let Some(s) = &outcome.summary {
                line.push_str(&format!(" · run {}", s.run_id));
            }
            lines.push(line);
        }
        let mut notes = advice::after_cascade(run, steps, empty_before, outcomes);
        // Windows a merge moved rows in or out of as the cascade ran, left
        // for not having ended: due, as those planned so are.
        notes.extend(outcomes.iter().filter_map(|outcome| {
            let left: Vec<Partition> = outcome.left.iter().map(|(p, _)| *p).collect();
            super::downstream::not_ended_note(run.config, &outcome.job, &left)
        }));
        RunReport {
            outcomes: lines,
            notes,
            exit,
            cut_short,
        }
    }

    /// The report of a run the console started with `args` that never
    /// began: its check of the warehouse refused it (`refusal`), or the
    /// console was left while the check was waiting (none). Nothing was
    /// loaded or recorded; the dialog's command runs it.
    pub fn never_started(args: &RunArgs, refusal: Option<&str>) -> RunReport {
        let (why, exit) = match refusal {
            Some(r) => (format!("refused before it began: {r}"), Exit::Failed),
            None => (
                "the console was left while its check of the warehouse was waiting; nothing was loaded or recorded".to_string(),
                Exit::Cancelled,
            ),
        };
        RunReport {
            outcomes: vec![format!("{}: never started ({why})", args.job)],
            notes: vec![format!("to run it: {}", args.command_line())],
            exit,
            cut_short: refusal.is_none(),
        }
    }

    /// The report of a run the console started with `args` (whose config
    /// is the console's): `steps` are its backfill and, for a cascade, the
    /// steps downstream; `empty_before` what each had loaded empty before.
    pub fn of_console_run(
        args: &RunArgs,
        steps: &[Backfill],
        empty_before: &[Vec<Partition>],
        ended: &Ended,
    ) -> RunReport {
        let config = args.config.as_deref().unwrap_or(Path::new(""));
        let run = AsRun {
            config,
            only: &args.only,
            allow_incomplete: args.allow_incomplete,
            cascade: matches!(ended, Ended::Cascade(_)),
        };
        match ended {
            Ended::One(summary) => {
                let before = empty_before.first().map_or(&[][..], Vec::as_slice);
                RunReport::of_run(&run, &steps[0].job, summary, before)
            }
            Ended::Cascade(outcomes) => RunReport::of_cascade(&run, steps, empty_before, outcomes),
        }
    }
}

/// Says, once the console's terminal is restored, what became of the runs
/// it had in flight when it was left: each one's report as `idem run` gives
/// it, and the jobs whose runs had not ended when idem stopped waiting
/// (the server rolls back what they had in flight as their connections
/// close). The exit code is the worst of theirs; `quiet` is the code when
/// no run was in flight.
pub fn runs_left_by_the_console(
    config: &Path,
    reports: &[RunReport],
    unended: &[(String, String)],
    quiet: Exit,
) -> Exit {
    for line in left_by_the_console(config, reports, unended) {
        noteln!("idem: {line}");
    }
    let exit = reports.iter().map(|r| r.exit).fold(quiet, Exit::max);
    if unended.is_empty() {
        exit
    } else {
        exit.max(Exit::Cancelled)
    }
}

/// The lines [`runs_left_by_the_console`] says, each after `idem: `. The
/// console's view can lag its runs (a fast run's last events still queued
/// when it quits), so each run is said as it ended: those that had ended
/// before the quit apart from those its cancel stopped short, rolled back
/// or never started.
fn left_by_the_console(
    config: &Path,
    reports: &[RunReport],
    unended: &[(String, String)],
) -> Vec<String> {
    let (cut_short, ended): (Vec<&RunReport>, Vec<&RunReport>) =
        reports.iter().partition(|r| r.cut_short);
    let said = |report: &RunReport| {
        let lines = report.outcomes.iter().chain(&report.notes);
        lines.cloned().collect::<Vec<String>>()
    };
    let mut lines = Vec::new();
    if !ended.is_empty() {
        lines.push(match ended.len() {
            1 => "a run the console still showed in flight had ended before the quit:".to_string(),
            n => format!("{n} runs the console still showed in flight had ended before the quit:"),
        });
        lines.extend(ended.into_iter().flat_map(said));
    }
    let cancelled = cut_short.len() + unended.len();
    if cancelled > 0 {
        lines.push(match cancelled {
            1 => "the console was left with a run in flight; it was cancelled:".to_string(),
            n => format!("the console was left with {n} runs in flight; they were cancelled:"),
        });
        lines.extend(cut_short.into_iter().flat_map(said));
        lines.extend(
            unended
                .iter()
                .map(|(job, as_left)| unended_line(config, job, as_left)),
        );
    }
    lines
}

/// What is said of a run of `job` that had not ended when idem stopped
/// waiting: which run, and how far it had got when the console was left
/// (`as_left`: what it had loaded stands, whatever became of the rest).
fn unended_line(config: &Path, job: &str, as_left: &str) -> String {
    let seen = if as_left.is_empty() {
        String::new()
    } else {
        format!(" {as_left};")
    };
    format!(
        "{job}:{seen} its run had not finished rolling back when idem stopped waiting; the server rolls back what it had in flight as its connections close; where it stands: idem{} status {}",
        config_flag(config),
        shell_word(job)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::cascade::StepOutcome;
    use crate::partition::{Grain, RangeEnd};

    fn day(name: &str) -> Partition {
        Partition::parse(Grain::Day, name, RangeEnd::From).expect("a day")
    }

    fn backfill(config: &Path, name: &str) -> Backfill {
        let text = format!(
            "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"{name}\"\n\
             target = \"{name}\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\n\
             grain = \"day\"\nstart = \"2026-01-01\"\n\
             sql = \"select dt from s where dt >= :start and dt < :end\"\n"
        );
        let parsed = crate::config::parse(config, &text, &|_| None).expect("a config");
        Backfill::of(parsed.jobs[0].clone(), vec![])
    }

    /// Two runs of one job that had not ended when idem stopped waiting
    /// (a server gone silent under them) read apart: each names its run
    /// and how far it had got, where both read the same line, naming
    /// neither what one had loaded.
    #[test]
    fn runs_that_had_not_ended_name_their_run_and_how_far_they_got() {
        let config = Path::new("/srv/etl/idem.toml");
        let first = unended_line(
            config,
            "orders",
            "run 20261204T154813.581-4679: 2 of 20 partitions loaded, 2 in flight when the console was left",
        );
        let second = unended_line(
            config,
            "orders",
            "run 20261204T154820.002-4679: none of 18 partitions loaded, 2 in flight when the console was left",
        );
        assert_ne!(first, second);
        assert!(
            first.starts_with(
                "orders: run 20261204T154813.581-4679: 2 of 20 partitions loaded, 2 in flight when the console was left; its run had not finished"
            ),
            "{first}"
        );
        assert!(
            first.ends_with("idem --config /srv/etl/idem.toml status orders"),
            "{first}"
        );
    }

    /// A run the console still showed in flight (its view lagging a fast
    /// run) that had ended before the quit is not said to be cancelled;
    /// one the quit stopped short is, and so is one that had not ended.
    #[test]
    fn a_run_that_ended_before_the_quit_is_not_said_cancelled() {
        let config = Path::new("/srv/etl/idem.toml");
        let args = |job: &str| RunArgs {
            config: Some(config.to_path_buf()),
            job: job.into(),
            ..RunArgs::default()
        };
        let steps = [backfill(config, "orders")];
        let finished = RunSummary {
            run_id: "r1".into(),
            succeeded: 3650,
            ..Default::default()
        };
        let finished = RunReport::of_console_run(
            &args("orders"),
            &steps,
            &[],
            &Ended::One(Box::new(finished)),
        );
        assert!(!finished.cut_short);
        let lines = left_by_the_console(config, std::slice::from_ref(&finished), &[]);
        assert_eq!(
            lines,
            [
                "a run the console still showed in flight had ended before the quit:",
                "orders: 3650 succeeded, 0 failed · run r1"
            ]
        );
        let stopped = RunSummary {
            run_id: "r2".into(),
            succeeded: 1,
            not_started: 2,
            rolled_back: 1,
            cancelled: true,
            unfinished: vec![day("2026-01-02"), day("2026-01-03")],
            ..Default::default()
        };
        let steps = [backfill(config, "events")];
        let stopped =
            RunReport::of_console_run(&args("events"), &steps, &[], &Ended::One(Box::new(stopped)));
        let never_began = RunReport::never_started(&args("daily"), None);
        let refused = RunReport::never_started(&args("weekly"), Some("no ledger"));
        let unended = [("hourly".to_string(), String::new())];
        let reports = [finished, stopped, never_began, refused];
        let lines = left_by_the_console(config, &reports, &unended);
        let heading = |text: &str| lines.iter().position(|l| l == text).expect(text);
        let ended = heading("2 runs the console still showed in flight had ended before the quit:");
        let cancelled = heading("the console was left with 3 runs in flight; they were cancelled:");
        let under = |text: &str| {
            let at = lines.iter().position(|l| l.starts_with(text)).expect(text);
            if at > cancelled { "cancelled" } else { "ended" }
        };
        assert!(ended < cancelled, "{lines:#?}");
        assert_eq!(under("orders: 3650 succeeded"), "ended", "{lines:#?}");
        assert_eq!(
            under("weekly: never started (refused"),
            "ended",
            "{lines:#?}"
        );
        assert_eq!(under("events: 1 succeeded"), "cancelled", "{lines:#?}");
        assert_eq!(under("daily: never started"), "cancelled", "{lines:#?}");
        assert_eq!(
            under("hourly: its run had not finished"),
            "cancelled",
            "{lines:#?}"
        );
    }

    /// A run the console's quit cancelled reads as `idem run` says it, and
    /// its repeat keeps the dialog's state filter and open windows, naming
    /// the console's config.
    #[test]
    fn a_console_run_cancelled_by_a_quit_is_reported_with_its_repeat() {
        let config = Path::new("/srv/etl/idem.toml");
        let args = RunArgs {
            config: Some(config.to_path_buf()),
            job: "orders".into(),
            only: vec!["missing".into()],
            allow_incomplete: true,
            ..RunArgs::default()
        };
        let summary = RunSummary {
            run_id: "r1".into(),
            succeeded: 1,
            not_started: 3,
            rolled_back: 1,
            cancelled: true,
            unfinished: vec![day("2026-01-02"), day("2026-01-03"), day("2026-01-04")],
            ..Default::default()
        };
        let steps = [backfill(config, "orders")];
        let report = RunReport::of_console_run(&args, &steps, &[], &Ended::One(Box::new(summary)));
        assert_eq!(
            report.outcomes,
            ["orders: 1 succeeded, 0 failed, 1 rolled back, 2 not started (cancelled) · run r1"]
        );
        assert_eq!(
            report.notes,
            [
                "to finish, repeat: idem --config /srv/etl/idem.toml run orders --only missing,failed --from 2026-01-02 --to 2026-01-04 --allow-incomplete"
            ]
        );
        assert_eq!(report.exit, Exit::Cancelled);
    }

    /// A cascade the quit cancelled before its second step began: both
    /// steps are said, and the repeat cascades.
    #[test]
    fn a_console_cascade_cancelled_by_a_quit_repeats_as_a_cascade() {
        let config = Path::new("/srv/etl/idem.toml");
        let args = RunArgs {
            config: Some(config.to_path_buf()),
            job: "hourly".into(),
            cascade: true,
            ..RunArgs::default()
        };
        let steps = [backfill(config, "hourly"), backfill(config, "daily")];
        let outcomes = vec![
            StepOutcome {
                added: Vec::new(),
                job: "hourly".into(),
                summary: Some(RunSummary {
                    run_id: "r2".into(),
                    not_started: 1,
                    cancelled: true,
                    unfinished: vec![day("2026-01-02")],
                    ..Default::default()
                }),
                skipped: vec![],
                not_started: vec![],
                left: Vec::new(),
                reads_not_loaded: Vec::new(),
            },
            StepOutcome {
                added: Vec::new(),
                job: "daily".into(),
                summary: None,
                skipped: vec![],
                not_started: vec![day("2026-01-02")],
                left: Vec::new(),
                reads_not_loaded: Vec::new(),
            },
        ];
        let report = RunReport::of_console_run(&args, &steps, &[], &Ended::Cascade(outcomes));
        assert_eq!(
            report.outcomes,
            [
                "hourly: 0 succeeded, 0 failed, 1 not started (cancelled) · run r2",
                "daily: nothing run, 1 not started (cancelled before its step began)"
            ]
        );
        assert!(
            report.notes.iter().any(|n| n
                == "to finish hourly, repeat: idem --config /srv/etl/idem.toml run hourly --from 2026-01-02 --to 2026-01-02 --cascade --yes"),
            "{:#?}",
            report.notes
        );
        assert_eq!(report.exit, Exit::Cancelled);
    }
}
