use super::*;
use crate::tui::fixture::{draw, job_view, now};

fn verification(rows: usize) -> Verification {
    Verification {
        job: "fct_orders".into(),
        partition: "2026-06-10".into(),
        rows: vec![rows, rows, rows],
        difference: None,
        run_3_after: crate::warehouse::CLOCK_TICK,
    }
}

/// QA: a failed attempt's error showed its first line alone; the
/// DETAIL and HINT a PostgreSQL error adds (which row) are shown under
/// it where the pane has room, and left out where it has none.
#[test]
fn a_failed_attempts_detail_and_hint_show_under_its_error_when_there_is_room() {
    let mut job = job_view("fct_orders", false, "■■✗■■■■■■■");
    job.cursor = 2;
    let status = &mut job.statuses[2];
    let mut attempt = status.last_attempt.as_deref().expect("an attempt").clone();
    attempt.error =
        Some("row 1 is held\nDETAIL: id 1 is on hold since Monday\nHINT: release it first".into());
    status.last_attempt = Some(std::sync::Arc::new(attempt));
    let detail = Detail::default();
    let screen = |h| {
        draw(100, h, |f| {
            detail.render(f, f.area(), &Theme::default_theme(), &job, Vec::new())
        })
    };
    let roomy = screen(20);
    assert!(roomy.contains("error: row 1 is held"), "{roomy}");
    assert!(
        roomy.contains("│error: row 1 is held  ")
            && roomy.contains("│DETAIL: id 1 is on hold since Monday"),
        "{roomy}"
    );
    assert!(roomy.contains("│HINT: release it first"), "{roomy}");
    let small = screen(11);
    assert!(small.contains("error: row 1 is held"), "{small}");
    assert!(!small.contains("DETAIL"), "{small}");
}

#[test]
fn a_verification_is_asked_shown_and_replaced() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut detail = Detail::default();
    let refused = detail.verify(&job, false, 1, now());
    assert!(refused.is_err_and(|e| e.contains("not connected")));
    // A window not begun has nothing to prove; an open one may be.
    let before = now() - chrono::Duration::days(10);
    let refused = detail.verify(&job, true, 1, before);
    assert!(refused.is_err_and(|e| e.contains("has not begun yet")));
    let open = job.partitions[job.cursor].start + chrono::Duration::hours(1);
    assert!(detail.verify(&job, true, 3, open).is_ok());
    let Ok(Effect::Verify(req)) = detail.verify(&job, true, 1, now()) else {
        panic!("no verify effect");
    };
    assert_eq!(req.partition.name(), "2026-06-10");
    assert!(detail.for_cursor(&job).is_some_and(|v| v.result.is_none()));
    assert!(detail.verify(&job, true, 2, now()).is_ok());
    assert_eq!(detail.verified(1, Ok(verification(5))), None, "replaced");
    let note = detail.verified(2, Ok(verification(100)));
    assert_eq!(
        note,
        Some((
            false,
            "fct_orders 2026-06-10: idempotent; rolled back".into()
        ))
    );
    let screen = draw(100, 14, |f| {
        detail.render(f, f.area(), &Theme::default_theme(), &job, Vec::new())
    });
    assert!(
        screen.contains("idempotent: same 100 rows on every run"),
        "{screen}"
    );
}

#[test]
fn attempts_after_the_last_that_counts_are_said_refused_or_cancelled() {
    let mut job = job_view("fct_orders", false, "■■■■■■■■■■");
    job.cursor = 3;
    let mut statuses = job.statuses.clone();
    // Two attempts after the success, refused (the shrink guard).
    statuses[3].attempts += 2;
    job.apply_statuses(statuses);
    let screen = draw(100, 14, |f| {
        Detail::default().render(f, f.area(), &Theme::default_theme(), &job, Vec::new())
    });
    assert!(
        screen.contains("then 2 attempts refused or cancelled, which changed nothing"),
        "{screen}"
    );
}

#[test]
fn a_window_whose_rows_later_loads_moved_out_says_so() {
    let mut job = job_view("fct_orders", false, "■■■■■■■■■■");
    job.cursor = 3;
    let mut statuses = job.statuses.clone();
    let s = &mut statuses[3];
    (s.rows_at_load, s.rows_now, s.moved_out) = (Some(2), Some(0), true);
    job.apply_statuses(statuses);
    let screen = draw(120, 14, |f| {
        Detail::default().render(f, f.area(), &Theme::default_theme(), &job, Vec::new())
    });
    assert!(
        screen.contains("■ loaded · 1 attempt · superseded by later loads"),
        "{screen}"
    );
    assert!(
        screen.contains("2 rows moved out by later windows' loads"),
        "{screen}"
    );
    assert!(!screen.contains("drift"), "{screen}");
}

/// QA: the detail of a partition the shrink guard refused named no
/// guard; it says why, as `idem status` does.
#[test]
fn a_refused_partition_says_the_guard_refused_it_and_why() {
    let mut job = job_view("fct_orders", false, "■■■■■■■■■■");
    job.cursor = 3;
    let mut statuses = job.statuses.clone();
    statuses[3].refused = Some(std::sync::Arc::new(crate::warehouse::ledger::Refusal {
        attempt: 2,
        finished_at: "2026-06-05T03:00:00.000Z".into(),
        error: "source looks incomplete: would replace 2 rows with 0 in 2026-06-04".into(),
    }));
    job.apply_statuses(statuses);
    let screen = draw(140, 14, |f| {
        Detail::default().render(f, f.area(), &Theme::default_theme(), &job, Vec::new())
    });
    assert!(
        screen.contains("⊖ refused by the shrink guard (attempt 2, ")
            && screen.contains("): source looks incomplete: would replace 2 rows with 0"),
        "{screen}"
    );
}

#[test]
fn the_detail_tells_state_rows_attempt_and_error_group() {
    let mut job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    job.cursor = 2;
    let screen = draw(100, 14, |f| {
        Detail::default().render(f, f.area(), &Theme::default_theme(), &job, Vec::new())
    });
    assert!(screen.contains("✗ failed · 1 attempt "), "{screen}");
    assert!(screen.contains("rows now 0 · at last load —"), "{screen}");
    assert!(screen.contains("last attempt #1 failed"), "{screen}");
    assert!(screen.contains("(×2, e groups)"), "{screen}");
    assert!(
        screen.contains("failures of fct_orders by error"),
        "{screen}"
    );
}

/// QA: the legend was drawn over the detail's last lines, so a
/// refused partition's "then 2 attempts refused" hid under it and the
/// legend's short second line ended in the leftovers of the line beneath
/// ("+ source changed5 08:47 refused · …"). The legend has rows of its
/// own, below the detail, and nothing shows through it.
#[test]
fn the_legend_has_rows_of_its_own_below_the_detail() {
    let mut job = job_view("fct_orders", false, "■■■■■■■■■■");
    job.cursor = 3;
    let mut statuses = job.statuses.clone();
    statuses[3].attempts += 2;
    statuses[3].refused = Some(std::sync::Arc::new(crate::warehouse::ledger::Refusal {
        attempt: 3,
        finished_at: "2026-06-05T03:00:00.000Z".into(),
        error: "source looks incomplete: would replace 9 rows with 0 in 2026-06-04; \
                nothing was changed (the shrink guard keeps a loaded partition at 50% \
                of its rows or more, and never replaces them with none)"
            .into(),
    }));
    job.apply_statuses(statuses);
    let t = Theme::default_theme();
    // The box's inside: 92 columns, 8 rows.
    let (width, height) = (94, 10);
    let screen = draw(width, height, |f| {
        Detail::default().render(f, f.area(), &t, &job, Vec::new())
    });
    let legend: Vec<String> = legend(&t, width - 2, false)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert_eq!(legend.len(), 2, "{legend:?}");
    let inside: Vec<String> = screen
        .lines()
        .skip(1)
        .take(usize::from(height) - 2)
        .map(|row| {
            let row: String = row.chars().skip(1).take(usize::from(width) - 2).collect();
            row.trim_end().to_string()
        })
        .collect();
    assert_eq!(&inside[inside.len() - legend.len()..], legend, "{screen}");
}

/// QA: once a reconciliation found partitions out of date, the legend
/// read `+ source changed` and never said what the calendar's `-` is.
#[test]
fn the_legend_explains_both_marks_of_a_changed_source() {
    let t = Theme::default_theme();
    let joined = |out_of_date| -> String {
        let lines = legend(&t, 200, out_of_date);
        lines
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join("  ")
    };
    let late = joined(true);
    assert!(late.contains("+ source grew"), "{late}");
    assert!(late.contains("- source shrank"), "{late}");
    assert!(!joined(false).contains("source"));
}

#[test]
fn the_legend_wraps_and_keeps_every_entry() {
    let t = Theme::default_theme();
    let text = |width| -> Vec<String> {
        legend(&t, width, false)
            .iter()
            .map(|l| l.to_string())
            .collect()
    };
    let wide = text(200);
    assert_eq!(wide.len(), 1);
    let narrow = text(94);
    assert!(narrow.len() > 1, "{narrow:?}");
    assert!(narrow.iter().all(|l| l.chars().count() <= 94), "{narrow:?}");
    let joined = narrow.join("  ");
    for needle in [
        "✗ failed",
        "· missing",
        "≈ stale (upstream)",
        "* anomaly",
        "⊖ refused",
    ] {
        assert!(joined.contains(needle), "{needle} in {joined}");
    }
}

/// QA: partitions that all hold the same count read "within typical
/// 100–100" (the hourly demo: "above typical 5–5"); the chart says
/// "typical 5". A band of one count reads as that count.
#[test]
fn a_band_of_one_count_reads_as_that_count() {
    let mut job = job_view("fct_orders", false, &"■".repeat(40));
    job.cursor = 39;
    let screen = draw(100, 14, |f| {
        Detail::default().render(f, f.area(), &Theme::default_theme(), &job, Vec::new())
    });
    assert!(screen.contains("· within typical 100 "), "{screen}");
    assert!(!screen.contains("100–100"), "{screen}");
}
