use super::*;
use crate::tui::fixture::{code, draw, job_view, key, now};

fn open(job: &JobView, candidates: Vec<usize>) -> ConfirmDialog {
    let args = RunArgs {
        job: job.job.name.clone(),
        ..RunArgs::default()
    };
    ConfirmDialog::open(0, job, candidates, args, &Defaults::default(), now()).unwrap()
}

#[test]
fn the_filter_narrows_the_plan_and_the_command_follows() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&job, (1..=8).collect());
    assert_eq!(c.partitions(), &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(
        c.command(),
        "idem run fct_orders --from 2026-06-02 --to 2026-06-09"
    );
    let step = c.key(&key('f'), &job, &Defaults::default(), now());
    assert_eq!(step, ConfirmStep::Stay);
    assert_eq!(c.partitions(), &[2, 7]);
    assert_eq!(
        c.command(),
        "idem run fct_orders --from 2026-06-03 --to 2026-06-08 --only failed"
    );
    // The backfill is the engine's plan: attempts go on from the ledger's.
    let b = c.backfill().unwrap();
    assert_eq!(b.prior_attempts.get("2026-06-03"), Some(&1));
    assert_eq!(b.partitions.len(), 2);
    c.key(&key('s'), &job, &Defaults::default(), now());
    assert!(c.partitions().is_empty());
    assert!(c.backfill().is_none_or(|b| b.partitions.is_empty()));
    // Nothing runs: no command says otherwise (one without a range
    // would run the whole history).
    assert_eq!(c.command(), "");
    let shown = draw(100, 30, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    assert!(!shown.contains("same as"), "{shown}");
}

/// At the console's smallest size the dialog drops its explanations
/// (the command, the strategy's words, the filter keys), never what
/// decides the run or the keys that run or leave it.
#[test]
fn a_small_terminal_keeps_what_decides_the_run() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let c = open(&job, (1..=8).collect());
    let small = draw(60, 15, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    for kept in [
        "range",
        "states",
        "replaces",
        "parallel",
        "lint",
        "reason",
        "Enter run",
        "Esc back",
    ] {
        assert!(small.contains(kept), "{kept}:\n{small}");
    }
    assert!(!small.contains("idem run"), "{small}");
    // Where the command gives way and a line is left, that line says so;
    // the keys that run or leave stay at every height.
    let mut said_hidden = false;
    for height in 15..=30 {
        let shown = draw(80, height, |f| {
            c.render(f, f.area(), &Theme::default_theme(), &job)
        });
        assert!(shown.contains("Enter run"), "{height}:\n{shown}");
        said_hidden |= shown.contains("same as: hidden at this size");
    }
    assert!(said_hidden, "no height says the command is hidden");
    let large = draw(120, 40, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    for all in ["only", "strategy", "same as", "idem run fct_orders"] {
        assert!(large.contains(all), "{all}:\n{large}");
    }
}

#[test]
fn a_choice_with_gaps_reads_as_its_states_and_a_reason_is_quoted() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&job, vec![2, 4]);
    assert_eq!(
        c.command(),
        "idem run fct_orders --from 2026-06-03 --to 2026-06-05 --only failed,missing"
    );
    c.key(&code(KeyCode::Tab), &job, &Defaults::default(), now());
    for ch in "it's fixed".chars() {
        c.key(&key(ch), &job, &Defaults::default(), now());
    }
    c.key(&code(KeyCode::Enter), &job, &Defaults::default(), now());
    assert!(
        c.command().ends_with("--reason 'it'\\''s fixed'"),
        "{}",
        c.command()
    );
    assert_eq!(c.backfill().unwrap().reason.as_deref(), Some("it's fixed"));
    // Y copies the command on one line, quoted as shown.
    assert_eq!(
        c.key(&key('Y'), &job, &Defaults::default(), now()),
        ConfirmStep::Copy(
            "idem run fct_orders --from 2026-06-03 --to 2026-06-05 --only failed,missing --reason 'it'\\''s fixed'"
                .into()
        )
    );
    assert_eq!(
        c.key(&code(KeyCode::Enter), &job, &Defaults::default(), now()),
        ConfirmStep::Run
    );
}

/// A filter that keeps no partition: the dialog says nothing would run, in
/// plain words, and Enter starts no run but says why; `a` brings them back.
#[test]
fn enter_runs_nothing_when_the_filter_selects_no_partition() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&job, (0..10).collect());
    c.key(&key('s'), &job, &Defaults::default(), now());
    let shown = draw(120, 30, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    assert!(
        shown.contains("replaces  nothing: the filter selects no partition"),
        "{shown}"
    );
    assert!(!shown.contains("loaded for the first time"), "{shown}");
    match c.key(&code(KeyCode::Enter), &job, &Defaults::default(), now()) {
        ConfirmStep::Say(Some(note)) => assert!(
            note.starts_with("nothing ran: nothing: the filter selects no partition"),
            "{note}"
        ),
        step => panic!("Enter with nothing selected: {step:?}"),
    }
    c.key(&key('a'), &job, &Defaults::default(), now());
    assert_eq!(
        c.key(&code(KeyCode::Enter), &job, &Defaults::default(), now()),
        ConfirmStep::Run
    );
}

/// With nothing to run there is no command: Y says so, and copies nothing.
#[test]
fn y_copies_nothing_when_nothing_would_run() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&job, vec![2]);
    c.key(&key('s'), &job, &Defaults::default(), now());
    assert_eq!(
        c.key(&key('Y'), &job, &Defaults::default(), now()),
        ConfirmStep::Say(Some("nothing would run: no command to copy".into()))
    );
}

#[test]
fn x_extends_a_merge_run_only_when_later_windows_are_loaded() {
    let replace = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&replace, vec![2]);
    assert_eq!(
        c.key(&key('x'), &replace, &Defaults::default(), now()),
        ConfirmStep::Say(Some("no later window is loaded: nothing to extend".into()))
    );
    let merge = job_view("dim_customers", true, "■~~■■·■■··");
    let mut c = open(&merge, vec![1, 2]);
    assert_eq!(
        c.risk().map(|r| r.latest().name()).as_deref(),
        Some("2026-06-08")
    );
    c.key(&key('x'), &merge, &Defaults::default(), now());
    assert_eq!(c.partitions(), &[1, 2, 3, 4, 5, 6, 7]);
    assert!(c.command().ends_with("--through-latest"), "{}", c.command());
    let screen = draw(100, 30, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &merge)
    });
    assert!(screen.contains("Run dim_customers?"), "{screen}");
    assert!(
        screen.contains("through 2026-06-08, the latest loaded window"),
        "{screen}"
    );
    assert!(
        screen.contains("1 window at a time, oldest first"),
        "{screen}"
    );
}

#[test]
fn nothing_runnable_opens_nothing() {
    let mut job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    job.in_flight.insert(job.partitions[2]);
    let args = RunArgs::default();
    let refused = ConfirmDialog::open(0, &job, vec![2], args.clone(), &Defaults::default(), now());
    assert!(refused.is_err_and(|e| e.contains("already running")));
    let unread = JobView::new(job.job.clone(), now());
    let refused = ConfirmDialog::open(0, &unread, vec![2], args, &Defaults::default(), now());
    assert!(refused.is_err_and(|e| e.contains("still being read")));
}

/// A command typed out of habit in the dialog goes into a command line of
/// its own: its letters never act as the dialog's keys (the `e` and `y` of
/// `:retry`, the Enter after it would start the run), and it is not run.
#[test]
fn a_command_typed_in_the_dialog_is_not_read_as_its_keys() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&job, (1..=8).collect());
    let d = Defaults::default();
    assert_eq!(c.key(&key(':'), &job, &d, now()), ConfirmStep::Say(None));
    assert!(c.typed_command().is_some());
    for ch in "retry fsm".chars() {
        assert_eq!(c.key(&key(ch), &job, &d, now()), ConfirmStep::Stay);
    }
    assert!(c.only.is_empty(), "f, s, m chose no states");
    assert!(!c.editing_reason, "e opened no reason");
    let step = c.key(&code(KeyCode::Enter), &job, &d, now());
    let ConfirmStep::Say(Some(note)) = step else {
        panic!("Enter ran or closed the dialog: {step:?}");
    };
    assert!(note.contains(":retry fsm not run"), "{note}");
    assert!(c.typed_command().is_none());
    // The dialog's keys work again, and a line left with Esc says nothing.
    assert_eq!(c.key(&key('f'), &job, &d, now()), ConfirmStep::Stay);
    assert_eq!(c.partitions(), &[2, 7]);
    c.key(&key(':'), &job, &d, now());
    assert_eq!(
        c.key(&code(KeyCode::Esc), &job, &d, now()),
        ConfirmStep::Say(None)
    );
    assert_eq!(
        c.key(&code(KeyCode::Esc), &job, &d, now()),
        ConfirmStep::Close
    );
}

/// The dialog is the confirm: its command says `--yes` where a script
/// would be refused without it (over 100 partitions), and only there.
#[test]
fn the_same_as_command_carries_yes_above_the_scripts_limit() {
    let many = "✗".repeat(120);
    let job = job_view("fct_orders", false, &many);
    let c = open(&job, (0..120).collect());
    assert_eq!(c.partitions().len(), 120);
    assert!(c.command().ends_with(" --yes"), "{}", c.command());
    let few = open(&job, (0..100).collect());
    assert!(!few.command().contains("--yes"), "{}", few.command());
}

/// SQLite loads one partition at a time: the dialog says so whatever the
/// choice, even while the filter keeps nothing to plan.
#[test]
fn a_sqlite_job_runs_one_partition_at_a_time_whatever_the_choice() {
    let job = job_view("fct_orders", false, "■■■■");
    let mut c = open(&job, vec![0, 1, 2]);
    let shown = |c: &ConfirmDialog| {
        draw(100, 30, |f| {
            c.render(f, f.area(), &Theme::default_theme(), &job)
        })
    };
    let one = "parallel  1 partition at a time (SQLite has one writer)";
    let planned = shown(&c);
    assert!(planned.contains(one), "{planned}");
    // Only failed partitions: none here, so nothing is planned.
    c.key(&key('f'), &job, &Defaults::default(), now());
    assert!(c.backfill().is_none_or(|b| b.partitions.is_empty()));
    let unplanned = shown(&c);
    assert!(unplanned.contains(one), "{unplanned}");
    assert!(!unplanned.contains("at once"), "{unplanned}");
}

/// A dialog taller than the terminal even without its optional lines says
/// how many lines it leaves out, and keeps the keys that run or leave it.
#[test]
fn a_dialog_too_tall_says_what_it_leaves_out() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&job, (1..=8).collect());
    c.key(&code(KeyCode::Tab), &job, &Defaults::default(), now());
    for ch in "the source was late: ".repeat(12).chars() {
        c.key(&key(ch), &job, &Defaults::default(), now());
    }
    c.key(&code(KeyCode::Enter), &job, &Defaults::default(), now());
    let small = draw(60, 15, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    assert!(small.contains("more line"), "{small}");
    assert!(small.contains("below: enlarge the terminal"), "{small}");
    for kept in ["range", "Enter run", "Esc back"] {
        assert!(small.contains(kept), "{kept}:\n{small}");
    }
    // Room enough: everything shows, and nothing says otherwise.
    let large = draw(120, 40, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    assert!(!large.contains("more line"), "{large}");
    assert!(large.contains("same as"), "{large}");
}

/// Selected partitions the run leaves out (running, in the future)
/// are counted in the selection and said, not silently dropped.
#[test]
fn the_range_line_says_what_the_selection_leaves_out() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗▶ ");
    let c = open(&job, vec![7, 8, 9]);
    assert_eq!(c.partitions(), &[7]);
    let shown = draw(100, 30, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    // The line wraps at this width, under its value.
    assert!(
        shown.contains("(1 of 3 selected partitions; 1 running, 1 future, not ┃")
            && shown.contains("┃          run)"),
        "{shown}"
    );
}

/// The shrink guard applies to replace jobs only: a merge job's dialog
/// neither offers S nor adds --allow-shrink.
#[test]
fn a_merge_job_is_not_offered_the_shrink_override() {
    let job = job_view("dim_customers", true, "■~~■■·■■··");
    let mut c = open(&job, vec![1, 2]);
    let step = c.key(&key('S'), &job, &Defaults::default(), now());
    assert!(
        matches!(step, ConfirmStep::Say(Some(ref w)) if w.contains("merge jobs delete no rows"))
    );
    assert!(!c.command().contains("--allow-shrink"), "{}", c.command());
    let shown = draw(100, 30, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    assert!(!shown.contains("shrink"), "{shown}");
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&job, vec![2]);
    c.key(&key('S'), &job, &Defaults::default(), now());
    assert!(c.command().contains("--allow-shrink"), "{}", c.command());
    let shown = draw(100, 30, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    assert!(shown.contains("S shrink"), "{shown}");
}

/// A missing partition has nothing to delete: the dialog says it is loaded
/// for the first time, not "0 rows … will be deleted and loaded again".
#[test]
fn a_missing_partition_is_loaded_for_the_first_time() {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let screen = |c: &ConfirmDialog| {
        draw(100, 30, |f| {
            c.render(f, f.area(), &Theme::default_theme(), &job)
        })
    };
    let shown = screen(&open(&job, vec![4]));
    assert!(
        shown.contains("nothing yet in t: 1 partition never loaded, loaded for the first time"),
        "{shown}"
    );
    assert!(!shown.contains("deleted"), "{shown}");
    let shown = screen(&open(&job, vec![3, 4]));
    assert!(
        shown.contains("will be deleted and loaded again (and 1 missing)"),
        "{shown}"
    );
}

/// A job name (or a config path) too long for the usual width widens the
/// dialog up to the screen: a wide terminal shows the command whole, where
/// the dialog said "widen the terminal" however wide it was.
#[test]
fn a_long_job_name_widens_the_dialog_to_show_its_command() {
    let name = format!("fct_{}v2", "very_long_".repeat(10));
    let job = job_view(&name, false, "■■✗■·■■✗■■");
    let c = open(&job, (1..=8).collect());
    let shown = |w| {
        draw(w, 40, |f| {
            c.render(f, f.area(), &Theme::default_theme(), &job)
        })
    };
    let wide = shown(200);
    assert!(
        wide.contains(&format!("idem run {name} --from 2026-06-02")),
        "{wide}"
    );
    assert!(!wide.contains("wider than this dialog"), "{wide}");
    let narrow = shown(100);
    assert!(narrow.contains("wider than this dialog"), "{narrow}");
}

/// QA: a source giving rows with a NULL partition column fails every load
/// over them; the dialog's source count says so before the run.
#[test]
fn the_dialog_says_the_source_rows_no_window_holds() {
    let mut job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&job, vec![2]);
    c.counting_source(7);
    let partitions = job.partitions.iter().map(|p| (p.name(), 100)).collect();
    let (first, last) = (job.partitions[0], *job.partitions.last().unwrap());
    job.reconciled(partitions, first, last);
    c.source_counted(7, Ok(Some(4)));
    let shown = draw(140, 30, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    assert!(
        shown.contains("the job's SQL gives 4 rows with NULL dt over this range"),
        "{shown}"
    );
    c.counting_source(8);
    c.source_counted(8, Ok(Some(0)));
    let shown = draw(140, 30, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    assert!(!shown.contains("NULL dt"), "{shown}");
}

/// A warehouse that grants the role fewer connections than the run asks
/// for: the dialog says the partitions the run will take, and why, not
/// the config's concurrency (QA: "4 partitions at once" at a limit of 1).
#[test]
fn the_parallel_line_says_what_the_warehouse_grants() {
    let mut job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    job.job.engine = crate::config::Engine::Postgres;
    let defaults = Defaults::default();
    let mut c = open(&job, (1..=8).collect());
    let parallel = |c: &ConfirmDialog| {
        let shown = draw(160, 40, |f| {
            c.render(f, f.area(), &Theme::default_theme(), &job)
        });
        shown
            .lines()
            .find(|l| l.contains("parallel"))
            .unwrap_or_default()
            .to_string()
    };
    let asked = defaults.concurrency;
    assert!(asked > 1, "the default asks for more than one");
    assert!(
        parallel(&c).contains(&format!("{asked} partitions at once ·")),
        "{}",
        parallel(&c)
    );
    c.granted = Some((1, "role \"lim\"'s CONNECTION LIMIT 2".into()));
    c.replan(&job, &defaults, now());
    let line = parallel(&c);
    assert!(
        line.contains(&format!(
            "1 partition at a time (of {asked} asked: role \"lim\"'s CONNECTION LIMIT 2) ·"
        )),
        "{line}"
    );
    assert_eq!(c.backfill().map(|b| b.partitions.len()), Some(8));
}

/// The dialog over eight partitions with `reason` typed into it, and the
/// dialog drawn at 80 columns.
fn with_a_reason_at_80_columns(reason: &str) -> (ConfirmDialog, String) {
    let job = job_view("fct_orders", false, "■■✗■·■■✗■■");
    let mut c = open(&job, (1..=8).collect());
    c.key(&code(KeyCode::Tab), &job, &Defaults::default(), now());
    for ch in reason.chars() {
        c.key(&key(ch), &job, &Defaults::default(), now());
    }
    c.key(&code(KeyCode::Enter), &job, &Defaults::default(), now());
    let shown = draw(80, 40, |f| {
        c.render(f, f.area(), &Theme::default_theme(), &job)
    });
    (c, shown)
}

/// At 80 columns a long value wraps under its own first column (a
/// hanging indent), never back under the labels, so that the label
/// column still reads as a list of what the dialog says.
#[test]
fn a_long_value_wraps_under_the_value_not_the_label() {
    let reason = "the vendor sent these days again, so they load again from upstream files";
    let (_, shown) = with_a_reason_at_80_columns(reason);
    let rows: Vec<&str> = shown.lines().collect();
    // The column (in bytes: every row starts " │") the dialog's text
    // starts in.
    let top = rows
        .iter()
        .position(|r| r.contains("range"))
        .expect("range");
    let text_at = rows[top].find("range").expect("range");
    let value_at = |r: &str| {
        let inside = r.get(text_at..).unwrap_or_default();
        inside.find(|c: char| c != ' ').map(|i| i + text_at)
    };
    for (label, last_words) in [("strategy", "under a lock"), ("reason", "files")] {
        let at = rows.iter().position(|r| r.contains(label)).expect(label);
        assert!(
            !rows[at].contains(last_words),
            "{label} fits one row:\n{shown}"
        );
        assert!(rows[at + 1].contains(last_words), "{label}:\n{shown}");
        assert_eq!(
            value_at(rows[at + 1]),
            Some(text_at + LABEL_WIDTH),
            "{label} wraps under its value:\n{shown}"
        );
    }
}

/// QA: a reason of 70 characters made the dialog's "same as" read
/// "(wider than this dialog…)" at 80 columns, its quoted value being one
/// piece: the command could be neither read nor copied off the screen.
/// The value wraps in quoted parts (`'\` ends each but the last) that a
/// shell joins into the reason again.
#[test]
fn a_long_reason_reads_in_the_command_at_80_columns() {
    let reason = "the vendor sent these days again, so they load again from upstream files";
    let (c, shown) = with_a_reason_at_80_columns(reason);
    assert!(!shown.contains("wider than this dialog"), "{shown}");
    // The command's rows, inside the dialog's borders.
    let rows: Vec<&str> = shown.lines().collect();
    let from = rows
        .iter()
        .position(|r| r.contains("same as"))
        .expect("same as");
    let command: Vec<&str> = rows[from + 1..]
        .iter()
        .map(|r| {
            let r = r.trim_end().trim_end_matches(['│', '┃']);
            r.split_once(['│', '┃'])
                .map_or(r, |(_, inside)| inside)
                .trim_end()
        })
        .take_while(|r| !r.trim().is_empty())
        .collect();
    assert!(command.len() >= 3, "{shown}");
    let joined = command
        .join("\n")
        .replace("'\\\n'", "")
        .replace(" \\\n  ", " ");
    assert_eq!(joined, c.command(), "{shown}");
    assert!(c.command().contains(&format!("--reason '{reason}'")));
}
