//! The confirm dialog's source count: before a replace run, what the job's
//! SQL gives each chosen partition now, so that the shrinks the guard will
//! refuse (a late source) are shown before anything runs, as
//! `idem run --dry-run` shows them.

use ratatui::text::{Line, Span};

use crate::engine::Backfill;
use crate::numbers::{n_partitions, n_rows};
use crate::tui::job::JobView;
use crate::tui::keymap;
use crate::tui::keys::{Action, Scope};
use crate::tui::theme::Theme;
use crate::tui::widgets::thousands;

/// Where the dialog's count of the source stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceCount {
    /// Not asked: a merge job (nothing is deleted), or no connection.
    NotAsked,
    /// The background request of this id counts it.
    Counting(usize),
    /// Counted: the job's partitions carry their source counts; the rows
    /// the source gives with a NULL partition column, where told apart.
    Counted(Option<i64>),
    Failed(String),
}

/// The confirm dialog's key that allows shrinking.
fn shrink_key() -> &'static str {
    keymap::key(Scope::Confirm, Action::AllowShrink)
}

/// At most this many shrinking partitions are named; the rest are counted.
const NAMED: usize = 4;

/// The dialog's lines on the source and the shrink guard, for the
/// partitions `chosen` (indices into `job`) that `backfill` will run.
pub fn lines<'a>(
    source: &SourceCount,
    backfill: Option<&Backfill>,
    job: &JobView,
    chosen: &[usize],
    t: &Theme,
    label: impl Fn(&str) -> Span<'a>,
) -> Vec<Line<'a>> {
    let Some(backfill) = backfill else {
        return Vec::new();
    };
    let allowed = backfill.allow_shrink;
    let line = |name: &str, text: String, style: &str| {
        Line::from(vec![label(name), Span::styled(text, t.style(style))])
    };
    // Until the count says which, the allowance in general.
    let allowance = || {
        allowed.then(|| {
            line(
                "shrink",
                format!(
                    "allowed: partitions may shrink past the shrink guard ({} undoes)",
                    shrink_key()
                ),
                "warning",
            )
        })
    };
    match source {
        SourceCount::NotAsked => allowance().into_iter().collect(),
        SourceCount::Counting(_) => std::iter::once(line(
            "source",
            "counting what the job's SQL gives these partitions now…".into(),
            "muted",
        ))
        .chain(allowance())
        .collect(),
        SourceCount::Failed(e) => std::iter::once(line(
            "source",
            format!("could not count the source ({e}); the shrink guard still checks each partition as it runs"),
            "warning",
        ))
        .chain(allowance())
        .collect(),
        SourceCount::Counted(nulls) => {
            // Rows no window holds: every load over them fails.
            let nulls_line = crate::state::source_null_partition_note(&job.job, *nulls)
                .map(|note| line("nulls", note, "warning"));
            let statuses: Vec<_> = chosen.iter().filter_map(|i| job.status_at(*i)).collect();
            let total: i64 = statuses.iter().filter_map(|s| s.rows_source).sum();
            let shrinking: Vec<_> = statuses
                .iter()
                .filter(|s| backfill.shrinks_past_guard(s))
                .collect();
            let source = line(
                "source",
                match statuses.len() {
                    1 => format!("{} for this partition now", n_rows(total)),
                    n => format!(
                        "{} for these {} partitions now",
                        n_rows(total),
                        thousands(n as i64)
                    ),
                },
                "text",
            );
            // Partitions a late source would leave loaded empty, which the
            // shrink guard (for partitions with rows) does not stop.
            let empty: Vec<String> = statuses
                .iter()
                .filter(|s| backfill.loads_empty(s))
                .map(|s| s.partition.name())
                .collect();
            let empty_lines = (!empty.is_empty()).then(|| {
                let mut named: Vec<String> = empty.iter().take(NAMED).cloned().collect();
                if empty.len() > NAMED {
                    named.push(format!("{} more", empty.len() - NAMED));
                }
                [
                    line(
                        "empty",
                        format!(
                            "{} would load empty, then count as loaded: no source rows yet (late?)",
                            n_partitions(empty.len() as i64),
                        ),
                        "warning",
                    ),
                    line("", named.join(" · "), "warning"),
                ]
            });
            if shrinking.is_empty() {
                let none = line(
                    "shrink",
                    "none: no partition shrinks past the shrink guard".into(),
                    "ok",
                );
                return [source, none]
                    .into_iter()
                    .chain(nulls_line)
                    .chain(empty_lines.into_iter().flatten())
                    .collect();
            }
            let mut named: Vec<String> = shrinking
                .iter()
                .take(NAMED)
                .map(|s| {
                    format!(
                        "{} {} → {}",
                        s.partition.name(),
                        thousands(s.rows_now.unwrap_or(0)),
                        thousands(s.rows_source.unwrap_or(0))
                    )
                })
                .collect();
            if shrinking.len() > NAMED {
                named.push(format!("{} more", shrinking.len() - NAMED));
            }
            let n = n_partitions(shrinking.len() as i64);
            let text = if allowed {
                format!("allowed: {n} will shrink ({} undoes)", shrink_key())
            } else {
                format!(
                    "{n} would be refused: the source looks incomplete ({} allows)",
                    shrink_key()
                )
            };
            [
                source,
                line("shrink", text, "warning"),
                line("", named.join(" · "), "warning"),
            ]
            .into_iter()
            .chain(nulls_line)
            .chain(empty_lines.into_iter().flatten())
            .collect()
        }
    }
}
