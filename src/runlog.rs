//! Run logs on disk: every partition's log lines (BEGIN, lock, DELETE n,
//! INSERT n, checks, COMMIT or the error), as the run wrote them, under the
//! platform's state directory (`$XDG_STATE_HOME/idem/logs`, else
//! `~/.local/state/idem/logs`), one file per job and partition. A file is
//! rotated once past [`MAX_BYTES`], keeping one older file, so logs stay
//! bounded however often a partition is re-run.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::engine::Event;

/// Past this size a partition's log starts afresh; the old one is kept as
/// `.log.1`.
pub const MAX_BYTES: u64 = 256 * 1024;

/// Where run logs are kept, when the platform says.
pub fn dir() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    Some(state.join("idem").join("logs"))
}

/// The file of one partition's log lines.
pub fn path(dir: &Path, job: &str, partition: &str) -> PathBuf {
    // Partition names are digits, '-' and 'T'; job names letters, digits, _ - .
    dir.join(job).join(format!("{partition}.log"))
}

/// Writes run events to the log files as they come.
pub struct RunLog {
    dir: PathBuf,
    max_bytes: u64,
}

impl RunLog {
    /// Logs under the platform's state directory, or None where it has none.
    pub fn open() -> Option<RunLog> {
        dir().map(|dir| RunLog::at(dir, MAX_BYTES))
    }

    pub fn at(dir: PathBuf, max_bytes: u64) -> RunLog {
        RunLog { dir, max_bytes }
    }

    /// Records an event; a log that cannot be written never stops a run.
    pub fn record(&self, event: &Event) {
        let Some((job, partition, line)) = line_of(event) else {
            return;
        };
        let _ = self.append(&job, &partition, &line);
    }

    fn append(&self, job: &str, partition: &str, line: &str) -> std::io::Result<()> {
        let file = path(&self.dir, job, partition);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if std::fs::metadata(&file).is_ok_and(|m| m.len() >= self.max_bytes) {
            std::fs::rename(&file, file.with_extension("log.1"))?;
        }
        let mut f = OpenOptions::new().create(true).append(true).open(&file)?;
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        writeln!(f, "{now} {line}")
    }
}

/// The line an event leaves in its partition's log.
fn line_of(event: &Event) -> Option<(String, String, String)> {
    Some(match event {
        Event::PartitionStarted {
            run_id,
            job,
            partition,
            attempt,
        } => (
            job.clone(),
            partition.clone(),
            format!("run {run_id} · attempt {attempt} started"),
        ),
        Event::PartitionLog {
            job,
            partition,
            line,
            ..
        } => (job.clone(), partition.clone(), line.clone()),
        Event::PartitionSucceeded {
            job,
            partition,
            attempt,
            rows_after,
            duration_ms,
            ..
        } => (
            job.clone(),
            partition.clone(),
            format!("attempt {attempt} succeeded: {rows_after} rows, {duration_ms} ms"),
        ),
        Event::PartitionFailed {
            job,
            partition,
            attempt,
            error,
            will_retry,
            ..
        } => (
            job.clone(),
            partition.clone(),
            format!(
                "attempt {attempt} failed{}: {error}",
                if *will_retry { " (will retry)" } else { "" }
            ),
        ),
        Event::PartitionSkipped {
            job,
            partition,
            because,
        } => (
            job.clone(),
            partition.clone(),
            format!("skipped: {because}"),
        ),
        Event::RunStarted { .. } | Event::RunFinished { .. } => return None,
    })
}

/// The last `n` lines of a partition's log (with its rotated file before it).
pub fn tail(dir: &Path, job: &str, partition: &str, n: usize) -> Vec<String> {
    let file = path(dir, job, partition);
    let mut lines: Vec<String> = Vec::new();
    for f in [file.with_extension("log.1"), file] {
        if let Ok(text) = std::fs::read_to_string(&f) {
            lines.extend(text.lines().map(String::from));
        }
    }
    let skip = lines.len().saturating_sub(n);
    lines.split_off(skip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_line(i: usize) -> Event {
        Event::PartitionLog {
            run_id: "r".into(),
            job: "fct".into(),
            partition: "2026-01-01".into(),
            line: format!("line {i} {}", "x".repeat(40)),
        }
    }

    #[test]
    fn logs_rotate_and_stay_bounded() {
        let dir = tempfile::tempdir().expect("dir");
        let log = RunLog::at(dir.path().to_path_buf(), 1000);
        for i in 0..200 {
            log.record(&log_line(i));
        }
        let file = path(dir.path(), "fct", "2026-01-01");
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        assert!(size(&file) < 1100, "{}", size(&file));
        assert!(size(&file.with_extension("log.1")) < 1100);
        assert!(!file.with_extension("log.2").exists());
        let last = tail(dir.path(), "fct", "2026-01-01", 3);
        assert_eq!(last.len(), 3);
        assert!(last[2].contains("line 199"), "{last:?}");
        assert!(last[0].contains("line 197"), "{last:?}");
    }
}
