//! The run dialog opened on a choice of partitions, and the run it
//! confirms started: what other runs of this console have queued is left
//! out, and the request carries what the run's report needs.

use super::{App, Modal};
use crate::cli::RunArgs;
use crate::partition::Partition;
use crate::tui::confirm::ConfirmDialog;
use crate::tui::msg::{CoverRequest, Effect, RunRequest};
use crate::tui::runs::{RunPartState, RunView};

impl App {
    /// Opens the confirm dialog on `candidates` (else the selection, else
    /// the cursor's partition) with `args` (else a bare `idem run JOB`).
    pub(super) fn open_confirm(
        &mut self,
        candidates: Option<Vec<usize>>,
        args: Option<RunArgs>,
    ) -> Vec<Effect> {
        let index = self.shared.jobs.current_index();
        let Some(j) = self.shared.jobs.current() else {
            return Vec::new();
        };
        let candidates = candidates.unwrap_or_else(|| j.chosen());
        let mut args = args.unwrap_or_else(|| RunArgs {
            job: j.job.name.clone(),
            ..RunArgs::default()
        });
        // The same command reads the same config.
        args.config = Some(self.config.path.clone());
        match ConfirmDialog::open(
            index,
            j,
            candidates,
            args,
            &self.config.defaults,
            self.shared.now,
        ) {
            Ok(mut c) => {
                // A run lowers itself to what the warehouse grants: the
                // dialog says so before it starts.
                if self.shared.granted.is_some() {
                    c.granted = self.shared.granted.clone();
                    c.replan(j, &self.config.defaults, self.shared.now);
                }
                self.shared.modal = Modal::Confirm(Box::new(c));
            }
            Err(e) => self.shared.message = Some((true, e)),
        }
        let mut effects = self.replan_cascade();
        effects.extend(self.count_source_for_run());
        effects.extend(self.read_cover_for_run());
        // The file as saved now, not as last read (a refresh's): an edit
        // saved since replans the dialog before Enter.
        if matches!(self.shared.modal, Modal::Confirm(_)) {
            effects.push(self.read_config());
        }
        effects
    }

    /// The confirm dialog says which of its windows no native partition of
    /// the target covers (the run would fail them), read in the background.
    pub(super) fn read_cover_for_run(&mut self) -> Option<Effect> {
        let Modal::Confirm(c) = &mut self.shared.modal else {
            return None;
        };
        let job = self
            .shared
            .jobs
            .get(c.job)
            .filter(|_| self.shared.connected)?;
        // Only PostgreSQL's native partitions can leave a window no table.
        if job.job.engine != crate::config::Engine::Postgres {
            return None;
        }
        job.job.partition_column.as_ref()?;
        let partitions = c.cover_span(job);
        let id = self.next_request;
        self.next_request += 1;
        c.reading_cover(id);
        Some(Effect::ReadCover(Box::new(CoverRequest {
            id,
            job: job.job.clone(),
            partitions,
        })))
    }

    /// A replace job's confirm dialog shows what the shrink guard will
    /// refuse: the source of its partitions is counted in the background.
    pub(super) fn count_source_for_run(&mut self) -> Vec<Effect> {
        let Modal::Confirm(c) = &mut self.shared.modal else {
            return Vec::new();
        };
        let Some(job) = self.shared.jobs.get(c.job) else {
            return Vec::new();
        };
        let Some((first, last)) = c.source_span(job).filter(|_| self.shared.connected) else {
            return Vec::new();
        };
        let id = self.next_request;
        self.next_request += 1;
        c.counting_source(id);
        vec![self.shared.reconciler.count_for_run(job, first, last, id)]
    }

    /// A confirmed run that cannot start: the dialog stays, with the
    /// reason typed in it, and the status line says why nothing ran.
    fn keep_dialog(&mut self, mut c: Box<ConfirmDialog>, why: String) -> Vec<Effect> {
        self.shared.message = Some((true, format!("nothing ran: {why}")));
        c.unconfirm();
        self.shared.modal = Modal::Confirm(c);
        Vec::new()
    }

    pub(super) fn start_run(&mut self, c: Box<ConfirmDialog>) -> Vec<Effect> {
        let Some(mut backfill) = c.backfill().filter(|b| !b.partitions.is_empty()) else {
            return self.keep_dialog(
                c,
                "no partition matches the filter now; choose others or Esc to close".into(),
            );
        };
        // Partitions another run of this console has yet to load are its:
        // both would load them, one after the other.
        let queued: std::collections::HashSet<&str> = self
            .shared
            .runs
            .iter()
            .filter(|r| r.active() && r.job == backfill.job.name)
            .flat_map(|r| &r.partitions)
            .filter(|p| matches!(p.state, RunPartState::Queued | RunPartState::Retrying))
            .map(|p| p.name.as_str())
            .collect();
        let before = backfill.partitions.len();
        backfill
            .partitions
            .retain(|p| !queued.contains(p.name().as_str()));
        let left_out = before - backfill.partitions.len();
        if backfill.partitions.is_empty() {
            let (they, them) = if left_out == 1 {
                ("it is", "it")
            } else {
                ("they are all", "them")
            };
            return self.keep_dialog(
                c,
                format!("{they} queued in a run of this console already, which loads {them}"),
            );
        }
        if !self.shared.connected {
            return self.keep_dialog(
                c,
                "not connected to the warehouse; Enter tries again once it reconnects".into(),
            );
        }
        let steps = match c.cascade() {
            // The cascade turned off runs the rest.
            Some(plan) if !plan.problems.is_empty() => {
                let why = format!(
                    "cannot cascade: {}; c turns the cascade off to run without it",
                    plan.problems.join("; ")
                );
                return self.keep_dialog(c, why);
            }
            Some(plan) => plan.steps.clone(),
            None => Vec::new(),
        };
        if let Some(j) = self.shared.jobs.get_mut(c.job) {
            j.clear_selection();
        }
        let mut numbered = Vec::new();
        let mut empty_before = Vec::new();
        let first = self.next_run;
        for b in std::iter::once(&backfill).chain(&steps) {
            let run = self.next_run;
            self.next_run += 1;
            let mut view = RunView::new(run, b, self.shared.now);
            view.cascade = (!steps.is_empty()).then_some(first);
            if run == first && !steps.is_empty() {
                view.cascade_jobs = self.config.jobs.clone();
            }
            let empty: Vec<Partition> = self
                .shared
                .jobs
                .by_name(&b.job.name)
                .map(|j| {
                    b.partitions
                        .iter()
                        .filter(|p| {
                            j.index_of(**p).and_then(|i| j.state_at(i))
                                == Some(crate::state::LoadState::Empty)
                        })
                        .copied()
                        .collect()
                })
                .unwrap_or_default();
            let names: std::collections::HashSet<String> =
                empty.iter().map(Partition::name).collect();
            view.empty_before(|name| names.contains(name));
            empty_before.push(empty);
            self.shared.runs.push(view);
            numbered.push(run);
        }
        self.shared.selected_run = self.shared.runs.len() - 1 - steps.len();
        if left_out > 0 {
            self.shared.message = Some((
                false,
                format!(
                    "{} left out: queued in a run of this console already",
                    crate::numbers::n_partitions(left_out as i64)
                ),
            ));
        }
        let cascade = numbered[1..].iter().copied().zip(steps).collect();
        let args = c.run_args().unwrap_or_else(|| RunArgs {
            job: backfill.job.name.clone(),
            ..RunArgs::default()
        });
        vec![Effect::StartRun(Box::new(RunRequest {
            run: numbered[0],
            backfill,
            cascade,
            args: RunArgs {
                config: Some(self.config.path.clone()),
                ..args
            },
            empty_before,
        }))]
    }
}
