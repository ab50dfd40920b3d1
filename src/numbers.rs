//! Numbers as people read them, shared by messages, the CLI and the console.

/// `12345` as `12,345`.
pub fn thousands(n: i64) -> String {
    let s = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// What a merge that found every row as it was did: the headless run's
/// line and the console's run table say it in these words.
pub const NO_ROWS_CHANGED: &str = "no rows changed";

/// A count in at most five characters, for axis labels: `950`, `12.5k`,
/// `125k`, `1.2M`, `3B`.
pub fn compact(n: i64) -> String {
    let a = n.unsigned_abs() as f64;
    let sign = if n < 0 { "-" } else { "" };
    let (value, unit) = match a {
        a if a < 1e3 => return n.to_string(),
        a if a < 1e6 => (a / 1e3, "k"),
        a if a < 1e9 => (a / 1e6, "M"),
        a => (a / 1e9, "B"),
    };
    let text = if value < 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.0}")
    };
    format!("{sign}{}{unit}", text.trim_end_matches(".0"))
}

/// `n` with its noun: `1 attempt`, `2 attempts`, `0 attempts`.
pub fn count(n: impl Into<i64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// `1 row`, `2,000 rows`.
pub fn n_rows(n: impl Into<i64>) -> String {
    count(n, "row", "rows")
}

/// `1 partition`, `3,650 partitions`.
pub fn n_partitions(n: impl Into<i64>) -> String {
    count(n, "partition", "partitions")
}

#[cfg(test)]
mod tests {
    use super::{compact, count, thousands};

    #[test]
    fn compact_labels_thousands_and_millions() {
        assert_eq!(compact(950), "950");
        assert_eq!(compact(12_500), "12.5k");
        assert_eq!(compact(20_000), "20k");
        assert_eq!(compact(125_000), "125k");
        assert_eq!(compact(1_260_000), "1.3M");
        assert_eq!(compact(-2_000_000), "-2M");
    }

    #[test]
    fn nouns_agree_with_their_count() {
        assert_eq!(count(1, "attempt", "attempts"), "1 attempt");
        assert_eq!(count(0u32, "retry", "retries"), "0 retries");
        assert_eq!(count(1200, "partition", "partitions"), "1,200 partitions");
    }

    #[test]
    fn groups_of_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(2000), "2,000");
        assert_eq!(thousands(-1234567), "-1,234,567");
    }
}
