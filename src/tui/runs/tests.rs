//! The run pane's own tests: rows through their states, bounded logs,
//! drawing and hit-testing.

use ratatui::layout::Rect;

use super::*;
use crate::engine::{FailureCause, Selection};
use crate::state::LoadState;
use crate::tui::fixture::{draw, job_view, now};
use crate::tui::layout::Hit;
use crate::tui::run_logs::LOG_LINES;
use crate::tui::theme::Theme;

mod merge;
mod refusals;
mod upstream;

pub(super) fn run() -> RunView {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let selection = Selection {
        only: vec![LoadState::Failed],
        ..Selection::default()
    };
    let backfill = Backfill::plan_from(&job.job, &selection, &job.statuses, now(), 4, 2).unwrap();
    RunView::new(1, &backfill, now())
}

/// The counts of a run's end, each 0 unless given.
#[derive(Default)]
pub(super) struct Finish {
    pub(super) succeeded: usize,
    pub(super) failed: usize,
    pub(super) not_started: usize,
    pub(super) refused: usize,
    pub(super) empty: usize,
    pub(super) cancelled: bool,
}

/// The end of `fct_orders`' run `r` with these counts.
pub(super) fn finished(f: Finish) -> Event {
    Event::RunFinished {
        run_id: "r".into(),
        job: "fct_orders".into(),
        succeeded: f.succeeded,
        failed: f.failed,
        not_started: f.not_started,
        rolled_back: 0,
        refused: f.refused,
        lock_held: 0,
        empty: f.empty,
        cancelled: f.cancelled,
        duration_ms: 30,
    }
}

fn event(partition: &str, f: impl FnOnce(String) -> Event) -> Event {
    f(partition.to_string())
}

/// The end of `partition`'s second attempt in `error` (`will_retry`: a
/// transient one, retried).
fn failed(partition: &str, error: &str, will_retry: bool) -> Event {
    ended(partition, error, FailureCause::Error, will_retry)
}

/// The end of `partition`'s second attempt in `error`, for `cause`.
fn ended(partition: &str, error: &str, cause: FailureCause, will_retry: bool) -> Event {
    let error = error.to_string();
    event(partition, |partition| Event::PartitionFailed {
        run_id: "r".into(),
        job: "fct_orders".into(),
        partition,
        attempt: 2,
        error,
        cause,
        will_retry,
        duration_ms: 10,
    })
}

/// The start of `partition`'s second attempt.
pub(super) fn started(partition: &str) -> Event {
    event(partition, |partition| Event::PartitionStarted {
        run_id: "r".into(),
        job: "fct_orders".into(),
        partition,
        attempt: 2,
    })
}

#[test]
fn events_move_rows_through_their_states() {
    let mut r = run();
    assert_eq!(r.partitions.len(), 2);
    // The fixture's warehouse is SQLite: one writer.
    assert_eq!(r.concurrency, 1);
    r.apply(&started("2026-06-03"), now());
    assert_eq!(r.partitions[0].state, RunPartState::Running);
    r.apply(&failed("2026-06-03", "database is locked", true), now());
    assert_eq!(r.partitions[0].state, RunPartState::Retrying);
    assert_eq!(
        r.logs.of(0).iter().collect::<Vec<_>>(),
        ["attempt 2", "will retry: database is locked"]
    );
    r.apply(
        &finished(Finish {
            failed: 1,
            not_started: 1,
            cancelled: true,
            ..Finish::default()
        }),
        now(),
    );
    assert!(!r.active());
    // Cancelled before its retry: its last attempt failed, and the ledger
    // says so (it read "cancelled", as if nothing had been tried).
    assert_eq!(r.partitions[0].state, RunPartState::Failed);
    assert_eq!(r.partitions[1].state, RunPartState::Cancelled);
    assert_eq!(
        r.ending(),
        Some((
            true,
            "run of fct_orders cancelled: 0 succeeded, 1 failed, 1 not started".into()
        ))
    );
}

/// A partition in flight shows how long it has been at it, and the clock
/// moves with the console's: a load waiting out a connect timeout is not a
/// frozen row.
#[test]
fn a_running_partition_shows_its_clock() {
    let mut runs = vec![run()];
    runs[0].apply(&started("2026-06-03"), now());
    let area = Rect::new(0, 0, 110, 12);
    let row_at = |later: chrono::Duration| {
        let screen = draw(110, 12, |f| {
            render(
                f,
                area,
                &Theme::default_theme(),
                &runs,
                0,
                true,
                now() + later,
            )
        });
        screen
            .lines()
            .find(|l| l.contains("2026-06-03"))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| panic!("no row for 2026-06-03: {screen}"))
    };
    let first = row_at(chrono::Duration::zero());
    assert!(first.contains("2026-06-03 running 0 s"), "{first}");
    let later = row_at(chrono::Duration::milliseconds(12_400));
    assert!(later.contains("2026-06-03 running 12 s"), "{later}");
    let much_later = row_at(chrono::Duration::seconds(95));
    assert!(
        much_later.contains("2026-06-03 running 1m35s"),
        "{much_later}"
    );
}

#[test]
fn logs_are_bounded() {
    let mut r = run();
    for k in 0..LOG_LINES + 5 {
        r.apply(
            &Event::PartitionLog {
                run_id: "r".into(),
                job: "fct_orders".into(),
                partition: "2026-06-08".into(),
                line: format!("line {k}"),
            },
            now(),
        );
    }
    assert_eq!(r.logs.of(1).len(), LOG_LINES);
    assert_eq!(r.logs.of(1).front().map(String::as_str), Some("line 5"));
}

#[test]
fn the_pane_draws_runs_rows_and_log_and_clicks_find_them() {
    let mut runs = vec![run(), run()];
    runs[1].id = 2;
    let mut selected = 1;
    direction(&mut runs, &mut selected, Action::Down, None);
    assert_eq!(runs[1].selected, 1);
    direction(&mut runs, &mut selected, Action::Left, None);
    assert_eq!(selected, 0);
    let area = Rect::new(0, 0, 110, 12);
    let screen = draw(110, 12, |f| {
        render(f, area, &Theme::default_theme(), &runs, 0, true, now())
    });
    assert!(screen.contains("Runs (2)"), "{screen}");
    assert!(screen.contains("▶ #1 fct_orders 0/2"), "{screen}");
    assert!(screen.contains("· 2026-06-03"), "{screen}");
    assert!(screen.contains("log 2026-06-03"), "{screen}");
    assert_eq!(hit(&runs, 0, area, 3, 1), Some(Hit::Run(0)));
    assert_eq!(hit(&runs, 0, area, 30, 1), Some(Hit::Run(1)));
    assert_eq!(hit(&runs, 0, area, 3, 4), Some(Hit::RunRow(1)));
    assert_eq!(hit(&runs, 0, area, 3, 2), None);
}

fn log_line(r: &mut RunView, line: &str) {
    r.apply(
        &Event::PartitionLog {
            run_id: "r".into(),
            job: "fct_orders".into(),
            partition: "2026-06-03".into(),
            line: line.into(),
        },
        now(),
    );
}

/// One long error fills the log pane and more: `[` pages back through it,
/// row by row as drawn, to the lines before it, which stay put while
/// lines arrive; Home goes to the first line, no further; `]` back to the
/// end follows again, as End does.
#[test]
fn the_log_scrolls_back_and_stays_pinned_at_the_end() {
    let mut runs = vec![run()];
    let mut selected = 0;
    for line in ["BEGIN", "lock partition", "DELETE 12 rows"] {
        log_line(&mut runs[0], line);
    }
    let words: Vec<String> = (0..60).map(|k| format!("key{k:02}")).collect();
    log_line(&mut runs[0], &format!("ERROR {}", words.join(" ")));
    let area = Rect::new(0, 0, 110, 12);
    let log = log_text_area(area);
    assert_eq!(log.map(|l| l.height), Some(6));
    let screen = |runs: &[RunView]| {
        draw(110, 12, |f| {
            render(f, area, &Theme::default_theme(), runs, 0, true, now())
        })
    };
    let s = screen(&runs);
    assert!(!s.contains("BEGIN") && s.contains("key59"), "{s}");
    // QA: followed, the box opened on the tail of the error, mid-line,
    // with nothing said of what is above it: the 3 lines before it, and
    // the error itself, in part.
    assert!(s.contains("log 2026-06-03 · 4 older above ([) "), "{s}");
    // Every word of the error comes into view on the way back.
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..10 {
        let s = screen(&runs);
        seen.extend(words.iter().filter(|w| s.contains(w.as_str())).cloned());
        direction(&mut runs, &mut selected, Action::PrevMonth, log);
    }
    let s = screen(&runs);
    assert!(words.iter().all(|w| seen.contains(w)), "{seen:?}");
    assert!(s.contains("│BEGIN") && s.contains("│ERROR key00"), "{s}");
    assert!(!s.contains("older above"), "{s}");
    assert!(s.contains("1 newer below (] or G)"), "{s}");
    log_line(&mut runs[0], "ROLLBACK");
    let s = screen(&runs);
    assert!(s.contains("│BEGIN") && !s.contains("ROLLBACK"), "{s}");
    assert!(s.contains("2 newer below"), "{s}");
    direction(&mut runs, &mut selected, Action::Last, log);
    direction(&mut runs, &mut selected, Action::First, log);
    assert_eq!(screen(&runs), s, "Home goes to the first line, no further");
    for _ in 0..10 {
        direction(&mut runs, &mut selected, Action::NextMonth, log);
    }
    assert_eq!(runs[0].log_back, LogBack::default());
    log_line(&mut runs[0], "retrying");
    let s = screen(&runs);
    assert!(s.contains("retrying") && !s.contains("newer below"), "{s}");
    direction(&mut runs, &mut selected, Action::PrevMonth, log);
    direction(&mut runs, &mut selected, Action::Last, log);
    assert_eq!(runs[0].log_back, LogBack::default());
}

/// A log no longer than its box does not scroll: there is nothing above
/// its first line to show but blank rows.
#[test]
fn a_log_that_fits_its_box_does_not_scroll() {
    let mut runs = vec![run()];
    let mut selected = 0;
    for line in ["BEGIN", "DELETE 12 rows", "COMMIT"] {
        log_line(&mut runs[0], line);
    }
    let log = log_text_area(Rect::new(0, 0, 110, 12));
    for action in [Action::PrevMonth, Action::First] {
        direction(&mut runs, &mut selected, action, log);
        assert_eq!(runs[0].log_back, LogBack::default(), "{action:?}");
    }
}

/// A run whose every partition failed does not look like one whose every
/// partition succeeded: the gauge takes the error style and its label a ✗.
#[test]
fn the_gauge_shows_the_outcome_not_only_the_progress() {
    let t = Theme::default_theme();
    let area = Rect::new(0, 0, 110, 12);
    let finish = |failed: usize| {
        let mut r = run();
        r.apply(
            &finished(Finish {
                succeeded: 2 - failed,
                failed,
                ..Finish::default()
            }),
            now(),
        );
        r
    };
    let gauge_cell = |runs: &[RunView]| {
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(110, 12)).unwrap();
        term.draw(|f| render(f, area, &t, runs, 0, true, now()))
            .unwrap();
        let buf = term.backend().buffer().clone();
        let line: String = (0..110).map(|x| buf[(x, 2)].symbol().to_string()).collect();
        (line, buf[(1, 2)].style())
    };
    let (ok_line, ok_style) = gauge_cell(&[finish(0)]);
    let (failed_line, failed_style) = gauge_cell(&[finish(2)]);
    assert!(ok_line.contains("✓ finished: 2/2 succeeded"), "{ok_line}");
    assert!(
        failed_line.contains("✗ finished: 0/2 succeeded · 2 failed"),
        "{failed_line}"
    );
    assert_ne!(ok_style, failed_style);
    assert_eq!(failed_style.fg, t.style("error").fg);
}

/// With more runs than the strip holds, it scrolls to show the selected
/// run's tab whole, marks the runs out to the left, and clicks hit the tabs
/// as drawn.
#[test]
fn the_run_strip_scrolls_to_the_selected_run() {
    let mut runs: Vec<RunView> = (1..=7).map(|_| run()).collect();
    for (k, r) in runs.iter_mut().enumerate() {
        r.id = k + 1;
    }
    let area = Rect::new(0, 0, 120, 12);
    let t = Theme::default_theme();
    let screen = draw(120, 12, |f| render(f, area, &t, &runs, 6, true, now()));
    let strip = screen.lines().nth(1).unwrap_or("");
    assert!(strip.contains("▶ #7 fct_orders 0/2"), "{screen}");
    assert!(strip.starts_with("┃‹ ▶ #"), "{screen}");
    assert!(!strip.contains("#1 "), "{screen}");
    let x7 = strip.chars().position(|c| c == '7').unwrap_or(0) as u16;
    assert_eq!(hit(&runs, 6, area, x7, 1), Some(Hit::Run(6)));
    let screen = draw(120, 12, |f| render(f, area, &t, &runs, 0, true, now()));
    assert!(
        screen.lines().nth(1).unwrap_or("").starts_with("┃ ▶ #1"),
        "{screen}"
    );
}

/// A row's error longer than the table ends in "…".
#[test]
fn a_cut_row_ends_in_an_ellipsis() {
    let mut r = run();
    r.apply(
        &Event::PartitionFailed {
            run_id: "r".into(),
            job: "fct_orders".into(),
            partition: "2026-06-03".into(),
            attempt: 2,
            error: format!(
                "duplicate key value violates unique constraint {}",
                "x".repeat(80)
            ),
            cause: FailureCause::Error,
            will_retry: false,
            duration_ms: 10,
        },
        now(),
    );
    let area = Rect::new(0, 0, 110, 12);
    let screen = draw(110, 12, |f| {
        render(f, area, &Theme::default_theme(), &[r], 0, true, now())
    });
    let row = screen
        .lines()
        .find(|l| l.contains("2026-06-03    failed"))
        .unwrap_or("");
    assert!(row.contains("duplicate key value v… ┌ log"), "{screen}");
}

/// The skip of `partition` by a cascade, an upstream partition it reads
/// having failed.
fn skipped(partition: &str) -> Event {
    event(partition, |partition| Event::PartitionSkipped {
        job: "fct_orders".into(),
        partition,
        because: "stg_orders 2026-06-03 did not load".into(),
    })
}

/// A cascade step left out because what it reads failed upstream is no
/// success: it reads as skipped in its tab, its gauge and the status bar,
/// never with a ✓ over partitions that did not load (a headless cascade
/// exits 1).
#[test]
fn a_cascade_step_skipped_upstream_reads_as_skipped_not_succeeded() {
    let draw_runs = |runs: &[RunView]| {
        draw(220, 8, |f| {
            render(
                f,
                Rect::new(0, 0, 220, 8),
                &Theme::default_theme(),
                runs,
                0,
                true,
                now(),
            )
        })
    };
    // Every partition of the step skipped: the step never starts.
    let mut all = run();
    all.apply(&skipped("2026-06-03"), now());
    all.apply(&skipped("2026-06-08"), now());
    all.apply(
        &Event::StepSkipped {
            job: "fct_orders".into(),
            partitions: vec!["2026-06-03".into(), "2026-06-08".into()],
            cancelled: false,
        },
        now(),
    );
    assert!(!all.active());
    let screen = draw_runs(std::slice::from_ref(&all));
    assert!(!screen.contains('✓'), "{screen}");
    assert!(screen.contains("– #1 fct_orders 0/2"), "{screen}");
    assert!(
        screen.contains(
            "finished: 0/2 succeeded · 0 failed · 2 skipped: what they read did not load"
        ),
        "{screen}"
    );
    assert!(!screen.contains("not started"), "{screen}");
    assert!(screen.contains("skipped   "), "{screen}");
    // One skipped, the other loaded: the ending says so, as bad news.
    let mut some = run();
    some.apply(&skipped("2026-06-03"), now());
    some.apply(&started("2026-06-08"), now());
    some.apply(
        &finished(Finish {
            succeeded: 1,
            ..Finish::default()
        }),
        now(),
    );
    assert_eq!(
        some.ending(),
        Some((
            true,
            "run of fct_orders finished: 1 succeeded, 0 failed, 1 skipped: what they read did not load"
                .into()
        ))
    );
    let screen = draw_runs(std::slice::from_ref(&some));
    assert!(screen.contains("– #1 fct_orders 1/2"), "{screen}");
}

/// A partition retrying a transient error says which retry it is on and
/// what the attempt before met, and one that failed after retries says how
/// many attempts it took: the row read "running 0 s" on each new attempt
/// and "failed 5.0 s" at the end, as if once, under a lock held for minutes.
/// The count is this run's: the ledger's attempt numbers go on from the
/// runs before.
#[test]
fn a_retried_partition_says_its_retry_and_its_attempts() {
    let mut r = run();
    assert_eq!(r.retries, 2);
    let lock = "canceling statement due to lock timeout";
    let screen = |r: &RunView| {
        draw(220, 8, |f| {
            render(
                f,
                Rect::new(0, 0, 220, 8),
                &Theme::default_theme(),
                std::slice::from_ref(r),
                0,
                true,
                now(),
            )
        })
    };
    // Attempt 2 in the ledger, this run's first: no retry.
    r.apply(&started("2026-06-03"), now());
    let s = screen(&r);
    assert!(!s.contains("retry"), "{s}");
    r.apply(&failed("2026-06-03", lock, true), now());
    r.apply(&started("2026-06-03"), now());
    let s = screen(&r);
    assert!(
        s.contains("retry 1 of 2 · after: canceling statement due to lock"),
        "{s}"
    );
    r.apply(&failed("2026-06-03", lock, true), now());
    r.apply(&started("2026-06-03"), now());
    assert!(
        screen(&r).contains("retry 2 of 2 · after: "),
        "{}",
        screen(&r)
    );
    r.apply(&failed("2026-06-03", lock, false), now());
    let s = screen(&r);
    assert!(
        s.contains("failed") && s.contains("after 3 attempts: canceling statement"),
        "{s}"
    );
}

/// A cascade cancelled in its first step: the status bar says so for the
/// whole of it, the step the cancel kept from starting by name, once that
/// step has ended too; while it has not, there is no cascade ending yet.
#[test]
fn a_cancelled_cascade_names_the_step_it_kept_from_starting() {
    let mut root = run();
    root.cascade = Some(1);
    let mut step = run();
    step.id = 2;
    step.job = "agg_daily".into();
    step.cascade = Some(1);
    root.apply(
        &finished(Finish {
            succeeded: 1,
            not_started: 1,
            cancelled: true,
            ..Finish::default()
        }),
        now(),
    );
    assert_eq!(cascade_ending(&[&root, &step]), None);
    step.rejected("agg_daily: cancelled before it started");
    assert_eq!(
        cascade_ending(&[&root, &step]),
        Some((
            true,
            "cascade from fct_orders cancelled: fct_orders: 1 succeeded, 0 failed, 1 not started · agg_daily: not started"
                .into()
        ))
    );
    // Refused before any step began: the refusal says why, not this.
    let (mut a, mut b) = (run(), run());
    a.rejected("cannot connect");
    b.rejected("cannot connect");
    assert_eq!(cascade_ending(&[&a, &b]), None);
}

/// QA: a server's error echoing data (an escape sequence, a DETAIL line)
/// drew with its line break and escape dropped by the terminal, words
/// glued ("row 2DETAIL"); a log scrolled back moved by one line for it.
/// A run whose log could not be kept on disk said nothing of it.
#[test]
fn an_error_of_several_lines_reads_as_lines_and_a_log_not_kept_says_so() {
    let mut runs = vec![run()];
    let mut selected = 0;
    let area = Rect::new(0, 0, 110, 12);
    let log = log_text_area(area);
    log_line(&mut runs[0], "BEGIN");
    for k in 0..8 {
        log_line(&mut runs[0], &format!("DELETE {k} row"));
    }
    direction(&mut runs, &mut selected, Action::PrevMonth, log);
    let back = runs[0].log_back;
    log_line(
        &mut runs[0],
        "ROLLBACK: bad \u{1b}[31mred\u{1b}[0m at row 2\nDETAIL: second",
    );
    assert_eq!(
        runs[0].log_back.lines,
        back.lines + 2,
        "the lines shown stay put"
    );
    direction(&mut runs, &mut selected, Action::Last, log);
    runs[0].log_not_kept = Some("cannot write /s/fct/2026-06-03.log: disk full".into());
    let s = draw(110, 12, |f| {
        render(f, area, &Theme::default_theme(), &runs, 0, true, now())
    });
    assert!(
        s.contains("ROLLBACK: bad \\u{1b}[31mred\\u{1b}[0m at row 2"),
        "{s}"
    );
    assert!(s.contains("│DETAIL: second"), "{s}");
    assert!(s.contains("log 2026-06-03 · not kept on disk"), "{s}");
}

/// A partition a cascade adds to a step before it begins (a merge upstream
/// moved rows in or out of what it reads) joins the step's rows in its
/// place, queued, its log saying why; the rows and logs there were stay
/// with their partitions, and the row under the cursor stays under it.
#[test]
fn a_partition_added_to_a_cascade_step_joins_its_rows() {
    let mut r = run();
    r.selected = 1;
    r.apply(
        &event("2026-06-08", |partition| Event::PartitionLog {
            run_id: "r".into(),
            job: "fct_orders".into(),
            partition,
            line: "BEGIN".into(),
        }),
        now(),
    );
    r.apply(
        &event("2026-06-05", |partition| Event::PartitionAdded {
            job: "fct_orders".into(),
            partition,
            because:
                "stg_orders 2026-06-05 changed: its merge of 2026-06-08 moved rows in or out of it"
                    .into(),
        }),
        now(),
    );
    let names: Vec<&str> = r.partitions.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["2026-06-03", "2026-06-05", "2026-06-08"]);
    assert_eq!(r.partitions[1].state, RunPartState::Queued);
    assert_eq!(r.partitions[r.selected].name, "2026-06-08");
    assert_eq!(r.logs.of(2), &["BEGIN".to_string()]);
    assert_eq!(
        r.logs.of(1),
        &["added to the cascade: stg_orders 2026-06-05 changed: its merge of 2026-06-08 moved rows in or out of it".to_string()]
    );
    r.apply(&started("2026-06-05"), now());
    assert_eq!(r.partitions[1].state, RunPartState::Running);
    assert!(r.label().ends_with(" 0/3 "), "{}", r.label());
}

/// A window a cascade leaves because it has not ended (a merge upstream
/// moved rows into it) joins the step's rows as skipped, never queued as if
/// it would run, its error and log saying why.
#[test]
fn a_window_a_cascade_leaves_not_ended_joins_its_rows_as_skipped() {
    let mut r = run();
    let because = "stg_orders 2026-06-09 changed: its merge of 2026-06-08 moved rows in or out of it; this window has not ended yet (until 2026-06-10 00:00 UTC), so the cascade leaves it";
    r.apply(
        &event("2026-06-09", |partition| Event::PartitionLeft {
            job: "fct_orders".into(),
            partition,
            because: because.into(),
        }),
        now(),
    );
    let left = r.row("2026-06-09").expect("a row of its own");
    assert_eq!(r.partitions[left].state, RunPartState::Skipped);
    assert_eq!(
        r.partitions[left].error.as_deref(),
        Some(format!("left out: {because}").as_str())
    );
    assert_eq!(
        r.logs.of(left),
        &[format!("left out of the cascade: {because}")]
    );
}

/// The warehouse's refusal of a connection lowers the run's partitions in
/// flight: the run's line says so while it goes on.
#[test]
fn a_run_the_warehouse_refused_a_connection_says_how_many_run_at_once() {
    let mut r = run();
    assert!(!r.summary(now()).contains("at once"));
    r.apply(
        &Event::ConcurrencyLowered {
            run_id: "r".into(),
            job: "fct_orders".into(),
            concurrency: 3,
            asked: 4,
            because: "too many connections for role \"lim\"".into(),
        },
        now(),
    );
    assert_eq!(r.concurrency, 3);
    assert!(
        r.summary(now()).contains("3 at once: connection limit"),
        "{}",
        r.summary(now())
    );
    assert_eq!(
        r.lowered.as_deref(),
        Some(
            "the warehouse limits connections (too many connections for role \"lim\"): 3 partitions at once from here on, of --concurrency 4 asked"
        )
    );
}
