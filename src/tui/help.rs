//! The help overlay, written from the key registry (the same one the footer
//! and the README's keys table come from) and the states' legend.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::keymap::{self, Keymap, action_for};
use super::keys::{Action, Scope};
use super::theme::Theme;
use super::widgets::{block, centered, controls_shown, put, scrolled, wrap_words};
use crate::state::LoadState;

/// A key in the overlay showing `page` lines and scrolling at most `most`:
/// the new scroll, or `None` when it closes (any key but the scrolling ones
/// does).
pub fn key(scroll: u16, key: &KeyEvent, (page, most): (u16, u16)) -> Option<u16> {
    action_for(Scope::Help, key).and_then(|a| scrolled(scroll, a, page, most))
}

/// Every binding by scope, with the keys of `keymap`, then the states and
/// the marks beside them. Every line wraps between words under itself, not
/// under its keys or glyph (a long legend line was cut mid-word).
pub fn lines(t: &Theme, keymap: &Keymap, width: u16) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut scope: Option<Scope> = None;
    let heading = |lines: &mut Vec<Line<'static>>, title: &str| {
        for part in wrap_words(title, (width as usize).max(20)) {
            lines.push(Line::from(Span::styled(part, t.style("highlight"))));
        }
    };
    for bound in keymap.bindings() {
        let b = bound.binding;
        if scope != Some(b.scope) {
            if scope.is_some() {
                lines.push(Line::from(""));
            }
            heading(&mut lines, b.scope.title());
            scope = Some(b.scope);
        }
        let keys = format!("  {:<10} ", bound.label);
        let keys_style = t.style("text").add_modifier(Modifier::BOLD);
        entry(&mut lines, width, (keys, keys_style), b.description, t);
    }
    lines.push(Line::from(""));
    heading(&mut lines, "States");
    let mark = |glyph: char, style| (format!("  {glyph}  "), style);
    for st in LoadState::ALL {
        entry(
            &mut lines,
            width,
            mark(st.glyph(), t.state(st)),
            st.name(),
            t,
        );
    }
    let marks = [
        (
            mark(LoadState::UPSTREAM_GLYPH, t.state(LoadState::Stale)),
            "stale (upstream): loaded before an upstream partition it reads was loaded again",
        ),
        (
            mark('*', t.style("anomaly")),
            "anomaly: row count is an outlier",
        ),
        (
            mark(crate::tui::glyphs::REFUSED_FLAG, t.style("warning")),
            "refused: its latest load was refused by the shrink guard (the source looked incomplete)",
        ),
        (
            mark('+', t.style("warning")),
            "source changed: after a reconciliation (O) or a run dialog's count, the source has more rows now than were loaded",
        ),
        (
            mark('-', t.style("warning")),
            "source changed: the source has fewer rows now than were loaded",
        ),
        (
            mark(crate::tui::glyphs::NULL_PARTITION_FLAG, t.style("warning")),
            "in the jobs list, with a number: rows of the job's target whose partition column is NULL (no partition holds them)",
        ),
    ];
    for (mark, text) in marks {
        entry(&mut lines, width, mark, text, t);
    }
    lines
}

/// `lead` (keys, or a glyph) and `text` wrapped in the room left beside it.
fn entry(
    lines: &mut Vec<Line<'static>>,
    width: u16,
    (lead, lead_style): (String, Style),
    text: &str,
    t: &Theme,
) {
    let lead_w = lead.chars().count();
    let room = (width as usize).saturating_sub(lead_w).max(20);
    for (k, part) in wrap_words(text, room).into_iter().enumerate() {
        let lead = if k == 0 {
            lead.clone()
        } else {
            " ".repeat(lead_w)
        };
        lines.push(Line::from(vec![
            Span::styled(lead, lead_style),
            Span::styled(part, t.style("text")),
        ]));
    }
}

/// The lines the overlay shows on a screen of `area`, and the farthest it
/// scrolls: a key past it is not kept, so that the first key back moves
/// the view.
pub fn extent(area: Rect, t: &Theme) -> (u16, u16) {
    let inner_r = block(t, " Help · keys ", true).inner(frame_of(area));
    let total = lines(t, keymap::current(), inner_r.width).len() as u16;
    (inner_r.height, total.saturating_sub(inner_r.height))
}

fn frame_of(area: Rect) -> Rect {
    centered(area, 96, area.height.saturating_sub(2))
}

pub fn render(frame: &mut Frame, area: Rect, t: &Theme, scroll: u16) {
    let r = frame_of(area);
    frame.render_widget(Clear, r);
    let b = block(t, " Help · keys ", true);
    let inner_r = b.inner(r);
    frame.render_widget(b, r);
    let lines = lines(t, keymap::current(), inner_r.width);
    let total = lines.len() as u16;
    let scroll = scroll.min(extent(area, t).1);
    frame.render_widget(
        Paragraph::new(controls_shown(lines)).scroll((scroll, 0)),
        inner_r,
    );
    if let Some(mark) = scroll_mark(scroll, inner_r.height, total) {
        let w = mark.chars().count() as u16;
        let x = r.right().saturating_sub(w + 2).max(r.x);
        put(
            frame.buffer_mut(),
            r,
            x,
            r.bottom().saturating_sub(1),
            &mark,
            t.style("highlight"),
        );
    }
}

/// Where the view is in a longer text, for the border: which lines show,
/// and arrows for the ways there is more; `None` when it all fits.
pub fn scroll_mark(scroll: u16, height: u16, total: u16) -> Option<String> {
    if total <= height {
        return None;
    }
    let last = (scroll + height).min(total);
    let up = if scroll > 0 { "↑" } else { " " };
    let down = if last < total { "↓" } else { " " };
    Some(format!(
        " {up}{down} lines {}–{last} of {total} ({} scroll) ",
        scroll + 1,
        keymap::key_pair(Scope::Help, Action::Down, Action::Up)
    ))
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyModifiers};

    use super::*;

    #[test]
    fn every_binding_is_in_the_help_and_long_ones_wrap() {
        let t = Theme::default_theme();
        let keymap = Keymap::default();
        let text: Vec<String> = lines(&t, &keymap, 40)
            .iter()
            .map(|l| l.to_string())
            .collect();
        for b in crate::tui::keys::BINDINGS {
            assert!(
                text.iter().any(|l| l.trim_start().starts_with(b.label)),
                "{} missing",
                b.label
            );
        }
        assert!(
            lines(&t, &keymap, 40).len() > lines(&t, &keymap, 200).len(),
            "narrow help wraps"
        );
    }

    /// QA: at 80 columns the help cut its legend's long lines and the text
    /// editing heading mid-word ("(the source lo", "whose partiti"), and it
    /// had no word for the calendar's ≈, + and - marks.
    #[test]
    fn every_help_line_fits_and_every_mark_is_told() {
        let t = Theme::default_theme();
        for width in [40u16, 76, 94] {
            let text: Vec<String> = lines(&t, &Keymap::default(), width)
                .iter()
                .map(|l| l.to_string())
                .collect();
            for l in &text {
                assert!(
                    crate::tui::widgets::columns(l) <= width as usize,
                    "wider than {width}: {l:?}"
                );
            }
            let all = text.join(" ");
            let words = all.split_whitespace().collect::<Vec<_>>().join(" ");
            for told in [
                "(no partition holds them)",
                "(the source looked incomplete)",
                "Ctrl-W, Ctrl-U)",
                "≈ stale (upstream)",
                "+ source changed",
                "- source changed",
            ] {
                assert!(words.contains(told), "{told} at {width}: {text:#?}");
            }
        }
    }

    #[test]
    fn the_help_shows_the_users_keys() {
        let user: crate::user_config::UserConfig =
            toml::from_str("[keys.main]\nquit = [\"x\", \"F10\"]\n").unwrap();
        let keymap = Keymap::with_overrides(&user.keys).unwrap();
        let text: Vec<String> = lines(&Theme::default_theme(), &keymap, 120)
            .iter()
            .map(|l| l.to_string())
            .collect();
        assert!(
            text.iter()
                .any(|l| l.trim_start().starts_with("x F10") && l.contains("quit (asks first")),
            "{text:#?}"
        );
        assert!(
            !text
                .iter()
                .any(|l| l.trim_start().starts_with("q ") && l.contains("quit (asks")),
            "the default q is gone"
        );
    }

    #[test]
    fn the_scroll_mark_says_where_the_view_is() {
        assert_eq!(scroll_mark(0, 30, 20), None);
        assert_eq!(
            scroll_mark(0, 30, 100).as_deref(),
            Some("  ↓ lines 1–30 of 100 (j k scroll) ")
        );
        assert_eq!(
            scroll_mark(10, 30, 100).as_deref(),
            Some(" ↑↓ lines 11–40 of 100 (j k scroll) ")
        );
        assert_eq!(
            scroll_mark(70, 30, 100).as_deref(),
            Some(" ↑  lines 71–100 of 100 (j k scroll) ")
        );
    }

    #[test]
    fn scroll_keys_scroll_and_others_close() {
        let k = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
        let c = |code| KeyEvent::new(code, KeyModifiers::NONE);
        // 20 lines shown of 100: it scrolls to 80 at most.
        let extent = (20, 80);
        assert_eq!(key(0, &k('j'), extent), Some(1));
        assert_eq!(key(0, &k('k'), extent), Some(0));
        assert_eq!(key(3, &k('x'), extent), None);
        // A page keeps one line of the last for context; before, PgDn
        // closed the help and a long one was read a line at a time.
        assert_eq!(key(0, &c(KeyCode::PageDown), extent), Some(19));
        assert_eq!(key(0, &k(' '), extent), Some(19));
        assert_eq!(key(70, &c(KeyCode::PageDown), extent), Some(80));
        assert_eq!(key(30, &c(KeyCode::PageUp), extent), Some(11));
        assert_eq!(key(5, &c(KeyCode::PageUp), extent), Some(0));
        assert_eq!(key(40, &k('g'), extent), Some(0));
        assert_eq!(key(0, &k('G'), extent), Some(80));
        assert_eq!(key(0, &c(KeyCode::End), extent), Some(80));
    }
}
