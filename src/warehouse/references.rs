//! Foreign keys of other tables (or of the target itself) that refer to a
//! `replace_partition` target. Each load DELETEs its window, so a key that
//! deletes or rewrites the rows referring to it (`ON DELETE CASCADE`, `SET
//! NULL`, `SET DEFAULT`) would do so at every re-run, even of an unchanged
//! window: such a target is refused before anything is written. A key that
//! restricts the DELETE fails each re-run while rows refer to the window,
//! which lint says.

use sqlx::Row;

use super::{Warehouse, WarehouseError};
use crate::config::TableName;

/// One foreign key referring to a table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The key's name.
    pub name: String,
    /// The table whose rows refer (schema-qualified where the engine says).
    pub table: String,
    /// What a DELETE of a referred row does: `CASCADE`, `SET NULL`, `SET
    /// DEFAULT`, `RESTRICT` or `NO ACTION`.
    pub on_delete: String,
}

impl Reference {
    /// A DELETE of a referred row deletes or rewrites the referring rows
    /// rather than failing.
    pub fn acts_on_delete(&self) -> bool {
        matches!(
            self.on_delete.as_str(),
            "CASCADE" | "SET NULL" | "SET DEFAULT"
        )
    }

    /// What a load's DELETE of its window does to the referring rows.
    fn what_a_delete_does(&self) -> &'static str {
        match self.on_delete.as_str() {
            "CASCADE" => "deletes the rows of",
            "SET NULL" => "sets to NULL the key of the rows of",
            _ => "sets to its default the key of the rows of",
        }
    }
}

impl Warehouse {
    /// The foreign keys that refer to `table`; none where the engine cannot
    /// tell.
    pub async fn references_to(&self, table: &TableName) -> Result<Vec<Reference>, WarehouseError> {
        let mut conn = self.pooled().await?;
        self.references_on(&mut conn, table).await
    }

    /// [`Warehouse::references_to`] on `conn`: a load asks on its own
    /// connection, rather than hold a second where the warehouse limits
    /// connections.
    pub(super) async fn references_on(
        &self,
        conn: &mut sqlx::AnyConnection,
        table: &TableName,
    ) -> Result<Vec<Reference>, WarehouseError> {
        let mut sql = self.sql();
        if !self.dialect().references_query(&mut sql, table) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for row in sql.query().fetch_all(&mut *conn).await? {
            let name: Option<String> = row.try_get(0)?;
            let referring: Option<String> = row.try_get(1)?;
            let on_delete: Option<String> = row.try_get(2)?;
            out.push(Reference {
                name: name.unwrap_or_default(),
                table: referring.unwrap_or_default(),
                on_delete: on_delete.unwrap_or_default().to_uppercase(),
            });
        }
        Ok(out)
    }
}

/// Why a replace into `target` is refused, if a key referring to it would
/// delete or rewrite rows at each load's DELETE.
pub(super) fn deleting_reference(target: &TableName, references: &[Reference]) -> Option<String> {
    let key = references.iter().find(|r| r.acts_on_delete())?;
    Some(format!(
        "{target} is referred to by foreign key {} of {} ON DELETE {}: each load's DELETE of a window {} {} that refer to it, at every re-run, even of an unchanged window; nothing was written. {}",
        key.name,
        key.table,
        key.on_delete,
        key.what_a_delete_does(),
        key.table,
        DELETING_REFERENCE_ADVICE
    ))
}

/// What to do about a key that deletes or rewrites rows on a replace.
pub const DELETING_REFERENCE_ADVICE: &str = "Make the key ON DELETE RESTRICT (a re-run then fails while rows refer to its window), or load the target with merge_key, which deletes nothing";
