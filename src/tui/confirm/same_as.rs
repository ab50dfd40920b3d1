//! The `idem run` a confirm dialog is the same as: what its "same as"
//! shows and copies, and how a run's report repeats it.

use super::ConfirmDialog;
use crate::cli::RunArgs;
use crate::partition::Partition;
use crate::state::LoadState;
use crate::tui::job::JobView;

impl ConfirmDialog {
    /// The `idem run` that does what the dialog will, and a note when the
    /// command takes more than the choice. It says `--yes` where a script
    /// would need it for `loads` partitions: the dialog is the confirm.
    /// None when nothing would run: no command does that (one without a
    /// range would run the job's whole history).
    pub(super) fn command_line(
        &self,
        job: &JobView,
        chosen: &[usize],
        risk: bool,
        loads: usize,
    ) -> Option<(RunArgs, Vec<String>)> {
        let (Some(first), Some(last)) = (chosen.first(), chosen.last()) else {
            return None;
        };
        let span: Vec<usize> = (*first..=*last).collect();
        // A choice with gaps is described by the states it takes.
        let only: Vec<LoadState> = if !self.only.is_empty() {
            self.only.clone()
        } else if span != chosen {
            let mut states: Vec<LoadState> =
                chosen.iter().filter_map(|i| job.state_at(*i)).collect();
            states.sort();
            states.dedup();
            states
        } else {
            Vec::new()
        };
        let names: Vec<&str> = only.iter().map(|s| s.name()).collect();
        let args = RunArgs {
            // The range as chosen and filtered, whatever `:run` typed.
            range: None,
            from: job.partitions.get(*first).map(Partition::name),
            to: job.partitions.get(*last).map(Partition::name),
            only: names.iter().map(|s| s.to_string()).collect(),
            through_latest: self.through_latest && risk,
            reason: self.reason_text(),
            yes: self.args.yes || loads > crate::cli::CONFIRM_ABOVE,
            ..self.args.clone()
        };
        let mut pieces = args.command_pieces();
        let covered = span
            .iter()
            .filter(|i| job.state_at(**i).is_some_and(|s| only.contains(&s)))
            .count();
        if !only.is_empty() && covered > chosen.len() {
            pieces.push(format!(
                "  # also takes {} more {} in between",
                covered - chosen.len(),
                names.join("/")
            ));
        }
        Some((args, pieces))
    }
}
