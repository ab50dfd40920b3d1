//! Partitions: half-open UTC windows `[start, end)` of a job's grain, named by
//! their start (`2026-06-04`, `2026-06-04T13`, `2026-06`).

use std::fmt;

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grain {
    Hour,
    Day,
    Month,
}

impl Grain {
    pub const NAMES: &'static str = "hour, day, month";

    pub fn parse(s: &str) -> Option<Grain> {
        match s {
            "hour" => Some(Grain::Hour),
            "day" => Some(Grain::Day),
            "month" => Some(Grain::Month),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Grain::Hour => "hour",
            Grain::Day => "day",
            Grain::Month => "month",
        }
    }

    /// The strftime pattern of a partition's name at this grain. chrono,
    /// SQLite's `strftime` and MariaDB's `DATE_FORMAT` read it alike.
    pub fn name_pattern(self) -> &'static str {
        match self {
            Grain::Hour => "%Y-%m-%dT%H",
            Grain::Day => "%Y-%m-%d",
            Grain::Month => "%Y-%m",
        }
    }

    /// The format a partition of this grain is named in, for error messages.
    pub fn name_format(self) -> &'static str {
        match self {
            Grain::Hour => "YYYY-MM-DDTHH (or YYYY-MM-DD)",
            Grain::Day => "YYYY-MM-DD",
            Grain::Month => "YYYY-MM",
        }
    }

    /// The start of the window containing `t`.
    pub fn floor(self, t: NaiveDateTime) -> NaiveDateTime {
        let d = t.date();
        match self {
            Grain::Hour => d.and_hms_opt(t.hour(), 0, 0).unwrap_or(t),
            Grain::Day => d.and_time(NaiveTime::MIN),
            Grain::Month => first_of_month(d.year(), d.month()).and_time(NaiveTime::MIN),
        }
    }

    pub fn next(self, start: NaiveDateTime) -> NaiveDateTime {
        match self {
            Grain::Hour => start + Duration::hours(1),
            Grain::Day => start + Duration::days(1),
            Grain::Month => {
                let d = start.date();
                let (y, m) = if d.month() == 12 {
                    (d.year() + 1, 1)
                } else {
                    (d.year(), d.month() + 1)
                };
                first_of_month(y, m).and_time(NaiveTime::MIN)
            }
        }
    }

    pub fn prev(self, start: NaiveDateTime) -> NaiveDateTime {
        match self {
            Grain::Hour => start - Duration::hours(1),
            Grain::Day => start - Duration::days(1),
            Grain::Month => self.floor(start - Duration::days(1)),
        }
    }
}

/// Appends `n`'s lowest `width` decimal digits, zero-padded: what `{n:0width$}`
/// writes for a number of at most `width` digits, without the formatting
/// machinery (names and ledger timestamps are written by the hundred
/// thousand at each state read).
pub(crate) fn push_digits(out: &mut String, mut n: u32, width: usize) {
    let mut digits = [b'0'; 10];
    for d in digits[..width].iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend(digits[..width].iter().map(|&d| char::from(d)));
}

impl fmt::Display for Grain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn first_of_month(year: i32, month: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(year, month, 1).unwrap_or(NaiveDate::MIN)
}

/// One window of a job. Ordered by start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Partition {
    pub start: NaiveDateTime,
    pub grain: Grain,
}

/// Which end of a range a loosely written partition name stands for: a day
/// given for an hourly job means its first hour in `--from`, its last in `--to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeEnd {
    From,
    To,
}

impl Partition {
    pub fn containing(grain: Grain, t: NaiveDateTime) -> Partition {
        Partition {
            start: grain.floor(t),
            grain,
        }
    }

    pub fn end(&self) -> NaiveDateTime {
        self.grain.next(self.start)
    }

    pub fn next(&self) -> Partition {
        Partition {
            start: self.end(),
            grain: self.grain,
        }
    }

    pub fn prev(&self) -> Partition {
        Partition {
            start: self.grain.prev(self.start),
            grain: self.grain,
        }
    }

    /// The name a partition is known by: its start at the grain's precision.
    pub fn name(&self) -> String {
        let t = self.start;
        let (y, m, d, h) = (t.year(), t.month(), t.day(), t.hour());
        // Written out rather than through a strftime pattern, which is
        // parsed again on every call: a state read of a ten-year hourly job
        // names some 200,000 partitions, and the pattern took a quarter of
        // a console refresh's time. Years of other than four digits, which
        // `%Y` signs, go through it.
        if !(0..=9999).contains(&y) {
            return t.format(self.grain.name_pattern()).to_string();
        }
        let mut name = String::with_capacity(13);
        push_digits(&mut name, y.unsigned_abs(), 4);
        name.push('-');
        push_digits(&mut name, m, 2);
        if self.grain != Grain::Month {
            name.push('-');
            push_digits(&mut name, d, 2);
        }
        if self.grain == Grain::Hour {
            name.push('T');
            push_digits(&mut name, h, 2);
        }
        name
    }

    /// Parses a partition name of this grain. Coarser names are accepted where
    /// they are unambiguous: a day or month names its first (or, for the `to`
    /// end of a range, its last) partition.
    pub fn parse(grain: Grain, text: &str, end: RangeEnd) -> Option<Partition> {
        let text = text.trim();
        let (coarse_start, coarse_grain) = parse_any(text)?;
        if coarse_grain == grain {
            return Some(Partition {
                start: coarse_start,
                grain,
            });
        }
        let finer = match (coarse_grain, grain) {
            (Grain::Hour, _) => return None,
            (Grain::Day, Grain::Month) => return Some(Partition::containing(grain, coarse_start)),
            (Grain::Month, Grain::Hour | Grain::Day) | (Grain::Day, Grain::Hour) => true,
            _ => false,
        };
        if !finer {
            return None;
        }
        let start = match end {
            RangeEnd::From => coarse_start,
            RangeEnd::To => {
                let coarse_end = coarse_grain.next(coarse_start);
                grain.prev(coarse_end)
            }
        };
        Some(Partition { start, grain })
    }

    /// The partition of `grain` that a finer name falls in (a day named
    /// for a monthly job, an hour for a daily one): such a name is refused,
    /// as it would stand for more than it says, and this is what it likely
    /// meant. `None` when `text` is not finer than `grain`.
    pub fn meant_by_finer(grain: Grain, text: &str) -> Option<Partition> {
        let (start, named) = parse_any(text.trim())?;
        (named < grain).then(|| Partition::containing(grain, start))
    }

    /// True when the window has not fully passed at `now`.
    pub fn is_future(&self, now: NaiveDateTime) -> bool {
        self.end() > now
    }

    /// Text bound for `:start` / `:end` on engines that compare as text.
    pub fn bound_text(t: NaiveDateTime) -> String {
        t.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

impl fmt::Display for Partition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Parses `YYYY-MM-DDTHH`, `YYYY-MM-DD` or `YYYY-MM` into a start and the grain
/// the text was written at.
pub fn parse_any(text: &str) -> Option<(NaiveDateTime, Grain)> {
    if let Some((day, hour)) = text.split_once(['T', ' ']) {
        if !shaped(day, "0000-00-00")
            || !["00", "00:00", "00:00:00"].iter().any(|f| shaped(hour, f))
        {
            return None;
        }
        let d = NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
        // `13:00` is the hour 13; `13:30` is a moment inside it, not a name.
        let mut parts = hour.split(':');
        let h: u32 = parts.next()?.parse().ok()?;
        if parts.any(|p| p != "00") {
            return None;
        }
        return Some((d.and_hms_opt(h, 0, 0)?, Grain::Hour));
    }
    if shaped(text, "0000-00-00") {
        let d = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
        return Some((d.and_time(NaiveTime::MIN), Grain::Day));
    }
    if !shaped(text, "0000-00") {
        return None;
    }
    let (y, m) = text.split_once('-')?;
    let d = NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, 1)?;
    Some((d.and_time(NaiveTime::MIN), Grain::Month))
}

/// An instant written with its offset from UTC (`2026-06-04T13:00:00+00:00`,
/// `…Z`, `…+02:00`), as orchestrators render a data interval's bounds
/// (Airflow's `{{ data_interval_start }}`, Dagster's time windows), in UTC.
/// `None` for anything without an offset: `2026-06-04T13` is a name.
pub fn parse_instant(text: &str) -> Option<NaiveDateTime> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|at| at.naive_utc())
}

/// Whether `text` has the shape of `pattern`, where `0` stands for a digit:
/// names are written one way only (`2026-09-01`, never `2026-9-1`).
fn shaped(text: &str, pattern: &str) -> bool {
    text.len() == pattern.len()
        && text.bytes().zip(pattern.bytes()).all(|(t, p)| {
            if p == b'0' {
                t.is_ascii_digit()
            } else {
                t == p
            }
        })
}

/// Every partition from `first` to `last`, both included.
pub fn range(first: Partition, last: Partition) -> Vec<Partition> {
    let mut out = Vec::new();
    let mut p = first;
    while p.start <= last.start {
        out.push(p);
        p = p.next();
    }
    out
}

/// The current instant in UTC on the warehouse's clock ([`crate::clock`]),
/// as the naive time partitions are measured in.
pub fn now_utc() -> NaiveDateTime {
    crate::clock::now().naive_utc()
}

/// What `text` names that does not exist (`date`, `hour`, `month`) when
/// it has the shape of a partition name (`YYYY-MM`, `YYYY-MM-DD`,
/// `YYYY-MM-DDTHH`) but no partition of any grain has that name, as
/// `2026-02-30`; `None` when its shape is wrong or it exists.
pub fn impossible_date(text: &str) -> Option<&'static str> {
    let shape = |pattern: &str| {
        text.len() == pattern.len()
            && text.chars().zip(pattern.chars()).all(|(c, p)| match p {
                '9' => c.is_ascii_digit(),
                _ => c == p,
            })
    };
    let what = if shape("9999-99-99T99") {
        "hour"
    } else if shape("9999-99-99") {
        "date"
    } else if shape("9999-99") {
        "month"
    } else {
        return None;
    };
    let exists = [Grain::Hour, Grain::Day, Grain::Month]
        .into_iter()
        .any(|g| Partition::parse(g, text, RangeEnd::From).is_some());
    (!exists).then_some(what)
}

/// Which part of a partition name of the right form the calendar lacks:
/// `months are 01 to 12`, `2026-02 has 28 days`, `hours are 00 to 23`.
pub fn calendar_fault(text: &str) -> String {
    let number =
        |range: std::ops::Range<usize>| text.get(range).and_then(|t| t.parse::<u32>().ok());
    let (year, month) = (number(0..4).unwrap_or(0), number(5..7).unwrap_or(0));
    if !(1..=12).contains(&month) {
        return "months are 01 to 12".into();
    }
    let days = chrono::NaiveDate::from_ymd_opt(year as i32, month, 1)
        .and_then(|first| first.checked_add_months(chrono::Months::new(1)))
        .and_then(|next| next.pred_opt())
        .map_or(31, |last| chrono::Datelike::day(&last));
    match number(8..10) {
        Some(day) if day == 0 || day > days => format!("{year:04}-{month:02} has {days} days"),
        _ => "hours are 00 to 23".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_strftime_patterns_written_out() {
        let at = |y, m, d, h| {
            NaiveDate::from_ymd_opt(y, m, d)
                .and_then(|d| d.and_hms_opt(h, 0, 0))
                .unwrap_or_else(|| panic!("{y}-{m}-{d} {h}"))
        };
        for t in [
            at(2026, 1, 1, 0),
            at(2026, 12, 31, 23),
            at(1999, 2, 28, 9),
            at(2024, 2, 29, 10),
            at(0, 1, 1, 0),
            at(9999, 12, 31, 23),
            at(-1, 6, 1, 5),
            at(10000, 1, 1, 0),
            at(812, 7, 4, 1),
        ] {
            for (grain, pattern) in [
                (Grain::Hour, "%Y-%m-%dT%H"),
                (Grain::Day, "%Y-%m-%d"),
                (Grain::Month, "%Y-%m"),
            ] {
                let p = Partition::containing(grain, t);
                assert_eq!(p.name(), p.start.format(pattern).to_string(), "{t}");
            }
        }
    }

    fn p(grain: Grain, s: &str, end: RangeEnd) -> String {
        Partition::parse(grain, s, end)
            .map(|p| p.name())
            .unwrap_or_default()
    }

    #[test]
    fn names_round_trip_at_each_grain() {
        for (g, name) in [
            (Grain::Hour, "2026-06-04T13"),
            (Grain::Day, "2026-06-04"),
            (Grain::Month, "2026-06"),
        ] {
            assert_eq!(p(g, name, RangeEnd::From), name);
        }
    }

    #[test]
    fn coarse_names_expand_to_the_right_end() {
        assert_eq!(
            p(Grain::Hour, "2026-06-04", RangeEnd::From),
            "2026-06-04T00"
        );
        assert_eq!(p(Grain::Hour, "2026-06-04", RangeEnd::To), "2026-06-04T23");
        assert_eq!(p(Grain::Day, "2026-02", RangeEnd::To), "2026-02-28");
        assert_eq!(p(Grain::Month, "2026-02-13", RangeEnd::To), "2026-02");
        assert_eq!(p(Grain::Day, "2026-06-04T13", RangeEnd::From), "");
        assert_eq!(p(Grain::Day, "June", RangeEnd::From), "");
    }

    #[test]
    fn names_are_written_one_way_only() {
        for loose in [
            "2026-9-1",
            "2026-09-1",
            "2026-9-01",
            "26-09-01",
            "2026-9",
            "2026-09-01T1",
            "2026-09-01T1:00",
            "+2026-09-01",
            "2026-09-01T13x",
            "2026-09-01T13:30",
            "2026-09-01 13:00:01",
        ] {
            for g in [Grain::Hour, Grain::Day, Grain::Month] {
                assert_eq!(p(g, loose, RangeEnd::From), "", "{loose} at {g:?}");
            }
        }
        assert_eq!(
            p(Grain::Hour, "2026-09-01T13:00", RangeEnd::From),
            "2026-09-01T13"
        );
        assert_eq!(
            p(Grain::Hour, "2026-09-01 13:00:00", RangeEnd::From),
            "2026-09-01T13"
        );
    }

    #[test]
    fn month_windows_cross_years() {
        let dec = Partition::parse(Grain::Month, "2025-12", RangeEnd::From).unwrap();
        assert_eq!(dec.next().name(), "2026-01");
        assert_eq!(dec.next().prev(), dec);
        let all = range(dec, dec.next().next());
        assert_eq!(all.len(), 3);
    }
}
