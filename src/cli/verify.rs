//! `idem verify JOB PARTITION`: the idempotency proof, with the warehouse
//! left exactly as it was.

use std::path::Path;

use super::output::{noteln, outln};
use super::{Stop, cancel_on_signal, connect, find_job, load_config, parse_bound};
use crate::exit::Exit;
use crate::numbers::n_rows;
use crate::partition::RangeEnd;
use crate::warehouse::WarehouseError;

pub async fn verify(config_path: &Path, job_name: &str, partition: &str) -> Exit {
    let result = async {
        let config = load_config(config_path)?;
        let job = find_job(&config, job_name)?;
        let Some(partition) = parse_bound(job, "PARTITION", Some(partition), RangeEnd::From)?
        else {
            return Err(Stop::usage("PARTITION is required"));
        };
        // A window outside the job's partitions, or not begun, is refused
        // before connecting; one still open may be proved (it all rolls back).
        let now = crate::partition::now_utc();
        let one = crate::engine::Selection {
            from: Some(partition),
            to: Some(partition),
            only: Vec::new(),
            allow_incomplete: true,
        };
        one.range(job, now)
            .map_err(|e| Stop::usage(e.to_string()))?;
        if partition.start > now {
            return Err(Stop::usage(format!(
                "{} has not begun yet (it starts {} UTC): there is nothing to prove",
                partition.name(),
                partition.start.format("%Y-%m-%d %H:%M")
            )));
        }
        let warehouse = connect(&config, 2).await?;
        let cancel = cancel_on_signal("the proof rolls back");
        let v = warehouse.verify_partition(job, &partition, &cancel).await;
        warehouse.close().await;
        let v = match v {
            Err(WarehouseError::Cancelled) => {
                noteln!("idem: verify cancelled: everything was rolled back");
                return Ok(Exit::Cancelled);
            }
            v => v.map_err(|e| Stop::failed(format!("{} {}: {e}", job.name, partition.name())))?,
        };
        let Some(d) = &v.difference else {
            outln!(
                "idempotent: {} {} gives the same {} on every run; everything was rolled back",
                v.job,
                v.partition,
                n_rows(v.rows[0] as i64)
            );
            return Ok(Exit::Ok);
        };
        outln!(
            "NOT idempotent: {} {}: {} and {} differ",
            v.job,
            v.partition,
            d.first,
            d.second
        );
        outln!("  {} only in {}:", n_rows(d.only_in_first as i64), d.first);
        for r in &d.sample_first {
            outln!("    {r}");
        }
        outln!(
            "  {} only in {}:",
            n_rows(d.only_in_second as i64),
            d.second
        );
        for r in &d.sample_second {
            outln!("    {r}");
        }
        outln!(
            "everything was rolled back; `idem lint {}` may name the cause",
            v.job
        );
        Ok(Exit::Failed)
    }
    .await;
    result.unwrap_or_else(Stop::report)
}
