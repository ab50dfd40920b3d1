//! Yes/no questions before what cannot be undone: cancelling a run, quitting
//! while runs are in flight.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::keymap;
use super::keys::{Action, Scope};
use super::theme::Theme;
use super::widgets::{block, centered};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Question {
    /// Cancel the run with this number?
    CancelRun(usize),
    Quit,
}

impl Question {
    /// Draws the question; `active_runs` counts runs in flight, `job` names
    /// the job of the run to cancel.
    pub fn render(&self, frame: &mut Frame, area: Rect, t: &Theme, active_runs: usize, job: &str) {
        let text = match self {
            Question::Quit => format!(
                "{active_runs} run(s) in flight, starting no new partition while you answer. Quit and cancel them? In-flight partitions roll back."
            ),
            Question::CancelRun(id) => format!(
                "Cancel run #{id} of {job}? No new partition starts while you answer; on yes, in-flight ones roll back."
            ),
        };
        let r = centered(area, 64, 6);
        frame.render_widget(Clear, r);
        let b = block(t, " Are you sure? ", true);
        let inner_r = b.inner(r);
        frame.render_widget(b, r);
        frame.render_widget(
            Paragraph::new(vec![
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
            ])
            .wrap(Wrap { trim: true }),
            inner_r,
        );
    }
}
