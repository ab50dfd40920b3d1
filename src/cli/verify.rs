//! `idem verify JOB PARTITION`: the idempotency proof, with the warehouse
//! left exactly as it was.

use std::path::Path;

use super::output::{noteln, outln};
use super::{
    ONE_PARTITION, Stop, cancel_on_signal, connect_to_read, find_job, load_config, parse_partition,
};
use crate::exit::Exit;
use crate::numbers::{n_partitions, n_rows};
use crate::partition::{Partition, range};
use crate::warehouse::WarehouseError;

pub async fn verify(config_path: &Path, job_name: &str, partition: &str) -> Exit {
    let result = async {
        let config = load_config(config_path)?;
        let job = find_job(&config, job_name)?;
        // A coarser name covers the finer partitions in it, as everywhere
        // (`run --from 2026-11-30` on an hourly job is that day's hours):
        // each of them is proved.
        let (from, to) = parse_partition(job, ONE_PARTITION, partition)?;
        // A window outside the job's partitions, or not begun, is refused
        // before connecting (by the latest the warehouse's clock may read);
        // one still open may be proved (it all rolls back). Which have
        // begun is the warehouse's clock's word, known once connected.
        last_begun_at(job, partition, from, to, crate::clock::latest_unmeasured_now().naive_utc())?;
        let warehouse = connect_to_read(&config, 2).await?;
        let now = crate::partition::now_utc();
        let last_begun = match last_begun_at(job, partition, from, to, now) {
            Ok(last) => last,
            Err(stop) => {
                warehouse.close().await;
                return Err(stop);
            }
        };
        let all = range(from, to);
        let begun = range(from, last_begun);
        let cancel = cancel_on_signal("the proof rolls back");
        let mut exit = Exit::Ok;
        let (mut proved, mut empty) = (0, 0);
        let mut proofs = warehouse.verify_partitions(job, &begun, &cancel);
        while let Some((p, v)) = proofs.next().await {
            let v = match v {
                Err(WarehouseError::Cancelled) => {
                    warehouse.close().await;
                    noteln!("idem: verify cancelled: everything was rolled back");
                    return Ok(Exit::Cancelled);
                }
                Err(e) => {
                    warehouse.close().await;
                    return Err(Stop::failed(format!("{} {}: {e}", job.name, p.name())));
                }
                Ok(v) => v,
            };
            match print(&v) {
                Ok(Proof::Idempotent) => proved += 1,
                Ok(Proof::Empty) => empty += 1,
                Ok(Proof::Differs) => exit = Exit::Failed,
                Err(stop) => {
                    warehouse.close().await;
                    return Err(stop);
                }
            }
            if p.end() > now {
                noteln!(
                    "idem: warning: {} {} has not ended yet (it ends {} UTC): its source may still be filling, so this proves only the rows it reads now; verify it again once it has ended",
                    job.name,
                    p.name(),
                    p.end().format("%Y-%m-%d %H:%M")
                );
            }
        }
        warehouse.close().await;
        let not_begun = all.len() - begun.len();
        if not_begun > 0 {
            noteln!(
                "idem: {} of {} {} not begun yet: not proved",
                n_partitions(not_begun as i64),
                partition.trim(),
                if not_begun == 1 { "has" } else { "have" }
            );
        }
        if all.len() > 1 {
            let unproved = if empty > 0 {
                format!(" ({empty} wrote no rows: not proved)")
            } else {
                String::new()
            };
            outln!(
                "{proved} of {} of {} {} {} idempotent{unproved}",
                n_partitions(begun.len() as i64),
                job.name,
                partition.trim(),
                if proved == 1 { "is" } else { "are" }
            );
        }
        Ok(exit)
    }
    .await;
    result.unwrap_or_else(Stop::report)
}

/// What one partition's proof showed.
/// The last partition of `from..=to` begun at `now` (of today's hours,
/// those that have begun), or why there is nothing to prove.
fn last_begun_at(
    job: &crate::config::Job,
    asked: &str,
    from: Partition,
    to: Partition,
    now: chrono::NaiveDateTime,
) -> Result<Partition, Stop> {
    if from.start > now {
        return Err(Stop::usage(format!(
            "{} has not begun yet (it starts {} UTC): there is nothing to prove",
            asked.trim(),
            from.start.format("%Y-%m-%d %H:%M")
        )));
    }
    super::outside_the_job(job, from, to, asked, "there is nothing to prove")?;
    let last_begun = to.min(Partition::containing(job.grain, now));
    let selection = crate::engine::Selection {
        from: Some(from),
        to: Some(last_begun),
        only: Vec::new(),
        refused: false,
        allow_incomplete: true,
    };
    selection
        .range(job, now)
        .map_err(|e| Stop::usage(e.to_string()))?;
    Ok(last_begun)
}

enum Proof {
    Idempotent,
    /// Every run wrote no rows: the same, but the SQL's `now()` or
    /// `random()` had nothing to show up in.
    Empty,
    Differs,
}

/// Prints one partition's proof.
fn print(v: &crate::warehouse::Verification) -> Result<Proof, Stop> {
    let Some(d) = &v.difference else {
        if v.wrote_nothing() {
            outln!(
                "not proved: {} {} writes no rows (its source has none in the window), which shows nothing of its SQL; everything was rolled back; verify a partition whose source has rows",
                v.job,
                v.partition
            );
            return Ok(Proof::Empty);
        }
        outln!(
            "idempotent: {} {} gives the same {} on every run; everything was rolled back",
            v.job,
            v.partition,
            n_rows(v.rows[0] as i64)
        );
        return Ok(Proof::Idempotent);
    };
    outln!(
        "NOT idempotent: {} {}: {} and {} differ",
        v.job,
        v.partition,
        d.first,
        d.second
    );
    outln!("  {}", d.why());
    // Each side's rows under the target's column names, in its order.
    let header = d.columns.join(" | ");
    outln!("  {} only in {}:", n_rows(d.only_in_first as i64), d.first);
    if !d.sample_first.is_empty() {
        outln!("    {header}");
    }
    for r in &d.sample_first {
        outln!("    {r}");
    }
    outln!(
        "  {} only in {}:",
        n_rows(d.only_in_second as i64),
        d.second
    );
    if !d.sample_second.is_empty() {
        outln!("    {header}");
    }
    for r in &d.sample_second {
        outln!("    {r}");
    }
    outln!(
        "everything was rolled back; `idem lint {}` may name the cause",
        v.job
    );
    Ok(Proof::Differs)
}
