//! `idem init URL`: a commented starter `idem.toml` for a warehouse, with
//! every table that has a date or timestamp column offered as a candidate
//! job (commented out until someone points its SQL at a source).

use std::fmt::Write as _;
use std::path::Path;

use super::Stop;
use super::output::outln;
use crate::config::{self, Ident, TableName};
use crate::exit::Exit;
use crate::partition::{Grain, Partition, RangeEnd, now_utc};
use crate::warehouse::{Column, Engine, Warehouse, redact};

pub async fn init(config_path: &Path, url: &str, force: bool) -> Exit {
    init_inner(config_path, url, force)
        .await
        .unwrap_or_else(Stop::report)
}

/// Writes `text` to `path` whole or not at all: into a file beside it, then
/// renamed over it, so a full disk or a killed process leaves a config
/// that `--force` was replacing as it was.
fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    // Through a symlink, the file it names is the one replaced.
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let path = resolved.as_path();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "idem.toml".into());
    let part = path.with_file_name(format!(".{name}.{}.part", std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create(&part)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&part, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    written
}

/// A table offered as a job, partitioned by one of its columns.
struct Candidate {
    table: TableName,
    columns: Vec<Column>,
    partition_column: Column,
    other_time_columns: Vec<String>,
    grain: Grain,
    start: Partition,
    first_value: Option<String>,
}

async fn init_inner(config_path: &Path, url: &str, force: bool) -> Result<Exit, Stop> {
    if config_path.exists() && !force {
        return Err(Stop::usage(format!(
            "{} exists; pass --force to overwrite it",
            config_path.display()
        )));
    }
    // The URL is checked, and expanded, as the config will read it.
    let url_toml = serde_json::to_string(url).map_err(|e| Stop::usage(e.to_string()))?;
    let warehouse_toml = format!("[warehouse]\nurl = {url_toml}\n");
    let parsed = config::parse(config_path, &warehouse_toml, &|name| {
        std::env::var(name).ok()
    })
    .map_err(|e| Stop::usage(format!("{url}: {}", e.message)))?;
    let warehouse = super::connect_to_read(&parsed, 2).await?;
    let candidates = candidates(&warehouse)
        .await
        .map_err(|e| Stop::failed(format!("cannot read the warehouse's tables: {e}")))?;
    warehouse.close().await;

    let text = starter(url, &url_toml, &candidates);
    write_whole(config_path, &text).map_err(|e| {
        Stop::failed(format!(
            "cannot write {}: {e}{}",
            config_path.display(),
            if force && config_path.exists() {
                "; the config there is as it was"
            } else {
                ""
            }
        ))
    })?;
    outln!(
        "wrote {} for {}: {} candidate job{} (commented out){}",
        config_path.display(),
        redact(url),
        candidates.len(),
        if candidates.len() == 1 { "" } else { "s" },
        if candidates.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                candidates
                    .iter()
                    .map(|c| c.table.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    outln!(
        "next: uncomment a job, point its SQL at its source, then `idem lint` and `idem status`"
    );
    Ok(Exit::Ok)
}

async fn candidates(
    warehouse: &Warehouse,
) -> Result<Vec<Candidate>, crate::warehouse::WarehouseError> {
    let engine = warehouse.dialect().engine();
    let mut found = Vec::new();
    for table in warehouse.tables().await? {
        let columns = warehouse.columns(&table).await?;
        let mut time_columns = Vec::new();
        for column in &columns {
            let ident = &column.name;
            if !column.holds_instants(engine) {
                continue;
            }
            let first = warehouse.min_as_text(&table, ident).await?;
            // SQLite declares dates as text: its values say whether they are.
            let declared = engine != Engine::Sqlite || declares_time(column);
            if declared || first.as_deref().is_some_and(looks_like_instant) {
                time_columns.push((column.clone(), first));
            }
        }
        let mut time_columns = time_columns.into_iter();
        let Some((partition_column, first_value)) = time_columns.next() else {
            continue;
        };
        let (grain, start) =
            grain_and_start(partition_column.name.as_str(), first_value.as_deref());
        found.push(Candidate {
            table,
            other_time_columns: time_columns.map(|(c, _)| c.name.to_string()).collect(),
            columns,
            partition_column,
            grain,
            start,
            first_value,
        });
    }
    Ok(found)
}

fn declares_time(column: &Column) -> bool {
    let t = column.type_name.to_ascii_lowercase();
    t.contains("date") || t.contains("time")
}

/// `2026-06-04`, `2026-06-04T13`, `2026-06-04 13:22:11`, `2026-06`.
fn looks_like_instant(value: &str) -> bool {
    let value = value.trim();
    let day = value.get(..10).unwrap_or(value);
    Partition::parse(Grain::Day, day, RangeEnd::From).is_some()
        || (value.len() == 7 && Partition::parse(Grain::Month, value, RangeEnd::From).is_some())
}

/// The grain a column's values suggest, and the partition of its first value
/// (this month's first day when the table is empty).
fn grain_and_start(column: &str, first: Option<&str>) -> (Grain, Partition) {
    let today = || Partition::containing(Grain::Month, now_utc());
    let Some(first) = first.map(str::trim) else {
        let month = today();
        return (Grain::Day, Partition::containing(Grain::Day, month.start));
    };
    let column = column.to_lowercase();
    let grain = if first.len() == 7 || column.contains("month") {
        Grain::Month
    } else if first.len() == 13 || (first.len() > 10 && column.contains("hour")) {
        Grain::Hour
    } else {
        Grain::Day
    };
    let prefix = match grain {
        Grain::Month => first.get(..7).unwrap_or(first),
        Grain::Day => first.get(..10).unwrap_or(first),
        Grain::Hour => first.get(..13).unwrap_or(first),
    };
    let start = Partition::parse(grain, &prefix.replacen(' ', "T", 1), RangeEnd::From)
        .unwrap_or_else(|| Partition::containing(grain, today().start));
    (grain, start)
}

fn starter(url: &str, url_toml: &str, candidates: &[Candidate]) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# idem.toml for {}, written by `idem init`.\n\
         # The README's \"Configuration\" explains every key. `idem lint` checks the\n\
         # jobs, `idem status` shows their partitions, `idem` opens the console.\n",
        redact(url)
    );
    let _ = writeln!(
        text,
        "[warehouse]\n\
         url = {url_toml}   # or \"${{DATABASE_URL}}\", read from the environment\n\
         # statement_timeout = \"30m\"   # bounds every statement; \"0s\" is no limit\n\
         # lock_timeout = \"10s\"        # waits for a partition's lock; \"0s\" does not wait\n\n\
         [defaults]\n\
         concurrency = 4                 # partitions in flight at once\n\
         retries = 2                     # retries of transient errors, with backoff\n"
    );
    if candidates.is_empty() {
        let _ = writeln!(
            text,
            "# No table here has a date or timestamp column to partition by. Add jobs\n\
             # as the README shows: [[jobs]] with name, target, strategy, grain, start, sql."
        );
        return text;
    }
    let _ = writeln!(
        text,
        "# Candidate jobs: each table below has a date or timestamp column that can\n\
         # partition it. Uncomment a job, point its SQL at the source it loads from,\n\
         # and keep the window on the source's time column: >= :start and < :end."
    );
    let mut names: Vec<String> = Vec::new();
    for c in candidates {
        let mut name = c.table.name.as_str().to_string();
        if names.contains(&name) {
            name = c.table.to_string().replace('.', "_");
        }
        names.push(name.clone());
        let pcol = &c.partition_column.name;
        let mut about = format!(
            "\n# {}: partitioned by {pcol} ({})",
            c.table, c.partition_column.type_name
        );
        match &c.first_value {
            Some(v) => about.push_str(&format!(", first value {}", v.trim())),
            None => about.push_str(", empty"),
        }
        if !c.other_time_columns.is_empty() {
            about.push_str(&format!(
                "; other date columns: {}",
                c.other_time_columns.join(", ")
            ));
        }
        let columns: Vec<&str> = c
            .columns
            .iter()
            .map(|col| col.name.as_str())
            .filter(|n| Ident::parse(n).is_ok())
            .collect();
        let _ = writeln!(text, "{about}");
        let job = format!(
            "[[jobs]]\n\
             name = \"{name}\"\n\
             target = \"{}\"\n\
             strategy = \"replace_partition\"   # or \"merge_key\" with unique_key = [\"…\"]\n\
             partition_column = \"{pcol}\"\n\
             grain = \"{}\"                    # hour | day | month\n\
             start = \"{}\"\n\
             sql = \"\"\"\n\
             select {}\n\
             from {}   -- the source this job loads from\n\
             where {pcol} >= :start and {pcol} < :end\n\
             \"\"\"",
            c.table,
            c.grain.as_str(),
            c.start.name(),
            columns.join(", "),
            c.table,
        );
        for line in job.lines() {
            let _ = writeln!(text, "# {line}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grains_follow_the_first_value() {
        let g = |col: &str, v: &str| {
            let (grain, start) = grain_and_start(col, Some(v));
            (grain, start.name())
        };
        assert_eq!(g("dt", "2026-06-04"), (Grain::Day, "2026-06-04".into()));
        assert_eq!(g("month", "2026-06"), (Grain::Month, "2026-06".into()));
        assert_eq!(g("month", "2026-06-01"), (Grain::Month, "2026-06".into()));
        assert_eq!(
            g("hour", "2026-06-04T13"),
            (Grain::Hour, "2026-06-04T13".into())
        );
        assert_eq!(
            g("event_hour", "2026-06-04 13:00:00"),
            (Grain::Hour, "2026-06-04T13".into())
        );
        assert_eq!(
            g("created_at", "2026-06-04 13:22:11"),
            (Grain::Day, "2026-06-04".into())
        );
        assert!(looks_like_instant("2026-06-04 13:22:11"));
        assert!(looks_like_instant("2026-06"));
        assert!(!looks_like_instant("alice@example.com"));
        assert!(!looks_like_instant("DE"));
    }
}
