//! Which ranges a PostgreSQL target's native partitions cover.

use super::super::Dialect;
use super::super::sql::Sql;
use super::Postgres;
use crate::config::TableName;

/// One row per partition of `table` (leaf or partitioned itself, DEFAULT
/// included, and one row with a NULL bound where it has none): whether
/// `table` is partitioned by range on `column` alone, the partition's
/// bound, and `column`'s type (the bounds to advise are written for it).
/// No row where `table` is not partitioned (or not there).
pub(super) fn partition_cover_query(
    d: &Postgres,
    sql: &mut Sql,
    table: &TableName,
    column: &str,
) -> bool {
    sql.push("SELECT pg_get_partkeydef(p.oid) = 'RANGE (' || quote_ident(")
        .bind(column)
        .push(
            ") || ')', pg_get_expr(c.relpartbound, c.oid), \
         (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
          WHERE a.attrelid = p.oid AND a.attname = ",
        )
        .bind(column)
        .push(
            ") FROM pg_class p \
         LEFT JOIN pg_inherits i ON i.inhparent = p.oid \
         LEFT JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE p.relkind = 'p' AND p.oid = to_regclass(",
        )
        .bind(d.quote_table(table))
        .push(")");
    true
}
