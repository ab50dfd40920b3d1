//! The time zone a warehouse URL asks its sessions for, or its server
//! gives them by default. idem's sessions take neither: they run in UTC,
//! so that partitions are UTC windows and a job's SQL reads the same in
//! every session. `idem lint` and `idem init` say so, where a user checks
//! what a config means, rather than every command.

use super::Engine;
use super::server_zone::{ServerZone, names_utc};

/// What the URL's parameters ask the session's time zone to be, as the
/// URL's engine reads them: MariaDB and MySQL's `timezone` (or
/// `time-zone`), PostgreSQL's `-c timezone=…` in `options` (or
/// `options[timezone]`); None where they ask none, or ask UTC.
pub fn asked_time_zone(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let (_, query) = rest.split_once('?')?;
    let mysql = matches!(scheme, "mysql" | "mariadb");
    let postgres = matches!(scheme, "postgres" | "postgresql");
    let mut asked = None;
    for param in query.split('&') {
        let Some((key, value)) = param.split_once('=') else {
            continue;
        };
        let (key, value) = (decoded(key), decoded(value));
        match key.to_ascii_lowercase().as_str() {
            "timezone" | "time-zone" if mysql => asked = Some(value),
            "options[timezone]" if postgres => asked = Some(value),
            "options" if postgres => {
                asked = postgres_options_zone(&value).or(asked);
            }
            _ => {}
        }
    }
    asked.filter(|zone| !names_utc(zone))
}

/// The last `timezone` a PostgreSQL `options` string sets: `-c
/// timezone=X`, `-ctimezone=X` or `--timezone=X` (names in any case).
fn postgres_options_zone(options: &str) -> Option<String> {
    let mut words = options.split_whitespace();
    let mut zone = None;
    while let Some(word) = words.next() {
        let setting = match word {
            "-c" => words.next(),
            w => w.strip_prefix("--").or_else(|| w.strip_prefix("-c")),
        };
        if let Some((name, value)) = setting.and_then(|s| s.split_once('='))
            && name.eq_ignore_ascii_case("timezone")
        {
            zone = Some(value.to_string());
        }
    }
    zone
}

/// `text` with its `%XX` escapes decoded.
fn decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What `idem lint` says of a URL asking its sessions for another time
/// zone than UTC: that idem's do not take it, what that means for a job's
/// SQL, and how to write a local day where a job means one.
pub fn session_zone_note(url: &str) -> Option<String> {
    let zone = asked_time_zone(url)?;
    let engine = if url.starts_with("postgres") {
        Engine::Postgres
    } else {
        Engine::MySql
    };
    Some(format!(
        "the warehouse URL asks its sessions for time zone {zone}, but idem's sessions run in UTC whatever it asks: partitions are UTC windows, and the jobs' SQL reads dates and times in UTC (CAST(ts AS DATE) of a zoned column is its UTC day); where a job means the day in {zone}, its SQL says so ({})",
        local_day(engine, &zone)
    ))
}

/// What `idem lint` and `idem init` say of a server whose sessions default
/// to another time zone than UTC: the operator's own client reads in it,
/// idem's sessions do not, so one `CAST(ts AS DATE)` gives other days in
/// each; how to read as idem does, and how a job means a local day.
pub(super) fn server_zone_note(engine: Engine, server: &ServerZone) -> String {
    let (client, read_as_idem) = match engine {
        Engine::Postgres => ("psql", "SET TIME ZONE 'UTC'"),
        _ => ("mariadb or mysql", "SET time_zone = '+00:00'"),
    };
    let zone = &server.zone;
    format!(
        "the server gives sessions that ask for no time zone {zone} ({}), as your own {client} sessions take it, but idem's sessions run in UTC whatever the server's default: partitions are UTC windows, and CAST(ts AS DATE) of a zoned column gives its UTC day in idem's loads but its day in {zone} in your {client}; run {read_as_idem} there to read as idem does, and where a job means the day in {zone}, its SQL says so ({})",
        server.set_by,
        local_day(engine, zone)
    )
}

/// A zoned column `ts`'s day in `zone`, in `engine`'s SQL.
fn local_day(engine: Engine, zone: &str) -> String {
    match engine {
        Engine::Postgres => format!("CAST(ts AT TIME ZONE '{zone}' AS DATE)"),
        _ => format!("CAST(CONVERT_TZ(ts, '+00:00', '{zone}') AS DATE)"),
    }
}

#[cfg(test)]
mod tests {
    use super::asked_time_zone;

    #[test]
    fn the_zone_a_url_asks_for_as_its_engine_reads_it() {
        for (url, zone) in [
            ("mysql://u@h/db?timezone=%2B05:30", Some("+05:30")),
            (
                "mariadb://u@h/db?ssl-mode=disabled&time-zone=Europe/Paris",
                Some("Europe/Paris"),
            ),
            ("mysql://u@h/db?timezone=%2B00:00", None),
            ("mysql://u@h/db", None),
            (
                "postgres://u@h/db?options=-c%20timezone%3DAmerica%2FNew_York",
                Some("America/New_York"),
            ),
            (
                "postgresql://u@h/db?options=-c%20statement_timeout%3D5s%20-cTimeZone%3DAsia/Kolkata",
                Some("Asia/Kolkata"),
            ),
            (
                "postgres://u@h/db?options=--timezone=Pacific/Chatham",
                Some("Pacific/Chatham"),
            ),
            (
                "postgres://u@h/db?options[timezone]=Europe/Berlin",
                Some("Europe/Berlin"),
            ),
            ("postgres://u@h/db?options=-c%20timezone%3DUTC", None),
            (
                "postgres://u@h/db?options=-c%20statement_timeout%3D5s",
                None,
            ),
            // Not a parameter of the engine's driver.
            ("postgres://u@h/db?timezone=Europe/Berlin", None),
            ("sqlite://w.db?timezone=Europe/Berlin", None),
        ] {
            assert_eq!(asked_time_zone(url).as_deref(), zone, "{url}");
        }
    }
}
