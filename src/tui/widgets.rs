//! Small drawing helpers every pane uses: clipped text, bordered blocks,
//! centred boxes, and how numbers and durations read.

use std::borrow::Cow;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, BorderType, Borders};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::keys::Action;
use super::theme::Theme;
use crate::terminal_text::{visible_controls, visible_line};

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

/// The first of a list's `count` rows shown when `rows` fit, the list
/// having been scrolled to `first`: moved as little as shows row `at` (a
/// move within the rows shown scrolls nothing, as in less or htop), and
/// no further than fills the view.
pub fn first_in_view(first: usize, at: usize, rows: usize, count: usize) -> usize {
    let first = first.min(count.saturating_sub(rows));
    if at < first {
        at
    } else if rows > 0 && at >= first + rows {
        at + 1 - rows
    } else {
        first
    }
}

/// The note on a list's border of its rows scrolled out one way (`arrow`,
/// `↑` or `↓`): how many, then what of them matters (`of_them`, the most
/// telling first), in as much as `width` takes (" ↓12 more · ✗ in 2 ",
/// then " ↓12 · ✗ in 2 ", then fewer of `of_them`); `None` when no row
/// is hidden that way.
pub fn hidden_note(arrow: char, hidden: usize, of_them: &[String], width: usize) -> Option<String> {
    if hidden == 0 {
        return None;
    }
    let mut parts = vec![format!("{arrow}{hidden} more")];
    parts.extend(of_them.iter().cloned());
    let fits = |parts: &[String]| columns(&parts.join(" · ")) + 2 <= width;
    if !fits(&parts) {
        parts[0] = format!("{arrow}{hidden}");
    }
    while parts.len() > 1 && !fits(&parts) {
        parts.pop();
    }
    Some(format!(" {} ", parts.join(" · ")))
}

/// `text` in lines of at most `width` columns, broken between words (a
/// word wider than that keeps its own line, whole).
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut out = vec![String::new()];
    for word in text.split(' ') {
        let last = out.last_mut().map(|l| columns(l)).unwrap_or(0);
        if last > 0 && last + 1 + columns(word) > width {
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

/// `line` laid out in rows of at most `width` columns with a hanging
/// indent: its first span (a label) opens the first row, the rest wraps
/// between words with each further row indented `indent` columns, under
/// the value rather than the label. Styles are kept; a word wider than a
/// row is broken.
pub fn hanging(line: Line<'static>, indent: usize, width: usize) -> Vec<Line<'static>> {
    let room = width.saturating_sub(indent).max(1);
    let (style, alignment) = (line.style, line.alignment);
    let mut spans = line.spans.into_iter();
    let mut rows: Vec<Vec<Span<'static>>> = Vec::new();
    let mut row: Vec<Span<'static>> = spans.next().into_iter().collect();
    let mut used = 0;
    // Spaces not yet placed: dropped where the row breaks.
    let mut gap: Vec<Span<'static>> = Vec::new();
    for span in spans {
        let mut rest: &str = &span.content;
        while !rest.is_empty() {
            let spaces = rest.len() - rest.trim_start_matches(' ').len();
            if spaces > 0 {
                gap.push(Span::styled(rest[..spaces].to_string(), span.style));
                rest = &rest[spaces..];
                continue;
            }
            let end = rest.find(' ').unwrap_or(rest.len());
            let mut word = &rest[..end];
            rest = &rest[end..];
            while !word.is_empty() {
                let mut gap_w: usize = gap.iter().map(Span::width).sum();
                if used > 0 && used + gap_w + word.width() > room {
                    rows.push(std::mem::replace(
                        &mut row,
                        vec![Span::raw(" ".repeat(indent))],
                    ));
                    used = 0;
                    gap.clear();
                    gap_w = 0;
                }
                // At least one character, so that the loop moves on.
                let piece = match head_within(word, room.saturating_sub(used + gap_w)) {
                    "" => &word[..word.chars().next().map_or(0, char::len_utf8)],
                    piece => piece,
                };
                word = &word[piece.len()..];
                used += gap_w + piece.width();
                row.append(&mut gap);
                row.push(Span::styled(piece.to_string(), span.style));
            }
        }
    }
    // Trailing spaces only where they fit.
    if used + gap.iter().map(Span::width).sum::<usize>() <= room {
        row.append(&mut gap);
    }
    rows.push(row);
    rows.into_iter()
        .map(|spans| {
            let mut row = Line::from(spans).style(style);
            row.alignment = alignment;
            row
        })
        .collect()
}

/// Pasted text typed into a one-line input: line breaks and tabs become
/// spaces, other control characters (escape sequences among them) are
/// dropped.
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

/// Writes text as one line (see [`one_line`]) clipped to `clip`; returns
/// the x after it.
pub fn put(buf: &mut Buffer, clip: Rect, x: u16, y: u16, text: &str, style: Style) -> u16 {
    if y < clip.y || y >= clip.bottom() || x < clip.x || x >= clip.right() {
        return x;
    }
    let text = one_line(text);
    let (end, _) = buf.set_stringn(x, y, &*text, (clip.right() - x) as usize, style);
    end
}

/// `text` as one line of the console shows it: a line break or a tab a
/// space, every other control character written visibly (see
/// [`visible_line`]). [`put`] draws, and [`columns`] and the shortenings
/// measure, this form: shortened first and shown after, text with an
/// escape in it lost its "…" or ran past its room.
fn one_line(text: &str) -> Cow<'_, str> {
    if text.contains(char::is_control) {
        Cow::Owned(visible_line(text))
    } else {
        Cow::Borrowed(text)
    }
}

/// How many terminal columns [`put`] takes for `text`: a wide character
/// (CJK, most emoji) takes two.
pub fn columns(text: &str) -> usize {
    one_line(text).width()
}

/// The longest start of `text` at most `room` columns wide; a wide
/// character that would straddle the edge is left out whole.
fn head_within(text: &str, room: usize) -> &str {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        used += c.width().unwrap_or(0);
        if used > room {
            return &text[..i];
        }
    }
    text
}

/// `text` from its column `skip` on: what a one-line input scrolled
/// `skip` columns (as `tui_input` counts them) shows.
pub fn from_column(text: &str, skip: usize) -> &str {
    let mut used = 0;
    for (i, c) in text.char_indices() {
        if used >= skip {
            return &text[i..];
        }
        used += c.width().unwrap_or(0);
    }
    ""
}

/// The longest end of `text` at most `room` columns wide.
fn tail_within(text: &str, room: usize) -> &str {
    let mut used = 0;
    for (i, c) in text.char_indices().rev() {
        used += c.width().unwrap_or(0);
        if used > room {
            return &text[i + c.len_utf8()..];
        }
    }
    text
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

/// `text` as one line (see [`one_line`]) in at most `max` columns, ending
/// in "…" when cut.
pub fn abbreviate(text: &str, max: usize) -> String {
    let text = one_line(text);
    if text.width() <= max {
        return text.into_owned();
    }
    if max == 0 {
        return String::new();
    }
    format!("{}…", head_within(&text, max - 1))
}

/// A name cut to `max` columns in its middle, keeping its end: names
/// that share a long prefix (`orders_daily_eu`, `orders_daily_us`) differ
/// at the end, which a cut at the end would hide.
pub fn abbreviate_name(text: &str, max: usize) -> String {
    let text = one_line(text);
    if text.width() <= max || max < 5 {
        return abbreviate(&text, max);
    }
    let tail = (max - 1) / 2;
    let head = max - 1 - tail;
    format!("{}…{}", head_within(&text, head), tail_within(&text, tail))
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

    /// Shortened by the columns a terminal gives it: a wide character
    /// takes two, and is never split at the cut.
    #[test]
    fn text_is_shortened_by_columns_not_characters() {
        let error = "列「東京の売上」は存在しません";
        for max in 0..=30 {
            let cut = abbreviate(error, max);
            assert!(cut.width() <= max, "{max}: {cut:?}");
            assert!(cut.width() + 1 >= max.min(error.width()), "{max}: {cut:?}");
        }
        assert_eq!(abbreviate(error, 8), "列「東…");
        assert_eq!(abbreviate("注文🚚", 6), "注文🚚");
        assert_eq!(abbreviate("注文🚚!", 6), "注文…");
        let name = abbreviate_name("注文_毎日_東京", 9);
        assert_eq!((name.as_str(), name.width()), ("注文…東京", 9));
        assert_eq!(columns("東京 ok"), 7);
        assert_eq!(
            wrap_words("東京 大阪 名古屋 ok", 10),
            ["東京 大阪", "名古屋 ok"]
        );
    }

    /// Control characters are written visibly before the text is
    /// measured: cut after, it lost its "…" or ran past its room.
    #[test]
    fn text_is_shown_then_shortened() {
        let raw = "no such column: \u{1b}[31mx";
        let shown = r"no such column: \u{1b}[31mx";
        assert_eq!(abbreviate(raw, 80), shown);
        assert_eq!(columns(raw), shown.len());
        assert_eq!(abbreviate(raw, 20), r"no such column: \u{…");
        assert_eq!(abbreviate_name("a\u{7}bcdefgh", 9), r"a\u{…efgh");
        assert_eq!(abbreviate("one\nline\ttab", 20), "one line tab");
    }

    #[test]
    fn an_input_scrolled_by_columns_shows_from_that_column() {
        assert_eq!(from_column("東京abc", 0), "東京abc");
        assert_eq!(from_column("東京abc", 2), "京abc");
        assert_eq!(from_column("東京abc", 4), "abc");
        assert_eq!(from_column("東京abc", 9), "");
    }
}
