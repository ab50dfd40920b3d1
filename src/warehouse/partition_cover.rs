//! A PostgreSQL target's native range partitions as ranges: the bound of
//! one (which a load matches its window against), and the windows of a
//! run that none covers, which the run would fail.

use chrono::NaiveDateTime;
use sqlx::Row;

use super::{ColumnKind, Warehouse, WarehouseError};
use crate::config::{Job, TableName};
use crate::numbers::n_partitions;
use crate::partition::{Grain, Partition};

/// A window of a run that no native partition of its target covers, the
/// target having no DEFAULT partition: its rows would find no table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncoveredWindow {
    pub partition: Partition,
    /// The bounds of the partitions to create for it (`FOR VALUES FROM
    /// ('2026-01-02') TO ('2026-01-03')`): the window's, or those of its
    /// parts no partition covers.
    pub create: Vec<String>,
}

impl UncoveredWindow {
    /// What every surface before a run says of `windows` of `target`
    /// (`idem run --dry-run`, the plan above a terminal run's question,
    /// the console's confirm dialog): a first line on what would fail and
    /// why, then the partitions to create, for the first `shown` runs of
    /// windows that one partition covers (an hourly job's missing hours
    /// of a day, where the target's partitions are days, are one
    /// statement, not one per hour).
    pub fn warning(target: &TableName, windows: &[UncoveredWindow], shown: usize) -> Vec<String> {
        let n = windows.len();
        let them = if n == 1 { "it" } else { "them" };
        let mut lines = vec![format!(
            "{} would fail: no partition of {target} covers {them}, and it has no DEFAULT partition. Create {them} (or a DEFAULT partition: CREATE TABLE … PARTITION OF {target} DEFAULT):",
            n_partitions(n as i64),
        )];
        let mut named = 0;
        for run in windows.chunk_by(|a, b| a.create == b.create).take(shown) {
            let (first, last) = (run[0].partition.name(), run[run.len() - 1].partition.name());
            let windows = if run.len() == 1 {
                first
            } else {
                format!("{first} to {last}")
            };
            for bounds in &run[0].create {
                lines.push(format!(
                    "  {windows}: CREATE TABLE … PARTITION OF {target} {bounds}"
                ));
            }
            named += run.len();
        }
        if n > named {
            lines.push(format!("  … and {} more", n - named));
        }
        lines
    }
}

impl Warehouse {
    /// The windows of `partitions` that no native partition of `job`'s
    /// target covers, where the target is partitioned by range on the job's
    /// partition column and has no DEFAULT partition. Nothing where a
    /// bound is not one idem reads (several columns): no warning is
    /// better than a false one.
    pub async fn windows_no_partition_covers(
        &self,
        job: &Job,
        partitions: &[Partition],
    ) -> Result<Vec<UncoveredWindow>, WarehouseError> {
        let Some(column) = &job.partition_column else {
            return Ok(Vec::new());
        };
        let mut sql = self.sql();
        if !self
            .dialect()
            .partition_cover_query(&mut sql, &job.target, column.as_str())
        {
            return Ok(Vec::new());
        }
        // No row: the target is not partitioned. One with a NULL bound: it
        // has no partition yet.
        let rows = sql.query().fetch_all(&mut *self.pooled().await?).await?;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let mut ranges = Vec::new();
        let mut kind = ColumnKind::Other;
        for row in rows {
            let by_column: Option<bool> = row.try_get(0)?;
            let bound: Option<String> = row.try_get(1)?;
            let type_name: Option<String> = row.try_get(2)?;
            if by_column != Some(true) {
                return Ok(Vec::new());
            }
            kind = ColumnKind::of_type_name(
                type_name.as_deref().unwrap_or_default(),
                self.dialect().engine(),
            );
            let Some(bound) = bound else { continue };
            match cover_bound(&bound) {
                Some(range) => ranges.push(range),
                // DEFAULT takes every row; anything else unread.
                None => return Ok(Vec::new()),
            }
        }
        ranges.sort();
        let span = span_of(&ranges);
        Ok(partitions
            .iter()
            .filter_map(|p| {
                let gaps = gaps(&ranges, p.start, p.end());
                (!gaps.is_empty()).then(|| UncoveredWindow {
                    partition: *p,
                    create: to_create(&ranges, span, &gaps)
                        .iter()
                        .map(|(from, to)| for_values(kind, *from, *to))
                        .collect(),
                })
            })
            .collect())
    }
}

impl Warehouse {
    /// The error of a load of `partition` whose rows found no native
    /// partition of `job`'s target (the server's `message`), adding which
    /// partition to create (as [`Warehouse::windows_no_partition_covers`]
    /// advises it beforehand) and that a DEFAULT partition would do too.
    pub(super) async fn no_partition_for(
        &self,
        job: &Job,
        partition: &Partition,
        message: &str,
    ) -> String {
        let target = &job.target;
        let create = match self.windows_no_partition_covers(job, &[*partition]).await {
            Ok(mut windows) if !windows.is_empty() => windows.remove(0).create,
            // Bounds with the offset mean the window in a column of any
            // date or time type.
            _ => vec![for_values(
                ColumnKind::TimestampTz,
                partition.start,
                partition.end(),
            )],
        };
        let it = if create.len() == 1 { "it" } else { "them" };
        let statements: Vec<String> = create
            .iter()
            .map(|bounds| format!("CREATE TABLE … PARTITION OF {target} {bounds}"))
            .collect();
        format!(
            "{message}: {target} has no partition for {} ({}). Create {it} ({}), \
             or a DEFAULT partition (CREATE TABLE … PARTITION OF {target} DEFAULT), and run the window again",
            partition.name(),
            create.join(" and "),
            statements.join("; "),
        )
    }
}

/// The grain every partition of a target spans, where all of its bounded
/// ones span exactly one hour, day or month: the partitions to create are
/// made alike.
fn span_of(ranges: &[(NaiveDateTime, NaiveDateTime)]) -> Option<Grain> {
    let bounded = || {
        ranges
            .iter()
            .filter(|(from, to)| *from != NaiveDateTime::MIN && *to != NaiveDateTime::MAX)
    };
    bounded().next()?;
    [Grain::Month, Grain::Day, Grain::Hour]
        .into_iter()
        .find(|g| bounded().all(|&(from, to)| g.floor(from) == from && g.next(from) == to))
}

/// The partitions to create for `gaps`: where the target's partitions
/// span a coarser grain than the gaps' windows (a daily-partitioned
/// target of an hourly job), the partitions of that grain around them,
/// less what others cover; otherwise the gaps themselves.
fn to_create(
    ranges: &[(NaiveDateTime, NaiveDateTime)],
    span: Option<Grain>,
    gaps_of_window: &[(NaiveDateTime, NaiveDateTime)],
) -> Vec<(NaiveDateTime, NaiveDateTime)> {
    let Some(span) = span else {
        return gaps_of_window.to_vec();
    };
    let mut create: Vec<(NaiveDateTime, NaiveDateTime)> = Vec::new();
    for &(from, to) in gaps_of_window {
        let start = span.floor(from);
        let mut end = span.next(span.floor(to - chrono::Duration::seconds(1)));
        if end < to {
            end = to;
        }
        for part in gaps(ranges, start, end) {
            if !create.contains(&part) {
                create.push(part);
            }
        }
    }
    create
}

/// The parts of [start, end) that none of `ranges` (sorted) covers.
fn gaps(
    ranges: &[(NaiveDateTime, NaiveDateTime)],
    start: NaiveDateTime,
    end: NaiveDateTime,
) -> Vec<(NaiveDateTime, NaiveDateTime)> {
    let mut gaps = Vec::new();
    let mut at = start;
    for &(from, to) in ranges {
        if at >= end {
            break;
        }
        if to <= at {
            continue;
        }
        if from > at {
            gaps.push((at, from.min(end)));
        }
        at = at.max(to);
    }
    if at < end {
        gaps.push((at, end));
    }
    gaps
}

/// `FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')`, as bounds of a
/// column of `kind` are written. On a `timestamptz` column the bounds
/// carry the UTC offset (`'2026-01-02 00:00:00+00'`): one without it is
/// read in the session's time zone, so the operator's own session (a
/// database set to America/New_York) made a partition of New York's day
/// or hour, hours off the UTC window idem loads (QA). A date or
/// `timestamp` column has no zone: its bounds are written plain.
pub(super) fn for_values(kind: ColumnKind, from: NaiveDateTime, to: NaiveDateTime) -> String {
    let midnights = from.time() == chrono::NaiveTime::MIN && to.time() == chrono::NaiveTime::MIN;
    let format = match kind {
        ColumnKind::TimestampTz => "%Y-%m-%d %H:%M:%S+00",
        _ if midnights => "%Y-%m-%d",
        _ => "%Y-%m-%d %H:%M:%S",
    };
    format!(
        "FOR VALUES FROM ('{}') TO ('{}')",
        from.format(format),
        to.format(format)
    )
}

/// One value of a bound: `('2026-06-04')` or `('2026-06-04 13:00:00')`.
fn bound_value(text: &str) -> Option<NaiveDateTime> {
    let inner = text.strip_prefix("('")?.strip_suffix("')")?;
    NaiveDateTime::parse_from_str(inner, "%Y-%m-%d %H:%M:%S")
        .ok()
        .or_else(|| {
            chrono::NaiveDate::parse_from_str(inner, "%Y-%m-%d")
                .ok()
                .map(|d| d.and_time(chrono::NaiveTime::MIN))
        })
}

/// The two sides of `FOR VALUES FROM (…) TO (…)`.
fn sides(bound: &str) -> Option<(&str, &str)> {
    let rest = bound.trim().strip_prefix("FOR VALUES FROM ")?;
    let (from, to) = rest.split_once(" TO ")?;
    Some((from.trim(), to.trim()))
}

/// The range of `FOR VALUES FROM ('2026-06-04') TO ('2026-06-05')`: dates
/// or timestamps without a zone as written, zoned values as the UTC
/// instants they are (a load compares a zoned column with its window's
/// bounds in a UTC session, so a partition of `'2026-06-04 00:00:00+00'`
/// to the next day's holds the window's rows); None for anything else
/// (DEFAULT, MINVALUE, several columns).
pub(super) fn range_bound(bound: &str) -> Option<(NaiveDateTime, NaiveDateTime)> {
    let (from, to) = sides(bound)?;
    Some((bound_instant(from)?, bound_instant(to)?))
}

/// One value of a bound: [`bound_value`], or a zoned one,
/// `('2026-11-03 05:00:00+00')`, as the UTC instant it is (idem's sessions
/// write bounds in UTC; a partition made in New York reads so).
fn bound_instant(text: &str) -> Option<NaiveDateTime> {
    bound_value(text).or_else(|| {
        let inner = text.strip_prefix("('")?.strip_suffix("')")?;
        chrono::DateTime::parse_from_str(inner, "%Y-%m-%d %H:%M:%S%#z")
            .or_else(|_| chrono::DateTime::parse_from_str(inner, "%Y-%m-%d %H:%M:%S%.f%#z"))
            .ok()
            .map(|at| at.naive_utc())
    })
}

/// [`range_bound`], MINVALUE and MAXVALUE read as the ends of time (QA: a
/// `timestamptz` target's partitions, made in the operator's time zone,
/// were taken as covering every window).
fn cover_bound(bound: &str) -> Option<(NaiveDateTime, NaiveDateTime)> {
    let (from, to) = sides(bound)?;
    let from = match from {
        "(MINVALUE)" => NaiveDateTime::MIN,
        from => bound_instant(from)?,
    };
    let to = match to {
        "(MAXVALUE)" => NaiveDateTime::MAX,
        to => bound_instant(to)?,
    };
    Some((from, to))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: &str) -> NaiveDateTime {
        chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
    }

    #[test]
    fn native_partition_bounds_are_read_from_postgres_text() {
        assert_eq!(
            range_bound("FOR VALUES FROM ('2026-06-04') TO ('2026-06-05')"),
            Some((day("2026-06-04"), day("2026-06-05")))
        );
        assert_eq!(
            range_bound("FOR VALUES FROM ('2026-06-04 13:00:00') TO ('2026-06-04 14:00:00')")
                .map(|(a, b)| (b - a).num_hours()),
            Some(1)
        );
        // A zoned column's bounds, as the UTC instants they are: New
        // York's day is not UTC's.
        assert_eq!(
            range_bound("FOR VALUES FROM ('2026-06-04 00:00:00+00') TO ('2026-06-05 00:00:00+00')"),
            Some((day("2026-06-04"), day("2026-06-05")))
        );
        assert_eq!(
            range_bound("FOR VALUES FROM ('2026-06-04 04:00:00+00') TO ('2026-06-05 04:00:00+00')"),
            Some((
                day("2026-06-04") + chrono::Duration::hours(4),
                day("2026-06-05") + chrono::Duration::hours(4)
            ))
        );
        for other in [
            "DEFAULT",
            "FOR VALUES FROM (MINVALUE) TO ('2026-01-01')",
            "FOR VALUES IN ('a')",
        ] {
            assert_eq!(range_bound(other), None, "{other}");
        }
        assert_eq!(
            cover_bound("FOR VALUES FROM (MINVALUE) TO ('2026-01-01')"),
            Some((NaiveDateTime::MIN, day("2026-01-01")))
        );
    }

    /// QA: an hourly window of a target partitioned by day was advised
    /// a partition of its hour; it is the day's, less what is covered.
    #[test]
    fn the_partition_to_create_spans_what_the_targets_partitions_span() {
        let hour = |d: &str, h: u32| day(d) + chrono::Duration::hours(h.into());
        let days = [(day("2026-01-01"), day("2026-01-02"))];
        assert_eq!(span_of(&days), Some(Grain::Day));
        assert_eq!(
            to_create(
                &days,
                Some(Grain::Day),
                &[(hour("2026-01-02", 5), hour("2026-01-02", 6))]
            ),
            vec![(day("2026-01-02"), day("2026-01-03"))]
        );
        // Partitions of no one span: the gap itself.
        let odd = [(day("2026-01-01"), hour("2026-01-01", 5))];
        assert_eq!(span_of(&odd), None);
        assert_eq!(
            to_create(
                &odd,
                None,
                &[(hour("2026-01-01", 5), hour("2026-01-01", 6))]
            ),
            vec![(hour("2026-01-01", 5), hour("2026-01-01", 6))]
        );
        assert_eq!(
            span_of(&[(day("2026-01-01"), day("2026-02-01"))]),
            Some(Grain::Month)
        );
        assert_eq!(
            for_values(
                ColumnKind::TimestampTz,
                day("2026-01-02"),
                day("2026-01-03")
            ),
            "FOR VALUES FROM ('2026-01-02 00:00:00+00') TO ('2026-01-03 00:00:00+00')"
        );
        assert_eq!(
            for_values(ColumnKind::Date, day("2026-01-02"), day("2026-01-03")),
            "FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')"
        );
        assert_eq!(
            for_values(
                ColumnKind::Timestamp,
                hour("2026-01-02", 5),
                hour("2026-01-02", 6)
            ),
            "FOR VALUES FROM ('2026-01-02 05:00:00') TO ('2026-01-02 06:00:00')"
        );
    }

    #[test]
    fn the_gaps_of_a_window_are_the_parts_no_range_covers() {
        let ranges = [
            (NaiveDateTime::MIN, day("2026-01-03")),
            (day("2026-01-05"), day("2026-01-06")),
            (day("2026-01-06"), day("2026-01-08")),
        ];
        assert_eq!(gaps(&ranges, day("2026-01-01"), day("2026-01-03")), vec![]);
        assert_eq!(
            gaps(&ranges, day("2026-01-02"), day("2026-01-06")),
            vec![(day("2026-01-03"), day("2026-01-05"))]
        );
        assert_eq!(
            gaps(&ranges, day("2026-01-04"), day("2026-01-10")),
            vec![
                (day("2026-01-04"), day("2026-01-05")),
                (day("2026-01-08"), day("2026-01-10"))
            ]
        );
        assert_eq!(
            gaps(&[], day("2026-01-04"), day("2026-01-05")),
            vec![(day("2026-01-04"), day("2026-01-05"))]
        );
    }
}
