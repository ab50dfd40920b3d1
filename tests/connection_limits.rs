//! A warehouse that limits connections (a PostgreSQL role's CONNECTION
//! LIMIT, a MariaDB user's MAX_USER_CONNECTIONS): a run at a concurrency
//! above what it grants loads every partition at the concurrency it
//! grants and says so once; a refused connection is no attempt (no failed
//! ledger row). A run that is granted no connection at all is told of the
//! limit, not of a server down or a job that does not fit.

mod common;

use common::{Kind, TestDb, replace_job};
use futures::FutureExt;
use futures::future::BoxFuture;
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

/// Waits until the server has ended every session of the role `name` (a
/// closed one counts against its limit a moment longer).
async fn sessions_gone(kind: Kind, admin: &idem::warehouse::Warehouse, name: &str) {
    let sessions = match kind {
        Kind::Postgres => {
            format!("SELECT COUNT(*) FROM pg_stat_activity WHERE usename = '{name}'")
        }
        _ => format!("SELECT COUNT(*) FROM information_schema.processlist WHERE user = '{name}'"),
    };
    for _ in 0..100 {
        let open: i64 = sqlx::query(AssertSqlSafe(sessions.clone()))
            .fetch_one(admin.pool())
            .await
            .expect("a count")
            .try_get(0)
            .expect("a number");
        if open == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the role's sessions outlived its last command");
}

/// Runs `body`, then drops the test's role with `drop` (once its sessions
/// named in `gone` have ended) and closes `admin`, whether `body` passed or
/// panicked: its panic is passed on after.
async fn dropping_the_role(
    admin: idem::warehouse::Warehouse,
    drop: &[String],
    gone: Option<(Kind, &str)>,
    body: impl std::future::Future<Output = ()>,
) {
    let outcome = std::panic::AssertUnwindSafe(body).catch_unwind().await;
    if let Some((kind, name)) = gone {
        sessions_gone(kind, &admin, name).await;
    }
    common::exec(&admin, drop).await;
    admin.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// `idem run fct --json -y` over 2026-01-01 with `operator`'s config: its
/// output, and what it said on stdout and stderr together.
fn run_the_first_day(operator: &std::path::Path) -> (std::process::Output, String) {
    let out = common::idem(
        operator,
        &[
            "run",
            "fct",
            "--json",
            "-y",
            "--from",
            "2026-01-01",
            "--to",
            "2026-01-01",
        ],
    );
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out, said)
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

/// A config that connects as the role at `url`, with `lines` more of
/// `[warehouse]`.
fn operator_config(db: &TestDb, url: &str, lines: &str, job: &str) -> std::path::PathBuf {
    let operator = db.path().join("lim.toml");
    std::fs::write(
        &operator,
        format!("[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"3s\"\n{lines}\n\n{job}"),
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
    let operator = operator_config(&db, &url, "", &job);
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
    let body = async {
        common::exec(&admin, &setup).await;
        // (--concurrency, the most partitions at once the note may say,
        // where it says one)
        for (concurrency, note) in [("8", Some(LIMIT)), ("6", Some(LIMIT)), ("2", None)] {
            common::exec(&admin, &["DELETE FROM fct".into()]).await;
            sessions_gone(kind, &admin, &name).await;
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
        sessions_gone(kind, &admin, &name).await;
        let _held = hold(kind, &url, LIMIT).await;
        let out = common::idem(&operator, &["run", "fct", "-y", "--concurrency", "4"]);
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains("the warehouse limits connections"), "{said}");
        assert!(!said.contains("down"), "{said}");
        assert!(!said.contains("does not fit"), "{said}");
    };
    dropping_the_role(admin.clone(), &drop, None, body).await;
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
    let operator = operator_config(&db, &common::as_user(&db.url, &name), "", &job);
    let body = async {
        common::exec(&admin, &setup).await;
        let said = |out: &std::process::Output| {
            String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr)
        };
        // The plan says what the run will take, not the 8 asked.
        let at_once = limit.saturating_sub(1).max(1);
        let out = common::idem(
            &operator,
            &["run", "fct", "--dry-run", "--concurrency", "8"],
        );
        let plan = said(&out);
        assert!(
            plan.contains(&format!("· concurrency {at_once} (of 8 asked: ")),
            "limit {limit}: {plan}"
        );
        sessions_gone(kind, &admin, &name).await;
        let out = common::idem(
            &operator,
            &["run", "fct", "--dry-run", "--json", "--concurrency", "8"],
        );
        let json = said(&out);
        assert!(
            json.contains(&format!("\"concurrency\":{at_once},")),
            "limit {limit}: {json}"
        );
        sessions_gone(kind, &admin, &name).await;
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
        for command in [&["status", "fct"][..], &["jobs"][..]] {
            sessions_gone(kind, &admin, &name).await;
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
    dropping_the_role(admin.clone(), &drop, None, body).await;
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

/// What `read` failed with, in words; None where it read.
fn failure<'a, T>(
    read: impl Future<Output = Result<T, idem::warehouse::WarehouseError>> + Send + 'a,
) -> BoxFuture<'a, Option<String>> {
    read.map(|r| r.err().map(|e| e.to_string())).boxed()
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
        // The ledger found (once a process), before the reads.
        let job = &config.jobs[0];
        let ledger = wh.job_ledger(job).await.expect("the job's ledger");
        // The pool holds all the role may have, each busy: another read
        // waits for one until `connect_timeout`.
        assert_eq!(wh.pool().size(), 2, "the pool opened what was granted");
        let _busy = (
            wh.pool().acquire().await.expect("a pooled connection"),
            wh.pool().acquire().await.expect("a pooled connection"),
        );
        // Each read as a command makes it: the pooled ones, and those that
        // stream their rows (the ledger's attempts, its summary per
        // partition) or read the catalogue.
        let reads: Vec<(&str, BoxFuture<'_, Option<String>>)> = vec![
            ("ledger_mark", failure(wh.ledger_mark("fct"))),
            ("attempts", failure(wh.attempts("fct", None))),
            ("ledger_summary", failure(wh.ledger_summary(&ledger, None))),
            ("unique_key_sets", failure(wh.unique_key_sets(&job.target))),
        ];
        for (read, refused) in reads {
            let started = std::time::Instant::now();
            let said = refused
                .await
                .unwrap_or_else(|| panic!("{read}: read with no connection"));
            assert!(
                said.contains("the warehouse limits connections"),
                "{read}: {said}"
            );
            assert!(!said.contains("down"), "{read}: {said}");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "{read}: {said}"
            );
        }
    };
    dropping_the_role(admin.clone(), &drop, None, body).await;
}

/// A partition refused a connection (sessions of the role opened after
/// the run connected) made no attempt and waits its turn: when it is let in
/// again it is not said to start again. The console counts each
/// `partition_started` as a try, and `--json` readers as an attempt begun.
async fn a_partition_refused_a_connection_starts_once(kind: Kind) {
    use idem::engine::{Backfill, Event, Selection};
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
        let wh = idem::warehouse::Warehouse::connect(&as_role, 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let backfill = Backfill::plan(&wh, &config.jobs[0], &Selection::default(), 2, 0)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // The pool's connections closed, and the role's two taken by
        // sessions of its own: the run's first load is refused one.
        // (Once the pool has opened them all: it opens them as it connects.)
        for _ in 0..100 {
            if wh.pool().num_idle() == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let pooled = (wh.pool().acquire().await, wh.pool().acquire().await);
        for conn in [pooled.0, pooled.1] {
            let conn = conn.expect("a pooled connection");
            conn.detach().close().await.expect("closed");
        }
        sessions_gone(kind, &admin, &name).await;
        let mut held = Some(hold(kind, &url, 2).await);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let run = async move {
            let summary = idem::engine::run(&wh, &backfill, &tx, &Default::default()).await;
            wh.close().await;
            summary
        };
        // The role's sessions end once a load was refused: it is let in.
        let watch = async {
            let mut events = Vec::new();
            while let Some(event) = rx.recv().await {
                if let Event::PartitionLog { line, .. } = &event
                    && line.starts_with("no connection: the warehouse refused one")
                {
                    held = None;
                }
                events.push(event);
            }
            events
        };
        let (summary, events) = tokio::join!(run, watch);
        assert!(
            held.is_none(),
            "no load was refused a connection: {events:?}"
        );
        assert_eq!(summary.succeeded, 10, "{events:?}");
        let mut started = std::collections::HashMap::new();
        for event in &events {
            if let Event::PartitionStarted {
                partition, attempt, ..
            } = event
            {
                *started.entry((partition.clone(), *attempt)).or_insert(0) += 1;
            }
        }
        assert_eq!(started.len(), 10, "{events:?}");
        assert!(
            started.values().all(|n| *n == 1),
            "an attempt said started more than once: {started:?}"
        );
    };
    dropping_the_role(admin.clone(), &drop, None, body).await;
}

/// Another process holds a partition's lock while a role granted one or
/// two connections runs it: the lock timeout names the holder, asked on
/// the load's own connection, where another is more than the role is
/// granted (it waited for one that never came, and said "another run").
async fn a_lock_held_elsewhere_names_its_holder_within_the_limit(kind: Kind) {
    let db = TestDb::new(kind).await.expect("server");
    let pause = match kind {
        Kind::Postgres => "(select pg_sleep(30) as p)",
        _ => "(select sleep(30) as p)",
    };
    let jobs = [
        replace_job(
            "held",
            "fct",
            "2026-01-10",
            &format!(
                "select id, dt from src cross join {pause} pause where dt >= :start and dt < :end"
            ),
        ),
        replace_job("fct", "fct", "2026-01-10", SRC),
    ]
    .concat();
    let (path, config) = db.config_with("connect_timeout = \"3s\"", &jobs);
    let admin = db.warehouse(&config).await;
    tables(&admin).await;
    let body = async {
        let mut holder = crate::common::idem_command()
            .arg("--config")
            .arg(&path)
            .args([
                "run",
                "held",
                "--json",
                "-y",
                "--from",
                "2026-01-01",
                "--to",
                "2026-01-01",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn idem");
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
            holder.stdout.take().expect("its events"),
        ));
        // The DELETE is logged once done, under the lock; the INSERT waits.
        let holding =
            lines.any(|l| l.is_ok_and(|l| l.contains("\"partition_log\"") && l.contains("DELETE")));
        let mut outcome = Ok(());
        if holding {
            for limit in [1, 2] {
                let (name, mut setup, drop, _) = role(kind, &common::database(&db.url), limit);
                // To see who holds the lock: another role's session.
                setup.push(match kind {
                    Kind::Postgres => format!("GRANT pg_read_all_stats TO {name}"),
                    _ => format!("GRANT PROCESS ON *.* TO '{name}'@'%'"),
                });
                let operator = operator_config(
                    &db,
                    &common::as_user(&db.url, &name),
                    "lock_timeout = \"1s\"\n[defaults]\nretries = 0",
                    &jobs,
                );
                common::exec(&admin, &setup).await;
                let run = async {
                    let started = std::time::Instant::now();
                    let (out, said) = run_the_first_day(&operator);
                    let case = format!("limit {limit}: {said}");
                    assert_eq!(out.status.code(), Some(1), "{case}");
                    assert!(
                        said.contains("could not take the lock on partition 2026-01-01 within the lock timeout: held by "),
                        "{case}"
                    );
                    assert!(!said.contains("limits connections"), "{case}");
                    assert!(!said.contains("down"), "{case}");
                    assert!(
                        started.elapsed() < std::time::Duration::from_secs(8),
                        "{case}"
                    );
                };
                let ran = std::panic::AssertUnwindSafe(run).catch_unwind().await;
                sessions_gone(kind, &admin, &name).await;
                common::exec(&admin, &drop).await;
                if ran.is_err() {
                    outcome = ran;
                    break;
                }
            }
        }
        let _ = holder.kill();
        let _ = holder.wait();
        assert!(holding, "the held load never took its lock");
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    };
    let outcome = std::panic::AssertUnwindSafe(body).catch_unwind().await;
    admin.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// A session of another role holds the partition's rows in an open
/// transaction while a role granted two connections (both the pool's, one
/// the load's) runs it: the load's question of whom it waits for, refused a
/// connection of its own, borrows the pool's idle one, and the lock
/// timeout names the holder.
async fn a_row_lock_held_elsewhere_names_its_holder_within_the_limit(kind: Kind) {
    let db = TestDb::new(kind).await.expect("server");
    let job = replace_job("fct", "fct", "2026-01-10", SRC);
    let (_, config) = db.config_with("connect_timeout = \"3s\"", &job);
    let admin = db.warehouse(&config).await;
    tables(&admin).await;
    common::exec(&admin, &["INSERT INTO fct SELECT id, dt FROM src".into()]).await;
    let (name, mut setup, drop, _) = role(kind, &common::database(&db.url), 2);
    // To see who holds the rows: another role's session.
    setup.push(match kind {
        Kind::Postgres => format!("GRANT pg_read_all_stats TO {name}"),
        _ => format!("GRANT PROCESS ON *.* TO '{name}'@'%'"),
    });
    let operator = operator_config(
        &db,
        &common::as_user(&db.url, &name),
        "lock_timeout = \"2s\"\n[defaults]\nretries = 0",
        &job,
    );
    let body = async {
        common::exec(&admin, &setup).await;
        let mut holding = sqlx::AnyConnection::connect(&db.url)
            .await
            .expect("a session");
        for statement in ["BEGIN", "UPDATE fct SET id = id WHERE dt = '2026-01-01'"] {
            sqlx::query(statement)
                .execute(&mut holding)
                .await
                .expect(statement);
        }
        let (out, said) = run_the_first_day(&operator);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains("the lock on fct is held by "), "{said}");
        assert!(!said.contains("limits connections"), "{said}");
        let _ = holding.close().await;
    };
    dropping_the_role(admin.clone(), &drop, Some((kind, &name)), body).await;
}

/// Runs `body` on a warehouse connected as a role the server grants one
/// connection (the test's tables made first, the role dropped after).
async fn as_a_role_granted_one<F, Fut>(kind: Kind, body: F)
where
    F: FnOnce(idem::warehouse::Warehouse) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let db = TestDb::new(kind).await.expect("server");
    let job = replace_job("fct", "fct", "2026-01-10", SRC);
    let (_, config) = db.config_with("connect_timeout = \"3s\"", &job);
    let admin = db.warehouse(&config).await;
    tables(&admin).await;
    let (name, setup, drop, _) = role(kind, &common::database(&db.url), 1);
    let run = async {
        common::exec(&admin, &setup).await;
        let mut as_role = config.warehouse.clone();
        as_role.url = common::as_user(&db.url, &name);
        let wh = idem::warehouse::Warehouse::connect_to_read(&as_role, 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        body(wh).await;
    };
    dropping_the_role(admin.clone(), &drop, Some((kind, &name)), run).await;
}

/// A role granted one connection describes the job's SELECT (`run
/// --dry-run`'s lint, a run's first load) on a connection of its own: the
/// pool's one makes room for it once it is back from a read, rather than
/// the refusal reading as the warehouse rejecting the SELECT.
async fn a_describe_waits_for_the_pools_one_connection(kind: Kind) {
    as_a_role_granted_one(kind, |wh| async move {
        // The pool's one connection, busy with a read a moment longer.
        let busy = wh.pool().acquire().await.expect("a pooled connection");
        let read = async {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            std::mem::drop(busy);
        };
        let (described, ()) = tokio::join!(wh.output_columns("SELECT id, dt FROM src"), read);
        assert_eq!(
            described.unwrap_or_else(|e| panic!("{e}")),
            vec!["id".to_string(), "dt".to_string()]
        );
        wh.close().await;
    })
    .await;
}

/// A role granted one connection describes the job's SELECT while a
/// reader keeps reading on the pool's one connection, waiting for it
/// between reads: the describe takes its turn with the reader. QA: the
/// pool's connection closed to make room for the describe's, the waiting
/// reader opened one into the freed place at once, and either the
/// describe was refused until the connect timeout or the reader was
/// refused (MariaDB's refusal fails a pool's connect at once).
async fn a_describe_takes_its_turn_with_a_reader_waiting_on_the_pool(kind: Kind) {
    as_a_role_granted_one(kind, |wh| async move {
        let described = std::sync::atomic::AtomicBool::new(false);
        // The pool's one connection, busy with a read: the reader and then
        // the describe wait for it.
        let busy = wh.pool().acquire().await.expect("a pooled connection");
        let reader = async {
            // Until the describe is done, and longer than the connect
            // timeout it would otherwise give up after.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(6);
            let mut reads = 0;
            while !described.load(std::sync::atomic::Ordering::SeqCst)
                && std::time::Instant::now() < until
            {
                let mut conn = wh
                    .pool()
                    .acquire()
                    .await
                    .unwrap_or_else(|e| panic!("read {reads} got no connection: {e}"));
                sqlx::query("SELECT 1")
                    .fetch_one(&mut *conn)
                    .await
                    .unwrap_or_else(|e| panic!("read {reads}: {e}"));
                reads += 1;
            }
            reads
        };
        let describe = async {
            // The reader waits on the pool first.
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            std::mem::drop(busy);
            let names = wh.output_columns("SELECT id, dt FROM src").await;
            described.store(true, std::sync::atomic::Ordering::SeqCst);
            names
        };
        let (reads, names) = tokio::join!(reader, describe);
        assert_eq!(
            names.unwrap_or_else(|e| panic!("after {reads} reads: {e}")),
            vec!["id".to_string(), "dt".to_string()]
        );
        assert!(reads >= 1, "the reader never read");
        wh.close().await;
    })
    .await;
}

on_server_engines!(
    a_describe_waits_for_the_pools_one_connection,
    a_describe_takes_its_turn_with_a_reader_waiting_on_the_pool,
    a_partition_refused_a_connection_starts_once,
    a_row_lock_held_elsewhere_names_its_holder_within_the_limit,
    a_lock_held_elsewhere_names_its_holder_within_the_limit,
    a_run_takes_the_concurrency_the_warehouse_grants,
    a_role_granted_one_connection_runs_and_reads,
    a_role_granted_two_connections_runs_and_reads,
    a_role_granted_three_connections_runs_and_reads,
    a_read_refused_a_connection_names_the_limit,
);

/// Two loads that run past the first look for their sessions (20 s) under
/// a role at its CONNECTION LIMIT (3: both loads' and the run's own, all
/// the pool's): the looks, and the questions of whom each waits for,
/// borrow the pool's connection rather than open one beside it, which the
/// server refuses (the look then blind: a refusal was taken for the
/// session being there) or which takes the slot a partition is about to
/// open. Each partition starts once and loads. QA: every look opened a
/// connection the server refused. PostgreSQL, on a cluster of the test's
/// own, whose log says which connections it refused and what was asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_long_load_at_the_limit_looks_for_its_session_on_the_pools_connection() {
    use common::throwaway::Throwaway;
    let Some(cluster) = common::throwaway::Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let mut admin = sqlx::PgConnection::connect(&url).await.expect("connect");
    let dir = tempfile::tempdir().expect("temp dir");
    let config = |url: &str, name: &str| {
        let job = replace_job(
            "fct",
            "fct",
            "2026-01-10",
            "select id, dt from src cross join (select pg_sleep(23) as p) pause \
             where dt >= :start and dt < :end",
        );
        let path = dir.path().join(name);
        let text = format!("[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"3s\"\n\n{job}");
        std::fs::write(&path, text).expect("config");
        path
    };
    for ddl in [
        "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')",
    ] {
        sqlx::Executor::execute(&mut admin, ddl).await.expect(ddl);
    }
    // The ledger, made by the superuser, as `role` grants it.
    let made = idem::config::load(&config(&url, "admin.toml")).expect("config");
    let wh = idem::warehouse::Warehouse::connect(&made.warehouse, 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    wh.close().await;
    let (name, mut setup, _, _) = role(Kind::Postgres, "postgres", 3);
    setup.push(format!("ALTER ROLE {name} SET log_statement = 'all'"));
    for ddl in setup {
        sqlx::Executor::execute(&mut admin, AssertSqlSafe(ddl.clone()))
            .await
            .expect("the role");
    }
    let operator = config(&common::as_user(&url, &name), "lim.toml");

    let mut run = crate::common::idem_command()
        .arg("--config")
        .arg(&operator)
        .args(["run", "fct", "--json", "-y", "--concurrency", "2"])
        .args(["--from", "2026-01-01", "--to", "2026-01-02"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn idem");
    let stdout = run.stdout.take().expect("its events");
    let mut events = Vec::new();
    // Once a load holds its lock (its DELETE done), only looks and questions
    // connect: the describe before it may have been refused one.
    let mut holding_from = None;
    for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
        let line = line.expect("an event");
        if holding_from.is_none() && line.contains("\"partition_log\"") && line.contains("DELETE") {
            holding_from = Some(cluster.log().len());
        }
        events.push(line);
    }
    let out = run.wait_with_output().expect("idem");
    let said = events.join("\n") + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    for day in ["2026-01-01", "2026-01-02"] {
        let started = events
            .iter()
            .filter(|e| e.contains("\"partition_started\"") && e.contains(day))
            .count();
        assert_eq!(started, 1, "{day}: {said}");
    }
    let holding_from = holding_from.unwrap_or_else(|| panic!("no load took its lock: {said}"));
    let log = cluster.log();
    let since = &log[holding_from..];
    assert!(
        !since.contains("too many connections"),
        "the server refused connections while the loads ran: {since}"
    );
    assert!(
        since
            .lines()
            .any(|l| l.contains("SELECT count(*) FROM pg_catalog.pg_locks")
                && l.contains("application_name = $")),
        "no load's session was looked for: {since}"
    );
}

/// A load of a role at its CONNECTION LIMIT (2: the load's and the run's
/// own, all the pool's) waits past 2 s for its partition's lock, which
/// another run holds: the watch for a server gone silent meanwhile asks on
/// the pool's other connection rather than open one beside it every 5 s,
/// which the server refuses (or which takes the one a load is about to
/// open). The partition loads once the lock is let go. QA: every ask
/// opened a connection, refused where the pool held both. PostgreSQL, on
/// a cluster of the test's own, whose log says which connections the role
/// opened and which it was refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_load_waiting_for_its_lock_at_the_limit_asks_on_the_pools_connection() {
    use common::throwaway::Throwaway;
    let Some(cluster) = common::throwaway::Cluster::new() else {
        return;
    };
    let url = cluster.url();
    let mut admin = sqlx::PgConnection::connect(&url).await.expect("connect");
    let dir = tempfile::tempdir().expect("temp dir");
    let jobs = [
        replace_job(
            "held",
            "fct",
            "2026-01-10",
            "select id, dt from src cross join (select pg_sleep(10) as p) pause \
             where dt >= :start and dt < :end",
        ),
        replace_job("fct", "fct", "2026-01-10", SRC),
    ]
    .concat();
    let config = |url: &str, name: &str| {
        let path = dir.path().join(name);
        let text = format!("[warehouse]\nurl = \"{url}\"\nconnect_timeout = \"3s\"\n\n{jobs}");
        std::fs::write(&path, text).expect("config");
        path
    };
    for ddl in [
        "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01')",
    ] {
        sqlx::Executor::execute(&mut admin, ddl).await.expect(ddl);
    }
    let superuser = config(&url, "admin.toml");
    let made = idem::config::load(&superuser).expect("config");
    let wh = idem::warehouse::Warehouse::connect(&made.warehouse, 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    wh.close().await;
    let (name, mut setup, _, _) = role(Kind::Postgres, "postgres", 2);
    // The cluster's own: its log names each connection's role.
    setup.push("ALTER SYSTEM SET log_connections = on".into());
    setup.push("SELECT pg_reload_conf()".into());
    for ddl in setup {
        sqlx::Executor::execute(&mut admin, AssertSqlSafe(ddl.clone()))
            .await
            .expect("the role");
    }
    let operator = config(&common::as_user(&url, &name), "lim.toml");
    let first_day = ["--from", "2026-01-01", "--to", "2026-01-01", "--json", "-y"];

    let mut holder = crate::common::idem_command()
        .arg("--config")
        .arg(&superuser)
        .args(["run", "held"])
        .args(first_day)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn idem");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
        holder.stdout.take().expect("its events"),
    ));
    // The DELETE is logged once done, under the lock; the INSERT sleeps.
    let holding =
        lines.any(|l| l.is_ok_and(|l| l.contains("\"partition_log\"") && l.contains("DELETE")));
    assert!(holding, "the held load never took its lock");
    let run = crate::common::idem_command()
        .arg("--config")
        .arg(&operator)
        .args(["run", "fct", "--concurrency", "1"])
        .args(first_day)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn idem");
    let lock_waits = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted";
    assert!(
        common::poll_count(&mut admin, lock_waits, 300, |n| n >= 1).await,
        "the role's load never waited for the partition's lock"
    );
    let waiting_from = (cluster.log().len(), std::time::Instant::now());
    let out = run.wait_with_output().expect("idem");
    let waited = waiting_from.1.elapsed();
    let _ = holder.wait();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("\"partition_succeeded\""), "{said}");
    assert!(!said.contains("limits connections"), "{said}");
    // Long enough for the watch to have asked (first at 2 s).
    assert!(waited.as_secs() >= 3, "the load waited only {waited:?}");
    let since = &cluster.log()[waiting_from.0..];
    assert!(
        !since.contains("too many connections"),
        "the server refused connections while the load waited: {since}"
    );
    // At most the pool's second, where it had closed it (to make room for
    // the describe's), opened again and kept: not one an ask.
    let opened = since
        .matches(&format!("connection authorized: user={name}"))
        .count();
    assert!(
        opened <= 1,
        "the role opened {opened} connections while the load waited: {since}"
    );
}
