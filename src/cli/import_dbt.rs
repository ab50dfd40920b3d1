//! `idem import-dbt MANIFEST`: dbt's incremental models as idem jobs. A
//! model maps when its strategy re-runs a window idempotently
//! (`delete+insert`, `merge`, `microbatch`) and it names the column that
//! places its rows in a window (`event_time`); its compiled SQL is wrapped
//! so that the window is bound to `:start` / `:end`. Every other incremental
//! model is listed with the reason it was left out.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::Stop;
use super::output::noteln;
use crate::config::{Engine, Ident, TableName};
use crate::exit::Exit;
use crate::partition::{Grain, Partition};

pub fn import_dbt(manifest_path: &Path) -> Exit {
    import(manifest_path).unwrap_or_else(Stop::report)
}

/// The parts of dbt's `manifest.json` (schema v12) that idem reads; every
/// other field is ignored.
#[derive(Deserialize)]
struct Manifest {
    nodes: BTreeMap<String, Node>,
    #[serde(default)]
    metadata: Metadata,
    /// Models (and other nodes) turned off with `enabled: false`, each id
    /// with its versions; only their names and kinds are read.
    #[serde(default)]
    disabled: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize, Default)]
struct Metadata {
    /// `postgres`, `mysql`, `sqlite`, …: how the compiled SQL is lexed.
    #[serde(default)]
    adapter_type: Option<String>,
    /// `https://schemas.getdbt.com/dbt/manifest/v12.json`: which of dbt's
    /// files this is, and its schema's version.
    #[serde(default)]
    dbt_schema_version: Option<String>,
}

/// The schema version of the manifest that idem reads.
const MANIFEST_VERSION: u32 = 12;

impl Metadata {
    /// The kind of dbt file and its version, from `dbt_schema_version`
    /// (`manifest`, 12).
    fn artifact(&self) -> Option<(&str, Option<u32>)> {
        let url = self.dbt_schema_version.as_deref()?;
        let (kind, file) = url.trim_end_matches(".json").rsplit_once('/')?;
        let kind = kind.rsplit('/').next()?;
        Some((kind, file.strip_prefix('v').and_then(|v| v.parse().ok())))
    }
}

impl Metadata {
    fn engine(&self) -> Engine {
        match self.adapter_type.as_deref() {
            Some("mysql" | "mariadb") => Engine::MySql,
            Some("sqlite") => Engine::Sqlite,
            _ => Engine::Postgres,
        }
    }
}

#[derive(Deserialize)]
struct Node {
    resource_type: String,
    name: String,
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    alias: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    compiled_code: Option<String>,
    /// The model's table as its SQL names it (`"db"."schema"."alias"`),
    /// what `{{ this }}` compiles to.
    #[serde(default)]
    relation_name: Option<String>,
    #[serde(default)]
    config: ModelConfig,
    #[serde(default)]
    depends_on: DependsOn,
}

#[derive(Deserialize, Default)]
struct ModelConfig {
    #[serde(default)]
    materialized: Option<String>,
    #[serde(default)]
    incremental_strategy: Option<String>,
    #[serde(default)]
    unique_key: Option<UniqueKey>,
    #[serde(default)]
    event_time: Option<String>,
    #[serde(default)]
    batch_size: Option<String>,
    #[serde(default)]
    begin: Option<String>,
    /// A microbatch model's batches before the current one that dbt
    /// re-runs with it, for late rows: a number (as dbt writes it, or
    /// as text).
    #[serde(default)]
    lookback: Option<serde_json::Value>,
}

impl ModelConfig {
    /// The batches dbt re-runs before each new one, where the model says
    /// so and is a microbatch model (the only strategy dbt reads it for).
    fn lookback(&self) -> Option<u64> {
        if self.incremental_strategy.as_deref() != Some("microbatch") {
            return None;
        }
        match self.lookback.as_ref()? {
            serde_json::Value::Number(n) => n.as_u64(),
            serde_json::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .filter(|n| *n > 0)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum UniqueKey {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize, Default)]
struct DependsOn {
    #[serde(default)]
    nodes: Vec<String>,
}

/// A model that maps to an idem job.
struct Mapped<'a> {
    id: &'a str,
    node: &'a Node,
    /// dbt's strategy for the model, as the job's comment names it.
    dbt_strategy: String,
    strategy: &'static str,
    target: TableName,
    partition_column: Ident,
    unique_key: Vec<Ident>,
    grain: Grain,
    start: Option<Partition>,
    sql: String,
}

fn import(manifest_path: &Path) -> Result<Exit, Stop> {
    let text = std::fs::read_to_string(manifest_path)
        .map_err(|e| Stop::usage(format!("cannot read {}: {e}", manifest_path.display())))?;
    // A byte-order mark, as some Windows tools write one, is no JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Err(Stop::usage(format!(
            "{} is empty: pass dbt's target/manifest.json (dbt writes it at `dbt compile`)",
            manifest_path.display()
        )));
    }
    // dbt's other files (run_results.json, catalog.json, sources.json)
    // say which they are: named, rather than read as a manifest of nothing.
    #[derive(Deserialize)]
    struct Header {
        #[serde(default)]
        metadata: Metadata,
    }
    let header: Option<Header> = serde_json::from_str(text).ok();
    if let Some((kind, _)) = header.as_ref().and_then(|h| h.metadata.artifact())
        && kind != "manifest"
    {
        return Err(Stop::usage(format!(
            "{} is dbt's {kind} file, not its manifest: pass target/manifest.json (dbt writes it at `dbt compile`)",
            manifest_path.display()
        )));
    }
    let manifest: Manifest = serde_json::from_str(text).map_err(|e| {
        Stop::usage(format!(
            "{} is not a dbt manifest.json: {e}",
            manifest_path.display()
        ))
    })?;
    if let Some(adapter) = manifest.metadata.adapter_type.as_deref()
        && !matches!(adapter, "postgres" | "mysql" | "mariadb" | "sqlite")
    {
        noteln!(
            "idem: {} was compiled by dbt-{adapter}: idem loads PostgreSQL, MariaDB/MySQL and SQLite warehouses, and its SQL is {adapter}'s",
            manifest_path.display()
        );
    }
    if let Some((_, Some(version))) = manifest.metadata.artifact()
        && version > MANIFEST_VERSION
    {
        noteln!(
            "idem: {} is a v{version} manifest, newer than the v{MANIFEST_VERSION} that idem reads: a field dbt has since moved or renamed reads as missing, so check each job against its model",
            manifest_path.display()
        );
    }
    let models: Vec<(&String, &Node)> = manifest
        .nodes
        .iter()
        .filter(|(_, n)| n.resource_type == "model")
        .collect();
    let mut mapped = Vec::new();
    let mut left_out: Vec<(&str, String)> = Vec::new();
    let mut not_incremental: Vec<&str> = Vec::new();
    for (id, node) in &models {
        if node.config.materialized.as_deref() != Some("incremental") {
            not_incremental.push(&node.name);
            continue;
        }
        match map(
            id,
            node,
            manifest.metadata.adapter_type.as_deref(),
            manifest.metadata.engine(),
        ) {
            Ok(job) => mapped.push(job),
            Err(reason) => left_out.push((&node.name, reason)),
        }
    }

    let imported = job_names(&mapped);
    let mut out = vec![format!(
        "# Imported by `idem import-dbt` from {}: {} of {} incremental models.",
        comment(&manifest_path.display().to_string()),
        mapped.len(),
        mapped.len() + left_out.len()
    )];
    for job in &mapped {
        out.push(String::new());
        out.push(job_toml(job, &manifest, &imported));
    }
    if !left_out.is_empty() {
        out.push(String::new());
        out.push("# Incremental models left out:".into());
        for (name, reason) in &left_out {
            out.push(format!("#   {}: {}", comment(name), comment(reason)));
        }
    }
    for (resource, what) in [
        (
            "snapshot",
            "Snapshots (dbt's history of changed rows, not a load by window)",
        ),
        ("seed", "Seeds (loaded from CSV files, not by window)"),
    ] {
        let names: Vec<&str> = manifest
            .nodes
            .values()
            .filter(|n| n.resource_type == resource)
            .map(|n| n.name.as_str())
            .collect();
        if !names.is_empty() {
            out.push(String::new());
            out.push(format!(
                "# {what}, left out: {}",
                comment(&names.join(", "))
            ));
        }
    }
    let disabled = disabled_models(&manifest);
    if !disabled.is_empty() {
        out.push(String::new());
        out.push(format!(
            "# Disabled in dbt (enabled: false), left out: {}",
            comment(&disabled.join(", "))
        ));
    }
    if !not_incremental.is_empty() {
        out.push(String::new());
        out.push(format!(
            "# Not incremental (tables, views, ephemeral models), left out: {}",
            comment(&not_incremental.join(", "))
        ));
    }
    let text = out.join("\n");
    // What is printed is meant to be appended to an idem.toml: it must
    // read as TOML whatever the manifest held.
    if let Err(e) = text.parse::<toml::Table>() {
        return Err(Stop::failed(format!(
            "the jobs made from {} would not read as TOML ({e}); nothing was printed",
            manifest_path.display()
        )));
    }
    super::output::data(&text)?;
    for job in &mapped {
        let name = &imported[job.id];
        if *name != job.node.name {
            noteln!(
                "idem: {} is imported as {name}: more than one imported model is named {}",
                job.id,
                job.node.name
            );
        }
    }
    for job in &mapped {
        if let Some(lookback) = job.node.config.lookback() {
            noteln!(
                "idem: {} has lookback {lookback}, which idem has no setting for: {}",
                job.id,
                lookback_said(&imported[job.id], lookback, job.grain)
            );
        }
    }
    noteln!(
        "idem: {} incremental model{} imported, {} left out (the output's last lines say why)",
        mapped.len(),
        if mapped.len() == 1 { "" } else { "s" },
        left_out.len()
    );
    Ok(Exit::Ok)
}

/// The names of the models turned off in dbt, each once (a model's
/// versions share its name).
fn disabled_models(manifest: &Manifest) -> Vec<String> {
    let mut names: Vec<String> = manifest
        .disabled
        .values()
        .filter_map(|versions| versions.as_array())
        .flatten()
        .filter(|node| node.get("resource_type").and_then(|r| r.as_str()) == Some("model"))
        .filter_map(|node| node.get("name").and_then(|n| n.as_str()).map(String::from))
        .collect();
    names.dedup();
    names
}

/// The job a model maps to, or why it cannot.
fn map<'a>(
    id: &'a str,
    node: &'a Node,
    adapter: Option<&str>,
    engine: Engine,
) -> Result<Mapped<'a>, String> {
    let config = &node.config;
    let keys: Vec<String> = match &config.unique_key {
        None => Vec::new(),
        Some(UniqueKey::One(k)) => vec![k.clone()],
        Some(UniqueKey::Many(ks)) => ks.clone(),
    };
    // dbt-postgres runs a model without a strategy as delete+insert when
    // it has a unique_key, else as append; other adapters' defaults differ.
    let postgres = matches!(adapter, None | Some("postgres"));
    let (named, defaulted) = match config.incremental_strategy.as_deref() {
        Some(strategy) => (strategy, false),
        None if postgres && !keys.is_empty() => ("delete+insert", true),
        None if postgres => {
            return Err(
                "no incremental_strategy and no unique_key: dbt-postgres appends, which is not idempotent (a re-run adds the window's rows again); set delete+insert, merge or microbatch"
                    .into(),
            );
        }
        None => {
            return Err(format!(
                "no incremental_strategy: the manifest does not say which strategy dbt-{} defaults to; set delete+insert, merge or microbatch",
                adapter.unwrap_or_default()
            ));
        }
    };
    let dbt_strategy = if defaulted {
        format!("{named}, dbt-postgres's default with a unique_key")
    } else {
        named.to_string()
    };
    let strategy = match named {
        "microbatch" | "delete+insert" => "replace_partition",
        "merge" if keys.is_empty() => {
            return Err("merge without a unique_key: there is no key to upsert by".into());
        }
        "merge" => "merge_key",
        "append" => {
            return Err("append is not idempotent: a re-run adds the window's rows again".into());
        }
        other => {
            return Err(format!(
                "incremental_strategy {other} has no idem equivalent; delete+insert, merge and microbatch map"
            ));
        }
    };
    let Some(event_time) = &config.event_time else {
        return Err(
            "no event_time: idem runs a model one window at a time and needs the column that places its rows in a window"
                .into(),
        );
    };
    let partition_column =
        Ident::parse(event_time).map_err(|e| format!("event_time {event_time}: {e}"))?;
    let unique_key = keys
        .iter()
        .map(|k| Ident::parse(k.trim()).map_err(|e| format!("unique_key {k}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let grain = match config.batch_size.as_deref() {
        None => Grain::Day,
        Some(size) => Grain::parse(size)
            .ok_or_else(|| format!("batch_size {size}: idem's grains are hour, day and month"))?,
    };
    let start = match &config.begin {
        None => None,
        Some(begin) => Some(Partition::containing(
            grain,
            begin_time(begin).ok_or_else(|| format!("begin {begin} is not a date"))?,
        )),
    };
    let alias = node.alias.as_deref().unwrap_or(&node.name);
    let target_text = match &node.schema {
        Some(schema) => format!("{schema}.{alias}"),
        None => alias.to_string(),
    };
    let target = TableName::parse(&target_text)?;
    let Some(compiled) = node.compiled_code.as_deref() else {
        return Err("no compiled SQL in the manifest: run `dbt compile` first".into());
    };
    if reads_itself(compiled, node.relation_name.as_deref()) {
        // dbt compiled the is_incremental() branch, as it does where the
        // table exists: `where ts > (select max(ts) from {{ this }})` would
        // load nothing into a window re-run below the table's latest row.
        return Err(
            "its compiled SQL reads the model's own table (dbt compiled its is_incremental() branch, as the table exists), so a re-run of an earlier window would load nothing: compile with `dbt compile --full-refresh` and import again"
                .into(),
        );
    }
    let compiled = crate::warehouse::sql::query_body(compiled.trim(), engine);
    let sql = format!(
        "select * from (\n{compiled}\n) dbt_model\nwhere {event_time} >= :start and {event_time} < :end"
    );
    Ok(Mapped {
        id,
        node,
        dbt_strategy,
        strategy,
        target,
        partition_column,
        unique_key,
        grain,
        start,
        sql,
    })
}

/// Whether a model's compiled SQL names the model's own table.
fn reads_itself(compiled: &str, relation_name: Option<&str>) -> bool {
    relation_name
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .is_some_and(|r| compiled.to_lowercase().contains(&r.to_lowercase()))
}

/// Each imported model's job name (by the model's unique id): its name,
/// unless other imported models have it too (models of other packages, or
/// versions of one model), then its name with its package and version
/// (`orders_shop_v2`), numbered in the rare case that still repeats.
fn job_names<'a>(mapped: &[Mapped<'a>]) -> HashMap<&'a str, String> {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for m in mapped {
        *count.entry(m.node.name.as_str()).or_default() += 1;
    }
    let mut taken: HashSet<String> = mapped
        .iter()
        .filter(|m| count[m.node.name.as_str()] == 1)
        .map(|m| m.node.name.clone())
        .collect();
    let mut names = HashMap::new();
    for m in mapped {
        let name = &m.node.name;
        if count[name.as_str()] == 1 {
            names.insert(m.id, name.clone());
            continue;
        }
        // model.PACKAGE.NAME, model.PACKAGE.NAME.v2 for a versioned model.
        let parts: Vec<&str> = m.id.split('.').collect();
        let mut unique = name.clone();
        if let Some(package) = parts.get(1) {
            unique.push('_');
            unique.push_str(package);
        }
        if let Some(version) = parts.get(3) {
            unique.push('_');
            unique.push_str(version);
        }
        let mut candidate = unique.clone();
        let mut n = 2;
        while taken.contains(&candidate) {
            candidate = format!("{unique}_{n}");
            n += 1;
        }
        taken.insert(candidate.clone());
        names.insert(m.id, candidate);
    }
    names
}

/// Text from the manifest on a comment line: a control character (a line
/// end, a carriage return, DEL) would end the comment or break the TOML.
fn comment(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// What a model's `lookback` asks of whoever schedules its job: dbt
/// re-runs that many batches before each new one, where idem loads the
/// windows it is given.
fn lookback_said(job: &str, lookback: u64, grain: Grain) -> String {
    let grains = match lookback {
        1 => grain.as_str().to_string(),
        n => format!("{n} {}s", grain.as_str()),
    };
    format!(
        "dbt re-runs the {grains} before each new batch (lookback {lookback}), for rows that land late; idem loads only the windows a run names, so start each scheduled run {grains} earlier (idem run {job} --from <{grains} before the new one> --to <the new one>), or find late windows with idem status {job} --reconcile"
    )
}

/// When a model's `begin` starts: a date (`2024-01-01`) or a time
/// (`2024-01-01T05:00:00`, `2024-01-01 05:00`, with seconds' fractions or a
/// `Z`), whose hour an hourly job keeps; a time with an offset
/// (`2024-01-01T00:00:00+02:00`, as Python writes an aware datetime) in UTC,
/// as idem's windows are.
fn begin_time(begin: &str) -> Option<chrono::NaiveDateTime> {
    let text = begin.trim().trim_end_matches('Z');
    let zoned = ["%Y-%m-%dT%H:%M:%S%.f%:z", "%Y-%m-%d %H:%M:%S%.f%:z"]
        .iter()
        .find_map(|f| chrono::DateTime::parse_from_str(text, f).ok());
    if let Some(zoned) = zoned {
        return Some(zoned.naive_utc());
    }
    [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| chrono::NaiveDateTime::parse_from_str(text, f).ok())
    .or_else(|| {
        chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .map(|d| d.and_time(chrono::NaiveTime::MIN))
    })
}

/// A TOML basic string: quotes, backslashes and every control character
/// (a lone carriage return, DEL, …) escaped, as TOML requires.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Whether `sql` can stand as it is in a multi-line literal string
/// (`'''…'''`): TOML allows no control character there but tabs and
/// line ends (a carriage return only before a line feed), nor the
/// delimiter itself.
fn fits_literal(sql: &str) -> bool {
    !sql.contains("'''")
        && !sql.contains('\r')
        && !sql
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
}

fn job_toml(job: &Mapped, manifest: &Manifest, imported: &HashMap<&str, String>) -> String {
    let quote = toml_string;
    let node = job.node;
    let name = &imported[job.id];
    let mut lines = vec![format!(
        "# dbt {} ({}{})",
        comment(job.id),
        comment(&job.dbt_strategy),
        node.config
            .batch_size
            .as_deref()
            .map(|b| format!(", batch_size {}", comment(b)))
            .unwrap_or_default()
    )];
    if *name != node.name {
        lines.push(format!(
            "# named {name}: more than one imported dbt model is named {}",
            node.name
        ));
    }
    lines.push("[[jobs]]".to_string());
    lines.push(format!("name = {}", quote(name)));
    if let Some(d) = node.description.as_deref().filter(|d| !d.trim().is_empty()) {
        lines.push(format!("description = {}", quote(d.trim())));
    }
    lines.push(format!("target = {}", quote(&job.target.to_string())));
    lines.push(format!("strategy = \"{}\"", job.strategy));
    lines.push(format!(
        "partition_column = {}",
        quote(job.partition_column.as_str())
    ));
    if !job.unique_key.is_empty() {
        let keys: Vec<String> = job.unique_key.iter().map(|k| quote(k.as_str())).collect();
        let keys = format!("unique_key = [{}]", keys.join(", "));
        if job.strategy == "merge_key" {
            lines.push(keys);
        } else {
            // A replace deletes the window, not the keys: written as a key,
            // it would read as a promise idem does not keep.
            lines.push(format!(
                "# dbt writes by the model's unique_key (delete+insert deletes its keys, microbatch merges them); idem replaces each {} window whole, so a key whose {} moves to another window keeps its old row there: if keys move, load with strategy = \"merge_key\" and {}",
                job.grain.as_str(),
                job.partition_column,
                comment(&keys)
            ));
        }
    }
    if let Some(lookback) = node.config.lookback() {
        lines.push(format!(
            "# {}",
            comment(&lookback_said(name, lookback, job.grain))
        ));
    }
    lines.push(format!("grain = \"{}\"", job.grain.as_str()));
    match job.start {
        Some(start) => lines.push(format!("start = \"{}\"", start.name())),
        None => lines.push(format!(
            "start = \"{}\"   # the model has no `begin`: set its first partition",
            Partition::containing(job.grain, crate::partition::now_utc()).name()
        )),
    }
    let upstream: Vec<String> = node
        .depends_on
        .nodes
        .iter()
        .filter(|id| manifest.nodes.contains_key(id.as_str()))
        .filter_map(|id| imported.get(id.as_str()).cloned())
        .collect();
    if !upstream.is_empty() {
        // dbt's refs, which the SQL no longer names once compiled.
        let names: Vec<String> = upstream.iter().map(|n| quote(n)).collect();
        lines.push(format!("depends_on = [{}]", names.join(", ")));
    }
    // A literal string keeps the SQL as dbt compiled it, unless the SQL
    // holds what a literal cannot.
    if !fits_literal(&job.sql) {
        lines.push(format!("sql = {}", quote(&job.sql)));
    } else {
        lines.push(format!("sql = '''\n{}\n'''", job.sql));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_begin_with_an_offset_is_read_in_utc() {
        let at = |s: &str| begin_time(s).map(|t| t.to_string());
        assert_eq!(
            at("2026-01-01T00:00:00+02:00").as_deref(),
            Some("2025-12-31 22:00:00")
        );
        assert_eq!(
            at("2026-01-01 05:30:00+00:00").as_deref(),
            Some("2026-01-01 05:30:00")
        );
        assert_eq!(at("2026-01-01").as_deref(), Some("2026-01-01 00:00:00"));
        assert_eq!(
            at("2026-01-01T05:00:00Z").as_deref(),
            Some("2026-01-01 05:00:00")
        );
        assert_eq!(at("next tuesday"), None);
    }
}
