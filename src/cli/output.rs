//! A command's output on stdout and its notes on stderr. A reader that went
//! away (`idem status | head -3`) is not an error: the rest of the output is
//! dropped and the command ends as it would have, so its exit code still
//! says what happened. A write that fails (a full disk) is an error.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use super::Stop;

/// Set once stdout's reader has gone away; later output is dropped.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes one line to stdout.
pub fn line(args: fmt::Arguments) -> Result<(), Stop> {
    if STDOUT_CLOSED.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    let written = out
        .write_fmt(args)
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
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
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
