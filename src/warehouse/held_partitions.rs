//! The native partitions of a target that idem's own loads hold, and the
//! ranges a state read counts around them: a load's TRUNCATE of one
//! partition holds it until its COMMIT, and a count over the whole table
//! waited on it past `lock_timeout`, leaving the job unreadable.

use chrono::NaiveDateTime;
use sqlx::Row;

use super::{Engine, Warehouse, WarehouseError};
use crate::config::TableName;
use crate::partition::{Grain, Partition, RangeEnd};

/// The names of the idem loads' sessions (`idem#<pid>.<n> <job>
/// <partition>`) that hold one of the target's child tables exclusively:
/// its TRUNCATE's ACCESS EXCLUSIVE lock. A load truncates a child only when
/// its window is exactly the child's range, so the window it names is the
/// range held. The bound is not read from the catalogue: `pg_get_expr` of it
/// opens the child, which waits on the very lock.
const HELD_BY_LOADS: &str = "SELECT DISTINCT a.application_name FROM pg_catalog.pg_locks l \
     JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid \
     WHERE l.locktype = 'relation' AND l.granted AND l.mode = 'AccessExclusiveLock' \
     AND l.pid <> pg_backend_pid() AND a.application_name LIKE 'idem#%' \
     AND l.relation IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent = to_regclass(";

impl Warehouse {
    /// The windows of `table`'s native partitions that idem loads hold
    /// exclusively now (none where the engine has no native partitions
    /// idem truncates). Each load also holds its window's advisory lock, so
    /// a state read shows the partitions in it as running.
    pub(super) async fn partitions_held_by_loads(
        &self,
        table: &TableName,
    ) -> Result<Vec<(NaiveDateTime, NaiveDateTime)>, WarehouseError> {
        if self.dialect().engine() != Engine::Postgres {
            return Ok(Vec::new());
        }
        let mut sql = self.sql();
        sql.push(HELD_BY_LOADS)
            .bind(self.dialect().quote_table(table))
            .push("))");
        let mut held = Vec::new();
        for row in sql.query().fetch_all(&mut *self.pooled().await?).await? {
            let name: Option<String> = row.try_get(0)?;
            if let Some(window) = name.as_deref().and_then(loads_window) {
                held.push((window.start, window.end()));
            }
        }
        Ok(held)
    }
}

/// The window an idem load's session name ends with, of whichever grain
/// its name is written in.
fn loads_window(session: &str) -> Option<Partition> {
    let name = session.rsplit(' ').next()?;
    [Grain::Hour, Grain::Day, Grain::Month]
        .into_iter()
        .filter_map(|grain| Partition::parse(grain, name, RangeEnd::From))
        .find(|p| p.name() == name)
}

/// The parts of `[start, end)` outside every `held` range, in order: what a
/// count reads so that the planner prunes the held partitions, which it
/// then neither reads nor locks.
pub(super) fn around(
    (start, end): (NaiveDateTime, NaiveDateTime),
    held: &[(NaiveDateTime, NaiveDateTime)],
) -> Vec<(NaiveDateTime, NaiveDateTime)> {
    let mut held = held.to_vec();
    held.sort();
    let mut parts = Vec::new();
    let mut from = start;
    for (s, e) in held {
        if e <= from || s >= end {
            continue;
        }
        if s > from {
            parts.push((from, s));
        }
        from = from.max(e);
    }
    if from < end {
        parts.push((from, end));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::{around, loads_window};

    #[test]
    fn the_ranges_around_held_partitions_leave_them_out() {
        let day = |d: u32| {
            chrono::NaiveDate::from_ymd_opt(2026, 1, d)
                .unwrap()
                .and_hms_opt(0, 0, 0)
                .unwrap()
        };
        let range = (day(1), day(10));
        assert_eq!(around(range, &[]), [range]);
        assert_eq!(
            around(
                range,
                &[(day(5), day(6)), (day(2), day(3)), (day(20), day(21))]
            ),
            [(day(1), day(2)), (day(3), day(5)), (day(6), day(10))]
        );
        // Held at either end, or wholly.
        assert_eq!(
            around(range, &[(day(1), day(2)), (day(9), day(12))]),
            [(day(2), day(9))]
        );
        assert!(around(range, &[(day(1), day(12))]).is_empty());
        let window = |name| loads_window(name).map(|p| (p.start, p.end()));
        assert_eq!(window("idem#4242.7 fct 2026-01-02"), Some((day(2), day(3))));
        assert_eq!(
            window("idem#4242.7 agg 2026-01").map(|(s, e)| (s, (e - s).num_days())),
            Some((day(1), 31))
        );
        assert_eq!(
            window("idem#4242.7 h 2026-01-02T05").map(|(_, e)| e),
            Some(day(2) + chrono::Duration::hours(6))
        );
        assert_eq!(window("idem#4242.7 fct lock"), None);
    }
}
