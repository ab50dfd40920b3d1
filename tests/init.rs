//! `idem init URL` writes a starter idem.toml whose candidate jobs are the
//! warehouse's tables with a date or timestamp column.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{Kind, TestDb};

fn idem(config: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_idem"))
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .expect("run idem")
}

/// The starter with every candidate job uncommented.
fn uncommented(starter: &str) -> String {
    let mut out = String::new();
    let mut quotes = None;
    for line in starter.lines() {
        if line == "# [[jobs]]" {
            quotes = Some(0);
        }
        match quotes {
            Some(n) => {
                out.push_str(line.strip_prefix("# ").unwrap_or(line));
                let n = n + line.matches("\"\"\"").count();
                quotes = if n == 2 { None } else { Some(n) };
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

fn jobs_of(path: &Path, text: &str) -> Vec<idem::config::Job> {
    idem::config::parse(path, text, &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
        .jobs
}

#[test]
fn init_on_the_demo_warehouse() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Command::new(env!("CARGO_BIN_EXE_idem"))
        .args(["demo", "--path"])
        .arg(dir.path().join("demo"))
        .output()
        .unwrap();
    assert!(demo.status.success());
    let url = format!(
        "sqlite://{}",
        dir.path().join("demo/warehouse.db").display()
    );
    let config = dir.path().join("idem.toml");
    let out = idem(&config, &["init", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("candidate jobs"), "{said}");

    let starter = std::fs::read_to_string(&config).unwrap();
    // As written it is a valid config with no jobs yet.
    assert!(jobs_of(&config, &starter).is_empty());
    assert!(
        !starter.contains("idem_attempts"),
        "the ledger is no candidate"
    );

    let jobs = jobs_of(&config, &uncommented(&starter));
    let job = |name: &str| {
        jobs.iter()
            .find(|j| j.name == name)
            .unwrap_or_else(|| panic!("{name} in\n{starter}"))
    };
    let orders = job("fct_orders");
    assert_eq!(orders.partition_column.as_ref().unwrap().as_str(), "dt");
    assert_eq!(orders.grain.as_str(), "day");
    assert_eq!(job("fct_pageviews_hourly").grain.as_str(), "hour");
    assert_eq!(job("agg_revenue_monthly").grain.as_str(), "month");
    assert_eq!(
        job("raw_orders")
            .partition_column
            .as_ref()
            .unwrap()
            .as_str(),
        "created_at"
    );
    // A table without a date column (every column a number or plain text) is
    // not offered; the demo has none, so count what is.
    assert_eq!(jobs.len(), 7, "{starter}");

    // Uncommented, a job works on the warehouse as it stands.
    std::fs::write(&config, uncommented(&starter)).unwrap();
    let status = idem(&config, &["status", "fct_orders", "--format", "json"]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );

    // An existing config is kept unless --force.
    let again = idem(&config, &["init", &url]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists; pass --force"));
    assert!(idem(&config, &["init", &url, "--force"]).status.success());
    assert_eq!(std::fs::read_to_string(&config).unwrap(), starter);

    let bad = idem(&dir.path().join("other.toml"), &["init", "oracle://x"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a warehouse URL"));
}

async fn init_lists_the_dated_tables(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    let timestamp = if kind == Kind::MySql {
        "DATETIME"
    } else {
        "TIMESTAMP"
    };
    let mut script = vec![
        format!("CREATE TABLE events (id INTEGER NOT NULL, happened_at {timestamp} NOT NULL)"),
        "CREATE TABLE daily (d DATE NOT NULL, n INTEGER)".to_string(),
        "CREATE TABLE counters (id INTEGER NOT NULL, n INTEGER)".to_string(),
        "INSERT INTO daily (d, n) VALUES ('2026-03-02', 1), ('2026-03-01', 2)".to_string(),
    ];
    if kind == Kind::Postgres {
        script.push("CREATE SCHEMA analytics".into());
        script.push("CREATE TABLE analytics.fct (dt DATE NOT NULL)".into());
    }
    let script: Vec<&str> = script.iter().map(String::as_str).collect();
    wh.execute_script(&script).await.unwrap();
    wh.close().await;

    let path = db.path().join("starter.toml");
    let out = idem(&path, &["init", &db.url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let starter = std::fs::read_to_string(&path).unwrap();
    let jobs = jobs_of(&path, &uncommented(&starter));
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert!(names.contains(&"events"), "{kind:?} {names:?}");
    assert!(names.contains(&"daily"), "{kind:?} {names:?}");
    assert!(!names.contains(&"counters"), "{kind:?}: no date column");
    assert!(
        !starter.contains("attempts"),
        "{kind:?}: the ledger is no candidate"
    );
    let daily = jobs.iter().find(|j| j.name == "daily").unwrap();
    assert_eq!(
        daily.start.name(),
        "2026-03-01",
        "{kind:?}: the first value"
    );
    if kind == Kind::Postgres {
        let fct = jobs.iter().find(|j| j.name == "fct").unwrap();
        assert_eq!(fct.target.to_string(), "analytics.fct");
    }
    if kind != Kind::Sqlite {
        // A --force that cannot write the whole starter (here a file size
        // limit of 1 KiB, as a full disk would stop it; on a server, as SQLite
        // writes files of its own when idem connects) leaves the config that
        // was there as it was, and no part file beside it.
        let mine = "# the operator's own config\n".repeat(10);
        std::fs::write(&path, &mine).unwrap();
        assert!(starter.len() > 1024, "{}", starter.len());
        let limited = Command::new("bash")
            .arg("-c")
            .arg("trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_idem"))
            .arg("--config")
            .arg(&path)
            .args(["init", &db.url, "--force"])
            .output()
            .expect("run idem");
        let stderr = String::from_utf8_lossy(&limited.stderr);
        assert_eq!(limited.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("the config there is as it was"), "{stderr}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), mine);
        let left: Vec<_> = std::fs::read_dir(db.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".part"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        // Through a symlink, the file it names is replaced, the link kept.
        let linked = db.path().join("linked.toml");
        std::os::unix::fs::symlink(&path, &linked).unwrap();
        assert!(
            idem(&linked, &["init", &db.url, "--force"])
                .status
                .success()
        );
        assert!(
            std::fs::symlink_metadata(&linked)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), starter);
    }
}

on_every_engine!(init_lists_the_dated_tables);
