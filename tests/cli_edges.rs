//! The headless commands' edges on the demo warehouse: dates written one way,
//! state filters that say what they take, a log that reads right.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use chrono::Datelike;
use serde_json::Value;

fn idem(config: &Path, args: &[&str]) -> Output {
    crate::common::idem_command()
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .expect("run idem")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The demo in a folder whose name a shell splits: the commands it prints
/// quote it, so that they run as printed.
fn demo() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("on call");
    let out = crate::common::idem_command()
        .args(["demo", "--path"])
        .arg(&folder)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let config = folder.join("idem.toml");
    let printed = text(&out.stdout);
    assert!(
        printed.contains(&format!("--config '{}' jobs", config.display())),
        "{printed}"
    );
    (dir, config)
}

#[test]
fn the_demo_through_the_headless_edges() {
    let (_dir, config) = demo();

    // Dates are written one way: a loose one is a usage error naming the format.
    for args in [
        &["run", "fct_orders", "--from", "2026-9-1", "--dry-run"][..],
        &["status", "fct_orders", "--to", "2026-09-1"],
        &[
            "run",
            "agg_revenue_monthly",
            "--from",
            "2026-9",
            "--dry-run",
        ],
        &["log", "fct_orders", "2026-9-1"],
        // A moment inside an hour is not the hour's name.
        &[
            "status",
            "fct_pageviews_hourly",
            "--from",
            "2026-11-21T05:30",
        ],
        &["verify", "fct_pageviews_hourly", "2026-11-21 05:00:01"],
    ] {
        let out = idem(&config, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains("is not a partition of"), "{args:?}: {err}");
        assert!(err.contains("expected YYYY-MM"), "{args:?}: {err}");
    }
    // A name finer than the job's grain would stand for more than it says:
    // it is refused with the partition it falls in.
    for (args, says) in [
        (
            &[
                "run",
                "agg_revenue_monthly",
                "--from",
                "2026-01-15",
                "--dry-run",
            ][..],
            "--from 2026-01-15 is not a month partition; did you mean 2026-01?",
        ),
        (
            &["status", "agg_revenue_monthly", "--to", "2026-01-31"],
            "--to 2026-01-31 is not a month partition; did you mean 2026-01?",
        ),
        (
            &["run", "fct_orders", "--from", "2026-09-01T05", "--dry-run"],
            "--from 2026-09-01T05 is not a day partition; did you mean 2026-09-01?",
        ),
    ] {
        let out = idem(&config, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let two_days = [
        "run",
        "fct_orders",
        "--from",
        "2026-09-01",
        "--to",
        "2026-09-02",
        "--dry-run",
    ];
    let ok = idem(&config, &two_days);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    // The preview says what runs at once: SQLite has one writer, whatever
    // --concurrency asks.
    for asked in [&[][..], &["--concurrency", "4"]] {
        let args: Vec<&str> = two_days.iter().chain(asked).copied().collect();
        let head = text(&idem(&config, &args).stdout);
        assert!(head.contains("concurrency 1"), "{asked:?}: {head}");
    }

    // A reason is one plain line wherever it is shown: its line breaks and
    // escape sequences would otherwise reach the operator's terminal.
    let reason = "page 42\nsecond line\x1b[31mRED\x07";
    let out = idem(
        &config,
        &[
            "run",
            "fct_orders",
            "--from",
            "2026-09-03",
            "--to",
            "2026-09-03",
            "--yes",
            "--reason",
            reason,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let log = text(&idem(&config, &["log", "fct_orders", "2026-09-03"]).stdout);
    assert!(
        log.contains("· page 42 second line\\u{1b}[31mRED\\u{7}"),
        "{log}"
    );
    assert!(!log.contains('\x1b') && !log.contains('\x07'), "{log:?}");

    // `idem status --state` keeps only those states.
    let out = idem(
        &config,
        &["status", "--state", "failed,vanished", "--format", "json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rows.iter().any(|r| r["state"] == "failed"));
    assert!(rows.iter().any(|r| r["state"] == "vanished"));
    assert!(
        rows.iter()
            .all(|r| r["state"] == "failed" || r["state"] == "vanished"),
        "{rows:#?}"
    );
    let everything = idem(&config, &["status", "--format", "json"]);
    let all: Vec<Value> = serde_json::from_slice(&everything.stdout).unwrap();
    assert!(all.len() > rows.len());

    for (args, says, listed) in [
        (
            &["status", "--state", "failed,brokn"][..],
            "\"brokn\" is not a state",
            "running, failed",
        ),
        (
            &["run", "fct_orders", "--only", "future"],
            "\"future\" is a state, but not one a run takes",
            "failed, missing, stale",
        ),
    ] {
        let out = idem(&config, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(says), "{err}");
        assert!(err.contains(listed), "{err}");
    }

    // `idem log` has a header, and a failed attempt shows no row counts.
    let out = idem(&config, &["log", "fct_orders"]);
    assert!(out.status.success());
    let log = text(&out.stdout);
    let mut lines = log.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("FINISHED (UTC)"), "{header}");
    assert!(
        header.contains("PARTITION") && header.contains("STATUS"),
        "{header}"
    );
    // Each column's name stands over its values.
    let first = lines.next().unwrap();
    for (column, value) in [("PARTITION", 1), ("TRY", 2), ("STATUS", 3)] {
        let word = first.split_whitespace().nth(value).unwrap();
        assert_eq!(
            header.find(column),
            first.find(&format!(" {word}")).map(|i| i + 1),
            "{column}:\n{header}\n{first}"
        );
    }
    let failed: Vec<&str> = log.lines().filter(|l| l.contains(" failed ")).collect();
    assert!(!failed.is_empty(), "{log}");
    for line in failed {
        assert!(!line.contains("= 0"), "{line}");
        assert!(line.contains("(rolled back)"), "{line}");
    }
    assert!(
        log.lines()
            .any(|l| l.contains(" succeeded ") && l.contains(" in window "))
    );

    // A merge window without a partition column has no rows to count now:
    // the preview says the rows its last load merged as such, as the
    // console's detail does (QA: it said them as "rows now").
    let loaded = idem::config::load(&config).unwrap();
    let dim = loaded
        .jobs
        .iter()
        .find(|j| j.name == "dim_customers")
        .unwrap();
    let (first, second) = (dim.start.next().next(), dim.start.next().next().next());
    let (from, to) = (first.name(), second.name());
    let merge = idem(
        &config,
        &[
            "run",
            "dim_customers",
            "--from",
            &from,
            "--to",
            &to,
            "--dry-run",
        ],
    );
    let preview = text(&merge.stdout);
    assert!(merge.status.success(), "{preview}");
    let windows: Vec<&str> = preview
        .lines()
        .filter(|l| l.starts_with(&format!("  {from}")) || l.starts_with(&format!("  {to}")))
        .collect();
    assert_eq!(windows.len(), 2, "{preview}");
    for line in windows {
        assert!(line.contains(" rows at last load "), "{line}");
        assert!(!line.contains("rows now"), "{line}");
    }
}

fn help(args: &[&str]) -> String {
    let out = crate::common::idem_command()
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}");
    text(&out.stdout)
}

#[test]
fn console_flags_belong_to_the_console() {
    for console in [&[][..], &["demo"]] {
        let h = help(console);
        assert!(
            h.contains("--theme") && h.contains("--no-mouse"),
            "{console:?}: {h}"
        );
    }
    for headless in ["run", "status", "jobs", "log", "verify", "diff", "lint"] {
        let h = help(&[headless]);
        assert!(!h.contains("--theme"), "idem {headless} --help: {h}");
        assert!(!h.contains("--no-mouse"), "idem {headless} --help: {h}");
        assert!(h.contains("--config"), "idem {headless} --help: {h}");
    }
    // Before their name (where earlier releases took them silently, and a
    // cron line may still carry them) they are said to be left aside, and
    // the command runs.
    let dir = tempfile::tempdir().unwrap();
    for (args, command) in [
        (
            &["--theme", "nosuch", "completions", "bash"][..],
            "completions",
        ),
        (&["--no-mouse", "completions", "bash"], "completions"),
    ] {
        let out = crate::common::idem_command()
            .current_dir(dir.path())
            .env_remove("IDEM_THEME")
            .args(args)
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(text(&out.stdout).contains("complete"), "{args:?}");
        assert!(
            err.contains(&format!(
                "{} is an option of the console (`idem`, `idem demo`): `idem {command}` leaves it aside",
                args[0]
            )),
            "{args:?}: {err}"
        );
    }
    // IDEM_THEME, set for the console, is no error for the rest.
    let out = crate::common::idem_command()
        .current_dir(dir.path())
        .env("IDEM_THEME", "light")
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));

    // The commands that read no config do not list --config.
    for other in ["demo", "completions", "man", "import-dbt", "config"] {
        let h = help(&[other]);
        assert!(!h.contains("--config"), "idem {other} --help: {h}");
    }
    assert!(!help(&["config", "path"]).contains("--config"));
}

/// Every argument and option in every command's help says what it is:
/// `<JOB>` with nothing beside it leaves the reader to guess.
#[test]
fn every_argument_and_option_is_described() {
    let mut bare = Vec::new();
    for command in [
        "run",
        "status",
        "verify",
        "diff",
        "jobs",
        "log",
        "lint",
        "init",
        "import-dbt",
        "completions",
        "man",
        "demo",
    ] {
        let h = help(&[command]);
        let mut listed = false;
        for line in h.lines() {
            if line.ends_with(':') && !line.starts_with(' ') {
                listed = line == "Arguments:" || line == "Options:";
                continue;
            }
            let entry = line.trim_start();
            let indent = line.len() - entry.len();
            if !listed || !(2..=6).contains(&indent) || !entry.starts_with(['-', '<', '[']) {
                continue;
            }
            // The name, then (after two spaces or more) what it is.
            let said = entry.split_once("  ").map_or("", |(_, rest)| rest.trim());
            if said.is_empty() || said.starts_with('[') {
                bare.push(format!("idem {command}: {}", entry.trim_end()));
            }
        }
    }
    assert!(bare.is_empty(), "undescribed:\n{}", bare.join("\n"));
}

/// A mistyped SQLite path is an error naming it, and no file is made there
/// (an empty one would read as every partition missing, and take loads).
/// And a demo whose database another process has open (a console on it)
/// is not reset under that process.
#[test]
fn a_missing_sqlite_file_is_named_not_made_and_an_open_demo_is_not_reset() {
    let (_dir, config) = demo();
    let folder = config.parent().unwrap();
    let typo = folder.join("wharehouse.db");
    let bad = folder.join("typo.toml");
    let written = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&bad, written.replace("warehouse.db", "wharehouse.db")).unwrap();
    for args in [
        &["status"][..],
        &["jobs"],
        &["run", "fct_orders", "--dry-run"],
    ] {
        let out = idem(&bad, args);
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("no SQLite database at {}", typo.display())),
            "{args:?}: {err}"
        );
        assert!(!out.status.success(), "{args:?}");
    }
    assert!(!typo.exists(), "no database was made at the mistyped path");

    let database = folder.join("warehouse.db");
    let before = std::fs::metadata(&database).unwrap().len();
    let _open = std::fs::File::open(&database).unwrap();
    let out = crate::common::idem_command()
        .args(["demo", "--path"])
        .arg(folder)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("is open in") && err.contains(&format!("process {}", std::process::id())),
        "{err}"
    );
    assert_eq!(std::fs::metadata(&database).unwrap().len(), before);
}

/// A server that takes the connection and never answers (a firewall that
/// drops packets, a hung server) is named as such after connect_timeout,
/// with the setting that bounds the wait.
/// A relative SQLite path is read from the current directory: the error
/// names the whole path it tried and, when the config's folder has a file
/// of that name, says so and how to reach it.
#[test]
fn a_relative_sqlite_path_is_named_whole_and_one_beside_the_config_is_pointed_at() {
    let project = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let (project_dir, elsewhere_dir) = (
        project.path().canonicalize().unwrap(),
        elsewhere.path().canonicalize().unwrap(),
    );
    let config = project_dir.join("idem.toml");
    std::fs::write(&config, "[warehouse]\nurl = \"sqlite://w.db\"\n").unwrap();
    let status = |cwd: &Path| {
        crate::common::idem_command()
            .current_dir(cwd)
            .arg("--config")
            .arg(&config)
            .arg("status")
            .output()
            .unwrap()
    };
    let tried = elsewhere_dir.join("w.db");
    let out = status(&elsewhere_dir);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("no SQLite database at {} (", tried.display())),
        "{err}"
    );
    assert!(!err.contains("beside the config"), "{err}");

    std::fs::write(project_dir.join("w.db"), b"").unwrap();
    let err = text(&status(&elsewhere_dir).stderr);
    assert!(
        err.contains(&format!("no SQLite database at {} (", tried.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "there is one beside the config, at {}",
            project_dir.join("w.db").display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("run idem from {}", project_dir.display())),
        "{err}"
    );
    assert!(
        !tried.exists(),
        "no database was made where it was looked for"
    );
}

#[test]
fn a_warehouse_that_never_answers_is_named_after_the_connect_timeout() {
    // Connections queue in the listen backlog; none is ever answered.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("idem.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse]\nurl = \"postgres://etl@127.0.0.1:{port}/dw\"\nconnect_timeout = \"1s\"\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = idem(&config, &["status"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "cannot connect to postgres://etl@127.0.0.1:{port}/dw: no answer within connect_timeout (1s)"
        )),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    drop(silent);
}

/// `idem demo` makes its idem.toml and warehouse.db only where they replace
/// nothing but an earlier demo: a folder with the operator's own files is
/// refused (exit 2) and left as it was; `--config` is refused, not ignored.
#[test]
fn the_demo_replaces_only_an_earlier_demo() {
    let dir = tempfile::tempdir().unwrap();
    let demo_in = |path: &Path, extra: &[&str]| {
        crate::common::idem_command()
            .args(extra)
            .args(["demo", "--path"])
            .arg(path)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };

    let own = dir.path().join("own");
    std::fs::create_dir(&own).unwrap();
    std::fs::write(own.join("idem.toml"), "# my precious config\n").unwrap();
    std::fs::write(own.join("warehouse.db"), "precious\n").unwrap();
    let out = demo_in(&own, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not a demo's config"), "{err}");
    assert!(err.contains("warehouse.db"), "{err}");
    assert!(err.contains("idem demo --path NEW_FOLDER"), "{err}");
    assert_eq!(
        std::fs::read_to_string(own.join("idem.toml")).unwrap(),
        "# my precious config\n"
    );
    assert_eq!(
        std::fs::read_to_string(own.join("warehouse.db")).unwrap(),
        "precious\n"
    );

    let db_only = dir.path().join("db_only");
    std::fs::create_dir(&db_only).unwrap();
    std::fs::write(db_only.join("warehouse.db"), "precious\n").unwrap();
    let out = demo_in(&db_only, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is not empty (warehouse.db) and holds no earlier demo"),
        "{err}"
    );
    assert!(!db_only.join("idem.toml").exists());

    let fresh = dir.path().join("fresh");
    let out = demo_in(&fresh, &["--config", "mine.toml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("idem demo does not take --config"), "{err}");
    assert!(!fresh.exists());
}

/// A signal before the run starts (here while it waits up to
/// connect_timeout for a server that never answers) ends `idem run` at once
/// with exit 130 and says nothing was run, not the default death of the
/// signal (143, 129) without a word.
#[test]
fn a_signal_before_the_run_starts_is_a_clean_cancel() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("idem.toml");
    std::fs::write(
        &config,
        format!(
            "[warehouse]\nurl = \"postgres://etl@127.0.0.1:{port}/dw\"\nconnect_timeout = \"60s\"\n\n\
             [[jobs]]\nname = \"fct\"\ntarget = \"fct\"\npartition_column = \"dt\"\ngrain = \"day\"\n\
             start = \"2026-01-01\"\nstrategy = \"replace_partition\"\n\
             sql = \"select dt from src where dt >= :start and dt < :end\"\n"
        ),
    )
    .unwrap();
    // An orchestrator's run (--json) ends its stream saying so.
    for (signal, json) in [
        ("TERM", false),
        ("INT", false),
        ("HUP", false),
        ("TERM", true),
    ] {
        let child = crate::common::idem_command()
            .arg("--config")
            .arg(&config)
            .args(["run", "fct", "--from", "2026-01-01", "--to", "2026-01-01"])
            .args(json.then_some("--json"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(800));
        let sent = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let started = std::time::Instant::now();
        let out = child.wait_with_output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "SIG{signal}: {err}");
        assert!(
            err.contains("cancelled, nothing was run"),
            "SIG{signal}: {err}"
        );
        if json {
            let event = not_started_event(&out);
            assert_eq!(event["exit_code"], 130, "{event}");
            assert_eq!(event["job"], "fct", "{event}");
        } else {
            assert!(out.stdout.is_empty(), "SIG{signal}: {}", text(&out.stdout));
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }
    drop(silent);
}

/// The one line of JSON a run that never began prints with `--json`:
/// `run_not_started`, whose `exit_code` is the process's and whose `error`
/// is what stderr says.
fn not_started_event(out: &Output) -> Value {
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one event: {stdout}");
    let event: Value = serde_json::from_str(lines[0]).expect("a JSON line");
    assert_eq!(event["schema_version"], 1, "{event}");
    assert_eq!(event["event"], "run_not_started", "{event}");
    assert_eq!(
        event["exit_code"].as_i64(),
        out.status.code().map(i64::from),
        "{event}"
    );
    let said = format!("idem: {}", event["error"].as_str().expect("error text"));
    assert!(text(&out.stderr).lines().any(|l| l == said), "{said}");
    event
}

/// Every way an `idem run --json` can end before it begins is an event an
/// orchestrator parses, not only stderr's text (before, stdout was empty):
/// a config error, a job, a target or a range that is not there, a run too
/// large to go without `--yes`, the warehouse unreachable. Each carries the
/// exit code of the README's table.
#[test]
fn a_run_that_never_begins_says_why_in_its_json_stream() {
    let (dir, config) = demo();
    let bad_config = dir.path().join("bad.toml");
    std::fs::write(
        &bad_config,
        "[warehouse]\nurl = \"sqlite://x.db\"\n[[jobs]]\nname = 1\n",
    )
    .unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let unreachable = dir.path().join("unreachable.toml");
    std::fs::write(
        &unreachable,
        std::fs::read_to_string(&config).unwrap().replacen(
            "url = \"sqlite://",
            &format!("url = \"postgres://etl@127.0.0.1:{port}/dw\"\n# was \""),
            1,
        ),
    )
    .unwrap();
    let no_target = dir.path().join("no_target.toml");
    let demo_config = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &no_target,
        demo_config.replacen("target = \"fct_orders\"", "target = \"no_such_table\"", 1),
    )
    .unwrap();
    let cases: [(&Path, Vec<&str>, i32, &str); 6] = [
        (&bad_config, vec!["fct_orders"], 2, "jobs[0].name"),
        (&config, vec!["no_such_job"], 2, "no job named"),
        (
            &config,
            vec!["fct_orders", "--from", "2026-1-1"],
            2,
            "expected YYYY-MM-DD",
        ),
        (&config, vec!["fct_orders"], 2, "pass --yes"),
        (&no_target, vec!["fct_orders"], 2, "does not exist"),
        (&unreachable, vec!["fct_orders"], 1, "cannot connect"),
    ];
    for (config, args, code, says) in cases {
        let out = crate::common::idem_command()
            .arg("--config")
            .arg(config)
            .arg("run")
            .args(&args)
            .arg("--json")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let event = not_started_event(&out);
        assert_eq!(event["job"], args[0], "{event}");
        assert!(
            event["error"].as_str().unwrap().contains(says),
            "{args:?}: {event}"
        );
    }
}

/// `idem log JOB PARTITION` with a coarser name (a month of a daily job, a
/// day of an hourly one) shows every partition in it, as --from/--to and
/// verify read it, not only the first.
#[test]
fn a_coarser_name_logs_every_partition_in_it() {
    let (_dir, config) = demo();
    for (job, prefix_len) in [("fct_orders", 7), ("fct_pageviews_hourly", 10)] {
        let all = text(&idem(&config, &["log", job]).stdout);
        let first = all
            .lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or_else(|| panic!("{all}"));
        let coarser = &first[..prefix_len];
        // Word by word: a column is as wide as its widest value shown.
        let words = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
        let expected: Vec<String> = all
            .lines()
            .skip(1)
            .filter(|l| {
                l.split_whitespace()
                    .nth(1)
                    .is_some_and(|p| p.starts_with(coarser))
            })
            .map(words)
            .collect();
        let out = idem(&config, &["log", job, coarser]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let shown = text(&out.stdout);
        let lines: Vec<&str> = shown.lines().skip(1).collect();
        let partitions: std::collections::BTreeSet<&str> = lines
            .iter()
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        assert!(partitions.len() > 1, "{job} {coarser}: {shown}");
        let lines: Vec<String> = lines.into_iter().map(words).collect();
        assert_eq!(lines, expected, "{job} {coarser}");
    }
}

/// `idem log JOB PARTITION` of a partition outside the job's (a year off,
/// before its start) is a usage error naming its range and form, as `run
/// --from` refuses it; it printed "no attempts recorded" and exit 0. A month
/// the job's start cuts still shows the days from it.
#[test]
fn a_log_of_a_partition_outside_the_job_is_a_usage_error() {
    let (_dir, config) = demo();
    // The demo's days end today: its first, fct_orders's start, moves with them.
    let toml = std::fs::read_to_string(&config).unwrap();
    let start = toml
        .lines()
        .find_map(|l| l.strip_prefix("start = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("fct_orders's start");
    let first = chrono::NaiveDate::parse_from_str(start, "%Y-%m-%d").unwrap();
    let month_before = (first.with_day(1).unwrap() - chrono::Days::new(1)).format("%Y-%m");
    let month_before = month_before.to_string();
    for partition in ["2099-01-01", "2020-01-01", &month_before] {
        let out = idem(&config, &["log", "fct_orders", partition]);
        assert_eq!(out.status.code(), Some(2), "{partition}");
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!(
                "PARTITION {partition} is outside fct_orders's partitions ({start} to "
            )),
            "{partition}: {err}"
        );
        assert!(err.contains("day grain, YYYY-MM-DD"), "{partition}: {err}");
        assert!(text(&out.stdout).is_empty(), "{partition}");
    }
    let month = first.format("%Y-%m").to_string();
    let cut = idem(&config, &["log", "fct_orders", &month]);
    assert_eq!(cut.status.code(), Some(0), "{}", text(&cut.stderr));
    assert!(
        text(&cut.stdout).contains(&format!(" {month}-")),
        "{}",
        text(&cut.stdout)
    );
}

/// `idem diff` of a coarser name (a day of an hourly job) looks at every
/// partition in it, as `log` and `verify` do: it took the first hour alone,
/// and said a day whose other hours were stale was "loaded under the
/// current definition".
#[test]
fn a_coarser_name_diffs_the_stale_partitions_in_it() {
    let (_dir, config) = demo();
    let job = "fct_pageviews_hourly";
    let toml = std::fs::read_to_string(&config).unwrap();
    let (head, tail) = toml.split_once(&format!("name = \"{job}\"")).unwrap();
    let edited = tail.replacen("sql = \"\"\"\n", "sql = \"\"\"\n-- reviewed\n", 1);
    std::fs::write(&config, format!("{head}name = \"{job}\"{edited}")).unwrap();

    let out = idem(&config, &["status", job, "--format", "json"]);
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let stale = |p: &str| {
        rows.iter()
            .any(|r| r["partition"] == p && r["state"] == "stale")
    };
    // A day whose first hour and another are stale now.
    let day = rows
        .iter()
        .filter_map(|r| r["partition"].as_str())
        .filter_map(|p| p.strip_suffix("T00"))
        .find(|d| stale(&format!("{d}T00")) && stale(&format!("{d}T01")))
        .unwrap_or_else(|| panic!("no day with stale hours: {}", text(&out.stdout)))
        .to_string();
    let first = format!("{day}T00");
    let out = idem(&config, &["run", job, "--from", &first, "--to", &first]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let out = idem(&config, &["diff", job, &day]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(!said.contains(&first), "{said}");
    assert!(said.contains("was loaded under definition"), "{said}");
    assert!(said.contains("+-- reviewed"), "{said}");

    let out = idem(&config, &["run", job, "--from", &day, "--to", &day]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&idem(&config, &["diff", job, &day]).stdout);
    assert_eq!(
        said.trim(),
        format!(
            "{job}: no stale partitions in {day}: every load there used the current definition"
        )
    );
}

/// `idem diff` of a partition no partition of the job's lies in (a year
/// off) is refused as `log` refuses it, naming the job's partitions: it
/// said "has no successful load to compare with" and exited 0, as of a
/// partition of the job's not loaded yet.
#[test]
fn a_diff_outside_the_jobs_partitions_is_refused() {
    let (_dir, config) = demo();
    let job = "fct_pageviews_hourly";
    for partition in ["1999-01-01", "2099-01-01T00"] {
        let out = idem(&config, &["diff", job, partition]);
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{partition}: {said}");
        assert!(
            said.contains(&format!(
                "PARTITION {partition} is outside {job}'s partitions ("
            )) && said.contains("no load of it to compare with"),
            "{said}"
        );
        assert!(text(&out.stdout).is_empty(), "{partition}");
    }
}

/// `idem verify` of a coarser name that the job's start cuts (the month its
/// first day lies in) proves the job's partitions in it, as `status` shows
/// them: it refused the whole name, naming a day the operator never typed
/// ("2026-08-01 is outside fct_orders's partitions").
#[test]
fn verify_of_a_month_the_jobs_start_cuts_proves_the_days_from_its_start() {
    let (_dir, config) = demo();
    let toml = std::fs::read_to_string(&config).unwrap();
    let (_, job) = toml.split_once("name = \"fct_orders\"").unwrap();
    let start = job
        .lines()
        .find_map(|l| l.strip_prefix("start = \""))
        .and_then(|l| l.strip_suffix('"'))
        .unwrap()
        .to_string();
    let month = &start[..7];
    let first: chrono::NaiveDate = start.parse().unwrap();
    let next_month: chrono::NaiveDate =
        format!("{month}-01").parse::<chrono::NaiveDate>().unwrap() + chrono::Months::new(1);
    let days = (next_month - first).num_days();
    let out = idem(&config, &["verify", "fct_orders", month]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(
        said.contains(&format!("idempotent: fct_orders {start} ")),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "{days} of {days} partitions of fct_orders {month} are idempotent"
        )),
        "{said}"
    );
    // A month wholly before the job is still refused.
    let out = idem(&config, &["verify", "fct_orders", "2020-01"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("outside fct_orders's partitions"));
}

/// PostgreSQL's refusal to connect is said in the server's words, without
/// the server's C source line that the driver appends ("at line 768").
#[test]
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
fn a_postgres_connect_error_is_said_without_the_servers_source_line() {
    let server = std::env::var("IDEM_TEST_POSTGRES_URL").expect("IDEM_TEST_POSTGRES_URL");
    let (_, rest) = server.split_once("://").expect("a URL");
    let (user, at) = rest.rsplit_once('@').unwrap_or(("", rest));
    let host = at.split(['/', '?']).next().unwrap_or(at);
    let user = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("idem.toml");
    for (url, says) in [
        (
            format!("postgres://idem_no_such_role@{host}/postgres"),
            "role \"idem_no_such_role\" does not exist",
        ),
        (
            format!("postgres://{user}{host}/idem_no_such_db"),
            "database \"idem_no_such_db\" does not exist",
        ),
    ] {
        std::fs::write(&config, format!("[warehouse]\nurl = \"{url}\"\n")).unwrap();
        let out = idem(&config, &["status"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains(" at line "), "{err}");
    }
}

/// QA: in a folder the user cannot write, `idem demo` said "cannot create
/// idem-demo" and `idem init` "cannot write idem.toml", naming neither the
/// whole path nor a way on. (`/proc` takes no new files, even from root,
/// as CI runs.)
#[test]
fn a_folder_that_cannot_be_written_is_named_whole_with_the_way_on() {
    let (_dir, config) = demo();
    let unwritable = Path::new("/proc");
    let out = crate::common::idem_command()
        .arg("demo")
        .current_dir(unwritable)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot create /proc/idem-demo: ") && err.contains("idem demo --path FOLDER"),
        "{err}"
    );

    let url = format!(
        "sqlite://{}",
        config.parent().unwrap().join("warehouse.db").display()
    );
    let out = crate::common::idem_command()
        .args(["init", &url])
        .current_dir(unwritable)
        .env_remove("IDEM_CONFIG")
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot write /proc/idem.toml: ")
            && err.contains("idem --config PATH init URL"),
        "{err}"
    );
}

/// A job's `start` as the demo's config writes it: the demo's days end
/// today, so its dates move with them.
fn demo_start(config: &Path, job: &str) -> chrono::NaiveDate {
    let toml = std::fs::read_to_string(config).unwrap();
    let (_, tail) = toml.split_once(&format!("name = \"{job}\"")).unwrap();
    let start = tail
        .lines()
        .find_map(|l| l.strip_prefix("start = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("{job}'s start"));
    chrono::NaiveDate::parse_from_str(start, "%Y-%m-%d").unwrap()
}

/// An orchestrator passes a data interval's bounds as instants with their
/// UTC offset (Airflow's `{{ data_interval_start }}` and `{{
/// data_interval_end }}`, Dagster's time windows): the interval is
/// half-open, as partitions are, so `--from` names the partition beginning
/// at it and `--to` the one ending at it, whatever the offset it is written
/// in. Both were refused as "not a partition". An instant inside a
/// partition (a local midnight) is refused, named in UTC, where taking the
/// partition around it would load a window nobody asked for; a command's
/// one PARTITION given as an instant is the partition beginning at it.
#[test]
fn an_orchestrators_data_interval_names_the_partitions_inside_it() {
    let (_dir, config) = demo();
    let planned = |args: &[&str]| planned(&config, args);
    let day = demo_start(&config, "fct_orders") + chrono::Days::new(1);
    let days = |n: u64| (day + chrono::Days::new(n)).to_string();
    let three_days: Vec<String> = (0..3).map(days).collect();
    let utc = |d: &str, time: &str| format!("{d}T{time}");
    for (from, to) in [
        (
            utc(&days(0), "00:00:00+00:00"),
            utc(&days(3), "00:00:00+00:00"),
        ),
        (
            utc(&days(0), "02:00:00+02:00"),
            utc(&days(2), "19:00:00-05:00"),
        ),
        (utc(&days(0), "00:00:00Z"), utc(&days(3), "00:00:00Z")),
    ] {
        let args = ["fct_orders", "--from", &from, "--to", &to];
        assert_eq!(planned(&args), three_days, "{from} {to}");
    }
    let hour = demo_start(&config, "fct_pageviews_hourly") + chrono::Days::new(1);
    let args = [
        "fct_pageviews_hourly",
        "--from",
        &format!("{hour}T05:00:00+02:00"),
        "--to",
        &format!("{hour}T06:00:00+00:00"),
    ];
    let hours: Vec<String> = ["03", "04", "05"]
        .iter()
        .map(|h| format!("{hour}T{h}"))
        .collect();
    assert_eq!(planned(&args), hours);

    let before = (day - chrono::Days::new(1)).to_string();
    for (flag, given, says) in [
        (
            "--from",
            utc(&days(0), "00:00:00+02:00"),
            format!(
                "is {before} 22:00:00 UTC, inside fct_orders's day partition {before}: an instant must be where a partition begins"
            ),
        ),
        (
            "--to",
            utc(&days(2), "05:00:00Z"),
            format!(
                "inside fct_orders's day partition {}: an instant must be where a partition begins (partitions are UTC windows); the range ending with {} ends at {} 00:00:00 UTC",
                days(2),
                days(2),
                days(3)
            ),
        ),
    ] {
        let out = idem(&config, &["run", "fct_orders", flag, &given, "--dry-run"]);
        assert_eq!(out.status.code(), Some(2), "{flag} {given}");
        let err = text(&out.stderr);
        assert!(err.contains(&format!("{flag} {given} ")), "{err}");
        assert!(err.contains(&says), "{err}");
    }

    // A day the demo's history has attempts of.
    let history = text(&idem(&config, &["log", "fct_orders"]).stdout);
    let tried = history
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or_else(|| panic!("{history}"));
    let by_name = idem(&config, &["log", "fct_orders", tried]);
    let by_instant = idem(&config, &["log", "fct_orders", &utc(tried, "00:00:00Z")]);
    assert_eq!(
        by_instant.status.code(),
        Some(0),
        "{}",
        text(&by_instant.stderr)
    );
    assert!(
        text(&by_name.stdout).contains(&format!(" {tried} ")),
        "{}",
        text(&by_name.stdout)
    );
    assert_eq!(text(&by_instant.stdout), text(&by_name.stdout));
    let untried = idem(&config, &["log", "fct_orders", &utc(&days(0), "00:00:00Z")]);
    let says = text(&untried.stdout);
    assert!(
        says.contains(&format!("recorded for fct_orders {}\n", days(0)))
            || says.contains(&format!(" {} ", days(0))),
        "{says}"
    );
    let status = idem(
        &config,
        &[
            "status",
            "fct_orders",
            "--from",
            &utc(&days(0), "00:00:00Z"),
            "--to",
            &utc(&days(3), "00:00:00Z"),
            "--format",
            "csv",
        ],
    );
    let shown = text(&status.stdout);
    let rows: Vec<&str> = shown.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{shown}");
    assert!(
        rows[0].contains(&days(0)) && rows[2].contains(&days(2)),
        "{shown}"
    );
}

/// The partitions `idem run ARGS --dry-run --json` plans, which must
/// succeed.
fn planned(config: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend(["--dry-run", "--json"]);
    let out = idem(config, &all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    let plan: Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "dry_run")
        .expect("a dry_run event");
    plan["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["partition"].as_str().unwrap().to_string())
        .collect()
}

/// `idem run JOB 2026-11-20`, as an operator types it first and as an
/// orchestrator passes its `{{ ds }}`, runs that partition; `A..B` a range,
/// as the console's `:run` takes them (they were refused: "unexpected
/// argument"). A coarser name covers its partitions, an instant names the
/// partition that begins at it, and a range given both ways is refused.
#[test]
fn a_run_takes_its_partitions_as_it_names_them() {
    let (_dir, config) = demo();
    let day = demo_start(&config, "fct_orders") + chrono::Days::new(1);
    let days = |n: u64| (day + chrono::Days::new(n)).to_string();
    assert_eq!(planned(&config, &["fct_orders", &days(0)]), vec![days(0)]);
    assert_eq!(
        planned(
            &config,
            &["fct_orders", &format!("{}..{}", days(0), days(2))]
        ),
        (0..3).map(days).collect::<Vec<_>>()
    );
    let hour = demo_start(&config, "fct_pageviews_hourly") + chrono::Days::new(1);
    let hours = planned(&config, &["fct_pageviews_hourly", &hour.to_string()]);
    assert_eq!(hours.len(), 24, "{hours:?}");
    assert_eq!(hours[0], format!("{hour}T00"));
    assert_eq!(
        planned(
            &config,
            &["fct_pageviews_hourly", &format!("{hour}T05:00:00+02:00")]
        ),
        vec![format!("{hour}T03")]
    );

    let out = idem(
        &config,
        &["run", "fct_orders", &days(0), "--to", &days(2), "--dry-run"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{} and --from/--to both name the range", days(0))),
        "{err}"
    );
    let out = idem(&config, &["run", "fct_orders", "2026-13-01", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("\"2026-13-01\" has the right form"), "{err}");
}

/// QA: a scheduler ran `idem --config ../idem.toml run …` in a scratch
/// folder it removed while the run went on: the repeat command printed at
/// the end named the config as typed, relative to a folder that was gone,
/// and ran nowhere. The config's path is taken from the root as idem
/// starts, and the printed command runs as printed from any folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relative_config_is_named_from_the_root_when_the_folder_run_in_is_gone() {
    use sqlx::{Connection, Executor};
    let db = common::TestDb::new(common::Kind::Sqlite)
        .await
        .expect("sqlite");
    let (config, parsed) = db.config(&common::replace_job(
        "fct",
        "fct",
        "2026-01-02",
        "select id, amount, dt from src where dt >= :start and dt < :end",
    ));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL CHECK (amount >= 0), dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 5, '2026-01-01'), (2, -1, '2026-01-02')",
    ])
    .await
    .expect("setup");
    wh.close().await;
    let work = db.path().join("work");
    std::fs::create_dir(&work).expect("work");
    // The warehouse held, so that the run waits on it after reading its
    // config, while the folder it runs in is removed.
    let file = db.path().join("warehouse.db");
    let mut holder = sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.display()))
        .await
        .expect("holder");
    holder.execute("BEGIN EXCLUSIVE").await.expect("lock");
    let run = common::idem_command()
        .args(["--config", "../idem.toml", "run", "fct", "--yes"])
        .current_dir(&work)
        .env("XDG_STATE_HOME", db.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn idem");
    let fds = format!("/proc/{}/fd", run.id());
    let opened = || {
        std::fs::read_dir(&fds)
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == file))
    };
    let mut waited = 0;
    while !opened() && waited < 300 {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(opened(), "idem never opened the warehouse");
    std::fs::remove_dir(&work).expect("the folder run in removed");
    holder.execute("ROLLBACK").await.expect("unlock");
    drop(holder);
    let out = run.wait_with_output().expect("idem ran");
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let repeat = said
        .lines()
        .find_map(|l| l.split_once("repeat: ").map(|(_, command)| command))
        .unwrap_or_else(|| panic!("no repeat command: {said}"));
    assert!(
        repeat.starts_with(&format!("idem --config {} run fct ", config.display())),
        "{said}"
    );
    // As printed, from elsewhere: it finds the config, and the partition
    // fails again (its source is as it was), exit 1, not 2.
    let bin = Path::new(env!("CARGO_BIN_EXE_idem")).parent().expect("bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let again = Command::new("sh")
        .args(["-c", repeat])
        .current_dir("/")
        .env("PATH", path)
        .env("XDG_STATE_HOME", db.path())
        .output()
        .expect("sh ran");
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stderr));
}
