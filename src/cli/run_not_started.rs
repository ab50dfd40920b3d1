//! `idem run --json`'s last word when the run ends before it starts: a bad
//! range, a config error, an unreachable warehouse, a missing target, a
//! signal while it connects. Before, such a run wrote nothing on stdout, so
//! an orchestrator parsing the stream found no event at all and had only
//! stderr's text to go on. The stream now ends with `run_finished` (the run
//! began) or `run_not_started` (it did not: nothing was loaded or recorded).

use serde::Serialize;

use super::Stop;
use crate::engine;
use crate::exit::Exit;

#[derive(Serialize)]
struct RunNotStarted<'a> {
    schema_version: u32,
    event: &'static str,
    /// The job as the command line named it (it may not be in the config).
    job: &'a str,
    /// What stopped it, as stderr says it.
    error: &'a str,
    /// The exit code the command ends with: 2 usage or config, 1 the
    /// warehouse, 130 cancelled.
    exit_code: u8,
}

/// The event's JSON line.
pub(super) fn json_line(job: &str, error: &str, exit: Exit) -> String {
    let event = RunNotStarted {
        schema_version: engine::SCHEMA_VERSION,
        event: "run_not_started",
        job,
        error,
        exit_code: exit.code(),
    };
    // Plain strings and a number: serialising cannot fail.
    serde_json::to_string(&event).unwrap_or_default()
}

/// Says on stdout that the run did not start, then reports `stop` as every
/// command does (stderr, exit code). A stdout that cannot take the line
/// changes nothing: stderr and the exit code still say it.
pub(super) fn report(job: &str, stop: Stop) -> Exit {
    let _ = super::output::json(&json_line(job, &stop.message, stop.code));
    stop.report()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_names_the_job_the_error_and_the_exit_code() {
        let line = json_line("fct", "no job named \"fct\"", Exit::Usage);
        let v: serde_json::Value = serde_json::from_str(&line).expect("one JSON object");
        assert_eq!(v["schema_version"], engine::SCHEMA_VERSION);
        assert_eq!(v["event"], "run_not_started");
        assert_eq!(v["job"], "fct");
        assert_eq!(v["error"], "no job named \"fct\"");
        assert_eq!(v["exit_code"], 2);
        assert!(!line.contains('\n'), "one line: {line}");
    }
}
