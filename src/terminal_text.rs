//! Text from outside (a server's error, a job's SQL or description, a
//! value read from the warehouse, a file name) as a terminal shows it
//! without obeying it. Such text can carry an escape sequence that would
//! restyle, retitle or clear the operator's terminal; the headless output
//! and the console both show every control character in it the one way
//! written here, `\u{1b}`. Both also write their glyphs (`■ ✗ → ·`) in
//! ASCII the one way written here, where the terminal cannot show UTF-8.

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

/// The ASCII a glyph is written as under [`ascii_wanted`]: one column, as
/// the glyph is; `None` for a character with no ASCII of its own.
pub fn glyph_in_ascii(symbol: &str) -> Option<&'static str> {
    Some(match symbol {
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
        _ => return None,
    })
}

/// Whether this process writes ASCII in place of its glyphs, by
/// [`ascii_wanted`] on its environment, read once.
pub fn ascii_here() -> bool {
    static ASCII: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASCII.get_or_init(|| ascii_wanted(|name| std::env::var(name).ok()))
}

/// `text` with each mark [`glyph_in_ascii`] knows (`■ ✗ → ·`) written in
/// ASCII; letters (a value's `é` a server's error quotes) and every other
/// character left as they are.
pub fn ascii_glyphs(text: &str) -> Cow<'_, str> {
    let in_ascii = |c: char| {
        let mut buf = [0u8; 4];
        glyph_in_ascii(c.encode_utf8(&mut buf)).filter(|_| !c.is_ascii() && !c.is_alphanumeric())
    };
    if !text.chars().any(|c| in_ascii(c).is_some()) {
        return Cow::Borrowed(text);
    }
    let mut written = String::with_capacity(text.len());
    for c in text.chars() {
        match in_ascii(c) {
            Some(a) => written.push_str(a),
            None => written.push(c),
        }
    }
    Cow::Owned(written)
}

/// A line of headless output (stdout's text, stderr's notes) as the
/// terminal shows it: [`visible_controls`], and in ASCII wherever the
/// console would draw ASCII ([`ascii_here`]).
pub fn shown(text: &str) -> Cow<'_, str> {
    let visible = visible_controls(text);
    if !ascii_here() {
        return visible;
    }
    match ascii_glyphs(&visible) {
        Cow::Borrowed(_) => visible,
        Cow::Owned(ascii) => Cow::Owned(ascii),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn only_known_glyphs_become_ascii() {
        assert_eq!(
            ascii_glyphs("■ loaded · 2 → 3 é 界"),
            "# loaded . 2 > 3 é 界"
        );
        assert!(matches!(ascii_glyphs("plain 界"), Cow::Borrowed(_)));
    }

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
