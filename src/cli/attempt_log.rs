//! `idem log JOB [PARTITION]`: a job's attempt history from the ledger,
//! and a renamed job's under the name it was loaded under.

use std::borrow::Cow;
use std::path::Path;

use super::output::{noteln, outln};
use super::retired_names::note_renamed;
use super::status::first_line;
use super::{ONE_PARTITION, Stop, connect_to_read, find_job, load_config, parse_partition};
use crate::config::{Config, Job, same_table};
use crate::exit::Exit;
use crate::warehouse::ledger::AttemptStatus;
use crate::warehouse::{JobLedger, Warehouse, WarehouseError};

/// What an attempt did to the target's rows, each number named for what
/// it counts. A replace deleted and inserted, and reports the rows in the
/// window after (`-3 +3 → 3 in window`); a merge inserts and updates and
/// never deletes: with a partition column it reports the window's rows
/// after (`+1 ~1 → 3 in window`), without one the rows it merged, which
/// the target may hold more of (`+1 ~1 of 2 merged`). A failed or
/// cancelled attempt rolled back: its zeros say nothing of the target.
fn rows_of(job: &Job, a: &crate::warehouse::ledger::Attempt) -> String {
    match a.status {
        AttemptStatus::Succeeded => {}
        // No attempt here: another window's merge (its reason names it).
        AttemptStatus::Moved => return "(rows moved)".to_string(),
        _ => return "(rolled back)".to_string(),
    }
    match (job.strategy, &job.partition_column) {
        (crate::config::Strategy::ReplacePartition, _) => format!(
            "-{} +{} → {} in window",
            a.rows_deleted, a.rows_inserted, a.rows_after
        ),
        (crate::config::Strategy::MergeKey, Some(_)) => format!(
            "+{} ~{} → {} in window",
            a.rows_inserted, a.rows_updated, a.rows_after
        ),
        (crate::config::Strategy::MergeKey, None) => format!(
            "+{} ~{} of {} merged",
            a.rows_inserted, a.rows_updated, a.rows_after
        ),
    }
}

/// An attempt's error, under its row and indented: whole (a PostgreSQL
/// error's DETAIL and HINT lines after its message) where `whole`, the
/// partitions asked for by name; its first line in a job's whole history,
/// which lists every partition's.
fn error_under_the_row(error: &str, whole: bool) -> String {
    if whole {
        error.lines().map(|line| format!("\n    {line}")).collect()
    } else {
        format!("\n    {}", first_line(error))
    }
}

/// The job `name` names in every form of `idem log`: the config's, or a
/// name the ledger holds loads under that the config no longer has (a
/// renamed job's old one), as [`loaded_under`] shapes it, with the
/// warehouse that was read for it (to close). Any other name is unknown;
/// one the ledger could not be read for, the warehouse out of reach or
/// not answering, is said so: it may be an old name.
pub(super) async fn job_to_log<'c>(
    config: &'c Config,
    name: &str,
) -> Result<(Cow<'c, Job>, Option<Warehouse>), Stop> {
    let unknown = match find_job(config, name) {
        Ok(job) => return Ok((Cow::Borrowed(job), None)),
        Err(unknown) => unknown,
    };
    let unread = |e: WarehouseError| {
        Stop::failed(format!(
            "\"{name}\" is no job in {}, and the ledger, which keeps a renamed job's old names, could not be read for it: {e}",
            config.path.display()
        ))
    };
    let wh = match super::read_connection(config, 2).await {
        Ok(wh) => wh,
        Err(e) if e.is_unreachable() => return Err(unread(e)),
        Err(_) => return Err(unknown),
    };
    let old = loaded_under(&wh, config, name).await;
    match old {
        Ok(Some(old)) => Ok((Cow::Owned(old), Some(wh))),
        Ok(None) => {
            wh.close().await;
            Err(unknown)
        }
        Err(e) => {
            wh.close().await;
            Err(unread(e))
        }
    }
}

pub async fn log(config_path: &Path, job_name: &str, partition: Option<&str>) -> Exit {
    super::end_on_signal();
    let result = async {
        let config = load_config(config_path)?;
        let (job, warehouse) = job_to_log(&config, job_name).await?;
        let job = job.as_ref();
        let retired_name = warehouse.is_some();
        // A coarser name (a day of an hourly job, a month of a daily one)
        // covers every partition in it, as --from/--to and verify read it.
        let span = partition
            .map(|p| parse_partition(job, ONE_PARTITION, p))
            .transpose()?;
        // A name no longer in the config ran from and to wherever it did.
        if let (Some((first, last)), Some(p), false) = (span, partition, retired_name) {
            super::outside_the_job(job, first, last, p, "no attempt of it can be recorded")?;
        }
        let one = span
            .filter(|(first, last)| first == last)
            .map(|(p, _)| p.name());
        let warehouse = match warehouse {
            Some(wh) => wh,
            None => connect_to_read(&config, 2).await?,
        };
        let read = warehouse.answering(async {
            let attempts = warehouse.attempts(&job.name, one.as_deref()).await?;
            if !retired_name {
                note_renamed(&warehouse, &config, &[job]).await;
            }
            // Its loads into another table than its target now are shown,
            // with that table: history its partitions do not count.
            let own = match warehouse.job_ledger(job).await {
                Ok(own) => own,
                Err(_) => JobLedger::from(job.name.as_str()),
            };
            Ok((attempts, own))
        });
        let read = read.await;
        warehouse.close().await;
        let (mut attempts, own) = read.map_err(|e| Stop::failed(e.to_string()))?;
        if let Some((first, last)) = span {
            // Names of one grain sort as their partitions do.
            let (first, last) = (first.name(), last.name());
            attempts.retain(|a| a.partition >= first && a.partition <= last);
        }
        if attempts.is_empty() {
            outln!(
                "no attempts recorded for {}{}",
                job.name,
                // One partition by its name (an instant names one too);
                // a coarser name as typed.
                one.as_deref()
                    .or(partition)
                    .map(|p| format!(" {}", p.trim()))
                    .unwrap_or_default()
            );
            return Ok(Exit::Ok);
        }
        // The column as wide as its widest time (24 characters:
        // 2026-11-20T06:00:01.123Z), so that the header stands over it.
        let when = attempts
            .iter()
            .map(|a| a.finished_at.chars().count())
            .max()
            .unwrap_or(0)
            .max("FINISHED (UTC)".len());
        let rows: Vec<String> = attempts.iter().map(|a| rows_of(job, a)).collect();
        let width = rows
            .iter()
            .map(|r| r.chars().count())
            .max()
            .unwrap_or(0)
            .max("ROWS".len());
        outln!(
            "{:<when$} {:<14} {:<4} {:<9} {:<width$} RUN · BY",
            "FINISHED (UTC)",
            "PARTITION",
            "TRY",
            "STATUS",
            "ROWS"
        );
        for (a, rows) in attempts.iter().zip(&rows) {
            outln!(
                "{:<when$} {:<14} {:<4} {:<9} {:<width$} {} by {}@{}{}{}{}",
                a.finished_at,
                a.partition,
                // A moved row is no attempt (its reason names the merge).
                match a.status {
                    AttemptStatus::Moved => "—".to_string(),
                    _ => format!("#{}", a.attempt),
                },
                a.status.as_str(),
                rows,
                a.run_id,
                a.operator,
                a.host,
                own.elsewhere(&a.definition_hash)
                    .map(|table| format!(" · into {table}, not its target now"))
                    .unwrap_or_default(),
                a.reason
                    .as_ref()
                    .map(|r| format!(" · {r}"))
                    .unwrap_or_default(),
                a.error
                    .as_deref()
                    .map(|e| error_under_the_row(e, partition.is_some()))
                    .unwrap_or_default(),
            );
        }
        Ok::<_, Stop>(Exit::Ok)
    }
    .await;
    result.unwrap_or_else(Stop::report)
}

/// Job `name`, no job of `config`, as the ledger holds its loads: the job
/// that loads its target now, shaped as the name's last definition was
/// (strategy, partition column, grain), and said so on stderr. `None`
/// where the ledger holds no such name, or no job of the config loads its
/// target (the name is unknown then), or its ledger cannot be read for
/// another reason than the warehouse being out of reach (the error).
async fn loaded_under(
    warehouse: &Warehouse,
    config: &Config,
    name: &str,
) -> Result<Option<Job>, WarehouseError> {
    let kept: Vec<&str> = config.jobs.iter().map(|j| j.name.as_str()).collect();
    let retired = match warehouse.answering(warehouse.retired_names(&kept)).await {
        Ok(retired) => retired,
        Err(e) if e.is_unreachable() => return Err(e),
        Err(_) => return Ok(None),
    };
    let Some(old) = retired.into_iter().find(|r| r.job == name) else {
        return Ok(None);
    };
    let Some(now) = config
        .jobs
        .iter()
        .find(|j| same_table(&j.target, &old.target, warehouse.table_names()))
    else {
        return Ok(None);
    };
    noteln!(
        "idem: {} has no job \"{name}\"; the ledger holds its loads of {}, which job {} loads now (idem log {} shows that job's): {name}'s follow",
        config.path.display(),
        old.target,
        now.name,
        now.name
    );
    Ok(Some(now.as_loaded_under(name, &old.definition)))
}
