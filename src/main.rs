#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use idem::cli::{self, RunArgs, StatusArgs, StatusFormat};
use idem::exit::Exit;
use idem::lint::LintFormat;

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
            None => cli::console(&cli.config, ui).await,
            Some(Command::Demo { path }) => cli::demo(&path, ui).await,
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
