//! ASCII in place of the console's glyphs, for terminals that cannot show
//! UTF-8: a session under `LC_ALL=C` (tmux started so draws every such
//! glyph as `_`, and the states would differ by colour alone). The drawn
//! frame is mapped cell by cell, so every pane keeps its own glyphs, each
//! drawn as [`glyph_in_ascii`] writes it, as the headless output writes
//! it. Each state keeps a glyph of its own.

use ratatui::buffer::Buffer;
use unicode_width::UnicodeWidthStr;

use crate::terminal_text::glyph_in_ascii;

/// The mark of a partition whose latest load the shrink guard refused (its
/// source looked incomplete), with no success since: beside its state's
/// glyph in the calendar, and counted in the jobs pane.
pub const REFUSED_FLAG: char = '⊖';

/// The mark of a job whose target holds rows with a NULL partition column,
/// which no partition holds: with their number, in the jobs pane.
pub const NULL_PARTITION_FLAG: char = '∅';

/// Rewrites every cell of `buf` that is not ASCII.
pub fn to_ascii(buf: &mut Buffer) {
    let mut covered = 0;
    for cell in &mut buf.content {
        if covered > 0 {
            // The columns a wide glyph covered, now one column wide.
            covered -= 1;
            cell.set_symbol(" ");
            continue;
        }
        let symbol = cell.symbol();
        if symbol.is_ascii() {
            continue;
        }
        covered = symbol.width().saturating_sub(1);
        cell.set_symbol(glyph_in_ascii(symbol).unwrap_or("?"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::LoadState;
    use ratatui::layout::Rect;

    /// Every state keeps a glyph of its own in ASCII, as it has in UTF-8.
    #[test]
    fn each_state_stays_distinct() {
        let mut seen = std::collections::HashSet::new();
        for st in LoadState::ALL {
            let g = st.glyph().to_string();
            let a = if g.is_ascii() {
                g.as_str()
            } else {
                glyph_in_ascii(&g).unwrap_or_else(|| panic!("{st:?} has no ASCII of its own"))
            };
            assert!(seen.insert(a.to_string()), "{st:?} shares {a}");
        }
        let upstream = glyph_in_ascii(&LoadState::UPSTREAM_GLYPH.to_string()).unwrap_or("?");
        assert!(
            seen.insert(upstream.to_string()),
            "upstream shares {upstream}"
        );
    }

    #[test]
    fn a_frame_becomes_ascii_column_for_column() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 8, 1));
        buf.set_string(0, 0, "■✗界·ab", ratatui::style::Style::default());
        to_ascii(&mut buf);
        let line: String = buf.content.iter().map(|c| c.symbol()).collect();
        assert_eq!(line, "#x? .ab ");
    }
}
