//! Key overrides from the user config file, in the real binary in a
//! pseudo-terminal: the console answers to the user's keys and shows them,
//! and keys that do not check stop it before the terminal is taken over.

mod common;
mod pty;

use std::path::{Path, PathBuf};

use pty::{Console, idem};

/// A user config directory (for `XDG_CONFIG_HOME`) whose config.toml is
/// `text`, and the file's path.
fn user_config(dir: &Path, text: &str) -> (PathBuf, PathBuf) {
    let xdg = dir.join("xdg");
    std::fs::create_dir_all(xdg.join("idem")).unwrap();
    let file = xdg.join("idem/config.toml");
    std::fs::write(&file, text).unwrap();
    (xdg, file)
}

/// The demo's warehouse and config, created without a terminal.
fn demo_config(dir: &Path) -> PathBuf {
    let demo = dir.join("demo");
    let out = idem(dir, &["demo", "--path", demo.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    demo.join("idem.toml")
}

#[test]
fn a_remapped_quit_key_shows_in_the_footer_and_help_and_quits() {
    let dir = tempfile::tempdir().unwrap();
    let config = demo_config(dir.path());
    let (xdg, _) = user_config(
        dir.path(),
        "[keys.main]\nquit = \"x\"\n[keys.confirm]\nallow_shrink = \"!\"\n",
    );
    let mut c = Console::start_with(
        dir.path(),
        &["--config", config.to_str().unwrap()],
        &[("XDG_CONFIG_HOME", xdg.to_str().unwrap())],
    );
    let screen = c.wait_for(&["fct_orders", "Mo Tu We Th Fr Sa Su", "x quit"]);
    assert!(!screen.contains("q quit"), "footer: {screen}");
    // q means nothing now: the console is still there to open its help.
    c.send("q");
    c.send("?");
    c.wait_for(&["Help · keys", "Main screen"]);
    c.send("jjjjjjjjjjjj");
    c.wait_for(&[&format!("{:<10} quit (asks first", "x")]);
    c.send("\x1b");
    c.wait_for(&["x quit"]);
    // The confirm dialog's hints name the keys in force, not the defaults.
    // (It opens once the job's full read has landed.)
    for _ in 0..120 {
        c.send("r");
        if c.contents().contains("Run fct_orders?") {
            break;
        }
    }
    let dialog = c.wait_for(&["Run fct_orders?", "! shrink"]);
    assert!(!dialog.contains("S shrink"), "{dialog}");
    c.send("\x1b");
    c.wait_for(&["x quit"]);
    c.send("x");
    let status = c.wait_exit();
    assert!(status.success(), "exit status {status:?}");
}

#[test]
fn keys_that_do_not_check_stop_the_console_before_it_opens() {
    let dir = tempfile::tempdir().unwrap();
    let config = demo_config(dir.path());
    let demo = dir.path().join("demo2");
    let console: &[&str] = &["--config", config.to_str().unwrap()];
    let demo_args: &[&str] = &["demo", "--path", demo.to_str().unwrap()];
    let cases: [(&str, &[&str], &str); 4] = [
        (
            "[keys.main]\nquit = \"c\"\n",
            console,
            ": `c` is bound to both cancel and quit in [keys.main]",
        ),
        (
            "[keys.main]\nquit = \"c\"\n",
            demo_args,
            ": `c` is bound to both cancel and quit in [keys.main]",
        ),
        (
            "[keys.mian]\nquit = \"x\"\n",
            console,
            ": [keys.mian]: no such scope; the scopes are main,",
        ),
        // A file that does not read at all cannot say its keys either; it
        // says where it does not read.
        ("theme = 3\n", console, ":1:9: invalid type"),
    ];
    for (text, args, says) in cases {
        let (xdg, file) = user_config(dir.path(), text);
        let env = [("XDG_CONFIG_HOME", xdg.to_str().unwrap())];
        let mut c = Console::start_with(dir.path(), args, &env);
        let status = c.wait_exit();
        let screen = c.contents();
        assert_eq!(status.exit_code(), 2, "{text} {args:?}: {screen}");
        assert!(
            screen.contains(&format!("idem: {}{says}", file.display())),
            "{text} {args:?}: {screen}"
        );
        let raw = c.raw.lock().unwrap().clone();
        assert!(
            !raw.windows(8).any(|w| w == b"\x1b[?1049h"),
            "{text} {args:?}: the console never took the terminal over"
        );
    }
    assert!(!demo.exists(), "the demo stops before it is created");
}

/// The notes and overlays that name a key name the one in force: with run,
/// error groups, reconcile and what-changed remapped, none of them says
/// r, e, O or d (which do nothing then).
#[test]
fn hints_in_notes_and_overlays_name_the_remapped_keys() {
    let dir = tempfile::tempdir().unwrap();
    let config = demo_config(dir.path());
    let (xdg, _) = user_config(
        dir.path(),
        "[keys.main]\nrun = \"F5\"\nerror_groups = \"E\"\nreconcile = \"F6\"\nwhat_changed = \"D\"\n",
    );
    let mut c = Console::start_with(
        dir.path(),
        &["--config", config.to_str().unwrap()],
        &[("XDG_CONFIG_HOME", xdg.to_str().unwrap())],
    );
    c.wait_for(&["failures of fct_orders by error (E selects a group)"]);
    c.send("o");
    c.wait_for(&["is out of date with its source (F6 reconciles)"]);
    c.send("D");
    c.wait_for(&["D shows what changed since a stale partition was loaded"]);
    c.send("E");
    c.wait_for(&["Enter selects the group's partitions (then F5 re-runs them)"]);
    c.send("\r");
    c.wait_for(&["; F5 re-runs them"]);
    c.send("q");
    let status = c.wait_exit();
    assert!(status.success(), "exit status {status:?}");
}
