//! Each run's per-partition log lines are kept on disk under the state
//! directory, and `idem log JOB PARTITION --lines` prints them.

mod common;

use common::{Kind, TestDb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitions_run_log_is_kept_and_printed() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let select = "select id, amount, dt from src where dt >= :start and dt < :end";
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-02", select));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL CHECK (amount >= 0), dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 5, '2026-01-01'), (2, -1, '2026-01-02')",
    ])
    .await
    .expect("setup");
    let state = db.path().join("state");
    let idem = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_idem"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("XDG_STATE_HOME", &state)
            .output()
            .expect("idem ran")
    };
    assert_eq!(idem(&["run", "fct"]).status.code(), Some(1));
    assert!(state.join("idem/logs/fct/2026-01-01.log").exists());
    let ok = idem(&["log", "fct", "2026-01-01", "--lines"]);
    let text = String::from_utf8_lossy(&ok.stdout);
    assert_eq!(ok.status.code(), Some(0));
    for expected in [
        "attempt 1 started",
        "INSERT 1 row\n",
        "COMMIT",
        "attempt 1 succeeded: 1 row,",
    ] {
        assert!(text.contains(expected), "{expected}: {text}");
    }
    let failed = idem(&["log", "fct", "2026-01-02", "--lines", "2"]);
    let text = String::from_utf8_lossy(&failed.stdout);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(
        text.contains("attempt 1 failed: CHECK constraint failed"),
        "{text}"
    );
    let none = idem(&["log", "fct", "2026-01-03", "--lines"]);
    assert!(String::from_utf8_lossy(&none.stdout).contains("no run log for fct 2026-01-03"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_user_in_the_environment_the_operator_is_the_login_name() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-01", select));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .expect("setup");
    // As cron runs it: no USER, LOGNAME or IDEM_OPERATOR.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_idem"))
        .arg("--config")
        .arg(&config)
        .args(["run", "fct"])
        .env_remove("USER")
        .env_remove("LOGNAME")
        .env_remove("IDEM_OPERATOR")
        .output()
        .expect("idem ran");
    assert_eq!(out.status.code(), Some(0));
    let login = std::process::Command::new("id")
        .arg("-un")
        .output()
        .expect("id -un");
    let login = String::from_utf8_lossy(&login.stdout).trim().to_string();
    let attempts = wh.attempts("fct", None).await.expect("ledger");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].operator, login);
}
