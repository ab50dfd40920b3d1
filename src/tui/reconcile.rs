//! Source reconciliation in the console: `O` counts what the current job's
//! SQL would write now for the partitions on screen (one read-only grouped
//! query, bounded by the statement timeout, in the background), so that
//! partitions whose source changed since they were loaded are marked. Never
//! on a refresh by itself; pressing `O` again, leaving the job or quitting
//! stops it. The confirm dialog of a replace job counts the source of its
//! partitions the same way, to show what the shrink guard will refuse.

use super::job::JobView;
use super::keymap;
use super::keys::{Action, Scope};
use super::msg::{Effect, ReconcileRequest};
use super::widgets::{signed, thousands};
use crate::partition::Partition;
use crate::state::LoadState;
use crate::warehouse::SourceCounts;

/// The reconciliation in flight: which job, which partitions.
#[derive(Debug, Clone)]
pub struct InFlight {
    pub id: usize,
    pub job: String,
    pub first: Partition,
    pub last: Partition,
    /// Counted for the confirm dialog, which shows the answer itself.
    pub for_run: bool,
}

/// The console's reconciliation, at most one at a time.
#[derive(Debug, Clone, Default)]
pub struct Reconciler {
    in_flight: Option<InFlight>,
}

impl Reconciler {
    pub fn in_flight(&self) -> Option<&InFlight> {
        self.in_flight.as_ref()
    }

    /// `O`: starts reconciling the partitions of `job` in the calendar's
    /// visible units (`capacity` of them) that are not in the future, or
    /// stops the reconciliation in flight (a confirm dialog's count is
    /// replaced instead). Answers with the effect and the
    /// status-bar note.
    pub fn toggle(
        &mut self,
        job: &JobView,
        capacity: usize,
        connected: bool,
        id: usize,
    ) -> (Option<Effect>, String) {
        if let Some(f) = self.in_flight.take_if(|f| !f.for_run) {
            return (
                Some(Effect::StopReconcile(f.id)),
                format!("reconciliation of {} stopped", f.job),
            );
        }
        if !connected {
            return (
                None,
                "cannot reconcile: not connected to the warehouse".into(),
            );
        }
        let shown: Vec<usize> = (0..job.partitions.len())
            .filter(|i| {
                let u = job.unit_of(*i);
                u >= job.scroll
                    && u < job.scroll + capacity
                    && job.state_at(*i).is_some_and(|s| s != LoadState::Future)
            })
            .collect();
        let (Some(first), Some(last)) = (shown.first(), shown.last()) else {
            return (None, "nothing on screen to reconcile".into());
        };
        let (first, last) = (job.partitions[*first], job.partitions[*last]);
        let note = format!(
            "reconciling {} {}..{} with its source… ({} stops)",
            job.job.name,
            first.name(),
            last.name(),
            keymap::key(Scope::Main, Action::Reconcile)
        );
        (Some(self.start(job, first, last, id, false)), note)
    }

    /// Counts the source of `job`'s partitions `first..=last` for the
    /// confirm dialog; it takes the place of a reconciliation in flight
    /// (the background stops the older one when a new one starts).
    pub fn count_for_run(
        &mut self,
        job: &JobView,
        first: Partition,
        last: Partition,
        id: usize,
    ) -> Effect {
        self.start(job, first, last, id, true)
    }

    /// The confirm dialog closed: its count, if still in flight, stops.
    pub fn stop_for_run(&mut self) -> Option<Effect> {
        self.in_flight
            .take_if(|f| f.for_run)
            .map(|f| Effect::StopReconcile(f.id))
    }

    fn start(
        &mut self,
        job: &JobView,
        first: Partition,
        last: Partition,
        id: usize,
        for_run: bool,
    ) -> Effect {
        self.in_flight = Some(InFlight {
            id,
            job: job.job.name.clone(),
            first,
            last,
            for_run,
        });
        Effect::Reconcile(Box::new(ReconcileRequest {
            id,
            job: job.job.clone(),
            first,
            last,
        }))
    }

    /// The job on screen is now `current`: a reconciliation of another job
    /// stops.
    pub fn follow(&mut self, current: Option<&str>) -> Option<Effect> {
        let f = self.in_flight.as_ref()?;
        if current == Some(f.job.as_str()) {
            return None;
        }
        self.in_flight.take().map(|f| Effect::StopReconcile(f.id))
    }

    /// A reconciliation ended: its counts go on `job` (the one it counted,
    /// found by the caller from [`InFlight::job`]); answers with the note,
    /// unless it was stopped since or the confirm dialog asked for it (the
    /// dialog shows its answer).
    pub fn answered(
        &mut self,
        id: usize,
        job: Option<&mut JobView>,
        result: Result<SourceCounts, String>,
    ) -> Option<(bool, String)> {
        let f = self.in_flight.take_if(|f| f.id == id)?;
        let job = job?;
        let counts = match result {
            Ok(counts) => counts,
            Err(_) if f.for_run => return None,
            Err(e) => return Some((true, format!("reconciliation of {} failed: {e}", f.job))),
        };
        job.reconciled(counts.partitions, f.first, f.last);
        if f.for_run {
            return None;
        }
        let late: Vec<i64> = job
            .statuses
            .iter()
            .filter(|s| s.partition >= f.first && s.partition <= f.last)
            .filter_map(|s| s.out_of_date())
            .collect();
        let range = format!("{}..{}", f.first.name(), f.last.name());
        // Rows no window holds come first: every load of the range fails
        // over them, whatever else the counts say.
        if let Some(note) =
            crate::state::source_null_partition_note(&job.job, counts.null_partition)
        {
            return Some((true, format!("{} {range}: {note}", f.job)));
        }
        Some((
            false,
            if late.is_empty() {
                format!(
                    "{} {range}: every loaded partition agrees with its source",
                    f.job
                )
            } else {
                format!(
                    "{} {range}: {} out of date ({} rows); {} selects them",
                    f.job,
                    crate::numbers::n_partitions(late.len() as i64),
                    signed(late.iter().sum()),
                    keymap::key(Scope::Main, Action::SelectOutOfDate)
                )
            },
        ))
    }
}

/// The detail pane's words for a reconciled partition, beside its rows at
/// its last load: "source 10,512: +32 late", "source 10,480: as loaded".
/// None before any load, which the source has nothing to say of.
pub fn source_line(job: &JobView, i: usize) -> Option<String> {
    let s = job.status_at(i)?;
    let source = s.rows_source?;
    s.rows_at_load?;
    Some(match s.out_of_date() {
        Some(d) if d > 0 => format!("source {}: {} late", thousands(source), signed(d)),
        // A merge never deletes: a re-run keeps them.
        Some(d) => format!(
            "source {}: {} gone{}",
            thousands(source),
            signed(d),
            if job.job.strategy == crate::config::Strategy::MergeKey {
                " (a merge keeps them)"
            } else {
                ""
            }
        ),
        None => format!("source {}: as loaded", thousands(source)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::job_view;
    use crate::warehouse::Counts;

    /// Source rows with a NULL partition column fail every replace load of
    /// the range: `O` says so, as a warning, before anything is run.
    #[test]
    fn a_reconciliation_says_the_source_rows_no_window_holds() {
        let mut job = job_view("fct_orders", false, "■■■■■■■■■■");
        let mut r = Reconciler::default();
        let (Some(Effect::Reconcile(req)), _) = r.toggle(&job, 1, true, 1) else {
            panic!("no reconcile effect");
        };
        let counts = SourceCounts {
            partitions: job.partitions.iter().map(|p| (p.name(), 100)).collect(),
            null_partition: Some(3),
        };
        let (warning, note) = r
            .answered(req.id, Some(&mut job), Ok(counts))
            .expect("a note");
        assert!(warning, "{note}");
        assert!(
            note.contains("gives 3 rows with NULL dt over this range: a load refuses them"),
            "{note}"
        );
    }

    #[test]
    fn a_reconciliation_marks_late_rows_and_stops_when_asked() {
        let mut job = job_view("fct_orders", false, "■■✗■·■■✗■■");
        let mut r = Reconciler::default();
        let (effect, note) = r.toggle(&job, 1, false, 1);
        assert!(effect.is_none() && note.contains("not connected"), "{note}");
        let (Some(Effect::Reconcile(req)), _) = r.toggle(&job, 1, true, 1) else {
            panic!("no reconcile effect");
        };
        assert_eq!(
            (req.first.name(), req.last.name()),
            ("2026-06-01".into(), "2026-06-10".into())
        );
        assert!(matches!(
            r.toggle(&job, 1, true, 2).0,
            Some(Effect::StopReconcile(1))
        ));
        assert_eq!(
            r.answered(1, Some(&mut job), Ok(SourceCounts::default())),
            None,
            "stopped"
        );
        r.toggle(&job, 1, true, 3);
        assert!(r.follow(Some("fct_orders")).is_none());
        let mut counts: Counts = job.partitions.iter().map(|p| (p.name(), 100)).collect();
        counts.insert("2026-06-02".into(), 132);
        let counts = SourceCounts {
            partitions: counts,
            null_partition: Some(0),
        };
        let note = r.answered(3, Some(&mut job), Ok(counts)).expect("a note");
        assert!(
            note.1.contains("1 partition out of date (+32 rows)"),
            "{note:?}"
        );
        assert_eq!(job.status_at(1).and_then(|s| s.out_of_date()), Some(32));
        assert_eq!(
            source_line(&job, 1).as_deref(),
            Some("source 132: +32 late")
        );
        assert_eq!(
            source_line(&job, 0).as_deref(),
            Some("source 100: as loaded")
        );
        counts_gone(&mut job, false);
        assert_eq!(source_line(&job, 1).as_deref(), Some("source 98: −2 gone"));
        r.toggle(&job, 1, true, 4);
        assert!(matches!(
            r.follow(Some("other")),
            Some(Effect::StopReconcile(4))
        ));
    }

    /// Reconciles `job` with 2 rows gone from its second partition's source.
    fn counts_gone(job: &mut JobView, merge: bool) {
        let mut counts: Counts = job.partitions.iter().map(|p| (p.name(), 100)).collect();
        counts.insert("2026-06-02".into(), 98);
        let (first, last) = (job.partitions[0], *job.partitions.last().unwrap());
        job.reconciled(counts, first, last);
        assert_eq!(job.job.strategy == crate::config::Strategy::MergeKey, merge);
    }

    /// QA: rows gone from a merge window's source stay in its target after
    /// a re-run; the detail line says so.
    #[test]
    fn rows_gone_from_a_merge_source_are_said_to_stay() {
        let mut job = job_view("dim", true, "■■■■■■■■■■");
        counts_gone(&mut job, true);
        assert_eq!(
            source_line(&job, 1).as_deref(),
            Some("source 98: −2 gone (a merge keeps them)")
        );
    }
}
