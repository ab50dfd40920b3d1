//! A job's ledger history that belongs to another table: the attempts
//! recorded under its name by definitions whose target is not its target
//! now (its `target` changed in idem.toml, or an unrelated job of another
//! table had its name before). They are history, which `idem log` shows
//! with their table, not evidence about the table the job writes now: its
//! state reads leave them out, in the same statements that read the rest.

use std::collections::BTreeMap;

use sqlx::Row;

use super::ledger::{AttemptStatus, definitions_table};
use super::sql::Sql;
use super::{Warehouse, WarehouseError};
use crate::config::{Job, TableName};

/// Whose attempts a job's state read counts: those recorded under its
/// name, less those of the definitions that wrote another table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct JobLedger {
    pub job: String,
    /// The hashes of the definitions recorded under the job's name whose
    /// target is another table than the job's now, each with that table;
    /// by hash.
    pub elsewhere: Vec<(String, TableName)>,
}

/// Loads of a job the ledger holds into another table than its target now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadsElsewhere {
    pub job: String,
    pub target: TableName,
    /// The table they wrote.
    pub table: TableName,
    /// Its successful attempts there.
    pub loads: i64,
}

impl LoadsElsewhere {
    /// What `idem status`, `idem jobs` and the console say of them, of the
    /// config at `path`.
    pub fn note(&self, path: &str) -> String {
        let (loads, them) = match self.loads {
            1 => ("1 load".to_string(), "it"),
            n => (format!("{n} loads"), "them"),
        };
        format!(
            "the ledger holds {loads} of {job} into {table}, which is not its target in {path} ({target}): its partitions do not count {them} (idem log {job} shows {them})",
            job = self.job,
            table = self.table,
            target = self.target,
        )
    }
}

impl From<&str> for JobLedger {
    /// A job name's whole ledger, every definition counted.
    fn from(job: &str) -> JobLedger {
        JobLedger {
            job: job.to_string(),
            elsewhere: Vec::new(),
        }
    }
}

impl JobLedger {
    /// The table the definition `hash` wrote, where that is not the job's
    /// target now.
    pub fn elsewhere(&self, hash: &str) -> Option<&TableName> {
        self.elsewhere
            .binary_search_by(|(h, _)| h.as_str().cmp(hash))
            .ok()
            .map(|i| &self.elsewhere[i].1)
    }

    /// `column = name`, and where the job has definitions that wrote
    /// another table, ` AND hash_column NOT IN (…)` of their hashes: a
    /// condition on the ledger's rows that leaves theirs out. Without such
    /// definitions (the common case) it is the job's condition alone, and
    /// a grouped read stays within the ledger's index; with them, each of
    /// the job's rows is looked up for its hash.
    pub(super) fn push_rows(&self, sql: &mut Sql, column: &str, hash_column: &str) {
        sql.job_is(column, &self.job);
        if !self.elsewhere.is_empty() {
            sql.push(" AND ").push(hash_column).push(" NOT");
            self.push_hashes(sql);
        }
    }

    /// ` IN (…)` of the hashes of the definitions that wrote another table.
    fn push_hashes(&self, sql: &mut Sql) {
        for (i, (hash, _)) in self.elsewhere.iter().enumerate() {
            sql.push(if i == 0 { " IN (" } else { ", " })
                .bind(hash.as_str());
        }
        sql.push(")");
    }
}

/// The target a [`Job::definition_text`] names.
fn target_of(definition: &str) -> Option<TableName> {
    definition
        .lines()
        .take_while(|l| *l != "sql:")
        .find_map(|l| l.strip_prefix("target = "))
        .and_then(|t| TableName::parse(t).ok())
}

/// How much of a definition's text is read for its target: its first two
/// lines (a strategy, then a target of at most 127 characters).
const TARGET_PREFIX: i64 = 400;

impl Warehouse {
    /// What of the ledger a state read of `job` counts ([`JobLedger`]):
    /// one read of the definitions recorded under its name (a row per
    /// definition, each its text's first lines), whatever its attempts.
    pub async fn job_ledger(&self, job: &Job) -> Result<JobLedger, WarehouseError> {
        let mut out = JobLedger::from(job.name.as_str());
        if !self.ledger_presence().await?.definitions {
            return Ok(out);
        }
        let mut sql = self.sql();
        sql.push("SELECT definition_hash, SUBSTR(definition, 1, ")
            .push(&TARGET_PREFIX.to_string())
            .push(") FROM ")
            .table(&definitions_table(self.dialect()))
            .push(" WHERE ")
            .job_is("job", &job.name);
        let mut elsewhere = BTreeMap::new();
        for row in sql.query().fetch_all(&mut *self.pooled().await?).await? {
            let text: String = row.try_get(1)?;
            if let Some(table) = target_of(&text).filter(|t| !job.targets(t, self.table_names())) {
                elsewhere.insert(row.try_get::<String, _>(0)?, table);
            }
        }
        out.elsewhere = elsewhere.into_iter().collect();
        Ok(out)
    }

    /// For each of `jobs` with no attempt into its target now, the loads
    /// the ledger holds under its name into other tables, by table: what
    /// `idem status`, `idem jobs` and the console say its partitions do
    /// not count. Once it is loaded into its target now, they are history
    /// its `idem log` shows, said no more (as of a renamed job's old
    /// name). Beyond [`Warehouse::job_ledger`], two reads of the ledger
    /// (a row of the job's, and its successes counted by hash), only for a
    /// job that has such definitions.
    pub async fn loads_elsewhere(
        &self,
        jobs: &[&Job],
    ) -> Result<Vec<LoadsElsewhere>, WarehouseError> {
        let mut out = Vec::new();
        for job in jobs {
            let ledger = self.job_ledger(job).await?;
            if ledger.elsewhere.is_empty()
                || !self.ledger_presence().await?.attempts
                || self.job_has_attempts(&ledger).await?
            {
                continue;
            }
            let mut sql = self.sql();
            sql.push("SELECT definition_hash, COUNT(*) FROM ")
                .table(&self.dialect().ledger_table())
                .push(" WHERE ")
                .job_is("job", &job.name)
                .push(" AND status = ")
                .bind(AttemptStatus::Succeeded.as_str())
                .push(" AND definition_hash");
            ledger.push_hashes(&mut sql);
            sql.push(" GROUP BY definition_hash");
            let mut by_table: Vec<(TableName, i64)> = Vec::new();
            for row in sql.query().fetch_all(&mut *self.pooled().await?).await? {
                let hash: String = row.try_get(0)?;
                let loads: i64 = row.try_get(1)?;
                let Some(table) = ledger.elsewhere(&hash) else {
                    continue;
                };
                match by_table.iter_mut().find(|(t, _)| t == table) {
                    Some((_, n)) => *n += loads,
                    None => by_table.push((table.clone(), loads)),
                }
            }
            by_table.sort_by_key(|(t, _)| t.to_string());
            out.extend(by_table.into_iter().map(|(table, loads)| LoadsElsewhere {
                job: job.name.clone(),
                target: job.target.clone(),
                table,
                loads,
            }));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definitions_target_is_read_from_its_first_lines() {
        let text = "strategy = merge_key\ntarget = staging.fct\npartition_column = dt\nsql:\ntarget = other\n";
        assert_eq!(
            target_of(text).map(|t| t.to_string()).as_deref(),
            Some("staging.fct")
        );
        assert_eq!(target_of("strategy = merge_key\nsql:\ntarget = x\n"), None);
    }
}
