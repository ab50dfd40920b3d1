//! How a run's windows over upstream partitions not loaded read in its
//! rows and logs.

use super::*;
use crate::engine::cascade::PartlyRead;
use crate::partition::{Grain, Partition};

/// QA: the confirm dialog said a day read only some of its upstream hours,
/// but once the run started nothing in the runs pane did: an operator
/// glancing at the run later took its output for whole. Its row carries a
/// mark, before and after it loads, and its log says what is missing.
#[test]
fn a_window_over_upstream_not_loaded_says_so_in_its_row_and_log() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let selection = Selection {
        only: vec![LoadState::Failed],
        ..Selection::default()
    };
    let mut backfill =
        Backfill::plan_from(&job.job, &selection, &job.statuses, now(), 4, 2).unwrap();
    let window = backfill.partitions[0];
    let hour = |h: u32| {
        Partition::containing(
            Grain::Hour,
            window.start + chrono::Duration::hours(h.into()),
        )
    };
    backfill.reads_not_loaded = vec![PartlyRead {
        window,
        upstream: "raw_events".into(),
        under: 24,
        not_loaded: (5..24).map(|h| (hour(h), LoadState::Missing)).collect(),
        beyond: Vec::new(),
    }];
    let mut r = RunView::new(1, &backfill, now());
    let area = Rect::new(0, 0, 80, 12);
    let shown = |r: &RunView| {
        draw(80, 12, |f| {
            render(
                f,
                area,
                &Theme::default_theme(),
                std::slice::from_ref(r),
                0,
                true,
                now(),
            )
        })
    };
    let row = |screen: &str, name: &str| {
        screen
            .lines()
            .find(|l| l.contains(name) && !l.contains("log"))
            .unwrap_or_default()
            .to_string()
    };
    let queued = shown(&r);
    let (partly, whole) = (window.name(), backfill.partitions[1].name());
    assert!(
        row(&queued, &partly).contains("⚠ upstream not all loaded"),
        "{queued}"
    );
    assert!(!row(&queued, &whole).contains('⚠'), "{queued}");
    // Its log says which, and what becomes of it.
    let said = r.logs.of(0).front().cloned().unwrap_or_default();
    assert!(
        said.starts_with(&format!(
            "upstream not all loaded: fct_orders {partly} reads 5 of its 24 raw_events hours loaded (19 missing"
        )),
        "{said}"
    );
    assert!(
        said.contains("stale (upstream) once the rest loads"),
        "{said}"
    );
    // Loaded, the mark stays beside what it did.
    r.apply(
        &Event::PartitionSucceeded {
            run_id: "r".into(),
            job: "fct_orders".into(),
            partition: partly.clone(),
            attempt: 1,
            rows_deleted: 0,
            rows_inserted: 7,
            rows_updated: 0,
            rows_after: 7,
            duration_ms: 10,
            fingerprint: "f".into(),
            content_changed: true,
        },
        now(),
    );
    let done = shown(&r);
    assert!(row(&done, &partly).contains("⚠ −0 → +7"), "{done}");
}
