//! A job's health in a word or a few counts, for its row in the jobs pane.

use ratatui::style::Style;

use super::glyphs::{NULL_PARTITION_FLAG, REFUSED_FLAG};
use super::job::JobView;
use super::theme::Theme;
use crate::state::LoadState;

/// A job's health for its row in the list: each count of a state that
/// needs a look, with its glyph, else "ok" (or why there is none yet).
pub(super) fn health(j: &JobView, t: &Theme) -> Vec<(String, Style)> {
    if j.error.is_some() && !j.loaded {
        return vec![("unreadable".into(), t.style("error"))];
    }
    if !j.loaded {
        return vec![("loading…".into(), t.style("muted"))];
    }
    let counts = j.state_counts();
    let mut items = Vec::new();
    for st in [
        LoadState::Running,
        LoadState::Failed,
        LoadState::Vanished,
        LoadState::Missing,
        LoadState::Stale,
    ] {
        let n = counts.get(&st).copied().unwrap_or(0);
        if n > 0 {
            items.push((format!("{}{n}", st.glyph()), t.state(st)));
        }
    }
    // Loaded, but waiting for a source the shrink guard found short.
    let refused = j.statuses.iter().filter(|s| s.refused.is_some()).count();
    if refused > 0 {
        items.push((format!("{REFUSED_FLAG}{refused}"), t.style("warning")));
    }
    // Rows of the target no partition holds, as the state read counted
    // them (the detail says what they mean).
    if let Some(n @ 1..) = j.null_partition {
        items.push((format!("{NULL_PARTITION_FLAG}{n}"), t.style("warning")));
    }
    if items.is_empty() {
        items.push(("■ ok".into(), t.state(LoadState::Loaded)));
    }
    items
}
