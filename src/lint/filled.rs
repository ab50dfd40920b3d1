//! Target columns the job's SELECT leaves out, which the table fills on
//! every insert: numbered (a serial or identity, AUTO_INCREMENT, SQLite's
//! rowid) or a DEFAULT that reads the clock or a random source. A replace
//! inserts the window's rows anew on every load, so each re-run writes
//! other values there (idem sees its content change, and the jobs
//! downstream go stale). A merge inserts a key's row once and leaves what
//! it does not write as it is, so a column it leaves out is no finding.

use super::{Finding, Severity, sql, volatile_said};
use crate::config::{Job, Strategy};
use crate::warehouse::{Engine, Filler, Warehouse, WarehouseError};

/// The findings for `job`, whose SELECT returns the columns `outputs`.
pub(super) async fn findings(
    wh: &Warehouse,
    job: &Job,
    outputs: &[String],
    out: &mut Vec<Finding>,
) -> Result<(), WarehouseError> {
    if job.strategy != Strategy::ReplacePartition {
        return Ok(());
    }
    let engine = wh.dialect().engine();
    let target = &job.target;
    for column in wh.filled_columns(target).await? {
        let name = &column.name;
        if outputs.iter().any(|o| o.eq_ignore_ascii_case(name)) {
            continue;
        }
        let (how, what, drop) = match &column.filler {
            Filler::Numbered => (
                match engine {
                    Engine::Postgres => "is an identity column".to_string(),
                    Engine::MySql => "is AUTO_INCREMENT".to_string(),
                    Engine::Sqlite => "is its rowid (INTEGER PRIMARY KEY)".to_string(),
                },
                "numbers every row inserted",
                "numbering",
            ),
            Filler::Default(expr) => {
                let reading = sql::read(&format!("select {expr}"), engine);
                let Some(call) = reading.volatile.first() else {
                    continue;
                };
                (
                    format!("defaults to {}", call.call),
                    volatile_said(call.kind).0,
                    "default",
                )
            }
        };
        out.push(Finding::new(
            Severity::Error,
            job.sql_line,
            format!(
                "column {name} of {target} {how}, which {what}, and the job's SELECT leaves {name} out: every load of a partition fills it anew, so a re-run writes different values"
            ),
            format!(
                "select {name} in the job's SQL, computed from the row (the source's own id, a hash of the natural key, or :start / :end for a load time), or drop its {drop} from {target}"
            ),
        ));
    }
    Ok(())
}
