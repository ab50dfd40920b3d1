//! Lineage on every engine: an hourly fact feeds a daily aggregate, which
//! feeds a monthly one. Dependencies come from the SQL and from
//! `depends_on`; re-running upstream hours marks exactly the downstream
//! partitions that read them stale; a cascade re-runs those in dependency
//! order and leaves them equal to a clean rebuild; a failed upstream
//! partition skips what reads it.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use common::{Kind, TestDb, idem, stdout_ok};
use idem::config::TableName;
use idem::warehouse::Warehouse;
use serde_json::Value;

/// Runs `args` (a run with `--json`), which ends well and says `line` on
/// stderr once it is over; its `run_started` event.
fn run_saying(config: &std::path::Path, args: &[&str], line: &str) -> Value {
    let ran = idem(config, args);
    let err = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "{err}");
    assert!(
        err.lines().any(|l| l == format!("idem: {line}")),
        "{line}\n{err}"
    );
    let events = json_lines(&String::from_utf8_lossy(&ran.stdout));
    events
        .into_iter()
        .find(|e| e["event"] == "run_started")
        .unwrap_or_else(|| panic!("no run_started: {}", String::from_utf8_lossy(&ran.stdout)))
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The per-engine SQL of the two aggregates, reading `from`.
fn aggregate_sql(kind: Kind, from_hourly: &str, from_daily: &str) -> (String, String) {
    let (day, month) = match kind {
        Kind::Sqlite => ("date(hr)", "date(dt, 'start of month')"),
        Kind::Postgres => ("cast(hr as date)", "cast(date_trunc('month', dt) as date)"),
        Kind::MySql => (
            "cast(hr as date)",
            "cast(date_format(dt, '%Y-%m-01') as date)",
        ),
    };
    (
        format!(
            "select {day} as dt, count(*) as n, sum(amount) as total from {from_hourly} \
             where hr >= :start and hr < :end group by {day}"
        ),
        format!(
            "select {month} as mon, sum(n) as n, sum(total) as total from {from_daily} \
             where dt >= :start and dt < :end group by {month}"
        ),
    )
}

fn job(
    name: &str,
    target: &str,
    grain: &str,
    pcol: &str,
    range: (&str, &str),
    sql: &str,
) -> String {
    format!(
        "[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"{pcol}\"\ngrain = \"{grain}\"\nstart = \"{}\"\nend = \"{}\"\n\
         sql = \"\"\"\n{sql}\n\"\"\"\n\n",
        range.0, range.1
    )
}

struct Setup {
    /// Kept for its Drop, which removes the test database.
    _db: TestDb,
    config: std::path::PathBuf,
    wh: Warehouse,
}

impl Setup {
    /// 2026-01-31T02's source rows fail the hourly target's CHECK.
    async fn fail_hour_02(&self) {
        self.wh
            .execute_script(&[
                "UPDATE src SET amount = -1 WHERE ts >= '2026-01-31 02:00:00' AND ts < '2026-01-31 03:00:00'",
            ])
            .await
            .expect("a bad hour");
    }
}

async fn setup(kind: Kind) -> Option<Setup> {
    let db = TestDb::new(kind).await?;
    let (daily, monthly) = aggregate_sql(kind, "ev_h", "agg_d");
    let (daily_clean, monthly_clean) = aggregate_sql(kind, "ev_h", "agg_d_clean");
    let hours = ("2026-01-30T00", "2026-02-02T23");
    let days = ("2026-01-30", "2026-02-02");
    let months = ("2026-01", "2026-02");
    let jobs = [
        job(
            "ev_hourly",
            "ev_h",
            "hour",
            "hr",
            hours,
            "select id, amount, ts as hr from src where ts >= :start and ts < :end",
        ),
        job("daily", "agg_d", "day", "dt", days, &daily),
        job("monthly", "agg_m", "month", "mon", months, &monthly),
        // A clean rebuild of the aggregates to compare with.
        job(
            "daily_clean",
            "agg_d_clean",
            "day",
            "dt",
            days,
            &daily_clean,
        ),
        job(
            "monthly_clean",
            "agg_m_clean",
            "month",
            "mon",
            months,
            &monthly_clean,
        ),
        // Reads nothing of idem's, but says it depends on the monthly one.
        format!(
            "{}\ndepends_on = [\"monthly\"]\n\n",
            job(
                "report",
                "report",
                "month",
                "mon",
                months,
                "select mon, n, total from agg_m where mon >= :start and mon < :end"
            )
            .trim_end()
        )
        .replace("from agg_m where", "from agg_m_copy where"),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    let ts = if kind == Kind::MySql {
        "DATETIME"
    } else {
        "TIMESTAMP"
    };
    let mut values = Vec::new();
    let mut id = 0;
    for day in ["2026-01-30", "2026-01-31", "2026-02-01", "2026-02-02"] {
        for h in 0..24 {
            for k in 0..3 {
                id += 1;
                values.push(format!(
                    "({id}, {}, '{day} {h:02}:{:02}:00')",
                    (id * 7) % 50,
                    k * 10
                ));
            }
        }
    }
    let mut ddl = vec![
        format!(
            "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, ts {ts} NOT NULL)"
        ),
        format!(
            "CREATE TABLE ev_h (id INTEGER NOT NULL, amount INTEGER NOT NULL CHECK (amount >= 0), hr {ts} NOT NULL)"
        ),
        format!(
            "INSERT INTO src (id, amount, ts) VALUES {}",
            values.join(", ")
        ),
    ];
    for t in ["agg_d", "agg_d_clean"] {
        ddl.push(format!(
            "CREATE TABLE {t} (dt DATE NOT NULL, n BIGINT NOT NULL, total BIGINT NOT NULL)"
        ));
    }
    for t in ["agg_m", "agg_m_clean", "agg_m_copy", "report"] {
        ddl.push(format!(
            "CREATE TABLE {t} (mon DATE NOT NULL, n BIGINT NOT NULL, total BIGINT NOT NULL)"
        ));
    }
    let refs: Vec<&str> = ddl.iter().map(String::as_str).collect();
    wh.execute_script(&refs).await.expect("setup");
    Some(Setup {
        _db: db,
        config,
        wh,
    })
}

/// `job partition` → state, and the stale-upstream causes, from `idem status`.
fn states(config: &Path) -> HashMap<String, (String, Vec<String>)> {
    states_of(config, &[])
}

/// [`states`] from `idem status` with more arguments (a job, a range).
fn states_of(config: &Path, args: &[&str]) -> HashMap<String, (String, Vec<String>)> {
    let out = stdout_ok(&idem(
        config,
        &[&["status", "--format", "json"], args].concat(),
    ));
    let rows: Vec<Value> = serde_json::from_str(&out).expect("json");
    rows.iter()
        .map(|r| {
            let causes = r["stale_upstream"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|c| c.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            (
                format!(
                    "{} {}",
                    r["job"].as_str().unwrap_or(""),
                    r["partition"].as_str().unwrap_or("")
                ),
                (r["state"].as_str().unwrap_or("").to_string(), causes),
            )
        })
        .collect()
}

fn stale_upstream(config: &Path) -> BTreeSet<String> {
    states(config)
        .into_iter()
        .filter(|(_, (_, causes))| !causes.is_empty())
        .map(|(k, (state, _))| {
            assert_eq!(state, "stale", "{k}");
            k
        })
        .collect()
}

async fn fingerprint(wh: &Warehouse, table: &str) -> idem::warehouse::Fingerprint {
    wh.table_fingerprint(&TableName::parse(table).expect("table"))
        .await
        .expect("fingerprint")
}

async fn lineage_from_sql_and_depends_on_drives_staleness_and_cascades(kind: Kind) {
    let Some(s) = setup(kind).await else {
        return;
    };
    let config = s.config.as_path();

    // The graph, as `idem jobs` shows it.
    let jobs = stdout_ok(&idem(config, &["jobs"]));
    assert!(
        jobs.contains("← reads ev_hourly (its SQL reads ev_h)"),
        "{jobs}"
    );
    assert!(jobs.contains("→ read by daily, daily_clean"), "{jobs}");
    assert!(jobs.contains("← reads monthly (depends_on)"), "{jobs}");

    // A first full load, upstream first.
    for j in ["ev_hourly", "daily", "monthly"] {
        stdout_ok(&idem(config, &["run", j, "--concurrency", "4"]));
    }
    assert_eq!(stale_upstream(config), BTreeSet::new());

    // A late row changes one hour; re-running that hour alone leaves
    // exactly its day stale (upstream), and nothing else: the month reads
    // the day, which has not changed yet.
    s.wh.execute_script(&["UPDATE src SET amount = amount + 1 WHERE id = 100"])
        .await
        .expect("late change");
    let hour = "2026-01-31T09";
    // The plan says which downstream partitions read the hour; the run,
    // which of them it made stale and the command that loads them.
    let plan = idem(
        config,
        &[
            "run",
            "ev_hourly",
            "--from",
            hour,
            "--to",
            hour,
            "--dry-run",
        ],
    );
    let said = String::from_utf8_lossy(&plan.stderr);
    assert!(
        said.contains("idem: daily reads what this run replaces: its 1 partition 2026-01-31 goes stale if those rows change (--cascade loads it after the run)"),
        "{said}"
    );
    assert!(
        said.contains("idem: monthly reads daily, downstream of what this run replaces: its 1 partition 2026-01 goes stale"),
        "{said}"
    );
    // daily_clean reads the hour too, but has never been loaded: it stays
    // missing, it does not go stale.
    assert!(
        said.contains("idem: daily_clean reads what this run replaces: its 1 partition 2026-01-31 was never loaded (--cascade loads it after the run)"),
        "{said}"
    );
    // `--dry-run --json` carries the same, per job (it once said nothing
    // of them: a script saw a plan without what it leaves downstream).
    let plan = idem(
        config,
        &[
            "run",
            "ev_hourly",
            "--from",
            hour,
            "--to",
            hour,
            "--dry-run",
            "--json",
        ],
    );
    let event: serde_json::Value = serde_json::from_str(&stdout_ok(&plan)).expect("JSON");
    let left: Vec<(String, String, String, String)> = event["downstream"]
        .as_array()
        .expect("downstream")
        .iter()
        .map(|d| {
            let names = |k: &str| {
                d[k].as_array()
                    .expect(k)
                    .iter()
                    .map(|p| p.as_str().unwrap_or("?"))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            (
                d["job"].as_str().unwrap_or("").to_string(),
                names("goes_stale"),
                names("never_loaded"),
                d["note"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let mut jobs: Vec<(&str, &str, &str)> = left
        .iter()
        .map(|(j, s, n, _)| (j.as_str(), s.as_str(), n.as_str()))
        .collect();
    jobs.sort();
    assert_eq!(
        jobs,
        [
            ("daily", "2026-01-31", ""),
            ("daily_clean", "", "2026-01-31"),
            ("monthly", "2026-01", ""),
            ("monthly_clean", "", "2026-01"),
            ("report", "", "2026-01"),
        ],
        "{event}"
    );
    for (_, _, _, note) in &left {
        assert!(said.contains(&format!("idem: {note}")), "{note} in {said}");
    }
    assert!(
        String::from_utf8_lossy(&plan.stderr).trim().is_empty(),
        "JSON carries it: {}",
        String::from_utf8_lossy(&plan.stderr)
    );
    let ran = idem(config, &["run", "ev_hourly", "--from", hour, "--to", hour]);
    stdout_ok(&ran);
    let said = String::from_utf8_lossy(&ran.stderr);
    let command = format!(
        "idem --config {} run daily --only stale --from 2026-01-31 --to 2026-01-31",
        config.display()
    );
    assert!(
        said.contains(&format!(
            "idem: daily reads what this run changed: its 1 partition 2026-01-31 is stale until loaded again: {command}"
        )),
        "{said}"
    );
    assert!(!said.contains("monthly"), "the month reads the day: {said}");
    let stale = stale_upstream(config);
    assert_eq!(
        stale,
        BTreeSet::from(["daily 2026-01-31".to_string()]),
        "only the day that read the hour"
    );
    assert_eq!(
        states(config)["daily 2026-01-31"].1,
        vec![format!("ev_hourly {hour}")]
    );
    // A status of a range reads the upstream ledger of that range only, and
    // says the same of it.
    let day = states_of(
        config,
        &["daily", "--from", "2026-01-31", "--to", "2026-01-31"],
    );
    assert_eq!(
        day.get("daily 2026-01-31"),
        Some(&("stale".to_string(), vec![format!("ev_hourly {hour}")]))
    );
    assert_eq!(day.len(), 1, "{day:?}");
    let others = states_of(
        config,
        &["daily", "--from", "2026-02-01", "--to", "2026-02-02"],
    );
    assert_eq!(others.len(), 2, "{others:?}");
    assert!(
        others
            .values()
            .all(|(st, causes)| st == "loaded" && causes.is_empty()),
        "{others:?}"
    );
    let month = states_of(config, &["monthly", "--from", "2026-01", "--to", "2026-01"]);
    assert_eq!(
        month.get("monthly 2026-01").map(|(st, _)| st.as_str()),
        Some("loaded"),
        "the month reads the day, not the hour: {month:?}"
    );
    // Re-running an hour whose source did not change makes nothing stale,
    // and the run says nothing of the day that reads it.
    let ran = idem(
        config,
        &[
            "run",
            "ev_hourly",
            "--from",
            "2026-02-02T01",
            "--to",
            "2026-02-02T01",
        ],
    );
    stdout_ok(&ran);
    let said = String::from_utf8_lossy(&ran.stderr);
    assert!(!said.contains("stale until loaded again"), "{said}");
    // Nor does an unchanged re-run of the hour whose day is still stale
    // from before: this run changed nothing it reads.
    let ran = idem(config, &["run", "ev_hourly", "--from", hour, "--to", hour]);
    stdout_ok(&ran);
    let said = String::from_utf8_lossy(&ran.stderr);
    assert!(!said.contains("stale until loaded again"), "{said}");
    assert_eq!(stale_upstream(config).len(), 1);

    // Another late change, run with --cascade: the dry run lists the day and
    // the month, the run commits upstream before downstream starts.
    s.wh.execute_script(&["UPDATE src SET amount = amount + 2 WHERE id = 30"])
        .await
        .expect("late change");
    let plan = stdout_ok(&idem(
        config,
        &[
            "run",
            "ev_hourly",
            "--from",
            "2026-01-30T09",
            "--to",
            "2026-01-30T09",
            "--cascade",
            "--dry-run",
        ],
    ));
    assert!(
        plan.contains("dry run: daily · replace_partition · 1 partition · "),
        "{plan}"
    );
    assert!(
        plan.contains("dry run: monthly · replace_partition · 1 partition · "),
        "{plan}"
    );
    // Each of them holds one aggregate row, said in the singular.
    assert!(plan.contains("would replace 1 row: "), "{plan}");
    let out = stdout_ok(&idem(
        config,
        &[
            "run",
            "ev_hourly",
            "--from",
            "2026-01-30T00",
            "--to",
            "2026-01-31T23",
            "--cascade",
            "--concurrency",
            "4",
            "--json",
        ],
    ));
    let events = json_lines(&out);
    let runs: Vec<(&str, usize)> = events
        .iter()
        .filter(|e| e["event"] == "run_started")
        .map(|e| {
            (
                e["job"].as_str().unwrap_or(""),
                e["partitions"].as_array().map_or(0, Vec::len),
            )
        })
        .collect();
    // daily_clean reads ev_h too, so the cascade covers it; jobs run in
    // config order once what they read is done.
    assert_eq!(
        runs,
        vec![
            ("ev_hourly", 48),
            ("daily", 2),
            ("monthly", 1),
            ("daily_clean", 2),
            ("monthly_clean", 1),
            ("report", 1)
        ]
    );
    // Order, from the ledger: every downstream attempt started after every
    // upstream attempt it reads had finished.
    let ledger = |job: &str| {
        let wh = &s.wh;
        let job = job.to_string();
        async move { wh.attempts(&job, None).await.expect("ledger") }
    };
    let hourly = ledger("ev_hourly").await;
    let daily = ledger("daily").await;
    let monthly = ledger("monthly").await;
    let cascade_run = |attempts: &[idem::warehouse::ledger::Attempt]| {
        attempts
            .last()
            .map(|a| a.run_id.clone())
            .unwrap_or_default()
    };
    let (hourly_run, daily_run) = (cascade_run(&hourly), cascade_run(&daily));
    let last_hour = hourly
        .iter()
        .filter(|a| a.run_id == hourly_run)
        .map(|a| a.finished_at.clone())
        .max()
        .expect("hourly attempts");
    for d in daily.iter().filter(|a| a.run_id == daily_run) {
        assert!(
            d.started_at >= last_hour,
            "{} started before its hours ended",
            d.partition
        );
    }
    let last_day = daily
        .iter()
        .filter(|a| a.run_id == daily_run)
        .map(|a| a.finished_at.clone())
        .max()
        .expect("daily attempts");
    let m = monthly.last().expect("monthly attempt");
    assert!(
        m.started_at >= last_day,
        "the month started before its days ended"
    );

    // Nothing is stale any more, and the aggregates equal a clean rebuild.
    assert_eq!(stale_upstream(config), BTreeSet::new());
    stdout_ok(&idem(config, &["run", "daily_clean"]));
    stdout_ok(&idem(config, &["run", "monthly_clean"]));
    assert_eq!(
        fingerprint(&s.wh, "agg_d").await,
        fingerprint(&s.wh, "agg_d_clean").await
    );
    assert_eq!(
        fingerprint(&s.wh, "agg_m").await,
        fingerprint(&s.wh, "agg_m_clean").await
    );

    // A failed upstream hour skips the day and the month that read it, and
    // says so; the other day runs.
    s.wh.execute_script(&["UPDATE src SET amount = -1 WHERE id = 200"])
        .await
        .expect("bad source row");
    let day_attempts_before = ledger("daily").await.len();
    let out = idem(
        config,
        &[
            "run",
            "ev_hourly",
            "--from",
            "2026-02-01T00",
            "--to",
            "2026-02-02T23",
            "--cascade",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let events = json_lines(&String::from_utf8_lossy(&out.stdout));
    let skipped: BTreeSet<String> = events
        .iter()
        .filter(|e| e["event"] == "partition_skipped")
        .map(|e| {
            format!(
                "{} {}",
                e["job"].as_str().unwrap_or(""),
                e["partition"].as_str().unwrap_or("")
            )
        })
        .collect();
    let failed_hour = "2026-02-01T18";
    assert_eq!(
        skipped,
        BTreeSet::from([
            "daily 2026-02-01".to_string(),
            "daily_clean 2026-02-01".to_string(),
            "monthly 2026-02".to_string(),
            "monthly_clean 2026-02".to_string(),
            "report 2026-02".to_string(),
        ]),
        "{events:?}"
    );
    let because = events
        .iter()
        .find(|e| e["event"] == "partition_skipped" && e["job"] == "daily")
        .and_then(|e| e["because"].as_str())
        .unwrap_or("");
    assert!(
        because.contains(&format!("ev_hourly {failed_hour}")),
        "{because}"
    );
    let day_attempts = ledger("daily").await;
    assert_eq!(
        day_attempts.len(),
        day_attempts_before + 1,
        "only 2026-02-02 ran"
    );
    assert_eq!(
        day_attempts.last().map(|a| a.partition.as_str()),
        Some("2026-02-02")
    );
}

/// The console's read of a job's states (`job_status_since`) through one
/// refresh cache and one memo of derivations: once nothing moves, it
/// answers "unchanged"; a changed upstream hour, a row deleted from the
/// target behind idem's back and a clock that moves past a partition's end
/// each bring the states again, with what changed.
async fn a_read_answers_unchanged_until_what_it_derives_from_moves(kind: Kind) {
    use idem::state::{Derivations, LoadState, StatesRead, StatusScope};
    let Some(s) = setup(kind).await else {
        return;
    };
    let config_path = s.config.as_path();
    for j in ["ev_hourly", "daily"] {
        stdout_ok(&idem(config_path, &["run", j]));
    }
    let config = idem::config::load(config_path).expect("config");
    let lineage = idem::lineage::Lineage::of(&config).expect("lineage");
    let job = |name: &str| config.jobs.iter().find(|j| j.name == name).expect("job");
    let scope = StatusScope {
        cache: Some(idem::warehouse::RefreshCache::default()),
        ..StatusScope::default()
    };
    let derivations = Derivations::default();
    let running = Default::default();
    let read_at = |name: &'static str, now: chrono::NaiveDateTime| {
        let job = job(name);
        let (wh, config, lineage) = (&s.wh, &config, &lineage);
        let (scope, derivations, running) = (&scope, &derivations, &running);
        async move {
            idem::state::job_status_since(
                wh,
                config,
                lineage,
                job,
                now,
                running,
                scope,
                derivations,
            )
            .await
            .expect("read")
        }
    };
    // Reads until the answer is not "unchanged" (or is, with `unchanged`),
    // for at most ten seconds: PostgreSQL publishes a session's changes to
    // its table counters when the session has been idle a moment, MariaDB's
    // update time ticks by the second.
    let until = |name: &'static str, now, unchanged: bool| async move {
        for _ in 0..40 {
            let read = read_at(name, now).await;
            if matches!(read, StatesRead::Unchanged) == unchanged {
                return Some(read);
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        None
    };
    let states = |read: Option<StatesRead>| match read {
        Some(StatesRead::States(v)) => v
            .statuses
            .into_iter()
            .map(|st| (st.partition.name(), st))
            .collect::<HashMap<_, _>>(),
        other => panic!("the states were not sent again: {other:?}"),
    };
    let now = idem::partition::now_utc();
    let read = read_at("daily", now).await;
    assert!(
        matches!(&read, StatesRead::States(v) if v.statuses.len() == 4),
        "{read:?}"
    );
    assert!(
        until("daily", now, true).await.is_some(),
        "a read of nothing changed never said so"
    );

    // An upstream hour changes and is loaded again by another process: the
    // day that read it is stale (upstream) at the very next read (the
    // ledger says so at once).
    s.wh.execute_script(&["UPDATE src SET amount = amount + 1 WHERE id = 100"])
        .await
        .expect("late change");
    let hour = "2026-01-31T09";
    stdout_ok(&idem(
        config_path,
        &["run", "ev_hourly", "--from", hour, "--to", hour],
    ));
    let read = states(Some(read_at("daily", now).await));
    assert_eq!(
        read["2026-01-31"].stale_upstream,
        vec![format!("ev_hourly {hour}")]
    );
    assert!(read["2026-02-01"].stale_upstream.is_empty());
    assert!(until("daily", now, true).await.is_some());

    // A day's row deleted behind idem's back.
    s.wh.execute_script(&["DELETE FROM agg_d WHERE dt = '2026-02-02'"])
        .await
        .expect("delete");
    let read = states(until("daily", now, false).await);
    assert_eq!(read["2026-02-02"].rows_now, Some(0));
    assert_eq!(read["2026-02-02"].state, LoadState::Vanished);

    // February, never loaded, is in the future on the 15th and missing on
    // March 1st: the clock alone changes its state.
    let at = |d: &str| {
        chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d")
            .expect("day")
            .and_hms_opt(0, 0, 0)
            .expect("time")
    };
    let mid_february = states(Some(read_at("monthly", at("2026-02-15")).await));
    assert_eq!(mid_february["2026-02"].state, LoadState::Future);
    assert!(matches!(
        until("monthly", at("2026-02-16"), true).await,
        Some(StatesRead::Unchanged)
    ));
    let march = states(Some(read_at("monthly", at("2026-03-01")).await));
    assert_eq!(march["2026-02"].state, LoadState::Missing);
}

/// fct (replace) → latest (merge, partitioned by dt) → per_day
/// (replace, reading latest), each loaded over 01..03 from `rows` of
/// `src (id, dt, v)`; `fct` refuses a negative `v`.
/// The QA repro's source: key 1 on the 1st (which a test moves to the
/// 2nd), key 2 on the 1st, key 3 on the 2nd.
const MOVING_KEY: &str = "(1, '2026-01-01', 1), (2, '2026-01-01', 5), (3, '2026-01-02', 7)";

async fn chain(kind: Kind, rows: &str) -> Option<(TestDb, std::path::PathBuf, Warehouse)> {
    let db = TestDb::new(kind).await?;
    let jobs = format!(
        "{}{}{}",
        common::replace_job(
            "fct",
            "fct",
            "2026-01-03",
            "select id, dt, v from src where dt >= :start and dt < :end"
        ),
        common::merge_job(
            "latest",
            "latest",
            "2026-01-03",
            "select id, dt, v from fct where dt >= :start and dt < :end"
        )
        .replace(
            "unique_key = [\"id\"]",
            "unique_key = [\"id\"]\npartition_column = \"dt\""
        ),
        common::replace_job(
            "per_day",
            "per_day",
            "2026-01-03",
            "select dt, count(*) as n from latest where dt >= :start and dt < :end group by dt"
        ),
    );
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    let insert = format!("INSERT INTO src VALUES {rows}");
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL, v INTEGER NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL, v INTEGER NOT NULL CHECK (v >= 0))",
        "CREATE TABLE latest (id INTEGER NOT NULL PRIMARY KEY, dt DATE NOT NULL, v INTEGER NOT NULL)",
        "CREATE TABLE per_day (dt DATE NOT NULL, n INTEGER NOT NULL)",
        &insert,
    ])
    .await
    .expect("setup");
    for job in ["fct", "latest", "per_day"] {
        stdout_ok(&idem(&config, &["run", job]));
    }
    assert_eq!(stale_upstream(&config), BTreeSet::new());
    Some((db, config, wh))
}

/// The QA repro: a merge job by key with a partition column, between a
/// fact and a daily count. A key's source row moves to the next day; the
/// merge of that day moves the key's row out of the window before, whose
/// own merge changed nothing. The count of that day read it, and is stale
/// (upstream): it once read loaded, its count one row too many, because
/// the ledger recorded the change against the merged window alone.
async fn a_merge_moving_rows_out_of_a_window_makes_its_readers_stale(kind: Kind) {
    let Some((_db, config, wh)) = chain(kind, MOVING_KEY).await else {
        return;
    };
    let per_day = async || -> Vec<(String, i64)> {
        let mut rows = Vec::new();
        for day in ["2026-01-01", "2026-01-02"] {
            let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT CAST(COALESCE(SUM(n), 0) AS {}) FROM per_day WHERE dt = '{day}'",
                if kind == Kind::MySql {
                    "SIGNED"
                } else {
                    "BIGINT"
                }
            )))
            .fetch_one(wh.pool())
            .await
            .expect("per_day");
            rows.push((day.to_string(), n));
        }
        rows
    };
    let days = |a: i64, b: i64| vec![("2026-01-01".to_string(), a), ("2026-01-02".to_string(), b)];
    assert_eq!(per_day().await, days(2, 1));
    assert_eq!(stale_upstream(&config), BTreeSet::new());

    // Key 1's source row moves on to the 2nd.
    wh.execute_script(&["UPDATE src SET dt = '2026-01-02' WHERE id = 1"])
        .await
        .expect("move");
    stdout_ok(&idem(
        &config,
        &["run", "fct", "--from", "2026-01-01", "--to", "2026-01-02"],
    ));
    let notes = std::cell::RefCell::new(String::new());
    let merged = |config: &Path, args: &[&str]| -> Vec<(String, bool)> {
        let out = idem(config, &[&["run", "latest", "--json"], args].concat());
        *notes.borrow_mut() = String::from_utf8_lossy(&out.stderr).into_owned();
        json_lines(&stdout_ok(&out))
            .iter()
            .filter(|e| e["event"] == "partition_succeeded")
            .map(|e| {
                (
                    e["partition"].as_str().unwrap_or("").to_string(),
                    e["content_changed"].as_bool().expect("content_changed"),
                )
            })
            .collect()
    };
    let stale = [
        "--only",
        "stale",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-02",
    ];
    assert_eq!(
        merged(&config, &stale),
        vec![
            ("2026-01-01".to_string(), false),
            ("2026-01-02".to_string(), true)
        ],
        "the 1st's own merge changed nothing; the 2nd's moved key 1 out of it"
    );
    let states = states_of(&config, &["per_day"]);
    assert_eq!(
        states["per_day 2026-01-01"],
        ("stale".to_string(), vec!["latest 2026-01-01".to_string()]),
        "{kind:?}: the day key 1 left reads one row fewer now: {states:?}"
    );
    assert_eq!(
        states["per_day 2026-01-02"],
        ("stale".to_string(), vec!["latest 2026-01-02".to_string()]),
        "{kind:?}: {states:?}"
    );
    // The ledger says which merge moved the rows, beside that window's loads.
    let log = stdout_ok(&idem(&config, &["log", "latest", "2026-01-01"]));
    assert!(
        log.lines()
            .any(|l| l.contains(" moved ") && l.contains("rows moved by the merge of 2026-01-02")),
        "{log}"
    );
    let latest = states_of(&config, &["latest"]);
    assert_eq!(latest["latest 2026-01-01"].0, "loaded", "{latest:?}");
    stdout_ok(&idem(&config, &["run", "per_day", "--only", "stale"]));
    assert_eq!(per_day().await, days(1, 2));
    assert_eq!(stale_upstream(&config), BTreeSet::new());

    // Merged again with nothing changed: no window changed, none moved.
    let all = merged(&config, &[]);
    assert!(all.iter().all(|(_, changed)| !changed), "{all:?}");
    assert_eq!(stale_upstream(&config), BTreeSet::new());

    // Back again: the 1st's merge moves key 1 out of the 2nd, whose own
    // merge changes nothing.
    wh.execute_script(&["UPDATE src SET dt = '2026-01-01' WHERE id = 1"])
        .await
        .expect("move back");
    stdout_ok(&idem(
        &config,
        &["run", "fct", "--from", "2026-01-01", "--to", "2026-01-02"],
    ));
    assert_eq!(
        merged(&config, &stale),
        vec![
            ("2026-01-01".to_string(), true),
            ("2026-01-02".to_string(), false)
        ]
    );
    let states = states_of(&config, &["per_day"]);
    assert_eq!(
        states["per_day 2026-01-02"],
        ("stale".to_string(), vec!["latest 2026-01-02".to_string()]),
        "{kind:?}: the day key 1 left: {states:?}"
    );
    // What the run made stale is said after it, the day key 1 left too.
    let notes = notes.borrow().clone();
    assert!(
        notes.contains("per_day reads what this run changed: its 2 partitions 2026-01-01 .. 2026-01-02 are stale until loaded again"),
        "{notes}"
    );
    stdout_ok(&idem(&config, &["run", "per_day", "--only", "stale"]));
    assert_eq!(per_day().await, days(2, 1));

    // A cascade from the fact, over both days, converges.
    wh.execute_script(&["UPDATE src SET dt = '2026-01-02' WHERE id = 1"])
        .await
        .expect("move on again");
    let cascade = [
        "run",
        "fct",
        "--from",
        "2026-01-01",
        "--to",
        "2026-01-02",
        "--cascade",
    ];
    stdout_ok(&idem(&config, &cascade));
    assert_eq!(per_day().await, days(1, 2));
    assert_eq!(stale_upstream(&config), BTreeSet::new());
    wh.close().await;
}

/// A merge whose source is windowed by another column than its partition
/// column (a change's date, not the day it is of) writes rows into other
/// windows: a late row for the 1st, merged with the 2nd's changes, makes
/// the 1st's readers stale; merged again unchanged, it moves nothing.
async fn a_merge_writing_rows_into_another_window_makes_its_readers_stale(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs = format!(
        "{}{}",
        common::merge_job(
            "latest",
            "latest",
            "2026-01-03",
            "select id, dt, v from changes where changed_on >= :start and changed_on < :end"
        )
        .replace(
            "unique_key = [\"id\"]",
            "unique_key = [\"id\"]\npartition_column = \"dt\""
        ),
        common::replace_job(
            "per_day",
            "per_day",
            "2026-01-03",
            "select dt, count(*) as n from latest where dt >= :start and dt < :end group by dt"
        ),
    );
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE changes (id INTEGER NOT NULL, dt DATE NOT NULL, v INTEGER NOT NULL, changed_on DATE NOT NULL)",
        "CREATE TABLE latest (id INTEGER NOT NULL PRIMARY KEY, dt DATE NOT NULL, v INTEGER NOT NULL)",
        "CREATE TABLE per_day (dt DATE NOT NULL, n INTEGER NOT NULL)",
        "INSERT INTO changes VALUES (1, '2026-01-01', 1, '2026-01-01'), (2, '2026-01-02', 2, '2026-01-02')",
    ])
    .await
    .expect("setup");
    for job in ["latest", "per_day"] {
        stdout_ok(&idem(&config, &["run", job]));
    }
    assert_eq!(stale_upstream(&config), BTreeSet::new());
    // A late row of the 1st, changed on the 2nd.
    wh.execute_script(&["INSERT INTO changes VALUES (3, '2026-01-01', 3, '2026-01-02')"])
        .await
        .expect("late row");
    let day = ["--from", "2026-01-02", "--to", "2026-01-02"];
    stdout_ok(&idem(&config, &[&["run", "latest"], &day[..]].concat()));
    assert_eq!(
        stale_upstream(&config),
        BTreeSet::from([
            "per_day 2026-01-01".to_string(),
            "per_day 2026-01-02".to_string()
        ]),
        "{kind:?}"
    );
    let moved = |config: &Path| {
        stdout_ok(&idem(config, &["log", "latest"]))
            .lines()
            .filter(|l| l.contains(" moved "))
            .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(moved(&config), vec!["2026-01-01".to_string()]);
    stdout_ok(&idem(&config, &["run", "per_day", "--only", "stale"]));
    // Merged again as it stands: the row is there as staged, nothing moves.
    stdout_ok(&idem(&config, &[&["run", "latest"], &day[..]].concat()));
    assert_eq!(moved(&config), vec!["2026-01-01".to_string()]);
    assert_eq!(stale_upstream(&config), BTreeSet::new());
    wh.close().await;
}

/// The window both upstream tests' daily job reads partly: 2026-01-31 over
/// ev_hourly's 24 hours, 16 of them not loaded, the first T02, failed.
fn assert_the_day_reads_8_of_24_hours(said: &Value) {
    assert_eq!(
        (
            &said["partition"],
            &said["upstream"],
            &said["upstream_partitions"],
            said["not_loaded"].as_array().map(Vec::len),
            &said["not_loaded"][0],
        ),
        (
            &Value::from("2026-01-31"),
            &Value::from("ev_hourly"),
            &Value::from(24),
            Some(16),
            &serde_json::json!({"partition": "2026-01-31T02", "state": "failed"}),
        ),
        "{said}"
    );
}

/// A run of the daily job (no cascade, or the cascade's root) over a day
/// 16 of whose hours are failed or missing loads the day from the other 8:
/// its plan (text and JSON), its `run_started` and its end say which hours
/// it reads are not loaded, with the command that loads them, as a
/// cascade's later steps say it (QA: only those did; the daily job re-run
/// after a failure at 3 a.m. loaded the day from 8 hours, unsaid). A day
/// whose hours are all loaded is not named; the run is not refused.
async fn a_run_over_a_day_whose_hours_are_not_all_loaded_says_so(kind: Kind) {
    let Some(s) = setup(kind).await else {
        return;
    };
    let config = s.config.as_path();
    // 2026-01-30 whole, and 2026-01-31T00..T08 but T02, which fails its
    // CHECK: 8 of the 31st's hours loaded, 1 failed, 15 missing.
    s.fail_hour_02().await;
    let hours = idem(
        config,
        &[
            "run",
            "ev_hourly",
            "--from",
            "2026-01-30T00",
            "--to",
            "2026-01-31T08",
            "-y",
        ],
    );
    assert_eq!(
        hours.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&hours.stderr)
    );
    let run = ["run", "daily", "--from", "2026-01-30", "--to", "2026-01-31"];
    let absolute = std::fs::canonicalize(config).expect("config");
    let line = format!(
        "daily 2026-01-31 reads 8 of its 24 ev_hourly hours loaded (1 failed, 15 missing: 2026-01-31T02, 2026-01-31T09 .. 2026-01-31T23): loaded as it stands, it goes stale (upstream) once the rest loads; to load the rest, and this again: idem --config {} run ev_hourly --only failed,missing --from 2026-01-31T02 --to 2026-01-31T23 --cascade --yes",
        absolute.display()
    );
    let plan = stdout_ok(&idem(config, &[&run[..], &["--dry-run"]].concat()));
    assert!(plan.lines().any(|l| l == line), "{line}\n{plan}");
    assert!(!plan.contains("daily 2026-01-30 reads"), "{plan}");
    // The cascade's root says it as its later steps would.
    let cascade = stdout_ok(&idem(
        config,
        &[&run[..], &["--cascade", "--dry-run"]].concat(),
    ));
    assert!(cascade.lines().any(|l| l == line), "{line}\n{cascade}");
    let events = json_lines(&stdout_ok(&idem(
        config,
        &[&run[..], &["--dry-run", "--json"]].concat(),
    )));
    let said = events[0]["upstream_not_loaded"].clone();
    assert_eq!(said.as_array().map(Vec::len), Some(1), "{said}");
    assert_the_day_reads_8_of_24_hours(&said[0]);
    // The run loads the day as it stands, and says so: in its
    // `run_started`, and on stderr once it is over.
    let started = run_saying(config, &[&run[..], &["-y", "--json"]].concat(), &line);
    assert_eq!(
        started["upstream_not_loaded"], said,
        "as the dry run said it"
    );
    assert_eq!(states(config)["daily 2026-01-31"].0, "loaded");
}

/// QA: an upstream job whose partitions could not be read (its target
/// dropped) was left out of the check of what a run reads, unsaid: a job
/// naming it only in `depends_on` loaded without a word. The plan (text
/// and JSON), the run's `run_started` and its end name it and why, in one
/// line.
async fn an_upstream_whose_partitions_cannot_be_read_is_named(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let select = "select id, dt from src where dt >= :start and dt < :end";
    let jobs = [
        common::replace_job("up", "up_t", "2026-01-02", select),
        common::replace_job("down", "fct", "2026-01-02", select),
        "depends_on = [\"up\"]\n".to_string(),
    ]
    .concat();
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&common::TWO_DAYS).await.unwrap();
    wh.execute_script(&["CREATE TABLE up_t (id INTEGER NOT NULL, dt DATE NOT NULL)"])
        .await
        .unwrap();
    stdout_ok(&idem(&path, &["run", "up", "-y"]));
    wh.execute_script(&["DROP TABLE up_t"]).await.unwrap();
    wh.close().await;

    let plan = stdout_ok(&idem(&path, &["run", "down", "--dry-run"]));
    let line = plan
        .lines()
        .find(|l| l.starts_with("down reads up, whose partitions could not be read ("))
        .unwrap_or_else(|| panic!("up is not named:\n{plan}"))
        .to_string();
    assert!(line.contains("up_t"), "{line}");
    assert!(
        line.ends_with("): whether what it reads there is loaded is not known"),
        "{line}"
    );
    let events = json_lines(&stdout_ok(&idem(
        &path,
        &["run", "down", "--dry-run", "--json"],
    )));
    let said = events[0]["upstream_unread"].clone();
    assert_eq!(said.as_array().map(Vec::len), Some(1), "{said}");
    assert_eq!(said[0]["upstream"], "up", "{said}");
    let started = run_saying(&path, &["run", "down", "-y", "--json"], &line);
    assert_eq!(started["upstream_unread"], said, "as the dry run said it");
}

on_every_engine!(
    lineage_from_sql_and_depends_on_drives_staleness_and_cascades,
    a_read_answers_unchanged_until_what_it_derives_from_moves,
    a_merge_moving_rows_out_of_a_window_makes_its_readers_stale,
    a_merge_writing_rows_into_another_window_makes_its_readers_stale,
    a_run_over_a_day_whose_hours_are_not_all_loaded_says_so,
    an_upstream_whose_partitions_cannot_be_read_is_named
);

/// Its own module: its tests sit beside every engine's in `mod postgres`.
mod case_apart {
    use super::*;

    /// The QA repro: tables `Orders` and `orders` on an engine that keeps them
    /// apart, each loaded by a job reading its own table. Neither depends on
    /// the other (no false cycle, exit 0), and lint finds no "same target".
    async fn tables_apart_but_for_case_are_no_cycle_and_no_shared_target(kind: Kind) {
        let Some(db) = TestDb::new(kind).await else {
            return;
        };
        let (upper, lower) = match kind {
            Kind::MySql => ("`Orders`", "`orders`"),
            _ => ("\"Orders\"", "orders"),
        };
        let (_, config) = db.config("");
        let wh = db.warehouse(&config).await;
        let script = [
            format!("CREATE TABLE {upper} (id INTEGER, dt DATE)"),
            format!("CREATE TABLE {lower} (id INTEGER, dt DATE)"),
        ];
        let script: Vec<&str> = script.iter().map(String::as_str).collect();
        wh.execute_script(&script).await.unwrap();
        wh.close().await;
        let range = ("2026-01-01", "2026-01-02");
        let sql = |t: &str| format!("select id, dt from {t} where dt >= :start and dt < :end");
        let jobs = format!(
            "{}{}",
            job("upper", "Orders", "day", "dt", range, &sql(upper)),
            job("lower", "orders", "day", "dt", range, &sql(lower))
        );
        let (path, _) = db.config(&jobs);
        let out = idem(&path, &["jobs"]);
        let listed = stdout_ok(&out);
        assert!(!listed.contains("← reads"), "{kind:?}: {listed}");
        let lint = idem(&path, &["lint"]);
        let found = String::from_utf8_lossy(&lint.stdout);
        assert!(!found.contains("also replaces"), "{kind:?}: {found}");
    }

    on_server_engines!(tables_apart_but_for_case_are_no_cycle_and_no_shared_target);
}

#[test]
fn cycles_and_unknown_jobs_are_config_errors() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("idem.toml");
    let db = dir.path().join("w.db");
    let head = format!("[warehouse]\nurl = \"sqlite://{}\"\n\n", db.display());
    let a = job(
        "a",
        "ta",
        "day",
        "dt",
        ("2026-01-01", "2026-01-02"),
        "select id, dt from tb where dt >= :start and dt < :end",
    );
    let b = job(
        "b",
        "tb",
        "day",
        "dt",
        ("2026-01-01", "2026-01-02"),
        "select id, dt from src where dt >= :start and dt < :end",
    );
    // b depends on a by name; a reads b's target: a cycle.
    let cyclic = format!("{head}{a}{}\ndepends_on = [\"a\"]\n", b.trim_end());
    std::fs::write(&path, &cyclic).expect("config");
    let out = idem(&path, &["jobs"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = cyclic
        .lines()
        .position(|l| l.starts_with("depends_on"))
        .map(|i| i + 1);
    assert!(
        err.contains(&format!("idem.toml:{}:", line.unwrap_or(0)))
            && err.contains("cycle: a → b → a"),
        "{err}"
    );
    let unknown = format!("{head}{}\ndepends_on = [\"nope\"]\n", b.trim_end());
    std::fs::write(&path, &unknown).expect("config");
    let out = idem(&path, &["jobs"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no job named \"nope\"") && err.contains("depends_on"),
        "{err}"
    );
}

/// A cascade cancelled while its root runs: the downstream step never
/// begins. Its partitions are said skipped on the event stream, and the
/// advice repeats each job as a cascade, the downstream one naming its days.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_cascade_says_what_is_left_and_repeats_as_a_cascade() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    // Each day's load counts to some millions first: long enough to signal
    // the run while its root is loading.
    let slow = "select id, dt from src where dt >= :start and dt < :end and \
                (with recursive c(x) as (select 1 union all select x + 1 from c where x < 8000000) \
                select count(*) from c) > 0";
    let jobs = format!(
        "{}{}",
        common::replace_job("fct", "fct", "2026-01-04", slow),
        common::replace_job(
            "agg",
            "agg",
            "2026-01-04",
            "select dt, count(*) as n from fct where dt >= :start and dt < :end group by dt"
        ),
    );
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE agg (dt DATE NOT NULL, n INTEGER NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-03'), (4, '2026-01-04')",
    ])
    .await
    .expect("setup");
    wh.close().await;
    let child = crate::common::idem_command()
        .arg("--config")
        .arg(&config)
        .args(["run", "fct", "--cascade", "--json", "--yes"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn idem");
    // Signalled once the root's first day has loaded, with three to go:
    // a fixed sleep signalled a quiet machine after the whole run.
    let mut child = child;
    let stdout = child.stdout.take().expect("stdout");
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines_tx.send(line);
        }
    });
    let mut seen = Vec::new();
    while let Ok(line) = lines_rx.recv_timeout(std::time::Duration::from_secs(60)) {
        let first_day_done = line.contains("\"partition_succeeded\"");
        seen.push(line);
        if first_day_done {
            break;
        }
    }
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let out = child.wait_with_output().expect("idem ended");
    reader.join().expect("reader");
    seen.extend(lines_rx.try_iter());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let events = json_lines(&seen.join("\n"));
    // The day whose upstream had loaded before the cancel never began: it
    // is said too, not left out of the stream.
    let skipped: BTreeSet<&str> = events
        .iter()
        .filter(|e| e["event"] == "partition_skipped" && e["job"] == "agg")
        .filter_map(|e| e["partition"].as_str())
        .collect();
    assert_eq!(
        skipped,
        BTreeSet::from(["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"]),
        "{events:?}"
    );
    // And the step is said to have ended, cancelled: the stream's last event.
    let last = events.last().expect("events");
    assert_eq!(
        (&last["event"], &last["job"], &last["cancelled"]),
        (
            &Value::from("step_skipped"),
            &Value::from("agg"),
            &Value::from(true)
        ),
        "{events:?}"
    );
    let cfg = config.display();
    assert!(
        stderr.contains(&format!(
            "idem: to finish agg, repeat: idem --config {cfg} run agg --from 2026-01-01 --to 2026-01-04 --cascade"
        )),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("idem: to finish fct, repeat: ")
                && l.ends_with(" --cascade --yes")),
        "{stderr}"
    );
}

/// A cascade into a `merge_key` job re-merges the window its upstream
/// changed, and every window loaded after it, in order: re-merged alone, an
/// older window rolled a key that a later window had updated back to its
/// older row (the later window then read vanished), and the run said
/// nothing, where `idem run` of the merge job itself warns. The jobs that
/// read the merge job load the windows it merged on too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cascade_into_a_merge_job_merges_on_through_its_latest_window() {
    // Key 1 is updated on the 2nd: its row belongs to the 2nd's window.
    let rows = "(1, '2026-01-01', 1), (1, '2026-01-02', 2), (2, '2026-01-01', 5)";
    let (_db, config, wh) = chain(Kind::Sqlite, rows).await.expect("sqlite");
    let rows = |config: &Path| -> Vec<(String, i64)> {
        let out = stdout_ok(&idem(config, &["status", "latest", "--format", "json"]));
        let rows: Vec<Value> = serde_json::from_str(&out).expect("json");
        rows.iter()
            .map(|r| {
                (
                    r["partition"].as_str().unwrap_or("").to_string(),
                    r["rows_now"].as_i64().unwrap_or(-1),
                )
            })
            .collect()
    };
    let settled = vec![
        ("2026-01-01".to_string(), 1),
        ("2026-01-02".to_string(), 1),
        ("2026-01-03".to_string(), 0),
    ];
    assert_eq!(rows(&config), settled);

    // A late change to the 1st, cascaded from the fact.
    wh.execute_script(&["UPDATE src SET v = 10 WHERE id = 2"])
        .await
        .expect("late change");
    let args = ["run", "fct", "--from", "2026-01-01", "--to", "2026-01-01"];
    let plan = idem(
        &config,
        &[&args[..], &["--cascade", "--dry-run", "--json"]].concat(),
    );
    let planned: Vec<(String, Vec<String>)> = json_lines(&stdout_ok(&plan))
        .iter()
        .filter(|e| e["event"] == "dry_run")
        .map(|e| {
            let names = e["partitions"]
                .as_array()
                .expect("partitions")
                .iter()
                .map(|p| p["partition"].as_str().unwrap_or("").to_string())
                .collect();
            (e["job"].as_str().unwrap_or("").to_string(), names)
        })
        .collect();
    assert_eq!(
        planned,
        [
            ("fct".to_string(), vec!["2026-01-01".to_string()]),
            (
                "latest".to_string(),
                vec!["2026-01-01".to_string(), "2026-01-02".to_string()]
            ),
            (
                "per_day".to_string(),
                vec!["2026-01-01".to_string(), "2026-01-02".to_string()]
            ),
        ],
        "the merge step goes on through its latest loaded window, and what \
         reads those windows runs after it"
    );
    // Without --cascade, the plan names what it leaves downstream from
    // that same plan: the merge job's window that goes stale and the one
    // it merges on through, and both days of the job reading it (the
    // note once named the 1st alone there).
    let plain = idem(&config, &[&args[..], &["--dry-run", "--json"]].concat());
    let left: Vec<(String, Vec<String>)> = json_lines(&stdout_ok(&plain))[0]["downstream"]
        .as_array()
        .expect("downstream")
        .iter()
        .map(|d| {
            let mut names: Vec<String> = ["goes_stale", "never_loaded", "merges_on_through"]
                .iter()
                .flat_map(|k| d[*k].as_array().cloned().unwrap_or_default())
                .filter_map(|p| p.as_str().map(String::from))
                .collect();
            names.sort();
            (d["job"].as_str().unwrap_or("").to_string(), names)
        })
        .collect();
    assert_eq!(
        left,
        planned[1..],
        "{}",
        String::from_utf8_lossy(&plain.stdout)
    );
    let text = idem(&config, &[&args[..], &["--dry-run"]].concat());
    let notes = String::from_utf8_lossy(&text.stderr);
    assert!(
        notes.contains("latest reads what this run replaces: its 1 partition 2026-01-01 goes stale if those rows change, and merging again goes on through its later loaded window 2026-01-02")
            && notes.contains("per_day reads latest, downstream of what this run replaces: its 2 partitions 2026-01-01 .. 2026-01-02 go stale"),
        "{notes}"
    );
    // Run alone, the fact leaves the merge job stale, and the command it
    // prints merges on through its latest window, without the warning.
    let alone = idem(&config, &args);
    let notes = String::from_utf8_lossy(&alone.stderr);
    let command = notes
        .lines()
        .find_map(|l| l.strip_prefix("idem: latest reads what this run changed: its 1 partition 2026-01-01 is stale until loaded again: idem "))
        .unwrap_or_else(|| panic!("{notes}"));
    assert!(command.ends_with(" --through-latest"), "{command}");
    stdout_ok(&idem(&config, &[&args[..], &["--cascade"]].concat()));
    // Key 1 keeps its newest row, on the 2nd; key 2 has its new value.
    assert_eq!(rows(&config), settled);
    let states = states_of(&config, &["latest"]);
    assert_eq!(states["latest 2026-01-02"].0, "loaded", "{states:?}");
    // The cascade leaves nothing downstream stale: the day whose merge
    // window it merged again was loaded after it.
    assert_eq!(stale_upstream(&config), BTreeSet::new());
}

/// A cascade from five hours of a day whose other hours are missing or
/// failed loads the day from what is there: its plan (text and JSON) and
/// the run's output (its notes, and each step's `run_started`) say which
/// hours it reads are not loaded, a line per step (it was loaded from 5 of
/// its 24 hours, unsaid), with the command that loads them (QA: none was
/// given): run as printed, from elsewhere, it loads the rest of the day and
/// the day again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cascade_over_part_of_an_upstream_day_says_what_it_reads_is_not_loaded() {
    let s = setup(Kind::Sqlite).await.expect("sqlite");
    let config = s.config.as_path();
    // 2026-01-31T00..T03 loaded but T02, which fails its CHECK.
    s.fail_hour_02().await;
    let first = idem(
        config,
        &[
            "run",
            "ev_hourly",
            "--from",
            "2026-01-31T00",
            "--to",
            "2026-01-31T03",
            "-y",
        ],
    );
    assert_eq!(
        first.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let cascade = [
        "run",
        "ev_hourly",
        "--from",
        "2026-01-31T08",
        "--to",
        "2026-01-31T12",
        "--cascade",
    ];
    let absolute = std::fs::canonicalize(config).expect("config");
    let fill = format!(
        "idem --config {} run ev_hourly --only failed,missing --from 2026-01-31T02 --to 2026-01-31T23 --cascade --yes",
        absolute.display()
    );
    let daily = format!(
        "daily 2026-01-31 reads 8 of its 24 ev_hourly hours loaded (1 failed, 15 missing: 2026-01-31T02, 2026-01-31T04 .. 2026-01-31T07, 2026-01-31T13 .. 2026-01-31T23): loaded as it stands, it goes stale (upstream) once the rest loads; to load the rest, and this again: {fill}"
    );
    // The day monthly lacks reads hours not loaded either: its command
    // loads from those (QA: it loaded the day from no hours, as empty).
    let fill_month = format!(
        "idem --config {} run ev_hourly --only missing,failed --from 2026-01-30T00 --to 2026-01-30T23 --cascade --yes",
        absolute.display()
    );
    let monthly = format!(
        "monthly 2026-01 reads 1 of its 2 daily days loaded (1 missing: 2026-01-30): loaded as it stands, it goes stale (upstream) once the rest loads; daily 2026-01-30 reads ev_hourly hours not loaded either: to load those, the rest, and this again: {fill_month}"
    );
    let plan = stdout_ok(&idem(config, &[&cascade[..], &["--dry-run"]].concat()));
    for line in [&daily, &monthly] {
        assert!(plan.lines().any(|l| l == line), "{line}\n{plan}");
    }
    let events = json_lines(&stdout_ok(&idem(
        config,
        &[&cascade[..], &["--dry-run", "--json"]].concat(),
    )));
    let of = |job: &str| {
        events
            .iter()
            .find(|e| e["job"] == job)
            .unwrap_or_else(|| panic!("{job}: {events:?}"))["upstream_not_loaded"]
            .clone()
    };
    assert_eq!(of("ev_hourly"), serde_json::json!([]));
    let day = of("daily");
    assert_the_day_reads_8_of_24_hours(&day[0]);
    // The run loads the day as it stands, and says so once it is over:
    // in its notes, and in the day's step's `run_started`.
    let run = idem(config, &[&cascade[..], &["-y", "--json"]].concat());
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    for line in [&daily, &monthly] {
        assert!(
            err.lines().any(|l| l == format!("idem: {line}")),
            "{line}\n{err}"
        );
    }
    let events = json_lines(&String::from_utf8_lossy(&run.stdout));
    let started = |job: &str| {
        events
            .iter()
            .find(|e| e["event"] == "run_started" && e["job"] == job)
            .unwrap_or_else(|| panic!("{job}: {events:?}"))["upstream_not_loaded"]
            .clone()
    };
    assert_eq!(started("ev_hourly"), serde_json::json!([]));
    assert_eq!(started("daily"), day, "as the dry run said it");
    assert_eq!(
        started("monthly")[0]["not_loaded"],
        serde_json::json!([{"partition": "2026-01-30", "state": "missing"}])
    );
    assert_eq!(
        states(config)["daily 2026-01-31"].0,
        "loaded",
        "loaded as it stands"
    );
    // The bad hour fixed, the command as printed, from elsewhere, loads
    // the rest of the day and the day again: it reads no hour not loaded,
    // and nothing it reads is newer.
    s.wh.execute_script(&["UPDATE src SET amount = 1 WHERE amount = -1"])
        .await
        .expect("the hour fixed");
    let run_as_printed = |command: &str| {
        let words: Vec<&str> = command.split(' ').skip(1).collect();
        let filled = crate::common::idem_command()
            .current_dir("/")
            .args(&words)
            .output()
            .expect("idem ran");
        stdout_ok(&filled);
    };
    run_as_printed(&fill);
    let after = states(config);
    assert_eq!(
        after["daily 2026-01-31"],
        ("loaded".to_string(), Vec::new()),
        "{after:?}"
    );
    let plan = stdout_ok(&idem(config, &[&cascade[..], &["--dry-run"]].concat()));
    assert!(!plan.contains("daily 2026-01-31 reads"), "{plan}");
    assert!(
        plan.lines()
            .any(|l| l.starts_with("monthly 2026-01 reads 1 of its 2 daily days loaded")),
        "the day before is still not loaded:\n{plan}"
    );
    // Its command, as printed, loads the hours, the day from them, and
    // the month: nothing it reads is left not loaded, nor loaded empty.
    run_as_printed(&fill_month);
    let after = states(config);
    assert_eq!(
        after["daily 2026-01-30"],
        ("loaded".to_string(), Vec::new()),
        "{after:?}"
    );
    let plan = stdout_ok(&idem(config, &[&cascade[..], &["--dry-run"]].concat()));
    for said in ["monthly 2026-01 reads", "daily 2026-01-30 reads"] {
        assert!(!plan.contains(said), "{said}:\n{plan}");
    }
}

/// Every step of a `--cascade --json` stream ends: a step whose every
/// partition was skipped, because the upstream partition it reads failed,
/// once ended with its last `partition_skipped`, so an orchestrator could
/// not tell it was over (nor the stream whole). It ends with `step_skipped`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cascade_step_that_runs_nothing_ends_its_stream() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let jobs = format!(
        "{}{}",
        common::replace_job(
            "fct",
            "fct",
            "2026-01-02",
            "select id, dt from src where dt >= :start and dt < :end"
        ),
        common::replace_job(
            "agg",
            "agg",
            "2026-01-02",
            "select dt, count(*) as n from fct where dt >= :start and dt < :end group by dt"
        ),
    );
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    // The 2nd's source row breaks the fact's CHECK: it fails, and the
    // aggregate's 2nd, which reads it, is skipped.
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL CHECK (id > 0), dt DATE NOT NULL)",
        "CREATE TABLE agg (dt DATE NOT NULL, n INTEGER NOT NULL)",
        "INSERT INTO src VALUES (-1, '2026-01-02')",
    ])
    .await
    .expect("setup");
    wh.close().await;
    let out = idem(
        &config,
        &[
            "run",
            "fct",
            "--from",
            "2026-01-02",
            "--to",
            "2026-01-02",
            "--cascade",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let events = json_lines(&String::from_utf8_lossy(&out.stdout));
    let of = |job: &str| -> Vec<&str> {
        events
            .iter()
            .filter(|e| e["job"] == job)
            .filter_map(|e| e["event"].as_str())
            .collect()
    };
    assert_eq!(of("fct").last(), Some(&"run_finished"), "{events:?}");
    assert_eq!(
        of("agg"),
        ["partition_skipped", "step_skipped"],
        "{events:?}"
    );
    let last = events.last().expect("events");
    assert_eq!(
        (
            &last["event"],
            &last["job"],
            &last["partitions"],
            &last["cancelled"]
        ),
        (
            &Value::from("step_skipped"),
            &Value::from("agg"),
            &serde_json::json!(["2026-01-02"]),
            &Value::from(false)
        ),
        "{events:?}"
    );
    assert_eq!(last["schema_version"], 1);
}

/// A cascade from an hourly job whose hours reach today: the daily job's
/// today has not ended, so the cascade leaves it, and says so with the
/// command that loads it (it was silent). Given `--allow-incomplete`, the
/// run passes it on: the daily step loads today as it stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cascade_names_the_windows_not_ended_and_passes_allow_incomplete_on() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let hour = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H").to_string();
    let before = chrono::Utc::now();
    let yesterday = (before - chrono::Duration::days(1)).format("%Y-%m-%d");
    let jobs = [
        job(
            "ev",
            "ev",
            "hour",
            "hr",
            (&format!("{yesterday}T00"), "2099-01-01T00"),
            "select id, hr from src where hr >= :start and hr < :end",
        ),
        job(
            "daily",
            "daily",
            "day",
            "dt",
            (&yesterday.to_string(), "2099-01-01"),
            "select date(hr) as dt, count(*) as n from ev where hr >= :start and hr < :end group by date(hr)",
        ),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, hr TIMESTAMP NOT NULL)",
        "CREATE TABLE ev (id INTEGER NOT NULL, hr TIMESTAMP NOT NULL)",
        "CREATE TABLE daily (dt DATE NOT NULL, n INTEGER NOT NULL)",
    ])
    .await
    .expect("setup");
    wh.close().await;
    let last_complete = hour(before - chrono::Duration::hours(1));
    let out = idem(
        &config,
        &[
            "run",
            "ev",
            "--from",
            &last_complete,
            "--cascade",
            "--dry-run",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let today = before.format("%Y-%m-%d").to_string();
    // Unless the clock turned an hour meanwhile, the last complete hour's
    // day is today's past 01:00 (a day ended, otherwise: nothing to say).
    if hour(chrono::Utc::now()) == hour(before) {
        let day = &last_complete[..10];
        let note = format!(
            "idem: daily {day} has not ended yet (until {} 00:00): the cascade leaves it; once it has ended: idem --config {} run daily --from {day} --to {day}",
            (before + chrono::Duration::days(1)).format("%Y-%m-%d"),
            config.display()
        );
        assert_eq!(err.contains(&note), day == today, "{note}\n{err}");
    }
    // --allow-incomplete passes on: the open hour, and today's day after it.
    let now_hour = hour(chrono::Utc::now());
    let plan = idem(
        &config,
        &[
            "run",
            "ev",
            "--from",
            &now_hour,
            "--to",
            &now_hour,
            "--allow-incomplete",
            "--cascade",
            "--dry-run",
            "--json",
        ],
    );
    let planned: Vec<(String, Vec<String>)> = json_lines(&stdout_ok(&plan))
        .iter()
        .map(|e| {
            let names = e["partitions"]
                .as_array()
                .expect("partitions")
                .iter()
                .filter_map(|p| p["partition"].as_str().map(String::from))
                .collect();
            (e["job"].as_str().unwrap_or("").to_string(), names)
        })
        .collect();
    let day = now_hour[..10].to_string();
    assert_eq!(
        planned,
        [
            ("ev".to_string(), vec![now_hour.clone()]),
            ("daily".to_string(), vec![day])
        ],
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    assert!(
        !String::from_utf8_lossy(&plan.stderr).contains("not ended yet"),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
}

/// What a cascade of fct → latest (a merge whose rows' `dt` is the day
/// after its source's) → per_day, run over yesterday, sent and said.
struct IntoToday {
    /// Kept for its Drop, which removes the test database.
    _db: TestDb,
    config: std::path::PathBuf,
    events: Vec<Value>,
    err: String,
    now: chrono::DateTime<chrono::Utc>,
    yesterday: String,
    today: String,
}

/// Runs fct over yesterday with `--cascade`: latest's merge writes a row
/// into today's window. per_day starts yesterday, or today
/// (`per_day_starts_today`: then it reads nothing the cascade planned, and
/// has no step). `None` where midnight passed during the run.
async fn cascade_into_today(per_day_starts_today: bool) -> Option<IntoToday> {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let now = chrono::Utc::now();
    let (yesterday, today) = (
        (now - chrono::Duration::days(1))
            .format("%Y-%m-%d")
            .to_string(),
        now.format("%Y-%m-%d").to_string(),
    );
    let range = (yesterday.as_str(), "2099-01-01");
    let per_day_range = if per_day_starts_today {
        (today.as_str(), "2099-01-01")
    } else {
        range
    };
    let jobs = [
        job(
            "fct",
            "fct",
            "day",
            "dt",
            range,
            "select id, dt, v from src where dt >= :start and dt < :end",
        ),
        job(
            "latest",
            "latest",
            "day",
            "dt",
            range,
            "select id, date(dt, '+1 day') as dt, v from fct where dt >= :start and dt < :end",
        )
        .replace(
            "\"replace_partition\"",
            "\"merge_key\"\nunique_key = [\"id\"]",
        ),
        job(
            "per_day",
            "per_day",
            "day",
            "dt",
            per_day_range,
            "select dt, count(*) as n from latest where dt >= :start and dt < :end group by dt",
        ),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL, v INTEGER NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL, v INTEGER NOT NULL)",
        "CREATE TABLE latest (id INTEGER NOT NULL PRIMARY KEY, dt DATE NOT NULL, v INTEGER NOT NULL)",
        "CREATE TABLE per_day (dt DATE NOT NULL, n INTEGER NOT NULL)",
        &format!("INSERT INTO src VALUES (1, '{yesterday}', 1), (2, '{yesterday}', 5)"),
    ])
    .await
    .expect("setup");
    let out = idem(
        &config,
        &[
            "run",
            "fct",
            "--from",
            &yesterday,
            "--to",
            &yesterday,
            "--cascade",
            "--json",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let events = json_lines(&stdout_ok(&out));
    wh.close().await;
    // Midnight passed: today's window has ended since.
    (chrono::Utc::now().format("%Y-%m-%d").to_string() == today).then_some(IntoToday {
        _db: db,
        config,
        events,
        err,
        now,
        yesterday,
        today,
    })
}

/// A cascade whose merge writes a row into today's window (the merge job
/// reads its source by one day, and its rows' `dt` is the day after): the
/// reader's today is stale, but it has not ended, so the cascade leaves it,
/// as it leaves the windows it plans so, and says so: a `partition_left`
/// event with why, and the note with the command that loads it once it
/// has ended. It was left out silently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_a_merge_writes_rows_into_that_has_not_ended_is_named_not_dropped() {
    let Some(IntoToday {
        config,
        events,
        err,
        now,
        yesterday,
        today,
        ..
    }) = cascade_into_today(false).await
    else {
        return;
    };
    let left: Vec<(&str, &str, &str)> = events
        .iter()
        .filter(|e| e["event"] == "partition_left")
        .map(|e| {
            (
                e["job"].as_str().unwrap(),
                e["partition"].as_str().unwrap(),
                e["because"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(left.len(), 1, "{events:?}\n{err}");
    let (job, partition, because) = left[0];
    assert_eq!((job, partition), ("per_day", today.as_str()));
    assert!(
        because.starts_with(&format!(
            "latest {today} changed: its merge of {yesterday} moved rows in or out of it; this window has not ended yet"
        )),
        "{because}"
    );
    // Not in its step's plan, and per_day's step still ran yesterday.
    let per_day_started = events
        .iter()
        .find(|e| e["event"] == "run_started" && e["job"] == "per_day")
        .expect("per_day's step");
    assert_eq!(
        per_day_started["partitions"],
        serde_json::json!([yesterday])
    );
    let note = format!(
        "idem: per_day {today} has not ended yet (until {} 00:00): the cascade leaves it; once it has ended: idem --config {} run per_day --from {today} --to {today}",
        (now + chrono::Duration::days(1)).format("%Y-%m-%d"),
        config.display()
    );
    assert!(err.contains(&note), "{note}\n{err}");
}

/// As above, but per_day starts today: it reads nothing the cascade
/// planned, so it has no step, and the window latest's merge wrote into
/// is all it is given, left as not ended. Its step still ends the stream,
/// with `step_skipped`, as every step's does (QA: the stream ended with
/// its `partition_left`, after the last `run_finished`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_given_only_a_window_that_has_not_ended_ends_its_step() {
    let Some(IntoToday { events, today, .. }) = cascade_into_today(true).await else {
        return;
    };
    let per_day: Vec<&Value> = events.iter().filter(|e| e["job"] == "per_day").collect();
    assert_eq!(per_day.len(), 2, "{events:?}");
    assert_eq!(
        (&per_day[0]["event"], &per_day[0]["partition"]),
        (&Value::from("partition_left"), &Value::from(today.as_str()))
    );
    assert_eq!(
        (&per_day[1]["event"], &per_day[1]["partitions"]),
        (&Value::from("step_skipped"), &serde_json::json!([today]))
    );
    assert_eq!(events.last(), Some(per_day[1]), "{events:?}");
}

/// A cascade whose merges move rows in or out of windows beyond its plan.
mod cascade_moves {
    use super::*;

    /// Per job, the partitions of the events named `event` (`run_started`
    /// or `dry_run`), in the stream's order.
    fn planned(events: &[Value], event: &str) -> Vec<(String, Vec<String>)> {
        events
            .iter()
            .filter(|e| e["event"] == event)
            .map(|e| {
                let names = e["partitions"]
                    .as_array()
                    .expect("partitions")
                    .iter()
                    .map(|p| match p {
                        Value::String(name) => name.clone(),
                        p => p["partition"].as_str().unwrap_or("").to_string(),
                    })
                    .collect();
                (e["job"].as_str().unwrap_or("").to_string(), names)
            })
            .collect()
    }

    /// The run added per_day's 1st to its step, saying why: latest's merge
    /// of the 2nd moved rows out of latest's 1st.
    fn per_day_1st_added(run: &[Value], kind: Kind) {
        assert_eq!(
            named(run, "partition_added"),
            BTreeSet::from(["per_day 2026-01-01".to_string()]),
            "{kind:?}: {run:?}"
        );
        let because = run
            .iter()
            .find(|e| e["event"] == "partition_added")
            .and_then(|e| e["because"].as_str())
            .unwrap_or("");
        assert_eq!(
            because,
            "latest 2026-01-01 changed: its merge of 2026-01-02 moved rows in or out of it"
        );
    }

    /// Each event named `event` as "job partition".
    fn named(events: &[Value], event: &str) -> BTreeSet<String> {
        events
            .iter()
            .filter(|e| e["event"] == event)
            .map(|e| {
                format!(
                    "{} {}",
                    e["job"].as_str().unwrap_or(""),
                    e["partition"].as_str().unwrap_or("")
                )
            })
            .collect()
    }

    const FCT_2ND: [&str; 7] = [
        "run",
        "fct",
        "--from",
        "2026-01-02",
        "--to",
        "2026-01-02",
        "--cascade",
    ];

    /// The QA repro: key 1's source row moves from the 1st to the 2nd and
    /// a cascade loads the fact's 2nd. latest's merge of the 2nd moves key
    /// 1 out of its 1st, which the cascade had not planned: per_day's 1st
    /// was left stale (upstream), the cascade not converging. It is added
    /// before per_day runs, and said so. A cascade where nothing moves runs
    /// just what its dry run planned.
    async fn a_cascade_adds_the_readers_of_windows_a_merge_moves_rows_out_of(kind: Kind) {
        let Some((_db, config, wh)) =
            chain(kind, "(1, '2026-01-01', 1), (2, '2026-01-01', 5), (4, '2026-01-01', 6), (3, '2026-01-02', 7)").await
        else {
            return;
        };
        let dry_run = json_lines(&stdout_ok(&idem(
            &config,
            &[&FCT_2ND[..], &["--dry-run", "--json"]].concat(),
        )));
        let day = |d: &str| (d.to_string(), vec!["2026-01-02".to_string()]);
        let plan = vec![day("fct"), day("latest"), day("per_day")];
        assert_eq!(planned(&dry_run, "dry_run"), plan, "{kind:?}");
        let moves_add_to: Vec<&Value> = dry_run.iter().map(|e| &e["moves_add_to"]).collect();
        assert_eq!(
            moves_add_to,
            [
                &Value::from(Vec::<String>::new()),
                &Value::from(vec!["per_day"]),
                &Value::from(Vec::<String>::new())
            ],
            "a merge step says whose partitions it may add"
        );
        // Nothing moves: the run is its plan, nothing added.
        let run = json_lines(&stdout_ok(&idem(
            &config,
            &[&FCT_2ND[..], &["--json"]].concat(),
        )));
        assert_eq!(planned(&run, "run_started"), plan, "{kind:?}");
        assert_eq!(named(&run, "partition_added"), BTreeSet::new());

        // Key 1's source row moves on to the 2nd.
        wh.execute_script(&["UPDATE src SET dt = '2026-01-02' WHERE id = 1"])
            .await
            .expect("move");
        let text = stdout_ok(&idem(&config, &[&FCT_2ND[..], &["--dry-run"]].concat()));
        assert!(
            text.contains("its merges may move rows into or out of windows besides these (by dt): as it runs, the cascade adds the partitions of per_day over those windows, and what reads them"),
            "{text}"
        );
        let out = idem(&config, &[&FCT_2ND[..], &["--json"]].concat());
        let run = json_lines(&stdout_ok(&out));
        per_day_1st_added(&run, kind);
        assert_eq!(
            planned(&run, "run_started").last(),
            Some(&(
                "per_day".to_string(),
                vec!["2026-01-01".to_string(), "2026-01-02".to_string()]
            )),
            "the step runs the added partition: {run:?}"
        );
        assert_eq!(
            stale_upstream(&config),
            BTreeSet::new(),
            "{kind:?}: the cascade converges"
        );
        let n: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT CAST(n AS {}) FROM per_day ORDER BY dt",
            if kind == Kind::MySql {
                "SIGNED"
            } else {
                "BIGINT"
            }
        )))
        .fetch_all(wh.pool())
        .await
        .expect("per_day");
        assert_eq!(n, [2, 2], "key 1 counted on the 2nd, no longer on the 1st");
        // Key 2 moves on too, in a run without --json: its lines and its
        // report say what was added, and why.
        wh.execute_script(&["UPDATE src SET dt = '2026-01-02' WHERE id = 2"])
            .await
            .expect("move");
        let out = idem(&config, &FCT_2ND);
        let report = stdout_ok(&out);
        let lines = String::from_utf8_lossy(&out.stderr);
        assert!(
            lines.contains("per_day 2026-01-01 added · latest 2026-01-01 changed: its merge of 2026-01-02 moved rows in or out of it"),
            "{lines}"
        );
        assert!(
            report.contains("per_day: 2 succeeded, 0 failed, 1 added (a merge upstream moved rows in or out of what it reads)"),
            "{report}"
        );
        assert_eq!(stale_upstream(&config), BTreeSet::new(), "{kind:?}");
        wh.close().await;
    }

    /// The fact's 2nd fails: latest's 2nd, which reads it, is skipped. Its
    /// 3rd was planned only for latest to merge on through after the 2nd:
    /// merged alone it merged again what it merged last, and per_day's 3rd
    /// was loaded again over it, for nothing. Both are skipped, and said
    /// why. A 3rd of the fact's own that loads is merged, as before.
    async fn a_cascade_skips_what_was_only_to_merge_on_through_a_skipped_window(kind: Kind) {
        let Some((_db, config, wh)) = chain(
            kind,
            "(1, '2026-01-01', 1), (2, '2026-01-02', 2), (3, '2026-01-03', 3)",
        )
        .await
        else {
            return;
        };
        wh.execute_script(&["UPDATE src SET v = -1 WHERE id = 2"])
            .await
            .expect("a row the fact refuses");
        let dry_run = json_lines(&stdout_ok(&idem(
            &config,
            &[&FCT_2ND[..], &["--dry-run", "--json"]].concat(),
        )));
        let days = |job: &str, days: &[&str]| {
            (
                job.to_string(),
                days.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            )
        };
        let both = ["2026-01-02", "2026-01-03"];
        assert_eq!(
            planned(&dry_run, "dry_run"),
            [
                days("fct", &["2026-01-02"]),
                days("latest", &both),
                days("per_day", &both)
            ],
            "latest goes on through its 3rd"
        );
        let out = idem(&config, &[&FCT_2ND[..], &["--json"]].concat());
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let run = json_lines(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(
            planned(&run, "run_started"),
            [days("fct", &["2026-01-02"])],
            "{kind:?}: nothing downstream runs: {run:?}"
        );
        assert_eq!(
            named(&run, "partition_skipped"),
            BTreeSet::from(
                [
                    "latest 2026-01-02",
                    "latest 2026-01-03",
                    "per_day 2026-01-02",
                    "per_day 2026-01-03"
                ]
                .map(String::from)
            ),
            "{run:?}"
        );
        let because = run
            .iter()
            .find(|e| e["event"] == "partition_skipped" && e["partition"] == "2026-01-03")
            .and_then(|e| e["because"].as_str())
            .unwrap_or("");
        assert_eq!(
            because,
            "latest 2026-01-02 was skipped, and this window was only to be merged on through after it"
        );
        // The fact's 3rd loads with it: latest's 3rd reads it, and merges.
        let out = idem(
            &config,
            &[
                "run",
                "fct",
                "--from",
                "2026-01-02",
                "--to",
                "2026-01-03",
                "--cascade",
                "--json",
            ],
        );
        let run = json_lines(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(
            planned(&run, "run_started"),
            [
                days("fct", &both),
                days("latest", &["2026-01-03"]),
                days("per_day", &["2026-01-03"])
            ],
            "{kind:?}: {run:?}"
        );
        wh.close().await;
    }

    /// As above, but per_day ends on the 1st: over the fact's 2nd it has
    /// no window, so the cascade planned no step of it. latest's merge of
    /// the 2nd moved key 1 out of its 1st, which per_day reads: per_day's
    /// 1st was left stale (upstream), and nothing said so. It is given a
    /// step, its 1st added and said why, and the cascade converges.
    async fn a_reader_with_no_step_is_given_one_when_a_merge_moves_rows_into_its_windows(
        kind: Kind,
    ) {
        let Some((_db, config, wh)) = chain(kind, MOVING_KEY).await else {
            return;
        };
        let text = std::fs::read_to_string(&config).expect("config");
        let (before, per_day) = text.split_once("name = \"per_day\"").expect("per_day");
        let per_day = per_day.replacen("end = \"2026-01-03\"", "end = \"2026-01-01\"", 1);
        std::fs::write(&config, format!("{before}name = \"per_day\"{per_day}")).expect("end");
        wh.execute_script(&["UPDATE src SET dt = '2026-01-02' WHERE id = 1"])
            .await
            .expect("move");
        let dry_run = json_lines(&stdout_ok(&idem(
            &config,
            &[&FCT_2ND[..], &["--dry-run", "--json"]].concat(),
        )));
        let jobs: Vec<String> = planned(&dry_run, "dry_run")
            .into_iter()
            .map(|(job, _)| job)
            .collect();
        assert_eq!(jobs, ["fct", "latest"], "per_day has no step: {dry_run:?}");
        assert_eq!(dry_run[1]["moves_add_to"], Value::from(vec!["per_day"]));

        let run = json_lines(&stdout_ok(&idem(
            &config,
            &[&FCT_2ND[..], &["--json"]].concat(),
        )));
        per_day_1st_added(&run, kind);
        assert_eq!(
            planned(&run, "run_started").last(),
            Some(&("per_day".to_string(), vec!["2026-01-01".to_string()])),
            "{run:?}"
        );
        assert_eq!(stale_upstream(&config), BTreeSet::new(), "{kind:?}");
        wh.close().await;
    }

    /// As in the QA repro above, per_day's 1st is added to its step as the
    /// cascade runs; per_day also reads `other`, whose 1st was never
    /// loaded. The windows planned were checked against what they read,
    /// the one added was not: it loaded from latest alone, and nothing
    /// said that it read a day of `other` not loaded. It is checked as it
    /// is added: its step's `run_started` and the run's end say so, with
    /// the command that loads that day and it again.
    async fn a_window_added_as_the_cascade_runs_is_checked_against_what_it_reads(kind: Kind) {
        let Some((_db, config, wh)) = chain(kind, MOVING_KEY).await else {
            return;
        };
        let text = std::fs::read_to_string(&config).expect("config");
        let text = text.replacen(
            "name = \"per_day\"\n",
            "name = \"per_day\"\ndepends_on = [\"other\"]\n",
            1,
        );
        let other = common::replace_job(
            "other",
            "other",
            "2026-01-03",
            "select id, dt, v from src where dt >= :start and dt < :end",
        );
        std::fs::write(&config, format!("{text}\n{other}")).expect("other");
        wh.execute_script(&[
            "CREATE TABLE other (id INTEGER NOT NULL, dt DATE NOT NULL, v INTEGER NOT NULL)",
            "UPDATE src SET dt = '2026-01-02' WHERE id = 1",
        ])
        .await
        .expect("other, and key 1 moved");
        let days = ["--from", "2026-01-02", "--to", "2026-01-03"];
        stdout_ok(&idem(&config, &[&["run", "other"], &days[..]].concat()));
        let out = idem(&config, &[&FCT_2ND[..], &["--json"]].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        let run = json_lines(&stdout_ok(&out));
        per_day_1st_added(&run, kind);
        let started = run
            .iter()
            .find(|e| e["event"] == "run_started" && e["job"] == "per_day")
            .unwrap_or_else(|| panic!("{run:?}"));
        assert_eq!(
            started["upstream_not_loaded"],
            serde_json::json!([{
                "partition": "2026-01-01",
                "upstream": "other",
                "upstream_partitions": 1,
                "not_loaded": [{"partition": "2026-01-01", "state": "missing"}],
            }]),
            "{kind:?}: {started}"
        );
        let absolute = std::fs::canonicalize(&config).expect("config");
        let line = format!(
            "idem: per_day 2026-01-01 reads 0 of its 1 other day loaded (1 missing: 2026-01-01): loaded as it stands, it goes stale (upstream) once the rest loads; to load the rest, and this again: idem --config {} run other --only missing,failed --from 2026-01-01 --to 2026-01-01 --cascade --yes",
            absolute.display()
        );
        assert!(err.lines().any(|l| l == line), "{kind:?}: {line}\n{err}");
        wh.close().await;
    }

    on_every_engine!(
        a_cascade_adds_the_readers_of_windows_a_merge_moves_rows_out_of,
        a_cascade_skips_what_was_only_to_merge_on_through_a_skipped_window,
        a_reader_with_no_step_is_given_one_when_a_merge_moves_rows_into_its_windows,
        a_window_added_as_the_cascade_runs_is_checked_against_what_it_reads
    );
}
