//! Shell completions and man pages come from the CLI definition: every
//! command the binary has is in every one of them.

use std::process::{Command, Output};

fn idem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idem"))
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
    assert!(stdout(&["completions", "bash"]).contains("complete -F _idem"));
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
        assert!(
            own.contains("\\-\\-config"),
            "idem man {command} lists --config"
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
