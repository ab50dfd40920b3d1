//! The confirm dialog before any run: what will run (planned by the engine
//! from the states the console holds), what it replaces, the strategy in
//! plain words, lint warnings, a reason, and the equivalent `idem run`.

use std::collections::HashSet;

use chrono::NaiveDateTime;
use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};
use tui_input::Input;
use tui_input::backend::crossterm::to_input_request;

mod cover;
mod fit;
mod parallel;
mod reread;
mod same_as;
mod shrink;
mod words;

pub use shrink::SourceCount;
use words::{
    LABEL_WIDTH, dialog_width, filter_line, hints, left_out_words, nothing_to_run, replaces,
    shell_lines, strategy_words,
};

use super::cascade::CascadePlan;
use super::command::{CommandLine, CommandStep};
use super::job::JobView;
use super::keymap::{self, action_for};
use super::keys::{Action, Scope};
use super::theme::Theme;
use super::widgets::{block, centered, controls_shown};
use crate::cli::RunArgs;
use crate::config::{Defaults, Strategy};
use crate::engine::{Backfill, MergeOrderRisk, Selection, within_grant};
use crate::numbers::{count, n_partitions, thousands};
use crate::partition::Partition;
use crate::state::LoadState;

pub struct ConfirmDialog {
    /// The job's index in the jobs pane.
    pub job: usize,
    /// Partition indices chosen before the state filter.
    pub candidates: Vec<usize>,
    /// How many were selected, those left out (future, running) included,
    /// and the words on those left out.
    selected: (usize, Option<String>),
    /// Only partitions in these states (empty: all).
    pub only: Vec<LoadState>,
    /// Merge jobs: also run every window after the chosen ones through the
    /// latest loaded one (`--through-latest`).
    pub through_latest: bool,
    reason: Input,
    editing_reason: bool,
    /// A `:` typed in the dialog opens a command line that takes what follows,
    /// so a command typed out of habit never acts as the dialog's keys (the
    /// `y` of `:retry`, the Enter after it); it is not run.
    typed_command: Option<CommandLine>,
    /// The arguments the dialog opened with (`:run …`, or a bare `idem run
    /// JOB`): flags the dialog does not set itself carry into its command.
    args: RunArgs,
    plan: Plan,
    /// The downstream steps, planned by the app whether cascade is on or
    /// not: off, the dialog says what the run leaves to go stale.
    cascade: Option<CascadePlan>,
    /// The source's count of the candidates, for the shrink guard's preview.
    source: SourceCount,
    /// The windows no native partition of the target covers.
    cover: cover::Cover,
    /// The partitions at once the warehouse grants a run (its role's limit
    /// on connections, read at connect), and why.
    pub granted: Option<(usize, String)>,
    reread: reread::Reread,
}

/// What the dialog's choice comes to, worked out when the choice or the
/// job's states change (never per frame).
#[derive(Default)]
struct Plan {
    /// The candidates the state filter keeps.
    filtered: Vec<usize>,
    /// The partitions that will run, ascending: `filtered`, extended through
    /// the latest loaded window when asked.
    partitions: Vec<usize>,
    risk: Option<MergeOrderRisk>,
    backfill: Option<Backfill>,
    concurrency: usize,
    /// Where the warehouse's grant lowers `concurrency`: of how many, why.
    lowered: Option<String>,
    retries: u32,
    /// The equivalent `idem run` in the pieces a wrapped display keeps
    /// whole; None when nothing would run.
    command: Option<Vec<String>>,
    /// That command's arguments: how a run's report repeats it.
    args: Option<RunArgs>,
}

/// What a key did in the dialog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfirmStep {
    Stay,
    /// Stay, with this note in the status bar (`None` clears it).
    Say(Option<String>),
    Close,
    Run,
    /// Stay, and put this command on the clipboard.
    Copy(String),
}

impl ConfirmDialog {
    /// Opens the dialog on `candidates` of `job` (the one at `index`): those
    /// in the future or running already are left out.
    pub fn open(
        index: usize,
        job: &JobView,
        candidates: Vec<usize>,
        args: RunArgs,
        defaults: &Defaults,
        now: NaiveDateTime,
    ) -> Result<ConfirmDialog, String> {
        if let Some(why) = job.unread() {
            return Err(why);
        }
        let selected = candidates.len();
        let (runnable, left_out): (Vec<usize>, Vec<usize>) =
            candidates.into_iter().partition(|i| {
                !matches!(
                    job.state_at(*i),
                    None | Some(LoadState::Future) | Some(LoadState::Running)
                )
            });
        if runnable.is_empty() {
            return Err("nothing to run: the selection is in the future or already running".into());
        }
        let only = args
            .only
            .iter()
            .filter_map(|s| LoadState::parse(s.trim()))
            .collect();
        let mut dialog = ConfirmDialog {
            job: index,
            candidates: runnable,
            selected: (selected, left_out_words(job, &left_out)),
            only,
            through_latest: args.through_latest,
            reason: Input::new(args.reason.clone().unwrap_or_default()),
            editing_reason: false,
            typed_command: None,
            args,
            plan: Plan::default(),
            cascade: None,
            source: SourceCount::NotAsked,
            cover: cover::Cover::default(),
            granted: None,
            reread: Default::default(),
        };
        dialog.replan(job, defaults, now);
        Ok(dialog)
    }

    /// The partitions that will run, as indices into the job's partitions.
    pub fn partitions(&self) -> &[usize] {
        &self.plan.partitions
    }

    /// Later merge windows that running the choice alone would set back.
    pub fn risk(&self) -> Option<&MergeOrderRisk> {
        self.plan.risk.as_ref()
    }

    /// Whether the run cascades (`--cascade`, or `c` in the dialog).
    pub fn cascade_on(&self) -> bool {
        self.args.cascade
    }

    /// The downstream steps of the run, planned from the console's states.
    pub fn set_cascade(&mut self, plan: Option<CascadePlan>) {
        self.cascade = plan;
    }

    /// Whether the run loads windows not ended yet (`--allow-incomplete`).
    pub fn allows_incomplete(&self) -> bool {
        self.args.allow_incomplete
    }

    /// The cascade's plan, while cascade is on.
    pub fn cascade(&self) -> Option<&CascadePlan> {
        self.cascade.as_ref().filter(|_| self.args.cascade)
    }

    /// The span of partitions whose source a replace job's dialog counts
    /// (all candidates, so that a change of filter needs no new count).
    pub fn source_span(&self, job: &JobView) -> Option<(Partition, Partition)> {
        if job.job.strategy != Strategy::ReplacePartition {
            return None;
        }
        let first = job.partitions.get(*self.candidates.iter().min()?)?;
        let last = job.partitions.get(*self.candidates.iter().max()?)?;
        Some((*first, *last))
    }

    /// The windows whose native partitions are read: the candidates and
    /// every later window (a merge run may extend through them).
    pub fn cover_span(&self, job: &JobView) -> Vec<Partition> {
        let first = self.candidates.iter().min().copied().unwrap_or(0);
        job.partitions.get(first..).unwrap_or_default().to_vec()
    }

    /// Which windows no native partition covers is read by request `id`.
    pub fn reading_cover(&mut self, id: usize) {
        self.cover.reading(id);
    }

    /// The request `id` read which windows no native partition covers.
    pub fn covered(&mut self, id: usize, windows: Vec<crate::warehouse::UncoveredWindow>) {
        self.cover.answered(id, windows);
    }

    /// The reads of which windows of the cascade's steps none covers that
    /// its plan needs, numbered from `next`.
    pub fn cover_steps(&mut self, next: &mut usize) -> Vec<crate::tui::msg::CoverRequest> {
        let steps = self.cascade().map(|c| c.steps.clone()).unwrap_or_default();
        self.cover.ask_steps(&steps, next)
    }

    /// The source is being counted by the background request `id`.
    pub fn counting_source(&mut self, id: usize) {
        self.source = SourceCount::Counting(id);
    }

    /// The request `id` counted the source (its counts are on the job's
    /// partitions; the rows it gives with a NULL partition column, where
    /// told apart, are the answer), or could not.
    pub fn source_counted(&mut self, id: usize, result: Result<Option<i64>, String>) {
        if self.source == SourceCount::Counting(id) {
            self.source = match result {
                Ok(nulls) => SourceCount::Counted(nulls),
                Err(e) => SourceCount::Failed(e),
            };
        }
    }

    /// The equivalent headless command ("" when nothing would run).
    pub fn command(&self) -> String {
        self.plan.command.as_deref().unwrap_or_default().join(" ")
    }

    /// The arguments of the equivalent headless command.
    pub fn run_args(&self) -> Option<RunArgs> {
        self.plan.args.clone()
    }

    /// The backfill to run, with the reason typed; `None` when nothing
    /// matches the filter.
    pub fn backfill(&self) -> Option<Backfill> {
        let mut backfill = self.plan.backfill.clone()?;
        backfill.reason = self.reason_text();
        if let Some(plan) = &self.cascade {
            backfill.reads_not_loaded = plan.reads_not_loaded.clone();
        }
        Some(backfill)
    }

    pub fn reason_text(&self) -> Option<String> {
        let reason = self.reason.value().trim();
        (!reason.is_empty()).then(|| reason.to_string())
    }

    /// Works the choice out again from `job`'s states.
    pub fn replan(&mut self, job: &JobView, defaults: &Defaults, now: NaiveDateTime) {
        let filtered: Vec<usize> = self
            .candidates
            .iter()
            .copied()
            .filter(|i| {
                self.only.is_empty() || job.state_at(*i).is_some_and(|s| self.only.contains(&s))
            })
            .collect();
        let keep: HashSet<Partition> = filtered
            .iter()
            .filter_map(|i| job.partitions.get(*i).copied())
            .collect();
        let selection = Selection {
            from: keep.iter().min().copied(),
            to: keep.iter().max().copied(),
            only: self.only.clone(),
            refused: false,
            allow_incomplete: self.args.allow_incomplete,
        };
        let concurrency = self.args.concurrency.unwrap_or(defaults.concurrency);
        let planned = (!keep.is_empty())
            .then(|| {
                Backfill::plan_from(
                    &job.job,
                    &selection,
                    &job.statuses,
                    now,
                    concurrency,
                    defaults.retries,
                )
                .ok()
            })
            .flatten();
        let mut risk = None;
        let backfill = planned.map(|mut b| {
            b.partitions.retain(|p| keep.contains(p));
            b.allow_shrink = self.args.allow_shrink;
            risk = b.merge_order_risk_in(&job.statuses);
            if self.through_latest
                && let Some(r) = &risk
            {
                b.extend_through_latest(r);
            }
            b
        });
        let partitions: Vec<usize> = backfill
            .as_ref()
            .map(|b| {
                b.partitions
                    .iter()
                    .filter_map(|p| job.index_of(*p))
                    .collect()
            })
            .unwrap_or_default();
        let loads = partitions.len()
            + self.cascade().map_or(0, |c| {
                c.steps.iter().map(|b| b.partitions.len()).sum::<usize>()
            });
        let (args, command) = self
            .command_line(job, &filtered, risk.is_some(), loads)
            .unzip();
        let granted = self.granted.as_ref().map(|(n, why)| (*n, why.as_str()));
        let grant = within_grant(Backfill::concurrency_of(&job.job, concurrency), granted);
        self.plan = Plan {
            filtered,
            partitions,
            risk,
            // As the engine will run it, even while nothing is planned.
            concurrency: grant.0,
            lowered: grant.1,
            backfill,
            retries: defaults.retries,
            command,
            args,
        };
    }

    /// Text pasted into the dialog: into the reason while it is typed,
    /// else nowhere (true if it was taken).
    pub fn paste(&mut self, text: &str) -> bool {
        if let Some(line) = &mut self.typed_command {
            line.paste(text);
            return true;
        }
        if self.editing_reason {
            super::widgets::paste_into(&mut self.reason, text);
        }
        self.editing_reason
    }

    /// The command line typed over the dialog, if one is open.
    pub fn typed_command(&self) -> Option<&CommandLine> {
        self.typed_command.as_ref()
    }

    pub fn key(
        &mut self,
        key: &KeyEvent,
        job: &JobView,
        defaults: &Defaults,
        now: NaiveDateTime,
    ) -> ConfirmStep {
        if self.editing_reason {
            match key.code {
                KeyCode::Enter | KeyCode::Tab | KeyCode::Esc => self.editing_reason = false,
                _ => {
                    if let Some(req) = to_input_request(&TermEvent::Key(*key)) {
                        self.reason.handle(req);
                    }
                }
            }
            self.replan(job, defaults, now);
            return ConfirmStep::Stay;
        }
        if let Some(line) = &mut self.typed_command {
            return match line.key(key) {
                CommandStep::Editing => ConfirmStep::Stay,
                CommandStep::Cancelled => {
                    self.typed_command = None;
                    ConfirmStep::Say(None)
                }
                CommandStep::Submitted(text) => {
                    self.typed_command = None;
                    ConfirmStep::Say(Some(format!(
                        ":{text} not run: the run dialog is open. {} runs it, {} closes it; commands work after",
                        keymap::key(Scope::Confirm, Action::Confirm),
                        keymap::key(Scope::Confirm, Action::Close)
                    )))
                }
            };
        }
        let action = action_for(Scope::Confirm, key);
        if action.is_none() && action_for(Scope::Main, key) == Some(Action::Command) {
            self.typed_command = Some(CommandLine::default());
            return ConfirmStep::Say(None);
        }
        let step = match action {
            // Nothing planned: Enter starts no run (nor a read of the
            // config file for one), and says why.
            Some(Action::Confirm) if self.plan.partitions.is_empty() => {
                return ConfirmStep::Say(Some(format!("nothing ran: {}", nothing_to_run())));
            }
            Some(Action::Confirm) => return ConfirmStep::Run,
            Some(Action::Close) => return ConfirmStep::Close,
            Some(Action::CopyCommand) => {
                return match self.plan.command {
                    Some(_) => ConfirmStep::Copy(self.command()),
                    None => ConfirmStep::Say(Some("nothing would run: no command to copy".into())),
                };
            }
            Some(Action::OnlyAll) => {
                self.only.clear();
                ConfirmStep::Stay
            }
            Some(Action::OnlyFailed) => {
                self.only = vec![LoadState::Failed];
                ConfirmStep::Stay
            }
            Some(Action::OnlyMissing) => {
                self.only = vec![LoadState::Missing];
                ConfirmStep::Stay
            }
            Some(Action::OnlyStale) => {
                self.only = vec![LoadState::Stale];
                ConfirmStep::Stay
            }
            Some(Action::Cascade) => {
                self.args.cascade = !self.args.cascade;
                ConfirmStep::Stay
            }
            Some(Action::AllowShrink) if !self.offers(Action::AllowShrink, job) => {
                ConfirmStep::Say(Some(
                    "merge jobs delete no rows: the shrink guard does not apply".into(),
                ))
            }
            Some(Action::AllowShrink) => {
                self.args.allow_shrink = !self.args.allow_shrink;
                ConfirmStep::Stay
            }
            Some(Action::EditReason) => {
                self.editing_reason = true;
                ConfirmStep::Stay
            }
            Some(Action::ThroughLatest) => {
                if self.through_latest || self.plan.risk.is_some() {
                    self.through_latest = !self.through_latest;
                    ConfirmStep::Say(None)
                } else {
                    ConfirmStep::Say(Some("no later window is loaded: nothing to extend".into()))
                }
            }
            _ => ConfirmStep::Stay,
        };
        self.replan(job, defaults, now);
        step
    }

    pub fn render(&self, frame: &mut Frame, area: Rect, t: &Theme, job: &JobView) {
        let chosen = &self.plan.partitions;
        let filtered = self.plan.filtered.len();
        let label = |s: &str| Span::styled(format!("{s:<LABEL_WIDTH$}"), t.style("muted"));
        let text = t.style("text");
        let name = |i: &usize| {
            job.partitions
                .get(*i)
                .map(Partition::name)
                .unwrap_or_default()
        };
        use fit::{ONLY, SAME_AS, SPACING, STRATEGY};
        let mut optional: Vec<(usize, u8)> = Vec::new();
        let mut lines: Vec<_> = self.reread_line(t, label).into_iter().collect();
        let (selected, left_out) = &self.selected;
        let left_out = left_out
            .as_deref()
            .map(|w| format!("; {w}"))
            .unwrap_or_default();
        let range = match (chosen.first(), chosen.last()) {
            (Some(a), Some(z)) if chosen.len() > filtered => format!(
                "{} .. {}  ({}: {} of {} selected + {} later windows{left_out})",
                name(a),
                name(z),
                n_partitions(chosen.len() as i64),
                thousands(filtered as i64),
                thousands(*selected as i64),
                thousands((chosen.len() - filtered) as i64)
            ),
            (Some(a), Some(z)) => format!(
                "{} .. {}  ({} of {}{left_out})",
                name(a),
                name(z),
                thousands(chosen.len() as i64),
                count(
                    *selected as i64,
                    "selected partition",
                    "selected partitions"
                )
            ),
            _ => format!(
                "nothing matches the filter ({} selected{left_out})",
                thousands(*selected as i64)
            ),
        };
        lines.push(Line::from(vec![label("range"), Span::styled(range, text)]));
        lines.push(filter_line(&self.only, t, label("only")));
        optional.push((lines.len() - 1, ONLY));
        let mut states = vec![label("states")];
        for st in LoadState::ALL {
            let n = chosen
                .iter()
                .filter(|i| job.state_at(**i) == Some(st))
                .count();
            if n > 0 {
                states.push(Span::styled(
                    format!("{} {} {}  ", st.glyph(), st.name(), thousands(n as i64)),
                    t.state(st),
                ));
            }
        }
        lines.push(Line::from(states));
        lines.push(Line::from(vec![
            label("replaces"),
            Span::styled(replaces(job, chosen), t.style("warning")),
        ]));
        lines.push(Line::from(vec![
            label("strategy"),
            Span::styled(strategy_words(job), text),
        ]));
        optional.push((lines.len() - 1, STRATEGY));
        let conc = parallel::words(
            &job.job,
            self.plan.concurrency,
            self.plan.lowered.as_deref(),
            self.plan.retries,
        );
        lines.push(Line::from(vec![
            label("parallel"),
            Span::styled(conc, text),
        ]));
        lines.extend(shrink::lines(
            &self.source,
            self.plan.backfill.as_ref(),
            job,
            chosen,
            t,
            label,
        ));
        let planned = self.plan.backfill.as_ref().map(|b| &b.partitions[..]);
        let planned = planned.unwrap_or_default();
        lines.extend(self.cover.lines(planned, &job.job.target, t, label));
        let upstream = self.cascade.as_ref();
        lines.extend(upstream.and_then(|p| p.upstream_line(t, label("upstream"))));
        if let Some(plan) = self.cascade() {
            lines.extend(plan.lines(t, label));
            lines.extend(self.cover.steps_lines(&plan.steps, t, label));
        } else if let Some(plan) = &self.cascade {
            let key = keymap::key(Scope::Confirm, Action::Cascade);
            lines.extend(plan.off_line(t, label("cascade"), key));
        }
        if let Some(risk) = &self.plan.risk {
            if self.through_latest {
                lines.push(Line::from(vec![
                    label("extended"),
                    Span::styled(
                        format!(
                            "through {}, the latest loaded window, so that the newest values win; {} undoes",
                            risk.latest().name(),
                            keymap::key(Scope::Confirm, Action::ThroughLatest)
                        ),
                        t.style("ok"),
                    ),
                ]));
            } else {
                lines.push(Line::from(vec![
                    label("warning"),
                    Span::styled(risk.warning(), t.style("warning")),
                    Span::styled(
                        format!(" ({})", keymap::key(Scope::Confirm, Action::ThroughLatest)),
                        t.style("highlight"),
                    ),
                ]));
            }
        }
        if job.lint.is_empty() {
            lines.push(Line::from(vec![
                label("lint"),
                Span::styled("no findings", t.style("ok")),
            ]));
        } else {
            for (k, l) in job.lint.iter().take(3).enumerate() {
                lines.push(Line::from(vec![
                    label(if k == 0 { "lint" } else { "" }),
                    Span::styled(
                        format!("{} {}", if l.error { "✗" } else { "⚠" }, l.message),
                        if l.error {
                            t.style("error")
                        } else {
                            t.style("warning")
                        },
                    ),
                ]));
            }
        }
        let reason_style = if self.editing_reason {
            t.style("text").add_modifier(Modifier::UNDERLINED)
        } else {
            t.style("muted")
        };
        let reason = if self.reason.value().is_empty() && !self.editing_reason {
            format!(
                "(optional; {} to type)",
                keymap::key(Scope::Confirm, Action::EditReason)
            )
        } else {
            format!(
                "{}{}",
                self.reason.value(),
                if self.editing_reason { "▏" } else { "" }
            )
        };
        lines.push(Line::from(vec![
            label("reason"),
            Span::styled(reason, reason_style),
        ]));
        let width = dialog_width(area.width, self.plan.command.as_deref());
        let inner_w = width.saturating_sub(2).max(1);
        if let Some(command) = &self.plan.command {
            let first = lines.len();
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled(
                format!(
                    "same as ({} copies it):",
                    keymap::key(Scope::Confirm, Action::CopyCommand)
                ),
                t.style("muted"),
            )));
            match shell_lines(command, inner_w as usize) {
                Some(command) => lines.extend(
                    command
                        .into_iter()
                        .map(|l| Line::from(Span::styled(l, t.style("highlight")))),
                ),
                None => lines.push(Line::from(Span::styled(
                    "(wider than this dialog: widen the terminal to see it whole)",
                    t.style("muted"),
                ))),
            }
            optional.extend((first..lines.len()).map(|i| (i, SAME_AS)));
        }
        lines.push(Line::from(""));
        optional.push((lines.len() - 1, SPACING));
        let offered = [Action::AllowShrink, Action::ThroughLatest]
            .into_iter()
            .filter(|a| self.offers(*a, job))
            .collect::<Vec<_>>();
        lines.push(hints(t, &offered));
        let (lines, height) = fit::to_height(
            lines,
            optional,
            inner_w,
            area.height.saturating_sub(2) as usize,
            self.plan.command.is_some(),
            t,
        );
        let r = centered(area, width, height.min(u16::MAX as usize) as u16);
        frame.render_widget(Clear, r);
        let b = block(t, format!(" Run {}? ", job.job.name), true);
        let inner_r = b.inner(r);
        frame.render_widget(b, r);
        frame.render_widget(
            Paragraph::new(controls_shown(lines)).wrap(Wrap { trim: false }),
            inner_r,
        );
    }

    /// Whether the dialog's `action` (shrink, through latest) applies to
    /// this run: the footer and the hints offer only those that do.
    pub fn offers(&self, action: Action, job: &JobView) -> bool {
        match action {
            Action::AllowShrink => job.job.strategy == Strategy::ReplacePartition,
            Action::ThroughLatest => self.plan.risk.is_some() || self.through_latest,
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests;
