//! `idem diff JOB [PARTITION]`: what changed in a job's definition since a
//! stale partition was loaded.

use std::path::Path;

use similar::TextDiff;

use super::output::outln;
use super::{Stop, connect_to_read, find_job, load_config, parse_bound};
use crate::exit::Exit;
use crate::partition::{RangeEnd, now_utc};
use crate::state::{self, LoadState};

pub async fn diff(config_path: &Path, job_name: &str, partition: Option<&str>) -> Exit {
    let result = async {
        let config = load_config(config_path)?;
        let job = find_job(&config, job_name)?;
        let wanted = match partition {
            Some(p) => parse_bound(job, "PARTITION", Some(p), RangeEnd::From)?,
            None => None,
        };
        let lineage = super::lineage(&config)?;
        let warehouse = connect_to_read(&config, 2).await?;
        let statuses = super::read_states(&warehouse, &config, &lineage, job, now_utc()).await?;
        // The partition asked for, or the most recently loaded stale one.
        let status = match wanted {
            Some(p) => statuses.iter().find(|s| s.partition == p),
            None => statuses
                .iter()
                .filter(|s| s.state == LoadState::Stale)
                .max_by(|a, b| {
                    let at = |s: &state::PartitionStatus| {
                        s.last_success.as_ref().map(|a| a.finished_at.clone())
                    };
                    at(a).cmp(&at(b))
                }),
        };
        let Some(success) = status.and_then(|s| s.last_success.as_ref()) else {
            outln!(
                "{}: {}",
                job.name,
                match wanted {
                    Some(p) => format!("{p} has no successful load to compare with"),
                    None => "no stale partitions: every load used the current definition".into(),
                }
            );
            return Ok(Exit::Ok);
        };
        let current = job.definition_text();
        if success.definition_hash == job.definition_hash() {
            outln!(
                "{} {}: loaded under the current definition",
                job.name,
                success.partition
            );
            return Ok(Exit::Ok);
        }
        let old = warehouse
            .definition(&success.definition_hash)
            .await
            .map_err(|e| Stop::failed(e.to_string()))?;
        warehouse.close().await;
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
        let text = TextDiff::from_lines(&old, &current)
            .unified_diff()
            .header(
                &format!("loaded ({})", success.definition_hash),
                &format!("now ({})", job.definition_hash()),
            )
            .to_string();
        outln!("{}", text.trim_end_matches('\n'));
        Ok(Exit::Ok)
    }
    .await;
    result.unwrap_or_else(Stop::report)
}
