//! `idem diff JOB [PARTITION]`: what changed in a job's definition since a
//! stale partition was loaded.

use std::path::Path;

use super::output::outln;
use super::{ONE_PARTITION, Stop, connect_to_read, find_job, load_config, parse_partition};
use crate::config::DefinitionChange;
use crate::exit::Exit;
use crate::partition::now_utc;
use crate::state::{self, LoadState};

pub async fn diff(config_path: &Path, job_name: &str, partition: Option<&str>) -> Exit {
    super::end_on_signal();
    let result = async {
        let config = load_config(config_path)?;
        let job = find_job(&config, job_name)?;
        // A coarser name (a day of an hourly job) covers the partitions in
        // it, as `log` and `verify` read it: not only its first.
        let wanted = partition
            .map(|p| parse_partition(job, ONE_PARTITION, p))
            .transpose()?;
        if let (Some((first, last)), Some(p)) = (wanted, partition) {
            super::outside_the_job(job, first, last, p, "no load of it to compare with")?;
        }
        let warehouse = connect_to_read(&config, 2).await?;
        let lineage = super::lineage(&config, &warehouse)?;
        let statuses = super::read_states(&warehouse, &config, &lineage, job, now_utc()).await?;
        let latest_stale = |within: &dyn Fn(&state::PartitionStatus) -> bool| {
            statuses
                .iter()
                .filter(|s| s.state == LoadState::Stale && within(s))
                .max_by(|a, b| {
                    let at = |s: &state::PartitionStatus| {
                        s.last_success.as_ref().map(|a| a.finished_at.clone())
                    };
                    at(a).cmp(&at(b))
                })
        };
        // The partition asked for (of a coarser name, its most recently
        // loaded stale one, else its first loaded one), or the most recently
        // loaded stale one.
        let status = match wanted {
            Some((first, last)) => {
                let inside = |s: &state::PartitionStatus| {
                    s.partition.start >= first.start && s.partition.start <= last.start
                };
                latest_stale(&inside).or_else(|| {
                    statuses
                        .iter()
                        .find(|s| inside(s) && s.last_success.is_some())
                })
            }
            None => latest_stale(&|_| true),
        };
        let Some(success) = status.and_then(|s| s.last_success.as_ref()) else {
            outln!(
                "{}: {}",
                job.name,
                match (wanted, partition) {
                    (Some(_), Some(p)) => {
                        format!("{} has no successful load to compare with", p.trim())
                    }
                    _ => "no stale partitions: every load used the current definition".into(),
                }
            );
            return Ok(Exit::Ok);
        };
        let current = job.definition_text();
        if success.definition_hash == job.definition_hash() {
            if let (Some((first, last)), Some(p)) = (wanted, partition)
                && first != last
            {
                outln!(
                    "{}: no stale partitions in {}: every load there used the current definition",
                    job.name,
                    p.trim()
                );
                return Ok(Exit::Ok);
            }
            outln!(
                "{} {}: loaded under the current definition",
                job.name,
                success.partition
            );
            return Ok(Exit::Ok);
        }
        let old = warehouse
            .answering(warehouse.definition(&success.definition_hash))
            .await;
        warehouse.close().await;
        let old = old.map_err(|e| Stop::failed(e.to_string()))?;
        let Some(old) = old else {
            outln!(
                "{} {}: loaded under definition {} which the ledger does not hold",
                job.name,
                success.partition,
                success.definition_hash
            );
            return Ok(Exit::Ok);
        };
        let stale = statuses
            .iter()
            .filter(|s| s.state == LoadState::Stale)
            .count();
        outln!(
            "{} {} was loaded under definition {}; the job is now {} ({stale} stale partitions)",
            job.name,
            success.partition,
            success.definition_hash,
            job.definition_hash()
        );
        let change = DefinitionChange::between(
            &old,
            &current,
            config.warehouse.engine(),
            warehouse.table_names(),
            (
                &format!("loaded ({})", success.definition_hash),
                &format!("now ({})", job.definition_hash()),
            ),
        );
        if let Some(note) = change.note() {
            outln!("{note}");
        }
        outln!("{}", change.unified.trim_end_matches('\n'));
        Ok(Exit::Ok)
    }
    .await;
    result.unwrap_or_else(Stop::report)
}
