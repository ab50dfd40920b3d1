//! The terminal and the event loop: raw mode and the alternate screen (put
//! back however the console ends, panics included), and one loop that feeds
//! every terminal event, tick and background answer to `update`, starts the
//! effects it returns, and draws on change at most every frame.

use std::io::{Stdout, Write};
use std::time::{Duration, Instant};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    EventStream,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc;

use super::app::App;
use super::background::{Background, Incoming, LeftInFlight};
use super::msg::Msg;
use super::view;
use crate::partition::now_utc;

/// Frames are drawn at most this often.
const FRAME: Duration = Duration::from_millis(33);
/// Queued background messages are handled for at most this long in a row.
pub const DRAIN: Duration = Duration::from_millis(15);

pub fn restore_terminal() {
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Puts the terminal back however the console ends, panics included.
pub struct TerminalGuard;

impl TerminalGuard {
    pub fn enter(mouse: bool) -> std::io::Result<TerminalGuard> {
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
        // A paste arrives as one text, never as keys: pasted "ry" must not
        // select and run.
        crossterm::execute!(
            out,
            EnterAlternateScreen,
            EnableBracketedPaste,
            crossterm::cursor::Hide
        )?;
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

/// What woke the loop besides the terminal and signals.
enum Woken<T> {
    Tick,
    Message(T),
}

/// The clock's tick when it is due, else the next background message. The
/// tick goes first: a run loading partitions faster than the console reads
/// their events keeps a message always waiting, and behind it the clock in
/// the title, a run's rate and ETA and the periodic refresh stood still
/// (a 3,650-day run read "0.0 p/s · ETA –" to its end).
async fn tick_or_message<T>(
    tick: &mut tokio::time::Interval,
    rx: &mut mpsc::UnboundedReceiver<T>,
) -> Woken<T> {
    tokio::select! {
        biased;
        _ = tick.tick() => Woken::Tick,
        Some(message) = rx.recv() => Woken::Message(message),
    }
}

/// Runs the console until `update` says it quits; `ascii` draws it without
/// UTF-8 (see [`super::glyphs`]), `depth` in the colours the terminal has
/// (see [`super::colors`]).
pub async fn event_loop(
    app: &mut App,
    ascii: bool,
    depth: super::colors::Depth,
) -> std::io::Result<LeftInFlight> {
    let mut terminal: Terminal<CrosstermBackend<Stdout>> =
        Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let (tx, mut rx) = mpsc::unbounded_channel::<Incoming>();
    let mut bg = Background::new(tx, app.config().defaults.concurrency);
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
    // The terminal closed (an ssh session dropped, a tmux window killed):
    // as SIGTERM, rather than dying with partitions in flight unrecorded.
    #[cfg(unix)]
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut last_draw = Instant::now() - FRAME;
    // Reading or drawing failed (EIO: the terminal is gone, or its pty
    // closed before the hangup arrived): stop as on SIGHUP, cancelling
    // what is in flight, and draw no more.
    let mut gone = false;
    // The test of the panic hook needs a panic with the console on screen.
    let panic_after_draw = std::env::var_os("IDEM_TEST_PANIC").is_some();
    loop {
        if !gone && app.needs_redraw() && last_draw.elapsed() >= FRAME {
            let drawn = terminal.draw(|f| {
                view::render(f, app);
                if ascii {
                    super::glyphs::to_ascii(f.buffer_mut());
                }
                super::colors::to_depth(f.buffer_mut(), depth);
            });
            if drawn.is_err() {
                gone = true;
                for effect in app.update(Msg::Terminate) {
                    bg.apply(app, effect);
                }
            }
            app.update(Msg::Drawn);
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
        let term_signal = async {
            tokio::select! {
                s = sigterm.recv() => s,
                s = sighup.recv() => s,
            }
        };
        #[cfg(not(unix))]
        let term_signal = std::future::pending::<Option<()>>();
        let first = tokio::select! {
            // The terminal and SIGTERM first: a key waits for at most one
            // drain of a flood, never for a coin toss among ready branches.
            biased;
            ev = events.next(), if !gone => match ev {
                Some(Ok(ev)) => Msg::from_terminal(ev),
                // The terminal went away: stop as on SIGTERM.
                Some(Err(_)) | None => {
                    gone = true;
                    Some(Msg::Terminate)
                }
            },
            // SIGTERM (or SIGHUP) does not ask: cancel and leave.
            _ = term_signal => Some(Msg::Terminate),
            woken = tick_or_message(&mut tick, &mut rx) => Some(match woken {
                Woken::Tick => Msg::Tick(now_utc()),
                Woken::Message(inc) => bg.receive(inc),
            }),
            _ = tokio::time::sleep(wait), if app.needs_redraw() => None,
        };
        // Handle this message and what is already queued before drawing,
        // for at most a drain's time: a flood of events must leave room for
        // frames and keys.
        let mut next = first;
        let drain = Instant::now();
        loop {
            if let Some(msg) = next.take() {
                for effect in app.update(msg) {
                    bg.apply(app, effect);
                }
            }
            if drain.elapsed() >= DRAIN {
                break;
            }
            match rx.try_recv() {
                Ok(inc) => next = Some(bg.receive(inc)),
                Err(_) => break,
            }
        }
    }
    restore_terminal();
    // restore_terminal showed the cursor, if the terminal is still there.
    // Its drop would show it again and, on a terminal that is gone (a
    // hangup), report the failure on a stderr that is gone too: a panic.
    std::mem::forget(terminal);
    Ok(bg.shut_down().await)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// QA: with a message always waiting the loop never took the tick, so
    /// the clock stopped for as long as a fast run lasted.
    #[tokio::test]
    async fn a_flood_of_messages_never_stops_the_clock() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut tick = tokio::time::interval(Duration::from_millis(5));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let deadline = Instant::now() + Duration::from_secs(5);
        let (mut ticks, mut messages) = (0, 0);
        while ticks < 3 && Instant::now() < deadline {
            // Another message is queued before every wait: a flood.
            tx.send(messages).expect("the receiver is open");
            match tick_or_message(&mut tick, &mut rx).await {
                Woken::Tick => ticks += 1,
                Woken::Message(_) => messages += 1,
            }
        }
        assert!(
            ticks >= 3,
            "{ticks} ticks amid {messages} messages in 5 s of 5 ms ticks"
        );
        // Messages are still read between ticks.
        assert!(messages > 0);
    }
}
