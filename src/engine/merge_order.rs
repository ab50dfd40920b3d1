//! A merge run's order risk: windows loaded after the ones it plans, whose
//! keys an older window merged alone would roll back to older values.

use crate::partition::Partition;

/// Loaded merge windows after the last planned one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOrderRisk {
    pub last_planned: Partition,
    /// Every window after the plan whose latest load merged rows, oldest
    /// first.
    pub later_loaded: Vec<Partition>,
}

impl MergeOrderRisk {
    pub fn latest(&self) -> Partition {
        self.later_loaded
            .last()
            .copied()
            .unwrap_or(self.last_planned)
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
