//! `idem.toml`: parsed with spans so that every error names file, line, column
//! and field, then validated into [`Config`] with checked identifiers.

mod definition_change;
mod duration;
mod engine;
mod env;
mod errors;
mod ident;
mod shared_targets;
mod unknown_key;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_spanned::Spanned;
use sha2::{Digest, Sha256};

pub use definition_change::{DefinitionChange, LAYOUT_ONLY_NOTE};
pub use duration::{MAX_TIMEOUT, parse_duration};
pub use engine::{Engine, TableNames};
use env::{expand_env, expanded_from};
pub use errors::ConfigError;
use errors::Positions;
pub use ident::{Ident, TableName};
pub use shared_targets::same_table;
pub use unknown_key::did_you_mean_job;

use crate::partition::{Grain, Partition, RangeEnd};

#[derive(Debug, Clone)]
pub struct Config {
    pub path: PathBuf,
    pub warehouse: WarehouseConfig,
    pub defaults: Defaults,
    pub jobs: Vec<Job>,
}

#[derive(Debug, Clone)]
pub struct WarehouseConfig {
    pub url: String,
    /// Bounds every statement of idem's sessions; zero is no limit, even
    /// where the server or the role sets one; None leaves the server's own
    /// default for the role in force.
    pub statement_timeout: Option<Duration>,
    pub lock_timeout: Duration,
    /// How long to wait for a connection before taking the warehouse for
    /// unreachable.
    pub connect_timeout: Duration,
}

impl WarehouseConfig {
    /// The engine its URL names (a parsed config's always names one).
    pub fn engine(&self) -> Engine {
        Engine::of_url(&self.url).unwrap_or(Engine::MySql)
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Defaults {
    pub concurrency: usize,
    pub retries: u32,
    /// The jobs' [`Job::shrink_guard`] unless a job sets its own.
    pub shrink_guard: f64,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            concurrency: 4,
            retries: 2,
            shrink_guard: 0.5,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    ReplacePartition,
    MergeKey,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::ReplacePartition => "replace_partition",
            Strategy::MergeKey => "merge_key",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Job {
    pub name: String,
    pub description: Option<String>,
    pub target: TableName,
    pub strategy: Strategy,
    pub partition_column: Option<Ident>,
    pub unique_key: Vec<Ident>,
    pub grain: Grain,
    pub start: Partition,
    pub end: Option<Partition>,
    pub sql: String,
    /// A replace that would leave a loaded partition with fewer than this
    /// fraction of its rows (or with none) is refused: the source looks
    /// incomplete. 0 refuses only a replace with no rows.
    pub shrink_guard: f64,
    /// PostgreSQL: a window that is exactly one native partition is emptied
    /// by `TRUNCATE` of that partition (true, the default) rather than by
    /// `DELETE`. TRUNCATE is not MVCC-safe: a reader whose snapshot was
    /// taken before the load's COMMIT sees that partition empty after it.
    pub truncate_partitions: bool,
    /// Jobs named in `depends_on` (reading another job's target in `sql`
    /// implies more; see [`crate::lineage`]).
    pub depends_on: Vec<Dependency>,
    /// Line of `idem.toml` where the job's SQL text begins, for findings in it.
    pub sql_line: usize,
    /// Lines of `idem.toml` where its other fields are, for findings about them.
    pub lines: FieldLines,
    /// The warehouse's engine, which reads `sql`: where its strings and
    /// comments end (see [`Engine::backslash_escapes`]).
    pub engine: Engine,
    /// The schema a table name without one means (see
    /// [`Engine::home_schema`]): `orders` is not `raw.orders` where it is
    /// `public` or the URL's database.
    pub home_schema: Option<String>,
    /// A replace job's: the merge jobs of the config whose targets may be
    /// the same table, theirs in any case (which one is, if any, the
    /// warehouse's way of comparing names tells: see
    /// [`Job::merged_alongside`]).
    pub merges_alongside: Vec<(String, TableName)>,
}

/// Lines of `idem.toml` where a job's fields are written. A field the job
/// leaves out has its `target`'s line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FieldLines {
    pub target: usize,
    pub partition_column: usize,
    pub unique_key: usize,
}

impl Job {
    /// Everything that changes what the job writes, as text: what the
    /// definition hash covers, and what `idem diff` compares.
    pub fn definition_text(&self) -> String {
        let keys: Vec<&str> = self.unique_key.iter().map(Ident::as_str).collect();
        format!(
            "strategy = {}\ntarget = {}\npartition_column = {}\nunique_key = [{}]\ngrain = {}\nsql:\n{}\n",
            self.strategy.as_str(),
            self.target,
            self.partition_column.as_ref().map_or("", |c| c.as_str()),
            keys.join(", "),
            self.grain,
            self.sql.trim()
        )
    }

    /// This job as it was loaded under another `name` with `definition` (a
    /// [`Job::definition_text`] of one target): its strategy, partition
    /// column and grain as that text says, so its history reads as loaded.
    pub fn as_loaded_under(&self, name: &str, definition: &str) -> Job {
        let field = |key: &str| {
            definition
                .lines()
                .take_while(|l| *l != "sql:")
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(" = "))
        };
        let mut job = self.clone();
        job.name = name.to_string();
        if let Some(s) = field("strategy") {
            job.strategy = match s {
                "merge_key" => Strategy::MergeKey,
                _ => Strategy::ReplacePartition,
            };
        }
        if let Some(c) = field("partition_column") {
            job.partition_column = Ident::parse(c).ok();
        }
        if let Some(g) = field("grain").and_then(Grain::parse) {
            job.grain = g;
        }
        job
    }

    /// Hash of [`Job::definition_text`]: a partition last loaded under
    /// another hash is stale.
    pub fn definition_hash(&self) -> String {
        hex(&Sha256::digest(self.definition_text().as_bytes())[..8])
    }

    /// The last partition a run covers by default: `end`, or the last
    /// complete window before `now`.
    pub fn last_partition(&self, now: chrono::NaiveDateTime) -> Partition {
        let last_complete = Partition::containing(self.grain, now).prev();
        match self.end {
            Some(end) if end < last_complete => end,
            _ => last_complete,
        }
    }

    /// Every partition of the job's history, and the one in progress now
    /// (which shows as future until it is complete).
    pub fn partitions(&self, now: chrono::NaiveDateTime) -> Vec<Partition> {
        crate::partition::range(self.start, self.latest_partition(now))
    }

    /// The last of [`Job::partitions`] (none when it is before `start`):
    /// `end`, or the one in progress now.
    pub fn latest_partition(&self, now: chrono::NaiveDateTime) -> Partition {
        let current = Partition::containing(self.grain, now);
        match self.end {
            Some(end) if end < current => end,
            _ => current,
        }
    }
}

/// A job named in another's `depends_on`, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub name: String,
    pub line: usize,
    pub column: usize,
}

/// The shrink guard's rule: a partition that has rows keeps at least
/// `floor` of them, and is never replaced by none.
pub fn shrinks_too_far(before: i64, after: i64, floor: f64) -> bool {
    before > 0 && (after == 0 || (after as f64) < before as f64 * floor)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    warehouse: Spanned<RawWarehouse>,
    #[serde(default)]
    defaults: Option<RawDefaults>,
    #[serde(default)]
    jobs: Vec<Spanned<RawJob>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWarehouse {
    url: Spanned<String>,
    statement_timeout: Option<Spanned<String>>,
    lock_timeout: Option<Spanned<String>>,
    connect_timeout: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    concurrency: Option<Spanned<i64>>,
    retries: Option<Spanned<i64>>,
    shrink_guard: Option<Spanned<Fraction>>,
}

/// A `shrink_guard` as written: a number in TOML, with or without a
/// decimal point; text and booleans are read too, to say what to write
/// instead.
#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum Fraction {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    name: Spanned<String>,
    description: Option<String>,
    target: Spanned<String>,
    strategy: Spanned<String>,
    partition_column: Option<Spanned<String>>,
    unique_key: Option<Spanned<Vec<Spanned<String>>>>,
    grain: Spanned<String>,
    start: Spanned<String>,
    end: Option<Spanned<String>>,
    sql: Spanned<String>,
    shrink_guard: Option<Spanned<Fraction>>,
    truncate_partitions: Option<bool>,
    depends_on: Option<Vec<Spanned<String>>>,
}

/// What a `shrink_guard` may be, for its errors.
const FRACTION: &str =
    "expected a fraction from 0 (refuse only a replace with no rows) to below 1, e.g. 0.5";

/// A `shrink_guard` value: a fraction from 0 to 1 (exclusive).
fn shrink_guard(cx: &Positions, v: &Spanned<Fraction>, field: &str) -> Result<f64, ConfigError> {
    let key = field.rsplit('.').next().unwrap_or(field);
    let x = match v.get_ref() {
        Fraction::Int(n) => *n as f64,
        Fraction::Float(x) => *x,
        Fraction::Bool(b) => {
            return Err(cx.error(
                v.span(),
                field,
                format!(
                    "{b} is not a fraction; {FRACTION} (a run that may shrink partitions takes --allow-shrink)"
                ),
            ));
        }
        Fraction::Text(text) => {
            // "50%" or "0.5": the number meant, written as TOML reads one.
            let trimmed = text.trim();
            let meant = match trimmed.strip_suffix('%') {
                Some(percent) => percent.trim().parse::<f64>().ok().map(|p| p / 100.0),
                None => trimmed.parse::<f64>().ok(),
            }
            .filter(|x| (0.0..1.0).contains(x));
            let fix = match meant {
                Some(x) => format!("write {key} = {x} (a number, without quotes)"),
                None => format!("write a number without quotes, e.g. {key} = 0.5"),
            };
            return Err(cx.error(
                v.span(),
                field,
                format!("\"{text}\" is text, not a fraction; {FRACTION}; {fix}"),
            ));
        }
    };
    if !(0.0..1.0).contains(&x) {
        return Err(cx.error(v.span(), field, format!("{x} is out of range; {FRACTION}")));
    }
    Ok(x)
}

/// The most of a config file that is read: far more than any config of
/// thousands of jobs, and a bound on `--config /dev/zero` or a log file
/// passed by mistake, which were read until memory ran out.
pub const MAX_CONFIG_BYTES: u64 = 64 << 20;

/// Reads and validates a config file.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| errors::unreadable(path, &e))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(errors::too_large(path));
    }
    let text =
        std::str::from_utf8(&bytes).map_err(|e| errors::not_utf8(path, &bytes, e.valid_up_to()))?;
    parse(path, text, &|name| std::env::var(name).ok())
}

/// Parses config text; `env` looks up `${VAR}` values.
pub fn parse(
    path: &Path,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let cx = Positions {
        file: path.display().to_string(),
        text,
    };
    let raw: RawConfig = toml::from_str(text).map_err(|e| cx.toml_error(&e))?;

    let wh = raw.warehouse.get_ref();
    let url = expand_env(wh.url.get_ref(), env)
        .map_err(|m| cx.error(wh.url.span(), "warehouse.url", m))?;
    if Engine::of_url(&url).is_none() {
        return Err(cx.error(
            wh.url.span(),
            "warehouse.url",
            format!(
                "\"{url}\" is not a warehouse URL{}; expected sqlite://PATH, postgres://… or mysql://…",
                expanded_from(wh.url.get_ref(), env)
            ),
        ));
    }
    if let Some((what, why)) = Engine::url_lacks(&url) {
        let from = expanded_from(wh.url.get_ref(), env);
        return Err(cx.error(
            wh.url.span(),
            "warehouse.url",
            format!("{what}{from}: {why}"),
        ));
    }
    let duration =
        |v: &Option<Spanned<String>>, field: &str| -> Result<Option<Duration>, ConfigError> {
            match v {
                None => Ok(None),
                Some(s) => parse_duration(s.get_ref())
                    .map(Some)
                    .map_err(|m| cx.error(s.span(), field, m)),
            }
        };
    // A timeout of 0 on these would stop every statement or connection.
    let positive = |v: &Option<Spanned<String>>,
                    field: &str,
                    zero: &str|
     -> Result<Option<Duration>, ConfigError> {
        let d = duration(v, field)?;
        match (d, v) {
            (Some(d), Some(s)) if d.is_zero() => Err(cx.error(s.span(), field, zero.into())),
            _ => Ok(d),
        }
    };
    let warehouse = WarehouseConfig {
        url,
        statement_timeout: duration(&wh.statement_timeout, "warehouse.statement_timeout")?,
        lock_timeout: duration(&wh.lock_timeout, "warehouse.lock_timeout")?
            .unwrap_or(Duration::from_secs(10)),
        connect_timeout: positive(
            &wh.connect_timeout,
            "warehouse.connect_timeout",
            "0 would never wait for a connection; expected e.g. \"10s\"",
        )?
        .unwrap_or(Duration::from_secs(10)),
    };

    let mut defaults = Defaults::default();
    if let Some(d) = &raw.defaults {
        if let Some(c) = &d.concurrency {
            if !(1..=64).contains(c.get_ref()) {
                return Err(cx.error(
                    c.span(),
                    "defaults.concurrency",
                    format!("{} is out of range; expected 1 to 64", c.get_ref()),
                ));
            }
            defaults.concurrency = *c.get_ref() as usize;
        }
        if let Some(r) = &d.retries {
            if !(0..=20).contains(r.get_ref()) {
                return Err(cx.error(
                    r.span(),
                    "defaults.retries",
                    format!("{} is out of range; expected 0 to 20", r.get_ref()),
                ));
            }
            defaults.retries = *r.get_ref() as u32;
        }
        if let Some(g) = &d.shrink_guard {
            defaults.shrink_guard = shrink_guard(&cx, g, "defaults.shrink_guard")?;
        }
    }

    let mut jobs: Vec<Job> = Vec::new();
    for (i, raw_job) in raw.jobs.iter().enumerate() {
        let mut job = validate_job(&cx, i, raw_job.get_ref(), &defaults, warehouse.engine())?;
        job.home_schema = warehouse.engine().home_schema(&warehouse.url);
        if let Some(first) = raw.jobs[..i]
            .iter()
            .find(|j| j.get_ref().name.get_ref() == &job.name)
        {
            let name = &raw_job.get_ref().name;
            let (line, _) = cx.line_col(first.get_ref().name.span().start);
            return Err(cx.error(
                name.span(),
                &format!("jobs[{i}].name"),
                format!(
                    "duplicate job name \"{}\" (first at line {line}); job names must be unique: rename or remove one",
                    job.name
                ),
            ));
        }
        jobs.push(job);
    }
    let names: Vec<String> = jobs.iter().map(|j| j.name.clone()).collect();
    for (i, raw_job) in raw.jobs.iter().enumerate() {
        for dep in raw_job.get_ref().depends_on.iter().flatten() {
            let name = dep.get_ref();
            let problem = if *name == jobs[i].name {
                Some("a job cannot depend on itself".to_string())
            } else if !names.contains(name) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                Some(format!(
                    "no job named \"{name}\"; {}jobs: {}",
                    did_you_mean_job(name, &names),
                    names.join(", ")
                ))
            } else {
                None
            };
            if let Some(message) = problem {
                return Err(cx.error(dep.span(), &format!("jobs[{i}].depends_on"), message));
            }
            let (line, column) = cx.line_col(dep.span().start);
            jobs[i].depends_on.push(Dependency {
                name: name.clone(),
                line,
                column,
            });
        }
    }
    shared_targets::note_merges_alongside(&mut jobs);
    Ok(Config {
        path: path.to_path_buf(),
        warehouse,
        defaults,
        jobs,
    })
}

/// The longest job name, in characters (ASCII, so bytes): well within the
/// ledger's job column (MariaDB/MySQL's `VARCHAR(255)`) and a file name
/// (255 bytes), which its run logs' folder is.
pub const MAX_JOB_NAME: usize = 128;

fn validate_job(
    cx: &Positions,
    i: usize,
    raw: &RawJob,
    defaults: &Defaults,
    engine: Engine,
) -> Result<Job, ConfigError> {
    let field = |f: &str| format!("jobs[{i}].{f}");
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Err(cx.error(
            raw.name.span(),
            &field("name"),
            format!(
                "\"{name}\" is not a job name; use only ASCII letters (a-z, A-Z), digits (0-9), _, - and ."
            ),
        ));
    }
    if name.len() > MAX_JOB_NAME {
        return Err(cx.error(
            raw.name.span(),
            &field("name"),
            format!(
                "a job name of {} characters is too long: at most {MAX_JOB_NAME} (it names the job's rows \
                 in the ledger, whose column on MariaDB/MySQL holds 255, and its run logs' folder)",
                name.len()
            ),
        ));
    }
    if name.starts_with(['-', '.']) {
        return Err(cx.error(
            raw.name.span(),
            &field("name"),
            format!(
                "\"{name}\" is not a job name: begin it with a letter, digit or _ \
                 (on the command line a name that begins with - reads as an option)"
            ),
        ));
    }
    let target = TableName::parse(raw.target.get_ref())
        .map_err(|m| cx.error(raw.target.span(), &field("target"), m))?;
    let strategy = match raw.strategy.get_ref().as_str() {
        "replace_partition" => Strategy::ReplacePartition,
        "merge_key" => Strategy::MergeKey,
        other => {
            return Err(cx.error(
                raw.strategy.span(),
                &field("strategy"),
                format!("\"{other}\" is not a strategy; expected replace_partition or merge_key"),
            ));
        }
    };
    let grain = Grain::parse(raw.grain.get_ref()).ok_or_else(|| {
        cx.error(
            raw.grain.span(),
            &field("grain"),
            format!(
                "\"{}\" is not a grain; expected one of {}",
                raw.grain.get_ref(),
                Grain::NAMES
            ),
        )
    })?;
    let partition_column = match &raw.partition_column {
        Some(c) => Some(
            Ident::parse(c.get_ref())
                .map_err(|m| cx.error(c.span(), &field("partition_column"), m))?,
        ),
        None => None,
    };
    if strategy == Strategy::ReplacePartition && partition_column.is_none() {
        return Err(cx.error(
            raw.strategy.span(),
            &field("partition_column"),
            "replace_partition needs partition_column: the target column whose window each run deletes and re-inserts".into(),
        ));
    }
    let mut unique_key = Vec::new();
    if let Some(keys) = &raw.unique_key {
        for k in keys.get_ref() {
            unique_key.push(
                Ident::parse(k.get_ref())
                    .map_err(|m| cx.error(k.span(), &field("unique_key"), m))?,
            );
        }
        if unique_key.is_empty() {
            return Err(cx.error(
                keys.span(),
                &field("unique_key"),
                "is empty; list the columns that identify a row, e.g. [\"customer_id\"]".into(),
            ));
        }
    }
    if strategy == Strategy::MergeKey && unique_key.is_empty() {
        return Err(cx.error(
            raw.strategy.span(),
            &field("unique_key"),
            "merge_key needs unique_key: the columns that identify a row, e.g. unique_key = [\"customer_id\"]".into(),
        ));
    }
    let partition = |s: &Spanned<String>, f: &str, end: RangeEnd| {
        if let Some(meant) = Partition::meant_by_finer(grain, s.get_ref()) {
            return Err(cx.error(
                s.span(),
                &field(f),
                format!(
                    "\"{}\" is not a {grain} partition; did you mean \"{meant}\"?",
                    s.get_ref()
                ),
            ));
        }
        Partition::parse(grain, s.get_ref(), end).ok_or_else(|| {
            let text = s.get_ref().trim();
            let no_such = crate::partition::impossible_date(text)
                .map(|what| {
                    let fault = crate::partition::calendar_fault(text);
                    format!(": there is no such {what} ({fault})")
                })
                .unwrap_or_default();
            let message = format!(
                "\"{}\" is not a {grain} partition{no_such}; expected {}",
                s.get_ref(),
                grain.name_format()
            );
            cx.error(s.span(), &field(f), message)
        })
    };
    let start = partition(&raw.start, "start", RangeEnd::From)?;
    let end = match &raw.end {
        Some(e) => {
            let end = partition(e, "end", RangeEnd::To)?;
            if end < start {
                return Err(cx.error(
                    e.span(),
                    &field("end"),
                    format!("{end} is before start {start}; end must not precede start"),
                ));
            }
            Some(end)
        }
        None => None,
    };
    let sql = raw.sql.get_ref().clone();
    if sql.trim().is_empty() {
        return Err(cx.error(
            raw.sql.span(),
            &field("sql"),
            "is empty; give the SELECT that computes one partition".into(),
        ));
    }
    let sql_line = cx.content_line(raw.sql.span());
    let shrink_guard = match &raw.shrink_guard {
        Some(g) => shrink_guard(cx, g, &field("shrink_guard"))?,
        None => defaults.shrink_guard,
    };
    let line = |span: Range<usize>| cx.line_col(span.start).0;
    let target_line = line(raw.target.span());
    let lines = FieldLines {
        target: target_line,
        partition_column: raw
            .partition_column
            .as_ref()
            .map_or(target_line, |c| line(c.span())),
        unique_key: raw
            .unique_key
            .as_ref()
            .map_or(target_line, |k| line(k.span())),
    };
    Ok(Job {
        name,
        description: raw.description.clone(),
        target,
        strategy,
        partition_column,
        unique_key,
        grain,
        start,
        end,
        sql,
        shrink_guard,
        truncate_partitions: raw.truncate_partitions.unwrap_or(true),
        depends_on: Vec::new(),
        sql_line,
        lines,
        engine,
        home_schema: None,
        merges_alongside: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shrink_guard_refuses_none_and_far_fewer() {
        assert!(shrinks_too_far(2000, 0, 0.5));
        assert!(shrinks_too_far(2000, 999, 0.5));
        assert!(!shrinks_too_far(2000, 1000, 0.5));
        assert!(!shrinks_too_far(2000, 3000, 0.5));
        // A partition that was empty can receive anything, or nothing.
        assert!(!shrinks_too_far(0, 0, 0.5));
        // 0 refuses only a replace with no rows.
        assert!(shrinks_too_far(10, 0, 0.0));
        assert!(!shrinks_too_far(10, 1, 0.0));
    }
}
