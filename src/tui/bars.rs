//! The title bar (warehouse, connection, runs, clock) and the footer (the
//! status note, or the keys of the scope in force from the key registry).

use chrono::NaiveDateTime;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;

use super::keymap::footer;
use super::keys::Scope;
use super::theme::Theme;
use super::widgets::{abbreviate, put};

/// What the title bar tells.
pub struct Title<'a> {
    pub url: &'a str,
    pub db_error: Option<&'a str>,
    /// Why the console keeps the config it opened with.
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
    let rw = right.chars().count() as u16;
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

/// The footer: the status note if there is one, else the scope's keys.
pub fn render_footer(
    frame: &mut Frame,
    r: Rect,
    t: &Theme,
    message: Option<&(bool, String)>,
    scope: Scope,
) {
    let buf = frame.buffer_mut();
    if let Some((error, text)) = message {
        let style = if *error {
            t.style("error")
        } else {
            t.style("text")
        };
        put(buf, r, r.x + 1, r.y, text, style);
        return;
    }
    let mut x = r.x + 1;
    for (key, word) in footer(scope) {
        if x + (key.chars().count() + word.len() + 3) as u16 > r.right() {
            break;
        }
        x = put(buf, r, x, r.y, key, t.style("highlight"));
        x = put(buf, r, x, r.y, &format!(" {word}  "), t.style("muted"));
    }
}
