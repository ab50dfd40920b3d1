//! Who runs a backfill, from where, and under which run id: what the
//! ledger records beside each attempt.

use chrono::Utc;

/// Identity of whoever runs the backfill, recorded in the ledger:
/// `IDEM_OPERATOR`, else the login name (from the environment, or the
/// process's user id looked up in /etc/passwd, as cron and containers often
/// leave `$USER` unset), else `uid N`.
pub fn operator() -> String {
    let named = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
    named("IDEM_OPERATOR")
        .or_else(|| named("USER"))
        .or_else(|| named("LOGNAME"))
        .or_else(login_of_uid)
        .unwrap_or_else(|| "unknown".into())
}

/// The login name of this process's real user id, or `uid N`.
fn login_of_uid() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let name = passwd.lines().find_map(|l| {
        let mut fields = l.split(':');
        let name = fields.next()?;
        (fields.nth(1)? == uid).then(|| name.to_string())
    });
    Some(name.unwrap_or_else(|| format!("uid {uid}")))
}

pub fn host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

pub fn new_run_id() -> String {
    format!(
        "{}-{:04x}",
        Utc::now().format("%Y%m%dT%H%M%S%.3f"),
        std::process::id() & 0xffff
    )
}
