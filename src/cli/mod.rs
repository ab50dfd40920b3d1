//! Headless commands: each returns how the process ends ([`Exit`]: success,
//! some partitions failed, usage or config error, cancelled).

mod advice;
mod attempt_log;
mod diff;
mod docs;
mod downstream;
mod dry_run;
mod import_dbt;
mod init;
mod lint;
mod output;
mod report;
mod retired_names;
mod run;
mod run_args;
mod run_log;
mod run_not_started;
mod run_progress;
mod status;
mod verify;

use std::io::IsTerminal;
use std::path::Path;

pub use attempt_log::log;
pub use diff::diff;
pub use docs::{completions, man};
pub use import_dbt::import_dbt;
pub use init::init;
pub use lint::lint;
pub use report::{Ended, RunReport, runs_left_by_the_console};
pub use run::{CONFIRM_ABOVE, run};
pub use run_args::{RunArgs, config_from_the_root};
pub use run_log::run_log;
pub use status::{StatusArgs, StatusFormat, jobs, status};
pub use verify::verify;

use crate::config::{self, Config, Job};
use crate::exit::Exit;

/// The config read when neither `--config` nor `IDEM_CONFIG` names one.
pub const DEFAULT_CONFIG: &str = "idem.toml";

/// `idem config path`: where the user config (theme, keys) is read from.
pub fn config_path() -> Exit {
    let print = || -> Result<Exit, Stop> {
        let path = crate::user_config::path().ok_or_else(|| {
            Stop::usage("no user config directory: neither XDG_CONFIG_HOME (an absolute path) nor HOME is set")
        })?;
        outln!("{}", path.display());
        Ok(Exit::Ok)
    };
    print().unwrap_or_else(Stop::report)
}
use crate::partition::{Partition, RangeEnd};
use crate::state::LoadState;
use crate::warehouse::Warehouse;
use output::{noteln, outln};
use tokio_util::sync::CancellationToken;

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
        noteln!("idem: {}", self.message);
        self.code
    }
}

pub fn load_config(path: &Path) -> Result<Config, Stop> {
    if !path.exists() {
        let place = if path.parent().is_none_or(|p| p.as_os_str().is_empty()) {
            format!("no {} here", path.display())
        } else {
            format!("no config at {}", path.display())
        };
        return Err(Stop::usage(format!(
            "{place}; run `idem init URL` to write one for your warehouse, `idem demo` to try idem on demo data, or pass --config PATH"
        )));
    }
    let config = config::load(path).map_err(|e| Stop::usage(e.to_string()))?;
    crate::lineage::Lineage::of(&config).map_err(|e| Stop::usage(e.to_string()))?;
    Ok(config)
}

/// Says, on stderr, that a config has no jobs and how to get some: a
/// table's header over nothing would leave the reader to guess why.
pub fn note_no_jobs(config: &Config) {
    if config.jobs.is_empty() {
        noteln!(
            "idem: no jobs in {}: add a [[jobs]] table per load (see the README's Configuration), or let `idem init URL --config candidates.toml` write the warehouse's dated tables as candidate jobs to copy from",
            config.path.display()
        );
    }
}

/// The config's job graph, SQL read and table names compared as the
/// connected `warehouse` reads and compares them (a MariaDB/MySQL server
/// may read `"fct"` as a table, and fold names); a cycle is a config
/// error, even one that only the server's reading closes.
pub fn lineage(config: &Config, warehouse: &Warehouse) -> Result<crate::lineage::Lineage, Stop> {
    crate::lineage::Lineage::comparing(config, warehouse.syntax(), warehouse.table_names())
        .map_err(|e| Stop::usage(e.to_string()))
}

/// A connection that creates nothing: a run makes idem's ledger itself
/// ([`Warehouse::make_ledger`]) once it knows it may write.
pub async fn connect_to_read(config: &Config, max_connections: u32) -> Result<Warehouse, Stop> {
    read_connection(config, max_connections)
        .await
        .map_err(|e| connect_stop(config, &e))
}

/// [`connect_to_read`], its error as the warehouse gave it.
pub async fn read_connection(
    config: &Config,
    max_connections: u32,
) -> Result<Warehouse, crate::warehouse::WarehouseError> {
    let warehouse = Warehouse::connect_to_read(&config.warehouse, max_connections).await?;
    if let Some(note) = crate::clock::skew_note(crate::clock::warehouse_ahead()) {
        noteln!("idem: note: {note}");
    }
    Ok(warehouse)
}

/// Why a connection failed. A missing SQLite database is named by its
/// whole path: a relative one is read from the current directory, not the
/// config's, and when the config's folder has the file that was not found
/// here, that is most likely the one meant.
fn connect_stop(config: &Config, e: &crate::warehouse::WarehouseError) -> Stop {
    use crate::warehouse::WarehouseError::NoDatabaseFile;
    match e {
        NoDatabaseFile { url, file } => {
            let tried = std::path::absolute(file).unwrap_or_else(|_| file.into());
            let named = NoDatabaseFile {
                url: url.clone(),
                file: tried.display().to_string(),
            };
            let beside = beside_config(config, Path::new(file)).unwrap_or_default();
            Stop::failed(format!("{named}{beside}"))
        }
        _ => Stop::failed(e.to_string()),
    }
}

/// `; there is one beside the config, at …` for a relative SQLite path
/// that names a file in the config's folder and not in the current one.
fn beside_config(config: &Config, file: &Path) -> Option<String> {
    if file.is_absolute() {
        return None;
    }
    let dir = std::path::absolute(config.path.parent()?).ok()?;
    let there = dir.join(file);
    let here = std::path::absolute(file).ok()?;
    (there != here && there.exists()).then(|| {
        format!(
            "; there is one beside the config, at {}: a relative path is read from the current directory, not the config's; run idem from {}, or write the whole path, url = \"sqlite://{}\"",
            there.display(),
            dir.display(),
            there.display()
        )
    })
}

/// A job's partition states, read as every command reads them. Reading can
/// wait on locks other sessions hold on the target (up to `lock_timeout`);
/// after a moment the operator is told what idem is waiting on.
pub async fn read_states(
    warehouse: &Warehouse,
    config: &Config,
    lineage: &crate::lineage::Lineage,
    job: &Job,
    now: chrono::NaiveDateTime,
) -> Result<Vec<crate::state::PartitionStatus>, Stop> {
    let scope = Default::default();
    let states = read_states_scoped(warehouse, config, lineage, job, now, &scope).await?;
    Ok(states.statuses)
}

/// [`read_states`] of a range of partitions (see [`crate::state::StatusScope`]),
/// with the target's rows in no partition.
pub async fn read_states_scoped(
    warehouse: &Warehouse,
    config: &Config,
    lineage: &crate::lineage::Lineage,
    job: &Job,
    now: chrono::NaiveDateTime,
    scope: &crate::state::StatusScope,
) -> Result<crate::state::JobStates, Stop> {
    let nothing_running = Default::default();
    let read = crate::state::job_status_in(
        warehouse,
        config,
        lineage,
        job,
        now,
        &nothing_running,
        scope,
    );
    let result = crate::state::noticing_slow(read, || {
        noteln!(
            "idem: {}",
            crate::state::slow_read_note(job, warehouse.config().lock_timeout)
        )
    })
    .await;
    result.map_err(|e| Stop::failed(format!("{}: {e}", job.name)))
}

/// A token that Ctrl-C, SIGTERM (an orchestrator or service manager stopping
/// the command) or SIGHUP (its terminal gone) cancels; `stopping` says what
/// that does. A second signal quits at once.
/// Signals this close together are one request to stop.
const SAME_REQUEST: std::time::Duration = std::time::Duration::from_millis(500);

pub fn cancel_on_signal(stopping: &'static str) -> CancellationToken {
    watch_signals(stopping, None)
}

/// A command's signal handling from its first line, for a run: until
/// [`OnSignal::begin`], nothing has been written (it is connecting, setting
/// up the ledger, previewing or asking), and a signal ends the command at
/// once, "cancelled, nothing was run", exit 130; from then on a signal
/// cancels the run's token, as [`cancel_on_signal`].
pub struct OnSignal {
    cancel: CancellationToken,
    begun: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// What a signal before the run begins does besides ending the command:
/// `say` is given the words stderr says (`idem run --json` writes its
/// `run_not_started` event with them).
struct BeforeBegin {
    begun: std::sync::Arc<std::sync::atomic::AtomicBool>,
    say: Box<dyn Fn(&str) + Send>,
    /// What stderr says of it, after the signal's name.
    why: &'static str,
}

/// A command that only reads (`status`, `jobs`, `log`, `diff`): a signal
/// ends it at once, saying so, exit 130, however long a read has waited
/// (a lock, a warehouse that stopped answering). Killed by the default
/// handler it said nothing, and SIGTERM's exit was 143.
pub fn end_on_signal() {
    let never_begins = BeforeBegin {
        begun: std::sync::Arc::default(),
        say: Box::new(|_| {}),
        why: "cancelled; it only reads, nothing was changed",
    };
    watch_signals("", Some(never_begins));
}

impl OnSignal {
    pub fn install(stopping: &'static str, say: impl Fn(&str) + Send + 'static) -> OnSignal {
        let begun = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let before = BeforeBegin {
            begun: begun.clone(),
            say: Box::new(say),
            why: "cancelled, nothing was run",
        };
        OnSignal {
            cancel: watch_signals(stopping, Some(before)),
            begun,
        }
    }

    /// The run begins: a signal from now on cancels it (the token).
    pub fn begin(&self) -> &CancellationToken {
        self.begun.store(true, std::sync::atomic::Ordering::SeqCst);
        &self.cancel
    }
}

/// Listens for Ctrl-C, SIGTERM and SIGHUP. The handlers are in place when
/// this returns, so a signal a moment later is never the default one that
/// ends the process without a word (exit 143 or 129). While `begun` is
/// false, a signal ends the command at once: nothing has run.
fn watch_signals(stopping: &'static str, before: Option<BeforeBegin>) -> CancellationToken {
    use tokio::signal::unix::{SignalKind, signal};
    let cancel = CancellationToken::new();
    let on_signal = cancel.clone();
    let (Ok(mut interrupt), Ok(mut term), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return cancel;
    };
    tokio::spawn(async move {
        let mut next = async || -> Option<&'static str> {
            tokio::select! {
                r = interrupt.recv() => r.map(|()| "Ctrl-C"),
                r = term.recv() => r.map(|()| "SIGTERM"),
                r = hangup.recv() => r.map(|()| "SIGHUP"),
            }
        };
        if let Some(what) = next().await {
            if let Some(before) = before
                .as_ref()
                .filter(|b| !b.begun.load(std::sync::atomic::Ordering::SeqCst))
            {
                let why = format!("{what}: {}", before.why);
                (before.say)(&why);
                noteln!("idem: {why}");
                std::process::exit(Exit::Cancelled.code().into());
            }
            // Any second signal quits; the hint names the one received, as
            // Ctrl-C cannot be pressed for a run an orchestrator stopped
            // (SIGTERM) or whose terminal is gone (SIGHUP).
            noteln!("idem: {what}: cancelling: {stopping} ({what} again to quit now)");
            on_signal.cancel();
            let first = std::time::Instant::now();
            while next().await.is_some() {
                // One request often arrives twice at once (`timeout` signals
                // the command, then its process group): a repeat within
                // half a second is the same request, not a second one.
                if first.elapsed() >= SAME_REQUEST {
                    std::process::exit(Exit::Cancelled.code().into());
                }
            }
        }
    });
    cancel
}

/// The job of `config` named `name`; another name is a usage error that
/// lists the jobs, after the one a typo most likely meant.
pub fn find_job<'a>(config: &'a Config, name: &str) -> Result<&'a Job, Stop> {
    config.jobs.iter().find(|j| j.name == name).ok_or_else(|| {
        let names: Vec<&str> = config.jobs.iter().map(|j| j.name.as_str()).collect();
        Stop::usage(format!(
            "no job named \"{name}\" in {}; {}jobs: {}",
            config.path.display(),
            crate::config::did_you_mean_job(name, &names),
            if names.is_empty() {
                "(none)".into()
            } else {
                names.join(", ")
            }
        ))
    })
}

/// Parses a list of state names (`--only`, `--state`); each must be one of
/// `allowed`, and the message lists them all.
pub fn parse_states(
    flag: &str,
    names: &[String],
    allowed: &[LoadState],
) -> Result<Vec<LoadState>, Stop> {
    names
        .iter()
        .map(|name| {
            let state = LoadState::parse(name.trim());
            state.filter(|st| allowed.contains(st)).ok_or_else(|| {
                let valid: Vec<&str> = allowed.iter().map(|st| st.name()).collect();
                let valid = valid.join(", ");
                Stop::usage(match state {
                    // A state, only not one this flag takes (a run's --only).
                    Some(st) => format!(
                        "{flag} \"{}\" is a state, but not one a run takes: {}; expected one or more of {valid}",
                        name.trim(),
                        never_run(st)
                    ),
                    None => {
                        format!("{flag} \"{name}\" is not a state; expected one or more of {valid}")
                    }
                })
            })
        })
        .collect()
}

/// Why partitions in `state` are never chosen for a run.
fn never_run(state: LoadState) -> &'static str {
    match state {
        LoadState::Running => "a running partition is being loaded now, by this process or another",
        LoadState::Future => {
            "a future partition's window has not ended (to load one early, name it with --from/--to and --allow-incomplete)"
        }
        _ => "partitions in it are never run",
    }
}

/// The name [`parse_bound`] gives a command's one partition, read as both
/// ends of a range of one.
pub const ONE_PARTITION: &str = "PARTITION";

/// Parses `--from` / `--to` for a job's grain; messages name the bound
/// as `flag` (none: as typed alone). An instant given as `--to` names the
/// partition that ends at it.
pub fn parse_bound(
    job: &Job,
    flag: &str,
    text: Option<&str>,
    end: RangeEnd,
) -> Result<Option<Partition>, Stop> {
    text.map(|text| parse_end(job, flag, text, end, end == RangeEnd::To))
        .transpose()
}

/// A command's one partition, or a coarser name that covers several of
/// them (a day of an hourly job): its first and last. Messages name it as
/// `name` ([`ONE_PARTITION`], or nothing where it came typed alone); an
/// instant names the partition that begins at it.
pub fn parse_partition(job: &Job, name: &str, text: &str) -> Result<(Partition, Partition), Stop> {
    Ok((
        parse_end(job, name, text, RangeEnd::From, false)?,
        parse_end(job, name, text, RangeEnd::To, false)?,
    ))
}

/// One end of a range, for [`parse_bound`] and [`parse_partition`].
fn parse_end(
    job: &Job,
    flag: &str,
    text: &str,
    end: RangeEnd,
    instant_ends_before: bool,
) -> Result<Partition, Stop> {
    if let Some(at) = crate::partition::parse_instant(text.trim()) {
        return instant_bound(job, flag, text.trim(), at, instant_ends_before);
    }
    let flag = if flag.is_empty() {
        String::new()
    } else {
        format!("{flag} ")
    };
    // A day of a monthly job would silently stand for its whole month.
    if let Some(meant) = Partition::meant_by_finer(job.grain, text) {
        return Err(Stop::usage(format!(
            "{flag}{} is not a {} partition; did you mean {meant}? ({} has {} grain)",
            text.trim(),
            job.grain,
            job.name,
            job.grain
        )));
    }
    Partition::parse(job.grain, text, end)
        .map(|p| within_the_job(job, text, p, end))
        .ok_or_else(|| {
            if let Some(what) = crate::partition::impossible_date(text.trim()) {
                return Stop::usage(format!(
                    "{flag}\"{text}\" has the right form, but there is no such {what}: {}",
                    crate::partition::calendar_fault(text.trim())
                ));
            }
            Stop::usage(format!(
                "{flag}\"{text}\" is not a partition of {} ({} grain); expected {}",
                job.name,
                job.grain,
                job.grain.name_format()
            ))
        })
}

/// A bound given as an instant with its UTC offset, as an orchestrator
/// renders a data interval (`--from {{ data_interval_start }} --to {{
/// data_interval_end }}`): the interval is half-open, as partitions are, so
/// `--from` names the partition that begins at it and `--to`
/// (`ends_before`) the one that ends at it. An instant inside a partition
/// is refused, naming it in UTC: a local midnight is no day's start, and
/// taking the partition around it would load a window that was not asked.
fn instant_bound(
    job: &Job,
    flag: &str,
    text: &str,
    at: chrono::NaiveDateTime,
    ends_before: bool,
) -> Result<Partition, Stop> {
    let p = Partition::containing(job.grain, at);
    if p.start != at {
        let given = format!("{flag} {text}");
        return Err(Stop::usage(format!(
            "{} is {} UTC, inside {}'s {} partition {p}: an instant must be where a partition begins (partitions are UTC windows); {}",
            given.trim_start(),
            at.format("%Y-%m-%d %H:%M:%S"),
            job.name,
            job.grain,
            if ends_before {
                format!("the range ending with {p} ends at {} UTC", p.next().start)
            } else {
                format!("{p} begins at {} UTC", p.start)
            }
        )));
    }
    Ok(if ends_before { p.prev() } else { p })
}

/// A coarser name that the job's `start` or `end` cuts stands for the
/// job's partitions in it: `--from 2026-01 --to 2026-01` of a daily job
/// that ends on the 4th is January as far as the job goes, in every command
/// (QA: `run` refused it, naming the 31st, where `status` showed the four
/// days). A name of the job's own grain, or a coarser one wholly outside the
/// job, is kept as it is, for the range check to refuse.
fn within_the_job(job: &Job, text: &str, p: Partition, end: RangeEnd) -> Partition {
    let Some((named_start, named_grain)) = crate::partition::parse_any(text.trim()) else {
        return p;
    };
    if named_grain <= job.grain {
        return p;
    }
    let named_end = named_grain.next(named_start);
    match (end, job.end) {
        (RangeEnd::From, _) if named_end > job.start.start => p.max(job.start),
        (RangeEnd::To, Some(last)) if named_start <= last.start => p.min(last),
        _ => p,
    }
}

/// What `idem run` tells of a bound [`within_the_job`] moved, given as
/// `text` and read as `p`: that the run begins at the job's start or ends
/// at its end, not where the name alone would.
pub(crate) fn moved_to_the_job(
    job: &Job,
    flag: &str,
    text: &str,
    p: Partition,
    end: RangeEnd,
) -> Option<String> {
    let named = Partition::parse(job.grain, text, end)?;
    let given = format!("{flag} {}", text.trim());
    let given = given.trim_start();
    (named != p).then(|| match end {
        RangeEnd::From => format!(
            "{given} begins before {}'s start: the range begins at {p}",
            job.name
        ),
        RangeEnd::To => format!(
            "{given} ends after {}'s end: the range ends at {p}",
            job.name
        ),
    })
}

/// `idem` without a command: the config the console opens on, which must be
/// valid (checked before the terminal is touched), and a terminal.
pub fn console_config(config_path: &Path) -> Result<Config, Stop> {
    let config = load_config(config_path)?;
    if let Some(why) = console_cannot_draw() {
        return Err(Stop::usage(format!(
            "{why}; for scripts use `idem run`, `idem status` or `idem jobs`"
        )));
    }
    Ok(config)
}

/// Why the console cannot be drawn here, if it cannot: stdout is no
/// terminal, or the terminal says it takes no escape sequences (`TERM=dumb`:
/// an editor's shell buffer, a CI log), where the console would be a
/// screenful of raw escapes.
fn console_cannot_draw() -> Option<&'static str> {
    if !std::io::stdout().is_terminal() {
        return Some("the console needs a terminal");
    }
    if std::env::var("TERM").is_ok_and(|term| term.trim() == "dumb") {
        return Some(
            "the console cannot draw on this terminal (TERM=dumb): open it in a terminal emulator",
        );
    }
    None
}

/// `idem demo`: creates the demo warehouse. With a terminal it answers the
/// demo and the config for the console to open on; without one it tells
/// where the demo is and how to open it, and answers `None`.
pub async fn demo(path: &Path) -> Result<Option<(crate::demo::Demo, Config)>, Stop> {
    if let Some(why) = crate::demo::occupied(path) {
        return Err(Stop::usage(format!(
            "not making the demo in {}: {why}. Nothing was changed; make the demo in a new or empty folder: idem demo --path NEW_FOLDER",
            path.display()
        )));
    }
    noteln!("creating the demo warehouse in {} …", path.display());
    let started = std::time::Instant::now();
    let demo = crate::demo::create(path, &|step| noteln!("  {step} …"))
        .await
        .map_err(|e| Stop::failed(format!("could not create the demo: {e:#}")))?;
    noteln!("  done in {:.1} s", started.elapsed().as_secs_f64());
    if let Some(why) = console_cannot_draw() {
        if std::io::stdout().is_terminal() {
            noteln!("idem: {why}");
        }
        print_demo_commands(&demo)?;
        return Ok(None);
    }
    let config = load_config(&demo.config)?;
    Ok(Some((demo, config)))
}

/// After the console closed on the demo: where it stays.
pub fn demo_closed(demo: &crate::demo::Demo) {
    noteln!(
        "the demo stays in {}; open it again with: {} --config {}",
        demo.dir.display(),
        program(),
        run_args::shell_word(&demo.config.display().to_string())
    );
}

/// How to call this program in a printed command so that it works as
/// printed: `idem` when that is what the PATH finds, else its full path (as
/// after `cargo run`, before `cargo install`).
pub fn program() -> String {
    let Ok(me) = std::env::current_exe().and_then(|p| p.canonicalize()) else {
        return "idem".into();
    };
    let on_path = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            dir.join("idem")
                .canonicalize()
                .is_ok_and(|found| found == me)
        })
    });
    if on_path {
        "idem".into()
    } else {
        me.display().to_string()
    }
}

/// Where the demo is and the commands to try on it.
fn print_demo_commands(demo: &crate::demo::Demo) -> Result<(), Stop> {
    let config = run_args::shell_word(&demo.config.display().to_string());
    let idem = program();
    outln!("demo warehouse ready: {}", demo.database.display());
    outln!("config: {config}");
    outln!("");
    outln!("  {idem} --config {config}            # the console");
    outln!("  {idem} --config {config} jobs");
    outln!("  {idem} --config {config} status fct_orders");
    outln!("  {idem} --config {config} run fct_orders --only failed,missing");
    Ok(())
}

/// A partition asked of `idem log` or `idem diff` that no partition of the
/// job's lies in (a year off, one after the job's end or not begun) is a
/// mistyped one, as `run --from` says of it, not an empty answer ("no
/// attempts recorded"); `so` says what follows for the command. A coarser
/// name the job's start or end cuts still shows the partitions in it.
pub(crate) fn outside_the_job(
    job: &Job,
    first: Partition,
    last: Partition,
    asked: &str,
    so: &str,
) -> Result<(), Stop> {
    let latest = job.latest_partition(crate::partition::now_utc());
    // Said before connecting: one the warehouse's clock may have begun is
    // not refused by this host's (`crate::clock::latest_unmeasured_now`).
    let latest_possible = job.latest_partition(crate::clock::latest_unmeasured_now().naive_utc());
    if last >= job.start && first <= latest_possible {
        return Ok(());
    }
    let through = if job.end == Some(latest) {
        latest.name()
    } else {
        format!("{}, the one open now", latest.name())
    };
    Err(Stop::usage(format!(
        "PARTITION {} is outside {}'s partitions ({} to {through}; {} grain, {}): {so}",
        asked.trim(),
        job.name,
        job.start.name(),
        job.grain,
        job.grain.name_format()
    )))
}
