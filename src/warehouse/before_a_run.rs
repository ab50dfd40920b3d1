//! The checks before a run, the console's and `idem run`'s alike: each
//! job's target is there (else each partition would fail into the
//! ledger), the session may write, and idem's ledger is made. All under
//! one watch ([`Warehouse::answering`]): a server that stops answering
//! during one ends them, rather than leave the run waiting to begin.

use super::{Warehouse, WarehouseError};
use crate::config::Job;

/// Why a run may not start, found before it did.
#[derive(Debug)]
pub enum NotToRun<'a> {
    /// `job`'s target is not in the warehouse; `alike` names the tables
    /// it has but for case or schema.
    NoTarget {
        job: &'a Job,
        table: String,
        alike: Vec<String>,
    },
    /// The session may not write (a standby, a read-only role): why.
    ReadOnly(String),
    /// The run's reason has a character the ledger cannot store: which,
    /// and what to do ([`Warehouse::reason_misfit`]).
    Reason(String),
    /// idem's ledger could not be made.
    NoLedger(WarehouseError),
}

impl Warehouse {
    /// Why a run of `jobs` may not start, if it may not: a target the
    /// warehouse does not have, then (when `makes_ledger`: a run, not a
    /// preview, which creates nothing) a read-only session or a ledger
    /// that cannot be made. Other errors reading a target's shape are left
    /// to the run, which reports them as it meets them. Err: the warehouse
    /// stopped answering meanwhile.
    pub async fn refusal_before_a_run<'a>(
        &self,
        jobs: &[&'a Job],
        makes_ledger: bool,
        reason: Option<&str>,
    ) -> Result<Option<NotToRun<'a>>, WarehouseError> {
        let checks = async {
            for &job in jobs {
                if let Err(WarehouseError::NoTarget { table, alike }) =
                    self.columns(&job.target).await
                {
                    return Ok(Some(NotToRun::NoTarget { job, table, alike }));
                }
            }
            if let Some(reason) = reason
                && let Some(misfit) = self.reason_misfit(reason).await?
            {
                return Ok(Some(NotToRun::Reason(misfit)));
            }
            if !makes_ledger {
                return Ok(None);
            }
            // A session whose mode cannot be read is left to making the
            // ledger, which says what fails.
            if let Ok(Some(refusal)) = self.read_only_refusal().await {
                return Ok(Some(NotToRun::ReadOnly(refusal)));
            }
            Ok(self.make_ledger().await.err().map(NotToRun::NoLedger))
        };
        self.answering(checks).await
    }
}
