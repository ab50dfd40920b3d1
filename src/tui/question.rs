//! Yes/no questions before what cannot be undone: cancelling a run, quitting
//! while runs are in flight.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::keymap;
use super::keys::{Action, Scope};
use super::theme::Theme;
use super::widgets::{block, centered, controls_shown};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Question {
    /// Cancel the run with this number?
    CancelRun(usize),
    Quit,
}

impl Question {
    /// The question in words. The runs may all end while it is asked:
    /// quitting then cancels nothing, and it says so.
    pub fn text(&self, active_runs: usize, job: &str) -> String {
        match (self, active_runs) {
            (Question::Quit, 0) => "No run is in flight any more. Quit?".to_string(),
            (Question::Quit, 1) => "1 run in flight, starting no new partition while you answer. Quit and cancel it? Its in-flight partitions roll back, and idem says what it left and the command that finishes it.".to_string(),
            (Question::Quit, n) => format!(
                "{n} runs in flight, starting no new partition while you answer. Quit and cancel them? Their in-flight partitions roll back, and idem says what each left and the command that finishes it."
            ),
            (Question::CancelRun(id), _) => format!(
                "Cancel run #{id} of {job}? No new partition starts while you answer; on yes, in-flight ones roll back."
            ),
        }
    }

    /// Draws the question; `active_runs` counts runs in flight, `job` names
    /// the job of the run to cancel.
    pub fn render(&self, frame: &mut Frame, area: Rect, t: &Theme, active_runs: usize, job: &str) {
        let text = self.text(active_runs, job);
        let paragraph = Paragraph::new(controls_shown(vec![
            Line::from(Span::styled(text, t.style("text"))),
            Line::from(""),
            Line::from(vec![
                Span::styled(
                    keymap::key(Scope::Question, Action::Yes),
                    t.style("highlight"),
                ),
                Span::styled(" yes   ", t.style("muted")),
                Span::styled(
                    keymap::key(Scope::Question, Action::No),
                    t.style("highlight"),
                ),
                Span::styled(" no", t.style("muted")),
            ]),
        ]))
        .wrap(Wrap { trim: true });
        // As tall as the question wraps to, so that its keys always show (a
        // fixed height cut the quit question's y/n line).
        let width = centered(area, 64, 0).width;
        let lines = paragraph.line_count(width.saturating_sub(2)) as u16;
        let r = centered(area, 64, lines.saturating_add(2));
        frame.render_widget(Clear, r);
        let b = block(t, " Are you sure? ", true);
        let inner_r = b.inner(r);
        frame.render_widget(b, r);
        frame.render_widget(paragraph, inner_r);
    }
}

#[cfg(test)]
mod tests {
    use super::Question;
    use crate::tui::fixture::draw;
    use crate::tui::theme::Theme;

    /// QA: the quit question wraps to three lines or four in its box of a
    /// fixed four, so its y/n line never showed: the box now fits the text.
    #[test]
    fn every_question_shows_its_keys_inside_its_box() {
        let t = Theme::default_theme();
        for (w, h) in [(60, 15), (80, 24), (200, 60)] {
            for (q, runs) in [
                (Question::Quit, 1),
                (Question::Quit, 3),
                (Question::CancelRun(2), 1),
            ] {
                let screen = draw(w, h, |f| q.render(f, f.area(), &t, runs, "fct_orders"));
                assert!(
                    screen.lines().any(|l| l.contains("┃y yes   n no")),
                    "{q:?} with {runs} runs at {w}x{h}:\n{screen}"
                );
                let text = q.text(runs, "fct_orders");
                let last_word = text.split(' ').next_back().unwrap_or_default();
                assert!(screen.contains(last_word), "{screen}");
            }
        }
    }

    #[test]
    fn the_quit_question_counts_its_runs_in_words() {
        let quit = |n| Question::Quit.text(n, "");
        assert_eq!(quit(0), "No run is in flight any more. Quit?");
        assert!(quit(1).starts_with("1 run in flight,"), "{}", quit(1));
        assert!(quit(1).contains("Quit and cancel it?"), "{}", quit(1));
        assert!(quit(3).starts_with("3 runs in flight,"), "{}", quit(3));
        assert!(quit(3).contains("Quit and cancel them?"), "{}", quit(3));
        for n in 0..3 {
            assert!(!quit(n).contains("(s)"), "{}", quit(n));
        }
    }
}
