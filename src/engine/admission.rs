//! How many of a run's partitions are in flight at once: as many as asked,
//! until the warehouse refuses a connection for a limit on connections
//! (a role's CONNECTION LIMIT, max_user_connections, a pooler's); then as
//! many as had theirs when it did, for the rest of the run.

use std::sync::Mutex;

use tokio::sync::Notify;

/// Partitions in flight, and how many may be.
pub(super) struct Admission {
    state: Mutex<State>,
    freed: Notify,
    /// Why the run stopped: the warehouse refused every connection for
    /// longer than `connect_timeout` while no partition of it had one.
    refused_every: Mutex<Option<String>>,
}

struct State {
    limit: usize,
    in_flight: usize,
    /// The limit was lowered, and no partition has started under it yet:
    /// the words of the refusal that lowered it.
    unsaid: Option<String>,
}

/// A partition's place among those in flight, given back when dropped.
pub(super) struct Slot<'a>(&'a Admission);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.0.state.lock() {
            state.in_flight = state.in_flight.saturating_sub(1);
        }
        self.0.freed.notify_waiters();
    }
}

impl Admission {
    pub(super) fn new(limit: usize) -> Admission {
        Admission {
            state: Mutex::new(State {
                limit: limit.max(1),
                in_flight: 0,
                unsaid: None,
            }),
            freed: Notify::new(),
            refused_every: Mutex::new(None),
        }
    }

    /// A place among the partitions in flight, once there is one; and,
    /// the first time one is had since the limit was lowered, the limit
    /// and the refusal that lowered it (said once, after a burst of
    /// refusals has settled it).
    pub(super) async fn enter(&self) -> (Slot<'_>, Option<(usize, String)>) {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if let Ok(mut state) = self.state.lock()
                && state.in_flight < state.limit
            {
                state.in_flight += 1;
                let lowered = state.unsaid.take().map(|why| (state.limit, why));
                return (Slot(self), lowered);
            }
            freed.await;
        }
    }

    /// The warehouse refused `slot`'s partition a connection: the limit
    /// becomes the partitions in flight besides it, which it gives back
    /// its place to. False when there are none: no partition of the run
    /// has a connection.
    pub(super) fn refused(&self, slot: Slot<'_>, why: &str) -> bool {
        let others = match self.state.lock() {
            Ok(mut state) => {
                let others = state.in_flight.saturating_sub(1);
                if others > 0 && others < state.limit {
                    state.limit = others;
                    state.unsaid = Some(why.to_string());
                }
                others
            }
            Err(_) => 0,
        };
        drop(slot);
        others > 0
    }
}

impl Admission {
    /// The run stops: the warehouse refused every connection (`why`).
    pub(super) fn refused_every_connection(&self, why: &str) {
        if let Ok(mut first) = self.refused_every.lock() {
            first.get_or_insert_with(|| why.to_string());
        }
    }

    pub(super) fn refused_every(&self) -> Option<String> {
        self.refused_every.lock().ok().and_then(|mut w| w.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refusal_lowers_the_limit_to_the_others_in_flight_and_says_so_once() {
        let admission = Admission::new(4);
        let mut slots = Vec::new();
        for _ in 0..4 {
            let (slot, lowered) = admission.enter().await;
            assert!(lowered.is_none());
            slots.push(slot);
        }
        // Two are refused: the limit follows the others still in flight.
        let refused = slots.pop().expect("a slot");
        assert!(admission.refused(refused, "too many connections"));
        let refused = slots.pop().expect("a slot");
        assert!(admission.refused(refused, "too many connections"));
        // At the limit: the next waits until one ends.
        let waiting = admission.enter();
        tokio::pin!(waiting);
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        drop(slots.pop());
        let (slot, lowered) = waiting.await;
        assert_eq!(lowered, Some((2, "too many connections".to_string())));
        drop(slot);
        let (slot, lowered) = admission.enter().await;
        assert_eq!(lowered, None, "said once");
        // One alone refused: no partition of the run has a connection.
        drop(slots);
        assert!(!admission.refused(slot, "too many connections"));
    }
}
