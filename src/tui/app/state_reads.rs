//! Reading job states off the warehouse: the refresh that asks for them,
//! the connection's answer, and each job's states as they come back (read,
//! unread, or unchanged since the last count).

use super::{App, Connection, Effect, REFRESHING, Unread};
use crate::lineage::Lineage;
use crate::state::StatesRead;
use crate::tui::widgets::first_line;

/// The note a refresh whose reads failed leaves, before the first error.
const REFRESH_FAILED: &str = "refresh failed: ";

impl App {
    pub(super) fn refresh_states(&mut self, quiet: bool) -> Vec<Effect> {
        self.last_refresh = Some(self.shared.now);
        if !self.shared.connected {
            if self.shared.connecting {
                return Vec::new();
            }
            self.shared.connecting = true;
            self.last_connect = Some(self.shared.now);
            return vec![Effect::Connect];
        }
        let names: Vec<String> = self
            .shared
            .jobs
            .iter_mut()
            .filter_map(|j| {
                if j.loading {
                    j.refresh_again = true;
                    None
                } else {
                    j.begin_read(quiet);
                    Some(j.job.name.clone())
                }
            })
            .collect();
        self.dirty |= !quiet;
        if names.is_empty() {
            Vec::new()
        } else {
            vec![Effect::Refresh(names)]
        }
    }

    pub(super) fn refresh_job(&mut self, name: &str) -> Vec<Effect> {
        if !self.shared.connected {
            return Vec::new();
        }
        let Some(j) = self.shared.jobs.by_name_mut(name) else {
            return Vec::new();
        };
        if j.loading {
            j.refresh_again = true;
            return Vec::new();
        }
        j.begin_read(false);
        vec![Effect::Refresh(vec![name.to_string()])]
    }

    pub(super) fn connected_msg(&mut self, result: Result<Connection, String>) -> Vec<Effect> {
        self.shared.connecting = false;
        match result {
            Ok(Connection {
                url,
                syntax,
                table_names,
                granted,
            }) => {
                self.shared.granted = granted;
                for j in self.shared.jobs.iter_mut() {
                    j.read_lint_as(syntax, table_names);
                }
                // Which jobs read which, as the server reads SQL and
                // compares table names: one with ANSI_QUOTES reads the
                // table in `"fct"`, one folding names reads `fct` in
                // `FCT`, and may close a cycle the config's default did not.
                self.syntax = syntax;
                self.table_names = table_names;
                let lineage = Lineage::comparing(&self.config, syntax, table_names);
                if let Some(e) = self.set_lineage(lineage) {
                    self.shared.message = Some((true, e));
                }
                self.shared.url = url;
                self.shared.connected = true;
                self.shared.db_error = None;
                let mut effects = self.refresh_all(false);
                effects.extend([Effect::Lint, Effect::ReadHistoryElsewhere]);
                effects
            }
            Err(e) => {
                self.shared.connected = false;
                // Jobs whose states were never read cannot be, and say so
                // rather than "loading…" for good.
                for j in self.shared.jobs.iter_mut() {
                    j.error.get_or_insert_with(|| e.clone());
                }
                self.shared.db_error = Some(e);
                Vec::new()
            }
        }
    }

    pub(super) fn status_msg(
        &mut self,
        name: &str,
        result: Result<StatesRead, Unread>,
    ) -> Vec<Effect> {
        let Some(j) = self.shared.jobs.by_name_mut(name) else {
            return Vec::new();
        };
        j.loading = false;
        j.slow = None;
        // Why the states could not be read, as said when acting on them:
        // once they are, the status bar no longer says so.
        let unread = j.unread().filter(|_| result.is_ok());
        if unread.is_some_and(|why| matches!(&self.shared.message, Some((_, m)) if *m == why)) {
            self.shared.message = None;
        }
        if result.is_ok() {
            self.shared.detail.loads.read_again_if_failed(name);
        }
        match result {
            Ok(StatesRead::States(states)) => {
                j.null_partition = states.null_partition;
                j.apply_statuses(states.statuses);
                self.shared.db_error = None;
            }
            Ok(StatesRead::Unchanged) => {
                j.error = None;
                self.shared.db_error = None;
            }
            // The title bar speaks for the warehouse: one job's missing
            // table or bad SQL is said on that job's row, not there.
            Err(Unread {
                why,
                whole_warehouse,
            }) => {
                self.shared.db_error = whole_warehouse.then(|| why.clone());
                j.error = Some(why);
            }
        }
        if std::mem::take(&mut j.refresh_again) {
            return self.refresh_job(name);
        }
        // R's "refreshing…" ends with the reads it started: said done, or
        // why one failed.
        // A later read that finds every job again ends its failure too.
        let refreshing = matches!(&self.shared.message, Some((false, m)) if m == REFRESHING);
        let failed =
            matches!(&self.shared.message, Some((true, m)) if m.starts_with(REFRESH_FAILED));
        if (refreshing || failed) && !self.shared.jobs.iter().any(|j| j.loading) {
            let failed = self.shared.jobs.iter().find_map(|j| j.error.as_ref());
            self.shared.message =
                failed.map(|e| (true, format!("{REFRESH_FAILED}{}", first_line(e))));
        }
        Vec::new()
    }

    /// A read found `job`'s states as the console holds them: the screen
    /// changes only if it showed the read, or an error the read clears.
    pub(super) fn unchanged_msg(&mut self, name: &str) -> Vec<Effect> {
        let shown = self.shared.db_error.is_some()
            || self
                .shared
                .jobs
                .by_name_mut(name)
                .is_some_and(|j| j.shows_loading() || j.error.is_some());
        self.dirty |= shown;
        let mut effects = self.status_msg(name, Ok(StatesRead::Unchanged));
        // Loads that could not be read while the server was down.
        effects.extend(self.follow_loads());
        effects
    }
}
