//! Styled lines laid out in a box too small for them: wrapped between
//! words, and where rows run out, the last row shown ends in "…" after a
//! whole phrase (or word), never mid-word or silently.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// What separates the facts of a line: a cut keeps whole ones.
const PHRASE: &str = " · ";

/// `lines` in rows of at most `width` columns, at most `height` of them:
/// each line wraps between words (a word wider than a row is broken);
/// when rows are left over, the last one shown ends in "…", after the
/// last whole phrase it holds where it is cut inside a line, else after
/// its last whole word.
pub fn fit(lines: Vec<Line<'static>>, width: usize, height: usize) -> Vec<Line<'static>> {
    let width = width.max(2);
    // Each row, and whether its line goes on in the next.
    let mut rows: Vec<(Row, bool)> = Vec::new();
    for line in lines {
        let cells: Vec<(char, Style)> = line
            .spans
            .iter()
            .flat_map(|s| {
                let style = line.style.patch(s.style);
                s.content.chars().map(move |c| (c, style))
            })
            .collect();
        let wrapped = wrap(&cells, width);
        let n = wrapped.len();
        rows.extend(wrapped.into_iter().enumerate().map(|(k, r)| (r, k + 1 < n)));
    }
    if rows.len() <= height {
        return rows.into_iter().map(|(r, _)| line_of(&r.cells)).collect();
    }
    rows.truncate(height);
    let Some((last, goes_on)) = rows.pop() else {
        return Vec::new();
    };
    let mut out: Vec<Line<'static>> = rows.iter().map(|(r, _)| line_of(&r.cells)).collect();
    out.push(line_of(&ellipsized(last, goes_on, width)));
    out
}

/// A row of styled characters; `mid_word` when it ends inside a word
/// wider than a row.
struct Row {
    cells: Vec<(char, Style)>,
    mid_word: bool,
}

/// `cells` in rows of at most `width`, broken after spaces (dropped at the
/// start of a row), a word wider than a row broken where the row ends.
fn wrap(cells: &[(char, Style)], width: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut row: Vec<(char, Style)> = Vec::new();
    let mut used = 0;
    for word in cells.split_inclusive(|(c, _)| *c == ' ') {
        let w = cols(word);
        // Its trailing space may hang past the row's end.
        let bare = w - usize::from(word.last().is_some_and(|(c, _)| *c == ' '));
        if used > 0 && used + bare > width {
            rows.push(Row {
                cells: trimmed(std::mem::take(&mut row)),
                mid_word: false,
            });
            used = 0;
        }
        if used == 0 && bare > width {
            // A word wider than a row: as much as a row takes, at a time.
            for c in word {
                let cw = cols(std::slice::from_ref(c));
                if used + cw > width {
                    rows.push(Row {
                        cells: std::mem::take(&mut row),
                        mid_word: true,
                    });
                    used = 0;
                }
                row.push(*c);
                used += cw;
            }
            continue;
        }
        // Spaces do not open a row the wrap made.
        if used == 0 && bare == 0 && !rows.is_empty() {
            continue;
        }
        row.extend_from_slice(word);
        used += w;
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(Row {
            cells: trimmed(row),
            mid_word: false,
        });
    }
    rows
}

/// The last row shown of rows cut short: "…" after its last whole phrase
/// when its line goes on (`goes_on`) mid-phrase, else after it whole
/// where there is room; after its last whole word otherwise.
fn ellipsized(last: Row, goes_on: bool, width: usize) -> Vec<(char, Style)> {
    let Row {
        cells: mut row,
        mid_word,
    } = last;
    let style = row.last().map(|(_, s)| *s).unwrap_or_default();
    let text: String = row.iter().map(|(c, _)| c).collect();
    // Room for the "…" after the first `end` characters.
    let keep = |end: usize| text.chars().take(end).collect::<String>().width() < width;
    let phrase_end = |from: &str| {
        let chars: Vec<char> = from.chars().collect();
        let sep: Vec<char> = PHRASE.chars().collect();
        (0..chars.len().saturating_sub(sep.len() - 1))
            .rev()
            .find(|i| chars[*i..*i + sep.len()] == sep[..] && keep(*i + sep.len()))
            .map(|i| i + sep.len())
    };
    let word_end = || {
        let chars: Vec<char> = text.chars().collect();
        (1..chars.len())
            .rev()
            .find(|i| chars[*i - 1] == ' ' && keep(*i))
    };
    let whole = !mid_word && text.width() + 2 <= width;
    let end = if whole && !(goes_on && phrase_end(&text).is_some()) {
        row.push((' ', style));
        row.len()
    } else {
        (goes_on.then(|| phrase_end(&text)).flatten())
            .or_else(word_end)
            .unwrap_or_else(|| {
                // One word fills the row: as much of it as leaves room.
                let mut n = row.len();
                while n > 0 && !keep(n) {
                    n -= 1;
                }
                n
            })
    };
    row.truncate(end);
    row.push(('…', style));
    row
}

fn trimmed(mut row: Vec<(char, Style)>) -> Vec<(char, Style)> {
    while row.last().is_some_and(|(c, _)| *c == ' ') {
        row.pop();
    }
    row
}

fn cols(cells: &[(char, Style)]) -> usize {
    cells
        .iter()
        .map(|(c, _)| unicode_width::UnicodeWidthChar::width(*c).unwrap_or(0))
        .sum()
}

/// Cells back into spans, one a run of a style.
fn line_of(cells: &[(char, Style)]) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut text = String::new();
    let mut style = None;
    for (c, s) in cells {
        if style.is_some_and(|st| st != *s) {
            spans.push(Span::styled(
                std::mem::take(&mut text),
                style.unwrap_or_default(),
            ));
        }
        style = Some(*s);
        text.push(*c);
    }
    if !text.is_empty() {
        spans.push(Span::styled(text, style.unwrap_or_default()));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(lines: &[&str], width: usize, height: usize) -> Vec<String> {
        let lines = lines.iter().map(|l| Line::from(l.to_string())).collect();
        fit(lines, width, height)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn what_fits_is_wrapped_between_words_whole() {
        assert_eq!(
            shown(
                &["✗ failed · 2 attempts", "rows now 6 · at last load 6"],
                20,
                4
            ),
            ["✗ failed · 2", "attempts", "rows now 6 · at last", "load 6"]
        );
    }

    /// QA: at 80x24 with a run in the pane, the detail's line read "rows
    /// now 6 · at last load 6 · source 6 · agrees with its", the rest
    /// past its rows, with no "…". A cut line ends in "…" after its last
    /// whole phrase; a line left out whole is said by "…" after the last
    /// one shown.
    #[test]
    fn a_cut_ends_in_an_ellipsis_after_a_whole_phrase_or_word() {
        let rows = [
            "✗ failed · 2 attempts",
            "rows now 6 · at last load 6 · source 6 · agrees with its last load",
        ];
        assert_eq!(
            shown(&rows, 58, 2),
            [
                "✗ failed · 2 attempts",
                "rows now 6 · at last load 6 · source 6 · …"
            ]
        );
        // A line left out whole.
        assert_eq!(shown(&rows, 58, 1), ["✗ failed · 2 attempts …"]);
        // No phrase ends in the row: after its last whole word.
        assert_eq!(
            shown(
                &["error: UNIQUE constraint failed: fct_orders.order_id"],
                30,
                1
            ),
            ["error: UNIQUE constraint …"]
        );
        // One word wider than the row.
        assert_eq!(shown(&["abcdefghijkl", "x"], 6, 1), ["abcde…"]);
    }

    #[test]
    fn styles_are_kept_through_the_cut() {
        let error = Style::default().fg(ratatui::style::Color::Red);
        let line = Line::from(vec![
            Span::raw("last attempt "),
            Span::styled("failed", error),
            Span::raw(" · 2.1 s · by ops"),
        ]);
        let rows = fit(vec![line, Line::from("more")], 40, 1);
        assert_eq!(rows.len(), 1);
        assert!(
            rows[0]
                .spans
                .iter()
                .any(|s| s.content == "failed" && s.style == error),
            "{rows:?}"
        );
    }
}
