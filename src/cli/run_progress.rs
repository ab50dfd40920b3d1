//! How `idem run` shows its events as they come: JSON lines on stdout
//! (`--json`), a progress bar on a terminal's stderr, plain lines otherwise;
//! and the run logs that keep them.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::mpsc;

use super::Stop;
use super::output::{self, noteln};
use crate::config::Strategy;
use crate::engine::Event;
use crate::numbers::{NO_ROWS_CHANGED, n_partitions};

/// Shows a run's events as they come (progress bar, lines or JSON) and keeps
/// them in the run logs; ends when the run drops its sender.
pub(super) fn spawn_printer(
    url: &str,
    json: bool,
    total: u64,
    mut rx: mpsc::UnboundedReceiver<Event>,
) -> tokio::task::JoinHandle<Result<(), Stop>> {
    // A run keeps no log rather than stop (a job in a container, HOME
    // unset, a read-only state directory), but says so: `idem log --lines`
    // would find nothing later.
    let mut runlog = crate::runlog::RunLog::open(url)
        .inspect_err(|why| noteln!("idem: note: no run log kept: {why}"))
        .ok();
    tokio::spawn(async move {
        let mut progress = Progress::new(json, total);
        let mut strategies = Strategies::default();
        while let Some(event) = rx.recv().await {
            strategies.note(&event);
            if let Some(log) = &mut runlog {
                log.record(&event);
                if let Some(why) = log.failure() {
                    noteln!("idem: note: run log not kept: {why}");
                }
            }
            progress.show(&event, &strategies);
        }
        progress.finish()
    })
}

/// How run events are shown.
enum Progress {
    /// JSON lines on stdout, until a write fails.
    Json(Result<(), Stop>),
    /// The bar, and how many partitions failed so far.
    Bar(ProgressBar, usize),
    Lines,
}

impl Progress {
    fn new(json: bool, total: u64) -> Progress {
        if json {
            Progress::Json(Ok(()))
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            let template = "{bar:30} {pos}/{len} partitions · {elapsed} · ETA {eta} · {msg}";
            if let Ok(style) = ProgressStyle::with_template(&crate::terminal_text::shown(template))
            {
                bar.set_style(if crate::terminal_text::ascii_here() {
                    style.progress_chars("#>-")
                } else {
                    style
                });
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            Progress::Bar(bar, 0)
        } else {
            Progress::Lines
        }
    }

    fn show(&mut self, event: &Event, strategies: &Strategies) {
        match self {
            Progress::Json(written) => {
                if written.is_ok()
                    && let Ok(line) = event.to_json_line()
                {
                    *written = output::json(&line);
                }
            }
            Progress::Bar(bar, failed) => match event {
                Event::PartitionStarted { partition, .. } => {
                    let failures = match *failed {
                        0 => String::new(),
                        n => format!("{n} failed · "),
                    };
                    let message = format!("{failures}{partition}");
                    bar.set_message(crate::terminal_text::shown(&message).into_owned());
                }
                Event::PartitionSucceeded { .. } => bar.inc(1),
                Event::PartitionFailed {
                    will_retry: false, ..
                } => {
                    *failed += 1;
                    bar.println(described(event, strategies));
                    bar.inc(1);
                }
                Event::PartitionFailed { .. }
                | Event::PartitionLeft { .. }
                | Event::ConcurrencyLowered { .. } => bar.println(described(event, strategies)),
                Event::PartitionAdded { .. } => {
                    bar.inc_length(1);
                    bar.println(described(event, strategies));
                }
                _ => {}
            },
            Progress::Lines => {
                if let Some(line) = describe(event, strategies.of(event.job())) {
                    noteln!("{line}");
                }
            }
        }
    }

    /// Ends the display; an error if JSON events could not be written.
    fn finish(self) -> Result<(), Stop> {
        match self {
            Progress::Json(written) => written,
            Progress::Bar(bar, _) => {
                bar.finish_and_clear();
                Ok(())
            }
            Progress::Lines => Ok(()),
        }
    }
}

/// [`describe`] for the bar, which writes to the terminal past
/// [`output::note`]: shown as a note is, its control characters not obeyed.
fn described(event: &Event, strategies: &Strategies) -> String {
    let line = describe(event, strategies.of(event.job())).unwrap_or_default();
    crate::terminal_text::shown(&line).into_owned()
}

/// Each job's strategy, from its run's start (a cascade runs several), for
/// the words its loads' rows take.
#[derive(Default)]
struct Strategies(std::collections::HashMap<String, Strategy>);

impl Strategies {
    fn note(&mut self, event: &Event) {
        if let Event::RunStarted { job, strategy, .. } = event {
            self.0.insert(job.clone(), *strategy);
        }
    }

    fn of(&self, job: &str) -> Strategy {
        self.0
            .get(job)
            .copied()
            .unwrap_or(Strategy::ReplacePartition)
    }
}

/// What a load did to its rows, in its strategy's words: a replace deletes
/// the window and inserts it again; a merge deletes nothing, and inserts
/// or updates only rows whose values differ.
fn rows_done(strategy: Strategy, deleted: i64, inserted: i64, updated: i64) -> String {
    match strategy {
        Strategy::ReplacePartition => {
            let updated = match updated {
                0 => String::new(),
                n => format!(", updated {n}"),
            };
            format!("deleted {deleted} → inserted {inserted}{updated}")
        }
        Strategy::MergeKey if inserted + updated == 0 => NO_ROWS_CHANGED.to_string(),
        Strategy::MergeKey => format!("inserted {inserted}, updated {updated}"),
    }
}

/// A plain line for an event worth a line of its own; a load's rows in
/// its job's `strategy`'s words.
fn describe(event: &Event, strategy: Strategy) -> Option<String> {
    Some(match event {
        Event::RunStarted {
            job,
            partitions,
            concurrency,
            ..
        } => format!(
            "{job}: {}, concurrency {concurrency}",
            n_partitions(partitions.len() as i64)
        ),
        Event::PartitionSucceeded {
            partition,
            rows_deleted,
            rows_inserted,
            rows_updated,
            rows_after,
            duration_ms,
            content_changed,
            ..
        } => format!(
            "{partition} {} · {} · {:.1} s · {}",
            // A merge's rows may lie in other windows of the partition
            // column than the one it merged: written, it is not empty.
            if *rows_after > 0 || rows_inserted + rows_updated > 0 {
                "■ loaded"
            } else {
                "○ empty"
            },
            rows_done(strategy, *rows_deleted, *rows_inserted, *rows_updated),
            *duration_ms as f64 / 1000.0,
            if *content_changed {
                "content changed"
            } else {
                "content unchanged"
            }
        ),
        // A cancelled attempt did not fail: it rolled back, as the summary
        // says.
        Event::PartitionFailed {
            partition, attempt, ..
        } if matches!(
            event.attempt_end(),
            Some((_, crate::state::AttemptEnd::RolledBack))
        ) =>
        {
            format!("{partition} ↺ rolled back (attempt {attempt}) · cancelled before its COMMIT")
        }
        // Refused by the shrink guard, or for a lock another session held:
        // nothing changed, as the ledger says.
        Event::PartitionFailed {
            partition,
            attempt,
            error,
            cause,
            will_retry,
            ..
        } => format!(
            "{partition} {} {} (attempt {attempt}{}) · {}",
            if cause.refused() { '⊖' } else { '✗' },
            event.failure_word(),
            if *will_retry { ", will retry" } else { "" },
            one_line(error)
        ),
        Event::PartitionSkipped {
            job,
            partition,
            because,
        } => format!("{job} {partition} skipped · {because}"),
        Event::PartitionAdded {
            job,
            partition,
            because,
        } => format!("{job} {partition} added · {because}"),
        Event::PartitionLeft {
            job,
            partition,
            because,
        } => format!("{job} {partition} left out · {because}"),
        Event::ConcurrencyLowered {
            concurrency,
            asked,
            because,
            ..
        } => crate::engine::concurrency_lowered(*concurrency, *asked, because),
        _ => return None,
    })
}

/// The longest error a partition's line shows, in characters.
const ERROR_CHARS: usize = 500;

/// An error as one line of a run's output: its first line, cut at
/// [`ERROR_CHARS`] (room for idem's own longest, a lock's holder and the
/// statement that ends it), with "…" where anything was left out. A
/// server's error can run to many lines and kilobytes (a statement quoted
/// whole); the JSON events and the run log keep all of it.
fn one_line(error: &str) -> String {
    let error = error.trim();
    let first = error.lines().next().unwrap_or("").trim_end();
    let mut line: String = first.chars().take(ERROR_CHARS).collect();
    if line.len() < error.len() {
        line.push('…');
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::FailureCause;

    const REPLACE: Strategy = Strategy::ReplacePartition;

    #[test]
    fn a_cancelled_attempt_reads_as_rolled_back_not_failed() {
        let failed = |error: &str, cause| Event::PartitionFailed {
            run_id: "r".into(),
            job: "j".into(),
            partition: "2026-11-03".into(),
            attempt: 1,
            error: error.into(),
            cause,
            will_retry: false,
            duration_ms: 5,
        };
        assert_eq!(
            describe(
                &failed("cancelled; rolled back", FailureCause::Cancelled),
                REPLACE
            )
            .unwrap(),
            "2026-11-03 ↺ rolled back (attempt 1) · cancelled before its COMMIT"
        );
        assert_eq!(
            describe(
                &failed("relation \"t\" does not exist", FailureCause::Error),
                REPLACE
            )
            .unwrap(),
            "2026-11-03 ✗ failed (attempt 1) · relation \"t\" does not exist"
        );
    }

    /// QA: a partition whose lock another run held is recorded refused (it
    /// wrote nothing), but its line said "✗ failed".
    #[test]
    fn a_lock_held_elsewhere_reads_as_refused_retried_or_not() {
        let held = |will_retry: bool| Event::PartitionFailed {
            run_id: "r".into(),
            job: "j".into(),
            partition: "2026-11-03".into(),
            attempt: 2,
            error: "could not take the lock on partition 2026-11-03".into(),
            cause: FailureCause::LockHeld,
            will_retry,
            duration_ms: 5,
        };
        assert_eq!(
            describe(&held(true), REPLACE).unwrap(),
            "2026-11-03 ⊖ refused (attempt 2, will retry) · could not take the lock on partition 2026-11-03"
        );
        assert_eq!(
            describe(&held(false), REPLACE).unwrap(),
            "2026-11-03 ⊖ refused (attempt 2) · could not take the lock on partition 2026-11-03"
        );
    }

    fn succeeded(job: &str, deleted: i64, inserted: i64, updated: i64, after: i64) -> Event {
        Event::PartitionSucceeded {
            run_id: "r".into(),
            job: job.into(),
            partition: "2026-11-03".into(),
            attempt: 1,
            rows_deleted: deleted,
            rows_inserted: inserted,
            rows_updated: updated,
            rows_after: after,
            duration_ms: 5,
            fingerprint: String::new(),
            content_changed: true,
        }
    }

    #[test]
    fn a_merge_that_wrote_rows_elsewhere_is_not_called_empty() {
        let line = |e: Event| describe(&e, Strategy::MergeKey).unwrap();
        assert!(line(succeeded("j", 0, 1, 1, 0)).contains("■ loaded"));
        assert!(line(succeeded("j", 0, 0, 0, 0)).contains("○ empty"));
        assert!(line(succeeded("j", 0, 2, 0, 2)).contains("■ loaded"));
    }

    /// QA (new user, MariaDB): a merge's line read "deleted 0 → inserted
    /// 0" on a re-run, a replace's words for a strategy that deletes
    /// nothing. Each job's line takes its own strategy's words, in a
    /// cascade of both too.
    #[test]
    fn a_loads_rows_are_said_in_its_jobs_strategys_words() {
        let started = |job: &str, strategy| Event::RunStarted {
            run_id: "r".into(),
            job: job.into(),
            strategy,
            partitions: vec!["2026-11-03".into()],
            concurrency: 1,
            reason: None,
            upstream_not_loaded: Vec::new(),
            upstream_unread: Vec::new(),
        };
        let mut strategies = Strategies::default();
        strategies.note(&started("fct", Strategy::ReplacePartition));
        strategies.note(&started("dim", Strategy::MergeKey));
        let line = |e: Event| described(&e, &strategies);
        assert_eq!(
            line(succeeded("fct", 3, 4, 0, 4)),
            "2026-11-03 ■ loaded · deleted 3 → inserted 4 · 0.0 s · content changed"
        );
        assert_eq!(
            line(succeeded("dim", 0, 1, 2, 7)),
            "2026-11-03 ■ loaded · inserted 1, updated 2 · 0.0 s · content changed"
        );
        assert_eq!(
            line(succeeded("dim", 0, 0, 0, 7)),
            "2026-11-03 ■ loaded · no rows changed · 0.0 s · content changed"
        );
    }

    #[test]
    fn a_long_error_is_one_line_of_a_readable_length() {
        let failed = |error: String| Event::PartitionFailed {
            run_id: "r".into(),
            job: "j".into(),
            partition: "2026-11-03".into(),
            attempt: 1,
            error,
            cause: FailureCause::Error,
            will_retry: false,
            duration_ms: 5,
        };
        let huge = format!(
            "syntax error at or near \"x\"\n{}",
            "LINE 1: select ... x ...\n".repeat(9_000)
        );
        assert!(huge.len() > 180_000);
        let line = describe(&failed(huge), REPLACE).unwrap();
        assert_eq!(
            line,
            "2026-11-03 ✗ failed (attempt 1) · syntax error at or near \"x\"…"
        );
        let wide = "y".repeat(5_000);
        let line = describe(&failed(wide), REPLACE).unwrap();
        assert!(!line.contains('\n'));
        assert!(line.ends_with('…'), "{line}");
        assert!(line.chars().count() < 600, "{}", line.chars().count());
    }
}
