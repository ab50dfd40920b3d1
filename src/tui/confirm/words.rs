//! The confirm dialog's plain words on what a run replaces and how its
//! job's strategy loads.

use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use crate::config::Strategy;
use crate::numbers::{n_partitions, n_rows, thousands};
use crate::state::LoadState;
use crate::tui::job::JobView;
use crate::tui::keymap;
use crate::tui::keys::{Action, Scope};
use crate::tui::theme::Theme;

/// The columns of a line's label (`strategy  `): its value starts
/// after them, and wraps back to them.
pub const LABEL_WIDTH: usize = 10;

/// The selected partitions the run leaves out, by why: "1 future, not
/// run", "2 running, 1 future, not run".
pub fn left_out_words(job: &JobView, left_out: &[usize]) -> Option<String> {
    let running = left_out
        .iter()
        .filter(|i| job.state_at(**i) == Some(LoadState::Running))
        .count();
    let future = left_out.len() - running;
    let mut words = Vec::new();
    if running > 0 {
        words.push(format!("{} running", thousands(running as i64)));
    }
    if future > 0 {
        words.push(format!("{} future", thousands(future as i64)));
    }
    (!words.is_empty()).then(|| format!("{}, not run", words.join(", ")))
}

/// What the run replaces, in rows; when the filter keeps no partition,
/// that nothing runs.
pub fn replaces(job: &JobView, chosen: &[usize]) -> String {
    if chosen.is_empty() {
        return nothing_to_run();
    }
    match job.job.strategy {
        Strategy::ReplacePartition => {
            let rows_now: i64 = chosen
                .iter()
                .filter_map(|i| job.status_at(*i).and_then(|s| s.rows_now))
                .sum();
            let missing = chosen
                .iter()
                .filter(|i| job.state_at(**i) == Some(LoadState::Missing))
                .count();
            if missing == chosen.len() && rows_now == 0 {
                return format!(
                    "nothing yet in {}: {} never loaded, loaded for the first time",
                    job.job.target,
                    n_partitions(missing as i64)
                );
            }
            // Failed before they ever held rows: there is nothing to
            // delete, which "0 rows … will be deleted" left to work out.
            if rows_now == 0 {
                let these = match chosen.len() {
                    1 => "this partition holds".to_string(),
                    n => format!("these {} hold", n_partitions(n as i64)),
                };
                return format!(
                    "{these} no rows in {} now: nothing is deleted",
                    job.job.target
                );
            }
            let mut words = format!(
                "{} now in {} will be deleted and loaded again",
                n_rows(rows_now),
                job.job.target
            );
            if missing > 0 {
                words.push_str(&format!(" (and {missing} missing)"));
            }
            words
        }
        Strategy::MergeKey => {
            let merged: i64 = chosen
                .iter()
                .filter_map(|i| job.status_at(*i).and_then(|s| s.rows()))
                .sum();
            let windows = match chosen.len() {
                1 => "this window".to_string(),
                n => format!("these {} windows", thousands(n as i64)),
            };
            format!(
                "no rows are deleted; of the {} {windows} merged at their last loads, those whose values differ are updated",
                n_rows(merged)
            )
        }
    }
}

/// The dialog's words when its filter keeps no partition: nothing runs,
/// and the key that takes every partition back.
pub fn nothing_to_run() -> String {
    format!(
        "nothing: the filter selects no partition, so {} would run nothing ({} takes them all)",
        keymap::key(Scope::Confirm, Action::Confirm),
        keymap::key(Scope::Confirm, Action::OnlyAll)
    )
}

/// The job's strategy in one line of plain words.
pub fn strategy_words(job: &JobView) -> String {
    let target = job.job.target.to_string();
    match job.job.strategy {
        Strategy::ReplacePartition => format!(
            "each {}: delete its window from {target} and insert the job's rows, in one transaction under a lock",
            job.job.grain
        ),
        Strategy::MergeKey => format!(
            "each window in order: upsert rows into {target} by {}, updating only rows that differ, in one transaction",
            job.job
                .unique_key
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The line that stands for `hidden` lines a terminal too small for the
/// dialog leaves out.
pub(super) fn more_line(hidden: usize, t: &Theme) -> Line<'static> {
    Line::from(Span::styled(
        format!(
            "… {hidden} more line{} below: enlarge the terminal to read them",
            if hidden == 1 { "" } else { "s" }
        ),
        t.style("warning"),
    ))
}

/// The dialog's keys, with those of the `offered` actions (shrink,
/// through latest) that apply to this run.
pub fn hints(t: &Theme, offered: &[Action]) -> Line<'static> {
    let key = |action| keymap::key(Scope::Confirm, action);
    let filters = [
        Action::OnlyAll,
        Action::OnlyFailed,
        Action::OnlyMissing,
        Action::OnlyStale,
    ]
    .map(key)
    .join(" ");
    let mut hints = vec![
        (key(Action::Confirm).to_string(), " run  "),
        (key(Action::Close).to_string(), " back  "),
        (filters, " filter  "),
        (key(Action::EditReason).to_string(), " reason  "),
        (key(Action::Cascade).to_string(), " cascade"),
    ];
    for (action, what) in [
        (Action::AllowShrink, " shrink"),
        (Action::ThroughLatest, " through latest"),
    ] {
        if offered.contains(&action) {
            hints.push((format!("  {}", key(action)), what));
        }
    }
    Line::from(
        hints
            .into_iter()
            .flat_map(|(k, what)| {
                [
                    Span::styled(k, t.style("highlight")),
                    Span::styled(what, t.style("muted")),
                ]
            })
            .collect::<Vec<_>>(),
    )
}

/// The run dialog's width on a screen `screen` columns wide: 92 at most,
/// unless a word of its command (a long job name, a deep config path) needs
/// more to show whole; that widens it up to the screen, so that widening
/// the terminal shows it.
pub fn dialog_width(screen: u16, command: Option<&[String]>) -> u16 {
    let usual = screen.saturating_sub(2).min(92);
    match command {
        Some(c) if shell_lines(c, usual.saturating_sub(2) as usize).is_none() => {
            screen.saturating_sub(2)
        }
        _ => usual,
    }
}

/// A command laid out in lines of at most `width` columns that a POSIX
/// shell reads back as one command: each line but the last ends in ` \`, so
/// a copy of the wrapped lines pastes as it reads. A line never breaks
/// inside a piece: a flag whose value does not fit beside it on a line of
/// its own goes on one line, its value on the next; a `#` comment that does
/// not fit is left out. A quoted value wider than any line (a long
/// `--reason`) is broken between words into quoted parts, each but the
/// last ending in `'\` and the next opening its line with `'`: the shell
/// joins them into the one word. None when an unquoted piece is wider than
/// any line: the terminal would break it, and a copy would not run.
pub fn shell_lines(pieces: &[String], width: usize) -> Option<Vec<String>> {
    // A continued line is indented 2 and ends in " \".
    let fits = |piece: &str| 2 + piece.trim_start().width() + 2 <= width;
    let mut units: Vec<&str> = Vec::new();
    for piece in pieces {
        if fits(piece) {
            units.push(piece);
        } else if piece.trim_start().starts_with('#') {
            continue;
        } else if let Some((flag, value)) = piece.split_once(' ')
            && flag.starts_with("--")
        {
            units.extend([flag, value]);
        } else {
            units.push(piece);
        }
    }
    if !units
        .iter()
        .all(|u| fits(u) || (quoted(u) && width >= MIN_QUOTED_ROOM + 5))
    {
        return None;
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for (k, piece) in units.iter().enumerate() {
        let last = k + 1 == units.len();
        // Room for the continuation, unless nothing follows.
        let tail = if last { 0 } else { 2 };
        if !fits(piece) {
            // Its parts: the first beside what the line holds when a good
            // part of a row is left there, each in its quotes, `'\` after it.
            let mut room = width.saturating_sub(line.width() + 1 + 3);
            if line.trim().is_empty() || room < MIN_QUOTED_ROOM.max(width / 3) {
                if !line.trim().is_empty() {
                    lines.push(format!("{line} \\"));
                }
                line = "  ".into();
                room = width - 2 - 3;
            } else {
                line.push(' ');
            }
            let inner = &piece[1..piece.len() - 1];
            // The parts after the first open their lines: no indent, which
            // the shell would read as a space between two words.
            let parts = quoted_parts(inner, room, width - 3 - tail);
            for (i, part) in parts.iter().enumerate() {
                if i + 1 < parts.len() {
                    line.push_str(&format!("'{part}'\\"));
                    lines.push(std::mem::take(&mut line));
                } else {
                    line.push_str(&format!("'{part}'"));
                }
            }
            continue;
        }
        if !line.is_empty() && line.width() + 1 + piece.width() + tail > width {
            lines.push(format!("{line} \\"));
            line = format!("  {}", piece.trim_start());
        } else {
            if !line.is_empty() && !piece.starts_with(' ') {
                line.push(' ');
            }
            line.push_str(piece);
        }
    }
    lines.push(line);
    Some(lines)
}

/// The fewest columns a part of a quoted value broken across lines takes
/// (its quotes and `\` aside).
const MIN_QUOTED_ROOM: usize = 8;

/// Whether a command's piece is one single-quoted word, as
/// [`crate::cli::RunArgs::command_pieces`] quotes a value.
fn quoted(piece: &str) -> bool {
    piece.len() >= 2 && piece.starts_with('\'') && piece.ends_with('\'')
}

/// The inside of a single-quoted word (an apostrophe in it written `'\''`)
/// in parts of at most `first` columns, then `rest`: each ends after a
/// space where one falls in its room, else where the room ends, never
/// inside a `'\''`.
fn quoted_parts(inner: &str, first: usize, rest: usize) -> Vec<String> {
    let mut atoms: Vec<&str> = Vec::new();
    let mut at = 0;
    while at < inner.len() {
        let len = if inner[at..].starts_with("'\\''") {
            4
        } else {
            inner[at..].chars().next().map_or(1, char::len_utf8)
        };
        atoms.push(&inner[at..at + len]);
        at += len;
    }
    let mut parts = Vec::new();
    let mut from = 0;
    while from < atoms.len() {
        let room = if parts.is_empty() { first } else { rest }.max(1);
        let mut used = 0;
        let mut end = from;
        let mut after_space = None;
        while end < atoms.len() && used + atoms[end].width() <= room {
            used += atoms[end].width();
            if atoms[end] == " " {
                after_space = Some(end + 1);
            }
            end += 1;
        }
        if end < atoms.len()
            && let Some(space) = after_space
        {
            end = space;
        }
        // At least one, so that it moves on.
        let end = end.max(from + 1);
        parts.push(atoms[from..end].concat());
        from = end;
    }
    parts
}

/// The state filter's switches, the one in force highlighted.
pub fn filter_line<'a>(only: &[LoadState], t: &Theme, label: Span<'a>) -> Line<'a> {
    let mut filter = vec![label];
    for (action, name, states) in [
        (Action::OnlyAll, "all", vec![]),
        (Action::OnlyFailed, "failed", vec![LoadState::Failed]),
        (Action::OnlyMissing, "missing", vec![LoadState::Missing]),
        (Action::OnlyStale, "stale", vec![LoadState::Stale]),
    ] {
        let key = keymap::key(Scope::Confirm, action);
        let style = if only == states {
            t.style("highlight").add_modifier(Modifier::REVERSED)
        } else {
            t.style("muted")
        };
        filter.push(Span::styled(format!(" {key} {name} "), style));
        filter.push(Span::raw(" "));
    }
    let switchable = [LoadState::Failed, LoadState::Missing, LoadState::Stale];
    if !only.is_empty() && !switchable.contains(&only[0]) || only.len() > 1 {
        let names: Vec<&str> = only.iter().map(|s| s.name()).collect();
        filter.push(Span::styled(
            format!("--only {}", names.join(",")),
            t.style("highlight"),
        ));
    }
    Line::from(filter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::job_view;

    #[test]
    fn what_a_run_replaces_is_counted_as_people_read_numbers() {
        let all: Vec<usize> = (0..10).collect();
        let replace = job_view("fct", false, "■■■■■■■■■■");
        assert_eq!(
            replaces(&replace, &all),
            "1,000 rows now in t will be deleted and loaded again"
        );
        // QA: failed days with no rows read "0 rows now in t will be
        // deleted and loaded again".
        let failed = job_view("fct", false, "■■✗■·■■✗■■");
        assert_eq!(
            replaces(&failed, &[2, 7]),
            "these 2 partitions hold no rows in t now: nothing is deleted"
        );
        assert_eq!(
            replaces(&failed, &[2]),
            "this partition holds no rows in t now: nothing is deleted"
        );
        assert_eq!(
            replaces(&failed, &[2, 4]),
            "these 2 partitions hold no rows in t now: nothing is deleted"
        );
        let missing = job_view("fct", false, "··········");
        assert_eq!(
            replaces(&missing, &[0]),
            "nothing yet in t: 1 partition never loaded, loaded for the first time"
        );
        // The filter keeps none: nothing runs, said plainly, whatever the
        // strategy (not "0 partitions never loaded, loaded for the first
        // time").
        for merge in [false, true] {
            let job = job_view("fct", merge, "■■■■■■■■■■");
            assert_eq!(
                replaces(&job, &[]),
                "nothing: the filter selects no partition, so Enter would run nothing (a takes them all)"
            );
        }
        let merge = job_view("fct", true, "■■■■■■■■■■");
        assert_eq!(
            replaces(&merge, &all),
            "no rows are deleted; of the 1,000 rows these 10 windows merged at their last loads, those whose values differ are updated"
        );
    }

    #[test]
    fn a_wrapped_command_reads_back_as_one_command() {
        let pieces: Vec<String> = [
            "idem",
            "--config /tmp/a/long/path/idem.toml",
            "run fct_orders",
            "--from 2026-09-15",
            "--to 2026-09-17",
            "--reason 'late source'",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let lines = shell_lines(&pieces, 42).expect("fits");
        assert_eq!(
            lines,
            [
                "idem --config /tmp/a/long/path/idem.toml \\",
                "  run fct_orders --from 2026-09-15 \\",
                "  --to 2026-09-17 --reason 'late source'",
            ]
        );
        assert!(lines.iter().all(|l| l.width() <= 42), "{lines:?}");
        // Joined as a shell joins continued lines, it is the command again.
        let joined = lines.join("\n").replace(" \\\n  ", " ");
        assert_eq!(joined, pieces.join(" "));
        // Wide enough, it is one line with no continuation.
        assert_eq!(shell_lines(&pieces, 200), Some(vec![pieces.join(" ")]));
        // A flag whose value does not fit beside it: the value on a line of
        // its own, never broken inside (the space inside its quotes stays).
        let long = vec![
            "idem".to_string(),
            "--config '/tmp/a dir with spaces/idem.toml'".to_string(),
            "run fct_orders".to_string(),
            "  # also takes 2 more failed in between".to_string(),
        ];
        assert_eq!(
            shell_lines(&long, 40),
            Some(vec![
                "idem --config \\".to_string(),
                "  '/tmp/a dir with spaces/idem.toml' \\".to_string(),
                "  run fct_orders".to_string(),
            ]),
            "the comment that does not fit is left out"
        );
        // An unquoted piece no line can hold: no command rather than a
        // broken one.
        let path = vec![
            "idem".to_string(),
            "--config /tmp/a/very/long/path/to/the/idem.toml".to_string(),
        ];
        assert_eq!(shell_lines(&path, 30), None);
    }

    /// The words a POSIX shell reads in `lines` as the arguments of the
    /// command they name (its first word).
    fn read_by_sh(lines: &[String]) -> Vec<String> {
        let script = format!("idem() {{ printf '%s\\0' \"$@\"; }}\n{}", lines.join("\n"));
        let out = std::process::Command::new("sh")
            .args(["-c", &script])
            .output()
            .expect("sh runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout)
            .expect("utf-8")
            .split_terminator('\0')
            .map(str::to_string)
            .collect()
    }

    /// QA: a reason of 70 characters made the dialog's "same as" read
    /// "(wider than this dialog…)" at 80 columns: its quoted value could
    /// not be split. It is broken between words into quoted parts the
    /// shell joins again, so the lines read, and pasted run, as the
    /// command.
    #[test]
    fn a_long_quoted_value_wraps_into_parts_the_shell_joins() {
        let reason =
            "re-run after the vendor's feed was fixed upstream, ticket OPS-4121 (Dana's call)";
        let args = crate::cli::RunArgs {
            job: "fct_orders".into(),
            from: Some("2026-03-27".into()),
            to: Some("2026-03-29".into()),
            only: vec!["failed".into()],
            reason: Some(reason.into()),
            yes: true,
            ..crate::cli::RunArgs::default()
        };
        let pieces = args.command_pieces();
        for width in [76, 50, 30] {
            let lines = shell_lines(&pieces, width).expect("a command");
            assert!(lines.iter().all(|l| l.width() <= width), "{lines:#?}");
            assert!(lines.len() > 2, "{lines:#?}");
            let words = read_by_sh(&lines);
            assert_eq!(
                words,
                [
                    "run",
                    "fct_orders",
                    "--from",
                    "2026-03-27",
                    "--to",
                    "2026-03-29",
                    "--only",
                    "failed",
                    "--reason",
                    reason,
                    "--yes"
                ],
                "{lines:#?}"
            );
            // Broken between words where a space falls in a line.
            let cut: Vec<&String> = lines.iter().filter(|l| l.ends_with("'\\")).collect();
            assert!(!cut.is_empty(), "{lines:#?}");
            assert!(cut.iter().all(|l| l.ends_with(" '\\")), "{lines:#?}");
        }
        // The path with spaces of the test above, on lines too narrow for it.
        let spaced = vec![
            "idem".to_string(),
            "--config '/tmp/a dir with spaces/idem.toml'".to_string(),
            "run fct_orders".to_string(),
        ];
        let lines = shell_lines(&spaced, 24).expect("a command");
        assert_eq!(
            read_by_sh(&lines),
            [
                "--config",
                "/tmp/a dir with spaces/idem.toml",
                "run",
                "fct_orders"
            ],
            "{lines:#?}"
        );
    }
}
