//! The binary: parses the command line, then runs a headless command
//! (`cli`) or opens the console (`tui`) and maps how it ended to the exit
//! code. The headless commands never call into the console (which borrows
//! only their `RunArgs` grammar).
#![forbid(unsafe_code)]
// Errors are handled, not unwrapped, outside tests.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use idem::cli::{self, RunArgs, StatusArgs, StatusFormat};
use idem::exit::Exit;
use idem::lint::LintFormat;
use idem::tui::{self, Keymap};
use idem::user_config::UserConfig;

/// Re-run batch loads safely: see which partitions are failed, missing or
/// stale, and re-run them idempotently.
#[derive(Parser)]
#[command(name = "idem", version, about)]
struct Cli {
    /// The config file.
    #[arg(long, global = true, env = "IDEM_CONFIG", default_value = idem::cli::DEFAULT_CONFIG)]
    config: PathBuf,
    #[command(flatten)]
    console: ConsoleArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

/// How the console looks and listens: for `idem` and `idem demo` alone.
#[derive(Args)]
struct ConsoleArgs {
    /// The console's theme: default, light, colorblind, mono, or a theme
    /// file (else `theme` in the user config file, see `idem config path`).
    #[arg(long, env = "IDEM_THEME")]
    theme: Option<String>,
    /// Do not capture the mouse in the console.
    #[arg(long)]
    no_mouse: bool,
}

impl ConsoleArgs {
    /// These options, else those of `other` (typed before the command).
    fn or(self, other: ConsoleArgs) -> ConsoleArgs {
        ConsoleArgs {
            theme: self.theme.or(other.theme),
            no_mouse: self.no_mouse || other.no_mouse,
        }
    }

    /// The console's options: the flag or the environment first, then the
    /// user config file. A user config that cannot be read, or whose keys do
    /// not check, stops the console before it opens (exit 2).
    fn options(self) -> Result<tui::Options, cli::Stop> {
        let (user, keys) = match idem::user_config::path() {
            Some(path) => read_user_config(&path).map_err(cli::Stop::usage)?,
            None => (UserConfig::default(), Keymap::default()),
        };
        let asked = self.theme.filter(|t| !t.is_empty());
        let theme_from = match (&asked, &user.theme) {
            (None, Some(_)) => idem::user_config::path(),
            _ => None,
        };
        Ok(tui::Options {
            theme: user.theme(asked),
            theme_from,
            no_mouse: self.no_mouse,
            keys,
        })
    }
}

/// The user config file at `path` and the keymap its `[keys]` make; errors
/// name the file.
fn read_user_config(path: &Path) -> Result<(UserConfig, Keymap), String> {
    let user = UserConfig::read(path)?;
    let keys =
        Keymap::with_overrides(&user.keys).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((user, keys))
}

#[derive(Subcommand)]
enum Command {
    /// Create (or reset) the demo warehouse with data and history.
    Demo {
        /// Folder for the demo's warehouse and idem.toml.
        #[arg(long, default_value = "idem-demo")]
        path: PathBuf,
        #[command(flatten)]
        console: ConsoleArgs,
    },
    /// Backfill a job's partitions, headless.
    Run(RunArgs),
    /// States and row counts per partition.
    Status {
        /// Only this job.
        job: Option<String>,
        /// First partition shown (default: each job's first)
        #[arg(long)]
        from: Option<String>,
        /// Last partition shown, included (default: each job's latest)
        #[arg(long)]
        to: Option<String>,
        /// How to print the states: a table to read, or json or csv for
        /// scripts (a row per partition).
        #[arg(long, value_enum, default_value_t = StatusFormat::Table)]
        format: StatusFormat,
        /// Only partitions flagged as anomalies.
        #[arg(long)]
        anomalies: bool,
        /// Only partitions whose latest load the shrink guard refused (the
        /// source looked incomplete), with no success since.
        #[arg(long)]
        refused: bool,
        /// Only partitions in these states: running, failed, stale, vanished, unmanaged, loaded, empty, missing, future.
        #[arg(long, value_delimiter = ',')]
        state: Vec<String>,
        /// Count the rows each partition's SQL would write now (one read-only
        /// query per job) and flag partitions where that count differs from
        /// what their last load wrote: out of date. It compares the SQL's
        /// output rows, not the source's: late rows that change an aggregate's
        /// values but not its number of rows are not seen.
        #[arg(long)]
        reconcile: bool,
    },
    /// Prove a partition's load idempotent: run it twice, compare, roll back.
    Verify {
        /// The job, as named in the config.
        job: String,
        /// The partition to prove, e.g. 2026-06-04 (a coarser name proves
        /// each partition in it).
        partition: String,
    },
    /// What changed in a job's definition since a stale partition was loaded.
    Diff {
        /// The job, as named in the config.
        job: String,
        /// The stale partition whose load to compare with (default: the
        /// latest stale one; of a coarser name, the latest stale one in it).
        partition: Option<String>,
    },
    /// Jobs with a health summary.
    Jobs,
    /// Attempt history of a job, or of one partition.
    Log {
        /// The job, as named in the config.
        job: String,
        /// Only this partition's attempts, e.g. 2026-06-04 (a coarser name
        /// covers each partition in it).
        partition: Option<String>,
        /// The partition's run log instead: its last N lines (default 50), as
        /// runs on this machine wrote them under the state directory.
        #[arg(long, num_args = 0..=1, default_missing_value = "50", requires = "partition")]
        lines: Option<usize>,
    },
    /// Static checks for what breaks idempotency (exit 1 on errors).
    Lint {
        /// Only this job.
        job: Option<String>,
        /// How to print the findings.
        #[arg(long, value_enum, default_value_t = LintFormat::Table)]
        format: LintFormat,
        /// Only the checks of the SQL itself, without the warehouse.
        #[arg(long)]
        offline: bool,
    },
    /// Write a starter idem.toml (at --config) for a warehouse, with its
    /// dated tables as candidate jobs.
    Init {
        /// The warehouse: sqlite://PATH, postgres://… or mysql://…
        url: String,
        /// Overwrite the config if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Print idem jobs for dbt's incremental models (delete+insert, merge,
    /// microbatch) from a compiled target/manifest.json, e.g.
    /// `idem import-dbt target/manifest.json >> idem.toml`.
    ImportDbt {
        /// dbt's manifest.json, after `dbt compile`.
        manifest: PathBuf,
    },
    /// The user config file (default theme, keys): `idem config path` prints
    /// where it is read from.
    Config {
        #[command(subcommand)]
        what: ConfigCommand,
    },
    /// Print a shell completion script (e.g. `idem completions bash > /etc/bash_completion.d/idem`).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the man page, or a command's (e.g. `idem man run | man -l -`).
    Man {
        /// The command whose page to print (idem-COMMAND(1)); without one, idem(1).
        command: Option<String>,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print where the user config file is read from.
    Path,
}

/// The commands that read no idem.toml: `--config` is not listed in their
/// help, pages or completions (it stays global, so that `idem --config F
/// COMMAND` and `idem COMMAND --config F` both work for the others, and
/// `idem demo --config F` is refused with why).
const WITHOUT_CONFIG: [&str; 5] = ["demo", "import-dbt", "config", "completions", "man"];

/// The command line's definition: [`Cli`]'s, with `--config` hidden where
/// it is not taken and `idem man` completing command names.
fn command(cli: clap::Command) -> clap::Command {
    // A command that has the global argument already is not given it
    // again: these get it hidden (and pass it on to their own commands).
    let config = cli
        .get_arguments()
        .find(|a| a.get_id() == "config")
        .map(|a| a.clone().hide(true));
    // (`mut_subcommands`, not `mut_subcommand`, keeps their order.)
    let cli = match config {
        Some(config) => cli.mut_subcommands(|sc| {
            if WITHOUT_CONFIG.contains(&sc.get_name()) {
                sc.arg(config.clone())
            } else {
                sc
            }
        }),
        None => cli,
    };
    cli.mut_subcommands(|sc| match sc.get_name() {
        "man" => sc.mut_arg("command", |a| a.value_parser(CommandName)),
        _ => sc,
    })
}

/// The commands with a page of their own, as [`Command`] names them
/// (`tests/docs.rs` checks that completion offers every one after `idem man`).
const PAGES: [&str; 13] = [
    "demo",
    "run",
    "status",
    "verify",
    "diff",
    "jobs",
    "log",
    "lint",
    "init",
    "import-dbt",
    "config",
    "completions",
    "man",
];

/// `idem man COMMAND`: any text (`idem man` says which names it takes), with
/// the command names offered to completion.
#[derive(Clone)]
struct CommandName;

impl clap::builder::TypedValueParser for CommandName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            PAGES.into_iter().map(clap::builder::PossibleValue::new),
        ))
    }
}

/// `--theme` or `--no-mouse` typed before a headless command: the console's
/// options, which it does not take.
fn console_option_typed(matches: &clap::ArgMatches) -> Option<&'static str> {
    let typed = |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    match matches.subcommand_name() {
        None | Some("demo") => None,
        Some(_) if typed("theme") => Some("--theme"),
        Some(_) if typed("no_mouse") => Some("--no-mouse"),
        Some(_) => None,
    }
}

fn main() -> ExitCode {
    let matches = match command(Cli::command()).try_get_matches() {
        Ok(matches) => matches,
        // Help and version go to stdout, which may not take them (a full
        // disk): that is a failure, as for every command's output.
        Err(e) if !e.use_stderr() => match e.print() {
            Ok(()) => return ExitCode::SUCCESS,
            // A reader that stopped reading (`| head`) is no failure.
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                return ExitCode::SUCCESS;
            }
            Err(err) => {
                eprintln!("idem: cannot write to standard output: {err}");
                return ExitCode::from(1);
            }
        },
        Err(e) => e.exit(),
    };
    // Said, not refused: a cron line that carried one (earlier releases
    // took it silently) keeps loading.
    if let (Some(flag), Some(name)) = (console_option_typed(&matches), matches.subcommand_name()) {
        eprintln!(
            "idem: note: {flag} is an option of the console (`idem`, `idem demo`): `idem {name}` leaves it aside"
        );
    }
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // A headless command reads its config, and names it in the commands
    // it prints, from the root: its working directory may be gone by then.
    if cli
        .command
        .as_ref()
        .is_some_and(|c| !matches!(c, Command::Demo { .. }))
    {
        cli.config = cli::config_from_the_root(&cli.config);
    }
    // The demo writes its own config into --path: a --config typed with it
    // would be ignored, so it is refused (IDEM_CONFIG, set for other
    // commands, is not typed here and is left alone).
    let config_typed =
        matches.value_source("config") == Some(clap::parser::ValueSource::CommandLine);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("idem: cannot start the runtime: {e}");
            return Exit::Failed.into();
        }
    };
    let code = runtime.block_on(async {
        match cli.command {
            None => {
                let opened = cli.console.options().and_then(|options| {
                    cli::console_config(&cli.config).map(|config| (config, options))
                });
                match opened {
                    Ok((config, options)) => {
                        let path = config.path.clone();
                        console_exit(&path, tui::run(config, options).await)
                    }
                    Err(stop) => stop.report(),
                }
            }
            Some(Command::Demo { .. }) if config_typed => cli::Stop::usage(format!(
                "idem demo does not take --config ({}): it writes its own idem.toml into --path (default ./idem-demo); to open a config of your own, run `idem --config {}`",
                cli.config.display(),
                cli.config.display()
            ))
            .report(),
            // `idem --theme light demo` is `idem demo --theme light`.
            Some(Command::Demo { path, console }) => match console.or(cli.console).options() {
                Ok(options) => match cli::demo(&path).await {
                    Ok(Some((demo, config))) => {
                        let path = config.path.clone();
                        let code = console_exit(&path, tui::run(config, options).await);
                        cli::demo_closed(&demo);
                        code
                    }
                    Ok(None) => Exit::Ok,
                    Err(stop) => stop.report(),
                },
                Err(stop) => stop.report(),
            },
            Some(Command::Run(args)) => cli::run(&cli.config, args).await,
            Some(Command::Status {
                job,
                from,
                to,
                format,
                anomalies,
                refused,
                state,
                reconcile,
            }) => {
                let args = StatusArgs {
                    job,
                    from,
                    to,
                    format,
                    anomalies_only: anomalies,
                    refused_only: refused,
                    states: state,
                    reconcile,
                };
                cli::status(&cli.config, args).await
            }
            Some(Command::Verify { job, partition }) => {
                cli::verify(&cli.config, &job, &partition).await
            }
            Some(Command::Diff { job, partition }) => {
                cli::diff(&cli.config, &job, partition.as_deref()).await
            }
            Some(Command::Jobs) => cli::jobs(&cli.config).await,
            Some(Command::Log {
                job,
                partition,
                lines,
            }) => match lines {
                Some(n) => cli::run_log(&cli.config, &job, partition.as_deref(), n).await,
                None => cli::log(&cli.config, &job, partition.as_deref()).await,
            },
            Some(Command::Lint {
                job,
                format,
                offline,
            }) => cli::lint(&cli.config, job.as_deref(), format, offline).await,
            Some(Command::Init { url, force }) => cli::init(&cli.config, &url, force).await,
            Some(Command::ImportDbt { manifest }) => cli::import_dbt(&manifest),
            Some(Command::Config {
                what: ConfigCommand::Path,
            }) => cli::config_path(),
            Some(Command::Completions { shell }) => cli::completions(command(Cli::command()), shell),
            Some(Command::Man { command: page }) => cli::man(
                command(Cli::command().disable_help_subcommand(true)),
                page.as_deref(),
            ),
        }
    });
    code.into()
}

/// How the process ends after a console session of the config at
/// `config`, having said what became of the runs it left in flight.
fn console_exit(config: &std::path::Path, outcome: tui::Outcome) -> Exit {
    let left = |left: tui::LeftInFlight, quiet| {
        cli::runs_left_by_the_console(config, &left.reports, &left.unended, quiet)
    };
    match outcome {
        tui::Outcome::Quit(l) => left(l, Exit::Ok),
        tui::Outcome::Terminated(l) => left(l, Exit::Cancelled),
        tui::Outcome::NoTerminal(e) => {
            cli::Stop::failed(format!("cannot open the terminal: {e}")).report()
        }
        tui::Outcome::Broken(e) => cli::Stop::failed(format!("the console stopped: {e}")).report(),
    }
}
