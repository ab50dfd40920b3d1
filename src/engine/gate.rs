//! Holding a run's next partitions back while the operator is asked
//! whether to stop it.

/// Holds a run's next partitions back while it is shut (the console shuts
/// it while it asks whether to cancel the run): no attempt starts, those
/// in flight go on. Open unless shut.
#[derive(Clone, Debug)]
pub struct Gate(std::sync::Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Gate {
    fn default() -> Gate {
        Gate(std::sync::Arc::new(tokio::sync::watch::channel(true).0))
    }
}

impl Gate {
    pub fn shut(&self) {
        self.0.send_replace(false);
    }

    pub fn open(&self) {
        self.0.send_replace(true);
    }

    pub fn is_shut(&self) -> bool {
        !*self.0.borrow()
    }

    /// Returns once the gate is open.
    pub(super) async fn passed(&self) {
        let mut open = self.0.subscribe();
        // The sender lives as long as `self`: this cannot fail.
        let _ = open.wait_for(|open| *open).await;
    }
}
