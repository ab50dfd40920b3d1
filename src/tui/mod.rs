//! The console. `app` holds the state and `update` (the only writer), one
//! module per pane or overlay owns its part (jobs, calendar, chart, detail
//! and its loads and verification, reconciliation, runs, confirm, errors, command line, help,
//! diff, questions),
//! `layout` is the geometry drawing and input share, `view` draws it all,
//! `keys` is the one key registry (`keymap` the keys in force, with the
//! user's overrides), and `terminal` runs the event loop with
//! every warehouse query in `background`, never blocking the screen.

pub mod app;
mod background;
mod bars;
mod calendar;
mod cascade;
mod chart;
mod colors;
mod command;
mod confirm;
mod cut;
mod detail;
mod diff;
mod errors;
#[cfg(test)]
mod fixture;
mod glyphs;
mod health;
mod help;
mod job;
mod jobs;
mod keymap;
pub mod keys;
mod layout;
mod lineage_view;
mod loads;
mod msg;
mod question;
mod reconcile;
mod run_logs;
mod runs;
pub mod svg;
mod terminal;
pub mod theme;
mod verification;
pub mod view;
mod widgets;

pub use app::{App, Effect, Msg, Unread};
pub use background::{
    LeftInFlight, Seen, definition_diff, lint_jobs, read_cover, read_history_elsewhere,
    read_states, reconcile, refusal_before_a_run, verify,
};
pub use keymap::Keymap;
pub use terminal::DRAIN;
pub use theme::Theme;

use crate::config::Config;
use crate::partition::now_utc;

/// How the console was asked to look and behave.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--theme NAME|PATH` or `IDEM_THEME`.
    pub theme: Option<String>,
    /// The user config file, when the theme is the one it names: a theme
    /// that does not load says which file asked for it.
    pub theme_from: Option<std::path::PathBuf>,
    pub no_mouse: bool,
    /// The keys: the registry's with the user config's overrides.
    pub keys: Keymap,
}

/// How a console session ended.
#[derive(Debug)]
pub enum Outcome {
    /// The operator quit, with what became of the runs then in flight.
    Quit(LeftInFlight),
    /// The process was asked to stop (SIGTERM, the terminal gone): what a
    /// script that started it reads as a cancel.
    Terminated(LeftInFlight),
    /// The terminal could not be put into the console's mode.
    NoTerminal(std::io::Error),
    /// Reading the terminal or drawing on it failed mid-session.
    Broken(std::io::Error),
}

/// Builds the app for a config, with the theme resolved from the options and
/// the environment (a broken theme shows its message in the status bar).
pub fn new_app(config: Config, options: &Options, now: chrono::NaiveDateTime) -> App {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let (theme, mut note) = Theme::resolve(options.theme.as_deref(), no_color);
    if let (Some(file), Some(n)) = (&options.theme_from, &mut note) {
        *n = format!("{}: theme: {n}", file.display());
    }
    let start = app::Start {
        theme,
        mouse: !options.no_mouse,
        note,
        theme_files: Theme::local_files(),
        no_color,
    };
    App::start_with(config, start, now)
}

/// Runs the console until the operator quits, with the options' keys.
pub async fn run(config: Config, options: Options) -> Outcome {
    let mut app = new_app(config, &options, now_utc());
    keymap::install(options.keys);
    let guard = match terminal::TerminalGuard::enter(app.mouse) {
        Ok(g) => g,
        Err(e) => {
            terminal::restore_terminal();
            return Outcome::NoTerminal(e);
        }
    };
    let ascii = crate::terminal_text::ascii_here();
    let depth = colors::depth(|name| std::env::var(name).ok());
    let result = terminal::event_loop(&mut app, ascii, depth).await;
    drop(guard);
    match result {
        Ok(left) if app.terminated => Outcome::Terminated(left),
        Ok(left) => Outcome::Quit(left),
        Err(e) => Outcome::Broken(e),
    }
}
