//! What a MariaDB/MySQL server says of itself at connect: how its
//! `sql_mode` reads SQL text, what it can do, how it compares table names.

use super::MySql;
use crate::config::TableNames;

/// The dialect as the server reads SQL text: idem's sessions take the
/// server's `sql_mode` ([`Dialect::session_setup`]), and with
/// `NO_BACKSLASH_ESCAPES` in it a job's `'C:\'` is a whole string, so its
/// parameters are found as that server sees them; with `ANSI_QUOTES` (or
/// `ANSI`, which the server lists as it) a job's `"fct"` is the table fct,
/// so lineage and lint read it as one.
/// And what the server can do: `RETURNING` or not.
/// And how it compares table names (`lower_case_table_names`: 1 or 2 on
/// Windows, macOS and some managed services, where `Orders` is `orders`).
pub(in crate::warehouse) async fn as_the_server_reads(
    conn: &mut sqlx::AnyConnection,
) -> Result<(&'static MySql, TableNames), sqlx::Error> {
    use sqlx::Row;
    let row = sqlx::query(
        "SELECT CAST(@@SESSION.sql_mode AS CHAR), CAST(VERSION() AS CHAR), CAST(@@lower_case_table_names AS SIGNED)",
    )
    .fetch_one(conn)
    .await?;
    let sql_mode: String = row.try_get(0)?;
    let version: String = row.try_get(1)?;
    let names = TableNames::of_lower_case_table_names(row.try_get(2)?);
    // The tests take the other path on this machine's MariaDB too.
    let told = std::env::var_os("IDEM_TEST_NO_RETURNING").is_some();
    Ok((dialect_of(&sql_mode, &version, told), names))
}

/// The dialect of a server whose session has this `sql_mode` (as the
/// server lists it: `ANSI` is listed with the modes it stands for), of
/// this `VERSION()`, `RETURNING` left unused if `plain`.
pub(super) fn dialect_of(sql_mode: &str, version: &str, plain: bool) -> &'static MySql {
    let has = |mode: &str| sql_mode.split(',').any(|m| m.eq_ignore_ascii_case(mode));
    let backslash = !has("NO_BACKSLASH_ESCAPES");
    let mariadb = version.contains("MariaDB");
    let returning = has_returning(version) && !plain;
    let kind = usize::from(backslash)
        | usize::from(has("ANSI_QUOTES")) << 1
        | usize::from(mariadb) << 2
        | usize::from(returning) << 3;
    &MySql::ALL[kind]
}

/// Whether a server of this `VERSION()` takes `INSERT … RETURNING`:
/// MariaDB 10.5 and later (`10.11.19-MariaDB-0+deb12u1`); MySQL does not.
pub(super) fn has_returning(version: &str) -> bool {
    if !version.contains("MariaDB") {
        return false;
    }
    let mut parts = version
        .split(['.', '-'])
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (10, 5)
}
