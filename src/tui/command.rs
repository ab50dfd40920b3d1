//! The `:` command line: typing it, and what it says. `:run` takes `idem
//! run`'s own arguments (the CLI's [`RunArgs`], parsed by clap), for the job
//! on screen, with `A..B` as a short way to write `--from A --to B`.

use chrono::NaiveDateTime;
use clap::Parser;
use crossterm::event::{Event as TermEvent, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use tui_input::Input;
use tui_input::backend::crossterm::to_input_request;

use super::job::JobView;
use super::keymap::action_for;
use super::keys::{Action, Scope};
use super::theme::Theme;
use super::widgets::{first_line, from_column, put};
use crate::cli::RunArgs;

/// The command line being typed.
#[derive(Debug, Clone, Default)]
pub struct CommandLine {
    input: Input,
}

/// What a key did to the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandStep {
    Editing,
    Cancelled,
    Submitted(String),
}

impl CommandLine {
    pub fn key(&mut self, key: &KeyEvent) -> CommandStep {
        match action_for(Scope::Input, key) {
            Some(Action::Confirm) => CommandStep::Submitted(self.input.value().trim().to_string()),
            Some(Action::Close) => CommandStep::Cancelled,
            _ => {
                if let Some(req) = to_input_request(&TermEvent::Key(*key)) {
                    self.input.handle(req);
                }
                CommandStep::Editing
            }
        }
    }

    pub fn paste(&mut self, text: &str) {
        super::widgets::paste_into(&mut self.input, text);
    }

    /// Draws the line being typed in the footer `r`, with the cursor.
    pub fn render(&self, frame: &mut Frame, r: Rect, t: &Theme) {
        let buf = frame.buffer_mut();
        let x = put(buf, r, r.x, r.y, ":", t.style("highlight"));
        let w = r.width.saturating_sub(2) as usize;
        let scroll = self.input.visual_scroll(w);
        let shown = from_column(self.input.value(), scroll);
        put(buf, r, x, r.y, shown, t.style("text"));
        let cx = x + (self.input.visual_cursor().saturating_sub(scroll)) as u16;
        frame.set_cursor_position((cx.min(r.right().saturating_sub(1)), r.y));
    }
}

/// A command, as typed.
#[derive(Debug)]
pub enum Command {
    Quit,
    Goto(String),
    Job(String),
    Theme(String),
    Run(Box<RunArgs>),
}

/// `:run`'s words: `idem run`'s after the job on screen, an optional
/// `A..B` (or `A`) and flags.
#[derive(Parser)]
#[command(
    name = ":run",
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true
)]
struct RunLine {
    #[command(flatten)]
    args: RunArgs,
}

/// Reads a command line; `None` when it is empty. `job` is the job on
/// screen, the one `:run` runs.
pub fn parse(text: &str, job: Option<&str>) -> Result<Option<Command>, String> {
    let mut words = text.split_whitespace();
    let Some(cmd) = words.next() else {
        return Ok(None);
    };
    let rest: Vec<&str> = words.collect();
    // A word more than a command takes is a mistyped command, not one to
    // carry out in part (`:q later` quit at once).
    let at_most = |n: usize, usage: &str| -> Result<(), String> {
        match rest.get(n) {
            Some(extra) => Err(format!(":{cmd} takes {usage}; what is {extra}?")),
            None => Ok(()),
        }
    };
    Ok(Some(match cmd {
        "q" | "quit" | "q!" => {
            at_most(0, "no words")?;
            Command::Quit
        }
        "goto" | "g" => {
            at_most(1, "one partition, like 2026-06-04")?;
            Command::Goto(rest.first().copied().unwrap_or("").to_string())
        }
        "job" => Command::Job(rest.join(" ")),
        "theme" => {
            at_most(1, "one theme's name or path")?;
            Command::Theme(rest.first().copied().unwrap_or("").to_string())
        }
        "run" => {
            let job = job.ok_or_else(|| ":run: no job is on screen".to_string())?;
            Command::Run(Box::new(parse_run(job, &rest)?))
        }
        other => {
            return Err(format!(
                "unknown command :{other}; try :run A..B [--only failed,missing,stale], :goto DATE, :job NAME, :theme NAME, :q"
            ));
        }
    }))
}

fn parse_run(job: &str, words: &[&str]) -> Result<RunArgs, String> {
    let line = RunLine::try_parse_from(std::iter::once(job).chain(words.iter().copied())).map_err(
        |e| {
            let text = e.to_string();
            format!(":run: {}", first_line(&text).trim_start_matches("error: "))
        },
    )?;
    let args = line.args;
    if args.range.is_some() && (args.from.is_some() || args.to.is_some()) {
        return Err(":run: give A..B or --from/--to, not both".into());
    }
    if args.dry_run || args.json {
        return Err(
            ":run previews in the confirm dialog; --dry-run and --json are for idem run".into(),
        );
    }
    Ok(args)
}

/// The partitions of `job` that `:run`'s arguments name (before any state
/// filter), checked by the CLI's own rules; `None` when they name no range,
/// so that the selection is taken.
pub fn run_range(
    args: &RunArgs,
    job: &JobView,
    now: NaiveDateTime,
) -> Result<Option<Vec<usize>>, String> {
    let selection = args.selection(&job.job).map_err(|stop| stop.message)?;
    // An explicit --concurrency is checked as idem run checks it; the
    // default here is never used.
    args.concurrency_or(1).map_err(|stop| stop.message)?;
    if selection.from.is_none() && selection.to.is_none() {
        return Ok(None);
    }
    // Said as it was typed, not as a range with nothing in it.
    if let (Some(from), Some(to)) = (selection.from, selection.to)
        && from > to
    {
        let (from, to) = (from.name(), to.name());
        return Err(if args.typed_range() {
            format!("{from}..{to} ends before it starts; did you mean {to}..{from}?")
        } else {
            crate::engine::PlanError::EmptyRange { from, to }.to_string()
        });
    }
    let from = selection.from.unwrap_or(job.job.start);
    let to = selection.to.unwrap_or_else(|| job.job.last_partition(now));
    Ok(Some(
        (0..job.partitions.len())
            .filter(|i| job.partitions[*i] >= from && job.partitions[*i] <= to)
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Result<RunArgs, String> {
        match parse(text, Some("fct_orders"))? {
            Some(Command::Run(args)) => Ok(*args),
            other => panic!("not a run: {other:?}"),
        }
    }

    /// A range is said as it was typed: as `A..B`, or with the flags
    /// (QA: `:run 2026-13-01` answered of a `--from` nobody typed).
    #[test]
    fn a_range_written_backwards_or_wrong_is_said_as_it_was_typed() {
        let job = crate::tui::fixture::job_view("fct_orders", false, "■■■■■■■■■■");
        let now = crate::tui::fixture::now();
        let args = run("run 2026-06-09..2026-06-02").unwrap();
        assert_eq!(
            run_range(&args, &job, now),
            Err("2026-06-09..2026-06-02 ends before it starts; did you mean 2026-06-02..2026-06-09?".to_string())
        );
        let args = run("run --from 2026-06-09 --to 2026-06-02").unwrap();
        assert_eq!(
            run_range(&args, &job, now),
            Err("--from 2026-06-09 is after --to 2026-06-02".to_string())
        );
        let args = run("run 2026-13-01").unwrap();
        assert_eq!(
            run_range(&args, &job, now),
            Err(
                "\"2026-13-01\" has the right form, but there is no such date: months are 01 to 12"
                    .to_string()
            )
        );
        let args = run("run 2026-06-01..2026-06-31").unwrap();
        let said = run_range(&args, &job, now).unwrap_err();
        assert!(
            said.starts_with("\"2026-06-31\" has the right form"),
            "{said}"
        );
        let args = run("run --from 2026-13-01").unwrap();
        let said = run_range(&args, &job, now).unwrap_err();
        assert!(said.starts_with("--from \"2026-13-01\""), "{said}");
    }

    #[test]
    fn run_takes_idem_runs_flags_and_a_range() {
        let args = run("run 2026-05-01..2026-05-31 --only failed,missing --reason fix").unwrap();
        assert_eq!(args.job, "fct_orders");
        assert_eq!(args.range.as_deref(), Some("2026-05-01..2026-05-31"));
        assert_eq!(args.only, vec!["failed", "missing"]);
        assert_eq!(args.reason.as_deref(), Some("fix"));
        let job = crate::tui::fixture::job_view("fct_orders", false, "■■■■■■■■■■");
        let one = run("run 2026-05-04").unwrap();
        let selection = one.selection(&job.job).unwrap();
        assert_eq!(selection.from, selection.to);
        assert!(selection.from.is_some());
        let flags = run("run --from 2026-05-01 --through-latest --concurrency 2").unwrap();
        assert_eq!(flags.from.as_deref(), Some("2026-05-01"));
        assert_eq!(flags.to, None);
        assert!(flags.through_latest);
        assert_eq!(flags.concurrency, Some(2));
    }

    #[test]
    fn run_refuses_what_idem_run_refuses_and_what_the_console_cannot_do() {
        assert!(run("run --bogus").unwrap_err().contains("--bogus"));
        assert!(run("run --concurrency lots").unwrap_err().contains("lots"));
        assert!(
            run("run 2026-05-01 --from 2026-05-02")
                .unwrap_err()
                .contains("not both")
        );
        assert!(run("run --dry-run").unwrap_err().contains("confirm dialog"));
        assert!(matches!(parse("frobnicate", None), Err(e) if e.contains("unknown command")));
        assert!(matches!(parse("   ", None), Ok(None)));
        assert!(matches!(parse("q", None), Ok(Some(Command::Quit))));
    }

    #[test]
    fn a_word_more_than_a_command_takes_is_refused_not_ignored() {
        let err = |text: &str| parse(text, None).err().unwrap_or_default();
        assert_eq!(err("q later"), ":q takes no words; what is later?");
        assert!(err("goto 2026-06-04 junk").contains("what is junk?"));
        assert!(err("theme light dark").contains("what is dark?"));
        assert!(
            matches!(parse("goto 2026-06-04", None), Ok(Some(Command::Goto(d))) if d == "2026-06-04")
        );
    }

    /// A line wider than the footer scrolls by columns, as its cursor
    /// does: scrolled by characters, a line of Japanese showed its start
    /// and lost what was just typed.
    #[test]
    fn a_wide_line_scrolls_to_what_was_just_typed() {
        let mut line = CommandLine::default();
        line.paste("goto 東京大阪名古屋札幌福岡");
        let shown = crate::tui::fixture::draw(16, 1, |f| {
            line.render(f, f.area(), &crate::tui::theme::Theme::default_theme())
        });
        // A wide character's second column reads as a space here.
        assert_eq!(shown.replace(' ', ""), ":名古屋札幌福岡");
    }
}
