//! The title bar (warehouse, connection, runs, clock) and the footer (the
//! status note, or the keys of the scope in force from the key registry).

use chrono::NaiveDateTime;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Clear, Widget};

use super::keymap::footer_where;
use super::keys::Action;
use super::keys::Scope;
use super::theme::Theme;
use super::widgets::{abbreviate, columns, put, wrap_words};

/// What the title bar tells.
pub struct Title<'a> {
    pub url: &'a str,
    pub db_error: Option<&'a str>,
    /// Why the console keeps the config it opened with, or why it knows
    /// no lineage of it.
    pub config_error: Option<&'a str>,
    pub connecting: bool,
    pub loading: bool,
    pub active_runs: usize,
    pub now: NaiveDateTime,
}

pub fn render_title(frame: &mut Frame, r: Rect, t: &Theme, title: &Title) {
    let buf = frame.buffer_mut();
    buf.set_style(r, t.style("title"));
    let left = format!(" idem · {}", title.url);
    let mut right = String::new();
    if let Some(e) = title.db_error {
        right.push_str(&format!("✗ database: {} · ", abbreviate(e, 50)));
    } else if let Some(e) = title.config_error {
        right.push_str(&format!("✗ {} · ", abbreviate(e, 70)));
    } else if title.connecting {
        right.push_str("connecting… · ");
    } else if title.loading {
        right.push_str("⟳ loading · ");
    }
    if title.active_runs > 0 {
        right.push_str(&format!("▶ {} running · ", title.active_runs));
    }
    right.push_str(&format!("{} UTC ", title.now.format("%H:%M")));
    let rw = columns(&right) as u16;
    let lw = r.width.saturating_sub(rw + 1) as usize;
    put(buf, r, r.x, r.y, &abbreviate(&left, lw), t.style("title"));
    let style = if title.db_error.is_some() || title.config_error.is_some() {
        t.style("title")
            .patch(t.style("error"))
            .add_modifier(Modifier::BOLD)
    } else {
        t.style("title")
    };
    put(buf, r, r.right().saturating_sub(rw), r.y, &right, style);
}

/// A hint in the footer: its keys as written (a pair reads `j k`) and
/// what they do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    pub keys: String,
    pub word: &'static str,
}

/// The footer's hints, in order, and those kept at its end at any width.
#[derive(Debug, Clone, Default)]
pub struct Hints {
    pub first: Vec<Hint>,
    pub kept: Vec<Hint>,
}

impl Hints {
    /// The hints of the focused pane's own keys in its words (`own`: the
    /// runs pane's), then of `scope`'s actions that `shown` keeps (those of
    /// the focused pane, those the open dialog offers) in the registry's.
    /// Help and quit keep their place at the end.
    pub fn of(scope: Scope, shown: &dyn Fn(Action) -> bool, own: Vec<Hint>) -> Hints {
        let last = |a: Action| matches!(a, Action::Help | Action::Quit);
        let hints = |keep: &dyn Fn(Action) -> bool| -> Vec<Hint> {
            footer_where(scope, &|a| shown(a) && keep(a))
                .into_iter()
                .map(|(keys, word)| Hint {
                    keys: keys.to_string(),
                    word,
                })
                .collect()
        };
        let mut first = own;
        first.extend(hints(&|a| !last(a)));
        Hints {
            first,
            kept: hints(&last),
        }
    }
}

/// The footer: the status note if there is one, else the `hints`.
pub fn render_footer(
    frame: &mut Frame,
    r: Rect,
    t: &Theme,
    message: Option<&(bool, String)>,
    hints: &Hints,
) {
    if let Some((error, text)) = message {
        let style = if *error {
            t.style("error")
        } else {
            t.style("text")
        };
        render_note(frame, r, text, style, t);
        return;
    }
    let buf = frame.buffer_mut();
    // Help and quit keep their place at the end at any width: a terminal
    // too narrow for every hint drops the others, from the end, so that
    // the key to learn the rest and the key to leave always show.
    let width = |hint: &Hint| (columns(&hint.keys) + columns(hint.word) + 3) as u16;
    let kept_w: u16 = hints.kept.iter().map(width).sum();
    let mut x = r.x + 1;
    let mut shown = Vec::new();
    for hint in &hints.first {
        if x + width(hint) + kept_w > r.right() {
            break;
        }
        x += width(hint);
        shown.push(hint);
    }
    shown.extend(&hints.kept);
    let mut x = r.x + 1;
    for hint in shown {
        if x + width(hint) > r.right() {
            break;
        }
        x = put(buf, r, x, r.y, &hint.keys, t.style("highlight"));
        x = put(
            buf,
            r,
            x,
            r.y,
            &format!(" {}  ", hint.word),
            t.style("muted"),
        );
    }
}

/// The most lines a status note takes; past them it ends in "…".
const NOTE_LINES: usize = 4;

/// A status note on the footer line `r`: one wider than the screen goes on
/// in lines above it, over the panes, under a rule, until the next key
/// clears it (a note of a failure, with the command that mends it, was cut
/// off mid-word). Where there is no room above, or past [`NOTE_LINES`], it
/// ends in "…", so that it reads as cut.
fn render_note(frame: &mut Frame, r: Rect, text: &str, style: Style, t: &Theme) {
    let room = r.width.saturating_sub(1) as usize;
    let above = r.y.saturating_sub(frame.area().y) as usize;
    // Each line past the first takes one above, and the rule one more.
    let most = NOTE_LINES.min(above.max(1));
    let mut lines = wrap_words(text, room);
    if lines.len() > most {
        let rest = lines.split_off(most - 1).join(" ");
        lines.push(rest);
    }
    let n = lines.len() as u16;
    let band = Rect::new(r.x, r.y + 1 - n, r.width, n);
    let buf = frame.buffer_mut();
    if n > 1 {
        Clear.render(band, buf);
        let rule = Rect::new(r.x, band.y - 1, r.width, 1);
        Clear.render(rule, buf);
        let line = "─".repeat(r.width as usize);
        put(buf, rule, rule.x, rule.y, &line, t.style("muted"));
    }
    for (k, line) in lines.iter().enumerate() {
        let y = band.y + k as u16;
        put(buf, band, r.x + 1, y, &abbreviate(line, room), style);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::draw;

    /// The main screen's footer on the frame's last row, with `note`.
    fn footer_with(f: &mut Frame, note: &(bool, String)) {
        let area = f.area();
        let r = Rect::new(0, area.bottom() - 1, area.width, 1);
        render_footer(
            f,
            r,
            &Theme::default_theme(),
            Some(note),
            &Hints::of(Scope::Main, &|_| true, Vec::new()),
        )
    }

    /// A note wider than the screen goes on above the footer, whole, up to
    /// four lines; past them, or with no room above, it ends in "…".
    #[test]
    fn a_long_status_note_reads_whole_above_the_footer() {
        let note = (
            true,
            "fct_orders 2026-06-03 failed: CHECK constraint failed: amount_usd >= 0; fix the source, then r runs it again"
                .to_string(),
        );
        let footer = |f: &mut Frame| footer_with(f, &note);
        let shown = draw(40, 8, footer);
        let lines: Vec<&str> = shown.lines().map(str::trim_end).collect();
        assert_eq!(
            lines[4..],
            [
                "────────────────────────────────────────",
                " fct_orders 2026-06-03 failed: CHECK",
                " constraint failed: amount_usd >= 0; fix",
                " the source, then r runs it again",
            ]
        );
        // Three rows: two lines and the rule; the second ends cut.
        let shown = draw(40, 3, footer);
        let lines: Vec<&str> = shown.lines().map(str::trim_end).collect();
        assert_eq!(lines[1], " fct_orders 2026-06-03 failed: CHECK");
        assert!(lines[2].ends_with('…'), "{shown}");
    }

    #[test]
    fn a_status_note_wider_than_the_screen_ends_in_an_ellipsis() {
        let note = (
            true,
            "2 partitions would shrink past the shrink guard (S in the confirm dialog allows it)"
                .to_string(),
        );
        let shown = draw(40, 1, |f| {
            render_footer(
                f,
                f.area(),
                &Theme::default_theme(),
                Some(&note),
                &Hints::of(Scope::Main, &|_| true, Vec::new()),
            )
        });
        assert_eq!(shown, " 2 partitions would shrink past the shr…");
        let short = (false, "loaded".to_string());
        let shown = draw(40, 1, |f| {
            render_footer(
                f,
                f.area(),
                &Theme::default_theme(),
                Some(&short),
                &Hints::of(Scope::Main, &|_| true, Vec::new()),
            )
        });
        assert_eq!(shown, " loaded");
    }

    /// The title bar keeps its clock and its right edge whatever the
    /// error it tells: one in Japanese, or quoting an escape sequence,
    /// ends in "…" before them (cut by characters, the clock went past
    /// the edge).
    #[test]
    fn the_title_bar_fits_wide_and_escaped_errors() {
        for error in [
            "東京の設定ファイル_本番環境用.toml:16:9 does not load: the console keeps the jobs it opened with",
            "password authentication failed for user \u{1b}[31m\u{1b}[31m\u{1b}[31m\u{1b}[31m\u{1b}[31m",
        ] {
            let title = Title {
                url: "sqlite:///tmp/c2cjk/warehouse.db",
                db_error: None,
                config_error: Some(error),
                connecting: false,
                loading: false,
                active_runs: 2,
                now: crate::tui::fixture::now(),
            };
            let shown = draw(120, 1, |f| {
                render_title(f, f.area(), &Theme::default_theme(), &title)
            });
            assert!(shown.ends_with("· ▶ 2 running · 03:12 UTC"), "{shown}");
            assert!(shown.contains("…"), "{shown}");
            let database = Title {
                db_error: Some(error),
                config_error: None,
                ..title
            };
            let shown = draw(120, 1, |f| {
                render_title(f, f.area(), &Theme::default_theme(), &database)
            });
            assert!(shown.ends_with("· ▶ 2 running · 03:12 UTC"), "{shown}");
        }
    }

    /// A note in Japanese wraps by the columns it takes: counted in
    /// characters, its first line ran past the screen and its words were
    /// lost.
    #[test]
    fn a_wide_status_note_wraps_whole() {
        let note = (
            true,
            "/tmp/東京の設定ファイル_本番環境用.toml:16:9: jobs[0].grain: \"日毎日毎日毎日毎日毎\" is not a grain; expected one of hour, day, month"
                .to_string(),
        );
        let shown = draw(60, 8, |f| footer_with(f, &note));
        // A wide character's second column reads as a space here.
        let words = |s: &str| s.replace(' ', "");
        let read: String = shown
            .lines()
            .filter(|l| !l.starts_with('─'))
            .map(words)
            .collect();
        assert_eq!(read, words(&note.1), "{shown}");
    }

    /// At 80 columns not every hint of the main screen fits: the others
    /// give way, never the help and quit keys.
    #[test]
    fn a_narrow_footer_keeps_the_help_and_quit_keys() {
        let footer = |w| {
            draw(w, 1, |f| {
                render_footer(
                    f,
                    f.area(),
                    &Theme::default_theme(),
                    None,
                    &Hints::of(Scope::Main, &|_| true, Vec::new()),
                )
            })
        };
        let wide = footer(300);
        assert!(wide.trim_end().ends_with("? help  q quit"), "{wide}");
        let narrow = footer(80);
        assert!(narrow.trim_end().ends_with("? help  q quit"), "{narrow}");
        let first = wide.split("  ").next().unwrap_or_default();
        assert!(narrow.starts_with(first), "the first hints stay: {narrow}");
    }
}
