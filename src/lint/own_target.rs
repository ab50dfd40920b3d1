//! A `replace_partition` job whose SQL reads its own target: the load
//! deletes the window's rows before its SELECT runs, so the SELECT sees
//! none of them, while a dry run (before the delete) counts them. And a
//! starter job of `idem init` that reads no table yet.

use super::{Finding, Severity, file_line, sql::Reading};
use crate::config::{Job, Strategy, TableNames};

/// Whether a table name as the SQL wrote it (each part with whether it was
/// quoted) is `job`'s target, matched as the job's engine reads names and
/// table `names` compare (a connected server's rule, else the engine's
/// default): the same name, in the same schema, a name without one being in the
/// job's home schema (`raw.orders` is not a target `orders` in `public` or
/// the URL's database; where the home cannot be told, any schema matches).
/// The target is quoted as written; in the SQL an unquoted name folds to
/// lower case on PostgreSQL, so `Orders` there reads `orders`, and
/// `"Orders"` another table.
pub fn names_target(written: &[(String, bool)], job: &Job, names: TableNames) -> bool {
    let engine = job.engine;
    let target = &job.target;
    let same = |(part, quoted): &(String, bool), name: &str| {
        names.same(&engine.stored_name(part, *quoted), name)
    };
    let home = job.home_schema.as_deref();
    match written {
        [.., schema, table] => {
            same(table, target.name.as_str())
                && match target.schema.as_ref().map(|s| s.as_str()).or(home) {
                    Some(s) => same(schema, s),
                    None => true,
                }
        }
        [table] => {
            same(table, target.name.as_str())
                && match (target.schema.as_ref(), home) {
                    (Some(s), Some(home)) => names.same(s.as_str(), home),
                    _ => true,
                }
        }
        [] => false,
    }
}

pub(super) fn findings(job: &Job, reading: &Reading, names: TableNames, out: &mut Vec<Finding>) {
    // A starter job that reads no table yet (`idem init` writes `<source>`
    // rather than its target, which a load would read back empty).
    if let Some(line) = reading.placeholder {
        out.push(Finding::new(
            Severity::Error,
            file_line(job, line),
            "the SQL still reads <source>, the placeholder idem init wrote: no engine runs it, so every load of the job fails".into(),
            format!(
                "replace <source> with the table this job loads from (not {}, its target)",
                job.target
            ),
        ));
    }
    // SQL that writes a table is a finding of its own, which names it.
    let one_query = matches!(reading.statements.as_slice(), [s] if s.is_query);
    if job.strategy != Strategy::ReplacePartition || !one_query {
        return;
    }
    let Some(read) = reading
        .tables_written
        .iter()
        .find(|t| names_target(t, job, names))
    else {
        return;
    };
    let read = read
        .iter()
        .map(|(part, _)| part.as_str())
        .collect::<Vec<_>>()
        .join(".");
    out.push(Finding::new(
        Severity::Error,
        file_line(job, 1),
        format!(
            "the SQL reads {read}, the job's own target: a load deletes the window's rows before its SELECT runs, so the SELECT sees none of them and the window is loaded empty (a dry run, reading before the delete, counts them; past the shrink guard, --allow-shrink deletes them)"
        ),
        format!(
            "read the sources {} is built from; to rework a table's own rows, write them to another target, or load with merge_key (which deletes nothing)",
            job.target
        ),
    ));
}
