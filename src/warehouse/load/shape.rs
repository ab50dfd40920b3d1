//! What a load needs to know of its target (its columns, the job's
//! SELECT columns, native partitions, whether rows name their writer),
//! read from the catalogue once per run.

use std::sync::Arc;

use chrono::NaiveDateTime;
use sqlx::{AnyConnection, Row};

use super::super::partition_cover::range_bound;
use super::super::sql::Sql;
use super::super::{Column, ColumnKind, Dialect, Warehouse, WarehouseError};
use crate::config::{Ident, Job, Strategy, TableName};
use crate::partition::Partition;

/// What a load needs to know of its target, read from the catalogue once
/// per run rather than once per partition.
pub(in crate::warehouse) struct TargetShape {
    /// The target's columns, which fingerprints cover.
    pub(super) columns: Vec<Column>,
    /// The job's SELECT columns, as the target columns they fill.
    pub(super) insert: Vec<Ident>,
    /// What the partition column holds: window bounds are bound as its type.
    /// Without one (a merge's), how the window is compared: in the job's
    /// SQL alone, as `:start` and `:end` (see [`Warehouse::target_shape`]).
    pub(super) partition_kind: ColumnKind,
    /// The target's native range partitions on the partition column
    /// (PostgreSQL): a window that is exactly one of them is emptied by
    /// TRUNCATE of that table.
    pub(super) children: Vec<ChildPartition>,
    /// Each of the target's rows names the transaction that wrote it
    /// (a PostgreSQL table, not a view): a replace can tell whether its
    /// window still holds its last load's rows.
    pub(super) rows_name_writer: bool,
    /// A merge's key columns' collations, in the key's order, where the
    /// stage made from the target loses them (SQLite): from the unique
    /// index on exactly the key, which decides what the upsert matches.
    pub(super) key_collations: Vec<Option<String>>,
    /// A merge's target has a primary key or unique index on exactly its
    /// `unique_key`: without one, nothing keeps a key to one row.
    pub(super) key_unique: bool,
}

/// One native partition of a target: its own table and its range.
pub(super) struct ChildPartition {
    pub(super) table: TableName,
    pub(super) start: NaiveDateTime,
    pub(super) end: NaiveDateTime,
    /// Why it is emptied by DELETE rather than TRUNCATE, where it is: the
    /// role may not truncate it, a DELETE trigger would not fire, a foreign
    /// key refers to it.
    pub(super) no_truncate: Option<String>,
}

impl Warehouse {
    async fn native_partitions(
        &self,
        conn: &mut AnyConnection,
        table: &TableName,
        column: &Ident,
    ) -> Result<Vec<ChildPartition>, WarehouseError> {
        let mut sql = self.sql();
        if !self
            .dialect()
            .native_partitions_query(&mut sql, table, column.as_str())
        {
            return Ok(Vec::new());
        }
        let mut children = Vec::new();
        for row in sql.query().fetch_all(&mut *conn).await? {
            let schema: String = row.try_get(0)?;
            let name: String = row.try_get(1)?;
            let bound: Option<String> = row.try_get(2)?;
            let no_truncate: Option<String> = row.try_get(3)?;
            let (Ok(schema), Ok(name), Some((start, end))) = (
                Ident::parse(&schema),
                Ident::parse(&name),
                bound.as_deref().and_then(range_bound),
            ) else {
                continue;
            };
            children.push(ChildPartition {
                table: TableName {
                    schema: Some(schema),
                    name,
                },
                start,
                end,
                no_truncate,
            });
        }
        Ok(children)
    }
}

impl Warehouse {
    /// [`TargetShape::key_collations`]: empty where the engine's stage keeps
    /// them; a name that is not a plain word is left out.
    async fn key_collations(
        &self,
        conn: &mut AnyConnection,
        job: &Job,
    ) -> Result<Vec<Option<String>>, WarehouseError> {
        let mut sql = self.sql();
        if !self.dialect().key_collations_query(&mut sql, &job.target) {
            return Ok(Vec::new());
        }
        let mut indexes: std::collections::BTreeMap<String, Vec<(String, String)>> =
            Default::default();
        for row in sql.query().fetch_all(&mut *conn).await? {
            let index: String = row.try_get(0)?;
            let column: Option<String> = row.try_get(1)?;
            let collation: Option<String> = row.try_get(2)?;
            indexes.entry(index).or_default().push((
                column.unwrap_or_default().to_lowercase(),
                collation.unwrap_or_default(),
            ));
        }
        let key: Vec<String> = job
            .unique_key
            .iter()
            .map(|k| k.as_str().to_lowercase())
            .collect();
        let Some(columns) = indexes.values().find(|columns| {
            columns.len() == key.len() && columns.iter().all(|(c, _)| key.contains(c))
        }) else {
            return Ok(Vec::new());
        };
        Ok(key
            .iter()
            .map(|k| {
                columns
                    .iter()
                    .find(|(c, _)| c == k)
                    .map(|(_, coll)| coll.clone())
                    .filter(|coll| {
                        !coll.is_empty()
                            && !coll.eq_ignore_ascii_case("BINARY")
                            && coll
                                .chars()
                                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
                    })
            })
            .collect())
    }
}

impl ChildPartition {
    /// Whether this is still the partition of `table` it was when the run
    /// read the target's shape: a partition detached since (to archive it)
    /// is a table of its own, whose TRUNCATE would empty it for nothing.
    /// Asked once the caller has read the child, whose lock a DETACH waits
    /// on until the load's COMMIT.
    pub(super) async fn still_of(
        &self,
        dialect: &'static dyn Dialect,
        conn: &mut AnyConnection,
        table: &TableName,
    ) -> Result<bool, WarehouseError> {
        let mut sql = Sql::new(dialect);
        if !dialect.partition_bound_query(&mut sql, table, &self.table) {
            return Ok(false);
        }
        let Some(row) = sql.query().fetch_optional(&mut *conn).await? else {
            return Ok(false);
        };
        let bound: Option<String> = row.try_get(0)?;
        Ok(bound.as_deref().and_then(range_bound) == Some((self.start, self.end)))
    }
}

/// A target's shape as one run read it: (run id, shape).
pub(in crate::warehouse) type RunShape = (String, Arc<TargetShape>);

impl Warehouse {
    /// The target's shape for a run (read again for another run, so that a
    /// table altered between runs is seen), or read afresh (`run_id` None).
    pub(super) async fn target_shape(
        &self,
        conn: &mut AnyConnection,
        job: &Job,
        partition: &Partition,
        run_id: Option<&str>,
    ) -> Result<Arc<TargetShape>, WarehouseError> {
        if let Some(run) = run_id
            && let Ok(shapes) = self.shapes.lock()
            && let Some((cached_run, shape)) = shapes.get(&job.name)
            && cached_run == run
        {
            return Ok(shape.clone());
        }
        let (columns, odd) = self.all_columns_on(&mut *conn, &job.target).await?;
        if let Some(why) = crate::warehouse::columns::odd_columns_misfit(&job.target, &odd) {
            return Err(WarehouseError::Misfit(why));
        }
        let names: Vec<Ident> = columns.iter().map(|c| c.name.clone()).collect();
        let insert =
            crate::warehouse::columns::select_columns(self, job, partition, &names).await?;
        let engine = self.dialect().engine();
        let partition_kind = match &job.partition_column {
            Some(p) => {
                crate::warehouse::columns::partition_column(&columns, p, &job.target, engine)?
                    .kind(engine)
            }
            // A merge without a partition column compares its window in
            // the job's SQL alone, where `:start` and `:end` are the UTC
            // bounds read in idem's sessions, which run in UTC: its lines
            // write them in UTC, as a zoned column's (QA: unmarked, beside
            // the replaces' UTC bounds, an operator in New York read them
            // as local times). SQLite has no time zones: as written.
            None if engine != crate::config::Engine::Sqlite => ColumnKind::TimestampTz,
            None => ColumnKind::Other,
        };
        let children = match &job.partition_column {
            Some(pcol) if job.truncate_partitions => {
                self.native_partitions(conn, &job.target, pcol).await?
            }
            _ => Vec::new(),
        };
        let mut key_unique = true;
        if job.strategy == Strategy::MergeKey {
            let sets = self.unique_key_sets(&job.target).await?;
            key_unique = crate::warehouse::key_has_index(job, &sets);
            if self.dialect().upsert_matches_any_unique_index()
                && let Some(why) = crate::warehouse::columns::upsert_misfit(job, &sets, &insert)
            {
                return Err(WarehouseError::Misfit(why));
            }
            // SQLite's ON CONFLICT names the key's index, and fails each
            // window without one in words that do not say what to add.
            if !key_unique && self.dialect().engine() == crate::warehouse::Engine::Sqlite {
                let keys = job
                    .unique_key
                    .iter()
                    .map(Ident::as_str)
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(WarehouseError::Misfit(format!(
                    "no primary key or unique index of {} is ({keys}): INSERT … ON CONFLICT ({keys}) needs one to match rows by; add one: create unique index on {} ({keys})",
                    job.target, job.target
                )));
            }
        }
        if job.strategy == Strategy::ReplacePartition {
            let references = self.references_on(conn, &job.target).await?;
            if let Some(why) =
                crate::warehouse::references::deleting_reference(&job.target, &references)
            {
                return Err(WarehouseError::Misfit(why));
            }
        }
        let key_collations = match job.strategy {
            Strategy::MergeKey => self.key_collations(conn, job).await?,
            Strategy::ReplacePartition => Vec::new(),
        };
        // Only a replace trusts a last load: a merge's shape needs no asking.
        let mut writers = self.sql();
        let rows_name_writer = job.strategy == Strategy::ReplacePartition
            && self
                .dialect()
                .rows_name_writer_query(&mut writers, &job.target)
            && writers.query().fetch_optional(&mut *conn).await?.is_some();
        let shape = Arc::new(TargetShape {
            columns,
            insert,
            partition_kind,
            children,
            rows_name_writer,
            key_collations,
            key_unique,
        });
        if let Some(run) = run_id
            && let Ok(mut shapes) = self.shapes.lock()
        {
            shapes.insert(job.name.clone(), (run.to_string(), shape.clone()));
        }
        Ok(shape)
    }
}
