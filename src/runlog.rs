//! Run logs on disk: every partition's log lines (BEGIN, lock, DELETE n,
//! INSERT n, checks, COMMIT or the error), as the run wrote them, under the
//! platform's state directory (`$XDG_STATE_HOME/idem/logs` where it is an
//! absolute path, else `~/.local/state/idem/logs`: see [`crate::xdg`]), in a folder per warehouse (two warehouses
//! with a job of one name, production and staging, keep their logs apart),
//! one file per job and partition. A file is
//! rotated once past [`MAX_BYTES`], keeping one older file, so logs stay
//! bounded however often a partition is re-run.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::engine::Event;
use crate::terminal_text::visible_line;

/// Past this size a partition's log starts afresh; the old one is kept as
/// `.log.1`.
pub const MAX_BYTES: u64 = 256 * 1024;

/// Why no run log is kept where [`dir`] finds no folder.
pub const NO_STATE_DIRECTORY: &str =
    "no state directory: set XDG_STATE_HOME (an absolute path) or HOME to keep run logs";

/// Where the run logs of the warehouse at `url` are kept, when the
/// platform says: a folder named by a hash of the URL without its password
/// (a SQLite file by its absolute path), with the URL in `warehouse.txt`.
pub fn dir(url: &str) -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    let state = crate::xdg::Base::State.dir()?;
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

/// Why no log is kept under HOME where HOME is no folder (a scheduler's
/// `HOME=/nonexistent`): a run made the whole path, HOME too.
pub fn no_home() -> Option<String> {
    let home = crate::xdg::Base::State.missing_home()?;
    Some(format!(
        "HOME ({}) is no folder, and idem makes none there: set XDG_STATE_HOME (an absolute path) to keep run logs",
        home.display()
    ))
}

/// The file of one partition's log lines.
pub fn path(dir: &Path, job: &str, partition: &str) -> PathBuf {
    // Partition names are digits, '-' and 'T'; job names letters, digits, _ - .
    dir.join(job).join(format!("{partition}.log"))
}

/// Beside a partition's `log`, the mark that a run could not write all of
/// it (a full disk, a file it may not write): its text is why, where even
/// that could be written. A full disk still lets a run create the empty
/// file, which without the mark read as a log with nothing to say.
pub fn unwritten_mark(log: &Path) -> PathBuf {
    log.with_extension("log.unwritten")
}

/// Why the latest run to write `partition`'s log in `dir` could not write
/// all of it, by its [`unwritten_mark`] (empty where even that could not be
/// written); none where it wrote it whole. `idem log` and the console both
/// read it so.
pub fn unwritten(dir: &Path, job: &str, partition: &str) -> Option<String> {
    std::fs::read(unwritten_mark(&path(dir, job, partition)))
        .ok()
        .map(|why| visible_line(String::from_utf8_lossy(&why).trim()))
}

/// Writes run events to the log files as they come. A partition's file
/// stays open while its attempt runs (a line costs a write and a look at
/// the path, not an open and a close) and closes when the attempt ends.
pub struct RunLog {
    dir: PathBuf,
    /// The warehouse the folder's logs are of, as `warehouse.txt` says.
    warehouse: Option<String>,
    max_bytes: u64,
    /// The files of the partitions in flight, by (job, partition).
    open: HashMap<(String, String), OpenLog>,
    /// The first write that failed, until [`RunLog::failure`] takes it.
    failed: Option<String>,
    /// Whether a failure was taken: one is said once a run, not per line.
    said: bool,
}

/// A partition's log file as it is open for writing.
struct OpenLog {
    file: File,
    /// Its size: past [`RunLog`]'s bound it is rotated.
    size: u64,
    /// Which file it is (device and inode), to tell whether its path
    /// still names it.
    id: (u64, u64),
}

/// Which file `metadata` is of.
fn file_id(metadata: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (metadata.dev(), metadata.ino())
}

impl RunLog {
    /// The logs of the warehouse at `url` under the platform's state
    /// directory; where none can be kept, why (for the run to say: `idem
    /// log --lines` would later find nothing).
    pub fn open(url: &str) -> Result<RunLog, String> {
        let dir = dir(url).ok_or(NO_STATE_DIRECTORY)?;
        if let Some(why) = no_home() {
            return Err(why);
        }
        make_folder(&dir)?;
        let mut log = RunLog::at(dir, MAX_BYTES);
        log.warehouse = Some(warehouse_identity(url));
        log.name_the_warehouse();
        Ok(log)
    }

    pub fn at(dir: PathBuf, max_bytes: u64) -> RunLog {
        RunLog {
            dir,
            warehouse: None,
            max_bytes,
            open: HashMap::new(),
            failed: None,
            said: false,
        }
    }

    /// Says which warehouse the folder's logs are of, for a person looking.
    fn name_the_warehouse(&self) {
        if let Some(warehouse) = &self.warehouse {
            let _ = std::fs::write(self.dir.join("warehouse.txt"), format!("{warehouse}\n"));
        }
    }

    /// Why `partition`'s log could not all be written, as [`unwritten`]
    /// reads it.
    pub fn unwritten(&self, job: &str, partition: &str) -> Option<String> {
        unwritten(&self.dir, job, partition)
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
        if let Err(why) = self.append(&key, &line) {
            self.open.remove(&key);
            let mark = unwritten_mark(&path(&self.dir, &key.0, &key.1));
            let _ = std::fs::write(mark, format!("{why}\n"));
            if self.failed.is_none() && !self.said {
                self.failed = Some(why);
            }
        }
        if matches!(
            event,
            Event::PartitionSucceeded { .. } | Event::PartitionFailed { .. }
        ) {
            self.open.remove(&key);
        }
    }

    /// Appends `line` to the partition's log; where it cannot, why.
    fn append(&mut self, key: &(String, String), line: &str) -> Result<(), String> {
        let file = path(&self.dir, &key.0, &key.1);
        // The file open is written only while its path still names it: a
        // folder removed mid-run (a clean-up of ~/.local/state) would take
        // the attempt's later lines with it, and a file another run
        // rotated is that run's older file now. A file grown past the
        // bound is closed here and rotated on opening.
        let current = |open: &OpenLog| {
            open.size < self.max_bytes
                && std::fs::metadata(&file).is_ok_and(|m| file_id(&m) == open.id)
        };
        if self.open.get(key).is_some_and(|open| !current(open)) {
            self.open.remove(key);
        }
        if !self.open.contains_key(key)
            && let Some(parent) = file.parent()
            && !parent.is_dir()
        {
            make_folder(parent)?;
            self.name_the_warehouse();
        }
        let opening = !self.open.contains_key(key);
        self.write(key, &file, line)
            .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        // An attempt's first line written: the log is whole again as far
        // as this run goes, whatever an earlier run could not write.
        if opening {
            let _ = std::fs::remove_file(unwritten_mark(&file));
        }
        Ok(())
    }

    /// Writes `line` to `file`, the partition's log, opening it (rotated
    /// first where it grew past the bound) unless it is open.
    fn write(&mut self, key: &(String, String), file: &Path, line: &str) -> std::io::Result<()> {
        if !self.open.contains_key(key) {
            if std::fs::metadata(file).is_ok_and(|m| m.len() >= self.max_bytes) {
                match std::fs::rename(file, file.with_extension("log.1")) {
                    // Another run rotated it first.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    rotated => rotated?,
                }
            }
            let f = OpenOptions::new().create(true).append(true).open(file)?;
            let metadata = f.metadata()?;
            let open = OpenLog {
                size: metadata.len(),
                id: file_id(&metadata),
                file: f,
            };
            self.open.insert(key.clone(), open);
        }
        let Some(OpenLog { file: f, size, .. }) = self.open.get_mut(key) else {
            return Ok(());
        };
        let now = crate::clock::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        // A message of several lines (a server's error with its DETAIL)
        // is as many lines, each with its time, so that a line of the file
        // is one line on a terminal and `--lines N` counts what it shows;
        // control characters (an escape a server echoed) become spaces.
        let text: String = line
            .split('\n')
            .map(|l| format!("{now} {}\n", visible_line(l.trim_end_matches('\r'))))
            .collect();
        f.write_all(text.as_bytes())?;
        *size += text.len() as u64;
        Ok(())
    }
}

/// Makes the folder `dir`, and those it is in; where it cannot, why,
/// naming the path in the way where one is (a file, or a symlink to
/// nothing, where a folder is needed), not only the error (`File exists`,
/// `Not a directory`).
fn make_folder(dir: &Path) -> Result<(), String> {
    let Err(e) = std::fs::create_dir_all(dir) else {
        return Ok(());
    };
    Err(match in_the_way(dir) {
        Some((p, what)) if p == dir => format!(
            "cannot create the folder {}: {what} is in its place (move it away to keep run logs)",
            dir.display()
        ),
        Some((p, what)) => format!(
            "cannot create the folder {}: {} is {what}, not a folder (move it away to keep run logs)",
            dir.display(),
            p.display()
        ),
        None => format!("cannot create the folder {}: {e}", dir.display()),
    })
}

/// The first path from the root to `dir` that is no folder but is there:
/// a file, or a symlink to nothing, which no folder can be made under.
fn in_the_way(dir: &Path) -> Option<(&Path, &'static str)> {
    let mut folders: Vec<&Path> = dir.ancestors().collect();
    folders.reverse();
    folders.into_iter().find_map(
        |p| match (std::fs::metadata(p), std::fs::symlink_metadata(p)) {
            (Ok(m), _) if !m.is_dir() => Some((p, "a file")),
            (Err(_), Ok(_)) => Some((p, "a symlink to nothing")),
            _ => None,
        },
    )
}

/// Why no run could have written a log in `dir`: a file (or a symlink to
/// nothing) where it or a folder above it must be. A run in that state
/// said so as it loaded, and could leave no [`unwritten_mark`] there:
/// without this, `idem log --lines` found "no run log" and said no more.
pub fn why_no_run_could_write(dir: &Path) -> Option<String> {
    let (p, what) = in_the_way(dir)?;
    Some(if p == dir {
        format!(
            "{what} is in the place of its folder, so no run could write one there (move it away to keep run logs)"
        )
    } else {
        format!(
            "{} is {what}, not a folder, so no run could write one there (move it away, or set XDG_STATE_HOME to a folder of yours, to keep run logs)",
            p.display()
        )
    })
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
                "attempt {attempt} {}{}: {error}",
                event.failure_word(),
                if *will_retry { " (will retry)" } else { "" }
            ),
        ),
        Event::PartitionLeft {
            job,
            partition,
            because,
        } => (
            job.clone(),
            partition.clone(),
            format!("left out of the cascade: {because}"),
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
        Event::PartitionAdded {
            job,
            partition,
            because,
        } => (
            job.clone(),
            partition.clone(),
            format!("added to the cascade: {because}"),
        ),
        Event::RunStarted { .. }
        | Event::RunFinished { .. }
        | Event::StepSkipped { .. }
        | Event::ConcurrencyLowered { .. } => {
            return None;
        }
    })
}

/// What is left of a partition's log to show: its last lines, and what
/// kept any from being read.
#[derive(Debug, Default)]
pub struct Tail {
    /// The last lines, oldest first (the rotated file's before the
    /// current one's), each made plain for a terminal.
    pub lines: Vec<String>,
    /// Whether either file exists, so that an empty log is not taken for
    /// one never written.
    pub found: bool,
    /// Each file there that could not be read, and why.
    pub unreadable: Vec<String>,
    /// Why the latest run to write the log could not write all of it
    /// (empty where even that could not be written), by its
    /// [`unwritten_mark`].
    pub unwritten: Option<String>,
}

/// Bytes read at a time from the end of a log while looking for its last
/// lines.
const CHUNK: u64 = 64 * 1024;

/// The last `n` lines of a partition's log (with its rotated file before
/// it). Only the end of a file is read, however large it grew (a log
/// written by another tool, or never rotated); bytes that are not UTF-8
/// (a line cut mid-character by a full disk) show as `�`, and control
/// characters visibly (`\u{1b}`), so nothing in a log restyles the terminal.
pub fn tail(dir: &Path, job: &str, partition: &str, n: usize) -> Tail {
    let file = path(dir, job, partition);
    let mut tail = Tail {
        unwritten: unwritten(dir, job, partition),
        ..Tail::default()
    };
    for f in [file.clone(), file.with_extension("log.1")] {
        let wanted = n.saturating_sub(tail.lines.len());
        if wanted == 0 {
            break;
        }
        match last_lines(&f, wanted) {
            Ok(Some(mut lines)) => {
                tail.found = true;
                lines.append(&mut tail.lines);
                tail.lines = lines;
            }
            Ok(None) => {}
            Err(e) => {
                tail.found = true;
                tail.unreadable
                    .push(format!("cannot read {}: {e}", f.display()));
            }
        }
    }
    tail
}

/// The last `n` lines of `file`, or `None` where there is no such file.
fn last_lines(file: &Path, n: usize) -> std::io::Result<Option<Vec<String>>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = match File::open(file) {
        Ok(f) => f,
        // A file where a folder above it must be is no log either: why
        // none could be written there is [`why_no_run_could_write`]'s to say.
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let len = f.metadata()?.len();
    // Back from the end a chunk at a time, until the bytes read hold n
    // whole lines (n line breaks before the last line's end).
    let mut start = len;
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let breaks = bytes
            .strip_suffix(b"\n")
            .unwrap_or(&bytes)
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        if breaks >= n || start == 0 {
            break;
        }
        let from = start.saturating_sub(CHUNK);
        f.seek(SeekFrom::Start(from))?;
        let mut chunk = Vec::new();
        (&mut f).take(start - from).read_to_end(&mut chunk)?;
        chunk.append(&mut bytes);
        bytes = chunk;
        start = from;
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<String> = text.lines().map(visible_line).collect();
    let skip = lines.len().saturating_sub(n);
    Ok(Some(lines.split_off(skip)))
}

#[cfg(test)]
mod tests;
