//! The real binary in a pseudo-terminal (portable-pty + vt100): start the
//! console on a fresh demo, press keys, wait for the screen, and check what is
//! on it, what the terminal received and what is in the warehouse.

mod common;
mod pty;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use idem::config::Job;
use idem::partition::now_utc;
use idem::state::LoadState;
use idem::warehouse::Warehouse;
use portable_pty::PtySize;
use pty::{COLS, Console, ROWS, idem, nz};

fn demo_console(dir: &tempfile::TempDir) -> (Console, PathBuf) {
    let demo = dir.path().join("demo");
    // Run logs in the test's own folder.
    let state = dir.path().join("state");
    let mut c = Console::start_with(
        dir.path(),
        &["demo", "--path", demo.to_str().unwrap()],
        &[("XDG_STATE_HOME", state.to_str().unwrap())],
    );
    // The jobs pane with its health summaries, and the calendar, once the
    // states are read.
    c.wait_for(&[
        "fct_orders",
        "dim_customers",
        "repl·day ✗3",
        "Mo Tu We Th Fr Sa Su",
    ]);
    (c, demo.join("idem.toml"))
}

/// The demo's config and one of its jobs.
fn demo_job(config_path: &Path, name: &str) -> (idem::config::Config, Job) {
    let config = idem::config::load(config_path).unwrap();
    let job = config.jobs.iter().find(|j| j.name == name).unwrap().clone();
    (config, job)
}

#[test]
fn demo_opens_on_jobs_and_calendar_and_q_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, _) = demo_console(&dir);
    let screen = c.contents();
    assert!(screen.contains("fct_pageviews_hourly"), "{screen}");
    assert!(screen.contains("agg_revenue_monthly"), "{screen}");
    assert!(screen.contains('■') && screen.contains('✗'), "{screen}");
    assert!(screen.contains("? help"), "footer: {screen}");
    c.send("?");
    c.wait_for(&["Help · keys", "Main screen"]);
    // The main screen's keys fill a page; the other scopes follow it.
    c.send("\x1b[6~");
    c.wait_for(&["Help · keys", "Confirm dialog"]);
    c.send("\x1b");
    c.send("q");
    let status = c.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    let raw = c.raw.lock().unwrap().clone();
    let find_last = |needle: &[u8]| raw.windows(needle.len()).rposition(|w| w == needle);
    let entered = find_last(b"\x1b[?1049h").expect("entered the alternate screen");
    let left = find_last(b"\x1b[?1049l").expect("left the alternate screen");
    assert!(left > entered, "alternate screen left after it was entered");
    let hidden = find_last(b"\x1b[?25l").expect("hid the cursor");
    let shown = find_last(b"\x1b[?25h").expect("showed the cursor");
    assert!(shown > hidden, "cursor shown again at the end");
    let parser = c.screen.lock().unwrap();
    assert!(!parser.screen().alternate_screen());
    assert!(!parser.screen().hide_cursor());
}

/// A paste arrives whole (bracketed paste), never as keys: a pasted "ry"
/// with the failed days selected opens no dialog and starts no run. And a
/// burst of typing is read whole at once: the terminal reader once stopped
/// after its first 1 KiB and read the rest only when another key came.
#[test]
fn a_paste_is_text_never_keys_and_a_burst_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, _) = demo_console(&dir);
    c.send("f");
    c.wait_for(&["selected 3 failed partitions"]);
    c.send("\x1b[200~ry\x1b[201~");
    let screen = c.wait_for(&["pasted text ignored"]);
    assert!(!screen.contains("same as"), "no confirm dialog: {screen}");
    c.send(":");
    c.send(&format!("goto {}END", "x".repeat(3000)));
    c.wait_for(&["xxxxEND"]);
    // Pasted into the command line, a line break is a space.
    c.send("\x1b[200~ and\nmore\x1b[201~");
    c.wait_for(&["xxxxEND and more"]);
    c.send("\x1b");
    c.send("q");
    assert!(c.wait_exit().success());
    let raw = c.raw.lock().unwrap().clone();
    let find_last = |needle: &[u8]| raw.windows(needle.len()).rposition(|w| w == needle);
    let on = find_last(b"\x1b[?2004h").expect("asked for bracketed paste");
    let off = find_last(b"\x1b[?2004l").expect("bracketed paste turned off at exit");
    assert!(off > on);
}

async fn snapshot(wh: &Warehouse, job: &Job) -> (HashMap<String, i64>, HashMap<String, usize>) {
    let parts = job.partitions(now_utc());
    let counts = wh
        .partition_counts(job, parts[0], *parts.last().unwrap())
        .await
        .unwrap()
        .partitions;
    let mut attempts: HashMap<String, usize> = HashMap::new();
    for a in wh.attempts(&job.name, None).await.unwrap() {
        *attempts.entry(a.partition).or_default() += 1;
    }
    (counts, attempts)
}

#[test]
fn rerun_a_failed_range_from_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, config_path) = demo_console(&dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (config, job) = demo_job(&config_path, "fct_orders");
    let (failed, before, others_before) = rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let statuses = idem::state::job_status(&wh, &job, now_utc(), &HashSet::new())
            .await
            .unwrap();
        let failed: Vec<_> = statuses
            .iter()
            .filter(|s| s.state == LoadState::Failed)
            .map(|s| s.partition)
            .collect();
        let before = snapshot(&wh, &job).await;
        let mut others = Vec::new();
        for j in config.jobs.iter().filter(|j| j.name != job.name) {
            others.push(snapshot(&wh, j).await);
        }
        wh.close().await;
        (failed, before, others)
    });
    assert_eq!(failed.len(), 3, "the demo has three failed days");
    assert_eq!(
        idem::partition::range(failed[0], failed[2]),
        failed,
        "contiguous"
    );
    let first = failed[0].name();
    let last = failed[2].name();

    // Move to the first failed day, select the range, confirm.
    c.send(&format!(":goto {first}\r"));
    c.wait_for(&[&format!(" {first} ")]);
    c.send("v");
    c.send("l");
    c.send("l");
    c.wait_for(&["3 selected (range)"]);
    c.send("r");
    c.wait_for(&[
        "Run fct_orders?",
        &format!("{first} .. {last}"),
        "✗ failed 3",
    ]);
    // The demo's config is not ./idem.toml, so the command names it and
    // wraps, each line but the last continued for a shell.
    c.wait_for(&[
        "idem --config ",
        &format!("run fct_orders --from {first} \\"),
        &format!("  --to {last}"),
    ]);
    // Y puts it on the clipboard through the terminal, on one line.
    c.send("Y");
    c.wait_for(&["sent to the clipboard through the terminal (OSC 52)"]);
    let command = format!(
        "idem --config {} run fct_orders --from {first} --to {last}",
        config_path.display()
    );
    let osc52 = format!(
        "\x1b]52;c;{}\x1b\\",
        base64::Engine::encode(&base64::prelude::BASE64_STANDARD, &command)
    );
    let sent = String::from_utf8_lossy(&c.raw.lock().unwrap()).into_owned();
    assert!(sent.contains(&osc52), "no {osc52:?} for {command}");
    c.send("\r");
    c.wait_for(&["finished: 3/3 succeeded", "0 failed"]);
    // The calendar and the health summary follow: no failed day is left.
    c.wait_for(&["run of fct_orders finished: 3 succeeded"]);
    c.send("q");
    assert!(c.wait_exit().success());
    // A console's run is in the run logs, as a headless one's is.
    let log = crate::common::idem_command()
        .arg("--config")
        .arg(&config_path)
        .args(["log", "fct_orders", &first, "--lines", "30"])
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .output()
        .unwrap();
    let lines = String::from_utf8_lossy(&log.stdout);
    assert!(log.status.success(), "{lines}");
    assert!(
        lines.contains("BEGIN") && lines.contains("COMMIT"),
        "{lines}"
    );

    rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let statuses = idem::state::job_status(&wh, &job, now_utc(), &HashSet::new())
            .await
            .unwrap();
        let (counts, attempts) = snapshot(&wh, &job).await;
        let rerun: HashSet<String> = failed.iter().map(|p| p.name()).collect();
        for s in &statuses {
            let name = s.partition.name();
            if rerun.contains(&name) {
                assert_eq!(s.state, LoadState::Loaded, "{name} loaded now");
                assert!(
                    counts.get(&name).copied().unwrap_or(0) > 0,
                    "{name} has rows"
                );
                assert_eq!(attempts.get(&name), Some(&(before.1[&name] + 1)));
                let last = s.last_attempt.as_ref().unwrap();
                assert_eq!(last.operator, "pty-test");
            } else {
                assert_eq!(counts.get(&name), before.0.get(&name), "{name} untouched");
                assert_eq!(
                    attempts.get(&name),
                    before.1.get(&name),
                    "{name}: no attempt"
                );
            }
        }
        let others = config.jobs.iter().filter(|j| j.name != job.name);
        for (j, before) in others.zip(&others_before) {
            assert_eq!(&snapshot(&wh, j).await, before, "{} untouched", j.name);
        }
        wh.close().await;
    });
}

#[test]
fn a_cascade_rerun_of_the_failed_days_reloads_the_month_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, config_path) = demo_console(&dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (config, orders) = demo_job(&config_path, "fct_orders");
    let (_, monthly) = demo_job(&config_path, "agg_revenue_monthly");
    let (failed, month_attempts) = rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let statuses = idem::state::job_status(&wh, &orders, now_utc(), &HashSet::new())
            .await
            .unwrap();
        let failed: Vec<String> = statuses
            .iter()
            .filter(|s| s.state == LoadState::Failed)
            .map(|s| s.partition.name())
            .collect();
        let attempts = wh.attempts(&monthly.name, None).await.unwrap().len();
        wh.close().await;
        (failed, attempts)
    });
    assert_eq!(failed.len(), 3, "the demo has three failed days");
    let month = failed[0][..7].to_string();
    assert!(failed.iter().all(|d| d.starts_with(&month)), "{failed:?}");

    // Select the failed days, open the confirm, switch the cascade on.
    c.send("f");
    c.send("r");
    c.wait_for(&["Run fct_orders?", "✗ failed 3"]);
    c.send("c");
    c.wait_for(&[
        &format!("then agg_revenue_monthly loads again 1 partition made stale: {month}"),
        "--cascade",
    ]);
    c.send("\r");
    // The runs pane shows each step; the month's step ends last.
    c.wait_for(&[
        "cascade from fct_orders finished: fct_orders: 3 succeeded, 0 failed · agg_revenue_monthly: 1 succeeded, 0 failed",
    ]);
    let screen = c.contents();
    assert!(screen.contains("fct_orders") && screen.contains("agg_revenue_monthly"));
    c.send("q");
    assert!(c.wait_exit().success());

    rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let days = wh.attempts(&orders.name, None).await.unwrap();
        let last_day = days
            .iter()
            .filter(|a| failed.contains(&a.partition))
            .filter(|a| a.status == idem::warehouse::ledger::AttemptStatus::Succeeded)
            .map(|a| a.finished_at.clone())
            .max()
            .expect("the failed days loaded");
        let months = wh.attempts(&monthly.name, None).await.unwrap();
        assert_eq!(
            months.len(),
            month_attempts + 1,
            "one attempt for the month"
        );
        let reload = months
            .iter()
            .filter(|a| a.partition == month)
            .filter(|a| a.status == idem::warehouse::ledger::AttemptStatus::Succeeded)
            .max_by(|a, b| a.finished_at.cmp(&b.finished_at))
            .expect("the month loaded");
        assert_eq!(reload.operator, "pty-test");
        assert!(
            reload.started_at >= last_day,
            "the month ({}) started after the days finished ({last_day})",
            reload.started_at
        );
        wh.close().await;
    });
}

/// The 3 a.m. loop: the job's SQL is fixed in the file while the console
/// is open, `R` reads it again, and the run started from the console loads
/// with the fixed definition (the ledger's definition hash is the new one).
#[test]
fn an_edited_config_is_reloaded_and_the_next_run_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, config_path) = demo_console(&dir);
    let text = std::fs::read_to_string(&config_path).unwrap();
    let old = "select order_id, customer_id, amount_usd, status, date(created_at) as dt";
    assert!(text.contains(old));
    let fixed = text.replace(
        old,
        "select order_id, customer_id, round(amount_usd, 2) as amount_usd, status, date(created_at) as dt",
    );
    std::fs::write(&config_path, fixed).unwrap();
    c.send("R");
    c.wait_for(&["reloaded; changed fct_orders"]);
    // Read again: every loaded day is stale under the new definition.
    c.wait_for(&["repl·day ✗3 !1 ·4 ~"]);
    let (config, job) = demo_job(&config_path, "fct_orders");
    let day = job.last_partition(now_utc()).prev().name();
    c.send(&format!(":run {day}..{day}\r"));
    c.wait_for(&["Run fct_orders?"]);
    c.send("\r");
    c.wait_for(&["finished: 1/1 succeeded"]);
    c.send("q");
    assert!(c.wait_exit().success());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let attempts = wh.attempts(&job.name, Some(&day)).await.unwrap();
        let last = attempts.last().expect("the console's attempt");
        assert_eq!(last.operator, "pty-test");
        assert_eq!(
            last.definition_hash,
            job.definition_hash(),
            "loaded with the fixed SQL"
        );
        wh.close().await;
    });
}

/// A target dropped after the console read its states: the run is refused
/// before it starts, and nothing lands in the ledger.
#[test]
fn a_run_on_a_target_dropped_since_the_last_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, config_path) = demo_console(&dir);
    let (config, job) = demo_job(&config_path, "fct_orders");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let day = job.last_partition(now_utc()).prev().name();
    let before = rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let n = wh.attempts(&job.name, None).await.unwrap().len();
        wh.execute_script(&["ALTER TABLE fct_orders RENAME TO fct_orders_kept"])
            .await
            .unwrap();
        wh.close().await;
        n
    });
    c.send(&format!(":run {day}..{day}\r"));
    c.wait_for(&["Run fct_orders?"]);
    c.send("\r");
    c.wait_for(&["run not started: fct_orders: target table fct_orders does not exist"]);
    c.send("q");
    assert!(c.wait_exit().success());
    rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        assert_eq!(wh.attempts(&job.name, None).await.unwrap().len(), before);
        wh.close().await;
    });
}

#[test]
fn a_panic_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("idem.toml");
    let url = format!("sqlite://{}", dir.path().join("w.db").display());
    std::fs::write(&config, format!("[warehouse]\nurl = \"{url}\"\n")).unwrap();
    let mut c = Console::start_with(
        dir.path(),
        &["--config", config.to_str().unwrap()],
        &[("IDEM_TEST_PANIC", "1"), ("RUST_BACKTRACE", "0")],
    );
    let status = c.wait_exit();
    assert!(!status.success(), "a panic is a failure: {status:?}");
    let raw = c.raw.lock().unwrap().clone();
    let find_last = |needle: &[u8]| raw.windows(needle.len()).rposition(|w| w == needle);
    let entered = find_last(b"\x1b[?1049h").expect("entered the alternate screen");
    let left = find_last(b"\x1b[?1049l").expect("left the alternate screen");
    assert!(left > entered);
    let parser = c.screen.lock().unwrap();
    assert!(!parser.screen().alternate_screen());
    assert!(!parser.screen().hide_cursor());
    // The panic message is printed after the restore, where it can be read.
    let message = raw
        .windows(b"IDEM_TEST_PANIC is set".len())
        .rposition(|w| w == b"IDEM_TEST_PANIC is set")
        .expect("the panic message reached the terminal");
    // The hook restores before the message; unwinding restores once more.
    let first_left = entered
        + raw[entered..]
            .windows(8)
            .position(|w| w == b"\x1b[?1049l")
            .expect("left the alternate screen");
    assert!(
        message > first_left,
        "the alternate screen is left before the message is printed"
    );
}

#[test]
fn cancel_asks_then_ctrl_c_quits_and_restores() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, _) = demo_console(&dir);
    // Nothing in flight: c says so.
    c.send("c");
    c.wait_for(&["no run in flight"]);
    // A resize to a tiny terminal says so, and back again redraws.
    let size = |rows, cols| PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    };
    // The parser takes the new size before the console can draw at it: the
    // other way round, a redraw landing between the two was read at the
    // old size and the screen never matched (seen once under load).
    c.screen.lock().unwrap().set_size(nz(12), nz(50));
    c.master.resize(size(12, 50)).unwrap();
    c.wait_for(&["terminal too small"]);
    c.screen.lock().unwrap().set_size(nz(ROWS), nz(COLS));
    c.master.resize(size(ROWS, COLS)).unwrap();
    c.wait_for(&["Mo Tu We Th Fr Sa Su", "fct_orders"]);
    c.send("\x03");
    let status = c.wait_exit();
    assert!(status.success(), "{status:?}");
    let parser = c.screen.lock().unwrap();
    assert!(!parser.screen().alternate_screen());
    assert!(!parser.screen().hide_cursor());
}

/// A demo console with the run dialog open on fct_orders' whole history:
/// long enough to be in flight for a while once started.
fn whole_history_dialog(dir: &tempfile::TempDir) -> Console {
    let (mut c, config_path) = demo_console(dir);
    let config = idem::config::load(&config_path).unwrap();
    let job = &config.jobs[0];
    let first = job.start.name();
    let last = job.last_partition(now_utc()).name();
    c.send(&format!(":run {first}..{last}\r"));
    c.wait_for(&["Run fct_orders?"]);
    c
}

/// Sends the console's process `signal` (`TERM`, `HUP`).
fn signal(c: &Console, signal: &str) {
    let pid = c.child.process_id().expect("pid");
    let kill = std::process::Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
}

#[test]
fn ctrl_c_asks_while_a_run_is_in_flight_and_sigterm_restores() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = whole_history_dialog(&dir);
    // The run starts once the console has read its config again: a Ctrl-C
    // sent with the Enter could land first, with nothing in flight to ask
    // about, and quit.
    c.send("\r");
    c.wait_for(&["▶ 1 running"]);
    c.send("\x03");
    c.wait_for(&["Quit and cancel it?"]);
    c.send("n");
    c.wait_for_gone("Quit and cancel it?");
    c.wait_for(&["▶ 1 running"]);
    // SIGTERM does not ask: the run is cancelled and the terminal restored.
    signal(&c, "TERM");
    // Stopped, not quit by the operator: a script reads it as cancelled.
    assert_eq!(c.wait_exit().exit_code(), 130);
    let parser = c.screen.lock().unwrap();
    assert!(!parser.screen().alternate_screen());
    assert!(!parser.screen().hide_cursor());
    drop(parser);
    let raw = c.raw.lock().unwrap().clone();
    let text = String::from_utf8_lossy(&raw);
    // What the run did and left is said, as for a quit, once the alternate
    // screen is left (nothing is drawn after it).
    let left = text
        .rfind("\x1b[?1049l")
        .expect("left the alternate screen");
    let said = text
        .find("idem: fct_orders: ")
        .unwrap_or_else(|| panic!("no report of the run in {text}"));
    assert!(left < said, "{text}");
    assert!(text[said..].contains(" (cancelled) · run "), "{text}");
    assert!(!text[left..].contains("\x1b[?1049h"), "{text}");
}

/// Quitting with a run in flight (q, then y): once the terminal is
/// restored, idem says what the run did and left, as `idem run` would, with
/// the command that finishes it, and exits 130 as a cancelled run does.
/// Before, it printed nothing and exited 0: the operator had to find what
/// was left undone in the ledger. The printed command, run as printed,
/// finishes every partition the quit left.
#[test]
fn quitting_with_a_run_in_flight_says_what_it_left_and_how_to_finish_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = whole_history_dialog(&dir);
    let config_path = dir.path().join("demo").join("idem.toml");
    c.send("\r");
    c.wait_for(&["▶ 1 running"]);
    c.send("q");
    c.wait_for(&["Quit and cancel it?"]);
    c.send("y");
    let code = c.wait_exit().exit_code();
    let raw = String::from_utf8_lossy(&c.raw.lock().unwrap()).into_owned();
    let tail = &raw[raw.floor_char_boundary(raw.len().saturating_sub(2000))..];
    assert_eq!(code, 130, "{tail}");
    let said: Vec<&str> = raw
        .split(['\r', '\n'])
        .filter(|l| l.starts_with("idem: "))
        .collect();
    let outcome = said
        .iter()
        .find(|l| l.starts_with("idem: fct_orders: ") && l.contains(" (cancelled) · run "))
        .unwrap_or_else(|| panic!("no outcome line in {said:#?}"));
    let quit_run = outcome.rsplit(" · run ").next().unwrap().to_string();
    let repeat = said
        .iter()
        .find_map(|l| l.split_once("repeat: ").map(|(_, command)| command))
        .unwrap_or_else(|| panic!("no repeat command in {said:#?}"));
    let canonical = config_path.canonicalize().unwrap();
    let prefix = format!(
        "idem --config {} run fct_orders --from ",
        canonical.display()
    );
    assert!(repeat.starts_with(&prefix), "{repeat}");
    let words: Vec<&str> = repeat.split_whitespace().skip(1).collect();
    let out = idem(dir.path(), &words);
    let code = out.status.code();
    // The demo's three days whose rows break a CHECK fail again.
    assert!(matches!(code, Some(0 | 1)), "{code:?}: {out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let repeat_run = stdout.rsplit(" · run ").next().unwrap().trim().to_string();
    // Every partition of the run the quit cancelled has an attempt that
    // ended (loaded or failed) in that run or in the repeat.
    let (config, job) = demo_job(&config_path, "fct_orders");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ended: HashSet<String> = rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let attempts = wh.attempts(&job.name, None).await.unwrap();
        wh.close().await;
        attempts
            .into_iter()
            .filter(|a| a.run_id == quit_run || a.run_id == repeat_run)
            .filter(|a| {
                matches!(
                    a.status,
                    idem::warehouse::ledger::AttemptStatus::Succeeded
                        | idem::warehouse::ledger::AttemptStatus::Failed
                )
            })
            .map(|a| a.partition)
            .collect()
    });
    // The dialog's range: the job's start to its last complete partition.
    let last = job.last_partition(now_utc());
    let unfinished: Vec<String> = job
        .partitions(now_utc())
        .iter()
        .filter(|p| **p <= last)
        .map(|p| p.name())
        .filter(|name| !ended.contains(name))
        .collect();
    assert!(
        unfinished.is_empty(),
        "left unfinished: {unfinished:?}\n{}\n{stdout}",
        said.join("\n")
    );
}

/// The terminal closing (SIGHUP: an ssh session dropped) stops the console
/// as SIGTERM does: its runs cancelled and recorded so, exit 130, rather
/// than the process dying with its partitions in flight unrecorded.
#[test]
fn a_hangup_cancels_the_run_and_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = whole_history_dialog(&dir);
    c.send("\r");
    c.wait_for(&["▶ 1 running"]);
    signal(&c, "HUP");
    // Stopped as on SIGTERM (its cancel path is the one tested above), not
    // killed by the signal.
    assert_eq!(c.wait_exit().exit_code(), 130);
    let parser = c.screen.lock().unwrap();
    assert!(!parser.screen().alternate_screen());
}

/// The terminal gone before its hangup is handled (its pty closed: reads
/// and writes fail with EIO, and the console sees that first): the console
/// stops as on SIGHUP, its run cancelled and recorded so, exit 130. Before,
/// it returned the read error at once, its loads left running on the server
/// unrecorded, and panicked showing the cursor on the dead terminal (101).
/// Python's `pty` drives it: the test's own pty cannot be closed while its
/// reader thread holds it.
#[test]
fn a_terminal_gone_mid_run_cancels_the_run_and_records_it() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    assert!(
        idem(dir.path(), &["demo", "--path", demo.to_str().unwrap()])
            .status
            .success()
    );
    let config_path = demo.join("idem.toml");
    let (config, job) = demo_job(&config_path, "fct_orders");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cancelled = || {
        rt.block_on(async {
            let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
            let n = wh
                .attempts(&job.name, None)
                .await
                .unwrap()
                .iter()
                .filter(|a| a.status == idem::warehouse::ledger::AttemptStatus::Cancelled)
                .count();
            wh.close().await;
            n
        })
    };
    // The pty may close between one partition's commit and the next one's
    // start, with nothing in flight to cancel: up to three closes, each
    // exiting 130, until one finds a partition in flight.
    for _ in 0..3 {
        let out = std::process::Command::new("python3")
            .arg("-c")
            .arg(CLOSE_THE_PTY_MID_RUN)
            .args([
                env!("CARGO_BIN_EXE_idem"),
                config_path.to_str().unwrap(),
                &job.start.name(),
                &job.last_partition(now_utc()).name(),
            ])
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .env(
                crate::common::UNICODE_GLYPHS.0,
                crate::common::UNICODE_GLYPHS.1,
            )
            .output()
            .expect("python3");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(said.trim(), "130", "idem's exit code");
        if cancelled() >= 1 {
            return;
        }
    }
    panic!("the partition in flight is recorded cancelled");
}

/// Starts idem's console (argv: idem, config, first, last) in a pty, runs
/// the range, closes the pty once a partition runs (as drawn), and prints
/// idem's exit code.
const CLOSE_THE_PTY_MID_RUN: &str = r#"
import os, pty, sys, time, select, fcntl, termios, struct
idem, config, first, last = sys.argv[1:5]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm-256color"
    os.execv(idem, [idem, "--config", config])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
seen = last_seen = b""
def wait_for(*texts, secs=60):
    # True once one of `texts` has been drawn (fixed sleeps failed on a busy
    # machine). The screen comes as changes: a cell equal to the one below
    # it is skipped, so a word drawn over others may arrive broken; each of
    # several short marks is asked for.
    global seen, last_seen
    end = time.time() + secs
    while time.time() < end:
        if select.select([fd], [], [], 0.1)[0]:
            seen += os.read(fd, 65536)
            if any(t in seen for t in texts):
                last_seen, seen = seen, b""
                return True
    return False
# Typed once the job's states are read (its failed days drawn): typed
# before, a key could land outside the command line ('r' runs the cursor's
# partition alone).
if not wait_for("\u2717".encode()):
    sys.exit("the states were not drawn")
# The calendar draws the ledger's states before the target's counts are
# read; until they are, a run is refused ("try again in a moment"). A
# refusal drawn again over the same words sends nothing new, so a refusal,
# or a dialog whose words did not come whole, is left with Esc and asked
# for again (after a pause: an Esc and the next key read at once are one
# Alt key).
for _ in range(30):
    os.write(fd, (":run %s..%s\r" % (first, last)).encode())
    opened = wait_for(b"try again", b"Run fct", b"--yes", b"copies it", b"of 120", secs=10)
    if opened and b"try again" not in last_seen:
        break
    os.write(fd, b"\x1b")
    time.sleep(0.5)
else:
    sys.exit("the run dialog did not open")
os.write(fd, b"\r")
# The run's gauge (its rate, "p/s"), drawn once the run is under way.
if not wait_for(b"p/s", b"ETA"):
    sys.exit("the run did not start")
time.sleep(0.5)
os.close(fd)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"#;

/// The console on a demo made beforehand, with `env` set.
fn console_on_a_demo(dir: &tempfile::TempDir, env: &[(&str, &str)]) -> Console {
    let demo = dir.path().join("demo");
    let out = idem(dir.path(), &["demo", "--path", demo.to_str().unwrap()]);
    assert!(out.status.success());
    let config = demo.join("idem.toml");
    Console::start_with(dir.path(), &["--config", config.to_str().unwrap()], env)
}

#[test]
fn no_color_draws_in_mono() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = console_on_a_demo(&dir, &[("NO_COLOR", "1")]);
    c.wait_for(&["fct_orders", "repl·day ✗3", "Mo Tu We Th Fr Sa Su"]);
    c.send("q");
    assert!(c.wait_exit().success());
    let raw = c.raw.lock().unwrap().clone();
    let text = String::from_utf8_lossy(&raw);
    for colour in ["\x1b[38;2;", "\x1b[48;2;", "\x1b[38;5;", "\x1b[48;5;"] {
        assert!(!text.contains(colour), "a colour was drawn under NO_COLOR");
    }
    // The cursor and the title still stand out, by modifiers.
    assert!(text.contains("\x1b[7m"), "reversed cursor and title");
}

/// NO_COLOR with a colour theme asked for: the terminal would drop the
/// colours that mark the cursor, so mono is used, and the status bar says so.
#[test]
fn no_color_uses_mono_over_a_colour_theme() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = console_on_a_demo(&dir, &[("NO_COLOR", "1"), ("IDEM_THEME", "light")]);
    c.wait_for(&[
        "fct_orders",
        "NO_COLOR is set: using the mono theme, not light",
    ]);
    c.send("q");
    assert!(c.wait_exit().success());
    let raw = c.raw.lock().unwrap().clone();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("\x1b[7m"), "reversed cursor and title");
}

/// Under a locale that is not UTF-8 (tmux started under `LC_ALL=C` draws
/// every other glyph as `_`) the console draws ASCII, each state with a
/// glyph of its own.
#[test]
fn a_c_locale_draws_ascii() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = console_on_a_demo(&dir, &[("LC_ALL", "C")]);
    c.wait_for(&["fct_orders", "repl.day x3", "Mo Tu We Th Fr Sa Su"]);
    let screen = c.contents();
    assert!(screen.contains('#') && screen.contains('x'), "{screen}");
    c.send("q");
    assert!(c.wait_exit().success());
    let raw = c.raw.lock().unwrap().clone();
    let text = String::from_utf8_lossy(&raw);
    let wide: String = text.chars().filter(|c| !c.is_ascii()).collect();
    assert!(wide.is_empty(), "drawn beyond ASCII: {wide}");
}

/// QA: the themes' `#rrggbb` colours went out as 24-bit colour whatever
/// the terminal, which one without it (macOS Terminal, `TERM=xterm`) draws
/// as other colours. Without `COLORTERM=truecolor` a 256-colour terminal
/// gets xterm's 256 colours, and a plain `xterm` its 16.
#[test]
fn colours_are_drawn_at_the_depth_the_terminal_has() {
    for (term, none_of, one_of) in [
        (
            "xterm-256color",
            &["\x1b[38;2;", "\x1b[48;2;"][..],
            "\x1b[38;5;",
        ),
        (
            "xterm",
            &[
                "\x1b[38;2;",
                "\x1b[48;2;",
                "\x1b[38;5;75;",
                "\x1b[38;5;203;",
            ],
            "\x1b[38;5;12",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut c = console_on_a_demo(&dir, &[("TERM", term), ("COLORTERM", "")]);
        c.wait_for(&["fct_orders", "repl·day ✗3", "Mo Tu We Th Fr Sa Su"]);
        c.send("q");
        assert!(c.wait_exit().success());
        let raw = c.raw.lock().unwrap().clone();
        let text = String::from_utf8_lossy(&raw);
        for colour in none_of {
            assert!(!text.contains(colour), "TERM={term}: {colour:?} drawn");
        }
        assert!(text.contains(one_of), "TERM={term}: no {one_of:?} drawn");
    }
    // A terminal that says it has 24-bit colour gets the themes as written.
    let dir = tempfile::tempdir().unwrap();
    let mut c = console_on_a_demo(&dir, &[("COLORTERM", "truecolor")]);
    c.wait_for(&["fct_orders", "repl·day ✗3"]);
    c.send("q");
    assert!(c.wait_exit().success());
    let raw = c.raw.lock().unwrap().clone();
    assert!(String::from_utf8_lossy(&raw).contains("\x1b[38;2;"));
}

/// QA: under `TERM=dumb` (an editor's shell buffer) the console drew its
/// screen as raw escape sequences. It says it cannot draw there, draws
/// nothing, and the demo is still made, with the commands to try it.
#[test]
fn a_dumb_terminal_is_told_to_use_the_headless_commands() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = console_on_a_demo(&dir, &[("TERM", "dumb")]);
    let status = c.wait_exit();
    assert_eq!(status.exit_code(), 2, "{}", c.contents());
    let raw = String::from_utf8_lossy(&c.raw.lock().unwrap()).into_owned();
    assert!(
        raw.contains("cannot draw on this terminal (TERM=dumb)") && raw.contains("`idem status`"),
        "{raw}"
    );
    assert!(!raw.contains("\x1b[?1049h"), "no alternate screen: {raw:?}");

    let demo = dir.path().join("dumb demo");
    let mut c = Console::start_with(
        dir.path(),
        &["demo", "--path", demo.to_str().unwrap()],
        &[("TERM", "dumb")],
    );
    let status = c.wait_exit();
    let raw = String::from_utf8_lossy(&c.raw.lock().unwrap()).into_owned();
    assert!(status.success(), "{raw}");
    assert!(
        raw.contains("TERM=dumb") && raw.contains("demo warehouse ready"),
        "{raw}"
    );
    assert!(!raw.contains("\x1b[?1049h"), "no alternate screen: {raw:?}");
    assert!(demo.join("idem.toml").exists());
}

#[test]
fn the_user_config_theme_applies_below_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    let out = idem(dir.path(), &["demo", "--path", demo.to_str().unwrap()]);
    assert!(out.status.success());
    let config = demo.join("idem.toml");
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(xdg.join("idem")).unwrap();
    std::fs::write(xdg.join("idem/config.toml"), "theme = \"mono\"\n").unwrap();
    let drawn_colour = |env: &[(&str, &str)]| {
        let mut c = Console::start_with(dir.path(), &["--config", config.to_str().unwrap()], env);
        c.wait_for(&["fct_orders", "repl·day ✗3", "Mo Tu We Th Fr Sa Su"]);
        c.send("q");
        assert!(c.wait_exit().success());
        let raw = c.raw.lock().unwrap().clone();
        let text = String::from_utf8_lossy(&raw).into_owned();
        ["\x1b[38;2;", "\x1b[48;2;", "\x1b[38;5;", "\x1b[48;5;"]
            .iter()
            .any(|colour| text.contains(colour))
    };
    let xdg = xdg.to_str().unwrap();
    assert!(
        !drawn_colour(&[("XDG_CONFIG_HOME", xdg)]),
        "the user config's mono theme"
    );
    assert!(
        drawn_colour(&[("XDG_CONFIG_HOME", xdg), ("IDEM_THEME", "default")]),
        "IDEM_THEME wins over the user config"
    );
}

#[test]
fn verify_and_what_changed_from_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, config_path) = demo_console(&dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (config, job) = demo_job(&config_path, "dim_customers");
    let read = || {
        rt.block_on(async {
            let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
            let s = snapshot(&wh, &job).await;
            wh.close().await;
            s
        })
    };
    let before = read();
    // The first window of the dimension is stale: loaded before lower(email).
    c.send(":job dim_customers\r");
    c.send("g");
    c.wait_for(&["~ stale"]);
    c.send("V");
    c.wait_for(&["idempotent: same 150 rows on every run; rolled back"]);
    assert_eq!(read(), before, "verify left rows or attempts behind");
    c.send("d");
    let screen = c.wait_for(&["What changed · dim_customers", "lower(email)"]);
    assert!(
        screen.contains("+select customer_id, lower(email) as email"),
        "{screen}"
    );
    c.send("\x1b");
    c.send("q");
    assert!(c.wait_exit().success());
}

#[test]
fn reconcile_select_out_of_date_rerun_and_reconcile_again() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, config_path) = demo_console(&dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (config, job) = demo_job(&config_path, "fct_orders");
    // O counts the source of the partitions on screen: three recent days
    // got late orders after they were loaded.
    c.send("O");
    let screen = c.wait_for(&["3 partitions out of date", "o selects them"]);
    assert_eq!(
        screen.matches("■+").count(),
        3,
        "marked in the calendar: {screen}"
    );
    c.send("o");
    c.wait_for(&[
        "selected 3 out-of-date partitions of fct_orders",
        "3 selected",
    ]);
    let screen = c.contents();
    assert!(
        screen.contains(" late"),
        "the detail tells source vs loaded: {screen}"
    );
    c.send("r");
    c.wait_for(&["Run fct_orders?"]);
    c.send("\r");
    c.wait_for(&["run of fct_orders finished: 3 succeeded"]);
    // The reloaded days now hold their late rows: nothing is out of date.
    c.send("O");
    let screen = c.wait_for(&["every loaded partition agrees with its source"]);
    assert!(!screen.contains("■+"), "{screen}");
    c.send("q");
    assert!(c.wait_exit().success());
    rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let parts = job.partitions(now_utc());
        let source = wh
            .source_counts(
                &job,
                parts[0],
                *parts.last().unwrap(),
                idem::lint::bounds_only_filter(&job, wh.syntax()),
            )
            .await
            .unwrap();
        let mut statuses = idem::state::job_status(&wh, &job, now_utc(), &HashSet::new())
            .await
            .unwrap();
        idem::state::reconcile(
            &mut statuses,
            &source.partitions,
            parts[0],
            *parts.last().unwrap(),
        );
        let late: Vec<String> = statuses
            .iter()
            .filter(|s| s.out_of_date().is_some())
            .map(|s| s.partition.name())
            .collect();
        assert!(late.is_empty(), "still out of date: {late:?}");
        wh.close().await;
    });
}

#[test]
fn a_late_source_shows_in_the_confirm_dialog_and_the_guard_keeps_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, config_path) = demo_console(&dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (config, job) = demo_job(&config_path, "fct_orders");
    // The latest loaded day's source empties behind the console's back, as
    // when its upstream load has not landed yet.
    let (day, before) = rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let statuses = idem::state::job_status(&wh, &job, now_utc(), &HashSet::new())
            .await
            .unwrap();
        let s = statuses
            .iter()
            .rev()
            .find(|s| s.state == LoadState::Loaded && s.rows_now.unwrap_or(0) > 0)
            .unwrap();
        let day = s.partition.name();
        let delete = format!("DELETE FROM raw_orders WHERE date(created_at) = '{day}'");
        wh.execute_script(&[&delete]).await.unwrap();
        let before = snapshot(&wh, &job).await;
        wh.close().await;
        (day, before)
    });
    let rows = idem::numbers::thousands(before.0[&day]);
    c.send(&format!(":goto {day}\r"));
    c.wait_for(&[&format!(" {day} ")]);
    c.send("r");
    c.wait_for(&[
        "Run fct_orders?",
        "1 partition would be refused",
        &format!("{day} {rows} → 0"),
    ]);
    c.send("\r");
    c.wait_for(&["refused by the shrink guard"]);
    c.send("q");
    assert!(c.wait_exit().success());
    rt.block_on(async {
        let wh = Warehouse::connect(&config.warehouse, 2).await.unwrap();
        let (counts, attempts) = snapshot(&wh, &job).await;
        assert_eq!(counts, before.0, "the guard kept every row");
        assert_eq!(attempts[&day], before.1[&day] + 1, "a refused attempt");
        wh.close().await;
    });
}

#[test]
fn without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    // A missing config: the same error as the headless commands, exit 2.
    let out = idem(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no idem.toml here"), "{err}");
    assert!(out.stdout.is_empty(), "nothing drawn");
    // A broken one: positioned error, exit 2.
    std::fs::write(dir.path().join("idem.toml"), "[warehouse]\nurl = 5\n").unwrap();
    let out = idem(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("idem.toml:2"), "{err}");
    // The demo without a terminal: creates it and says how to open it.
    let demo = dir.path().join("demo");
    let out = idem(dir.path(), &["demo", "--path", demo.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("demo warehouse ready"), "{text}");
    assert!(text.contains("# the console"), "{text}");
    // The printed commands work as printed, though idem is not on the PATH.
    let jobs = text
        .lines()
        .find(|l| l.trim_end().ends_with(" jobs"))
        .unwrap_or_else(|| panic!("no jobs command in {text}"));
    let ran = std::process::Command::new("sh")
        .args(["-c", jobs.trim()])
        .current_dir(dir.path())
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{jobs}: {}",
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(String::from_utf8_lossy(&ran.stdout).contains("fct_orders"));
    // A valid config, no terminal: the console says it needs one.
    let config = demo.join("idem.toml");
    let out = idem(dir.path(), &["--config", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("needs a terminal"), "{err}");
}

/// A PostgreSQL job `name` of two days (its source holding a row a day)
/// in a console whose warehouse URL goes through a proxy the test can cut
/// or stall (connect timeout 3 s), its states on screen.
fn console_through_a_proxy(
    rt: &tokio::runtime::Runtime,
    name: &str,
) -> (common::TestDb, Warehouse, common::proxy::Proxy, Console) {
    let db = rt
        .block_on(common::TestDb::new(common::Kind::Postgres))
        .expect("test database");
    let job = common::replace_job(
        name,
        "fct",
        "2026-01-02",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    let (_, config) = db.config(&job);
    let wh = rt.block_on(db.warehouse(&config));
    rt.block_on(wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ]))
    .unwrap();
    let (proxy, through) = rt.block_on(common::proxy::Proxy::before(&db.url));
    std::fs::write(
        db.path().join("idem.toml"),
        format!("[warehouse]\nurl = \"{through}\"\nconnect_timeout = \"3s\"\n\n{job}"),
    )
    .unwrap();
    let mut c = Console::start(db.path(), &[]);
    c.wait_for_states(&[name, "Mo Tu We Th Fr Sa Su"]);
    (db, wh, proxy, c)
}

/// The warehouse went away after the console read its states: a run is
/// refused within about one connect timeout, not after one for each check
/// a run makes before it starts, and nothing is recorded.
#[test]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
fn a_run_on_a_warehouse_gone_away_is_refused_within_one_connect_timeout() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_db, wh, proxy, mut c) = console_through_a_proxy(&rt, "gone");
    proxy.cut();
    c.send(":run 2026-01-01..2026-01-02\r");
    c.wait_for(&["Run gone?"]);
    let asked = std::time::Instant::now();
    c.send("\r");
    c.wait_for(&["run not started: cannot connect to"]);
    let took = asked.elapsed();
    assert!(
        took < std::time::Duration::from_secs(8),
        "refused after {took:?}, connect_timeout is 3 s"
    );
    c.send("q");
    assert!(c.wait_exit().success());
    rt.block_on(async {
        assert!(wh.attempts("gone", None).await.unwrap().is_empty());
        wh.close().await;
    });
}

/// QA: quitting while a run's check of the warehouse waited on a stalled
/// server (Enter in the dialog, then q y within the connect timeout)
/// exited 0 and said nothing once the check refused the run, where every
/// other quit with a run in flight reports it and exits 130. It says the
/// run never started, with the command that runs it, and exits 130.
#[test]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
fn quitting_while_a_run_waits_on_a_stalled_server_says_it_never_started() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (_db, wh, proxy, mut c) = console_through_a_proxy(&rt, "stalled");
    c.send(":run 2026-01-01..2026-01-02\r");
    c.wait_for(&["Run stalled?"]);
    proxy.stall();
    c.send("\r");
    c.send("q");
    c.wait_for(&["Quit and cancel it?"]);
    c.send("y");
    let code = c.wait_exit().exit_code();
    let raw = String::from_utf8_lossy(&c.raw.lock().unwrap()).into_owned();
    let said: Vec<&str> = raw
        .split(['\r', '\n'])
        .filter(|l| l.starts_with("idem: "))
        .collect();
    assert_eq!(code, 130, "{said:#?}");
    assert!(
        said.iter().any(|l| l.starts_with(
            "idem: stalled: never started (the console was left while its check of the warehouse was waiting; nothing was loaded or recorded)"
        )),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .any(|l| l.starts_with("idem: to run it: idem --config ")
                && l.ends_with(" run stalled --from 2026-01-01 --to 2026-01-02")),
        "{said:#?}"
    );
    rt.block_on(async {
        assert!(wh.attempts("stalled", None).await.unwrap().is_empty());
        wh.close().await;
    });
}

/// The warehouse stops answering while the console refreshes, its first
/// states read (a session's `LOCK TABLE idem.attempts` catches the refresh
/// mid-read; then the proxy forgets its connections and stalls new ones:
/// every connection silent, as a hung server's). The refresh ends within
/// seconds saying the warehouse is not answering, keys go on answering,
/// and `q` quits at once and restores the terminal.
#[test]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
fn a_refresh_on_a_server_that_stops_answering_ends_saying_so_and_q_quits() {
    use sqlx::{Connection, Executor};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (db, wh, proxy, mut c) = console_through_a_proxy(&rt, "silent");
    let mut holder = rt.block_on(sqlx::PgConnection::connect(&db.url)).unwrap();
    rt.block_on(async {
        holder.execute("BEGIN").await.unwrap();
        holder.execute("LOCK TABLE idem.attempts").await.unwrap();
    });
    c.send("R");
    let mut admin = rt.block_on(sqlx::PgConnection::connect(&db.url)).unwrap();
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()";
    assert!(
        rt.block_on(common::poll_count(&mut admin, waiting, 300, |n| n >= 1)),
        "the refresh never read the locked ledger"
    );
    proxy.forget();
    proxy.stall();
    let silent = std::time::Instant::now();
    c.wait_for(&["refresh failed: the warehouse", "is not answering"]);
    let took = silent.elapsed();
    assert!(
        took < std::time::Duration::from_secs(20),
        "the refresh ended {took:?} after the server went silent"
    );
    c.send("?");
    c.wait_for(&["Help · keys"]);
    c.send("\x1b");
    let asked = std::time::Instant::now();
    c.send("q");
    assert!(c.wait_exit().success());
    let took = asked.elapsed();
    assert!(took < std::time::Duration::from_secs(5), "q took {took:?}");
    let raw = c.raw.lock().unwrap().clone();
    let find_last = |needle: &[u8]| raw.windows(needle.len()).rposition(|w| w == needle);
    assert!(find_last(b"\x1b[?1049l") > find_last(b"\x1b[?1049h"));
    rt.block_on(async {
        holder.execute("COMMIT").await.unwrap();
        wh.close().await;
    });
}

/// The run dialog on a PostgreSQL target partitioned natively says which
/// of its windows no partition covers (the run would fail them) and what
/// to create, as `idem run --dry-run` does; it once said nothing of them.
#[test]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
fn the_run_dialog_says_which_windows_no_native_partition_covers() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let db = rt
        .block_on(common::TestDb::new(common::Kind::Postgres))
        .expect("test database");
    let job = common::replace_job(
        "gap",
        "fct",
        "2026-01-03",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    let (_, config) = db.config(&job);
    let wh = rt.block_on(db.warehouse(&config));
    rt.block_on(wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-03')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL) PARTITION BY RANGE (dt)",
        "CREATE TABLE fct_01 PARTITION OF fct FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')",
        "CREATE TABLE fct_03 PARTITION OF fct FOR VALUES FROM ('2026-01-03') TO ('2026-01-04')",
    ]))
    .unwrap();
    let mut c = Console::start(db.path(), &[]);
    c.wait_for_states(&["gap", "Mo Tu We Th Fr Sa Su"]);
    c.send(":run 2026-01-01..2026-01-03\r");
    c.wait_for(&[
        "Run gap?",
        "1 partition would fail: no partition of fct covers it",
        "2026-01-02: CREATE TABLE … PARTITION OF fct FOR VALUES FROM",
    ]);
    // Only the windows the run takes: the 1st alone is covered.
    c.send("\x1b");
    c.send(":run 2026-01-01..2026-01-01\r");
    c.wait_for(&["Run gap?", "same as"]);
    // The read of the partitions answers within a moment.
    std::thread::sleep(std::time::Duration::from_millis(700));
    let screen = c.contents();
    assert!(!screen.contains("would fail"), "{screen}");
    c.send("\x1b");
    c.send("q");
    assert!(c.wait_exit().success());
    rt.block_on(wh.close());
}

/// A cascade's run dialog says which windows of each downstream step no
/// native partition covers, as `idem run --cascade` checks every step; it
/// once checked the root job's alone, and the cascade failed downstream.
#[test]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
fn a_cascade_dialog_says_which_downstream_windows_no_native_partition_covers() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let db = rt
        .block_on(common::TestDb::new(common::Kind::Postgres))
        .expect("test database");
    let jobs = common::replace_job(
        "up",
        "up_t",
        "2026-01-03",
        "select id, dt from src where dt >= :start and dt < :end",
    ) + &common::replace_job(
        "down",
        "fct",
        "2026-01-03",
        "select id, dt from up_t where dt >= :start and dt < :end",
    );
    let (_, config) = db.config(&jobs);
    let wh = rt.block_on(db.warehouse(&config));
    rt.block_on(wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-03')",
        "CREATE TABLE up_t (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL) PARTITION BY RANGE (dt)",
        "CREATE TABLE fct_01 PARTITION OF fct FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')",
        "CREATE TABLE fct_03 PARTITION OF fct FOR VALUES FROM ('2026-01-03') TO ('2026-01-04')",
    ]))
    .unwrap();
    let mut c = Console::start(db.path(), &[]);
    c.wait_for_states(&["up", "down", "Mo Tu We Th Fr Sa Su"]);
    c.send(":run 2026-01-01..2026-01-03 --cascade\r");
    c.wait_for(&[
        "Run up?",
        "then down",
        "then down: 1 partition would fail: no partition of fct covers it",
        "2026-01-02: CREATE TABLE … PARTITION OF fct FOR VALUES FROM",
    ]);
    // The root's own target has no native partitions: nothing of its own.
    let screen = c.contents();
    assert!(!screen.contains("of up_t"), "{screen}");
    c.send("\x1b");
    c.send("q");
    assert!(c.wait_exit().success());
    rt.block_on(wh.close());
}
