//! Headless commands: each returns how the process ends ([`Exit`]: success,
//! some partitions failed, usage or config error, cancelled).

mod diff;
mod lint;
mod run;
mod status;
mod verify;

use std::path::Path;

pub use diff::diff;
pub use lint::lint;
pub use run::{RunArgs, run};
pub use status::{StatusArgs, StatusFormat, jobs, log, status};
pub use verify::verify;

use crate::config::{self, Config, Job};
use crate::exit::Exit;
use crate::partition::{Partition, RangeEnd};
use crate::warehouse::Warehouse;

/// A command that could not go on, with the exit code it ends with.
#[derive(Debug)]
pub struct Stop {
    pub code: Exit,
    pub message: String,
}

impl Stop {
    pub fn usage(message: impl Into<String>) -> Stop {
        Stop {
            code: Exit::Usage,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> Stop {
        Stop {
            code: Exit::Failed,
            message: message.into(),
        }
    }

    /// Prints the message and gives the exit code.
    pub fn report(self) -> Exit {
        eprintln!("idem: {}", self.message);
        self.code
    }
}

pub fn load_config(path: &Path) -> Result<Config, Stop> {
    config::load(path).map_err(|e| Stop::usage(e.to_string()))
}

pub async fn connect(config: &Config, max_connections: u32) -> Result<Warehouse, Stop> {
    Warehouse::connect(&config.warehouse, max_connections)
        .await
        .map_err(|e| Stop::failed(e.to_string()))
}

pub fn find_job<'a>(config: &'a Config, name: &str) -> Result<&'a Job, Stop> {
    config.jobs.iter().find(|j| j.name == name).ok_or_else(|| {
        let names: Vec<&str> = config.jobs.iter().map(|j| j.name.as_str()).collect();
        Stop::usage(format!(
            "no job named \"{name}\" in {}; jobs: {}",
            config.path.display(),
            if names.is_empty() {
                "(none)".into()
            } else {
                names.join(", ")
            }
        ))
    })
}

/// Parses `--from` / `--to` for a job's grain.
pub fn parse_bound(
    job: &Job,
    flag: &str,
    text: Option<&str>,
    end: RangeEnd,
) -> Result<Option<Partition>, Stop> {
    let Some(text) = text else { return Ok(None) };
    Partition::parse(job.grain, text, end)
        .map(Some)
        .ok_or_else(|| {
            Stop::usage(format!(
                "{flag} \"{text}\" is not a partition of {} ({} grain); expected {}",
                job.name,
                job.grain,
                job.grain.name_format()
            ))
        })
}
