//! How many of a run's partitions are in flight at once: as many as asked,
//! until the warehouse refuses a connection for a limit on connections
//! (a role's CONNECTION LIMIT, max_user_connections, a pooler's); then as
//! many as had theirs when it did. A refusal seen when loads were ending
//! fast can set it below what the warehouse grants, and other sessions of
//! the role may end: after a round of loads at the lowered limit, one more
//! is let in, and a refusal of it lowers the limit again, the next try
//! twice as many loads later. A refusal costs no attempt, only a wait.

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
    /// What the run asked for: the limit never rises above it.
    asked: usize,
    in_flight: usize,
    /// The limit was lowered below any said before, and no partition has
    /// started under it yet: the words of the refusal that lowered it.
    unsaid: Option<String>,
    /// The lowest limit said: a try of one more that is refused lowers it
    /// back without a word.
    said: usize,
    /// Loads that succeeded since the limit last changed, and the rounds
    /// of `limit` loads each that let it rise by one.
    succeeded: usize,
    rounds: usize,
}

impl State {
    /// Loads at the limit before it rises by one.
    fn rise_after(&self) -> usize {
        (self.rounds * self.limit).min(MOST_LOADS_BEFORE_A_TRY)
    }
}

/// The most loads between tries of one more partition in flight.
const MOST_LOADS_BEFORE_A_TRY: usize = 256;

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
                asked: limit.max(1),
                in_flight: 0,
                unsaid: None,
                said: limit.max(1),
                succeeded: 0,
                rounds: 0,
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
                if lowered.is_some() {
                    state.said = state.limit;
                }
                return (Slot(self), lowered);
            }
            freed.await;
        }
    }

    /// The server grants the role connections for `partitions` in flight
    /// (`why`): the limit goes no higher, said as the first partition
    /// starts where it is below what was asked.
    pub(super) fn grant(&self, partitions: usize, why: &str) {
        if let Ok(mut state) = self.state.lock()
            && partitions < state.asked
        {
            state.asked = partitions;
            state.limit = state.limit.min(partitions);
            state.said = state.limit;
            state.unsaid = Some(why.to_string());
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
                    state.succeeded = 0;
                    // One round at the new limit, then twice the rounds
                    // after each refusal.
                    state.rounds = (state.rounds * 2).max(1);
                    if others < state.said {
                        state.unsaid = Some(why.to_string());
                    }
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
    /// A load of the run succeeded: after enough of them at a lowered
    /// limit, one more partition is let in (see the module's doc).
    pub(super) fn succeeded(&self) {
        let rose = match self.state.lock() {
            Ok(mut state) if state.limit < state.asked => {
                state.succeeded += 1;
                if state.succeeded >= state.rise_after() {
                    state.limit += 1;
                    state.succeeded = 0;
                    true
                } else {
                    false
                }
            }
            _ => false,
        };
        if rose {
            self.freed.notify_waiters();
        }
    }

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

/// What a run asking `asked` partitions at once runs on a warehouse that
/// grants `granted` of them (its role's limit on connections, read at
/// connect: `Warehouse::partitions_granted`), and, where that is fewer,
/// the words for why, as a plan says it before the run: the run lowers
/// itself so at its start.
pub fn within_grant(asked: usize, granted: Option<(usize, &str)>) -> (usize, Option<String>) {
    match granted {
        Some((partitions, why)) if partitions < asked => {
            (partitions, Some(format!("of {asked} asked: {why}")))
        }
        _ => (asked, None),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_plan_says_the_partitions_the_warehouse_grants() {
        assert_eq!(within_grant(8, None), (8, None));
        assert_eq!(
            within_grant(2, Some((3, "role \"lim\"'s CONNECTION LIMIT 4"))),
            (2, None)
        );
        let (at_once, why) = within_grant(8, Some((3, "role \"lim\"'s CONNECTION LIMIT 4")));
        assert_eq!(at_once, 3);
        assert_eq!(
            why.as_deref(),
            Some("of 8 asked: role \"lim\"'s CONNECTION LIMIT 4")
        );
    }

    use super::*;

    /// A limit lowered by a refusal seen while loads ended fast rises again
    /// by one after a round of loads at it, up to what was asked; a
    /// refusal of the one more lowers it back without a second note, and
    /// the next try waits twice as many loads.
    #[tokio::test]
    async fn a_lowered_limit_tries_one_more_after_a_round_of_loads() {
        let admission = Admission::new(4);
        let (a, _) = admission.enter().await;
        let (b, _) = admission.enter().await;
        assert!(admission.refused(b, "too many connections"));
        let limit = |a: &Admission| a.state.lock().map(|s| s.limit).unwrap_or(0);
        assert_eq!(limit(&admission), 1, "one other in flight when refused");
        admission.succeeded();
        assert_eq!(limit(&admission), 2, "a round of one load at 1");
        drop(a);
        let (a, lowered) = admission.enter().await;
        // Said as it stands when the next partition starts.
        assert_eq!(lowered, Some((2, "too many connections".to_string())));
        let (b, lowered) = admission.enter().await;
        assert_eq!(lowered, None);
        let (c, _) = {
            let waiting = admission.enter();
            tokio::pin!(waiting);
            assert!(futures::poll!(waiting.as_mut()).is_pending(), "2 at once");
            admission.succeeded();
            assert!(
                futures::poll!(waiting.as_mut()).is_pending(),
                "a round is 2"
            );
            admission.succeeded();
            waiting.await
        };
        assert_eq!(limit(&admission), 3);
        // The third is refused: back to 2, not said again (2 was said).
        assert!(admission.refused(c, "too many connections"));
        assert_eq!(limit(&admission), 2);
        // Twice the rounds before the next try: 2 rounds of 2.
        for _ in 0..3 {
            admission.succeeded();
        }
        assert_eq!(limit(&admission), 2);
        admission.succeeded();
        assert_eq!(limit(&admission), 3);
        drop((a, b));
        for _ in 0..100 {
            admission.succeeded();
        }
        assert_eq!(limit(&admission), 4, "never above what was asked");
        let (_slot, lowered) = admission.enter().await;
        assert_eq!(lowered, None, "a lowering said once");
    }

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
