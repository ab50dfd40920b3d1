//! The config file edited while the console is open: what a reload does to
//! the run dialog, to Enter in it, and to runs in flight.

use super::*;

/// The fixture's config as read again after `edit`.
fn config_edited(edit: impl FnOnce(&mut Config)) -> Config {
    let mut config = fixture().config.clone();
    edit(&mut config);
    config
}

/// A config read again while the run dialog is open keeps the dialog, and
/// the reason typed in it, when what it plans is as it was; a change to
/// its job plans it again on the new definition and says so in it; the
/// job removed closes it (QA: any reload closed it unsaid, a change to
/// another job too, and the reason typed was lost).
#[test]
fn a_reload_keeps_the_run_dialog_and_plans_it_again_when_what_it_plans_changed() {
    let mut a = app(140, 40);
    keys(&mut a, "fr\tfixed refunds\n");
    assert!(matches!(a.modal, Modal::Confirm(_)));
    config_read(
        &mut a,
        Ok(config_edited(|c| {
            let job = c.jobs.iter_mut().find(|j| j.name == "dim_customers");
            job.expect("demo job").sql.push_str(" -- fixed");
        })),
    );
    let Modal::Confirm(c) = &a.modal else {
        panic!("another job's edit keeps the dialog");
    };
    assert_eq!(c.reread_note(), None);
    let (_, note) = a.message.clone().expect("a note");
    assert!(note.contains("changed dim_customers"), "{note}");
    assert!(!note.contains("run dialog"), "{note}");

    config_read(&mut a, Ok(fixed_fct_orders()));
    let Modal::Confirm(c) = &a.modal else {
        panic!("its own job's edit plans the dialog again");
    };
    assert_eq!(
        c.reread_note(),
        Some("idem.toml changed: the plan is of the file as saved now; Enter runs it")
    );
    let (error, note) = a.message.clone().expect("a note");
    assert!(
        !error && note.contains("the run dialog of fct_orders is planned on it"),
        "{note}"
    );
    assert!(text(&a).contains("the plan is of the file as saved now"));
    // Planned on states of the old definition it would not run: it waits
    // for the new one's.
    let effects = a.update(code(KeyCode::Enter));
    assert!(effects.is_empty(), "{effects:?}");
    let (error, note) = a.message.clone().expect("a note");
    assert!(
        error
            && note
                == "nothing ran: the states of fct_orders are still being read; try again in a moment",
        "{note}"
    );
    read_states(&mut a, "fct_orders");
    let effects = keys(&mut a, "\n");
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("expected one run, got {effects:?}");
    };
    assert!(
        req.backfill.job.sql.ends_with(" -- fixed"),
        "{}",
        req.backfill.job.sql
    );
    assert_eq!(req.reason.as_deref(), Some("fixed refunds"));

    keys(&mut a, "fr");
    assert!(matches!(a.modal, Modal::Confirm(_)));
    config_read(
        &mut a,
        Ok(config_edited(|c| {
            c.jobs.retain(|j| j.name != "fct_orders");
        })),
    );
    assert!(matches!(a.modal, Modal::None), "its job removed closes it");
    let (_, note) = a.message.clone().expect("a note");
    assert!(
        note.contains(
            "the run dialog of fct_orders closed, as what it planned changed: r plans it again"
        ),
        "{note}"
    );
}

/// The demo's config with fct_orders' SQL edited.
fn fixed_fct_orders() -> Config {
    config_edited(|c| {
        let job = c.jobs.iter_mut().find(|j| j.name == "fct_orders");
        job.expect("demo job").sql.push_str(" -- fixed");
    })
}

/// `job`'s states read (again), as the fixture holds them.
fn read_states(a: &mut App, job: &str) {
    let (_, states) = fixture()
        .statuses
        .iter()
        .find(|(name, _)| name == job)
        .expect("demo job");
    a.update(Msg::Status {
        job: job.into(),
        result: Ok(StatesRead::States(states.clone().into())),
    });
}

/// idem.toml saved with a fix and Enter pressed before a refresh read it:
/// the run waits on the file read again, and runs nothing of the old
/// definition; the dialog, planned on the file as saved, says so (QA: the
/// run used the definition of the last refresh, up to 15 s old, while the
/// dialog's "same as" command would run the file as saved).
#[test]
fn enter_in_the_run_dialog_runs_the_config_as_saved_not_as_last_read() {
    let mut a = app(140, 40);
    keys(&mut a, "f");
    let opened = a.update(key('r'));
    assert!(
        opened
            .iter()
            .any(|e| matches!(e, Effect::ReadConfig { path, .. } if path == &a.config().path)),
        "opening the dialog reads the file: {opened:?}"
    );
    let config = a.config().clone();
    config_read(&mut a, Ok(config));
    keys(&mut a, "\tfixed refunds\n");

    let effects = a.update(code(KeyCode::Enter));
    assert!(
        matches!(effects.as_slice(), [Effect::ReadConfig { path, .. }] if path == &a.config().path),
        "Enter reads the file before it runs: {effects:?}"
    );
    assert!(text(&a).contains("reading the config file before the run"));
    let effects = config_read(&mut a, Ok(fixed_fct_orders()));
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::StartRun(_))),
        "nothing of the old definition runs: {effects:?}"
    );
    let Modal::Confirm(c) = &a.modal else {
        panic!("the dialog stays, planned again");
    };
    assert_eq!(
        c.reread_note(),
        Some("idem.toml changed: the plan is of the file as saved now; Enter runs it")
    );

    // A file that does not load when Enter is pressed runs nothing.
    read_states(&mut a, "fct_orders");
    a.update(code(KeyCode::Enter));
    let effects = config_read(&mut a, Err("idem.toml:12:7: expected a string".into()));
    assert!(effects.is_empty(), "{effects:?}");
    let Modal::Confirm(c) = &a.modal else {
        panic!("the dialog stays");
    };
    assert_eq!(
        c.reread_note(),
        Some(
            "nothing ran: idem.toml:12:7 does not load: the console keeps the jobs it opened with; Enter tries again"
        )
    );

    // Saved again as it was planned: Enter runs it.
    a.update(code(KeyCode::Enter));
    let effects = config_read(&mut a, Ok(fixed_fct_orders()));
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("expected one run, got {effects:?}");
    };
    assert!(req.backfill.job.sql.ends_with(" -- fixed"));
    assert_eq!(req.reason.as_deref(), Some("fixed refunds"));
    assert!(matches!(a.modal, Modal::None));
}

/// A job removed from the config while its run is in flight: the run goes
/// on in its run view, and how it ended is still said (QA: its events
/// found no job and the ending went unsaid).
#[test]
fn a_run_of_a_job_removed_from_the_config_still_says_how_it_ended() {
    let (mut a, run, names) = run_in_progress(140, 40);
    config_read(
        &mut a,
        Ok(config_edited(|c| {
            c.jobs.retain(|j| j.name != "fct_orders");
        })),
    );
    let (_, note) = a.message.clone().expect("a note");
    assert!(
        note.contains("removed fct_orders")
            && note.contains("runs in flight keep the definitions they started with"),
        "{note}"
    );
    assert!(a.job().is_some_and(|j| j.job.name != "fct_orders"));
    fail_in_run(&mut a, run, &names[1], "boom");
    end_run_in_progress(&mut a, run);
    assert_eq!(a.active_runs(), 0);
    let (error, note) = a.message.clone().expect("the run's ending");
    assert!(
        error && note.starts_with("run of fct_orders finished: 1 succeeded, 1 failed"),
        "{note}"
    );
    let shown = text(&a);
    assert!(shown.contains("boom"), "{shown}");
}

/// fct_orders' SQL fixed while a run of the SQL before is in flight: what
/// that run loads is loaded by an older definition, stale (`~`) as the
/// next read will say, not loaded (QA: its partitions turned `■`, as if
/// the fixed SQL had loaded them).
#[test]
fn a_run_in_flight_of_a_changed_job_loads_its_partitions_stale() {
    let (mut a, run, names) = run_in_progress(140, 40);
    config_read(&mut a, Ok(fixed_fct_orders()));
    read_states(&mut a, "fct_orders");
    let i = partition(&a, &names[1]);
    assert_eq!(a.job().unwrap().state_at(i), Some(LoadState::Running));
    succeed_in_run(&mut a, run, &names[1]);
    let j = a.job().unwrap();
    assert_eq!(j.state_at(i), Some(LoadState::Stale));
    assert_eq!(j.glyph_at(i), LoadState::Stale.glyph());

    // A run of the fixed SQL loads it as the job's definition now.
    end_run_in_progress(&mut a, run);
    read_states(&mut a, "fct_orders");
    keys(&mut a, &format!(":goto {}\n", names[1]));
    let effects = keys(&mut a, "r\n");
    let Some(req) = effects.into_iter().find_map(|e| match e {
        Effect::StartRun(req) => Some(req),
        _ => None,
    }) else {
        panic!("no run started");
    };
    succeed_in_run(&mut a, req.run, &names[1]);
    assert_eq!(a.job().unwrap().state_at(i), Some(LoadState::Loaded));
}

/// A cascade planned again on a file whose downstream job changed waits,
/// at Enter, for that job's states as it waits for its own job's (QA:
/// Enter ran at once, found the downstream job unread and closed the
/// dialog, and the reason typed in it, on "cannot cascade").
#[test]
fn enter_in_a_cascade_waits_for_the_states_of_every_job_it_plans() {
    let mut a = app(140, 40);
    keys(&mut a, "frc\tfixed refunds\n");
    config_read(
        &mut a,
        Ok(config_edited(|c| {
            let job = c.jobs.iter_mut().find(|j| j.name == "agg_revenue_monthly");
            job.expect("demo job").sql.push_str(" -- fixed");
        })),
    );
    let effects = a.update(code(KeyCode::Enter));
    assert!(effects.is_empty(), "{effects:?}");
    assert!(matches!(a.modal, Modal::Confirm(_)), "the dialog stays");
    let (error, note) = a.message.clone().expect("a note");
    assert!(
        error
            && note
                == "nothing ran: the states of agg_revenue_monthly are still being read; try again in a moment",
        "{note}"
    );
    read_states(&mut a, "agg_revenue_monthly");
    let effects = keys(&mut a, "\n");
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("expected one run, got {effects:?}");
    };
    let steps: Vec<&str> = req
        .cascade
        .iter()
        .map(|(_, s)| s.job.name.as_str())
        .collect();
    assert_eq!(steps, ["agg_revenue_monthly"]);
    assert_eq!(req.reason.as_deref(), Some("fixed refunds"));
}

/// fct_orders renamed in the config while its run is in flight: the run
/// goes on under the name it started with, and the calendar of the new
/// name shows its partitions running until they end (QA: it showed
/// nothing running, though the run went on).
#[test]
fn a_job_renamed_while_its_run_is_in_flight_shows_it_running_under_the_new_name() {
    let (mut a, run, names) = run_in_progress(140, 40);
    config_read(
        &mut a,
        Ok(config_edited(|c| {
            let job = c.jobs.iter_mut().find(|j| j.name == "fct_orders");
            job.expect("demo job").name = "orders".into();
        })),
    );
    let (_, note) = a.message.clone().expect("a note");
    assert!(note.contains("removed fct_orders"), "{note}");
    select_job(&mut a, "orders");
    let i = partition(&a, &names[1]);
    assert_eq!(a.job().unwrap().state_at(i), Some(LoadState::Running));
    fail_in_run(&mut a, run, &names[1], "boom");
    assert_ne!(a.job().unwrap().state_at(i), Some(LoadState::Running));
    let effects = end_run_in_progress(&mut a, run);
    let (error, note) = a.message.clone().expect("the run's ending");
    assert!(
        error && note.starts_with("run of fct_orders finished: 1 succeeded, 1 failed"),
        "{note}"
    );
    // Its reads are still out: the new name is read again once they land.
    assert!(effects.is_empty(), "{effects:?}");
    let effects = a.update(Msg::Status {
        job: "orders".into(),
        result: Ok(StatesRead::States(Vec::new().into())),
    });
    assert!(
        matches!(effects.as_slice(), [Effect::Refresh(names)] if names == &["orders"]),
        "{effects:?}"
    );
}

/// The id of the config file's read among `effects`.
fn config_read_asked(effects: &[Effect]) -> usize {
    let read = effects.iter().find_map(|e| match e {
        Effect::ReadConfig { id, .. } => Some(*id),
        _ => None,
    });
    read.unwrap_or_else(|| panic!("no read of the config file: {effects:?}"))
}

/// Two reads of the file out at once, the file saved with a fix between
/// them: the earlier read, landing last, does not put the console back
/// on the file as it was (QA: reads carried no id; the last to land won).
#[test]
fn a_read_of_the_config_that_lands_after_a_newer_one_is_dropped() {
    let mut a = app(140, 40);
    let earlier = config_read_asked(&a.update(key('R')));
    let later = config_read_asked(&a.update(key('R')));
    a.update(Msg::ConfigRead {
        id: later,
        read: Ok(fixed_fct_orders()),
    });
    a.update(Msg::ConfigRead {
        id: earlier,
        read: Ok(fixture().config.clone()),
    });
    let job = a.config().jobs.iter().find(|j| j.name == "fct_orders");
    assert!(job.expect("demo job").sql.ends_with(" -- fixed"));
    let (_, note) = a.message.clone().expect("a note");
    assert!(note.contains("changed fct_orders"), "{note}");
}

/// Enter in the run dialog while a refresh's read of the file is out: the
/// run waits for the read Enter asked for, made after the file was saved,
/// not the refresh's, made before (QA: the first read to land ran it).
#[test]
fn enter_in_the_run_dialog_waits_for_its_own_read_of_the_config() {
    let mut a = app(140, 40);
    keys(&mut a, "fr\tfixed refunds\n");
    let periodic = config_read_asked(&a.update(Msg::Tick(now() + Duration::seconds(16))));
    let at_enter = config_read_asked(&a.update(code(KeyCode::Enter)));
    assert!(periodic < at_enter);
    let effects = a.update(Msg::ConfigRead {
        id: periodic,
        read: Ok(fixture().config.clone()),
    });
    assert!(effects.is_empty(), "{effects:?}");
    assert!(text(&a).contains("reading the config file before the run"));
    let effects = a.update(Msg::ConfigRead {
        id: at_enter,
        read: Ok(fixture().config.clone()),
    });
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("expected one run, got {effects:?}");
    };
    assert_eq!(req.reason.as_deref(), Some("fixed refunds"));
}

/// A job added whose target fct_orders' SQL reads (raw_orders), and a
/// `depends_on` given to dim_customers: each has a new upstream, so its
/// next read derives its states anew, stale (upstream) included, rather
/// than answering "unchanged" (QA: nothing the read compares for that
/// answer had changed, so they kept states derived with no upstream).
#[test]
fn a_reload_that_gives_a_job_a_new_upstream_reads_its_states_anew() {
    let mut a = app(140, 40);
    let jobs = ["fct_orders", "dim_customers", "agg_revenue_monthly"];
    assert!(jobs.iter().all(|j| a.holds_last_read(j)));
    config_read(
        &mut a,
        Ok(config_edited(|c| {
            let dim = c.jobs.iter_mut().find(|j| j.name == "dim_customers");
            let dim = dim.expect("demo job");
            dim.depends_on.push(idem::config::Dependency {
                name: "fct_pageviews_hourly".into(),
                line: 1,
                column: 1,
            });
            let mut raw = dim.clone();
            raw.depends_on.clear();
            raw.name = "stg_orders".into();
            raw.target = idem::config::TableName::parse("raw_orders").expect("a table name");
            c.jobs.push(raw);
        })),
    );
    let upstream = |job: &str| -> Vec<String> {
        a.lineage
            .upstream(job)
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    };
    assert_eq!(upstream("fct_orders"), ["stg_orders"]);
    assert_eq!(upstream("dim_customers"), ["fct_pageviews_hourly"]);
    assert!(!a.holds_last_read("fct_orders"));
    assert!(!a.holds_last_read("dim_customers"));
    assert!(
        a.holds_last_read("agg_revenue_monthly"),
        "its upstream stayed"
    );
}

/// A job the cascade gives a step as it goes (a reader with no step
/// planned, reached by a merge) runs the definition it had as the cascade
/// started, as the engine does: its SQL edited meanwhile, what the step
/// loads is loaded by the older definition, stale (`~`) as the next read
/// will say (QA: the step took the config's definition at its first event,
/// and its partition turned `■`, as if the edited SQL had loaded it).
#[test]
fn a_step_the_cascade_adds_after_a_reload_loads_by_the_definition_it_started_with() {
    let mut a = app(140, 40);
    let effects = keys(&mut a, "frc\n");
    let Some(req) = effects.iter().find_map(|e| match e {
        Effect::StartRun(req) => Some(req),
        _ => None,
    }) else {
        panic!("no run: {effects:?}")
    };
    let planned: Vec<&str> = std::iter::once(req.backfill.job.name.as_str())
        .chain(req.cascade.iter().map(|(_, b)| b.job.name.as_str()))
        .collect();
    let added = (a.config().jobs.iter())
        .map(|j| j.name.clone())
        .find(|name| !planned.contains(&name.as_str()))
        .expect("a job the cascade has no step of");
    config_read(
        &mut a,
        Ok(config_edited(|c| {
            let job = c.jobs.iter_mut().find(|j| j.name == added);
            job.expect("demo job").sql.push_str(" -- edited");
        })),
    );
    read_states(&mut a, &added);
    let view = a.jobs.by_name(&added).expect("the added job");
    let i = (0..view.partitions.len())
        .rev()
        .find(|i| view.state_at(*i) == Some(LoadState::Loaded))
        .expect("a partition loaded");
    let (partition, strategy) = (view.partitions[i].name(), view.job.strategy);
    let run_id = || "r9".to_string();
    for event in [
        Event::RunStarted {
            run_id: run_id(),
            job: added.clone(),
            strategy,
            partitions: vec![partition.clone()],
            concurrency: 1,
            reason: None,
            upstream_not_loaded: Vec::new(),
            upstream_unread: Vec::new(),
        },
        Event::PartitionSucceeded {
            run_id: run_id(),
            job: added.clone(),
            partition: partition.clone(),
            attempt: 1,
            rows_deleted: 0,
            rows_inserted: 12,
            rows_updated: 0,
            rows_after: 12,
            duration_ms: 40,
            fingerprint: "12:0123456789abcdef".into(),
            content_changed: true,
        },
    ] {
        a.update(Msg::Engine {
            run: req.run,
            event,
        });
    }
    let step = a.runs.last().expect("the added step");
    assert_eq!(step.job, added);
    let view = a.jobs.by_name(&added).expect("the added job");
    assert_eq!(view.state_at(i), Some(LoadState::Stale), "{partition}");
}

/// A job's findings name their lines in idem.toml. Lines added above it (a
/// comment, a longer description) move them while what it writes stays as
/// it was: the console says them at their new lines, by its own reading
/// at once and by the warehouse's lint, which it asks again; the
/// warehouse's answer for the job at its old lines is dropped (QA: the
/// console kept the old line numbers, as the definition had not changed).
#[test]
fn a_job_moved_down_the_file_has_its_findings_at_their_new_lines() {
    let mut a = app(140, 40);
    let limited = config_edited(|c| {
        let job = c.jobs.iter_mut().find(|j| j.name == "fct_orders");
        let job = job.expect("demo job");
        job.sql = format!("{} limit 1000", job.sql.trim_end());
    });
    config_read(&mut a, Ok(limited.clone()));
    let findings = |a: &App| -> Vec<String> {
        let job = a.jobs.by_name("fct_orders").expect("demo job");
        job.lint().iter().map(|l| l.message.clone()).collect()
    };
    let before = findings(&a);
    assert!(!before.is_empty(), "LIMIT without ORDER BY is a finding");
    let mut moved = limited.clone();
    for job in &mut moved.jobs {
        job.sql_line += 2;
        job.lines.target += 2;
        job.lines.partition_column += 2;
        job.lines.unique_key += 2;
    }
    let effects = config_read(&mut a, Ok(moved.clone()));
    assert!(
        effects.iter().any(|e| matches!(e, Effect::Lint)),
        "the warehouse's lint is asked again: {effects:?}"
    );
    let two_lines_down: Vec<String> = before
        .iter()
        .map(|m| {
            let (line, rest) = m
                .strip_prefix("line ")
                .and_then(|m| m.split_once(": "))
                .unwrap_or_else(|| panic!("a finding at a line: {m}"));
            let line: usize = line.parse().expect("a line number");
            format!("line {}: {rest}", line + 2)
        })
        .collect();
    assert_eq!(findings(&a), two_lines_down);
    // The warehouse's lint of the job as it was, answering late.
    let job_of = |c: &Config| {
        let job = c.jobs.iter().find(|j| j.name == "fct_orders");
        Box::new(job.expect("demo job").clone())
    };
    let note = |message: &str| LintNote {
        error: true,
        message: message.into(),
    };
    a.update(Msg::Linted {
        job: job_of(&limited),
        notes: vec![note(&before[0])],
    });
    assert_eq!(findings(&a), two_lines_down, "an answer for the old lines");
    a.update(Msg::Linted {
        job: job_of(&moved),
        notes: vec![note(&two_lines_down[0])],
    });
    assert_eq!(findings(&a), [two_lines_down[0].clone()]);
}
