//! The `idem run` grammar: its arguments, the checks on them, and the
//! command line that gives them back. The console's `:run` parses the same
//! arguments, so a flag added here is a flag of both.

use clap::Args;

use super::{Stop, parse_bound, parse_partition, parse_states};
use crate::config::Job;
use crate::engine::Selection;
use crate::partition::RangeEnd;
use crate::state::LoadState;

/// The states `--only` takes: a partition running elsewhere or not complete
/// yet is never run.
/// The word `--only` takes for the partitions whose latest load the shrink
/// guard refused, with no success since.
const REFUSED: &str = "refused";

/// What joins a typed range's ends: `2026-06-01..2026-06-30`.
const RANGE: &str = "..";

const RUNNABLE: [LoadState; 7] = [
    LoadState::Failed,
    LoadState::Missing,
    LoadState::Stale,
    LoadState::Vanished,
    LoadState::Unmanaged,
    LoadState::Loaded,
    LoadState::Empty,
];

#[derive(Args, Debug, Clone, Default)]
pub struct RunArgs {
    /// The config the command reads, where a printed command must name it
    /// (the console's "same as:" line): not an argument of `run`.
    #[arg(skip)]
    pub config: Option<std::path::PathBuf>,
    /// The job to backfill.
    pub job: String,
    /// Partitions A..B, both included, or one partition A: instead of
    /// --from/--to.
    #[arg(value_name = "PARTITIONS")]
    pub range: Option<String>,
    /// First partition (default: the job's start).
    #[arg(long)]
    pub from: Option<String>,
    /// Last partition, included (default: the last complete one).
    #[arg(long)]
    pub to: Option<String>,
    /// Only partitions in these states: failed, missing, stale, vanished, unmanaged, loaded, empty; or refused (those the shrink guard refused, with no success since).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Partitions in flight at once (default from [defaults]).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Show what would run, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON event per line on stdout.
    #[arg(long)]
    pub json: bool,
    /// Why this run happens, recorded in the ledger.
    #[arg(long)]
    pub reason: Option<String>,
    /// For merge_key jobs: also re-merge every window after the range up to
    /// the latest loaded one, so that the newest values win.
    #[arg(long)]
    pub through_latest: bool,
    /// Let a replace leave a partition with far fewer rows than it has (or
    /// none): the shrink guard otherwise refuses, taking it for a late source.
    #[arg(long)]
    pub allow_shrink: bool,
    /// Also load windows that have not ended yet (UTC); such a load is never
    /// taken as final, so the window stays due for a run after it ends.
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Also run every downstream partition this run makes stale (jobs that
    /// read this one, transitively), each after the upstream partitions it
    /// reads have committed.
    #[arg(long)]
    pub cascade: bool,
    /// Run without asking: on a terminal idem shows the plan and asks first,
    /// and elsewhere refuses runs of more than 100 partitions without it.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

impl RunArgs {
    /// The partitions these arguments select of `job`: the range, the
    /// `--only` states and `--allow-incomplete`, checked as `idem run`
    /// checks them.
    pub fn selection(&self, job: &Job) -> Result<Selection, Stop> {
        // `refused` is no state: a loaded partition may carry a refusal.
        let (refused, states): (Vec<String>, Vec<String>) =
            self.only.iter().cloned().partition(|w| w.trim() == REFUSED);
        let only = parse_states("--only", &states, &RUNNABLE).map_err(|e| {
            Stop::usage(format!(
                "{}, or {REFUSED} (the partitions the shrink guard refused)",
                e.message
            ))
        })?;
        let (from_text, to_text) = self.bound_texts()?;
        let (from, to) = match self.range.as_deref() {
            Some(one) if !one.contains(RANGE) => {
                let (from, to) = parse_partition(job, "", one)?;
                (Some(from), Some(to))
            }
            _ => {
                let (from, to) = self.bound_names();
                (
                    parse_bound(job, from, from_text, RangeEnd::From)?,
                    parse_bound(job, to, to_text, RangeEnd::To)?,
                )
            }
        };
        Ok(Selection {
            from,
            to,
            only,
            refused: !refused.is_empty(),
            allow_incomplete: self.allow_incomplete,
        })
    }

    /// What the selection's range says of a coarser `--from` or `--to` the
    /// job's start or end cut: where the range begins or ends instead.
    pub fn moved_bounds(&self, job: &Job, selection: &Selection) -> Vec<String> {
        let (from, to) = self.bound_names();
        let Ok((from_text, to_text)) = self.bound_texts() else {
            return Vec::new();
        };
        [
            (from, from_text, selection.from, RangeEnd::From),
            (to, to_text, selection.to, RangeEnd::To),
        ]
        .into_iter()
        .filter_map(|(flag, text, bound, end)| {
            super::moved_to_the_job(job, flag, text?, bound?, end)
        })
        .collect()
    }

    /// A bound the job's partitions do not reach (`--from 2025-12` of a
    /// job that starts 2026-01-01, `--to` past its `end`), refused in the
    /// words typed, with the job's range and the command that runs the part
    /// of the range inside it (QA: the refusal named 2025-12-01, which
    /// nobody typed, and no command that works).
    pub fn refuse_bounds_outside(
        &self,
        config: &std::path::Path,
        job: &Job,
        selection: &Selection,
    ) -> Result<(), Stop> {
        let (from_flag, to_flag) = self.bound_names();
        let (from_text, to_text) = self.bound_texts()?;
        let before = selection.from.filter(|from| *from < job.start);
        let after = selection
            .to
            .filter(|to| job.end.is_some_and(|end| *to > end));
        let typed = |flag: &str, text: Option<&str>| {
            format!("{flag} {}", text.unwrap_or_default().trim())
                .trim_start()
                .to_string()
        };
        if before.is_none() && after.is_none() {
            return Ok(());
        }
        // A range wholly before the start, or wholly after the end, has no
        // part inside: the job's whole range is the one offered.
        let none_inside = selection.to.is_some_and(|to| to < job.start)
            || selection
                .from
                .zip(job.end)
                .is_some_and(|(from, end)| from > end);
        let from_outside = before.is_some() || none_inside;
        let to_outside = after.is_some() || none_inside;
        let given = match self.range.as_deref() {
            // Both ends of a range typed as partitions (`A..B`, or `A`
            // alone): said as typed, not as its two ends side by side.
            Some(range) if from_outside && to_outside => range.trim().to_string(),
            _ => [
                (from_flag, from_text, from_outside),
                (to_flag, to_text, to_outside),
            ]
            .into_iter()
            .filter(|(_, text, outside)| *outside && text.is_some())
            .map(|(flag, text, _)| typed(flag, text))
            .collect::<Vec<_>>()
            .join(" "),
        };
        let last = job.end.map_or_else(|| "now".to_string(), |end| end.name());
        let mut inside = self.clone();
        inside.config = Some(config.to_path_buf());
        // The command offered names its range by flags, whatever was typed.
        inside.range = None;
        inside.from = from_text.map(str::to_string);
        inside.to = to_text.map(str::to_string);
        if from_outside {
            inside.from = Some(job.start.name());
        }
        if to_outside {
            inside.to = job.end.map(|end| end.name());
        }
        let so = if none_inside {
            "none of it is a partition of the job; to run its whole range"
        } else {
            "to run the part inside them"
        };
        Err(Stop::usage(format!(
            "{given} is outside {}'s partitions ({} to {last}, {} grain); {so}: {}",
            job.name,
            job.start.name(),
            job.grain,
            inside.command_line()
        )))
    }

    /// What messages call the range's ends: the flags, or nothing where
    /// the range came typed as `A..B` or `A`.
    fn bound_names(&self) -> (&'static str, &'static str) {
        if self.typed_range() {
            ("", "")
        } else {
            ("--from", "--to")
        }
    }

    /// The texts of the range's ends: of `A..B` (or `A`, both ends), else
    /// of `--from` and `--to`.
    fn bound_texts(&self) -> Result<(Option<&str>, Option<&str>), Stop> {
        let Some(range) = self.range.as_deref() else {
            return Ok((self.from.as_deref(), self.to.as_deref()));
        };
        if self.from.is_some() || self.to.is_some() {
            return Err(Stop::usage(format!(
                "{range} and --from/--to both name the range; give one of them"
            )));
        }
        Ok(match range.split_once(RANGE) {
            Some((from, to)) => (Some(from), Some(to)),
            None => (Some(range), Some(range)),
        })
    }

    /// Whether the range came typed as partitions (`A..B` or `A`), not
    /// as flags.
    pub fn typed_range(&self) -> bool {
        self.range.is_some()
    }

    /// `--concurrency`, or the config's default, checked.
    pub fn concurrency_or(&self, default: usize) -> Result<usize, Stop> {
        let concurrency = self.concurrency.unwrap_or(default);
        if concurrency == 0 || concurrency > 64 {
            return Err(Stop::usage(format!(
                "--concurrency {concurrency} is out of range; expected 1 to 64"
            )));
        }
        Ok(concurrency)
    }

    /// The `idem run` command line that gives these arguments, words quoted
    /// for a POSIX shell.
    pub fn command_line(&self) -> String {
        self.command_pieces().join(" ")
    }

    /// The command line in the pieces a wrapped display keeps whole: a flag
    /// with its value, `run` with the job. A new flag gets its line here.
    pub fn command_pieces(&self) -> Vec<String> {
        let mut words = vec!["idem".to_string()];
        if let Some(path) = self.config.as_deref().and_then(config_path) {
            words.push(format!("--config {path}"));
        }
        words.push(format!("run {}", shell_word(&self.job)));
        if let Some(range) = &self.range {
            words.push(shell_word(range));
        }
        let mut flag = |name: &str, value: Option<String>| {
            words.push(match value {
                Some(v) => format!("{name} {}", shell_word(&v)),
                None => name.to_string(),
            });
        };
        if let Some(from) = &self.from {
            flag("--from", Some(from.clone()));
        }
        if let Some(to) = &self.to {
            flag("--to", Some(to.clone()));
        }
        if !self.only.is_empty() {
            flag("--only", Some(self.only.join(",")));
        }
        if let Some(n) = self.concurrency {
            flag("--concurrency", Some(n.to_string()));
        }
        if self.through_latest {
            flag("--through-latest", None);
        }
        if let Some(reason) = &self.reason {
            flag("--reason", Some(reason.clone()));
        }
        if self.allow_shrink {
            flag("--allow-shrink", None);
        }
        if self.allow_incomplete {
            flag("--allow-incomplete", None);
        }
        if self.cascade {
            flag("--cascade", None);
        }
        if self.yes {
            flag("--yes", None);
        }
        if self.dry_run {
            flag("--dry-run", None);
        }
        if self.json {
            flag("--json", None);
        }
        words
    }
}

/// ` --config PATH`, the config's absolute path, so that a printed command
/// runs as it stands from any directory (QA: a relative path, or the
/// default `./idem.toml` left out, ran only where the first run had).
pub(super) fn config_flag(config: &std::path::Path) -> String {
    config_path(config)
        .map(|path| format!(" --config {path}"))
        .unwrap_or_default()
}

/// The config's path as a printed command names it: absolute, as a shell
/// word; as given where it cannot be resolved (none for the default).
/// Its links are kept: a deploy's `current/idem.toml`, or an
/// `/etc/idem/idem.toml` linked to a release, names the config that is
/// current when the command is run, not the release it was linked to when
/// it was printed (QA: the link was resolved, so a repeat printed before a
/// deploy ran the old release's jobs after it).
fn config_path(config: &std::path::Path) -> Option<String> {
    match absolute_keeping_links(config) {
        Some(absolute) => Some(shell_word(&absolute.display().to_string())),
        None if config == std::path::Path::new(super::DEFAULT_CONFIG) => None,
        None => Some(shell_word(&config.display().to_string())),
    }
}

/// The config's path from the root, its links kept, as the commands a
/// run prints name it; as given where no file is there. Taken once, as
/// idem starts: a working directory removed mid-run (a scheduler's scratch
/// folder) leaves no way to tell later where a relative path led, and a
/// repeat command printed at the end named the config as typed, which
/// then named nothing.
pub fn config_from_the_root(config: &std::path::Path) -> std::path::PathBuf {
    absolute_keeping_links(config).unwrap_or_else(|| config.to_path_buf())
}

/// `path` from the root, its links unresolved; its `..` taken away where
/// what is left names the same file (a `..` after a link leads elsewhere,
/// so then it stays). `None` where no file is there or no current
/// directory can be read.
fn absolute_keeping_links(path: &std::path::Path) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    use std::path::Component;
    let absolute = std::path::absolute(path).ok()?;
    let file = std::fs::metadata(&absolute).ok()?;
    let mut lexical = std::path::PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other),
        }
    }
    let same_file = |candidate: &std::path::Path| {
        std::fs::metadata(candidate).is_ok_and(|m| (m.dev(), m.ino()) == (file.dev(), file.ino()))
    };
    Some(if same_file(&lexical) {
        lexical
    } else {
        absolute
    })
}

/// A word as a POSIX shell reads it back: bare when it is plain, else in
/// single quotes.
pub(super) fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.,:/=@+".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_word_the_shell_reads_specially_is_quoted() {
        assert_eq!(shell_word("/srv/etl/idem.toml"), "/srv/etl/idem.toml");
        assert_eq!(shell_word("my configs/idem.toml"), "'my configs/idem.toml'");
        assert_eq!(shell_word("it's.toml"), "'it'\\''s.toml'");
        assert_eq!(shell_word("$HOME/x"), "'$HOME/x'");
        assert_eq!(shell_word(""), "''");
    }

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    #[command(no_binary_name = true)]
    struct Line {
        #[command(subcommand)]
        command: Command,
    }

    #[derive(clap::Subcommand)]
    enum Command {
        Run(RunArgs),
    }

    /// Splits a command line as a POSIX shell does, for the words
    /// [`shell_word`] writes: bare, or in single quotes with `'\''`.
    fn shell_split(line: &str) -> Vec<String> {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut quoted = false;
        let mut any = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\'' => {
                    quoted = !quoted;
                    any = true;
                }
                '\\' if !quoted => word.extend(chars.next()),
                ' ' if !quoted => {
                    if any || !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                    any = false;
                }
                c => word.push(c),
            }
        }
        if any || !word.is_empty() {
            words.push(word);
        }
        words
    }

    fn parse(words: &[String]) -> RunArgs {
        let Command::Run(args) = Line::try_parse_from(words).expect("parses").command;
        args
    }

    #[test]
    fn the_command_line_reads_back_as_the_same_arguments() {
        let words: Vec<String> = [
            "run",
            "fct_orders",
            "--from",
            "2026-06-01",
            "--to",
            "2026-06-30",
            "--only",
            "failed,missing",
            "--concurrency",
            "3",
            "--through-latest",
            "--reason",
            "it's the refunds; re-run",
            "--allow-shrink",
            "--allow-incomplete",
            "--cascade",
            "--yes",
            "--dry-run",
            "--json",
        ]
        .map(String::from)
        .to_vec();
        let mut all = vec!["idem".to_string()];
        all.extend(words);
        let args = parse(&all[1..]);
        let line = args.command_line();
        assert_eq!(
            line,
            "idem run fct_orders --from 2026-06-01 --to 2026-06-30 --only failed,missing \
             --concurrency 3 --through-latest --reason 'it'\\''s the refunds; re-run' \
             --allow-shrink --allow-incomplete --cascade --yes --dry-run --json"
        );
        let again = parse(&shell_split(&line)[1..]);
        assert_eq!(format!("{again:?}"), format!("{args:?}"));
    }

    /// A range typed as partitions is given back as typed: an instant
    /// read back as `--from A --to A` would name the partition that ends
    /// at it, not the one that begins there.
    #[test]
    fn a_typed_range_reads_back_as_typed() {
        for range in ["2026-06-01..2026-06-30", "2026-06-04T05:00:00+02:00"] {
            let words: Vec<String> = ["run", "fct_orders", range, "--yes"]
                .map(String::from)
                .to_vec();
            let args = parse(&words);
            assert_eq!(args.range.as_deref(), Some(range));
            let line = args.command_line();
            assert_eq!(line, format!("idem run fct_orders {range} --yes"));
            let again = parse(&shell_split(&line)[1..]);
            assert_eq!(format!("{again:?}"), format!("{args:?}"));
        }
    }

    #[test]
    fn a_bare_run_prints_only_the_job() {
        let args = parse(&["run".to_string(), "dim_customers".to_string()]);
        assert_eq!(args.command_line(), "idem run dim_customers");
    }
}
