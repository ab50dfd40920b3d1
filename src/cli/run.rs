//! `idem run`: a headless backfill. Events go to stdout as JSON lines
//! (`--json`), or to stderr as a progress bar (terminal) or plain lines.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{Stop, connect, find_job, load_config, parse_bound};
use crate::config::Job;
use crate::engine::{self, Backfill, Event, Selection};
use crate::exit::Exit;
use crate::partition::{RangeEnd, now_utc};
use crate::state::{self, LoadState};

#[derive(Args, Debug, Clone, Default)]
pub struct RunArgs {
    /// The job to backfill.
    pub job: String,
    /// First partition (default: the job's start).
    #[arg(long)]
    pub from: Option<String>,
    /// Last partition, included (default: the last complete one).
    #[arg(long)]
    pub to: Option<String>,
    /// Only partitions in these states: failed, missing, stale, vanished, unmanaged, loaded, empty.
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
}

impl RunArgs {
    /// The partitions these arguments select of `job`: the range and the
    /// `--only` states, checked as `idem run` checks them.
    pub fn selection(&self, job: &Job) -> Result<Selection, Stop> {
        let mut only = Vec::new();
        for s in &self.only {
            match LoadState::parse(s.trim()) {
                Some(st) if st != LoadState::Running && st != LoadState::Future => only.push(st),
                _ => {
                    return Err(Stop::usage(format!(
                        "--only \"{s}\" is not a state; expected failed, missing, stale, vanished, unmanaged, loaded or empty"
                    )));
                }
            }
        }
        Ok(Selection {
            from: parse_bound(job, "--from", self.from.as_deref(), RangeEnd::From)?,
            to: parse_bound(job, "--to", self.to.as_deref(), RangeEnd::To)?,
            only,
        })
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
    /// for a POSIX shell. A new flag gets its line here too.
    pub fn command_line(&self) -> String {
        let mut words = vec!["idem".to_string(), "run".to_string(), shell_word(&self.job)];
        let mut flag = |name: &str, value: Option<String>| {
            words.push(name.to_string());
            words.extend(value.map(|v| shell_word(&v)));
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
        if self.dry_run {
            flag("--dry-run", None);
        }
        if self.json {
            flag("--json", None);
        }
        words.join(" ")
    }
}

/// A word as a POSIX shell reads it back: bare when it is plain, else in
/// single quotes.
fn shell_word(word: &str) -> String {
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

pub async fn run(config_path: &Path, args: RunArgs) -> Exit {
    match run_inner(config_path, args).await {
        Ok(code) => code,
        Err(stop) => stop.report(),
    }
}

async fn run_inner(config_path: &Path, args: RunArgs) -> Result<Exit, Stop> {
    let config = load_config(config_path)?;
    let job = find_job(&config, &args.job)?;
    let selection = args.selection(job)?;
    let concurrency = args.concurrency_or(config.defaults.concurrency)?;
    let warehouse = connect(&config, concurrency as u32 + 1).await?;
    let now = now_utc();
    let statuses = state::job_status(&warehouse, job, now, &HashSet::new())
        .await
        .map_err(|e| Stop::failed(format!("{}: {e}", job.name)))?;
    let mut backfill = Backfill::plan_from(
        job,
        &selection,
        &statuses,
        now,
        concurrency,
        config.defaults.retries,
    )
    .map_err(|e| Stop::usage(e.to_string()))?;
    backfill.reason = args.reason.clone();
    if let Some(risk) = backfill.merge_order_risk_in(&statuses) {
        if args.through_latest {
            backfill.extend_through_latest(&risk);
        } else {
            eprintln!("idem: warning: {}: add --through-latest", risk.warning());
        }
    }

    if args.dry_run {
        print_dry_run(&backfill, &statuses);
        return Ok(Exit::Ok);
    }

    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!(
                "idem: cancelling: no new partitions start, in-flight ones roll back (Ctrl-C again to quit now)"
            );
            on_interrupt.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(Exit::Cancelled.code().into());
            }
        }
    });

    let (tx, mut rx) = mpsc::unbounded_channel();
    let total = backfill.partitions.len() as u64;
    let json = args.json;
    let printer = tokio::spawn(async move {
        let mut progress = Progress::new(json, total);
        while let Some(event) = rx.recv().await {
            progress.show(&event);
        }
        progress.finish();
    });
    let summary = engine::run(&warehouse, &backfill, &tx, &cancel).await;
    drop(tx);
    let _ = printer.await;
    warehouse.close().await;
    if !json {
        let mut line = format!(
            "{}: {} succeeded, {} failed",
            job.name, summary.succeeded, summary.failed
        );
        if summary.not_started > 0 {
            line.push_str(&format!(", {} not started", summary.not_started));
        }
        if summary.cancelled {
            line.push_str(" (cancelled)");
        }
        line.push_str(&format!(" · run {}", summary.run_id));
        println!("{line}");
        if summary.failed > 0 {
            println!(
                "re-run the failures: idem run {} --only failed{}",
                job.name,
                range_flags(&args)
            );
        }
    }
    Ok(summary.exit_code())
}

fn range_flags(args: &RunArgs) -> String {
    let mut s = String::new();
    if let Some(f) = &args.from {
        s.push_str(&format!(" --from {f}"));
    }
    if let Some(t) = &args.to {
        s.push_str(&format!(" --to {t}"));
    }
    s
}

fn print_dry_run(backfill: &Backfill, statuses: &[state::PartitionStatus]) {
    let job = &backfill.job;
    let planned: HashSet<String> = backfill.partitions.iter().map(|p| p.name()).collect();
    let mut replaced = 0i64;
    println!(
        "dry run: {} · {} · {} partitions · concurrency {}",
        job.name,
        job.strategy.as_str(),
        backfill.partitions.len(),
        backfill.effective_concurrency()
    );
    for s in statuses
        .iter()
        .filter(|s| planned.contains(&s.partition.name()))
    {
        let rows = s.rows().map_or("-".to_string(), |n| n.to_string());
        replaced += s.rows_now.unwrap_or(0);
        println!(
            "  {} {} {:<9} rows now {rows}",
            s.partition.name(),
            s.state.glyph(),
            s.state.name()
        );
    }
    match job.strategy {
        crate::config::Strategy::ReplacePartition => println!(
            "would replace {replaced} rows: per partition, in one transaction, DELETE its window of {} and INSERT the job's rows",
            job.target
        ),
        crate::config::Strategy::MergeKey => println!(
            "would merge each window's rows into {} by ({}), one window at a time, oldest first",
            job.target,
            job.unique_key
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// How run events are shown.
enum Progress {
    Json,
    /// The bar, and how many partitions failed so far.
    Bar(ProgressBar, usize),
    Lines,
}

impl Progress {
    fn new(json: bool, total: u64) -> Progress {
        if json {
            Progress::Json
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:30} {pos}/{len} partitions · {elapsed} · ETA {eta} · {msg}",
            ) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            Progress::Bar(bar, 0)
        } else {
            Progress::Lines
        }
    }

    fn show(&mut self, event: &Event) {
        match self {
            Progress::Json => {
                if let Ok(line) = serde_json::to_string(event) {
                    println!("{line}");
                }
            }
            Progress::Bar(bar, failed) => match event {
                Event::PartitionStarted { partition, .. } => {
                    let failures = match *failed {
                        0 => String::new(),
                        n => format!("{n} failed · "),
                    };
                    bar.set_message(format!("{failures}{partition}"));
                }
                Event::PartitionSucceeded { .. } => bar.inc(1),
                Event::PartitionFailed {
                    will_retry: false, ..
                } => {
                    *failed += 1;
                    bar.println(describe(event).unwrap_or_default());
                    bar.inc(1);
                }
                Event::PartitionFailed { .. } => bar.println(describe(event).unwrap_or_default()),
                _ => {}
            },
            Progress::Lines => {
                if let Some(line) = describe(event) {
                    eprintln!("{line}");
                }
            }
        }
    }

    fn finish(self) {
        if let Progress::Bar(bar, _) = self {
            bar.finish_and_clear();
        }
    }
}

/// A plain line for an event worth a line of its own.
fn describe(event: &Event) -> Option<String> {
    Some(match event {
        Event::RunStarted {
            job,
            partitions,
            concurrency,
            ..
        } => format!(
            "{job}: {} partitions, concurrency {concurrency}",
            partitions.len()
        ),
        Event::PartitionSucceeded {
            partition,
            rows_deleted,
            rows_inserted,
            rows_updated,
            rows_after,
            duration_ms,
            content_changed,
            ..
        } => format!(
            "{partition} {} · deleted {rows_deleted} → inserted {rows_inserted}{} · {:.1} s · {}",
            if *rows_after > 0 {
                "■ loaded"
            } else {
                "○ empty"
            },
            if *rows_updated > 0 {
                format!(", updated {rows_updated}")
            } else {
                String::new()
            },
            *duration_ms as f64 / 1000.0,
            if *content_changed {
                "content changed"
            } else {
                "content unchanged"
            }
        ),
        Event::PartitionFailed {
            partition,
            attempt,
            error,
            will_retry,
            ..
        } => format!(
            "{partition} ✗ failed (attempt {attempt}{}) · {error}",
            if *will_retry { ", will retry" } else { "" }
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
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
             --concurrency 3 --through-latest --reason 'it'\\''s the refunds; re-run' --dry-run --json"
        );
        let again = parse(&shell_split(&line)[1..]);
        assert_eq!(format!("{again:?}"), format!("{args:?}"));
    }

    #[test]
    fn a_bare_run_prints_only_the_job() {
        let args = parse(&["run".to_string(), "dim_customers".to_string()]);
        assert_eq!(args.command_line(), "idem run dim_customers");
    }
}
