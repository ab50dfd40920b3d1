//! What the runs the console started report: the engine's events, a run
//! refused before it began, and the status-bar note on how each ended.

use super::{App, Effect, Event, RunView};

impl App {
    /// Shows an engine event in its run and in its job; a finished run
    /// refreshes the job, and the jobs downstream of it, from the warehouse.
    pub(super) fn engine_event(&mut self, run: usize, event: Event) -> Vec<Effect> {
        let Some(run) = self.run_of_event(run, &event) else {
            return Vec::new();
        };
        let Some(r) = self.shared.runs.iter_mut().find(|r| r.id == run) else {
            return Vec::new();
        };
        let was_active = r.active();
        r.apply(&event, self.shared.now);
        // A cascade step skipped whole ends without a RunFinished.
        let ended = was_active && !r.active();
        // A job removed from the config while its run went on has no
        // calendar to show the event in; its run view still does, and how
        // the run ended is still said. A job renamed shows its partitions
        // in flight under the new name; what they load, the ledger holds
        // under the old one, as the next read says.
        if let Some(j) = self.shared.jobs.by_name_mut(&r.shown_under) {
            if r.shown_under == r.job {
                j.apply_event(&event, &r.definition);
            } else {
                j.follow_flight(&event);
            }
        }
        if ended {
            self.shared.message = self.ending_of(run);
        } else if let (Event::ConcurrencyLowered { .. }, Some(note)) = (&event, &r.lowered) {
            self.shared.message = Some((false, note.clone()));
        }
        if !matches!(event, Event::RunFinished { .. }) {
            return Vec::new();
        }
        let Some(r) = self.shared.runs.iter().find(|r| r.id == run) else {
            return Vec::new();
        };
        if let Some(j) = self.shared.jobs.by_name_mut(&r.shown_under) {
            j.run_ended(r.partitions.iter().map(|p| p.name.as_str()));
        }
        // What the run loaded may have made the jobs reading it stale.
        let mut jobs = vec![r.shown_under.clone()];
        jobs.extend(self.shared.lineage.downstream_closure(&r.shown_under));
        let names: Vec<String> = jobs
            .iter()
            .flat_map(|name| self.refresh_job(name))
            .flat_map(|e| match e {
                Effect::Refresh(names) => names,
                _ => Vec::new(),
            })
            .collect();
        if names.is_empty() {
            Vec::new()
        } else {
            vec![Effect::Refresh(names)]
        }
    }

    /// The run that shows `event`, sent as of `run`: `run` itself, or, for
    /// another job, that job's step in `run`'s cascade. A job the cascade
    /// gave a step as it went (a reader with no step planned, reached by a
    /// merge) gets its run here, on its first event (QA: its events were
    /// shown as the root run's, its partitions in the root job's calendar),
    /// of the job's definition as the cascade started, which the step runs
    /// (QA: it took the config's at its first event: a reload meanwhile
    /// showed what the old SQL loaded as loaded by the new, not stale).
    fn run_of_event(&mut self, run: usize, event: &Event) -> Option<usize> {
        let root = self.shared.runs.iter().find(|r| r.id == run)?;
        if root.job == event.job() {
            return Some(run);
        }
        let cascade = root.cascade.unwrap_or(run);
        if let Some(step) = self
            .shared
            .runs
            .iter()
            .find(|r| r.cascade == Some(cascade) && r.job == event.job())
        {
            return Some(step.id);
        }
        let job = root.cascade_jobs.iter().find(|j| j.name == event.job())?;
        let step = crate::engine::Backfill {
            concurrency: root.concurrency,
            retries: root.retries,
            reason: root.reason.clone(),
            ..crate::engine::Backfill::of(job.clone(), Vec::new())
        };
        let id = self.next_run;
        self.next_run += 1;
        let mut view = RunView::new(id, &step, self.shared.now);
        view.cascade = Some(cascade);
        for r in self.shared.runs.iter_mut().filter(|r| r.id == run) {
            r.cascade = Some(cascade);
        }
        self.shared.runs.push(view);
        Some(id)
    }

    /// The status-bar note on how run `id` ended: its own, or its
    /// cascade's once every step has ended.
    fn ending_of(&self, id: usize) -> Option<(bool, String)> {
        let r = self.shared.runs.iter().find(|r| r.id == id)?;
        let Some(first) = r.cascade else {
            return r.ending();
        };
        let steps: Vec<&RunView> = self
            .shared
            .runs
            .iter()
            .filter(|s| s.cascade == Some(first))
            .collect();
        crate::tui::runs::cascade_ending(&steps).or_else(|| r.ending())
    }

    /// Run `id`'s log is not kept on disk: its log pane says so while the
    /// run is shown, and the status bar now.
    pub(super) fn run_log_not_kept(&mut self, id: usize, why: String) {
        self.shared.message = Some((
            true,
            format!("run log not kept: {why}; idem log --lines will not show this run"),
        ));
        if let Some(r) = self.shared.runs.iter_mut().find(|r| r.id == id) {
            r.log_not_kept = Some(why);
        }
    }

    /// Run `id` was refused before it began: every partition reads as not
    /// run, and the status bar says why, or how its cascade ended.
    pub(super) fn run_rejected(&mut self, id: usize, error: &str) {
        if let Some(r) = self.shared.runs.iter_mut().find(|r| r.id == id) {
            r.rejected(error);
        }
        self.shared.message = self
            .ending_of(id)
            .or_else(|| Some((true, format!("run not started: {error}"))));
    }
}
