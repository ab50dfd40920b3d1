//! Timeouts as `idem.toml` writes them: `500ms`, `10s`, `30m`, `1h`.

use std::time::Duration;

/// The longest timeout every engine takes: PostgreSQL and SQLite hold one
/// as a 32-bit count of milliseconds (about 24.8 days).
pub const MAX_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

/// A timeout such as `500ms`, `10s`, `30m` or `1h`, at most [`MAX_TIMEOUT`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let not_a_duration = || {
        format!("\"{text}\" is not a duration; expected e.g. \"500ms\", \"10s\", \"30m\", \"1h\"")
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(not_a_duration)?;
    let (n, unit) = trimmed.split_at(split);
    let millis_per_unit: u64 = match unit.trim() {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(not_a_duration()),
    };
    let too_long = || {
        format!(
            "\"{text}\" is out of range; expected at most {}h (about 24 days)",
            MAX_TIMEOUT.as_secs() / 3600
        )
    };
    // Digits too many for u64 are a number all the same, only too large.
    let n: u64 = match n.parse() {
        Ok(n) => n,
        Err(_) if !n.is_empty() => return Err(too_long()),
        Err(_) => return Err(not_a_duration()),
    };
    let millis = n.checked_mul(millis_per_unit).ok_or_else(too_long)?;
    let duration = Duration::from_millis(millis);
    if duration > MAX_TIMEOUT {
        return Err(too_long());
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("596h"), Ok(Duration::from_secs(596 * 3600)));
        assert_eq!(parse_duration("2147483647ms"), Ok(MAX_TIMEOUT));
        assert!(
            parse_duration("soon")
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(
            parse_duration("10 fortnights")
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(parse_duration("h").unwrap_err().contains("not a duration"));
        for too_long in [
            "597h",
            "2147483648ms",
            "1152921504606846976h",
            "18446744073709551615h",
            "99999999999999999999999s",
        ] {
            assert!(
                parse_duration(too_long)
                    .unwrap_err()
                    .contains("out of range"),
                "{too_long}"
            );
        }
    }
}
