//! The windows a merge changes besides its own. A `merge_key` job with a
//! `partition_column` writes each key's row where that column puts it: an
//! update whose new value lies in another window than the old one moves
//! the row out of the old window and into the new one, and a staged row
//! outside the merge's window lands in another window. Those windows'
//! content changed as much as the merged window's did, and the jobs that
//! read them must see it ([`super::ledger::AttemptStatus::Moved`]).

use std::collections::BTreeSet;

use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use super::*;
use crate::partition::Grain;
use crate::warehouse::counts::buckets;

/// A relation of a merge's matched rows, `m`: the target's row `t` and the
/// staged row `s` of one key, as the merge count reads them.
pub(super) struct Matched<'a> {
    /// ` FROM …` the relation.
    pub from: String,
    /// Whether the staged row differs from the target's (the upsert
    /// writes it).
    pub differs: &'a str,
    /// The target row's partition column before the merge: an alias and
    /// the column, where the job has one.
    pub old: Option<(&'a str, Ident)>,
}

/// The merge's count of matched and changed rows, grouped where the job
/// has a partition column by the window a changed row leaves (the old
/// value's, outside the merge's window; none for the rest): `matched,
/// changed[, window name[, the bucket's text]]` rows. Rows that stay in
/// their window group together, so the count costs a comparison more per
/// row, and the bucket only for rows that move.
pub(super) fn push_matched_count(sql: &mut Sql, t: &Target<'_>, m: &Matched<'_>) {
    let dialect = sql.dialect();
    let counts = |sql: &mut Sql| {
        sql.push("COUNT(*) AS idem_n, COUNT(CASE WHEN ")
            .push(m.differs)
            .push(" THEN 1 END) AS idem_u");
    };
    let Some((alias, column)) = &m.old else {
        sql.push("SELECT ");
        counts(sql);
        sql.push(&m.from);
        return;
    };
    let old = format!("{alias}{}", dialect.quote(column));
    let (bucket, name) = buckets(dialect, &old, t.job.grain, t.shape.partition_kind, "idem_b");
    sql.push("SELECT idem_n, idem_u, ").push(&name);
    if dialect.bucket_window().is_some() {
        sql.push(", CAST(idem_b AS TEXT)");
    }
    sql.push(" FROM (SELECT CASE WHEN ")
        .push(m.differs)
        .push(" AND NOT (");
    sql.window_filter_as(alias, column, t.partition, t.shape.partition_kind);
    sql.push(") THEN ").push(&bucket).push(" END AS idem_b, ");
    counts(sql);
    sql.push(&m.from).push(" GROUP BY idem_b) g");
}

/// Reads [`push_matched_count`]'s rows: matched rows, changed rows, and
/// the windows changed rows left (besides the merge's own).
pub(super) async fn matched_count(
    tx: &mut AnyConnection,
    sql: Sql,
    grain: Grain,
) -> Result<(i64, i64, BTreeSet<String>), WarehouseError> {
    let window = sql.dialect().bucket_window();
    let (mut matched, mut changed, mut left) = (0, 0, BTreeSet::new());
    for row in sql.query().fetch_all(&mut *tx).await? {
        matched += row.try_get::<i64, _>(0)?;
        changed += row.try_get::<i64, _>(1)?;
        if row.len() > 2 {
            left.extend(window_name(&row, 2, window, grain)?);
        }
    }
    Ok((matched, changed, left))
}

/// The windows besides the merge's own that staged rows land in, other
/// than rows the target already holds as they are (those the upsert leaves
/// alone): inserted there, or moved or rewritten there. Reads the stage
/// alone, and looks a staged row up in the target only where it lies
/// outside the merge's window (most often none does).
pub(super) async fn windows_entered(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    t: &Target<'_>,
    differs: &str,
) -> Result<BTreeSet<String>, WarehouseError> {
    let Some(column) = &t.job.partition_column else {
        return Ok(BTreeSet::new());
    };
    let kind = t.shape.partition_kind;
    let new = format!("s.{}", dialect.quote(column));
    let (bucket, name) = buckets(dialect, &new, t.job.grain, kind, "idem_b");
    let window = dialect.bucket_window();
    let mut sql = Sql::new(dialect);
    sql.push("SELECT ").push(&name);
    if window.is_some() {
        sql.push(", CAST(idem_b AS TEXT)");
    }
    sql.push(" FROM (SELECT ")
        .push(&bucket)
        .push(" AS idem_b FROM ")
        .push(&dialect.quote(&stage()))
        .push(" s WHERE NOT (");
    sql.window_filter_as("s.", column, t.partition, kind);
    sql.push(") AND NOT EXISTS (SELECT 1 FROM ")
        .table(&t.job.target)
        .push(" t WHERE ")
        .push(&dialect.key_match(&t.job.unique_key))
        .push(" AND NOT (")
        .push(differs)
        .push(")) GROUP BY ")
        .push(&bucket)
        .push(") g");
    let mut entered = BTreeSet::new();
    for row in sql.query().fetch_all(&mut *tx).await? {
        // The name first; the bucket's text, where the engine needs it, after.
        entered.extend(window_name(&row, 0, window, t.job.grain)?);
    }
    Ok(entered)
}

/// The window named at `at` of a row, or by the bucket's text after it
/// where the engine names some buckets only so.
fn window_name(
    row: &AnyRow,
    at: usize,
    window: Option<fn(&str, Grain) -> Option<String>>,
    grain: Grain,
) -> Result<Option<String>, WarehouseError> {
    let name: Option<String> = row.try_get(at)?;
    match (name, window) {
        (Some(name), _) => Ok(Some(name)),
        (None, Some(window)) => {
            let text: Option<String> = row.try_get(at + 1)?;
            Ok(text.and_then(|t| window(&t, grain)))
        }
        (None, None) => Ok(None),
    }
}
