//! An operator whose role was granted a ledger another role made runs
//! idem: a start creates only what is missing, so it never asks for the
//! right to create what is there. A role that may not create a missing
//! ledger is told which objects and which grants it needs; one whose
//! sessions are read-only reads the states and is refused a run up front;
//! one whose sessions have a statement timeout of their own is bound by it
//! unless the config lifts it. Commands that only read make nothing: on a
//! warehouse idem never ran on they leave no ledger behind.

mod common;
mod pty;

use common::{Kind, TestDb, idem, merge_job, replace_job, stdout_ok};
use sqlx::{AssertSqlSafe, Executor, Row};

const SRC: &str = "select id, dt from src where dt >= :start and dt < :end";

/// A config of these jobs for `user` on the test's warehouse.
fn config_as(db: &TestDb, user: &str, jobs: &str) -> std::path::PathBuf {
    let path = db.path().join(format!("{user}.toml"));
    let url = common::as_user(&db.url, user);
    std::fs::write(&path, format!("[warehouse]\nurl = \"{url}\"\n\n{jobs}"))
        .expect("the role's config");
    path
}

/// The database a server URL names.
async fn ledger_rows(wh: &idem::warehouse::Warehouse, ledger: &str) -> i64 {
    sqlx::query(AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM {ledger} WHERE status = 'succeeded'"
    )))
    .fetch_one(wh.pool())
    .await
    .expect("the ledger")
    .try_get::<i64, _>(0)
    .expect("a count")
}

/// The engine's own words for making a role, granting it a ledger made by
/// the admin, and dropping it.
struct Role {
    name: String,
    create: Vec<String>,
    grants: Vec<String>,
    drop: Vec<String>,
    ledger: &'static str,
}

fn role(kind: Kind, db: &str) -> Role {
    let name = format!("{db}_op");
    match kind {
        Kind::Postgres => Role {
            create: vec![format!("CREATE ROLE {name} LOGIN")],
            grants: vec![
                format!("GRANT USAGE ON SCHEMA idem TO {name}"),
                format!("GRANT SELECT, INSERT ON idem.attempts, idem.definitions TO {name}"),
                format!("GRANT SELECT ON src TO {name}"),
                format!("GRANT SELECT, INSERT, DELETE ON fct TO {name}"),
                format!("GRANT SELECT, INSERT, UPDATE ON dim TO {name}"),
            ],
            drop: vec![format!("DROP OWNED BY {name}"), format!("DROP ROLE {name}")],
            ledger: "idem.attempts",
            name,
        },
        _ => Role {
            create: vec![format!("CREATE USER '{name}'@'%'")],
            grants: vec![
                format!("GRANT SELECT, INSERT ON {db}.idem_attempts TO '{name}'@'%'"),
                format!("GRANT SELECT, INSERT ON {db}.idem_definitions TO '{name}'@'%'"),
                format!("GRANT SELECT ON {db}.src TO '{name}'@'%'"),
                format!("GRANT SELECT, INSERT, DELETE ON {db}.fct TO '{name}'@'%'"),
                format!("GRANT SELECT, INSERT, UPDATE ON {db}.dim TO '{name}'@'%'"),
                // A merge stages its window in a temporary table.
                format!("GRANT CREATE TEMPORARY TABLES ON {db}.* TO '{name}'@'%'"),
            ],
            drop: vec![format!("DROP USER IF EXISTS '{name}'@'%'")],
            ledger: "idem_attempts",
            name,
        },
    }
}

async fn a_role_granted_the_ledger_loads_and_one_without_is_told_what_it_needs(kind: Kind) {
    let db = TestDb::new(kind).await.expect("server");
    let job =
        replace_job("fct", "fct", "2026-01-02", SRC) + &merge_job("dim", "dim", "2026-01-02", SRC);
    let (_, config) = db.config(&job);
    // The admin makes the tables and, with its first start, the ledger.
    let admin = db.warehouse(&config).await;
    common::exec(
        &admin,
        &[
            "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
            "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-01'), (3, '2026-01-02')".into(),
            "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
            "CREATE TABLE dim (id BIGINT NOT NULL PRIMARY KEY, dt DATE NOT NULL)".into(),
        ],
    )
    .await;
    let role = role(kind, &common::database(&db.url));
    common::exec(&admin, &role.create).await;
    let body = async {
        common::exec(&admin, &role.grants).await;
        let operator = config_as(&db, &role.name, &job);
        // A ledger an older idem made, without the index that numbers
        // attempts, which the role may not make: it starts all the same.
        common::exec(&admin, &[drop_numbers_index(kind)]).await;

        // A first load and a re-run of each job, as the operator: nothing
        // to create.
        for turn in ["first load", "re-run"] {
            for job in ["fct", "dim"] {
                let out = idem(&operator, &["run", job, "-y"]);
                let text = stdout_ok(&out);
                assert!(
                    text.contains("2 succeeded, 0 failed"),
                    "{job} {turn}: {text}"
                );
            }
        }
        assert_eq!(ledger_rows(&admin, role.ledger).await, 8);

        // MariaDB/MySQL: a merge's stage needs CREATE TEMPORARY TABLES,
        // which the server's "Access denied … to database" does not name.
        if kind == Kind::MySql {
            let db_name = common::database(&db.url);
            common::exec(
                &admin,
                &[format!(
                    "REVOKE CREATE TEMPORARY TABLES ON {db_name}.* FROM '{}'@'%'",
                    role.name
                )],
            )
            .await;
            let out = idem(&operator, &["run", "dim", "-y"]);
            let said = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{said}");
            assert!(said.contains("needs CREATE TEMPORARY TABLES"), "{said}");
        }

        // PostgreSQL: a schema made for the operator, without its tables,
        // on a database where it may create nothing: the tables are made
        // in it, the schema left as it is.
        if kind == Kind::Postgres {
            common::exec(
                &admin,
                &[
                    "DROP SCHEMA idem CASCADE".into(),
                    format!("CREATE SCHEMA idem AUTHORIZATION {}", role.name),
                ],
            )
            .await;
            stdout_ok(&idem(&operator, &["run", "fct", "-y"]));
            let owner: String = sqlx::query(
                "SELECT CAST(tableowner AS TEXT) FROM pg_tables WHERE schemaname = 'idem' AND tablename = 'attempts'",
            )
            .fetch_one(admin.pool())
            .await
            .expect("the ledger's owner")
            .try_get(0)
            .expect("a name");
            assert_eq!(owner, role.name);
        }

        // A ledger the role may not read: said as such, not as one to make.
        let revoke = match kind {
            Kind::Postgres => format!("REVOKE USAGE ON SCHEMA idem FROM {}", role.name),
            _ => format!(
                "REVOKE SELECT, INSERT ON {}.idem_attempts FROM '{}'@'%'",
                common::database(&db.url),
                role.name
            ),
        };
        common::exec(&admin, std::slice::from_ref(&revoke)).await;
        let out = idem(&operator, &["status", "fct"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot read idem's ledger"), "{err}");
        assert!(err.contains("grant this role"), "{err}");
        // Granted again (MariaDB hides from a role with no right on a table
        // whether it is there).
        common::exec(
            &admin,
            &[revoke
                .replacen("REVOKE", "GRANT", 1)
                .replacen(" FROM ", " TO ", 1)],
        )
        .await;

        // No ledger, and no right to make one: said with what to grant.
        let gone: Vec<String> = match kind {
            Kind::Postgres => vec!["DROP SCHEMA idem CASCADE".into()],
            _ => vec![
                "DROP TABLE idem_attempts".into(),
                "DROP TABLE idem_definitions".into(),
            ],
        };
        common::exec(&admin, &gone).await;
        // Reading makes nothing, so the role reads: the target's rows
        // are there, the attempts that were recorded are not.
        let status = stdout_ok(&idem(&operator, &["status", "fct"]));
        assert!(status.contains("2026-01-01"), "{status}");
        let out = idem(&operator, &["run", "fct", "-y"]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        let grants = match kind {
            Kind::Postgres => {
                "grant this one USAGE on schema idem and SELECT, INSERT on idem.attempts and idem.definitions"
            }
            _ => "grant this one SELECT, INSERT on idem_attempts and idem_definitions",
        };
        assert!(err.contains("cannot make idem's ledger"), "{err}");
        assert!(err.contains(grants), "{err}");
        assert!(!err.contains("password"), "{err}");
    };
    common::with_cleanup(body, common::exec(&admin, &role.drop)).await;
    admin.close().await;
}

#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_role_granted_the_ledger_loads_and_one_without_is_told_what_it_needs() {
    a_role_granted_the_ledger_loads_and_one_without_is_told_what_it_needs(Kind::Postgres).await;
}

#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_a_role_granted_the_ledger_loads_and_one_without_is_told_what_it_needs() {
    a_role_granted_the_ledger_loads_and_one_without_is_told_what_it_needs(Kind::MySql).await;
}

/// A role whose sessions are read-only (as on a standby) reads the states
/// and previews a run; a run is refused before it plans, naming why, and
/// leaves nothing in the ledger.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_read_only_role_reads_states_and_is_refused_a_run() {
    let db = TestDb::new(Kind::Postgres).await.expect("server");
    let job = replace_job("fct", "fct", "2026-01-02", SRC);
    let (admin_config, config) = db.config(&job);
    let admin = db.warehouse(&config).await;
    common::exec(
        &admin,
        &[
            "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
            "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')".into(),
            "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
        ],
    )
    .await;
    stdout_ok(&idem(&admin_config, &["run", "fct", "-y"]));
    let database = common::database(&db.url);
    let name = format!("{database}_ro");
    common::exec(&admin, &[format!("CREATE ROLE {name} LOGIN")]).await;
    let body = async {
        common::exec(
            &admin,
            &[
                format!("GRANT USAGE ON SCHEMA idem TO {name}"),
                format!("GRANT SELECT ON idem.attempts, idem.definitions, src, fct TO {name}"),
                format!("ALTER ROLE {name} IN DATABASE {database} SET default_transaction_read_only = on"),
            ],
        )
        .await;
        let reader = config_as(&db, &name, &job);

        let status = stdout_ok(&idem(&reader, &["status", "fct"]));
        assert_eq!(status.matches("loaded").count(), 2, "{status}");
        stdout_ok(&idem(&reader, &["run", "fct", "--dry-run"]));

        let out = idem(&reader, &["run", "fct", "-y"]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is read-only for idem"), "{err}");
        assert!(err.contains("default_transaction_read_only"), "{err}");
        let attempts: i64 = sqlx::query("SELECT COUNT(*) FROM idem.attempts")
            .fetch_one(admin.pool())
            .await
            .expect("the ledger")
            .try_get(0)
            .expect("a count");
        assert_eq!(attempts, 2, "the refused run recorded nothing");

        // The console shows the states and refuses the run the same way.
        let reader_arg = reader.to_str().expect("a path");
        let mut console = pty::Console::start(db.path(), &["--config", reader_arg]);
        console.wait_for_states(&["fct", "Mo Tu We Th Fr Sa Su"]);
        console.send(":goto 2026-01-01\r");
        console.wait_for(&[" 2026-01-01 "]);
        console.send("r");
        console.wait_for(&["Run fct?"]);
        console.send("\r");
        console.wait_for(&["run not started", "is read-only for idem"]);
        console.send("q");
        assert!(console.wait_exit().success());
    };
    common::with_cleanup(
        body,
        common::exec(
            &admin,
            &[format!("DROP OWNED BY {name}"), format!("DROP ROLE {name}")],
        ),
    )
    .await;
    admin.close().await;
}

/// A role whose sessions have a statement timeout of their own (a DBA's
/// `ALTER ROLE … SET statement_timeout`, MariaDB's `MAX_STATEMENT_TIME`):
/// with `statement_timeout` left out, that timeout stops a long load as it
/// would stop the role's own client; `statement_timeout = "0s"` lifts it
/// for idem's sessions.
async fn a_roles_own_statement_timeout_holds_unless_zero_lifts_it(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    let wh = db.warehouse(&config).await;
    let database = common::database(&db.url);
    let name = format!("{database}_slow");
    let (create, drop, pause) = match kind {
        Kind::Postgres => (
            vec![
                format!("CREATE ROLE {name} LOGIN SUPERUSER"),
                format!("ALTER ROLE {name} SET statement_timeout = '500ms'"),
            ],
            vec![format!("DROP OWNED BY {name}"), format!("DROP ROLE {name}")],
            "(select pg_sleep(1)) pause",
        ),
        _ => (
            vec![
                format!("CREATE USER '{name}'@'%' WITH MAX_STATEMENT_TIME 0.5"),
                format!("GRANT ALL PRIVILEGES ON {database}.* TO '{name}'@'%'"),
            ],
            vec![format!("DROP USER IF EXISTS '{name}'@'%'")],
            "(select sleep(1)) pause",
        ),
    };
    common::exec(
        &wh,
        &[
            "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)".to_string(),
            "INSERT INTO src VALUES (1, '2026-01-01')".to_string(),
            "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)".to_string(),
        ],
    )
    .await;
    common::exec(&wh, &create).await;
    let job = replace_job(
        "fct",
        "fct",
        "2026-01-01",
        &format!("select id, dt from src, {pause} where dt >= :start and dt < :end"),
    );
    let config_with = |lines: &str| {
        let path = db.path().join(format!("slow{}.toml", lines.len()));
        let url = common::as_user(&db.url, &name);
        std::fs::write(
            &path,
            format!("[warehouse]\nurl = \"{url}\"\n{lines}\n{job}"),
        )
        .expect("config");
        path
    };
    common::with_cleanup(
        async {
            let out = idem(&config_with(""), &["run", "fct"]);
            let said = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{kind:?}: {said}");
            assert!(
                said.contains("statement timeout") || said.contains("max_statement_time"),
                "{kind:?}: {said}"
            );
            let out = idem(&config_with("statement_timeout = \"0s\""), &["run", "fct"]);
            stdout_ok(&out);
        },
        common::exec(&wh, &drop),
    )
    .await;
    wh.close().await;
}

on_server_engines!(a_roles_own_statement_timeout_holds_unless_zero_lifts_it);

/// The statement dropping the ledger's index on (partition_key, job,
/// attempt), as a ledger an older idem made lacks it.
fn drop_numbers_index(kind: Kind) -> String {
    match kind {
        Kind::Postgres => "DROP INDEX idem.attempts_by_attempt",
        Kind::MySql => "DROP INDEX idem_attempts_by_attempt ON idem_attempts",
        Kind::Sqlite => "DROP INDEX idem_attempts_by_attempt",
    }
    .to_string()
}

/// The ledger's index on (partition_key, job, attempt).
mod numbers_index {
    use super::*;

    /// The columns of the index that numbers attempts, in order; empty
    /// when there is none.
    async fn columns(kind: Kind, wh: &idem::warehouse::Warehouse) -> String {
        let query = match kind {
            Kind::Postgres => {
                "SELECT COALESCE(string_agg(CAST(a.attname AS text), ',' ORDER BY k.n), '') \
                 FROM pg_index i CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY k(attnum, n) \
                 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
                 WHERE i.indexrelid = to_regclass('idem.attempts_by_attempt')"
            }
            Kind::MySql => {
                "SELECT CAST(COALESCE(GROUP_CONCAT(column_name ORDER BY seq_in_index), '') AS CHAR) \
                 FROM information_schema.statistics WHERE table_schema = DATABASE() \
                 AND index_name = 'idem_attempts_by_attempt'"
            }
            Kind::Sqlite => {
                "SELECT COALESCE(group_concat(name, ','), '') FROM \
                 (SELECT name FROM pragma_index_info('idem_attempts_by_attempt') ORDER BY seqno)"
            }
        };
        wh.pool()
            .fetch_one(query)
            .await
            .expect("the catalogue")
            .try_get(0)
            .expect("a list")
    }

    /// A new ledger has it, and one an older idem made gets it at a start,
    /// even of two processes starting at once. The plans that read it are
    /// in bench/RESULTS.md §25.
    async fn a_start_makes_the_index_that_numbers_attempts(kind: Kind) {
        let db = TestDb::new(kind).await.expect("server");
        let (_, config) = db.config(&replace_job("fct", "fct", "2026-01-02", SRC));
        let first = db.warehouse(&config).await;
        assert_eq!(columns(kind, &first).await, "partition_key,job,attempt");
        common::exec(&first, &[drop_numbers_index(kind)]).await;
        assert_eq!(columns(kind, &first).await, "");
        let (a, b) = futures::join!(db.warehouse(&config), db.warehouse(&config));
        assert_eq!(columns(kind, &first).await, "partition_key,job,attempt");
        for wh in [first, a, b] {
            wh.close().await;
        }
    }

    on_every_engine!(a_start_makes_the_index_that_numbers_attempts);
}

/// The commands that only read, on a warehouse idem never ran on.
mod fresh_warehouse {
    use super::*;

    /// How many of idem's ledger objects a warehouse has (its schema on
    /// PostgreSQL, its tables elsewhere).
    async fn ledger_objects(kind: Kind, db: &TestDb, wh: &idem::warehouse::Warehouse) -> i64 {
        let query = match kind {
            Kind::Postgres => {
                "SELECT COUNT(*) FROM pg_namespace WHERE nspname = 'idem'".to_string()
            }
            Kind::MySql => format!(
                "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '{}' AND table_name LIKE 'idem%'",
                common::database(&db.url)
            ),
            Kind::Sqlite => {
                "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'idem%'".to_string()
            }
        };
        sqlx::query(AssertSqlSafe(query))
            .fetch_one(wh.pool())
            .await
            .expect("the catalogue")
            .try_get::<i64, _>(0)
            .expect("a count")
    }

    /// On a warehouse idem never ran on, the commands that only read (`status`,
    /// `run --dry-run`, `log`, `lint`, `diff`) and the console until it runs
    /// leave it as they found them: no ledger is made. The first run makes it;
    /// a console opened before it sees that run's attempts at its next refresh.
    async fn reading_a_warehouse_idem_never_ran_on_makes_nothing(kind: Kind) {
        let db = TestDb::new(kind).await.expect("server");
        let job = replace_job("fct", "fct", "2026-01-02", SRC);
        let (path, config) = db.config(&job);
        let admin = idem::warehouse::Warehouse::connect_to_read(&config.warehouse, 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        common::exec(
            &admin,
            &[
                "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
                "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')".into(),
                "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
            ],
        )
        .await;
        let status = stdout_ok(&idem(&path, &["status", "fct"]));
        assert_eq!(status.matches("missing").count(), 2, "{kind:?}: {status}");
        let plan = stdout_ok(&idem(&path, &["run", "fct", "--dry-run"]));
        assert!(plan.contains("2026-01-02"), "{kind:?}: {plan}");
        stdout_ok(&idem(&path, &["log", "fct"]));
        stdout_ok(&idem(&path, &["lint"]));
        stdout_ok(&idem(&path, &["status", "fct", "--format", "json"]));
        assert_eq!(ledger_objects(kind, &db, &admin).await, 0, "{kind:?}");

        // The console reads, then its own run makes the ledger.
        let arg = path.to_str().expect("a path");
        let mut console = pty::Console::start(db.path(), &["--config", arg]);
        console.wait_for_states(&["fct", "Mo Tu We Th Fr Sa Su"]);
        assert_eq!(ledger_objects(kind, &db, &admin).await, 0, "{kind:?}");
        console.send(":goto 2026-01-01\r");
        console.wait_for(&[" 2026-01-01 "]);
        console.send("r");
        console.wait_for(&["Run fct?"]);
        console.send("\r");
        console.wait_for(&["1 succeeded"]);
        console.send("q");
        assert!(console.wait_exit().success());
        assert!(ledger_objects(kind, &db, &admin).await > 0, "{kind:?}");
        admin.close().await;
    }

    on_every_engine!(reading_a_warehouse_idem_never_ran_on_makes_nothing);
}

/// A console opened on a warehouse without a ledger sees a run made
/// elsewhere at its next refresh: it looks for the ledger again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_opened_before_any_ledger_sees_a_run_made_elsewhere() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let job = replace_job("fct", "fct", "2026-01-02", SRC);
    let (path, config) = db.config(&job);
    let admin = idem::warehouse::Warehouse::connect_to_read(&config.warehouse, 1)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    common::exec(
        &admin,
        &[
            "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
            "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')".into(),
            "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
        ],
    )
    .await;
    let arg = path.to_str().expect("a path");
    let mut console = pty::Console::start(db.path(), &["--config", arg]);
    console.wait_for_states(&["fct", "Mo Tu We Th Fr Sa Su"]);
    console.send(":goto 2026-01-02\r");
    console.wait_for(&["missing"]);
    stdout_ok(&idem(&path, &["run", "fct", "-y", "--from", "2026-01-02"]));
    console.send("R");
    // The run's attempt is read: the detail names its run.
    console.wait_for(&["last attempt #1 succeeded"]);
    console.send("q");
    assert!(console.wait_exit().success());
    admin.close().await;
}

/// A statement the server refuses as such (SQLSTATE class 42: here a
/// source the role may not read, which only running it tells) fails every
/// partition alike: the run stops after the first, the others not started
/// and not recorded. And `dt = :partition` compares a date column with the
/// partition's name, as a literal would.
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_refused_statement_stops_the_run_at_its_first_partition() {
    let db = TestDb::new(Kind::Postgres).await.expect("server");
    let job = replace_job(
        "fct",
        "fct",
        "2026-01-03",
        "select id, dt from src where dt = :partition",
    );
    let (admin_config, config) = db.config(&job);
    let admin = db.warehouse(&config).await;
    common::exec(
        &admin,
        &[
            "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
            "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-03')".into(),
            "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
        ],
    )
    .await;
    // `:partition` against a date column loads.
    let out = idem(&admin_config, &["run", "fct", "-y", "--to", "2026-01-01"]);
    let said = stdout_ok(&out);
    assert!(said.contains("1 succeeded, 0 failed"), "{said}");

    let name = format!("{}_nosrc", common::database(&db.url));
    common::exec(&admin, &[format!("CREATE ROLE {name} LOGIN")]).await;
    let body = async {
        common::exec(
            &admin,
            &[
                format!("GRANT USAGE ON SCHEMA idem TO {name}"),
                format!("GRANT SELECT, INSERT ON idem.attempts, idem.definitions TO {name}"),
                format!("GRANT SELECT, INSERT, DELETE ON fct TO {name}"),
            ],
        )
        .await;
        let operator = config_as(&db, &name, &job);
        let out = idem(
            &operator,
            &[
                "run",
                "fct",
                "-y",
                "--concurrency",
                "1",
                "--from",
                "2026-01-02",
            ],
        );
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains("permission denied"), "{said}");
        assert!(said.contains("1 not started"), "{said}");
        let failed: i64 = sqlx::query("SELECT COUNT(*) FROM idem.attempts WHERE status = 'failed'")
            .fetch_one(admin.pool())
            .await
            .expect("the ledger")
            .try_get(0)
            .expect("a count");
        assert_eq!(failed, 1, "one attempt, not one a partition: {said}");
    };
    common::with_cleanup(
        body,
        common::exec(
            &admin,
            &[format!("DROP OWNED BY {name}"), format!("DROP ROLE {name}")],
        ),
    )
    .await;
    admin.close().await;
}

/// A read-only session on a warehouse idem never ran on: the states are
/// read (no ledger is made for them), and a run is refused as read-only,
/// not with the server's "cannot execute CREATE SCHEMA in a read-only
/// transaction".
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_read_only_session_on_a_fresh_warehouse_reads_and_is_refused_a_run() {
    let db = TestDb::new(Kind::Postgres).await.expect("server");
    let job = replace_job("fct", "fct", "2026-01-02", SRC);
    let (_, config) = db.config(&job);
    let admin = idem::warehouse::Warehouse::connect_to_read(&config.warehouse, 2)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    common::exec(
        &admin,
        &[
            "CREATE TABLE src (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
            "INSERT INTO src VALUES (1, '2026-01-01')".into(),
            "CREATE TABLE fct (id BIGINT NOT NULL, dt DATE NOT NULL)".into(),
        ],
    )
    .await;
    let database = common::database(&db.url);
    let name = format!("{database}_fresh_ro");
    common::exec(&admin, &[format!("CREATE ROLE {name} LOGIN")]).await;
    let body = async {
        common::exec(
            &admin,
            &[
                format!("GRANT SELECT ON src, fct TO {name}"),
                format!("GRANT CREATE ON DATABASE {database} TO {name}"),
                format!("ALTER ROLE {name} IN DATABASE {database} SET default_transaction_read_only = on"),
            ],
        )
        .await;
        let reader = config_as(&db, &name, &job);
        let status = stdout_ok(&idem(&reader, &["status", "fct"]));
        assert!(status.contains("missing"), "{status}");
        let out = idem(&reader, &["run", "fct", "-y"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("is read-only for idem"), "{err}");
        assert!(!err.contains("CREATE SCHEMA"), "{err}");
    };
    common::with_cleanup(
        body,
        common::exec(
            &admin,
            &[
                format!("REVOKE CREATE ON DATABASE {database} FROM {name}"),
                format!("DROP OWNED BY {name}"),
                format!("DROP ROLE {name}"),
            ],
        ),
    )
    .await;
    admin.close().await;
}
