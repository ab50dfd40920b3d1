//! `idem run`: a headless backfill. Events go to stdout as JSON lines
//! (`--json`), or to stderr as a progress bar (terminal) or plain lines.

use std::io::IsTerminal;
use std::path::Path;

use tokio::sync::mpsc;

use super::RunArgs;
use super::advice;
use super::downstream::{
    States, downstream_words, own_partly_read, plan_downstream, stale_downstream,
};
use super::dry_run::{DryRun, Previewed};
use super::output::{noteln, outln};
use super::report::RunReport;
use super::run_not_started;
use super::{Stop, connect_to_read, find_job, load_config};
use crate::config::Strategy;
use crate::engine::cascade::PartlyRead;
use crate::engine::{self, Backfill};
use crate::exit::Exit;
use crate::numbers::n_partitions;
use crate::partition::{Partition, now_utc};
use crate::state;
use crate::warehouse::{NotToRun, Warehouse, WarehouseError};

/// Partitions a run may load without a terminal before it needs `--yes`:
/// a mistyped range must not rewrite a job's whole history unasked.
pub const CONFIRM_ABOVE: usize = 100;

pub async fn run(config_path: &Path, args: RunArgs) -> Exit {
    // With --json, a run that ends before it starts says so on stdout too:
    // the stream ends with `run_finished` or `run_not_started`.
    let json_job = args.json.then(|| args.job.clone());
    // On the heap: a run's future is large (every step of a run, a
    // cascade's included), and a caller polling it on a thread of the
    // default 2 MiB stack (a runtime's worker, a test) would overflow it
    // in a build without optimisations.
    match Box::pin(run_inner(config_path, args)).await {
        Ok(code) => code,
        Err(stop) => match json_job {
            Some(job) => run_not_started::report(&job, stop),
            None => stop.report(),
        },
    }
}

async fn run_inner(config_path: &Path, args: RunArgs) -> Result<Exit, Stop> {
    // From the first line: a signal while it connects (up to
    // connect_timeout), sets up the ledger, previews or asks is a clean
    // "nothing was run", exit 130, not the default death (143, 129).
    let json_job = args.json.then(|| args.job.clone());
    let on_signal = super::OnSignal::install(
        "no new partitions start, in-flight ones roll back",
        move |why| {
            if let Some(job) = &json_job {
                let line = run_not_started::json_line(job, why, Exit::Cancelled);
                let _ = super::output::json(&line);
            }
        },
    );
    let config = load_config(config_path)?;
    let job = find_job(&config, &args.job)?;
    if args.through_latest && job.strategy != Strategy::MergeKey {
        noteln!(
            "idem: note: --through-latest changes nothing here: it is for merge_key jobs, and {} replaces each partition's own window",
            job.name
        );
    }
    let selection = args.selection(job)?;
    args.refuse_bounds_outside(config_path, job, &selection)?;
    for moved in args.moved_bounds(job, &selection) {
        noteln!("idem: note: {moved}");
    }
    let concurrency = args.concurrency_or(config.defaults.concurrency)?;
    // Bad input is said before connecting: at once, and whether or not the
    // warehouse answers.
    selection
        .range_before_connecting(job)
        .map_err(|e| Stop::usage(e.to_string()))?;
    // A preview creates nothing, not even idem's ledger; a run makes the
    // ledger once it knows the session may write (a read-only one is told
    // so, not that a CREATE SCHEMA failed).
    let warehouse = connect_to_read(&config, concurrency as u32 + 1).await?;
    let lineage = super::lineage(&config, &warehouse)?;
    // A run on a target that is not there would fail its first partition
    // and record that failure in the ledger, where the partition would then
    // read as failed under a corrected config: it is refused before it starts.
    // So is a reason the ledger cannot store, which would fail every
    // partition's ledger row and leave no failure recorded.
    let reason = args
        .reason
        .as_deref()
        .map(crate::terminal_text::visible_line);
    let asked = (!args.dry_run, reason.as_deref());
    refuse_before_a_run(&warehouse, &config, &[job], asked).await?;
    // Which windows are complete is the warehouse's clock's word, known
    // once connected (`crate::clock`): this host's may be minutes off.
    let now = now_utc();
    let (first, last) = selection
        .range(job, now)
        .map_err(|e| Stop::usage(e.to_string()))?;
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let previewed = args.dry_run || (interactive && !args.yes);
    // The target's rows are counted only when the plan or its preview shows
    // them (--only picks by state, a preview shows each partition's rows);
    // otherwise the run starts from the ledger, without a scan of its target.
    // A merge plan reads the windows after its range (its order risk).
    let scope = state::StatusScope {
        from: selection.from,
        to: selection.to.filter(|_| job.strategy != Strategy::MergeKey),
        ledger_only: selection.only.is_empty() && !previewed,
        ..Default::default()
    };
    // The first load needs the job SELECT's columns, which the engine's
    // driver describes on a connection of its own: it opens meanwhile.
    // An error there is the first load's to report, but for a warehouse
    // that stopped answering.
    let describe = async {
        if !args.dry_run {
            let described = warehouse.job_output_columns(job, &first);
            if let Err(e @ WarehouseError::NotAnswering { .. }) =
                warehouse.answering(described).await
            {
                return Err(not_run(e));
            }
        }
        Ok(())
    };
    let (statuses, ()) = tokio::try_join!(
        super::read_states_scoped(&warehouse, &config, &lineage, job, now, &scope),
        describe
    )?;
    let statuses = statuses.statuses;
    let mut backfill = Backfill::plan_from(
        job,
        &selection,
        &statuses,
        now,
        concurrency,
        config.defaults.retries,
    )
    .map_err(|e| Stop::usage(e.to_string()))?;
    backfill.reason = reason;
    backfill.allow_shrink = args.allow_shrink;
    if let Some(risk) = backfill.merge_order_risk_in(&statuses) {
        if args.through_latest {
            backfill.extend_through_latest(&risk);
        } else {
            noteln!("idem: warning: {}: add --through-latest", risk.warning());
        }
    }
    // Its windows over upstream partitions not loaded load from what is
    // there: the plan, the run's events and its end say so.
    (backfill.reads_not_loaded, backfill.upstream_unread) =
        own_partly_read(&warehouse, &config, &lineage, &backfill, now).await;

    // A preview lists it among the lint's findings; a run without one
    // says it anyway (a cron's `-y` run too).
    if !previewed
        && let Some(both) =
            crate::lint::merged_and_replaced(&config.jobs, job, warehouse.table_names())
    {
        noteln!("idem: warning: {both}");
    }
    let mut steps = vec![(backfill, statuses)];
    // How the run was asked for, as the commands it prints repeat it.
    let as_run = advice::AsRun {
        config: config_path,
        only: &args.only,
        allow_incomplete: args.allow_incomplete,
        cascade: args.cascade,
    };
    if args.cascade {
        let plan = plan_downstream(
            &warehouse,
            &config,
            &lineage,
            (&steps[0].0, args.allow_incomplete),
            now,
            States::Whole,
        )
        .await?;
        for note in plan.not_ended_notes(config_path) {
            noteln!("idem: {note}");
        }
        for planned in plan.steps {
            steps.push((planned.step, planned.statuses));
        }
        // The ledger made above.
        let downstream: Vec<_> = steps[1..].iter().map(|(step, _)| &step.job).collect();
        refuse_before_a_run(&warehouse, &config, &downstream, (false, None)).await?;
    }

    // A preview says what the run will find: each partition's source
    // count now, which replaces the shrink guard will refuse, and which
    // windows no native partition of the target covers.
    // And what `idem lint` finds in each job, as the console's dialog says.
    let mut found = Vec::new();
    if previewed {
        for (backfill, statuses) in &mut steps {
            let source_nulls = preview_sources(&warehouse, backfill, statuses).await?;
            // A warning, not a check: one that cannot be read is not said,
            // but a warehouse that stopped answering is.
            let read = warehouse.windows_no_partition_covers(&backfill.job, &backfill.partitions);
            let uncovered = match warehouse.answering(read).await {
                Err(e @ WarehouseError::NotAnswering { .. }) => return Err(not_run(e)),
                read => read.unwrap_or_default(),
            };
            let lint = crate::lint::all_findings(&warehouse, &config.jobs, &backfill.job)
                .await
                .unwrap_or_else(|(found, _)| found);
            found.push(Previewed {
                uncovered,
                lint,
                source_nulls,
                granted: warehouse
                    .partitions_granted()
                    .map(|(partitions, why)| (partitions, why.to_string())),
            });
        }
    }
    // Nothing chosen: said, and no run started (QA: a run of no partition
    // took a run id). A script reading --json still gets its events.
    if !args.dry_run && !args.json && steps.iter().all(|(b, _)| b.partitions.is_empty()) {
        let why = if args.only.is_empty() {
            String::new()
        } else {
            format!(" is {}", args.only.join(" or "))
        };
        noteln!(
            "idem: nothing to run: no partition of {} from {} to {}{why}",
            job.name,
            first.name(),
            last.name(),
        );
        return Ok(Exit::Ok);
    }
    // Without --cascade, the jobs downstream are left reading what the run
    // replaces: the plan says so, and the end of the run how to load them.
    // `--dry-run --json` carries it in its root step's event.
    let shows_plan = args.dry_run || (interactive && !args.yes);
    let left_downstream = if args.cascade || !shows_plan {
        Vec::new()
    } else {
        downstream_words(&warehouse, &config, &lineage, &steps[0].0, now).await
    };
    if args.dry_run {
        if !args.json {
            for left in &left_downstream {
                noteln!("idem: {}", left.note);
            }
        }
        let mut left_downstream = Some(left_downstream);
        for (i, ((backfill, statuses), step_found)) in steps.iter().zip(found).enumerate() {
            // In a cascade, each reader, with a step of its own or not: one
            // without is given one if the merge reaches it.
            let readers = if args.cascade {
                lineage.downstream(&backfill.job.name).to_vec()
            } else {
                Vec::new()
            };
            let plan = DryRun::new(backfill, statuses)
                .previewed(step_found)
                .downstream(left_downstream.take().unwrap_or_default())
                .readers_in_cascade(readers)
                .partly_read(&as_run);
            if args.json {
                plan.print_json()?;
            } else {
                if i > 0 {
                    outln!("then, downstream (reads what the run above rewrites):");
                }
                plan.print()?;
            }
        }
        return Ok(Exit::Ok);
    }
    for left in &left_downstream {
        noteln!("idem: {}", left.note);
    }
    if !args.yes
        && let Some(why) = refused(&steps, found, &as_run, interactive)?
    {
        return Err(Stop {
            code: Exit::Cancelled,
            message: format!("{why}nothing run"),
        });
    }
    // Loaded empty before: a run that loads them empty again says nothing
    // new of them (a weekend with no orders), unlike one loaded empty now.
    let mut empty_before: Vec<Vec<Partition>> = steps
        .iter()
        .map(|(_, statuses)| {
            statuses
                .iter()
                .filter(|s| s.state == state::LoadState::Empty)
                .map(|s| s.partition)
                .collect()
        })
        .collect();
    if args.cascade {
        let steps: Vec<Backfill> = steps.into_iter().map(|(b, _)| b).collect();
        let cancel = on_signal.begin();
        let run = CascadeRun {
            steps: &steps,
            jobs: &config.jobs,
            reach: engine::cascade::Reach {
                now,
                allow_incomplete: args.allow_incomplete,
            },
            empty_before: &empty_before,
            json: args.json,
            as_run,
        };
        return run_cascade(&warehouse, &lineage, run, cancel).await;
    }
    let empty_before = empty_before.swap_remove(0);
    let backfill = steps.remove(0).0;

    // Where the job's ledger stands before the run, when jobs read it:
    // what the run changed is read after this mark, not from its history.
    let mark = if lineage.downstream(&job.name).is_empty() {
        None
    } else {
        match warehouse.answering(warehouse.ledger_mark(&job.name)).await {
            Err(e @ WarehouseError::NotAnswering { .. }) => return Err(not_run(e)),
            read => read.ok(),
        }
    };
    let cancel = on_signal.begin();
    let (tx, rx) = mpsc::unbounded_channel();
    let total = backfill.partitions.len() as u64;
    let json = args.json;
    let printer = super::run_progress::spawn_printer(&config.warehouse.url, json, total, rx);
    let summary = Box::pin(engine::run(&warehouse, &backfill, &tx, cancel)).await;
    drop(tx);
    let events_written = printer
        .await
        .unwrap_or_else(|e| Err(Stop::failed(format!("the event printer stopped: {e}"))));
    let mut loaded = backfill;
    loaded
        .partitions
        .retain(|p| !summary.unfinished.contains(p));
    // A run stopped by a warehouse that stopped answering has said so:
    // what it made stale downstream is for `idem status` once it answers.
    let stale_downstream = if summary.unreachable.is_some() {
        Vec::new()
    } else {
        stale_downstream(
            &warehouse,
            &config,
            &lineage,
            &loaded,
            (&summary.run_id, mark),
            now,
            config_path,
        )
        .await
    };
    warehouse.close().await;
    let report = RunReport::of_run(&as_run, job, &summary, &empty_before);
    let more: Vec<String> = partly_loaded(
        &as_run,
        (&loaded.job.name, &loaded.reads_not_loaded),
        &summary,
        &[],
    )
    .into_iter()
    .chain(engine::UpstreamUnread::line(
        &loaded.job.name,
        &loaded.upstream_unread,
    ))
    .chain(stale_downstream)
    .collect();
    said(&report, events_written, json, &more)
}

/// Says how a run ended, once its events are written (`events_written`):
/// its outcome lines on stdout (unless `json`: the events said it), then
/// its notes and `more` on stderr. Output that could not be written leaves
/// the run as it is: what was committed stays committed, the outcome goes
/// where it can still be read, and the exit code says the output is
/// incomplete.
fn said(
    report: &RunReport,
    events_written: Result<(), Stop>,
    json: bool,
    more: &[String],
) -> Result<Exit, Stop> {
    let printed = events_written.and_then(|()| {
        if !json {
            for line in &report.outcomes {
                outln!("{line}");
            }
        }
        Ok(())
    });
    for line in report.notes.iter().chain(more) {
        noteln!("idem: {line}");
    }
    match printed {
        // A reader that went away (`--json | head`) is no failure, but what
        // it left unread is how the run ended: said where it can be read.
        Ok(()) if super::output::stdout_closed() => {
            noteln!(
                "idem: standard output was closed before the run's output was all written; the run itself: {}",
                report.outcomes.join("; ")
            );
            Ok(report.exit)
        }
        Ok(()) => Ok(report.exit),
        Err(stop) => {
            noteln!(
                "idem: {}; the run itself: {}",
                stop.message,
                report.outcomes.join("; ")
            );
            Ok(report.exit.max(Exit::Failed))
        }
    }
}

/// Refuses a run of `jobs` that may not start
/// ([`Warehouse::refusal_before_a_run`]): a target table the warehouse does
/// not have (exit 2), naming the table, the config line that names it, and
/// the tables it names but for case or schema; a session that may not
/// write, a ledger that cannot be made, a warehouse that stopped answering
/// (exit 1); a reason the ledger cannot store (exit 2).
async fn refuse_before_a_run(
    warehouse: &Warehouse,
    config: &crate::config::Config,
    jobs: &[&crate::config::Job],
    (makes_ledger, reason): (bool, Option<&str>),
) -> Result<(), Stop> {
    let refusal = warehouse
        .refusal_before_a_run(jobs, makes_ledger, reason)
        .await
        .map_err(not_run)?;
    match refusal {
        None => Ok(()),
        Some(NotToRun::NoTarget { job, table, alike }) => {
            let fix = if alike.is_empty() {
                format!("; create it, or correct the name in target = \"{table}\"")
            } else {
                crate::warehouse::alike_tables(&alike)
            };
            Err(Stop::usage(format!(
                "{}:{}: {}: target table {table} does not exist in the warehouse{fix}. Nothing was run or recorded",
                config.path.display(),
                job.lines.target,
                job.name
            )))
        }
        Some(NotToRun::ReadOnly(refusal)) => Err(Stop::failed(format!(
            "{refusal} (`idem status` and `idem run --dry-run` work here)"
        ))),
        Some(NotToRun::NoLedger(e)) => Err(Stop::failed(e.to_string())),
        Some(NotToRun::Reason(misfit)) => Err(Stop::usage(format!(
            "--reason: {misfit}. Nothing was run or recorded"
        ))),
    }
}

/// A run stopped before it began by the warehouse (it stopped answering):
/// exit 1, saying nothing was run.
fn not_run(e: WarehouseError) -> Stop {
    Stop::failed(format!("{e}; nothing was run or recorded"))
}

/// Counts the planned partitions' source rows (one read-only query) onto
/// their statuses, for replace jobs, whose guard compares them.
/// The rows the source gives with a NULL partition column, where the
/// query tells them apart: each such row fails its load.
async fn preview_sources(
    warehouse: &crate::warehouse::Warehouse,
    backfill: &Backfill,
    statuses: &mut [state::PartitionStatus],
) -> Result<Option<i64>, Stop> {
    let (Some(&first), Some(&last)) = (backfill.partitions.first(), backfill.partitions.last())
    else {
        return Ok(None);
    };
    if backfill.job.strategy != Strategy::ReplacePartition {
        return Ok(None);
    }
    let counts = warehouse
        .source_counts(
            &backfill.job,
            first,
            last,
            crate::lint::bounds_only_filter(&backfill.job, warehouse.syntax()),
        )
        .await
        .map_err(|e| match e {
            WarehouseError::NotAnswering { .. } => not_run(e),
            e => Stop::failed(format!("{}: counting the source: {e}", backfill.job.name)),
        })?;
    state::reconcile(statuses, &counts.partitions, first, last);
    Ok(counts.null_partition)
}

/// Whether to go ahead without `--yes`: on a terminal, the plan is shown and
/// the operator answers; elsewhere a run of more than [`CONFIRM_ABOVE`]
/// partitions is refused. `Some(why)` when the operator did not say yes:
/// why, as the start of the line that says nothing was run ("" for a no).
fn refused(
    steps: &[(Backfill, Vec<state::PartitionStatus>)],
    found: Vec<Previewed>,
    as_run: &advice::AsRun<'_>,
    interactive: bool,
) -> Result<Option<String>, Stop> {
    let total: usize = steps.iter().map(|(b, _)| b.partitions.len()).sum();
    if total == 0 {
        return Ok(None);
    }
    let (root, _) = &steps[0];
    let range = match (root.partitions.first(), root.partitions.last()) {
        (Some(a), Some(b)) => format!("{} to {}", a.name(), b.name()),
        _ => "no partitions of its own".into(),
    };
    if !interactive {
        if total > CONFIRM_ABOVE {
            return Err(Stop::usage(format!(
                "this run would load {} ({} {range}{}); pass --yes to confirm, or narrow it with --from, --to or --only",
                n_partitions(total as i64),
                root.job.name,
                if steps.len() > 1 {
                    ", with its cascade"
                } else {
                    ""
                }
            )));
        }
        return Ok(None);
    }
    for ((backfill, statuses), previewed) in steps.iter().zip(found) {
        DryRun::new(backfill, statuses)
            .previewed(previewed)
            .partly_read(as_run)
            .show_for_confirmation();
    }
    let question = format!(
        "run {total} partition{}? [y/N] ",
        if total == 1 { "" } else { "s" }
    );
    ask(&question, &mut std::io::stdin().lock())
}

/// Times a question is asked before an answer neither yes nor no is taken
/// as no: a stray key re-asks, a stuck one does not loop for ever.
const ASKS: usize = 3;

/// Asks `question` on stderr and reads the answer from `input`: `None` for
/// yes, `Some(why)` otherwise. An empty answer is the default, no; an
/// answer neither yes nor no is said not understood and asked again, up to
/// [`ASKS`] times; the end of input is no answer, and said so.
fn ask(question: &str, input: &mut impl std::io::BufRead) -> Result<Option<String>, Stop> {
    for _ in 0..ASKS {
        noteln!("{question}");
        let mut answer = String::new();
        let read = input
            .read_line(&mut answer)
            .map_err(|e| Stop::failed(format!("cannot read the answer: {e}")))?;
        if read == 0 {
            return Ok(Some("no answer (the input ended): ".into()));
        }
        match understood(&answer) {
            Some(true) => return Ok(None),
            Some(false) => return Ok(Some(String::new())),
            None => noteln!(
                "idem: {:?} is not an answer: y runs, n or Enter does not",
                answer.trim()
            ),
        }
    }
    Ok(Some(format!("no answer understood after {ASKS} tries: ")))
}

/// Yes or no, as an answer to the y/N question says it (`None`: neither).
fn understood(answer: &str) -> Option<bool> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(true),
        "" | "n" | "no" => Some(false),
        _ => None,
    }
}

/// Runs a cascade's steps in dependency order and reports each.
/// A planned cascade: its steps, what each had loaded empty before, and
/// whether its events go out as JSON.
struct CascadeRun<'a> {
    steps: &'a [Backfill],
    /// The config's jobs: a reader with no step is given one if a merge
    /// before it moves rows in or out of what it reads.
    jobs: &'a [crate::config::Job],
    /// The windows downstream a step may add (as its plan reached them).
    reach: engine::cascade::Reach,
    empty_before: &'a [Vec<Partition>],
    json: bool,
    /// How the cascade was asked for, as the commands it prints repeat it.
    as_run: advice::AsRun<'a>,
}

async fn run_cascade(
    warehouse: &crate::warehouse::Warehouse,
    lineage: &crate::lineage::Lineage,
    run: CascadeRun<'_>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Exit, Stop> {
    let CascadeRun {
        steps,
        jobs,
        reach,
        empty_before,
        json,
        as_run,
    } = run;
    // Said at its end as the plan said them: what was not known then is not now.
    let unread: Vec<String> = steps
        .iter()
        .filter_map(|s| engine::UpstreamUnread::line(&s.job.name, &s.upstream_unread))
        .collect();
    let (tx, rx) = mpsc::unbounded_channel();
    let total = steps.iter().map(|s| s.partitions.len() as u64).sum();
    let printer = super::run_progress::spawn_printer(&warehouse.config().url, json, total, rx);
    let outcomes = Box::pin(engine::cascade::run(
        warehouse,
        lineage,
        (steps, reach, jobs),
        &tx,
        cancel,
    ))
    .await;
    // A step the cancel kept from beginning has no events of its own: each
    // of its partitions is said skipped, so that the stream accounts for
    // every partition of the plan, and the step is said to have ended.
    for outcome in &outcomes {
        if outcome.not_started.is_empty() {
            continue;
        }
        for p in &outcome.not_started {
            let _ = tx.send(engine::Event::PartitionSkipped {
                job: outcome.job.clone(),
                partition: p.name(),
                because: "the run was cancelled before this job's step began".into(),
            });
        }
        let _ = tx.send(engine::Event::StepSkipped {
            job: outcome.job.clone(),
            partitions: outcome
                .skipped
                .iter()
                .map(|(p, _)| *p)
                .chain(outcome.not_started.iter().copied())
                .map(|p| p.name())
                .collect(),
            cancelled: true,
        });
    }
    drop(tx);
    let events_written = printer
        .await
        .unwrap_or_else(|e| Err(Stop::failed(format!("the event printer stopped: {e}"))));
    warehouse.close().await;
    let report = RunReport::of_cascade(&as_run, steps, empty_before, &outcomes);
    // Each step as it ran: the windows added to it, and the steps given
    // to readers without one, are said as the planned ones are.
    let partly_loaded: Vec<String> = outcomes
        .iter()
        .filter_map(|outcome| {
            let summary = outcome.summary.as_ref()?;
            let reads = (&outcome.job[..], &outcome.reads_not_loaded[..]);
            partly_loaded(&as_run, reads, summary, &outcome.skipped)
        })
        .chain(unread)
        .collect();
    said(&report, events_written, json, &partly_loaded)
}

/// Of `run`'s windows that read upstream partitions neither loaded nor in
/// the run, those that loaded (none of its `summary`'s unfinished, none
/// `skipped`): its line, with the command that loads what they read and
/// them again.
fn partly_loaded(
    as_run: &advice::AsRun<'_>,
    (job, reads_not_loaded): (&str, &[PartlyRead]),
    summary: &engine::RunSummary,
    skipped: &[(Partition, String)],
) -> Option<String> {
    let loaded: Vec<PartlyRead> = reads_not_loaded
        .iter()
        .filter(|p| {
            !summary.unfinished.contains(&p.window) && !skipped.iter().any(|(s, _)| *s == p.window)
        })
        .cloned()
        .collect();
    advice::partly_read_note(as_run, job, &loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_yes_no_or_not_understood() {
        for yes in ["y", "Y", "yes", "YES\n", " y \r\n"] {
            assert_eq!(understood(yes), Some(true), "{yes:?}");
        }
        for no in ["", "\n", "n", "No", "no\n"] {
            assert_eq!(understood(no), Some(false), "{no:?}");
        }
        for neither in ["ye", "yy", "sure", "q", "\u{1b}[A"] {
            assert_eq!(understood(neither), None, "{neither:?}");
        }
    }

    #[test]
    fn a_stray_answer_is_asked_again_and_the_end_of_input_is_no() {
        let ask = |input: &str| ask("run? [y/N] ", &mut input.as_bytes()).expect("read");
        assert_eq!(ask("what\ny\n"), None, "asked again, then yes");
        assert_eq!(ask("what\n\n"), Some(String::new()), "then Enter: no");
        assert_eq!(ask(""), Some("no answer (the input ended): ".into()));
        assert_eq!(ask("what\n"), Some("no answer (the input ended): ".into()));
        assert_eq!(
            ask("a\nb\nc\ny\n"),
            Some("no answer understood after 3 tries: ".into()),
            "a stuck key does not loop for ever"
        );
    }
}
