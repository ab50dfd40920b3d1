//! The windows a run loads over upstream partitions that are neither loaded
//! nor loaded by the run: a cascade's steps (QA: a cascade from five hours
//! of a day loaded the day from those five, and said nothing of the other
//! nineteen), and a run's own job. The run still loads them, from what is
//! there; they go stale (upstream) once the rest loads, and the plan and
//! the run say so.

use std::collections::{BTreeSet, HashMap};

use super::Downstream;
use crate::config::Config;
use crate::engine::{Backfill, NotLoaded, NotLoadedUpstream};
use crate::lineage::{Lineage, read_by};
use crate::partition::Partition;
use crate::state::{LoadState, PartitionStatus};

/// Windows named in a line before the rest are counted.
const WINDOWS_NAMED: usize = 3;
/// Runs of upstream partitions named per window before the rest are cut.
const RUNS_NAMED: usize = 3;

/// A window of a run's job or of a cascade's step that reads, of one
/// upstream job, partitions neither loaded nor in the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartlyRead {
    pub window: Partition,
    pub upstream: String,
    /// The upstream job's partitions under the window: those within its
    /// range that have ended (or that the cascade loads).
    pub under: usize,
    /// Of those, the ones neither loaded nor in the run, oldest first,
    /// with their state: missing, failed, vanished or running. Stale and
    /// unmanaged ones hold rows, and count as loaded.
    pub not_loaded: Vec<(Partition, LoadState)>,
}

/// Whether a partition in `state` holds the rows a window over it reads:
/// not one missing, failed, vanished (its rows gone) or running elsewhere.
/// One not ended yet is no gap: it has not had its rows yet, and a window
/// over it loads only with `--allow-incomplete`.
fn holds_its_rows(state: LoadState) -> bool {
    !matches!(
        state,
        LoadState::Missing | LoadState::Failed | LoadState::Vanished | LoadState::Running
    )
}

impl Downstream<'_, '_> {
    /// The windows of `step` (a step planned from [`Downstream::next_job`],
    /// after [`Downstream::planned`] for the steps before it) that read
    /// upstream partitions neither planned in this cascade nor loaded, per
    /// upstream job whose `statuses` are known, window by window.
    pub fn partly_read<'s>(
        &self,
        step: &Backfill,
        statuses: impl Fn(&str) -> Option<&'s [PartitionStatus]>,
    ) -> Vec<PartlyRead> {
        read_not_loaded(
            (self.config, self.lineage),
            step,
            |up| self.planned.get(up),
            statuses,
        )
    }
}

/// The windows of a run's own job (a run without `--cascade`, or a
/// cascade's root) that read upstream partitions not loaded, per upstream
/// job whose `statuses` are known: nothing upstream of it is planned in
/// the run (QA: a daily job run over a day 16 of whose hours had failed
/// loaded it from the other 8, unsaid). None for a job that reads none.
pub fn own_partly_read<'s>(
    (config, lineage): (&Config, &Lineage),
    run: &Backfill,
    statuses: impl Fn(&str) -> Option<&'s [PartitionStatus]>,
) -> Vec<PartlyRead> {
    read_not_loaded((config, lineage), run, |_| None, statuses)
}

/// [`Downstream::partly_read`] and [`own_partly_read`]: `step`'s windows
/// over partitions of its upstream jobs neither `planned` in the run nor
/// holding their rows, by their `statuses`.
fn read_not_loaded<'s, 'p>(
    (config, lineage): (&Config, &Lineage),
    step: &Backfill,
    planned: impl Fn(&str) -> Option<&'p BTreeSet<Partition>>,
    statuses: impl Fn(&str) -> Option<&'s [PartitionStatus]>,
) -> Vec<PartlyRead> {
    let mut partly = Vec::new();
    for (up, _) in lineage.upstream(&step.job.name) {
        let (Some(job), Some(states)) = (config.jobs.iter().find(|j| j.name == *up), statuses(up))
        else {
            continue;
        };
        let states: HashMap<Partition, LoadState> =
            states.iter().map(|s| (s.partition, s.state)).collect();
        let planned = planned(up);
        for window in &step.partitions {
            let (mut under, mut not_loaded) = (0, Vec::new());
            for p in read_by(window, job.grain) {
                if planned.is_some_and(|planned| planned.contains(&p)) {
                    under += 1;
                    continue;
                }
                match states.get(&p) {
                    None | Some(LoadState::Future) => {}
                    Some(state) => {
                        under += 1;
                        if !holds_its_rows(*state) {
                            not_loaded.push((p, *state));
                        }
                    }
                }
            }
            if !not_loaded.is_empty() {
                partly.push(PartlyRead {
                    window: *window,
                    upstream: up.clone(),
                    under,
                    not_loaded,
                });
            }
        }
    }
    partly.sort_by(|a, b| (a.window, &a.upstream).cmp(&(b.window, &b.upstream)));
    partly
}

impl PartlyRead {
    /// As a run's events and its dry run's JSON say it.
    pub fn said(&self) -> NotLoadedUpstream {
        NotLoadedUpstream {
            partition: self.window.name(),
            upstream: self.upstream.clone(),
            upstream_partitions: self.under,
            not_loaded: self
                .not_loaded
                .iter()
                .map(|(partition, state)| NotLoaded {
                    partition: partition.name(),
                    state: state.name(),
                })
                .collect(),
        }
    }

    /// `2026-11-02 reads 5 of its 24 ev hours loaded (19 missing:
    /// 2026-11-02T00 .. 2026-11-02T07, 2026-11-02T13 .. 2026-11-02T23)`.
    fn words(&self) -> String {
        let grain = self
            .not_loaded
            .first()
            .map_or("partition", |(p, _)| p.grain.as_str());
        let unit = if self.under == 1 {
            grain.to_string()
        } else {
            format!("{grain}s")
        };
        let counts: Vec<String> = LoadState::ALL
            .iter()
            .filter_map(|state| {
                let n = self.not_loaded.iter().filter(|(_, s)| s == state).count();
                (n > 0).then(|| format!("{n} {}", state.name()))
            })
            .collect();
        format!(
            "{} reads {} of its {} {} {unit} loaded ({}: {})",
            self.window.name(),
            self.under - self.not_loaded.len(),
            self.under,
            self.upstream,
            counts.join(", "),
            runs(self.not_loaded.iter().map(|(p, _)| *p))
        )
    }
}

/// One line for a job's windows that read partitions neither loaded nor
/// in the run: `daily 2026-11-02 reads 5 of its 24 ev hours loaded (19
/// missing: …): loaded as it stands, it goes stale (upstream) once the rest
/// loads`, a few windows named and the rest counted. None when there are
/// none: the plan, the run and the console's dialog say it alike.
pub fn partly_read_line(job: &str, partly: &[PartlyRead]) -> Option<String> {
    let first = partly.first()?;
    let mut windows: Vec<Partition> = partly.iter().map(|p| p.window).collect();
    windows.dedup();
    let named: Vec<String> = partly
        .iter()
        .take_while(|p| windows[..WINDOWS_NAMED.min(windows.len())].contains(&p.window))
        .map(PartlyRead::words)
        .collect();
    let more = windows.len().saturating_sub(WINDOWS_NAMED);
    let grain = first.window.grain.as_str();
    let rest = match more {
        0 => String::new(),
        1 => format!("; and 1 more {grain} reads upstream partitions not loaded"),
        n => format!("; and {n} more {grain}s read upstream partitions not loaded"),
    };
    let fate = if windows.len() == 1 {
        "loaded as it stands, it goes stale (upstream) once the rest loads"
    } else {
        "loaded as they stand, they go stale (upstream) once the rest loads"
    };
    Some(format!("{job} {}{rest}: {fate}", named.join("; ")))
}

/// `A, B .. C, …`: the runs of consecutive partitions of `partitions`
/// (oldest first), the first few named.
fn runs(partitions: impl Iterator<Item = Partition>) -> String {
    let mut spans: Vec<(Partition, Partition)> = Vec::new();
    for p in partitions {
        match spans.last_mut() {
            Some((_, last)) if last.next() == p => *last = p,
            _ => spans.push((p, p)),
        }
    }
    let mut named: Vec<String> = spans
        .iter()
        .take(RUNS_NAMED)
        .map(|(a, b)| {
            if a == b {
                a.name()
            } else {
                format!("{} .. {}", a.name(), b.name())
            }
        })
        .collect();
    if spans.len() > RUNS_NAMED {
        named.push("…".into());
    }
    named.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Selection;
    use crate::lineage::Lineage;
    use crate::partition::{Grain, RangeEnd};

    fn hour(name: &str) -> Partition {
        Partition::parse(Grain::Hour, name, RangeEnd::From).unwrap_or_else(|| panic!("{name}"))
    }

    /// A cascade from five hours of a day plans the day over hours neither
    /// loaded nor in the run: named with their states, as runs; stale and
    /// unmanaged hours hold rows and count as loaded.
    #[test]
    fn a_day_over_hours_neither_loaded_nor_planned_is_named() {
        let config = super::super::tests::hourly_and_daily();
        let lineage = Lineage::of(&config).expect("lineage");
        let now = chrono::NaiveDate::from_ymd_opt(2026, 6, 20)
            .and_then(|d| d.and_hms_opt(3, 0, 0))
            .expect("a time");
        let root = Backfill {
            partitions: crate::partition::range(hour("2026-06-15T08"), hour("2026-06-15T12")),
            ..Backfill::plan_from(&config.jobs[0], &Selection::default(), &[], now, 1, 0)
                .expect("a plan")
        };
        // 2026-06-15: T00..T05 loaded (T03 stale, T04 unmanaged), T06
        // failed, the rest missing; 2026-06-14 all loaded.
        let hours: Vec<PartitionStatus> =
            crate::partition::range(hour("2026-06-14T00"), hour("2026-06-15T23"))
                .into_iter()
                .map(|p| {
                    let state = match p.name().as_str() {
                        "2026-06-15T03" => LoadState::Stale,
                        "2026-06-15T04" => LoadState::Unmanaged,
                        "2026-06-15T06" => LoadState::Failed,
                        n if n < "2026-06-15T06" => LoadState::Loaded,
                        _ => LoadState::Missing,
                    };
                    PartitionStatus::in_state(p, state)
                })
                .collect();
        let mut downstream = Downstream::of(&config, &lineage, &root, now);
        let (job, partitions) = downstream.next_job().expect("the daily job");
        let step = super::super::plan_step(job, &partitions, &[], &root, now)
            .expect("planned")
            .expect("a step");
        downstream.planned(&step);
        let partly = downstream.partly_read(&step, |name| (name == "ev").then_some(&hours[..]));
        assert_eq!(
            partly_read_line("daily", &partly).as_deref(),
            Some(
                "daily 2026-06-15 reads 11 of its 24 ev hours loaded (1 failed, 12 missing: 2026-06-15T06 .. 2026-06-15T07, 2026-06-15T13 .. 2026-06-15T23): loaded as it stands, it goes stale (upstream) once the rest loads"
            )
        );
        // Every hour of the day loaded or in the run: nothing to say.
        let loaded: Vec<PartitionStatus> = hours
            .iter()
            .map(|s| PartitionStatus::in_state(s.partition, LoadState::Loaded))
            .collect();
        assert!(
            downstream
                .partly_read(&step, |_| Some(&loaded[..]))
                .is_empty()
        );
    }

    /// Many windows: a few named, the rest counted; runs beyond a few cut.
    #[test]
    fn a_long_list_is_cut_to_a_few_windows_and_runs() {
        let day = |name: &str| {
            Partition::parse(Grain::Day, name, RangeEnd::From).unwrap_or_else(|| panic!("{name}"))
        };
        let partly: Vec<PartlyRead> = ["2026-06-01", "2026-06-02", "2026-06-03", "2026-06-04"]
            .iter()
            .map(|d| PartlyRead {
                window: day(d),
                upstream: "ev".into(),
                under: 24,
                not_loaded: ["T01", "T03", "T05", "T07"]
                    .iter()
                    .map(|h| (hour(&format!("{d}{h}")), LoadState::Missing))
                    .collect(),
            })
            .collect();
        let line = partly_read_line("daily", &partly).expect("a line");
        assert!(
            line.starts_with(
                "daily 2026-06-01 reads 20 of its 24 ev hours loaded (4 missing: 2026-06-01T01, 2026-06-01T03, 2026-06-01T05, …); 2026-06-02 reads"
            ),
            "{line}"
        );
        assert!(
            line.ends_with(
                "; and 1 more day reads upstream partitions not loaded: loaded as they stand, they go stale (upstream) once the rest loads"
            ),
            "{line}"
        );
        assert!(!line.contains("2026-06-04 reads"), "{line}");
    }
}
