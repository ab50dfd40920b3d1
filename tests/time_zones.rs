//! Time: partitions are UTC windows whatever the time zone of idem's
//! process, of the server or of its session, across daylight-saving
//! changes; and what is complete, and every ledger stamp, is read off the
//! warehouse's clock, not the clock of the host idem runs on.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use common::{Kind, TestDb};
use idem::engine::{Backfill, Selection};
use idem::partition::{Grain, Partition};
use sqlx::{AssertSqlSafe, Connection, Executor};

/// The offset of [`idem::clock`] is the process's: a test that connects
/// (which measures it) or sets it holds this while it runs.
static CLOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Runs statements on the test's database in a session of its own, with
/// this session time zone (none on SQLite).
async fn setup(db: &TestDb, session_zone: &str, statements: &[String]) {
    sqlx::any::install_default_drivers();
    let mut c = sqlx::AnyConnection::connect(&db.url)
        .await
        .expect("connect");
    match db.kind {
        Kind::Sqlite => {}
        Kind::Postgres => {
            c.execute(AssertSqlSafe(format!("SET TIME ZONE '{session_zone}'")))
                .await
                .expect("session time zone");
        }
        Kind::MySql => {
            c.execute(AssertSqlSafe(format!("SET time_zone = '{session_zone}'")))
                .await
                .expect("session time zone");
        }
    }
    for s in statements {
        c.execute(AssertSqlSafe(s.clone()))
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

/// An hourly job over the UTC days 2026-11-01 and 2026-11-02 (New York's
/// clocks fall back from 06:00 UTC on the first: its 01:00 comes twice) and
/// a daily one over the same days, on a source with one event every 10
/// minutes from 2026-10-31 22:00 to 2026-11-03 02:00 UTC, written by an
/// operator's session in another time zone: PostgreSQL's in New York with
/// `timestamptz` columns, MariaDB's at +05:30 with `TIMESTAMP` ones. idem
/// is given the operator's URL, which asks for that zone too (PostgreSQL's
/// `options=-c timezone=…`, MariaDB's `timezone=…`), and its sessions stay
/// in UTC: loaded and read by idem processes in three other zones, every
/// hour holds its 6 events and every day its 144, none lost or counted
/// twice, where the daily job's SQL in the operator's session counts other
/// days. (The test once set the zone by `ALTER DATABASE … SET timezone`,
/// which no session of sqlx's takes: it starts every PostgreSQL session in
/// UTC, so nothing here ran in New York.)
async fn windows_are_utc_whatever_the_time_zones(kind: Kind) {
    let _clock = CLOCK.lock().await;
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (zoned, session_zone) = match kind {
        Kind::Sqlite => ("TEXT", ""),
        Kind::Postgres => ("TIMESTAMPTZ", "America/New_York"),
        Kind::MySql => ("TIMESTAMP(3)", "+05:30"),
    };
    // Instants written with their UTC offset where the type keeps one; as
    // the session's wall time where it does not (MariaDB's TIMESTAMP reads
    // a literal in the session's zone): the same instants either way.
    let events: Vec<String> = (0..(52 * 6))
        .map(|i| {
            let utc = chrono::NaiveDate::from_ymd_opt(2026, 10, 31)
                .and_then(|d| d.and_hms_opt(22, 0, 0))
                .expect("start")
                + Duration::minutes(10 * i);
            let at = match kind {
                Kind::Sqlite => utc.format("'%Y-%m-%d %H:%M:%S'").to_string(),
                Kind::Postgres => utc.format("'%Y-%m-%d %H:%M:%S+00'").to_string(),
                Kind::MySql => (utc + Duration::minutes(330))
                    .format("'%Y-%m-%d %H:%M:%S'")
                    .to_string(),
            };
            format!("({i}, {at})")
        })
        .collect();
    setup(
        &db,
        session_zone,
        &[
            format!("CREATE TABLE src (id INTEGER NOT NULL, at {zoned} NOT NULL)"),
            format!("CREATE TABLE by_hour (id INTEGER NOT NULL, at {zoned} NOT NULL)"),
            "CREATE TABLE by_day (dt DATE NOT NULL, n INTEGER NOT NULL)".into(),
            format!("INSERT INTO src VALUES {}", events.join(", ")),
        ],
    )
    .await;
    // The day of each event as the job's own SQL reads it, in the session
    // idem opens.
    let day_of = match kind {
        Kind::Sqlite => "date(at)",
        _ => "CAST(at AS DATE)",
    };
    let (config, _) = operators_url_config(
        &db,
        session_zone,
        &format!(
            "[[jobs]]\nname = \"hourly\"\ntarget = \"by_hour\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"at\"\ngrain = \"hour\"\nstart = \"2026-11-01T00\"\nend = \"2026-11-02T23\"\n\
         sql = \"select id, at from src where at >= :start and at < :end\"\n\n\
         [[jobs]]\nname = \"daily\"\ntarget = \"by_day\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-11-01\"\nend = \"2026-11-02\"\n\
         sql = \"select {day_of} as dt, count(*) as n from src where at >= :start and at < :end group by {day_of}\"\n"
        ),
    );
    let idem_in = |zone: &str, args: &[&str]| {
        let out = crate::common::idem_command()
            .env("TZ", zone)
            .arg("--config")
            .arg(&config)
            .args(args)
            .output()
            .expect("idem ran");
        common::stdout_ok(&out)
    };
    let ran_at = Utc::now();
    idem_in("America/New_York", &["run", "hourly", "--yes"]);
    idem_in("Pacific/Chatham", &["run", "daily", "--yes"]);
    // A range named on the command line is UTC hours too: the repeated
    // New York hour is two partitions, each of its own 6 events.
    idem_in(
        "Asia/Kolkata",
        &[
            "run",
            "hourly",
            "--from",
            "2026-11-01T05",
            "--to",
            "2026-11-01T06",
            "--yes",
        ],
    );

    let status = idem_in(
        "Pacific/Chatham",
        &[
            "status",
            "--format",
            "csv",
            "--from",
            "2026-11-01",
            "--to",
            "2026-11-02",
        ],
    );
    let mut rows: HashMap<(String, String), (String, String, String)> = HashMap::new();
    for line in status.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        rows.insert(
            (cells[0].to_string(), cells[1].to_string()),
            (
                cells[2].to_string(),
                cells[3].to_string(),
                cells[8].to_string(),
            ),
        );
    }
    let hours = idem::partition::range(
        Partition::containing(Grain::Hour, at(2026, 11, 1, 0)),
        Partition::containing(Grain::Hour, at(2026, 11, 2, 23)),
    );
    assert_eq!(hours.len(), 48);
    for (job, partitions, rows_each) in [
        ("hourly", hours, "6"),
        (
            "daily",
            vec![
                Partition::containing(Grain::Day, at(2026, 11, 1, 0)),
                Partition::containing(Grain::Day, at(2026, 11, 2, 0)),
            ],
            "1",
        ),
    ] {
        for p in partitions {
            let (state, rows_now, finished) = rows
                .get(&(job.to_string(), p.name()))
                .unwrap_or_else(|| panic!("{job} {p} missing from:\n{status}"));
            assert_eq!(
                (state.as_str(), rows_now.as_str()),
                ("loaded", rows_each),
                "{job} {p}:\n{status}"
            );
            // Stamped in UTC, not in the zone of the process that loaded it
            // (New York's is 5 hours off, Chatham's 13¾).
            let finished = DateTime::parse_from_rfc3339(finished)
                .unwrap_or_else(|e| panic!("{finished}: {e}"))
                .with_timezone(&Utc);
            assert!(
                finished >= ran_at - Duration::seconds(5)
                    && finished <= Utc::now() + Duration::seconds(5),
                "{job} {p} finished at {finished}, run between {ran_at} and now"
            );
        }
    }
    assert_eq!(rows.len(), 50, "{status}");
    // Each day's one row counts its 144 events, as the job's SQL counted
    // them in idem's session.
    let mut c = sqlx::AnyConnection::connect(&db.url)
        .await
        .expect("connect");
    let n = if kind == Kind::MySql {
        "CAST(n AS SIGNED)"
    } else {
        "CAST(n AS BIGINT)"
    };
    let per_day: Vec<i64> =
        sqlx::query(AssertSqlSafe(format!("SELECT {n} FROM by_day ORDER BY dt")))
            .fetch_all(&mut c)
            .await
            .expect("by_day")
            .iter()
            .map(|r| sqlx::Row::get(r, 0))
            .collect();
    assert_eq!(per_day, vec![144, 144]);
    // The same SQL in the operator's session counts the days in its zone:
    // a session of idem's in that zone would have loaded these.
    if kind != Kind::Sqlite {
        let zone = match kind {
            Kind::Postgres => format!("SET TIME ZONE '{session_zone}'"),
            _ => format!("SET time_zone = '{session_zone}'"),
        };
        c.execute(AssertSqlSafe(zone))
            .await
            .expect("session time zone");
        let operators: Vec<i64> = sqlx::query(AssertSqlSafe(format!(
            "SELECT CAST(COUNT(*) AS {}) FROM src WHERE {day_of} IN ('2026-11-01', '2026-11-02') \
             GROUP BY {day_of} ORDER BY 1",
            if kind == Kind::MySql {
                "SIGNED"
            } else {
                "BIGINT"
            }
        )))
        .fetch_all(&mut c)
        .await
        .expect("the operator's days")
        .iter()
        .map(|r| sqlx::Row::get(r, 0))
        .collect();
        assert_ne!(
            operators, per_day,
            "the operator's session reads other days"
        );
    }
}

/// A config on the test's database whose URL asks for `zone` as the
/// operator's own does: MariaDB's `timezone`, PostgreSQL's `options=-c
/// timezone=…` (none on SQLite).
fn operators_url_config(
    db: &TestDb,
    zone: &str,
    jobs_toml: &str,
) -> (std::path::PathBuf, idem::config::Config) {
    let (path, config) = db.config(jobs_toml);
    let asked = match db.kind {
        Kind::Sqlite => return (path, config),
        Kind::Postgres => format!("options=-c%20timezone%3D{}", zone.replace('/', "%2F")),
        Kind::MySql => format!("timezone={}", zone.replace('+', "%2B")),
    };
    let separator = if db.url.contains('?') { '&' } else { '?' };
    let text = std::fs::read_to_string(&path).expect("config").replace(
        &format!("url = \"{}\"", db.url),
        &format!("url = \"{}{separator}{asked}\"", db.url),
    );
    std::fs::write(&path, &text).expect("config");
    let config = idem::config::parse(&path, &text, &|_| None).expect("config");
    assert!(
        config.warehouse.url.ends_with(&asked),
        "{}",
        config.warehouse.url
    );
    (path, config)
}

fn at(y: i32, m: u32, d: u32, h: u32) -> chrono::NaiveDateTime {
    chrono::NaiveDate::from_ymd_opt(y, m, d)
        .and_then(|d| d.and_hms_opt(h, 0, 0))
        .expect("a time")
}

/// The offset measured on connecting is the server's: within a few seconds
/// of what the test reads of the server's clock itself (here, on the same
/// host, close to none; a wrong unit or a session time zone read into it
/// would be hours or years).
async fn the_warehouse_clock_is_measured_on_connecting(kind: Kind) {
    let _clock = CLOCK.lock().await;
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config("");
    idem::clock::set_warehouse_ahead(Duration::hours(7));
    let wh = db.warehouse(&config).await;
    let measured = idem::clock::warehouse_ahead();
    sqlx::any::install_default_drivers();
    let mut c = sqlx::AnyConnection::connect(&db.url)
        .await
        .expect("connect");
    // The test's own session, left in the server's time zone.
    let query = match kind {
        Kind::Postgres => "SELECT CAST(EXTRACT(EPOCH FROM now()) * 1000 AS bigint)",
        _ => "SELECT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
    };
    let before = Utc::now();
    let server: i64 = sqlx::Row::get(
        &sqlx::query(query)
            .fetch_one(&mut c)
            .await
            .expect("server time"),
        0,
    );
    let server = DateTime::from_timestamp_millis(server).expect("an instant");
    let ahead = server - before;
    assert!(
        (measured - ahead).num_seconds().abs() < 5,
        "measured {measured}, the server reads {ahead} ahead"
    );
    drop(wh);
}

/// A host whose clock is 3 hours behind the warehouse's: the windows it
/// loads by default end by the warehouse's clock (three more hours are
/// complete than its own says), the partition open on the warehouse's clock
/// is future, and every ledger stamp is on the warehouse's clock. (The
/// offset is set as measuring it would, the host's clock being the
/// server's here.)
async fn completeness_and_stamps_follow_the_warehouse_clock(kind: Kind) {
    let _clock = CLOCK.lock().await;
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let host_now = Utc::now().naive_utc();
    let first = Partition::containing(Grain::Hour, host_now - Duration::hours(1));
    let events: Vec<String> = (0..(8 * 6))
        .map(|i| {
            let t = first.start + Duration::minutes(10 * i);
            format!("({i}, {})", t.format("'%Y-%m-%d %H:%M:%S'"))
        })
        .collect();
    let stamp_type = match kind {
        Kind::Sqlite => "TEXT",
        Kind::Postgres => "TIMESTAMP",
        Kind::MySql => "DATETIME",
    };
    setup(
        &db,
        if kind == Kind::MySql { "+00:00" } else { "UTC" },
        &[
            format!("CREATE TABLE src (id INTEGER NOT NULL, at {stamp_type} NOT NULL)"),
            format!("CREATE TABLE tgt (id INTEGER NOT NULL, at {stamp_type} NOT NULL)"),
            format!("INSERT INTO src VALUES {}", events.join(", ")),
        ],
    )
    .await;
    let (_, config) = db.config(&format!(
        "[[jobs]]\nname = \"hourly\"\ntarget = \"tgt\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"at\"\ngrain = \"hour\"\nstart = \"{}\"\n\
         sql = \"select id, at from src where at >= :start and at < :end\"\n",
        first.name()
    ));
    let wh = db.warehouse(&config).await;
    let ahead = Duration::hours(3);
    idem::clock::set_warehouse_ahead(ahead);
    let job = &config.jobs[0];
    let backfill = Backfill::plan(&wh, job, &Selection::default(), 2, 0)
        .await
        .expect("plan");
    let last = *backfill.partitions.last().expect("a partition planned");
    assert!(
        last.end() <= idem::clock::now().naive_utc() && last.end() > Utc::now().naive_utc(),
        "the last partition planned, {last}, is the last complete on the warehouse's clock"
    );
    let (summary, events) = common::run(&wh, &backfill).await;
    assert_eq!(summary.failed, 0, "{:?}", common::errors(&events));

    let statuses = idem::state::job_status(
        &wh,
        job,
        idem::partition::now_utc(),
        &std::collections::HashSet::new(),
    )
    .await
    .expect("states");
    let open = Partition::containing(Grain::Hour, idem::clock::now().naive_utc());
    let state_of = |p: Partition| {
        statuses
            .iter()
            .find(|s| s.partition == p)
            .map(|s| s.state)
            .unwrap_or_else(|| panic!("{p} has no state"))
    };
    assert_eq!(state_of(last), idem::state::LoadState::Loaded);
    assert_eq!(state_of(open), idem::state::LoadState::Future);

    let ledger = wh
        .ledger_summary(&job.name.as_str().into(), None)
        .await
        .expect("ledger");
    let success: Arc<idem::warehouse::ledger::Attempt> = ledger
        .get(&last.name())
        .and_then(|p| p.success.clone())
        .expect("its load in the ledger");
    let host = Utc::now();
    for stamp in [
        success.started_at.as_str(),
        success.locked_at.as_deref().expect("locked_at"),
        success.finished_at.as_str(),
    ] {
        let t = DateTime::parse_from_rfc3339(stamp)
            .unwrap_or_else(|e| panic!("{stamp}: {e}"))
            .with_timezone(&Utc);
        let off = t - host;
        assert!(
            (off - ahead).num_minutes().abs() < 10,
            "{stamp} is {off} off this host's clock, not on the warehouse's ({ahead} ahead)"
        );
    }
    idem::clock::set_warehouse_ahead(Duration::zero());
}

mod every_engine {
    use super::*;
    on_every_engine!(
        windows_are_utc_whatever_the_time_zones,
        completeness_and_stamps_follow_the_warehouse_clock
    );
}

mod server_engines {
    use super::*;
    on_server_engines!(the_warehouse_clock_is_measured_on_connecting);
}

/// A host whose clock is 3 hours behind the warehouse's, before idem has
/// connected and measured it: what the command line asks is checked by the
/// warehouse's clock, not refused by the host's (QA: `run --to` the hour
/// that had just ended on the warehouse was refused as "not ended yet",
/// `verify` and `status --from` of an hour begun on it as not begun). The
/// offset idem holds before connecting is set 3 hours behind, as such a
/// host's clock reads; connecting measures the warehouse's (SQLite's: this
/// host's, the true one here).
#[tokio::test]
async fn what_is_asked_is_checked_by_the_warehouse_clock_not_the_hosts() {
    let _clock = CLOCK.lock().await;
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let now = Partition::containing(Grain::Hour, Utc::now().naive_utc());
    let first = now.prev().prev().prev().prev();
    let events: Vec<String> = (0..(5 * 6))
        .map(|i| {
            let t = first.start + Duration::minutes(10 * i);
            format!("({i}, {})", t.format("'%Y-%m-%d %H:%M:%S'"))
        })
        .collect();
    setup(
        &db,
        "UTC",
        &[
            "CREATE TABLE src (id INTEGER NOT NULL, at TEXT NOT NULL)".to_string(),
            "CREATE TABLE tgt (id INTEGER NOT NULL, at TEXT NOT NULL)".to_string(),
            format!("INSERT INTO src VALUES {}", events.join(", ")),
        ],
    )
    .await;
    let (config, _) = db.config(&format!(
        "[[jobs]]\nname = \"hourly\"\ntarget = \"tgt\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"at\"\ngrain = \"hour\"\nstart = \"{}\"\n\
         sql = \"select id, at from src where at >= :start and at < :end\"\n",
        first.name()
    ));
    let host_behind = || idem::clock::set_warehouse_ahead(-Duration::hours(3));
    let just_ended = now.prev().name();
    let run = |to: &str, dry_run: bool| idem::cli::RunArgs {
        job: "hourly".into(),
        to: Some(to.into()),
        dry_run,
        yes: true,
        ..Default::default()
    };
    host_behind();
    let preview = idem::cli::run(&config, run(&just_ended, true)).await;
    assert_eq!(
        preview,
        idem::exit::Exit::Ok,
        "run --dry-run --to {just_ended}"
    );
    host_behind();
    let loaded = idem::cli::run(&config, run(&just_ended, false)).await;
    assert_eq!(loaded, idem::exit::Exit::Ok, "run --to {just_ended}");
    host_behind();
    let proved = idem::cli::verify(&config, "hourly", &just_ended).await;
    assert_eq!(proved, idem::exit::Exit::Ok, "verify {just_ended}");
    host_behind();
    let shown = idem::cli::status(
        &config,
        idem::cli::StatusArgs {
            job: Some("hourly".into()),
            from: Some(now.name()),
            to: None,
            format: idem::cli::StatusFormat::Json,
            anomalies_only: false,
            refused_only: false,
            states: Vec::new(),
            reconcile: false,
        },
    )
    .await;
    assert_eq!(shown, idem::exit::Exit::Ok, "status --from {now}");
    // The hour open on the warehouse's clock is still refused, once it is
    // known: by the warehouse's clock, not let through by the host's lead.
    host_behind();
    let open = idem::cli::run(&config, run(&now.name(), true)).await;
    assert_eq!(open, idem::exit::Exit::Usage, "run --to {now}, open");
    let rows: i64 = {
        use sqlx::Connection;
        let mut c = sqlx::AnyConnection::connect(&db.url)
            .await
            .expect("connect");
        sqlx::query_scalar("SELECT COUNT(*) FROM tgt")
            .fetch_one(&mut c)
            .await
            .expect("count")
    };
    assert_eq!(rows, 4 * 6, "the four hours ended on the warehouse's clock");
    idem::clock::set_warehouse_ahead(Duration::zero());
}

/// A warehouse URL asking its sessions for another time zone than UTC is
/// told, by `idem lint`, that idem's sessions do not take it, and how a job
/// means a local day (QA: the URL's zone was overridden without a word,
/// and a job's `CAST(ts AS DATE)` read other days than in the operator's
/// own client). A URL asking none, or UTC, is told nothing.
#[test]
fn lint_says_that_idems_sessions_do_not_take_the_urls_time_zone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("idem.toml");
    let job = common::replace_job(
        "fct",
        "fct",
        "2026-01-02",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    for (url, told) in [
        (
            "mysql://idem@127.0.0.1:9/w?timezone=%2B05:30",
            Some("CONVERT_TZ(ts, '+00:00', '+05:30')"),
        ),
        (
            "postgres://idem@127.0.0.1:9/w?options=-c%20timezone%3DAmerica%2FNew_York",
            Some("AT TIME ZONE 'America/New_York'"),
        ),
        ("mysql://idem@127.0.0.1:9/w?timezone=%2B00:00", None),
        ("postgres://idem@127.0.0.1:9/w", None),
    ] {
        std::fs::write(&path, format!("[warehouse]\nurl = \"{url}\"\n\n{job}")).expect("config");
        let out = common::idem(&path, &["lint", "--offline"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said = stderr.contains("idem's sessions run in UTC whatever it asks");
        assert_eq!(said, told.is_some(), "{url}:\n{stderr}");
        if let Some(told) = told {
            assert!(stderr.contains(told), "{url}:\n{stderr}");
        }
    }
}

/// `idem init` of a URL asking its sessions for another zone says, as lint
/// does, that idem's run in UTC: the starter's jobs are written against it.
#[tokio::test]
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
async fn init_says_that_idems_sessions_do_not_take_the_urls_time_zone() {
    let db = TestDb::new(Kind::Postgres).await.expect("postgres");
    let sep = if db.url.contains('?') { '&' } else { '?' };
    let url = format!("{}{sep}options=-c%20timezone%3DAmerica%2FNew_York", db.url);
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("idem.toml");
    let out = crate::common::idem_command()
        .arg("--config")
        .arg(&config)
        .args(["init", &url])
        .output()
        .expect("idem ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("note: the warehouse URL asks its sessions for time zone America/New_York, but idem's sessions run in UTC"),
        "{stdout}"
    );
}

/// A role's and a database's default time zone (`ALTER ROLE … SET
/// timezone`, `ALTER DATABASE … SET timezone`) is what the operator's own
/// psql reads in, but never idem's sessions: the driver starts each in
/// UTC (a startup parameter, which outranks both) and idem sets UTC again,
/// so a job's `CAST(at AS DATE)` under that role loads UTC days. `idem
/// lint` and `idem init` said nothing of it (QA: the operator's
/// `created_at::date` gave other days than idem's loads). They say it
/// once, naming the setting that wins (the role's over the database's),
/// and nothing once both are reset. The role and the database are the
/// test's own.
#[tokio::test]
#[cfg_attr(not(idem_test_postgres), ignore = "needs IDEM_TEST_POSTGRES_URL")]
async fn a_roles_or_databases_default_zone_is_told_and_never_taken() {
    let db = TestDb::new(Kind::Postgres).await.expect("postgres");
    let database = common::database(&db.url);
    let role = format!("{database}_tz");
    // One event an hour through the UTC days 2026-11-01 and -02.
    let events: Vec<String> = (0..48)
        .map(|h| format!("({h}, TIMESTAMPTZ '2026-11-01 00:00:00+00' + {h} * INTERVAL '1 hour')"))
        .collect();
    setup(&db, "UTC", &[format!("CREATE ROLE {role} LOGIN")]).await;
    let url = common::as_user(&db.url, &role);
    let config = db.path().join("role.toml");
    let body = async {
        setup(
            &db,
            "UTC",
            &[
                format!("GRANT CREATE ON DATABASE {database} TO {role}"),
                "CREATE TABLE src (id INTEGER NOT NULL, at TIMESTAMPTZ NOT NULL)".into(),
                "CREATE TABLE by_day (dt DATE NOT NULL, n INTEGER NOT NULL)".into(),
                format!("INSERT INTO src VALUES {}", events.join(", ")),
                format!("GRANT SELECT ON src TO {role}"),
                format!("GRANT ALL ON by_day TO {role}"),
                format!("ALTER DATABASE {database} SET timezone = 'Asia/Tokyo'"),
                format!("ALTER ROLE {role} SET timezone = 'America/New_York'"),
            ],
        )
        .await;
        std::fs::write(
            &config,
            format!(
                "[warehouse]\nurl = \"{url}\"\n\n[[jobs]]\nname = \"daily\"\ntarget = \"by_day\"\n\
                 strategy = \"replace_partition\"\npartition_column = \"dt\"\ngrain = \"day\"\n\
                 start = \"2026-11-01\"\nend = \"2026-11-02\"\n\
                 sql = \"select CAST(at AS DATE) as dt, count(*) as n from src where at >= :start and at < :end group by CAST(at AS DATE)\"\n"
            ),
        )
        .expect("config");
        common::stdout_ok(&common::idem(&config, &["run", "daily", "--yes"]));
        let mut admin = sqlx::AnyConnection::connect(&db.url)
            .await
            .expect("connect");
        let per_day: Vec<(String, i64)> =
            sqlx::query("SELECT CAST(dt AS TEXT), CAST(n AS BIGINT) FROM by_day ORDER BY dt")
                .fetch_all(&mut admin)
                .await
                .expect("by_day")
                .iter()
                .map(|r| (sqlx::Row::get(r, 0), sqlx::Row::get(r, 1)))
                .collect();
        assert_eq!(
            per_day,
            [
                ("2026-11-01".to_string(), 24),
                ("2026-11-02".to_string(), 24)
            ],
            "idem's session read UTC days, not New York's"
        );

        let told = "the server gives sessions that ask for no time zone";
        let lint_says = || {
            let out = common::idem(&config, &["lint"]);
            String::from_utf8_lossy(&out.stderr).into_owned()
        };
        let said = lint_says();
        assert_eq!(said.matches(told).count(), 1, "{said}");
        for part in [
            format!("America/New_York (ALTER ROLE {role} SET timezone)"),
            "SET TIME ZONE 'UTC'".to_string(),
            "CAST(ts AT TIME ZONE 'America/New_York' AS DATE)".to_string(),
        ] {
            assert!(said.contains(&part), "{part}:\n{said}");
        }
        let init = crate::common::idem_command()
            .arg("--config")
            .arg(db.path().join("init.toml"))
            .args(["init", &url])
            .output()
            .expect("idem ran");
        let init = common::stdout_ok(&init);
        assert_eq!(init.matches(told).count(), 1, "{init}");
        assert!(init.contains("America/New_York (ALTER ROLE"), "{init}");

        setup(&db, "UTC", &[format!("ALTER ROLE {role} RESET timezone")]).await;
        let said = lint_says();
        assert!(
            said.contains(&format!(
                "{told} Asia/Tokyo (ALTER DATABASE {database} SET timezone)"
            )),
            "{said}"
        );
        setup(
            &db,
            "UTC",
            &[format!("ALTER DATABASE {database} RESET timezone")],
        )
        .await;
        let said = lint_says();
        assert!(!said.contains(told), "{said}");
    };
    common::with_cleanup(
        body,
        setup(
            &db,
            "UTC",
            &[format!("DROP OWNED BY {role}"), format!("DROP ROLE {role}")],
        ),
    )
    .await;
}
