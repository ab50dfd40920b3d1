//! Partition states, derived on every refresh from the target's row counts
//! and the ledger, with the anomaly and drift flags on top.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::NaiveDateTime;
use serde::Serialize;

use crate::config::{Job, Strategy};
use crate::partition::Partition;
use crate::warehouse::Counts;
use crate::warehouse::ledger::{Attempt, AttemptStatus, LedgerSummary, Refusal};

mod anomaly;
mod derived;
mod moved;
mod read;
mod upstream;

pub use anomaly::{Seasonality, anomalies, comparable, median};
pub use derived::{Derivations, JobStates, StatesRead};
pub use read::{
    SLOW_READ, StatusScope, job_status, job_status_in, job_status_scoped, job_status_since,
    noticing_slow, slow_read_note,
};
pub use upstream::mark_upstream_stale;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum LoadState {
    Running,
    Failed,
    Stale,
    Vanished,
    Unmanaged,
    Loaded,
    Empty,
    Missing,
    Future,
}

impl LoadState {
    pub const ALL: [LoadState; 9] = [
        LoadState::Running,
        LoadState::Failed,
        LoadState::Stale,
        LoadState::Vanished,
        LoadState::Unmanaged,
        LoadState::Loaded,
        LoadState::Empty,
        LoadState::Missing,
        LoadState::Future,
    ];

    pub fn name(self) -> &'static str {
        match self {
            LoadState::Running => "running",
            LoadState::Failed => "failed",
            LoadState::Stale => "stale",
            LoadState::Vanished => "vanished",
            LoadState::Unmanaged => "unmanaged",
            LoadState::Loaded => "loaded",
            LoadState::Empty => "empty",
            LoadState::Missing => "missing",
            LoadState::Future => "future",
        }
    }

    pub fn glyph(self) -> char {
        match self {
            LoadState::Running => '▶',
            LoadState::Failed => '✗',
            LoadState::Stale => '~',
            LoadState::Vanished => '!',
            LoadState::Unmanaged => '?',
            LoadState::Loaded => '■',
            LoadState::Empty => '○',
            LoadState::Missing => '·',
            LoadState::Future => ' ',
        }
    }

    /// The glyph of a partition stale because upstream partitions it read
    /// changed since its load (stale for its own reasons is `~`).
    pub const UPSTREAM_GLYPH: char = '≈';

    pub fn parse(s: &str) -> Option<LoadState> {
        LoadState::ALL.into_iter().find(|st| st.name() == s)
    }
}

/// What idem knows about one partition.
#[derive(Debug, Clone, Serialize)]
pub struct PartitionStatus {
    #[serde(serialize_with = "partition_name")]
    pub partition: Partition,
    pub state: LoadState,
    /// Rows in the target's window now; `None` for merge jobs without a
    /// partition column, whose target is not partitioned by window.
    pub rows_now: Option<i64>,
    /// Rows at the latest successful load.
    pub rows_at_load: Option<i64>,
    pub attempts: usize,
    /// Shared, so that a partition never attempted costs a pointer, not an
    /// attempt's worth of fields (a run plans thousands of them), and a
    /// latest attempt that is also the latest success is held once.
    pub last_attempt: Option<Arc<Attempt>>,
    pub last_success: Option<Arc<Attempt>>,
    /// Row count is an outlier against its neighbours.
    pub anomaly: bool,
    /// Row count differs from the count at its last load, and idem's own
    /// loads do not account for it.
    pub drift: bool,
    /// A `merge_key` window with fewer rows than at its load because later
    /// windows were merged after it: their newer rows for its keys carry
    /// another partition column value. It was loaded and superseded, not
    /// emptied: loaded, never vanished, and no drift.
    pub moved_out: bool,
    /// Upstream partitions (`"job partition"`) whose content changed after
    /// this partition was last loaded: it read data that is gone. Such a
    /// partition is stale, with this as its cause.
    pub stale_upstream: Vec<String>,
    /// Rows the job's SQL would write to this partition now, when a
    /// reconciliation counted them (see [`reconcile`]).
    pub rows_source: Option<i64>,
    /// Its latest attempt the shrink guard refused, where no success came
    /// since: its rows wait for a complete source (or an allowed shrink).
    pub refused: Option<Arc<Refusal>>,
}

fn partition_name<S: serde::Serializer>(p: &Partition, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.name())
}

impl PartitionStatus {
    /// Source rows now minus the rows its last load wrote, for a partition
    /// whose source has gained (late rows, positive) or lost rows since; None
    /// when they agree, when it was never loaded, or nothing was reconciled.
    /// (A target that lost rows behind idem's back is drift, not this.)
    pub fn out_of_date(&self) -> Option<i64> {
        let source = self.rows_source?;
        let loaded = self.rows_at_load?;
        (source != loaded).then_some(source - loaded)
    }

    /// The row count to chart and compare: the target's, or for unpartitioned
    /// merge jobs the rows merged at the last load.
    pub fn rows(&self) -> Option<i64> {
        self.rows_now.or(self.rows_at_load)
    }

    /// A partition in `state`, with no rows, attempts or flags known: what
    /// the tests and benchmarks build their states from.
    pub fn in_state(partition: Partition, state: LoadState) -> PartitionStatus {
        PartitionStatus {
            partition,
            state,
            rows_now: None,
            rows_at_load: None,
            attempts: 0,
            last_attempt: None,
            last_success: None,
            anomaly: false,
            drift: false,
            moved_out: false,
            stale_upstream: Vec::new(),
            rows_source: None,
            refused: None,
        }
    }
}

/// `12 rows of fct have NULL dt: no partition counts them, …` for a job
/// whose target holds rows with a NULL partition column, which no
/// partition's count includes (the operator adding up the rows of the
/// partitions finds the table's count(*) short by them); none where there
/// are none, or they were not counted. A replace's delete never matches
/// them either.
pub fn null_partition_note(job: &Job, null_partition: Option<i64>) -> Option<String> {
    let n = null_partition.filter(|n| *n > 0)?;
    let column = job.partition_column.as_ref()?;
    let (has, them) = if n == 1 {
        ("has", "it")
    } else {
        ("have", "them")
    };
    let deleted = match job.strategy {
        Strategy::ReplacePartition => format!(", and no run deletes {them} (see idem lint)"),
        Strategy::MergeKey => String::new(),
    };
    Some(format!(
        "{} of {} {has} NULL {column}: no partition counts {them}{deleted}",
        crate::numbers::n_rows(n),
        job.target,
    ))
}

/// `the job's SQL gives 3 rows with NULL dt over this range: a load
/// refuses them (no window holds a NULL)`, for a job whose source, as
/// reconciled, gives rows no window holds: a replace's window check fails
/// every load of the range over them, and no partition's source count
/// shows them. None where there are none, or they were not told apart.
pub fn source_null_partition_note(job: &Job, null_partition: Option<i64>) -> Option<String> {
    let n = null_partition.filter(|n| *n > 0)?;
    let column = job.partition_column.as_ref()?;
    let them = if n == 1 { "it" } else { "them" };
    let fate = match job.strategy {
        Strategy::ReplacePartition => format!("a load refuses {them} (no window holds a NULL)"),
        Strategy::MergeKey => format!("no partition counts {them}"),
    };
    Some(format!(
        "the job's SQL gives {} with NULL {column} over this range: {fate}",
        crate::numbers::n_rows(n),
    ))
}

/// Whether an attempt started before its window ended (`--allow-incomplete`):
/// it read a source still filling.
pub fn loaded_before_window_ended(attempt: &Attempt, partition: &Partition) -> bool {
    attempt.started_at.as_str()
        < crate::warehouse::ledger::timestamp(partition.end().and_utc()).as_str()
}

/// The state of each partition from counts and what the ledger holds of
/// it; without counts, or for a job without a partition column, from the
/// ledger alone. Each partition shares its latest and its latest successful
/// attempt with the summary.
pub fn derive(
    job: &Job,
    partitions: &[Partition],
    counts: Option<&Counts>,
    ledger: &LedgerSummary,
    now: NaiveDateTime,
    running: &HashSet<String>,
) -> Vec<PartitionStatus> {
    let hash = job.definition_hash();
    let counts = counts.filter(|_| job.partition_column.is_some());
    // A merge counted by window moves a key's row where its newest values
    // put it: later loads tell such moves from rows deleted.
    let width = partitions.first().map_or(0, |p| p.name().len());
    let later_loads = (job.strategy == Strategy::MergeKey && counts.is_some())
        .then(|| moved::LaterLoads::of(ledger, width));
    let mut out: Vec<PartitionStatus> = partitions
        .iter()
        .map(|p| {
            let name = p.name();
            let h = ledger.get(&name);
            let success = h.and_then(|h| h.success.clone());
            let latest = h.and_then(|h| h.latest.clone());
            let rows_now = counts.map(|c| c.get(&name).copied().unwrap_or(0));
            let rows_at_load = success.as_ref().map(|s| s.rows_after);
            let (moved_out, merge_drift) = match (&later_loads, &success, rows_now) {
                (Some(loads), Some(s), Some(now)) => {
                    moved::merge_window_change(loads, &name, &s.finished_at, s.rows_after, now)
                }
                _ => (false, false),
            };
            let state = if running.contains(&name) {
                LoadState::Running
            } else if latest
                .as_ref()
                .is_some_and(|a| a.status == AttemptStatus::Failed)
            {
                LoadState::Failed
            } else if let Some(s) = &success
                && loaded_before_window_ended(s, p)
            {
                // A load of a window still filling is never final.
                if p.is_future(now) {
                    LoadState::Future
                } else if rows_now.unwrap_or(s.rows_after) > 0 || moved_out {
                    LoadState::Stale
                } else {
                    LoadState::Missing
                }
            } else if let Some(s) = &success {
                // Rows gone are more urgent than a changed definition: a
                // vanished partition stays vanished until it is re-run. A
                // merge window whose rows later loads moved out is loaded:
                // its re-run would roll its keys back.
                match loaded_state(s.rows_after, rows_now) {
                    LoadState::Vanished if !moved_out => LoadState::Vanished,
                    _ if s.definition_hash != hash => LoadState::Stale,
                    LoadState::Vanished => LoadState::Loaded,
                    state => state,
                }
            } else if rows_now.unwrap_or(0) > 0 {
                LoadState::Unmanaged
            } else if p.is_future(now) {
                LoadState::Future
            } else {
                LoadState::Missing
            };
            let drift = matches!(
                state,
                LoadState::Loaded | LoadState::Stale | LoadState::Vanished
            ) && match job.strategy {
                Strategy::ReplacePartition => {
                    matches!((rows_now, rows_at_load), (Some(a), Some(b)) if a != b)
                }
                Strategy::MergeKey => merge_drift,
            };
            PartitionStatus {
                partition: *p,
                state,
                rows_now,
                rows_at_load,
                attempts: h.map_or(0, |h| h.attempts),
                last_attempt: latest,
                last_success: success,
                anomaly: false,
                drift,
                moved_out: moved_out && matches!(state, LoadState::Loaded | LoadState::Stale),
                stale_upstream: Vec::new(),
                rows_source: None,
                refused: h.and_then(|h| h.refused.clone()),
            }
        })
        .collect();
    let rows: Vec<Option<i64>> = out
        .iter()
        .map(|s| match s.state {
            LoadState::Loaded | LoadState::Stale | LoadState::Unmanaged | LoadState::Empty => {
                s.rows()
            }
            _ => None,
        })
        .collect();
    for (i, flag) in anomalies(&rows, Seasonality::of(job.grain))
        .into_iter()
        .enumerate()
    {
        out[i].anomaly = flag;
    }
    out
}

/// Records a reconciliation's source counts on the statuses it covered
/// (partitions from `first` through `last`; a partition the source has no
/// rows for counts 0).
pub fn reconcile(
    statuses: &mut [PartitionStatus],
    counts: &Counts,
    first: Partition,
    last: Partition,
) {
    for s in statuses
        .iter_mut()
        .filter(|s| s.partition >= first && s.partition <= last)
    {
        s.rows_source = Some(counts.get(&s.partition.name()).copied().unwrap_or(0));
    }
}

/// The state of a partition whose latest success, under the job's current
/// definition, left `rows_at_load` rows; `rows_now` is the target's count
/// where the target is partitioned by window.
fn loaded_state(rows_at_load: i64, rows_now: Option<i64>) -> LoadState {
    if rows_at_load > 0 && rows_now == Some(0) {
        LoadState::Vanished
    } else if rows_now.unwrap_or(rows_at_load) > 0 {
        LoadState::Loaded
    } else {
        LoadState::Empty
    }
}

/// How an attempt ended, as the engine reports it while a run goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptEnd {
    /// Committed, leaving this many rows in the partition's window.
    Succeeded { rows_after: i64 },
    /// Failed for good (no retry follows).
    Failed,
    /// Cancelled and rolled back: nothing changed.
    RolledBack,
    /// Refused by the shrink guard before writing: nothing changed, and the
    /// data was not at fault.
    Refused,
    /// Refused because another session held the partition's lock: nothing
    /// was written, and that session's load is the partition's word.
    LockHeld,
}

/// Brings a partition's status up to an attempt that just ended, as
/// [`derive`] will read it from the warehouse on the next refresh, so that a
/// live run shows its results before that read. `definition` is the hash
/// of the job's definition the attempt loaded with: a run started before
/// the job's definition changed loads its partitions stale.
pub fn apply_attempt(
    job: &Job,
    statuses: &mut [PartitionStatus],
    partition: &str,
    end: AttemptEnd,
    definition: &str,
) {
    let Some(s) = statuses
        .iter_mut()
        .find(|s| s.partition.name() == partition)
    else {
        return;
    };
    match end {
        AttemptEnd::Succeeded { rows_after } => {
            if job.partition_column.is_some() {
                s.rows_now = Some(rows_after);
            }
            s.rows_at_load = Some(rows_after);
            s.state = match loaded_state(rows_after, s.rows_now) {
                LoadState::Vanished => LoadState::Vanished,
                _ if definition != job.definition_hash() => LoadState::Stale,
                state => state,
            };
            // Loaded now, it read its upstream partitions as they are.
            s.stale_upstream.clear();
            s.attempts += 1;
            s.drift = false;
            s.moved_out = false;
        }
        AttemptEnd::Failed => {
            s.state = LoadState::Failed;
            s.attempts += 1;
        }
        AttemptEnd::Refused | AttemptEnd::LockHeld => s.attempts += 1,
        AttemptEnd::RolledBack => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// When the tests read states: 2026-06-10, midnight.
    pub(super) fn june_10() -> NaiveDateTime {
        chrono::NaiveDate::from_ymd_opt(2026, 6, 10)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .expect("date")
    }

    /// A job over 2026-06-01..03 with nothing loaded, of a strategy given
    /// as its config lines.
    pub(super) fn job_and_statuses(strategy: &str) -> (Job, Vec<PartitionStatus>) {
        let toml = format!(
            r#"
[warehouse]
url = "sqlite://w.db"

[[jobs]]
name = "j"
target = "t"
{strategy}
grain = "day"
start = "2026-06-01"
end = "2026-06-03"
sql = "select 1 as x, dt from s where dt >= :start and dt < :end"
"#
        );
        let config = crate::config::parse(std::path::Path::new("idem.toml"), &toml, &|_| None)
            .expect("config");
        let job = config.jobs[0].clone();
        let now = june_10();
        let partitions = job.partitions(now);
        let statuses = derive(
            &job,
            &partitions,
            Some(&Counts::new()),
            &LedgerSummary::new(),
            now,
            &HashSet::new(),
        );
        (job, statuses)
    }

    /// The rows in no partition are said in the number's words, with what
    /// a replace run never does to them; nothing where none were counted.
    #[test]
    fn the_null_partition_note_fits_its_number_and_strategy() {
        let (replace, _) =
            job_and_statuses("strategy = \"replace_partition\"\npartition_column = \"dt\"");
        let (merge, _) = job_and_statuses(
            "strategy = \"merge_key\"\nunique_key = [\"x\"]\npartition_column = \"dt\"",
        );
        let note = |job: &Job, n| null_partition_note(job, n);
        assert_eq!(note(&replace, None), None);
        assert_eq!(note(&replace, Some(0)), None);
        assert_eq!(
            note(&replace, Some(1)).as_deref(),
            Some(
                "1 row of t has NULL dt: no partition counts it, and no run deletes it (see idem lint)"
            )
        );
        assert_eq!(
            note(&merge, Some(1_200)).as_deref(),
            Some("1,200 rows of t have NULL dt: no partition counts them")
        );
    }

    /// The source's rows in no window are said with what a load does with
    /// them; nothing where none were told apart.
    #[test]
    fn the_source_null_partition_note_says_what_a_load_does() {
        let (replace, _) =
            job_and_statuses("strategy = \"replace_partition\"\npartition_column = \"dt\"");
        let (merge, _) = job_and_statuses(
            "strategy = \"merge_key\"\nunique_key = [\"x\"]\npartition_column = \"dt\"",
        );
        let note = |job: &Job, n| source_null_partition_note(job, n);
        assert_eq!(note(&replace, None), None);
        assert_eq!(note(&replace, Some(0)), None);
        assert_eq!(
            note(&replace, Some(1)).as_deref(),
            Some(
                "the job's SQL gives 1 row with NULL dt over this range: a load refuses it (no window holds a NULL)"
            )
        );
        assert_eq!(
            note(&merge, Some(2)).as_deref(),
            Some(
                "the job's SQL gives 2 rows with NULL dt over this range: no partition counts them"
            )
        );
    }

    /// Attempt `n` of a job's partition, of three rows, started on
    /// 2026-06-09 at midnight and finished a second later.
    pub(super) fn attempt(job: &Job, partition: &str, n: i64, status: AttemptStatus) -> Attempt {
        Attempt {
            run_id: format!("run {n}"),
            job: job.name.clone(),
            partition: partition.into(),
            attempt: n,
            status,
            started_at: "2026-06-09T00:00:00.000Z".into(),
            locked_at: None,
            finished_at: "2026-06-09T00:00:01.000Z".into(),
            rows_deleted: 0,
            rows_inserted: 3,
            rows_updated: 0,
            rows_after: 3,
            definition_hash: job.definition_hash(),
            fingerprint: None,
            content_changed: None,
            error: None,
            operator: "ops".into(),
            host: "h".into(),
            reason: None,
        }
    }

    #[test]
    fn derive_keeps_each_partitions_latest_attempts_of_its_history() {
        let (job, _) =
            job_and_statuses("strategy = \"replace_partition\"\npartition_column = \"dt\"");
        let now = june_10();
        let attempt = |partition: &str, n: i64, status| attempt(&job, partition, n, status);
        let history = vec![
            attempt("2026-06-01", 1, AttemptStatus::Succeeded),
            attempt("2026-06-02", 1, AttemptStatus::Succeeded),
            attempt("2026-06-01", 2, AttemptStatus::Failed),
            attempt("2026-06-02", 2, AttemptStatus::Succeeded),
            attempt("2026-06-02", 3, AttemptStatus::Cancelled),
        ];
        let mut counts = Counts::new();
        counts.insert("2026-06-01".into(), 3);
        counts.insert("2026-06-02".into(), 3);
        let s = derive(
            &job,
            &job.partitions(now),
            Some(&counts),
            &crate::warehouse::ledger::PartitionLedger::summarize(history),
            now,
            &HashSet::new(),
        );
        let seen = |i: usize| {
            let st: &PartitionStatus = &s[i];
            let latest = st.last_attempt.as_ref().map(|a| (a.attempt, a.status));
            (
                st.state,
                st.attempts,
                latest,
                st.last_success.as_ref().map(|a| a.attempt),
            )
        };
        let (failed, succeeded) = (AttemptStatus::Failed, AttemptStatus::Succeeded);
        assert_eq!(seen(0), (LoadState::Failed, 2, Some((2, failed)), Some(1)));
        // The cancelled attempt counts but changed nothing: the success
        // before it is both the latest and the last success.
        assert_eq!(
            seen(1),
            (LoadState::Loaded, 3, Some((2, succeeded)), Some(2))
        );
        assert_eq!(seen(2), (LoadState::Missing, 0, None, None));
    }

    /// A partition whose rows are gone stays vanished when the job's
    /// definition changes too (it is the more urgent of the two), and its
    /// count differs from its load's: drift.
    #[test]
    fn a_vanished_partition_stays_vanished_under_a_new_definition() {
        let (job, _) =
            job_and_statuses("strategy = \"replace_partition\"\npartition_column = \"dt\"");
        let now = june_10();
        let mut old = attempt(&job, "2026-06-01", 1, AttemptStatus::Succeeded);
        old.definition_hash = "an older definition".into();
        let kept = {
            let mut a = attempt(&job, "2026-06-02", 1, AttemptStatus::Succeeded);
            a.definition_hash = "an older definition".into();
            a
        };
        let mut counts = Counts::new();
        counts.insert("2026-06-02".into(), 3);
        let s = derive(
            &job,
            &job.partitions(now),
            Some(&counts),
            &crate::warehouse::ledger::PartitionLedger::summarize(vec![old, kept]),
            now,
            &HashSet::new(),
        );
        assert_eq!((s[0].state, s[0].drift), (LoadState::Vanished, true));
        assert_eq!((s[1].state, s[1].drift), (LoadState::Stale, false));
    }

    #[test]
    fn an_applied_success_reads_as_derive_would() {
        let (job, mut statuses) =
            job_and_statuses("strategy = \"replace_partition\"\npartition_column = \"dt\"");
        assert!(statuses.iter().all(|s| s.state == LoadState::Missing));
        apply_attempt(
            &job,
            &mut statuses,
            "2026-06-02",
            AttemptEnd::Succeeded { rows_after: 7 },
            &job.definition_hash(),
        );
        apply_attempt(
            &job,
            &mut statuses,
            "2026-06-03",
            AttemptEnd::Succeeded { rows_after: 0 },
            &job.definition_hash(),
        );
        let s = &statuses[1];
        assert_eq!(
            (s.state, s.rows_now, s.rows_at_load, s.attempts),
            (LoadState::Loaded, Some(7), Some(7), 1)
        );
        assert_eq!(statuses[2].state, LoadState::Empty);
        assert_eq!(
            statuses[0].state,
            LoadState::Missing,
            "other partitions keep theirs"
        );
        // Loaded by a run of the job's definition before it changed.
        apply_attempt(
            &job,
            &mut statuses,
            "2026-06-01",
            AttemptEnd::Succeeded { rows_after: 7 },
            "an older definition",
        );
        assert_eq!(statuses[0].state, LoadState::Stale);
    }

    #[test]
    fn failures_count_and_rollbacks_change_nothing() {
        let (job, mut statuses) =
            job_and_statuses("strategy = \"merge_key\"\nunique_key = [\"x\"]");
        let hash = job.definition_hash();
        apply_attempt(&job, &mut statuses, "2026-06-01", AttemptEnd::Failed, &hash);
        apply_attempt(
            &job,
            &mut statuses,
            "2026-06-02",
            AttemptEnd::RolledBack,
            &hash,
        );
        apply_attempt(
            &job,
            &mut statuses,
            "2026-06-03",
            AttemptEnd::Succeeded { rows_after: 5 },
            &hash,
        );
        assert_eq!(
            (statuses[0].state, statuses[0].attempts),
            (LoadState::Failed, 1)
        );
        assert_eq!(
            (statuses[1].state, statuses[1].attempts),
            (LoadState::Missing, 0)
        );
        // Without a partition column the target's count is not read: the
        // rows merged at the load stand for it.
        assert_eq!(statuses[2].rows_now, None);
        assert_eq!(statuses[2].rows(), Some(5));
        assert_eq!(statuses[2].state, LoadState::Loaded);
        // QA: refused for a lock another run held, it wrote nothing, as
        // the ledger records it: the console marked it failed until the
        // next read.
        apply_attempt(
            &job,
            &mut statuses,
            "2026-06-03",
            AttemptEnd::LockHeld,
            &hash,
        );
        assert_eq!(
            (statuses[2].state, statuses[2].attempts),
            (LoadState::Loaded, 2)
        );
    }
}
