//! A merge run racing another run of the same job: once another run has
//! merged a later window, an older window merged after it would set its
//! keys back to older values, so the older one is refused in its
//! transaction, naming the run that overtook it.

use sqlx::{AnyConnection, Row};

use super::ledger::AttemptStatus;
use super::{AttemptMeta, Dialect, Target, Warehouse, WarehouseError};
use crate::config::Strategy;

/// What a merge run knows, as it begins, of its job's merges before it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum MergesBefore {
    /// Not a merge: nothing is checked.
    #[default]
    NotAMerge,
    /// The ledger's latest success row of the job (0 for none).
    Read(i64),
    /// The ledger could not be read, so a later window another run merges
    /// meanwhile could not be told from one merged before: each window is
    /// refused rather than merged unchecked.
    Unread(String),
}

impl Warehouse {
    /// For a merge job: the ledger's latest success row of the job as a run
    /// begins, below which later windows' loads are the run's plan's to
    /// know about (the merge-order warning), not a race.
    pub async fn merges_before_run(&self, job: &crate::config::Job) -> MergesBefore {
        if job.strategy != Strategy::MergeKey {
            return MergesBefore::NotAMerge;
        }
        match self.latest_merge(job).await {
            Ok(id) => MergesBefore::Read(id),
            Err(e) => MergesBefore::Unread(e.to_string()),
        }
    }

    async fn latest_merge(&self, job: &crate::config::Job) -> Result<i64, WarehouseError> {
        if !self.ledger_presence().await?.attempts {
            return Ok(0);
        }
        let mut sql = self.sql();
        sql.push("SELECT COALESCE(MAX(id), 0) FROM ")
            .table(&self.dialect().ledger_table())
            .push(" WHERE ")
            .job_is("job", job.name.as_str())
            .push(" AND status = ")
            .bind(AttemptStatus::Succeeded.as_str());
        Ok(sql
            .query()
            .fetch_one(&mut *self.pooled().await?)
            .await?
            .try_get(0)?)
    }
}

/// Fails a merge window (before it writes, under the lock every merge into
/// the target takes) when another run merged a later window of the job
/// since this run began.
pub(super) async fn refuse_if_overtaken(
    dialect: &'static dyn Dialect,
    tx: &mut AnyConnection,
    t: &Target<'_>,
    meta: &AttemptMeta,
) -> Result<(), WarehouseError> {
    let before = match (&meta.merges_before_run, t.job.strategy) {
        (MergesBefore::Read(before), Strategy::MergeKey) => *before,
        (MergesBefore::Unread(why), Strategy::MergeKey) => {
            return Err(WarehouseError::Job(format!(
                "window {} not merged: which windows of {} were merged before this run began could not be read from the ledger ({why}), and without it a later window another run merges meanwhile would go unseen and this older one would set its keys back to older values; nothing was written. Run it again once the ledger can be read",
                t.partition.name(),
                t.job.name,
            )));
        }
        _ => return Ok(()),
    };
    let mut sql = super::Sql::new(dialect);
    sql.push("SELECT partition_key, run_id, operator, host FROM ")
        .table(&dialect.ledger_table())
        .push(" WHERE ")
        .job_is("job", t.job.name.as_str())
        .push(" AND status = ")
        .bind(AttemptStatus::Succeeded.as_str())
        .push(" AND id > ")
        .bind(before)
        .push(" AND run_id <> ")
        .bind(meta.run_id.as_str())
        .push(" AND partition_key > ")
        .bind(t.partition.name())
        .push(" ORDER BY partition_key DESC LIMIT 1");
    let Some(row) = sql.query().fetch_optional(&mut *tx).await? else {
        return Ok(());
    };
    let later: String = row.try_get(0)?;
    let run: String = row.try_get(1)?;
    let operator: String = row.try_get(2)?;
    let host: String = row.try_get(3)?;
    Err(WarehouseError::Job(format!(
        "window {} not merged: run {run} ({operator} on {host}) merged the later window {later} of {} since this run began, and merging an older window after it would set its keys back to older values; nothing was written. Merge from {} through the latest window once that run is done (idem run {} --from {} --through-latest)",
        t.partition.name(),
        t.job.name,
        t.partition.name(),
        t.job.name,
        t.partition.name(),
    )))
}
