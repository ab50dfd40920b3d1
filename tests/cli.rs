//! The headless commands on the demo warehouse: every state shows in
//! `idem status`, `idem run --json` speaks one event per line, exit codes.

mod common;

use std::process::Command;

use serde_json::Value;
use sqlx::Row;

/// The config of a SQLite warehouse at `db` with one daily replace job,
/// `fct`, from 2026-01-01 through `end`, reading `src (id, dt)`.
fn daily_fct(db: &std::path::Path, end: &str) -> String {
    format!(
        "[warehouse]\nurl = \"sqlite://{}\"\n\n[[jobs]]\nname = \"fct\"\ntarget = \"fct\"\n\
         strategy = \"replace_partition\"\npartition_column = \"dt\"\ngrain = \"day\"\n\
         start = \"2026-01-01\"\nend = \"{end}\"\n\
         sql = \"select id, dt from src where dt >= :start and dt < :end\"\n",
        db.display()
    )
}

/// Writes `text` as the config at `config`, makes its SQLite warehouse
/// file `db`, and connects to it.
async fn sqlite_warehouse(
    config: &std::path::Path,
    db: &std::path::Path,
    text: &str,
) -> idem::warehouse::Warehouse {
    std::fs::write(config, text).unwrap();
    std::fs::File::create(db).unwrap();
    let parsed = idem::config::parse(config, text, &|_| None).unwrap();
    idem::warehouse::Warehouse::connect(&parsed.warehouse, 1)
        .await
        .unwrap()
}

/// The `--json` events a command wrote, one per line.
fn json_lines(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

fn idem(config: &std::path::Path, args: &[&str]) -> std::process::Output {
    crate::common::idem_command()
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .expect("run idem")
}

#[test]
fn demo_shows_every_state_and_reruns_its_failures() {
    let dir = tempfile::tempdir().unwrap();
    let demo = crate::common::idem_command()
        .args(["demo", "--path"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        demo.status.success(),
        "{}",
        String::from_utf8_lossy(&demo.stderr)
    );
    // Some 15 s of work: each step is told as it starts.
    let told = String::from_utf8_lossy(&demo.stderr);
    let steps: Vec<&str> = told.lines().filter(|l| l.starts_with("  ")).collect();
    assert_eq!(steps.len(), 4, "{told}");
    assert!(steps[0].contains("generating the sources"), "{told}");
    assert!(steps[3].starts_with("  done in "), "{told}");
    let config = dir.path().join("idem.toml");

    let out = idem(&config, &["status", "--format", "json"]);
    assert!(out.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    for state in [
        "loaded",
        "failed",
        "missing",
        "stale",
        "unmanaged",
        "empty",
        "vanished",
        "future",
    ] {
        assert!(
            rows.iter().any(|r| r["state"] == state),
            "no {state} partition in the demo"
        );
    }
    assert!(
        rows.iter().any(|r| r["anomaly"] == true),
        "no anomaly in the demo"
    );
    assert!(
        rows.iter().any(|r| r["drift"] == true),
        "no drift in the demo"
    );
    let failed_error = rows
        .iter()
        .find(|r| r["state"] == "failed" && r["job"] == "fct_orders")
        .and_then(|r| r["last_error"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        failed_error.contains("CHECK constraint failed"),
        "{failed_error}"
    );

    // A stale partition says why, and what shows the change.
    let table = idem(&config, &["status"]);
    let text = String::from_utf8_lossy(&table.stdout);
    let stale = text
        .lines()
        .find(|l| l.contains(" ~ stale "))
        .unwrap_or_else(|| panic!("no stale row: {text}"));
    let fields: Vec<&str> = stale.split_whitespace().collect();
    assert!(
        stale.ends_with(&format!(
            "definition changed since its load: idem diff {} {}",
            fields[0], fields[1]
        )),
        "{stale}"
    );

    let csv = idem(&config, &["status", "fct_orders", "--format", "csv"]);
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text.starts_with("job,partition,state,"));
    assert_eq!(
        text.lines().count(),
        rows.iter().filter(|r| r["job"] == "fct_orders").count() + 1
    );

    // A dry run changes nothing and names what it would do.
    let dry = idem(
        &config,
        &["run", "fct_orders", "--only", "failed", "--dry-run"],
    );
    assert!(dry.status.success());
    assert!(String::from_utf8_lossy(&dry.stdout).contains("3 partitions"));

    // The failures re-run as JSON events, one per line.
    let run = idem(
        &config,
        &[
            "run",
            "fct_orders",
            "--only",
            "failed",
            "--json",
            "--reason",
            "upstream fixed",
        ],
    );
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let events = json_lines(&run);
    assert_eq!(events.first().unwrap()["event"], "run_started");
    assert_eq!(events.first().unwrap()["reason"], "upstream fixed");
    assert_eq!(events.last().unwrap()["event"], "run_finished");
    assert_eq!(events.last().unwrap()["succeeded"], 3);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == "partition_succeeded")
            .count(),
        3
    );
    assert!(kinds.contains(&"partition_log"));

    let after = idem(&config, &["status", "fct_orders", "--format", "json"]);
    let rows: Vec<Value> = serde_json::from_slice(&after.stdout).unwrap();
    assert!(rows.iter().all(|r| r["state"] != "failed"));

    let log = idem(&config, &["log", "fct_orders", &failed_partition(&rows)]);
    assert!(log.status.success());

    // A run of one partition says so in the singular.
    let one = failed_partition(&rows);
    let again = idem(
        &config,
        &["run", "fct_orders", "--from", &one, "--to", &one],
    );
    let said = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{said}");
    assert!(
        said.contains("fct_orders: 1 partition, concurrency"),
        "{said}"
    );

    let unknown = idem(&config, &["run", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no job named \"nope\""));
    let bad_range = idem(&config, &["run", "fct_orders", "--from", "June"]);
    assert_eq!(bad_range.status.code(), Some(2));

    // `idem demo` again resets the warehouse: the failures are back.
    let again = crate::common::idem_command()
        .args(["demo", "--path"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(again.status.success());
    let reset = idem(&config, &["status", "fct_orders", "--format", "json"]);
    let rows: Vec<Value> = serde_json::from_slice(&reset.stdout).unwrap();
    assert_eq!(rows.iter().filter(|r| r["state"] == "failed").count(), 3);
}

fn failed_partition(rows: &[Value]) -> String {
    rows.iter()
        .find(|r| r["attempts"].as_u64().unwrap_or(0) > 1)
        .and_then(|r| r["partition"].as_str())
        .unwrap_or("2026-01-01")
        .to_string()
}

#[tokio::test]
async fn failures_exit_1_and_a_missing_target_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let job = |name: &str, target: &str, sql: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\nsql = \"{sql}\"\n\n"
        )
    };
    let text = format!(
        "[warehouse]\nurl = \"sqlite://{}\"\n\n{}{}",
        db.display(),
        job(
            "broken",
            "t",
            "select :start as dt, 1 / 0 as x, nope from t"
        ),
        job("lost", "nowhere", "select :start as dt")
    );
    let wh = sqlite_warehouse(&config, &db, &text).await;
    wh.execute_script(&["CREATE TABLE t (dt TEXT, x INTEGER)"])
        .await
        .unwrap();
    wh.close().await;

    let out = idem(&config, &["run", "broken"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The SELECT fails for every partition alike: the run stops at the first.
    assert!(
        stdout.contains("0 succeeded, 1 failed, 1 not started"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no such column: nope"), "{stderr}");
    // Repeating it as it is would fail alike: the command is for after the fix.
    assert!(
        stderr.contains("idem: stopped: broken does not fit its warehouse as written")
            && stderr.contains("idem: once the job is fixed, repeat: ")
            && !stderr.contains("to finish, repeat"),
        "{stderr}"
    );

    // A target that is not there is refused before the run starts: no
    // failed attempt lands in the ledger (the partition would then read as
    // failed under a corrected config).
    let out = idem(&config, &["run", "lost"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:16: lost: target table nowhere does not exist in the warehouse; create it, or correct the name in target = \"nowhere\". Nothing was run or recorded",
            config.display()
        )),
        "{stderr}"
    );
    let parsed = idem::config::parse(&config, &text, &|_| None).unwrap();
    let wh = idem::warehouse::Warehouse::connect(&parsed.warehouse, 1)
        .await
        .unwrap();
    let recorded: i64 = sqlx::query("SELECT count(*) FROM idem_attempts WHERE job = 'lost'")
        .fetch_one(wh.pool())
        .await
        .unwrap()
        .get(0);
    assert_eq!(recorded, 0);
    wh.close().await;
    let out = idem(&config, &["run", "lost", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn an_unreachable_warehouse_is_named_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("idem.toml");
    std::fs::write(
        &config,
        "[warehouse]\nurl = \"postgres://idem:secret@127.0.0.1:1/none\"\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = idem(&config, &["status"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot connect to postgres://idem:***@127.0.0.1:1/none"),
        "{stderr}"
    );
    assert!(stderr.contains("refused"), "{stderr}");
    assert!(!stderr.contains("secret"));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "no waiting on a pool"
    );
}

/// A range that cannot be run, shown or proved is refused before idem
/// connects: at once, and in the same words whether or not the warehouse
/// answers (here it does not).
#[test]
fn a_bad_range_is_refused_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("idem.toml");
    let job = |name: &str, end: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"t\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\n{end}\
             sql = \"select dt from src where dt >= :start and dt < :end\"\n\n"
        )
    };
    std::fs::write(
        &config,
        format!(
            "[warehouse]\nurl = \"postgres://idem@127.0.0.1:1/none\"\n\n{}{}",
            job("j", "end = \"2026-01-31\"\n"),
            job("open", "")
        ),
    )
    .unwrap();
    let cases: [(&[&str], &str); 13] = [
        (
            &["run", "j", "--from", "2026-01-05", "--to", "2026-01-04"],
            "--from 2026-01-05 is after --to 2026-01-04",
        ),
        (
            &["status", "j", "--from", "2026-01-05", "--to", "2026-01-04"],
            "--from 2026-01-05 is after --to 2026-01-04",
        ),
        (
            &["status", "j", "--from", "2025-01-05", "--to", "2025-01-31"],
            "--to 2025-01-31 is before j's first partition (2026-01-01 to 2026-01-31): nothing to show; choose --to 2026-01-01 or later",
        ),
        (
            &["status", "j", "--from", "2027-01-05"],
            // The range is said as given, not reversed against a default.
            "--from 2027-01-05 is after j's last partition (2026-01-01 to 2026-01-31): nothing to show; choose --from 2026-01-31 or earlier",
        ),
        (
            &["verify", "j", "2025-12-30"],
            "2025-12-30 is outside j's partitions",
        ),
        (
            &["verify", "open", "2099-01-01"],
            "2099-01-01 has not begun",
        ),
        (
            &["run", "j", "--from", "2025-12-30", "--to", "2026-01-04"],
            "--from 2025-12-30 is outside j's partitions (2026-01-01 to 2026-01-31, day grain); to run the part inside them: idem --config ",
        ),
        (
            &["run", "j", "--from", "2026-01-30", "--to", "2026-02-02"],
            "--to 2026-02-02 is outside j's partitions",
        ),
        // QA: a range typed as partitions was said back with its ends
        // side by side ("2025-12-30 2025-12-30 is outside"); it is said as
        // typed.
        (
            &["run", "j", "2025-12-30"],
            "idem: 2025-12-30 is outside j's partitions (2026-01-01 to 2026-01-31, day grain); none of it",
        ),
        (
            &["run", "j", "2025-12-01..2025-12-30"],
            "idem: 2025-12-01..2025-12-30 is outside j's partitions",
        ),
        (
            &["run", "j", "2025-12-30..2026-02-02"],
            "idem: 2025-12-30..2026-02-02 is outside j's partitions (2026-01-01 to 2026-01-31, day grain); to run the part inside them",
        ),
        (
            &["run", "j", "2025-12-30..2026-01-04"],
            "idem: 2025-12-30 is outside j's partitions",
        ),
        (
            &["run", "open", "--from", "2026-01-30", "--to", "2099-01-01"],
            "has not ended yet",
        ),
    ];
    for (args, says) in cases {
        let out = idem(&config, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("cannot connect"), "{args:?}: {stderr}");
    }
    // A flag that cannot apply to the job is said of at once, too.
    let out = idem(&config, &["run", "j", "--through-latest"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--through-latest changes nothing here: it is for merge_key jobs"),
        "{stderr}"
    );
}

/// A coarser `--from` or `--to` that the job's `start` or `end` cuts is the
/// job's partitions in it, in `run`, its dry run, `status` and `verify`
/// alike, and `run` says where the range begins or ends instead (QA:
/// `run --from 2026-01 --to 2026-01` of a daily job ending 2026-01-04 was
/// refused, naming 2026-01-31, where `status` showed the job's days). A
/// name of the job's own grain outside it, or a coarser one wholly outside
/// it, is still refused.
#[tokio::test]
async fn a_coarser_name_the_jobs_range_cuts_is_the_jobs_partitions_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let (config, db) = (dir.path().join("idem.toml"), dir.path().join("w.db"));
    let job = |name: &str, grain: &str, start: &str, end: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{name}\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"dt\"\ngrain = \"{grain}\"\nstart = \"{start}\"\nend = \"{end}\"\n\
             sql = \"select id, dt from src where dt >= :start and dt < :end\"\n\n"
        )
    };
    let text = format!(
        "[warehouse]\nurl = \"sqlite://{}\"\n\n{}{}",
        db.display(),
        job("daily", "day", "2026-01-02", "2026-01-04"),
        job("hourly", "hour", "2026-01-02T05", "2026-01-04T10"),
    );
    let wh = sqlite_warehouse(&config, &db, &text).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER, dt TEXT)",
        "CREATE TABLE daily (id INTEGER, dt TEXT)",
        "CREATE TABLE hourly (id INTEGER, dt TEXT)",
    ])
    .await
    .unwrap();
    wh.close().await;
    let planned = |args: &[&str]| -> (Vec<String>, String) {
        let mut all = args.to_vec();
        all.extend(["--dry-run", "--json"]);
        let out = idem(&config, &all);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        let event: Value = serde_json::from_slice(&out.stdout).unwrap();
        let names = event["partitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["partition"].as_str().unwrap().to_string())
            .collect();
        (names, stderr)
    };
    let ends = |names: &[String]| {
        (
            names[0].clone(),
            names[names.len() - 1].clone(),
            names.len(),
        )
    };
    let (days, said) = planned(&["run", "daily", "--from", "2026-01", "--to", "2026-01"]);
    assert_eq!(ends(&days), ("2026-01-02".into(), "2026-01-04".into(), 3));
    assert!(
        said.contains("--from 2026-01 begins before daily's start: the range begins at 2026-01-02")
            && said.contains("--to 2026-01 ends after daily's end: the range ends at 2026-01-04"),
        "{said}"
    );
    let (hours, said) = planned(&[
        "run",
        "hourly",
        "--from",
        "2026-01-02",
        "--to",
        "2026-01-04",
    ]);
    assert_eq!(
        ends(&hours),
        ("2026-01-02T05".into(), "2026-01-04T10".into(), 19 + 24 + 11)
    );
    assert!(said.contains("the range ends at 2026-01-04T10"), "{said}");
    let (hours, said) = planned(&["run", "hourly", "--from", "2026-01", "--to", "2026-01-03"]);
    assert_eq!(
        ends(&hours),
        ("2026-01-02T05".into(), "2026-01-03T23".into(), 19 + 24)
    );
    assert!(
        !said.contains("ends after"),
        "the --to is inside the job: {said}"
    );
    let status = idem(
        &config,
        &[
            "status", "daily", "--from", "2026-01", "--to", "2026-01", "--format", "json",
        ],
    );
    let rows: Vec<Value> = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    let verify = idem(&config, &["verify", "hourly", "2026-01-04"]);
    let proved = String::from_utf8_lossy(&verify.stdout);
    assert!(
        proved.contains("of 11 partitions of hourly 2026-01-04"),
        "{proved}"
    );
    for (args, says) in [
        (
            &["run", "daily", "--from", "2026-01-01", "--to", "2026-01-03"][..],
            "--from 2026-01-01 is outside daily's partitions (2026-01-02 to 2026-01-04, day grain)",
        ),
        (
            &[
                "run",
                "hourly",
                "--from",
                "2026-01-02",
                "--to",
                "2026-01-04T11",
            ],
            "--to 2026-01-04T11 is outside hourly's partitions",
        ),
    ] {
        let out = idem(&config, &[args, &["--dry-run"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    // QA: a coarse bound wholly outside the job was refused as
    // "2025-12-01 is outside …", a day nobody typed, with no way on. It
    // names what was typed and gives the command that runs the part of the
    // range inside the job, which works as printed.
    for (args, says, then) in [
        (
            &["run", "daily", "--from", "2025-12", "--to", "2026-01-03"][..],
            "--from 2025-12 is outside daily's partitions (2026-01-02 to 2026-01-04, day grain); to run the part inside them: idem --config ",
            "run daily --from 2026-01-02 --to 2026-01-03 --dry-run",
        ),
        (
            &["run", "daily", "--from", "2026-01-03", "--to", "2026-02"],
            "--to 2026-02 is outside daily's partitions",
            "run daily --from 2026-01-03 --to 2026-01-04 --dry-run",
        ),
        (
            &["run", "daily", "--from", "2025-12", "--to", "2025-12"],
            "--from 2025-12 --to 2025-12 is outside daily's partitions (2026-01-02 to 2026-01-04, day grain); none of it is a partition of the job; to run its whole range: ",
            "run daily --from 2026-01-02 --to 2026-01-04 --dry-run",
        ),
    ] {
        let out = idem(&config, &[args, &["--dry-run"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("2025-12-01"), "{args:?}: {stderr}");
        let command = stderr.trim_end().rsplit(": ").next().unwrap();
        assert!(command.ends_with(then), "{args:?}: {stderr}");
        let words: Vec<&str> = command.split(' ').collect();
        assert_eq!(&words[..2], ["idem", "--config"], "{command}");
        let rerun = crate::common::idem_command()
            .args(&words[1..])
            .output()
            .unwrap();
        assert_eq!(
            rerun.status.code(),
            Some(0),
            "{command}: {}",
            String::from_utf8_lossy(&rerun.stderr)
        );
    }
    let out = idem(&config, &["verify", "daily", "2025-12"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "PARTITION 2025-12 is outside daily's partitions (2026-01-02 to 2026-01-04; day grain"
        ),
        "{stderr}"
    );
}

#[test]
fn config_path_prints_where_the_user_config_is_read() {
    let run = |env: &[(&str, &str)]| {
        let mut cmd = crate::common::idem_command();
        cmd.args(["config", "path"])
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("HOME");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let xdg = run(&[("XDG_CONFIG_HOME", "/tmp/xdg"), ("HOME", "/home/u")]);
    assert!(xdg.status.success());
    assert_eq!(
        String::from_utf8_lossy(&xdg.stdout).trim(),
        "/tmp/xdg/idem/config.toml"
    );
    // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says: the
    // user config does not depend on the folder idem runs in.
    for env in [
        &[("HOME", "/home/u")][..],
        &[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "cfg")],
    ] {
        let home = run(env);
        assert_eq!(
            String::from_utf8_lossy(&home.stdout).trim(),
            "/home/u/.config/idem/config.toml",
            "{env:?}"
        );
    }
    let neither = run(&[]);
    assert_eq!(neither.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&neither.stderr).contains("XDG_CONFIG_HOME"));
}

/// One job that cannot be read (its target missing) does not hide the
/// others: `idem status` shows them, and the broken one in its place as
/// unreadable with the reason, in every format; the exit code says 1.
#[tokio::test]
async fn status_and_jobs_show_every_other_job_when_one_cannot_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let job = |name: &str, target: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\n\
             sql = \"select :start as dt\"\n\n"
        )
    };
    let text = format!(
        "[warehouse]\nurl = \"sqlite://{}\"\n\n{}{}{}",
        db.display(),
        job("first", "t"),
        job("lost", "nowhere"),
        job("last", "t")
    );
    let wh = sqlite_warehouse(&config, &db, &text).await;
    wh.execute_script(&["CREATE TABLE t (dt TEXT)"])
        .await
        .unwrap();
    wh.close().await;

    let table = idem(&config, &["status"]);
    assert_eq!(table.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&table.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{stdout}");
    assert!(lines[1].starts_with("first ") && lines[2].starts_with("first "));
    assert!(lines[3].starts_with("lost "), "{stdout}");
    assert!(lines[3].contains("unreadable"), "{stdout}");
    // Marked apart from every state's glyph: `?` is unmanaged's.
    assert!(lines[3].contains(" - unreadable"), "{stdout}");
    assert!(!lines[3].contains('?'), "{stdout}");
    assert!(lines[3].contains("nowhere"), "{stdout}");
    assert!(lines[4].starts_with("last ") && lines[5].starts_with("last "));
    let stderr = String::from_utf8_lossy(&table.stderr);
    assert!(stderr.contains("idem: lost: unreadable: "), "{stderr}");

    let json = idem(&config, &["status", "--format", "json"]);
    assert_eq!(json.status.code(), Some(1));
    let rows: Vec<Value> = serde_json::from_slice(&json.stdout).unwrap();
    let jobs: Vec<&str> = rows.iter().filter_map(|r| r["job"].as_str()).collect();
    assert_eq!(jobs, ["first", "first", "lost", "last", "last"]);
    assert_eq!(rows[2]["state"], "unreadable");
    assert!(rows[2]["partition"].is_null());
    assert!(
        rows[2]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("nowhere")),
        "{:#?}",
        rows[2]
    );

    let csv = idem(&config, &["status", "--format", "csv"]);
    assert_eq!(csv.status.code(), Some(1));
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("lost,,unreadable,")),
        "{text}"
    );
    assert_eq!(text.lines().count(), 6, "{text}");

    // `idem jobs` lists every job, and exits and says on stderr as status does.
    let jobs = idem(&config, &["jobs"]);
    assert_eq!(jobs.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&jobs.stdout);
    let names: Vec<&str> = stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["first", "lost", "last"], "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("lost ") && l.contains("unreadable") && l.contains("nowhere")),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&jobs.stderr);
    assert!(stderr.contains("idem: lost: unreadable: "), "{stderr}");
    assert!(stderr.contains("nowhere"), "{stderr}");
}

/// A partition the shrink guard refused reads as refused, and is not in the
/// repeat command, which would be refused again: the CLI says its source
/// looks incomplete and names the command that allows the shrink. The
/// partition that failed for another reason is repeated, once its cause
/// (a CHECK the data breaks: a repeat as it stands fails alike) is fixed.
#[tokio::test]
async fn a_refused_partition_is_said_apart_from_the_repeat_command() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let text = daily_fct(&db, "2026-01-03");
    let wh = sqlite_warehouse(&config, &db, &text).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL CHECK (id > 0), dt TEXT NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-03')",
    ])
    .await
    .unwrap();
    let out = idem(&config, &["run", "fct"]);
    assert_eq!(out.status.code(), Some(0));
    // The second day's source is gone (late), the third's breaks a CHECK.
    wh.execute_script(&[
        "DELETE FROM src WHERE dt = '2026-01-02'",
        "INSERT INTO src VALUES (-3, '2026-01-03')",
    ])
    .await
    .unwrap();
    wh.close().await;

    let out = idem(&config, &["run", "fct"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("fct: 1 succeeded, 1 failed, 1 refused by the shrink guard"),
        "{stdout}"
    );
    assert!(
        stderr.contains("2026-01-02 ⊖ refused (attempt 2) · source looks incomplete"),
        "{stderr}"
    );
    assert!(!stderr.contains("2026-01-02 ✗ failed"), "{stderr}");
    let cfg = config.display();
    assert!(
        stderr.contains(&format!(
            "idem: once the cause of these failures is fixed, repeat: idem --config {cfg} run fct --only failed --from 2026-01-03 --to 2026-01-03\n"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "idem: the source looks incomplete for 2026-01-02 (the shrink guard refused it, and kept its rows): fix the source and run it again (idem --config {cfg} run fct --only refused --from 2026-01-02 --to 2026-01-02), or if it really shrank: idem --config {cfg} run fct --only refused --from 2026-01-02 --to 2026-01-02 --allow-shrink\n"
        )),
        "{stderr}"
    );
    // The command takes the refused partition alone, whatever its range.
    let plan = idem(
        &config,
        &["run", "fct", "--only", "refused", "--dry-run", "--json"],
    );
    assert_eq!(plan.status.code(), Some(0));
    let plan: Value = serde_json::from_str(String::from_utf8_lossy(&plan.stdout).trim()).unwrap();
    let planned: Vec<&str> = plan["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["partition"].as_str())
        .collect();
    assert_eq!(planned, ["2026-01-02"]);
    // With --json the refusal is marked on its event and counted apart in
    // the run's end; the failure for another reason is not.
    let out = idem(&config, &["run", "fct", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let events = json_lines(&out);
    let failed: Vec<(&str, &serde_json::Value)> = events
        .iter()
        .filter(|e| e["event"] == "partition_failed")
        .map(|e| (e["partition"].as_str().unwrap_or(""), &e["refused"]))
        .collect();
    assert_eq!(
        failed,
        [("2026-01-02", &true.into()), ("2026-01-03", &false.into())],
        "{events:?}"
    );
    let finished = events
        .iter()
        .find(|e| e["event"] == "run_finished")
        .expect("run_finished");
    assert_eq!(finished["failed"], 2, "{finished}");
    assert_eq!(finished["refused"], 1, "{finished}");
}

/// QA: a partition whose lock another session held past `lock_timeout` is
/// recorded refused (it wrote nothing, and changes no state), but `idem
/// run` said "✗ failed", counted it failed, and its `--json` line said
/// nothing of why. It reads refused now, counted apart, its cause on its
/// event and in the run's end, and the repeat still covers it: once the
/// other session is done, it loads.
#[tokio::test]
async fn a_partition_whose_lock_was_held_elsewhere_is_said_refused_and_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let text = daily_fct(&db, "2026-01-02").replace(
        "[[jobs]]",
        "lock_timeout = \"0s\"\n\n[defaults]\nretries = 0\n\n[[jobs]]",
    );
    let wh = sqlite_warehouse(&config, &db, &text).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')",
    ])
    .await
    .unwrap();
    wh.close().await;
    let out = idem(&config, &["run", "fct"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    // Another writer holds the file, as another run loading would.
    let mut holder = {
        use sqlx::Connection;
        sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap()
    };
    sqlx::Executor::execute(&mut holder, "BEGIN IMMEDIATE")
        .await
        .unwrap();
    let out = idem(&config, &["run", "fct", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let events = json_lines(&out);
    let failed: Vec<(&str, &Value, &Value)> = events
        .iter()
        .filter(|e| e["event"] == "partition_failed")
        .map(|e| {
            (
                e["partition"].as_str().unwrap_or(""),
                &e["cause"],
                &e["refused"],
            )
        })
        .collect();
    let held = (&Value::from("lock_held"), &Value::from(false));
    assert_eq!(
        failed,
        [
            ("2026-01-01", held.0, held.1),
            ("2026-01-02", held.0, held.1)
        ],
        "{events:?}"
    );
    let finished = events
        .iter()
        .find(|e| e["event"] == "run_finished")
        .expect("run_finished");
    assert_eq!(
        (
            &finished["failed"],
            &finished["lock_held"],
            &finished["refused"]
        ),
        (&2.into(), &2.into(), &0.into()),
        "{finished}"
    );

    let out = idem(&config, &["run", "fct"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("fct: 0 succeeded, 0 failed, 2 refused for a lock held elsewhere"),
        "{stdout}"
    );
    assert!(
        stderr.contains("2026-01-01 ⊖ refused (attempt "),
        "{stderr}"
    );
    assert!(!stderr.contains("✗ failed"), "{stderr}");
    let repeat = format!(
        "idem --config {} run fct --from 2026-01-01 --to 2026-01-02",
        config.display()
    );
    assert!(
        stderr.contains(&format!(
            "idem: locks held elsewhere kept them waiting: once they are free, repeat: {repeat}\n"
        )),
        "{stderr}"
    );
    sqlx::Executor::execute(&mut holder, "ROLLBACK")
        .await
        .unwrap();
    drop(holder);
    let args: Vec<&str> = repeat.split(' ').skip(1).collect();
    let out = crate::common::idem_command().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// A run that loads partitions empty (their source had no rows, as a late
/// source has none yet) says so, and how to load them once it lands; it
/// still exits 0, and a re-run that finds them empty again says nothing
/// new. The command it gives loads the late rows.
#[tokio::test]
async fn partitions_loaded_empty_are_said_with_the_command_for_when_the_source_lands() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let text = daily_fct(&db, "2026-01-04");
    let wh = sqlite_warehouse(&config, &db, &text).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')",
    ])
    .await
    .unwrap();

    let out = idem(&config, &["run", "fct", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let cfg = config.display();
    assert!(
        stderr.contains(&format!(
            "idem: 2 partitions loaded empty, the source having no rows in their windows (2026-01-03 .. 2026-01-04). If it is late, load them again once it lands: idem --config {cfg} run fct --only empty --from 2026-01-03 --to 2026-01-04\n"
        )),
        "{stderr}"
    );
    let finished: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .find(|e| e["event"] == "run_finished")
        .expect("run_finished");
    assert_eq!(
        (&finished["succeeded"], &finished["empty"]),
        (&4.into(), &2.into()),
        "{finished}"
    );

    // Empty again: nothing new to say.
    let out = idem(&config, &["run", "fct", "--from", "2026-01-03"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("loaded empty"), "{stderr}");

    // The source lands: the command said loads it.
    let load_empty = || {
        idem(
            &config,
            &[
                "run",
                "fct",
                "--only",
                "empty",
                "--from",
                "2026-01-03",
                "--to",
                "2026-01-04",
            ],
        )
    };
    wh.execute_script(&["INSERT INTO src VALUES (3, '2026-01-03'), (4, '2026-01-04')"])
        .await
        .unwrap();
    let out = load_empty();
    assert_eq!(out.status.code(), Some(0));
    let loaded: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM fct")
        .fetch_one(wh.pool())
        .await
        .unwrap();
    assert_eq!(loaded, 4);
    // Again: nothing is empty now, which is said, and no run starts.
    let out = load_empty();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "idem: nothing to run: no partition of fct from 2026-01-03 to 2026-01-04 is empty"
        ),
        "{out:?}"
    );
    wh.close().await;
}

/// A printed command runs as printed from another directory (QA): run from
/// the config's directory without --config, the repeat names the config
/// by its absolute path.
#[tokio::test]
async fn a_printed_repeat_runs_from_another_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let wh = sqlite_warehouse(&config, &db, &daily_fct(&db, "2026-01-03")).await;
    second_day_fails(&wh).await;
    let out = crate::common::idem_command()
        .current_dir(dir.path())
        .args(["run", "fct"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let absolute = std::fs::canonicalize(&config).unwrap();
    let repeat = format!(
        "idem --config {} run fct --only failed --from 2026-01-02 --to 2026-01-02",
        absolute.display()
    );
    assert!(stderr.contains(&repeat), "{stderr}");
    // The cause fixed, the command as printed, from elsewhere.
    wh.execute_script(&["UPDATE src SET id = 2 WHERE id = -2"])
        .await
        .unwrap();
    let words: Vec<&str> = repeat.split(' ').skip(1).collect();
    let again = crate::common::idem_command()
        .current_dir("/")
        .args(&words)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    wh.close().await;
}

/// A config reached through links, as deploys lay them out (a `current`
/// folder linked to the release, `/etc/idem/idem.toml` linked to the file
/// in it), is named by its links in a printed command, from a relative
/// `--config` with a `..` in it too: the command run after the next deploy
/// reads the config current then. QA: the links were resolved, so the
/// repeat ran the old release's config.
#[tokio::test]
async fn a_printed_repeat_names_the_config_by_its_links() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let release = root.join("releases").join("1");
    std::fs::create_dir_all(&release).unwrap();
    let db = root.join("w.db");
    let wh = sqlite_warehouse(
        &release.join("idem.toml"),
        &db,
        &daily_fct(&db, "2026-01-03"),
    )
    .await;
    second_day_fails(&wh).await;
    std::os::unix::fs::symlink("releases/1", root.join("current")).unwrap();
    std::fs::create_dir(root.join("etc")).unwrap();
    std::os::unix::fs::symlink("../current/idem.toml", root.join("etc").join("idem.toml")).unwrap();
    for (given, named) in [
        ("current/idem.toml", root.join("current").join("idem.toml")),
        ("etc/idem.toml", root.join("etc").join("idem.toml")),
        (
            "etc/../current/idem.toml",
            root.join("current").join("idem.toml"),
        ),
    ] {
        let out = crate::common::idem_command()
            .current_dir(&root)
            .args(["--config", given, "run", "fct"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let repeat = format!(
            "idem --config {} run fct --only failed --from 2026-01-02 --to 2026-01-02",
            named.display()
        );
        assert!(stderr.contains(&repeat), "{given}: {stderr}");
    }
    wh.close().await;
}

/// A merge stops at a window its data fails (a NULL key): the windows after
/// it never start, and the repeat is advised for once the cause is fixed,
/// since a repeat as it stands stops at the same window.
#[tokio::test]
async fn a_merge_stopped_by_its_data_advises_the_repeat_for_after_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let text = format!(
        "[warehouse]\nurl = \"sqlite://{}\"\n\n[[jobs]]\nname = \"dim\"\ntarget = \"dim\"\n\
         strategy = \"merge_key\"\nunique_key = [\"id\"]\ngrain = \"day\"\n\
         start = \"2026-01-01\"\nend = \"2026-01-03\"\n\
         sql = \"select id, v from src where dt >= :start and dt < :end\"\n",
        db.display()
    );
    let wh = sqlite_warehouse(&config, &db, &text).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER, v TEXT NOT NULL, dt TEXT NOT NULL)",
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
        "INSERT INTO src VALUES (1, 'a', '2026-01-01'), (NULL, 'b', '2026-01-02'), (3, 'c', '2026-01-03')",
    ])
    .await
    .unwrap();
    wh.close().await;
    let out = idem(&config, &["run", "dim"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NULL unique_key"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "idem: once the cause of these failures is fixed, repeat: idem --config {} run dim --from 2026-01-02 --to 2026-01-03\n",
            config.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("to finish, repeat"), "{stderr}");
}

/// A range error names what the operator typed, and a bound left out as
/// the job's own: the default --to (the last complete partition, or the
/// job's end), the job's start; a date in the right form that does not
/// exist is said to be no such date, not a form to use.
#[test]
fn a_range_message_names_only_what_was_typed() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("idem.toml");
    let job = |name: &str, start: &str, end: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"t\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"dt\"\ngrain = \"day\"\nstart = \"{start}\"\n{end}\
             sql = \"select dt from src where dt >= :start and dt < :end\"\n\n"
        )
    };
    std::fs::write(
        &config,
        format!(
            "[warehouse]\nurl = \"postgres://idem@127.0.0.1:1/none\"\n\n{}{}{}",
            job("j", "2026-01-01", "end = \"2026-01-31\"\n"),
            job("open", "2026-01-01", ""),
            job("later", "2099-01-01", "")
        ),
    )
    .unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["run", "j", "--from", "2026-02-01"],
            "--from 2026-02-01 is after j's last partition 2026-01-31 (its end) (the default --to): choose --from 2026-01-31 or earlier",
        ),
        (
            &["run", "open", "--from", "2099-01-01"],
            "(the default --to): choose --from ",
        ),
        (
            &["run", "j", "--to", "2025-12-01"],
            "--to 2025-12-01 is before j's first partition 2026-01-01 (its start, the default --from)",
        ),
        (
            &["run", "later"],
            "later's start 2099-01-01 is in the future or not over yet (its first partition ends 2099-01-02 00:00 UTC): there is nothing to run until then",
        ),
        (
            &["run", "j", "--from", "2026-02-30"],
            "--from \"2026-02-30\" has the right form, but there is no such date",
        ),
    ];
    for (args, says) in cases {
        let out = idem(&config, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("is after --to"), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("expected YYYY-MM-DD"),
            "{args:?}: {stderr}"
        );
    }
    let out = idem(&config, &["run", "open", "--from", "2099-01-01"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is after the last complete partition "),
        "{stderr}"
    );
}

/// A config of one daily job on a warehouse that never answers: what is
/// refused here is refused before idem connects.
fn one_job_config(dir: &std::path::Path) -> std::path::PathBuf {
    let config = dir.join("idem.toml");
    std::fs::write(
        &config,
        "[warehouse]\nurl = \"postgres://idem@127.0.0.1:1/none\"\n\n[[jobs]]\nname = \"j\"\n\
         target = \"t\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\n\
         grain = \"day\"\nstart = \"2026-01-01\"\n\
         sql = \"select dt from src where dt >= :start and dt < :end\"\n",
    )
    .unwrap();
    config
}

fn refused(config: &std::path::Path, args: &[&str]) -> String {
    let out = idem(config, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    stderr
}

/// `running` and `future` are states, only not ones a run takes: said so,
/// not "not a state".
#[test]
fn a_state_a_run_cannot_take_is_said_to_be_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = one_job_config(dir.path());
    for (only, says) in [
        (
            "failed,running",
            "--only \"running\" is a state, but not one a run takes: a running partition is being loaded now",
        ),
        (
            "future",
            "--only \"future\" is a state, but not one a run takes: a future partition's window has not ended",
        ),
    ] {
        let stderr = refused(&config, &["run", "j", "--only", only]);
        assert!(stderr.contains(says), "{only}: {stderr}");
        assert!(!stderr.contains("is not a state"), "{only}: {stderr}");
    }
    // A state that is none is still said to be none; `refused` is a word
    // of its own for a run, and a flag (--refused) for status.
    let stderr = refused(&config, &["run", "j", "--only", "broken"]);
    assert!(stderr.contains("\"broken\" is not a state"), "{stderr}");
    assert!(
        stderr.contains("or refused (the partitions the shrink guard refused)"),
        "{stderr}"
    );
    let stderr = refused(&config, &["status", "--state", "refused"]);
    assert!(
        stderr.contains("the partitions the shrink guard refused are listed by --refused"),
        "{stderr}"
    );
}

/// A partition name of the right form that the calendar lacks says which
/// part is wrong: month 13 is no month (not a hint about February).
#[test]
fn a_date_the_calendar_lacks_says_which_part_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let config = one_job_config(dir.path());
    let cases: [(&[&str], &str); 4] = [
        (&["log", "j", "2026-13-01"], "months are 01 to 12"),
        (&["status", "j", "--from", "2026-00"], "months are 01 to 12"),
        (&["log", "j", "2026-02-30"], "2026-02 has 28 days"),
        (&["verify", "j", "2028-02-30"], "2028-02 has 29 days"),
    ];
    for (args, says) in cases {
        let stderr = refused(&config, args);
        assert!(
            stderr.contains("has the right form, but there is no such"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!stderr.contains("February"), "{args:?}: {stderr}");
    }
}

/// A config with a warehouse and no jobs says so, rather than printing a
/// header over nothing.
#[test]
fn a_config_without_jobs_says_how_to_get_some() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    std::fs::File::create(&db).unwrap();
    let config = dir.path().join("idem.toml");
    std::fs::write(
        &config,
        format!("[warehouse]\nurl = \"sqlite://{}\"\n", db.display()),
    )
    .unwrap();
    for args in [
        &["status"][..],
        &["jobs"],
        &["status", "--format", "json"],
        &["lint"],
        &["lint", "--offline"],
    ] {
        let out = idem(&config, args);
        assert!(out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("idem: no jobs in {}", config.display())),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("`idem init URL"), "{args:?}: {stderr}");
    }
    // What scripts read stays what it was: an empty list.
    let json = idem(&config, &["status", "--format", "json"]);
    let rows: Vec<Value> = serde_json::from_slice(&json.stdout).unwrap();
    assert!(rows.is_empty());
}

/// `idem log` labels a load's row count for what it is: a merge never
/// deletes, so what it reports after the load is the rows it merged (the
/// target may hold more in the window), a replace's the rows in the window.
#[tokio::test]
async fn the_log_labels_what_a_merge_and_a_replace_count() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let job = |name: &str, strategy: &str, target: &str, key: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"{strategy}\"\n{key}\n\
             grain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-01\"\n\
             sql = \"select id, v, dt from src where dt >= :start and dt < :end\"\n\n"
        )
    };
    let text = format!(
        "[warehouse]\nurl = \"sqlite://{}\"\n\n{}{}",
        db.display(),
        job("merged", "merge_key", "dim", "unique_key = [\"id\"]"),
        job(
            "replaced",
            "replace_partition",
            "fct",
            "partition_column = \"dt\""
        ),
    );
    let wh = sqlite_warehouse(&config, &db, &text).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER, v INTEGER, dt TEXT)",
        "INSERT INTO src VALUES (1, 10, '2026-01-01'), (2, 20, '2026-01-01')",
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, v INTEGER, dt TEXT)",
        // A row of the window the source no longer has: a merge keeps it.
        "INSERT INTO dim VALUES (3, 30, '2026-01-01')",
        "CREATE TABLE fct (id INTEGER, v INTEGER, dt TEXT)",
    ])
    .await
    .unwrap();
    wh.close().await;
    for job in ["merged", "replaced"] {
        let out = idem(&config, &["run", job, "--yes"]);
        assert!(
            out.status.success(),
            "{job}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let log = idem(&config, &["log", "merged"]);
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(!log.contains("NOW"), "{log}");
    let line = log.lines().find(|l| l.contains(" succeeded ")).unwrap();
    assert!(line.contains("+2 ~0 of 2 merged"), "{log}");
    assert!(!line.contains("= 2"), "{log}");

    let log = idem(&config, &["log", "replaced"]);
    let log = String::from_utf8_lossy(&log.stdout);
    let line = log.lines().find(|l| l.contains(" succeeded ")).unwrap();
    assert!(line.contains("-0 +2 → 2 in window"), "{log}");
}

/// An hourly run stopped by Ctrl-C after the shrink guard refused one hour
/// (its source gone) and another failed (a CHECK): its "to finish, repeat"
/// is a command per span of what it left undone, none over the refused hour
/// or the ones that loaded, and, the failure's cause fixed, running them as
/// printed finishes the run, the refusal standing (QA: the one range
/// `--from …T08 --to …T23` took the refused T10 again, and exited 1).
#[tokio::test]
async fn a_cancelled_runs_repeat_leaves_out_the_hour_the_shrink_guard_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    // Each load counts to `pause.n` first: slow enough to be stopped mid-run.
    let text = format!(
        "[warehouse]\nurl = \"sqlite://{}\"\n\n[[jobs]]\nname = \"fct\"\ntarget = \"fct\"\n\
         strategy = \"replace_partition\"\npartition_column = \"ts\"\ngrain = \"hour\"\n\
         start = \"2026-11-02T00\"\nend = \"2026-11-02T23\"\n\
         sql = \"select id, ts from src cross join (with recursive c(i) as (select 1 union all \
         select i + 1 from c where i < (select n from pause)) select max(i) as p from c) \
         where ts >= :start and ts < :end\"\n",
        db.display()
    );
    let wh = sqlite_warehouse(&config, &db, &text).await;
    let rows: Vec<String> = (0..48)
        .map(|i| format!("({}, '2026-11-02 {:02}:{:02}:00')", i + 1, i / 2, i % 2))
        .collect();
    wh.execute_script(&[
        "CREATE TABLE pause (n INTEGER NOT NULL)",
        "INSERT INTO pause VALUES (1)",
        "CREATE TABLE src (id INTEGER NOT NULL, ts TIMESTAMP NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL CHECK (id > 0), ts TIMESTAMP NOT NULL)",
        &format!("INSERT INTO src VALUES {}", rows.join(", ")),
    ])
    .await
    .unwrap();
    let out = idem(&config, &["run", "fct"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // T08 breaks the CHECK, T10's source is gone (late), and loads slow down.
    wh.execute_script(&[
        "INSERT INTO src VALUES (-1, '2026-11-02 08:30:00')",
        "DELETE FROM src WHERE ts >= '2026-11-02 10:00:00' AND ts < '2026-11-02 11:00:00'",
        "UPDATE pause SET n = 1000000",
    ])
    .await
    .unwrap();
    let mut child = crate::common::idem_command()
        .arg("--config")
        .arg(&config)
        .args([
            "run",
            "fct",
            "--from",
            "2026-11-02T08",
            "--to",
            "2026-11-02T23",
            "--json",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut events = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    // Ctrl-C once T11 has loaded: T08 failed, T09 loaded, T10 refused.
    let mut seen = Vec::new();
    for line in events.by_ref().map_while(Result::ok) {
        let t11_loaded =
            line.contains("\"partition_succeeded\"") && line.contains("\"2026-11-02T11\"");
        seen.push(line);
        if t11_loaded {
            break;
        }
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    seen.extend(events.map_while(Result::ok));
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}\n{seen:?}");
    let loaded: Vec<String> = seen
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "partition_succeeded")
        .filter_map(|e| e["partition"].as_str().map(str::to_string))
        .collect();
    let first_undone = (12..24)
        .map(|h| format!("2026-11-02T{h:02}"))
        .find(|p| !loaded.contains(p))
        .expect("the run was stopped before its end");
    let repeat = stderr
        .lines()
        .find_map(|l| l.strip_prefix("idem: to finish, repeat: "))
        .unwrap_or_else(|| panic!("no repeat: {stderr}"));
    let cfg = config.display();
    assert_eq!(
        repeat,
        format!(
            "idem --config {cfg} run fct --from 2026-11-02T08 --to 2026-11-02T08 ; \
             idem --config {cfg} run fct --from {first_undone} --to 2026-11-02T23"
        ),
        "{stderr}"
    );
    // The refused hour is said apart, with its own commands.
    assert!(
        stderr.contains("idem: the source looks incomplete for 2026-11-02T10"),
        "{stderr}"
    );
    // The failure's cause fixed, each command as printed finishes the run.
    wh.execute_script(&["DELETE FROM src WHERE id = -1", "UPDATE pause SET n = 1"])
        .await
        .unwrap();
    for command in repeat.split(" ; ") {
        let words: Vec<&str> = command.split(' ').skip(1).collect();
        let again = crate::common::idem_command().args(&words).output().unwrap();
        assert_eq!(again.status.code(), Some(0), "{command}: {again:?}");
    }
    let status = idem(&config, &["status", "fct", "--format", "json"]);
    let rows: Vec<Value> = serde_json::from_slice(&status.stdout).unwrap();
    let not_loaded: Vec<&str> = rows
        .iter()
        .filter(|r| r["state"] != "loaded")
        .filter_map(|r| r["partition"].as_str())
        .collect();
    assert!(not_loaded.is_empty(), "{rows:?}");
    let refused: Vec<&str> = rows
        .iter()
        .filter(|r| !r["refused"].is_null())
        .filter_map(|r| r["partition"].as_str())
        .collect();
    assert_eq!(refused, ["2026-11-02T10"], "{rows:?}");
    wh.close().await;
}

/// A mistyped job name on the command line is said with the job it most
/// likely meant, as a config's mistyped key is, before the list of jobs;
/// a name near none of them is said with the list alone (QA: `idem run`,
/// `status`, `log`, `verify` and `diff` listed the jobs and left the
/// typo to be found).
#[tokio::test]
async fn a_mistyped_job_name_is_said_with_the_job_it_most_likely_meant() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let text = daily_fct(&db, "2026-01-03").replace("\"fct\"", "\"fct_orders\"")
        + "\n[[jobs]]\nname = \"dim_customers\"\ntarget = \"dim\"\nstrategy = \"merge_key\"\n\
           unique_key = [\"id\"]\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-03\"\n\
           sql = \"select id from src where dt >= :start and dt < :end\"\n";
    let wh = sqlite_warehouse(&config, &db, &text).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "CREATE TABLE fct_orders (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "CREATE TABLE dim (id INTEGER PRIMARY KEY)",
    ])
    .await
    .unwrap();
    wh.close().await;
    let said = format!(
        "no job named \"fct_ordrs\" in {}; did you mean \"fct_orders\"? jobs: fct_orders, dim_customers",
        config.display()
    );
    for args in [
        &["run", "fct_ordrs", "--from", "2026-01-01"][..],
        &["status", "fct_ordrs"],
        &["log", "fct_ordrs"],
        &["verify", "fct_ordrs", "2026-01-01"],
        &["diff", "fct_ordrs"],
    ] {
        let out = idem(&config, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&said), "{args:?}: {stderr}");
    }
    // Near none: the list alone.
    let out = idem(&config, &["status", "revenue"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no job named \"revenue\" in ") && !stderr.contains("did you mean"),
        "{stderr}"
    );
}

/// The daily fct's source and target, its second day's row failing the
/// target's CHECK: 2026-01-02 fails, the days around it load.
async fn second_day_fails(wh: &idem::warehouse::Warehouse) {
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL CHECK (id > 0), dt TEXT NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (-2, '2026-01-02'), (3, '2026-01-03')",
    ])
    .await
    .unwrap();
}
