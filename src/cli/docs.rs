//! `idem completions SHELL` and `idem man [COMMAND]`: shell completions and
//! man pages, generated from the same CLI definition that parses the
//! arguments, so they never fall behind it.

use clap_complete::Shell;

use super::Stop;
use super::output::outln;
use crate::exit::Exit;

/// Prints the completion script of `shell` for the CLI `cli`.
pub fn completions(mut cli: clap::Command, shell: Shell) -> Exit {
    let mut script = Vec::new();
    let name = cli.get_name().to_string();
    clap_complete::generate(shell, &mut cli, name, &mut script);
    print(&script).unwrap_or_else(Stop::report)
}

/// Prints the man page of the CLI, or of one of its commands.
pub fn man(cli: clap::Command, command: Option<&str>) -> Exit {
    page(cli, command).unwrap_or_else(Stop::report)
}

fn page(mut cli: clap::Command, command: Option<&str>) -> Result<Exit, Stop> {
    // Built, so that a command's page lists the global options too.
    cli.build();
    let name = cli.get_name().to_string();
    let cmd = match command {
        None => cli,
        Some(wanted) => {
            let names: Vec<String> = cli
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .filter(|n| n != "help")
                .collect();
            let found = cli
                .get_subcommands()
                .find(|c| c.get_name() == wanted && wanted != "help")
                .cloned();
            let Some(sub) = found else {
                return Err(Stop::usage(format!(
                    "\"{wanted}\" is not a command; expected one of {}",
                    names.join(", ")
                )));
            };
            // Pages of commands are named `idem-run(1)`, as git's are.
            let full = format!("{name}-{wanted}");
            sub.display_name(full.clone()).bin_name(full)
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(cmd)
        .source(format!("{name} {}", env!("CARGO_PKG_VERSION")))
        .render(&mut roff)
        .map_err(|e| Stop::failed(format!("cannot render the man page: {e}")))?;
    print(&roff)
}

fn print(bytes: &[u8]) -> Result<Exit, Stop> {
    let text = String::from_utf8_lossy(bytes);
    outln!("{}", text.trim_end_matches('\n'));
    Ok(Exit::Ok)
}
