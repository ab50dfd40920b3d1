//! `LIMIT` and its kin: without an `ORDER BY` they keep whichever rows the
//! plan reads first (an error); over an `ORDER BY` that may tie, whichever
//! of the tied rows comes first (a warning: the columns may be unique).
//! `idem verify` catches neither where the plan reads the rows the same
//! way on every run, as it usually does until the table's pages change.

use super::sql::Reading;
use super::{Finding, Severity, file_line};
use crate::config::Job;

pub(super) fn findings(job: &Job, reading: &Reading, out: &mut Vec<Finding>) {
    for u in &reading.unordered {
        let line = file_line(job, u.line);
        let clause = u.clause;
        out.push(match &u.may_tie {
            None => Finding::new(
                Severity::Error,
                line,
                format!(
                    "{clause} without ORDER BY keeps whichever rows the plan reads first: a re-run of the same partition can write other rows"
                ),
                format!(
                    "add an ORDER BY that gives every row its own place (e.g. order by created_at, order_id), or drop the {clause}"
                ),
            ),
            Some(terms) => Finding::new(
                Severity::Warning,
                line,
                format!(
                    "{clause} over ORDER BY {terms}, which may tie: of the rows alike in it, {clause} keeps whichever the plan reads first, so a re-run can write other rows, and idem verify sees it only when the plan reads them in another order"
                ),
                format!(
                    "end the ORDER BY with a column no two rows share (e.g. order by {terms}, order_id), or order by every column the query selects; if {terms} is unique already, this is safe"
                ),
            ),
        });
    }
}
