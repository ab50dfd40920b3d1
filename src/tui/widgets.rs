//! Small drawing helpers every pane uses: clipped text, bordered blocks,
//! centred boxes, and how numbers and durations read.

use std::borrow::Cow;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Text};
use ratatui::widgets::{Block, BorderType, Borders};

use super::keys::Action;
use super::theme::Theme;
use crate::terminal_text::visible_controls;

/// Pasted text typed into a one-line input: line breaks and tabs become
/// spaces, other control characters (escape sequences among them) are
/// dropped.
/// Where a scrolled view goes for `action`: a line, a page (`page` lines
/// shown, one kept for context), or its top or end (`most`, the farthest
/// it scrolls); `None` for an action that does not scroll.
pub fn scrolled(scroll: u16, action: Action, page: u16, most: u16) -> Option<u16> {
    let step = page.saturating_sub(1).max(1);
    let to = match action {
        Action::Down => scroll.saturating_add(1),
        Action::Up => scroll.saturating_sub(1),
        Action::PageDown => scroll.saturating_add(step),
        Action::PageUp => scroll.saturating_sub(step),
        Action::First => 0,
        Action::Last => most,
        _ => return None,
    };
    Some(to.min(most))
}

/// `text` in lines of at most `width` characters, broken between words (a
/// word longer than that keeps its own line, whole).
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    for word in text.split(' ') {
        let last = out.last_mut().map(|l| l.chars().count()).unwrap_or(0);
        if last > 0 && last + 1 + word.chars().count() > width {
            out.push(String::new());
        }
        if let Some(line) = out.last_mut() {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    out
}

pub fn paste_into(input: &mut tui_input::Input, text: &str) {
    for c in text.chars() {
        let c = match c {
            '\r' | '\n' | '\t' => ' ',
            c if c.is_control() => continue,
            c => c,
        };
        input.handle(tui_input::InputRequest::InsertChar(c));
    }
}

/// Writes text clipped to `clip`, its control characters shown (see
/// [`visible_controls`]); returns the x after it.
pub fn put(buf: &mut Buffer, clip: Rect, x: u16, y: u16, text: &str, style: Style) -> u16 {
    if y < clip.y || y >= clip.bottom() || x < clip.x || x >= clip.right() {
        return x;
    }
    let text = visible_controls(text);
    let (end, _) = buf.set_stringn(x, y, &*text, (clip.right() - x) as usize, style);
    end
}

/// `text` for a widget, each control character in it shown (see
/// [`visible_controls`]): ratatui drops an escape character but draws the
/// rest of its sequence, so a server's error quoting `\x1b[31m` read
/// "[31m". Every pane draws its text through this, [`put`] or [`block`].
pub fn controls_shown<'a>(text: impl Into<Text<'a>>) -> Text<'a> {
    let mut text = text.into();
    for line in &mut text.lines {
        show_controls(line);
    }
    text
}

fn show_controls(line: &mut Line) {
    for span in &mut line.spans {
        if let Cow::Owned(visible) = visible_controls(&span.content) {
            span.content = Cow::Owned(visible);
        }
    }
}

/// A pane's border, thick when it has the focus; its title's control
/// characters shown.
pub fn block<'a>(theme: &Theme, title: impl Into<Line<'a>>, focused: bool) -> Block<'a> {
    let mut title = title.into();
    show_controls(&mut title);
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(if focused {
            theme.style("focus_border")
        } else {
            theme.style("border")
        })
        .title(title)
}

/// The inside of a bordered box.
pub fn inner(r: Rect) -> Rect {
    Rect::new(
        r.x + 1,
        r.y + 1,
        r.width.saturating_sub(2),
        r.height.saturating_sub(2),
    )
}

/// A box of at most `w`×`h` in the middle of `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width.saturating_sub(2));
    let h = h.min(area.height.saturating_sub(2));
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

pub use crate::numbers::thousands;

pub fn signed(n: i64) -> String {
    if n >= 0 {
        format!("+{}", thousands(n))
    } else {
        format!("−{}", thousands(-n))
    }
}

/// A change as a percentage of its base, or nothing when there is no base.
pub fn pct(delta: i64, base: f64) -> String {
    if base <= 0.0 {
        return String::new();
    }
    // The sign is the delta's, written as [`signed`] writes it, so that
    // "−663 (−7.6%)" reads as one minus.
    let sign = if delta < 0 { '−' } else { '+' };
    format!(
        " ({sign}{:.1}%)",
        delta.unsigned_abs() as f64 * 100.0 / base
    )
}

pub fn duration_text(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

pub fn abbreviate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else if max <= 1 {
        "…".chars().take(max).collect()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

/// A name cut to `max` characters in its middle, keeping its end: names
/// that share a long prefix (`orders_daily_eu`, `orders_daily_us`) differ
/// at the end, which a cut at the end would hide.
pub fn abbreviate_name(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max || max < 5 {
        return abbreviate(s, max);
    }
    let tail = (max - 1) / 2;
    let head = max - 1 - tail;
    let mut t: String = s.chars().take(head).collect();
    t.push('…');
    t.extend(s.chars().skip(n - tail));
    t
}

/// The first line of a message.
pub fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_with_separators_and_signs() {
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(-1000), "-1,000");
        assert_eq!(signed(-1200), "−1,200");
        assert_eq!(pct(5, 0.0), "");
        assert_eq!(pct(-663, 8743.0), " (−7.6%)");
        assert_eq!(pct(259, 7821.0), " (+3.3%)");
        assert_eq!(pct(-1, 100_000.0), " (−0.0%)");
        assert_eq!(duration_text(61_500), "1m01s");
        assert_eq!(abbreviate("fct_orders", 5), "fct_…");
        assert_eq!(abbreviate_name("fct_orders", 10), "fct_orders");
        assert_eq!(abbreviate_name("fct_orders_daily_eu", 11), "fct_o…ly_eu");
        assert_eq!(abbreviate_name("fct_orders", 4), "fct…");
    }
}
