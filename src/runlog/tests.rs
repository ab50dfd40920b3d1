use super::*;

fn log_line(i: usize) -> Event {
    Event::PartitionLog {
        run_id: "r".into(),
        job: "fct".into(),
        partition: "2026-01-01".into(),
        line: format!("line {i} {}", "x".repeat(40)),
    }
}

#[test]
fn logs_rotate_and_stay_bounded() {
    let dir = tempfile::tempdir().expect("dir");
    let mut log = RunLog::at(dir.path().to_path_buf(), 1000);
    for i in 0..200 {
        log.record(&log_line(i));
    }
    let file = path(dir.path(), "fct", "2026-01-01");
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    assert!(size(&file) < 1100, "{}", size(&file));
    assert!(size(&file.with_extension("log.1")) < 1100);
    assert!(!file.with_extension("log.2").exists());
    let last = tail(dir.path(), "fct", "2026-01-01", 3).lines;
    assert_eq!(last.len(), 3);
    assert!(last[2].contains("line 199"), "{last:?}");
    assert!(last[0].contains("line 197"), "{last:?}");
}

#[test]
fn interleaved_partitions_and_later_attempts_append_in_order() {
    let dir = tempfile::tempdir().expect("dir");
    let mut log = RunLog::at(dir.path().to_path_buf(), MAX_BYTES);
    let line = |partition: &str, text: &str| Event::PartitionLog {
        run_id: "r".into(),
        job: "fct".into(),
        partition: partition.into(),
        line: text.into(),
    };
    let done = |partition: &str, attempt: i64| Event::PartitionSucceeded {
        run_id: "r".into(),
        job: "fct".into(),
        partition: partition.into(),
        attempt,
        rows_deleted: 0,
        rows_inserted: 1,
        rows_updated: 0,
        rows_after: 1,
        duration_ms: 1,
        fingerprint: "v2:1:1".into(),
        content_changed: true,
    };
    for attempt in 1..=2 {
        log.record(&line("2026-01-01", &format!("a{attempt} one")));
        log.record(&line("2026-01-02", &format!("b{attempt} one")));
        log.record(&line("2026-01-01", &format!("a{attempt} two")));
        log.record(&done("2026-01-01", attempt));
        log.record(&line("2026-01-02", &format!("b{attempt} two")));
        log.record(&done("2026-01-02", attempt));
    }
    assert!(log.open.is_empty(), "every ended attempt's file is closed");
    let texts = |p: &str| -> Vec<String> {
        tail(dir.path(), "fct", p, 10)
            .lines
            .iter()
            .map(|l| l.split_once(' ').map_or(l.clone(), |(_, t)| t.to_string()))
            .collect()
    };
    assert_eq!(
        texts("2026-01-01"),
        [
            "a1 one",
            "a1 two",
            "attempt 1 succeeded: 1 row, 1 ms",
            "a2 one",
            "a2 two",
            "attempt 2 succeeded: 1 row, 1 ms"
        ]
    );
    assert_eq!(texts("2026-01-02")[3], "b2 one");
}

/// The lines of a partition's log and its rotated file, oldest first,
/// without their times.
fn texts(dir: &Path, partition: &str) -> Vec<String> {
    tail(dir, "fct", partition, 10_000)
        .lines
        .iter()
        .map(|l| l.split_once(' ').map_or(l.clone(), |(_, t)| t.to_string()))
        .collect()
}

/// QA: the logs' folder removed while a partition's attempt ran (a
/// clean-up of ~/.local/state) took the attempt's later lines with it,
/// its INSERT, COMMIT and outcome, without a word. The folder is made
/// again, saying which warehouse it is of, and the lines go on in it.
#[test]
fn a_log_folder_removed_mid_attempt_is_made_again() {
    let state = tempfile::tempdir().expect("dir");
    let dir = state.path().join("logs");
    let mut log = RunLog::at(dir.clone(), MAX_BYTES);
    log.warehouse = Some("sqlite:///w.db".into());
    log.record(&log_line(1));
    std::fs::remove_dir_all(&dir).expect("rm -r");
    log.record(&log_line(2));
    assert!(log.failure().is_none());
    let lines = texts(&dir, "2026-01-01");
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("line 2 "), "{lines:?}");
    let named = std::fs::read_to_string(dir.join("warehouse.txt")).expect("warehouse.txt");
    assert_eq!(named, "sqlite:///w.db\n");
    // The file alone removed, as by hand: the same.
    std::fs::remove_file(path(&dir, "fct", "2026-01-01")).expect("rm");
    log.record(&log_line(3));
    assert!(texts(&dir, "2026-01-01")[0].starts_with("line 3 "));
}

/// QA: a job's log folder replaced by a file (or a file where any
/// folder above it should be) was said as `cannot write
/// …/fct/2026-01-01.log: File exists`, blaming the log. The path in
/// the way is named, and why.
#[test]
fn a_file_in_the_way_of_a_log_folder_is_named() {
    let state = tempfile::tempdir().expect("dir");
    let dir = state.path().join("logs");
    let mut log = RunLog::at(dir.clone(), MAX_BYTES);
    std::fs::create_dir_all(&dir).expect("dir");
    let job = dir.join("fct");
    std::fs::write(&job, "x").expect("a file for the job's folder");
    log.record(&log_line(1));
    assert_eq!(
        log.failure(),
        Some(format!(
            "cannot create the folder {}: a file is in its place (move it away to keep run logs)",
            job.display()
        ))
    );
    // A file where a folder above the logs' should be.
    let idem = state.path().join("idem");
    std::fs::write(&idem, "x").expect("a file for idem's folder");
    let logs = idem.join("logs").join("e3422c86bac1");
    assert_eq!(
        make_folder(&logs),
        Err(format!(
            "cannot create the folder {}: {} is a file, not a folder (move it away to keep run logs)",
            logs.display(),
            idem.display()
        ))
    );
    let link = state.path().join("gone");
    std::os::unix::fs::symlink(state.path().join("nowhere"), &link).expect("symlink");
    assert_eq!(
        make_folder(&link.join("fct")),
        Err(format!(
            "cannot create the folder {}: {} is a symlink to nothing, not a folder (move it away to keep run logs)",
            link.join("fct").display(),
            link.display()
        ))
    );
}

/// QA: two runs writing one partition's log (a run waiting on the
/// partition's lock while another loads it): the one whose open file
/// the other rotated away wrote on into the rotated file, and once that
/// was rotated away too, into no file at all. Each follows the path.
#[test]
fn two_runs_writing_one_log_follow_each_others_rotation() {
    let dir = tempfile::tempdir().expect("dir");
    let mut waiting = RunLog::at(dir.path().to_path_buf(), 1000);
    let mut loading = RunLog::at(dir.path().to_path_buf(), 1000);
    let line = |text: &str| Event::PartitionLog {
        run_id: "r".into(),
        job: "fct".into(),
        partition: "2026-01-01".into(),
        line: text.into(),
    };
    waiting.record(&line("waiting for the lock"));
    for i in 0..60 {
        loading.record(&log_line(i));
    }
    waiting.record(&line("lock taken"));
    assert!(waiting.failure().is_none() && loading.failure().is_none());
    let lines = texts(dir.path(), "2026-01-01");
    assert_eq!(
        lines.last().map(String::as_str),
        Some("lock taken"),
        "{lines:?}"
    );
    assert!(lines[lines.len() - 2].starts_with("line 59 "), "{lines:?}");
}

/// QA: an error of several lines (a server's DETAIL) left lines without
/// a time, so `--lines 1` showed half an error; an escape sequence a
/// server echoed restyled the terminal of whoever read the log.
#[test]
fn a_message_of_several_lines_is_as_many_plain_lines() {
    let dir = tempfile::tempdir().expect("dir");
    let mut log = RunLog::at(dir.path().to_path_buf(), MAX_BYTES);
    let mut line = log_line(0);
    if let Event::PartitionLog { line, .. } = &mut line {
        *line = "ROLLBACK: bad \u{1b}[31mred\r\nDETAIL: x".into();
    }
    log.record(&line);
    let text = std::fs::read_to_string(path(dir.path(), "fct", "2026-01-01")).expect("log");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text:?}");
    assert!(
        lines[0].ends_with(" ROLLBACK: bad \\u{1b}[31mred"),
        "{text:?}"
    );
    assert!(lines[1].ends_with("Z DETAIL: x"), "{text:?}");
}

/// QA: a log cut mid-character (a full disk), or any byte not UTF-8,
/// hid the whole file: `idem log --lines` said there was no run log. A
/// log grown large was read whole to print its last lines.
#[test]
fn a_torn_or_large_log_shows_its_last_lines() {
    let dir = tempfile::tempdir().expect("dir");
    let file = path(dir.path(), "fct", "2026-01-01");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("dir");
    let mut old = b"old \xff\n".to_vec();
    old.extend(b"esc \x1b[2J\n");
    std::fs::write(file.with_extension("log.1"), old).expect("rotated");
    let mut big = Vec::new();
    for i in 0..20_000 {
        big.extend(format!("line {i} {}\n", "x".repeat(20)).as_bytes());
    }
    big.extend(b"COMMIT caf\xc3");
    std::fs::write(&file, &big).expect("log");
    let last = tail(dir.path(), "fct", "2026-01-01", 2);
    assert!(last.unreadable.is_empty(), "{last:?}");
    assert!(last.lines[0].starts_with("line 19999 "), "{last:?}");
    assert_eq!(last.lines[1], "COMMIT caf\u{fffd}");
    let all = tail(dir.path(), "fct", "2026-01-01", 30_000);
    assert_eq!(all.lines.len(), 20_003);
    assert_eq!(all.lines[..2], ["old \u{fffd}", "esc \\u{1b}[2J"]);
    std::fs::remove_file(&file).expect("rm");
    std::fs::create_dir(&file).expect("a folder in its place");
    let odd = tail(dir.path(), "fct", "2026-01-01", 5);
    assert_eq!(odd.lines.len(), 2, "the rotated file is still shown");
    assert!(odd.unreadable[0].starts_with("cannot read "), "{odd:?}");
    let none = tail(dir.path(), "fct", "2026-01-02", 5);
    assert!(!none.found && none.lines.is_empty() && none.unreadable.is_empty());
}
