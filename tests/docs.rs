//! Shell completions and man pages come from the CLI definition: every
//! command the binary has is in every one of them.

mod common;

use std::process::Output;

fn idem(args: &[&str]) -> Output {
    crate::common::idem_command()
        .args(args)
        .output()
        .expect("run idem")
}

fn stdout(args: &[&str]) -> String {
    let out = idem(args);
    assert!(
        out.status.success(),
        "idem {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The commands `idem --help` lists, read from the binary itself.
fn commands() -> Vec<String> {
    let help = stdout(&["--help"]);
    let listed: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect();
    for expected in [
        "demo",
        "init",
        "import-dbt",
        "run",
        "status",
        "jobs",
        "log",
        "lint",
        "completions",
        "man",
    ] {
        assert!(
            listed.iter().any(|c| c == expected),
            "{expected} in {listed:?}"
        );
    }
    listed
}

#[test]
fn completions_name_every_command() {
    let commands = commands();
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&["completions", shell]);
        assert!(script.len() > 500, "{shell}: {script}");
        for command in &commands {
            assert!(
                script.contains(command.as_str()),
                "{shell} completes {command}"
            );
        }
        // Flags of a command are there too.
        assert!(script.contains("dry-run"), "{shell}");
    }
    let bash = stdout(&["completions", "bash"]);
    assert!(bash.contains("complete -F _idem"));
    // `idem man <TAB>` offers the pages there are.
    let man = bash
        .split("        idem__subcmd__man)")
        .nth(1)
        .and_then(|block| block.lines().find(|l| l.contains("opts=")))
        .expect("bash completes idem man");
    for command in &commands {
        assert!(
            man.split(['"', ' ']).any(|w| w == command),
            "idem man <TAB> offers {command}: {man}"
        );
    }
    let bad = idem(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn the_man_page_names_every_command_and_each_has_its_own() {
    let commands = commands();
    let page = stdout(&["man"]);
    assert!(page.contains(".TH idem 1"), "{page}");
    assert!(page.contains(".SH SUBCOMMANDS"), "{page}");
    for command in &commands {
        assert!(
            page.contains(&format!("idem\\-{}(1)", command.replace('-', "\\-"))),
            "idem(1) lists {command}"
        );
        let own = stdout(&["man", command]);
        assert!(
            own.contains(&format!(".TH idem-{command} 1")),
            "idem man {command}: {own}"
        );
        // --config where it is read, not where it is not.
        let reads_config =
            !["demo", "import-dbt", "config", "completions", "man"].contains(&command.as_str());
        assert_eq!(
            own.contains("\\-\\-config"),
            reads_config,
            "idem man {command} lists --config: {reads_config}"
        );
    }
    let run = stdout(&["man", "run"]);
    assert!(
        run.contains("\\-\\-dry\\-run") && run.contains("\\-\\-only"),
        "{run}"
    );
    let bad = idem(&["man", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("expected one of demo, run"));
}

/// The text of a man page's section, from its `.SH` line to the next.
fn section<'a>(page: &'a str, title: &str) -> &'a str {
    let start = page
        .find(&format!(".SH {title}\n"))
        .unwrap_or_else(|| panic!("no section {title}: {page}"));
    let rest = &page[start + 4..];
    &rest[..rest.find("\n.SH ").unwrap_or(rest.len())]
}

/// idem(1) says what clap does not know: how idem ends, what it reads,
/// where its files are and what `run --json` prints; it names no page that
/// `idem man` refuses; and the README installs every page.
#[test]
fn the_man_page_has_exit_status_environment_files_and_events() {
    let page = stdout(&["man"]);
    let exit = section(&page, "\"EXIT STATUS\"");
    for code in ["0", "1", "2", "130"] {
        assert!(exit.contains(&format!("\\fB{code}\\fR")), "{exit}");
    }
    let environment = section(&page, "ENVIRONMENT");
    for var in [
        "IDEM_CONFIG",
        "IDEM_THEME",
        "NO_COLOR",
        "IDEM_GLYPHS",
        "IDEM_OPERATOR",
        "XDG_CONFIG_HOME",
        "XDG_STATE_HOME",
    ] {
        assert!(environment.contains(var), "{var}: {environment}");
    }
    let files = section(&page, "FILES");
    for file in ["idem.toml", "idem/config.toml", "idem/logs"] {
        assert!(files.contains(file), "{file}: {files}");
    }
    // Every event of the README's table of `run --json`.
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README");
    let events: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| event | fields |"))
        .skip(2)
        .take_while(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    assert!(events.len() >= 8, "{events:?}");
    let json = section(&page, "\"JSON EVENTS\"");
    for event in &events {
        assert!(json.contains(event), "{event}: {json}");
    }
    assert!(section(&stdout(&["man", "run"]), "\"JSON EVENTS\"").contains("run_finished"));
    assert!(section(&stdout(&["man", "lint"]), "\"EXIT STATUS\"").contains("130"));

    // The pages listed are the pages there are.
    assert!(!page.contains("idem\\-help(1)"), "{page}");
    assert_eq!(idem(&["man", "help"]).status.code(), Some(2));
    // The README's install step writes every command's page.
    let install = readme
        .lines()
        .find(|l| l.contains("for c in \"\" "))
        .expect("the README installs the man pages");
    for command in commands() {
        assert!(
            install
                .split_whitespace()
                .any(|w| w.trim_end_matches(';') == command),
            "the README's install step leaves out idem-{command}(1): {install}"
        );
    }
}
