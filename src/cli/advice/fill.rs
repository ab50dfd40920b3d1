//! The command that loads what a cascade's step read but found not loaded
//! upstream: each upstream job's partitions under the step's windows that
//! are missing, failed or vanished, run as a cascade, so that the windows
//! reading them load again once they have.

use super::AsRun;
use super::repeat::repeat_line;
use crate::engine::cascade::{PartlyRead, partly_read_line};
use crate::partition::Partition;
use crate::state::LoadState;

/// `job`'s line for its windows that read upstream partitions not loaded
/// ([`partly_read_line`]), with the command that loads those partitions
/// and, cascading, the windows again: none when there are none.
pub(in crate::cli) fn partly_read_note(
    run: &AsRun<'_>,
    job: &str,
    partly: &[PartlyRead],
) -> Option<String> {
    let line = partly_read_line(job, partly)?;
    Some(match fill_command(run, partly) {
        Some(command) => format!("{line}; to load the rest, and this again: {command}"),
        None => line,
    })
}

/// Per upstream job (in the order first read), `idem run UPSTREAM --only
/// STATES --from FIRST --to LAST --cascade` over its partitions `partly`
/// names, by their states; several joined with ` ; `. One running
/// elsewhere is left to that run: none where all are.
fn fill_command(run: &AsRun<'_>, partly: &[PartlyRead]) -> Option<String> {
    let mut upstream: Vec<&str> = Vec::new();
    for p in partly {
        if !upstream.contains(&p.upstream.as_str()) {
            upstream.push(&p.upstream);
        }
    }
    let commands: Vec<String> = upstream
        .into_iter()
        .filter_map(|job| {
            let not_loaded = partly
                .iter()
                .filter(|p| p.upstream == job)
                .flat_map(|p| &p.not_loaded)
                .filter(|(_, state)| *state != LoadState::Running);
            let mut partitions: Vec<Partition> = not_loaded.clone().map(|(p, _)| *p).collect();
            partitions.sort();
            partitions.dedup();
            let only: Vec<String> = LoadState::ALL
                .iter()
                .filter(|state| not_loaded.clone().any(|(_, s)| s == *state))
                .map(|state| state.name().to_string())
                .collect();
            let fill = AsRun {
                config: run.config,
                only: &only,
                allow_incomplete: run.allow_incomplete,
                cascade: true,
            };
            repeat_line(&fill, job, &partitions, &[], false)
        })
        .collect();
    (!commands.is_empty()).then(|| commands.join(" ; "))
}
