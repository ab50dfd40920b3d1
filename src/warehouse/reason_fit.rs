//! Whether a run's reason can be recorded where the ledger keeps it: a
//! PostgreSQL database whose encoding is not UTF8 (LATIN1), or a MariaDB
//! ledger made latin1 by an earlier idem, cannot store every character,
//! and a reason one of them cannot store fails every partition's ledger
//! row, its failure unrecorded as well (QA: "重跑" on a LATIN1 database).

use sqlx::{AssertSqlSafe, Row};

use super::{Engine, Warehouse, WarehouseError};

/// PostgreSQL's SQLSTATE for a character the server's encoding lacks.
const UNTRANSLATABLE: &str = "22P05";

impl Warehouse {
    /// Why `reason` cannot be recorded in this warehouse's ledger, if it
    /// cannot: the first character that does not fit, where it would be
    /// stored and in what encoding, and what to do.
    pub async fn reason_misfit(&self, reason: &str) -> Result<Option<String>, WarehouseError> {
        // Every encoding a server offers stores ASCII: nothing to ask.
        if reason.is_ascii() {
            return Ok(None);
        }
        let (encoding, stored_in, fix) = match self.dialect.engine() {
            Engine::Sqlite => return Ok(None),
            Engine::Postgres => {
                let row = sqlx::query("SELECT current_setting('server_encoding')")
                    .fetch_one(&self.pool)
                    .await?;
                let encoding: String = row.try_get(0)?;
                let fix = format!(
                    "write the reason in characters {encoding} has, or keep the warehouse in a database created with ENCODING 'UTF8'"
                );
                (encoding, "this database's encoding".to_string(), fix)
            }
            Engine::MySql => {
                let table = self.dialect.ledger_table().name;
                let row = sqlx::query(
                    "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS \
                     WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND COLUMN_NAME = 'reason'",
                )
                .bind(table.as_str().to_string())
                .fetch_optional(&self.pool)
                .await?;
                // No ledger yet: idem makes it utf8mb4.
                let Some(encoding) = row
                    .map(|r| r.try_get::<Option<String>, _>(0))
                    .transpose()?
                    .flatten()
                else {
                    return Ok(None);
                };
                if encoding == "utf8mb4" || !is_charset_name(&encoding) {
                    return Ok(None);
                }
                let fix = format!(
                    "write the reason in characters {encoding} has, or convert the ledger once: ALTER TABLE {table} CONVERT TO CHARACTER SET utf8mb4"
                );
                let stored_in =
                    format!("idem's ledger ({table}.reason, made {encoding} by an earlier idem)");
                (encoding, stored_in, fix)
            }
        };
        if self.stores(reason, &encoding).await? {
            return Ok(None);
        }
        let mut tried = Vec::new();
        for c in reason.chars() {
            if tried.contains(&c) {
                continue;
            }
            tried.push(c);
            if !self.stores(&c.to_string(), &encoding).await? {
                return Ok(Some(format!(
                    "the reason has \"{c}\" (U+{:04X}), which {stored_in}, {encoding}, cannot store: no attempt of the run could be recorded; {fix}",
                    u32::from(c)
                )));
            }
        }
        Ok(None)
    }

    /// Whether `text` is stored as it is in `encoding`: PostgreSQL refuses
    /// it as it arrives; MariaDB turns what it lacks into `?`.
    async fn stores(&self, text: &str, encoding: &str) -> Result<bool, WarehouseError> {
        if self.dialect.engine() == Engine::Postgres {
            return match sqlx::query("SELECT CAST($1 AS TEXT)")
                .bind(text.to_string())
                .fetch_one(&self.pool)
                .await
            {
                Ok(_) => Ok(true),
                Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some(UNTRANSLATABLE) => {
                    Ok(false)
                }
                Err(e) => Err(e.into()),
            };
        }
        // A character set's name, checked above, is no value: it cannot be bound.
        let query = format!(
            "SELECT CAST(HEX(CONVERT(CONVERT(? USING {encoding}) USING utf8mb4)) = HEX(CONVERT(? USING utf8mb4)) AS SIGNED)"
        );
        let row = sqlx::query(AssertSqlSafe(query))
            .bind(text.to_string())
            .bind(text.to_string())
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get::<i64, _>(0)? == 1)
    }
}

/// A MariaDB character set's name: letters, digits, underscores.
fn is_charset_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
