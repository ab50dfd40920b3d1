//! The time zone a server gives a session that asks for none: a PostgreSQL
//! role's or database's `timezone` (`ALTER ROLE … SET`, `ALTER DATABASE …
//! SET`) or postgresql.conf's; MariaDB's and MySQL's global `time_zone`.
//! idem's sessions never take it (the driver starts each in UTC, and idem
//! sets UTC again); an operator's own `psql` or `mariadb` does, and reads
//! `CAST(ts AS DATE)` of a zoned column as other days than idem's loads.

use sqlx::Row;

use super::rows::text_column;
use super::sql::Sql;
use super::{Engine, Warehouse, WarehouseError};

/// A server's default time zone, where it is not UTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerZone {
    /// As the engine's SQL names it (`America/New_York`, `+05:30`,
    /// MariaDB's `SYSTEM`).
    pub zone: String,
    /// Where it is set, in the words that change it.
    pub set_by: String,
}

/// The role and database settings of PostgreSQL that apply to a new
/// session of this role in this database, the one that wins first: the
/// role's in this database, the role's, the database's, every role's.
const POSTGRES_ROLE_AND_DATABASE: &str = "SELECT CAST(substr(c.setting, 10) AS text), \
     CAST(CASE WHEN d.setrole <> 0 AND d.setdatabase <> 0 THEN 1 \
     WHEN d.setrole <> 0 THEN 2 WHEN d.setdatabase <> 0 THEN 3 ELSE 4 END AS bigint) AS rank, \
     CAST(session_user AS text), CAST(current_database() AS text) \
     FROM pg_catalog.pg_db_role_setting d CROSS JOIN LATERAL unnest(d.setconfig) AS c(setting) \
     WHERE d.setdatabase IN (0, (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())) \
     AND d.setrole IN (0, (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = session_user)) \
     AND lower(c.setting) LIKE 'timezone=%' ORDER BY rank LIMIT 1";

/// postgresql.conf's (or ALTER SYSTEM's) `timezone`, which only a
/// superuser or a member of pg_read_all_settings may read: the session's
/// own `reset_val` is the driver's UTC.
const POSTGRES_FILE: &str = "SELECT CAST(setting AS text), CAST(sourcefile AS text) \
     FROM pg_catalog.pg_file_settings WHERE lower(name) = 'timezone' AND applied";

/// MariaDB's (and MySQL's) global zone, the host's where it is `SYSTEM`,
/// and whether it reads as UTC now and in six months (1, 0; -1 where the
/// server cannot convert to it).
const MYSQL_GLOBAL: &str = "SELECT CAST(@@global.time_zone AS CHAR), \
     CAST(@@system_time_zone AS CHAR), \
     CAST(COALESCE(CONVERT_TZ(UTC_TIMESTAMP(), '+00:00', @@global.time_zone) = UTC_TIMESTAMP() \
     AND CONVERT_TZ(UTC_TIMESTAMP() + INTERVAL 6 MONTH, '+00:00', @@global.time_zone) \
     = UTC_TIMESTAMP() + INTERVAL 6 MONTH, -1) AS SIGNED)";

/// Whether a zone's name is one of UTC's.
pub(super) fn names_utc(zone: &str) -> bool {
    [
        "utc", "etc/utc", "gmt", "etc/gmt", "z", "zulu", "uct", "+00:00", "-00:00", "+00", "0",
    ]
    .contains(&zone.trim().to_ascii_lowercase().as_str())
}

impl Warehouse {
    /// What `idem lint` and `idem init` say of this server's default time
    /// zone ([`Warehouse::server_default_zone`]), where it is not UTC;
    /// nothing where it cannot be read.
    pub async fn server_zone_note(&self) -> Option<String> {
        let server = self.answering(self.server_default_zone()).await.ok()??;
        Some(super::session_zone::server_zone_note(
            self.dialect().engine(),
            &server,
        ))
    }

    /// The time zone this warehouse gives a session that asks for none,
    /// as the operator's own client opens one with this URL's role and
    /// database, where it is not UTC. None on SQLite, where the server
    /// says UTC, and where the role may not read it (PostgreSQL's
    /// postgresql.conf, without pg_read_all_settings).
    pub async fn server_default_zone(&self) -> Result<Option<ServerZone>, WarehouseError> {
        let mut conn = self.pooled().await?;
        let found = match self.dialect().engine() {
            Engine::Sqlite => return Ok(None),
            Engine::Postgres => {
                let setting = sqlx::query(POSTGRES_ROLE_AND_DATABASE)
                    .fetch_optional(&mut *conn)
                    .await?;
                let found = match setting {
                    Some(row) => {
                        let zone = text_column(&row, 0)?.unwrap_or_default();
                        let rank: i64 = row.try_get(1)?;
                        let role = text_column(&row, 2)?.unwrap_or_default();
                        let database = text_column(&row, 3)?.unwrap_or_default();
                        let set_by = match rank {
                            1 => format!("ALTER ROLE {role} IN DATABASE {database} SET timezone"),
                            2 => format!("ALTER ROLE {role} SET timezone"),
                            3 => format!("ALTER DATABASE {database} SET timezone"),
                            _ => "ALTER ROLE ALL SET timezone".to_string(),
                        };
                        Some(ServerZone { zone, set_by })
                    }
                    // Not readable is not known: said nothing of.
                    None => match sqlx::query(POSTGRES_FILE).fetch_optional(&mut *conn).await {
                        Ok(Some(row)) => Some(ServerZone {
                            zone: text_column(&row, 0)?.unwrap_or_default(),
                            set_by: format!(
                                "timezone in {}",
                                text_column(&row, 1)?.unwrap_or("postgresql.conf".into())
                            ),
                        }),
                        _ => None,
                    },
                };
                match found {
                    Some(found)
                        if !postgres_reads_utc(&mut conn, self.dialect(), &found.zone).await =>
                    {
                        Some(found)
                    }
                    _ => None,
                }
            }
            Engine::MySql => {
                let row = sqlx::query(MYSQL_GLOBAL).fetch_one(&mut *conn).await?;
                let zone = text_column(&row, 0)?.unwrap_or_default();
                let host = text_column(&row, 1)?.unwrap_or_default();
                let reads_utc: i64 = row.try_get(2)?;
                let named = if zone.eq_ignore_ascii_case("SYSTEM") {
                    &host
                } else {
                    &zone
                };
                let utc = match reads_utc {
                    -1 => names_utc(named),
                    n => n == 1,
                };
                let set_by = if zone.eq_ignore_ascii_case("SYSTEM") {
                    format!("the server's global time_zone, its host's zone {host}")
                } else {
                    "the server's global time_zone".to_string()
                };
                (!utc).then_some(ServerZone { zone, set_by })
            }
        };
        Ok(found)
    }
}

/// Whether PostgreSQL reads `zone` as UTC now and in six months (a zone
/// on GMT in winter only is not); a name it does not know, by its name.
async fn postgres_reads_utc(
    conn: &mut sqlx::AnyConnection,
    dialect: &'static dyn super::Dialect,
    zone: &str,
) -> bool {
    let mut sql = Sql::new(dialect);
    sql.push(
        "SELECT CAST(count(*) AS bigint) FROM (VALUES (now()), (now() + interval '6 months')) v(t) \
         WHERE (t AT TIME ZONE ",
    )
    .bind(zone)
    .push(") <> (t AT TIME ZONE 'UTC')");
    match sql.query().fetch_one(&mut *conn).await {
        Ok(row) => row.try_get::<i64, _>(0).is_ok_and(|n| n == 0),
        Err(_) => names_utc(zone),
    }
}
