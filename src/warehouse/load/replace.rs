//! `replace_partition`: the window's rows deleted and the job's rows
//! inserted, in the caller's transaction, with the checks (window, shrink
//! guard) and both fingerprints taken from the two statements themselves.

use sqlx::AnyConnection;

use super::*;

/// Replaces the window's rows in two statements, each of which also returns
/// what the checks need: the DELETE the old rows' count and fingerprint,
/// the INSERT the new rows' count, fingerprint and how many lie inside the
/// window. Nothing reads the window again.
pub(super) async fn replace(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    t: Target<'_>,
    log: &(dyn Fn(LoadStep) + Send + Sync),
) -> Result<LoadOutcome, WarehouseError> {
    let Target {
        job,
        partition,
        shape,
        ..
    } = t;
    let pcol = partition_column(job)?;
    let kind = shape.partition_kind;
    let hash = fingerprint::row_hash(dialect, &shape.columns, "");

    if matches!(hash, RowHash::Text { .. }) {
        return replace_reading_the_window(dialect, tx, t, log).await;
    }
    let child = shape
        .children
        .iter()
        .find(|c| c.start == partition.start && c.end == partition.end());
    let before = match child {
        // The window is a table of its own: read it once, then empty it
        // whole (inside the transaction: a rollback brings it back).
        Some(child) => {
            let before = fingerprint::of(tx, dialect, &shape.columns, "", |sql| {
                sql.push(" FROM ").table(&child.table);
            })
            .await?;
            let mut truncate = Sql::new(dialect);
            truncate.push("TRUNCATE TABLE ").table(&child.table);
            truncate.query().execute(&mut *tx).await?;
            log(format!(
                "TRUNCATE {} ({} rows): the window is this partition of {}",
                child.table, before.rows, job.target
            ));
            before
        }
        None => {
            let (before, _) = returning(dialect, tx, &hash, None, |delete| {
                delete_window(delete, job, pcol, partition, kind);
                Ok(())
            })
            .await?;
            log(format!(
                "DELETE {} rows in [{}, {})",
                before.rows,
                partition.start,
                partition.end()
            ));
            before
        }
    };

    let window = Some((pcol, partition, kind));
    let target = dialect.quote_table(&job.target);
    let (after, in_window) = returning(dialect, tx, &hash, window, |insert| {
        insert_job_rows(insert, &target, &shape.insert, job, partition)
    })
    .await?;
    let rows_inserted = after.rows;
    log(format!("INSERT {rows_inserted} rows"));
    checked(t, log, before, after, rows_inserted, in_window)
}

/// The checks a replace's transaction must pass before its COMMIT, from
/// what its statements returned: the shrink guard (the rows before are the
/// rows deleted) and the window check; then the outcome, whose fingerprint
/// is the window's (it held nothing but the inserted rows).
fn checked(
    t: Target<'_>,
    log: &(dyn Fn(LoadStep) + Send + Sync),
    before: Fingerprint,
    after: Fingerprint,
    rows_inserted: i64,
    in_window: i64,
) -> Result<LoadOutcome, WarehouseError> {
    let Target {
        job,
        partition,
        shrink_guard,
        ..
    } = t;
    let pcol = partition_column(job)?;
    let rows_deleted = before.rows;
    if let Some(floor) = shrink_guard
        && crate::config::shrinks_too_far(rows_deleted, rows_inserted, floor)
    {
        log(format!(
            "shrink guard: {rows_deleted} rows would become {rows_inserted}; refused"
        ));
        return Err(WarehouseError::SourceShrank {
            partition: partition.name(),
            before: rows_deleted,
            after: rows_inserted,
            floor,
        });
    }

    if in_window != rows_inserted {
        let outside = rows_inserted - in_window;
        log(format!(
            "window check failed: {outside} of {rows_inserted} rows outside the partition"
        ));
        return Err(WarehouseError::Job(format!(
            "job wrote {outside} rows outside its partition {} (its {} values must lie in [{}, {}))",
            partition.name(),
            pcol,
            partition.start,
            partition.end()
        )));
    }
    log(format!(
        "window check: all {rows_inserted} rows inside the partition"
    ));

    let content_changed = before != after;
    log_fingerprint(log, &after, content_changed);
    Ok(LoadOutcome {
        rows_deleted,
        rows_inserted,
        rows_updated: 0,
        rows_after: after.rows,
        fingerprint: after,
        content_changed,
    })
}

/// [`replace`] on an engine that cannot hash rows itself (SQLite): the
/// window is read before (when it has rows) and after, each time as one
/// value of joined row texts, in the same process, so nothing streams row
/// by row; the count after is the window check.
async fn replace_reading_the_window(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    t: Target<'_>,
    log: &(dyn Fn(LoadStep) + Send + Sync),
) -> Result<LoadOutcome, WarehouseError> {
    let Target {
        job,
        partition,
        shape,
        ..
    } = t;
    let pcol = partition_column(job)?;
    let kind = shape.partition_kind;
    let window = |sql: &mut Sql| {
        sql.push(" FROM ").table(&job.target).push(" WHERE ");
        sql.window_filter_as("", pcol, partition, kind);
    };
    let before = fingerprint::of(tx, dialect, &shape.columns, "", window).await?;
    let mut delete = Sql::new(dialect);
    delete_window(&mut delete, job, pcol, partition, kind);
    let rows_deleted = delete.query().execute(&mut *tx).await?.rows_affected() as i64;
    log(format!(
        "DELETE {rows_deleted} rows in [{}, {})",
        partition.start,
        partition.end()
    ));
    let mut insert = Sql::new(dialect);
    insert_job_rows(
        &mut insert,
        &dialect.quote_table(&job.target),
        &shape.insert,
        job,
        partition,
    )?;
    let rows_inserted = insert.query().execute(&mut *tx).await?.rows_affected() as i64;
    log(format!("INSERT {rows_inserted} rows"));
    let after = fingerprint::of(tx, dialect, &shape.columns, "", window).await?;
    // The window was empty after the DELETE: the rows it holds now are the
    // inserted rows that landed inside it.
    let in_window = after.rows;
    checked(t, log, before, after, rows_inserted, in_window)
}

/// Runs the DELETE or INSERT that `statement` writes, with a RETURNING
/// clause giving each written row's hash and, given a window, whether the
/// row lies inside it. Returns the written rows' fingerprint and how many
/// lie inside the window. Where the engine can, the returned rows are
/// aggregated in the same statement; elsewhere they stream back to idem.
async fn returning(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    hash: &RowHash,
    window: Option<(&Ident, &Partition, ColumnKind)>,
    statement: impl FnOnce(&mut Sql) -> Result<(), WarehouseError>,
) -> Result<(Fingerprint, i64), WarehouseError> {
    let RowHash::Sql(expr) = hash else {
        return Err(WarehouseError::Job(
            "internal: rows hashed by idem are read, not returned".into(),
        ));
    };
    let aggregate = dialect.aggregates_returned_rows();
    let mut sql = Sql::new(dialect);
    if aggregate {
        sql.push("WITH w AS (");
    }
    statement(&mut sql)?;
    sql.push(" RETURNING ").push(expr).push(" AS h");
    if let Some((pcol, partition, kind)) = window {
        sql.push(", CASE WHEN ");
        sql.window_filter_as("", pcol, partition, kind);
        sql.push(" THEN 1 ELSE 0 END AS inside");
    }
    if aggregate {
        sql.push(") SELECT COUNT(*), ")
            .push(&dialect.text_expr("COALESCE(SUM(h), 0)"));
        if window.is_some() {
            sql.push(", COUNT(CASE WHEN inside = 1 THEN 1 END)");
        }
        sql.push(" FROM w");
        let row = sql.query().fetch_one(&mut *tx).await?;
        let fp = Fingerprint {
            rows: row.try_get(0)?,
            sum: fingerprint::parse_sum(&row.try_get::<String, _>(1)?)?,
        };
        let inside = if window.is_some() {
            row.try_get(2)?
        } else {
            fp.rows
        };
        return Ok((fp, inside));
    }
    let mut fp = Fingerprint::default();
    let mut inside = 0i64;
    let mut rows = sql.query().fetch(&mut *tx);
    while let Some(row) = futures::TryStreamExt::try_next(&mut rows).await? {
        let h: i64 = row.try_get(0)?;
        fp.add_hash(h as u64);
        inside += if window.is_some() {
            row.try_get::<i64, _>(1)?
        } else {
            1
        };
    }
    Ok((fp, inside))
}
