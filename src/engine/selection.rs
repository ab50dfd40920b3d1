//! Which partitions of a job's range a backfill loads, checked against the
//! job's start, end and the clock.

use crate::config::Job;
use crate::partition::{Partition, now_utc};
use crate::state::LoadState;

use super::PlanError;

/// Which partitions of a range a backfill loads.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub from: Option<Partition>,
    pub to: Option<Partition>,
    /// Only partitions in these states (and, with `refused`, those the
    /// shrink guard refused); neither means all.
    pub only: Vec<LoadState>,
    /// Also the partitions whose latest load the shrink guard refused, with
    /// no success since (`--only refused`).
    pub refused: bool,
    /// Also load windows that have not ended yet (their loads are never
    /// taken as final).
    pub allow_incomplete: bool,
}

impl Selection {
    /// The first and last partition this selection asks of `job`, checked:
    /// a range that is empty, outside the job's partitions or (without
    /// `allow_incomplete`) not ended yet is refused. It needs no warehouse,
    /// so a command refuses such input before it connects.
    pub fn range(
        &self,
        job: &Job,
        now: chrono::NaiveDateTime,
    ) -> Result<(Partition, Partition), PlanError> {
        let from = self.from.unwrap_or(job.start);
        let to = self.to.unwrap_or_else(|| job.last_partition(now));
        if from > to {
            // Said in the words of what was typed: a bound left out is the
            // job's own, and named as such.
            return Err(match (self.from, self.to) {
                (None, None) => PlanError::StartsLater {
                    job: job.name.clone(),
                    start: job.start.name(),
                    end: job.start.end().format("%Y-%m-%d %H:%M").to_string(),
                },
                (Some(_), None) => PlanError::FromAfterDefaultTo {
                    from: from.name(),
                    to: to.name(),
                    to_is: if job.end == Some(to) {
                        format!("{}'s last partition {} (its end)", job.name, to.name())
                    } else {
                        format!("the last complete partition {}", to.name())
                    },
                },
                (None, Some(_)) => PlanError::ToBeforeStart {
                    job: job.name.clone(),
                    to: to.name(),
                    start: from.name(),
                },
                (Some(_), Some(_)) => PlanError::EmptyRange {
                    from: from.name(),
                    to: to.name(),
                },
            });
        }
        let out_of_range = |p: Partition| PlanError::OutOfRange {
            job: job.name.clone(),
            partition: p.name(),
            first: job.start.name(),
            last: job.end.map_or_else(|| "now".into(), |e| e.name()),
        };
        if from < job.start {
            return Err(out_of_range(from));
        }
        if let Some(end) = job.end
            && to > end
        {
            return Err(out_of_range(to));
        }
        let open = Partition::containing(job.grain, now);
        if to.is_future(now) && !self.allow_incomplete {
            let first_open = open.max(from);
            return Err(PlanError::Incomplete {
                partition: first_open.name(),
                end: first_open.end().format("%Y-%m-%d %H:%M").to_string(),
                last_complete: open.prev().name(),
            });
        }
        // Even allowed, only the window open now: a later one has no rows
        // yet, and its load would record an empty success for it.
        if to > open {
            return Err(PlanError::NotBegun {
                partition: open.next().max(from).name(),
                open: open.name(),
            });
        }
        Ok((from, to))
    }
}

impl Selection {
    /// [`Selection::range`] before connecting, when the warehouse's clock
    /// is not known: refused only where it would be on a clock up to
    /// [`crate::clock::latest_unmeasured_now`], in the words this host's
    /// clock gives (which names the windows as the operator's own does).
    pub fn range_before_connecting(&self, job: &Job) -> Result<(), PlanError> {
        let latest = crate::clock::latest_unmeasured_now().naive_utc();
        self.range(job, latest)
            .or_else(|_| self.range(job, now_utc()))
            .map(|_| ())
    }
}
