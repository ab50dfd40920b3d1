//! The grain a candidate job's partition column suggests, read from a
//! sample of its values rather than the first one alone: a table whose
//! first row lies at midnight but whose others lie on the hour is hourly,
//! and one whose values all lie on a month's first day is monthly. The
//! sample is of the first rows the warehouse reads (a `LIMIT`, no sort),
//! so a big table is never scanned whole for it.

use crate::partition::{Grain, Partition, RangeEnd, now_utc};

/// Values read for the guess, at most.
pub(super) const SAMPLE: u32 = 1000;

/// Where in its day, month and hour a value lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    day_of_month: u32,
    hour: u32,
    /// No minutes, seconds or fraction.
    on_the_hour: bool,
}

/// The [`Shape`] of a date or timestamp written as text (`2026-06-04`,
/// `2026-06-04 13:00:00`, `2026-06-04T13:00:00.000+00`), its zone left
/// aside; None for anything else.
fn shape(value: &str) -> Option<Shape> {
    let value = value.trim();
    let date = chrono::NaiveDate::parse_from_str(value.get(..10)?, "%Y-%m-%d").ok()?;
    let time = value[10..].trim_start_matches(['T', ' ']);
    // The zone: `Z`, or an offset after the time (never the date's `-`).
    let time = time
        .find(['Z', 'z', '+', '-'])
        .map_or(time, |cut| &time[..cut])
        .trim();
    let mut parts = time.split(':');
    let number = |p: Option<&str>| -> Option<f64> {
        match p {
            None => Some(0.0),
            Some(p) => p.trim().parse::<f64>().ok(),
        }
    };
    let (hour, minute, second) = if time.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (
            number(parts.next())?,
            number(parts.next())?,
            number(parts.next())?,
        )
    };
    use chrono::Datelike;
    Some(Shape {
        day_of_month: date.day(),
        hour: hour as u32,
        on_the_hour: minute == 0.0 && second == 0.0,
    })
}

/// The grain the values suggest, where they say: on the hour but not all
/// at midnight is hourly; all at midnight on the first of two or more
/// months is monthly; all at midnight on two or more days is daily.
/// None where they say nothing (one value, or times of day such as an
/// event's), for the column's name to say.
fn grain_of_values(values: &[&str]) -> Option<Grain> {
    let mut distinct: Vec<&str> = values.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let shapes: Vec<Shape> = distinct.iter().filter_map(|v| shape(v)).collect();
    if shapes.len() < 2 || shapes.len() < distinct.len() {
        return None;
    }
    let on_the_hour = shapes.iter().all(|s| s.on_the_hour);
    let midnight = on_the_hour && shapes.iter().all(|s| s.hour == 0);
    if on_the_hour && !midnight {
        Some(Grain::Hour)
    } else if midnight && shapes.iter().all(|s| s.day_of_month == 1) {
        // Two or more values, each a month's first day: two months.
        Some(Grain::Month)
    } else if midnight {
        Some(Grain::Day)
    } else {
        None
    }
}

/// The grain a column's values suggest, and the partition of its first
/// value (this month's first day when the table is empty). `sample` is
/// some of its values beside the first (see
/// [`crate::warehouse::Warehouse::date_sample_as_text`]).
pub(super) fn grain_and_start(
    column: &str,
    first: Option<&str>,
    sample: &[String],
) -> (Grain, Partition) {
    let today = || Partition::containing(Grain::Month, now_utc());
    let Some(first) = first.map(str::trim) else {
        let month = today();
        return (Grain::Day, Partition::containing(Grain::Day, month.start));
    };
    let column = column.to_lowercase();
    let values: Vec<&str> = std::iter::once(first)
        .chain(sample.iter().map(|v| v.trim()))
        .collect();
    let grain = if first.len() == 7 {
        Grain::Month
    } else if first.len() == 13 {
        Grain::Hour
    } else if let Some(grain) = grain_of_values(&values) {
        grain
    } else if column.contains("month") {
        Grain::Month
    } else if first.len() > 10 && column.contains("hour") {
        Grain::Hour
    } else {
        Grain::Day
    };
    let prefix = match grain {
        Grain::Month => first.get(..7).unwrap_or(first),
        Grain::Day => first.get(..10).unwrap_or(first),
        Grain::Hour => first.get(..13).unwrap_or(first),
    };
    // MariaDB's zero month or day (`2026-02-00`, allowed without
    // NO_ZERO_IN_DATE) sorts before the month's first day: the first real
    // date is on or after that day, not this month (QA: a table from
    // 2026-02-00 on was started at the current month).
    let prefix = match prefix.as_bytes() {
        [_, _, _, _, b'-', b'0', b'0', ..] => {
            format!("{}-01{}", &prefix[..4], &prefix[7..]).replacen("-00", "-01", 1)
        }
        [_, _, _, _, b'-', _, _, b'-', b'0', b'0', ..] => {
            format!("{}-01{}", &prefix[..7], &prefix[10..])
        }
        _ => prefix.to_string(),
    };
    let start = Partition::parse(grain, &prefix.replacen(' ', "T", 1), RangeEnd::From)
        .unwrap_or_else(|| Partition::containing(grain, today().start));
    (grain, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grains_follow_the_first_value_where_the_others_say_nothing() {
        let g = |col: &str, v: &str| {
            let (grain, start) = grain_and_start(col, Some(v), &[]);
            (grain, start.name())
        };
        assert_eq!(g("dt", "2026-06-04"), (Grain::Day, "2026-06-04".into()));
        assert_eq!(g("month", "2026-06"), (Grain::Month, "2026-06".into()));
        assert_eq!(g("month", "2026-06-01"), (Grain::Month, "2026-06".into()));
        assert_eq!(
            g("hour", "2026-06-04T13"),
            (Grain::Hour, "2026-06-04T13".into())
        );
        assert_eq!(
            g("event_hour", "2026-06-04 13:00:00"),
            (Grain::Hour, "2026-06-04T13".into())
        );
        assert_eq!(
            g("created_at", "2026-06-04 13:22:11"),
            (Grain::Day, "2026-06-04".into())
        );
    }

    #[test]
    fn grains_follow_a_sample_of_values() {
        let g = |col: &str, first: &str, rest: &[&str]| {
            let rest: Vec<String> = rest.iter().map(|v| v.to_string()).collect();
            let (grain, start) = grain_and_start(col, Some(first), &rest);
            (grain, start.name())
        };
        // The first row at midnight, the others on the hour: hourly.
        assert_eq!(
            g(
                "ts",
                "2026-06-04 00:00:00",
                &[
                    "2026-06-04 00:00:00",
                    "2026-06-04 01:00:00",
                    "2026-06-04 02:00:00"
                ]
            ),
            (Grain::Hour, "2026-06-04T00".into())
        );
        assert_eq!(
            g(
                "ts",
                "2026-06-04T00:00:00.000+00:00",
                &["2026-06-04T05:00:00+02"]
            ),
            (Grain::Hour, "2026-06-04T00".into())
        );
        // Midnights of several days: daily, whatever the name says.
        assert_eq!(
            g(
                "event_hour",
                "2026-06-04 00:00:00",
                &["2026-06-05 00:00:00", "2026-06-06 00:00:00"]
            ),
            (Grain::Day, "2026-06-04".into())
        );
        // First days of months: monthly, as dates or timestamps.
        assert_eq!(
            g("period", "2026-01-01", &["2026-02-01", "2026-03-01"]),
            (Grain::Month, "2026-01".into())
        );
        assert_eq!(
            g("period", "2026-01-01 00:00:00", &["2026-02-01 00:00:00"]),
            (Grain::Month, "2026-01".into())
        );
        // A month's first day among other days: daily.
        assert_eq!(
            g("month_end", "2026-01-01", &["2026-01-02", "2026-02-01"]),
            (Grain::Day, "2026-01-01".into())
        );
        // Times of day (events): the name says, else daily.
        assert_eq!(
            g(
                "created_at",
                "2026-06-04 00:00:00",
                &["2026-06-04 00:13:07", "2026-06-04 05:00:00"]
            ),
            (Grain::Day, "2026-06-04".into())
        );
        assert_eq!(
            g(
                "created_hour",
                "2026-06-04 00:00:00",
                &["2026-06-04 00:13:07"]
            ),
            (Grain::Hour, "2026-06-04T00".into())
        );
        // A zero month or day (MariaDB) starts at the first day after it.
        assert_eq!(g("d", "2026-02-00", &[]), (Grain::Day, "2026-02-01".into()));
        assert_eq!(g("d", "2026-00-00", &[]), (Grain::Day, "2026-01-01".into()));
        assert_eq!(
            g("ts", "2026-02-00 05:00:00", &[]),
            (Grain::Day, "2026-02-01".into())
        );
        assert_eq!(
            g("m", "2026-03-00", &["2026-04-00", "2026-05-00"]),
            (Grain::Day, "2026-03-01".into())
        );
        // One value repeated says nothing more than one value.
        assert_eq!(
            g("ts", "2026-06-04 00:00:00", &["2026-06-04 00:00:00"]),
            (Grain::Day, "2026-06-04".into())
        );
    }
}
