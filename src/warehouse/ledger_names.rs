//! Job names the ledger holds definitions under that a config no longer
//! has: a job renamed in `idem.toml` leaves its loads under its old name,
//! where its new name's state read does not look.

use sqlx::Row;

use super::ledger::definitions_table;
use super::{Warehouse, WarehouseError};
use crate::config::TableName;

/// A job name the ledger holds and the config does not, with the target of
/// the last definition recorded under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetiredName {
    pub job: String,
    pub target: TableName,
}

impl Warehouse {
    /// Each job name of the ledger's definitions that is none of `kept`,
    /// with the target its latest definition wrote. One statement grouped by
    /// job over the definitions table (a row per definition, not per load).
    pub async fn retired_names(&self, kept: &[&str]) -> Result<Vec<RetiredName>, WarehouseError> {
        if !self.ledger_presence().await?.definitions {
            return Ok(Vec::new());
        }
        let table = definitions_table(self.dialect());
        let mut sql = self.sql();
        sql.push("SELECT d.job, d.definition FROM ")
            .table(&table)
            .push(" d JOIN (SELECT job, MAX(recorded_at) AS at FROM ")
            .table(&table);
        for (i, name) in kept.iter().enumerate() {
            sql.push(if i == 0 { " WHERE job NOT IN (" } else { ", " })
                .bind(*name);
        }
        if !kept.is_empty() {
            sql.push(")");
        }
        sql.push(" GROUP BY job) g ON g.job = d.job AND g.at = d.recorded_at ORDER BY d.job");
        let mut out: Vec<RetiredName> = Vec::new();
        for row in sql.query().fetch_all(self.pool()).await? {
            let job: String = row.try_get(0)?;
            let definition: String = row.try_get(1)?;
            let target = definition
                .lines()
                .find_map(|l| l.strip_prefix("target = "))
                .and_then(|t| TableName::parse(t).ok());
            // Two definitions recorded in one instant: the name once.
            if let Some(target) = target
                && out.last().is_none_or(|r| r.job != job)
            {
                out.push(RetiredName { job, target });
            }
        }
        Ok(out)
    }

    /// Whether the ledger holds any attempt of job `name`: one row looked
    /// up by the index that leads with the job.
    pub async fn job_has_attempts(&self, name: &str) -> Result<bool, WarehouseError> {
        if !self.ledger_presence().await?.attempts {
            return Ok(false);
        }
        let mut sql = self.sql();
        sql.push("SELECT 1 FROM ")
            .table(&self.dialect().ledger_table())
            .push(" WHERE job = ")
            .bind(name)
            .push(" LIMIT 1");
        Ok(sql.query().fetch_optional(self.pool()).await?.is_some())
    }
}
