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

/// `n` with its noun: `1 attempt`, `2 attempts`, `0 attempts`.
pub fn count(n: impl Into<i64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::{count, thousands};

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
