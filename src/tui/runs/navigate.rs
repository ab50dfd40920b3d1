//! What the run pane's keys do: move among the runs, the selected run's
//! partitions (one at a time, to those that did not load, to either end)
//! and its log; and how the footer names them while the pane has focus.

use ratatui::layout::Rect;

use super::{LogBack, RunPartition, RunView, Scroll, log_view};
use crate::tui::bars::Hint;
use crate::tui::keymap::Keymap;
use crate::tui::keys::{Action, Scope};
use crate::tui::widgets::first_line;

/// The run pane's keys the footer names while it has focus, with what they
/// do there, the most used first: a narrow terminal drops hints from the
/// end (j k step partitions here, jobs in the jobs pane).
const FOOTER: &[(&[Action], &str)] = &[
    (&[Action::Down, Action::Up], "partition"),
    (&[Action::PrevFailed, Action::NextFailed], "unloaded"),
    (&[Action::PrevMonth, Action::NextMonth], "log"),
    (&[Action::Last], "follow"),
    (&[Action::Activate], "calendar"),
    (&[Action::Cancel], "cancel"),
    (&[Action::Left, Action::Right], "run"),
    (&[Action::FirstRow, Action::LastRow], "first/last"),
];

/// The footer's hints of the run pane's own keys, with the keys of `keys`
/// (those in force).
pub fn footer(keys: &Keymap) -> Vec<Hint> {
    FOOTER
        .iter()
        .map(|(actions, word)| Hint {
            keys: actions
                .iter()
                .map(|a| keys.key(Scope::Main, *a))
                .collect::<Vec<_>>()
                .join(" "),
            word,
        })
        .collect()
}

/// Whether the run pane's footer names `action` in its own words.
pub fn in_footer(action: Action) -> bool {
    FOOTER.iter().any(|(actions, _)| actions.contains(&action))
}

/// Moves within the run pane: rows of the selected run up and down, to the
/// next or previous that did not load, to its first or last; runs left and
/// right; the selected partition's log back and forth a page (`log`: the
/// text area its box has, none when there is no room for it), to its first
/// line and to its newest. What the move found, when it is news (none did
/// not load, or it went round the end).
pub fn direction(
    runs: &mut [RunView],
    selected: &mut usize,
    action: Action,
    log: Option<Rect>,
) -> Option<String> {
    let count = runs.len();
    let run = runs.get_mut(*selected)?;
    let row = run.selected;
    let last = run.partitions.len().saturating_sub(1);
    let page = log.map_or(1, |log| log_view::page_rows(log.height));
    let mut note = None;
    match action {
        Action::Down => run.selected = (run.selected + 1).min(last),
        Action::Up => run.selected = run.selected.saturating_sub(1),
        Action::FirstRow => run.selected = 0,
        Action::LastRow => run.selected = last,
        Action::NextFailed | Action::PrevFailed => {
            let forward = action == Action::NextFailed;
            match not_loaded_from(&run.partitions, row, forward) {
                Some((i, round)) => {
                    run.selected = i;
                    note = round.then(|| went_round(&run.partitions, i, forward));
                }
                None => note = Some("every partition of this run loaded or has yet to end".into()),
            }
        }
        Action::Left => *selected = selected.saturating_sub(1),
        Action::Right => *selected = (*selected + 1).min(count - 1),
        Action::PrevMonth => run.scroll_log(log, Scroll::Older(page)),
        Action::NextMonth => run.scroll_log(log, Scroll::Newer(page)),
        Action::First => run.scroll_log(log, Scroll::Oldest),
        Action::Last => run.scroll_log(log, Scroll::Newest),
        _ => {}
    }
    if run.selected != row {
        run.log_back = LogBack::default();
    }
    let moved = run.selected != row || note.is_some();
    let error = run.partitions.get(run.selected).filter(|_| moved);
    match (error.and_then(error_note), note) {
        (Some(error), Some(note)) => Some(format!("{note} · {error}")),
        (error, note) => error.or(note),
    }
}

/// What a row that did not load met, for the status line when the cursor
/// moves onto it: its row cuts the error short where the pane is narrow,
/// and a small terminal has no room for the log that says it whole.
fn error_note(p: &RunPartition) -> Option<String> {
    let error = p.error.as_deref().filter(|_| p.state.not_loaded())?;
    let (word, _) = p.state.label();
    Some(format!("{} {word}: {}", p.name, first_line(error)))
}

/// The row of the next partition after `from` (`forward`; else before it)
/// that did not load, going round past the end; and whether it went round.
/// None when no partition of them did not load.
fn not_loaded_from(
    partitions: &[RunPartition],
    from: usize,
    forward: bool,
) -> Option<(usize, bool)> {
    let n = partitions.len();
    (1..=n)
        .map(|k| {
            if forward {
                ((from + k) % n, from + k >= n)
            } else {
                ((from + n - k) % n, k > from)
            }
        })
        .find(|(i, _)| partitions[*i].state.not_loaded())
}

/// The note of a move to the row `to` that went round the run's end: it
/// found no other (named, unless its error note follows and names it),
/// or it went on from the other end.
fn went_round(partitions: &[RunPartition], to: usize, forward: bool) -> String {
    let n = partitions.iter().filter(|p| p.state.not_loaded()).count();
    if n == 1 {
        let only = "the only partition of this run that did not load";
        match error_note(&partitions[to]) {
            Some(_) => only.to_string(),
            None => format!("{} is {only}", partitions[to].name),
        }
    } else if forward {
        format!("none below: back to the first of the {n} that did not load")
    } else {
        format!("none above: on to the last of the {n} that did not load")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Event;
    use crate::engine::{Backfill, Selection};
    use crate::state::LoadState;
    use crate::tui::fixture::{draw, job_view, now};
    use crate::tui::runs::{RunPartState, hit, log_text_area, render};
    use crate::tui::theme::Theme;

    /// A run of 338 missing days, as a backfill of most of a year has.
    fn long_run() -> RunView {
        let job = job_view("fct_orders", false, &"·".repeat(338));
        let selection = Selection {
            only: vec![LoadState::Missing],
            ..Selection::default()
        };
        let backfill =
            Backfill::plan_from(&job.job, &selection, &job.statuses, now(), 4, 2).unwrap();
        RunView::new(1, &backfill, now())
    }

    /// The run pane `w`×`h` of `runs`, drawn.
    fn screen(runs: &[RunView], area: Rect) -> String {
        draw(area.width, area.height, |f| {
            render(f, area, &Theme::default_theme(), runs, 0, true, now())
        })
    }

    /// QA: a run of 338 partitions was gone through one row at a time, j
    /// and k being all there was. `}` and `{` go to the next and previous
    /// that did not load, round the ends; `<` and `>` to the first and last;
    /// the row they go to is drawn, the cursor on it.
    #[test]
    fn braces_step_through_what_did_not_load_and_angles_go_to_the_ends() {
        let mut runs = vec![long_run()];
        let mut selected = 0;
        assert_eq!(runs[0].partitions.len(), 338);
        let name = |runs: &[RunView], i: usize| runs[0].partitions[i].name.clone();
        let area = Rect::new(0, 0, 99, 14);
        let log = log_text_area(area);
        let mut press = |runs: &mut Vec<RunView>, action| {
            let note = direction(runs, &mut selected, action, log);
            let at = runs[0].selected;
            let row = format!(
                "›{} {}",
                runs[0].partitions[at].state.label().1,
                name(runs, at)
            );
            let shown = screen(runs, area);
            assert!(
                shown.contains(&row),
                "{action:?}: {row} not drawn in\n{shown}"
            );
            (at, note)
        };
        // Queued and running partitions have yet to end.
        runs[0].partitions[7].state = RunPartState::Running;
        assert_eq!(
            press(&mut runs, Action::NextFailed),
            (
                0,
                Some("every partition of this run loaded or has yet to end".into())
            )
        );
        runs[0].partitions[40].state = RunPartState::Failed;
        assert_eq!(press(&mut runs, Action::NextFailed), (40, None));
        let only = format!(
            "{} is the only partition of this run that did not load",
            name(&runs, 40)
        );
        assert_eq!(press(&mut runs, Action::NextFailed), (40, Some(only)));
        // QA: with its error, the note named it twice ("X is the only … ·
        // X failed: …"): once.
        runs[0].partitions[40].error = Some("UNIQUE constraint failed\nDETAIL: x".into());
        let (_, note) = press(&mut runs, Action::NextFailed);
        let failed = format!("{} failed: UNIQUE constraint failed", name(&runs, 40));
        assert_eq!(
            note,
            Some(format!(
                "the only partition of this run that did not load · {failed}"
            ))
        );
        runs[0].partitions[40].error = None;
        runs[0].partitions[200].state = RunPartState::Refused;
        runs[0].partitions[301].state = RunPartState::Cancelled;
        runs[0].partitions[250].state = RunPartState::Succeeded;
        assert_eq!(press(&mut runs, Action::NextFailed), (200, None));
        assert_eq!(press(&mut runs, Action::NextFailed), (301, None));
        let round = "none below: back to the first of the 3 that did not load";
        assert_eq!(
            press(&mut runs, Action::NextFailed),
            (40, Some(round.into()))
        );
        let round = "none above: on to the last of the 3 that did not load";
        assert_eq!(
            press(&mut runs, Action::PrevFailed),
            (301, Some(round.into()))
        );
        assert_eq!(press(&mut runs, Action::PrevFailed), (200, None));
        assert_eq!(press(&mut runs, Action::LastRow), (337, None));
        assert_eq!(press(&mut runs, Action::PrevFailed), (301, None));
        assert_eq!(press(&mut runs, Action::FirstRow), (0, None));
        assert_eq!(press(&mut runs, Action::Down), (1, None));
    }

    /// The partition rows drawn in the run pane `area`, top down, and the
    /// screen line of the one under the cursor.
    fn rows_shown(runs: &[RunView], area: Rect) -> (Vec<usize>, Option<usize>) {
        let shown = screen(runs, area);
        let lines: Vec<&str> = shown.lines().collect();
        let mut rows = Vec::new();
        let mut cursor = None;
        for (y, line) in lines.iter().enumerate() {
            for (i, p) in runs[0].partitions.iter().enumerate() {
                let glyph = p.state.label().1;
                if line.contains(&format!("{glyph} {} ", p.name)) {
                    rows.push(i);
                    if line.contains(&format!("›{glyph} {} ", p.name)) {
                        cursor = Some(y);
                    }
                }
            }
        }
        (rows, cursor)
    }

    /// QA: once a long run's table had scrolled, the cursor stayed on its
    /// bottom row: each k from row 200 of 338 scrolled the whole table, the
    /// rows below the selection going out of view. The table keeps where it
    /// is scrolled to, and moves only when the selection would leave it:
    /// k and j move the cursor within the rows shown, and the table scrolls
    /// a row at a time past its top and bottom.
    #[test]
    fn the_table_scrolls_only_when_the_selection_would_leave_it() {
        let mut runs = vec![long_run()];
        let mut selected = 0;
        let area = Rect::new(0, 0, 120, 20);
        let log = log_text_area(area);
        let mut press = |runs: &mut Vec<RunView>, action, times| {
            for _ in 0..times {
                direction(runs, &mut selected, action, log);
                rows_shown(runs, area);
            }
        };
        press(&mut runs, Action::Down, 200);
        assert_eq!(runs[0].selected, 200);
        let (at_200, cursor) = rows_shown(&runs, area);
        let height = at_200.len();
        assert!(height > 5, "{at_200:?}");
        assert_eq!(at_200.last(), Some(&200), "j scrolled to show row 200");
        let bottom = cursor.unwrap();
        // k goes up the rows shown, the rows below it staying in view.
        for k in 1..height {
            press(&mut runs, Action::Up, 1);
            let (rows, cursor) = rows_shown(&runs, area);
            assert_eq!(rows, at_200, "k {k} times from row 200 scrolled");
            assert_eq!(cursor, Some(bottom - k));
        }
        // Past the top row, the table scrolls by one, the cursor on top.
        let top = bottom + 1 - height;
        press(&mut runs, Action::Up, 1);
        let (rows, cursor) = rows_shown(&runs, area);
        assert_eq!(rows[0], 200 - height);
        assert_eq!(rows.len(), height);
        assert_eq!(cursor, Some(top));
        // j goes back down the rows shown without scrolling them.
        let at_top = rows;
        for k in 1..height {
            press(&mut runs, Action::Down, 1);
            let (rows, cursor) = rows_shown(&runs, area);
            assert_eq!(rows, at_top, "j {k} times from the top scrolled");
            assert_eq!(cursor, Some(top + k));
        }
        press(&mut runs, Action::Down, 1);
        let (rows, cursor) = rows_shown(&runs, area);
        assert_eq!(rows[0], at_top[0] + 1);
        assert_eq!(cursor, Some(bottom));
    }

    /// The jumps show the row they go to, and the table stays put when that
    /// row is already in view; a terminal made smaller keeps the selection
    /// in view, and made larger again it fills the table.
    #[test]
    fn jumps_and_resizes_keep_the_selection_in_view() {
        let mut runs = vec![long_run()];
        let mut selected = 0;
        let area = Rect::new(0, 0, 120, 20);
        let log = log_text_area(area);
        runs[0].partitions[30].state = RunPartState::Failed;
        runs[0].partitions[40].state = RunPartState::Failed;
        runs[0].partitions[300].state = RunPartState::Refused;
        let mut press = |runs: &mut Vec<RunView>, action| {
            direction(runs, &mut selected, action, log);
            let (rows, cursor) = rows_shown(runs, area);
            assert!(
                rows.contains(&runs[0].selected) && cursor.is_some(),
                "{action:?}: row {} not drawn in {rows:?}",
                runs[0].selected
            );
            rows
        };
        assert_eq!(press(&mut runs, Action::LastRow).last(), Some(&337));
        assert_eq!(press(&mut runs, Action::FirstRow).first(), Some(&0));
        assert_eq!(press(&mut runs, Action::NextFailed).last(), Some(&30));
        assert_eq!(press(&mut runs, Action::NextFailed).last(), Some(&40));
        assert_eq!(press(&mut runs, Action::NextFailed).last(), Some(&300));
        assert_eq!(press(&mut runs, Action::PrevFailed).first(), Some(&40));
        let at_30 = press(&mut runs, Action::PrevFailed);
        assert_eq!(at_30.first(), Some(&30));
        assert_eq!(press(&mut runs, Action::NextFailed), at_30, "40 was shown");
        assert_eq!(runs[0].selected, 40);
        // Row 40 in the middle of the table; the terminal made smaller,
        // then larger again.
        let (rows, _) = rows_shown(&runs, area);
        let small = Rect::new(0, 0, 120, 10);
        let (shown, cursor) = rows_shown(&runs, small);
        assert!(shown.len() < rows.len());
        assert_eq!(shown.last(), Some(&40), "{shown:?}");
        assert!(cursor.is_some());
        let (shown, cursor) = rows_shown(&runs, area);
        assert_eq!(shown.len(), rows.len());
        assert!(shown.contains(&40) && cursor.is_some(), "{shown:?}");
        // At the end of the run, a larger table shows more rows above.
        press(&mut runs, Action::LastRow);
        rows_shown(&runs, small);
        let (shown, _) = rows_shown(&runs, area);
        assert_eq!(shown.len(), rows.len(), "no blank rows below the last");
        assert_eq!(shown.last(), Some(&337));
    }

    /// A run's events do not move the table: a partition a cascade adds
    /// above the rows shown, or one that starts, leaves the same rows in
    /// view with the cursor where it was; a click lands on the row drawn.
    #[test]
    fn events_keep_the_table_where_it_was_scrolled() {
        let mut runs = vec![long_run()];
        let mut selected = 0;
        let area = Rect::new(0, 0, 120, 20);
        for _ in 0..200 {
            direction(&mut runs, &mut selected, Action::Down, None);
            rows_shown(&runs, area);
        }
        for _ in 0..5 {
            direction(&mut runs, &mut selected, Action::Up, None);
        }
        let (rows, cursor) = rows_shown(&runs, area);
        assert_eq!(rows.last(), Some(&200));
        let name = |runs: &[RunView], i: usize| runs[0].partitions[i].name.clone();
        let shown_names = |runs: &[RunView]| -> Vec<String> {
            rows_shown(runs, area)
                .0
                .iter()
                .map(|i| name(runs, *i))
                .collect()
        };
        let names = shown_names(&runs);
        let at = name(&runs, runs[0].selected);
        let first = chrono::NaiveDate::parse_from_str(&name(&runs, 0), "%Y-%m-%d").unwrap();
        let added = |partition: String| Event::PartitionAdded {
            job: "fct_orders".into(),
            partition,
            because: "upstream changed".into(),
        };
        let before = (first - chrono::Duration::days(1)).to_string();
        runs[0].apply(&added(before), now());
        runs[0].apply(
            &Event::PartitionStarted {
                run_id: "r".into(),
                job: "fct_orders".into(),
                partition: at.clone(),
                attempt: 1,
            },
            now(),
        );
        assert_eq!(name(&runs, runs[0].selected), at);
        assert_eq!(shown_names(&runs), names, "the table moved");
        assert_eq!(rows_shown(&runs, area).1, cursor);
        // The table's first row is drawn at line 3 of the pane.
        let top = rows_shown(&runs, area).0[0];
        assert_eq!(
            hit(&runs, 0, area, 5, 3),
            Some(crate::tui::layout::Hit::RunRow(top))
        );
    }

    /// QA: a run's table scrolled with no sign of the rows above or below
    /// it. As the jobs pane does, the border above says how many rows are
    /// scrolled out up, the border under the table how many down, with how
    /// many of them did not load; wide, the notes stay over the table, off
    /// the log beside it; narrow, the note under it has a row of its own
    /// over the log (QA: on the log's top border, "↓3646 more" read as the
    /// log's lines).
    #[test]
    fn the_table_notes_the_rows_scrolled_out_of_it() {
        let mut runs = vec![long_run()];
        let mut selected = 0;
        runs[0].partitions[0].state = RunPartState::Failed;
        for i in [300, 310, 320] {
            runs[0].partitions[i].state = RunPartState::Refused;
        }
        for area in [Rect::new(0, 0, 120, 20), Rect::new(0, 0, 99, 14)] {
            let log = log_text_area(area);
            let shown = rows_shown(&runs, area).0;
            let lines = |runs: &[RunView]| -> Vec<String> {
                screen(runs, area).lines().map(str::to_string).collect()
            };
            let at_top = lines(&runs);
            let (top, under) = (&at_top[0], &at_top[3 + shown.len()]);
            assert!(!top.contains('↑'), "{top}");
            let below = format!(" ↓{} more · 3 unloaded ", 338 - shown.len());
            assert!(under.contains(&below), "{under}");
            if area.width >= 100 {
                // Wide, the table takes the left 55% of the pane's width.
                let end = under.find(&below).unwrap() + below.len();
                assert!(under[..end].chars().count() <= 1 + 118 * 11 / 20, "{under}");
            } else {
                assert!(!under.contains("log"), "{under}");
                assert!(!under.contains('─'), "{under}");
                let log_top = &at_top[4 + shown.len()];
                assert!(log_top.contains("┌ log "), "{log_top}");
                assert!(!log_top.contains("more"), "{log_top}");
            }
            direction(&mut runs, &mut selected, Action::LastRow, log);
            let at_end = lines(&runs);
            let under = &at_end[3 + shown.len()];
            assert!(!under.contains('↓'), "{under}");
            let above = format!(" ↑{} more · 4 unloaded ", 338 - shown.len());
            assert!(at_end[0].contains(&above), "{}", at_end[0]);
            assert!(at_end[0].contains(" Runs (1) "), "{}", at_end[0]);
            direction(&mut runs, &mut selected, Action::FirstRow, log);
        }
        // A short run, all in view, has no note; a narrow pane shortens it.
        let all = screen(&[super::super::tests::run()], Rect::new(0, 0, 99, 14));
        assert!(!all.contains('↑') && !all.contains('↓'), "{all}");
        let narrow = screen(&runs, Rect::new(0, 0, 30, 14));
        assert!(narrow.contains(" ↓334 "), "{narrow}");
    }

    /// The footer names the run pane's keys by what they do there, with the
    /// user's keys where they gave some.
    #[test]
    fn the_footer_says_what_the_keys_do_in_the_run_pane() {
        let hints = |keys: &Keymap| -> Vec<(String, &str)> {
            footer(keys).into_iter().map(|h| (h.keys, h.word)).collect()
        };
        let said = |pairs: &[(&str, &'static str)]| -> Vec<(String, &'static str)> {
            pairs.iter().map(|(k, w)| (k.to_string(), *w)).collect()
        };
        assert_eq!(
            hints(&Keymap::default()),
            said(&[
                ("j k", "partition"),
                ("{ }", "unloaded"),
                ("[ ]", "log"),
                ("G", "follow"),
                ("Enter", "calendar"),
                ("c", "cancel"),
                ("h l", "run"),
                ("< >", "first/last"),
            ])
        );
        let user: crate::user_config::UserConfig = toml::from_str(
            "[keys.main]\nnext_failed = \"F\"\nprev_failed = \"B\"\nlast_row = \"End\"\nlast = \"Ctrl-e\"\n",
        )
        .unwrap();
        let keys = Keymap::with_overrides(&user.keys).unwrap();
        let shown = hints(&keys);
        assert_eq!(shown[1], ("B F".to_string(), "unloaded"));
        assert_eq!(shown[3], ("Ctrl-E".to_string(), "follow"));
        assert_eq!(shown[7], ("< End".to_string(), "first/last"));
        assert!(
            FOOTER
                .iter()
                .all(|(actions, _)| actions.iter().all(|a| in_footer(*a)))
        );
        assert!(!in_footer(Action::Run));
    }
}
