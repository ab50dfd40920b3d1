//! Source reconciliation on every engine: after the loads, the sources get
//! late rows, lose rows, and change values; `idem status --reconcile` flags
//! exactly the partitions whose row counts moved, in one query per job, and
//! writes nothing.

mod common;

use std::collections::BTreeMap;

use common::{Kind, TestDb, idem, stdout_ok};
use idem::config::TableName;
use serde_json::Value;

const SELECT: &str = "select id, amount, dt from src where dt >= :start and dt < :end";

/// `job partition` → (rows_source, out_of_date) from `status --reconcile`.
fn reconciled(config: &std::path::Path) -> BTreeMap<String, (Option<i64>, Option<bool>)> {
    let out = stdout_ok(&idem(
        config,
        &["status", "--reconcile", "--format", "json"],
    ));
    let rows: Vec<Value> = serde_json::from_str(&out).expect("json");
    rows.iter()
        .map(|r| {
            (
                format!(
                    "{} {}",
                    r["job"].as_str().unwrap_or(""),
                    r["partition"].as_str().unwrap_or("")
                ),
                (r["rows_source"].as_i64(), r["out_of_date"].as_bool()),
            )
        })
        .collect()
}

async fn reconcile_flags_exactly_the_partitions_whose_source_counts_moved(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs = [
        common::replace_job("fct", "fct", "2026-01-05", SELECT),
        // No partition column: its windows are the source's.
        common::merge_job("dim", "dim", "2026-01-05", SELECT),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    let mut values = Vec::new();
    for d in 1..=5 {
        for k in 0..10 {
            values.push(format!("({}, {k}, '2026-01-0{d}')", d * 100 + k));
        }
    }
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE dim (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        &format!("INSERT INTO src VALUES {}", values.join(", ")),
    ])
    .await
    .expect("setup");
    stdout_ok(&idem(&config, &["run", "fct"]));
    stdout_ok(&idem(&config, &["run", "dim"]));
    let before = reconciled(&config);
    assert!(
        before
            .values()
            .all(|(n, stale)| *n == Some(10) && *stale == Some(false)),
        "{before:?}"
    );

    // Late rows for day 2, rows removed from day 4, values changed on day 5.
    wh.execute_script(&[
        "INSERT INTO src VALUES (291, 1, '2026-01-02'), (292, 1, '2026-01-02'), (293, 1, '2026-01-02')",
        "DELETE FROM src WHERE id IN (401, 402)",
        "UPDATE src SET amount = amount + 100 WHERE dt = '2026-01-05'",
    ])
    .await
    .expect("source changes");
    let ledger_before = wh.attempts("fct", None).await.expect("ledger").len()
        + wh.attempts("dim", None).await.expect("ledger").len();
    let fingerprints = |wh: &idem::warehouse::Warehouse| {
        let wh = wh.clone();
        async move {
            let mut out = Vec::new();
            for t in ["fct", "dim", "src"] {
                out.push(
                    wh.table_fingerprint(&TableName::parse(t).expect("table"))
                        .await
                        .expect("fingerprint"),
                );
            }
            out
        }
    };
    let tables_before = fingerprints(&wh).await;

    let after = reconciled(&config);
    let flagged: Vec<(&str, Option<i64>)> = after
        .iter()
        .filter(|(_, (_, stale))| *stale == Some(true))
        .map(|(k, (n, _))| (k.as_str(), *n))
        .collect();
    assert_eq!(
        flagged,
        vec![
            ("dim 2026-01-02", Some(13)),
            ("dim 2026-01-04", Some(8)),
            ("fct 2026-01-02", Some(13)),
            ("fct 2026-01-04", Some(8)),
        ],
        "changed values (day 5) cannot show in counts"
    );
    // Reconciling wrote nothing: no ledger row, no table changed.
    let ledger_after = wh.attempts("fct", None).await.expect("ledger").len()
        + wh.attempts("dim", None).await.expect("ledger").len();
    assert_eq!(ledger_after, ledger_before);
    assert_eq!(fingerprints(&wh).await, tables_before);

    // The table says what is wrong.
    let table = stdout_ok(&idem(&config, &["status", "fct", "--reconcile"]));
    assert!(
        table.contains("out of date: source 13 · loaded 10 · +3 late"),
        "{table}"
    );
    assert!(
        table.contains("source 8 · loaded 10 · 2 removed"),
        "{table}"
    );
    // A merge never deletes: a re-run would keep the removed rows.
    assert!(!table.contains("never deletes"), "{table}");
    let table = stdout_ok(&idem(&config, &["status", "dim", "--reconcile"]));
    assert!(
        table.contains(
            "source 8 · loaded 10 · 2 removed (a merge never deletes: rows deleted at the source stay in dim after a re-run; delete them there)"
        ),
        "{table}"
    );

    // One statement per job, whatever the range: the job's SQL appears once
    // in a grouped query for a job with a partition column.
    let fct = parsed.jobs.iter().find(|j| j.name == "fct").expect("fct");
    let statements = wh
        .source_counts_sql(
            fct,
            fct.start,
            fct.end.expect("end"),
            idem::lint::bounds_only_filter(fct, wh.syntax()),
        )
        .expect("sql");
    let [sql] = statements.as_slice() else {
        panic!("{} statements", statements.len());
    };
    assert_eq!(
        sql.text().matches("from src where").count(),
        1,
        "{}",
        sql.text()
    );

    // Re-running the out-of-date partitions converges.
    stdout_ok(&idem(
        &config,
        &["run", "fct", "--from", "2026-01-02", "--to", "2026-01-04"],
    ));
    let fixed = reconciled(&config);
    assert!(
        fixed
            .iter()
            .filter(|(k, _)| k.starts_with("fct"))
            .all(|(_, (_, stale))| *stale == Some(false)),
        "{fixed:?}"
    );
}

/// Jobs whose SQL does more with the window than filter on it: a daily
/// snapshot that writes its window's start as the partition value, a job
/// that selects its partition by name, and a self-join bounded on both
/// sides (pairs across days are in no window). Counted over a range in one
/// grouped statement, the whole source fell on the first partition and
/// every other looked emptied ("source 0", a shrink guard refusal in the
/// dry run); each window is counted as its own load reads it.
async fn windows_named_or_written_by_the_sql_are_counted_one_by_one(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs = [
        common::replace_job(
            "snap",
            "snap",
            "2026-01-03",
            "select id, :start as dt from dim_src",
        ),
        common::replace_job(
            "named",
            "named",
            "2026-01-03",
            "select id, batch as dt from batches where cast(batch as char(10)) = :partition",
        ),
        // Both sides of a self-join bounded by the window (QA): grouped over
        // the range, a day-1 row kept its pair from day 2.
        common::replace_job(
            "pairs",
            "pairs",
            "2026-01-03",
            "select x.id as a, y.id as b, x.dt as dt from visits x join visits y on x.cust = y.cust \
             where x.dt >= :start and x.dt < :end and y.dt >= :start and y.dt < :end",
        ),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE dim_src (id INTEGER NOT NULL)",
        "INSERT INTO dim_src VALUES (1), (2), (3), (4)",
        "CREATE TABLE snap (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE batches (id INTEGER NOT NULL, batch DATE NOT NULL)",
        "INSERT INTO batches VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-02'), (4, '2026-01-03')",
        "CREATE TABLE named (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE visits (id INTEGER NOT NULL, cust INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO visits VALUES (1, 1, '2026-01-01'), (2, 1, '2026-01-02'), (3, 2, '2026-01-01'), (4, 2, '2026-01-01')",
        "CREATE TABLE pairs (a INTEGER NOT NULL, b INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .expect("fixture");
    for job in &parsed.jobs {
        assert!(
            !idem::lint::bounds_only_filter(job, job.engine.into()),
            "{}",
            job.name
        );
        stdout_ok(&idem(&config, &["run", &job.name]));
    }
    let expected = [
        ("snap 2026-01-01", 4),
        ("snap 2026-01-02", 4),
        ("snap 2026-01-03", 4),
        ("named 2026-01-01", 1),
        ("named 2026-01-02", 2),
        ("named 2026-01-03", 1),
        ("pairs 2026-01-01", 5),
        ("pairs 2026-01-02", 1),
    ];
    let counted = reconciled(&config);
    for (key, rows) in expected {
        assert_eq!(
            counted.get(key),
            Some(&(Some(rows), Some(false))),
            "{kind:?} {key}: {counted:?}"
        );
    }
    for job in ["snap", "named", "pairs"] {
        let out = stdout_ok(&idem(&config, &["run", job, "--dry-run", "--json"]));
        let plan: Value = serde_json::from_str(out.trim()).expect("json");
        for p in plan["partitions"].as_array().expect("partitions") {
            assert_eq!(p["refused"], false, "{kind:?} {job}: {p}");
            assert_eq!(p["rows_source"], p["rows_now"], "{kind:?} {job}: {p}");
        }
    }
    wh.close().await;
}

on_every_engine!(
    reconcile_flags_exactly_the_partitions_whose_source_counts_moved,
    windows_named_or_written_by_the_sql_are_counted_one_by_one,
);

/// A job parsed from `jobs_toml` alone (no warehouse is reached).
fn parsed_job(jobs_toml: &str) -> idem::config::Job {
    let text = format!("[warehouse]\nurl = \"sqlite://unused.db\"\n\n{jobs_toml}");
    let config = idem::config::parse(std::path::Path::new("idem.toml"), &text, &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    config.jobs.into_iter().next().expect("one job")
}

/// One grouped statement counts a window's rows only where they are the
/// range's rows that fall in it. Any SQL whose rows depend on other rows of
/// the window (window functions, DISTINCT ON, LIMIT, aggregates across
/// partitions, subqueries, outer joins to the windowed rows), whose bounds
/// are not half-open filters, or that filters another column than the one
/// the partition is computed from, is counted window by window.
#[test]
fn only_sql_whose_windows_are_row_filters_is_counted_in_one_grouped_statement() {
    let window = "where ts >= :start and ts < :end";
    let grouped = [
        format!("select id, v, substr(ts, 1, 10) as dt from src {window}"),
        "select s.id, d.name, cast(s.ts as date) as dt from src s join dim d on d.id = s.id left join other o on o.id = s.id where s.ts >= cast(:start as timestamp) and s.ts < cast(:end as timestamp)".to_string(),
        format!("select id, dt from (select id, substr(ts, 1, 10) as dt from src {window}) x"),
        format!(
            "with w as (select id, ts from src {window}) select id, substr(ts, 1, 10) as dt from w"
        ),
        format!("select substr(ts, 1, 10) as dt, count(*) as n from src {window} group by 1"),
        format!(
            "select substr(ts, 1, 10) as dt, count(distinct id) as n from src {window} group by substr(ts, 1, 10) having count(*) > 1"
        ),
        format!("select distinct id, substr(ts, 1, 10) as dt from src {window}"),
        format!(
            "select id, substr(ts, 1, 10) as dt from src {window} union all select id, substr(ts, 1, 10) as dt from src2 {window}"
        ),
        format!("select id, substr(ts, 1, 10) as dt from src {window} order by id"),
    ];
    let per_window = [
        // The QA repro: the latest row per key of the window, not of the range.
        format!("select id, dt, v from (select id, substr(ts,1,10) as dt, v, row_number() over (partition by id order by ts desc) rn from src {window}) where rn = 1"),
        format!("select id, substr(ts, 1, 10) as dt, count(*) over () as n from src {window}"),
        format!("select distinct on (id) id, substr(ts, 1, 10) as dt from src {window} order by id, ts desc"),
        format!("select id, dt from (select distinct id, max(substr(ts, 1, 10)) as dt from src {window} group by id) x"),
        format!("select id, substr(ts, 1, 10) as dt from src {window} limit 10"),
        format!("select id, substr(ts, 1, 10) as dt from src {window} order by ts offset 5 rows fetch first 10 rows only"),
        format!("select id, max(substr(ts, 1, 10)) as dt from src {window} group by id"),
        format!("select id, max(substr(ts, 1, 10)) as dt from src {window} group by id having count(*) > 1"),
        format!("select min(substr(ts, 1, 10)) as dt, count(*) as n from src {window}"),
        format!("select id, substr(ts, 1, 10) as dt from src where id in (select id from src2 {window})"),
        format!("select d.id, substr(s.ts, 1, 10) as dt from dim d left join (select id, ts from src {window}) s on s.id = d.id"),
        format!("select id, substr(ts, 1, 10) as dt from src {window} union select id, substr(ts, 1, 10) as dt from src2 {window}"),
        format!("select id, substr(ts, 1, 10) as dt from src {window} union all select id, dt from fixed"),
        "select id, substr(ts, 1, 10) as dt from src where ts > :start and ts <= :end".to_string(),
        "select id, substr(ts, 1, 10) as dt from src where ts between :start and :end".to_string(),
        "select id, substr(ts, 1, 10) as dt from src where ts >= :start".to_string(),
        "select id, substr(ts, 1, 10) as dt from src where ts >= :start and ts < :end or id = 0".to_string(),
        "select id, substr(ts, 1, 10) as dt from src where ts >= :start and updated_at < :end".to_string(),
        // Two windowed sources in one row (QA: a self-join bounded on both
        // sides counted 631 for a window of 208): grouped over the range,
        // pairs from different days were kept.
        "select cast(x.ts as date) as dt, x.id as a, y.id as b from src x join src y on x.cust = y.cust where x.ts >= :start and x.ts < :end and y.ts >= :start and y.ts < :end".to_string(),
        format!("select cast(x.ts as date) as dt, x.id from src x join (select cust from src2 {window}) y on x.cust = y.cust where x.ts >= :start and x.ts < :end"),
        format!("select cast(x.ts as date) as dt, x.id from (select id, cust, ts from src {window}) x join (select cust from src2 {window}) y on x.cust = y.cust"),
        "select id, substr(ts, 1, 10) as dt from src where ts >= :start and ts < :end and updated_at >= :start and updated_at < :end".to_string(),
        // Filters another column than the partition's.
        "select id, substr(created_at, 1, 10) as dt from src where loaded_at >= :start and loaded_at < :end".to_string(),
        "select id, :start as dt from src".to_string(),
        // The window filters a CTE the query never reads.
        format!("with w as (select id, ts from src {window}) select id, substr(ts, 1, 10) as dt from src"),
    ];
    let counted_grouped = |sql: &str| {
        let job = parsed_job(&common::replace_job("j", "t", "2026-01-03", sql));
        idem::lint::bounds_only_filter(&job, job.engine.into())
    };
    for sql in &grouped {
        assert!(counted_grouped(sql), "should group: {sql}");
    }
    for sql in &per_window {
        assert!(!counted_grouped(sql), "should count per window: {sql}");
    }
    // A merge job with a partition column whose SQL filters on its load time.
    let merge = parsed_job(
        "[[jobs]]\nname = \"m\"\ntarget = \"t\"\nstrategy = \"merge_key\"\nunique_key = [\"id\"]\n\
         partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-03\"\n\
         sql = \"select id, cast(created_at as date) as dt from src where loaded_at >= :start and loaded_at < :end\"\n",
    );
    assert!(!idem::lint::bounds_only_filter(&merge, merge.engine.into()));
}

/// A MariaDB/MySQL server with `ANSI_QUOTES` reads `"dt" >= :start` as a
/// filter on the column dt: its source is counted grouped when the SQL is
/// read as that server reads it (QA: it was read by the engine's default,
/// to which `"dt"` is a string, and counted window by window). Read by the
/// default, such SQL is not provably row filters and stays per window.
#[test]
fn sql_quoting_its_columns_as_the_server_reads_them_is_counted_grouped() {
    let mut job = parsed_job(
        "[[jobs]]\nname = \"j\"\ntarget = \"t\"\nstrategy = \"replace_partition\"\n\
         partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-03\"\n\
         sql = 'select \"id\", \"dt\" from \"src\" where \"dt\" >= :start and \"dt\" < :end'\n",
    );
    job.engine = idem::config::Engine::MySql;
    let server = idem::warehouse::sql::Syntax {
        engine: idem::config::Engine::MySql,
        backslash_escapes: true,
        ansi_quotes: true,
    };
    assert!(idem::lint::bounds_only_filter(&job, server), "{}", job.sql);
    assert!(
        !idem::lint::bounds_only_filter(&job, job.engine.into()),
        "{}",
        job.sql
    );
}

/// The QA repro: the latest row per key of each day. Counted over the whole
/// range in one statement, key 1's day-1 row lost to its day-2 row, and
/// reconcile said "source 1 · loaded 2" for 2026-01-01 forever.
#[tokio::test]
async fn a_latest_row_per_key_dedup_is_counted_as_each_window_loads_it() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let jobs = common::replace_job(
        "dedup",
        "dedup",
        "2026-01-03",
        "select id, dt, v from (select id, substr(ts,1,10) as dt, v, row_number() over (partition by id order by ts desc) rn from src where ts >= :start and ts < :end) where rn = 1",
    );
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER, ts TEXT, v TEXT)",
        "INSERT INTO src VALUES (1, '2026-01-01 01:00:00', 'a'), (2, '2026-01-01 02:00:00', 'b'), (1, '2026-01-02 01:00:00', 'a2'), (3, '2026-01-03 05:00:00', 'c')",
        "CREATE TABLE dedup (id INTEGER, dt TEXT, v TEXT)",
    ])
    .await
    .expect("fixture");
    stdout_ok(&idem(&config, &["run", "dedup"]));
    let counted = reconciled(&config);
    for (key, rows) in [
        ("dedup 2026-01-01", 2),
        ("dedup 2026-01-02", 1),
        ("dedup 2026-01-03", 1),
    ] {
        assert_eq!(
            counted.get(key),
            Some(&(Some(rows), Some(false))),
            "{key}: {counted:?}"
        );
    }
    let out = stdout_ok(&idem(&config, &["run", "dedup", "--dry-run", "--json"]));
    let plan: Value = serde_json::from_str(out.trim()).expect("json");
    for p in plan["partitions"].as_array().expect("partitions") {
        assert_eq!(p["rows_source"], p["rows_now"], "{p}");
    }
    wh.close().await;
}

/// The grouped count buckets the SELECT's partition column by its start
/// and names the buckets after grouping: at every grain, over a date or a
/// timestamp (PostgreSQL: also a zoned one), it gives each
/// window what counting the window alone gives, boundaries included.
async fn a_grouped_count_gives_each_window_what_the_window_alone_counts(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let mut columns = vec![("ts", "TIMESTAMP"), ("d", "DATE")];
    match kind {
        Kind::MySql => columns[0].1 = "DATETIME",
        Kind::Postgres => columns.push(("tz", "TIMESTAMPTZ")),
        Kind::Sqlite => {}
    }
    let job = |name: &str, column: &str, grain: &str, start: &str, end: &str| {
        format!(
            "[[jobs]]\nname = \"{name}\"\ntarget = \"t_{name}\"\nstrategy = \"replace_partition\"\n\
             partition_column = \"{column}\"\ngrain = \"{grain}\"\nstart = \"{start}\"\nend = \"{end}\"\n\
             sql = \"select * from src where {column} >= :start and {column} < :end\"\n\n"
        )
    };
    let mut jobs = String::new();
    let mut names = Vec::new();
    for (column, _) in &columns {
        for (grain, start, end) in [
            ("hour", "2026-01-31T20", "2026-02-01T03"),
            ("day", "2026-01-30", "2026-02-02"),
            ("month", "2025-12", "2026-03"),
        ] {
            let name = format!("{column}_{grain}");
            jobs.push_str(&job(&name, column, grain, start, end));
            names.push(name);
        }
    }
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    let declared: Vec<String> = columns
        .iter()
        .map(|(c, t)| format!("{c} {t} NOT NULL"))
        .collect();
    let mut rows = Vec::new();
    for (i, at) in [
        "2025-12-31 23:59:59",
        "2026-01-01 00:00:00",
        "2026-01-30 00:00:00",
        "2026-01-31 20:00:00",
        "2026-01-31 20:59:59",
        "2026-01-31 23:59:59",
        "2026-02-01 00:00:00",
        "2026-02-01 00:00:00",
        "2026-02-01 02:30:00",
        "2026-02-02 12:00:00",
        "2026-03-31 23:59:59",
        "2026-04-01 00:00:00",
    ]
    .iter()
    .enumerate()
    {
        let values: Vec<String> = columns
            .iter()
            .map(|(_, t)| match *t {
                "DATE" => format!("'{}'", &at[..10]),
                "TIMESTAMPTZ" => format!("'{at}+00'"),
                _ => format!("'{at}'"),
            })
            .collect();
        rows.push(format!("({i}, {})", values.join(", ")));
    }
    wh.execute_script(&[
        &format!(
            "CREATE TABLE src (id INTEGER NOT NULL, {})",
            declared.join(", ")
        ),
        &format!("INSERT INTO src VALUES {}", rows.join(", ")),
    ])
    .await
    .expect("setup");
    for name in &names {
        let job = config.jobs.iter().find(|j| j.name == *name).expect("job");
        let (first, last) = (job.start, job.end.expect("end"));
        let grouped = wh
            .source_counts(job, first, last, true)
            .await
            .unwrap_or_else(|e| panic!("{kind:?} {name}: {e}"));
        let alone = wh
            .source_counts(job, first, last, false)
            .await
            .unwrap_or_else(|e| panic!("{kind:?} {name}: {e}"));
        let nonzero = |c: &idem::warehouse::Counts| -> BTreeMap<String, i64> {
            c.iter()
                .filter(|(_, n)| **n > 0)
                .map(|(p, n)| (p.clone(), *n))
                .collect()
        };
        assert_eq!(
            nonzero(&grouped.partitions),
            nonzero(&alone.partitions),
            "{kind:?} {name}"
        );
        assert!(
            !nonzero(&alone.partitions).is_empty(),
            "{kind:?} {name}: no rows"
        );
    }
    wh.close().await;
}

mod grouped {
    use super::*;

    on_every_engine!(a_grouped_count_gives_each_window_what_the_window_alone_counts);
}

mod stopping {
    use super::*;
    use sqlx::Connection;

    /// Statements of other sessions running a query that holds `marker`.
    async fn running(kind: Kind, url: &str, marker: &str) -> i64 {
        match kind {
            Kind::Postgres => {
                let mut c = sqlx::PgConnection::connect(url).await.expect("connect");
                sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' \
                     AND pid <> pg_backend_pid() AND strpos(query, $1) > 0",
                )
                .bind(marker)
                .fetch_one(&mut c)
                .await
                .expect("activity")
            }
            _ => {
                let mut c = sqlx::MySqlConnection::connect(url).await.expect("connect");
                sqlx::query_scalar(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                     WHERE ID <> CONNECTION_ID() AND COMMAND <> 'Sleep' AND LOCATE(?, INFO) > 0",
                )
                .bind(marker)
                .fetch_one(&mut c)
                .await
                .expect("processlist")
            }
        }
    }

    /// A count the console stops (its run dialog closed, `O` pressed
    /// again, the console left) stops on the server too. Dropped alone, it
    /// ran on there to its end, one more for each time (QA on MariaDB: the
    /// counts were still in SHOW PROCESSLIST after idem had exited).
    async fn a_stopped_count_stops_on_the_server(kind: Kind) {
        let Some(db) = TestDb::new(kind).await else {
            return;
        };
        let marker = match kind {
            Kind::Postgres => "pg_sleep(0.5) IS NOT NULL",
            _ => "SLEEP(0.5) = 0",
        };
        let job = common::replace_job(
            "slow_count",
            "fct",
            "2026-01-04",
            &format!("select id, dt from src where dt >= :start and dt < :end and {marker}"),
        );
        let (_, config) = db.config(&job);
        let wh = db.warehouse(&config).await;
        let rows: Vec<String> = (1..=30)
            .map(|id| format!("({id}, '2026-01-0{}')", id % 3 + 1))
            .collect();
        let insert = format!("INSERT INTO src (id, dt) VALUES {}", rows.join(", "));
        wh.execute_script(&[
            "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
            "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
            &insert,
        ])
        .await
        .expect("fixture");
        let job = config.jobs[0].clone();
        let parts = job.partitions(idem::partition::now_utc());
        let (first, last) = (parts[0], *parts.last().expect("a partition"));
        let cancel = tokio_util::sync::CancellationToken::new();
        let counting = {
            let (wh, cancel) = (wh.clone(), cancel.clone());
            tokio::spawn(async move {
                wh.source_counts_until(&job, (first, last), false, &cancel)
                    .await
            })
        };
        // 30 rows of half a second: 15 s on the server, once it runs.
        let started = std::time::Instant::now();
        while running(kind, &db.url, marker).await == 0 {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "the count never ran"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        cancel.cancel();
        let stopped = counting.await.expect("joined");
        assert!(
            matches!(stopped, Err(idem::warehouse::WarehouseError::Cancelled)),
            "{stopped:?}"
        );
        let cancelled = std::time::Instant::now();
        while running(kind, &db.url, marker).await > 0 {
            assert!(
                cancelled.elapsed() < std::time::Duration::from_secs(3),
                "{kind:?}: the count still runs on the server"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        wh.close().await;
    }

    on_server_engines!(a_stopped_count_stops_on_the_server);
}

/// Every key of a row of `idem status --format json`, as the README lists
/// them: a consumer reads one shape whatever the flags (QA: `rows_source`
/// and `out_of_date` were there with `--reconcile` and gone without it).
const STATUS_JSON_KEYS: [&str; 17] = [
    "job",
    "partition",
    "state",
    "rows_now",
    "rows_at_load",
    "rows_null_partition",
    "rows_source_null_partition",
    "anomaly",
    "drift",
    "moved_out",
    "attempts",
    "last_finished",
    "last_error",
    "stale_upstream",
    "refused",
    "rows_source",
    "out_of_date",
];

#[tokio::test]
async fn status_json_has_one_shape_with_or_without_reconcile() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let jobs = [
        common::replace_job("fct", "fct", "2026-01-03", SELECT),
        // Its target is missing: its one row is `unreadable`.
        common::replace_job("gone", "gone", "2026-01-03", SELECT),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 5, '2026-01-01'), (2, 6, '2026-01-02')",
    ])
    .await
    .expect("setup");
    wh.close().await;
    stdout_ok(&idem(
        &config,
        &["run", "fct", "--to", "2026-01-01", "--yes"],
    ));
    let mut reconciled_values = 0;
    for flags in [&["status"][..], &["status", "--reconcile"][..]] {
        let out = idem(&config, &[flags, &["--format", "json"]].concat());
        // The unreadable job makes the exit code 1; the rows are still printed.
        assert_eq!(out.status.code(), Some(1), "{flags:?}");
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(
            rows.len(),
            4,
            "{flags:?}: three days of fct, one row of gone"
        );
        for row in &rows {
            let mut keys: Vec<&str> = row
                .as_object()
                .expect("an object")
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            let mut expected = STATUS_JSON_KEYS.to_vec();
            expected.sort_unstable();
            assert_eq!(keys, expected, "{flags:?}: {row}");
            if flags.len() == 1 {
                assert!(row["rows_source"].is_null() && row["out_of_date"].is_null());
            } else if row["state"] != "unreadable" {
                reconciled_values += usize::from(row["rows_source"].is_i64());
            }
        }
    }
    assert_eq!(reconciled_values, 3, "--reconcile fills rows_source");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README");
    let documented = readme
        .split("\n\n")
        .find(|p| p.starts_with("`idem status --format json` prints"))
        .expect("the README describes status's JSON");
    for key in STATUS_JSON_KEYS {
        assert!(
            documented.contains(&format!("`{key}`")),
            "README lacks {key}"
        );
    }
}

/// A source that cannot be counted (dropped, renamed) leaves the job's
/// partitions shown, their source counts unknown, and says why on stderr
/// with exit 1 (QA: the job became one `unreadable` row, its target's
/// readable states hidden, as if the target were gone).
#[tokio::test]
async fn a_source_that_cannot_be_counted_leaves_the_partitions_shown() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let jobs = [
        common::replace_job("fct", "fct", "2026-01-02", SELECT),
        common::replace_job(
            "other",
            "other",
            "2026-01-02",
            "select id, amount, dt from src2 where dt >= :start and dt < :end",
        ),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE src2 (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE other (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 5, '2026-01-01'), (2, 6, '2026-01-02')",
        "INSERT INTO src2 VALUES (1, 5, '2026-01-01'), (2, 6, '2026-01-02')",
    ])
    .await
    .expect("setup");
    stdout_ok(&idem(&config, &["run", "fct"]));
    stdout_ok(&idem(&config, &["run", "other"]));
    wh.execute_script(&["DROP TABLE src"]).await.expect("drop");
    wh.close().await;

    let out = idem(&config, &["status", "--reconcile", "--format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("idem: fct: not reconciled, its source could not be counted: ")
            && stderr.contains("src"),
        "{stderr}"
    );
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).expect("json");
    let shown: Vec<(String, String, Option<i64>, Option<i64>)> = rows
        .iter()
        .map(|r| {
            (
                format!(
                    "{} {}",
                    r["job"].as_str().unwrap(),
                    r["partition"].as_str().unwrap_or("-")
                ),
                r["state"].as_str().unwrap().to_string(),
                r["rows_now"].as_i64(),
                r["rows_source"].as_i64(),
            )
        })
        .collect();
    let loaded = |p: &str, source| (p.to_string(), "loaded".to_string(), Some(1), source);
    assert_eq!(
        shown,
        [
            loaded("fct 2026-01-01", None),
            loaded("fct 2026-01-02", None),
            loaded("other 2026-01-01", Some(1)),
            loaded("other 2026-01-02", Some(1)),
        ]
    );
    let table = idem(&config, &["status", "fct", "--reconcile"]);
    assert_eq!(table.status.code(), Some(1));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("2026-01-01") && text.contains("2026-01-02") && !text.contains("unreadable"),
        "{text}"
    );
}

/// QA: a job whose SQL gives rows with a NULL partition column fails every
/// replace load over them (`job wrote N rows outside its partition … a NULL
/// dt lies in none`), yet its source counts, grouped by that column, left
/// the NULL group out and said nothing: `status --reconcile` and the dry
/// run now say how many, from the same statement. Counted window by
/// window (a LIMIT keeps a window's rows from being counted grouped), they
/// were counted in their window's rows and still not said: both ways now
/// say the same.
async fn the_source_rows_no_window_holds_are_said_before_a_load(kind: Kind) {
    // A refund's day is not known: the SQL gives it NULL.
    let sql = "select id, amount, case when amount < 0 then null else dt end as dt \
               from src where dt >= :start and dt < :end";
    said_before_a_load(kind, sql, true).await;
    said_before_a_load(kind, &format!("{sql} limit 1000"), false).await;
}

/// [`the_source_rows_no_window_holds_are_said_before_a_load`] of a job
/// whose SQL is `sql`, its source counted `grouped` or window by window.
async fn said_before_a_load(kind: Kind, sql: &str, grouped: bool) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (config, parsed) = db.config(&common::replace_job("fct", "fct", "2026-01-03", sql));
    let wh = db.warehouse(&parsed).await;
    assert_eq!(
        idem::lint::bounds_only_filter(&parsed.jobs[0], wh.syntax()),
        grouped
    );
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, amount INTEGER NOT NULL, dt DATE NULL)",
        "INSERT INTO src VALUES (1, 5, '2026-01-01'), (2, 5, '2026-01-02'), (3, -5, '2026-01-02'), \
         (4, -5, '2026-01-02'), (5, 5, '2026-01-03')",
    ])
    .await
    .expect("fixture");
    wh.close().await;
    let note = "the job's SQL gives 2 rows with NULL dt over this range: \
                a load refuses them (no window holds a NULL)";

    let out = stdout_ok(&idem(
        &config,
        &["status", "fct", "--reconcile", "--format", "json"],
    ));
    let rows: Vec<Value> = serde_json::from_str(&out).expect("json");
    assert_eq!(rows.len(), 3, "{out}");
    for r in &rows {
        assert_eq!(
            r["rows_source_null_partition"], 2,
            "{kind:?} (grouped: {grouped}): {r}"
        );
    }
    assert_eq!(
        rows[1]["rows_source"], 1,
        "{kind:?} (grouped: {grouped}): the NULLs are in no window"
    );
    let table = stdout_ok(&idem(&config, &["status", "fct", "--reconcile"]));
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("fct ") && l.contains(note)),
        "{kind:?} (grouped: {grouped}):\n{table}"
    );
    // Without --reconcile nothing is counted: null, and no note.
    let plain = stdout_ok(&idem(&config, &["status", "fct", "--format", "json"]));
    let plain: Vec<Value> = serde_json::from_str(&plain).expect("json");
    assert!(
        plain
            .iter()
            .all(|r| r["rows_source_null_partition"].is_null())
    );

    let event = stdout_ok(&idem(&config, &["run", "fct", "--dry-run", "--json"]));
    let event: Value = serde_json::from_str(event.trim()).expect("json");
    assert_eq!(
        event["rows_source_null_partition"], 2,
        "{kind:?} (grouped: {grouped}): {event}"
    );
    let plan = stdout_ok(&idem(&config, &["run", "fct", "--dry-run"]));
    assert!(
        plan.contains(note),
        "{kind:?} (grouped: {grouped}):\n{plan}"
    );

    // What it warned of: the load over them fails.
    let run = idem(
        &config,
        &["run", "fct", "--from", "2026-01-02", "--to", "2026-01-02"],
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(
        !run.status.success(),
        "{kind:?} (grouped: {grouped}): {said}"
    );
    assert!(
        said.contains("a NULL dt lies in none"),
        "{kind:?} (grouped: {grouped}): {said}"
    );
}

mod null_source {
    use super::*;

    on_every_engine!(the_source_rows_no_window_holds_are_said_before_a_load);
}
