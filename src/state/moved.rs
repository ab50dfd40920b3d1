//! Merge windows whose rows later loads moved out. A `merge_key` job counted
//! by its `partition_column` writes a key's newest row where that column
//! puts it: when a later window's source holds a key again, its merge
//! updates the row and the row leaves the older window. The older window
//! was loaded and then superseded; re-merging it would roll the key back.

use super::PartitionStatus;
use crate::warehouse::ledger::LedgerSummary;

/// When the job's windows were last loaded, in window order: what tells a
/// window whose rows later loads moved out from one whose rows were deleted
/// behind idem's back.
pub(super) struct LaterLoads<'a> {
    /// Each loaded window's name and the finish of its latest success, in
    /// name order (within one grain, time order).
    loads: Vec<(&'a str, &'a str)>,
    /// The latest finish among `loads[..i]`, at `i`.
    before: Vec<&'a str>,
    /// The latest finish among `loads[i..]`, at `i`.
    from: Vec<&'a str>,
    /// The latest finish among the loads of `loads[i..]`'s windows that
    /// changed their content and may have updated keys (they updated some,
    /// or their count of updates is not kept: a later success that changed
    /// nothing stands in front of them), at `i`.
    moving_from: Vec<&'a str>,
}

impl<'a> LaterLoads<'a> {
    /// The successes of `ledger`'s windows named as the job's windows are
    /// (`width` characters: a row of another grain, from before the job's
    /// grain was changed, names no window of it).
    pub fn of(ledger: &'a LedgerSummary, width: usize) -> LaterLoads<'a> {
        let mut loads: Vec<(&str, &str, &str)> = ledger
            .iter()
            .filter(|(name, _)| name.len() == width)
            .filter_map(|(name, p)| {
                let s = p.success.as_ref()?;
                // Only a merge that updated rows moves a key's row out of
                // an older window; one that inserted only moves none.
                let latest_changed =
                    |at: &str| at == s.finished_at && s.content_changed != Some(false);
                // Its latest load inserted only: it moved nothing, but a
                // load of it before (attempts show one) may have, and its
                // count of updates is not kept (QA: read as deleted, that
                // window's `--only vanished` rolled the key back).
                let moving = match p.changed_at.as_deref() {
                    Some(at) if latest_changed(at) && (s.rows_updated > 0 || p.attempts > 1) => at,
                    Some(at) if latest_changed(at) => "",
                    Some(at) => at,
                    None => "",
                };
                Some((name.as_str(), s.finished_at.as_str(), moving))
            })
            .collect();
        loads.sort_unstable();
        let mut before = Vec::with_capacity(loads.len() + 1);
        before.push("");
        for (_, at, _) in &loads {
            let latest = before.last().copied().unwrap_or("");
            before.push(latest.max(*at));
        }
        let mut from = vec![""; loads.len() + 1];
        let mut moving_from = vec![""; loads.len() + 1];
        for (i, (_, at, moving)) in loads.iter().enumerate().rev() {
            from[i] = from[i + 1].max(*at);
            moving_from[i] = moving_from[i + 1].max(*moving);
        }
        LaterLoads {
            loads: loads.iter().map(|(n, at, _)| (*n, *at)).collect(),
            before,
            from,
            moving_from,
        }
    }

    /// Whether a window after `window` was merged after `loaded_at` by a
    /// load that may have updated keys: one that could have moved its rows
    /// on.
    pub fn later_window_after(&self, window: &str, loaded_at: &str) -> bool {
        let i = self.loads.partition_point(|(name, _)| *name <= window);
        self.moving_from.get(i).is_some_and(|at| *at > loaded_at)
    }

    /// Whether any window but `window` was loaded after `loaded_at`.
    pub fn other_window_after(&self, window: &str, loaded_at: &str) -> bool {
        let i = self.loads.partition_point(|(name, _)| *name < window);
        let later = self.loads.partition_point(|(name, _)| *name <= window);
        self.before.get(i).is_some_and(|at| *at > loaded_at)
            || self.from.get(later).is_some_and(|at| *at > loaded_at)
    }
}

/// Why a merge window's count differs from its load's, as far as idem can
/// tell: (moved out, drift).
///
/// Fewer rows than at its load, once a later window was merged after it:
/// that merge moved its keys' rows on to their newer values (`moved out`,
/// not drift). Fewer rows otherwise are drift: they were deleted behind
/// idem's back, or rolled back into an older window by its re-run. More
/// rows are drift unless another window was loaded since, whose merge may
/// have moved its keys' rows in.
pub(super) fn merge_window_change(
    loads: &LaterLoads,
    window: &str,
    loaded_at: &str,
    rows_at_load: i64,
    rows_now: i64,
) -> (bool, bool) {
    if rows_now < rows_at_load {
        let moved = loads.later_window_after(window, loaded_at);
        (moved, !moved)
    } else if rows_now > rows_at_load {
        (false, !loads.other_window_after(window, loaded_at))
    } else {
        (false, false)
    }
}

impl PartitionStatus {
    /// What the status table and the console say of a window whose rows
    /// later loads moved out: `2 rows moved out by later windows' loads
    /// (newer values of its keys, not a deletion)`. None for any other.
    pub fn moved_out_note(&self) -> Option<String> {
        if !self.moved_out {
            return None;
        }
        let fewer = self.rows_at_load.unwrap_or(0) - self.rows_now.unwrap_or(0);
        Some(format!(
            "{} moved out by later windows' loads (newer values of its keys, not a deletion)",
            crate::numbers::n_rows(fewer.max(0))
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::state::tests::{attempt, job_and_statuses, june_10};
    use crate::state::{LoadState, derive};
    use crate::warehouse::Counts;
    use crate::warehouse::ledger::{AttemptStatus, PartitionLedger};

    /// A ledger of windows each loaded once, finishing at the given hour
    /// of 2026-06-09, each updating a row (a merge that may move keys).
    fn ledger(loads: &[(&str, u32)]) -> LedgerSummary {
        let (job, _) = job_and_statuses("strategy = \"merge_key\"\nunique_key = [\"x\"]");
        PartitionLedger::summarize(loads.iter().map(|(window, hour)| {
            let mut a = attempt(&job, window, 1, AttemptStatus::Succeeded);
            a.finished_at = format!("2026-06-09T{hour:02}:00:00.000Z");
            a.rows_updated = 1;
            a
        }))
    }

    #[test]
    fn later_loads_are_of_later_windows_finished_after() {
        let mut summary = ledger(&[("2026-06-01", 1), ("2026-06-02", 5), ("2026-06-03", 3)]);
        // A window of another grain is none of the job's windows.
        summary.extend(ledger(&[("2026-06-02T05", 9)]));
        let loads = LaterLoads::of(&summary, 10);
        let at = |hour: u32| format!("2026-06-09T{hour:02}:00:00.000Z");
        assert!(loads.later_window_after("2026-06-01", &at(1)));
        // 06-03 finished before 06-02 did: it moved nothing out of 06-02.
        assert!(!loads.later_window_after("2026-06-02", &at(5)));
        assert!(loads.other_window_after("2026-06-03", &at(3)));
        assert!(!loads.other_window_after("2026-06-02", &at(5)));
        assert!(!loads.later_window_after("2026-06-03", &at(3)));
        // A window never loaded, before all of them.
        assert!(loads.later_window_after("2026-05-31", &at(4)));
        assert!(!loads.later_window_after("2026-05-31", &at(6)));
        let none = LedgerSummary::new();
        assert!(!LaterLoads::of(&none, 10).other_window_after("2026-06-01", ""));
    }

    #[test]
    fn fewer_rows_are_moved_out_only_after_a_later_windows_load() {
        let summary = ledger(&[("2026-06-01", 2), ("2026-06-02", 1), ("2026-06-03", 4)]);
        let loads = LaterLoads::of(&summary, 10);
        let change = |window: &str, hour: u32, at_load: i64, now: i64| {
            let at = format!("2026-06-09T{hour:02}:00:00.000Z");
            merge_window_change(&loads, window, &at, at_load, now)
        };
        // 06-03 merged after 06-01: its rows moved on.
        assert_eq!(change("2026-06-01", 2, 2, 0), (true, false));
        assert_eq!(change("2026-06-01", 2, 2, 1), (true, false));
        // Nothing later loaded after 06-03: its rows were deleted.
        assert_eq!(change("2026-06-03", 4, 2, 1), (false, true));
        // The count it loaded: nothing to tell.
        assert_eq!(change("2026-06-02", 1, 3, 3), (false, false));
        // More rows: drift unless another window was loaded since.
        assert_eq!(change("2026-06-03", 4, 2, 3), (false, true));
        assert_eq!(change("2026-06-02", 1, 2, 3), (false, false));
    }

    /// A merge job counted by `dt` whose windows 06-01, 06-02 and 06-03
    /// were loaded in order with 2, 1 and 3 rows (06-03's merge updating
    /// `updated_by_0603` rows): the states read from counts now, after
    /// `more` loads (window, hour, rows after, rows updated, content
    /// changed).
    fn merge_states_after(
        now: [i64; 3],
        updated_by_0603: i64,
        more: &[(&str, u32, i64, i64, bool)],
    ) -> Vec<(LoadState, bool, bool)> {
        let (job, _) = job_and_statuses(
            "strategy = \"merge_key\"\nunique_key = [\"x\"]\npartition_column = \"dt\"",
        );
        let loads = [
            ("2026-06-01", 1, 2, 0, true),
            ("2026-06-02", 2, 1, 0, true),
            ("2026-06-03", 3, 3, updated_by_0603, true),
        ];
        let history = loads.iter().chain(more).enumerate().map(
            |(n, (window, hour, rows, updated, changed))| {
                let mut a = attempt(&job, window, n as i64 + 1, AttemptStatus::Succeeded);
                a.finished_at = format!("2026-06-09T{hour:02}:00:00.000Z");
                a.rows_after = *rows;
                a.rows_updated = *updated;
                a.content_changed = Some(*changed);
                a
            },
        );
        let mut counts = Counts::new();
        for ((window, ..), n) in loads.iter().zip(now) {
            counts.insert(window.to_string(), n);
        }
        let at = june_10();
        derive(
            &job,
            &job.partitions(at),
            Some(&counts),
            &PartitionLedger::summarize(history),
            at,
            &HashSet::new(),
        )
        .iter()
        .map(|s| (s.state, s.moved_out, s.drift))
        .collect()
    }

    /// [`merge_states_after`] where 06-03's merge updated 2 rows, and a
    /// later load of a window updated 1 row and changed its content.
    fn merge_states(now: [i64; 3], more: &[(&str, u32, i64)]) -> Vec<(LoadState, bool, bool)> {
        let more: Vec<_> = more
            .iter()
            .map(|(w, hour, rows)| (*w, *hour, *rows, 1, true))
            .collect();
        merge_states_after(now, 2, &more)
    }

    /// QA: only a later merge that updated rows moves keys out. Rows gone
    /// after later loads that only inserted were deleted (or pulled back
    /// into an older window): vanished, as a re-run restores them. A later
    /// re-run that changed nothing hides how many rows the load before it
    /// updated: that load may have moved them.
    #[test]
    fn only_a_later_merge_that_updated_rows_moved_them_out() {
        let loaded = LoadState::Loaded;
        assert_eq!(
            merge_states_after([2, 0, 3], 0, &[])[1],
            (LoadState::Vanished, false, true)
        );
        assert_eq!(
            merge_states_after([2, 0, 3], 2, &[])[1],
            (loaded, true, false)
        );
        // 06-03 loaded again, changing nothing: the load that changed it
        // (and may have updated keys) is still after 06-02's.
        assert_eq!(
            merge_states_after([2, 0, 3], 0, &[("2026-06-03", 5, 3, 0, false)])[1],
            (loaded, true, false)
        );
        // Loaded again, inserting only and changing content: it updated
        // nothing, but the load before it may have (QA): moved, so that
        // `--only vanished` never rolls a key back.
        assert_eq!(
            merge_states_after([2, 0, 4], 0, &[("2026-06-03", 5, 4, 0, true)])[1],
            (loaded, true, false)
        );
    }

    #[test]
    fn a_window_whose_keys_later_windows_merged_again_is_loaded_not_vanished() {
        let loaded = LoadState::Loaded;
        // 06-02's one key and one of 06-01's moved on to 06-03 at its load.
        assert_eq!(
            merge_states([1, 0, 3], &[]),
            [
                (loaded, true, false),
                (loaded, true, false),
                (loaded, false, false)
            ]
        );
        // 06-03's rows deleted behind idem's back, nothing loaded since.
        assert_eq!(
            merge_states([2, 1, 0], &[])[2],
            (LoadState::Vanished, false, true)
        );
        assert_eq!(merge_states([2, 1, 1], &[])[2], (loaded, false, true));
        // A re-run of 06-01 took a key back from 06-03: no window after
        // 06-03 was loaded since, so its loss is drift (and its re-run
        // restores it); 06-02 keeps the later load that superseded it.
        assert_eq!(
            merge_states([2, 0, 2], &[("2026-06-01", 4, 2)]),
            [
                (loaded, false, false),
                (loaded, true, false),
                (loaded, false, true)
            ]
        );
        // Rows gained with no other load since: drift.
        assert_eq!(merge_states([2, 1, 4], &[])[2], (loaded, false, true));
        assert_eq!(
            merge_states([3, 1, 3], &[])[0],
            (loaded, false, false),
            "06-02 and 06-03 loaded since may have moved a key in"
        );
    }

    #[test]
    fn the_note_counts_the_rows_gone() {
        let (_, mut statuses) = job_and_statuses("strategy = \"merge_key\"\nunique_key = [\"x\"]");
        let s = &mut statuses[0];
        (s.rows_at_load, s.rows_now) = (Some(2), Some(0));
        assert_eq!(s.moved_out_note(), None, "not moved out");
        s.moved_out = true;
        assert_eq!(
            s.moved_out_note().as_deref(),
            Some(
                "2 rows moved out by later windows' loads (newer values of its keys, not a deletion)"
            )
        );
        s.rows_now = Some(1);
        assert!(
            s.moved_out_note()
                .is_some_and(|n| n.starts_with("1 row moved out"))
        );
    }
}
