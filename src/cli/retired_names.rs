//! The notes `idem status`, `idem jobs` and `idem log` give of ledger
//! history a job's partitions do not count: its target's loads under job
//! names the config no longer has (a renamed job's partitions show as
//! unmanaged, its loads kept under the old name), and its name's loads
//! into another table than its target now.

use super::output::noteln;
use crate::config::{Config, Job};
use crate::warehouse::Warehouse;

/// Both notes of history `shown`'s partitions do not count:
/// [`note_renamed`] and [`note_loads_elsewhere`].
/// A warehouse that stops answering meanwhile is said so, and the notes
/// left out.
pub(super) async fn note_uncounted(warehouse: &Warehouse, config: &Config, shown: &[&Job]) {
    let notes = warehouse.answering(async {
        note_renamed(warehouse, config, shown).await;
        note_loads_elsewhere(warehouse, config, shown).await;
        Ok(())
    });
    if let Err(e) = notes.await {
        noteln!("idem: {e}");
    }
}

/// Says once, on stderr, for each of `shown` whose name the ledger holds
/// loads of into another table than its target now (its `target` changed,
/// or a job of another table had its name), how many, and that its
/// partitions do not count them ([`Warehouse::loads_elsewhere`]). A ledger
/// that cannot be read for it says nothing: the states read says why.
pub(super) async fn note_loads_elsewhere(warehouse: &Warehouse, config: &Config, shown: &[&Job]) {
    let Ok(elsewhere) = warehouse.loads_elsewhere(shown).await else {
        return;
    };
    for e in elsewhere {
        noteln!("idem: {}", e.note(&config.path.display().to_string()));
    }
}

/// Says once, on stderr, for each of `shown` that has no loads of its own,
/// the names the ledger holds loads of its target under that the config no
/// longer has ([`Warehouse::renamed_jobs`]). A ledger that cannot be read
/// for it says nothing: the states read says why.
pub(super) async fn note_renamed(warehouse: &Warehouse, config: &Config, shown: &[&Job]) {
    let Ok(renamed) = warehouse.renamed_jobs(config, shown).await else {
        return;
    };
    for r in renamed {
        let quoted: Vec<String> = r.before.iter().map(|n| format!("\"{n}\"")).collect();
        let last = &r.before[0];
        let (names, back) = match quoted.as_slice() {
            [one] => (format!("the job name {one}"), "them".to_string()),
            _ => (
                format!("the job names {} (loaded last first)", quoted.join(", ")),
                "that name's loads".to_string(),
            ),
        };
        noteln!(
            "idem: the ledger holds loads of {} under {names}, which {} no longer has: {}'s partitions do not count them (a renamed job starts without its history); name the job \"{last}\" again to take {back} back, or read them with idem log {last}",
            r.target,
            config.path.display(),
            r.job,
        );
    }
}
