//! `idem verify`: the idempotency proof. The partition is loaded twice in one
//! transaction (the second run on top of the first) and once more in a later
//! transaction, at least [`CLOCK_TICK`] after the first ended; the rows
//! after each must be the same. Everything rolls back.

use std::collections::VecDeque;
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Warehouse, WarehouseError};
use crate::config::Job;
use crate::partition::Partition;

type Row = Vec<Option<String>>;
type Rows = Vec<Row>;

#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    pub job: String,
    pub partition: String,
    /// Rows after run 1, run 2 (on top of run 1) and run 3 (a later
    /// transaction, where now() and friends move on).
    pub rows: Vec<usize>,
    pub difference: Option<Difference>,
    /// How long after runs 1–2 ended run 3 began: [`CLOCK_TICK`] or more.
    pub run_3_after: Duration,
}

impl Verification {
    pub fn is_idempotent(&self) -> bool {
        self.difference.is_none()
    }

    /// Every run wrote no rows: alike, but the SQL's `now()` or `random()`
    /// had no row to show up in, so the proof shows nothing of it.
    pub fn wrote_nothing(&self) -> bool {
        self.difference.is_none() && self.rows.iter().all(|&n| n == 0)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub first: &'static str,
    pub second: &'static str,
    pub only_in_first: usize,
    pub only_in_second: usize,
    /// The target's columns, in the table's order: the samples' order.
    pub columns: Vec<String>,
    /// A few of the rows on each side, their values joined by ` | `.
    pub sample_first: Vec<String>,
    pub sample_second: Vec<String>,
    /// Where as many rows differ on each side: the columns whose values
    /// differ between them, in the table's order (the rest are alike).
    pub columns_differing: Vec<String>,
}

impl Difference {
    /// Why the runs differ, in the words of what differs: the columns a
    /// value changing from run to run is written to, or the number of rows.
    pub fn why(&self) -> String {
        let changing = "a value that changes on every run is written there: random(), the clock (now(), a column's DEFAULT now()), a sequence or a trigger";
        match self.columns_differing.as_slice() {
            [] => "they hold different rows, not the same rows with other values: the SQL picks different rows on each run (LIMIT over ties, a sample, the clock), or something else writes rows there (a trigger)".to_string(),
            [one] => format!("they differ in column {one} alone: {changing}"),
            many => format!("they differ in columns {}: {changing}", many.join(", ")),
        }
    }
}

const SAMPLE: usize = 5;

/// How long after runs 1–2 end run 3 begins at the earliest: past one
/// whole second, so that a clock read at second precision (MariaDB's
/// `now()`, a `DATETIME DEFAULT CURRENT_TIMESTAMP` column, SQLite's
/// `datetime('now')`) reads another value in run 3 than anywhere in run 1,
/// however late in run 1 it was read. QA: such a job, run three times
/// within the same second, was proved idempotent.
pub const CLOCK_TICK: Duration = Duration::from_millis(1100);

impl Warehouse {
    /// The proof of one partition.
    pub async fn verify_partition(
        &self,
        job: &Job,
        partition: &Partition,
        cancel: &CancellationToken,
    ) -> Result<Verification, WarehouseError> {
        let mut proofs = self.verify_partitions(job, std::slice::from_ref(partition), cancel);
        match proofs.next().await {
            Some((_, proof)) => proof,
            None => Err(WarehouseError::Job("internal: no proof".into())),
        }
    }

    /// The proofs of `partitions`, in their order, sharing the wait for the
    /// clock: see [`Proofs`].
    pub fn verify_partitions<'a>(
        &'a self,
        job: &'a Job,
        partitions: &'a [Partition],
        cancel: &'a CancellationToken,
    ) -> Proofs<'a> {
        Proofs {
            warehouse: self,
            job,
            cancel,
            to_start: partitions.iter(),
            waiting: VecDeque::new(),
            failed: None,
            waited: Duration::ZERO,
        }
    }
}

/// The proofs of a job's partitions, one by one in their order. Runs 1–2
/// of the partitions that follow are done while the tick before an
/// earlier one's run 3 passes, so that a day of an hourly job waits about
/// one [`CLOCK_TICK`] in all, not one for each hour; each partition's run
/// 3 still begins a tick or more after its own runs 1–2 ended. Every run
/// rolls back before the next begins: stopping at any point (a cancel, an
/// error, the proofs dropped) leaves nothing behind. A server that stops
/// answering ends them, as it ends a read ([`Warehouse::answering`]): a
/// proof has no commit whose outcome would be worth waiting for.
pub struct Proofs<'a> {
    warehouse: &'a Warehouse,
    job: &'a Job,
    cancel: &'a CancellationToken,
    to_start: std::slice::Iter<'a, Partition>,
    /// Partitions whose runs 1–2 are done, oldest first, each waiting for
    /// its tick to pass before its run 3.
    waiting: VecDeque<Waiting>,
    /// A partition whose runs 1–2 failed: said once those before it are
    /// proved, and no partition after it is started.
    failed: Option<(Partition, WarehouseError)>,
    waited: Duration,
}

struct Waiting {
    partition: Partition,
    runs: Vec<Rows>,
    ended: Instant,
}

impl Proofs<'_> {
    /// The next partition's proof; `None` once every partition is proved
    /// or after an error, which ends the proofs. A cancel is answered at
    /// once (`Err(Cancelled)`).
    pub async fn next(&mut self) -> Option<(Partition, Result<Verification, WarehouseError>)> {
        let (partition, proof) = self.next_proof().await?;
        if proof.is_err() {
            self.to_start = [].iter();
            self.waiting.clear();
        }
        Some((partition, proof))
    }

    async fn next_proof(&mut self) -> Option<(Partition, Result<Verification, WarehouseError>)> {
        loop {
            let nothing_to_start = self.failed.is_some() || self.to_start.len() == 0;
            let due = |w: &Waiting| w.ended + CLOCK_TICK <= Instant::now();
            if self
                .waiting
                .front()
                .is_some_and(|w| nothing_to_start || due(w))
                && let Some(w) = self.waiting.pop_front()
            {
                let partition = w.partition;
                return Some((partition, self.run_3(w).await));
            }
            if let Some((partition, e)) = self.failed.take() {
                return Some((partition, Err(e)));
            }
            let partition = *self.to_start.next()?;
            let (warehouse, job) = (self.warehouse, self.job);
            // Watched as a read throughout (`rows_after_runs`).
            match warehouse
                .rows_after_runs(job, &partition, 2, self.cancel)
                .await
            {
                Ok(runs) => self.waiting.push_back(Waiting {
                    partition,
                    runs,
                    ended: Instant::now(),
                }),
                Err(WarehouseError::Cancelled) => {
                    return Some((partition, Err(WarehouseError::Cancelled)));
                }
                Err(e) => self.failed = Some((partition, e)),
            }
        }
    }

    /// How long the proofs so far slept for the clock, in all.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Run 3 of a partition, once its tick has passed, and the proof.
    async fn run_3(&mut self, w: Waiting) -> Result<Verification, WarehouseError> {
        let (warehouse, job) = (self.warehouse, self.job);
        let due = w.ended + CLOCK_TICK;
        let asleep = Instant::now();
        if due > asleep {
            tokio::select! {
                () = tokio::time::sleep_until(due) => {}
                () = self.cancel.cancelled() => return Err(WarehouseError::Cancelled),
            }
            self.waited += Instant::now() - asleep;
        }
        let run_3_after = Instant::now() - w.ended;
        let cancel = self.cancel;
        let run_3 = warehouse
            .rows_after_runs(job, &w.partition, 1, cancel)
            .await?;
        let columns = warehouse.answering(warehouse.columns(&job.target)).await?;
        let mut runs = w.runs;
        runs.extend(run_3);
        let rows = runs.iter().map(Vec::len).collect();
        let columns = Columns::of(&columns);
        let difference = compare(
            &runs[0],
            &runs[1],
            ("run 1", "run 2 (on top of run 1)"),
            &columns,
        )
        .or_else(|| {
            compare(
                &runs[0],
                &runs[2],
                ("run 1", "run 3 (a later transaction)"),
                &columns,
            )
        });
        Ok(Verification {
            job: job.name.clone(),
            partition: w.partition.name(),
            rows,
            difference,
            run_3_after,
        })
    }
}

/// The target's columns as the rows are shown: the rows are read with
/// their columns in name order (as fingerprints read them), and shown in
/// the table's order, under its names.
struct Columns {
    names: Vec<String>,
    /// For each column of the table, where its value is in a row read.
    place: Vec<usize>,
}

impl Columns {
    fn of(columns: &[super::Column]) -> Columns {
        let mut by_name: Vec<usize> = (0..columns.len()).collect();
        by_name.sort_by(|&a, &b| columns[a].name.cmp(&columns[b].name));
        let mut place = vec![0; columns.len()];
        for (read_at, &column) in by_name.iter().enumerate() {
            place[column] = read_at;
        }
        Columns {
            names: columns.iter().map(|c| c.name.to_string()).collect(),
            place,
        }
    }

    /// The columns, in the table's order, whose values as a whole differ
    /// between two sets of rows (none where a row was read with another
    /// number of columns: the table changed under the proof).
    fn differing(&self, a: &[&Row], b: &[&Row]) -> Vec<String> {
        let fits = |rows: &[&Row]| rows.iter().all(|r| r.len() == self.place.len());
        if !fits(a) || !fits(b) {
            return Vec::new();
        }
        fn values<'a>(rows: &[&'a Row], at: usize) -> Vec<&'a Option<String>> {
            let mut values: Vec<&Option<String>> = rows.iter().map(|r| &r[at]).collect();
            values.sort();
            values
        }
        self.place
            .iter()
            .zip(&self.names)
            .filter(|&(&at, _)| values(a, at) != values(b, at))
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// A row's values in the table's order (as read, should the table have
    /// changed since).
    fn show(&self, row: &Row) -> String {
        let value = |v: &Option<String>| v.as_deref().map_or("NULL".into(), shown);
        let values: Vec<String> = if row.len() == self.place.len() {
            self.place.iter().map(|&i| value(&row[i])).collect()
        } else {
            row.iter().map(value).collect()
        };
        values.join(" | ")
    }
}

/// Characters of a value shown before the rest is only counted.
const SHOWN_CHARS: usize = 200;

/// A value as one line of a terminal: its control characters (a newline
/// would cut the row, an escape would restyle the terminal) written as
/// Rust writes them (`\n`, `\u{1b}`), and a long value cut short with the
/// count of what was left out.
fn shown(value: &str) -> String {
    let mut out = String::new();
    let mut chars = value.chars();
    for c in chars.by_ref().take(SHOWN_CHARS) {
        match c {
            c if c.is_control() => out.extend(c.escape_debug()),
            c => out.push(c),
        }
    }
    let more = chars.count();
    if more > 0 {
        out.push_str(&format!("… ({more} more characters)"));
    }
    out
}

fn compare(
    a: &Rows,
    b: &Rows,
    (first, second): (&'static str, &'static str),
    columns: &Columns,
) -> Option<Difference> {
    let (only_a, only_b) = multiset_difference(a, b);
    if only_a.is_empty() && only_b.is_empty() {
        return None;
    }
    let show = |rows: &[&Row]| -> Vec<String> {
        rows.iter().take(SAMPLE).map(|r| columns.show(r)).collect()
    };
    let columns_differing = if only_a.len() == only_b.len() {
        columns.differing(&only_a, &only_b)
    } else {
        Vec::new()
    };
    Some(Difference {
        first,
        second,
        only_in_first: only_a.len(),
        only_in_second: only_b.len(),
        columns: columns.names.clone(),
        sample_first: show(&only_a),
        sample_second: show(&only_b),
        columns_differing,
    })
}

/// Rows of `a` not matched in `b` and the other way round, counting duplicates.
fn multiset_difference<'a>(a: &'a Rows, b: &'a Rows) -> (Vec<&'a Row>, Vec<&'a Row>) {
    let mut a: Vec<_> = a.iter().collect();
    let mut b: Vec<_> = b.iter().collect();
    a.sort();
    b.sort();
    let (mut i, mut j) = (0, 0);
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(b[j]) {
            std::cmp::Ordering::Equal => {
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => {
                only_a.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                only_b.push(b[j]);
                j += 1;
            }
        }
    }
    only_a.extend(&a[i..]);
    only_b.extend(&b[j..]);
    (only_a, only_b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[&str]) -> Rows {
        v.iter().map(|s| vec![Some(s.to_string())]).collect()
    }

    #[test]
    fn a_shown_value_stays_on_its_line_and_short() {
        assert_eq!(
            shown("a\tb\nc\u{1b}[31m\0é😀"),
            "a\\tb\\nc\\u{1b}[31m\\0é😀"
        );
        let long = "x".repeat(SHOWN_CHARS + 7);
        assert_eq!(
            shown(&long),
            format!("{}… (7 more characters)", "x".repeat(SHOWN_CHARS))
        );
        assert_eq!(shown(&long[..SHOWN_CHARS]), long[..SHOWN_CHARS]);
        let columns = Columns {
            names: vec!["a".into(), "b".into()],
            place: vec![0, 1],
        };
        assert_eq!(
            columns.show(&vec![None, Some("x\ny".into())]),
            "NULL | x\\ny"
        );
    }

    #[test]
    fn the_why_names_the_columns_that_differ_or_the_rows() {
        let columns = Columns {
            names: vec!["id".into(), "stamp".into(), "dt".into()],
            place: vec![1, 2, 0],
        };
        let row = |id: &str, stamp: Option<&str>| -> Row {
            vec![
                Some("2026-01-02".into()),
                Some(id.into()),
                stamp.map(Into::into),
            ]
        };
        let run_1 = vec![row("1", Some("10:00:00")), row("2", None)];
        let run_3 = vec![row("1", Some("10:00:01")), row("2", None)];
        let d = compare(&run_1, &run_3, ("run 1", "run 3"), &columns).unwrap();
        assert_eq!(d.columns_differing, ["stamp"]);
        assert!(
            d.why().starts_with("they differ in column stamp alone: "),
            "{}",
            d.why()
        );
        // A NULL in every column but the window's is a value like any other.
        let nulls = vec![vec![Some("2026-01-02".into()), None, None]; 2];
        assert!(compare(&nulls, &nulls, ("1", "2"), &columns).is_none());
        // A row more (a LIMIT over ties, a trigger's insert): rows, not values.
        let more = vec![row("1", Some("10:00:00")), row("2", None), row("2", None)];
        let d = compare(&run_1, &more, ("run 1", "run 2"), &columns).unwrap();
        assert!(d.columns_differing.is_empty(), "{d:?}");
        assert!(
            d.why().starts_with("they hold different rows"),
            "{}",
            d.why()
        );
    }

    #[test]
    fn duplicates_count_in_the_difference() {
        let (a, b) = (rows(&["x", "x", "y"]), rows(&["y", "x"]));
        let (only_a, only_b) = multiset_difference(&a, &b);
        assert_eq!((only_a.len(), only_b.len()), (1, 0));
        let columns = Columns {
            names: vec!["x".into()],
            place: vec![0],
        };
        assert!(compare(&a, &a, ("1", "2"), &columns).is_none());
    }
}
