//! The run dialog fitted to the height it is given: the lines a small
//! terminal can go without give way, least needed first, and what still
//! does not fit is said, never cut off silently.

use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::words::{LABEL_WIDTH, more_line};
use crate::tui::keymap;
use crate::tui::keys::{Action, Scope};
use crate::tui::theme::Theme;
use crate::tui::widgets::{controls_shown, hanging};

// Ranks of the lines a small terminal goes without, the highest dropped
// first: what decides the run (range, states, what it replaces, the source
// and the shrink guard, lint, the reason, the keys) has none and always
// shows.
pub const SPACING: u8 = 4;
pub const SAME_AS: u8 = 3;
pub const STRATEGY: u8 = 2;
pub const ONLY: u8 = 1;

/// `lines` (the keys last) fitted to `fits` rows `inner_w` wide, laid
/// out as the dialog shows them (see [`laid_out`]), borders included: `optional` lines (index, rank) give
/// way rank by rank; a command that gave way says so where a line is left
/// (`has_command`); then the last lines above the keys give way to a line
/// that counts them. Returns the lines laid out and their height.
pub fn to_height(
    mut lines: Vec<Line<'static>>,
    mut optional: Vec<(usize, u8)>,
    inner_w: u16,
    fits: usize,
    has_command: bool,
    t: &Theme,
) -> (Vec<Line<'static>>, usize) {
    let height_of = |lines: &[Line<'static>]| -> usize {
        Paragraph::new(laid_out(lines, inner_w))
            .wrap(Wrap { trim: false })
            .line_count(inner_w)
            + 2
    };
    let mut rank = SPACING;
    while height_of(&lines) > fits && rank > 0 {
        let mut gone: Vec<usize> = optional
            .iter()
            .filter(|(_, r)| *r == rank)
            .map(|(i, _)| *i)
            .collect();
        gone.sort_unstable_by(|a, b| b.cmp(a));
        for i in gone {
            lines.remove(i);
            for (j, _) in optional.iter_mut().filter(|(j, _)| *j > i) {
                *j -= 1;
            }
        }
        optional.retain(|(_, r)| *r != rank);
        rank -= 1;
    }
    // The command gave way: said, where a line is left for it.
    if has_command && rank < SAME_AS {
        let at = lines.len().saturating_sub(1);
        lines.insert(
            at,
            Line::from(Span::styled(
                format!(
                    "same as: hidden at this size ({} copies it)",
                    keymap::key(Scope::Confirm, Action::CopyCommand)
                ),
                t.style("muted"),
            )),
        );
        if height_of(&lines) > fits {
            lines.remove(at);
        }
    }
    // Still too tall: the last lines above the keys give way to a line
    // that says so, never silently (lint or the reason could hide).
    if height_of(&lines) > fits && lines.len() > 2 {
        let hints = lines.pop().unwrap_or_default();
        let mut hidden = 0;
        while lines.len() > 1 {
            let mut probe = lines.clone();
            probe.push(more_line(hidden, t));
            probe.push(hints.clone());
            if height_of(&probe) <= fits {
                break;
            }
            lines.pop();
            hidden += 1;
        }
        lines.push(more_line(hidden, t));
        lines.push(hints);
    }
    let height = height_of(&lines);
    (laid_out(&lines, inner_w), height)
}

/// `lines` as the dialog shows them `inner_w` wide: a labelled line
/// wraps under its value, where the eye looks for the rest of it, not
/// back under its label.
fn laid_out(lines: &[Line<'static>], inner_w: u16) -> Vec<Line<'static>> {
    let labelled = |l: &Line| {
        l.spans.len() > 1 && l.spans[0].width() == LABEL_WIDTH && l.spans[0].content.ends_with(' ')
    };
    controls_shown(lines.to_vec())
        .lines
        .into_iter()
        .flat_map(|l| match labelled(&l) {
            true => hanging(l, LABEL_WIDTH, inner_w as usize),
            false => vec![l],
        })
        .collect()
}
