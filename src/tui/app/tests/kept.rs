//! A confirmed run that cannot start keeps the dialog open, the reason
//! typed in it kept, and the status line says why nothing ran.

use super::*;

/// A cascade whose plan has problems as its run is to start (a downstream
/// step that cannot be planned on the states read while the config file
/// was) runs nothing and keeps the dialog, and the reason typed in it,
/// open (QA: it closed on "cannot cascade" and the reason was lost).
#[test]
fn a_cascade_that_cannot_be_planned_keeps_the_dialog() {
    let mut a = app();
    type_line(
        &mut a,
        "run 2026-06-03..2026-06-05 --cascade --reason refunds",
    );
    let effects = a.update(Msg::Key(code(crossterm::event::KeyCode::Enter)));
    assert!(
        matches!(effects.as_slice(), [Effect::ReadConfig { .. }]),
        "{effects:?}"
    );
    let Modal::Confirm(c) = &mut a.shared.modal else {
        panic!("no dialog: {:?}", a.message);
    };
    let problem = "report: --from 2026-06-05 is after --to 2026-06-03";
    c.set_cascade(Some(CascadePlan {
        root: "fct_orders".into(),
        problems: vec![problem.into()],
        ..CascadePlan::default()
    }));
    let config = a.config().clone();
    let effects = config_read(&mut a, Ok(config));
    assert!(effects.is_empty(), "{effects:?}");
    let Modal::Confirm(c) = &a.modal else {
        panic!("the dialog closed: {:?}", a.message);
    };
    assert_eq!(
        c.backfill().and_then(|b| b.reason).as_deref(),
        Some("refunds")
    );
    let (error, note) = a.message.clone().expect("a note");
    assert!(
        error
            && note
                == format!(
                    "nothing ran: cannot cascade: {problem}; c turns the cascade off to run without it"
                ),
        "{note}"
    );
}

/// The dialog a confirmed run that could not start leaves open: the
/// reason typed in it kept, and the status line saying why nothing ran.
fn assert_dialog_kept(a: &App, effects: &[Effect], reason: &str, why: &str) {
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::StartRun(_))),
        "{effects:?}"
    );
    let Modal::Confirm(c) = &a.modal else {
        panic!("the dialog closed: {:?}", a.message);
    };
    assert_eq!(c.reason_text().as_deref(), Some(reason));
    assert_eq!(c.awaited_read(), None, "Enter waits no longer");
    assert_eq!(
        a.message.clone(),
        Some((true, format!("nothing ran: {why}")))
    );
}

/// QA: a run confirmed while the warehouse was gone closed the dialog and
/// lost the reason typed in it.
#[test]
fn a_run_confirmed_while_not_connected_keeps_the_dialog() {
    let mut a = app();
    type_line(&mut a, "run 2026-06-03..2026-06-05 --reason refunds");
    a.update(Msg::Connected(Err(
        "cannot connect to sqlite://w.db: gone".into()
    )));
    let effects = enter(&mut a);
    assert_dialog_kept(
        &a,
        &effects,
        "refunds",
        "not connected to the warehouse; Enter tries again once it reconnects",
    );
}

/// QA: a run whose partitions were all queued in a run of this console
/// closed the dialog and lost the reason typed in it.
#[test]
fn a_run_of_partitions_all_queued_already_keeps_the_dialog() {
    let (mut a, _) = app_running_three_days();
    type_line(&mut a, "run 2026-06-03..2026-06-05 --reason again");
    let effects = enter(&mut a);
    assert_dialog_kept(
        &a,
        &effects,
        "again",
        "they are all queued in a run of this console already, which loads them",
    );
    a.update(Msg::Key(code(crossterm::event::KeyCode::Esc)));
    assert!(matches!(a.modal, Modal::None), "Esc closes the dialog");
    type_line(&mut a, "run 2026-06-04..2026-06-04 --reason again");
    let effects = enter(&mut a);
    assert_dialog_kept(
        &a,
        &effects,
        "again",
        "it is queued in a run of this console already, which loads it",
    );
}

/// QA: a run whose filter no partition matched any more (the states read
/// again while the dialog was open) closed the dialog and lost the reason
/// typed in it.
#[test]
fn a_run_whose_filter_matches_nothing_now_keeps_the_dialog() {
    let mut a = app();
    type_line(
        &mut a,
        "run 2026-06-01..2026-06-09 --only failed --reason retry",
    );
    let statuses = job_view("fct_orders", false, "■■■■■■■■■■").statuses;
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Ok(StatesRead::States(statuses.into())),
    });
    // Enter on a plan the filter left empty starts nothing, not even the
    // config file's read a run waits on, and says so.
    let effects = enter(&mut a);
    assert!(effects.is_empty(), "{effects:?}");
    let Modal::Confirm(c) = &a.modal else {
        panic!("the dialog closed: {:?}", a.message);
    };
    assert_eq!(c.reason_text().as_deref(), Some("retry"));
    assert_eq!(c.awaited_read(), None, "Enter waits on nothing");
    let said = a.message.clone().map(|(_, m)| m).unwrap_or_default();
    assert!(
        said.starts_with("nothing ran: nothing: the filter selects no partition"),
        "{said}"
    );
}

/// The filter matches partitions as Enter is pressed, and none by the time
/// the config file's read the run waits on lands (the states read again
/// meanwhile: the failed days loaded elsewhere): nothing runs, the dialog
/// stays with the reason typed in it, and says why.
#[test]
fn a_filter_that_matches_nothing_by_the_time_the_config_is_read_runs_nothing() {
    let mut a = app();
    type_line(
        &mut a,
        "run 2026-06-01..2026-06-09 --only failed --reason retry",
    );
    let effects = a.update(Msg::Key(code(crossterm::event::KeyCode::Enter)));
    assert!(
        matches!(effects.as_slice(), [Effect::ReadConfig { .. }]),
        "Enter on two failed days waits on the config file: {effects:?}"
    );
    let statuses = job_view("fct_orders", false, "■■■■■■■■■■").statuses;
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Ok(StatesRead::States(statuses.into())),
    });
    let config = a.config().clone();
    let effects = config_read(&mut a, Ok(config));
    assert_dialog_kept(
        &a,
        &effects,
        "retry",
        "no partition matches the filter now; choose others or Esc to close",
    );
}
