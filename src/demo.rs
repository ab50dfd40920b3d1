//! `idem demo`: a SQLite warehouse with realistic sources, four jobs and a
//! history that shows every partition state. Deterministic for a given day,
//! so pictures and tests of it are stable.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{Duration, NaiveDate, NaiveTime};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::{self, Config, Job};
use crate::engine::{self, Backfill};
use crate::partition::{Grain, Partition, range};
use crate::warehouse::Warehouse;

/// Days of order history.
pub const HISTORY_DAYS: i64 = 120;

pub struct Demo {
    pub dir: PathBuf,
    pub database: PathBuf,
    pub config: PathBuf,
}

/// What [`create`] is doing, told as each step starts.
pub type Progress<'a> = &'a (dyn Fn(&str) + Sync);

/// Creates (or resets) the demo under `dir`, with history up to yesterday.
pub async fn create(dir: &Path, progress: Progress<'_>) -> Result<Demo> {
    let today = crate::partition::now_utc().date();
    create_at(dir, today, progress).await
}

/// The first line of every demo's idem.toml: how an earlier demo is told
/// from a config of the operator's own.
const HEADER: &str = "# The idem demo: a small shop's warehouse in SQLite.";

/// Why the demo may not be made in `dir`, if it may not: `dir` holds
/// something other than an earlier demo, which making the demo would
/// replace (its idem.toml, its warehouse.db) or mix with. A new or empty
/// folder, or one whose idem.toml is an earlier demo's, takes the demo.
pub fn occupied(dir: &Path) -> Option<String> {
    let shown = dir.display();
    if !dir.exists() {
        return None;
    }
    if !dir.is_dir() {
        return Some(format!("{shown} is a file, not a folder"));
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return Some(format!("cannot read the folder {shown}: {e}")),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    if names.is_empty() {
        return None;
    }
    let config = dir.join("idem.toml");
    if config.exists() {
        let text = std::fs::read(&config).unwrap_or_default();
        if text.starts_with(HEADER.as_bytes()) {
            return None;
        }
        return Some(format!(
            "{} is not a demo's config (it does not begin \"{HEADER}\"); the demo would replace it{}",
            config.display(),
            if dir.join("warehouse.db").exists() {
                " and warehouse.db next to it"
            } else {
                ""
            }
        ));
    }
    names.sort();
    let more = names.len().saturating_sub(3);
    names.truncate(3);
    let listed = names.join(", ");
    let listed = if more > 0 {
        format!("{listed} and {more} more")
    } else {
        listed
    };
    Some(format!(
        "{shown} is not empty ({listed}) and holds no earlier demo{}",
        if dir.join("warehouse.db").exists() {
            "; the demo would replace its warehouse.db"
        } else {
            ""
        }
    ))
}

const CONFIG: &str = r#"# The idem demo: a small shop's warehouse in SQLite.
[warehouse]
url = "sqlite://{DATABASE}"
lock_timeout = "10s"

[defaults]
concurrency = 4
retries = 1

[[jobs]]
name = "fct_orders"
description = "Orders fact, one partition per day"
target = "fct_orders"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "{START_DAY}"
sql = """
select order_id, customer_id, amount_usd, status, date(created_at) as dt
from raw_orders
where created_at >= :start and created_at < :end
"""

[[jobs]]
name = "dim_customers"
description = "Customers, upserted from the CRM's daily changes"
target = "dim_customers"
strategy = "merge_key"
unique_key = ["customer_id"]
grain = "day"
start = "{DIM_START}"
sql = """
select customer_id, lower(email) as email, country, signup_date
from raw_customers
where _loaded_at >= :start and _loaded_at < :end
"""

[[jobs]]
name = "fct_pageviews_hourly"
description = "Page views per URL and hour"
target = "fct_pageviews_hourly"
strategy = "replace_partition"
partition_column = "hour"
grain = "hour"
start = "{HOURLY_START}"
sql = """
select strftime('%Y-%m-%d %H:00:00', ts) as hour, url,
       count(*) as views, count(distinct user_id) as users
from raw_pageviews
where ts >= :start and ts < :end
group by 1, 2
"""

[[jobs]]
name = "agg_revenue_monthly"
description = "Revenue per month, from fct_orders"
target = "agg_revenue_monthly"
strategy = "replace_partition"
partition_column = "month"
grain = "month"
start = "{START_MONTH}"
sql = """
select date(dt, 'start of month') as month, count(*) as orders,
       round(sum(amount_usd), 2) as revenue_usd
from fct_orders
where dt >= :start and dt < :end
group by 1
"""
"#;

/// The dimension's definition before `lower(email)` was added: windows
/// loaded under it are stale.
const OLD_DIM_SQL: &str = "select customer_id, email, country, signup_date\nfrom raw_customers\nwhere _loaded_at >= :start and _loaded_at < :end\n";

const SCHEMA: &[&str] = &[
    "CREATE TABLE raw_orders (order_id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, \
     amount_usd REAL NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL)",
    "CREATE TABLE raw_customers (customer_id INTEGER NOT NULL, email TEXT NOT NULL, \
     country TEXT NOT NULL, signup_date TEXT NOT NULL, _loaded_at TEXT NOT NULL)",
    "CREATE TABLE raw_pageviews (event_id INTEGER PRIMARY KEY, url TEXT, user_id INTEGER NOT NULL, ts TEXT NOT NULL)",
    "CREATE TABLE fct_orders (order_id INTEGER NOT NULL, customer_id INTEGER NOT NULL, \
     amount_usd REAL NOT NULL CHECK (amount_usd >= 0), status TEXT NOT NULL, dt TEXT NOT NULL)",
    "CREATE INDEX fct_orders_dt ON fct_orders (dt)",
    "CREATE TABLE dim_customers (customer_id INTEGER PRIMARY KEY, email TEXT NOT NULL, \
     country TEXT NOT NULL, signup_date TEXT NOT NULL)",
    "CREATE TABLE fct_pageviews_hourly (hour TEXT NOT NULL, url TEXT NOT NULL, views INTEGER NOT NULL, users INTEGER NOT NULL)",
    "CREATE INDEX fct_pageviews_hourly_hour ON fct_pageviews_hourly (hour)",
    "CREATE TABLE agg_revenue_monthly (month TEXT NOT NULL, orders INTEGER NOT NULL, revenue_usd REAL NOT NULL)",
];

/// Days (counted from the first) with something to show.
const ANOMALY_DAY: i64 = 90;
const OUTAGE_DAY: i64 = 60;
const FAILED_DAYS: [i64; 3] = [40, 41, 42];
const VANISHED_DAY: i64 = 70;
const DRIFT_DAY: i64 = 75;
const UNMANAGED_DAYS: i64 = 3;
const MISSING_DAYS: i64 = 4;

pub async fn create_at(dir: &Path, today: NaiveDate, progress: Progress<'_>) -> Result<Demo> {
    std::fs::create_dir_all(dir).map_err(|e| {
        anyhow::anyhow!(
            "cannot create {}: {e}; make the demo in a folder you can write: idem demo --path FOLDER",
            std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()).display()
        )
    })?;
    let dir = dir.canonicalize()?;
    let database = dir.join("warehouse.db");
    // A console open on the demo would go on with the deleted file, its
    // runs loading where nothing reads them.
    if database.exists() {
        let openers = crate::warehouse::sqlite_openers(&database);
        if let Some((pid, name)) = openers.first() {
            anyhow::bail!(
                "the demo's database {} is open in {name} (process {pid}): quit it first, or make another demo with --path",
                database.display()
            );
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let f = PathBuf::from(format!("{}{suffix}", database.display()));
        if f.exists() {
            std::fs::remove_file(&f).with_context(|| format!("cannot reset {}", f.display()))?;
        }
    }
    let first_day = today - Duration::days(HISTORY_DAYS);
    let dim_start = today - Duration::days(45);
    let hourly_start = today - Duration::days(14);
    let text = CONFIG
        .replace("{DATABASE}", &database.display().to_string())
        .replace("{START_DAY}", &first_day.format("%Y-%m-%d").to_string())
        .replace("{DIM_START}", &dim_start.format("%Y-%m-%d").to_string())
        .replace(
            "{HOURLY_START}",
            &hourly_start.format("%Y-%m-%d").to_string(),
        )
        .replace("{START_MONTH}", &first_day.format("%Y-%m").to_string());
    let config_path = dir.join("idem.toml");
    std::fs::write(&config_path, &text).map_err(|e| {
        anyhow::anyhow!(
            "cannot write {}: {e}; make the demo in a folder you can write: idem demo --path FOLDER",
            config_path.display()
        )
    })?;
    std::fs::File::create(&database)
        .with_context(|| format!("cannot create {}", database.display()))?;
    let config =
        config::parse(&config_path, &text, &|_| None).map_err(|e| anyhow::anyhow!("{e}"))?;

    let warehouse = Warehouse::connect(&config.warehouse, 4).await?;
    warehouse.execute_script(SCHEMA).await?;
    progress("generating the sources: some 1.2 million orders, the CRM's changes, page views");
    generate_sources(&warehouse, first_day, hourly_start, today).await?;
    write_history(&warehouse, &config, first_day, today, progress).await?;
    warehouse.close().await;
    Ok(Demo {
        dir: dir.clone(),
        database,
        config: config_path,
    })
}

async fn generate_sources(
    wh: &Warehouse,
    first_day: NaiveDate,
    hourly_start: NaiveDate,
    today: NaiveDate,
) -> Result<()> {
    let day = |d: i64| {
        (first_day + Duration::days(d))
            .format("%Y-%m-%d")
            .to_string()
    };
    // Orders: about 10k a day, quieter at weekends, one spike, one outage.
    let mut sql = wh.sql();
    sql.push("WITH RECURSIVE days(d) AS (SELECT 0 UNION ALL SELECT d + 1 FROM days WHERE d < ")
        .bind(HISTORY_DAYS)
        .push("), seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < 32000), ")
        // Made once: SQLite otherwise evaluates the day's volume (its
        // weekday) again for every order, which took the demo's sources
        // from 3 s to 10 s.
        .push("vol(d, day, n) AS MATERIALIZED (SELECT d, date(")
        .bind(day(0))
        .push(", '+' || d || ' days'), CASE WHEN d = ")
        .bind(ANOMALY_DAY)
        .push(" THEN 31000 WHEN d = ")
        .bind(OUTAGE_DAY)
        .push(" THEN 0 ELSE 10400 + (d * 37) % 600 - CASE strftime('%w', date(")
        .bind(day(0))
        .push(", '+' || d || ' days')) WHEN '0' THEN 2600 WHEN '6' THEN 1900 ELSE 0 END END FROM days) ")
        .push("INSERT INTO raw_orders (customer_id, amount_usd, status, created_at) ")
        .push("SELECT (i * 7919 + d * 104729) % 5000 + 1, round(((i * 31 + d * 17) % 20000) / 100.0 + 1, 2), ")
        .push("CASE (i + d) % 25 WHEN 0 THEN 'refunded' WHEN 1 THEN 'pending' ELSE 'paid' END, ")
        .push("datetime(day, '+' || ((i * 86400) / n) || ' seconds') FROM vol JOIN seq ON seq.i < vol.n");
    sql.query().execute(wh.pool()).await?;
    wh.execute_script(&["CREATE INDEX raw_orders_created ON raw_orders (created_at)"])
        .await?;

    // Customers: 150 changed records a day from the CRM.
    let mut sql = wh.sql();
    sql.push("WITH RECURSIVE days(d) AS (SELECT 0 UNION ALL SELECT d + 1 FROM days WHERE d < ")
        .bind(HISTORY_DAYS)
        .push("), seq(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM seq WHERE j < 149) ")
        .push("INSERT INTO raw_customers (customer_id, email, country, signup_date, _loaded_at) ")
        .push("SELECT (d * 150 + j) % 5000 + 1, 'Customer' || ((d * 150 + j) % 5000 + 1) || '@Example.com', ")
        .push("CASE j % 6 WHEN 0 THEN 'DE' WHEN 1 THEN 'US' WHEN 2 THEN 'FR' WHEN 3 THEN 'BR' WHEN 4 THEN 'JP' ELSE 'NL' END, ")
        .push("date(")
        .bind(day(0))
        .push(", '-' || ((d * 150 + j) % 5000 / 10) || ' days'), ")
        .push("datetime(")
        .bind(day(0))
        .push(", '+' || d || ' days', '+' || (j * 500) || ' seconds') FROM days JOIN seq")
        .push(" WHERE d < ")
        .bind(HISTORY_DAYS);
    sql.query().execute(wh.pool()).await?;

    // Page views: about 200 an hour over the hourly job's two weeks.
    let hours = (today - hourly_start).num_days() * 24;
    let mut sql = wh.sql();
    sql.push("WITH RECURSIVE hours(h) AS (SELECT 0 UNION ALL SELECT h + 1 FROM hours WHERE h < ")
        .bind(hours)
        .push("), seq(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM seq WHERE k < 260) ")
        .push("INSERT INTO raw_pageviews (url, user_id, ts) SELECT ")
        .push("CASE (k * 7 + h) % 5 WHEN 0 THEN '/' WHEN 1 THEN '/pricing' WHEN 2 THEN '/docs' WHEN 3 THEN '/blog' ELSE '/signup' END, ")
        .push("(k * 13 + h * 7) % 900, datetime(")
        .bind(hourly_start.format("%Y-%m-%d").to_string())
        .push(", '+' || h || ' hours', '+' || (k * 13) || ' seconds') FROM hours JOIN seq ON seq.k < 140 + (h * 17) % 120");
    sql.query().execute(wh.pool()).await?;
    wh.execute_script(&["CREATE INDEX raw_pageviews_ts ON raw_pageviews (ts)"])
        .await?;
    Ok(())
}

fn job<'a>(config: &'a Config, name: &str) -> Result<&'a Job> {
    config
        .jobs
        .iter()
        .find(|j| j.name == name)
        .context("demo job missing")
}

/// Runs a backfill of the listed partitions to completion.
async fn load(wh: &Warehouse, job: &Job, partitions: Vec<Partition>, reason: &str) -> Result<()> {
    let backfill = Backfill {
        reason: Some(reason.to_string()),
        ..Backfill::of(job.clone(), partitions)
    };
    let (tx, _rx) = mpsc::unbounded_channel();
    engine::run(wh, &backfill, &tx, &CancellationToken::new()).await;
    Ok(())
}

fn days(first_day: NaiveDate, from: i64, to: i64) -> Vec<Partition> {
    let p = |d: i64| {
        Partition::containing(
            Grain::Day,
            (first_day + Duration::days(d)).and_time(NaiveTime::MIN),
        )
    };
    if to < from {
        Vec::new()
    } else {
        range(p(from), p(to))
    }
}

async fn write_history(
    wh: &Warehouse,
    config: &Config,
    first_day: NaiveDate,
    today: NaiveDate,
    progress: Progress<'_>,
) -> Result<()> {
    let day = |d: i64| {
        (first_day + Duration::days(d))
            .format("%Y-%m-%d")
            .to_string()
    };
    let orders = job(config, "fct_orders")?;
    progress("loading fct_orders's history, a day at a time, as idem runs do");

    // The first days were loaded by the old cron script, outside idem.
    let mut sql = wh.sql();
    sql.push("INSERT INTO fct_orders SELECT order_id, customer_id, amount_usd, status, date(created_at) FROM raw_orders WHERE created_at < ")
        .bind(day(UNMANAGED_DAYS));
    sql.query().execute(wh.pool()).await?;

    // Refunds arrived as negative amounts for three days: those loads fail on
    // the target's CHECK constraint. The source is fixed afterwards, so the
    // operator's re-run succeeds.
    let mut sql = wh.sql();
    sql.push("UPDATE raw_orders SET amount_usd = -amount_usd WHERE status = 'refunded' AND created_at >= ")
        .bind(day(FAILED_DAYS[0]))
        .push(" AND created_at < ")
        .bind(day(FAILED_DAYS[2] + 1));
    sql.query().execute(wh.pool()).await?;
    let last_loaded = HISTORY_DAYS - 1 - MISSING_DAYS;
    load(
        wh,
        orders,
        days(first_day, UNMANAGED_DAYS, last_loaded),
        "nightly load",
    )
    .await?;
    let mut sql = wh.sql();
    sql.push("UPDATE raw_orders SET amount_usd = -amount_usd WHERE amount_usd < 0");
    sql.query().execute(wh.pool()).await?;

    // Rows removed behind idem's back: one day entirely, another in part.
    let mut sql = wh.sql();
    sql.push("DELETE FROM fct_orders WHERE dt = ")
        .bind(day(VANISHED_DAY));
    sql.query().execute(wh.pool()).await?;
    let mut sql = wh.sql();
    sql.push("DELETE FROM fct_orders WHERE dt = ")
        .bind(day(DRIFT_DAY))
        .push(" AND order_id % 50 = 0");
    sql.query().execute(wh.pool()).await?;

    // The dimension's SQL changed twelve days ago; older windows are stale.
    progress("merging dim_customers, fct_pageviews_hourly and agg_revenue_monthly");
    let dim = job(config, "dim_customers")?;
    let mut old_dim = dim.clone();
    old_dim.sql = OLD_DIM_SQL.to_string();
    let dim_first = (dim.start.start.date() - first_day).num_days();
    let changed = HISTORY_DAYS - 12;
    load(
        wh,
        &old_dim,
        days(first_day, dim_first, changed - 1),
        "nightly load",
    )
    .await?;
    load(
        wh,
        dim,
        days(first_day, changed, HISTORY_DAYS - 2),
        "nightly load",
    )
    .await?;

    // Hourly page views: one hour failed on a NULL url, the last six hours
    // have not run yet.
    let hourly = job(config, "fct_pageviews_hourly")?;
    let last_complete = Partition::containing(Grain::Hour, today.and_time(NaiveTime::MIN)).prev();
    let bad_hour = Partition::containing(
        Grain::Hour,
        (today - Duration::days(3))
            .and_hms_opt(9, 0, 0)
            .unwrap_or_default(),
    );
    let mut sql = wh.sql();
    sql.push("UPDATE raw_pageviews SET url = NULL WHERE event_id % 40 = 0 AND ts >= ")
        .bind(bad_hour.start.format("%Y-%m-%d %H:%M:%S").to_string())
        .push(" AND ts < ")
        .bind(bad_hour.end().format("%Y-%m-%d %H:%M:%S").to_string());
    sql.query().execute(wh.pool()).await?;
    let mut last_hour = last_complete;
    for _ in 0..6 {
        last_hour = last_hour.prev();
    }
    load(wh, hourly, range(hourly.start, last_hour), "hourly load").await?;
    let mut sql = wh.sql();
    sql.push("UPDATE raw_pageviews SET url = '/unknown' WHERE url IS NULL");
    sql.query().execute(wh.pool()).await?;

    // Monthly revenue: every complete month but the last.
    let monthly = job(config, "agg_revenue_monthly")?;
    let this_month = Partition::containing(Grain::Month, today.and_time(NaiveTime::MIN));
    let before_last = this_month.prev().prev();
    if before_last >= monthly.start {
        load(
            wh,
            monthly,
            range(monthly.start, before_last),
            "monthly close",
        )
        .await?;
        // Late orders for a day of the closed month arrived, and that day was
        // loaded again after the close: the month read the day's old rows,
        // so it is stale (upstream).
        let late = late_day(first_day, before_last);
        add_late_orders(wh, &day(late), 40).await?;
        load(wh, orders, days(first_day, late, late), "late orders").await?;
    }

    // Late orders for three recent days landed after those days were
    // loaded: reconciling the source finds them out of date.
    for d in OUT_OF_DATE_DAYS {
        add_late_orders(wh, &day(d), 12 + d % 5 * 7).await?;
    }
    Ok(())
}

/// Recent days whose source gains late rows after their load.
const OUT_OF_DATE_DAYS: [i64; 3] = [103, 105, 108];

/// A day of `month` with nothing else to show, as a day number.
fn late_day(first_day: NaiveDate, month: Partition) -> i64 {
    let special = [ANOMALY_DAY, OUTAGE_DAY, VANISHED_DAY, DRIFT_DAY];
    let mut d = (month.start.date() - first_day).num_days() + 9;
    while special.contains(&d) || FAILED_DAYS.contains(&d) || d < UNMANAGED_DAYS {
        d += 1;
    }
    d
}

/// `n` orders created in the last minutes of `day`, after it was loaded.
async fn add_late_orders(wh: &Warehouse, day: &str, n: i64) -> Result<()> {
    let mut sql = wh.sql();
    sql.push("WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < ")
        .bind(n - 1)
        .push(") INSERT INTO raw_orders (customer_id, amount_usd, status, created_at) ")
        .push("SELECT (i * 613) % 5000 + 1, 20 + i, 'paid', datetime(")
        .bind(day.to_string())
        .push(", '+23 hours', '+55 minutes', '+' || i || ' seconds') FROM seq");
    sql.query().execute(wh.pool()).await?;
    Ok(())
}
