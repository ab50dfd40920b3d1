//! `idem verify`: a clean job is proven idempotent, a job using random() or
//! now() is caught, and the warehouse is left exactly as it was.

mod common;

use common::{Kind, TestDb};
use idem::config::{Config, TableName};
use idem::partition::{Grain, Partition, RangeEnd, range};
use idem::warehouse::{Fingerprint, Warehouse};

fn jobs(kind: Kind) -> String {
    let random = match kind {
        Kind::Sqlite => "abs(random()) % 1000",
        Kind::Postgres => "cast(floor(random() * 1000) as integer)",
        Kind::MySql => "floor(rand() * 1000)",
    };
    let clock = match kind {
        Kind::Postgres => "cast(extract(microseconds from now()) as integer)",
        Kind::MySql => "cast(date_format(now(6), '%f') as unsigned)",
        Kind::Sqlite => "cast(strftime('%f', 'now') * 1000 as integer)",
    };
    let job = |name: &str, strategy: &str, target: &str, amount: &str| {
        let key = if strategy == "merge_key" {
            "unique_key = [\"id\"]"
        } else {
            "partition_column = \"dt\""
        };
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"{strategy}\"\n{key}\ngrain = \"day\"\n\
             start = \"2026-01-01\"\nend = \"2026-01-05\"\n\
             sql = \"select id, {amount} as amount, dt from src where dt >= :start and dt < :end\"\n\n"
        )
    };
    [
        job("clean", "replace_partition", "fct", "amount"),
        job("clean_merge", "merge_key", "dim", "amount"),
        job("noisy", "replace_partition", "fct", random),
        job("noisy_merge", "merge_key", "dim", random),
        job("stamped", "replace_partition", "fct", clock),
    ]
    .concat()
}

async fn setup(kind: Kind) -> Option<(TestDb, Config, Warehouse)> {
    let db = TestDb::new(kind).await?;
    let (_, config) = db.config(&jobs(kind));
    let wh = db.warehouse(&config).await;
    let mut values = Vec::new();
    for d in 0..5 {
        for k in 0..20 {
            values.push(format!("({}, {}, '2026-01-0{}')", d * 100 + k, k, d + 1));
        }
    }
    let fill = format!(
        "INSERT INTO src (id, amount, dt) VALUES {}",
        values.join(", ")
    );
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount BIGINT NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, amount BIGINT NOT NULL, dt DATE NOT NULL)",
        &fill,
    ])
    .await
    .unwrap();
    Some((db, config, wh))
}

/// Every partition's fingerprint of both targets, and the ledger's size.
async fn snapshot(config: &Config, wh: &Warehouse) -> (Vec<Fingerprint>, Fingerprint, Fingerprint) {
    let clean = config.jobs.iter().find(|j| j.name == "clean").unwrap();
    let mut fps = Vec::new();
    for p in range(clean.start, clean.end.unwrap()) {
        fps.push(wh.partition_fingerprint(clean, &p).await.unwrap());
    }
    let dim = wh
        .table_fingerprint(&TableName::parse("dim").unwrap())
        .await
        .unwrap();
    let ledger = wh
        .table_fingerprint(&wh.dialect().ledger_table())
        .await
        .unwrap();
    (fps, dim, ledger)
}

async fn verify_proves_and_catches_and_touches_nothing(kind: Kind) {
    let Some((_db, config, wh)) = setup(kind).await else {
        return;
    };
    let job = |name: &str| config.jobs.iter().find(|j| j.name == name).unwrap().clone();
    let day = Partition::parse(Grain::Day, "2026-01-02", RangeEnd::From).unwrap();
    // Load some history first, so that verify has something to leave alone.
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    for name in ["clean", "clean_merge"] {
        let plan = idem::engine::Backfill::plan(&wh, &job(name), &Default::default(), 2, 0)
            .await
            .unwrap();
        idem::engine::run(&wh, &plan, &tx, &Default::default()).await;
    }
    let before = snapshot(&config, &wh).await;

    for name in ["clean", "clean_merge"] {
        let v = wh
            .verify_partition(&job(name), &day, &Default::default())
            .await
            .unwrap();
        assert!(v.is_idempotent(), "{name}: {:?}", v.difference);
        assert_eq!(v.rows, [20, 20, 20]);
    }
    for name in ["noisy", "noisy_merge"] {
        let v = wh
            .verify_partition(&job(name), &day, &Default::default())
            .await
            .unwrap();
        let d = v.difference.expect("random() must be caught");
        assert!(d.only_in_first > 0 && d.only_in_second > 0, "{name}: {d:?}");
        assert!(!d.sample_first.is_empty());
    }
    {
        let v = wh
            .verify_partition(&job("stamped"), &day, &Default::default())
            .await
            .unwrap();
        let d = v.difference.expect("now() must be caught");
        if kind == Kind::Postgres {
            // now() is constant within a transaction; the later transaction shows it.
            assert_eq!(d.second, "run 3 (a later transaction)");
        }
    }
    assert_eq!(
        snapshot(&config, &wh).await,
        before,
        "verify must leave the warehouse as it was"
    );
}

on_every_engine!(verify_proves_and_catches_and_touches_nothing);

#[test]
fn the_cli_exits_0_when_idempotent_and_1_when_not() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let Some((db, _config, wh)) = rt.block_on(setup(Kind::Sqlite)) else {
        return;
    };
    rt.block_on(wh.close());
    let config = db.path().join("idem.toml");
    let run = |job: &str| {
        crate::common::idem_command()
            .arg("--config")
            .arg(&config)
            .args(["verify", job, "2026-01-03"])
            .output()
            .unwrap()
    };
    let ok = run("clean");
    assert_eq!(ok.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&ok.stdout).starts_with("idempotent: clean 2026-01-03"));
    let bad = run("noisy");
    assert_eq!(bad.status.code(), Some(1));
    let out = String::from_utf8_lossy(&bad.stdout);
    assert!(
        out.contains("NOT idempotent") && out.contains("rows only in run 1"),
        "{out}"
    );
    // Why, in the words of what differs: the column the random value is in.
    assert!(
        out.lines().nth(1).is_some_and(|l| l
            .trim_start()
            .starts_with("they differ in column amount alone: a value that changes on every run")),
        "{out}"
    );
    // The differing rows come under their columns' names, in the table's
    // order (id, amount, dt), as the rows are printed.
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("rows only in run 1"))
        .unwrap();
    assert_eq!(lines[at + 1].trim(), "id | amount | dt", "{out}");
    let row: Vec<&str> = lines[at + 2].trim().split(" | ").collect();
    assert_eq!(row.len(), 3, "{out}");
    assert!(
        row[0]
            .parse::<i64>()
            .is_ok_and(|id| (200..220).contains(&id)),
        "{out}"
    );
    assert_eq!(row[2], "2026-01-03", "{out}");
}

/// A day given to an hourly job is its 24 hours, as `run --from DAY` reads
/// it: each is proved, not only the first. A partition that has not ended
/// is proved with a warning that its source may still be filling, and the
/// hours of today that have not begun are said, not proved.
#[tokio::test]
async fn a_day_of_an_hourly_job_proves_its_hours_and_an_open_partition_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("w.db");
    let config = dir.path().join("idem.toml");
    let job = |name: &str, grain: &str, column: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"{name}\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"{column}\"\ngrain = \"{grain}\"\nstart = \"2026-01-01\"\n\
             sql = \"select id, ts as {column} from src where ts >= :start and ts < :end\"\n\n"
        )
    };
    let text = format!(
        "[warehouse]\nurl = \"sqlite://{}\"\n\n{}{}",
        db.display(),
        job("hourly", "hour", "hr"),
        job("daily", "day", "dt")
    );
    std::fs::write(&config, &text).unwrap();
    std::fs::File::create(&db).unwrap();
    let parsed = idem::config::parse(&config, &text, &|_| None).unwrap();
    let wh = Warehouse::connect(&parsed.warehouse, 1).await.unwrap();
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, ts TEXT NOT NULL)",
        "CREATE TABLE hourly (id INTEGER NOT NULL, hr TEXT NOT NULL)",
        "CREATE TABLE daily (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-02 00:10:00'), (2, '2026-01-02 13:20:00'), (3, '2026-01-02 23:59:00')",
    ])
    .await
    .unwrap();
    wh.close().await;

    let out = common::idem(&config, &["verify", "hourly", "2026-01-02"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let proved: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("idempotent: hourly 2026-01-02T"))
        .collect();
    // The hours with a row are proved; the others wrote no rows, which
    // shows nothing of the SQL, and are said to be unproved.
    assert_eq!(proved.len(), 3, "{stdout}");
    assert!(proved[0].starts_with("idempotent: hourly 2026-01-02T00 gives the same 1 row"));
    assert!(proved[1].starts_with("idempotent: hourly 2026-01-02T13 gives the same 1 row"));
    assert!(proved[2].starts_with("idempotent: hourly 2026-01-02T23 "));
    let unproved = stdout
        .lines()
        .filter(|l| l.starts_with("not proved: hourly 2026-01-02T") && l.contains("writes no rows"))
        .count();
    assert_eq!(unproved, 21, "{stdout}");
    assert!(
        stdout.ends_with(
            "3 of 24 partitions of hourly 2026-01-02 are idempotent (21 wrote no rows: not proved)\n"
        ),
        "{stdout}"
    );

    // Today has not ended: the proof says so.
    let today = chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string();
    let out = common::idem(&config, &["verify", "daily", &today]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "idem: warning: daily {today} has not ended yet (it ends "
        )) && stderr.contains("its source may still be filling"),
        "{stderr}"
    );
    let out = common::idem(&config, &["verify", "hourly", &today]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("has not ended yet"), "{stderr}");
    let hour = chrono::Utc::now().format("%H").to_string();
    let begun: usize = hour.parse::<usize>().unwrap() + 1;
    // The hour may turn while the test runs: one more proved, one fewer not begun.
    assert!(
        stdout.contains(&format!(
            "{begun} of {begun} partitions of hourly {today} are idempotent"
        )) || stdout.contains(&format!("of hourly {today} are idempotent")),
        "{stdout}"
    );
    if begun < 24 {
        assert!(
            stderr.contains(&format!("of {today} have not begun yet: not proved"))
                || stderr.contains(&format!("of {today} has not begun yet: not proved")),
            "{stderr}"
        );
    }
}

/// Values whose text hides what they hold: a float apart from another by
/// less than its text's digits (SQLite writes 15, MariaDB a FLOAT's six),
/// bytes that are no UTF-8. A job writing them at random is caught, its
/// rows shown; one writing them the same each time is proved.
mod odd_values {
    use super::*;

    async fn floats_and_bytes_are_compared_by_what_they_hold(kind: Kind) {
        let Some(db) = TestDb::new(kind).await else {
            return;
        };
        let (types, float_noise, byte_noise, bytes) = match kind {
            Kind::Sqlite => (
                ("REAL", "BLOB"),
                "1 + (abs(random()) % 4) * 2.220446049250313e-16",
                "randomblob(4)",
                "x'00ff80'",
            ),
            Kind::Postgres => (
                ("real", "bytea"),
                "cast(1 + floor(random() * 4) * 1e-6 as real)",
                "decode(md5(cast(random() as text)), 'hex')",
                "decode('00ff80', 'hex')",
            ),
            Kind::MySql => (
                ("FLOAT", "VARBINARY(32)"),
                "1 + floor(rand() * 4) * 1e-6",
                "unhex(md5(rand()))",
                "unhex('00FF80')",
            ),
        };
        let job = |name: &str, f: &str, b: &str| {
            common::replace_job(
                name,
                "odd",
                "2026-01-05",
                &format!(
                    "select id, {f} as f, {b} as b, dt from src where dt >= :start and dt < :end"
                ),
            )
        };
        let jobs = [
            job("float_noise", float_noise, bytes),
            job("byte_noise", "id", byte_noise),
            job("steady", "id / 10.0", bytes),
        ]
        .concat();
        let (_, config) = db.config(&jobs);
        let wh = db.warehouse(&config).await;
        let values: Vec<String> = (0..20).map(|k| format!("({k}, '2026-01-02')")).collect();
        wh.execute_script(&[
            "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
            &format!(
                "CREATE TABLE odd (id INTEGER NOT NULL, f {}, b {}, dt DATE NOT NULL)",
                types.0, types.1
            ),
            &format!("INSERT INTO src (id, dt) VALUES {}", values.join(", ")),
        ])
        .await
        .unwrap();
        let day = Partition::parse(Grain::Day, "2026-01-02", RangeEnd::From).unwrap();
        let job = |name: &str| config.jobs.iter().find(|j| j.name == name).unwrap().clone();
        let steady = wh
            .verify_partition(&job("steady"), &day, &Default::default())
            .await
            .unwrap();
        assert!(steady.is_idempotent(), "{:?}", steady.difference);
        assert_eq!(steady.rows, [20, 20, 20]);
        for name in ["float_noise", "byte_noise"] {
            let v = wh
                .verify_partition(&job(name), &day, &Default::default())
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let d = v
                .difference
                .unwrap_or_else(|| panic!("{name}: the values written at random must be caught"));
            assert!(d.only_in_first > 0 && !d.sample_first.is_empty(), "{d:?}");
        }
        wh.close().await;
    }

    on_every_engine!(floats_and_bytes_are_compared_by_what_they_hold);
}

/// A clock read at second precision (MariaDB's `now()`, a `DEFAULT
/// CURRENT_TIMESTAMP` column, SQLite's `datetime('now')`) changes on every
/// load a second or more apart. QA: verify's three runs took well under a
/// second, so such a job was proved idempotent nearly every time (on
/// MariaDB, a `select now()` job always). Run 3 now begins more than a
/// second after runs 1–2 end, and the proof names the column that differs.
/// The days of a range share that wait: proving four of them waited a tick
/// for each (a day of an hourly job, 26 s more); now about one in all, and
/// every day's run 3 still begins a tick after its own runs 1–2.
mod second_clock {
    use super::*;

    async fn a_clock_read_to_the_second_is_caught_and_named(kind: Kind) {
        let Some(db) = TestDb::new(kind).await else {
            return;
        };
        // The type the SELECT's clock is written to, and a clock column
        // the SELECT leaves to the table's DEFAULT.
        let (now, (stamp, created)) = match kind {
            Kind::Sqlite => (
                "datetime('now')",
                ("TEXT", "TEXT DEFAULT (datetime('now'))"),
            ),
            Kind::Postgres => (
                "to_char(now(), 'YYYY-MM-DD HH24:MI:SS')",
                ("TEXT", "TIMESTAMP(0) DEFAULT now()"),
            ),
            Kind::MySql => ("now()", ("DATETIME", "DATETIME DEFAULT CURRENT_TIMESTAMP")),
        };
        let sql = |stamp: &str| {
            format!("select id, {stamp} as stamp, dt from src where dt >= :start and dt < :end")
        };
        let jobs = [
            common::replace_job("now_in_sql", "stamped", "2026-01-05", &sql(now)),
            // The SELECT is steady; the table's DEFAULT reads the clock.
            common::replace_job("now_by_default", "defaulted", "2026-01-05", &sql("null")),
        ]
        .concat();
        let (_, config) = db.config(&jobs);
        let wh = db.warehouse(&config).await;
        let values: Vec<String> = (1..=4)
            .flat_map(|d| (0..3).map(move |k| format!("({k}, '2026-01-0{d}')")))
            .collect();
        wh.execute_script(&[
            "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
            &format!("CREATE TABLE stamped (id INTEGER NOT NULL, stamp {stamp}, dt DATE NOT NULL)"),
            &format!(
                "CREATE TABLE defaulted (id INTEGER NOT NULL, stamp {stamp}, dt DATE NOT NULL, created {created})"
            ),
            &format!("INSERT INTO src (id, dt) VALUES {}", values.join(", ")),
        ])
        .await
        .unwrap();
        let day = |d: &str| Partition::parse(Grain::Day, d, RangeEnd::From).unwrap();
        let days = range(day("2026-01-01"), day("2026-01-04"));
        for (name, column) in [("now_in_sql", "stamp"), ("now_by_default", "created")] {
            let job = config.jobs.iter().find(|j| j.name == name).unwrap();
            let before = wh.table_fingerprint(&job.target).await.unwrap();
            let cancel = Default::default();
            let mut proofs = wh.verify_partitions(job, &days, &cancel);
            let mut proved = Vec::new();
            while let Some((p, v)) = proofs.next().await {
                let v = v.unwrap_or_else(|e| panic!("{name} {}: {e}", p.name()));
                assert!(
                    v.run_3_after >= idem::warehouse::CLOCK_TICK,
                    "{name} {}: run 3 began {:?} after runs 1–2",
                    p.name(),
                    v.run_3_after
                );
                let d = v.difference.unwrap_or_else(|| {
                    panic!(
                        "{name} {}: a clock read to the second must be caught",
                        p.name()
                    )
                });
                assert_eq!(d.columns_differing, [column], "{name}: {d:?}");
                assert!(
                    d.why()
                        .starts_with(&format!("they differ in column {column} alone")),
                    "{name}: {}",
                    d.why()
                );
                proved.push(p);
            }
            assert_eq!(proved, days, "{name}: each day, in order");
            // About one tick in all (the last day's), not one for each day.
            assert!(
                proofs.waited() < 2 * idem::warehouse::CLOCK_TICK,
                "{name}: {} days waited {:?} for the clock",
                days.len(),
                proofs.waited()
            );
            assert_eq!(
                wh.table_fingerprint(&job.target).await.unwrap(),
                before,
                "{name}: verify must leave the target as it was"
            );
        }
        wh.close().await;
    }

    on_every_engine!(a_clock_read_to_the_second_is_caught_and_named);
}

async fn fingerprints(wh: &Warehouse, tables: &[TableName]) -> Vec<Fingerprint> {
    let mut fps = Vec::new();
    for t in tables {
        fps.push(wh.table_fingerprint(t).await.unwrap());
    }
    fps
}

/// The days of a range are proved in their order while their waits for
/// the clock overlap: a day that fails is said after the days before it are
/// proved, and no day after it is started; a cancel while the proofs wait
/// ends them at once. Nothing is left behind either way.
#[tokio::test]
async fn a_range_of_proofs_says_a_failure_in_order_and_stops_on_a_cancel() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let sql = "select id, dt from src where dt >= :start and dt < :end";
    let jobs = [
        common::replace_job("checked", "checked", "2026-01-05", sql),
        common::replace_job("plain", "plain", "2026-01-05", sql),
    ]
    .concat();
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-03'), (4, '2026-01-04')",
        // Day 3's row breaks the target's CHECK: its runs 1–2 fail.
        "CREATE TABLE checked (id INTEGER NOT NULL CHECK (id <> 3), dt DATE NOT NULL)",
        "CREATE TABLE plain (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .unwrap();
    let job = |name: &str| config.jobs.iter().find(|j| j.name == name).unwrap();
    let day = |d: &str| Partition::parse(Grain::Day, d, RangeEnd::From).unwrap();
    let days = range(day("2026-01-01"), day("2026-01-04"));
    let tables = [
        job("checked").target.clone(),
        job("plain").target.clone(),
        wh.dialect().ledger_table(),
    ];
    let untouched = fingerprints(&wh, &tables).await;

    let cancel = Default::default();
    let mut proofs = wh.verify_partitions(job("checked"), &days, &cancel);
    let mut said = Vec::new();
    while let Some((p, v)) = proofs.next().await {
        said.push((
            p.name(),
            v.map(|v| v.is_idempotent()).map_err(|e| e.to_string()),
        ));
    }
    assert_eq!(said.len(), 3, "day 4 is not started: {said:?}");
    assert_eq!(said[0], ("2026-01-01".into(), Ok(true)));
    assert_eq!(said[1], ("2026-01-02".into(), Ok(true)));
    assert_eq!(said[2].0, "2026-01-03");
    assert!(
        said[2].1.as_ref().is_err_and(|e| e.contains("CHECK")),
        "{said:?}"
    );

    // Cancelled a quarter tick in: while day 1 waits for its tick (days
    // 2–4 have had runs 1–2 by then) or a slow machine still runs them.
    // The proofs end with that, at once: nothing follows.
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut proofs = wh.verify_partitions(job("plain"), &days, &cancel);
    let first = async {
        let first = proofs.next().await;
        (first, proofs.next().await)
    };
    let cancelling = async {
        tokio::time::sleep(idem::warehouse::CLOCK_TICK / 4).await;
        cancel.cancel();
    };
    let ((first, then), ()) = tokio::join!(first, cancelling);
    assert!(
        matches!(
            first,
            Some((_, Err(idem::warehouse::WarehouseError::Cancelled)))
        ),
        "{first:?}"
    );
    assert!(then.is_none(), "{then:?}");
    assert_eq!(
        fingerprints(&wh, &tables).await,
        untouched,
        "nothing is left behind"
    );
    // The partitions' locks are free: a proof of the day runs at once.
    let again = wh
        .verify_partition(job("plain"), &days[0], &Default::default())
        .await
        .unwrap();
    assert!(again.is_idempotent(), "{:?}", again.difference);
    wh.close().await;
}

/// SQLite keeps whatever bytes a TEXT value was given, UTF-8 or not. A
/// source holding such a value used to fail every load and every verify
/// ("error occurred while decoding: invalid utf-8 sequence"), naming
/// neither the column nor the value: now it loads, its fingerprint is the
/// bytes' (a re-run reads as unchanged, a changed byte as changed), and
/// verify shows each byte that is not UTF-8 as `\xNN`.
#[tokio::test]
async fn sqlite_text_that_is_not_utf8_loads_and_verifies() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let jobs = [
        common::replace_job(
            "bytes",
            "odd",
            "2026-01-05",
            "select id, s, dt from src where dt >= :start and dt < :end",
        ),
        common::replace_job(
            "noisy",
            "odd_noisy",
            "2026-01-05",
            "select id, s || abs(random()) as s, dt from src where dt >= :start and dt < :end",
        ),
    ]
    .concat();
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, s TEXT, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 'a' || CAST(x'ff' AS TEXT), '2026-01-02'), (2, 'ok', '2026-01-02')",
        "CREATE TABLE odd (id INTEGER NOT NULL, s TEXT, dt DATE NOT NULL)",
        "CREATE TABLE odd_noisy (id INTEGER NOT NULL, s TEXT, dt DATE NOT NULL)",
    ])
    .await
    .unwrap();
    let run = |changed: &str| {
        let out = common::idem(
            &path,
            &[
                "run",
                "bytes",
                "--from",
                "2026-01-02",
                "--to",
                "2026-01-02",
                "-y",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains("inserted 2 · ") && stderr.contains(changed),
            "{stderr}"
        );
    };
    run("content changed");
    run("content unchanged");
    // One byte changed behind idem's back (0xff to 0xfe): the content did.
    wh.execute_script(&["UPDATE src SET s = 'a' || CAST(x'fe' AS TEXT) WHERE id = 1"])
        .await
        .unwrap();
    run("content changed");
    // What `idem verify JOB` says of the day, once it exited with `code`.
    let verify = |job: &str, code: i32| {
        let out = common::idem(&path, &["verify", job, "2026-01-02"]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{stdout}{stderr}");
        stdout
    };
    let clean = verify("bytes", 0);
    assert!(clean.starts_with("idempotent: "), "{clean}");
    let noisy = verify("noisy", 1);
    assert!(noisy.contains("1 | a\\xfe"), "{noisy}");
    wh.close().await;
}
