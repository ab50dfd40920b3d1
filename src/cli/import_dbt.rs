//! `idem import-dbt MANIFEST`: dbt's incremental models as idem jobs. A
//! model maps when its strategy re-runs a window idempotently
//! (`delete+insert`, `merge`, `microbatch`) and it names the column that
//! places its rows in a window (`event_time`); its compiled SQL is wrapped
//! so that the window is bound to `:start` / `:end`. Every other incremental
//! model is listed with the reason it was left out.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::Stop;
use super::output::{noteln, outln};
use crate::config::{Engine, Ident, TableName};
use crate::exit::Exit;
use crate::partition::{Grain, Partition, RangeEnd};

pub fn import_dbt(manifest_path: &Path) -> Exit {
    import(manifest_path).unwrap_or_else(Stop::report)
}

/// The parts of dbt's `manifest.json` (schema v12) that idem reads; every
/// other field is ignored.
#[derive(Deserialize)]
struct Manifest {
    #[serde(default)]
    nodes: BTreeMap<String, Node>,
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Deserialize, Default)]
struct Metadata {
    /// `postgres`, `mysql`, `sqlite`, …: how the compiled SQL is lexed.
    #[serde(default)]
    adapter_type: Option<String>,
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
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
        Stop::usage(format!(
            "{} is not a dbt manifest.json: {e}",
            manifest_path.display()
        ))
    })?;
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
        match map(id, node, manifest.metadata.engine()) {
            Ok(job) => mapped.push(job),
            Err(reason) => left_out.push((&node.name, reason)),
        }
    }

    let imported: HashSet<&str> = mapped.iter().map(|m| m.id).collect();
    outln!(
        "# Imported by `idem import-dbt` from {}: {} of {} incremental models.",
        manifest_path.display(),
        mapped.len(),
        mapped.len() + left_out.len()
    );
    for job in &mapped {
        outln!("");
        outln!("{}", job_toml(job, &manifest, &imported));
    }
    if !left_out.is_empty() {
        outln!("");
        outln!("# Incremental models left out:");
        for (name, reason) in &left_out {
            outln!("#   {name}: {reason}");
        }
    }
    if !not_incremental.is_empty() {
        outln!("");
        outln!(
            "# Not incremental (tables, views, ephemeral models), left out: {}",
            not_incremental.join(", ")
        );
    }
    noteln!(
        "idem: {} incremental model{} imported, {} left out (the output's last lines say why)",
        mapped.len(),
        if mapped.len() == 1 { "" } else { "s" },
        left_out.len()
    );
    Ok(Exit::Ok)
}

/// The job a model maps to, or why it cannot.
fn map<'a>(id: &'a str, node: &'a Node, engine: Engine) -> Result<Mapped<'a>, String> {
    let config = &node.config;
    let keys: Vec<String> = match &config.unique_key {
        None => Vec::new(),
        Some(UniqueKey::One(k)) => vec![k.clone()],
        Some(UniqueKey::Many(ks)) => ks.clone(),
    };
    let strategy = match config.incremental_strategy.as_deref() {
        Some("microbatch") | Some("delete+insert") => "replace_partition",
        Some("merge") if keys.is_empty() => {
            return Err("merge without a unique_key: there is no key to upsert by".into());
        }
        Some("merge") => "merge_key",
        Some("append") => {
            return Err("append is not idempotent: a re-run adds the window's rows again".into());
        }
        Some(other) => {
            return Err(format!(
                "incremental_strategy {other} has no idem equivalent; delete+insert, merge and microbatch map"
            ));
        }
        None => {
            return Err(
                "no incremental_strategy: the adapter's default (append on PostgreSQL) is not idempotent; set delete+insert, merge or microbatch"
                    .into(),
            );
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
        Some(begin) => {
            let day = begin.get(..10).unwrap_or(begin);
            Some(
                Partition::parse(grain, day, RangeEnd::From)
                    .ok_or_else(|| format!("begin {begin} is not a date"))?,
            )
        }
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
    let compiled = crate::warehouse::sql::query_body(compiled.trim(), engine);
    let sql = format!(
        "select * from (\n{compiled}\n) dbt_model\nwhere {event_time} >= :start and {event_time} < :end"
    );
    Ok(Mapped {
        id,
        node,
        strategy,
        target,
        partition_column,
        unique_key,
        grain,
        start,
        sql,
    })
}

fn job_toml(job: &Mapped, manifest: &Manifest, imported: &HashSet<&str>) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let node = job.node;
    let mut lines = vec![
        format!(
            "# dbt {} ({}{})",
            job.id,
            node.config.incremental_strategy.as_deref().unwrap_or(""),
            node.config
                .batch_size
                .as_deref()
                .map(|b| format!(", batch_size {b}"))
                .unwrap_or_default()
        ),
        "[[jobs]]".to_string(),
        format!("name = {}", quote(&node.name)),
    ];
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
        lines.push(format!("unique_key = [{}]", keys.join(", ")));
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
        .filter(|id| imported.contains(id.as_str()))
        .filter_map(|id| manifest.nodes.get(id))
        .map(|n| n.name.clone())
        .collect();
    if !upstream.is_empty() {
        // dbt's refs, which the SQL no longer names once compiled.
        let names: Vec<String> = upstream.iter().map(|n| quote(n)).collect();
        lines.push(format!("depends_on = [{}]", names.join(", ")));
    }
    // A literal string keeps the SQL as dbt compiled it, unless the SQL
    // holds the literal's own delimiter.
    if job.sql.contains("'''") {
        lines.push(format!("sql = {}", quote(&job.sql)));
    } else {
        lines.push(format!("sql = '''\n{}\n'''", job.sql));
    }
    lines.join("\n")
}
