//! The binary: parses the command line, then runs a headless command
//! (`cli`) or opens the console (`tui`) and maps how it ended to the exit
//! code. The two front ends never call each other.
#![forbid(unsafe_code)]

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use idem::cli::{self, RunArgs, StatusArgs, StatusFormat};
use idem::exit::Exit;
use idem::lint::LintFormat;
use idem::tui;

/// Re-run batch loads safely: see which partitions are failed, missing or
/// stale, and re-run them idempotently.
#[derive(Parser)]
#[command(name = "idem", version, about)]
struct Cli {
    /// The config file.
    #[arg(long, global = true, env = "IDEM_CONFIG", default_value = "idem.toml")]
    config: PathBuf,
    /// The console's theme: default, light, colorblind, mono, or a theme file.
    #[arg(long, global = true, env = "IDEM_THEME")]
    theme: Option<String>,
    /// Do not capture the mouse in the console.
    #[arg(long, global = true)]
    no_mouse: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Create (or reset) the demo warehouse with data and history.
    Demo {
        /// Folder for the demo's warehouse and idem.toml.
        #[arg(long, default_value = "idem-demo")]
        path: PathBuf,
    },
    /// Backfill a job's partitions, headless.
    Run(RunArgs),
    /// States and row counts per partition.
    Status {
        /// Only this job.
        job: Option<String>,
        #[arg(long)]
        from: Option<String>,
        #[arg(long)]
        to: Option<String>,
        #[arg(long, value_enum, default_value_t = StatusFormat::Table)]
        format: StatusFormat,
        /// Only partitions flagged as anomalies.
        #[arg(long)]
        anomalies: bool,
    },
    /// Prove a partition's load idempotent: run it twice, compare, roll back.
    Verify { job: String, partition: String },
    /// What changed in a job's definition since a stale partition was loaded.
    Diff {
        job: String,
        partition: Option<String>,
    },
    /// Jobs with a health summary.
    Jobs,
    /// Attempt history of a job, or of one partition.
    Log {
        job: String,
        partition: Option<String>,
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    let ui = idem::tui::Options {
        theme: cli.theme.clone(),
        no_mouse: cli.no_mouse,
    };
    let code = runtime.block_on(async {
        match cli.command {
            None => console(&cli.config, ui).await,
            Some(Command::Demo { path }) => demo(&path, ui).await,
            Some(Command::Run(args)) => cli::run(&cli.config, args).await,
            Some(Command::Status {
                job,
                from,
                to,
                format,
                anomalies,
            }) => {
                let args = StatusArgs {
                    job,
                    from,
                    to,
                    format,
                    anomalies_only: anomalies,
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
            Some(Command::Log { job, partition }) => {
                cli::log(&cli.config, &job, partition.as_deref()).await
            }
            Some(Command::Lint {
                job,
                format,
                offline,
            }) => cli::lint(&cli.config, job.as_deref(), format, offline).await,
        }
    });
    code.into()
}

/// `idem` without a command opens the console on the config, which must be
/// valid (checked before the terminal is touched) and needs a terminal.
async fn console(config_path: &Path, ui: tui::Options) -> Exit {
    let config = match cli::load_config(config_path) {
        Ok(c) => c,
        Err(stop) => return stop.report(),
    };
    if !std::io::stdout().is_terminal() {
        return cli::Stop::usage("the console needs a terminal; for scripts use `idem run`, `idem status` or `idem jobs`").report();
    }
    console_exit(tui::run(config, ui).await)
}

/// How the process ends after a console session.
fn console_exit(outcome: tui::Outcome) -> Exit {
    match outcome {
        tui::Outcome::Quit => Exit::Ok,
        tui::Outcome::NoTerminal(e) => {
            cli::Stop::failed(format!("cannot open the terminal: {e}")).report()
        }
        tui::Outcome::Broken(e) => cli::Stop::failed(format!("the console stopped: {e}")).report(),
    }
}

/// `idem demo`: creates the demo warehouse and opens the console on it; without
/// a terminal it tells where the demo is and how to open it.
async fn demo(path: &Path, ui: tui::Options) -> Exit {
    eprintln!("creating the demo warehouse in {} …", path.display());
    let demo = match idem::demo::create(path).await {
        Ok(demo) => demo,
        Err(e) => return cli::Stop::failed(format!("could not create the demo: {e:#}")).report(),
    };
    if !std::io::stdout().is_terminal() {
        println!("demo warehouse ready: {}", demo.database.display());
        println!("config: {}", demo.config.display());
        println!();
        println!(
            "  idem --config {}            # the console",
            demo.config.display()
        );
        println!("  idem --config {} jobs", demo.config.display());
        println!(
            "  idem --config {} status fct_orders",
            demo.config.display()
        );
        println!(
            "  idem --config {} run fct_orders --only failed,missing",
            demo.config.display()
        );
        return Exit::Ok;
    }
    match cli::load_config(&demo.config) {
        Ok(config) => {
            let code = console_exit(tui::run(config, ui).await);
            println!(
                "the demo stays in {}; open it again with: idem --config {}",
                demo.dir.display(),
                demo.config.display()
            );
            code
        }
        Err(stop) => stop.report(),
    }
}
