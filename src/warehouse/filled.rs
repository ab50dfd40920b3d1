//! The columns a table fills itself where an INSERT leaves them out:
//! numbered by the table (a PostgreSQL identity, MariaDB/MySQL's
//! AUTO_INCREMENT, SQLite's rowid) or given by a DEFAULT expression.
//! Generated columns are left out: they follow from the row's own values.

use sqlx::Row;

use super::{Engine, Warehouse, WarehouseError};
use crate::config::TableName;

/// How a table fills a column an INSERT leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Filler {
    /// Numbered by the table: an identity column, AUTO_INCREMENT, or
    /// SQLite's rowid (an `INTEGER PRIMARY KEY`).
    Numbered,
    /// A DEFAULT expression as the catalogue writes it (`now()`,
    /// `nextval('fct_id_seq'::regclass)`, `current_timestamp(6)`).
    Default(String),
}

/// A column of a table and how the table fills it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilledColumn {
    pub name: String,
    pub filler: Filler,
}

/// Each row: the column's name, its DEFAULT expression or NULL, and 1
/// where the table numbers it.
const POSTGRES: &str = "SELECT CAST(a.attname AS text), CAST(pg_get_expr(d.adbin, d.adrelid) AS text), \
     CASE WHEN a.attidentity IN ('a', 'd') THEN 1 ELSE 0 END \
     FROM pg_catalog.pg_attribute a \
     JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
     JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
     LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
     WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' AND n.nspname = ";
const MYSQL: &str = "SELECT CAST(column_name AS CHAR), CAST(column_default AS CHAR), \
     CASE WHEN LOWER(extra) LIKE '%auto_increment%' THEN 1 ELSE 0 END \
     FROM information_schema.columns \
     WHERE COALESCE(generation_expression, '') = '' AND table_schema = ";

impl Warehouse {
    /// The columns of `table` it fills itself, in the table's order.
    pub async fn filled_columns(
        &self,
        table: &TableName,
    ) -> Result<Vec<FilledColumn>, WarehouseError> {
        let mut sql = self.sql();
        match self.dialect().engine() {
            Engine::Postgres => {
                sql.push(POSTGRES)
                    .table_named(table, "current_schema()", "c.relname")
                    .push(" ORDER BY a.attnum");
            }
            Engine::MySql => {
                sql.push(MYSQL)
                    .table_named(table, "DATABASE()", "table_name")
                    .push(" ORDER BY ordinal_position");
            }
            Engine::Sqlite => {
                // A rowid alias: the one primary key column, declared
                // INTEGER, of a table with rowids (whose primary key then
                // has no index of its own).
                let of_table = |sql: &mut super::sql::Sql| {
                    sql.bind(table.name.as_str());
                    if let Some(schema) = &table.schema {
                        sql.push(", ").bind(schema.as_str());
                    }
                    sql.push(")");
                };
                sql.push("SELECT name, dflt_value, CASE WHEN pk = 1 AND upper(type) = 'INTEGER' AND (SELECT COUNT(*) FROM pragma_table_info(");
                of_table(&mut sql);
                sql.push(" WHERE pk > 0) = 1 AND NOT EXISTS (SELECT 1 FROM pragma_index_list(");
                of_table(&mut sql);
                sql.push(" WHERE origin = 'pk') THEN 1 ELSE 0 END FROM pragma_table_info(");
                of_table(&mut sql);
                sql.push(" ORDER BY cid");
            }
        }
        let mut filled = Vec::new();
        for row in sql.query().fetch_all(&mut *self.pooled().await?).await? {
            let name: String = row.try_get(0)?;
            let default: Option<String> = row.try_get(1)?;
            let numbered = row.try_get::<i64, _>(2)? == 1;
            let filler = match default {
                _ if numbered => Filler::Numbered,
                Some(expr) if !expr.trim().eq_ignore_ascii_case("null") => Filler::Default(expr),
                _ => continue,
            };
            filled.push(FilledColumn { name, filler });
        }
        Ok(filled)
    }
}
