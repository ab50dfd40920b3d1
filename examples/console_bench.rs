//! The console's speed and memory, measured; `bench/console.sh` runs this in
//! a release build and writes what it prints into bench/RESULTS.md.
//!
//!     console_bench screen             frame, idle and log-flood numbers
//!     console_bench launch IDEM_BINARY first frame of the real console, 50 jobs
//!     console_bench postgres URL ROWS  first states of a ROWS-row job
//!
//! Each prints markdown table rows: what, measured, target.

use std::collections::HashSet;
use std::io::Read;
use std::time::{Duration, Instant};

use chrono::{NaiveDate, NaiveDateTime};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use idem::config::Config;
use idem::engine::Event;
use idem::state::{LoadState, PartitionStatus, StatesRead};
use idem::tui::app::Connection;
use idem::tui::{App, Effect, Msg, Theme, view};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["screen"] => screen(),
        ["launch", bin] => launch(bin),
        ["postgres", url, rows] => postgres(url, rows.parse()?),
        _ => Err("usage: console_bench screen | launch IDEM | postgres URL ROWS".into()),
    }
}

fn row(what: &str, measured: String, target: &str) {
    println!("| {what} | {measured} | {target} |");
}

fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 6, 15)
        .and_then(|d| d.and_hms_opt(3, 12, 0))
        .expect("a date")
}

/// `jobs` daily jobs from `start` on one target, at `url`.
fn config_text(url: &str, jobs: usize, start: &str) -> String {
    let mut text = format!("[warehouse]\nurl = \"{url}\"\n\n");
    for j in 0..jobs {
        text.push_str(&format!(
            "[[jobs]]\nname = \"job_{j:02}\"\ntarget = \"ev\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"d\"\ngrain = \"day\"\nstart = \"{start}\"\n\
             sql = \"select id, d from src where d >= :start and d < :end\"\n\n"
        ));
    }
    text
}

fn config(url: &str, jobs: usize, start: &str) -> Res<Config> {
    Ok(idem::config::parse(
        std::path::Path::new("idem.toml"),
        &config_text(url, jobs, start),
        &|_| None,
    )?)
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn enter() -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE))
}

fn rss_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn percentile(times: &mut [Duration], p: usize) -> Duration {
    times.sort();
    times[(times.len() * p / 100).min(times.len() - 1)]
}

/// States of every partition of the job, all missing: a run takes them all.
fn missing(app: &App) -> Vec<PartitionStatus> {
    let job = app.job().expect("a job");
    job.partitions
        .iter()
        .map(|p| PartitionStatus {
            rows_now: Some(0),
            ..PartitionStatus::in_state(*p, LoadState::Missing)
        })
        .collect()
}

fn draw(term: &mut Terminal<TestBackend>, app: &App) -> Duration {
    let t = Instant::now();
    term.draw(|f| view::render(f, app)).expect("draw");
    t.elapsed()
}

/// A 10-year daily job (3,650 partitions) on a 200×60 screen, one run of
/// all of them in flight: frame time, idle draws, and a flood of log lines.
fn screen() -> Res<()> {
    let config = config("sqlite://bench.db", 1, "2016-06-15")?;
    let mut app = App::new(config, Theme::default_theme(), now());
    app.update(Msg::Resize(200, 60));
    app.start();
    app.update(Msg::Connected(Ok(Connection {
        url: "sqlite://bench.db".into(),
        syntax: idem::config::Engine::Sqlite.into(),
        table_names: idem::config::TableNames::AnyCase,
        granted: None,
    })));
    let statuses = missing(&app);
    let partitions = statuses.len();
    app.update(Msg::Status {
        job: "job_00".into(),
        result: Ok(StatesRead::States(statuses.clone().into())),
    });
    idle(&mut app, &statuses, "nothing running");
    for m in ":run 2016-06-15..2026-06-14".chars().map(key) {
        app.update(m);
    }
    app.update(enter());
    let effects = app.update(enter());
    let Some(Effect::StartRun(req)) = effects.into_iter().next() else {
        return Err("the run did not start".into());
    };
    let run = req.run;
    let names: Vec<String> = req.partitions.iter().map(|p| p.name()).collect();
    let ev = |event: Event| Msg::Engine { run, event };
    app.update(ev(Event::RunStarted {
        run_id: "r".into(),
        job: "job_00".into(),
        strategy: idem::config::Strategy::ReplacePartition,
        partitions: names.clone(),
        concurrency: 4,
        reason: None,
        upstream_not_loaded: Vec::new(),
        upstream_unread: Vec::new(),
    }));
    for (i, p) in names.iter().enumerate().take(names.len() / 2) {
        app.update(ev(Event::PartitionStarted {
            run_id: "r".into(),
            job: "job_00".into(),
            partition: p.clone(),
            attempt: 1,
        }));
        if i + 4 < names.len() / 2 {
            app.update(ev(Event::PartitionSucceeded {
                run_id: "r".into(),
                job: "job_00".into(),
                partition: p.clone(),
                attempt: 1,
                rows_deleted: 0,
                rows_inserted: 1000,
                rows_updated: 0,
                rows_after: 1000,
                duration_ms: 800,
                fingerprint: "1000:0123456789abcdef".into(),
                content_changed: true,
            }));
        }
    }
    app.update(Msg::Tick(now() + chrono::Duration::seconds(2)));

    let mut term = Terminal::new(TestBackend::new(200, 60))?;
    draw(&mut term, &app);
    let mut frames: Vec<Duration> = (0..300).map(|_| draw(&mut term, &app)).collect();
    row(
        &format!("frame at 200×60, a {partitions}-partition run in flight (median / p99)"),
        format!(
            "{} / {}",
            millis(percentile(&mut frames, 50)),
            millis(percentile(&mut frames, 99))
        ),
        "< 2 ms",
    );

    idle(&mut app, &statuses, "a run in flight: its clock moves");
    flood(&mut app, &mut term, run, &names);
    Ok(())
}

/// A minute with nothing happening, as the event loop sees it: a tick every
/// 250 ms, a refresh every 15 s answered as the background answers a read
/// that finds nothing moved (`StatesRead::Unchanged`), or with the same
/// states again where the console's own run changed what it holds.
fn idle(app: &mut App, statuses: &[PartitionStatus], what: &str) {
    app.update(Msg::Drawn);
    let mut draws = 0;
    let start = now() + chrono::Duration::seconds(10);
    for k in 0..240 {
        let at = start + chrono::Duration::milliseconds(250 * k);
        for effect in app.update(Msg::Tick(at)) {
            if let Effect::Refresh(names) = effect {
                for job in names {
                    let result = if app.holds_last_read(&job) {
                        StatesRead::Unchanged
                    } else {
                        StatesRead::States(statuses.to_vec().into())
                    };
                    app.update(Msg::Status {
                        job,
                        result: Ok(result),
                    });
                }
            }
        }
        if app.needs_redraw() {
            draws += 1;
            app.update(Msg::Drawn);
        }
    }
    row(
        &format!("draws in an idle minute ({what})"),
        format!("{draws}"),
        "only on change",
    );
}

/// A million log lines over the run's partitions, arriving faster than the
/// console takes them in, with keys pressed throughout. The event loop's
/// policy (src/tui/terminal.rs) is followed: queued messages are handled
/// for at most [`idem::tui::DRAIN`], then the key (the terminal goes first)
/// and a frame. A key's answer is the time from its arrival (the start of
/// that drain, the worst moment to press it) to its frame drawn.
fn flood(app: &mut App, term: &mut Terminal<TestBackend>, run: usize, names: &[String]) {
    let before = rss_mib("VmRSS");
    let mut keys = Vec::new();
    let mut lines = Duration::ZERO;
    let line = |k: usize| Msg::Engine {
        run,
        event: Event::PartitionLog {
            run_id: "r".into(),
            job: "job_00".into(),
            partition: names[k % names.len()].clone(),
            line: format!(
                "INSERT {k} rows into ev for partition {}",
                names[k % names.len()]
            ),
        },
    };
    let mut k = 0usize;
    while k < 1_000_000 {
        let pressed = Instant::now();
        while k < 1_000_000 && pressed.elapsed() < idem::tui::DRAIN {
            app.update(line(k));
            k += 1;
        }
        lines += pressed.elapsed();
        app.update(key(if keys.len() % 2 == 0 { 'j' } else { 'k' }));
        term.draw(|f| view::render(f, app)).expect("draw");
        app.update(Msg::Drawn);
        keys.push(pressed.elapsed());
    }
    let worst = keys.iter().max().copied().unwrap_or_default();
    row(
        "1,000,000 log lines: RSS before → after (peak)",
        format!(
            "{before:.1} → {:.1} MiB ({:.1} MiB)",
            rss_mib("VmRSS"),
            rss_mib("VmHWM")
        ),
        "< 100 MB",
    );
    row(
        "1,000,000 log lines: cost per line",
        format!("{:.2} µs", lines.as_secs_f64() * 1e6 / 1e6),
        "",
    );
    row(
        "a key amid the flood: arrival to its frame, as the event loop drains (median / p99 / worst)",
        format!(
            "{} / {} / {}",
            millis(percentile(&mut keys, 50)),
            millis(percentile(&mut keys, 99)),
            millis(worst)
        ),
        "< 50 ms",
    );
}

/// The real console in a pseudo-terminal at 200×60 over 50 jobs: the time
/// from spawning it to its first frame on screen, then its CPU use idle.
fn launch(bin: &str) -> Res<()> {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let dir = std::env::temp_dir().join(format!("idem-console-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let url = format!("sqlite://{}", dir.join("w.db").display());
    let cfg = dir.join("idem.toml");
    std::fs::write(&cfg, config_text(&url, 50, "2025-06-15"))?;
    let pty = native_pty_system().openpty(PtySize {
        rows: 60,
        cols: 200,
        pixel_width: 0,
        pixel_height: 0,
    })?;
    let mut cmd = CommandBuilder::new(bin);
    cmd.arg("--config");
    cmd.arg(&cfg);
    cmd.env("TERM", "xterm-256color");
    let start = Instant::now();
    let mut child = pty.slave.spawn_command(cmd)?;
    let pid = child.process_id().ok_or("no pid")?;
    let mut reader = pty.master.try_clone_reader()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = vt100::Parser::new(
        std::num::NonZero::new(60).ok_or("rows")?,
        std::num::NonZero::new(200).ok_or("cols")?,
        0,
    );
    let mut first = None;
    let mut states = None;
    while start.elapsed() < Duration::from_secs(20) && states.is_none() {
        let Ok(bytes) = rx.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        screen.process(&bytes);
        let text = screen.screen().contents();
        if first.is_none() && text.contains("job_00") {
            first = Some(start.elapsed());
        }
        if text.contains("June 2026") {
            states = Some(start.elapsed());
        }
    }
    let first = first.ok_or("the console drew nothing")?;
    row(
        "real console, 50 jobs, 200×60: spawn → first frame",
        millis(first),
        "< 150 ms",
    );
    if let Some(states) = states {
        row(
            "real console, 50 jobs (SQLite, empty): spawn → states on screen",
            millis(states),
            "",
        );
    }
    // Idle: nothing runs, nothing changes.
    std::thread::sleep(Duration::from_secs(3));
    while rx.try_recv().is_ok() {}
    let cpu = |pid: u32| -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit(')').next().unwrap_or("");
        let f: Vec<u64> = after
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
    };
    let (c0, t0) = (cpu(pid), Instant::now());
    let mut written = 0;
    while t0.elapsed() < Duration::from_secs(20) {
        if let Ok(b) = rx.recv_timeout(Duration::from_millis(200)) {
            written += b.len();
        }
    }
    let ticks = cpu(pid) - c0;
    // Clock ticks are 1/100 s on Linux.
    row(
        "real console idle 20 s: CPU, bytes written to the terminal",
        format!(
            "{:.2} % , {written} bytes",
            ticks as f64 / t0.elapsed().as_secs_f64()
        ),
        "~0 %",
    );
    child.kill()?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// A `rows`-row daily table over ten years on PostgreSQL: how long the
/// console's refresh takes to answer the partitions on screen and then all,
/// and a second refresh of the unchanged table.
fn postgres(url: &str, rows: i64) -> Res<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let config = config(url, 1, "2016-06-15")?;
        use sqlx::{Connection, Executor, Row};
        let mut conn = sqlx::PgConnection::connect(url).await?;
        let estimate: i64 = conn
            .fetch_one("SELECT COALESCE((SELECT reltuples::bigint FROM pg_class WHERE relname = 'ev'), -1)")
            .await?
            .get(0);
        if (estimate - rows).abs() > rows / 50 + 10 {
            let t = Instant::now();
            for sql in [
                "DROP TABLE IF EXISTS ev".to_string(),
                "CREATE TABLE ev (id BIGINT NOT NULL, d DATE NOT NULL)".to_string(),
                format!(
                    "INSERT INTO ev SELECT i, DATE '2016-06-15' + (i % 3650)::int FROM generate_series(1, {rows}) i"
                ),
                "CREATE INDEX ev_d ON ev (d)".to_string(),
                "ANALYZE ev".to_string(),
            ] {
                conn.execute(sqlx::AssertSqlSafe(sql)).await?;
            }
            eprintln!("fixture: {rows} rows in {:.1} s", t.elapsed().as_secs_f64());
        }
        conn.close().await?;
        let wh = idem::warehouse::Warehouse::connect(&config.warehouse, 4).await?;
        let mut app = App::new(config.clone(), Theme::default_theme(), now_real());
        app.update(Msg::Resize(200, 60));
        let first = app.unread_on_screen();
        let jobs = config.jobs.clone();
        let seen = idem::tui::Seen::default();
        let lineage = idem::lineage::Lineage::of(&config)?;
        let times = std::sync::Mutex::new(Vec::new());
        let t = Instant::now();
        idem::tui::read_states(&wh, &config, &lineage, &jobs, first.clone(), &seen, |m| {
            let what = match m {
                Msg::EarlyStatus { statuses, .. } => format!("{} on screen", statuses.len()),
                Msg::Status {
                    result: Ok(StatesRead::States(s)),
                    ..
                } => format!("all {}", s.statuses.len()),
                _ => "?".into(),
            };
            times.lock().expect("times").push((what, t.elapsed()));
        })
        .await;
        for (what, at) in times.lock().expect("times").iter() {
            row(
                &format!("PostgreSQL, {rows} rows over 3,650 days: states of {what}"),
                millis(*at),
                "< 1 s for those on screen",
            );
        }
        let t = Instant::now();
        idem::tui::read_states(&wh, &config, &lineage, &jobs, None, &seen, |_| {}).await;
        row(
            &format!("PostgreSQL, {rows} rows: the next refresh, table unchanged"),
            millis(t.elapsed()),
            "no rows read",
        );
        let t = Instant::now();
        idem::state::job_status(&wh, &jobs[0], now_real(), &HashSet::new()).await?;
        row(
            &format!("PostgreSQL, {rows} rows: a full read without the cache (before)"),
            millis(t.elapsed()),
            "",
        );
        wh.close().await;
        Ok(())
    })
}

fn now_real() -> NaiveDateTime {
    idem::partition::now_utc()
}
