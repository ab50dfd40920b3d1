//! `idem run` asks before it writes: on a terminal it shows the plan and
//! waits for a yes; without one, a run of more than 100 partitions needs
//! `--yes`, so a mistyped range cannot rewrite a job's history unasked.

mod common;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::{Kind, TestDb};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const SELECT: &str = "select id, dt from src where dt >= :start and dt < :end";

/// A config of one daily job over 150 days of a small source.
async fn setup() -> (TestDb, std::path::PathBuf, idem::warehouse::Warehouse) {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-05-30", SELECT));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-03-01')",
    ])
    .await
    .expect("setup");
    (db, config, wh)
}

async fn rows(wh: &idem::warehouse::Warehouse) -> i64 {
    wh.table_fingerprint(&idem::config::TableName::parse("fct").expect("table"))
        .await
        .expect("count")
        .rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_a_large_run_needs_yes() {
    let (_db, config, wh) = setup().await;
    let run = |extra: &[&str]| {
        crate::common::idem_command()
            .arg("--config")
            .arg(&config)
            .args(["run", "fct"])
            .args(extra)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("idem ran")
    };
    let refused = run(&[]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("would load 150 partitions (fct 2026-01-01 to 2026-05-30); pass --yes"),
        "{err}"
    );
    assert_eq!(rows(&wh).await, 0, "nothing ran");
    // A small range needs no confirmation; a large one runs with --yes.
    let small = run(&["--to", "2026-01-31"]);
    assert_eq!(small.status.code(), Some(0));
    assert_eq!(rows(&wh).await, 2);
    let all = run(&["--yes"]);
    assert_eq!(
        all.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    assert_eq!(rows(&wh).await, 3);
}

/// `idem run` in a pseudo-terminal: what it printed, and its exit code.
fn run_in_terminal(config: &std::path::Path, args: &[&str], answer: &str) -> (String, u32) {
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_idem"));
    cmd.env(
        crate::common::UNICODE_GLYPHS.0,
        crate::common::UNICODE_GLYPHS.1,
    );
    cmd.arg("--config");
    cmd.arg(config);
    cmd.args(args);
    answer_in_terminal(cmd, answer)
}

/// Runs `cmd` in a pseudo-terminal, answers its prompt: what the terminal
/// showed, and the exit code.
fn answer_in_terminal(cmd: CommandBuilder, answer: &str) -> (String, u32) {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 50,
            cols: 160,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("openpty");
    let mut child = pty.slave.spawn_command(cmd).expect("spawn");
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().expect("reader");
    let mut writer = pty.master.take_writer().expect("writer");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let into = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut s) = into.lock() {
                s.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }
    });
    let start = Instant::now();
    while !seen.lock().map(|s| s.contains("? [y/N]")).unwrap_or(false) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "exited ({status:?}) without asking: {}",
                seen.lock().map(|s| s.clone()).unwrap_or_default()
            );
        }
        assert!(start.elapsed() < Duration::from_secs(60), "never asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    writer.write_all(answer.as_bytes()).expect("answer");
    writer.flush().expect("flush");
    let status = loop {
        if let Ok(Some(status)) = child.try_wait() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "did not finish");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(200));
    let text = seen.lock().map(|s| s.clone()).unwrap_or_default();
    (text, status.exit_code())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_the_plan_is_shown_and_answered() {
    let (_db, config, wh) = setup().await;
    let args = ["run", "fct", "--from", "2026-01-01", "--to", "2026-01-05"];
    let (text, code) = run_in_terminal(&config, &args, "n\r");
    assert!(
        text.contains("plan: fct · replace_partition · 5 partitions"),
        "{text}"
    );
    assert!(text.contains("run 5 partitions? [y/N]"), "{text}");
    assert_eq!(code, 130, "{text}");
    assert!(text.contains("nothing run"), "{text}");
    assert_eq!(rows(&wh).await, 0);
    let (text, code) = run_in_terminal(&config, &args, "y\r");
    assert_eq!(code, 0, "{text}");
    assert_eq!(rows(&wh).await, 2);
}

/// An answer neither yes nor no is said not understood and asked again (it
/// was once taken as no without a word); the end of input (Ctrl-D) is no,
/// said as no answer; a stuck key is not asked about for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_terminal_an_answer_not_understood_is_asked_again() {
    let (_db, config, wh) = setup().await;
    let args = ["run", "fct", "--from", "2026-01-01", "--to", "2026-01-05"];
    let (text, code) = run_in_terminal(&config, &args, "\x04");
    assert_eq!(code, 130, "{text}");
    assert!(
        text.contains("idem: no answer (the input ended): nothing run"),
        "{text}"
    );
    assert_eq!(rows(&wh).await, 0);
    let (text, code) = run_in_terminal(&config, &args, "yse\rnope\rq\r");
    assert_eq!(code, 130, "{text}");
    assert!(
        text.contains("\"yse\" is not an answer: y runs, n or Enter does not"),
        "{text}"
    );
    assert_eq!(text.matches("run 5 partitions? [y/N]").count(), 3, "{text}");
    assert!(
        text.contains("idem: no answer understood after 3 tries: nothing run"),
        "{text}"
    );
    assert_eq!(rows(&wh).await, 0);
    let (text, code) = run_in_terminal(&config, &args, "yse\ryes\r");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("is not an answer"), "{text}");
    assert_eq!(rows(&wh).await, 2);
}

/// With stdout redirected (`--json` into a file or a pipe) the plan asked
/// about still reaches the operator, on the terminal with the prompt, and
/// stdout carries the run's JSON events and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_stdout_redirected_the_plan_goes_with_the_prompt() {
    let (db, config, wh) = setup().await;
    let out = db.path().join("events.jsonl");
    let mut cmd = CommandBuilder::new("sh");
    cmd.arg("-c");
    cmd.arg("out=$1; shift; exec \"$@\" > \"$out\"");
    cmd.arg("sh");
    cmd.arg(&out);
    cmd.arg(env!("CARGO_BIN_EXE_idem"));
    cmd.env(
        crate::common::UNICODE_GLYPHS.0,
        crate::common::UNICODE_GLYPHS.1,
    );
    cmd.arg("--config");
    cmd.arg(&config);
    cmd.args([
        "run",
        "fct",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-05",
        "--json",
    ]);
    let (text, code) = answer_in_terminal(cmd, "y\r");
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("plan: fct · replace_partition · 5 partitions"),
        "the operator saw the plan: {text}"
    );
    let stdout = std::fs::read_to_string(&out).expect("stdout");
    assert!(!stdout.is_empty(), "events were written");
    for line in stdout.lines() {
        let event: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?} in\n{stdout}"));
        assert!(event["event"].is_string(), "{line}");
    }
    assert_eq!(rows(&wh).await, 2);
}

/// The plan above the question says which windows no native partition of
/// a PostgreSQL target covers (the run would fail them), as `--dry-run`
/// does; it once said nothing of them.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_the_plan_asked_about_says_which_windows_no_native_partition_covers() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-03", SELECT));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-03')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL) PARTITION BY RANGE (dt)",
        "CREATE TABLE fct_01 PARTITION OF fct FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')",
        "CREATE TABLE fct_03 PARTITION OF fct FOR VALUES FROM ('2026-01-03') TO ('2026-01-04')",
    ])
    .await
    .expect("setup");
    let args = ["run", "fct", "--from", "2026-01-01", "--to", "2026-01-03"];
    let (text, code) = run_in_terminal(&config, &args, "n\r");
    assert_eq!(code, 130, "{text}");
    let text = text.replace("\r\n", "\n");
    assert!(
        text.contains("1 partition would fail: no partition of fct covers it, and it has no DEFAULT partition")
            && text.contains(
                "  2026-01-02: CREATE TABLE … PARTITION OF fct FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')"
            ),
        "{text}"
    );
    assert!(text.contains("run 3 partitions? [y/N]"), "{text}");
    wh.close().await;
}

/// What `idem lint` finds in the job is said before a run, as the console's
/// run dialog says it: in the plan above the question and in `--dry-run`
/// (text and JSON). They once said nothing, and a job whose SQL ignores
/// its window was planned as if sound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lint_errors_are_said_before_a_run_on_every_surface() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let job = common::replace_job("wide", "fct", "2026-01-05", "select id, dt from src");
    let (config, parsed) = db.config(&job);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    let said = "✗ line ";
    let never = "the SQL never uses :start or :end";
    let args = ["run", "wide", "--from", "2026-01-01", "--to", "2026-01-02"];
    let (text, code) = run_in_terminal(&config, &args, "n\r");
    assert_eq!(code, 130, "{text}");
    assert!(text.contains(said) && text.contains(never), "{text}");
    let dry = |extra: &[&str]| {
        let out = crate::common::idem_command()
            .arg("--config")
            .arg(&config)
            .args(args)
            .arg("--dry-run")
            .args(extra)
            .output()
            .expect("idem ran");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let text = dry(&[]);
    assert!(
        text.contains(&format!("lint: {said}")) && text.contains(never),
        "{text}"
    );
    let plan: serde_json::Value = serde_json::from_str(&dry(&["--json"])).expect("JSON");
    let lint = plan["lint"].as_array().expect("lint");
    assert!(
        lint.iter()
            .any(|f| f["severity"] == "error" && f["message"].as_str().unwrap().contains(never)),
        "{plan}"
    );
    assert_eq!(rows(&wh).await, 0, "nothing ran");
}
