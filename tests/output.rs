//! Where the output goes wrong: a reader that went away (`| head`) ends the
//! output quietly, a full disk is an error with exit 1, and neither changes
//! what a run did or how its outcome is reported.

mod common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn demo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::common::idem_command()
        .args(["demo", "--path"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let config = dir.path().join("idem.toml");
    (dir, config)
}

fn command(config: &Path, args: &[&str]) -> Command {
    let mut cmd = crate::common::idem_command();
    cmd.arg("--config").arg(config).args(args);
    cmd
}

/// Runs idem with its stdout a pipe whose reading end is already closed.
fn with_closed_stdout(config: &Path, args: &[&str]) -> Output {
    let mut child = command(config, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

fn with_full_stdout(config: &Path, args: &[&str]) -> Output {
    let full = File::options().write(true).open("/dev/full").unwrap();
    command(config, args)
        .stdout(Stdio::from(full))
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn states(config: &Path, job: &str) -> Vec<String> {
    let out = command(config, &["status", job, "--format", "json"])
        .output()
        .unwrap();
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.iter()
        .map(|r| r["state"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A config of one daily job `name` running `sql` (TOML's escapes read)
/// over two days of a SQLite table `t (dt TEXT, x INTEGER)` made by
/// `script`'s statements.
async fn one_job_over_t(dir: &Path, name: &str, sql: &str, script: &[&str]) -> PathBuf {
    let config = dir.join("idem.toml");
    let text = format!(
        "[warehouse]\nurl = \"sqlite://{}\"\n\n[[jobs]]\nname = \"{name}\"\ntarget = \"t\"\n\
         strategy = \"replace_partition\"\npartition_column = \"dt\"\ngrain = \"day\"\n\
         start = \"2026-01-01\"\nend = \"2026-01-02\"\nsql = \"\"\"{sql}\"\"\"\n",
        dir.join("w.db").display(),
    );
    std::fs::write(&config, &text).unwrap();
    std::fs::File::create(dir.join("w.db")).unwrap();
    let parsed = idem::config::parse(&config, &text, &|_| None).unwrap();
    let wh = idem::warehouse::Warehouse::connect(&parsed.warehouse, 1)
        .await
        .unwrap();
    let mut statements = vec!["CREATE TABLE t (dt TEXT, x INTEGER)"];
    statements.extend_from_slice(script);
    wh.execute_script(&statements).await.unwrap();
    wh.close().await;
    config
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let (_dir, config) = demo();
    for args in [
        &["status"][..],
        &["status", "--format", "json"],
        &["jobs"],
        &["log", "fct_orders"],
        &["run", "fct_orders", "--dry-run"],
        &["run", "fct_orders", "--dry-run", "--json"],
        &["lint"],
        &["config", "path"],
        &["--help"],
        &["--version"],
        &["run", "--help"],
    ] {
        let out = with_closed_stdout(&config, args);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "idem {args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "idem {args:?}: {err}");
        let normal = command(&config, args)
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            normal.status.code(),
            "idem {args:?}: {err}"
        );
    }
}

#[test]
fn a_closed_pipe_does_not_stop_a_run_or_change_its_exit_code() {
    let (_dir, config) = demo();
    let missing_before = states(&config, "fct_orders")
        .iter()
        .filter(|s| *s == "missing")
        .count();
    assert!(missing_before > 0);
    let out = with_closed_stdout(
        &config,
        &["run", "fct_orders", "--only", "missing", "--json"],
    );
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        !states(&config, "fct_orders").iter().any(|s| s == "missing"),
        "the run went on to the end"
    );
    // The events went unread: how the run ended is said where it can be.
    assert!(
        err.contains("standard output was closed")
            && err.contains("the run itself: fct_orders: ")
            && err.contains("succeeded, 0 failed"),
        "{err}"
    );
}

#[tokio::test]
async fn a_closed_pipe_keeps_a_failed_run_failed() {
    let dir = tempfile::tempdir().unwrap();
    let config = one_job_over_t(
        dir.path(),
        "broken",
        "select :start as dt, nope from t",
        &[],
    )
    .await;
    for args in [&["run", "broken", "--json"][..], &["run", "broken"]] {
        let out = with_closed_stdout(&config, args);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(out.status.code(), Some(1), "idem {args:?}: {err}");
    }
}

#[test]
fn a_full_disk_is_an_error_after_a_truthful_run() {
    let (_dir, config) = demo();
    for (job, args) in [
        (
            "fct_orders",
            &["run", "fct_orders", "--only", "missing"][..],
        ),
        (
            "agg_revenue_monthly",
            &["run", "agg_revenue_monthly", "--only", "missing", "--json"],
        ),
    ] {
        let out = with_full_stdout(&config, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "idem {args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains("cannot write to standard output"), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        // The data is committed, and the message says so.
        assert!(
            !states(&config, job).iter().any(|s| s == "missing"),
            "idem {args:?} committed"
        );
        assert!(
            err.contains(&format!("the run itself: {job}: "))
                && err.contains("succeeded, 0 failed"),
            "{err}"
        );
    }
}

/// A file that fills up mid-line (a full disk; here a file size limit,
/// which a write meets as a full disk does) is left ending with its last
/// whole line: a reader of the `--json` stream parses every line it finds.
/// QA: `run --json >> out.json` on a full disk ended in half an event.
#[tokio::test]
async fn a_line_a_full_disk_cut_short_is_taken_back() {
    let dir = tempfile::tempdir().unwrap();
    let config = one_job_over_t(
        dir.path(),
        "daily",
        "select dt, x from src where dt >= :start and dt < :end",
        &[
            "CREATE TABLE src (dt TEXT, x INTEGER)",
            "INSERT INTO src VALUES ('2026-01-01', 1), ('2026-01-02', 2)",
        ],
    )
    .await;
    // Room for 100 bytes before the limit, fewer than `run_started` takes;
    // the space before them is a hole, so the file costs nothing.
    const LIMIT_KIB: u64 = 16 * 1024;
    let room = LIMIT_KIB * 1024 - 100;
    let out_path = dir.path().join("out.json");
    File::create(&out_path).unwrap().set_len(room).unwrap();
    let appended = File::options().append(true).open(&out_path).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {LIMIT_KIB}; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_idem"))
        .arg("--config")
        .arg(&config)
        .args(["run", "daily", "--json"])
        .env(
            crate::common::UNICODE_GLYPHS.0,
            crate::common::UNICODE_GLYPHS.1,
        )
        .env("XDG_STATE_HOME", dir.path())
        .stdout(Stdio::from(appended))
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write to standard output"), "{err}");
    assert!(
        err.contains("the run itself: daily: 2 succeeded, 0 failed"),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(&out_path).unwrap().len(),
        room,
        "the part of run_started written is taken back"
    );
    assert_eq!(states(&config, "daily"), ["loaded", "loaded"]);
}

#[test]
fn a_full_disk_fails_the_reading_commands() {
    let (_dir, config) = demo();
    for args in [
        &["status"][..],
        &["jobs"],
        &["run", "fct_orders", "--dry-run"],
        &["config", "path"],
    ] {
        let out = with_full_stdout(&config, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "idem {args:?}: {err}");
        assert!(err.contains("cannot write to standard output"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn a_dry_run_speaks_json_when_asked() {
    let (_dir, config) = demo();
    let out = command(
        &config,
        &[
            "run",
            "fct_orders",
            "--only",
            "failed,missing",
            "--dry-run",
            "--json",
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1, "{text}");
    let plan: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(plan["event"], "dry_run");
    assert_eq!(plan["job"], "fct_orders");
    let partitions = plan["partitions"].as_array().unwrap();
    assert_eq!(partitions.len(), 7, "{text}");
    assert!(partitions.iter().any(|p| p["state"] == "failed"));
    assert!(partitions.iter().any(|p| p["state"] == "missing"));
    assert!(plan["rows_replaced"].as_i64().is_some());
    // And still changes nothing.
    assert!(states(&config, "fct_orders").iter().any(|s| s == "missing"));
}

/// `--dry-run --json` carries a merge plan's order risk, which the text
/// says on stderr and the run dialog as a warning: the later windows
/// already loaded that merging older ones alone can roll back. It once
/// said nothing of them, so a script saw a plan without its warning.
#[test]
fn a_dry_run_in_json_names_the_later_windows_a_merge_can_set_back() {
    let (_dir, config) = demo();
    let out = command(&config, &["status", "dim_customers", "--format", "json"])
        .output()
        .unwrap();
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let loaded: Vec<&str> = rows
        .iter()
        .filter(|r| r["state"] == "loaded" || r["state"] == "stale")
        .map(|r| r["partition"].as_str().unwrap())
        .collect();
    let (first, later) = (loaded[0], &loaded[1..]);
    let plan = |extra: &[&str]| -> Value {
        let mut args = vec!["run", "dim_customers", "--from", first, "--to", first];
        args.extend(extra);
        args.extend(["--dry-run", "--json"]);
        let out = command(&config, &args).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let alone = plan(&[]);
    assert_eq!(alone["later_loaded"], serde_json::json!(later), "{alone}");
    let through = plan(&["--through-latest"]);
    assert_eq!(through["later_loaded"], serde_json::json!([]), "{through}");
    assert_eq!(
        through["partitions"].as_array().unwrap().len(),
        loaded.len(),
        "{through}"
    );
}

/// QA: a job's SQL that quotes a name with an escape sequence in it (or a
/// server error or lint finding that echoes it) reached the terminal raw
/// from `idem run` and `idem lint`: it could retitle, recolour or clear the
/// operator's terminal. Every command shows the sequence, never obeys it.
#[tokio::test]
async fn escape_sequences_in_errors_are_shown_not_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    // TOML's escapes: the SQL itself carries ESC, BEL and CR.
    let sql = r#"select dt, x as "\u001b]0;PWNED\u0007\u001b[2J\rRED" from t where dt >= :start and dt < :end"#;
    let config = one_job_over_t(dir.path(), "evil", sql, &[]).await;
    let mut seen = String::new();
    for args in [
        &["run", "evil", "--yes"][..],
        &["run", "evil", "--dry-run"],
        &["lint"],
        &["status", "evil"],
        &["log", "evil"],
    ] {
        let out = command(&config, args).output().unwrap();
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let written = String::from_utf8_lossy(bytes);
            assert!(
                !written.contains(['\u{1b}', '\u{7}', '\r']),
                "idem {args:?} wrote a control character to {stream}: {written:?}"
            );
            seen.push_str(&written);
        }
    }
    // Shown, not dropped: the operator can see what the SQL carries.
    assert!(
        seen.contains("\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\rRED"),
        "{seen}"
    );
}

/// QA: an error quoting a C1 control character (U+009B, which a terminal
/// obeys as an escape; a mis-decoded source value carries such bytes) or
/// DEL broke `--json` output: written Rust's way (`\u{9b}`), it is no JSON
/// escape, and an orchestrator's parser failed on the partition's event.
/// Every JSON output now escapes them as JSON does, and parses back to the
/// error with the character in it.
#[tokio::test]
async fn control_characters_in_errors_keep_json_output_json() {
    let dir = tempfile::tempdir().unwrap();
    let sql = r#"select dt, x as "\u009b31m\u007fRED" from t where dt >= :start and dt < :end"#;
    let insert = "INSERT INTO t VALUES ('2026-01-01', 1)";
    let config = one_job_over_t(dir.path(), "c1", sql, &[insert]).await;
    let run = command(&config, &["run", "c1", "--yes", "--json"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let mut errors = Vec::new();
    for line in String::from_utf8_lossy(&run.stdout).lines() {
        let event: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
        if event["event"] == "partition_failed" {
            errors.push(event["error"].as_str().unwrap().to_string());
        }
    }
    assert!(
        errors.iter().any(|e| e.contains("\u{9b}31m\u{7f}RED")),
        "the error keeps what the server said: {errors:?}"
    );
    for args in [
        &["run", "c1", "--dry-run", "--json"][..],
        &["lint", "--format", "json"],
        &["status", "c1", "--format", "json"],
    ] {
        let out = command(&config, args).output().unwrap();
        let written = String::from_utf8_lossy(&out.stdout);
        assert!(
            !written.contains(|c: char| c.is_control() && c != '\n'),
            "idem {args:?} wrote a control character: {written:?}"
        );
        for document in written.lines().filter(|l| l.starts_with('{')).take(1) {
            serde_json::from_str::<serde_json::Value>(document)
                .unwrap_or_else(|e| panic!("idem {args:?}: {e}: {document}"));
        }
        if written.starts_with('[') {
            serde_json::from_str::<serde_json::Value>(&written)
                .unwrap_or_else(|e| panic!("idem {args:?}: {e}: {written}"));
        }
    }
}

/// QA: under a locale that is not UTF-8 (`LC_ALL=C`) the console drew
/// ASCII, but `idem status`, `idem jobs` and a run's lines still wrote
/// `■ ✗ → ·`, which such a terminal shows as `_` or mojibake. They follow
/// the console's rule now; a UTF-8 locale keeps the glyphs.
#[test]
fn a_locale_that_is_not_utf8_gets_ascii_marks_as_the_console_does() {
    let (_dir, config) = demo();
    let in_locale = |args: &[&str], utf8: bool| {
        let mut cmd = command(&config, args);
        cmd.env_remove("IDEM_GLYPHS").env_remove("LC_CTYPE");
        if utf8 {
            cmd.env_remove("LC_ALL").env("LANG", "C.UTF-8");
        } else {
            cmd.env("LC_ALL", "C");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out))
    };
    for args in [&["status", "fct_orders"][..], &["jobs"]] {
        let utf8 = in_locale(args, true);
        assert!(utf8.contains('■'), "{args:?}: {utf8}");
        let ascii = in_locale(args, false);
        assert!(ascii.is_ascii() && ascii.contains('#'), "{args:?}: {ascii}");
    }
    let run = in_locale(&["run", "fct_orders", "--only", "missing"], false);
    assert!(run.is_ascii() && run.contains("# loaded"), "{run}");
}
