//! The console in-process: snapshots of what it draws (ratatui TestBackend +
//! insta), its update logic as key sequences, and a key fuzz. The app state
//! comes from the deterministic demo at a fixed date, drawn at a fixed "now".

use std::collections::HashSet;
use std::sync::OnceLock;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use idem::config::{Config, DefinitionChange, LAYOUT_ONLY_NOTE};
use idem::engine::{Backfill, Event, FailureCause};
use idem::partition::{Partition, RangeEnd};
use idem::state::{LoadState, PartitionStatus, StatesRead};
use idem::tui::app::{
    Connection, DiffRequest, Effect, Focus, LintNote, LoadsRequest, Modal, Question,
    ReconcileRequest, VerifyRequest,
};
use idem::tui::{App, Msg, Theme, Unread, keys, view};
use idem::warehouse::sql::Syntax;
use idem::warehouse::{Difference, SourceCounts, Verification, Warehouse};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Modifier;

fn day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 6, 15).unwrap()
}

fn now() -> NaiveDateTime {
    day().and_hms_opt(3, 12, 0).unwrap()
}

struct Fixture {
    _dir: tempfile::TempDir,
    config: Config,
    statuses: Vec<(String, Vec<PartitionStatus>)>,
}

/// The demo at a fixed date, created once per test binary; ledger times,
/// operator and host are set to fixed values so snapshots are stable.
fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        std::thread::spawn(|| {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async {
                let dir = tempfile::tempdir().unwrap();
                let demo = idem::demo::create_at(dir.path(), day(), &|_| {})
                    .await
                    .unwrap();
                let mut config = idem::config::load(&demo.config).unwrap();
                // The default's name, as a console opened in the demo's
                // folder has it: the dialog's "same as:" names no --config.
                config.path = std::path::PathBuf::from(idem::cli::DEFAULT_CONFIG);
                let wh = idem::warehouse::Warehouse::connect(&config.warehouse, 2)
                    .await
                    .unwrap();
                let lineage = idem::lineage::Lineage::of(&config).unwrap();
                let mut statuses = Vec::new();
                for job in &config.jobs {
                    let mut s = idem::state::job_status_in(
                        &wh,
                        &config,
                        &lineage,
                        job,
                        now(),
                        &HashSet::new(),
                        &idem::state::StatusScope::default(),
                    )
                    .await
                    .unwrap()
                    .statuses;
                    for st in &mut s {
                        for a in [&mut st.last_attempt, &mut st.last_success]
                            .into_iter()
                            .flatten()
                        {
                            let a = std::sync::Arc::make_mut(a);
                            a.started_at = "2026-06-14T02:00:00.000Z".into();
                            a.finished_at = "2026-06-14T02:00:01.250Z".into();
                            a.operator = "ops".into();
                            a.host = "demo".into();
                            a.run_id = "run".into();
                        }
                    }
                    statuses.push((job.name.clone(), s));
                }
                wh.close().await;
                Fixture {
                    _dir: dir,
                    config,
                    statuses,
                }
            })
        })
        .join()
        .unwrap()
    })
}

/// The console's warehouse connected: a SQLite one at `url`.
fn connected(url: &str) -> Msg {
    Msg::Connected(Ok(Connection {
        url: url.into(),
        syntax: idem::config::Engine::Sqlite.into(),
        table_names: idem::config::TableNames::AnyCase,
        granted: None,
    }))
}

fn app_with(theme: Theme, w: u16, h: u16) -> App {
    app_of(fixture().config.clone(), theme, w, h)
}

/// The console over the demo's warehouse and states, with `config`.
fn app_of(config: Config, theme: Theme, w: u16, h: u16) -> App {
    let f = fixture();
    let mut app = App::new(config, theme, now());
    app.update(Msg::Resize(w, h));
    app.start();
    let effects = app.update(connected("sqlite:///demo/warehouse.db"));
    assert!(
        matches!(effects.as_slice(), [Effect::ReadConfig { .. }, Effect::Refresh(names), Effect::Lint, Effect::ReadHistoryElsewhere] if names.len() == 4),
        "{effects:?}"
    );
    for (job, s) in &f.statuses {
        app.update(Msg::Status {
            job: job.clone(),
            result: Ok(StatesRead::States(s.clone().into())),
        });
    }
    app.update(Msg::Tick(now()));
    app
}

fn app(w: u16, h: u16) -> App {
    app_with(Theme::default_theme(), w, h)
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn ctrl_c() -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL))
}

/// Types `text`; the config file's reads it asks for (the run dialog's,
/// a refresh's) are answered at once with the config the console holds,
/// as a file left alone reads, and are not among the effects returned
/// (`App::update` shows them).
fn keys(app: &mut App, text: &str) -> Vec<Effect> {
    let mut out = Vec::new();
    for c in text.chars() {
        let msg = match c {
            '\n' => code(KeyCode::Enter),
            '\x1b' => code(KeyCode::Esc),
            '\t' => code(KeyCode::Tab),
            c => key(c),
        };
        let mut effects = app.update(msg);
        while let Some(i) = effects
            .iter()
            .position(|e| matches!(e, Effect::ReadConfig { .. }))
        {
            effects.remove(i);
            let config = app.config().clone();
            effects.extend(config_read(app, Ok(config)));
        }
        out.extend(effects);
    }
    out
}

/// The config file read as `read` says, as the answer to the newest read
/// the console asked for: what the file says now.
fn config_read(app: &mut App, read: Result<Config, String>) -> Vec<Effect> {
    let id = app.newest_config_read();
    app.update(Msg::ConfigRead { id, read })
}

fn render(app: &App) -> Terminal<TestBackend> {
    let (w, h) = app.size;
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| view::render(f, app)).unwrap();
    t
}

fn text(app: &App) -> String {
    let t = render(app);
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Which cells are reversed (R), bold (B), underlined (U), dim (D) or plain.
fn style_map(app: &App) -> String {
    let t = render(app);
    let buf = t.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            let m = buf[(x, y)].modifier;
            out.push(if m.contains(Modifier::REVERSED) {
                'R'
            } else if m.contains(Modifier::UNDERLINED) {
                'U'
            } else if m.contains(Modifier::BOLD) {
                'B'
            } else if m.contains(Modifier::DIM) {
                'D'
            } else {
                '.'
            });
        }
        out.push('\n');
    }
    out
}

fn select_job(app: &mut App, name: &str) {
    keys(app, &format!(":job {name}\n"));
    assert_eq!(app.job().unwrap().job.name, name);
}

fn partition(app: &App, name: &str) -> usize {
    let j = app.job().unwrap();
    let p = Partition::parse(j.job.grain, name, RangeEnd::From).unwrap();
    j.index_of(p).unwrap()
}

fn failed_days(app: &App) -> Vec<String> {
    let j = app.job().unwrap();
    (0..j.partitions.len())
        .filter(|i| j.state_at(*i) == Some(LoadState::Failed))
        .map(|i| j.partitions[i].name())
        .collect()
}

// ---- snapshots ---------------------------------------------------------------

#[test]
fn snapshot_main_80x24() {
    insta::assert_snapshot!(text(&app(80, 24)));
}

#[test]
fn snapshot_main_140x40() {
    insta::assert_snapshot!(text(&app(140, 40)));
}

#[test]
fn snapshot_calendar_hour() {
    let mut a = app(100, 32);
    select_job(&mut a, "fct_pageviews_hourly");
    insta::assert_snapshot!(text(&a));
}

#[test]
fn snapshot_calendar_month() {
    let mut a = app(100, 30);
    select_job(&mut a, "agg_revenue_monthly");
    insta::assert_snapshot!(text(&a));
}

#[test]
fn snapshot_calendar_rows_view() {
    let mut a = app(100, 30);
    keys(&mut a, "n");
    insta::assert_snapshot!(text(&a));
}

#[test]
fn snapshot_confirm_dialog() {
    let mut a = app(110, 34);
    keys(&mut a, "fr");
    assert!(matches!(a.modal, Modal::Confirm(_)));
    insta::assert_snapshot!(text(&a));
}

#[test]
fn snapshot_help_overlay() {
    let mut a = app(110, 40);
    keys(&mut a, "?");
    insta::assert_snapshot!(text(&a));
}

/// The help reads a page at a time and jumps to its end: PgDn closed it,
/// and a long help was read a line at a time.
#[test]
fn the_help_pages_down_and_jumps_to_its_end() {
    let mut a = app(110, 40);
    keys(&mut a, "?");
    a.update(code(KeyCode::PageDown));
    let Modal::Help { scroll: paged } = a.modal else {
        panic!("PgDn closed the help");
    };
    assert!(paged > 1, "{paged}");
    assert!(
        text(&a).contains(&format!("lines {}–", paged + 1)),
        "{}",
        text(&a)
    );
    a.update(code(KeyCode::End));
    let Modal::Help { scroll: end } = a.modal else {
        panic!("End closed the help");
    };
    assert!(text(&a).contains("States"), "the end shows the legend");
    keys(&mut a, "g");
    assert!(matches!(a.modal, Modal::Help { scroll: 0 }), "{end}");
    keys(&mut a, "x");
    assert!(matches!(a.modal, Modal::None), "any other key closes it");
}

#[test]
fn snapshot_too_small() {
    let a = app(50, 12);
    insta::assert_snapshot!(text(&a));
}

#[test]
fn snapshot_mono_theme() {
    let a = app_with(Theme::builtin("mono").unwrap(), 80, 24);
    insta::assert_snapshot!(format!("{}\n{}", text(&a), style_map(&a)));
}

#[test]
fn snapshot_error_groups() {
    let mut a = app(100, 30);
    keys(&mut a, "e");
    insta::assert_snapshot!(text(&a));
}

/// The run's `partition` of fct_orders loaded 10,412 rows.
fn succeed_in_run(a: &mut App, run: usize, partition: &str) {
    a.update(Msg::Engine {
        run,
        event: Event::PartitionSucceeded {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            partition: partition.to_string(),
            attempt: 2,
            rows_deleted: 0,
            rows_inserted: 10412,
            rows_updated: 0,
            rows_after: 10412,
            duration_ms: 1250,
            fingerprint: "10412:0123456789abcdef".into(),
            content_changed: true,
        },
    });
}

/// The run's `partition` failed for good, with `error`.
fn fail_in_run(a: &mut App, run: usize, partition: &str, error: &str) {
    end_in_run(a, run, partition, error, FailureCause::Error);
}

/// The run's `partition` ended for good without loading, with `error`, for
/// this `cause`.
fn end_in_run(a: &mut App, run: usize, partition: &str, error: &str, cause: FailureCause) {
    a.update(Msg::Engine {
        run,
        event: Event::PartitionFailed {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            partition: partition.to_string(),
            attempt: 2,
            error: error.to_string(),
            cause,
            will_retry: false,
            duration_ms: 10,
        },
    });
}

/// The run of [`run_in_progress`] ends: 1 succeeded, 1 failed, 1 never
/// started.
fn end_run_in_progress(a: &mut App, run: usize) -> Vec<Effect> {
    a.update(Msg::Engine {
        run,
        event: Event::RunFinished {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            succeeded: 1,
            failed: 1,
            not_started: 1,
            rolled_back: 0,
            refused: 0,
            lock_held: 0,
            empty: 0,
            cancelled: false,
            duration_ms: 3000,
        },
    })
}

/// Starts a run of the three failed days and feeds it engine events.
fn run_in_progress(w: u16, h: u16) -> (App, usize, Vec<String>) {
    let mut a = app(w, h);
    let failed = failed_days(&a);
    keys(&mut a, "fr");
    let effects = keys(&mut a, "\n");
    let Some(Effect::StartRun(req)) = effects.into_iter().next() else {
        panic!("no run started");
    };
    let names: Vec<String> = req.partitions.iter().map(|p| p.name()).collect();
    assert_eq!(names, failed);
    let run = req.run;
    let ev = |event: Event| Msg::Engine { run, event };
    a.update(ev(Event::RunStarted {
        run_id: "r1".into(),
        job: "fct_orders".into(),
        strategy: idem::config::Strategy::ReplacePartition,
        partitions: names.clone(),
        concurrency: 4,
        reason: None,
        upstream_not_loaded: Vec::new(),
        upstream_unread: Vec::new(),
    }));
    for p in &names[..2] {
        a.update(ev(Event::PartitionStarted {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            partition: p.clone(),
            attempt: 2,
        }));
    }
    for line in [
        "BEGIN IMMEDIATE",
        "DELETE 0 rows",
        "INSERT 10,412 rows",
        "COMMIT",
    ] {
        a.update(ev(Event::PartitionLog {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            partition: names[0].clone(),
            line: line.into(),
        }));
    }
    succeed_in_run(&mut a, run, &names[0]);
    a.update(Msg::Tick(now() + Duration::seconds(2)));
    (a, run, names)
}

#[test]
fn snapshot_run_in_progress_80x24() {
    let (mut a, _, _) = run_in_progress(80, 24);
    keys(&mut a, "\tj");
    assert_eq!(a.focus, Focus::Runs);
    insta::assert_snapshot!(text(&a));
}

/// QA: at 80x24 with a run in the run pane, a failed partition's row cut
/// its error after thirty columns, and the log box, two rows high, showed
/// its end: the error read whole only with `idem log`. Moving onto the
/// row says its error's first line whole in the status line.
#[test]
fn a_failed_rows_error_reads_whole_at_80x24() {
    let (mut a, run, names) = run_in_progress(80, 24);
    let first = "UNIQUE constraint failed: fct_orders.order_id, fct_orders.customer_id (while inserting the window's rows)";
    fail_in_run(
        &mut a,
        run,
        &names[1],
        &format!("{first}\nDETAIL: Key (order_id)=(42)"),
    );
    keys(&mut a, "\tj");
    assert_eq!(a.runs[0].selected, 1);
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let screen = text(&a);
    assert!(
        words(&screen).contains(&format!("{} failed: {first}", names[1])),
        "{screen}"
    );
    let note = screen.lines().rev().take(2).collect::<String>();
    assert!(!note.contains("DETAIL"), "the first line alone: {screen}");
}

/// QA: a run whose partition's log could not be written on disk (a full
/// disk) left a mark that `idem log` reads ("a run could not write it:
/// …"), but the console's log pane said nothing, and offered `idem log`
/// for lines it let go that the disk does not have. It says the log is
/// not written, and why, as `idem log` will.
#[test]
fn a_partition_log_not_written_on_disk_says_so_and_why() {
    let (mut a, run, names) = run_in_progress(120, 40);
    let why = format!(
        "cannot write /s/idem/logs/fct_orders/{}.log: No space left on device (os error 28)",
        names[0]
    );
    a.update(Msg::PartitionLogUnwritten {
        run,
        partition: names[0].clone(),
        why: why.clone(),
    });
    keys(&mut a, "\t");
    let screen = text(&a);
    assert!(
        screen.contains(&format!("log {} · not written on disk", names[0])),
        "{screen}"
    );
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let log = a.runs[0].logs.of(0).back().cloned().unwrap_or_default();
    assert_eq!(
        log,
        format!("its run log on disk could not be written: {why}")
    );
    assert!(
        words(&screen).contains("space left on device (os error 28)"),
        "{screen}"
    );
    // Another partition's log was written: its pane says nothing of it.
    keys(&mut a, "j");
    let screen = text(&a);
    assert!(!screen.contains("not written on disk"), "{screen}");
}

#[test]
fn snapshot_run_in_progress() {
    let (a, _, _) = run_in_progress(120, 40);
    insta::assert_snapshot!(text(&a));
}

// ---- update logic ----------------------------------------------------------

fn footer(app: &App) -> String {
    text(app).lines().last().unwrap_or("").to_string()
}

/// The footer shows the keys of the focused pane, in what they do there
/// (in the runs pane j k step partitions, h l runs, [ ] G the log; in the
/// jobs pane j k step jobs) and the dialog's keys that apply to its job
/// (S shrink for a replace job, not for a merge job). QA: the runs pane's
/// said `h l [ ]` and left out j k, Enter and G, its most used keys.
#[test]
fn the_footer_follows_the_focused_pane_and_the_dialog() {
    let (mut a, _, _) = run_in_progress(140, 40);
    assert_eq!(a.focus, Focus::Calendar);
    let calendar = footer(&a);
    assert!(
        !calendar.contains("h l run") && !calendar.contains("next job"),
        "{calendar}"
    );
    keys(&mut a, "\t");
    assert_eq!(a.focus, Focus::Runs);
    let runs = footer(&a);
    assert_eq!(
        runs.trim_end(),
        " j k partition  { } unloaded  [ ] log  G follow  Enter calendar  c cancel  h l run  \
         < > first/last  Tab focus  r run  ? help  q quit"
    );
    // Narrower, the least used give way from the end, never help and quit.
    a.update(Msg::Resize(80, 24));
    assert_eq!(
        footer(&a).trim_end(),
        " j k partition  { } unloaded  [ ] log  G follow  ? help  q quit"
    );
    a.update(Msg::Resize(140, 40));
    keys(&mut a, "\t");
    assert_eq!(a.focus, Focus::Jobs);
    assert!(
        footer(&a).contains("j next job  k prev job"),
        "{}",
        footer(&a)
    );
    let mut a = app(140, 40);
    keys(&mut a, "r");
    let replace = footer(&a);
    assert!(replace.contains("S shrink"), "{replace}");
    assert!(!replace.contains("through latest"), "{replace}");
    keys(&mut a, "\u{1b}");
    select_job(&mut a, "dim_customers");
    keys(&mut a, "r");
    let merge = footer(&a);
    assert!(
        merge.contains("Enter run") && !merge.contains("shrink"),
        "{merge}"
    );
    // Help says what h, l, j, { and > do in the runs pane.
    keys(&mut a, "\u{1b}?");
    let help = text(&a);
    assert!(help.contains("previous run (runs pane)"), "{help}");
    assert!(
        help.contains("next job; next partition (runs pane)"),
        "{help}"
    );
    keys(&mut a, "jjjjjjjjjj");
    let help = text(&a);
    assert!(
        help.contains("runs pane: the run's previous partition that did not load"),
        "{help}"
    );
    assert!(
        help.contains("runs pane: the run's last partition"),
        "{help}"
    );
}

#[test]
fn range_selection_extends_with_movement_and_clears() {
    let mut a = app(100, 30);
    keys(&mut a, ":goto 2026-05-04\n");
    let start = partition(&a, "2026-05-04");
    assert_eq!(a.job().unwrap().cursor, start);
    keys(&mut a, "vll");
    let sel: Vec<usize> = a.job().unwrap().selected.iter().copied().collect();
    assert_eq!(sel, vec![start, start + 1, start + 2]);
    keys(&mut a, "j");
    assert_eq!(
        a.job().unwrap().selected.len(),
        10,
        "a week down extends by 7"
    );
    keys(&mut a, "hh");
    assert_eq!(a.job().unwrap().selected.len(), 8);
    // v again ends range mode: movement no longer changes the selection.
    keys(&mut a, "vl");
    assert_eq!(a.job().unwrap().selected.len(), 8);
    keys(&mut a, "\x1b");
    assert!(a.job().unwrap().selected.is_empty());
}

#[test]
fn f_m_s_select_by_state() {
    let mut a = app(100, 30);
    keys(&mut a, "f");
    assert_eq!(a.job().unwrap().selected.len(), 3);
    keys(&mut a, "m");
    let j = a.job().unwrap();
    assert!(!j.selected.is_empty());
    assert!(
        j.selected
            .iter()
            .all(|i| j.state_at(*i) == Some(LoadState::Missing))
    );
    select_job(&mut a, "dim_customers");
    keys(&mut a, "s");
    let j = a.job().unwrap();
    assert!(j.selected.len() > 10);
    assert!(
        j.selected
            .iter()
            .all(|i| j.state_at(*i) == Some(LoadState::Stale))
    );
}

#[test]
fn the_equivalent_command_names_a_config_other_than_the_default() {
    let f = fixture();
    let mut config = f.config.clone();
    config.path = std::path::PathBuf::from("/srv/etl/idem_tmp.toml");
    let mut a = App::new(config, Theme::default_theme(), now());
    a.update(Msg::Resize(100, 30));
    a.start();
    a.update(connected("sqlite:///demo/warehouse.db"));
    for (job, s) in &f.statuses {
        a.update(Msg::Status {
            job: job.clone(),
            result: Ok(StatesRead::States(s.clone().into())),
        });
    }
    let failed = failed_days(&a);
    keys(&mut a, &format!(":goto {}\n", failed[0]));
    keys(&mut a, "r");
    let Modal::Confirm(c) = &a.modal else {
        panic!("no confirm dialog");
    };
    // Pasted elsewhere, it runs on the warehouse the console shows.
    assert_eq!(
        a.equivalent_command(c),
        format!(
            "idem --config /srv/etl/idem_tmp.toml run fct_orders --from {0} --to {0}",
            failed[0]
        )
    );
}

#[test]
fn confirm_dialog_filters_and_equivalent_command() {
    let mut a = app(100, 30);
    let failed = failed_days(&a);
    // A range from two days before the first failure to the last one.
    let first = partition(&a, &failed[0]);
    let goto = format!(":goto {}\n", a.job().unwrap().partitions[first - 2].name());
    keys(&mut a, &goto);
    keys(&mut a, "vllll");
    keys(&mut a, "r");
    let Modal::Confirm(c) = &a.modal else {
        panic!("no confirm dialog");
    };
    assert_eq!(a.confirm_partitions(c).len(), 5);
    let from = a.job().unwrap().partitions[first - 2].name();
    assert_eq!(
        a.equivalent_command(c),
        format!("idem run fct_orders --from {from} --to {}", failed[2])
    );
    keys(&mut a, "f");
    let Modal::Confirm(c) = &a.modal else {
        panic!("dialog closed");
    };
    assert_eq!(a.confirm_partitions(c).len(), 3);
    assert_eq!(
        a.equivalent_command(c),
        format!(
            "idem run fct_orders --from {} --to {} --only failed",
            failed[0], failed[2]
        )
    );
    keys(&mut a, "m");
    let Modal::Confirm(c) = &a.modal else {
        panic!("dialog closed");
    };
    assert!(a.confirm_partitions(c).is_empty());
    // Nothing matches: Enter runs nothing and says so, keeping the dialog
    // (and its reason) to choose others in.
    let effects = keys(&mut a, "\n");
    assert!(effects.is_empty());
    assert!(matches!(a.modal, Modal::Confirm(_)));
    let said = &a.message.as_ref().unwrap().1;
    assert!(said.contains("nothing ran"), "{said}");
}

#[test]
fn confirm_with_reason_starts_the_run_and_esc_backs_out() {
    let mut a = app(100, 30);
    keys(&mut a, "fr\x1b");
    assert!(matches!(a.modal, Modal::None));
    assert_eq!(
        a.job().unwrap().selected.len(),
        3,
        "Esc keeps the selection"
    );
    keys(&mut a, "r\tfixed refunds\n");
    let effects = keys(&mut a, "\n");
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("expected one run, got {effects:?}");
    };
    assert_eq!(req.reason.as_deref(), Some("fixed refunds"));
    assert_eq!(req.partitions.len(), 3);
    assert_eq!(a.runs.len(), 1);
    assert!(a.job().unwrap().selected.is_empty());
}

/// The job's target rows whose partition column is NULL are said in the
/// detail, beside the counts they are missing from, as long as a read
/// counts them (QA: the console counted them nowhere); a read that finds
/// nothing changed keeps them, one that counts none takes the note away.
#[test]
fn the_detail_says_the_rows_in_no_partition() {
    let mut a = app(140, 40);
    let job = a.job().unwrap().job.clone();
    let note = format!(
        "3 rows of {} have NULL {}: no partition counts them, and no run deletes them",
        job.target,
        job.partition_column.as_ref().unwrap()
    );
    assert!(!text(&a).contains("NULL"), "{}", text(&a));
    let statuses = fixture().statuses[0].1.clone();
    assert_eq!(fixture().statuses[0].0, job.name);
    let read = |n| Msg::Status {
        job: job.name.clone(),
        result: Ok(StatesRead::States(idem::state::JobStates {
            statuses: statuses.clone(),
            null_partition: Some(n),
        })),
    };
    a.update(read(3));
    assert!(text(&a).contains(&note), "{}", text(&a));
    a.update(Msg::Status {
        job: job.name.clone(),
        result: Ok(StatesRead::Unchanged),
    });
    assert!(text(&a).contains(&note), "{}", text(&a));
    a.update(read(0));
    assert!(!text(&a).contains("NULL"), "{}", text(&a));
}

#[test]
fn live_events_turn_cells_running_then_loaded() {
    let (mut a, run, names) = run_in_progress(120, 40);
    let j = a.job().unwrap();
    let i0 = partition(&a, &names[0]);
    let i1 = partition(&a, &names[1]);
    let i2 = partition(&a, &names[2]);
    assert_eq!(j.state_at(i0), Some(LoadState::Loaded));
    assert_eq!(j.state_at(i1), Some(LoadState::Running));
    assert_eq!(j.state_at(i2), Some(LoadState::Failed));
    // The cursor's partition tells of the attempt that just ended, until the
    // ledger read shows it; an older read keeps it.
    assert_eq!(j.cursor, i0);
    assert!(text(&a).contains("last attempt #2 succeeded · in this console's run · 1.2 s"));
    let f = fixture();
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Ok(StatesRead::States(f.statuses[0].1.clone().into())),
    });
    assert!(a.job().unwrap().live.contains_key(&names[0]));
    let mut newer = f.statuses[0].1.clone();
    for st in &mut newer {
        if let Some(at) = &mut st.last_attempt {
            std::sync::Arc::make_mut(at).attempt = 2;
        }
    }
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Ok(StatesRead::States(newer.into())),
    });
    assert!(!a.job().unwrap().live.contains_key(&names[0]));
    fail_in_run(
        &mut a,
        run,
        &names[1],
        "CHECK constraint failed: amount_usd >= 0",
    );
    assert_eq!(a.job().unwrap().state_at(i1), Some(LoadState::Failed));
    let effects = end_run_in_progress(&mut a, run);
    // The job, and the jobs that read it (their states may have gone stale).
    assert!(
        matches!(effects.as_slice(), [Effect::Refresh(n)] if n == &["fct_orders", "agg_revenue_monthly"]),
        "{effects:?}"
    );
    assert_eq!(a.active_runs(), 0);
    assert!(a.job().unwrap().in_flight.is_empty());
}

/// A run that ends without being cancelled (the warehouse gone, a merge
/// window failed) lists what it never started as not run, not cancelled;
/// its tab and summary count what succeeded alike.
#[test]
fn a_run_stopped_short_lists_what_it_never_started_as_not_run() {
    let (mut a, run, names) = run_in_progress(120, 40);
    fail_in_run(
        &mut a,
        run,
        &names[1],
        "no connection to the warehouse within the connect timeout",
    );
    end_run_in_progress(&mut a, run);
    let screen = text(&a);
    assert!(screen.contains("✗ #1 fct_orders 1/3"), "{screen}");
    assert!(
        screen.contains("finished: 1/3 succeeded · 1 failed · 1 not started"),
        "{screen}"
    );
    assert!(screen.contains(&format!("– {}", names[2])), "{screen}");
    assert!(screen.contains("not run"), "{screen}");
    assert!(!screen.contains("cancelled"), "{screen}");
}

/// QA: the server went away mid-run. The detail said "✗ failed · 2
/// attempts" beside "last attempt #3", and once the states were read again
/// "failed · 1 attempt" beside an attempt the ledger never got, without
/// saying so: `idem log` has nothing for it.
#[test]
fn an_attempt_the_ledger_could_not_record_is_said_unrecorded() {
    let mut a = app(120, 40);
    keys(&mut a, "fr");
    let Some(Effect::StartRun(req)) = keys(&mut a, "\n").into_iter().next() else {
        panic!("no run started");
    };
    let run = req.run;
    let first = req.partitions[0].name();
    assert_eq!(a.job().unwrap().cursor, partition(&a, &first));
    let ev = |event: Event| Msg::Engine { run, event };
    for (attempt, will_retry) in [(2, true), (3, false)] {
        a.update(ev(Event::PartitionStarted {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            partition: first.clone(),
            attempt,
        }));
        a.update(ev(Event::PartitionFailed {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            partition: first.clone(),
            attempt,
            error: "no connection to the warehouse within the connect timeout".into(),
            cause: FailureCause::Error,
            will_retry,
            duration_ms: 10,
        }));
    }
    let screen = text(&a);
    assert!(screen.contains("✗ failed · 3 attempts"), "{screen}");
    assert!(screen.contains("last attempt #3 failed"), "{screen}");
    // A read begun before the attempt ended lacks it, and says nothing.
    let ledger = fixture().statuses[0].1.clone();
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Ok(StatesRead::States(ledger.clone().into())),
    });
    assert!(!text(&a).contains("not recorded"), "{}", text(&a));
    let effects = a.update(ev(Event::RunFinished {
        run_id: "r1".into(),
        job: "fct_orders".into(),
        succeeded: 0,
        failed: 1,
        not_started: 2,
        rolled_back: 0,
        refused: 0,
        lock_held: 0,
        empty: 0,
        cancelled: false,
        duration_ms: 3000,
    }));
    assert!(
        matches!(effects.as_slice(), [Effect::Refresh(n)] if n[0] == "fct_orders"),
        "{effects:?}"
    );
    // The read begun after it still lacks it: the ledger never got it.
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Ok(StatesRead::States(ledger.into())),
    });
    let screen = text(&a);
    assert!(screen.contains("✗ failed · 1 attempt"), "{screen}");
    assert!(screen.contains("last attempt #3 failed"), "{screen}");
    assert!(
        screen.contains("not recorded in the ledger (the warehouse could not be written)"),
        "{screen}"
    );
}

#[test]
fn several_runs_at_once_are_each_listed() {
    let mut a = app(120, 40);
    let first = keys(&mut a, "fr\n");
    select_job(&mut a, "fct_pageviews_hourly");
    let second = keys(&mut a, "fr\n");
    // `f` moves the cursor, so the detail also asks for its loads.
    fn run(effects: &[Effect]) -> Option<&Effect> {
        effects.iter().find(|e| matches!(e, Effect::StartRun(_)))
    }
    let (Some(Effect::StartRun(r1)), Some(Effect::StartRun(r2))) = (run(&first), run(&second))
    else {
        panic!("two runs expected: {first:?} {second:?}");
    };
    assert_ne!(r1.run, r2.run);
    assert_eq!(r2.job.name, "fct_pageviews_hourly");
    assert_eq!(a.active_runs(), 2);
    assert_eq!(a.selected_run, 1);
    let screen = text(&a);
    assert!(screen.contains("#1 fct_orders 0/3"), "{screen}");
    assert!(screen.contains("#2 fct_pageviews_hourly 0/1"), "{screen}");
    assert!(screen.contains("▶ 2 running"), "{screen}");
}

/// While the question is open the run starts no new partition (its gate
/// is shut); answered no, it goes on.
#[test]
fn cancel_asks_first_then_cancels() {
    let (mut a, run, _) = run_in_progress(120, 40);
    let effects = keys(&mut a, "c");
    assert!(matches!(a.modal, Modal::Question(Question::CancelRun(r)) if r == run));
    assert!(
        matches!(effects.as_slice(), [Effect::Gate { run: Some(r), shut: true }] if *r == run),
        "{effects:?}"
    );
    let effects = keys(&mut a, "n");
    assert!(
        matches!(effects.as_slice(), [Effect::Gate { run: Some(r), shut: false }] if *r == run),
        "{effects:?}"
    );
    assert!(matches!(a.modal, Modal::None));
    keys(&mut a, "c");
    let effects = keys(&mut a, "y");
    assert!(matches!(effects.as_slice(), [Effect::Cancel(r)] if *r == run));
    assert!(a.runs[0].cancel_requested);
    assert!(!a.quit);
}

/// `c` on a run in flight stops it, for real: the view says it was
/// cancelled, the load it had in flight reads as rolled back and the
/// partitions it never started as not started. QA: both read "cancelled"
/// alike, the one that wrote (and undid) rows no different from the
/// others. The load is held in flight by another writer holding the
/// warehouse's write lock (SQLite has one writer): it waits for the lock
/// when the cancel comes. A demo of its own, as the lock would hold up the
/// other tests' reads of the shared one.
#[test]
fn c_cancels_a_run_in_flight_and_its_load_in_flight_reads_rolled_back() {
    use sqlx::{Connection, Executor};
    use tokio::time::timeout;
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let demo = rt.block_on(idem::demo::create_at(dir.path(), day(), &|_| {}));
    let demo = demo.unwrap();
    let config = idem::config::load(&demo.config).unwrap();
    let mut a = app_of(config.clone(), Theme::default_theme(), 120, 40);
    keys(&mut a, "fr");
    let Some(Effect::StartRun(req)) = keys(&mut a, "\n").into_iter().next() else {
        panic!("no run started");
    };
    let run = req.run;
    let names: Vec<String> = req.partitions.iter().map(|p| p.name()).collect();
    assert_eq!(names.len(), 3);
    let within = std::time::Duration::from_secs(30);
    let summary = rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 4).await.unwrap();
        let writer = sqlx::sqlite::SqliteConnectOptions::new().filename(&demo.database);
        let mut writer = sqlx::SqliteConnection::connect_with(&writer).await.unwrap();
        writer.execute("BEGIN IMMEDIATE").await.unwrap();
        let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
        let token = tokio_util::sync::CancellationToken::new();
        let gate = idem::engine::Gate::default();
        let engine = tokio::spawn({
            let (wh, backfill) = (wh.clone(), req.backfill.clone());
            let (token, gate) = (token.clone(), gate.clone());
            async move { idem::engine::run_gated(&wh, &backfill, &events, &token, &gate).await }
        });
        // Its first load in flight, waiting for the lock.
        loop {
            let event = timeout(within, received.recv()).await.unwrap().unwrap();
            let waiting = matches!(&event, Event::PartitionLog { line, .. }
                if line.starts_with("waiting for the lock"));
            a.update(Msg::Engine { run, event });
            if waiting {
                break;
            }
        }
        assert!(
            text(&a).contains(&format!("▶ {}    running", names[0])),
            "{}",
            text(&a)
        );
        // c asks, holding the next partitions back meanwhile (as the
        // console's background does with the effects); y cancels.
        let effects = keys(&mut a, "c");
        assert!(
            matches!(effects.as_slice(), [Effect::Gate { run: Some(r), shut: true }] if *r == run),
            "{effects:?}"
        );
        gate.shut();
        let effects = keys(&mut a, "y");
        assert!(
            matches!(effects.as_slice(), [Effect::Cancel(r)] if *r == run),
            "{effects:?}"
        );
        token.cancel();
        assert!(text(&a).contains("cancelling…"), "{}", text(&a));
        // The lock let go, the cancelled attempt is recorded.
        writer.execute("ROLLBACK").await.unwrap();
        while let Some(event) = timeout(within, received.recv()).await.unwrap() {
            a.update(Msg::Engine { run, event });
        }
        let summary = engine.await.unwrap();
        wh.close().await;
        summary
    });
    assert!(summary.cancelled, "{summary:?}");
    assert_eq!((summary.rolled_back, summary.not_started), (1, 3));
    assert_eq!(a.active_runs(), 0);
    let screen = text(&a);
    assert!(screen.contains("⊘ #1 fct_orders 0/3"), "{screen}");
    assert!(
        screen.contains("⊘ cancelled: 0/3 succeeded · 0 failed · 1 rolled back · 2 not started"),
        "{screen}"
    );
    let row = |name: &str| {
        let line = screen.lines().find(|l| l.contains(&format!("⊘ {name}")));
        line.unwrap_or_else(|| panic!("no row of {name} in {screen}"))
            .to_string()
    };
    assert!(row(&names[0]).contains("cancelled") && row(&names[0]).contains("rolled back"));
    for name in &names[1..] {
        assert!(row(name).contains("not started"), "{}", row(name));
    }
}

/// `}` from another pane goes to the runs pane, to the selected run's next
/// partition that did not load; `<` and `>` to its first and last.
#[test]
fn braces_go_to_the_runs_failed_partitions_from_any_pane() {
    let (mut a, run, names) = run_in_progress(120, 40);
    fail_in_run(
        &mut a,
        run,
        &names[1],
        "CHECK constraint failed: amount_usd >= 0",
    );
    assert_eq!(a.focus, Focus::Calendar);
    keys(&mut a, "}");
    assert_eq!((a.focus, a.runs[0].selected), (Focus::Runs, 1));
    assert!(
        text(&a).contains(&format!("›✗ {}", names[1])),
        "{}",
        text(&a)
    );
    keys(&mut a, ">");
    assert_eq!(a.runs[0].selected, 2);
    keys(&mut a, "<");
    assert_eq!(a.runs[0].selected, 0);
    keys(&mut a, "{");
    assert_eq!(a.runs[0].selected, 1);
    // Named once, by its error (QA: it was named twice).
    assert_eq!(
        a.message.as_ref().map(|(_, note)| note.as_str()),
        Some(
            format!(
                "the only partition of this run that did not load · {0} failed: CHECK constraint failed: amount_usd >= 0",
                names[1]
            )
            .as_str()
        )
    );
}

#[test]
fn quitting_asks_while_a_run_is_in_flight() {
    let (mut a, run, _) = run_in_progress(120, 40);
    let held = keys(&mut a, "q");
    assert!(matches!(a.modal, Modal::Question(Question::Quit)));
    assert!(matches!(
        held.as_slice(),
        [Effect::Gate {
            run: None,
            shut: true
        }]
    ));
    let going_on = keys(&mut a, "n");
    assert!(matches!(
        going_on.as_slice(),
        [Effect::Gate {
            run: None,
            shut: false
        }]
    ));
    assert!(!a.quit);
    a.update(ctrl_c());
    assert!(matches!(a.modal, Modal::Question(Question::Quit)));
    let effects = a.update(ctrl_c());
    assert!(a.quit);
    assert!(
        matches!(effects.as_slice(), [Effect::Cancel(r), Effect::Quit { as_left }] if *r == run && as_left.len() == 1 && as_left[0].0 == run)
    );
    // How far the run had got goes with it, for a run that does not end in
    // time to report itself (a server gone silent under it).
    let Some(Effect::Quit { as_left }) = effects.last() else {
        panic!("{effects:?}");
    };
    let total = a.runs[0].partitions.len();
    assert_eq!(
        as_left,
        &[(
            run,
            format!(
                "run r1: 1 of {total} partitions loaded, 1 in flight when the console was left"
            )
        )]
    );

    let mut idle = app(80, 24);
    let effects = keys(&mut idle, "q");
    assert!(idle.quit);
    assert!(matches!(effects.as_slice(), [Effect::Quit { as_left }] if as_left.is_empty()));
    let mut idle = app(80, 24);
    keys(&mut idle, ":");
    assert!(
        matches!(idle.update(ctrl_c()).as_slice(), [Effect::Quit { as_left }] if as_left.is_empty())
    );
}

/// The quit question counts its runs in words, and a run that ends while
/// it is asked leaves no "0 runs in flight" behind.
#[test]
fn the_quit_question_says_how_many_runs_it_cancels() {
    let (mut a, run, _) = run_in_progress(120, 40);
    keys(&mut a, "q");
    let screen = text(&a);
    assert!(
        screen.contains("1 run in flight, starting no new"),
        "{screen}"
    );
    assert!(screen.contains("cancel it?"), "{screen}");
    a.update(Msg::Engine {
        run,
        event: Event::RunFinished {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            succeeded: 1,
            failed: 0,
            not_started: 2,
            rolled_back: 0,
            refused: 0,
            lock_held: 0,
            empty: 0,
            cancelled: false,
            duration_ms: 3000,
        },
    });
    assert_eq!(a.active_runs(), 0);
    assert!(matches!(a.modal, Modal::Question(Question::Quit)));
    let screen = text(&a);
    assert!(!screen.contains("0 run"), "{screen}");
    assert!(
        screen.contains("No run is in flight any more. Quit?"),
        "{screen}"
    );
    let effects = keys(&mut a, "y");
    assert!(a.quit);
    assert!(
        !effects.iter().any(|e| matches!(e, Effect::Cancel(_))),
        "{effects:?}"
    );
}

#[test]
fn error_groups_select_a_whole_group() {
    let mut a = app(100, 30);
    let groups = a.error_groups();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].partitions.len(), 3);
    keys(&mut a, "e\n");
    assert_eq!(a.job().unwrap().selected.len(), 3);
    assert!(matches!(a.modal, Modal::None));
}

#[test]
fn command_line() {
    let mut a = app(100, 30);
    for _ in 0..3 {
        if a.focus != Focus::Jobs {
            keys(&mut a, "\t");
        }
    }
    assert_eq!(a.focus, Focus::Jobs);
    keys(&mut a, ":job fct_page\n");
    assert_eq!(a.job().unwrap().job.name, "fct_pageviews_hourly");
    // The operator named the job: its partitions have the keys next.
    assert_eq!(a.focus, Focus::Calendar);
    keys(&mut a, ":goto 2026-06-10T09\n");
    let i = a.job().unwrap().cursor;
    assert_eq!(a.job().unwrap().partitions[i].name(), "2026-06-10T09");
    keys(&mut a, ":theme mono\n");
    assert_eq!(a.theme.name, "mono");
    keys(&mut a, ":theme nosuch\n");
    assert!(a.message.as_ref().unwrap().0);
    assert_eq!(a.theme.name, "mono");
    keys(
        &mut a,
        ":job fct_orders\n:run 2026-05-01..2026-05-31 --only failed,missing\n",
    );
    let Modal::Confirm(c) = &a.modal else {
        panic!("no confirm dialog");
    };
    assert_eq!(c.candidates.len(), 31);
    assert_eq!(c.only, vec![LoadState::Failed, LoadState::Missing]);
    keys(&mut a, "\x1b:bogus\n");
    assert!(a.message.as_ref().unwrap().1.contains("unknown command"));
    // Odd input is answered, not guessed at or passed over.
    keys(&mut a, "\x1b:job fct\n");
    assert_eq!(
        a.message.as_ref().map(|(_, m)| m.as_str()),
        Some("\"fct\" names 2 jobs: fct_orders, fct_pageviews_hourly; type more of one")
    );
    keys(&mut a, ":job orders\n:goto 2030-01-01\n");
    let last = a.job().unwrap().partitions.last().unwrap().name();
    assert_eq!(
        a.message.as_ref().map(|(_, m)| m.clone()),
        Some(format!(
            "2030-01-01 is after fct_orders's last partition: at {last}"
        ))
    );
    keys(&mut a, ":run 2026-06-09..2026-06-02\n");
    assert_eq!(
        a.message.as_ref().map(|(_, m)| m.as_str()),
        Some("2026-06-09..2026-06-02 ends before it starts; did you mean 2026-06-02..2026-06-09?")
    );
    keys(&mut a, ":q\n");
    assert!(a.quit);
}

#[test]
fn navigation_keys() {
    let mut a = app(100, 30);
    keys(&mut a, ":goto 2026-04-15\n");
    let i = a.job().unwrap().cursor;
    keys(&mut a, "]");
    assert_eq!(
        a.job().unwrap().partitions[a.job().unwrap().cursor].name(),
        "2026-05-15"
    );
    keys(&mut a, "[[");
    assert_eq!(
        a.job().unwrap().partitions[a.job().unwrap().cursor].name(),
        "2026-03-15"
    );
    keys(&mut a, "g");
    assert_eq!(a.job().unwrap().cursor, 0);
    keys(&mut a, "G");
    assert_eq!(
        a.job().unwrap().partitions[a.job().unwrap().cursor].name(),
        "2026-06-14",
        "G goes to the last complete partition"
    );
    assert!(i > 0);
    keys(&mut a, "\t");
    assert_eq!(a.focus, Focus::Jobs);
    keys(&mut a, "j");
    assert_eq!(a.job().unwrap().job.name, "dim_customers");
    keys(&mut a, "/hour");
    assert_eq!(a.job().unwrap().job.name, "fct_pageviews_hourly");
    assert_eq!(a.visible_jobs().len(), 1);
    keys(&mut a, "\x1b");
    assert_eq!(a.visible_jobs().len(), 4);
}

/// A filter wider than the job pane's title shows what is being typed
/// and the cursor, scrolled as the command line is: it showed its start,
/// and the rest went on out of sight. Regex-like and wide characters are
/// taken as they are.
#[test]
fn a_long_filter_shows_what_is_typed() {
    let mut a = app(100, 30);
    // The job pane's title, whose 9 columns are left for the filter; a
    // wide character's second column reads as a space here.
    let title = |a: &App| {
        let line = text(a).lines().nth(1).unwrap_or_default().to_string();
        line.split('┓').next().unwrap_or_default().replace(' ', "")
    };
    keys(&mut a, "/.*[(\\^$東京");
    assert_eq!(title(&a), "┏Jobs/…(\\^$東京▏");
    assert!(text(&a).contains("no job matches"));
    keys(&mut a, &"x".repeat(40));
    keys(&mut a, "END");
    assert_eq!(title(&a), "┏Jobs/…xxxxxEND▏");
    // The cursor moved back to the start shows it, and what follows is cut.
    a.update(code(KeyCode::Home));
    keys(&mut a, "^");
    assert_eq!(title(&a), "┏Jobs/^▏.*[(\\^$…");
    keys(&mut a, "\x1b/hour");
    assert_eq!(title(&a), "┏Jobs/hour▏━━━━━");
    assert_eq!(a.job().unwrap().job.name, "fct_pageviews_hourly");
}

#[test]
fn mouse_click_and_drag_select() {
    let mut a = app(100, 30);
    // Find two cells by probing the calendar.
    let hits = calendar_cells(&a, ratatui::layout::Rect::new(0, 0, 100, 30));
    assert!(hits.len() > 20);
    let (x0, y0, i0) = hits[3];
    let (x1, y1, i1) = hits[hits.len() / 2];
    a.update(mouse(MouseEventKind::Down(MouseButton::Left), x0, y0));
    assert_eq!(a.job().unwrap().cursor, i0);
    a.update(mouse(MouseEventKind::Drag(MouseButton::Left), x1, y1));
    a.update(mouse(MouseEventKind::Up(MouseButton::Left), x1, y1));
    let j = a.job().unwrap();
    assert_eq!(j.cursor, i1);
    assert_eq!(j.selected.len(), i1.abs_diff(i0) + 1);
}

#[test]
fn clicks_in_the_run_pane_pick_the_run_and_the_partition() {
    let (mut a, _, names) = run_in_progress(120, 40);
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let s = run_screen(&a, area);
    let click = |x, y| mouse(MouseEventKind::Down(MouseButton::Left), x, y);
    assert_eq!(
        view::hit_test(&a, area, s.runs.x + 3, s.runs.y + 1),
        Some(view::Hit::Run(0))
    );
    a.update(click(s.runs.x + 3, s.runs.y + 1));
    assert_eq!(a.focus, Focus::Runs);
    a.update(click(s.runs.x + 5, s.runs.y + 4));
    assert_eq!(a.runs[0].selected, 1);
    assert!(text(&a).contains(&format!(" log {} ", names[1])));
    keys(&mut a, "j");
    assert_eq!(a.runs[0].selected, 2);
    // Enter shows that partition in the calendar, from any job.
    select_job(&mut a, "dim_customers");
    keys(&mut a, "\t");
    assert_eq!(a.focus, Focus::Runs);
    keys(&mut a, "\n");
    assert_eq!(a.focus, Focus::Calendar);
    assert_eq!(a.job().unwrap().job.name, "fct_orders");
    assert_eq!(a.job().unwrap().cursor, partition(&a, &names[2]));
}

/// The wheel scrolls the pane under the pointer, focused or not, and the
/// help: turned over the job list or the run pane, it moved the calendar's
/// cursor (the focused pane) by a week, and over the help it did nothing.
#[test]
fn the_wheel_scrolls_what_is_under_the_pointer() {
    let (mut a, _, _) = run_in_progress(120, 40);
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let s = run_screen(&a, area);
    while a.focus != Focus::Calendar {
        keys(&mut a, "\t");
    }
    let job = a.job().unwrap().job.name.clone();
    let cursor = a.job().unwrap().cursor;
    a.update(mouse(
        MouseEventKind::ScrollDown,
        s.jobs.x + 3,
        s.jobs.y + 3,
    ));
    assert_ne!(a.job().unwrap().job.name, job, "the job list scrolled");
    a.update(mouse(MouseEventKind::ScrollUp, s.jobs.x + 3, s.jobs.y + 3));
    assert_eq!(a.job().unwrap().job.name, job);
    assert_eq!(a.job().unwrap().cursor, cursor, "the calendar kept still");
    assert_eq!(a.runs[0].selected, 0);
    a.update(mouse(
        MouseEventKind::ScrollDown,
        s.runs.x + 5,
        s.runs.y + 4,
    ));
    assert_eq!(a.runs[0].selected, 1, "the run's partitions scrolled");
    assert_eq!(a.job().unwrap().cursor, cursor, "the calendar kept still");
    assert_eq!(a.focus, Focus::Calendar, "the wheel leaves the focus");
    a.update(mouse(
        MouseEventKind::ScrollUp,
        s.calendar.x + 5,
        s.calendar.y + 5,
    ));
    assert_ne!(a.job().unwrap().cursor, cursor, "the calendar scrolled");
    keys(&mut a, "?");
    a.update(mouse(MouseEventKind::ScrollDown, 60, 20));
    a.update(mouse(MouseEventKind::ScrollDown, 60, 20));
    assert!(matches!(a.modal, Modal::Help { scroll: 2 }));
    a.update(mouse(MouseEventKind::ScrollUp, 60, 20));
    assert!(matches!(a.modal, Modal::Help { scroll: 1 }));
}

fn mouse(kind: MouseEventKind, x: u16, y: u16) -> Msg {
    Msg::Mouse(MouseEvent {
        kind,
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    })
}

/// The panes of a screen of `area` with a run in flight, as the console
/// lays them out for the job on it.
fn run_screen(a: &App, area: ratatui::layout::Rect) -> view::Screen {
    view::screen(
        area,
        idem::partition::Grain::Day,
        a.job().unwrap().unit_count(),
        true,
    )
}

/// Calendar cells on a screen of `area`: (x, y, partition index).
fn calendar_cells(a: &App, area: ratatui::layout::Rect) -> Vec<(u16, u16, usize)> {
    let mut cells = Vec::new();
    for y in 0..area.height {
        for x in 0..area.width {
            if let Some(view::Hit::Cell(i)) = view::hit_test(a, area, x, y) {
                cells.push((x, y, i));
            }
        }
    }
    cells
}

/// QA: the wheel did nothing in the error groups (`e`) nor the lineage
/// (`L`). It moves their selection as `j` and `k` do, wherever the pointer
/// is, and the job list under the pointer keeps still.
#[test]
fn the_wheel_moves_the_error_groups_and_the_lineage_as_their_keys_do() {
    // fct_orders with two neighbours: dim_customers upstream too.
    let mut config = fixture().config.clone();
    if let Some(j) = config.jobs.iter_mut().find(|j| j.name == "fct_orders") {
        j.depends_on.push(idem::config::Dependency {
            name: "dim_customers".into(),
            line: 1,
            column: 1,
        });
    }
    let mut a = app_of(config, Theme::default_theme(), 110, 34);
    // A second group: one failed day failed otherwise.
    let j = a.job().unwrap();
    let mut statuses = j.statuses.clone();
    let i = (statuses.iter())
        .position(|s| s.state == LoadState::Failed)
        .unwrap();
    if let Some(at) = &mut statuses[i].last_attempt {
        std::sync::Arc::make_mut(at).error = Some("database is locked".into());
    }
    a.update(Msg::Status {
        job: j.job.name.clone(),
        result: Ok(StatesRead::States(statuses.into())),
    });
    assert_eq!(a.error_groups().len(), 2);
    keys(
        &mut a, "ej
",
    );
    let second_by_key = a.job().unwrap().selected.clone();
    keys(
        &mut a, "e
",
    );
    assert_ne!(a.job().unwrap().selected, second_by_key);
    let (job, cursor) = (a.job().unwrap().job.name.clone(), a.job().unwrap().cursor);
    // Over the job list, behind the overlay.
    let (x, y) = (3, 4);
    keys(&mut a, "e");
    for kind in [
        MouseEventKind::ScrollDown,
        MouseEventKind::ScrollDown,
        MouseEventKind::ScrollUp,
        MouseEventKind::ScrollDown,
    ] {
        a.update(mouse(kind, x, y));
    }
    assert_eq!(a.job().unwrap().job.name, job, "the job list kept still");
    assert_eq!(a.job().unwrap().cursor, cursor);
    keys(&mut a, "\n");
    assert_eq!(a.job().unwrap().selected, second_by_key, "the second group");
    keys(&mut a, "Ljj");
    let Modal::Lineage(by_key) = &a.modal else {
        panic!("no lineage view")
    };
    let by_key = by_key.selected;
    assert_eq!(by_key, 1, "the last of two neighbours");
    keys(&mut a, "\x1bL");
    for kind in [
        MouseEventKind::ScrollDown,
        MouseEventKind::ScrollUp,
        MouseEventKind::ScrollDown,
        MouseEventKind::ScrollDown,
    ] {
        a.update(mouse(kind, x, y));
    }
    let Modal::Lineage(view) = &a.modal else {
        panic!("no lineage view")
    };
    assert_eq!(view.selected, by_key);
    assert_eq!(a.job().unwrap().job.name, job, "the job list kept still");
}

/// QA: the wheel over a run's log moved the partition instead. Up shows
/// older lines as `[` does, down newer ones as `]`; the partition stays.
#[test]
fn the_wheel_over_a_runs_log_scrolls_the_log() {
    let (mut a, run, names) = run_in_progress(120, 40);
    for k in 0..30 {
        a.update(Msg::Engine {
            run,
            event: Event::PartitionLog {
                run_id: "r1".into(),
                job: "fct_orders".into(),
                partition: names[0].clone(),
                line: format!("line {k}"),
            },
        });
    }
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let s = run_screen(&a, area);
    let focus = a.focus;
    let (x, y) = (s.runs.right() - 5, s.runs.y + 4);
    a.update(mouse(MouseEventKind::ScrollUp, x, y));
    a.update(mouse(MouseEventKind::ScrollUp, x, y));
    assert_eq!(a.runs[0].log_back.lines, 2, "two lines back");
    assert_eq!(a.runs[0].selected, 0, "the partition kept");
    assert!(text(&a).contains("· 2 newer below"), "{}", text(&a));
    a.update(mouse(MouseEventKind::ScrollDown, x, y));
    assert_eq!(a.runs[0].log_back.lines, 1);
    assert_eq!(a.focus, focus, "the wheel leaves the focus");
    // A row a notch; `]` a page.
    while a.focus != Focus::Runs {
        keys(&mut a, "\t");
    }
    keys(&mut a, "]");
    assert_eq!(a.runs[0].log_back, idem::tui::app::LogBack::default());
}

/// Clicks, drags and the wheel over the calendar behind the run dialog
/// leave the cursor, the selection and the plan alone; the dialog stays.
#[test]
fn the_pointer_behind_the_run_dialog_changes_nothing() {
    let mut a = app(100, 30);
    let area = ratatui::layout::Rect::new(0, 0, 100, 30);
    let cells = calendar_cells(&a, area);
    keys(&mut a, "fr");
    let plan = |a: &App| match &a.modal {
        Modal::Confirm(c) => a.confirm_partitions(c),
        _ => panic!("the dialog closed"),
    };
    let before = plan(&a);
    let (cursor, selected) = (a.job().unwrap().cursor, a.job().unwrap().selected.clone());
    let (x0, y0, _) = cells[0];
    let (x1, y1, _) = cells[cells.len() / 2];
    for msg in [
        mouse(MouseEventKind::Down(MouseButton::Left), x0, y0),
        mouse(MouseEventKind::Drag(MouseButton::Left), x1, y1),
        mouse(MouseEventKind::Up(MouseButton::Left), x1, y1),
        mouse(MouseEventKind::ScrollDown, x0, y0),
        mouse(MouseEventKind::Down(MouseButton::Left), 3, 4),
    ] {
        a.update(msg);
        assert_eq!(plan(&a), before);
        assert_eq!(a.job().unwrap().cursor, cursor);
        assert_eq!(a.job().unwrap().selected, selected);
        assert_eq!(a.job().unwrap().job.name, "fct_orders");
    }
}

/// QA: a release while a dialog was open was dropped, so the calendar
/// still held the press: after the dialog, a drag into the calendar
/// selected a range from the day pressed before it.
#[test]
fn a_release_over_a_dialog_ends_the_calendar_press() {
    let mut a = app(100, 30);
    let area = ratatui::layout::Rect::new(0, 0, 100, 30);
    let cells = calendar_cells(&a, area);
    let (x0, y0, _) = cells[0];
    let (x1, y1, i1) = cells[cells.len() / 2];
    a.update(mouse(MouseEventKind::Down(MouseButton::Left), x0, y0));
    keys(&mut a, "r");
    assert!(matches!(a.modal, Modal::Confirm(_)));
    a.update(mouse(MouseEventKind::Up(MouseButton::Left), x0, y0));
    keys(&mut a, "\x1b");
    // Pressed on the job list, dragged into the calendar.
    a.update(mouse(MouseEventKind::Down(MouseButton::Left), 3, 3));
    a.update(mouse(MouseEventKind::Drag(MouseButton::Left), x1, y1));
    let j = a.job().unwrap();
    assert!(j.selected.is_empty(), "{:?}", j.selected);
    assert_ne!(j.cursor, i1, "the cursor stayed");
}

#[test]
fn lost_connection_shows_and_keeps_the_data() {
    let mut a = app(100, 30);
    let before = a.job().unwrap().statuses.len();
    keys(&mut a, "R");
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Err(Unread::of_warehouse("database is locked")),
    });
    assert_eq!(a.job().unwrap().statuses.len(), before);
    assert!(text(&a).contains("✗ database: database is locked"));
}

/// One job's read failing on its own tables (its target dropped) is said
/// on that job's row: the title bar speaks for the warehouse, whose other
/// jobs read fine, whichever job's read answers last.
#[test]
fn one_jobs_unreadable_target_is_not_said_as_the_warehouse_down() {
    let f = fixture();
    let jobs: Vec<&String> = f.statuses.iter().map(|(job, _)| job).collect();
    for broken in [jobs[0], jobs[jobs.len() - 1]] {
        let mut a = App::new(f.config.clone(), Theme::default_theme(), now());
        a.update(Msg::Resize(120, 40));
        a.start();
        a.update(connected("sqlite:///demo/warehouse.db"));
        for (job, s) in &f.statuses {
            let result = if job == broken {
                Err(Unread::of_job("no such table: gone"))
            } else {
                Ok(StatesRead::States(s.clone().into()))
            };
            a.update(Msg::Status {
                job: job.clone(),
                result,
            });
        }
        let screen = text(&a);
        assert!(!screen.contains("✗ database"), "{broken}: {screen}");
        // The jobs list gives a job two lines: its name, then its state.
        let lines: Vec<&str> = screen.lines().collect();
        let row = lines
            .iter()
            .position(|l| {
                l.starts_with(&format!("│ {broken}")) || l.starts_with(&format!("│▶{broken}"))
            })
            .unwrap_or_else(|| panic!("{broken} has no row: {screen}"));
        assert!(lines[row + 1].contains("unreadable"), "{broken}: {screen}");
    }
    // The warehouse itself unreadable is said in the title bar.
    let mut a = app(120, 40);
    keys(&mut a, "R");
    a.update(Msg::Status {
        job: jobs[0].clone(),
        result: Err(Unread::of_warehouse("database is locked")),
    });
    assert!(text(&a).contains("✗ database: database is locked"));
}

/// A job whose first read fails (its config names a column the target
/// lacks): the calendar says why, and the detail pane does not claim to be
/// loading what will not come.
#[test]
fn a_job_whose_states_cannot_be_read_is_not_shown_as_loading() {
    let f = fixture();
    let mut a = App::new(f.config.clone(), Theme::default_theme(), now());
    a.update(Msg::Resize(120, 40));
    a.start();
    a.update(connected("sqlite:///demo/warehouse.db"));
    assert!(text(&a).contains("loading…"), "{}", text(&a));
    for job in &f.config.jobs {
        a.update(Msg::Status {
            job: job.name.clone(),
            result: Err(Unread::of_job(
                "partition_column \"DT\" is not a column of fct",
            )),
        });
    }
    let screen = text(&a);
    assert!(
        screen.contains("cannot read states: partition_column"),
        "{screen}"
    );
    assert!(!screen.contains("loading…"), "{screen}");
    assert!(
        screen.contains("no state: the job's states could not be read"),
        "{screen}"
    );
}

/// A theme named in the user config file that does not load says which
/// file named it: the note read as if it came from nowhere (no --theme, no
/// IDEM_THEME was given).
#[test]
fn a_broken_theme_from_the_user_config_names_the_file() {
    let options = idem::tui::Options {
        theme: Some("nope".into()),
        theme_from: Some("/home/ops/.config/idem/config.toml".into()),
        no_mouse: true,
        ..Default::default()
    };
    let a = idem::tui::new_app(fixture().config.clone(), &options, now());
    let (_, message) = a.message.clone().unwrap();
    assert!(
        message.starts_with("/home/ops/.config/idem/config.toml: theme: "),
        "{message}"
    );
    assert!(message.contains("nope"), "{message}");
}

#[test]
fn a_broken_theme_is_reported_and_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    std::fs::write(
        &path,
        "[styles]\nloaded = \"green\"\nfailed = \"not-a-colour\"\n",
    )
    .unwrap();
    let options = idem::tui::Options {
        theme: Some(path.display().to_string()),
        no_mouse: true,
        ..Default::default()
    };
    let a = idem::tui::new_app(fixture().config.clone(), &options, now());
    let fallback = if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        "mono"
    } else {
        "default"
    };
    assert_eq!(a.theme.name, fallback);
    assert!(!a.mouse);
    let (error, message) = a.message.clone().unwrap();
    assert!(error);
    assert!(
        message.contains("styles.failed") && message.contains("not-a-colour"),
        "{message}"
    );
    std::fs::write(
        &path,
        "extends = \"light\"\n[styles]\nfailed = \"red bold\"\n",
    )
    .unwrap();
    let a = idem::tui::new_app(fixture().config.clone(), &options, now());
    assert!(a.message.is_none());
    assert_eq!(
        a.theme.style("loaded"),
        Theme::builtin("light").unwrap().style("loaded")
    );
}

#[test]
fn an_unreachable_warehouse_shows_and_is_retried() {
    let f = fixture();
    let mut a = App::new(f.config.clone(), Theme::default_theme(), now());
    a.update(Msg::Resize(100, 30));
    assert!(matches!(a.start().as_slice(), [Effect::Connect]));
    a.update(Msg::Connected(Err(
        "cannot connect to sqlite://x: refused".into()
    )));
    let screen = text(&a);
    assert!(screen.contains("✗ database: cannot connect"), "{screen}");
    assert!(
        screen.contains("cannot read states: cannot connect"),
        "{screen}"
    );
    // The jobs never read say they cannot be, not "loading…", and acting
    // on their states says why there are none rather than "no failed
    // partitions".
    // (cut to the pane's width)
    assert!(screen.contains("│ unreadable "), "{screen}");
    assert!(!screen.contains("loading…"), "{screen}");
    keys(&mut a, "f");
    let screen = text(&a);
    assert!(
        screen.contains("could not be read: cannot connect to sqlite://x"),
        "{screen}"
    );
    assert!(!screen.contains("no failed partitions"), "{screen}");
    // Keys still work without states.
    assert!(keys(&mut a, "jjkvr?\x1b").is_empty());
    assert!(a.update(Msg::Tick(now() + Duration::seconds(5))).is_empty());
    assert!(matches!(
        a.update(Msg::Tick(now() + Duration::seconds(16)))
            .as_slice(),
        [Effect::Connect]
    ));
}

/// A warehouse that refused the console at launch and came up later: once
/// the states are read, the status bar no longer says they could not be
/// (it did until the next key, under a calendar of states read).
#[test]
fn states_read_once_the_warehouse_returns_clear_the_note_that_they_could_not_be() {
    let f = fixture();
    let mut a = App::new(f.config.clone(), Theme::default_theme(), now());
    a.update(Msg::Resize(120, 40));
    a.start();
    a.update(Msg::Connected(Err(
        "cannot connect to sqlite://x: refused".into()
    )));
    keys(&mut a, "f");
    let note = "the states of fct_orders could not be read: cannot connect";
    assert!(text(&a).contains(note), "{}", text(&a));
    a.update(connected("sqlite:///demo/warehouse.db"));
    for (job, s) in &f.statuses {
        a.update(Msg::Status {
            job: job.clone(),
            result: Ok(StatesRead::States(s.clone().into())),
        });
    }
    let screen = text(&a);
    assert!(!screen.contains("could not be read"), "{screen}");
    assert!(!screen.contains("cannot connect"), "{screen}");
    // A note about another job's states stays while that job's are unread.
    let mut b = App::new(f.config.clone(), Theme::default_theme(), now());
    b.update(Msg::Resize(120, 40));
    b.start();
    b.update(Msg::Connected(Err(
        "cannot connect to sqlite://x: refused".into()
    )));
    keys(&mut b, "f");
    b.update(connected("sqlite:///demo/warehouse.db"));
    let (other, s) = &f.statuses[1];
    assert_ne!(other, "fct_orders");
    b.update(Msg::Status {
        job: other.clone(),
        result: Ok(StatesRead::States(s.clone().into())),
    });
    assert!(text(&b).contains(note), "{}", text(&b));
    // R while the server is down fails; the next refresh, the server back,
    // ends the failure said in the status bar as in the title bar.
    let mut c = app(120, 40);
    keys(&mut c, "R");
    for (job, _) in &f.statuses {
        c.update(Msg::Status {
            job: job.clone(),
            result: Err(Unread::of_warehouse(
                "cannot connect to sqlite://x: refused",
            )),
        });
    }
    assert!(
        text(&c).contains("refresh failed: cannot connect"),
        "{}",
        text(&c)
    );
    c.update(Msg::Tick(now() + Duration::seconds(16)));
    for (job, _) in &f.statuses {
        c.update(Msg::Status {
            job: job.clone(),
            result: Ok(StatesRead::Unchanged),
        });
    }
    let screen = text(&c);
    assert!(!screen.contains("refresh failed"), "{screen}");
    assert!(!screen.contains("cannot connect"), "{screen}");
}

#[test]
fn a_job_without_partitions_yet_breaks_nothing() {
    let toml = r#"
[warehouse]
url = "sqlite:///nonexistent/w.db"

[[jobs]]
name = "later"
target = "t"
strategy = "replace_partition"
partition_column = "dt"
grain = "hour"
start = "2030-01-01"
sql = "select 1 as x, dt from s where dt >= :start and dt < :end"
"#;
    let config = idem::config::parse(std::path::Path::new("idem.toml"), toml, &|_| None).unwrap();
    let mut a = App::new(config, Theme::default_theme(), now());
    for (w, h) in [(80, 24), (140, 40), (60, 15)] {
        a.update(Msg::Resize(w, h));
        keys(&mut a, "hjkl[]gGvfmsenr?\x1b:goto 2030-01-01\n");
        render(&a);
    }
    a.update(connected("sqlite:///w.db"));
    a.update(Msg::Status {
        job: "later".into(),
        result: Ok(StatesRead::States(Vec::new().into())),
    });
    keys(&mut a, "hjkl[]gGvfmsenr\x1b");
    assert!(text(&a).contains("later"));
}

#[test]
fn lint_findings_show_as_badges_and_in_the_confirm_dialog() {
    let toml = r#"
[warehouse]
url = "sqlite:///nonexistent/w.db"

[[jobs]]
name = "unwindowed"
target = "t"
strategy = "replace_partition"
partition_column = "dt"
grain = "month"
start = "2026-01"
sql = "select 1 as x, dt from s"

[[jobs]]
name = "merge_all"
target = "m"
strategy = "merge_key"
unique_key = ["x"]
grain = "month"
start = "2026-01"
sql = "select 1 as x from s"
"#;
    let config = idem::config::parse(std::path::Path::new("idem.toml"), toml, &|_| None).unwrap();
    let mut a = App::new(config.clone(), Theme::default_theme(), now());
    a.update(Msg::Resize(100, 30));
    a.update(connected("sqlite:///w.db"));
    for job in &config.jobs {
        let statuses: Vec<PartitionStatus> = job
            .partitions(now())
            .into_iter()
            .map(|p| {
                let state = if p.is_future(now()) {
                    LoadState::Future
                } else {
                    LoadState::Loaded
                };
                PartitionStatus {
                    rows_now: Some(10),
                    rows_at_load: Some(10),
                    attempts: 1,
                    ..PartitionStatus::in_state(p, state)
                }
            })
            .collect();
        a.update(Msg::Status {
            job: job.name.clone(),
            result: Ok(StatesRead::States(statuses.into())),
        });
    }
    let screen = text(&a);
    assert!(
        screen.contains("unwindowed ✗1") || screen.contains("✗1"),
        "{screen}"
    );
    assert!(screen.contains("⚠1"), "{screen}");
    keys(&mut a, "r");
    let screen = text(&a);
    assert!(matches!(a.modal, Modal::Confirm(_)), "{screen}");
    assert!(screen.contains("never uses :start or :end"), "{screen}");
}

/// A MariaDB whose `sql_mode` has NO_BACKSLASH_ESCAPES reads `'C:\'` as a
/// whole string, so the `':later'` after it is text. Until connected the
/// console reads the job by the engine's default and finds a `:later`
/// parameter; once the server says how it reads strings, the badge goes.
#[test]
fn the_lint_badge_reads_the_sql_as_the_connected_server_does() {
    let toml = r#"
[warehouse]
url = "mysql://root@127.0.0.1:1/nowhere"

[[jobs]]
name = "paths"
target = "t"
strategy = "replace_partition"
partition_column = "dt"
grain = "month"
start = "2026-01"
sql = "select id, 'C:\\' as path, ':later' as note, dt from s where dt >= :start and dt < :end"
"#;
    let config = idem::config::parse(std::path::Path::new("idem.toml"), toml, &|_| None).unwrap();
    assert!(
        config.jobs[0].sql.contains("'C:\\'"),
        "{}",
        config.jobs[0].sql
    );
    let badge = |a: &App| {
        let screen = text(a);
        let line = screen
            .lines()
            .find(|l| l.contains("▶paths"))
            .unwrap_or("")
            .to_string();
        (line.contains('✗'), screen)
    };
    let mut a = App::new(config, Theme::default_theme(), now());
    a.update(Msg::Resize(100, 30));
    let (error, screen) = badge(&a);
    assert!(
        error,
        "by MariaDB's default the job has a :later parameter:\n{screen}"
    );
    let server = |backslash_escapes| {
        Msg::Connected(Ok(Connection {
            url: "mysql://root@127.0.0.1:1/nowhere".into(),
            syntax: Syntax {
                backslash_escapes,
                ..idem::config::Engine::MySql.into()
            },
            table_names: idem::config::TableNames::ByCase,
            granted: None,
        }))
    };
    a.update(server(false));
    let (error, screen) = badge(&a);
    assert!(!error, "the server reads ':later' as text:\n{screen}");
    // Connected again to a server with the default mode: the finding is back.
    a.update(server(true));
    let (error, screen) = badge(&a);
    assert!(error, "{screen}");
}

// ---- verify, merge order, definition diff ---------------------------------------

/// Runs background work for real against the demo warehouse, as the event
/// loop would, and hands back what it answers.
fn against_demo<T>(work: impl AsyncFnOnce(&Warehouse) -> T) -> T {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let wh = Warehouse::connect(&fixture().config.warehouse, 2)
            .await
            .unwrap();
        let out = work(&wh).await;
        wh.close().await;
        out
    })
}

fn verify_request(effects: Vec<Effect>) -> VerifyRequest {
    match effects.as_slice() {
        [Effect::Verify(req)] => (**req).clone(),
        other => panic!("expected one verify request, got {other:?}"),
    }
}

#[test]
fn v_verifies_the_cursor_partition_and_shows_the_result() {
    let mut a = app(160, 40);
    keys(&mut a, ":goto 2026-06-01\n");
    let req = verify_request(keys(&mut a, "V"));
    assert_eq!(req.job.name, "fct_orders");
    assert_eq!(req.partition.name(), "2026-06-01");
    assert!(text(&a).contains("verifying…"), "{}", text(&a));
    a.update(Msg::Verified {
        id: req.id,
        result: Ok(Verification {
            job: "fct_orders".into(),
            partition: "2026-06-01".into(),
            rows: vec![10412, 10412, 10412],
            difference: None,
            run_3_after: idem::warehouse::CLOCK_TICK,
        }),
    });
    let screen = text(&a);
    assert!(
        screen.contains("idempotent: same 10,412 rows on every run; rolled back"),
        "{screen}"
    );
    assert!(!screen.contains("NOT idempotent"), "{screen}");
    // Another verify replaces it; the older answer arriving late is dropped.
    let again = verify_request(keys(&mut a, "V"));
    assert_ne!(again.id, req.id);
    assert!(text(&a).contains("verifying…"));
    a.update(Msg::Verified {
        id: req.id,
        result: Ok(Verification {
            job: "fct_orders".into(),
            partition: "2026-06-01".into(),
            rows: vec![1, 1, 1],
            difference: None,
            run_3_after: idem::warehouse::CLOCK_TICK,
        }),
    });
    assert!(text(&a).contains("verifying…"), "a stale answer was shown");
    a.update(Msg::Verified {
        id: again.id,
        result: Ok(Verification {
            job: "fct_orders".into(),
            partition: "2026-06-01".into(),
            rows: vec![10, 12, 12],
            difference: Some(Difference {
                first: "run 1",
                second: "run 2 (on top of run 1)",
                only_in_first: 3,
                only_in_second: 5,
                columns: vec!["id".into(), "dt".into(), "amount".into()],
                sample_first: vec!["7 | 2026-06-01 | 10.50".into()],
                sample_second: vec!["7 | 2026-06-01 | 21.00".into()],
                columns_differing: Vec::new(),
            }),
            run_3_after: idem::warehouse::CLOCK_TICK,
        }),
    });
    let screen = text(&a);
    assert!(
        screen.contains(
            "NOT idempotent: run 1 and run 2 (on top of run 1) differ: 3 rows only in run 1, 5 only in run 2"
        ),
        "{screen}"
    );
    // Why, as `idem verify` says it: rows, not values, differ here.
    assert!(
        screen.contains("they hold different rows, not the same rows with other values"),
        "{screen}"
    );
    assert!(
        screen.contains("only in run 2: 7 | 2026-06-01 | 21.00"),
        "{screen}"
    );
    assert!(a.message.as_ref().unwrap().0, "NOT idempotent is an error");
    // The result belongs to its partition: elsewhere it is not shown.
    keys(&mut a, "l");
    assert!(!text(&a).contains("idempotent"));
    keys(&mut a, "h");
    assert!(text(&a).contains("NOT idempotent"));
    // Runs that all wrote no rows are alike, but prove nothing of the SQL.
    let empty = verify_request(keys(&mut a, "V"));
    a.update(Msg::Verified {
        id: empty.id,
        result: Ok(Verification {
            job: "fct_orders".into(),
            partition: "2026-06-01".into(),
            rows: vec![0, 0, 0],
            difference: None,
            run_3_after: idem::warehouse::CLOCK_TICK,
        }),
    });
    let screen = text(&a);
    assert!(
        screen.contains("verify not proved: no rows on any run"),
        "{screen}"
    );
    assert!(!screen.contains("idempotent"), "{screen}");
    assert!(
        a.message.as_ref().unwrap().1.contains("not proved"),
        "{:?}",
        a.message
    );
    // A window still open may be proved, as `idem verify` proves it (it
    // all rolls back): the last partition, today's.
    keys(&mut a, ":goto 2026-06-20\n");
    let j = a.job().unwrap();
    let open = j.partitions[j.cursor];
    assert!(open.end() > a.now, "{open:?} is open");
    assert!(
        matches!(keys(&mut a, "V").as_slice(), [Effect::Verify(req)] if req.partition == open),
        "{:?}",
        a.message
    );
}

#[test]
fn verify_runs_for_real_on_the_demo() {
    let mut a = app(110, 30);
    keys(&mut a, ":goto 2026-06-01\n");
    let req = verify_request(keys(&mut a, "V"));
    let msg = against_demo(async |wh| idem::tui::verify(wh, &req, &Default::default()).await);
    let Msg::Verified {
        result: Ok(ref r), ..
    } = msg
    else {
        panic!("verify failed: {msg:?}");
    };
    assert!(r.is_idempotent());
    let rows = r.rows[0];
    assert!(rows > 0);
    a.update(msg);
    let screen = text(&a);
    assert!(
        screen.contains(&format!(
            "idempotent: same {} rows on every run; rolled back",
            view::thousands(rows as i64)
        )),
        "{screen}"
    );
    insta::assert_snapshot!("verify_result", screen);

    // A job whose SQL reads a table that is not there: an error line.
    let mut broken = req.clone();
    broken.id = 0;
    let again = verify_request(keys(&mut a, "V"));
    broken.id = again.id;
    broken.job.sql = "select * from no_such_table where dt >= :start and dt < :end".into();
    let msg = against_demo(async |wh| idem::tui::verify(wh, &broken, &Default::default()).await);
    assert!(
        matches!(msg, Msg::Verified { result: Err(_), .. }),
        "{msg:?}"
    );
    a.update(msg);
    let screen = text(&a);
    assert!(screen.contains("verify error: "), "{screen}");
    assert!(screen.contains("no_such_table"), "{screen}");
}

#[test]
fn x_extends_a_merge_run_through_the_latest_loaded_window() {
    let mut a = app(130, 40);
    select_job(&mut a, "dim_customers");
    let j = a.job().unwrap();
    let latest = j
        .statuses
        .iter()
        .filter(|s| s.last_success.is_some())
        .map(|s| s.partition)
        .max()
        .unwrap();
    let from = j
        .statuses
        .iter()
        .find(|s| s.state == LoadState::Stale)
        .unwrap()
        .partition;
    keys(&mut a, &format!(":goto {}\n", from.name()));
    keys(&mut a, "vllr");
    let Modal::Confirm(c) = &a.modal else {
        panic!("no confirm dialog");
    };
    let chosen: Vec<String> = a
        .confirm_partitions(c)
        .iter()
        .map(|i| a.job().unwrap().partitions[*i].name())
        .collect();
    assert_eq!(chosen.len(), 3);
    let to = chosen[2].clone();
    let risk = a.merge_order_risk(c).expect("later windows are loaded");
    assert_eq!(risk.latest(), latest);
    assert_eq!(
        a.equivalent_command(c),
        format!("idem run dim_customers --from {} --to {to}", from.name())
    );
    let screen = text(&a);
    assert!(screen.contains("already loaded"), "{screen}");
    assert!(screen.contains("(x)"), "{screen}");

    keys(&mut a, "x");
    let Modal::Confirm(c) = &a.modal else {
        panic!("x closed the dialog");
    };
    let expected: Vec<String> = idem::partition::range(from, latest)
        .iter()
        .map(|p| p.name())
        .collect();
    assert!(expected.len() > 3);
    let extended: Vec<String> = a
        .confirm_partitions(c)
        .iter()
        .map(|i| a.job().unwrap().partitions[*i].name())
        .collect();
    assert_eq!(extended, expected);
    assert_eq!(
        a.equivalent_command(c),
        format!(
            "idem run dim_customers --from {} --to {to} --through-latest",
            from.name()
        )
    );
    let screen = text(&a);
    assert!(
        screen.contains(&format!(
            "through {}, the latest loaded window",
            latest.name()
        )),
        "{screen}"
    );
    assert!(
        screen.contains(&format!(
            "({} partitions: 3 of 3 selected + {} later windows)",
            expected.len(),
            expected.len() - 3
        )),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("these {} windows merged", expected.len())),
        "{screen}"
    );
    assert!(!screen.contains("already loaded"), "{screen}");
    insta::assert_snapshot!("confirm_through_latest", screen);
    // x again undoes it.
    keys(&mut a, "x");
    let Modal::Confirm(c) = &a.modal else {
        panic!("x closed the dialog");
    };
    assert_eq!(a.confirm_partitions(c).len(), 3);
    // The run takes the extended list, oldest first.
    keys(&mut a, "x");
    let effects = keys(&mut a, "\n");
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("expected one run, got {effects:?}");
    };
    let names: Vec<String> = req.partitions.iter().map(|p| p.name()).collect();
    assert_eq!(names, expected);
    assert_eq!(a.runs[0].partitions.len(), expected.len());
}

#[test]
fn x_does_nothing_without_later_merged_windows() {
    let mut a = app(110, 34);
    keys(&mut a, "fr");
    keys(&mut a, "x");
    let Modal::Confirm(c) = &a.modal else {
        panic!("x closed the dialog");
    };
    assert!(!c.through_latest);
    assert_eq!(a.confirm_partitions(c).len(), 3);
    assert!(!a.equivalent_command(c).contains("--through-latest"));
}

/// A change of more than layout whose unified diff is `unified`.
fn diff_of(unified: &str) -> DefinitionChange {
    DefinitionChange {
        unified: unified.into(),
        alike: None,
    }
}

fn diff_request(effects: Vec<Effect>) -> DiffRequest {
    match effects.as_slice() {
        [Effect::DefinitionDiff(req)] => (**req).clone(),
        other => panic!("expected one definition read, got {other:?}"),
    }
}

/// The first stale partition of dim_customers, with the cursor on it.
fn on_a_stale_customer_window(a: &mut App) -> (String, String) {
    select_job(a, "dim_customers");
    let s = a
        .job()
        .unwrap()
        .statuses
        .iter()
        .find(|s| s.state == LoadState::Stale)
        .unwrap()
        .clone();
    keys(a, &format!(":goto {}\n", s.partition.name()));
    (
        s.partition.name(),
        s.last_success.unwrap().definition_hash.clone(),
    )
}

#[test]
fn d_on_a_stale_partition_asks_for_its_definition_and_shows_the_diff() {
    let mut a = app(120, 36);
    // Not stale: says so, reads nothing.
    keys(&mut a, ":goto 2026-06-01\n");
    assert!(keys(&mut a, "d").is_empty());
    assert!(matches!(a.modal, Modal::None));
    assert!(a.message.as_ref().unwrap().1.contains("not stale"));
    keys(&mut a, ":goto 2026-06-14\n");
    assert!(keys(&mut a, "d").is_empty());
    assert!(
        a.message
            .as_ref()
            .unwrap()
            .1
            .contains("not stale (missing)")
    );

    let (name, hash) = on_a_stale_customer_window(&mut a);
    let req = diff_request(keys(&mut a, "d"));
    assert_eq!(req.hash, hash);
    assert_eq!(req.job.name, "dim_customers");
    assert!(matches!(a.modal, Modal::Diff { .. }));
    let screen = text(&a);
    assert!(
        screen.contains(&format!("What changed · dim_customers {name}")),
        "{screen}"
    );
    assert!(screen.contains("reading the definition"), "{screen}");
    a.update(Msg::DefinitionDiff {
        id: req.id,
        result: Ok(Some(diff_of(
            "--- loaded under\n+++ now\n@@ -1 +1 @@\n-select email\n+select lower(email)\n",
        ))),
    });
    let screen = text(&a);
    assert!(screen.contains("+select lower(email)"), "{screen}");
    assert!(screen.contains("-select email"), "{screen}");
    // + and - lines in the theme's ok and error colours.
    let t = render(&a);
    let buf = t.backend().buffer();
    let find = |needle: &str| {
        (0..buf.area.height)
            .find_map(|y| {
                let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
                line.find(needle).map(|i| {
                    let x = line[..i].chars().count() as u16;
                    buf[(x, y)].fg
                })
            })
            .unwrap()
    };
    assert_eq!(Some(find("+select")), a.theme.style("ok").fg);
    assert_eq!(Some(find("-select")), a.theme.style("error").fg);
    // The diff fits: j has nothing to scroll; d closes.
    keys(&mut a, "j");
    assert!(matches!(a.modal, Modal::Diff { scroll: 0 }));
    keys(&mut a, "d");
    assert!(matches!(a.modal, Modal::None));
    // An error reading the ledger shows as an error line.
    let again = diff_request(keys(&mut a, "d"));
    a.update(Msg::DefinitionDiff {
        id: again.id,
        result: Err("no such table: _idem_definitions".into()),
    });
    assert!(text(&a).contains("error: no such table: _idem_definitions"));
}

/// Holding j past the end of the help or of a long diff kept counting, so
/// that k then did nothing for as many presses: the view stops at its end
/// and the first k moves it back.
#[test]
fn scrolling_past_the_end_of_help_or_a_diff_comes_back_at_once() {
    let mut a = app(80, 24);
    keys(&mut a, "?");
    let lines = |a: &App| {
        text(a)
            .lines()
            .find_map(|l| l.find("lines ").map(|i| l[i..].to_string()))
            .unwrap_or_default()
    };
    keys(&mut a, &"j".repeat(300));
    let bottom = lines(&a);
    assert!(bottom.starts_with("lines "), "{bottom}");
    keys(&mut a, "k");
    assert_ne!(lines(&a), bottom, "k after the end moves the help back");
    keys(&mut a, "\u{1b}");

    let (_, _) = on_a_stale_customer_window(&mut a);
    let req = diff_request(keys(&mut a, "d"));
    let mut diff = String::from("--- loaded under\n+++ now\n@@ -1,60 +1,60 @@\n");
    for i in 0..60 {
        diff.push_str(&format!("-select c{i}\n+select d{i}\n"));
    }
    a.update(Msg::DefinitionDiff {
        id: req.id,
        result: Ok(Some(diff_of(&diff))),
    });
    keys(&mut a, &"j".repeat(500));
    let Modal::Diff { scroll: end } = a.modal else {
        panic!("the diff is open");
    };
    assert!(end > 0 && end < 500, "{end}");
    let last = text(&a);
    assert!(last.contains("+select d59"), "{last}");
    keys(&mut a, "k");
    assert!(matches!(a.modal, Modal::Diff { scroll } if scroll == end - 1));
    assert!(
        !text(&a).contains("+select d59"),
        "k after the end moves the diff back"
    );
}

#[test]
fn the_definition_diff_is_read_for_real_on_the_demo() {
    let mut a = app(120, 36);
    on_a_stale_customer_window(&mut a);
    let req = diff_request(keys(&mut a, "d"));
    let msg = against_demo(async |wh| idem::tui::definition_diff(wh, &req).await);
    let Msg::DefinitionDiff {
        result: Ok(Some(ref change)),
        ..
    } = msg
    else {
        panic!("no diff: {msg:?}");
    };
    assert_eq!(change.alike, None, "{change:?}");
    let diff = &change.unified;
    assert!(
        diff.lines()
            .any(|l| l.starts_with('+') && l.contains("lower(email)")),
        "{diff}"
    );
    a.update(msg);
    let screen = text(&a);
    assert!(screen.contains("lower(email)"), "{screen}");
    insta::assert_snapshot!("definition_diff", screen);
}

/// `idem diff` said when a job's SQL was only re-indented or commented,
/// the overlay showed the lines that look alike and said nothing: it says
/// so now, read from the demo's ledger, whole on a narrow screen.
#[test]
fn the_overlay_says_when_definitions_differ_only_in_layout() {
    let mut a = app(80, 24);
    on_a_stale_customer_window(&mut a);
    let mut req = diff_request(keys(&mut a, "d"));
    let msg = against_demo(async |wh| {
        let loaded = wh.definition(&req.hash).await.unwrap().unwrap();
        let (_, sql) = loaded.split_once("\nsql:\n").unwrap();
        // The SQL it was loaded under, re-indented and commented.
        req.job.sql = format!(
            "-- the customers, one row each\n{}",
            sql.trim().replace(' ', "\n    ")
        );
        idem::tui::definition_diff(wh, &req).await
    });
    let Msg::DefinitionDiff {
        result: Ok(Some(ref change)),
        ..
    } = msg
    else {
        panic!("no diff: {msg:?}");
    };
    assert_eq!(change.alike, Some(LAYOUT_ONLY_NOTE), "{change:?}");
    a.update(msg);
    let screen = text(&a);
    let shown = screen
        .lines()
        // Each line without the frames' box drawing around it.
        .map(|l| l.trim_matches(|c: char| !c.is_ascii() || c == ' '))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(shown.contains(LAYOUT_ONLY_NOTE), "{screen}");
}

// ---- fuzz ----------------------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn random_keys_and_resizes_never_panic() {
    let mut rng = Rng(0x1d3e_5eed_0001);
    let chars: Vec<char> = "hjklHJKL[]gGvfmsecnrR?/:qynaVxd0123456789-. \t"
        .chars()
        .collect();
    let specials = [
        KeyCode::Enter,
        KeyCode::Esc,
        KeyCode::Tab,
        KeyCode::BackTab,
        KeyCode::Backspace,
        KeyCode::Left,
        KeyCode::Right,
        KeyCode::Up,
        KeyCode::Down,
        KeyCode::PageUp,
        KeyCode::PageDown,
        KeyCode::Home,
        KeyCode::End,
        KeyCode::F(1),
    ];
    let mut a = app(100, 30);
    let mut events = 0;
    for step in 0..6000 {
        let msg = match rng.below(20) {
            0 => Msg::Resize(rng.below(200) as u16 + 1, rng.below(70) as u16 + 1),
            1..=3 => code(specials[rng.below(specials.len() as u64) as usize]),
            4 => Msg::Mouse(MouseEvent {
                kind: match rng.below(4) {
                    0 => MouseEventKind::Down(MouseButton::Left),
                    1 => MouseEventKind::Drag(MouseButton::Left),
                    2 => MouseEventKind::ScrollDown,
                    _ => MouseEventKind::Up(MouseButton::Left),
                },
                column: rng.below(220) as u16,
                row: rng.below(80) as u16,
                modifiers: KeyModifiers::NONE,
            }),
            5 => Msg::Tick(now() + Duration::seconds(step)),
            _ => key(chars[rng.below(chars.len() as u64) as usize]),
        };
        let effects = a.update(msg);
        // Runs started by random keys get a few engine events back.
        for e in effects {
            // Verify and definition reads answer, now and then with an error.
            match &e {
                Effect::Verify(req) => {
                    a.update(Msg::Verified {
                        id: req.id,
                        result: if rng.below(2) == 0 {
                            Err("no such table: t".into())
                        } else {
                            Ok(Verification {
                                job: req.job.name.clone(),
                                partition: req.partition.name(),
                                rows: vec![1, 1, 1],
                                difference: None,
                                run_3_after: idem::warehouse::CLOCK_TICK,
                            })
                        },
                    });
                }
                Effect::DefinitionDiff(req) => {
                    a.update(Msg::DefinitionDiff {
                        id: req.id,
                        result: Ok(Some(diff_of("--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n"))),
                    });
                }
                _ => {}
            }
            if let Effect::StartRun(req) = e {
                let p = req.partitions[0].name();
                a.update(Msg::Engine {
                    run: req.run,
                    event: Event::PartitionStarted {
                        run_id: "f".into(),
                        job: req.job.name.clone(),
                        partition: p.clone(),
                        attempt: 1,
                    },
                });
                if rng.below(2) == 0 {
                    a.update(Msg::Engine {
                        run: req.run,
                        event: Event::RunFinished {
                            run_id: "f".into(),
                            job: req.job.name.clone(),
                            succeeded: 0,
                            failed: 0,
                            not_started: 1,
                            rolled_back: 0,
                            refused: 0,
                            lock_held: 0,
                            empty: 0,
                            cancelled: true,
                            duration_ms: 5,
                        },
                    });
                }
            }
        }
        if a.quit {
            a = app(100, 30);
        }
        render(&a);
        events += 1;
    }
    assert_eq!(events, 6000);
}

// ---- the rows chart and source reconciliation -------------------------------------

/// The demo's spike: the anomaly day with the most rows.
fn spike_day(app: &App) -> String {
    let j = app.job().unwrap();
    let s = j
        .statuses
        .iter()
        .filter(|s| s.anomaly)
        .max_by_key(|s| s.rows())
        .expect("the demo has an anomaly day");
    s.partition.name()
}

#[test]
fn snapshot_chart_on_the_spike_80x24() {
    let mut a = app(80, 24);
    let spike = spike_day(&a);
    keys(&mut a, &format!(":goto {spike}\n"));
    let screen = text(&a);
    assert!(
        screen.contains(&format!("{spike}: 31,000 rows")),
        "{screen}"
    );
    assert!(
        screen.contains("20k ┤"),
        "the spike is cut, the axis stays readable: {screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn snapshot_chart_on_the_spike_140x40() {
    let mut a = app(140, 40);
    let spike = spike_day(&a);
    keys(&mut a, &format!(":goto {spike}\n"));
    let screen = text(&a);
    assert!(screen.contains("* anomaly"), "{screen}");
    assert!(screen.contains("above typical"), "{screen}");
    assert!(screen.contains("vs a week ago"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn snapshot_large_chart() {
    let mut a = app(80, 24);
    keys(&mut a, "z");
    let month = text(&a);
    assert!(month.contains("month 2026-06-01..2026-06-15"), "{month}");
    assert!(
        !month.contains(" attempt"),
        "the chart takes the detail area: {month}"
    );
    insta::assert_snapshot!("large_chart_month_80x24", month);
    // [ moves a whole month; Z widens to a quarter.
    let before = a.job().unwrap().cursor;
    keys(&mut a, "[");
    let j = a.job().unwrap();
    assert_eq!(j.partitions[j.cursor].name(), "2026-05-14");
    assert!(j.cursor < before);
    keys(&mut a, "Z");
    a.update(Msg::Resize(140, 40));
    let quarter = text(&a);
    assert!(
        quarter.contains("quarter 2026-04-01..2026-06-15"),
        "{quarter}"
    );
    insta::assert_snapshot!("large_chart_quarter_140x40", quarter);
    keys(&mut a, "z");
    assert!(text(&a).contains(" attempt"), "back to the detail");
}

#[test]
fn the_detail_tells_the_last_loads_of_the_partition_read_from_the_ledger() {
    let mut a = app(140, 40);
    let spike = spike_day(&a);
    let effects = keys(&mut a, &format!(":goto {spike}\n"));
    let req: Vec<LoadsRequest> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::Loads(r) => Some((**r).clone()),
            _ => None,
        })
        .collect();
    let [req] = req.as_slice() else {
        panic!("one loads request expected: {effects:?}");
    };
    assert_eq!(req.partition.name(), spike);
    assert!(
        keys(&mut a, "V\x1b")
            .iter()
            .all(|e| !matches!(e, Effect::Loads(_))),
        "asked once"
    );
    let result = against_demo(async |wh| {
        wh.attempts(&req.job, Some(&req.partition.name()))
            .await
            .map_err(|e| e.to_string())
    });
    a.update(Msg::Loads { id: req.id, result });
    let screen = text(&a);
    assert!(screen.contains("last loads: "), "{screen}");
    assert!(screen.contains("31,000 rows changed"), "{screen}");
}

/// The ledger could not be read for the detail while the server was down:
/// once a refresh reads the states again, the last loads are asked for
/// again, where "cannot read the ledger: no connection …" stayed under the
/// states read afresh until the cursor moved.
#[test]
fn last_loads_unread_while_the_server_was_down_are_read_again_once_it_is_back() {
    let mut a = app(140, 40);
    let spike = spike_day(&a);
    let loads = |effects: &[Effect]| -> Vec<LoadsRequest> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Loads(r) => Some((**r).clone()),
                _ => None,
            })
            .collect()
    };
    let effects = keys(&mut a, &format!(":goto {spike}\n"));
    let Ok([req]) = <[LoadsRequest; 1]>::try_from(loads(&effects)) else {
        panic!("one loads request expected: {effects:?}");
    };
    let down = "no connection to the warehouse within the connect timeout";
    a.update(Msg::Loads {
        id: req.id,
        result: Err(down.into()),
    });
    assert!(text(&a).contains("cannot read the ledger: no connection"));
    // While the server stays down, a failed refresh asks nothing again.
    let mut asked = Vec::new();
    asked.extend(a.update(Msg::Tick(now() + Duration::seconds(16))));
    for (job, _) in &fixture().statuses {
        asked.extend(a.update(Msg::Status {
            job: job.clone(),
            result: Err(Unread::of_warehouse(down)),
        }));
    }
    asked.extend(a.update(Msg::Tick(now() + Duration::seconds(17))));
    assert!(loads(&asked).is_empty(), "{asked:?}");
    asked.extend(a.update(Msg::Tick(now() + Duration::seconds(32))));
    for (job, _) in &fixture().statuses {
        asked.extend(a.update(Msg::Status {
            job: job.clone(),
            result: Ok(StatesRead::Unchanged),
        }));
    }
    let Ok([again]) = <[LoadsRequest; 1]>::try_from(loads(&asked)) else {
        panic!("the loads asked again once: {asked:?}");
    };
    assert_eq!(again.partition, req.partition);
    let result = against_demo(async |wh| {
        wh.attempts(&again.job, Some(&again.partition.name()))
            .await
            .map_err(|e| e.to_string())
    });
    a.update(Msg::Loads {
        id: again.id,
        result,
    });
    let screen = text(&a);
    assert!(!screen.contains("cannot read the ledger"), "{screen}");
    assert!(screen.contains("31,000 rows changed"), "{screen}");
}

fn reconcile_request(effects: Vec<Effect>) -> ReconcileRequest {
    match effects.as_slice() {
        [Effect::Reconcile(req)] => (**req).clone(),
        other => panic!("expected one reconcile request, got {other:?}"),
    }
}

fn out_of_date(app: &App) -> Vec<(String, i64)> {
    let j = app.job().unwrap();
    j.statuses
        .iter()
        .filter_map(|s| Some((s.partition.name(), s.out_of_date()?)))
        .collect()
}

#[test]
fn reconciliation_marks_the_calendar_and_o_selects_the_late_days() {
    let mut a = app(80, 24);
    let req = reconcile_request(keys(&mut a, "O"));
    assert_eq!(req.job.name, "fct_orders");
    assert_eq!(req.last.name(), "2026-06-14", "not the future");
    assert!(a.message.as_ref().unwrap().1.contains("reconciling"));
    // A refresh keeps nothing new running, and pressing O again stops it.
    let msg = against_demo(async |wh| idem::tui::reconcile(wh, &req, &Default::default()).await);
    let again = keys(&mut a, "O");
    assert!(matches!(again.as_slice(), [Effect::StopReconcile(id)] if *id == req.id));
    a.update(msg);
    assert!(
        out_of_date(&a).is_empty(),
        "a stopped reconciliation's answer is dropped"
    );
    // For real this time; moving to another job would stop it too.
    let req = reconcile_request(keys(&mut a, "O"));
    a.update(against_demo(async |wh| {
        idem::tui::reconcile(wh, &req, &Default::default()).await
    }));
    let late = out_of_date(&a);
    assert_eq!(late.len(), 3, "{late:?}");
    assert!(late.iter().all(|(_, d)| *d > 0), "{late:?}");
    let note = &a.message.as_ref().unwrap().1;
    assert!(note.contains("3 partitions out of date"), "{note}");
    // The marks survive a refresh of the states.
    let f = fixture();
    a.update(Msg::Status {
        job: "fct_orders".into(),
        result: Ok(StatesRead::States(f.statuses[0].1.clone().into())),
    });
    assert_eq!(out_of_date(&a), late);
    let screen = text(&a);
    assert_eq!(
        screen.matches("■+").count(),
        3,
        "marked in the calendar: {screen}"
    );
    insta::assert_snapshot!("reconciled_calendar_80x24", screen);
    keys(&mut a, "o");
    let j = a.job().unwrap();
    let chosen: Vec<String> = j.selected.iter().map(|i| j.partitions[*i].name()).collect();
    let names: Vec<String> = late.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(chosen, names);
    let (first, d) = &late[0];
    let screen = text(&a);
    assert!(
        screen.contains(&format!("+{d} late")) && screen.contains(first.as_str()),
        "{screen}"
    );
    // Leaving the job stops a reconciliation in flight.
    let req = reconcile_request(keys(&mut a, "O"));
    let effects = keys(&mut a, "J");
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::StopReconcile(id) if *id == req.id)),
        "{effects:?}"
    );
}

/// The first `n` consecutive loaded days of the job on screen that hold rows.
fn loaded_days(app: &App, n: usize) -> Vec<(String, i64)> {
    let j = app.job().unwrap();
    let days: Vec<(String, i64)> = j
        .statuses
        .iter()
        .map(|s| (s.partition.name(), s.rows_now.unwrap_or(0), s.state))
        .collect::<Vec<_>>()
        .windows(n)
        .find(|w| {
            w.iter()
                .all(|(_, r, st)| *r > 0 && *st == LoadState::Loaded)
        })
        .expect("loaded days")
        .iter()
        .map(|(d, r, _)| (d.clone(), *r))
        .collect();
    days
}

/// A second run of days a first run of this console has yet to load
/// leaves them out (both would load them, one after the other) and says so.
#[test]
fn a_second_run_leaves_out_what_a_first_has_yet_to_load() {
    let mut a = app(140, 40);
    let days = loaded_days(&a, 4);
    let start = |a: &mut App, moves: &str| {
        keys(a, &format!(":goto {}\n", days[0].0));
        keys(a, &format!("v{moves}"));
        let req = reconcile_request(keys(a, "r"));
        let counts: idem::warehouse::Counts = days.iter().cloned().collect();
        a.update(Msg::Reconciled {
            id: req.id,
            result: Ok(SourceCounts {
                partitions: counts,
                null_partition: None,
            }),
        });
        match keys(a, "\n").as_slice() {
            [Effect::StartRun(run)] => run.partitions.iter().map(|p| p.name()).collect::<Vec<_>>(),
            other => panic!("expected a run, got {other:?}"),
        }
    };
    assert_eq!(start(&mut a, "ll").len(), 3);
    // Nothing of the first has started yet: all three are queued.
    assert_eq!(start(&mut a, "lll"), [days[3].0.clone()]);
    assert_eq!(
        a.message.as_ref().map(|(_, m)| m.as_str()),
        Some("3 partitions left out: queued in a run of this console already")
    );
}

/// A partition without rows whose source has none yet would load empty and
/// then count as loaded (the shrink guard stops only partitions with rows):
/// the dialog says so before the run, naming it.
#[test]
fn the_confirm_dialog_names_what_a_late_source_would_load_empty() {
    let mut a = app(140, 40);
    let missing = a
        .job()
        .unwrap()
        .statuses
        .iter()
        .find(|s| s.state == LoadState::Missing)
        .map(|s| s.partition.name())
        .expect("a missing day");
    keys(&mut a, &format!(":goto {missing}\n"));
    let req = reconcile_request(keys(&mut a, "r"));
    let counts: idem::warehouse::Counts = [(missing.clone(), 0)].into_iter().collect();
    a.update(Msg::Reconciled {
        id: req.id,
        result: Ok(SourceCounts {
            partitions: counts,
            null_partition: None,
        }),
    });
    let screen = text(&a);
    assert!(
        screen.contains(
            "empty     1 partition would load empty, then count as loaded: no source rows yet (late?)"
        ),
        "{screen}"
    );
    assert!(screen.contains(&missing), "{screen}");
}

#[test]
fn the_confirm_dialog_counts_the_source_and_shows_what_the_shrink_guard_refuses() {
    let mut a = app(140, 40);
    let days = loaded_days(&a, 3);
    keys(&mut a, &format!(":goto {}\n", days[0].0));
    keys(&mut a, "vll");
    // Opening the dialog of a replace job counts the source of its days.
    let req = reconcile_request(keys(&mut a, "r"));
    assert_eq!(
        (req.first.name(), req.last.name()),
        (days[0].0.clone(), days[2].0.clone())
    );
    let screen = text(&a);
    assert!(
        screen.contains("counting what the job's SQL gives"),
        "{screen}"
    );
    assert!(
        a.message.is_none(),
        "the count is the dialog's, not the status bar's"
    );
    // The source now: the first day whole, the second empty (a late
    // source), the third at a third of its rows.
    let counts: idem::warehouse::Counts = [
        (days[0].0.clone(), days[0].1),
        (days[1].0.clone(), 0),
        (days[2].0.clone(), days[2].1 / 3),
    ]
    .into_iter()
    .collect();
    a.update(Msg::Reconciled {
        id: req.id,
        result: Ok(SourceCounts {
            partitions: counts,
            null_partition: None,
        }),
    });
    let thousands = idem::numbers::thousands;
    let screen = text(&a);
    let total = idem::numbers::thousands(days[0].1 + days[2].1 / 3);
    assert!(
        screen.contains(&format!(
            "source    {total} rows for these 3 partitions now"
        )),
        "{screen}"
    );
    assert!(screen.contains("2 partitions would be refused"), "{screen}");
    let second = format!("{} {} → 0", days[1].0, thousands(days[1].1));
    assert!(screen.contains(&second), "{screen}");
    assert!(screen.contains(&days[2].0), "{screen}");
    assert!(
        !screen.contains(&format!("{} {} →", days[0].0, thousands(days[0].1))),
        "{screen}"
    );
    // S lets them shrink, and the run carries it.
    keys(&mut a, "S");
    let screen = text(&a);
    assert!(
        screen.contains("allowed: 2 partitions will shrink"),
        "{screen}"
    );
    let effects = keys(&mut a, "\n");
    let [Effect::StartRun(run)] = effects.as_slice() else {
        panic!("expected one run (the count had answered), got {effects:?}");
    };
    assert!(run.allow_shrink);
    assert_eq!(run.partitions.len(), 3);
    // A count still in flight stops when the dialog closes; one that
    // fails says so and leaves the guard to the run.
    keys(&mut a, &format!(":goto {}\n", days[0].0));
    let req = reconcile_request(keys(&mut a, "r"));
    let effects = keys(&mut a, "\x1b");
    assert!(
        matches!(effects.as_slice(), [Effect::StopReconcile(id)] if *id == req.id),
        "{effects:?}"
    );
    let req = reconcile_request(keys(&mut a, "r"));
    a.update(Msg::Reconciled {
        id: req.id,
        result: Err("statement timeout".into()),
    });
    let screen = text(&a);
    assert!(
        screen.contains("could not count the source (statement timeout)"),
        "{screen}"
    );
}

#[test]
fn a_slow_state_read_says_what_it_waits_on() {
    let f = fixture();
    let mut a = App::new(f.config.clone(), Theme::default_theme(), now());
    a.update(Msg::Resize(140, 40));
    a.start();
    a.update(connected("sqlite:///demo/warehouse.db"));
    let screen = text(&a);
    assert!(screen.contains("loading states…"), "{screen}");
    let job = &f.config.jobs[0];
    let note = idem::state::slow_read_note(job, std::time::Duration::from_secs(30));
    a.update(Msg::SlowRead {
        job: job.name.clone(),
        note,
    });
    let screen = text(&a);
    assert!(
        screen.contains("another session holds a lock on it")
            && screen.contains("lock_timeout = 30s"),
        "{screen}"
    );
    // Once read, the note goes; a slow refresh later shows in the title.
    a.update(Msg::Status {
        job: job.name.clone(),
        result: Ok(StatesRead::States(f.statuses[0].1.clone().into())),
    });
    assert!(!text(&a).contains("holds a lock"));
    keys(&mut a, "R");
    a.update(Msg::SlowRead {
        job: job.name.clone(),
        note: "still reading".into(),
    });
    let screen = text(&a);
    assert!(
        screen.contains("still reading: busy, locked or unreachable?"),
        "{screen}"
    );
    a.update(Msg::Status {
        job: job.name.clone(),
        result: Ok(StatesRead::States(f.statuses[0].1.clone().into())),
    });
    assert!(!text(&a).contains("still reading"));
}

// ---- README ----------------------------------------------------------------------

#[test]
fn readme_keys_table_matches_the_registry() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let table = keys::markdown_table();
    assert!(
        readme.contains(&table),
        "README.md's keys table differs from the key registry; paste this:\n\n{table}"
    );
}

#[test]
fn svg_picture_renders_the_screen() {
    let a = app(120, 36);
    let t = render(&a);
    let svg = idem::tui::svg::buffer_to_svg(t.backend().buffer());
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("fct_orders"));
    assert!(svg.contains("✗"));
}

/// A picture of a run in progress, for looking at: `-- --ignored picture_of_a_run`.
#[test]
#[ignore]
fn picture_of_a_run() {
    let (a, _, _) = run_in_progress(120, 40);
    let t = render(&a);
    let svg = idem::tui::svg::buffer_to_svg(t.backend().buffer());
    std::fs::write(std::env::temp_dir().join("idem-run.svg"), svg).unwrap();
}

/// Writes the README's picture: `cargo test --test console -- --ignored`.
#[test]
#[ignore]
fn write_readme_picture() {
    let mut a = app(120, 36);
    keys(&mut a, "f");
    let t = render(&a);
    let svg = idem::tui::svg::buffer_to_svg(t.backend().buffer());
    std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/assets")).unwrap();
    std::fs::write(
        concat!(env!("CARGO_MANIFEST_DIR"), "/assets/console.svg"),
        svg,
    )
    .unwrap();
}

// ---- lineage and cascades -----------------------------------------------------------

/// The demo's month made stale by a day loaded again after it.
fn stale_upstream_month(app: &App) -> usize {
    let j = app.job().unwrap();
    let stale: Vec<usize> = (0..j.partitions.len())
        .filter(|i| {
            j.status_at(*i)
                .is_some_and(|s| !s.stale_upstream.is_empty())
        })
        .collect();
    assert_eq!(stale.len(), 1, "the demo has one stale (upstream) month");
    stale[0]
}

#[test]
fn a_stale_upstream_month_has_its_own_glyph_and_says_what_changed() {
    let mut a = app(120, 36);
    select_job(&mut a, "agg_revenue_monthly");
    let i = stale_upstream_month(&a);
    let j = a.job().unwrap();
    assert_eq!(j.state_at(i), Some(LoadState::Stale));
    assert_eq!(j.glyph_at(i), LoadState::UPSTREAM_GLYPH);
    let month = j.partitions[i].name();
    keys(&mut a, &format!(":goto {month}\n"));
    let screen = text(&a);
    assert!(screen.contains('≈'), "{screen}");
    assert!(screen.contains("≈ stale (upstream)"), "{screen}");
    let cause = &a.job().unwrap().statuses[i].stale_upstream[0];
    assert!(cause.starts_with("fct_orders "), "{cause}");
    let line = screen
        .lines()
        .find(|l| l.contains(cause.as_str()))
        .unwrap_or_else(|| panic!("no {cause} in\n{screen}"));
    assert!(line.contains("loaded 2026-06-14 02:00"), "{line}");
}

/// QA: a partition stale for its own definition and for upstream changes
/// showed ≈ and "≈ stale (upstream)", as if its cascade were all it
/// needed, while `idem status` said `~ stale` with the upstream cause: it
/// is `~`, its definition changed, and the detail still names the cause.
#[test]
fn a_month_stale_for_its_definition_too_is_not_drawn_as_upstream_only() {
    let mut a = app(120, 36);
    select_job(&mut a, "agg_revenue_monthly");
    let i = stale_upstream_month(&a);
    let j = a.job().unwrap();
    let mut statuses = j.statuses.clone();
    let mut success = (**statuses[i].last_success.as_ref().unwrap()).clone();
    success.definition_hash = "an older definition".into();
    statuses[i].last_success = Some(std::sync::Arc::new(success));
    let (name, month) = (j.job.name.clone(), j.partitions[i].name());
    a.update(Msg::Status {
        job: name,
        result: Ok(StatesRead::States(statuses.into())),
    });
    let j = a.job().unwrap();
    assert_eq!(j.state_at(i), Some(LoadState::Stale));
    assert_eq!(j.glyph_at(i), LoadState::Stale.glyph());
    keys(&mut a, &format!(":goto {month}\n"));
    let screen = text(&a);
    assert!(screen.contains("~ stale · "), "{screen}");
    assert!(!screen.contains("≈ stale (upstream) · "), "{screen}");
    let cause = &a.job().unwrap().statuses[i].stale_upstream[0];
    assert!(screen.contains(cause.as_str()), "{screen}");
}

#[test]
fn snapshot_lineage_view() {
    let mut a = app(110, 34);
    keys(&mut a, "L");
    assert!(matches!(a.modal, Modal::Lineage(_)));
    let screen = text(&a);
    assert!(screen.contains("Lineage of fct_orders"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn enter_in_the_lineage_view_jumps_to_the_job() {
    let mut a = app(110, 34);
    keys(&mut a, "L");
    let screen = text(&a);
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains(" ↑ ") || l.contains(" ↓ "))
        .collect();
    let k = rows
        .iter()
        .position(|l| l.contains("↓ agg_revenue_monthly"))
        .unwrap_or_else(|| panic!("agg_revenue_monthly is not downstream:\n{screen}"));
    keys(&mut a, &"j".repeat(k));
    keys(&mut a, "\n");
    assert!(matches!(a.modal, Modal::None));
    assert_eq!(a.job().unwrap().job.name, "agg_revenue_monthly");
    keys(&mut a, "L");
    assert!(text(&a).contains("↑ fct_orders"), "{}", text(&a));
    keys(&mut a, "\x1b");
    assert!(matches!(a.modal, Modal::None));
}

#[test]
fn snapshot_confirm_cascade() {
    let mut a = app(110, 36);
    keys(&mut a, "fr");
    let Modal::Confirm(c) = &a.modal else {
        panic!("no dialog")
    };
    assert!(!c.cascade_on());
    keys(&mut a, "c");
    let Modal::Confirm(c) = &a.modal else {
        panic!("no dialog")
    };
    assert!(c.command().ends_with("--cascade"), "{}", c.command());
    let plan = c.cascade().expect("a cascade plan");
    assert!(plan.problems.is_empty(), "{:?}", plan.problems);
    let steps: Vec<(String, usize)> = plan
        .steps
        .iter()
        .map(|s| (s.job.name.clone(), s.partitions.len()))
        .collect();
    assert_eq!(steps, [("agg_revenue_monthly".to_string(), 1)]);
    let month = &failed_days(&a)[0][..7];
    let screen = text(&a);
    assert!(
        screen.contains(&format!(
            "then agg_revenue_monthly loads again 1 partition made stale: {month}"
        )),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
    let effects = keys(&mut a, "\n");
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("no run: {effects:?}")
    };
    assert_eq!(req.backfill.job.name, "fct_orders");
    assert_eq!(req.backfill.partitions.len(), 3);
    let [(step_run, step)] = req.cascade.as_slice() else {
        panic!("{:?}", req.cascade)
    };
    assert_eq!(step.job.name, "agg_revenue_monthly");
    assert_eq!(a.runs.len(), 2, "the runs pane shows each step");
    assert_eq!(a.runs[1].id, *step_run);
    assert_eq!(a.runs[1].job, "agg_revenue_monthly");
}

/// The monthly job run over a month a day of which failed to load: the
/// dialog says the month reads days not loaded, as `idem run` does (it
/// said nothing: only a cascade's later steps were checked), and the run
/// it starts carries them into its `run_started`.
#[test]
fn a_month_run_over_days_not_loaded_says_so_and_carries_it_into_the_run() {
    let mut a = app(150, 40);
    select_job(&mut a, "fct_orders");
    let day = failed_days(&a)[0].clone();
    let month = day[..7].to_string();
    select_job(&mut a, "agg_revenue_monthly");
    keys(&mut a, &format!(":run {month}..{month}\n"));
    let Modal::Confirm(c) = &a.modal else {
        panic!("no dialog: {:?}", a.message)
    };
    assert!(!c.cascade_on());
    let reads = |b: &Backfill| {
        b.reads_not_loaded
            .iter()
            .map(|p| {
                let days = p.not_loaded.iter().map(|(d, s)| (d.name(), *s));
                (p.window.name(), p.upstream.clone(), days.collect())
            })
            .collect::<Vec<(String, String, Vec<(String, LoadState)>)>>()
    };
    let planned = reads(&c.backfill().expect("a plan"));
    let [(window, upstream, days)] = planned.as_slice() else {
        panic!("{planned:?}")
    };
    assert_eq!((window, upstream.as_str()), (&month, "fct_orders"));
    assert!(days.contains(&(day.clone(), LoadState::Failed)), "{days:?}");
    let screen = text(&a);
    let said = format!("upstream  agg_revenue_monthly {month} reads ");
    assert!(screen.contains(&said), "{said}\n{screen}");
    let effects = keys(&mut a, "\n");
    let [Effect::StartRun(req)] = effects.as_slice() else {
        panic!("no run: {effects:?}")
    };
    assert_eq!(reads(&req.backfill), planned, "the run's events carry it");
}

#[test]
fn cascade_toggles_off_and_the_command_line_asks_for_it() {
    let mut a = app(110, 36);
    keys(&mut a, "frcc");
    let Modal::Confirm(c) = &a.modal else {
        panic!("no dialog")
    };
    assert!(c.cascade().is_none());
    assert!(!c.command().contains("--cascade"));
    keys(&mut a, "\x1b");
    keys(
        &mut a,
        ":run 2026-03-01..2026-03-31 --only failed --cascade\n",
    );
    let Modal::Confirm(c) = &a.modal else {
        panic!("no dialog: {:?}", a.message)
    };
    assert!(c.cascade_on());
    assert_eq!(c.cascade().map(|p| p.steps.len()), Some(1));
    // The same command names the range once, by the flags.
    let same = c.command();
    assert!(same.contains("--cascade"), "{same}");
    assert!(!same.contains(".."), "{same}");
    assert_eq!(same.matches("--from 2026-03-").count(), 1, "{same}");
}

#[test]
fn a_cascade_step_whose_partitions_are_all_skipped_ends() {
    let mut a = app(110, 36);
    let effects = keys(&mut a, "frc\n");
    let Some(req) = effects.iter().find_map(|e| match e {
        Effect::StartRun(req) => Some(req),
        _ => None,
    }) else {
        panic!("no run: {effects:?}")
    };
    let (step_run, step) = &req.cascade[0];
    let (root_run, root) = (req.run, req.backfill.clone());
    // Upstream: its first partition fails, the rest load.
    for (i, p) in root.partitions.iter().enumerate() {
        let (partition, run_id, job) = (p.name(), "r1".to_string(), root.job.name.clone());
        a.update(Msg::Engine {
            run: root_run,
            event: if i == 0 {
                Event::PartitionFailed {
                    run_id,
                    job,
                    partition,
                    attempt: 1,
                    error: "CHECK constraint failed".into(),
                    cause: FailureCause::Error,
                    will_retry: false,
                    duration_ms: 5,
                }
            } else {
                Event::PartitionSucceeded {
                    run_id,
                    job,
                    partition,
                    attempt: 1,
                    rows_deleted: 0,
                    rows_inserted: 10,
                    rows_updated: 0,
                    rows_after: 10,
                    duration_ms: 5,
                    fingerprint: "f".into(),
                    content_changed: true,
                }
            },
        });
    }
    a.update(Msg::Engine {
        run: root_run,
        event: Event::RunFinished {
            run_id: "r1".into(),
            job: root.job.name.clone(),
            succeeded: root.partitions.len() - 1,
            failed: 1,
            not_started: 0,
            rolled_back: 0,
            refused: 0,
            lock_held: 0,
            empty: 0,
            cancelled: false,
            duration_ms: 20,
        },
    });
    // The cascade is not over while a step waits.
    assert!(
        a.message
            .as_ref()
            .is_some_and(|(_, m)| m.starts_with("run of fct_orders finished: ")),
        "{:?}",
        a.message
    );
    for p in &step.partitions {
        a.update(Msg::Engine {
            run: *step_run,
            event: Event::PartitionSkipped {
                job: step.job.name.clone(),
                partition: p.name(),
                because: "fct_orders 2026-06-03 did not load".into(),
            },
        });
    }
    // The engine ends a step it ran nothing of with step_skipped.
    a.update(Msg::Engine {
        run: *step_run,
        event: Event::StepSkipped {
            job: step.job.name.clone(),
            partitions: step.partitions.iter().map(|p| p.name()).collect(),
            cancelled: false,
        },
    });
    let r = a.runs.iter().find(|r| r.id == *step_run).unwrap();
    assert!(!r.active(), "a fully skipped step is over");
    assert!(
        r.partitions[0]
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("skipped: fct_orders 2026-06-03")),
        "{:?}",
        r.partitions[0].error
    );
    // The status bar says how the whole cascade ended, the step skipped
    // whole too: it used to keep the upstream's ending, as if nothing
    // downstream had been left out.
    let (bad, ending) = a.message.clone().expect("an ending");
    assert!(bad, "{ending}");
    assert_eq!(
        ending,
        format!(
            "cascade from fct_orders finished: fct_orders: {} succeeded, 1 failed · \
             {}: 0 succeeded, 0 failed, {} skipped: what they read did not load",
            root.partitions.len() - 1,
            step.job.name,
            step.partitions.len()
        )
    );
}

/// A job the cascade gave a step as it went (a reader with no step
/// planned, reached by a merge: the engine sends its events as of the
/// root's run) is shown as a run of its own in the cascade, not in the
/// root's run and the root job's calendar.
#[test]
fn a_step_the_cascade_adds_as_it_goes_is_a_run_of_its_own() {
    let mut a = app(110, 36);
    let effects = keys(&mut a, "frc\n");
    let Some(req) = effects.iter().find_map(|e| match e {
        Effect::StartRun(req) => Some(req),
        _ => None,
    }) else {
        panic!("no run: {effects:?}")
    };
    let (root_run, root) = (req.run, req.backfill.clone());
    let planned: Vec<&str> = std::iter::once(root.job.name.as_str())
        .chain(req.cascade.iter().map(|(_, b)| b.job.name.as_str()))
        .collect();
    let added = a
        .config()
        .jobs
        .iter()
        .map(|j| j.name.clone())
        .find(|name| !planned.contains(&name.as_str()))
        .expect("a job the cascade has no step of");
    let day = root.partitions[0].name();
    let runs_before = a.runs.len();
    for event in [
        Event::PartitionAdded {
            job: added.clone(),
            partition: day.clone(),
            because: "a merge moved rows into it".into(),
        },
        Event::RunStarted {
            run_id: "r9".into(),
            job: added.clone(),
            strategy: root.job.strategy,
            partitions: vec![day.clone()],
            concurrency: 1,
            reason: None,
            upstream_not_loaded: Vec::new(),
            upstream_unread: Vec::new(),
        },
        Event::PartitionStarted {
            run_id: "r9".into(),
            job: added.clone(),
            partition: day.clone(),
            attempt: 1,
        },
    ] {
        a.update(Msg::Engine {
            run: root_run,
            event,
        });
    }
    assert_eq!(a.runs.len(), runs_before + 1);
    let step = a.runs.last().unwrap();
    assert_eq!(step.job, added);
    assert_eq!(step.run_id.as_deref(), Some("r9"));
    assert_eq!(step.partitions.len(), 1);
    assert_eq!(step.partitions[0].name, day);
    let root_view = a.runs.iter().find(|r| r.id == root_run).unwrap();
    assert_eq!(step.cascade, root_view.cascade);
    assert_ne!(root_view.run_id.as_deref(), Some("r9"));
    assert_eq!(root_view.partitions.len(), root.partitions.len());
    assert!(
        root_view.partitions.iter().all(|p| p.tries == 0),
        "the root's rows took the added step's start"
    );
}

#[test]
fn allow_shrink_is_a_key_in_the_confirm_dialog() {
    let mut a = app(110, 36);
    keys(&mut a, "frS");
    let Modal::Confirm(c) = &a.modal else {
        panic!("no dialog")
    };
    assert!(c.command().contains("--allow-shrink"), "{}", c.command());
    assert!(c.backfill().unwrap().allow_shrink);
    assert!(text(&a).contains("shrink    allowed"), "{}", text(&a));
    keys(&mut a, "S");
    let Modal::Confirm(c) = &a.modal else {
        panic!("no dialog")
    };
    assert!(!c.command().contains("--allow-shrink"));
    assert!(!c.backfill().unwrap().allow_shrink);
    assert!(!text(&a).contains("shrink    allowed"));
}

#[test]
fn a_partition_the_shrink_guard_refused_reads_as_refused() {
    let (mut a, run, names) = run_in_progress(120, 40);
    let refusal = idem::warehouse::WarehouseError::SourceShrank {
        partition: names[1].clone(),
        before: 10_000,
        after: 12,
        floor: 0.5,
    }
    .to_string();
    for (p, error, cause) in [
        (&names[1], refusal, FailureCause::ShrinkGuard),
        (
            &names[2],
            "CHECK constraint failed: amount_usd >= 0".to_string(),
            FailureCause::Error,
        ),
    ] {
        end_in_run(&mut a, run, p, &error, cause);
    }
    let screen = text(&a);
    let row = |name: &str| {
        screen
            .lines()
            .find(|l| l.contains(&format!(" {name} ")) && (l.contains('⊖') || l.contains('✗')))
            .unwrap_or_else(|| panic!("no row {name}:\n{screen}"))
            .to_string()
    };
    assert!(row(&names[1]).contains("⊖") && row(&names[1]).contains("refused"));
    assert!(row(&names[1]).contains("source looks incomplete"));
    assert!(row(&names[2]).contains("✗") && row(&names[2]).contains("failed"));
    a.update(Msg::Engine {
        run,
        event: Event::RunFinished {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            succeeded: 1,
            failed: 2,
            not_started: 0,
            rolled_back: 0,
            refused: 0,
            lock_held: 0,
            empty: 0,
            cancelled: false,
            duration_ms: 3000,
        },
    });
    let note = a.message.clone().unwrap_or_default().1;
    assert!(
        note.contains("1 succeeded, 1 failed, 1 refused by the shrink guard"),
        "{note}"
    );
}

/// An idle console draws nothing: the periodic refresh shows no spinner
/// for a quick read, and a read that finds what the console holds answers
/// "unchanged", which draws nothing either. A change, a slow read and a
/// refresh the user asked for are drawn; a run this console shows changes
/// its states, so the next read must send them, not "unchanged".
#[test]
fn an_idle_refresh_draws_nothing_unless_something_changed() {
    let f = fixture();
    let mut a = app(120, 40);
    a.update(Msg::Drawn);
    let jobs: Vec<String> = f.statuses.iter().map(|(j, _)| j.clone()).collect();
    assert!(jobs.iter().all(|j| a.holds_last_read(j)));
    let refresh_at = |a: &mut App, secs: i64| {
        let effects = a.update(Msg::Tick(now() + chrono::Duration::seconds(secs)));
        assert!(
            matches!(effects.as_slice(), [Effect::ReadConfig { .. }, Effect::Refresh(names)] if names.len() == jobs.len()),
            "{effects:?}"
        );
    };
    let unchanged = |job: &str| Msg::Status {
        job: job.to_string(),
        result: Ok(StatesRead::Unchanged),
    };

    // Within the clock's minute: nothing on screen moves.
    refresh_at(&mut a, 16);
    assert!(!a.needs_redraw(), "a quick periodic read shows no spinner");
    for j in &jobs {
        a.update(unchanged(j));
    }
    assert!(!a.needs_redraw(), "an unchanged answer draws nothing");
    assert!(!text(&a).contains('⟳'));

    // A read that is slow says so, and its end is drawn.
    refresh_at(&mut a, 32);
    a.update(Msg::SlowRead {
        job: jobs[0].clone(),
        note: "still reading".into(),
    });
    assert!(a.needs_redraw());
    assert!(text(&a).contains("⟳ loading"), "{}", text(&a));
    a.update(Msg::Drawn);
    a.update(unchanged(&jobs[0]));
    assert!(a.needs_redraw(), "the spinner goes away");
    a.update(Msg::Drawn);
    for j in &jobs[1..] {
        a.update(unchanged(j));
    }
    assert!(!a.needs_redraw());

    // New states are drawn.
    refresh_at(&mut a, 48);
    for (j, s) in &f.statuses {
        let mut s = s.clone();
        s[0].rows_now = Some(7);
        a.update(Msg::Status {
            job: j.clone(),
            result: Ok(StatesRead::States(s.into())),
        });
    }
    assert!(a.needs_redraw());
    a.update(Msg::Drawn);

    // A refresh the user asks for shows that it reads.
    let effects = a.update(key('R'));
    assert!(matches!(
        effects.as_slice(),
        [Effect::ReadConfig { .. }, Effect::Refresh(_)]
    ));
    assert!(a.needs_redraw());
    assert!(text(&a).contains("⟳ loading"));
}

/// A run's events change the states a console holds: it no longer holds
/// what its last read sent.
#[test]
fn a_run_shown_changes_the_states_held() {
    let (mut a, run, names) = run_in_progress(120, 40);
    fail_in_run(&mut a, run, &names[1], "boom");
    assert!(!a.holds_last_read("fct_orders"));
    let others: Vec<String> = a
        .config()
        .jobs
        .iter()
        .map(|j| j.name.clone())
        .filter(|j| j != "fct_orders")
        .collect();
    assert_eq!(others.len(), 3);
    assert!(others.iter().all(|j| a.holds_last_read(j)), "{others:?}");
}

/// A config file that no longer loads is named in the title bar, which
/// stays until the file loads again.
#[test]
fn a_config_that_no_longer_loads_is_named_in_the_title_bar() {
    let mut app = app(140, 40);
    config_read(
        &mut app,
        Err("idem.toml:12:7: jobs[0].grain: expected one of hour, day, month".into()),
    );
    let first = text(&app);
    let title = first.lines().next().unwrap_or_default();
    assert!(title.contains("✗ idem.toml:12:7 does not load"), "{first}");
    assert!(
        first.contains("jobs[0].grain: expected one of hour"),
        "{first}"
    );
    app.update(Msg::Tick(now()));
    assert!(
        text(&app)
            .lines()
            .next()
            .unwrap_or_default()
            .contains("does not load")
    );
}

/// Below the minimum size the screen names the quit key, and while the
/// quit question is asked it shows the question and its keys (the only
/// keys it answers to then), not "q quits".
#[test]
fn the_too_small_screen_names_the_quit_key_and_shows_the_question() {
    let (mut a, _, _) = run_in_progress(120, 40);
    a.update(Msg::Resize(40, 10));
    let shown = text(&a);
    assert!(
        shown.contains("terminal too small") && shown.contains("q quits"),
        "{shown}"
    );
    keys(&mut a, "q");
    assert!(matches!(a.modal, Modal::Question(Question::Quit)));
    let shown = text(&a);
    assert!(
        shown.contains("1 run in flight") && shown.contains("y yes   n no"),
        "{shown}"
    );
    assert!(!shown.contains("q quits"), "{shown}");
}

/// QA: a server's error quoting an escape sequence ("\x1b[31m") read as a
/// leftover "[31m" on the run's row, in its log, in the lint of the confirm
/// dialog and in the status bar: ratatui drops the escape character and
/// draws the rest. The console shows it as headless output does,
/// `\u{1b}[31m`, wherever it is drawn.
#[test]
fn escape_sequences_from_outside_show_visibly_in_every_pane() {
    let (mut a, run, names) = run_in_progress(120, 40);
    let error = "no such table: \u{1b}[31mnope\u{7}";
    let partition = names[0].clone();
    for event in [
        Event::PartitionLog {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            partition: partition.clone(),
            line: format!("ROLLBACK: {error}"),
        },
        Event::PartitionFailed {
            run_id: "r1".into(),
            job: "fct_orders".into(),
            partition,
            attempt: 2,
            error: error.into(),
            cause: FailureCause::Error,
            will_retry: false,
            duration_ms: 3,
        },
    ] {
        a.update(Msg::Engine { run, event });
    }
    a.update(Msg::Linted {
        job: Box::new(a.config().jobs[0].clone()),
        notes: vec![LintNote {
            error: true,
            message: format!("line 1: {error}"),
        }],
    });
    let shows_visibly = |what: &str, screen: String| {
        assert!(
            screen.contains("\\u{1b}[31mnope\\u{7}"),
            "{what}: not shown\n{screen}"
        );
        assert_eq!(
            screen.matches("[31m").count(),
            screen.matches("\\u{1b}[31m").count(),
            "{what}: a leftover escape\n{screen}"
        );
    };
    shows_visibly("runs pane", text(&a));
    a.update(Msg::ThemeLoaded(Err(format!("cannot read theme: {error}"))));
    shows_visibly("status bar", text(&a));
    keys(&mut a, "\x1b\x1bR");
    keys(&mut a, ":run 2026-06-01..2026-06-02\n");
    assert!(matches!(a.modal, Modal::Confirm(_)), "{:?}", a.message);
    shows_visibly("confirm dialog", text(&a));
}

/// The rows inside the selected partition's log box, as drawn.
fn log_rows(a: &App) -> Vec<String> {
    let screen = text(a);
    let lines: Vec<Vec<char>> = screen.lines().map(|l| l.chars().collect()).collect();
    let Some((top, left)) = lines.iter().enumerate().find_map(|(y, l)| {
        let s: String = l.iter().collect();
        let x = s.find("┌ log ")?;
        Some((y, s[..x].chars().count()))
    }) else {
        panic!("no log box:\n{screen}")
    };
    let mut rows = Vec::new();
    for l in &lines[top + 1..] {
        if l.get(left) != Some(&'│') {
            break;
        }
        let row: String = l[left + 1..].iter().take_while(|c| **c != '│').collect();
        rows.push(row.trim_end().to_string());
    }
    rows
}

/// The log box shows no blank row: it is full, or the whole log fits.
#[track_caller]
fn log_full(a: &App, first: &str, newest: &str) {
    let rows = log_rows(a);
    let last_text = rows.iter().rposition(|r| !r.is_empty());
    let whole = rows.first().is_some_and(|r| r.contains(first))
        && last_text.is_some_and(|i| rows[i].contains(newest));
    assert!(
        whole || rows.iter().all(|r| !r.is_empty()),
        "blank rows in the log:\n{}",
        rows.join("\n")
    );
}

/// QA: `[`, PgUp and the wheel scrolled a run's log back past its first
/// line, down to that one line at the top of an empty box; a terminal
/// made bigger left it so too. Home did nothing in the log. Now the log
/// stops with its first line at the top of a full box, Home goes there,
/// End follows it again, and lines arriving meanwhile leave it put.
#[test]
fn a_runs_log_scrolls_back_no_further_than_its_first_line() {
    let (mut a, run, names) = run_in_progress(120, 40);
    let line = |a: &mut App, text: String| {
        a.update(Msg::Engine {
            run,
            event: Event::PartitionLog {
                run_id: "r1".into(),
                job: "fct_orders".into(),
                partition: names[0].clone(),
                line: text,
            },
        });
    };
    for k in 0..40 {
        line(&mut a, format!("line {k:02}"));
    }
    while a.focus != Focus::Runs {
        keys(&mut a, "\t");
    }
    let rows = log_rows(&a);
    assert!(rows.last().unwrap().contains("line 39"), "{rows:?}");
    let at_first = |a: &App| {
        let rows = log_rows(a);
        assert!(rows[0].contains("attempt 2"), "{}", rows.join("\n"));
        log_full(a, "attempt 2", "line 39");
    };
    for _ in 0..60 {
        keys(&mut a, "[");
    }
    at_first(&a);
    // Lines arriving leave a log scrolled back where it is.
    line(&mut a, "line 40".into());
    at_first(&a);
    keys(&mut a, "G");
    assert!(log_rows(&a).last().unwrap().contains("line 40"));
    for _ in 0..60 {
        a.update(code(KeyCode::PageUp));
    }
    at_first(&a);
    a.update(code(KeyCode::End));
    a.update(code(KeyCode::Home));
    at_first(&a);
    a.update(code(KeyCode::End));
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let s = run_screen(&a, area);
    let (x, y) = (s.runs.right() - 5, s.runs.y + 4);
    for _ in 0..200 {
        a.update(mouse(MouseEventKind::ScrollUp, x, y));
    }
    at_first(&a);
    // A bigger terminal, a bigger box: still full, and the wheel scrolls
    // on at the first notch.
    a.update(Msg::Resize(120, 60));
    log_full(&a, "attempt 2", "line 40");
    let before = log_rows(&a);
    let s = run_screen(&a, ratatui::layout::Rect::new(0, 0, 120, 60));
    a.update(mouse(
        MouseEventKind::ScrollDown,
        s.runs.right() - 5,
        s.runs.y + 4,
    ));
    assert_ne!(log_rows(&a), before, "the notch did nothing");
    // A smaller one: the lines at the box's foot stay there.
    keys(&mut a, "g");
    let foot = log_rows(&a).last().cloned().unwrap();
    a.update(Msg::Resize(100, 30));
    log_full(&a, "attempt 2", "line 40");
    assert_eq!(log_rows(&a).last(), Some(&foot));
    keys(&mut a, "g");
    at_first(&a);
    keys(&mut a, "G");
    log_full(&a, "attempt 2", "line 40");
    assert!(log_rows(&a).last().unwrap().contains("line 40"));
    assert!(!text(&a).contains("newer below"));
}

#[path = "console/reload.rs"]
mod reload;

/// The rows of the detail box (its title `name`), its borders off.
fn detail_rows(screen: &str, name: &str) -> Vec<String> {
    let rows: Vec<&str> = screen.lines().collect();
    let top = rows
        .iter()
        .position(|r| r.contains(&format!("┌ {name} ")))
        .unwrap_or_else(|| panic!("no detail of {name}:\n{screen}"));
    rows[top + 1..]
        .iter()
        .take_while(|r| !r.contains('└'))
        .map(|r| {
            let inside = r.rsplit_once("││").map_or(*r, |(_, i)| i);
            inside
                .trim_end()
                .trim_end_matches('│')
                .trim_end()
                .to_string()
        })
        .collect()
}

/// QA: at 80x24 with a run in the pane, the detail (two rows under an
/// hour's calendar) read "rows now 6 · at last load 6 · source 6 · agrees
/// with its", the rest past its rows with no "…", and the lines after it
/// left out unsaid. The source's word comes first and whole ("source 6:
/// as loaded"), and a detail cut short ends in "…" after whole facts.
#[test]
fn a_cramped_detail_says_the_source_first_and_cuts_with_an_ellipsis() {
    let (mut a, _, _) = run_in_progress(80, 24);
    select_job(&mut a, "fct_pageviews_hourly");
    let req = reconcile_request(keys(&mut a, "O"));
    a.update(against_demo(async |wh| {
        idem::tui::reconcile(wh, &req, &Default::default()).await
    }));
    let hour = {
        let j = a.job().unwrap();
        let i = (0..j.partitions.len())
            .rev()
            .find(|i| j.state_at(*i) == Some(LoadState::Loaded))
            .expect("a loaded hour");
        j.partitions[i].name()
    };
    keys(&mut a, &format!(":goto {hour}\n"));
    let j = a.job().unwrap();
    let s = j.status_at(j.cursor).unwrap();
    let n = s.rows_now.unwrap();
    assert_eq!((s.rows_source, s.rows_at_load), (Some(n), Some(n)));
    let screen = text(&a);
    let rows = detail_rows(&screen, &hour);
    assert_eq!(rows.len(), 2, "{screen}");
    assert_eq!(
        rows[1],
        format!("rows now {n} · source {n}: as loaded · at last load {n} …"),
        "what follows is left out, and said: {screen}"
    );
    // A failed hour: its state, then what its attempt met, first.
    let failed = failed_days(&a)[0].clone();
    keys(&mut a, &format!(":goto {failed}\n"));
    let screen = text(&a);
    let rows = detail_rows(&screen, &failed);
    assert!(rows[0].starts_with("✗ failed"), "{screen}");
    assert!(rows[1].starts_with("error: "), "{screen}");
    assert!(rows[1].ends_with('…'), "{screen}");
}
