//! The console's background work: every effect `update` asks for runs here
//! as a task (connect, read states, run a backfill, verify, read an old
//! definition, read a theme file), and answers with a message. Tasks never
//! touch the app's state.

use std::collections::{HashMap, HashSet};

use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::app::App;
use super::msg::{
    Connection, CoverRequest, DiffRequest, Effect, Msg, ReconcileRequest, Unread, VerifyRequest,
};
use super::theme::Theme;
use crate::cli::{Ended, RunReport};
use crate::config::{DefinitionChange, Job};
use crate::partition::{Partition, now_utc};
use crate::state::{
    Derivations, StatusScope, job_status_in, job_status_since, noticing_slow, slow_read_note,
};
use crate::warehouse::{RefreshCache, Warehouse};

/// A task that writes to the warehouse.
struct Tracked {
    /// The console's numbers for the run's steps (none: a verification).
    runs: Vec<usize>,
    job: String,
    task: JoinHandle<Option<RunReport>>,
}

/// The runs a console had in flight when it was left, once cancelled.
#[derive(Debug, Default)]
pub struct LeftInFlight {
    /// Each run's report, as `idem run` would give it.
    pub reports: Vec<RunReport>,
    /// The jobs whose runs had not ended when idem stopped waiting, each
    /// with how far its run had got when the console was left.
    pub unended: Vec<(String, String)>,
}

/// What background tasks send to the event loop.
pub enum Incoming {
    Msg(Msg),
    Warehouse(Result<Warehouse, String>),
}

pub struct Background {
    tx: UnboundedSender<Incoming>,
    warehouse: Option<Warehouse>,
    connecting: bool,
    tokens: HashMap<usize, CancellationToken>,
    gates: HashMap<usize, crate::engine::Gate>,
    /// The runs and verifications in flight, and some just ended.
    runs: Vec<Tracked>,
    /// The console's runs in flight when it quit, and how far each had
    /// got: what it reports.
    left: HashMap<usize, String>,
    /// The reconciliation in flight, to stop.
    reconciling: Option<(usize, CancellationToken)>,
    /// The reconciliations' tasks: on leaving, each stops its count on the
    /// server before the process ends.
    counting: Vec<JoinHandle<()>>,
    /// Stops the verifications in flight (on leaving: each holds its
    /// partition's lock until it rolls back).
    verifying: CancellationToken,
    max_connections: u32,
    /// What the earlier refreshes read and answered.
    seen: Seen,
}

impl Background {
    pub fn new(tx: UnboundedSender<Incoming>, concurrency: usize) -> Background {
        Background {
            tx,
            warehouse: None,
            connecting: false,
            tokens: HashMap::new(),
            gates: HashMap::new(),
            runs: Vec::new(),
            left: HashMap::new(),
            reconciling: None,
            counting: Vec::new(),
            verifying: CancellationToken::new(),
            max_connections: (concurrency as u32 * 2 + 2).max(4),
            seen: Seen::default(),
        }
    }

    /// The message for what a task sent; a new connection is kept here.
    pub fn receive(&mut self, incoming: Incoming) -> Msg {
        match incoming {
            Incoming::Msg(m) => m,
            Incoming::Warehouse(r) => {
                self.connecting = false;
                match r {
                    Ok(wh) => {
                        let connection = Connection {
                            url: wh.display_url(),
                            syntax: wh.syntax(),
                            table_names: wh.table_names(),
                            granted: wh
                                .partitions_granted()
                                .map(|(partitions, why)| (partitions, why.to_string())),
                        };
                        self.warehouse = Some(wh);
                        Msg::Connected(Ok(connection))
                    }
                    Err(e) => Msg::Connected(Err(e)),
                }
            }
        }
    }

    /// Starts the work an effect asks for.
    pub fn apply(&mut self, app: &App, effect: Effect) {
        let tx = self.tx.clone();
        let send = move |msg: Msg| {
            let _ = tx.send(Incoming::Msg(msg));
        };
        match effect {
            Effect::Connect => {
                if self.connecting {
                    return;
                }
                self.connecting = true;
                let tx = self.tx.clone();
                let config = app.config().warehouse.clone();
                let max = self.max_connections;
                tokio::spawn(async move {
                    // It reads until a run: that makes idem's ledger.
                    let r = Warehouse::connect_to_read(&config, max)
                        .await
                        .map_err(|e| e.to_string());
                    let _ = tx.send(Incoming::Warehouse(r));
                });
            }
            Effect::Refresh(names) => {
                let Some(wh) = self.warehouse.clone() else {
                    return;
                };
                let jobs = app.jobs_named(&names);
                for job in &jobs {
                    if !app.holds_last_read(&job.name) {
                        self.seen.derivations.forget(&job.name);
                    }
                }
                let first = app.unread_on_screen();
                let seen = self.seen.clone();
                let config = app.config().clone();
                let lineage = app.lineage.clone();
                tokio::spawn(async move {
                    read_states(&wh, &config, &lineage, &jobs, first, &seen, send).await;
                });
            }
            Effect::StartRun(req) => {
                let run = req.run;
                let Some(wh) = self.warehouse.clone() else {
                    send(Msg::RunRejected {
                        run,
                        error: "not connected to the warehouse".into(),
                    });
                    return;
                };
                let token = CancellationToken::new();
                let gate = crate::engine::Gate::default();
                self.tokens.insert(run, token.clone());
                self.gates.insert(run, gate.clone());
                for (step, _) in &req.cascade {
                    self.tokens.insert(*step, token.clone());
                    self.gates.insert(*step, gate.clone());
                }
                // A cascade's events go to the run of their job's step.
                let mut runs: HashMap<String, usize> = req
                    .cascade
                    .iter()
                    .map(|(step, b)| (b.job.name.clone(), *step))
                    .collect();
                runs.insert(req.backfill.job.name.clone(), run);
                let (etx, mut erx) = mpsc::unbounded_channel();
                // Kept in the run logs as a headless run's are (`idem log`).
                let mut runlog = match crate::runlog::RunLog::open(&wh.config().url) {
                    Ok(log) => Some(log),
                    Err(why) => {
                        send(Msg::RunLogNotKept { run, why });
                        None
                    }
                };
                let lineage = app.lineage.clone();
                // A reader with no step is given one if a merge reaches it.
                let all_jobs = app.config().jobs.clone();
                let unstarted = send.clone();
                let numbers = std::iter::once(run)
                    .chain(req.cascade.iter().map(|(step, _)| *step))
                    .collect();
                let job = req.backfill.job.name.clone();
                self.track(
                    numbers,
                    job,
                    tokio::spawn(async move {
                        let jobs = std::iter::once(&req.backfill.job)
                            .chain(req.cascade.iter().map(|(_, b)| &b.job));
                        // A quit (or a cancel) while the check waits on a
                        // stalled server ends the run before it begins.
                        let refusal = tokio::select! {
                            refusal = refusal_before_a_run(&wh, jobs, req.backfill.reason.as_deref()) => refusal,
                            () = token.cancelled() => Some(CANCELLED_BEFORE_IT_BEGAN.into()),
                        };
                        if let Some(refusal) = refusal {
                            for step in
                                std::iter::once(run).chain(req.cascade.iter().map(|(s, _)| *s))
                            {
                                unstarted(Msg::RunRejected {
                                    run: step,
                                    error: refusal.clone(),
                                });
                            }
                            let refused = Some(refusal.as_str()).filter(|_| !token.is_cancelled());
                            return Some(RunReport::never_started(&req.args, refused));
                        }
                        if req.cascade.is_empty() {
                            let summary =
                                crate::engine::run_gated(&wh, &req.backfill, &etx, &token, &gate)
                                    .await;
                            let ended = Ended::One(Box::new(summary));
                            let steps = std::slice::from_ref(&req.backfill);
                            return Some(RunReport::of_console_run(
                                &req.args,
                                steps,
                                &req.empty_before,
                                &ended,
                            ));
                        }
                        let mut steps = vec![req.backfill.clone()];
                        steps.extend(req.cascade.iter().map(|(_, b)| b.clone()));
                        let reach = crate::engine::cascade::Reach {
                            now: crate::partition::now_utc(),
                            allow_incomplete: req.args.allow_incomplete,
                        };
                        let outcomes = crate::engine::cascade::run_gated(
                            &wh,
                            &lineage,
                            (&steps, reach, &all_jobs),
                            &etx,
                            &token,
                            &gate,
                        )
                        .await;
                        // A step a cancel kept from starting has no events of its own.
                        for (step, b) in &req.cascade {
                            let outcome = outcomes.iter().find(|o| o.job == b.job.name);
                            if outcome.is_some_and(|o| !o.not_started.is_empty()) {
                                unstarted(Msg::RunRejected {
                                    run: *step,
                                    error: format!("{}: cancelled before it started", b.job.name),
                                });
                            }
                        }
                        let ended = Ended::Cascade(outcomes);
                        Some(RunReport::of_console_run(
                            &req.args,
                            &steps,
                            &req.empty_before,
                            &ended,
                        ))
                    }),
                );
                tokio::spawn(async move {
                    while let Some(event) = erx.recv().await {
                        let run = runs.get(event.job()).copied().unwrap_or(run);
                        if let Some(log) = &mut runlog {
                            log.record(&event);
                            if let Some(why) = log.failure() {
                                send(Msg::RunLogNotKept { run, why });
                            }
                            // An attempt's end: whether its log is whole on
                            // disk, as `idem log` will find it.
                            if let Some((partition, _)) = event.attempt_end()
                                && let Some(why) = log.unwritten(event.job(), partition)
                            {
                                let partition = partition.to_string();
                                send(Msg::PartitionLogUnwritten {
                                    run,
                                    partition,
                                    why,
                                });
                            }
                        }
                        send(Msg::Engine { run, event });
                    }
                });
            }
            Effect::Verify(req) => {
                let Some(wh) = self.warehouse.clone() else {
                    send(Msg::Verified {
                        id: req.id,
                        result: Err("not connected to the warehouse".into()),
                    });
                    return;
                };
                let cancel = self.verifying.clone();
                self.track(
                    Vec::new(),
                    req.job.name.clone(),
                    tokio::spawn(async move {
                        send(verify(&wh, &req, &cancel).await);
                        None
                    }),
                );
            }
            Effect::DefinitionDiff(req) => {
                let Some(wh) = self.warehouse.clone() else {
                    send(Msg::DefinitionDiff {
                        id: req.id,
                        result: Err("not connected to the warehouse".into()),
                    });
                    return;
                };
                tokio::spawn(async move { send(definition_diff(&wh, &req).await) });
            }
            Effect::Reconcile(req) => {
                let Some(wh) = self.warehouse.clone() else {
                    send(Msg::Reconciled {
                        id: req.id,
                        result: Err("not connected to the warehouse".into()),
                    });
                    return;
                };
                let token = CancellationToken::new();
                if let Some((_, old)) = self.reconciling.replace((req.id, token.clone())) {
                    old.cancel();
                }
                self.counting.retain(|t| !t.is_finished());
                self.counting.push(tokio::spawn(async move {
                    let msg = reconcile(&wh, &req, &token).await;
                    if !token.is_cancelled() {
                        send(msg);
                    }
                }));
            }
            Effect::ReadCover(req) => {
                let Some(wh) = self.warehouse.clone() else {
                    return;
                };
                tokio::spawn(async move { send(read_cover(&wh, &req).await) });
            }
            Effect::Loads(req) => {
                let Some(wh) = self.warehouse.clone() else {
                    return;
                };
                tokio::spawn(async move {
                    let partition = req.partition.name();
                    let attempts = wh.attempts(&req.job, Some(&partition));
                    let result = wh.answering(attempts).await.map_err(|e| e.to_string());
                    send(Msg::Loads { id: req.id, result });
                });
            }
            Effect::StopReconcile(id) => {
                if let Some((_, token)) = self.reconciling.take_if(|(r, _)| *r == id) {
                    token.cancel();
                }
            }
            Effect::Lint => {
                let Some(wh) = self.warehouse.clone() else {
                    return;
                };
                let jobs = app.config().jobs.clone();
                tokio::spawn(async move { lint_jobs(&wh, &jobs, send).await });
            }
            Effect::ReadHistoryElsewhere => {
                let Some(wh) = self.warehouse.clone() else {
                    return;
                };
                let config = app.config().clone();
                tokio::spawn(async move {
                    for msg in read_history_elsewhere(&wh, &config).await {
                        send(msg);
                    }
                });
            }
            Effect::LoadTheme(path) => {
                tokio::task::spawn_blocking(move || {
                    send(Msg::ThemeLoaded(Theme::load_file(&path)))
                });
            }
            Effect::ReadConfig { id, path } => {
                tokio::task::spawn_blocking(move || {
                    send(Msg::ConfigRead {
                        id,
                        read: crate::config::load(&path).map_err(|e| e.to_string()),
                    })
                });
            }
            Effect::Cancel(run) => {
                if let Some(t) = self.tokens.get(&run) {
                    t.cancel();
                }
            }
            Effect::Gate { run, shut } => {
                let gates = self
                    .gates
                    .iter()
                    .filter(|(r, _)| run.is_none_or(|run| **r == run));
                for (_, gate) in gates {
                    if shut { gate.shut() } else { gate.open() }
                }
            }
            Effect::Copy(text) => {
                // Nothing answers an OSC 52: a terminal that does not take
                // it ignores it, and the status bar says what was sent.
                let _ = crossterm::execute!(
                    std::io::stdout(),
                    crossterm::clipboard::CopyToClipboard::to_clipboard_from(text)
                );
            }
            Effect::Quit { as_left } => self.left.extend(as_left),
        }
    }

    /// A task that writes to the warehouse, waited for on leaving: a run of
    /// `job` whose steps the console numbers `runs`, or a verification
    /// (no runs).
    fn track(&mut self, runs: Vec<usize>, job: String, task: JoinHandle<Option<RunReport>>) {
        self.runs.retain(|t| !t.task.is_finished());
        self.runs.push(Tracked { runs, job, task });
    }

    /// Cancels every run, gives them a moment to roll back and record it,
    /// and closes the warehouse. What became of the runs in flight when the
    /// console was left: their reports, and the jobs of those that had not
    /// ended when it stopped waiting.
    pub async fn shut_down(self) -> LeftInFlight {
        for t in self.tokens.values() {
            t.cancel();
        }
        if let Some((_, t)) = &self.reconciling {
            t.cancel();
        }
        self.verifying.cancel();
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        for t in self.counting {
            let _ = tokio::time::timeout_at(deadline, t).await;
        }
        let mut left = LeftInFlight::default();
        for t in self.runs {
            let as_left: Vec<&str> = t
                .runs
                .iter()
                .filter_map(|r| self.left.get(r).map(String::as_str))
                .collect();
            let reported = !as_left.is_empty();
            match tokio::time::timeout_at(deadline, t.task).await {
                Ok(Ok(Some(report))) if reported => left.reports.push(report),
                Err(_) if reported => left.unended.push((t.job, as_left.join("; "))),
                _ => {}
            }
        }
        if let Some(wh) = self.warehouse {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), wh.close()).await;
        }
        left
    }
}

/// Lints each of `jobs` on the warehouse, one after the other, as `idem lint`
/// does, and answers each with a [`Msg::Linted`]: the jobs pane's badge and
/// the run dialog then say what `idem lint` says (they said only what the
/// SQL's text shows, "ok" for a job whose target is not there). A job
/// whose warehouse checks fail keeps the findings that need none.
pub async fn lint_jobs(warehouse: &Warehouse, jobs: &[Job], send: impl Fn(Msg)) {
    for job in jobs {
        let findings = crate::lint::all_findings(warehouse, jobs, job)
            .await
            .unwrap_or_else(|(found, _)| found);
        send(Msg::Linted {
            job: Box::new(job.clone()),
            notes: super::job::notes_of(findings),
        });
    }
}

/// Which of the config's jobs were renamed with no load of their own, and
/// which have loads under their names into other tables than their targets
/// now, as `idem status` says it; nothing where the ledger cannot be read
/// for it, or the warehouse stops answering meanwhile (the states read
/// says why).
pub async fn read_history_elsewhere(
    warehouse: &Warehouse,
    config: &crate::config::Config,
) -> Vec<Msg> {
    let shown: Vec<&Job> = config.jobs.iter().collect();
    let read = async {
        let mut out = Vec::new();
        if let Ok(renamed) = warehouse.renamed_jobs(config, &shown).await {
            out.push(Msg::Renamed(renamed));
        }
        if let Ok(elsewhere) = warehouse.loads_elsewhere(&shown).await {
            out.push(Msg::LoadsElsewhere(elsewhere));
        }
        Ok(out)
    };
    warehouse.answering(read).await.unwrap_or_default()
}

/// What the console's earlier refreshes read and answered.
#[derive(Clone, Default)]
pub struct Seen {
    /// An unchanged target or ledger is not read again.
    pub cache: RefreshCache,
    /// States derived from the same inputs as the last answered are not
    /// sent again.
    pub derivations: Derivations,
}

/// Reads the states of `jobs` (in that order) and answers each with a
/// [`Msg::Status`], reading through `seen` so that a target or ledger
/// unchanged since the last refresh is not read again, and states derived
/// from the same inputs as last time are answered "unchanged". `first`, a
/// job and the partitions on screen, is read and answered
/// ([`Msg::EarlyStatus`]) before anything else. A read that outlasts
/// [`crate::state::SLOW_READ`] says what it may wait on ([`Msg::SlowRead`]).
pub async fn read_states(
    warehouse: &Warehouse,
    config: &crate::config::Config,
    lineage: &crate::lineage::Lineage,
    jobs: &[Job],
    first: Option<(String, Partition, Partition)>,
    seen: &Seen,
    send: impl Fn(Msg),
) {
    let now = now_utc();
    let running = HashSet::new();
    let say_slow = |job: &Job| {
        send(Msg::SlowRead {
            job: job.name.clone(),
            note: slow_read_note(job, warehouse.config().lock_timeout),
        })
    };
    if let Some((name, from, to)) = first
        && let Some(job) = jobs.iter().find(|j| j.name == name)
    {
        // Without the cache: the full read just after covers a wider range
        // and would count again anyway.
        let scope = StatusScope {
            from: Some(from),
            to: Some(to),
            cache: None,
            ledger_only: false,
        };
        let read = job_status_in(warehouse, config, lineage, job, now, &running, &scope);
        if let Ok(states) = noticing_slow(read, || say_slow(job)).await {
            send(Msg::EarlyStatus {
                job: name,
                statuses: states.statuses,
            });
        }
    }
    let scope = StatusScope {
        cache: Some(seen.cache.clone()),
        ..StatusScope::default()
    };
    for job in jobs {
        let read = job_status_since(
            warehouse,
            config,
            lineage,
            job,
            now,
            &running,
            &scope,
            &seen.derivations,
        );
        let result = noticing_slow(read, || say_slow(job))
            .await
            .map_err(|e| Unread::from(&e));
        send(Msg::Status {
            job: job.name.clone(),
            result,
        });
    }
}

/// Proves a partition idempotent (everything rolls back) and answers with
/// the message for the console.
pub async fn verify(warehouse: &Warehouse, req: &VerifyRequest, cancel: &CancellationToken) -> Msg {
    Msg::Verified {
        id: req.id,
        result: warehouse
            .verify_partition(&req.job, &req.partition, cancel)
            .await
            .map_err(|e| e.to_string()),
    }
}

/// Counts what a job's SQL would write now for the partitions asked (one
/// read-only query) and answers with the message for the console; stopped
/// on the server too when `cancel` is (the dialog closed, `O` again, the
/// console left).
pub async fn reconcile(
    warehouse: &Warehouse,
    req: &ReconcileRequest,
    cancel: &CancellationToken,
) -> Msg {
    Msg::Reconciled {
        id: req.id,
        result: warehouse
            .source_counts_until(
                &req.job,
                (req.first, req.last),
                crate::lint::bounds_only_filter(&req.job, warehouse.syntax()),
                cancel,
            )
            .await
            .map_err(|e| e.to_string()),
    }
}

/// Which windows of a confirm dialog no native partition of the job's
/// target covers. A warning, not a check: one that cannot be read (the
/// warehouse stopped answering) is not said, as `idem run --dry-run` does
/// not say it.
pub async fn read_cover(warehouse: &Warehouse, req: &CoverRequest) -> Msg {
    let read = warehouse.windows_no_partition_covers(&req.job, &req.partitions);
    Msg::Covered {
        id: req.id,
        windows: warehouse.answering(read).await.unwrap_or_default(),
    }
}

/// Reads the definition a partition was loaded under from the ledger and
/// answers with its unified diff against the job's current definition.
pub async fn definition_diff(warehouse: &Warehouse, req: &DiffRequest) -> Msg {
    let current = req.job.definition_text();
    let engine = warehouse.dialect().engine();
    let result = warehouse
        .answering(warehouse.definition(&req.hash))
        .await
        .map(|old| {
            old.map(|old| {
                DefinitionChange::between(
                    &old,
                    &current,
                    engine,
                    warehouse.table_names(),
                    ("loaded under", "now"),
                )
            })
        })
        .map_err(|e| e.to_string());
    Msg::DefinitionDiff { id: req.id, result }
}

/// What a run cancelled while its check of the warehouse waited says.
const CANCELLED_BEFORE_IT_BEGAN: &str = "cancelled before it began; nothing was run or recorded";

/// Why a console run of `jobs` may not start, in the console's words: a
/// warehouse that does not answer (refused at once, not after a connect
/// timeout for each check that follows), or what the checks `idem run`
/// makes too find ([`Warehouse::refusal_before_a_run`]).
pub async fn refusal_before_a_run(
    wh: &Warehouse,
    jobs: impl Iterator<Item = &crate::config::Job>,
    reason: Option<&str>,
) -> Option<String> {
    if let Err(e) = wh.reach().await
        && e.is_unreachable()
    {
        return Some(format!("{e}; nothing was run or recorded"));
    }
    use crate::warehouse::NotToRun;
    let jobs: Vec<_> = jobs.collect();
    match wh.refusal_before_a_run(&jobs, true, reason).await {
        Ok(None) => None,
        Ok(Some(NotToRun::NoTarget { job, table, alike })) => {
            let e = crate::warehouse::WarehouseError::NoTarget { table, alike };
            Some(format!("{}: {e}; nothing was run or recorded", job.name))
        }
        Ok(Some(NotToRun::ReadOnly(refusal))) => Some(refusal),
        Ok(Some(NotToRun::NoLedger(e))) => Some(format!("{e}; nothing was run")),
        Ok(Some(NotToRun::Reason(misfit))) => {
            Some(format!("{misfit}; nothing was run or recorded"))
        }
        Err(e) => Some(format!("{e}; nothing was run or recorded")),
    }
}
