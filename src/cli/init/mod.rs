//! `idem init URL`: a commented starter `idem.toml` for a warehouse, with
//! every table that has a date or timestamp column offered as a candidate
//! job (commented out until someone points its SQL at a source), and what
//! was not offered, with why.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use super::Stop;
use super::output::outln;
use crate::config;
use crate::exit::Exit;
use crate::warehouse::{config_sqlite_url, redact};

mod candidates;
mod grain;
mod starter;

pub async fn init(config_path: &Path, url: &str, force: bool) -> Exit {
    init_inner(config_path, url, force)
        .await
        .unwrap_or_else(Stop::report)
}

/// Writes `text` to `path` whole or not at all: into a file beside it, then
/// renamed over it, so a full disk or a killed process leaves a config
/// that `--force` was replacing as it was. `path` is a file, not a
/// symlink (see [`written_file`]): the rename would replace the link.
/// Once `cancel` fires (a signal) before the rename, nothing is written
/// and the file beside it is removed: `Ok(false)`.
fn write_whole(path: &Path, text: &str, cancel: &CancellationToken) -> std::io::Result<bool> {
    use std::io::Write;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "idem.toml".into());
    let part = path.with_file_name(format!(".{name}.{}.part", std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create(&part)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        if cancel.is_cancelled() {
            return Ok(false);
        }
        std::fs::rename(&part, path).map(|()| true)
    })();
    if !matches!(written, Ok(true)) {
        let _ = std::fs::remove_file(&part);
    }
    written
}

/// The stop of an init a signal cancelled: nothing was written.
fn cancelled(config_path: &Path) -> Stop {
    Stop {
        code: Exit::Cancelled,
        message: format!(
            "init cancelled: {}",
            if config_path.exists() {
                format!("{} is as it was", config_path.display())
            } else {
                format!("nothing was written to {}", config_path.display())
            }
        ),
    }
}

/// The file a config at `path` is written to: `path`, or through a
/// symlink (a chain of them) the file it names, whether or not that file
/// is there yet (a dotfiles link made before its file), so that the link
/// stays a link. Err: a loop of links.
fn written_file(path: &Path) -> Result<std::path::PathBuf, Stop> {
    let mut file = path.to_path_buf();
    // As the kernel gives up on a path, after 40 links.
    for _ in 0..40 {
        let Ok(to) = std::fs::read_link(&file) else {
            return Ok(file);
        };
        file = match file.parent() {
            Some(folder) if to.is_relative() => folder.join(to),
            _ => to,
        };
    }
    Err(Stop::usage(format!(
        "cannot write {}: it is a symlink that leads to itself; point it at a file, or pass another --config",
        path.display()
    )))
}

async fn init_inner(config_path: &Path, url: &str, force: bool) -> Result<Exit, Stop> {
    // A signal stops the reading where it is (the connections close with
    // it) and the write before its rename: until the config is in place,
    // nothing is written.
    let cancel = super::cancel_on_signal("no config is written");
    if config_path.exists() && !force {
        return Err(Stop::usage(format!(
            "{} exists; pass --force to overwrite it",
            config_path.display()
        )));
    }
    let file = written_file(config_path)?;
    // Before the warehouse is read, not after: the folder must be there.
    if let Some(folder) = file.parent().filter(|f| !f.as_os_str().is_empty())
        && !folder.is_dir()
    {
        return Err(Stop::usage(format!(
            "cannot write {}{}: there is no folder {}; make it first (mkdir -p {}), or pass another --config",
            config_path.display(),
            if file == config_path {
                String::new()
            } else {
                format!(" (a symlink to {})", file.display())
            },
            folder.display(),
            folder.display()
        )));
    }
    // The URL is checked, and expanded, as the config will read it.
    let url_toml = serde_json::to_string(url).map_err(|e| Stop::usage(e.to_string()))?;
    let warehouse_toml = format!("[warehouse]\nurl = {url_toml}\n");
    let parsed = config::parse(config_path, &warehouse_toml, &|name| {
        std::env::var(name).ok()
    })
    .map_err(|e| Stop::usage(format!("{}: {}", redact(url), e.message)))?;
    let read = async {
        let warehouse = super::connect_to_read(&parsed, 2).await?;
        let survey = warehouse.answering(candidates::survey(&warehouse)).await;
        let server_zone = warehouse.server_zone_note().await;
        let dialect = warehouse.dialect();
        warehouse.close().await;
        let survey =
            survey.map_err(|e| Stop::failed(format!("cannot read the warehouse's tables: {e}")))?;
        Ok::<_, Stop>((survey, server_zone, dialect))
    };
    let (survey, server_zone, dialect) = tokio::select! {
        read = read => read?,
        () = cancel.cancelled() => return Err(cancelled(config_path)),
    };

    // A `${VAR}` is kept for the environment to fill; a SQLite URL written
    // out is kept as it works from anywhere (see [`config_sqlite_url`]).
    let url = if url.contains("${") {
        url.to_string()
    } else {
        config_sqlite_url(url)
    };
    let url_toml = serde_json::to_string(&url).map_err(|e| Stop::usage(e.to_string()))?;
    let text = starter::starter(&url, &url_toml, &survey, dialect);
    let written = write_whole(&file, &text, &cancel).map_err(|e| {
        Stop::failed(format!(
            "cannot write {}: {e}{}",
            std::path::absolute(config_path)
                .unwrap_or_else(|_| config_path.to_path_buf())
                .display(),
            if force && config_path.exists() {
                "; the config there is as it was"
            } else {
                "; write it where you can: idem --config PATH init URL"
            }
        ))
    })?;
    if !written {
        return Err(cancelled(config_path));
    }
    let candidates = &survey.candidates;
    outln!(
        "wrote {} for {}: {} candidate job{} (commented out){}",
        config_path.display(),
        redact(&url),
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
    // A start read from the first rows alone may be late: said where it
    // is seen, not only in the file.
    for c in candidates.iter().filter(|c| !c.first_value_exact) {
        if let Some(first) = &c.first_value {
            outln!(
                "{}: first value {} {}",
                c.table,
                first.trim(),
                starter::first_rows_only(&c.partition_column.name)
            );
        }
    }
    // So is a start that leaves out placeholders: a user who knows them
    // for real dates moves it.
    for c in candidates {
        if let Some(left_out) = starter::left_out(&c.placeholders) {
            outln!(
                "{}: start {}, leaving out{left_out}",
                c.table,
                c.start.name()
            );
        }
    }
    // The URL's time zone is not the sessions': said before a job is
    // written against it, as lint says it.
    if let Some(note) = crate::warehouse::session_zone_note(&parsed.warehouse.url) {
        outln!("note: {note}");
    }
    // So is the zone the server gives the operator's own client.
    if let Some(note) = server_zone {
        outln!("note: {note}");
    }
    let skipped = survey.skipped_lines();
    if !skipped.is_empty() {
        outln!("not offered:");
        for line in skipped {
            outln!("  {line}");
        }
    }
    // Commands that run as printed from anywhere: they name the config
    // written, not `./idem.toml` (QA: `--config starter.toml` was told to
    // run `idem lint`, which read another file or none).
    let config = super::run_args::config_flag(config_path);
    let then = format!("then `idem{config} lint` and `idem{config} status`");
    if candidates.is_empty() {
        outln!(
            "next: add a [[jobs]] table per load to {} (the README's \"Configuration\" shows one), {then}",
            config_path.display()
        );
    } else {
        outln!(
            "next: uncomment a job, replace {} in its SQL with the table it loads from, {then}",
            starter::SOURCE_PLACEHOLDER
        );
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signal that came while the config was being written (before its
    /// rename) leaves the config there as it was and no file beside it.
    #[test]
    fn a_write_cancelled_before_its_rename_leaves_the_config_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("idem.toml");
        std::fs::write(&config, "# mine\n").unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert!(!write_whole(&config, "# new\n", &cancel).unwrap());
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "# mine\n");
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert!(write_whole(&config, "# new\n", &CancellationToken::new()).unwrap());
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "# new\n");
    }
}
