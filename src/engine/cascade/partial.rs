//! The windows a run loads over upstream partitions that are neither loaded
//! nor loaded by the run: a cascade's steps (QA: a cascade from five hours
//! of a day loaded the day from those five, and said nothing of the other
//! nineteen), and a run's own job. The run still loads them, from what is
//! there; they go stale (upstream) once the rest loads, and the plan and
//! the run say so.

use std::collections::{BTreeSet, HashMap};

use super::Downstream;
use crate::config::{Config, Job};
use crate::engine::{Backfill, NotLoaded, NotLoadedUpstream, UpstreamUnread};
use crate::lineage::{Lineage, read_by};
use crate::partition::Partition;
use crate::state::{self, LoadState, PartitionStatus};
use crate::warehouse::Warehouse;

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
    /// Of those, the ones that read partitions further upstream not loaded
    /// either, each as a window of its own job ([`reaching_further`]):
    /// loading them alone would load them from what is not there.
    pub beyond: Vec<PartlyRead>,
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
            (&self.config.jobs, self.lineage),
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
    read_not_loaded((&config.jobs, lineage), run, |_| None, statuses)
}

/// [`Downstream::partly_read`] and [`own_partly_read`]: `step`'s windows
/// over partitions of its upstream jobs neither `planned` in the run nor
/// holding their rows, by their `statuses`.
fn read_not_loaded<'s, 'p>(
    (jobs, lineage): (&[Job], &Lineage),
    step: &Backfill,
    planned: impl Fn(&str) -> Option<&'p BTreeSet<Partition>>,
    statuses: impl Fn(&str) -> Option<&'s [PartitionStatus]>,
) -> Vec<PartlyRead> {
    let mut partly = Vec::new();
    for (up, _) in lineage.upstream(&step.job.name) {
        let (Some(job), Some(states)) = (jobs.iter().find(|j| j.name == *up), statuses(up)) else {
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
                    beyond: Vec::new(),
                });
            }
        }
    }
    partly.sort_by(|a, b| (a.window, &a.upstream).cmp(&(b.window, &b.upstream)));
    partly
}

/// Says which job's states a read waits on past [`state::SLOW_READ`] (the
/// command line says so; the engine, which knows no terminal, does not).
pub type NoticeSlow<'a> = &'a (dyn Fn(&Job) + Sync);

/// What [`upstream_states`] read: the states of each upstream job it could
/// read, and those it could not, with why.
#[derive(Debug, Default)]
pub struct UpstreamStates {
    pub read: HashMap<String, Vec<PartitionStatus>>,
    pub unread: Vec<UpstreamUnread>,
}

/// The states of the jobs `step`'s job reads that `to_read` names, over
/// the partitions its windows read, by job: what the check of its windows
/// ([`own_partly_read`], [`Downstream::partly_read`]) reads. An upstream
/// job whose states cannot be read (its target dropped) is named in
/// `unread` with why: what it holds is not known, and the run says so
/// (QA: it was left out unsaid, and a job naming it only in `depends_on`
/// loaded without a word).
pub async fn upstream_states(
    warehouse: &Warehouse,
    (jobs, lineage): (&[Job], &Lineage),
    step: &Backfill,
    to_read: impl Fn(&str) -> bool,
    (now, notice): (chrono::NaiveDateTime, NoticeSlow<'_>),
) -> UpstreamStates {
    let mut found = UpstreamStates::default();
    let (Some(first), Some(last)) = (step.partitions.first(), step.partitions.last()) else {
        return found;
    };
    for (up, _) in lineage.upstream(&step.job.name) {
        let Some(job) = jobs.iter().find(|j| j.name == *up).filter(|_| to_read(up)) else {
            continue;
        };
        let scope = state::StatusScope {
            from: read_by(first, job.grain).first().copied(),
            to: read_by(last, job.grain).last().copied(),
            ..Default::default()
        };
        let nothing_running = Default::default();
        let states = state::job_status_scoped(warehouse, job, now, &nothing_running, &scope);
        let states = state::noticing_slow(warehouse.answering(states), || notice(job)).await;
        match states {
            Ok(states) => {
                found.read.insert(up.clone(), states);
            }
            Err(e) => found.unread.push(UpstreamUnread {
                upstream: up.clone(),
                error: crate::terminal_text::visible_line(&e.to_string()),
            }),
        }
    }
    found
}

/// [`own_partly_read`] of `run`, each upstream job's states read from the
/// warehouse ([`upstream_states`]), and walked further up
/// ([`reaching_further`]): the one check of a run's own windows and of the
/// windows a cascade adds to a step as it runs. With it, the upstream jobs
/// whose states could not be read.
pub async fn read_partly_read(
    warehouse: &Warehouse,
    (jobs, lineage): (&[Job], &Lineage),
    run: &Backfill,
    (now, notice): (chrono::NaiveDateTime, NoticeSlow<'_>),
) -> (Vec<PartlyRead>, Vec<UpstreamUnread>) {
    let found = upstream_states(warehouse, (jobs, lineage), run, |_| true, (now, notice)).await;
    let partly = read_not_loaded(
        (jobs, lineage),
        run,
        |_| None,
        |name| found.read.get(name).map(Vec::as_slice),
    );
    let partly = reaching_further(warehouse, (jobs, lineage), partly, (now, notice)).await;
    (partly, found.unread)
}

/// `partly`, each given the check of its upstream partitions not loaded as
/// windows of their own job ([`PartlyRead::beyond`]), and so on up: the
/// command that fills the gap loads from the highest job that lacks rows
/// (QA: it named one level up, and loaded a day from hours not loaded).
/// Those running elsewhere are left to that run.
pub fn reaching_further<'a>(
    warehouse: &'a Warehouse,
    (jobs, lineage): (&'a [Job], &'a Lineage),
    mut partly: Vec<PartlyRead>,
    (now, notice): (chrono::NaiveDateTime, NoticeSlow<'a>),
) -> Further<'a> {
    // Boxed, as the walk recurses; Send, as a console's run is spawned.
    Box::pin(async move {
        for p in &mut partly {
            let Some(job) = jobs.iter().find(|j| j.name == p.upstream) else {
                continue;
            };
            if lineage.upstream(&job.name).is_empty() {
                continue;
            }
            let mut windows: Vec<Partition> = p
                .not_loaded
                .iter()
                .filter(|(_, state)| *state != LoadState::Running)
                .map(|(q, _)| *q)
                .collect();
            windows.sort();
            windows.dedup();
            if windows.is_empty() {
                continue;
            }
            let upstream = Backfill::of(job.clone(), windows);
            p.beyond = read_partly_read(warehouse, (jobs, lineage), &upstream, (now, notice))
                .await
                .0;
        }
        partly
    })
}

/// A partition not loaded, with its state.
pub type NotLoadedHere = (Partition, LoadState);

/// What [`reaching_further`] gives.
pub type Further<'a> = std::pin::Pin<Box<dyn Future<Output = Vec<PartlyRead>> + Send + 'a>>;

/// What loads the partitions `partly` names not loaded, so that their
/// windows read them whole: per job, those to load with their states,
/// the jobs further up first. A partition that reads partitions not
/// loaded further up ([`PartlyRead::beyond`]) is loaded by loading those,
/// cascading; one running elsewhere is left to that run.
pub fn fill(partly: &[PartlyRead]) -> Vec<(String, Vec<NotLoadedHere>)> {
    fn walk(p: &PartlyRead, depth: usize, out: &mut Vec<(usize, String, Partition, LoadState)>) {
        for &(q, state) in &p.not_loaded {
            if state == LoadState::Running {
                continue;
            }
            let before = out.len();
            for b in p.beyond.iter().filter(|b| b.window == q) {
                walk(b, depth + 1, out);
            }
            // Nothing to load further up (what it reads there is running
            // elsewhere): it is loaded itself.
            if out.len() == before {
                out.push((depth, p.upstream.clone(), q, state));
            }
        }
    }
    let mut found = Vec::new();
    for p in partly {
        walk(p, 0, &mut found);
    }
    let mut jobs: Vec<(usize, String, Vec<NotLoadedHere>)> = Vec::new();
    for (depth, job, q, state) in found {
        match jobs.iter_mut().find(|(_, j, _)| *j == job) {
            Some((d, _, qs)) => {
                *d = (*d).max(depth);
                qs.push((q, state));
            }
            None => jobs.push((depth, job, vec![(q, state)])),
        }
    }
    // Highest first: a cascade from there loads what lies below it.
    jobs.sort_by_key(|(depth, _, _)| std::cmp::Reverse(*depth));
    jobs.into_iter()
        .map(|(_, job, mut qs)| {
            qs.sort();
            qs.dedup_by_key(|(q, _)| *q);
            (job, qs)
        })
        .collect()
}

/// `daily 2026-11-01 reads ev hours not loaded either`, per upstream
/// partition of `partly` whose own upstream lacks rows, a few named; none
/// when none does: said before the command that loads from there.
pub fn further_line(partly: &[PartlyRead]) -> Option<String> {
    fn walk(p: &PartlyRead, out: &mut Vec<(String, String, String, Vec<Partition>)>) {
        for b in &p.beyond {
            let grain = b
                .not_loaded
                .first()
                .map_or("partition", |(q, _)| q.grain.as_str());
            let key = (p.upstream.clone(), b.upstream.clone(), grain.to_string());
            match out
                .iter_mut()
                .find(|(u, g, n, _)| (u, g, n) == (&key.0, &key.1, &key.2))
            {
                Some((_, _, _, windows)) => windows.push(b.window),
                None => out.push((key.0, key.1, key.2, vec![b.window])),
            }
            walk(b, out);
        }
    }
    let mut found = Vec::new();
    for p in partly {
        walk(p, &mut found);
    }
    let said: Vec<String> = found
        .into_iter()
        .map(|(job, upstream, grain, mut windows)| {
            windows.sort();
            windows.dedup();
            let read = if windows.len() == 1 { "reads" } else { "read" };
            format!(
                "{job} {} {read} {upstream} {grain}s not loaded either",
                runs(windows.into_iter())
            )
        })
        .collect();
    (!said.is_empty()).then(|| said.join("; "))
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
                beyond: Vec::new(),
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
