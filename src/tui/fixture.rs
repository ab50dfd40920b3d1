//! What the panes' own tests start from: a job of ten days whose states are
//! written as glyphs, and a way to draw into a test terminal.

use chrono::{NaiveDate, NaiveDateTime};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::job::JobView;
use crate::config::{Config, Job};
use crate::state::{LoadState, PartitionStatus};
use crate::warehouse::ledger::{Attempt, AttemptStatus};

pub fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 6, 15)
        .and_then(|d| d.and_hms_opt(3, 12, 0))
        .expect("a date")
}

/// A job over 2026-06-01..10 named `name`; `merge` makes it a merge_key job.
pub fn job(name: &str, merge: bool) -> Job {
    config(name, merge).jobs[0].clone()
}

/// A config of that one job.
pub fn config(name: &str, merge: bool) -> Config {
    config_of_days(name, merge, 10)
}

/// A config of one job of `days` days through 2026-06-10.
fn config_of_days(name: &str, merge: bool, days: usize) -> Config {
    let last = NaiveDate::from_ymd_opt(2026, 6, 10).expect("a date");
    let start = last - chrono::Days::new(days.saturating_sub(1) as u64);
    let strategy = if merge {
        "strategy = \"merge_key\"\nunique_key = [\"id\"]"
    } else {
        "strategy = \"replace_partition\"\npartition_column = \"dt\""
    };
    let toml = format!(
        r#"
[warehouse]
url = "sqlite://w.db"

[[jobs]]
name = "{name}"
target = "t"
{strategy}
grain = "day"
start = "{start}"
end = "2026-06-10"
sql = "select 1 as id, dt from s where dt >= :start and dt < :end"
"#
    );
    crate::config::parse(std::path::Path::new("idem.toml"), &toml, &|_| None).expect("config")
}

fn attempt(job: &Job, partition: &str, status: AttemptStatus, hash: String) -> Attempt {
    let failed = status == AttemptStatus::Failed;
    Attempt {
        run_id: "run".into(),
        job: job.name.clone(),
        partition: partition.into(),
        attempt: 1,
        status,
        started_at: "2026-06-14T02:00:00.000Z".into(),
        locked_at: None,
        finished_at: "2026-06-14T02:00:01.250Z".into(),
        rows_deleted: 0,
        rows_inserted: 100,
        rows_updated: 0,
        rows_after: 100,
        definition_hash: hash,
        fingerprint: Some("100:0123456789abcdef".into()),
        content_changed: Some(true),
        error: failed.then(|| format!("CHECK constraint failed: amount >= {partition}")),
        operator: "ops".into(),
        host: "demo".into(),
        reason: None,
    }
}

/// The job's days through 2026-06-10 (ten, or one per glyph) in the states
/// `glyphs` draws (■ loaded, ✗ failed, · missing, ~ stale), loaded ones
/// with 100 rows, as read from the warehouse.
pub fn job_view(name: &str, merge: bool, glyphs: &str) -> JobView {
    let job = config_of_days(name, merge, glyphs.chars().count().max(10)).jobs[0].clone();
    let mut view = JobView::new(job.clone(), now());
    let statuses = view
        .partitions
        .iter()
        .zip(glyphs.chars())
        .map(|(p, g)| {
            let state = LoadState::ALL
                .into_iter()
                .find(|s| s.glyph() == g)
                .expect("a state glyph");
            let name = p.name();
            let success = matches!(state, LoadState::Loaded | LoadState::Stale).then(|| {
                let hash = if state == LoadState::Stale {
                    "old-definition".to_string()
                } else {
                    job.definition_hash()
                };
                attempt(&job, &name, AttemptStatus::Succeeded, hash)
            });
            let last = match state {
                LoadState::Failed => Some(attempt(
                    &job,
                    &name,
                    AttemptStatus::Failed,
                    job.definition_hash(),
                )),
                _ => success.clone(),
            };
            let rows = success.as_ref().map(|s| s.rows_after);
            PartitionStatus {
                rows_now: (!merge).then(|| rows.unwrap_or(0)),
                rows_at_load: rows,
                attempts: usize::from(last.is_some()),
                last_attempt: last.map(std::sync::Arc::new),
                last_success: success.map(std::sync::Arc::new),
                ..PartitionStatus::in_state(*p, state)
            }
        })
        .collect();
    view.apply_statuses(statuses);
    view
}

pub fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

pub fn code(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// The text on a `w`×`h` screen after `draw`, one line per row.
pub fn draw(w: u16, h: u16, draw: impl FnOnce(&mut Frame)) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("a test terminal");
    t.draw(draw).expect("drawn");
    let buf = t.backend().buffer();
    (0..h)
        .map(|y| {
            let line: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
            line.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
