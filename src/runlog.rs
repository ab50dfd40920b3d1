//! Run logs on disk: every partition's log lines (BEGIN, lock, DELETE n,
//! INSERT n, checks, COMMIT or the error), as the run wrote them, under the
//! platform's state directory (`$XDG_STATE_HOME/idem/logs`, else
//! `~/.local/state/idem/logs`), in a folder per warehouse (two warehouses
//! with a job of one name, production and staging, keep their logs apart),
//! one file per job and partition. A file is
//! rotated once past [`MAX_BYTES`], keeping one older file, so logs stay
//! bounded however often a partition is re-run.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::engine::Event;

/// Past this size a partition's log starts afresh; the old one is kept as
/// `.log.1`.
pub const MAX_BYTES: u64 = 256 * 1024;

/// Where the run logs of the warehouse at `url` are kept, when the
/// platform says: a folder named by a hash of the URL without its password
/// (a SQLite file by its absolute path), with the URL in `warehouse.txt`.
pub fn dir(url: &str) -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        })?;
    let identity = warehouse_identity(url);
    let digest = Sha256::digest(identity.as_bytes());
    let key: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    Some(state.join("idem").join("logs").join(key))
}

/// The warehouse a URL names, as the logs' folder is keyed: its password
/// left out, a SQLite file by its absolute path where it exists.
fn warehouse_identity(url: &str) -> String {
    let redacted = crate::warehouse::redact(url);
    let Some(file) = redacted.strip_prefix("sqlite://") else {
        return redacted;
    };
    let (file, query) = file.split_once('?').unwrap_or((file, ""));
    match std::fs::canonicalize(file) {
        Ok(absolute) if query.is_empty() => format!("sqlite://{}", absolute.display()),
        Ok(absolute) => format!("sqlite://{}?{query}", absolute.display()),
        Err(_) => redacted,
    }
}

/// The file of one partition's log lines.
pub fn path(dir: &Path, job: &str, partition: &str) -> PathBuf {
    // Partition names are digits, '-' and 'T'; job names letters, digits, _ - .
    dir.join(job).join(format!("{partition}.log"))
}

/// Writes run events to the log files as they come. A partition's file
/// stays open while its attempt runs (a line costs one write, not a
/// directory check, an open and a close) and closes when the attempt ends.
pub struct RunLog {
    dir: PathBuf,
    max_bytes: u64,
    /// The files of the partitions in flight, with their sizes, by
    /// (job, partition).
    open: HashMap<(String, String), (File, u64)>,
    /// The first write that failed, until [`RunLog::failure`] takes it.
    failed: Option<String>,
    /// Whether a failure was taken: one is said once a run, not per line.
    said: bool,
}

impl RunLog {
    /// The logs of the warehouse at `url` under the platform's state
    /// directory; where none can be kept, why (for the run to say: `idem
    /// log --lines` would later find nothing).
    pub fn open(url: &str) -> Result<RunLog, String> {
        let dir =
            dir(url).ok_or("no state directory: set XDG_STATE_HOME or HOME to keep run logs")?;
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        // Which warehouse the folder's logs are of, for a person looking.
        let _ = std::fs::write(dir.join("warehouse.txt"), warehouse_identity(url) + "\n");
        Ok(RunLog::at(dir, MAX_BYTES))
    }

    pub fn at(dir: PathBuf, max_bytes: u64) -> RunLog {
        RunLog {
            dir,
            max_bytes,
            open: HashMap::new(),
            failed: None,
            said: false,
        }
    }

    /// The first write that failed, once: the run goes on without it.
    pub fn failure(&mut self) -> Option<String> {
        let failed = self.failed.take().filter(|_| !self.said);
        self.said |= failed.is_some();
        failed
    }

    /// Records an event; a log that cannot be written never stops a run.
    pub fn record(&mut self, event: &Event) {
        let Some((job, partition, line)) = line_of(event) else {
            return;
        };
        let key = (job, partition);
        if let Err(e) = self.append(&key, &line) {
            self.open.remove(&key);
            if self.failed.is_none() && !self.said {
                let file = path(&self.dir, &key.0, &key.1);
                self.failed = Some(format!("cannot write {}: {e}", file.display()));
            }
        }
        if matches!(
            event,
            Event::PartitionSucceeded { .. } | Event::PartitionFailed { .. }
        ) {
            self.open.remove(&key);
        }
    }

    fn append(&mut self, key: &(String, String), line: &str) -> std::io::Result<()> {
        // A file grown past the bound is closed here and rotated below.
        if self
            .open
            .get(key)
            .is_some_and(|(_, size)| *size >= self.max_bytes)
        {
            self.open.remove(key);
        }
        if !self.open.contains_key(key) {
            let file = path(&self.dir, &key.0, &key.1);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            if std::fs::metadata(&file).is_ok_and(|m| m.len() >= self.max_bytes) {
                std::fs::rename(&file, file.with_extension("log.1"))?;
            }
            let f = OpenOptions::new().create(true).append(true).open(&file)?;
            let size = f.metadata()?.len();
            self.open.insert(key.clone(), (f, size));
        }
        let Some((f, size)) = self.open.get_mut(key) else {
            return Ok(());
        };
        let now = crate::clock::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        let text = format!("{now} {line}\n");
        f.write_all(text.as_bytes())?;
        *size += text.len() as u64;
        Ok(())
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
            format!(
                "attempt {attempt} succeeded: {}, {duration_ms} ms",
                crate::numbers::n_rows(*rows_after)
            ),
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
        let mut log = RunLog::at(dir.path().to_path_buf(), 1000);
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

    #[test]
    fn interleaved_partitions_and_later_attempts_append_in_order() {
        let dir = tempfile::tempdir().expect("dir");
        let mut log = RunLog::at(dir.path().to_path_buf(), MAX_BYTES);
        let line = |partition: &str, text: &str| Event::PartitionLog {
            run_id: "r".into(),
            job: "fct".into(),
            partition: partition.into(),
            line: text.into(),
        };
        let done = |partition: &str, attempt: i64| Event::PartitionSucceeded {
            run_id: "r".into(),
            job: "fct".into(),
            partition: partition.into(),
            attempt,
            rows_deleted: 0,
            rows_inserted: 1,
            rows_updated: 0,
            rows_after: 1,
            duration_ms: 1,
            fingerprint: "v2:1:1".into(),
            content_changed: true,
        };
        for attempt in 1..=2 {
            log.record(&line("2026-01-01", &format!("a{attempt} one")));
            log.record(&line("2026-01-02", &format!("b{attempt} one")));
            log.record(&line("2026-01-01", &format!("a{attempt} two")));
            log.record(&done("2026-01-01", attempt));
            log.record(&line("2026-01-02", &format!("b{attempt} two")));
            log.record(&done("2026-01-02", attempt));
        }
        assert!(log.open.is_empty(), "every ended attempt's file is closed");
        let texts = |p: &str| -> Vec<String> {
            tail(dir.path(), "fct", p, 10)
                .iter()
                .map(|l| l.split_once(' ').map_or(l.clone(), |(_, t)| t.to_string()))
                .collect()
        };
        assert_eq!(
            texts("2026-01-01"),
            [
                "a1 one",
                "a1 two",
                "attempt 1 succeeded: 1 row, 1 ms",
                "a2 one",
                "a2 two",
                "attempt 2 succeeded: 1 row, 1 ms"
            ]
        );
        assert_eq!(texts("2026-01-02")[3], "b2 one");
    }
}
