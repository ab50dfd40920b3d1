//! How a merge job's loads read in its run's rows.

use super::*;

/// QA: a merge job's load read as a replace's "−0 → +3", as if it had
/// deleted its window: a merge deletes nothing. It reads inserted and
/// updated ("+3 ~1"), and "no rows changed", as the headless run says,
/// when it found every row as it was.
#[test]
fn a_merge_reads_inserted_and_updated_and_says_when_it_changed_nothing() {
    let job = job_view("dim_customers", true, "■■✗■■■■✗■■");
    let selection = Selection {
        only: vec![LoadState::Failed],
        ..Selection::default()
    };
    let backfill = Backfill::plan_from(&job.job, &selection, &job.statuses, now(), 4, 2).unwrap();
    let mut r = RunView::new(1, &backfill, now());
    let names: Vec<String> = r.partitions.iter().map(|p| p.name.clone()).collect();
    assert_eq!(names.len(), 2);
    for (name, inserted, updated, changed) in [(&names[0], 3, 1, true), (&names[1], 0, 0, false)] {
        r.apply(
            &Event::PartitionSucceeded {
                run_id: "r".into(),
                job: "dim_customers".into(),
                partition: name.clone(),
                attempt: 1,
                rows_deleted: 0,
                rows_inserted: inserted,
                rows_updated: updated,
                rows_after: 40,
                duration_ms: 10,
                fingerprint: "f".into(),
                content_changed: changed,
            },
            now(),
        );
    }
    let area = Rect::new(0, 0, 80, 12);
    let shown = draw(80, 12, |f| {
        render(
            f,
            area,
            &Theme::default_theme(),
            std::slice::from_ref(&r),
            0,
            true,
            now(),
        )
    });
    let row = |name: &str| {
        shown
            .lines()
            .find(|l| l.contains(name) && !l.contains("log"))
            .unwrap_or_default()
            .to_string()
    };
    assert!(row(&names[0]).contains(" +3 ~1 · changed"), "{shown}");
    let unchanged = row(&names[1]);
    assert!(unchanged.contains(" no rows changed"), "{shown}");
    assert!(!unchanged.contains("same content"), "said once: {shown}");
    assert!(!shown.contains('→'), "{shown}");
}
