//! The command that loads what a cascade's step read but found not loaded
//! upstream: each upstream job's partitions under the step's windows that
//! are missing, failed or vanished, run as a cascade, so that the windows
//! reading them load again once they have.

use super::AsRun;
use super::repeat::repeat_line;
use crate::engine::cascade::{PartlyRead, fill, further_line, partly_read_line};
use crate::partition::Partition;
use crate::state::LoadState;

/// `job`'s line for its windows that read upstream partitions not loaded
/// ([`partly_read_line`]), with the command that loads those partitions
/// and, cascading, the windows again: from the highest job that lacks
/// rows, said so where that is further up ([`further_line`]). None when
/// there are none.
pub(in crate::cli) fn partly_read_note(
    run: &AsRun<'_>,
    job: &str,
    partly: &[PartlyRead],
) -> Option<String> {
    let line = partly_read_line(job, partly)?;
    Some(match (fill_command(run, partly), further_line(partly)) {
        (Some(command), None) => format!("{line}; to load the rest, and this again: {command}"),
        (Some(command), Some(further)) => {
            format!("{line}; {further}: to load those, the rest, and this again: {command}")
        }
        (None, _) => line,
    })
}

/// Per job [`fill`] names (the highest first), `idem run JOB --only STATES
/// --from FIRST --to LAST --cascade` over its partitions, by their states;
/// several joined with ` ; `. None where all are running elsewhere.
fn fill_command(run: &AsRun<'_>, partly: &[PartlyRead]) -> Option<String> {
    let commands: Vec<String> = fill(partly)
        .into_iter()
        .filter_map(|(job, not_loaded)| {
            let partitions: Vec<Partition> = not_loaded.iter().map(|(p, _)| *p).collect();
            let only: Vec<String> = LoadState::ALL
                .iter()
                .filter(|state| not_loaded.iter().any(|(_, s)| s == *state))
                .map(|state| state.name().to_string())
                .collect();
            let fill = AsRun {
                config: run.config,
                only: &only,
                allow_incomplete: run.allow_incomplete,
                cascade: true,
            };
            repeat_line(&fill, &job, &partitions, &[], false)
        })
        .collect();
    (!commands.is_empty()).then(|| commands.join(" ; "))
}
