use super::*;
use crate::tui::fixture::{self, code, job_view, key, now};

fn app() -> App {
    let config = fixture::config("fct_orders", false);
    let start = Start {
        theme: Theme::default_theme(),
        mouse: true,
        note: None,
        theme_files: vec![("mine".into(), PathBuf::from("themes/mine.toml"))],
        no_color: false,
    };
    let mut app = App::start_with(config, start, now());
    app.start();
    app.update(Msg::Connected(Ok(Connection {
        url: "sqlite://w.db".into(),
        syntax: crate::config::Engine::Sqlite.into(),
        table_names: crate::config::TableNames::AnyCase,
        granted: None,
    })));
    let statuses = job_view("fct_orders", false, "■■✗■·■■✗■■").statuses;
    app.update(Msg::Status {
        job: "fct_orders".into(),
        result: Ok(StatesRead::States(statuses.into())),
    });
    app
}

fn type_line(app: &mut App, line: &str) -> Vec<Effect> {
    let mut effects = app.update(Msg::Key(key(':')));
    for c in line.chars() {
        effects.extend(app.update(Msg::Key(key(c))));
    }
    effects.extend(app.update(Msg::Key(code(crossterm::event::KeyCode::Enter))));
    effects
}

/// The config file read as `read` says, as the answer to the newest read
/// the console asked for: what the file says now.
fn config_read(app: &mut App, read: Result<crate::config::Config, String>) -> Vec<Effect> {
    let id = app.newest_config_read();
    app.update(Msg::ConfigRead { id, read })
}

/// Enter, and the config file's read it asks for (a run dialog's)
/// answered with the config the console holds, as a file left alone reads.
fn enter(app: &mut App) -> Vec<Effect> {
    let mut effects = app.update(Msg::Key(code(crossterm::event::KeyCode::Enter)));
    if let Some(i) = effects
        .iter()
        .position(|e| matches!(e, Effect::ReadConfig { .. }))
    {
        effects.remove(i);
        let config = app.config().clone();
        effects.extend(config_read(app, Ok(config)));
    }
    effects
}

/// Once connected, the jobs are linted on the warehouse as `idem lint`
/// does; an answer for a definition reloaded since is dropped.
#[test]
fn jobs_are_linted_on_the_warehouse_once_connected() {
    let config = fixture::config("fct_orders", false);
    let mut a = App::new(config, Theme::default_theme(), now());
    let effects = a.update(Msg::Connected(Ok(Connection {
        url: "sqlite://w.db".into(),
        syntax: crate::config::Engine::Sqlite.into(),
        table_names: crate::config::TableNames::AnyCase,
        granted: None,
    })));
    assert!(
        effects.iter().any(|e| matches!(e, Effect::Lint)),
        "{effects:?}"
    );
    let note = |message: &str| crate::tui::job::LintNote {
        error: true,
        message: message.into(),
    };
    let job = a.config().jobs[0].clone();
    let mut old = job.clone();
    old.sql = "select 0 as old".into();
    a.update(Msg::Linted {
        job: Box::new(old),
        notes: vec![note("stale")],
    });
    assert!(
        a.job().is_some_and(|j| j.lint().is_empty()),
        "a stale answer is dropped"
    );
    a.update(Msg::Linted {
        job: Box::new(job),
        notes: vec![note("line 9: the target is not there")],
    });
    assert!(
        a.job()
            .is_some_and(|j| j.lint().len() == 1 && j.lint()[0].error)
    );
}

#[test]
fn theme_files_are_read_in_the_background() {
    let mut a = app();
    let effects = type_line(&mut a, "theme mine");
    assert!(
        matches!(effects.as_slice(), [Effect::LoadTheme(p)] if p == &PathBuf::from("themes/mine.toml"))
    );
    assert_eq!(a.theme.name, "default", "nothing changes before it is read");
    let effects = type_line(&mut a, "theme ./elsewhere.toml");
    assert!(matches!(effects.as_slice(), [Effect::LoadTheme(_)]));
    a.update(Msg::ThemeLoaded(Err("cannot read theme x".into())));
    assert_eq!(a.message, Some((true, "cannot read theme x".into())));
    let light = Theme::builtin("light").expect("light");
    a.update(Msg::ThemeLoaded(Ok(light)));
    assert_eq!(a.theme.name, "light");
}

#[test]
fn run_plans_with_the_engine_and_the_request_carries_the_plan() {
    let mut a = app();
    let effects = type_line(&mut a, "run 2026-06-01..2026-06-09 --only failed,missing");
    // The dialog counts the source for the shrink guard's preview, and
    // reads the config file as saved now.
    assert!(
        matches!(
            effects.as_slice(),
            [Effect::Reconcile(_), Effect::ReadConfig { .. }]
        ),
        "{effects:?}"
    );
    let Modal::Confirm(c) = &a.modal else {
        panic!("no dialog: {:?}", a.message);
    };
    assert_eq!(c.partitions(), &[2, 4, 7]);
    let effects = enter(&mut a);
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("no run: {effects:?}");
    };
    let names: Vec<String> = req.partitions.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["2026-06-03", "2026-06-05", "2026-06-08"]);
    assert_eq!(req.prior_attempts.get("2026-06-08"), Some(&1));
    // The fixture's warehouse is SQLite: one writer.
    assert_eq!(a.runs[0].concurrency, 1);
    for (line, says) in [
        ("run --only running", "is a state, but not one a run takes"),
        ("run --concurrency 0", "out of range"),
        ("run 2026-07-01..2026-07-09", "no partitions"),
    ] {
        type_line(&mut a, line);
        let note = a.message.clone().unwrap_or_default().1;
        assert!(note.contains(says), "{line}: {note}");
    }
}

/// The console with a run of 2026-06-03..05 asked for (`:run`, Enter),
/// and that run's id.
fn app_running_three_days() -> (App, usize) {
    let mut a = app();
    type_line(&mut a, "run 2026-06-03..2026-06-05");
    let effects = enter(&mut a);
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("no run: {effects:?}");
    };
    let run = req.run;
    (a, run)
}

/// QA: a run from the console whose log could not be written (a full
/// disk, a state directory that is a file) kept none without a word; `idem
/// log --lines` later found nothing.
#[test]
fn a_run_whose_log_is_not_kept_says_so() {
    let (mut a, run) = app_running_three_days();
    a.update(Msg::RunLogNotKept {
        run,
        why: "cannot create /s/idem/logs: Not a directory".into(),
    });
    let (bad, note) = a.message.clone().unwrap_or_default();
    assert!(bad, "{note}");
    assert!(
        note.contains("run log not kept: cannot create /s/idem/logs"),
        "{note}"
    );
    assert_eq!(
        a.runs[0].log_not_kept.as_deref(),
        Some("cannot create /s/idem/logs: Not a directory")
    );
}

/// A run refused before it starts keeps its reason where the operator
/// finds it after the status bar moved on: on each partition's row and in
/// its log, none of them left "queued".
#[test]
fn a_run_refused_before_it_starts_says_why_on_its_rows() {
    let (mut a, run) = app_running_three_days();
    a.update(Msg::RunRejected {
        run,
        error: "cannot connect to sqlite://w.db: gone; nothing was run or recorded".into(),
    });
    a.update(Msg::Key(key('x')));
    let r = &a.runs[0];
    assert_eq!(r.partitions.len(), 3);
    for (i, p) in r.partitions.iter().enumerate() {
        assert_eq!(p.state, crate::tui::runs::RunPartState::NotRun);
        assert!(
            p.error
                .as_deref()
                .is_some_and(|e| e.starts_with("not started: cannot connect")),
            "{:?}",
            p.error
        );
        assert!(
            r.logs
                .of(i)
                .iter()
                .any(|l| l.contains("nothing was run or recorded")),
            "the reason is in the partition's log"
        );
    }
}

/// `R` reads what is there now: a source count from before (the run
/// dialog's) is forgotten, not shown beside the new states as if as new.
#[test]
fn a_refresh_forgets_the_source_counts_from_before() {
    let mut a = app();
    let effects = type_line(&mut a, "run 2026-06-03");
    let [Effect::Reconcile(req), Effect::ReadConfig { .. }] = effects.as_slice() else {
        panic!("no source count: {effects:?}");
    };
    let id = req.id;
    let counts = crate::warehouse::Counts::from([("2026-06-03".to_string(), 206)]);
    a.update(Msg::Reconciled {
        id,
        result: Ok(crate::warehouse::SourceCounts {
            partitions: counts,
            null_partition: None,
        }),
    });
    a.update(Msg::Key(code(crossterm::event::KeyCode::Esc)));
    let source =
        |a: &App| a.shared.jobs.by_name("fct_orders").expect("job").statuses[2].rows_source;
    assert_eq!(source(&a), Some(206));
    a.update(Msg::Key(key('R')));
    assert_eq!(source(&a), None);
}

#[test]
fn drawing_and_stopping_are_messages() {
    let mut a = app();
    assert!(a.needs_redraw());
    a.update(Msg::Drawn);
    assert!(!a.needs_redraw());
    a.update(Msg::Resize(100, 30));
    assert!(a.needs_redraw());
    type_line(&mut a, "run 2026-06-03");
    enter(&mut a);
    let effects = a.update(Msg::Terminate);
    assert!(a.quit, "SIGTERM does not ask");
    assert!(matches!(
        effects.as_slice(),
        [Effect::Cancel(1), Effect::Quit { as_left }] if as_left.len() == 1 && as_left[0].0 == 1
    ));
}

/// The config as the file says it at a refresh: `fixture::config` with
/// `edit` applied to its text.
fn config_edited(edit: impl Fn(&str) -> String) -> crate::config::Config {
    let base = fixture::config("fct_orders", false);
    let text = format!(
        "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"fct_orders\"\ntarget = \"t\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-06-01\"\nend = \"2026-06-10\"\nsql = \"{}\"\n",
        base.jobs[0].sql
    );
    crate::config::parse(std::path::Path::new("idem.toml"), &edit(&text), &|_| None)
        .expect("config")
}

/// An edit to the config while the console is open is what its next run
/// uses: a refresh reads the file again, the changed job starts over from
/// its new definition (its states read again), and the status bar says so.
/// A file that no longer loads, or names another warehouse, keeps the
/// console on what it opened with, in the title bar until it is fixed.
#[test]
fn a_refresh_reloads_an_edited_config_or_says_why_not() {
    let mut a = app();
    assert!(a.job().is_some_and(|j| j.loaded));
    let effects = a.update(Msg::Key(key('R')));
    assert!(
        effects.iter().any(
            |e| matches!(e, Effect::ReadConfig { path, .. } if path == &PathBuf::from("idem.toml"))
        ),
        "{effects:?}"
    );

    // The same file: nothing happens (once read, as the fixture's lines
    // are not the file's).
    config_read(&mut a, Ok(config_edited(|t| t.to_string())));
    let same = config_read(&mut a, Ok(config_edited(|t| t.to_string())));
    assert!(same.is_empty(), "{same:?}");

    let fixed = config_edited(|t| t.replace("select 1 as id", "select 2 as id"));
    let effects = config_read(&mut a, Ok(fixed));
    assert!(a.config().jobs[0].sql.contains("select 2 as id"));
    let job = a.job().expect("a job");
    assert!(!job.loaded, "the changed job's states are read again");
    assert!(job.job.sql.contains("select 2 as id"));
    // Read again, and linted again on the warehouse.
    assert!(
        matches!(effects.as_slice(), [Effect::Refresh(names), Effect::Lint, Effect::ReadHistoryElsewhere] if names == &["fct_orders"]),
        "{effects:?}"
    );
    let (error, note) = a.message.clone().expect("a note");
    assert!(
        !error && note.contains("idem.toml changed: reloaded; changed fct_orders"),
        "{note}"
    );

    config_read(&mut a, Err("idem.toml:12:7: expected a string".into()));
    let why = a.config_error.clone().expect("kept");
    assert_eq!(
        why, "idem.toml:12:7 does not load: the console keeps the jobs it opened with",
        "where it fails stays in the title bar"
    );
    let (error, note) = a.message.clone().expect("the error");
    assert!(
        error && note.starts_with("idem.toml:12:7: expected a string"),
        "{note}"
    );
    assert!(a.config().jobs[0].sql.contains("select 2 as id"));
    // A periodic read that finds it still broken says nothing new; `R`
    // asks, and the status bar says the whole error again.
    a.shared.message = None;
    let still = || Err("idem.toml:12:7: expected a string".into());
    config_read(&mut a, still());
    assert_eq!(a.message, None, "a quiet re-read repeats nothing");
    a.update(Msg::Key(key('R')));
    config_read(&mut a, still());
    let (error, note) = a.message.clone().expect("the error again");
    assert!(
        error && note.starts_with("idem.toml:12:7: expected a string"),
        "{note}"
    );

    let elsewhere = config_edited(|t| t.replace("sqlite://w.db", "sqlite://other.db"));
    config_read(&mut a, Ok(elsewhere));
    let why = a.config_error.clone().expect("kept");
    assert!(why.contains("restart"), "{why}");
    assert!(a.config().warehouse.url.contains("w.db"));

    // Fixed again: the title bar's note goes.
    config_read(
        &mut a,
        Ok(config_edited(|t| {
            t.replace("select 1 as id", "select 2 as id")
        })),
    );
    assert!(a.config_error.is_none());
}

/// R says "refreshing…" while its reads are out, and no longer once they
/// are back: a failed one says why instead.
#[test]
fn refreshing_ends_when_the_reads_do() {
    let mut a = app();
    let effects = a.update(Msg::Key(key('R')));
    assert!(
        effects.iter().any(|e| matches!(e, Effect::Refresh(_))),
        "{effects:?}"
    );
    assert_eq!(a.message, Some((false, "refreshing…".into())));
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Err(Unread::of_warehouse("connection refused")),
    });
    assert_eq!(
        a.message,
        Some((true, "refresh failed: connection refused".into()))
    );
    a.update(Msg::Key(key('R')));
    let statuses = job_view("fct_orders", false, "■■✗■·■■✗■■").statuses;
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Ok(StatesRead::States(statuses.into())),
    });
    assert_eq!(a.message, None);
}

/// `:goto` on a date shaped right that does not exist says so, rather than
/// asking for the format it was typed in.
#[test]
fn goto_a_date_that_does_not_exist_says_so() {
    let mut a = app();
    type_line(&mut a, "goto 2026-02-30");
    assert_eq!(a.message, Some((true, "2026-02-30: no such date".into())));
    type_line(&mut a, "goto June");
    assert_eq!(
        a.message,
        Some((true, ":goto needs a partition like YYYY-MM-DD".into()))
    );
}

/// Under NO_COLOR `:theme light` would hide the selection as a start with
/// it would: mono stays, and the status bar says why.
#[test]
fn no_color_keeps_mono_on_theme_commands() {
    let config = fixture::config("fct_orders", false);
    let start = Start {
        theme: Theme::builtin("mono").unwrap(),
        mouse: true,
        note: None,
        theme_files: vec![("mine".into(), PathBuf::from("themes/mine.toml"))],
        no_color: true,
    };
    let mut a = App::start_with(config, start, now());
    for name in ["light", "mine"] {
        let effects = type_line(&mut a, &format!("theme {name}"));
        assert!(effects.is_empty(), "{effects:?}");
        assert_eq!(a.theme.name, "mono");
        assert_eq!(
            a.message,
            Some((
                true,
                format!("NO_COLOR is set: the mono theme stays, not {name}")
            ))
        );
    }
}

/// Below the minimum size the screen shows only how to quit, so keys must
/// not act on what it hides (a blind `r` then Enter started a run); the
/// quit key quits, asking first while a run is in flight, and the question
/// takes its answer (the screen: `tests/console.rs`
/// `the_too_small_screen_names_the_quit_key_and_shows_the_question`).
#[test]
fn a_terminal_too_small_answers_only_the_quit_key_and_the_question_it_shows() {
    let mut a = app();
    a.update(Msg::Resize(40, 10));
    let mut effects = a.update(Msg::Key(key('r')));
    effects.extend(enter(&mut a));
    assert!(effects.is_empty(), "{effects:?}");
    assert!(matches!(a.modal, Modal::None) && a.runs.is_empty());
    // A run in flight, and a dialog open when the terminal shrank.
    a.update(Msg::Resize(80, 24));
    type_line(&mut a, "run 2026-06-03");
    enter(&mut a);
    type_line(&mut a, "run 2026-06-05");
    assert!(matches!(a.modal, Modal::Confirm(_)));
    a.update(Msg::Resize(40, 10));
    let effects = enter(&mut a);
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(a.runs.len(), 1, "the hidden dialog started nothing");
    a.update(Msg::Key(key('q')));
    assert!(matches!(a.modal, Modal::Question(Question::Quit)));
    assert!(!a.quit);
    a.update(Msg::Key(key('y')));
    assert!(a.quit);
}

/// QA: `{ } < >` before any run did nothing and said nothing, as if the
/// keys were dead; each says there is no run to step through, and how to
/// start one.
#[test]
fn run_row_keys_without_a_run_say_there_is_none() {
    let mut a = app();
    for c in ['{', '}', '<', '>'] {
        a.shared.message = None;
        a.update(Msg::Key(key(c)));
        assert_eq!(
            a.message,
            Some((
                false,
                "no run yet: { } < > step through a run's partitions; r runs the selection".into()
            )),
            "{c}"
        );
        assert_ne!(a.focus, Focus::Runs, "{c}");
    }
}

/// Which jobs read which is as the connected server compares table names:
/// on a MariaDB folding them, a job reading `ORDERS` reads the target of
/// the job loading `orders` (the lineage view, stale (upstream) and
/// cascades follow it), a reloaded config is read so too, and two jobs
/// reading each other's target in capitals close a cycle, said in the
/// status bar as the config error it is.
#[test]
fn lineage_compares_table_names_as_the_connected_server_does() {
    let (job, config) = (mysql_job, mysql_config);
    let jobs = [job("orders", "raw"), job("report", "ORDERS")];
    let mut a = App::new(config(&jobs), Theme::default_theme(), now());
    assert!(
        a.lineage.downstream("orders").is_empty(),
        "by case, unasked"
    );
    a.update(folding_server());
    assert_eq!(a.lineage.downstream("orders"), ["report"]);
    config_read(
        &mut a,
        Ok(config(&[
            job("orders", "raw"),
            job("report", "ORDERS"),
            job("summary", "Report"),
        ])),
    );
    assert_eq!(
        a.lineage.downstream_closure("orders"),
        ["report", "summary"]
    );

    let mut b = App::new(
        config(&[job("a", "B"), job("b", "A")]),
        Theme::default_theme(),
        now(),
    );
    assert!(b.message.is_none(), "{:?}", b.message);
    b.update(folding_server());
    let said = b.message.clone().unwrap_or_default();
    assert!(
        said.0 && said.1.contains("jobs depend on each other in a cycle: "),
        "{said:?}"
    );
}

/// A job a reload adds is linted as the connected server reads it until
/// the warehouse's lint answers: on a MariaDB folding table names, one
/// reading `REPORT` reads its own target (QA: it was linted by the
/// engine's default, by case, and its badge said nothing).
#[test]
fn a_job_a_reload_adds_is_linted_as_the_connected_server_reads_it() {
    let (job, config) = (mysql_job, mysql_config);
    let mut a = App::new(
        config(&[job("orders", "raw")]),
        Theme::default_theme(),
        now(),
    );
    a.update(folding_server());
    config_read(
        &mut a,
        Ok(config(&[job("orders", "raw"), job("report", "REPORT")])),
    );
    let lint = a.jobs.by_name("report").map(|j| j.lint().to_vec());
    let lint = lint.unwrap_or_default();
    assert!(
        lint.iter().any(|n| n.message.contains("own target")),
        "{lint:?}"
    );
}

/// A daily job of a MySQL warehouse loading the table of its name from
/// `reads`.
fn mysql_job(name: &str, reads: &str) -> String {
    format!(
        "[[jobs]]\nname = \"{name}\"\ntarget = \"{name}\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-06-01\"\n\
         sql = '''select id, dt from {reads} where dt >= :start and dt < :end'''\n"
    )
}

/// idem.toml of a MySQL warehouse with `jobs`.
fn mysql_config(jobs: &[String]) -> crate::config::Config {
    let text = format!("[warehouse]\nurl = \"mysql://h/shop\"\n{}", jobs.concat());
    crate::config::parse(std::path::Path::new("idem.toml"), &text, &|_| None)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Connected to a server that folds table names (a MariaDB).
fn folding_server() -> Msg {
    Msg::Connected(Ok(Connection {
        url: "mysql://h/shop".into(),
        syntax: crate::config::Engine::MySql.into(),
        table_names: crate::config::TableNames::AnyCase,
        granted: None,
    }))
}

/// A cycle the server's table names close is kept in the title bar, as a
/// config that does not load is, while notes come and go in the status
/// bar and the same file is read again; a reload that opens it ends it
/// (QA: it was said once in the status bar, soon replaced by other notes,
/// while nothing showed stale (upstream) and nothing said why).
#[test]
fn a_lineage_cycle_found_at_connect_stays_in_the_title_bar_until_a_reload_fixes_it() {
    let cyclic = || mysql_config(&[mysql_job("a", "B"), mysql_job("b", "A")]);
    let mut a = App::new(cyclic(), Theme::default_theme(), now());
    a.start();
    a.update(folding_server());
    let said = "idem.toml:10:1: jobs depend on each other in a cycle: a → b → a";
    assert_eq!(a.config_error_shown(), Some(said));
    a.update(Msg::Key(key('R')));
    for job in ["a", "b"] {
        a.update(Msg::Status {
            job: job.into(),
            result: Ok(StatesRead::States(Vec::new().into())),
        });
    }
    config_read(&mut a, Ok(cyclic()));
    assert_eq!(a.config_error_shown(), Some(said));
    config_read(
        &mut a,
        Ok(mysql_config(&[mysql_job("a", "B"), mysql_job("b", "raw")])),
    );
    assert_eq!(a.config_error_shown(), None);
    assert_eq!(a.lineage.downstream("b"), ["a"]);
}

mod kept;
