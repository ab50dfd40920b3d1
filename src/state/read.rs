//! Reading a job's states from the warehouse: its target's row counts,
//! its ledger, the partitions locked elsewhere and its upstream jobs'
//! content changes, each through the refresh cache where one is given;
//! then [`derive`].

use std::collections::HashSet;
use std::sync::Arc;

use chrono::NaiveDateTime;

use super::derived::{DerivedFrom, JobStates, UpstreamRead};
use super::upstream::upstream_read;
use super::{Derivations, PartitionStatus, Seasonality, StatesRead, derive, mark_upstream_stale};
use crate::config::Job;
use crate::partition::Partition;
use crate::warehouse::ledger::LedgerMark;
use crate::warehouse::{RefreshCache, Warehouse, WarehouseError};

/// Reads counts and ledger for a job and derives every partition's state.
pub async fn job_status(
    warehouse: &Warehouse,
    job: &Job,
    now: NaiveDateTime,
    running: &HashSet<String>,
) -> Result<Vec<PartitionStatus>, WarehouseError> {
    job_status_scoped(warehouse, job, now, running, &StatusScope::default()).await
}

/// Which partitions a status read covers and how it counts their rows.
#[derive(Clone, Default)]
pub struct StatusScope {
    /// First and last partition to report (both ends included); `None`:
    /// the job's first, or its latest complete one.
    pub from: Option<Partition>,
    pub to: Option<Partition>,
    /// What the previous read read: an unchanged target or ledger is not
    /// read again (see [`Warehouse::partition_counts_cached`] and
    /// [`Warehouse::ledger_summary_cached`]).
    pub cache: Option<RefreshCache>,
    /// Read the ledger alone, not the target: the states come from the
    /// attempts, as for a job without a partition column. For a run whose
    /// plan needs no row counts, which then starts without scanning its
    /// target.
    pub ledger_only: bool,
}

/// [`job_status`] of a range of partitions, counting only the target rows
/// of that range (and of the neighbours its anomaly flags compare with),
/// optionally through a cache of counts.
pub async fn job_status_scoped(
    warehouse: &Warehouse,
    job: &Job,
    now: NaiveDateTime,
    running: &HashSet<String>,
    scope: &StatusScope,
) -> Result<Vec<PartitionStatus>, WarehouseError> {
    let read = warehouse.answering(read_job(warehouse, job, now, running, scope));
    Ok(match read.await? {
        Some(read) => read.derive(job, now, scope),
        None => Vec::new(),
    })
}

/// What one read of a job found: its partitions in scope (with the
/// neighbours the anomaly flags compare with) and what their states are
/// derived from.
struct JobRead {
    all: Vec<Partition>,
    lo: usize,
    hi: usize,
    from: DerivedFrom,
}

impl JobRead {
    fn derive(&self, job: &Job, now: NaiveDateTime, scope: &StatusScope) -> Vec<PartitionStatus> {
        let from = &self.from;
        let partitions = self.all.get(self.lo..self.hi).unwrap_or_default();
        let mut statuses = derive(
            job,
            partitions,
            from.counts.as_deref().map(|c| &c.partitions),
            &from.ledger,
            now,
            &from.running,
        );
        statuses.retain(|s| {
            scope.from.is_none_or(|f| s.partition >= f) && scope.to.is_none_or(|t| s.partition <= t)
        });
        statuses
    }

    /// The target's rows in no partition, where the read counted them.
    fn null_partition(&self, job: &Job) -> Option<i64> {
        job.partition_column.as_ref()?;
        Some(self.from.counts.as_ref()?.null_partition)
    }
}

/// Reads the counts, the ledger summary and the partitions locked elsewhere
/// of a job's partitions in scope; None when the scope holds none.
async fn read_job(
    warehouse: &Warehouse,
    job: &Job,
    now: NaiveDateTime,
    running: &HashSet<String>,
    scope: &StatusScope,
) -> Result<Option<JobRead>, WarehouseError> {
    let season = Seasonality::of(job.grain);
    let margin = season.stride * season.side;
    let all = job.partitions(now);
    let lo = scope.from.map_or(0, |f| {
        all.partition_point(|p| *p < f).saturating_sub(margin)
    });
    let hi = scope.to.map_or(all.len(), |t| {
        (all.partition_point(|p| *p <= t) + margin).min(all.len())
    });
    let partitions = all.get(lo..hi).unwrap_or_default();
    let (Some(first), Some(last)) = (partitions.first(), partitions.last()) else {
        return Ok(None);
    };
    let cached = cached_at(warehouse, scope, &job.name).await?;
    let counts = match cached {
        _ if scope.ledger_only => None,
        Some((cache, mark)) => Some(
            warehouse
                .partition_counts_cached(cache, job, *first, *last, mark)
                .await?
                .0,
        ),
        None => Some(Arc::new(
            warehouse.partition_counts(job, *first, *last).await?,
        )),
    };
    // A merge window's rows may have moved to windows loaded after it,
    // past the range: their loads are read too (see `moved`).
    let moves = job.strategy == crate::config::Strategy::MergeKey
        && job.partition_column.is_some()
        && counts.is_some();
    let ledger_last = all.last().filter(|_| moves).unwrap_or(last);
    let range = Some((first.name(), ledger_last.name()));
    let range = range.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
    let own = warehouse.job_ledger(job).await?;
    let (ledger, _) = warehouse.ledger_summary_cached(cached, &own, range).await?;
    let mut running = running.clone();
    running.extend(
        warehouse
            .partitions_locked_elsewhere(job, partitions)
            .await?,
    );
    let from = DerivedFrom::of(
        job,
        partitions,
        now,
        (scope.from, scope.to),
        counts,
        ledger,
        running,
    );
    Ok(Some(JobRead { all, lo, hi, from }))
}

/// The scope's cache, if it has one, with where `job`'s ledger stands now:
/// read once for the job's counts and its summary.
async fn cached_at<'a>(
    warehouse: &Warehouse,
    scope: &'a StatusScope,
    job: &str,
) -> Result<Option<(&'a RefreshCache, LedgerMark)>, WarehouseError> {
    match &scope.cache {
        Some(cache) => Ok(Some((cache, warehouse.ledger_mark(job).await?))),
        None => Ok(None),
    }
}

/// [`job_status_scoped`], with the partitions that read changed upstream data
/// marked stale (upstream) from the upstream jobs' ledgers, and the target's
/// rows in no partition.
pub async fn job_status_in(
    warehouse: &Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    job: &Job,
    now: NaiveDateTime,
    running: &HashSet<String>,
    scope: &StatusScope,
) -> Result<JobStates, WarehouseError> {
    let read = async {
        let read = read_job(warehouse, job, now, running, scope).await?;
        with_upstream(warehouse, config, lineage, job, now, scope, read).await
    };
    let (states, _) = warehouse.answering(read).await?;
    Ok(states)
}

/// [`job_status_in`] for a reader that keeps what it was last told
/// (the console): when the states would be derived from the same inputs as
/// the ones `derivations` last answered for the job, says so instead.
#[allow(clippy::too_many_arguments)]
pub async fn job_status_since(
    warehouse: &Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    job: &Job,
    now: NaiveDateTime,
    running: &HashSet<String>,
    scope: &StatusScope,
    derivations: &Derivations,
) -> Result<StatesRead, WarehouseError> {
    let read = async {
        let read = read_job(warehouse, job, now, running, scope).await?;
        if let Some(read) = &read
            && let Some(upstream) = derivations.upstream_if_same(&job.name, &read.from)
        {
            let mut same = true;
            for up in &upstream {
                let Some(up_job) = config.jobs.iter().find(|j| j.name == up.job) else {
                    same = false;
                    break;
                };
                let cached = cached_at(warehouse, scope, &up.job).await?;
                let (first, last) = (up.range.0.as_str(), up.range.1.as_str());
                let up_ledger = warehouse.job_ledger(up_job).await?;
                let (changes, _) = warehouse
                    .content_changes_cached(cached, &up_ledger, Some((first, last)))
                    .await?;
                same &= Arc::ptr_eq(&changes, &up.changes);
            }
            if same {
                return Ok(StatesRead::Unchanged);
            }
        }
        let (states, kept) =
            with_upstream(warehouse, config, lineage, job, now, scope, read).await?;
        if let Some((from, upstream)) = kept {
            derivations.keep(&job.name, from, upstream);
        }
        Ok(StatesRead::States(states))
    };
    warehouse.answering(read).await
}

/// The states a read derives, marked stale where they read upstream
/// partitions whose content changed since; and what they were derived from.
async fn with_upstream(
    warehouse: &Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    job: &Job,
    now: NaiveDateTime,
    scope: &StatusScope,
    read: Option<JobRead>,
) -> Result<(JobStates, Option<(DerivedFrom, Vec<UpstreamRead>)>), WarehouseError> {
    let Some(read) = read else {
        return Ok((JobStates::default(), None));
    };
    let mut statuses = read.derive(job, now, scope);
    let null_partition = read.null_partition(job);
    let mut upstream = Vec::new();
    let mut reads = Vec::new();
    for (name, _) in lineage.upstream(&job.name) {
        if let Some(up) = config.jobs.iter().find(|j| j.name == *name)
            && let Some((first, last)) = upstream_read(&statuses, up.grain)
        {
            let range = Some((first.as_str(), last.as_str()));
            let cached = cached_at(warehouse, scope, &up.name).await?;
            // Its loads into another table changed nothing this job reads.
            let up_ledger = warehouse.job_ledger(up).await?;
            let (changes, _) = warehouse
                .content_changes_cached(cached, &up_ledger, range)
                .await?;
            reads.push(UpstreamRead {
                job: up.name.clone(),
                range: (first, last),
                changes: Arc::clone(&changes),
            });
            upstream.push((up, changes));
        }
    }
    mark_upstream_stale(&mut statuses, &upstream);
    let states = JobStates {
        statuses,
        null_partition,
    };
    Ok((states, Some((read.from, reads))))
}

/// How long a state read runs before idem says what it may be waiting on.
pub const SLOW_READ: std::time::Duration = std::time::Duration::from_secs(2);

/// What idem says of a state read of `job` that outlasts [`SLOW_READ`]:
/// what it may be waiting on. A lock is waited for up to `lock_timeout`; a
/// count of a large table, or a server that does not answer, takes as long
/// as it takes (up to `statement_timeout`, where one is set), which the
/// note does not promise otherwise.
pub fn slow_read_note(job: &Job, lock_timeout: std::time::Duration) -> String {
    format!(
        "still reading {} from {}: a large table is being counted, the warehouse is busy or not answering, or another session holds a lock on it (a lock is waited for up to lock_timeout = {lock_timeout:?}; the read as a whole, up to statement_timeout where one is set)",
        job.name, job.target
    )
}

/// Awaits `read`, calling `notice` once if it is still running after
/// [`SLOW_READ`]: how the command line and the console say that a read waits.
pub async fn noticing_slow<T>(
    read: impl std::future::Future<Output = T>,
    notice: impl FnOnce(),
) -> T {
    tokio::pin!(read);
    tokio::select! {
        r = &mut read => return r,
        () = tokio::time::sleep(SLOW_READ) => notice(),
    }
    read.await
}
