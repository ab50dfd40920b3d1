//! What a partition's run says of its attempts: their failures, as events
//! and as the ledger's rows, and its log lines.

use super::{Event, FailureCause, PartitionResult, PartitionRun};
use crate::partition::Partition;
use crate::warehouse::ledger::{self, Attempt, AttemptStatus};
use crate::warehouse::{AttemptMeta, renumbered};

impl PartitionRun<'_> {
    pub(super) fn failed(
        &self,
        partition: &str,
        attempt: i64,
        error: String,
        cause: FailureCause,
        will_retry: bool,
        duration_ms: u64,
    ) {
        let _ = self.events.send(Event::PartitionFailed {
            run_id: self.run_id.to_string(),
            job: self.backfill.job.name.clone(),
            partition: partition.to_string(),
            attempt,
            error,
            cause,
            will_retry,
            duration_ms,
        });
    }

    /// Says `partition`'s attempt failed, as no ledger row can say: the
    /// warehouse is out of reach, or the attempt's end is not known.
    pub(super) fn failed_unrecorded(
        &self,
        partition: &str,
        attempt: i64,
        error: String,
        duration_ms: u64,
    ) -> PartitionResult {
        self.failed(
            partition,
            attempt,
            error,
            FailureCause::Error,
            false,
            duration_ms,
        );
        PartitionResult::Failed {
            recorded: false,
            lasting: false,
        }
    }

    /// Records a failed attempt, giving back the number the ledger
    /// recorded it under (None if it could not be recorded); a number other
    /// than the planned one is said in its log.
    pub(super) async fn record_failure(
        &self,
        partition: &Partition,
        meta: &AttemptMeta,
        status: AttemptStatus,
        error: &str,
    ) -> Option<i64> {
        let job = &self.backfill.job;
        let attempt = Attempt {
            run_id: meta.run_id.clone(),
            job: job.name.clone(),
            partition: partition.name(),
            attempt: meta.attempt,
            status,
            started_at: meta.started_at.clone(),
            locked_at: None,
            finished_at: ledger::timestamp(crate::clock::now()),
            rows_deleted: 0,
            rows_inserted: 0,
            rows_updated: 0,
            rows_after: 0,
            definition_hash: job.definition_hash(),
            fingerprint: None,
            content_changed: None,
            error: Some(error.to_string()),
            operator: meta.operator.clone(),
            host: meta.host.clone(),
            reason: meta.reason.clone(),
        };
        // The server may have stopped answering since the load ended (or
        // that is how it ended): then the failure is not recorded.
        let record = self.warehouse.record_attempt(&attempt);
        match self.warehouse.answering(record).await {
            Ok(recorded) => {
                if recorded != meta.attempt {
                    self.log(partition, renumbered(meta.attempt, recorded));
                }
                Some(recorded)
            }
            Err(e) => {
                self.log(
                    partition,
                    format!("could not record the failure in the ledger: {e}"),
                );
                None
            }
        }
    }

    /// Sends a line of `partition`'s log.
    pub(super) fn log(&self, partition: &Partition, line: String) {
        let _ = self.events.send(Event::PartitionLog {
            run_id: self.run_id.to_string(),
            job: self.backfill.job.name.clone(),
            partition: partition.name(),
            line,
        });
    }
}
