//! A command's output on stdout and its notes on stderr. A reader that went
//! away (`idem status | head -3`) is not an error: the rest of the output is
//! dropped and the command ends as it would have, so its exit code still
//! says what happened. A write that fails (a full disk) is an error.
//! Every line is written with its control characters made visible (see
//! [`crate::terminal_text`]): a server's error, a lint finding or a value
//! quoting the job's SQL can carry an escape sequence that would restyle,
//! retitle or clear the operator's terminal. Its glyphs (`■ ✗ → ·`) are
//! written in ASCII where the console would draw ASCII (`LC_ALL=C`).

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::terminal_text::{controls_written, shown, visible_controls};

use super::Stop;

/// Set once stdout's reader has gone away; later output is dropped.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether stdout's reader went away before all of the output was written.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Writes one line to stdout.
pub fn line(args: fmt::Arguments) -> Result<(), Stop> {
    let text = args.to_string();
    write_line(&shown(&text))
}

/// Writes text a program reads (a CSV table, TOML to append to a config)
/// to stdout as it is, but for its control characters: no mark in it is
/// written in ASCII, as a line of [`line`]'s is under `LC_ALL=C`.
pub fn data(text: &str) -> Result<(), Stop> {
    write_line(&visible_controls(text))
}

/// Writes JSON text (an event's line, a document) to stdout as one line
/// of output. The control characters serde_json leaves as they are (DEL,
/// and the C1 range, such as U+009B, which a terminal obeys as an escape)
/// are written as JSON escapes (`\u009b`): the text stays JSON a script
/// parses, and a terminal shows them. Written as [`visible_controls`]
/// writes them (`\u{9b}`), they broke the line for every JSON parser: a
/// server's error quoting a mis-decoded source value carries them.
pub fn json(text: &str) -> Result<(), Stop> {
    write_line(&json_escaped_controls(text))
}

/// JSON `text` with each control character but the line break and the tab
/// written as a JSON escape (`\u009b`); the same JSON value.
fn json_escaped_controls(text: &str) -> Cow<'_, str> {
    // Every control character is in the Basic Multilingual Plane.
    controls_written(text, |c, out| out.push_str(&format!("\\u{:04x}", c as u32)))
}

/// Writes `text` and a line break to stdout in one write, so that a
/// process ended at once (a second signal) leaves no half line. A line a
/// full disk cut short is taken back from a file: the output ends with the
/// last whole line, which a reader of `--json` can parse (QA: `run --json
/// > out.json` on a full disk ended in half an event).
fn write_line(text: &str) -> Result<(), Stop> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut whole = String::with_capacity(text.len() + 1);
    whole.push_str(text);
    whole.push('\n');
    let mut out = io::stdout().lock();
    let before = file_length(&out);
    let written = out.write_all(whole.as_bytes()).and_then(|()| out.flush());
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
            STDOUT_CLOSED.store(true, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => {
            if let Some(before) = before {
                take_back_part_of_a_line(&out, before, whole.len());
            }
            Err(Stop::failed(format!(
                "cannot write to standard output: {e}"
            )))
        }
    }
}

/// The length of the regular file `out` writes to; `None` for a pipe, a
/// terminal or a device, where what was written cannot be taken back.
fn file_length(out: &impl AsFd) -> Option<u64> {
    let metadata = File::from(out.as_fd().try_clone_to_owned().ok()?)
        .metadata()
        .ok()?;
    metadata.is_file().then_some(metadata.len())
}

/// Cuts the file `out` writes to back to its length `before` a line of
/// `line_len` bytes of which only a part was written. Where it grew by
/// more (another writer appended meanwhile), or by nothing, it is left.
fn take_back_part_of_a_line(out: &impl AsFd, before: u64, line_len: usize) {
    let Some(file) = out.as_fd().try_clone_to_owned().ok().map(File::from) else {
        return;
    };
    let grown = file
        .metadata()
        .map(|m| m.len().saturating_sub(before))
        .unwrap_or(0);
    if grown > 0 && grown < line_len as u64 && file.set_len(before).is_ok() {
        // The offset is shared with stdout: a later line lands at the end,
        // not past a hole (without O_APPEND, `> out.json`).
        let _ = (&file).seek(io::SeekFrom::Start(before));
    }
}

/// Writes one line to stderr; a note that cannot be written is dropped, as
/// there is nowhere left to say so.
pub fn note(args: fmt::Arguments) {
    let text = args.to_string();
    let mut err = io::stderr().lock();
    let _ = err
        .write_all(shown(&text).as_bytes())
        .and_then(|()| err.write_all(b"\n"));
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
    use super::{json_escaped_controls, visible_controls};

    #[test]
    fn json_keeps_its_control_characters_as_json_escapes() {
        let value = serde_json::json!({ "error": "integer: \"\u{9b}31mx\u{7f}\u{1b}\"" });
        let text = serde_json::to_string(&value).expect("json");
        assert!(
            text.contains('\u{9b}'),
            "serde_json leaves C1 as it is: {text}"
        );
        let escaped = json_escaped_controls(&text);
        assert!(!escaped.contains(|c: char| c.is_control()), "{escaped}");
        // What `json` writes parses back to the same value.
        let back: serde_json::Value = serde_json::from_str(&escaped).expect("still JSON");
        assert_eq!(back, value);
        let written: serde_json::Value =
            serde_json::from_str(&visible_controls(&text)).unwrap_or_default();
        assert_ne!(written, value, "the line's own escapes were not JSON");
    }
}
