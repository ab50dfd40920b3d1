//! The confirm dialog's word on a PostgreSQL target's native partitions:
//! which of the run's windows none covers (the run would fail them) and
//! what to create, as `idem run --dry-run` says it.

use ratatui::text::{Line, Span};

use crate::partition::Partition;
use crate::tui::theme::Theme;
use crate::warehouse::UncoveredWindow;

/// At most this many windows are named with the partition to create.
const NAMED: usize = 3;

/// What the dialog knows of the windows no native partition covers.
#[derive(Debug, Default)]
pub struct Cover {
    /// The background request that reads them, while it is the latest.
    reading: Option<usize>,
    /// The windows read (of every candidate and every later window).
    windows: Vec<UncoveredWindow>,
}

impl Cover {
    pub fn reading(&mut self, id: usize) {
        self.reading = Some(id);
    }

    /// The request `id` answered: taken if it is the one asked last.
    pub fn answered(&mut self, id: usize, windows: Vec<UncoveredWindow>) {
        if self.reading.take_if(|r| *r == id).is_some() {
            self.windows = windows;
        }
    }

    /// The dialog's lines on the windows of `planned` that none covers.
    pub fn lines<'a>(
        &self,
        planned: &[Partition],
        target: &crate::config::TableName,
        t: &Theme,
        label: impl Fn(&str) -> Span<'a>,
    ) -> Vec<Line<'a>> {
        let windows: Vec<UncoveredWindow> = self
            .windows
            .iter()
            .filter(|w| planned.contains(&w.partition))
            .cloned()
            .collect();
        if windows.is_empty() {
            return Vec::new();
        }
        UncoveredWindow::warning(target, &windows, NAMED)
            .into_iter()
            .enumerate()
            .map(|(i, text)| {
                Line::from(vec![
                    label(if i == 0 { "fails" } else { "" }),
                    Span::styled(text, t.style("error")),
                ])
            })
            .collect()
    }
}
