//! MariaDB/MySQL accept dates with a zero month or day (`2026-02-00`,
//! `2026-00-00`) unless the server's `sql_mode` has `NO_ZERO_IN_DATE`. A
//! window's bounds compare such a value as just before the 1st of its month
//! (a zero month: before its year's 1 January), so a load replaces it in the
//! window before, while `idem status` counts it in another partition or in
//! none: these findings name such values in the partition column.

use super::{Finding, Severity};
use crate::config::{Ident, Job};
use crate::numbers::n_rows;
use crate::warehouse::{Column, Engine, Warehouse, WarehouseError, names_column};

/// The finding for a MariaDB/MySQL job's date or datetime partition column
/// `pcol` holding zero months or days, from one count over the target.
pub(super) async fn findings(
    wh: &Warehouse,
    job: &Job,
    pcol: &Ident,
    columns: &[Column],
    out: &mut Vec<Finding>,
) -> Result<(), WarehouseError> {
    if job.engine != Engine::MySql {
        return Ok(());
    }
    let dated = columns
        .iter()
        .find(|c| names_column(pcol.as_str(), c.name.as_str(), Engine::MySql))
        .is_some_and(|c| c.holds_instants(Engine::MySql));
    if !dated {
        return Ok(());
    }
    let mut sql = wh.sql();
    sql.push("SELECT COUNT(*), MIN(CAST(c AS CHAR)) FROM (SELECT ")
        .ident(pcol)
        .push(" AS c FROM ")
        .table(&job.target)
        .push(") t WHERE c IS NOT NULL AND (MONTH(c) = 0 OR DAYOFMONTH(c) = 0)");
    let row = sql.query().fetch_one(&mut *wh.pooled().await?).await?;
    let rows: i64 = sqlx::Row::try_get(&row, 0)?;
    if rows == 0 {
        return Ok(());
    }
    let example: Option<String> = sqlx::Row::try_get(&row, 1).unwrap_or(None);
    out.push(Finding::new(
        Severity::Warning,
        job.lines.partition_column,
        format!(
            "{} of {} {} {pcol} with a zero month or day, like '{}': a window's bounds compare it as just before the 1st of its month (a zero month: before its year's 1 January), so a load replaces it in the window before, while idem status counts it in another partition or in none, and that window shows drift",
            n_rows(rows),
            job.target,
            if rows == 1 { "holds" } else { "hold" },
            example.unwrap_or_default(),
        ),
        format!(
            "give those rows real dates (UPDATE {target} SET {pcol} = … WHERE MONTH({pcol}) = 0 OR DAYOFMONTH({pcol}) = 0), correct what writes them, and add NO_ZERO_IN_DATE and NO_ZERO_DATE to the server's sql_mode so that it refuses them",
            target = job.target
        ),
    ));
    Ok(())
}
