//! The run dialog and the config file as saved: the file is read again
//! when the dialog opens and when it is confirmed, so that Enter runs what
//! its "same as" command would; a dialog planned again on a changed file,
//! or one whose run waits on the file, says so in it.

use ratatui::text::{Line, Span};

use super::{ConfirmDialog, SourceCount};
use crate::partition::Partition;
use crate::tui::job::JobView;
use crate::tui::theme::Theme;

/// Where the dialog stands with the config file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Reread {
    #[default]
    Planned,
    /// Confirmed: the run starts once the file, read again (by the read
    /// of this id, or a newer one), is found to plan what the dialog shows.
    Confirming(usize),
    /// What the operator is to know before Enter (the plan changed with
    /// the file, or nothing ran).
    Note(String),
}

impl ConfirmDialog {
    /// Enter pressed: the run waits on the config file's read `read`.
    pub fn confirming(&mut self, read: usize) {
        self.reread = Reread::Confirming(read);
    }

    /// Confirmed: the id of the config file's read the run waits on.
    pub fn awaited_read(&self) -> Option<usize> {
        match self.reread {
            Reread::Confirming(read) => Some(read),
            _ => None,
        }
    }

    /// A key other than Enter: a run asked for waits no longer.
    pub fn unconfirm(&mut self) {
        if self.awaited_read().is_some() {
            self.reread = Reread::Planned;
        }
    }

    /// Says `note` in the dialog (and takes back a confirm).
    pub fn note(&mut self, note: String) {
        self.reread = Reread::Note(note);
    }

    pub fn reread_note(&self) -> Option<&str> {
        match &self.reread {
            Reread::Note(note) => Some(note),
            _ => None,
        }
    }

    /// The partitions chosen, by name: they outlast a change of the job's
    /// definition, which renumbers its partitions.
    pub fn chosen(&self, job: &JobView) -> Vec<Partition> {
        self.candidates
            .iter()
            .filter_map(|i| job.partitions.get(*i).copied())
            .collect()
    }

    /// Moves the dialog onto the job's new definition, now at `index`:
    /// of `chosen`, those it still has. False when it has none of them.
    /// What was counted or read of the old definition is dropped; the
    /// caller plans it again.
    pub fn moved_to(&mut self, index: usize, job: &JobView, chosen: &[Partition]) -> bool {
        let candidates: Vec<usize> = chosen.iter().filter_map(|p| job.index_of(*p)).collect();
        if candidates.is_empty() {
            return false;
        }
        self.job = index;
        self.candidates = candidates;
        self.source = SourceCount::NotAsked;
        self.cover = Default::default();
        true
    }

    pub(super) fn reread_line(
        &self,
        t: &Theme,
        label: impl Fn(&str) -> Span<'static>,
    ) -> Option<Line<'static>> {
        let (words, style) = match &self.reread {
            Reread::Planned => return None,
            Reread::Confirming(_) => ("reading the config file before the run…".into(), "muted"),
            Reread::Note(note) => (note.clone(), "warning"),
        };
        Some(Line::from(vec![
            label("config"),
            Span::styled(words, t.style(style)),
        ]))
    }
}
