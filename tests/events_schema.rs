//! The `--json` event stream is a contract with orchestrators: a golden file
//! holds a whole run's events (two partitions loaded, one failed, then the
//! dry run, then a run refused before it began), with run ids and durations
//! normalised. A change to the stream shows up here as a diff;
//! `IDEM_UPDATE_GOLDEN=1` rewrites the file after a deliberate change (and
//! the schema version moves if a field changed meaning).

mod common;

use common::{Kind, TestDb};
use serde_json::Value;

const GOLDEN: &str = "tests/fixtures/run_events.jsonl";

/// Replaces what differs between runs: run ids and durations.
fn normalise(line: &str) -> String {
    let mut v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    if let Some(o) = v.as_object_mut() {
        for (k, field) in o.iter_mut() {
            match k.as_str() {
                "run_id" => *field = Value::from("RUN"),
                "duration_ms" => *field = Value::from(0),
                _ => {}
            }
        }
    }
    v.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_event_stream_matches_its_golden_file() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let select = "select id, amount, dt from src where dt >= :start and dt < :end";
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-03", select));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL CHECK (amount >= 0), dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 5, '2026-01-01'), (2, 7, '2026-01-01'), (3, -1, '2026-01-02'), (4, 9, '2026-01-03')",
    ])
    .await
    .expect("setup");
    let idem = |args: &[&str]| {
        crate::common::idem_command()
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("IDEM_OPERATOR", "golden")
            .output()
            .expect("idem ran")
    };
    let run = idem(&["run", "fct", "--json", "--reason", "golden file"]);
    assert_eq!(run.status.code(), Some(1), "one partition fails");
    let dry = idem(&["run", "fct", "--only", "failed", "--dry-run", "--json"]);
    assert_eq!(dry.status.code(), Some(0));
    // A run that never begins ends its stream with why, and its exit code.
    let refused = idem(&["run", "fct", "--from", "2026-1-2", "--json"]);
    assert_eq!(refused.status.code(), Some(2), "a usage error");
    let mut lines: Vec<String> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .chain(String::from_utf8_lossy(&dry.stdout).lines())
        .chain(String::from_utf8_lossy(&refused.stdout).lines())
        .map(normalise)
        .collect();
    lines.push(String::new());
    let actual = lines.join("\n");
    for line in actual.lines() {
        let v: Value = serde_json::from_str(line).expect("json");
        assert_eq!(v["schema_version"], 1, "{line}");
    }
    if std::env::var("IDEM_UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(GOLDEN, &actual).expect("write golden file");
    }
    let golden =
        std::fs::read_to_string(GOLDEN).expect("golden file (IDEM_UPDATE_GOLDEN=1 writes it)");
    assert_eq!(actual, golden, "the --json stream changed; see {GOLDEN}");
}
