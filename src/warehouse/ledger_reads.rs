//! Ledger reads kept for a console's next refresh: a job's summary and
//! content changes over a range, reused while the job's ledger stands
//! where it stood ([`LedgerMark`]), and shared rather than copied.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;

use super::ledger::{ContentChanges, LedgerMark, LedgerSummary};
use super::ledger_targets::JobLedger;
use super::{RefreshCache, Warehouse, WarehouseError};

/// A job and a range of its partitions, as a cached ledger read was asked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct LedgerKey {
    /// The warehouse's URL and the job's name: a cache may outlive a
    /// warehouse, and two warehouses' ledgers may stand alike.
    job: (String, String),
    range: Scope,
}

/// A range of a job's partitions, and the definitions whose attempts the
/// read left out ([`JobLedger::elsewhere`]): a target changed in idem.toml
/// changes them, not the ledger.
type Scope = (Option<(String, String)>, Vec<String>);

impl LedgerKey {
    fn of(warehouse: &str, job: &JobLedger, range: Option<(&str, &str)>) -> LedgerKey {
        LedgerKey {
            job: (warehouse.to_string(), job.job.clone()),
            range: (
                range.map(|(a, b)| (a.to_string(), b.to_string())),
                job.elsewhere.iter().map(|(hash, _)| hash.clone()).collect(),
            ),
        }
    }
}

/// The ledger reads a [`RefreshCache`] keeps for the next refresh.
#[derive(Default)]
pub(super) struct LedgerReads {
    summaries: Recent<LedgerSummary>,
    changes: Recent<ContentChanges>,
}

/// A ledger read a [`RefreshCache`] keeps, and where.
trait Remembered: Sized {
    fn recent(reads: &mut LedgerReads) -> &mut Recent<Self>;
}

impl Remembered for LedgerSummary {
    fn recent(reads: &mut LedgerReads) -> &mut Recent<Self> {
        &mut reads.summaries
    }
}

impl Remembered for ContentChanges {
    fn recent(reads: &mut LedgerReads) -> &mut Recent<Self> {
        &mut reads.changes
    }
}

/// How many ranges of one job's ledger a [`Recent`] keeps.
const RANGES_PER_JOB: usize = 4;

/// Ledger reads kept for the next refresh, with where the ledger stood:
/// the latest few ranges of each job, so that a console left open for days
/// holds no more than that (a job's range moves as partitions come due, and
/// the jobs reading one upstream job ask for ranges of their own).
struct Recent<T> {
    by_job: HashMap<(String, String), VecDeque<Kept<T>>>,
}

/// One read a [`Recent`] keeps: its range, where the ledger stood, what it
/// read (shared with the refresh that read it).
type Kept<T> = (Scope, LedgerMark, Arc<T>);

impl<T> Default for Recent<T> {
    fn default() -> Self {
        Recent {
            by_job: HashMap::new(),
        }
    }
}

impl<T> Recent<T> {
    /// What was kept for `key`, if the ledger still stands at `mark`.
    fn get(&self, key: &LedgerKey, mark: LedgerMark) -> Option<Arc<T>> {
        self.by_job
            .get(&key.job)?
            .iter()
            .find(|(range, at, _)| *range == key.range && *at == mark)
            .map(|(_, _, value)| Arc::clone(value))
    }

    /// Keeps `value`, read at `mark`, in place of what was kept for `key`;
    /// the job's oldest range goes when it has too many.
    fn keep(&mut self, key: LedgerKey, mark: LedgerMark, value: Arc<T>) {
        let kept = self.by_job.entry(key.job).or_default();
        kept.retain(|(range, _, _)| *range != key.range);
        kept.push_front((key.range, mark, value));
        kept.truncate(RANGES_PER_JOB);
    }
}

impl Warehouse {
    /// [`Warehouse::ledger_summary`] through a cache, if given with where
    /// the job's ledger stands now ([`Warehouse::ledger_mark`]): when it
    /// stands where it stood at the cached read of the same range, it is
    /// not read again. Also says whether it was read.
    pub async fn ledger_summary_cached(
        &self,
        cache: Option<(&RefreshCache, LedgerMark)>,
        job: &JobLedger,
        range: Option<(&str, &str)>,
    ) -> Result<(Arc<LedgerSummary>, bool), WarehouseError> {
        self.through_cache(cache, job, range, self.ledger_summary(job, range))
            .await
    }

    /// [`Warehouse::content_changes`] through a cache, as
    /// [`Warehouse::ledger_summary_cached`].
    pub async fn content_changes_cached(
        &self,
        cache: Option<(&RefreshCache, LedgerMark)>,
        job: &JobLedger,
        range: Option<(&str, &str)>,
    ) -> Result<(Arc<ContentChanges>, bool), WarehouseError> {
        self.through_cache(cache, job, range, self.content_changes(job, range))
            .await
    }

    /// What `read` reads of a job's ledger over `range`, or what the cache
    /// kept of it if the ledger has not moved since (shared, not copied);
    /// and whether it read.
    async fn through_cache<T: Remembered>(
        &self,
        cache: Option<(&RefreshCache, LedgerMark)>,
        job: &JobLedger,
        range: Option<(&str, &str)>,
        read: impl Future<Output = Result<T, WarehouseError>>,
    ) -> Result<(Arc<T>, bool), WarehouseError> {
        // The mark was read before `read` runs: an attempt recorded
        // meanwhile moves it past the one kept, so the next refresh reads
        // again.
        let Some((cache, mark)) = cache else {
            return Ok((Arc::new(read.await?), true));
        };
        let key = LedgerKey::of(&self.config().url, job, range);
        if let Some(kept) = cache.with_ledgers(|r| T::recent(r).get(&key, mark)).await {
            return Ok((kept, false));
        }
        let value = Arc::new(read.await?);
        let kept = Arc::clone(&value);
        cache
            .with_ledgers(|r| T::recent(r).keep(key, mark, kept))
            .await;
        Ok((value, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refresh_keeps_a_few_ranges_of_each_job() {
        let mark = |n| LedgerMark {
            last_id: n,
            rows: n,
        };
        let day = |d: u32| format!("2026-01-{d:02}");
        let mut recent = Recent::<u32>::default();
        for d in 1..=10u32 {
            let (first, last) = (day(d), day(d + 1));
            recent.keep(
                LedgerKey::of("w", &"j".into(), Some((&first, &last))),
                mark(1),
                Arc::new(d),
            );
        }
        recent.keep(LedgerKey::of("w", &"k".into(), None), mark(1), Arc::new(99));
        assert_eq!(
            recent.by_job[&("w".to_string(), "j".to_string())].len(),
            RANGES_PER_JOB
        );
        let key = |d: u32| {
            let (first, last) = (day(d), day(d + 1));
            LedgerKey::of("w", &"j".into(), Some((&first, &last)))
        };
        assert_eq!(recent.get(&key(10), mark(1)), Some(Arc::new(10)));
        assert_eq!(recent.get(&key(7), mark(1)), Some(Arc::new(7)));
        assert_eq!(recent.get(&key(6), mark(1)), None, "the oldest went");
        assert_eq!(recent.get(&key(10), mark(2)), None, "the ledger moved");
        assert_eq!(
            recent.get(&LedgerKey::of("w", &"k".into(), None), mark(1)),
            Some(Arc::new(99))
        );
        assert_eq!(
            recent.get(&LedgerKey::of("elsewhere", &"k".into(), None), mark(1)),
            None,
            "another warehouse's ledger"
        );
        let retargeted = JobLedger {
            job: "k".into(),
            elsewhere: vec![(
                "an older definition".into(),
                crate::config::TableName::parse("fct_stage").expect("a table"),
            )],
        };
        assert_eq!(
            recent.get(&LedgerKey::of("w", &retargeted, None), mark(1)),
            None,
            "a target changed since: another definition's loads left out"
        );
        // Read again at a new mark: kept once, in place of the old.
        recent.keep(key(7), mark(2), Arc::new(70));
        assert_eq!(recent.get(&key(7), mark(2)), Some(Arc::new(70)));
        assert_eq!(recent.get(&key(7), mark(1)), None);
        assert_eq!(
            recent.by_job[&("w".to_string(), "j".to_string())].len(),
            RANGES_PER_JOB
        );
    }
}
