//! The clock idem measures partitions and stamps its ledger by: the
//! warehouse server's. Each host that runs idem (a laptop, a cron host)
//! keeps its own time; the warehouse is the one clock they all share.

use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Duration, Utc};

/// How far the warehouse's clock is ahead of this host's, in milliseconds,
/// as last measured on connecting to it (0 until then, and for SQLite,
/// whose file is read by this host's clock).
static WAREHOUSE_AHEAD_MS: AtomicI64 = AtomicI64::new(0);

/// The current instant on the warehouse's clock: this host's, moved by the
/// offset last measured. Whether a window is complete ("future" or not) and
/// every ledger stamp is read off it, so that idem on a host whose clock is
/// minutes off neither loads a window the warehouse is still filling as
/// final nor stamps loads out of order with those of other hosts (which
/// would mark a partition stale (upstream) wrongly, or miss it).
pub fn now() -> DateTime<Utc> {
    Utc::now() + warehouse_ahead()
}

/// How far the warehouse's clock is ahead of this host's (negative when it
/// is behind), as last measured.
pub fn warehouse_ahead() -> Duration {
    Duration::milliseconds(WAREHOUSE_AHEAD_MS.load(Ordering::Relaxed))
}

/// Records how far the warehouse's clock is ahead of this host's.
pub fn set_warehouse_ahead(ahead: Duration) {
    WAREHOUSE_AHEAD_MS.store(ahead.num_milliseconds(), Ordering::Relaxed);
}

/// How far the warehouse's clock may be ahead of this host's before it is
/// measured: more than a day is a clock that is wrong, not one that drifts.
const UNMEASURED_LEAD: Duration = Duration::days(1);

/// The latest the warehouse's clock may read, before idem has connected to
/// measure it. A check made before connecting (a window not over yet, not
/// begun) goes by it, so that a host clock minutes or hours behind the
/// warehouse's never refuses what the warehouse's lets run; it is made
/// again by the warehouse's clock once connected.
pub fn latest_unmeasured_now() -> DateTime<Utc> {
    now() + UNMEASURED_LEAD
}

/// A skew worth telling the operator of: a minute moves a window's end
/// past a cron job's start, or a load's stamps past another host's.
const SKEW_SAID: Duration = Duration::minutes(1);

/// What to tell the operator when this host's clock is a minute or more
/// off the warehouse's (`ahead` of it, as [`warehouse_ahead`] says): their
/// own clock and idem's disagree on the time, and on which windows are
/// complete.
pub fn skew_note(ahead: Duration) -> Option<String> {
    if ahead.abs() < SKEW_SAID {
        return None;
    }
    let minutes = (ahead.num_seconds().unsigned_abs()).div_ceil(60);
    let by = if ahead > Duration::zero() {
        "behind"
    } else {
        "ahead of"
    };
    Some(format!(
        "this host's clock is {minutes} min {by} the warehouse's: idem goes by the warehouse's (which windows are complete, the ledger's times)"
    ))
}

/// How far a server's clock that read `server` is ahead of this host's,
/// which read `asked` just before asking and `answered` just after: the
/// server read its clock somewhere between, taken as halfway.
pub fn offset(asked: DateTime<Utc>, server: DateTime<Utc>, answered: DateTime<Utc>) -> Duration {
    let halfway = asked + (answered - asked) / 2;
    server - halfway
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_offset_is_the_servers_lead_over_the_round_trips_midpoint() {
        let at = |s: i64, ms: i64| {
            Utc.timestamp_opt(s, 0).single().unwrap() + Duration::milliseconds(ms)
        };
        let base = 1_790_000_000;
        // A server ten minutes ahead, answering in 40 ms.
        assert_eq!(
            offset(at(base, 0), at(base + 600, 20), at(base, 40)),
            Duration::minutes(10)
        );
        // One five minutes behind.
        assert_eq!(
            offset(at(base, 0), at(base - 300, 20), at(base, 40)),
            Duration::minutes(-5)
        );
        // The same clock.
        assert_eq!(
            offset(at(base, 0), at(base, 20), at(base, 40)),
            Duration::zero()
        );
    }

    #[test]
    fn a_skew_of_a_minute_or_more_is_said_either_way() {
        assert_eq!(skew_note(Duration::seconds(59)), None);
        assert_eq!(skew_note(Duration::seconds(-59)), None);
        let note = skew_note(Duration::seconds(-601)).unwrap_or_default();
        assert!(
            note.starts_with("this host's clock is 11 min ahead of the warehouse's"),
            "{note}"
        );
        let note = skew_note(Duration::minutes(3)).unwrap_or_default();
        assert!(
            note.starts_with("this host's clock is 3 min behind the warehouse's"),
            "{note}"
        );
    }
}
