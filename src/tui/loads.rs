//! The last loads of the cursor's partition, for the detail pane: read from
//! the ledger in the background when the cursor comes to a partition (or
//! its latest attempt changes), one partition at a time.

use super::job::JobView;
use super::msg::{Effect, LoadsRequest};
use crate::numbers::n_rows;
use crate::partition::Partition;
use crate::warehouse::ledger::{Attempt, AttemptStatus};

/// How many loads the detail tells.
const SHOWN: usize = 3;

/// Which partition's loads, as of which latest attempt.
#[derive(Debug, Clone, PartialEq)]
struct Key {
    job: String,
    partition: Partition,
    latest: Option<i64>,
}

/// The loads of one partition: asked for, then read.
#[derive(Debug, Clone, Default)]
pub struct Loads {
    id: usize,
    key: Option<Key>,
    /// `None` while being read.
    attempts: Option<Result<Vec<Attempt>, String>>,
}

impl Loads {
    /// The cursor is where it is in `job`: asks for its partition's loads
    /// unless they are held or asked for already.
    pub fn follow(&mut self, job: &JobView, connected: bool, id: usize) -> Option<Effect> {
        let status = job.status_at(job.cursor).filter(|_| connected)?;
        let key = Key {
            job: job.job.name.clone(),
            partition: status.partition,
            latest: status.last_attempt.as_ref().map(|a| a.attempt),
        };
        if self.key.as_ref() == Some(&key) {
            return None;
        }
        *self = Loads {
            id,
            key: Some(key),
            attempts: None,
        };
        Some(Effect::Loads(Box::new(LoadsRequest {
            id,
            job: job.job.name.clone(),
            partition: status.partition,
        })))
    }

    /// The states of `job` were read: loads of its partition that could not
    /// be read (the server was down) are asked for again, once per read of
    /// the states rather than at every message while it stays down.
    pub fn read_again_if_failed(&mut self, job: &str) {
        let failed = matches!(self.attempts, Some(Err(_)));
        if failed && self.key.as_ref().is_some_and(|k| k.job == job) {
            self.key = None;
        }
    }

    /// The ledger answered; an answer for a partition since left is dropped.
    pub fn answered(&mut self, id: usize, result: Result<Vec<Attempt>, String>) {
        if self.id == id && self.key.is_some() {
            self.attempts = Some(result);
        }
    }

    /// "last loads: 06-14 02:00 10,480 rows changed · …", newest first, for
    /// the cursor's partition once read.
    pub fn line(&self, job: &JobView) -> Option<String> {
        let key = self.key.as_ref()?;
        let here = job.partitions.get(job.cursor)?;
        if key.job != job.job.name || key.partition != *here {
            return None;
        }
        let attempts = match self.attempts.as_ref()? {
            Ok(a) => a,
            Err(e) => return Some(format!("last loads: cannot read the ledger: {e}")),
        };
        if attempts.is_empty() {
            return None;
        }
        let told: Vec<String> = attempts.iter().rev().take(SHOWN).map(load_text).collect();
        let more = attempts.len().saturating_sub(SHOWN);
        let mut line = format!("last loads: {}", told.join(" · "));
        if more > 0 {
            line.push_str(&format!(" · {more} older"));
        }
        Some(line)
    }
}

/// One load: when it ended, its rows, and whether it changed the content.
fn load_text(a: &Attempt) -> String {
    // "2026-06-14T02:00:01.250Z" → "06-14 02:00"
    let when = match (a.finished_at.get(5..10), a.finished_at.get(11..16)) {
        (Some(d), Some(hm)) => format!("{d} {hm}"),
        _ => a.finished_at.clone(),
    };
    let what = match (a.status, a.content_changed) {
        (AttemptStatus::Succeeded, Some(true)) => {
            format!("{} changed", n_rows(a.rows_after))
        }
        (AttemptStatus::Succeeded, Some(false)) => {
            format!("{} unchanged", n_rows(a.rows_after))
        }
        (AttemptStatus::Succeeded, None) => n_rows(a.rows_after),
        (status, _) => status.as_str().to_string(),
    };
    format!("{when} {what}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::job_view;

    #[test]
    fn loads_are_asked_once_per_partition_and_told_newest_first() {
        let mut job = job_view("fct_orders", false, "■■✗■·■■✗■■");
        let mut loads = Loads::default();
        assert!(loads.follow(&job, false, 1).is_none(), "not connected");
        let Some(Effect::Loads(req)) = loads.follow(&job, true, 1) else {
            panic!("no loads effect");
        };
        assert_eq!(req.partition.name(), "2026-06-10");
        assert!(loads.follow(&job, true, 2).is_none(), "asked already");
        assert_eq!(loads.line(&job), None, "nothing until read");
        let mut first = job
            .status_at(9)
            .and_then(|s| s.last_attempt.as_deref().cloned())
            .expect("an attempt");
        let mut second = first.clone();
        first.content_changed = Some(true);
        first.rows_after = 90;
        second.attempt = 2;
        second.content_changed = Some(false);
        second.finished_at = "2026-06-15T01:30:00.000Z".into();
        let mut failed = second.clone();
        failed.attempt = 3;
        failed.status = AttemptStatus::Failed;
        loads.answered(7, Ok(Vec::new()));
        assert_eq!(loads.line(&job), None, "another request's answer");
        loads.answered(1, Ok(vec![first.clone(), second, failed]));
        assert_eq!(
            loads.line(&job).as_deref(),
            Some(
                "last loads: 06-15 01:30 failed · 06-15 01:30 100 rows unchanged · 06-14 02:00 90 rows changed"
            )
        );
        job.step(-1);
        assert_eq!(loads.line(&job), None, "another partition");
        assert!(matches!(
            loads.follow(&job, true, 3),
            Some(Effect::Loads(_))
        ));
    }
}
