//! Jobs of one config that write the same target table: which tables are
//! the same on an engine, and, for a replace job, the merge job that also
//! writes its target (its loads then take the lock every merge there takes).

use super::{Engine, Ident, Job, Strategy, TableName};

/// Whether two targets, each quoted as written, name the same table on
/// `engine` (PostgreSQL and MariaDB/MySQL on Linux tell `Orders` from
/// `orders`, SQLite does not; `fct` and `public.fct` are not compared).
pub fn same_table(a: &TableName, b: &TableName, engine: Engine) -> bool {
    let same = |x: &Ident, y: &Ident| engine.same_table_name(x.as_str(), y.as_str());
    let schemas = match (&a.schema, &b.schema) {
        (Some(x), Some(y)) => same(x, y),
        (None, None) => true,
        _ => false,
    };
    schemas && same(&a.name, &b.name)
}

/// Notes on each replace job the first merge job of `jobs` writing the same
/// target ([`Job::merged_alongside`]).
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
        job.merged_alongside = merges
            .iter()
            .find(|(_, target)| same_table(target, &job.target, job.engine))
            .map(|(name, _)| name.clone());
    }
}
