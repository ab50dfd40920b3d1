//! A command's output on stdout and its notes on stderr. A reader that went
//! away (`idem status | head -3`) is not an error: the rest of the output is
//! dropped and the command ends as it would have, so its exit code still
//! says what happened. A write that fails (a full disk) is an error.
//! Every line is written with its control characters made visible: a
//! server's error, a lint finding or a value quoting the job's SQL can carry
//! an escape sequence that would restyle, retitle or clear the operator's
//! terminal.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use super::Stop;

/// Set once stdout's reader has gone away; later output is dropped.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether stdout's reader went away before all of the output was written.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Writes one line to stdout.
pub fn line(args: fmt::Arguments) -> Result<(), Stop> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let text = args.to_string();
    let mut out = io::stdout().lock();
    let written = out
        .write_all(visible_controls(&text).as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(Stop::failed(format!(
            "cannot write to standard output: {e}"
        ))),
    }
}

/// Writes one line to stderr; a note that cannot be written is dropped, as
/// there is nowhere left to say so.
pub fn note(args: fmt::Arguments) {
    let text = args.to_string();
    let mut err = io::stderr().lock();
    let _ = err
        .write_all(visible_controls(&text).as_bytes())
        .and_then(|()| err.write_all(b"\n"));
}

/// `text` as a terminal can show it without obeying it: each control
/// character but the line break and the tab (an escape, a carriage return
/// that would overwrite the line, a bell) written as Rust writes it
/// (`\u{1b}`, `\r`).
pub fn visible_controls(text: &str) -> Cow<'_, str> {
    let hidden = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(hidden) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c) {
            shown.extend(c.escape_debug());
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// `println!` for a command's output: a closed pipe ends the output quietly,
/// a failed write returns the [`Stop`] from the enclosing function.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::output::line(format_args!($($arg)*))?
    };
}

/// `eprintln!` that never panics.
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::cli::output::note(format_args!($($arg)*))
    };
}

pub(crate) use {noteln, outln};

#[cfg(test)]
mod tests {
    use super::visible_controls;

    #[test]
    fn control_characters_are_written_visibly_not_obeyed() {
        assert_eq!(
            visible_controls("column \"\u{1b}]0;x\u{7}\u{1b}[2J\r\u{9b}31m\""),
            "column \"\\u{1b}]0;x\\u{7}\\u{1b}[2J\\r\\u{9b}31m\""
        );
        // Lines and tabs keep their shape; other text is left as it is.
        assert_eq!(visible_controls("a\tb\nc é ■"), "a\tb\nc é ■");
    }
}
