//! Job names the ledger holds definitions under that a config no longer
//! has: a job renamed in `idem.toml` leaves its loads under its old name,
//! where its new name's state read does not look.

use std::collections::BTreeMap;

use sqlx::Row;

use super::ledger::definitions_table;
use super::ledger_targets::JobLedger;
use super::{Warehouse, WarehouseError};
use crate::config::{Config, Job, TableName, same_table};

/// A job name the ledger holds and the config does not, with the last
/// definition recorded under it and the target that definition wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetiredName {
    pub job: String,
    pub target: TableName,
    /// As [`Job::definition_text`] wrote it.
    pub definition: String,
}

/// A job of the config with no load of its own, whose target the ledger
/// holds loads of under job names the config no longer has: renamed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    pub job: String,
    pub target: TableName,
    /// The names it was loaded under, the one loaded last first: naming
    /// the job so again takes that name's loads back.
    pub before: Vec<String>,
}

impl Warehouse {
    /// Each job name of the ledger's definitions that is none of `kept`,
    /// with its latest definition, by name. Names are told apart byte for
    /// byte (a `_ci` collation would read "Orders" as "orders"), so the
    /// latest per name is picked here from the definitions' names and
    /// times (a row per definition and name, not per load), and only the
    /// picked definitions' texts are read.
    pub async fn retired_names(&self, kept: &[&str]) -> Result<Vec<RetiredName>, WarehouseError> {
        if !self.ledger_presence().await?.definitions {
            return Ok(Vec::new());
        }
        let table = definitions_table(self.dialect());
        let mut sql = self.sql();
        sql.push("SELECT job, recorded_at, definition_hash FROM ")
            .table(&table);
        let mut latest: BTreeMap<String, (String, String)> = BTreeMap::new();
        for row in sql.query().fetch_all(&mut *self.pooled().await?).await? {
            let job: String = row.try_get(0)?;
            let at: String = row.try_get(1)?;
            let hash: String = row.try_get(2)?;
            if kept.contains(&job.as_str()) {
                continue;
            }
            match latest.get(&job) {
                Some((seen, _)) if *seen >= at => {}
                _ => {
                    latest.insert(job, (at, hash));
                }
            }
        }
        if latest.is_empty() {
            return Ok(Vec::new());
        }
        let mut sql = self.sql();
        sql.push("SELECT definition_hash, definition FROM ")
            .table(&table);
        let mut hashes: Vec<&str> = latest.values().map(|(_, h)| h.as_str()).collect();
        hashes.sort_unstable();
        hashes.dedup();
        for (i, hash) in hashes.iter().enumerate() {
            sql.push(if i == 0 {
                " WHERE definition_hash IN ("
            } else {
                ", "
            })
            .bind(*hash);
        }
        sql.push(")");
        let mut texts: BTreeMap<String, String> = BTreeMap::new();
        for row in sql.query().fetch_all(&mut *self.pooled().await?).await? {
            texts.insert(row.try_get(0)?, row.try_get(1)?);
        }
        Ok(latest
            .into_iter()
            .filter_map(|(job, (_, hash))| {
                let definition = texts.get(&hash)?.clone();
                let target = definition
                    .lines()
                    .find_map(|l| l.strip_prefix("target = "))
                    .and_then(|t| TableName::parse(t).ok())?;
                Some(RetiredName {
                    job,
                    target,
                    definition,
                })
            })
            .collect())
    }

    /// Each of `shown` that has no attempt of its own while the ledger
    /// holds loads of its target under names `config` no longer has, with
    /// those names, the one loaded last first. What `idem status`, `idem
    /// jobs`, `idem log` and the console say of a renamed job.
    pub async fn renamed_jobs(
        &self,
        config: &Config,
        shown: &[&Job],
    ) -> Result<Vec<Renamed>, WarehouseError> {
        let kept: Vec<&str> = config.jobs.iter().map(|j| j.name.as_str()).collect();
        let retired = self.retired_names(&kept).await?;
        let names = self.table_names();
        let mut out = Vec::new();
        for job in shown {
            let olds: Vec<&RetiredName> = retired
                .iter()
                .filter(|old| same_table(&job.target, &old.target, names))
                .collect();
            // Loaded under its new name since, the job was renamed on
            // purpose: its old names' loads are history, not lost.
            // Attempts under its name into another table (a job of that
            // name before it) are not its loads.
            if olds.is_empty() || self.job_has_attempts(&self.job_ledger(job).await?).await? {
                continue;
            }
            let mut loaded = Vec::new();
            for old in olds {
                let last = self.ledger_mark(&old.job).await?.last_id;
                if last > 0 {
                    loaded.push((last, old.job.clone()));
                }
            }
            if loaded.is_empty() {
                continue;
            }
            loaded.sort_by_key(|(last, _)| std::cmp::Reverse(*last));
            out.push(Renamed {
                job: job.name.clone(),
                target: job.target.clone(),
                before: loaded.into_iter().map(|(_, name)| name).collect(),
            });
        }
        Ok(out)
    }

    /// Whether the ledger holds any attempt of a job into its target now
    /// ([`JobLedger`]): one row looked up by the index that leads with the
    /// job.
    pub async fn job_has_attempts(&self, job: &JobLedger) -> Result<bool, WarehouseError> {
        if !self.ledger_presence().await?.attempts {
            return Ok(false);
        }
        let mut sql = self.sql();
        sql.push("SELECT 1 FROM ")
            .table(&self.dialect().ledger_table())
            .push(" WHERE ");
        job.push_rows(&mut sql, "job", "definition_hash");
        sql.push(" LIMIT 1");
        Ok(sql
            .query()
            .fetch_optional(&mut *self.pooled().await?)
            .await?
            .is_some())
    }
}
