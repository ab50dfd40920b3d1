//! `replace_partition`: the window's rows deleted and the job's rows
//! inserted, in the caller's transaction, with the checks (window, shrink
//! guard) and the fingerprints of the window before and after.

use sqlx::AnyConnection;

use crate::numbers::{n_rows, thousands};

use super::*;

/// Replaces the window's rows. Where the engine can hash rows but cannot
/// aggregate what a statement returns (MariaDB), the DELETE and the INSERT
/// return each row's hash ([`replace_returning`]). Elsewhere the window is
/// fingerprinted by one aggregate read before the DELETE and one after the
/// INSERT, around plain statements: on PostgreSQL a `RETURNING` into a CTE
/// made the DELETE twice as slow as the plain one (100k rows: 78 → 151 ms
/// with `RETURNING 1` alone), and reading the window once with its hash
/// costs less (38 ms). There the read before and the DELETE are one
/// statement (`WITH gone AS (DELETE …) SELECT …`, one snapshot for both);
/// and where each row names the transaction that wrote it, a window still
/// holding exactly its last load's rows is not read before at all (that
/// load's fingerprint is the window's, see the `(None, Some(last))` arm).
pub(super) async fn replace(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    t: Target<'_>,
    log: &(dyn Fn(LoadStep) + Send + Sync),
) -> Result<LoadOutcome, WarehouseError> {
    if let Some(hash) = fingerprint::returned_row_hash(dialect, &t.shape.columns, "") {
        return replace_returning(dialect, tx, t, &hash, log).await;
    }
    let Target {
        job,
        partition,
        shape,
        ..
    } = t;
    let w = Window::of(&t)?;
    let window = |sql: &mut Sql| w.from(sql);
    let child = match shape
        .children
        .iter()
        .find(|c| c.start == partition.start && c.end == partition.end())
    {
        Some(child) if child.no_truncate.is_some() => {
            log(format!(
                "{} is this window's partition of {}, emptied by DELETE rather than TRUNCATE: {}",
                child.table,
                job.target,
                child.no_truncate.as_deref().unwrap_or_default()
            ));
            None
        }
        child => child,
    };
    // The window is a table of its own: read it once, then empty it whole
    // (inside the transaction: a rollback brings it back). An empty one, as
    // at a first load, is left as it is: a TRUNCATE makes new files for the
    // table and each of its indexes, which took 45 first loads of 2,000
    // rows a day from 0.21 s to 0.30 s. One detached or dropped since the
    // run read the target is no longer the window's: a detached one keeps
    // its rows, and a dropped one is no table to read, so that is asked
    // before reading it too (a DETACH waits on the read's lock).
    let mut emptied = None;
    if let Some(child) = child {
        let before = match child.still_of(dialect, tx, &job.target).await? {
            true => Some(
                fingerprint::of(tx, dialect, &shape.columns, "", |sql| {
                    sql.push(" FROM ").table(&child.table);
                })
                .await?,
            ),
            false => None,
        };
        match before {
            Some(before) if child.still_of(dialect, tx, &job.target).await? => {
                if before.rows == 0 {
                    log(format!(
                        "{} is empty: nothing to TRUNCATE (the window is this partition of {})",
                        child.table, job.target
                    ));
                } else {
                    let mut truncate = Sql::new(dialect);
                    truncate.push("TRUNCATE TABLE ").table(&child.table);
                    truncate.query().execute(&mut *tx).await?;
                    log(format!(
                        "TRUNCATE {} ({}): the window is this partition of {}",
                        child.table,
                        n_rows(before.rows),
                        job.target
                    ));
                }
                emptied = Some((before, before.rows));
            }
            _ => log(format!(
                "{} is no longer this window's partition of {} (detached or dropped since the run began): left as it is, the window's rows are deleted",
                child.table, job.target
            )),
        }
    }
    let last_load = t.last_load.filter(|_| shape.rows_name_writer);
    let (before, rows_deleted) = match (emptied, last_load) {
        (Some(emptied), _) => emptied,
        // The window was last written by its partition's last load, as
        // the rows themselves say (each names the transaction that wrote
        // it): the DELETE fails at the first row another transaction wrote,
        // and its count shows any of the load's rows gone. Then the window
        // holds exactly the rows that load fingerprinted, and reading them
        // again would give its fingerprint. Otherwise (but for an empty
        // window) the load starts over and reads the window whole
        // (`transact`).
        (None, Some(last)) => {
            let mut delete = Sql::new(dialect);
            w.delete(&mut delete);
            delete.push(" AND ");
            dialect.written_by(&mut delete, last.txid, &|sql: &mut Sql| w.filter(sql));
            let rows = match delete.query().execute(&mut *tx).await {
                Ok(done) => done.rows_affected() as i64,
                Err(sqlx::Error::Database(e)) if e.message().contains(WRITTEN_ELSEWHERE) => {
                    return Err(WarehouseError::WrittenSinceLastLoad(partition.name()));
                }
                Err(e) => return Err(e.into()),
            };
            if rows == last.rows {
                log(format!(
                    "{}, all written by its last load (its fingerprint stands for them)",
                    deleted(rows, &w)
                ));
                (last.fingerprint, rows)
            } else if rows == 0 {
                // No row failed the DELETE and none was deleted: the window
                // was empty (its table emptied or made again since).
                log(deleted(rows, &w));
                (Fingerprint::default(), 0)
            } else {
                return Err(WarehouseError::WrittenSinceLastLoad(partition.name()));
            }
        }
        (None, None) if dialect.deletes_in_with() => {
            let mut sql = Sql::new(dialect);
            sql.push("WITH gone AS (");
            w.delete(&mut sql);
            sql.push(") ");
            // The SELECT sees the window as the DELETE found it: the rows
            // it read are the rows deleted.
            let before = fingerprint::of_after(tx, sql, &shape.columns, "", window).await?;
            log(deleted(before.rows, &w));
            (before, before.rows)
        }
        (None, None) => {
            let before = fingerprint::of(tx, dialect, &shape.columns, "", window).await?;
            let mut delete = Sql::new(dialect);
            w.delete(&mut delete);
            let rows_deleted = delete.query().execute(&mut *tx).await?.rows_affected() as i64;
            log(deleted(rows_deleted, &w));
            (before, rows_deleted)
        }
    };
    let mut insert = Sql::new(dialect);
    insert_job_rows(
        &mut insert,
        &dialect.quote_table(&job.target),
        &shape.insert,
        job,
        partition,
    )?;
    let rows_inserted = insert.query().execute(&mut *tx).await?.rows_affected() as i64;
    log(format!("INSERT {}", n_rows(rows_inserted)));
    let after = fingerprint::of(tx, dialect, &shape.columns, "", window).await?;
    // The window was empty after the DELETE: the rows it holds now are the
    // inserted rows that landed inside it.
    let in_window = after.rows;
    checked(
        t,
        log,
        before,
        rows_deleted,
        after,
        rows_inserted,
        in_window,
    )
}

/// [`replace`] by statements that return each written row's hash: the
/// DELETE the old rows', the INSERT the new rows' with whether each lies
/// inside the window. Nothing reads the window again.
async fn replace_returning(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    t: Target<'_>,
    hash: &str,
    log: &(dyn Fn(LoadStep) + Send + Sync),
) -> Result<LoadOutcome, WarehouseError> {
    let Target {
        job,
        partition,
        shape,
        ..
    } = t;
    let w = Window::of(&t)?;
    let (before, _) = returning(dialect, tx, hash, None, |delete| {
        w.delete(delete);
        Ok(())
    })
    .await?;
    log(deleted(before.rows, &w));
    let target = dialect.quote_table(&job.target);
    let (after, in_window) = returning(dialect, tx, hash, Some(&w), |insert| {
        insert_job_rows(insert, &target, &shape.insert, job, partition)
    })
    .await?;
    let rows_inserted = after.rows;
    log(format!("INSERT {}", n_rows(rows_inserted)));
    checked(t, log, before, before.rows, after, rows_inserted, in_window)
}

/// The log line of a replace's DELETE.
fn deleted(rows: i64, w: &Window<'_>) -> LoadStep {
    format!("DELETE {} in {}", n_rows(rows), w.bounds())
}

/// The checks a replace's transaction must pass before its COMMIT, from
/// what its statements returned: the shrink guard (the rows before are the
/// rows deleted) and the window check; then the outcome, whose fingerprint
/// is the window's (it held nothing but the inserted rows).
fn checked(
    t: Target<'_>,
    log: &(dyn Fn(LoadStep) + Send + Sync),
    before: Fingerprint,
    rows_deleted: i64,
    after: Fingerprint,
    rows_inserted: i64,
    in_window: i64,
) -> Result<LoadOutcome, WarehouseError> {
    let Target {
        partition,
        shrink_guard,
        ..
    } = t;
    let w = Window::of(&t)?;
    if let Some(floor) = shrink_guard
        && crate::config::shrinks_too_far(rows_deleted, rows_inserted, floor)
    {
        log(format!(
            "shrink guard: {} would become {}; refused",
            n_rows(rows_deleted),
            thousands(rows_inserted)
        ));
        return Err(WarehouseError::SourceShrank {
            partition: partition.name(),
            before: rows_deleted,
            after: rows_inserted,
            floor,
        });
    }

    if in_window > rows_inserted {
        // The window was emptied in this transaction: rows it holds beyond
        // the inserted ones were written by another session (or a
        // trigger) while the load ran.
        let extra = in_window - rows_inserted;
        log(format!(
            "window check failed: the partition holds {} more than the load inserted",
            n_rows(extra)
        ));
        return Err(WarehouseError::Job(format!(
            "partition {} holds {} more than the load inserted: something else wrote into it while the load ran (another session outside idem, or a trigger); nothing was committed",
            partition.name(),
            n_rows(extra)
        )));
    }
    if in_window < rows_inserted {
        let outside = rows_inserted - in_window;
        log(format!(
            "window check failed: {} of {} outside the partition",
            thousands(outside),
            n_rows(rows_inserted)
        ));
        return Err(WarehouseError::Job(format!(
            "job wrote {} outside its partition {} (its {} values must lie in {}; a NULL {} lies in none){}",
            n_rows(outside),
            partition.name(),
            w.column,
            w.bounds(),
            w.column,
            if t.job.engine == crate::warehouse::Engine::Sqlite {
                "; SQLite compares them as text, so each must be written as the bounds are, \
                 'YYYY-MM-DD' or 'YYYY-MM-DD HH:MM:SS' ('2026-03' sorts before '2026-03-01')"
            } else {
                ""
            }
        )));
    }
    log(format!(
        "window check: every row inside the partition ({})",
        n_rows(rows_inserted)
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
        other_windows: Vec::new(),
    })
}

/// Runs the DELETE or INSERT that `statement` writes, with a RETURNING
/// clause giving each written row's hash (`hash`, as hexadecimal digits)
/// and, given a window, whether the row lies inside it, in one column (the
/// digits if inside, else `-` and the digits); the rows stream back to
/// idem. Returns the written rows' fingerprint and how many lie inside the
/// window.
async fn returning(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    hash: &str,
    window: Option<&Window<'_>>,
    statement: impl FnOnce(&mut Sql) -> Result<(), WarehouseError>,
) -> Result<(Fingerprint, i64), WarehouseError> {
    let mut sql = Sql::new(dialect);
    statement(&mut sql)?;
    sql.push(" RETURNING ");
    match window {
        // One column, not two: each column of each row costs idem a
        // conversion in the driver.
        Some(w) => {
            sql.push("CASE WHEN ");
            w.filter(&mut sql);
            sql.push(" THEN ")
                .push(hash)
                .push(" ELSE CONCAT('-', ")
                .push(hash)
                .push(") END");
        }
        None => {
            sql.push(hash);
        }
    }
    sql.push(" AS h");
    let mut fp = Fingerprint::default();
    let mut inside = 0i64;
    let mut rows = sql.query().fetch(&mut *tx);
    while let Some(row) = futures::TryStreamExt::try_next(&mut rows).await? {
        let h: &str = row.try_get(0)?;
        let (hex, is_inside) = match h.strip_prefix('-') {
            Some(hex) => (hex, 0),
            None => (h, 1),
        };
        fp.add_hash(fingerprint::parse_returned_hash(hex)?);
        inside += is_inside;
    }
    Ok((fp, inside))
}
