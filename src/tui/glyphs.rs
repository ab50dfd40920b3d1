//! ASCII in place of the console's glyphs, for terminals that cannot show
//! UTF-8: a session under `LC_ALL=C` (tmux started so draws every such
//! glyph as `_`, and the states would differ by colour alone). The drawn
//! frame is mapped cell by cell, so every pane keeps its own glyphs and no
//! second set of them lives anywhere else. Each state keeps a glyph of its
//! own.

use ratatui::buffer::Buffer;
use unicode_width::UnicodeWidthStr;

/// The mark of a partition whose latest load the shrink guard refused (its
/// source looked incomplete), with no success since: beside its state's
/// glyph in the calendar, and counted in the jobs pane.
pub const REFUSED_FLAG: char = '⊖';

/// The mark of a job whose target holds rows with a NULL partition column,
/// which no partition holds: with their number, in the jobs pane.
pub const NULL_PARTITION_FLAG: char = '∅';

/// Whether to draw ASCII: `IDEM_GLYPHS=ascii|unicode` says so; else the
/// locale does (the first of `LC_ALL`, `LC_CTYPE`, `LANG` that is set, as
/// C's `setlocale` reads them), UTF-8 unless it names another charset or
/// is `C`/`POSIX`. Nothing set at all reads as UTF-8: such an environment
/// is a bare `ssh` or container whose terminal shows UTF-8 nearly always.
pub fn ascii_wanted(var: impl Fn(&str) -> Option<String>) -> bool {
    match var("IDEM_GLYPHS").as_deref().map(str::trim) {
        Some(v) if v.eq_ignore_ascii_case("ascii") => return true,
        Some(v) if v.eq_ignore_ascii_case("unicode") => return false,
        _ => {}
    }
    let Some(locale) = ["LC_ALL", "LC_CTYPE", "LANG"]
        .into_iter()
        .filter_map(&var)
        .find(|v| !v.is_empty())
    else {
        return false;
    };
    let l = locale.to_ascii_lowercase();
    if l.contains("utf-8") || l.contains("utf8") {
        return false;
    }
    matches!(l.as_str(), "c" | "posix") || l.contains('.')
}

/// The ASCII a glyph is drawn as: one column, as the glyph is.
fn ascii_of(symbol: &str) -> &'static str {
    match symbol {
        // The states (`LoadState::glyph`), each still its own.
        "■" => "#",
        "✗" => "x",
        "▶" => ">",
        "○" => "o",
        "·" => ".",
        "≈" => "=",
        // Bars, charts and the cursor.
        "█" | "▇" | "▆" | "▓" => "#",
        "▅" | "▄" | "▒" => "=",
        "▃" | "▂" | "░" => "-",
        "▁" => "_",
        "▏" | "│" | "┃" | "║" => "|",
        "─" | "━" | "═" | "–" | "—" | "−" | "⊖" => "-",
        "┌" | "┐" | "└" | "┘" | "┏" | "┓" | "┗" | "┛" | "╭" | "╮" | "╰" | "╯" | "├" | "┤" | "┬"
        | "┴" | "┼" | "┣" | "┫" => "+",
        // Words' marks.
        "…" => ".",
        "↑" | "▲" => "^",
        "↓" => "v",
        "→" | "›" => ">",
        "←" => "<",
        "×" => "x",
        "✓" => "v",
        "⚠" => "!",
        "⟳" | "↻" | "↺" => "@",
        "⊘" => "/",
        "∅" => "N",
        "±" => "+",
        "“" | "”" => "\"",
        "é" => "e",
        _ => "?",
    }
}

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
        let ascii = ascii_of(symbol);
        cell.set_symbol(ascii);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::LoadState;
    use ratatui::layout::Rect;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_locale_decides_unless_told() {
        assert!(ascii_wanted(env(&[("LC_ALL", "C")])));
        assert!(ascii_wanted(env(&[("LANG", "POSIX")])));
        assert!(ascii_wanted(env(&[("LANG", "en_US.ISO-8859-1")])));
        assert!(!ascii_wanted(env(&[("LANG", "en_US.UTF-8")])));
        assert!(!ascii_wanted(env(&[("LC_ALL", "C.utf8"), ("LANG", "C")])));
        // LC_ALL wins over LANG, an empty one does not count.
        assert!(ascii_wanted(env(&[
            ("LC_ALL", "C"),
            ("LANG", "en_US.UTF-8")
        ])));
        assert!(!ascii_wanted(env(&[
            ("LC_ALL", ""),
            ("LANG", "de_DE.UTF-8")
        ])));
        assert!(!ascii_wanted(env(&[])));
        assert!(!ascii_wanted(env(&[
            ("LC_ALL", "C"),
            ("IDEM_GLYPHS", "unicode")
        ])));
        assert!(ascii_wanted(env(&[
            ("LANG", "en_US.UTF-8"),
            ("IDEM_GLYPHS", "ASCII")
        ])));
    }

    /// Every state keeps a glyph of its own in ASCII, as it has in UTF-8.
    #[test]
    fn each_state_stays_distinct() {
        let mut seen = std::collections::HashSet::new();
        for st in LoadState::ALL {
            let g = st.glyph().to_string();
            let a = if g.is_ascii() {
                g.as_str()
            } else {
                let a = ascii_of(&g);
                assert_ne!(a, "?", "{st:?} has no ASCII of its own");
                a
            };
            assert!(seen.insert(a.to_string()), "{st:?} shares {a}");
        }
        let upstream = ascii_of(&LoadState::UPSTREAM_GLYPH.to_string());
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
