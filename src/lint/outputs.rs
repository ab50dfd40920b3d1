//! The job's SELECT columns against the target's: a name the SELECT
//! returns twice fills one column twice (PostgreSQL describes such a
//! SELECT; its INSERT then fails), and a NOT NULL column without a default
//! that the SELECT leaves out gets no value. Either fails every load of a
//! window with rows, which the run would be the first to say.

use super::{Finding, Severity};
use crate::config::Job;
use crate::warehouse::{Column, Warehouse, WarehouseError, names_column};

/// The findings for `job`, whose SELECT returns the columns `outputs`, into
/// a target of `columns`, of which it computes `computed` itself.
pub(super) async fn findings(
    wh: &Warehouse,
    job: &Job,
    outputs: &[String],
    columns: &[Column],
    computed: &[String],
    out: &mut Vec<Finding>,
) -> Result<(), WarehouseError> {
    let engine = wh.dialect().engine();
    let target = &job.target;
    let mut twice: Vec<&str> = Vec::new();
    for (i, name) in outputs.iter().enumerate() {
        let repeated = outputs[..i].iter().any(|o| names_column(o, name, engine));
        if repeated && !twice.iter().any(|t| names_column(t, name, engine)) {
            twice.push(name);
        }
    }
    for name in twice {
        out.push(Finding::new(
            Severity::Error,
            job.sql_line,
            format!(
                "the job's SELECT returns two columns named {name}: each fills column {name} of {target}, which an INSERT may name once, so every load would fail"
            ),
            "give each column of the SELECT its own name",
        ));
    }
    // A partition column or key the SELECT leaves out is said already.
    let required = |c: &Column| {
        job.partition_column
            .iter()
            .chain(&job.unique_key)
            .any(|r| names_column(r.as_str(), c.name.as_str(), engine))
    };
    let left_out: Vec<&Column> = columns
        .iter()
        .filter(|c| !c.nullable && !required(c))
        .filter(|c| {
            !outputs
                .iter()
                .any(|o| names_column(o, c.name.as_str(), engine))
        })
        .filter(|c| {
            !computed
                .iter()
                .any(|g| g.eq_ignore_ascii_case(c.name.as_str()))
        })
        .collect();
    if left_out.is_empty() {
        return Ok(());
    }
    let filled = wh.filled_columns(target).await?;
    for column in left_out {
        let name = column.name.as_str();
        if filled.iter().any(|f| f.name.eq_ignore_ascii_case(name)) {
            continue;
        }
        out.push(Finding::new(
            Severity::Warning,
            job.sql_line,
            format!(
                "column {name} of {target} is NOT NULL without a default, and the job's SELECT leaves {name} out: every load of a partition with rows would fail, unless a trigger fills it"
            ),
            format!("select {name} in the job's SQL, or give it a default in {target}"),
        ));
    }
    Ok(())
}
