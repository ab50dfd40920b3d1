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

fn page(cli: clap::Command, command: Option<&str>) -> Result<Exit, Stop> {
    // `idem help` is clap's, with no page of its own: left out of the
    // pages' lists of commands, which name `idem-COMMAND(1)`.
    let mut cli = cli.disable_help_subcommand(true);
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
    // What clap does not know: how idem ends, what it reads, what `run
    // --json` prints. The whole of it on idem(1); a command's page points
    // there.
    let sections: &[&str] = match command {
        None => &[EXIT_STATUS, ENVIRONMENT, FILES, JSON_EVENTS],
        Some("run") => &[EXIT_STATUS, JSON_EVENTS, SEE_ALSO],
        Some(_) => &[EXIT_STATUS, SEE_ALSO],
    };
    for section in sections {
        roff.extend_from_slice(section.as_bytes());
    }
    print(&roff)
}

const EXIT_STATUS: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
Success: every partition loaded (the console: the operator quit).
.TP
\fB1\fR
Some partitions failed (retry or alert), a job could not be read, the warehouse could not be reached, or output could not be written; \fBverify\fR: the runs differ; \fBlint\fR: errors found.
.TP
\fB2\fR
Usage or config error (do not retry).
.TP
\fB130\fR
Cancelled: Ctrl\-C, SIGTERM or SIGHUP (no new partition starts, in\-flight ones roll back; the console's runs are cancelled; \fBstatus\fR, \fBjobs\fR, \fBlog\fR and \fBdiff\fR, which only read, end at once, nothing changed), or a plan declined at the prompt.
"#;

const ENVIRONMENT: &str = r#".SH ENVIRONMENT
.TP
\fBIDEM_CONFIG\fR
The config file, as \fB\-\-config\fR (default \fIidem.toml\fR).
.TP
\fBIDEM_THEME\fR
The console's theme, as \fB\-\-theme\fR: default, light, colorblind, mono, or a theme file.
.TP
\fBNO_COLOR\fR
Set and not empty: the console uses the \fImono\fR theme.
.TP
\fBIDEM_GLYPHS\fR
\fIascii\fR or \fIunicode\fR: the glyphs of the console and of the commands' text, whatever the locale.
.TP
\fBLC_ALL\fR, \fBLC_CTYPE\fR, \fBLANG\fR
A locale that is not UTF\-8 makes the console draw ASCII, and the commands' text write it (unless \fBIDEM_GLYPHS\fR says otherwise).
.TP
\fBIDEM_OPERATOR\fR
Who runs a load, as the ledger records it (else \fBUSER\fR, \fBLOGNAME\fR, the login name of the user id).
.TP
\fBHOSTNAME\fR
The host the ledger records (else \fI/etc/hostname\fR).
.TP
\fBXDG_CONFIG_HOME\fR, \fBHOME\fR
Where the user config file is (see FILES). An \fBXDG_CONFIG_HOME\fR that is not an absolute path is ignored, as the XDG Base Directory spec says.
.TP
\fBXDG_STATE_HOME\fR, \fBHOME\fR
Where run logs are kept (see FILES). An \fBXDG_STATE_HOME\fR that is not an absolute path is ignored, as the XDG Base Directory spec says.
.TP
\fB${VAR}\fR
Any variable a config names in its values, e.g. url = "${DATABASE_URL}"; one that is not set is a config error.
"#;

const FILES: &str = r#".SH FILES
.TP
\fIidem.toml\fR
The config: warehouse, defaults and jobs (\fB\-\-config\fR or \fBIDEM_CONFIG\fR name another). A relative \fIsqlite://PATH\fR in it is read from the current directory.
.TP
\fI$XDG_CONFIG_HOME/idem/config.toml\fR (else \fI~/.config/idem/config.toml\fR)
The user config file: the default theme and key overrides (\fBidem config path\fR prints it).
.TP
\fI$XDG_STATE_HOME/idem/logs/\fR (else \fI~/.local/state/idem/logs/\fR)
Run logs, a folder per warehouse (its \fIwarehouse.txt\fR says which), 256 KiB per partition plus one rotated file: \fBidem log JOB PARTITION \-\-lines\fR.
"#;

const JSON_EVENTS: &str = r#".SH "JSON EVENTS"
\fBidem run \-\-json\fR prints one JSON object per line on stdout, each with "schema_version": 1 and an "event": \fBrun_started\fR, \fBpartition_started\fR, \fBpartition_log\fR, \fBpartition_succeeded\fR, \fBpartition_failed\fR, \fBpartition_added\fR (a partition a \fB\-\-cascade\fR step took on before it began: a merge before it moved rows in or out of what it reads), \fBpartition_left\fR (such a partition left out, as it has not ended yet), \fBpartition_skipped\fR, \fBstep_skipped\fR (a \fB\-\-cascade\fR step none of whose partitions ran: it ends that step, as \fBrun_finished\fR ends one that ran), \fBconcurrency_lowered\fR (the warehouse refused a connection for a limit on connections: fewer partitions at once from here on), \fBrun_finished\fR, \fBrun_not_started\fR (the run ended before it began: a usage or config error, the warehouse unreachable, a signal while it connected; its \fBexit_code\fR is the command's), and \fBdry_run\fR with \fB\-\-dry\-run\fR. A stream ends with \fBrun_finished\fR or \fBrun_not_started\fR (a \fB\-\-cascade\fR stream with its last step's \fBrun_finished\fR or \fBstep_skipped\fR), unless a second signal or SIGKILL ended idem at once. Within a version fields and events are only added. Each event's fields: the README, section "For orchestrators: idem run \-\-json".
"#;

const SEE_ALSO: &str = r#".SH "SEE ALSO"
\fBidem\fR(1): the environment, the files and the JSON events.
"#;

fn print(bytes: &[u8]) -> Result<Exit, Stop> {
    let text = String::from_utf8_lossy(bytes);
    outln!("{}", text.trim_end_matches('\n'));
    Ok(Exit::Ok)
}
