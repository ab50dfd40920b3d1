//! Text from outside (a server's error, a job's SQL or description, a
//! value read from the warehouse, a file name) as a terminal shows it
//! without obeying it. Such text can carry an escape sequence that would
//! restyle, retitle or clear the operator's terminal; the headless output
//! and the console both show every control character in it the one way
//! written here, `\u{1b}`.

use std::borrow::Cow;

/// `text` as a terminal can show it without obeying it: each control
/// character but the line break and the tab (an escape, a carriage return
/// that would overwrite the line, a bell) written as Rust writes it
/// (`\u{1b}`, `\r`).
pub fn visible_controls(text: &str) -> Cow<'_, str> {
    controls_written(text, |c, out| out.extend(c.escape_debug()))
}

/// `text` as one line a terminal shows as written: a line break, a
/// carriage return or a tab becomes a space, and every other control
/// character is written as [`visible_controls`] writes it. What is kept a
/// line at a time (the ledger's words, a run's log) is kept so: a
/// `--reason` or a server's error quoting `\x1b[31m` reads `\u{1b}[31m`
/// wherever it is shown.
pub fn visible_line(text: &str) -> String {
    visible_controls(&text.replace(['\t', '\n', '\r'], " ")).into_owned()
}

/// `text` with each control character but the line break and the tab
/// written by `write`; borrowed as it is when it holds none.
pub fn controls_written(text: &str, write: impl Fn(char, &mut String)) -> Cow<'_, str> {
    let hidden = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(hidden) {
        return Cow::Borrowed(text);
    }
    let mut written = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            write(c, &mut written);
        } else {
            written.push(c);
        }
    }
    Cow::Owned(written)
}

#[cfg(test)]
mod tests {
    use super::{visible_controls, visible_line};

    #[test]
    fn control_characters_are_written_visibly_not_obeyed() {
        assert_eq!(
            visible_controls("column \"\u{1b}]0;x\u{7}\u{1b}[2J\r\u{9b}31m\""),
            "column \"\\u{1b}]0;x\\u{7}\\u{1b}[2J\\r\\u{9b}31m\""
        );
        // Lines and tabs keep their shape; other text is left as it is.
        assert_eq!(visible_controls("a\tb\nc é ■"), "a\tb\nc é ■");
    }

    #[test]
    fn a_visible_line_spaces_its_breaks_and_shows_its_escapes() {
        assert_eq!(
            visible_line("page 42\r\nsecond\tline\u{1b}[31mRED\u{7}"),
            "page 42  second line\\u{1b}[31mRED\\u{7}"
        );
    }
}
