//! The warehouse's clock, read once on connecting: how far it is ahead of
//! this host's (see [`crate::clock`]).

use sqlx::{AnyConnection, Row};

use super::{Dialect, Engine};

/// The server's current instant, in milliseconds since the epoch. A MariaDB
/// `NOW(6)` is read in the session's time zone, which idem sets to UTC, and
/// `UNIX_TIMESTAMP` reads it back in the same one.
fn server_now_query(engine: Engine) -> Option<&'static str> {
    match engine {
        Engine::Postgres => {
            Some("SELECT CAST(EXTRACT(EPOCH FROM pg_catalog.clock_timestamp()) * 1000 AS bigint)")
        }
        Engine::MySql => Some("SELECT CAST(UNIX_TIMESTAMP(NOW(6)) * 1000 AS SIGNED)"),
        Engine::Sqlite => None,
    }
}

/// Measures how far the server's clock is ahead of this host's and makes
/// it [`crate::clock::now`]'s. SQLite's file has no clock of its own: it is
/// read by this host's. A server that will not say keeps the offset as it
/// was.
pub(super) async fn measure(dialect: &dyn Dialect, conn: &mut AnyConnection) {
    let Some(query) = server_now_query(dialect.engine()) else {
        crate::clock::set_warehouse_ahead(chrono::Duration::zero());
        return;
    };
    let asked = chrono::Utc::now();
    let Ok(row) = sqlx::query(query).fetch_one(&mut *conn).await else {
        return;
    };
    let answered = chrono::Utc::now();
    let Some(server) = row
        .try_get::<i64, _>(0)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
    else {
        return;
    };
    crate::clock::set_warehouse_ahead(crate::clock::offset(asked, server, answered));
}
