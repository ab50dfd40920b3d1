//! `idem run --dry-run`: the partitions a run would load, as they are now,
//! with what the source holds for them and what the shrink guard will do.

use std::collections::HashSet;

use serde::Serialize;

use super::Stop;
use super::advice::{self, AsRun};
use super::downstream::LeftDownstream;
use super::output::{noteln, outln};
use crate::config::Strategy;
use crate::engine::cascade::PartlyRead;
use crate::engine::{self, Backfill};
use crate::lint;
use crate::numbers::{n_partitions, n_rows, thousands};
use crate::partition::Partition;
use crate::state;
use crate::warehouse::UncoveredWindow;

/// What a dry run shows: the partitions it would run, as they are now.
pub(super) struct DryRun<'a> {
    backfill: &'a Backfill,
    planned: Vec<&'a state::PartitionStatus>,
    /// Its windows no native partition of the target covers (PostgreSQL,
    /// no DEFAULT partition): the run would fail them.
    uncovered: Vec<UncoveredWindow>,
    /// A merge plan's later windows already loaded, which it can set back.
    risk: Option<engine::MergeOrderRisk>,
    /// What `idem lint` finds in the job, as the run dialog shows it.
    lint: Vec<lint::Finding>,
    /// Rows the job's SQL gives over the plan with a NULL partition
    /// column, which its loads refuse (counted in the source count's own
    /// statement, where it groups by the column).
    source_nulls: Option<i64>,
    /// The partitions at once the warehouse grants a run, and why.
    granted: Option<(usize, String)>,
    /// The jobs downstream that the run leaves reading what it replaces
    /// (without `--cascade`).
    downstream: Vec<LeftDownstream>,
    /// A merge step of a cascade: the steps after it that read it, whose
    /// partitions over the windows its merges move rows into or out of
    /// the cascade adds as it runs (which no plan can know beforehand).
    moves_add_to: Vec<String>,
    /// Its line for its windows that read upstream partitions neither
    /// loaded nor in the run (or cascade), with the command that loads
    /// those.
    partly_read: Option<String>,
}

/// What a preview read of a step found besides its partitions' source
/// counts.
pub(super) struct Previewed {
    /// Its windows no native partition of the target covers.
    pub(super) uncovered: Vec<UncoveredWindow>,
    /// What `idem lint` finds in its job.
    pub(super) lint: Vec<lint::Finding>,
    /// Rows its SQL gives with a NULL partition column, where counted.
    pub(super) source_nulls: Option<i64>,
    /// The partitions at once the warehouse grants a run (its role's limit
    /// on connections), and why.
    pub(super) granted: Option<(usize, String)>,
}

/// `idem run --dry-run --json`: one line, shaped like a run's events.
#[derive(Serialize)]
struct DryRunEvent<'a> {
    schema_version: u32,
    event: &'static str,
    job: &'a str,
    strategy: Strategy,
    target: String,
    concurrency: usize,
    partitions: Vec<DryRunPartition>,
    /// Rows the run would delete before inserting (replace jobs only).
    rows_replaced: Option<i64>,
    plan: String,
    /// The native partitions to create for the windows none covers
    /// (PostgreSQL, no DEFAULT partition), which the run would fail.
    partitions_to_create: Vec<ToCreate>,
    /// Merge jobs: the windows after the plan already loaded, which
    /// merging older windows alone can roll back (`--through-latest`
    /// takes them too); empty when there is no such risk.
    later_loaded: Vec<String>,
    /// What `idem lint` finds in the job: an error there breaks its loads.
    lint: Vec<LintNote<'a>>,
    /// Replace jobs: rows the job's SQL gives over the plan with a NULL
    /// partition column, which its loads refuse; null where not counted.
    rows_source_null_partition: Option<i64>,
    /// Without `--cascade`: the jobs downstream left reading what the run
    /// replaces, as the text plan says them on stderr.
    downstream: &'a [LeftDownstream],
    /// With `--cascade`, a merge job with a partition column: the jobs
    /// after it in the cascade that read it, which may get partitions
    /// added over the windows its merges move rows into or out of.
    moves_add_to: &'a [String],
    /// Its partitions that read upstream partitions neither loaded nor in
    /// the run (or cascade), per upstream job.
    upstream_not_loaded: Vec<engine::NotLoadedUpstream>,
    /// The upstream jobs whose partitions could not be read, with why.
    upstream_unread: &'a [engine::UpstreamUnread],
}

/// One finding of `idem lint` in `idem run --dry-run --json`.
#[derive(Serialize)]
struct LintNote<'a> {
    severity: lint::Severity,
    line: usize,
    message: &'a str,
}

/// A window no native partition covers, and the bounds to create for it.
#[derive(Serialize)]
struct ToCreate {
    partition: String,
    create: Vec<String>,
}

/// One partition of `idem run --dry-run --json`.
#[derive(Serialize)]
struct DryRunPartition {
    partition: String,
    state: &'static str,
    rows_now: Option<i64>,
    /// What the job's SQL gives the partition now (replace jobs).
    rows_source: Option<i64>,
    /// The shrink guard will refuse it.
    refused: bool,
    /// It holds no rows and its source has none yet: it would load empty
    /// (and count as loaded).
    loads_empty: bool,
    /// No native partition of the target covers it (and there is no
    /// DEFAULT partition): the run would fail it.
    uncovered: bool,
}

impl<'a> DryRun<'a> {
    pub(super) fn new(
        backfill: &'a Backfill,
        statuses: &'a [state::PartitionStatus],
    ) -> DryRun<'a> {
        let planned_partitions: HashSet<Partition> = backfill.partitions.iter().copied().collect();
        let planned = statuses
            .iter()
            .filter(|s| planned_partitions.contains(&s.partition))
            .collect();
        DryRun {
            backfill,
            planned,
            uncovered: Vec::new(),
            risk: backfill.merge_order_risk_in(statuses),
            lint: Vec::new(),
            source_nulls: None,
            granted: None,
            downstream: Vec::new(),
            moves_add_to: Vec::new(),
            partly_read: None,
        }
    }

    /// The plan, with what its preview read found: the windows no native
    /// partition covers, what `idem lint` finds in its job, and the rows
    /// its source gives in no window.
    pub(super) fn previewed(mut self, previewed: Previewed) -> DryRun<'a> {
        self.uncovered = previewed.uncovered;
        self.lint = previewed.lint;
        self.source_nulls = previewed.source_nulls;
        self.granted = previewed.granted;
        self
    }

    /// The plan, with the jobs downstream it leaves reading what it
    /// replaces.
    pub(super) fn downstream(mut self, left: Vec<LeftDownstream>) -> DryRun<'a> {
        self.downstream = left;
        self
    }

    /// The plan of a cascade's step, with the steps after it that read it
    /// (`readers`): a merge with a partition column may move rows into or
    /// out of windows beyond its own, and the cascade adds theirs over them.
    pub(super) fn readers_in_cascade(mut self, readers: Vec<String>) -> DryRun<'a> {
        let job = &self.backfill.job;
        if job.strategy == Strategy::MergeKey && job.partition_column.is_some() {
            self.moves_add_to = readers;
        }
        self
    }

    /// The plan, saying its windows that read upstream partitions neither
    /// loaded nor in the run (or cascade), with the command that loads
    /// those as `run` would print it.
    pub(super) fn partly_read(mut self, run: &AsRun<'_>) -> DryRun<'a> {
        let backfill = self.backfill;
        self.partly_read =
            advice::partly_read_note(run, &backfill.job.name, &backfill.reads_not_loaded);
        self
    }

    fn partitions(&self) -> Vec<DryRunPartition> {
        self.planned
            .iter()
            .map(|s| DryRunPartition {
                partition: s.partition.name(),
                state: s.state.name(),
                rows_now: s.rows_now,
                rows_source: s.rows_source,
                refused: self.refused(s),
                loads_empty: self.backfill.loads_empty(s),
                uncovered: self.uncovered.iter().any(|u| u.partition == s.partition),
            })
            .collect()
    }

    /// Whether the shrink guard will refuse this partition's replace, from
    /// the source count a preview read.
    fn refused(&self, s: &state::PartitionStatus) -> bool {
        self.backfill.shrink_refuses(s)
    }

    /// Rows the run would delete before inserting, for replace jobs.
    fn rows_replaced(&self) -> i64 {
        self.planned.iter().map(|s| s.rows_now.unwrap_or(0)).sum()
    }

    /// The strategy in one line of plain words.
    fn plan_line(&self) -> String {
        let job = &self.backfill.job;
        match job.strategy {
            Strategy::ReplacePartition => format!(
                "would replace {}: per partition, in one transaction, DELETE its window of {} and INSERT the job's rows",
                n_rows(self.rows_replaced()),
                job.target
            ),
            Strategy::MergeKey => format!(
                "would merge each window's rows into {} by ({}), one window at a time, oldest first",
                job.target,
                job.unique_key
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The plan on stdout: the output of `idem run --dry-run`.
    pub(super) fn print(&self) -> Result<(), Stop> {
        for line in self.lines("dry run") {
            outln!("{line}");
        }
        Ok(())
    }

    /// The plan on stderr, where the prompt that asks about it goes: stdout
    /// may be a file or a pipe (`--json` carries events only), and the
    /// operator must see what they are asked to confirm.
    pub(super) fn show_for_confirmation(&self) {
        for line in self.lines("plan") {
            noteln!("{line}");
        }
    }

    /// The plan's lines, as [`DryRun::print`] shows them, headed
    /// What the run loads at once, lowered to what the warehouse grants
    /// (as the run lowers itself at its start), and why where it is.
    fn concurrency(&self) -> (usize, Option<String>) {
        let granted = self.granted.as_ref().map(|(n, why)| (*n, why.as_str()));
        engine::within_grant(self.backfill.effective_concurrency(), granted)
    }

    /// `heading` ("dry run", or "plan" above a run's prompt).
    fn lines(&self, heading: &str) -> Vec<String> {
        let job = &self.backfill.job;
        let mut lines = Vec::new();
        let (concurrency, lowered) = self.concurrency();
        lines.push(format!(
            "{heading}: {} · {} · {} · concurrency {concurrency}{}",
            job.name,
            job.strategy.as_str(),
            n_partitions(self.backfill.partitions.len() as i64),
            lowered.map(|why| format!(" ({why})")).unwrap_or_default()
        ));
        let (mut refused, mut empty) = (0, 0);
        for (p, s) in self.partitions().iter().zip(&self.planned) {
            let source = match (s.rows_source, self.refused(s)) {
                (Some(n), true) => {
                    refused += 1;
                    format!(
                        " → source {}: the shrink guard refuses (source looks incomplete)",
                        thousands(n)
                    )
                }
                (Some(0), false) if p.loads_empty => {
                    empty += 1;
                    " → source 0: loads empty (a late source?)".to_string()
                }
                (Some(n), false) => format!(" → source {}", thousands(n)),
                (None, _) => String::new(),
            };
            // A merge window without a partition column has no rows of its
            // own to count now: said as the rows its last load merged, not
            // as rows now (the console's detail says it so too).
            let rows = match (s.rows_now, s.rows_at_load) {
                (Some(n), _) => format!("rows now {}", thousands(n)),
                (None, Some(n)) => format!("rows at last load {}", thousands(n)),
                (None, None) => "rows now -".to_string(),
            };
            lines.push(format!(
                "  {} {} {:<9} {rows}{source}",
                p.partition,
                s.state.glyph(),
                p.state,
            ));
        }
        lines.push(self.plan_line());
        if let Some(note) = state::source_null_partition_note(job, self.source_nulls) {
            lines.push(note);
        }
        if refused > 0 {
            lines.push(format!(
                "{} would be refused and keep {} rows; --allow-shrink lets the source shrink them",
                n_partitions(refused),
                if refused == 1 { "its" } else { "their" }
            ));
        }
        if !self.uncovered.is_empty() {
            let target = &self.backfill.job.target;
            lines.extend(UncoveredWindow::warning(target, &self.uncovered, 5));
        }
        for f in &self.lint {
            lines.push(format!(
                "lint: {} line {}: {}",
                match f.severity {
                    lint::Severity::Error => "✗",
                    lint::Severity::Warning => "⚠",
                },
                f.line,
                f.message
            ));
        }
        if let (Some(column), false) = (&job.partition_column, self.moves_add_to.is_empty()) {
            lines.push(format!(
                "its merges may move rows into or out of windows besides these (by {column}): as it runs, the cascade adds the partitions of {} over those windows, and what reads them",
                self.moves_add_to.join(", "),
            ));
        }
        lines.extend(self.partly_read.clone());
        lines.extend(engine::UpstreamUnread::line(
            &job.name,
            &self.backfill.upstream_unread,
        ));
        if empty > 0 {
            lines.push(format!(
                "{} would load empty, as the source has no rows for {} yet, and then count as loaded: if the source is late, leave {} out",
                n_partitions(empty),
                if empty == 1 { "it" } else { "them" },
                if empty == 1 { "it" } else { "them" }
            ));
        }
        lines
    }

    /// One JSON object on one line, like the events of a real run.
    pub(super) fn print_json(&self) -> Result<(), Stop> {
        let job = &self.backfill.job;
        let event = DryRunEvent {
            schema_version: engine::SCHEMA_VERSION,
            event: "dry_run",
            job: &job.name,
            strategy: job.strategy,
            target: job.target.to_string(),
            concurrency: self.concurrency().0,
            partitions: self.partitions(),
            rows_replaced: (job.strategy == Strategy::ReplacePartition)
                .then(|| self.rows_replaced()),
            plan: self.plan_line(),
            partitions_to_create: self
                .uncovered
                .iter()
                .map(|u| ToCreate {
                    partition: u.partition.name(),
                    create: u.create.clone(),
                })
                .collect(),
            later_loaded: self
                .risk
                .iter()
                .flat_map(|r| r.later_loaded.iter().map(|p| p.name()))
                .collect(),
            lint: self
                .lint
                .iter()
                .map(|f| LintNote {
                    severity: f.severity,
                    line: f.line,
                    message: &f.message,
                })
                .collect(),
            rows_source_null_partition: self.source_nulls,
            downstream: &self.downstream,
            moves_add_to: &self.moves_add_to,
            upstream_not_loaded: self
                .backfill
                .reads_not_loaded
                .iter()
                .map(PartlyRead::said)
                .collect(),
            upstream_unread: &self.backfill.upstream_unread,
        };
        let line = serde_json::to_string(&event).map_err(|e| Stop::failed(e.to_string()))?;
        super::output::json(&line)
    }
}
