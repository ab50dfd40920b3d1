//! SQLite has no date type: a partition column holds text, and a window's
//! bounds are bound as text too (`2026-01-01` for a day or month,
//! `2026-01-01 05:00:00` for an hour), so a value falls in the window its
//! text sorts into. Values written in another form sort elsewhere than
//! their date says; these findings name the forms that do, and numbers
//! (seconds since 1970, kept as numbers by a column declared `DATE` or
//! `TIMESTAMP`), which SQLite sorts before all text: in no window.

use super::{Finding, Severity};
use crate::config::{Ident, Job};
use crate::numbers::n_rows;
use crate::partition::Grain;
use crate::warehouse::{DATE_GLOB, Engine, Warehouse, WarehouseError};

/// A form of text that sorts into another window than its date's.
struct Form {
    /// SQL true for a value `c` of that form.
    test: String,
    /// Whether the form is of numbers, not text.
    number: bool,
    severity: Severity,
    /// What such a value does, after "N rows of T hold C as text like 'V',".
    does: &'static str,
    fix: &'static str,
}

/// The forms worth naming for a job of `grain`.
fn forms(grain: Grain) -> Vec<Form> {
    let number = Form {
        test: "typeof(c) IN ('integer', 'real')".into(),
        number: true,
        severity: Severity::Error,
        does: "where the window bounds are text: SQLite sorts every number before all text, so it lies in no window: status counts it in none, no load deletes it, and a load writing it fails its window check",
        fix: "write dates as text, 'YYYY-MM-DD' ({date}({pcol}, 'unixepoch') of seconds since 1970, in the job's SQL too: UPDATE {target} SET {pcol} = {date}({pcol}, 'unixepoch') WHERE typeof({pcol}) IN ('integer', 'real'))",
    };
    let not_a_date = Form {
        test: format!("typeof(c) = 'text' AND NOT c GLOB '{DATE_GLOB}'"),
        number: false,
        severity: Severity::Error,
        does: "which does not begin with a date written as the window bounds are ('YYYY-MM-DD'): it sorts by its text among them, not where its date lies, so a load writing it fails its window check, and the load of the window it sorts into (status counts it there) deletes it",
        fix: "write dates as 'YYYY-MM-DD' (date(…) or strftime('%Y-%m-%d', …) in the job's SQL, a month's first day for a month; UPDATE {target} SET {pcol} = date({pcol}) where SQLite reads them)",
    };
    match grain {
        Grain::Hour => vec![
            number,
            not_a_date,
            Form {
                test: format!(
                    "typeof(c) = 'text' AND c GLOB '{DATE_GLOB}' AND length(c) > 10 AND substr(c, 11, 1) <> ' '"
                ),
                number: false,
                severity: Severity::Error,
                does: "which sorts after every hour bound of its day ('YYYY-MM-DD HH:00:00'): only the day's last hour replaces it, so the load of its own hour adds its rows beside it",
                fix: "rewrite them as SQLite's datetime() writes them (UPDATE {target} SET {pcol} = datetime({pcol})), and where the source holds such text compare datetime(its column) with :start and :end in the job's SQL",
            },
            Form {
                // A date alone sorts before its day's first bound, as an
                // hour without seconds before its own.
                test: format!(
                    "typeof(c) = 'text' AND c GLOB '{DATE_GLOB}' AND (length(c) = 10 OR length(c) BETWEEN 11 AND 18 AND substr(c, 11, 1) = ' ' AND c < substr(c, 1, 13) || ':00:00')"
                ),
                number: false,
                severity: Severity::Warning,
                does: "which sorts before the bound of the hour it names ('YYYY-MM-DD HH:00:00'; a date alone, its day's hour 00): it is loaded and counted in the hour before (a date alone in the day before's hour 23)",
                fix: "write the time with seconds (datetime() does: UPDATE {target} SET {pcol} = datetime({pcol})), in the job's SQL as well",
            },
            Form {
                test: format!(
                    "typeof(c) = 'text' AND c GLOB '{DATE_GLOB}' AND length(c) > 19 AND substr(c, 20, 1) <> '.'"
                ),
                number: false,
                severity: Severity::Warning,
                does: "whose offset a text comparison ignores: it is loaded and counted in the hour as written, not in UTC as SQLite's date functions read it",
                fix: "store UTC without an offset (UPDATE {target} SET {pcol} = datetime({pcol})), in the job's SQL as well",
            },
        ],
        Grain::Day | Grain::Month => vec![number, not_a_date],
    }
}

/// The findings for a SQLite job's partition column `pcol`, from the
/// target's values: one query, a count and an example per form.
pub(super) async fn findings(
    wh: &Warehouse,
    job: &Job,
    pcol: &Ident,
    out: &mut Vec<Finding>,
) -> Result<(), WarehouseError> {
    if job.engine != Engine::Sqlite {
        return Ok(());
    }
    let forms = forms(job.grain);
    let mut sql = wh.sql();
    sql.push("SELECT ");
    for (i, form) in forms.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push(&format!(
            "COUNT(CASE WHEN {0} THEN 1 END), MIN(CASE WHEN {0} THEN CAST(c AS TEXT) END)",
            form.test
        ));
    }
    sql.push(" FROM (SELECT ")
        .ident(pcol)
        .push(" AS c FROM ")
        .table(&job.target)
        .push(") WHERE typeof(c) IN ('text', 'integer', 'real')");
    let row = sql.query().fetch_one(&mut *wh.pooled().await?).await?;
    for (i, form) in forms.iter().enumerate() {
        let rows: i64 = sqlx::Row::try_get(&row, 2 * i)?;
        if rows == 0 {
            continue;
        }
        let example: Option<String> = sqlx::Row::try_get(&row, 2 * i + 1).unwrap_or(None);
        let date = if job.grain == Grain::Hour {
            "datetime"
        } else {
            "date"
        };
        let fill = |text: &str| {
            text.replace("{target}", &job.target.to_string())
                .replace("{pcol}", pcol.as_str())
                .replace("{date}", date)
        };
        let example = example.unwrap_or_default();
        let held = if form.number {
            format!("as a number like {example}")
        } else {
            format!("as text like '{example}'")
        };
        out.push(Finding::new(
            form.severity,
            job.lines.partition_column,
            format!(
                "{} of {} {} {pcol} {held}, {}",
                n_rows(rows),
                job.target,
                if rows == 1 { "holds" } else { "hold" },
                form.does,
            ),
            fill(form.fix),
        ));
    }
    Ok(())
}
