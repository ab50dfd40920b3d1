//! The detail pane: everything known about the cursor's partition, the
//! story of its row count and its latest verification included.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::chart::band;
use super::cut;
use super::job::JobView;
use super::keymap;
use super::keys::{Action, Scope};
use super::loads::Loads;
use super::msg::{Effect, VerifyRequest};
use super::reconcile::source_line;
use super::theme::Theme;
use super::verification::{VerifyView, verification_lines};
use super::widgets::{block, controls_shown, duration_text, first_line, pct, signed, thousands};
use crate::numbers::count;
use crate::partition::Grain;
use crate::state::{LoadState, Seasonality};
use crate::warehouse::Fingerprint;
use crate::warehouse::Verification;

/// The detail pane's own state: the latest verification (another replaces
/// it) and the last loads of the cursor's partition.
#[derive(Debug, Clone, Default)]
pub struct Detail {
    verification: Option<VerifyView>,
    pub loads: Loads,
}

impl Detail {
    /// Starts proving the cursor's partition of `job` idempotent: the effect
    /// that runs it, or why it cannot be verified now.
    /// A window still open may be proved, as `idem verify` proves it (it
    /// all rolls back); one not begun has nothing to prove.
    pub fn verify(
        &mut self,
        job: &JobView,
        connected: bool,
        id: usize,
        now: chrono::NaiveDateTime,
    ) -> Result<Effect, String> {
        let partition = job
            .partitions
            .get(job.cursor)
            .copied()
            .ok_or_else(|| "no partition under the cursor".to_string())?;
        let refuse = match job.state_at(job.cursor) {
            _ if partition.start > now => Some("has not begun yet: there is nothing to prove"),
            Some(LoadState::Running) => Some("is running; verify it when the run ends"),
            _ if !connected => Some("cannot be verified: not connected to the warehouse"),
            _ => None,
        };
        if let Some(why) = refuse {
            return Err(format!("{} {why}", partition.name()));
        }
        self.verification = Some(VerifyView {
            id,
            job: job.job.name.clone(),
            partition,
            result: None,
        });
        Ok(Effect::Verify(Box::new(VerifyRequest {
            id,
            job: job.job.clone(),
            partition,
        })))
    }

    /// A verification ended; answers with the status-bar note, unless the
    /// answer is of a verification since replaced.
    pub fn verified(
        &mut self,
        id: usize,
        result: Result<Verification, String>,
    ) -> Option<(bool, String)> {
        let v = self.verification.as_mut().filter(|v| v.id == id)?;
        let what = format!("{} {}", v.job, v.partition.name());
        let note = match &result {
            Ok(r) if r.wrote_nothing() => (
                false,
                format!("{what}: not proved, no rows on any run; rolled back"),
            ),
            Ok(r) if r.is_idempotent() => (false, format!("{what}: idempotent; rolled back")),
            Ok(_) => (true, format!("{what}: NOT idempotent; rolled back")),
            Err(e) => (true, format!("{what}: verify failed: {e}")),
        };
        v.result = Some(result);
        Some(note)
    }

    /// The verification of the cursor's partition, if it is the latest one.
    pub fn for_cursor(&self, job: &JobView) -> Option<&VerifyView> {
        let p = job.partitions.get(job.cursor)?;
        self.verification
            .as_ref()
            .filter(|v| v.job == job.job.name && v.partition == *p)
    }

    /// Draws the detail box of the cursor's partition of `job`.
    /// The cursor's partition; `upstream` tells what changed upstream of a
    /// stale (upstream) one.
    pub fn render(
        &self,
        frame: &mut Frame,
        r: Rect,
        theme: &Theme,
        job: &JobView,
        upstream: Vec<Line<'static>>,
    ) {
        let t = theme;
        let i = job.cursor;
        let name = job.partitions.get(i).map(|p| p.name()).unwrap_or_default();
        let mut title = format!(" {name} ");
        if !job.selected.is_empty() {
            title.push_str(&format!(
                "· {} selected{} ",
                job.selected.len(),
                if job.anchor.is_some() { " (range)" } else { "" }
            ));
        }
        let b = block(t, title, false);
        let area = b.inner(r);
        frame.render_widget(b, r);
        let Some(s) = job.status_at(i) else {
            // The calendar above says why the states could not be read.
            let note = if job.error.is_some() && !job.loading {
                " no state: the job's states could not be read"
            } else {
                " loading…"
            };
            frame.render_widget(
                Paragraph::new(controls_shown(Span::styled(note, t.style("muted")))),
                area,
            );
            return;
        };
        let state = job.state_at(i).unwrap_or(s.state);
        let muted = t.style("muted");
        let mut first = vec![
            Span::styled(
                format!(
                    "{} {}{}",
                    job.glyph_at(i),
                    state.name(),
                    if job.glyph_at(i) == LoadState::UPSTREAM_GLYPH {
                        " (upstream)"
                    } else {
                        ""
                    }
                ),
                t.state(state),
            ),
            Span::styled(
                format!(" · {}", count(s.attempts as i64, "attempt", "attempts")),
                muted,
            ),
        ];
        if s.anomaly {
            first.push(Span::styled(" · * anomaly", t.style("anomaly")));
        }
        if s.drift {
            first.push(Span::styled(" · drift since last load", t.style("warning")));
        }
        if s.moved_out {
            first.push(Span::styled(" · superseded by later loads", muted));
        }
        let mut lines = vec![Line::from(first)];
        // Loaded, but its latest load was refused: the reason, as `idem
        // status` gives it.
        if let Some(r) = &s.refused {
            lines.push(Line::from(vec![
                Span::styled(
                    format!(
                        "{} refused by the shrink guard ",
                        crate::tui::glyphs::REFUSED_FLAG
                    ),
                    t.style("warning"),
                ),
                Span::styled(
                    format!(
                        "(attempt {}, {}): {}",
                        r.attempt,
                        attempt_time(&r.finished_at),
                        first_line(&r.error)
                    ),
                    muted,
                ),
            ]));
        }
        if let Some(v) = self.for_cursor(job) {
            lines.extend(verification_lines(t, v));
        }
        for text in rows_lines(job, i) {
            lines.push(Line::from(Span::styled(text, t.style("text"))));
        }
        // A fact of the job's, not the partition's: beside the counts it
        // explains, which add up to less than the table holds.
        if let Some(note) = crate::state::null_partition_note(&job.job, job.null_partition) {
            lines.push(Line::from(Span::styled(note, t.style("warning"))));
        }
        lines.extend(upstream);
        let (attempt, error) = attempt_lines(t, job, i, &name, area.height >= 12);
        let error_at = error.map(|k| lines.len() + k);
        lines.extend(attempt);
        if let Some(loads) = self.loads.line(job) {
            lines.push(Line::from(Span::styled(loads, muted)));
        }
        if let Some(renamed) = job.renamed_line() {
            lines.push(Line::from(Span::styled(renamed, t.style("warning"))));
        }
        if let Some(elsewhere) = job.loads_elsewhere_line() {
            lines.push(Line::from(Span::styled(elsewhere, t.style("warning"))));
        }
        if let Some(fp) = s
            .last_success
            .as_ref()
            .and_then(|a| a.fingerprint.as_deref())
        {
            lines.push(Line::from(Span::styled(
                format!("fingerprint {}", Fingerprint::short(fp)),
                muted,
            )));
        }
        // The job's failures by error signature, when there is room for them.
        let groups = job.error_groups();
        if !groups.is_empty() && area.height >= 12 {
            lines.push(Line::from(""));
            lines.push(Line::from(Span::styled(
                format!(
                    "failures of {} by error ({} selects a group):",
                    job.job.name,
                    keymap::key(Scope::Main, Action::ErrorGroups)
                ),
                muted,
            )));
            for g in groups.iter().take(3) {
                lines.push(Line::from(vec![
                    Span::styled(format!("  ×{:<3} ", g.partitions.len()), t.style("error")),
                    Span::styled(g.signature.clone(), t.style("text")),
                ]));
            }
        }
        // A legend, so that no state is told by colour alone; it wraps
        // rather than lose its last entries, in rows of its own below the
        // detail (drawn over it, it hid the detail's last lines and let
        // their ends show past its own).
        let mut detail = area;
        if area.height >= 7 {
            let late = job.statuses.iter().any(|s| s.out_of_date().is_some());
            let legend = legend(t, area.width, late);
            let h = (legend.len() as u16).min(area.height / 4).max(1);
            detail.height -= h;
            frame.render_widget(
                Paragraph::new(controls_shown(legend)),
                Rect::new(area.x, detail.bottom(), area.width, h),
            );
        }
        let mut text = controls_shown(lines);
        let wrapped = Paragraph::new(text.clone()).wrap(Wrap { trim: true });
        if wrapped.line_count(detail.width) <= detail.height as usize {
            frame.render_widget(wrapped, detail);
        } else {
            // Too small for it all (a run in the pane takes the rows): what
            // the last attempt met right under the state, and a cut says so
            // with "…" after whole facts, never mid-phrase.
            if let Some(k) = error_at.filter(|k| *k < text.lines.len()) {
                let error = text.lines.remove(k);
                text.lines.insert(1.min(text.lines.len()), error);
            }
            let rows = cut::fit(text.lines, detail.width.into(), detail.height.into());
            frame.render_widget(Paragraph::new(rows), detail);
        }
    }
}

/// Every state's glyph and name, then the upstream and anomaly marks (and
/// the out-of-date one once a reconciliation found some), in
/// as many lines of `width` as they need.
fn legend(t: &Theme, width: u16, out_of_date: bool) -> Vec<Line<'static>> {
    let muted = t.style("muted");
    let mut entries: Vec<(String, ratatui::style::Style, String)> = LoadState::ALL
        .into_iter()
        .filter(|st| *st != LoadState::Future)
        .map(|st| (st.glyph().to_string(), t.state(st), st.name().to_string()))
        .collect();
    entries.push((
        LoadState::UPSTREAM_GLYPH.to_string(),
        t.state(LoadState::Stale),
        "stale (upstream)".into(),
    ));
    entries.push(("*".into(), t.style("anomaly"), "anomaly".into()));
    entries.push((
        crate::tui::glyphs::REFUSED_FLAG.to_string(),
        t.style("warning"),
        "refused".into(),
    ));
    // The calendar marks a source now larger than was loaded `+`, one now
    // smaller `-`: both are read off the legend.
    if out_of_date {
        entries.push(("+".into(), t.style("warning"), "source grew".into()));
        entries.push(("-".into(), t.style("warning"), "source shrank".into()));
    }
    let mut lines = Vec::new();
    let mut spans: Vec<Span<'static>> = Vec::new();
    let mut used = 0usize;
    for (glyph, style, name) in entries {
        let w = glyph.chars().count() + 1 + name.chars().count();
        if used > 0 && used + 2 + w > width as usize {
            lines.push(Line::from(std::mem::take(&mut spans)));
            used = 0;
        }
        if used > 0 {
            spans.push(Span::raw("  "));
            used += 2;
        }
        spans.push(Span::styled(format!("{glyph} "), style));
        spans.push(Span::styled(name, muted));
        used += w;
    }
    lines.push(Line::from(spans));
    lines
}

/// The story of a partition's count: rows now, the source's against its
/// last load once reconciled, and at its last load; then against the previous partition, the
/// same weekday a week ago (same hour a day ago) and the typical band.
fn rows_lines(job: &JobView, i: usize) -> Vec<String> {
    let Some(s) = job.status_at(i) else {
        return Vec::new();
    };
    let count = |n: Option<i64>| n.map(thousands).unwrap_or_else(|| "—".into());
    // Once reconciled, what the source says of the last load before it.
    let mut first = format!("rows now {}", count(s.rows_now));
    if let Some(source) = source_line(job, i) {
        first.push_str(&format!(" · {source}"));
    }
    first.push_str(&format!(" · at last load {}", count(s.rows_at_load)));
    let mut lines = vec![first];
    lines.extend(s.moved_out_note());
    let Some(n) = s.rows().filter(|n| *n > 0) else {
        return lines;
    };
    let rows_of = |k: Option<usize>| k.and_then(|k| job.status_at(k)).and_then(|s| s.rows());
    let versus = |what: &str, base: i64| {
        let d = n - base;
        format!("vs {what} {}{}", signed(d), pct(d, base as f64))
    };
    let mut parts = Vec::new();
    if let Some(prev) = rows_of(i.checked_sub(1)) {
        parts.push(versus("previous", prev));
    }
    let season = Seasonality::of(job.grain());
    let ago = match job.grain() {
        Grain::Day => Some("a week ago"),
        Grain::Hour => Some("a day ago"),
        Grain::Month => None,
    };
    if let Some(ago) = ago
        && let Some(then) = rows_of(i.checked_sub(season.stride))
    {
        parts.push(versus(ago, then));
    }
    let rows: Vec<Option<i64>> = job.statuses.iter().map(|s| s.rows()).collect();
    if let Some(b) = band(&rows, i, season) {
        // A band of one count is that count, as the chart says it.
        let (lo, hi) = (b.lo.round() as i64, b.hi.round() as i64);
        let range = match lo == hi {
            true => format!("typical {}", thousands(lo)),
            false => format!("typical {}–{}", thousands(lo), thousands(hi)),
        };
        let d = n - b.mid.round() as i64;
        let off = pct(d, b.mid);
        parts.push(if (n as f64) < b.lo {
            format!("below {range}{off}")
        } else if (n as f64) > b.hi {
            format!("above {range}{off}")
        } else {
            format!("within {range}")
        });
    }
    if !parts.is_empty() {
        lines.push(parts.join(" · "));
    }
    lines
}

/// The last attempt: the one this console's run just made, else the
/// ledger's; its error's lines after the first (a PostgreSQL error's
/// DETAIL, which says which row, and HINT) where the pane has `room`.
/// With the index among them of its error's first line, if it failed.
fn attempt_lines(
    t: &Theme,
    job: &JobView,
    i: usize,
    name: &str,
    room: bool,
) -> (Vec<Line<'static>>, Option<usize>) {
    let muted = t.style("muted");
    let mut lines = Vec::new();
    if let Some(l) = job.live.get(name) {
        let (word, style) = if l.succeeded {
            ("succeeded", t.style("ok"))
        } else {
            ("failed", t.style("error"))
        };
        lines.push(Line::from(vec![
            Span::styled(format!("last attempt #{} ", l.attempt), muted),
            Span::styled(word, style),
            Span::styled(
                format!(
                    " · in this console's run · {}",
                    duration_text(l.duration_ms)
                ),
                muted,
            ),
        ]));
        if l.unrecorded {
            lines.push(Line::from(Span::styled(
                "not recorded in the ledger (the warehouse could not be written): idem log does not list it",
                t.style("warning"),
            )));
        }
        let mut error = None;
        if let Some(e) = &l.error {
            error = Some(lines.len());
            lines.push(Line::from(Span::styled(
                format!("error: {}", first_line(e)),
                t.style("error"),
            )));
            lines.extend(error_further_lines(t, e, room));
        }
        return (lines, error);
    }
    let status = job.status_at(i);
    let Some(a) = status.and_then(|s| s.last_attempt.as_ref()) else {
        lines.push(Line::from(Span::styled("no attempt recorded", muted)));
        return (lines, None);
    };
    // The last attempt shown is the last that could change something;
    // those after it (numbered on from it) were refused or cancelled.
    let after = status.map_or(0, |s| s.attempts as i64 - a.attempt);
    let dur = attempt_duration(&a.started_at, &a.finished_at)
        .map(duration_text)
        .unwrap_or_default();
    let status_style = if a.error.is_some() {
        t.style("error")
    } else {
        t.style("ok")
    };
    lines.push(Line::from(vec![
        Span::styled(format!("last attempt #{} ", a.attempt), muted),
        Span::styled(a.status.as_str().to_string(), status_style),
        Span::styled(
            format!(
                " · {} · {dur} · by {}{}",
                attempt_time(&a.finished_at),
                a.operator,
                a.reason
                    .as_ref()
                    .map(|r| format!(" · “{r}”"))
                    .unwrap_or_default()
            ),
            muted,
        ),
    ]));
    if after > 0 {
        lines.push(Line::from(Span::styled(
            format!(
                "then {} refused or cancelled, which changed nothing (idem log lists {})",
                crate::numbers::count(after, "attempt", "attempts"),
                if after == 1 { "it" } else { "them" }
            ),
            t.style("warning"),
        )));
    }
    let mut error = None;
    if let Some(e) = &a.error {
        error = Some(lines.len());
        let same = job
            .error_groups()
            .iter()
            .find(|g| g.partitions.contains(&i))
            .map_or(1, |g| g.partitions.len());
        let mut spans = vec![Span::styled(
            format!("error: {}", first_line(e)),
            t.style("error"),
        )];
        if same > 1 {
            spans.push(Span::styled(
                format!(
                    " (×{same}, {} groups)",
                    keymap::key(Scope::Main, Action::ErrorGroups)
                ),
                muted,
            ));
        }
        lines.push(Line::from(spans));
        lines.extend(error_further_lines(t, e, room));
    }
    (lines, error)
}

/// An error's lines after its first, under it, where there is `room`
/// (each opens with its label, DETAIL: or HINT:, as the pane's wrap
/// trims an indent): none for MariaDB's and SQLite's errors, which have
/// one.
fn error_further_lines(t: &Theme, error: &str, room: bool) -> Vec<Line<'static>> {
    if !room {
        return Vec::new();
    }
    (error.lines().skip(1))
        .map(|line| Line::from(Span::styled(line.to_string(), t.style("error"))))
        .collect()
}

fn attempt_time(ts: &str) -> String {
    // "2026-06-04T03:12:45.123Z" → "2026-06-04 03:12 UTC"
    match (ts.get(..10), ts.get(11..16)) {
        (Some(d), Some(hm)) => format!("{d} {hm} UTC"),
        _ => ts.to_string(),
    }
}

fn attempt_duration(started: &str, finished: &str) -> Option<u64> {
    let a = chrono::DateTime::parse_from_rfc3339(started).ok()?;
    let b = chrono::DateTime::parse_from_rfc3339(finished).ok()?;
    Some((b - a).num_milliseconds().max(0) as u64)
}

#[cfg(test)]
mod tests;
