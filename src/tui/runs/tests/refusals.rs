//! How refused partitions read in a run's rows, gauge and ending.

use super::*;

/// QA: a partition whose lock another run held is recorded refused (it
/// wrote nothing), but its row said "✗ failed" and the run's ending
/// counted it among the failures. It reads refused, and apart from the
/// shrink guard's refusals (no `S` would help it).
#[test]
fn a_lock_held_elsewhere_reads_refused_apart_from_the_shrink_guard() {
    let mut r = run();
    let held = "could not take the lock on partition 2026-06-03";
    r.apply(
        &ended("2026-06-03", held, FailureCause::LockHeld, true),
        now(),
    );
    assert_eq!(r.partitions[0].state, RunPartState::Retrying);
    r.apply(
        &ended("2026-06-03", held, FailureCause::LockHeld, false),
        now(),
    );
    assert_eq!(r.partitions[0].state, RunPartState::LockHeld);
    assert_eq!(r.partitions[0].state.label(), ("refused", '⊖'));
    let said = r.logs.of(0).back().cloned().unwrap_or_default();
    assert_eq!(said, format!("refused: {held}"));
    r.apply(
        &finished(Finish {
            failed: 1,
            ..Finish::default()
        }),
        now(),
    );
    let gauge = r.summary(now());
    assert!(gauge.contains("· 0 failed · 1 refused"), "{gauge}");
    let (_, ending) = r.ending().expect("ended");
    assert!(
        ending.starts_with(
            "run of fct_orders finished: 0 succeeded, 0 failed, 1 refused for a lock held elsewhere"
        ),
        "{ending}"
    );
    assert!(!ending.contains("shrink"), "{ending}");
}

/// A refusal by the shrink guard reads as refused in the gauge as in the
/// status bar, not among the failures, and in its log (QA: "failed: …",
/// as the run log said); a partition loaded empty is said, as a late
/// source loads so.
#[test]
fn refusals_and_empty_loads_read_apart_in_the_gauge_and_the_ending() {
    let mut r = run();
    r.apply(
        &ended(
            "2026-06-03",
            "source looks incomplete: would replace 2 rows with 0",
            FailureCause::ShrinkGuard,
            false,
        ),
        now(),
    );
    let said = r.logs.of(0).back().cloned().unwrap_or_default();
    assert_eq!(
        said,
        "refused: source looks incomplete: would replace 2 rows with 0"
    );
    r.apply(
        &event("2026-06-08", |partition| Event::PartitionSucceeded {
            run_id: "r".into(),
            job: "fct_orders".into(),
            partition,
            attempt: 2,
            rows_deleted: 0,
            rows_inserted: 0,
            rows_updated: 0,
            rows_after: 0,
            duration_ms: 10,
            fingerprint: String::new(),
            content_changed: false,
        }),
        now(),
    );
    assert!(
        r.summary(now()).contains("2/2 · 0 failed · 1 refused"),
        "{}",
        r.summary(now())
    );
    r.apply(
        &finished(Finish {
            succeeded: 1,
            failed: 1,
            refused: 1,
            empty: 1,
            ..Finish::default()
        }),
        now(),
    );
    let gauge = r.summary(now());
    assert!(
        gauge.starts_with("finished: 1/2 succeeded (1 loaded empty) · 0 failed · 1 refused"),
        "{gauge}"
    );
    let (bad, ending) = r.ending().expect("ended");
    assert!(bad);
    assert!(
        ending.starts_with(
            "run of fct_orders finished: 1 succeeded (1 loaded empty: a late source?), 0 failed, 1 refused by the shrink guard"
        ),
        "{ending}"
    );
    // A merge window in which no row changed is usual for change data,
    // not a late source.
    r.strategy = crate::config::Strategy::MergeKey;
    let (_, ending) = r.ending().expect("ended");
    assert!(
        ending.starts_with("run of fct_orders finished: 1 succeeded (1 merged no rows), 0 failed"),
        "{ending}"
    );
    // Empty before the run too: no news (QA: the console said it, the CLI
    // did not).
    r.empty_before(|name| name == "2026-06-08");
    let (_, ending) = r.ending().expect("ended");
    assert!(!ending.contains("empty"), "{ending}");
    assert!(!r.summary(now()).contains("empty"), "{}", r.summary(now()));
}
