//! A warehouse that limits connections (a PostgreSQL role's CONNECTION
//! LIMIT, a MariaDB user's MAX_USER_CONNECTIONS): a run at a concurrency
//! above what it grants loads every partition at the concurrency it
//! grants and says so once; a refused connection is no attempt (no failed
//! ledger row). A run that is granted no connection at all is told of the
//! limit, not of a server down or a job that does not fit.

mod common;

use common::{Kind, TestDb, replace_job};
use futures::FutureExt;
use sqlx::{AssertSqlSafe, Connection, Row};

const SRC: &str = "select id, dt from src where dt >= :start and dt < :end";

/// The role's connection limit where a run is refused connections.
const LIMIT: usize = 4;

/// Making a role of `limit` connections granted the test's tables and
/// the ledger, and dropping it; the ledger's table.
fn role(kind: Kind, db: &str, limit: usize) -> (String, Vec<String>, Vec<String>, &'static str) {
    let name = format!("{db}_lim");
    match kind {
        Kind::Postgres => (
            name.clone(),
            vec![
                format!("CREATE ROLE {name} LOGIN CONNECTION LIMIT {limit}"),
                format!("GRANT USAGE ON SCHEMA idem TO {name}"),
                format!("GRANT SELECT, INSERT ON idem.attempts, idem.definitions TO {name}"),
                format!("GRANT SELECT ON src TO {name}"),
                format!("GRANT SELECT, INSERT, DELETE ON fct TO {name}"),
            ],
            vec![format!("DROP OWNED BY {name}"), format!("DROP ROLE {name}")],
            "idem.attempts",
        ),
        _ => (
            name.clone(),
            vec![
                format!("CREATE USER '{name}'@'%' WITH MAX_USER_CONNECTIONS {limit}"),
                format!("GRANT SELECT, INSERT ON {db}.idem_attempts TO '{name}'@'%'"),
                format!("GRANT SELECT, INSERT ON {db}.idem_definitions TO '{name}'@'%'"),
                format!("GRANT SELECT ON {db}.src TO '{name}'@'%'"),
                format!("GRANT SELECT, INSERT, DELETE ON {db}.fct TO '{name}'@'%'"),
            ],
            vec![format!("DROP USER IF EXISTS '{name}'@'%'")],
            "idem_attempts",
        ),
    }
}

/// `held` connections of the role's own, kept open while a run goes on:
/// the run is granted the rest of its limit.
async fn hold(kind: Kind, url: &str, held: usize) -> Vec<Box<dyn std::any::Any + Send>> {
    let mut kept: Vec<Box<dyn std::any::Any + Send>> = Vec::new();
    for _ in 0..held {
        if kind == Kind::Postgres {
            kept.push(Box::new(
                sqlx::PgConnection::connect(url).await.expect("a session"),
            ));
        } else {
            kept.push(Box::new(
                sqlx::MySqlConnection::connect(url)
                    .await
                    .expect("a session"),
            ));
        }
    }
    kept
}

/// The test's source of ten days, each a row, and its empty target.
async fn tables(admin: &idem::warehouse::Warehouse) {
    common::exec(
        admin,
        &[
            "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
            "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
        ],
    )
    .await;
    for day in 1..=10 {
        common::exec(
            admin,
            &[format!(
                "INSERT INTO src VALUES ({day}, '2026-01-{day:02}')"
            )],
        )
        .await;
    }
}

/// A config that connects as the role at `url`.
fn operator_config(db: &TestDb, url: &str, job: &str) -> std::path::PathBuf {
    let operator = db.path().join("lim.toml");
    std::fs::write(
        &operator,
        format!("[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"3s\"\n\n{job}"),
    )
    .expect("the role's config");
    operator
}

async fn a_run_takes_the_concurrency_the_warehouse_grants(kind: Kind) {
    let db = TestDb::new(kind).await.expect("server");
    // Ten days, each a row.
    let job = replace_job("fct", "fct", "2026-01-10", SRC);
    let (_, config) = db.config_with("connect_timeout = \"3s\"", &job);
    let admin = db.warehouse(&config).await;
    tables(&admin).await;
    let (name, setup, drop, ledger) = role(kind, &common::database(&db.url), LIMIT);
    let url = common::as_user(&db.url, &name);
    let operator = operator_config(&db, &url, &job);
    let count = |sql: String| {
        let admin = &admin;
        async move {
            sqlx::query(AssertSqlSafe(sql))
                .fetch_one(admin.pool())
                .await
                .expect("a count")
                .try_get::<i64, _>(0)
                .expect("a number")
        }
    };
    let sessions = match kind {
        Kind::Postgres => {
            format!("SELECT COUNT(*) FROM pg_stat_activity WHERE usename = '{name}'")
        }
        _ => format!("SELECT COUNT(*) FROM information_schema.processlist WHERE user = '{name}'"),
    };
    // The last run's sessions count against the limit until the server
    // has ended them.
    let sessions_gone = || async {
        for _ in 0..100 {
            if count(sessions.clone()).await == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the role's sessions outlived its last run");
    };
    let body = async {
        common::exec(&admin, &setup).await;
        // (--concurrency, the most partitions at once the note may say,
        // where it says one)
        for (concurrency, note) in [("8", Some(LIMIT)), ("6", Some(LIMIT)), ("2", None)] {
            common::exec(&admin, &["DELETE FROM fct".into()]).await;
            sessions_gone().await;
            let out = common::idem(
                &operator,
                &["run", "fct", "-y", "--concurrency", concurrency],
            );
            let said = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            let case = format!("--concurrency {concurrency}: {said}");
            assert_eq!(out.status.code(), Some(0), "{case}");
            assert!(said.contains("10 succeeded, 0 failed"), "{case}");
            assert_eq!(count("SELECT COUNT(*) FROM fct".into()).await, 10, "{case}");
            let noted: Vec<&str> = said
                .lines()
                .filter(|l| l.starts_with("the warehouse limits connections"))
                .collect();
            match note {
                // Said as it settles (a burst of refusals may lower it in
                // steps), at most what the warehouse grants: fewer where
                // refusals came as loads ended.
                Some(most) => {
                    let last = noted.last().unwrap_or_else(|| panic!("no note: {case}"));
                    let at_once = (1..=most).any(|n| {
                        let n = if n == 1 {
                            "1 partition".to_string()
                        } else {
                            format!("{n} partitions")
                        };
                        last.ends_with(&format!(
                            "{n} at once from here on, of --concurrency {concurrency} asked"
                        ))
                    });
                    assert!(at_once, "{case}");
                    assert!(!said.contains("down"), "{case}");
                }
                None => assert!(noted.is_empty(), "{case}"),
            }
        }
        // A refused connection is no attempt.
        let failed = count(format!(
            "SELECT COUNT(*) FROM {ledger} WHERE status <> 'succeeded'"
        ))
        .await;
        assert_eq!(failed, 0);

        // Granted none: every connection the role may have is held.
        sessions_gone().await;
        let _held = hold(kind, &url, LIMIT).await;
        let out = common::idem(&operator, &["run", "fct", "-y", "--concurrency", "4"]);
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains("the warehouse limits connections"), "{said}");
        assert!(!said.contains("down"), "{said}");
        assert!(!said.contains("does not fit"), "{said}");
    };
    let outcome = std::panic::AssertUnwindSafe(body).catch_unwind().await;
    common::exec(&admin, &drop).await;
    admin.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// A role granted `limit` connections (1 to 3: fewer than a command
/// opened before its first partition) runs at `--concurrency 8` within
/// them, saying so once, and `status` and `jobs` read: the pool and the
/// run are kept within what the server says at connect it grants the role.
async fn a_role_granted_few_connections_runs_and_reads(kind: Kind, limit: usize) {
    let db = TestDb::new(kind).await.expect("server");
    let job = replace_job("fct", "fct", "2026-01-10", SRC);
    let (_, config) = db.config_with("connect_timeout = \"3s\"", &job);
    let admin = db.warehouse(&config).await;
    tables(&admin).await;
    let (name, setup, drop, _) = role(kind, &common::database(&db.url), limit);
    let operator = operator_config(&db, &common::as_user(&db.url, &name), &job);
    let body = async {
        common::exec(&admin, &setup).await;
        let said = |out: &std::process::Output| {
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr)
        };
        let started = std::time::Instant::now();
        let out = common::idem(&operator, &["run", "fct", "-y", "--concurrency", "8"]);
        let run = said(&out);
        assert_eq!(out.status.code(), Some(0), "limit {limit}: {run}");
        assert!(
            run.contains("10 succeeded, 0 failed"),
            "limit {limit}: {run}"
        );
        // One connection kept for the run's own reads where two or more.
        let partitions = match limit.saturating_sub(1).max(1) {
            1 => "1 partition".to_string(),
            n => format!("{n} partitions"),
        };
        let noted: Vec<&str> = run
            .lines()
            .filter(|l| l.starts_with("the warehouse limits connections"))
            .collect();
        assert_eq!(noted.len(), 1, "said once, limit {limit}: {run}");
        assert!(
            noted[0].ends_with(&format!(
                "): {partitions} at once from here on, of --concurrency 8 asked"
            )),
            "limit {limit}: {run}"
        );
        assert!(
            noted[0].contains(&format!(" {limit}")),
            "limit {limit}: {run}"
        );
        assert!(!run.contains("down"), "limit {limit}: {run}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "limit {limit}: {run}"
        );
        let sessions = match kind {
            Kind::Postgres => {
                format!("SELECT COUNT(*) FROM pg_stat_activity WHERE usename = '{name}'")
            }
            _ => {
                format!("SELECT COUNT(*) FROM information_schema.processlist WHERE user = '{name}'")
            }
        };
        for command in [&["status", "fct"][..], &["jobs"][..]] {
            // The last command's sessions count until the server ended them.
            for _ in 0..100 {
                let open: i64 = sqlx::query(AssertSqlSafe(sessions.clone()))
                    .fetch_one(admin.pool())
                    .await
                    .expect("a count")
                    .try_get(0)
                    .expect("a number");
                if open == 0 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            let out = common::idem(&operator, command);
            let read = said(&out);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{command:?}, limit {limit}: {read}"
            );
            assert!(
                !read.contains("limits connections"),
                "{command:?}, limit {limit}: {read}"
            );
        }
    };
    let outcome = std::panic::AssertUnwindSafe(body).catch_unwind().await;
    common::exec(&admin, &drop).await;
    admin.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn a_role_granted_one_connection_runs_and_reads(kind: Kind) {
    a_role_granted_few_connections_runs_and_reads(kind, 1).await;
}

async fn a_role_granted_two_connections_runs_and_reads(kind: Kind) {
    a_role_granted_few_connections_runs_and_reads(kind, 2).await;
}

async fn a_role_granted_three_connections_runs_and_reads(kind: Kind) {
    a_role_granted_few_connections_runs_and_reads(kind, 3).await;
}

/// A read outside any load that finds the role's connections all held
/// (the pool's, all busy) names the limit, not a server that is down: the
/// pool says only that none came within `connect_timeout`.
async fn a_read_refused_a_connection_names_the_limit(kind: Kind) {
    let db = TestDb::new(kind).await.expect("server");
    let job = replace_job("fct", "fct", "2026-01-10", SRC);
    let (_, config) = db.config_with("connect_timeout = \"3s\"", &job);
    let admin = db.warehouse(&config).await;
    tables(&admin).await;
    let (name, setup, drop, _) = role(kind, &common::database(&db.url), 2);
    let url = common::as_user(&db.url, &name);
    let body = async {
        common::exec(&admin, &setup).await;
        let mut as_role = config.warehouse.clone();
        as_role.url = url.clone();
        as_role.connect_timeout = std::time::Duration::from_secs(1);
        let wh = idem::warehouse::Warehouse::connect_to_read(&as_role, 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // The pool holds all the role may have, each busy: another read
        // waits for one until `connect_timeout`.
        assert_eq!(wh.pool().size(), 2, "the pool opened what was granted");
        let _busy = (
            wh.pool().acquire().await.expect("a pooled connection"),
            wh.pool().acquire().await.expect("a pooled connection"),
        );
        let started = std::time::Instant::now();
        let e = wh
            .ledger_mark("fct")
            .await
            .expect_err("no connection to read on");
        let said = e.to_string();
        assert!(said.contains("the warehouse limits connections"), "{said}");
        assert!(!said.contains("down"), "{said}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{said}"
        );
    };
    let outcome = std::panic::AssertUnwindSafe(body).catch_unwind().await;
    common::exec(&admin, &drop).await;
    admin.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

on_server_engines!(
    a_run_takes_the_concurrency_the_warehouse_grants,
    a_role_granted_one_connection_runs_and_reads,
    a_role_granted_two_connections_runs_and_reads,
    a_role_granted_three_connections_runs_and_reads,
    a_read_refused_a_connection_names_the_limit,
);
