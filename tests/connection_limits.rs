//! A warehouse that limits connections (a PostgreSQL role's CONNECTION
//! LIMIT, a MariaDB user's MAX_USER_CONNECTIONS): a run at a concurrency
//! above what it grants loads every partition at the concurrency it
//! grants and says so once; a refused connection is no attempt (no failed
//! ledger row). A run that is granted no connection at all is told of the
//! limit, not of a server down or a job that does not fit.

mod common;

use common::{Kind, TestDb, replace_job};
use futures::FutureExt;
use sqlx::{AssertSqlSafe, Connection, Executor, Row};

const SRC: &str = "select id, dt from src where dt >= :start and dt < :end";

/// The role's connection limit in every case.
const LIMIT: usize = 4;

async fn exec(wh: &idem::warehouse::Warehouse, statements: &[String]) {
    for s in statements {
        wh.pool()
            .execute(AssertSqlSafe(s.clone()))
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

/// The URL with `user` in place of its user (and no password).
fn as_user(url: &str, user: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let rest = rest.split_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{user}@{rest}")
}

fn database(url: &str) -> String {
    let path = url.split('?').next().expect("a URL");
    path.rsplit('/').next().expect("a database").to_string()
}

/// Making a role of [`LIMIT`] connections granted the test's tables and
/// the ledger, and dropping it; the ledger's table.
fn role(kind: Kind, db: &str) -> (String, Vec<String>, Vec<String>, &'static str) {
    let name = format!("{db}_lim");
    match kind {
        Kind::Postgres => (
            name.clone(),
            vec![
                format!("CREATE ROLE {name} LOGIN CONNECTION LIMIT {LIMIT}"),
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
                format!("CREATE USER '{name}'@'%' WITH MAX_USER_CONNECTIONS {LIMIT}"),
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

async fn a_run_takes_the_concurrency_the_warehouse_grants(kind: Kind) {
    let db = TestDb::new(kind).await.expect("server");
    // Ten days, each a row.
    let job = replace_job("fct", "fct", "2026-01-10", SRC);
    let (_, config) = db.config_with("connect_timeout = \"3s\"", &job);
    let admin = db.warehouse(&config).await;
    exec(
        &admin,
        &[
            "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
            "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
        ],
    )
    .await;
    for day in 1..=10 {
        exec(
            &admin,
            &[format!(
                "INSERT INTO src VALUES ({day}, '2026-01-{day:02}')"
            )],
        )
        .await;
    }
    let (name, setup, drop, ledger) = role(kind, &database(&db.url));
    let url = as_user(&db.url, &name);
    let operator = db.path().join("lim.toml");
    std::fs::write(
        &operator,
        format!("[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"3s\"\n\n{job}"),
    )
    .expect("the role's config");
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
        exec(&admin, &setup).await;
        // (--concurrency, the most partitions at once the note may say,
        // where it says one)
        for (concurrency, note) in [("8", Some(LIMIT)), ("6", Some(LIMIT)), ("2", None)] {
            exec(&admin, &["DELETE FROM fct".into()]).await;
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
                .filter(|l| l.starts_with("the warehouse refused another connection"))
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
    exec(&admin, &drop).await;
    admin.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

on_server_engines!(a_run_takes_the_concurrency_the_warehouse_grants);
