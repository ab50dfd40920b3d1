//! Jobs of one config that write the same target table: which tables are
//! the same on an engine, and, for a replace job, the merge job that also
//! writes its target (its loads then take the lock every merge there takes).

use super::{Ident, Job, Strategy, TableName, TableNames};

/// Whether two targets, each quoted as written, name the same table where
/// `names` compare as they do (PostgreSQL, and MariaDB/MySQL with
/// `lower_case_table_names = 0`, tell `Orders` from `orders`; SQLite and
/// MariaDB/MySQL folding names do not; `fct` and `public.fct` are not
/// compared).
pub fn same_table(a: &TableName, b: &TableName, names: TableNames) -> bool {
    let same = |x: &Ident, y: &Ident| names.same(x.as_str(), y.as_str());
    let schemas = match (&a.schema, &b.schema) {
        (Some(x), Some(y)) => same(x, y),
        (None, None) => true,
        _ => false,
    };
    schemas && same(&a.name, &b.name)
}

/// Notes on each replace job the merge jobs of `jobs` whose targets may be
/// its own: the same in any case ([`Job::merged_alongside`] tells which is,
/// once it is known how the warehouse compares names).
pub(super) fn note_merges_alongside(jobs: &mut [Job]) {
    let merges: Vec<(String, TableName)> = jobs
        .iter()
        .filter(|j| j.strategy == Strategy::MergeKey)
        .map(|j| (j.name.clone(), j.target.clone()))
        .collect();
    for job in jobs
        .iter_mut()
        .filter(|j| j.strategy == Strategy::ReplacePartition)
    {
        job.merges_alongside = merges
            .iter()
            .filter(|(_, target)| same_table(target, &job.target, TableNames::AnyCase))
            .cloned()
            .collect();
    }
}

impl Job {
    /// A replace job's: the first merge job of the config writing the same
    /// target where table `names` compare as they do, whose merges its
    /// loads then exclude (a merge writes rows in any window, and a
    /// replace deletes whatever its window holds).
    pub fn merged_alongside(&self, names: TableNames) -> Option<&str> {
        self.merges_alongside
            .iter()
            .find(|(_, target)| same_table(target, &self.target, names))
            .map(|(name, _)| name.as_str())
    }

    /// Whether `table` (a target as another definition of this job wrote
    /// it) is this job's target now: the same table on its engine, a name
    /// without a schema read as of the warehouse's home schema where the
    /// other names one (`fct` is `public.fct` on PostgreSQL), where table
    /// `names` compare as they do.
    pub fn targets(&self, table: &TableName, names: TableNames) -> bool {
        let home = self
            .home_schema
            .as_deref()
            .and_then(|s| Ident::parse(s).ok());
        let with_home = |t: &TableName| TableName {
            schema: t.schema.clone().or_else(|| home.clone()),
            name: t.name.clone(),
        };
        same_table(&self.target, table, names)
            || same_table(&with_home(&self.target), &with_home(table), names)
    }
}
