//! The confirm dialog's word on a PostgreSQL target's native partitions:
//! which of the run's windows none covers (the run would fail them) and
//! what to create, as `idem run --dry-run` says it: of the run's own job,
//! and of each downstream job a cascade loads after it.

use ratatui::text::{Line, Span};

use crate::engine::Backfill;
use crate::partition::Partition;
use crate::tui::msg::CoverRequest;
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
    /// Per downstream job of a cascade, what was asked of it and read.
    steps: Vec<StepCover>,
}

/// The windows of one downstream job's step that none covers.
#[derive(Debug, Default)]
struct StepCover {
    job: String,
    /// Every window asked about, so that a step planned again over the
    /// same windows reads nothing again.
    asked: Vec<Partition>,
    reading: Option<usize>,
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
        } else if let Some(step) = self.steps.iter_mut().find(|s| s.reading == Some(id)) {
            step.reading = None;
            step.windows = windows;
        }
    }

    /// The reads a cascade's `steps` need: of each step's job whose
    /// target can leave a window no table (PostgreSQL, a partition
    /// column), the windows not asked about yet, with those asked before
    /// (the answer replaces what was read). `next` numbers the requests.
    pub fn ask_steps(&mut self, steps: &[Backfill], next: &mut usize) -> Vec<CoverRequest> {
        let mut asks = Vec::new();
        for step in steps {
            let job = &step.job;
            if job.engine != crate::config::Engine::Postgres || job.partition_column.is_none() {
                continue;
            }
            let at = match self.steps.iter().position(|s| s.job == job.name) {
                Some(at) => at,
                None => {
                    self.steps.push(StepCover {
                        job: job.name.clone(),
                        ..StepCover::default()
                    });
                    self.steps.len() - 1
                }
            };
            let cover = &mut self.steps[at];
            let new: Vec<Partition> = step
                .partitions
                .iter()
                .filter(|p| !cover.asked.contains(p))
                .copied()
                .collect();
            if new.is_empty() {
                continue;
            }
            cover.asked.extend(new);
            cover.asked.sort();
            cover.reading = Some(*next);
            asks.push(CoverRequest {
                id: *next,
                job: job.clone(),
                partitions: cover.asked.clone(),
            });
            *next += 1;
        }
        asks
    }

    /// The dialog's lines on the windows of a cascade's `steps` that none
    /// covers, each step's after its job's name.
    pub fn steps_lines<'a>(
        &self,
        steps: &[Backfill],
        t: &Theme,
        label: impl Fn(&str) -> Span<'a>,
    ) -> Vec<Line<'a>> {
        let mut lines = Vec::new();
        for step in steps {
            let Some(cover) = self.steps.iter().find(|s| s.job == step.job.name) else {
                continue;
            };
            let windows: Vec<UncoveredWindow> = cover
                .windows
                .iter()
                .filter(|w| step.partitions.contains(&w.partition))
                .cloned()
                .collect();
            let warning = UncoveredWindow::warning(&step.job.target, &windows, NAMED);
            for (i, text) in warning
                .into_iter()
                .enumerate()
                .filter(|_| !windows.is_empty())
            {
                let text = match i {
                    0 => format!("then {}: {text}", step.job.name),
                    _ => text,
                };
                lines.push(Line::from(vec![
                    label(if i == 0 { "fails" } else { "" }),
                    Span::styled(text, t.style("error")),
                ]));
            }
        }
        lines
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
