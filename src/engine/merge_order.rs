//! A merge run's order risk: loaded windows after the first it plans that
//! it leaves out, whose keys an older window merged alone would roll back
//! to older values.

use crate::partition::Partition;

/// Loaded merge windows after the first planned one that the plan leaves
/// out (after its last, or in its gaps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOrderRisk {
    pub last_planned: Partition,
    /// Every window after the plan's first that the plan leaves out and
    /// whose latest load merged rows, oldest first.
    pub later_loaded: Vec<Partition>,
}

impl MergeOrderRisk {
    /// The window a run that merges every window in order from its first
    /// goes through: the later of the plan's last and the latest loaded.
    pub fn latest(&self) -> Partition {
        self.later_loaded
            .last()
            .map_or(self.last_planned, |&p| p.max(self.last_planned))
    }

    pub fn warning(&self) -> String {
        format!(
            "{} later window{} ({}…{}) {} already loaded: merging older windows alone can roll their rows back to older values; extend the run through {}",
            self.later_loaded.len(),
            if self.later_loaded.len() == 1 {
                ""
            } else {
                "s"
            },
            self.later_loaded
                .first()
                .map(Partition::name)
                .unwrap_or_default(),
            self.latest().name(),
            if self.later_loaded.len() == 1 {
                "is"
            } else {
                "are"
            },
            self.latest().name()
        )
    }
}
