//! The config file read again at every refresh: an edit made while the
//! console is open (the job's SQL fixed at 3 a.m.) is what the next run
//! from the console uses, and says so; a file that no longer loads, or a
//! change to the warehouse, keeps the console on what it opened with and
//! says that instead. The run dialog reads the file too, as it opens and
//! when it is confirmed: Enter runs the file as saved then.

use std::collections::BTreeSet;

use super::{App, Modal};
use crate::config::{Config, ConfigError};
use crate::lineage::Lineage;
use crate::tui::confirm::ConfirmDialog;
use crate::tui::msg::Effect;
use crate::tui::runs::RunPartState;

impl App {
    /// The config file read again by read `id`; a run confirmed in the
    /// dialog starts now if this is the read it waits on (or a newer one),
    /// the console is on the file as read and the dialog's plan did not
    /// change with it.
    pub(super) fn config_read(&mut self, id: usize, read: Result<Config, String>) -> Vec<Effect> {
        // Reads run side by side: one older than a read already landed
        // is of the file as it was before.
        if id < self.config_read_landed {
            return Vec::new();
        }
        self.config_read_landed = id;
        let mut effects = self.reload(read);
        let Modal::Confirm(c) = &mut self.shared.modal else {
            return effects;
        };
        if c.awaited_read().is_none_or(|awaited| id < awaited) {
            return effects;
        }
        if let Some(why) = &self.shared.config_error {
            c.note(format!("nothing ran: {why}; Enter tries again"));
            return effects;
        }
        if let Modal::Confirm(c) = std::mem::replace(&mut self.shared.modal, Modal::None) {
            effects.extend(self.start_run(c));
        }
        effects
    }

    /// Enter in the run dialog: the run waits on the config file read
    /// again, so that it runs the file as saved (the dialog's "same as"
    /// command would), not as the last refresh read it.
    pub(super) fn confirm_run(&mut self, mut c: Box<ConfirmDialog>) -> Vec<Effect> {
        // The states it plans on: its job's, and every downstream job's
        // its cascade plans.
        let jobs = &self.shared.jobs;
        let downstream = c.cascade().map(|p| p.unread.as_slice()).unwrap_or_default();
        let unread = jobs
            .get(c.job)
            .into_iter()
            .chain(downstream.iter().filter_map(|name| jobs.by_name(name)))
            .find_map(|j| j.unread());
        if let Some(why) = unread {
            self.shared.message = Some((true, format!("nothing ran: {why}")));
            self.shared.modal = Modal::Confirm(c);
            return Vec::new();
        }
        let read = self.read_config();
        c.confirming(self.config_reads_asked);
        self.shared.modal = Modal::Confirm(c);
        vec![read]
    }

    fn reload(&mut self, read: Result<Config, String>) -> Vec<Effect> {
        let file = self.config.path.display().to_string();
        let new = match read {
            Ok(new) => new,
            Err(e) => {
                let name = self.config_name();
                // Where, in the title bar, which stays while the status
                // bar moves on to a run's messages.
                let at = e
                    .split(": ")
                    .next()
                    .and_then(|head| {
                        let mut parts = head.rsplitn(3, ':');
                        let (col, line) = (parts.next()?, parts.next()?);
                        let digits =
                            |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
                        (digits(line) && digits(col)).then(|| format!(":{line}:{col}"))
                    })
                    .unwrap_or_default();
                if self.keep_config(format!(
                    "{name}{at} does not load: the console keeps the jobs it opened with"
                )) {
                    self.shared.message = Some((
                        true,
                        format!("{e}; the console keeps the jobs it opened with until it loads"),
                    ));
                }
                return Vec::new();
            }
        };
        let same = |a: &Config, b: &Config| {
            format!("{:?}", (&a.warehouse, &a.defaults, &a.jobs))
                == format!("{:?}", (&b.warehouse, &b.defaults, &b.jobs))
        };
        if same(&new, &self.config) {
            self.keep_config_clear();
            return Vec::new();
        }
        if format!("{:?}", new.warehouse) != format!("{:?}", self.config.warehouse) {
            if self.keep_config("warehouse changed in the config: restart to use it".into()) {
                self.shared.message = Some((
                    true,
                    format!(
                        "{file} names another warehouse or changes its settings: restart the console to use them; it keeps the jobs it opened with"
                    ),
                ));
            }
            return Vec::new();
        }
        self.keep_config_clear();
        let lineage = Lineage::comparing(&new, self.syntax, self.table_names);
        let dialog_outdated = self.run_dialog_outdated(&new, lineage.as_ref().ok());
        let chosen = match &self.shared.modal {
            Modal::Confirm(c) => self.shared.jobs.get(c.job).map(|j| c.chosen(j)),
            _ => None,
        };
        // A job given a new upstream (a `depends_on`, a job whose target
        // its SQL reads) is derived anew: a read answers "unchanged" on
        // the upstream the job had, and would miss what the new one made
        // stale.
        let upstream = |l: Option<&Lineage>, job: &str| {
            let names = l.map(|l| l.upstream(job)).unwrap_or_default();
            names
                .iter()
                .map(|(n, _)| n.clone())
                .collect::<BTreeSet<_>>()
        };
        let upstream_changed: Vec<String> = new
            .jobs
            .iter()
            .map(|j| j.name.clone())
            .filter(|j| {
                upstream(Some(&self.shared.lineage), j) != upstream(lineage.as_ref().ok(), j)
            })
            .collect();
        let summary =
            self.shared
                .jobs
                .reload(&new.jobs, self.shared.now, (self.syntax, self.table_names));
        for name in &upstream_changed {
            if let Some(j) = self.shared.jobs.by_name_mut(name) {
                j.as_read = false;
            }
        }
        self.follow_renamed_runs(&new, &summary.removed, &summary.added);
        self.config = new;
        let lineage_error = self.set_lineage(lineage);
        // Dialogs made of the old definitions close. The run dialog stays
        // (with the reason typed in it), planned again on the new ones
        // when what it plans changed, unless its job or every partition
        // it chose is gone.
        let mut closed_dialog = None;
        let mut replanned_dialog = None;
        let config_name = self.config_name();
        match &mut self.shared.modal {
            Modal::Confirm(c) => {
                if let Some(job) = dialog_outdated {
                    let jobs = &self.shared.jobs;
                    let index = jobs.iter().position(|j| j.job.name == job);
                    let moved = index.zip(chosen).is_some_and(|(i, chosen)| {
                        jobs.get(i).is_some_and(|j| c.moved_to(i, j, &chosen))
                    });
                    if moved {
                        c.note(format!(
                            "{config_name} changed: the plan is of the file as saved now; Enter runs it"
                        ));
                        replanned_dialog = Some(job);
                    } else {
                        closed_dialog = Some(job);
                    }
                }
            }
            Modal::Errors(_) | Modal::Lineage(_) | Modal::Diff { .. } => {
                self.shared.modal = Modal::None;
            }
            _ => {}
        }
        if closed_dialog.is_some() {
            self.shared.modal = Modal::None;
        }
        let mut note = format!("{file} changed: reloaded");
        for (what, names) in [
            ("changed", &summary.changed),
            ("added", &summary.added),
            ("removed", &summary.removed),
        ] {
            if !names.is_empty() {
                note.push_str(&format!("; {what} {}", names.join(", ")));
            }
        }
        if let Some(job) = closed_dialog {
            note.push_str(&format!(
                "; the run dialog of {job} closed, as what it planned changed: r plans it again"
            ));
        }
        if let Some(job) = &replanned_dialog {
            note.push_str(&format!("; the run dialog of {job} is planned on it"));
        }
        if self.active_runs() > 0 {
            note.push_str("; runs in flight keep the definitions they started with");
        }
        self.shared.message = Some(match lineage_error {
            Some(e) => (true, format!("{note}; {e}")),
            None => (false, note),
        });
        self.fix_scroll_all();
        self.dirty = true;
        let mut effects = self.refresh_states(false);
        if replanned_dialog.is_some() {
            effects.extend(self.replan_confirm());
            effects.extend(self.count_source_for_run());
            effects.extend(self.read_cover_for_run());
        }
        let jobs_changed = [&summary.changed, &summary.added, &summary.removed]
            .iter()
            .any(|n| !n.is_empty());
        if jobs_changed {
            // Lint reads the jobs together (two writing one target); a
            // rename is a job removed and one added.
            effects.extend([Effect::Lint, Effect::ReadHistoryElsewhere]);
        } else if !summary.rewritten.is_empty() {
            // Its findings carry the lines they are on.
            effects.push(Effect::Lint);
        }
        effects
    }

    /// The job of the open run dialog when `new` changes what it plans:
    /// that job, a job downstream of it (its cascade), the defaults, or
    /// the jobs' order (the dialog holds the job by its place).
    fn run_dialog_outdated(&self, new: &Config, lineage: Option<&Lineage>) -> Option<String> {
        let Modal::Confirm(c) = &self.shared.modal else {
            return None;
        };
        let name = self.shared.jobs.get(c.job)?.job.name.clone();
        let names = |c: &Config| c.jobs.iter().map(|j| j.name.clone()).collect::<Vec<_>>();
        let mut planned = self.shared.lineage.downstream_closure(&name);
        planned.extend(
            lineage
                .map(|l| l.downstream_closure(&name))
                .unwrap_or_default(),
        );
        planned.push(name.clone());
        let definition =
            |c: &Config, job: &str| format!("{:?}", c.jobs.iter().find(|j| j.name == job));
        let same = lineage.is_some()
            && names(new) == names(&self.config)
            && format!("{:?}", new.defaults) == format!("{:?}", self.config.defaults)
            && planned
                .iter()
                .all(|job| definition(new, job) == definition(&self.config, job));
        (!same).then_some(name)
    }

    /// A run in flight of a job `new` renames (removes it and adds a job of
    /// its target) is shown under the new name: its partitions in flight
    /// show running in that job's calendar.
    fn follow_renamed_runs(&mut self, new: &Config, removed: &[String], added: &[String]) {
        let runs = self.shared.runs.iter_mut();
        for r in runs.filter(|r| r.active() && removed.contains(&r.shown_under)) {
            let old = self.config.jobs.iter().find(|j| j.name == r.shown_under);
            let Some(renamed) = old.and_then(|old| {
                new.jobs
                    .iter()
                    .find(|j| added.contains(&j.name) && j.target == old.target)
            }) else {
                continue;
            };
            r.shown_under = renamed.name.clone();
            let Some(j) = self.shared.jobs.by_name_mut(&renamed.name) else {
                continue;
            };
            let in_flight = r
                .partitions
                .iter()
                .filter(|p| matches!(p.state, RunPartState::Running | RunPartState::Retrying));
            for p in in_flight {
                j.enter_flight(&p.name);
            }
        }
    }

    /// Takes `lineage` as which jobs read which. One that could not be
    /// made (a cycle the server's table names close) leaves none: nothing
    /// shows stale (upstream), and the title bar says why until a reload
    /// makes one. Returns the whole error, for the status bar.
    pub(super) fn set_lineage(&mut self, lineage: Result<Lineage, ConfigError>) -> Option<String> {
        match lineage {
            Ok(l) => {
                self.shared.lineage = l;
                if self.shared.lineage_error.take().is_some() {
                    self.dirty = true;
                }
                None
            }
            Err(e) => {
                self.shared.lineage = Lineage::default();
                let what = e.message.split("; ").next().unwrap_or_default();
                let at = if e.line > 0 {
                    format!(":{}:{}", e.line, e.column)
                } else {
                    String::new()
                };
                self.shared.lineage_error = Some(format!("{}{at}: {what}", self.config_name()));
                self.dirty = true;
                Some(e.to_string())
            }
        }
    }

    /// The config file's name, as the title bar says it.
    fn config_name(&self) -> String {
        let path = &self.config.path;
        path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// Keeps the config the console has, `why` in the title bar: true when
    /// that is news, or an explicit refresh asked (the status bar then says
    /// more).
    fn keep_config(&mut self, why: String) -> bool {
        let retell = std::mem::take(&mut self.retell_config_error);
        if self.shared.config_error.as_ref() == Some(&why) && !retell {
            return false;
        }
        self.shared.config_error = Some(why);
        self.dirty = true;
        true
    }

    fn keep_config_clear(&mut self) {
        self.retell_config_error = false;
        if self.shared.config_error.take().is_some() {
            self.dirty = true;
        }
    }
}
