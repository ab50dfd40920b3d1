//! The console: app state and `update` (app), keys (one registry), themes,
//! rendering (view), and the event loop here, which runs every warehouse
//! query in the background and never blocks the screen on the database.

pub mod app;
pub mod keys;
pub mod svg;
pub mod theme;
pub mod view;

use std::collections::{HashMap, HashSet};
use std::io::{Stdout, Write};
use std::time::{Duration, Instant};

use crossterm::event::{DisableMouseCapture, EnableMouseCapture, EventStream};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use app::{App, DiffRequest, Effect, Msg, VerifyRequest};
pub use theme::Theme;

use crate::config::Config;
use crate::engine::{Backfill, Selection};
use crate::partition::now_utc;
use crate::warehouse::Warehouse;

/// How the console was asked to look and behave.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--theme NAME|PATH` or `IDEM_THEME`.
    pub theme: Option<String>,
    pub no_mouse: bool,
}

/// What background tasks send to the event loop.
enum Incoming {
    Msg(Msg),
    Warehouse(Result<Warehouse, String>),
}

/// Frames are drawn at most this often.
const FRAME: Duration = Duration::from_millis(33);

/// Builds the app for a config, with the theme resolved from the options and
/// the environment (a broken theme shows its message in the status bar).
pub fn new_app(config: Config, options: &Options, now: chrono::NaiveDateTime) -> App {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let (theme, warning) = Theme::resolve(options.theme.as_deref(), no_color);
    let mut app = App::new(config, theme, now);
    app.mouse = !options.no_mouse;
    if let Some(w) = warning {
        app.message = Some((true, w));
    }
    app
}

fn restore_terminal() {
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(
        out,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Puts the terminal back however the console ends, panics included.
struct TerminalGuard;

impl TerminalGuard {
    fn enter(mouse: bool) -> std::io::Result<TerminalGuard> {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // The console runs on the main thread; a panic in a background
            // task ends that task only, and the console goes on drawing.
            if std::thread::current().name() == Some("main") {
                restore_terminal();
            }
            hook(info);
        }));
        enable_raw_mode()?;
        let guard = TerminalGuard;
        let mut out = std::io::stdout();
        crossterm::execute!(out, EnterAlternateScreen, crossterm::cursor::Hide)?;
        if mouse {
            crossterm::execute!(out, EnableMouseCapture)?;
        }
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// How a console session ended.
#[derive(Debug)]
pub enum Outcome {
    /// The operator quit (or the process was asked to stop).
    Quit,
    /// The terminal could not be put into the console's mode.
    NoTerminal(std::io::Error),
    /// Reading the terminal or drawing on it failed mid-session.
    Broken(std::io::Error),
}

/// Runs the console until the operator quits.
pub async fn run(config: Config, options: Options) -> Outcome {
    let mut app = new_app(config, &options, now_utc());
    let guard = match TerminalGuard::enter(app.mouse) {
        Ok(g) => g,
        Err(e) => {
            restore_terminal();
            return Outcome::NoTerminal(e);
        }
    };
    let result = event_loop(&mut app).await;
    drop(guard);
    match result {
        Ok(()) => Outcome::Quit,
        Err(e) => Outcome::Broken(e),
    }
}

struct Background {
    tx: UnboundedSender<Incoming>,
    warehouse: Option<Warehouse>,
    connecting: bool,
    tokens: HashMap<usize, CancellationToken>,
    runs: Vec<JoinHandle<()>>,
    max_connections: u32,
}

impl Background {
    fn apply(&mut self, app: &App, effect: Effect) {
        match effect {
            Effect::Connect => {
                if self.connecting {
                    return;
                }
                self.connecting = true;
                let tx = self.tx.clone();
                let config = app.config.warehouse.clone();
                let max = self.max_connections;
                tokio::spawn(async move {
                    let r = Warehouse::connect(&config, max)
                        .await
                        .map_err(|e| e.to_string());
                    let _ = tx.send(Incoming::Warehouse(r));
                });
            }
            Effect::Refresh(names) => {
                let Some(wh) = self.warehouse.clone() else {
                    return;
                };
                let jobs: Vec<_> = app
                    .jobs
                    .iter()
                    .filter(|j| names.contains(&j.job.name))
                    .map(|j| j.job.clone())
                    .collect();
                let tx = self.tx.clone();
                tokio::spawn(async move {
                    for job in jobs {
                        let result =
                            crate::state::job_status(&wh, &job, now_utc(), &HashSet::new())
                                .await
                                .map_err(|e| e.to_string());
                        let _ = tx.send(Incoming::Msg(Msg::Status {
                            job: job.name.clone(),
                            result,
                        }));
                    }
                });
            }
            Effect::StartRun(req) => {
                let run = req.run;
                let Some(wh) = self.warehouse.clone() else {
                    let _ = self.tx.send(Incoming::Msg(Msg::RunRejected {
                        run,
                        error: "not connected to the warehouse".into(),
                    }));
                    return;
                };
                let token = CancellationToken::new();
                self.tokens.insert(run, token.clone());
                let (etx, mut erx) = mpsc::unbounded_channel();
                let tx = self.tx.clone();
                let reject = self.tx.clone();
                self.runs.push(tokio::spawn(async move {
                    let selection = Selection {
                        from: req.partitions.first().copied(),
                        to: req.partitions.last().copied(),
                        only: Vec::new(),
                    };
                    match Backfill::plan(&wh, &req.job, &selection, req.concurrency, req.retries)
                        .await
                    {
                        Ok(mut backfill) => {
                            let chosen: HashSet<_> = req.partitions.iter().copied().collect();
                            backfill.partitions.retain(|p| chosen.contains(p));
                            backfill.reason = req.reason.clone();
                            crate::engine::run(&wh, &backfill, &etx, &token).await;
                        }
                        Err(e) => {
                            let _ = reject.send(Incoming::Msg(Msg::RunRejected {
                                run,
                                error: e.to_string(),
                            }));
                        }
                    }
                }));
                tokio::spawn(async move {
                    while let Some(event) = erx.recv().await {
                        if tx.send(Incoming::Msg(Msg::Engine { run, event })).is_err() {
                            break;
                        }
                    }
                });
            }
            Effect::Verify(req) => {
                let tx = self.tx.clone();
                let Some(wh) = self.warehouse.clone() else {
                    let _ = tx.send(Incoming::Msg(Msg::Verified {
                        id: req.id,
                        result: Err("not connected to the warehouse".into()),
                    }));
                    return;
                };
                tokio::spawn(async move {
                    let _ = tx.send(Incoming::Msg(verify(&wh, &req).await));
                });
            }
            Effect::DefinitionDiff(req) => {
                let tx = self.tx.clone();
                let Some(wh) = self.warehouse.clone() else {
                    let _ = tx.send(Incoming::Msg(Msg::DefinitionDiff {
                        id: req.id,
                        result: Err("not connected to the warehouse".into()),
                    }));
                    return;
                };
                tokio::spawn(async move {
                    let _ = tx.send(Incoming::Msg(definition_diff(&wh, &req).await));
                });
            }
            Effect::Cancel(run) => {
                if let Some(t) = self.tokens.get(&run) {
                    t.cancel();
                }
            }
            Effect::Quit => {}
        }
    }
}

/// Proves a partition idempotent (everything rolls back) and answers with
/// the message for the console.
pub async fn verify(warehouse: &Warehouse, req: &VerifyRequest) -> Msg {
    Msg::Verified {
        id: req.id,
        result: warehouse
            .verify_partition(&req.job, &req.partition)
            .await
            .map_err(|e| e.to_string()),
    }
}

/// Reads the definition a partition was loaded under from the ledger and
/// answers with its unified diff against the job's current definition.
pub async fn definition_diff(warehouse: &Warehouse, req: &DiffRequest) -> Msg {
    let current = req.job.definition_text();
    let result = warehouse
        .definition(&req.hash)
        .await
        .map(|old| {
            old.map(|old| {
                similar::TextDiff::from_lines(&old, &current)
                    .unified_diff()
                    .header("loaded under", "now")
                    .to_string()
            })
        })
        .map_err(|e| e.to_string());
    Msg::DefinitionDiff { id: req.id, result }
}

async fn event_loop(app: &mut App) -> std::io::Result<()> {
    let mut terminal: Terminal<CrosstermBackend<Stdout>> =
        Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let (tx, mut rx) = mpsc::unbounded_channel::<Incoming>();
    let mut bg = Background {
        tx,
        warehouse: None,
        connecting: false,
        tokens: HashMap::new(),
        runs: Vec::new(),
        max_connections: (app.config.defaults.concurrency as u32 * 2 + 2).max(4),
    };
    let size = terminal.size()?;
    app.update(Msg::Resize(size.width, size.height));
    for e in app.start() {
        bg.apply(app, e);
    }
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    #[cfg(unix)]
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut last_draw = Instant::now() - FRAME;
    // The test of the panic hook needs a panic with the console on screen.
    let panic_after_draw = std::env::var_os("IDEM_TEST_PANIC").is_some();
    loop {
        if app.dirty && last_draw.elapsed() >= FRAME {
            terminal.draw(|f| view::render(f, app))?;
            app.dirty = false;
            last_draw = Instant::now();
            if panic_after_draw {
                panic!(
                    "IDEM_TEST_PANIC is set: a deliberate panic, to test that the terminal is restored"
                );
            }
        }
        if app.quit {
            break;
        }
        let wait = FRAME.saturating_sub(last_draw.elapsed());
        #[cfg(unix)]
        let term_signal = sigterm.recv();
        #[cfg(not(unix))]
        let term_signal = std::future::pending::<Option<()>>();
        let first = tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(ev)) => Msg::from_terminal(ev).map(Incoming::Msg),
                Some(Err(e)) => return Err(e),
                None => { app.quit = true; None }
            },
            Some(inc) = rx.recv() => Some(inc),
            _ = tick.tick() => Some(Incoming::Msg(Msg::Tick(now_utc()))),
            _ = tokio::time::sleep(wait), if app.dirty => None,
            _ = term_signal => {
                // SIGTERM does not ask: cancel and leave.
                app.quit = true;
                for r in app.runs.iter().filter(|r| r.active()) {
                    bg.apply(app, Effect::Cancel(r.id));
                }
                None
            }
        };
        // Handle this message and everything already queued before drawing.
        let mut next = first;
        loop {
            if let Some(inc) = next.take() {
                let msg = match inc {
                    Incoming::Msg(m) => m,
                    Incoming::Warehouse(r) => {
                        bg.connecting = false;
                        match r {
                            Ok(wh) => {
                                let url = wh.display_url();
                                bg.warehouse = Some(wh);
                                Msg::Connected(Ok(url))
                            }
                            Err(e) => Msg::Connected(Err(e)),
                        }
                    }
                };
                for effect in app.update(msg) {
                    bg.apply(app, effect);
                }
            }
            match rx.try_recv() {
                Ok(inc) => next = Some(inc),
                Err(_) => break,
            }
        }
    }
    restore_terminal();
    // Cancelled runs roll back; give them a moment to record it.
    for t in bg.tokens.values() {
        t.cancel();
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    for h in bg.runs {
        let _ = tokio::time::timeout_at(deadline, h).await;
    }
    if let Some(wh) = bg.warehouse {
        let _ = tokio::time::timeout(Duration::from_secs(2), wh.close()).await;
    }
    Ok(())
}
