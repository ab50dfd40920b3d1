//! Failures grouped by error signature (numbers, literals and identifiers
//! set aside), and the overlay that lists the groups so that one fix re-runs
//! a whole group. A group shows the identifiers its errors share.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::keymap::{self, action_for};
use super::keys::{Action, Scope};
use super::theme::Theme;
use super::widgets::{block, centered, controls_shown, first_line, wrap_words};
use crate::partition::Partition;
use crate::state::{LoadState, PartitionStatus};

/// Failed partitions whose errors read the same once numbers, literals and
/// identifiers are set aside.
#[derive(Debug, Clone)]
pub struct ErrorGroup {
    /// The signature as shown: numbers and literals set aside, identifiers
    /// kept where every error of the group names the same ones.
    pub signature: String,
    /// What groups errors: identifiers set aside too.
    pub key: String,
    pub example: String,
    /// Indices into the job's partitions.
    pub partitions: Vec<usize>,
}

/// The error with numbers, quoted literals and identifiers normalised.
pub fn error_signature(message: &str) -> String {
    normalise(message, false)
}

/// The error with numbers and quoted literals normalised, identifiers kept.
pub fn shown_signature(message: &str) -> String {
    normalise(message, true)
}

fn normalise(message: &str, keep_ids: bool) -> String {
    let first = first_line(message);
    let mut out = String::new();
    let mut chars = first.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' || c == '"' || c == '`' {
            let mut quoted = String::new();
            for d in chars.by_ref() {
                if d == c {
                    break;
                }
                quoted.push(d);
            }
            if c == '\'' {
                out.push_str("'…'");
            } else if keep_ids {
                out.extend([c].into_iter().chain(quoted.chars()).chain([c]));
            } else {
                out.push_str("<id>");
            }
        } else if c.is_alphanumeric() || c == '_' {
            let mut word = String::from(c);
            while let Some(&d) = chars.peek() {
                // An apostrophe inside a word (idem's, don't) is no quote.
                if d == '\'' && c.is_alphabetic() {
                    let mut ahead = chars.clone();
                    ahead.next();
                    if ahead.peek().is_some_and(|e| e.is_alphabetic())
                        && word.chars().last().is_some_and(char::is_alphabetic)
                    {
                        word.push(d);
                        chars.next();
                        continue;
                    }
                }
                if d.is_alphanumeric() || d == '_' || d == '.' || d == '-' || d == ':' {
                    // Keep a trailing ':' or '.' as punctuation.
                    if matches!(d, '.' | ':' | '-') {
                        let mut ahead = chars.clone();
                        ahead.next();
                        if !ahead
                            .peek()
                            .is_some_and(|e| e.is_alphanumeric() || *e == '_')
                        {
                            break;
                        }
                    }
                    word.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            let digits = word.chars().any(|c| c.is_ascii_digit());
            let letters = word.chars().any(|c| c.is_alphabetic());
            if digits && !letters {
                out.push_str("<n>");
            } else if (digits || word.contains(['_', '.'])) && !keep_ids {
                out.push_str("<id>");
            } else if out.ends_with("<n> ") {
                out.push_str(&counted(&word));
            } else {
                out.push_str(&word);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A word counted by a number, singular or plural alike: "1 row" and
/// "2 rows" read "<n> row(s)".
fn counted(word: &str) -> String {
    if !word.chars().all(|c| c.is_ascii_lowercase()) {
        return word.to_string();
    }
    let mut stem = word;
    if let Some(s) = stem
        .strip_suffix('s')
        .filter(|s| !s.ends_with('s') || s.ends_with("sse"))
    {
        stem = s;
        if let Some(e) = ["che", "she", "xe", "sse", "ze"]
            .iter()
            .find_map(|end| stem.ends_with(end).then(|| &stem[..stem.len() - 1]))
        {
            stem = e;
        }
    }
    if stem.len() < 3 {
        return word.to_string();
    }
    format!("{stem}(s)")
}

/// The failed partitions among `statuses` by error signature, most first.
pub fn group_failures(statuses: &[PartitionStatus]) -> Vec<ErrorGroup> {
    let mut groups: Vec<ErrorGroup> = Vec::new();
    for (i, s) in statuses.iter().enumerate() {
        if s.state != LoadState::Failed {
            continue;
        }
        let error = s
            .last_attempt
            .as_ref()
            .and_then(|a| a.error.clone())
            .unwrap_or_else(|| "(no error recorded)".into());
        let key = error_signature(&error);
        let shown = shown_signature(&error);
        match groups.iter_mut().find(|g| g.key == key) {
            Some(g) => {
                g.partitions.push(i);
                if g.signature != shown {
                    g.signature = key;
                }
            }
            None => groups.push(ErrorGroup {
                signature: shown,
                key,
                example: first_line(&error).to_string(),
                partitions: vec![i],
            }),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.partitions.len()));
    groups
}

/// The overlay listing a job's error groups.
#[derive(Debug, Clone, Default)]
pub struct ErrorList {
    pub(super) selected: usize,
}

/// What a key did to the error list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorListStep {
    Open,
    Closed,
    /// The operator chose this group.
    Chosen(usize),
}

impl ErrorList {
    pub fn key(&mut self, key: &KeyEvent, groups: usize) -> ErrorListStep {
        match action_for(Scope::List, key) {
            Some(Action::Confirm) => return ErrorListStep::Chosen(self.selected),
            Some(Action::Close) => return ErrorListStep::Closed,
            Some(action) => self.step(action, groups),
            None => {}
        }
        ErrorListStep::Open
    }

    /// Moves the selection among `groups` (`Up` or `Down`), for a key or
    /// the wheel alike.
    pub fn step(&mut self, action: Action, groups: usize) {
        match action {
            Action::Down => self.selected = (self.selected + 1).min(groups.saturating_sub(1)),
            Action::Up => self.selected = self.selected.saturating_sub(1),
            _ => {}
        }
    }

    pub fn render(
        &self,
        frame: &mut Frame,
        area: Rect,
        theme: &Theme,
        groups: &[ErrorGroup],
        partitions: &[Partition],
    ) {
        let t = theme;
        // The lines wrap between words under themselves (a long error was
        // cut mid-word at the box's edge), and the box is as tall as they
        // are, within the screen.
        let width = centered(area, 100, 0).width.saturating_sub(2) as usize;
        let name = |i: Option<&usize>| {
            i.and_then(|i| partitions.get(*i))
                .map(Partition::name)
                .unwrap_or_default()
        };
        let mut lines = Vec::new();
        let indented = |lines: &mut Vec<Line<'static>>, lead: Span<'static>, text: &str, style| {
            let lead_w = lead.width();
            let room = width.saturating_sub(lead_w).max(20);
            for (k, part) in wrap_words(text, room).into_iter().enumerate() {
                let lead = if k == 0 {
                    lead.clone()
                } else {
                    Span::raw(" ".repeat(lead_w))
                };
                lines.push(Line::from(vec![lead, Span::styled(part, style)]));
            }
        };
        for (k, g) in groups.iter().enumerate() {
            let style = if k == self.selected {
                t.style("cursor")
            } else {
                t.style("text")
            };
            // A space after the count, however many digits (×3650 ran into
            // the signature).
            let count = Span::styled(format!(" ×{:<3} ", g.partitions.len()), t.style("error"));
            indented(&mut lines, count, &g.signature, style);
            let example = format!(
                "{} .. {} · e.g. {}",
                name(g.partitions.first()),
                name(g.partitions.last()),
                g.example
            );
            indented(&mut lines, Span::raw("       "), &example, t.style("muted"));
        }
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!(
                " {} selects the group's partitions (then {} re-runs them) · {} closes",
                keymap::key(Scope::List, Action::Confirm),
                keymap::key(Scope::Main, Action::Run),
                keymap::key(Scope::List, Action::Close)
            ),
            t.style("muted"),
        )));
        let r = centered(area, 100, (lines.len() as u16 + 2).max(8));
        frame.render_widget(Clear, r);
        let b = block(t, " Failures by error signature ", true);
        let inner_r = b.inner(r);
        frame.render_widget(b, r);
        frame.render_widget(Paragraph::new(controls_shown(lines)), inner_r);
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyModifiers};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;

    #[test]
    fn signatures_normalise_numbers_literals_and_identifiers() {
        let a = error_signature("CHECK constraint failed: amount_usd >= 0");
        let b = error_signature("CHECK constraint failed: amount_eur >= 10");
        assert_eq!(a, b);
        assert_eq!(a, "CHECK constraint failed: <id> >= <n>");
        assert_eq!(
            error_signature("duplicate key value \"orders_pkey\" (id)=(4711)"),
            error_signature("duplicate key value \"items_pkey\" (id)=(12)")
        );
        assert_ne!(
            error_signature("NOT NULL constraint failed: t.url"),
            error_signature("CHECK constraint failed: t.url")
        );
        assert_eq!(
            error_signature("job wrote 12 rows outside its partition 2026-06-04"),
            "job wrote <n> row(s) outside its partition <n>"
        );
        // Singular and plural after a number group together.
        assert_eq!(
            error_signature("job wrote 1 row outside its partition 2026-06-04"),
            error_signature("job wrote 2 rows outside its partition 2026-06-05"),
        );
        assert_eq!(
            shown_signature("2 matches in 3 classes"),
            shown_signature("1 match in 1 class")
        );
        assert_eq!(shown_signature("1 is bad"), "<n> is bad");
        // An apostrophe inside a word is no quote (QA: idem's own hint read
        // "idem'…'s or server'…'").
        assert_eq!(
            shown_signature("canceled after 30 s: idem's or the server's statement_timeout"),
            "canceled after <n> s: idem's or the server's statement_timeout"
        );
        assert_eq!(
            shown_signature("invalid input for type date: 'x'"),
            "invalid input for type date: '…'"
        );
    }

    #[test]
    fn a_group_shows_the_identifiers_its_errors_share() {
        assert_eq!(
            shown_signature("CHECK constraint failed: amount_usd >= 0"),
            "CHECK constraint failed: amount_usd >= <n>"
        );
        assert_eq!(
            shown_signature("duplicate key value \"orders_pkey\" (id)=(4711) 'x'"),
            "duplicate key value \"orders_pkey\" (id)=(<n>) '…'"
        );
        let failed = |error: &str| {
            let mut s = crate::tui::fixture::job_view("fct_orders", false, "✗").statuses;
            if let Some(a) = s[0].last_attempt.as_mut() {
                std::sync::Arc::make_mut(a).error = Some(error.into());
            }
            s.remove(0)
        };
        let same = group_failures(&[
            failed("CHECK constraint failed: amount_usd >= 0"),
            failed("CHECK constraint failed: amount_usd >= 10"),
        ]);
        assert_eq!(same.len(), 1);
        assert_eq!(
            same[0].signature,
            "CHECK constraint failed: amount_usd >= <n>"
        );
        let mixed = group_failures(&[
            failed("CHECK constraint failed: amount_usd >= 0"),
            failed("CHECK constraint failed: amount_eur >= 0"),
        ]);
        assert_eq!(mixed.len(), 1, "still one group");
        assert_eq!(mixed[0].signature, "CHECK constraint failed: <id> >= <n>");
    }

    fn press(list: &mut ErrorList, code: KeyCode, groups: usize) -> ErrorListStep {
        list.key(&KeyEvent::new(code, KeyModifiers::NONE), groups)
    }

    #[test]
    fn the_list_moves_within_its_groups_and_chooses_one() {
        let mut list = ErrorList::default();
        assert_eq!(press(&mut list, KeyCode::Char('j'), 2), ErrorListStep::Open);
        assert_eq!(press(&mut list, KeyCode::Char('j'), 2), ErrorListStep::Open);
        assert_eq!(list.selected, 1, "stops at the last group");
        assert_eq!(
            press(&mut list, KeyCode::Enter, 2),
            ErrorListStep::Chosen(1)
        );
        assert_eq!(press(&mut list, KeyCode::Esc, 2), ErrorListStep::Closed);
    }

    /// QA: a long error was cut mid-word at the overlay's edge ("the feed
    /// delivere"), and a count of four digits ran into its signature.
    #[test]
    fn long_errors_wrap_whole_and_a_count_keeps_its_space() {
        let partitions: Vec<Partition> = (1..=28)
            .map(|d| {
                let at = chrono::NaiveDate::from_ymd_opt(2026, 6, d)
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .expect("date");
                Partition::containing(crate::partition::Grain::Day, at)
            })
            .collect();
        let long = "upstream contract violated for partition: the feed delivered rows whose \
                    amount column could not be parsed as a decimal number";
        let groups = vec![ErrorGroup {
            signature: long.into(),
            key: long.into(),
            example: long.into(),
            partitions: (0..1234).map(|i| i % 28).collect(),
        }];
        let screen = crate::tui::fixture::draw(80, 24, |f| {
            ErrorList::default().render(f, f.area(), &Theme::default_theme(), &groups, &partitions)
        });
        // The box's text, its rows read on from each other.
        let text: Vec<&str> = screen
            .lines()
            .filter_map(|l| {
                let inside = l.split('┃').nth(1)?;
                Some(inside.trim())
            })
            .filter(|l| !l.is_empty())
            .collect();
        let read = text.join(" ");
        assert!(read.contains(&format!("×1234 {long}")), "{screen}");
        assert!(read.contains(&format!("e.g. {long}")), "{screen}");
        assert!(read.contains("Esc closes"), "{screen}");
    }

    #[test]
    fn the_overlay_names_each_group_and_its_range() {
        let day = |d: u32| {
            Partition::containing(
                crate::partition::Grain::Day,
                chrono::NaiveDate::from_ymd_opt(2026, 6, d)
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .expect("date"),
            )
        };
        let partitions = vec![day(1), day(2), day(3)];
        let groups = vec![ErrorGroup {
            signature: "CHECK constraint failed: <id>".into(),
            key: "CHECK constraint failed: <id>".into(),
            example: "CHECK constraint failed: amount".into(),
            partitions: vec![0, 2],
        }];
        let mut t = Terminal::new(TestBackend::new(80, 12)).expect("terminal");
        t.draw(|f| {
            ErrorList::default().render(f, f.area(), &Theme::default_theme(), &groups, &partitions)
        })
        .expect("draw");
        let screen: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(screen.contains("×2"), "{screen}");
        assert!(screen.contains("2026-06-01 .. 2026-06-03"), "{screen}");
    }
}
