//! What `idem init` reads of a warehouse: every relation a job could be
//! offered for, with what it is (a table, a partition of one, a view), and
//! the columns a table computes itself.

use sqlx::Row;

use super::{Engine, Warehouse, WarehouseError};
use crate::config::TableName;

/// What a relation of the warehouse is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelationKind {
    Table,
    /// A PostgreSQL partition: its rows are loaded through its parent
    /// (named as `schema.name` or `name`).
    PartitionOf(String),
    View,
    MaterializedView,
    /// Anything else the catalogue lists (a foreign table, a sequence), as
    /// the engine calls it.
    Other(String),
    /// A PostgreSQL table the role may not read: no SELECT on it, or no
    /// USAGE on its schema.
    Unreadable,
}

/// A relation as the catalogue names it: its name need not be a plain
/// identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    /// As written in a config (`schema.name`, or `name` in the connection's
    /// own schema), not quoted.
    pub name: String,
    pub kind: RelationKind,
}

impl Relation {
    /// The name as a config's `target`, when it is made of plain identifiers.
    pub fn table(&self) -> Option<TableName> {
        TableName::parse(&self.name).ok()
    }
}

impl Warehouse {
    /// Every relation a job could write or that looks like one, idem's own
    /// ledger left out, in the order a starter lists them.
    pub async fn relations(&self) -> Result<Vec<Relation>, WarehouseError> {
        let engine = self.dialect.engine();
        let query = match engine {
            Engine::Postgres => {
                "SELECT CASE WHEN n.nspname = current_schema() THEN NULL ELSE CAST(n.nspname AS text) END, \
                 CAST(c.relname AS text), \
                 CASE WHEN c.relispartition THEN 'partition' \
                      WHEN NOT (has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT')) THEN 'unreadable' \
                      ELSE CAST(c.relkind AS text) END, \
                 (SELECT CASE WHEN pn.nspname = current_schema() THEN '' ELSE CAST(pn.nspname AS text) || '.' END \
                         || CAST(p.relname AS text) \
                    FROM pg_catalog.pg_inherits i \
                    JOIN pg_catalog.pg_class p ON p.oid = i.inhparent \
                    JOIN pg_catalog.pg_namespace pn ON pn.oid = p.relnamespace \
                   WHERE i.inhrelid = c.oid LIMIT 1) \
                 FROM pg_catalog.pg_class c \
                 JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') \
                 AND n.nspname NOT IN ('information_schema', 'idem') \
                 AND n.nspname NOT LIKE 'pg\\_%' \
                 ORDER BY n.nspname <> current_schema(), n.nspname, c.relname"
            }
            Engine::MySql => {
                "SELECT CAST(NULL AS CHAR), CAST(table_name AS CHAR), CAST(table_type AS CHAR), \
                 CAST(NULL AS CHAR) FROM information_schema.tables \
                 WHERE table_schema = DATABASE() ORDER BY table_name"
            }
            Engine::Sqlite => {
                "SELECT CAST(NULL AS TEXT), name, type, CAST(NULL AS TEXT) FROM sqlite_master \
                 WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name"
            }
        };
        let mut sql = self.sql();
        sql.push(query);
        let mut relations = Vec::new();
        for row in sql.query().fetch_all(&self.pool).await? {
            let schema: Option<String> = row.try_get(0)?;
            let name: String = row.try_get(1)?;
            let kind: String = row.try_get(2)?;
            let parent: Option<String> = row.try_get(3)?;
            // Without schemas, idem's own tables are named `idem_…`.
            if schema.is_none() && engine != Engine::Postgres && name.starts_with("idem_") {
                continue;
            }
            let kind = match kind.as_str() {
                "r" | "p" | "table" | "BASE TABLE" | "SYSTEM VERSIONED" => RelationKind::Table,
                "partition" => RelationKind::PartitionOf(parent.unwrap_or_default()),
                "v" | "view" | "VIEW" => RelationKind::View,
                "m" => RelationKind::MaterializedView,
                "f" => RelationKind::Other("foreign table".into()),
                "unreadable" => RelationKind::Unreadable,
                other => RelationKind::Other(other.to_lowercase()),
            };
            let name = match schema {
                Some(schema) => format!("{schema}.{name}"),
                None => name,
            };
            relations.push(Relation { name, kind });
        }
        Ok(relations)
    }

    /// The columns of `table` that the table computes itself and an INSERT
    /// may not write: generated columns (stored or virtual) and, on
    /// PostgreSQL, identity columns `GENERATED ALWAYS`. Each with what it
    /// is, for `idem init`, whose starter leaves them out of its SELECT.
    pub async fn generated_columns(
        &self,
        table: &TableName,
    ) -> Result<Vec<(String, &'static str)>, WarehouseError> {
        let mut sql = self.sql();
        match self.dialect.engine() {
            Engine::Postgres => {
                sql.push(
                    "SELECT CAST(a.attname AS text), CASE WHEN a.attidentity = 'a' THEN 'identity' ELSE 'generated' END \
                     FROM pg_catalog.pg_attribute a \
                     JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
                     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                     WHERE a.attnum > 0 AND NOT a.attisdropped \
                     AND (a.attgenerated <> '' OR a.attidentity = 'a') AND n.nspname = ",
                )
                .table_named(table, "current_schema()", "c.relname")
                .push(" ORDER BY a.attnum");
            }
            Engine::MySql => {
                sql.push(
                    "SELECT CAST(column_name AS CHAR), CAST('generated' AS CHAR) \
                     FROM information_schema.columns \
                     WHERE COALESCE(generation_expression, '') <> '' AND table_schema = ",
                )
                .table_named(table, "DATABASE()", "table_name")
                .push(" ORDER BY ordinal_position");
            }
            Engine::Sqlite => {
                // hidden: 2 a virtual generated column, 3 a stored one.
                sql.push("SELECT name, 'generated' FROM pragma_table_xinfo(")
                    .bind(table.name.as_str());
                if let Some(schema) = &table.schema {
                    sql.push(", ").bind(schema.as_str());
                }
                sql.push(") WHERE hidden IN (2, 3) ORDER BY cid");
            }
        }
        let mut generated = Vec::new();
        for row in sql.query().fetch_all(&self.pool).await? {
            let name: String = row.try_get(0)?;
            let kind: String = row.try_get(1)?;
            generated.push((
                name,
                if kind == "identity" {
                    "an identity GENERATED ALWAYS"
                } else {
                    "generated"
                },
            ));
        }
        Ok(generated)
    }
}

/// A SQLite URL as a config keeps it: with the file's absolute path, as a
/// relative one is read from wherever idem runs, not from the config's
/// folder; and without `mode=rwc`, which would make a new, empty warehouse
/// of a later typo in the path. Any other URL as it is.
pub fn config_sqlite_url(url: &str) -> String {
    let Some(file) = super::sqlite::database_file(url) else {
        return url.to_string();
    };
    let file = std::fs::canonicalize(&file)
        .or_else(|_| std::env::current_dir().map(|dir| dir.join(&file)))
        .unwrap_or(file);
    let query: Vec<&str> = url
        .split_once('?')
        .map(|(_, q)| {
            q.split('&')
                .filter(|p| !p.is_empty() && *p != "mode=rwc")
                .collect()
        })
        .unwrap_or_default();
    let mut out = format!("sqlite://{}", file.display());
    if !query.is_empty() {
        out.push('?');
        out.push_str(&query.join("&"));
    }
    out
}
