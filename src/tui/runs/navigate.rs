//! What the run pane's keys do: move among the runs, the selected run's
//! partitions (one at a time, to those that did not load, to either end)
//! and its log; and how the footer names them while the pane has focus.

use ratatui::layout::Rect;

use super::{LogBack, RunPartition, RunView, Scroll, log_view};
use crate::tui::bars::Hint;
use crate::tui::keymap::Keymap;
use crate::tui::keys::{Action, Scope};

/// The run pane's keys the footer names while it has focus, with what they
/// do there, the most used first: a narrow terminal drops hints from the
/// end (j k step partitions here, jobs in the jobs pane).
const FOOTER: &[(&[Action], &str)] = &[
    (&[Action::Down, Action::Up], "partition"),
    (&[Action::PrevFailed, Action::NextFailed], "failed"),
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
    note
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
/// found no other, or it went on from the other end.
fn went_round(partitions: &[RunPartition], to: usize, forward: bool) -> String {
    let n = partitions.iter().filter(|p| p.state.not_loaded()).count();
    if n == 1 {
        format!(
            "{} is the only partition of this run that did not load",
            partitions[to].name
        )
    } else if forward {
        format!("none below: back to the first of the {n} that did not load")
    } else {
        format!("none above: on to the last of the {n} that did not load")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Backfill, Selection};
    use crate::state::LoadState;
    use crate::tui::fixture::{draw, job_view, now};
    use crate::tui::runs::{RunPartState, log_text_area, render};
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
                ("{ }", "failed"),
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
        assert_eq!(shown[1], ("B F".to_string(), "failed"));
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
