//! The backfill engine: plans which partitions to load, runs them with bounded
//! concurrency, retries and cancellation, and reports every step as an
//! [`Event`] on a channel. It knows nothing of who listens.

mod admission;
pub mod cascade;
mod gate;
mod plan_error;
pub use gate::Gate;
pub use plan_error::PlanError;
mod events;
mod identity;
mod merge_order;
mod said;
mod selection;
mod summary;
pub use identity::{host, new_run_id, operator};
pub use merge_order::MergeOrderRisk;
pub use selection::Selection;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use admission::Admission;
pub use admission::within_grant;
use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use events::{
    Event, FailureCause, NotLoaded, NotLoadedUpstream, SCHEMA_VERSION, UpstreamUnread,
    concurrency_lowered,
};
use summary::PartitionResult;
pub use summary::{RunSummary, refusals_counted, stopped_short};

use crate::config::{Job, Strategy};
use crate::partition::{Partition, RangeEnd, now_utc};
use crate::state;
use crate::warehouse::ledger::{self, AttemptStatus};
use crate::warehouse::{AttemptMeta, Loaded, Warehouse, WarehouseError};

/// What a backfill will do: one job, the partitions to load in order.
#[derive(Debug, Clone)]
pub struct Backfill {
    pub job: Job,
    pub partitions: Vec<Partition>,
    pub concurrency: usize,
    pub retries: u32,
    pub reason: Option<String>,
    /// Attempts already made per partition, so attempt numbers continue.
    pub prior_attempts: HashMap<String, i64>,
    /// Let replaces shrink partitions past the job's shrink guard.
    pub allow_shrink: bool,
    /// Its windows that read upstream partitions neither loaded nor in the
    /// run ([`cascade::own_partly_read`]; a cascade's step:
    /// [`cascade::Downstream::partly_read`]).
    pub reads_not_loaded: Vec<cascade::PartlyRead>,
    /// The upstream jobs whose partitions could not be read for that check.
    pub upstream_unread: Vec<UpstreamUnread>,
}

impl Backfill {
    /// A backfill of `job`'s `partitions`, one at a time, without retries,
    /// reason or earlier attempts.
    pub fn of(job: Job, partitions: Vec<Partition>) -> Backfill {
        Backfill {
            job,
            partitions,
            concurrency: 1,
            retries: 0,
            reason: None,
            prior_attempts: HashMap::new(),
            allow_shrink: false,
            reads_not_loaded: Vec::new(),
            upstream_unread: Vec::new(),
        }
    }

    /// The step a cascade gives `job` as it goes (it reads what the
    /// cascade's merges moved): its partitions not known yet, run as the
    /// cascade's `root` is.
    pub fn step_as(root: &Backfill, job: &Job) -> Backfill {
        Backfill {
            concurrency: root.concurrency,
            retries: root.retries,
            reason: root.reason.clone(),
            allow_shrink: root.allow_shrink,
            ..Backfill::of(job.clone(), Vec::new())
        }
    }

    /// Plans a backfill of `job` over a range, reading current states when
    /// the selection filters by them.
    pub async fn plan(
        warehouse: &Warehouse,
        job: &Job,
        selection: &Selection,
        concurrency: usize,
        retries: u32,
    ) -> Result<Backfill, PlanError> {
        let now = now_utc();
        let statuses = state::job_status(warehouse, job, now, &HashSet::new()).await?;
        Backfill::plan_from(job, selection, &statuses, now, concurrency, retries)
    }

    /// [`Backfill::plan`] from states already read.
    pub fn plan_from(
        job: &Job,
        selection: &Selection,
        statuses: &[state::PartitionStatus],
        now: chrono::NaiveDateTime,
        concurrency: usize,
        retries: u32,
    ) -> Result<Backfill, PlanError> {
        let (from, to) = selection.range(job, now)?;
        let all = selection.only.is_empty() && !selection.refused;
        let chosen: HashSet<Partition> = statuses
            .iter()
            .filter(|s| {
                !all && (selection.only.contains(&s.state)
                    || (selection.refused && s.refused.is_some()))
            })
            .map(|s| s.partition)
            .collect();
        let partitions: Vec<Partition> = crate::partition::range(from, to)
            .into_iter()
            .filter(|p| all || chosen.contains(p))
            .collect();
        let prior_attempts = statuses
            .iter()
            .filter(|s| s.attempts > 0)
            .map(|s| (s.partition.name(), s.attempts as i64))
            .collect();
        Ok(Backfill {
            concurrency,
            retries,
            prior_attempts,
            ..Backfill::of(job.clone(), partitions)
        })
    }

    /// For merge jobs: loaded windows after the first planned one that the
    /// plan leaves out, whose rows re-running older windows alone would
    /// roll back to older values.
    pub async fn merge_order_risk(
        &self,
        warehouse: &Warehouse,
    ) -> Result<Option<MergeOrderRisk>, WarehouseError> {
        if self.job.strategy != Strategy::MergeKey || self.partitions.is_empty() {
            return Ok(None);
        }
        let statuses = state::job_status(warehouse, &self.job, now_utc(), &HashSet::new()).await?;
        Ok(self.merge_order_risk_in(&statuses))
    }

    /// [`Backfill::merge_order_risk`] from states already read.
    pub fn merge_order_risk_in(
        &self,
        statuses: &[state::PartitionStatus],
    ) -> Option<MergeOrderRisk> {
        let (Strategy::MergeKey, Some(&first_planned), Some(&last_planned)) = (
            self.job.strategy,
            self.partitions.first(),
            self.partitions.last(),
        ) else {
            return None;
        };
        // A window the plan leaves out after its first (past its end, or in
        // a gap `--only` left: 01 and 05 planned, 03 loaded) would have the
        // keys it updated set back by the older windows, unless it is
        // merged again after them. One whose latest load merged no rows
        // holds no key's newer value: merging older windows sets nothing
        // of it back.
        let later_loaded: Vec<Partition> = statuses
            .iter()
            .filter(|s| {
                s.partition > first_planned
                    && !self.partitions.contains(&s.partition)
                    && s.last_success.as_ref().is_some_and(|a| a.rows_after > 0)
            })
            .map(|s| s.partition)
            .collect();
        (!later_loaded.is_empty()).then_some(MergeOrderRisk {
            last_planned,
            later_loaded,
        })
    }

    /// Extends a merge backfill through its latest loaded window, so that
    /// every window after the first planned one is merged again in order and
    /// the newest values win.
    pub fn extend_through_latest(&mut self, risk: &MergeOrderRisk) {
        let Some(&first) = self.partitions.first() else {
            return;
        };
        for p in crate::partition::range(first, risk.latest()) {
            if !self.partitions.contains(&p) {
                self.partitions.push(p);
            }
        }
        self.partitions.sort();
    }

    /// Partitions in flight at once: merge windows run one at a time, in
    /// ascending order, so that a later window's values always win; and
    /// SQLite has one writer. What a plan's preview says runs at once.
    pub fn effective_concurrency(&self) -> usize {
        Backfill::concurrency_of(&self.job, self.concurrency)
    }

    /// [`Backfill::effective_concurrency`] of any plan of `job` that asks
    /// for `concurrency`, before there is one.
    pub fn concurrency_of(job: &Job, concurrency: usize) -> usize {
        match job.strategy {
            Strategy::MergeKey => 1,
            Strategy::ReplacePartition => concurrency.clamp(1, job.engine.max_writers()),
        }
    }

    /// Whether replacing `status`'s partition with its source count (read
    /// by a preview into `rows_source`) shrinks it past the job's shrink
    /// guard.
    pub fn shrinks_past_guard(&self, status: &state::PartitionStatus) -> bool {
        self.job.strategy == Strategy::ReplacePartition
            && status.rows_source.is_some_and(|n| {
                crate::config::shrinks_too_far(
                    status.rows_now.unwrap_or(0),
                    n,
                    self.job.shrink_guard,
                )
            })
    }

    /// Whether the shrink guard will refuse `status`'s partition in this run.
    pub fn shrink_refuses(&self, status: &state::PartitionStatus) -> bool {
        !self.allow_shrink && self.shrinks_past_guard(status)
    }

    /// Whether `status`'s partition, holding no rows, would load empty: its
    /// source (as a preview counted it) has none for it yet. It then counts
    /// as loaded, and the gap of a late source leaves the calendar; the
    /// shrink guard refuses only partitions that had rows.
    pub fn loads_empty(&self, status: &state::PartitionStatus) -> bool {
        self.job.strategy == Strategy::ReplacePartition
            && status.rows_source == Some(0)
            && status.rows_now.unwrap_or(0) == 0
    }
}

/// Runs a backfill to the end (or until cancelled), sending events as it goes.
pub async fn run(
    warehouse: &Warehouse,
    backfill: &Backfill,
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
) -> RunSummary {
    run_gated(warehouse, backfill, events, cancel, &Gate::default()).await
}

/// [`run`], starting no attempt while `gate` is shut.
pub async fn run_gated(
    warehouse: &Warehouse,
    backfill: &Backfill,
    events: &UnboundedSender<Event>,
    cancel: &CancellationToken,
    gate: &Gate,
) -> RunSummary {
    let run_id = new_run_id();
    let started = Instant::now();
    let job = &backfill.job;
    let concurrency = backfill.effective_concurrency();
    let _ = events.send(Event::RunStarted {
        run_id: run_id.clone(),
        job: job.name.clone(),
        strategy: job.strategy,
        partitions: backfill.partitions.iter().map(Partition::name).collect(),
        concurrency,
        reason: backfill.reason.clone(),
        upstream_not_loaded: backfill
            .reads_not_loaded
            .iter()
            .filter(|p| backfill.partitions.contains(&p.window))
            .map(cascade::PartlyRead::said)
            .collect(),
        upstream_unread: backfill.upstream_unread.clone(),
    });
    let operator = operator();
    let host = host();
    // A failed merge window stops the windows after it, which would otherwise
    // overwrite rows with values older than what they replace on a re-run.
    let halted = CancellationToken::new();
    // A warehouse that stops answering before the first load begins leaves
    // every partition not started.
    let before = async {
        let last_loads = last_loads(warehouse, backfill).await;
        Ok((last_loads, warehouse.merges_before_run(job).await))
    };
    let (last_loads, merges_before_run, not_answering) = match warehouse.answering(before).await {
        Ok((last_loads, merges)) => (last_loads, merges, None),
        Err(e) => {
            halted.cancel();
            (HashMap::new(), Default::default(), Some(e.to_string()))
        }
    };
    let unreachable = std::sync::Mutex::new(not_answering);
    let misfit = std::sync::Mutex::new(None);
    let admission = Admission::new(concurrency);
    if let Some((partitions, why)) = warehouse.partitions_granted() {
        admission.grant(partitions, why);
    }
    let mut summary = RunSummary {
        run_id: run_id.clone(),
        ..RunSummary::default()
    };
    // Each result is counted as it comes: a run keeps the partitions that
    // did not succeed, not one entry per partition.
    futures::stream::iter(backfill.partitions.iter().copied())
        .map(|partition| {
            let ctx = PartitionRun {
                warehouse,
                backfill,
                run_id: &run_id,
                operator: &operator,
                host: &host,
                events,
                cancel,
                gate,
                halted: &halted,
                unreachable: &unreachable,
                misfit: &misfit,
                admission: &admission,
                last_loads: &last_loads,
                merges_before_run: &merges_before_run,
            };
            async move { (partition, ctx.run(partition).await) }
        })
        .buffer_unordered(concurrency)
        .for_each(|(partition, result)| {
            summary.count(partition, result);
            futures::future::ready(())
        })
        .await;
    summary.cancelled = summary.ended_cancelled(cancel.is_cancelled());
    summary.unfinished.sort();
    summary.refused_partitions.sort();
    summary.empty.sort();
    summary.moved.sort();
    summary.unreachable = unreachable.lock().ok().and_then(|mut u| u.take());
    summary.misfit = misfit.lock().ok().and_then(|mut m| m.take());
    summary.connections_refused = admission.refused_every();
    let _ = events.send(Event::RunFinished {
        run_id,
        job: job.name.clone(),
        succeeded: summary.succeeded,
        failed: summary.failed,
        not_started: summary.not_started,
        rolled_back: summary.rolled_back,
        refused: summary.refused,
        lock_held: summary.lock_held,
        empty: summary.empty.len(),
        cancelled: summary.cancelled,
        duration_ms: started.elapsed().as_millis() as u64,
    });
    summary
}

struct PartitionRun<'a> {
    warehouse: &'a Warehouse,
    backfill: &'a Backfill,
    run_id: &'a str,
    operator: &'a str,
    host: &'a str,
    events: &'a UnboundedSender<Event>,
    cancel: &'a CancellationToken,
    gate: &'a Gate,
    halted: &'a CancellationToken,
    /// Set by the first partition that finds the warehouse unreachable.
    unreachable: &'a std::sync::Mutex<Option<String>>,
    /// Set by the first partition that finds the job does not fit.
    misfit: &'a std::sync::Mutex<Option<String>>,
    /// Partitions in flight at once, lowered by the warehouse's refusals
    /// of a connection.
    admission: &'a Admission,
    /// Each partition's last load, as the run found it.
    last_loads: &'a HashMap<String, crate::warehouse::LastLoad>,
    merges_before_run: &'a crate::warehouse::MergesBefore,
}

/// The last loads of a replace run's partitions, read once for the run
/// (one statement, not one a partition). They are checked against the
/// window's rows under its lock before one is trusted, so a load since
/// does no harm; and a failed read leaves each load to read its window,
/// as it would without them.
async fn last_loads(
    warehouse: &Warehouse,
    backfill: &Backfill,
) -> HashMap<String, crate::warehouse::LastLoad> {
    let (Strategy::ReplacePartition, Some(first), Some(last)) = (
        backfill.job.strategy,
        backfill.partitions.iter().min(),
        backfill.partitions.iter().max(),
    ) else {
        return HashMap::new();
    };
    let Ok(ledger) = warehouse.job_ledger(&backfill.job).await else {
        return HashMap::new();
    };
    warehouse
        .last_loads(&ledger, (&first.name(), &last.name()))
        .await
        .unwrap_or_default()
}

impl PartitionRun<'_> {
    async fn run(&self, partition: Partition) -> PartitionResult {
        let job = &self.backfill.job;
        let name = partition.name();
        // The number planned for the next attempt: one past those the run
        // read, then past the one the ledger last recorded (another run's
        // attempts recorded meanwhile move it on).
        let mut next = self
            .backfill
            .prior_attempts
            .get(&name)
            .copied()
            .unwrap_or(0)
            + 1;
        let mut retry = 0u32;
        // A retry that does not start leaves its last attempt's failure, as
        // the ledger has it (not a partition never started).
        let mut failed_before = PartitionResult::NotStarted;
        // Since when the warehouse has refused this partition a connection
        // while no other partition of the run had one.
        let mut refused_alone_since = None;
        // The attempt said started, and when: one refused a connection is not said again.
        let mut announced: Option<(i64, chrono::DateTime<chrono::Utc>, Instant)> = None;
        loop {
            if self.gate.is_shut() {
                tokio::select! {
                    () = self.gate.passed() => {}
                    () = self.cancel.cancelled() => {}
                }
            }
            let (slot, lowered) = tokio::select! {
                entered = self.admission.enter() => entered,
                () = self.cancel.cancelled() => return failed_before,
                () = self.halted.cancelled() => return failed_before,
            };
            if self.cancel.is_cancelled() || self.halted.is_cancelled() {
                return failed_before;
            }
            if let Some((concurrency, because)) = lowered {
                let _ = self.events.send(Event::ConcurrencyLowered {
                    run_id: self.run_id.to_string(),
                    job: job.name.clone(),
                    concurrency,
                    asked: self.backfill.effective_concurrency(),
                    because,
                });
            }
            let attempt = next;
            let (started_at, clock) = match announced {
                Some((said, at, clock)) if said == attempt => (at, clock),
                _ => {
                    let _ = self.events.send(Event::PartitionStarted {
                        run_id: self.run_id.to_string(),
                        job: job.name.clone(),
                        partition: name.clone(),
                        attempt,
                    });
                    let (at, clock) = (crate::clock::now(), Instant::now());
                    announced = Some((attempt, at, clock));
                    (at, clock)
                }
            };
            let meta = AttemptMeta {
                run_id: self.run_id.to_string(),
                attempt,
                started_at: ledger::timestamp(started_at),
                operator: self.operator.to_string(),
                host: self.host.to_string(),
                reason: self.backfill.reason.clone(),
                allow_shrink: self.backfill.allow_shrink,
                last_load: self.last_loads.get(&name).cloned(),
                merges_before_run: self.merges_before_run.clone(),
            };
            let events = self.events.clone();
            let (run_id, job_name, part) =
                (self.run_id.to_string(), job.name.clone(), name.clone());
            let log = move |line: String| {
                let _ = events.send(Event::PartitionLog {
                    run_id: run_id.clone(),
                    job: job_name.clone(),
                    partition: part.clone(),
                    line,
                });
            };
            let outcome = self
                .warehouse
                .load_partition(job, &partition, &meta, &log, self.cancel)
                .await;
            let duration_ms = clock.elapsed().as_millis() as u64;
            match outcome {
                Err(WarehouseError::Cancelled) => {
                    log("ROLLBACK (cancelled)".into());
                    let recorded = self
                        .record_failure(
                            &partition,
                            &meta,
                            AttemptStatus::Cancelled,
                            "cancelled before its COMMIT (the run was stopped): rolled back",
                        )
                        .await;
                    self.failed(
                        &name,
                        recorded.unwrap_or(attempt),
                        "cancelled; rolled back".to_string(),
                        FailureCause::Cancelled,
                        false,
                        duration_ms,
                    );
                    return PartitionResult::RolledBack;
                }
                // No attempt: nothing began, nothing is recorded, no retry
                // is spent. The partition waits for a connection another
                // frees, unless none of the run's has one.
                Err(e) if e.connection_refusal().is_some() => {
                    let why = e.connection_refusal().unwrap_or_default().to_string();
                    log(format!(
                        "no connection: the warehouse refused one ({why}); no attempt was made, it waits its turn again"
                    ));
                    if self.admission.refused(slot, &why) {
                        refused_alone_since = None;
                        continue;
                    }
                    let since = *refused_alone_since.get_or_insert_with(Instant::now);
                    if since.elapsed() < self.warehouse.config().connect_timeout {
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(500)) => continue,
                            _ = self.cancel.cancelled() => return failed_before,
                        }
                    }
                    let message = e.to_string();
                    self.admission.refused_every_connection(&message);
                    self.halted.cancel();
                    return self.failed_unrecorded(&name, attempt, message, duration_ms);
                }
                Ok(Loaded {
                    outcome: o,
                    attempt,
                }) => {
                    self.admission.succeeded();
                    // A merge's rows may lie in other windows of the
                    // partition column than the one it merged: written, it
                    // is not empty.
                    let empty = o.rows_after == 0 && o.rows_inserted + o.rows_updated == 0;
                    let _ = self.events.send(Event::PartitionSucceeded {
                        run_id: self.run_id.to_string(),
                        job: job.name.clone(),
                        partition: name.clone(),
                        attempt,
                        rows_deleted: o.rows_deleted,
                        rows_inserted: o.rows_inserted,
                        rows_updated: o.rows_updated,
                        rows_after: o.rows_after,
                        duration_ms,
                        fingerprint: o.fingerprint.to_string(),
                        content_changed: o.content_changed,
                    });
                    let moved = o
                        .other_windows
                        .iter()
                        .filter_map(|w| Partition::parse(job.grain, w, RangeEnd::From))
                        .collect();
                    return PartitionResult::Succeeded { empty, moved };
                }
                Err(e @ WarehouseError::SourceShrank { .. }) => {
                    let message = e.to_string();
                    log(format!("ROLLBACK: {message}"));
                    let recorded = self
                        .record_failure(&partition, &meta, AttemptStatus::Refused, &message)
                        .await;
                    self.failed(
                        &name,
                        recorded.unwrap_or(attempt),
                        message,
                        FailureCause::ShrinkGuard,
                        false,
                        duration_ms,
                    );
                    return PartitionResult::Refused;
                }
                // Its COMMIT may have taken: neither a rollback nor a
                // failure is known, and no ledger row may say either.
                Err(e @ WarehouseError::CancelledCommitting) => {
                    let message = e.to_string();
                    log(message.clone());
                    return self.failed_unrecorded(&name, attempt, message, duration_ms);
                }
                Err(e) if e.is_unreachable() => {
                    // No connection could be had (or the one the load had
                    // went silent): nothing was committed, and the ledger
                    // cannot be written either. Starting more partitions
                    // would only wait as long again.
                    let message = e.to_string();
                    if !matches!(e, WarehouseError::Lost { .. }) {
                        log(format!("not started: {message}"));
                    }
                    if let Ok(mut first) = self.unreachable.lock() {
                        first.get_or_insert(message.clone());
                    }
                    self.halted.cancel();
                    return self.failed_unrecorded(&name, attempt, message, duration_ms);
                }
                Err(e) => {
                    let transient = e.is_transient(self.warehouse.dialect());
                    let will_retry = transient
                        && retry < self.backfill.retries
                        && !self.cancel.is_cancelled()
                        && !self.halted.is_cancelled();
                    let message = e.to_string();
                    log(format!("ROLLBACK: {message}"));
                    // An attempt a lock held elsewhere kept waiting (its
                    // partition's, or one on the target) rolled back having
                    // written nothing: recorded as refused, it changes no
                    // state (a run that loaded the partition meanwhile stays
                    // its last word), where "failed" would mark a loaded
                    // partition. QA: two runs of neighbouring days on a
                    // MariaDB target without an index on the partition
                    // column marked loaded days failed.
                    let (status, cause) = if e.is_lock_held(self.warehouse.dialect()) {
                        (AttemptStatus::Refused, FailureCause::LockHeld)
                    } else {
                        (AttemptStatus::Failed, FailureCause::Error)
                    };
                    let recorded = self
                        .record_failure(&partition, &meta, status, &message)
                        .await;
                    self.failed(
                        &name,
                        recorded.unwrap_or(attempt),
                        message,
                        cause,
                        will_retry,
                        duration_ms,
                    );
                    // A refused lock is recorded, but as no failure:
                    // `--only failed` would not pick the partition again.
                    let result = match cause {
                        FailureCause::LockHeld => PartitionResult::LockHeld,
                        _ => PartitionResult::Failed {
                            recorded: recorded.is_some(),
                            lasting: !will_retry && e.is_lasting(self.warehouse.dialect()),
                        },
                    };
                    if !will_retry {
                        // A merge's later windows must not pass a failed
                        // one; a job that does not fit its target would
                        // fail every partition alike.
                        if e.is_misfit()
                            && let Ok(mut first) = self.misfit.lock()
                        {
                            first.get_or_insert(e.to_string());
                        }
                        if job.strategy == Strategy::MergeKey || e.is_misfit() {
                            self.halted.cancel();
                        }
                        return result;
                    }
                    failed_before = result;
                    drop(slot);
                    let backoff =
                        Duration::from_millis(250 * 2u64.pow(retry)).min(Duration::from_secs(10));
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = self.cancel.cancelled() => return failed_before,
                    }
                    retry += 1;
                    next = recorded.unwrap_or(attempt) + 1;
                }
            }
        }
    }
}
