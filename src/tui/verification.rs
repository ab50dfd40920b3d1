//! The detail pane's verification: the latest one asked with `V`, and the
//! lines that say what it found, in the words `idem verify` prints.

use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::widgets::{first_line, thousands};
use crate::partition::Partition;
use crate::warehouse::Verification;

/// The latest verification: of one job's partition, running or ended.
#[derive(Debug, Clone)]
pub struct VerifyView {
    pub id: usize,
    pub job: String,
    pub partition: Partition,
    /// `None` while verifying.
    pub result: Option<Result<Verification, String>>,
}

/// The short name of a run in a verification ("run 2 (on top of run 1)"
/// reads "run 2").
fn run_name(label: &str) -> &str {
    label.split(" (").next().unwrap_or(label)
}

/// What the latest verification of the cursor's partition found.
pub fn verification_lines(t: &Theme, v: &VerifyView) -> Vec<Line<'static>> {
    let muted = t.style("muted");
    let label = Span::styled("verify ", muted);
    match &v.result {
        None => vec![Line::from(vec![
            label,
            Span::styled(
                "verifying… (loads it twice, then rolls back)",
                t.style("running"),
            ),
        ])],
        Some(Err(e)) => vec![Line::from(vec![
            label,
            Span::styled(format!("error: {}", first_line(e)), t.style("error")),
        ])],
        Some(Ok(r)) => match &r.difference {
            None if r.wrote_nothing() => vec![Line::from(vec![
                label,
                Span::styled("not proved", t.style("warning")),
                Span::styled(
                    ": no rows on any run (its source has none here), which shows nothing of its SQL; rolled back",
                    t.style("text"),
                ),
            ])],
            None => vec![Line::from(vec![
                label,
                Span::styled("idempotent", t.style("ok")),
                Span::styled(
                    format!(
                        ": same {} on every run; rolled back",
                        crate::numbers::n_rows(r.rows.first().copied().unwrap_or(0) as i64)
                    ),
                    t.style("text"),
                ),
            ])],
            Some(d) => {
                let (a, b) = (run_name(d.first), run_name(d.second));
                let mut lines = vec![Line::from(vec![
                    label,
                    Span::styled("NOT idempotent", t.style("error")),
                    Span::styled(
                        format!(
                            ": {} and {} differ: {} only in {a}, {} only in {b}; rolled back",
                            d.first,
                            d.second,
                            crate::numbers::n_rows(d.only_in_first as i64),
                            thousands(d.only_in_second as i64)
                        ),
                        t.style("text"),
                    ),
                ])];
                // Why, as `idem verify` says it: the columns that differ
                // and what usually writes such values, or that rows do.
                lines.push(Line::from(Span::styled(d.why(), t.style("text"))));
                for (name, sample) in [(a, &d.sample_first), (b, &d.sample_second)] {
                    for row in sample.iter().take(2) {
                        lines.push(Line::from(vec![
                            Span::styled(format!("  only in {name}: "), muted),
                            Span::styled(row.clone(), t.style("text")),
                        ]));
                    }
                }
                lines
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::warehouse::{CLOCK_TICK, Difference};

    /// Runs that differ say why, as `idem verify` does: the column a value
    /// changing on every run is written to, and what usually writes it, on
    /// a line of its own under the verdict.
    #[test]
    fn runs_that_differ_say_why_as_the_cli_does() {
        let difference = Difference {
            first: "run 1",
            second: "run 3 (a later transaction)",
            only_in_first: 2,
            only_in_second: 2,
            columns: vec!["id".into(), "created".into()],
            sample_first: vec!["1 | 2026-06-10 10:00:00".into()],
            sample_second: vec!["1 | 2026-06-10 10:00:01".into()],
            columns_differing: vec!["created".into()],
        };
        let why = difference.why();
        assert!(
            why.starts_with("they differ in column created alone: "),
            "{why}"
        );
        let view = VerifyView {
            id: 1,
            job: "fct_orders".into(),
            partition: Partition::parse(
                crate::partition::Grain::Day,
                "2026-06-10",
                crate::partition::RangeEnd::From,
            )
            .unwrap(),
            result: Some(Ok(Verification {
                job: "fct_orders".into(),
                partition: "2026-06-10".into(),
                rows: vec![2, 2, 2],
                difference: Some(difference),
                run_3_after: CLOCK_TICK,
            })),
        };
        let text: Vec<String> = verification_lines(&Theme::default_theme(), &view)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(text[0].starts_with("verify NOT idempotent: "), "{text:#?}");
        assert_eq!(text[1], why, "{text:#?}");
        assert_eq!(text[2], "  only in run 1: 1 | 2026-06-10 10:00:00");
    }
}
