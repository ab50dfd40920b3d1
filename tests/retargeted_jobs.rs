//! A job's ledger history that belongs to another table: attempts recorded
//! under its name by definitions whose target is not its target now (its
//! `target` changed in idem.toml, or an unrelated job of another table had
//! its name). Its partitions read as the rows of its target now say; those
//! loads are history (`idem log`, marked with their table), said once by
//! `idem status`, `idem jobs` and the console; and they make nothing
//! downstream stale. On every engine.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::{Kind, TestDb, idem};
use idem::tui::{App, Msg, Theme};

const SELECT: &str = "select id, dt from src where dt >= :start and dt < :end";

/// `job partition` → (state, stale-upstream causes), from `idem status`,
/// and what it said on stderr.
fn read_states(config: &Path) -> (HashMap<String, (String, usize)>, String) {
    let out = idem(config, &["status", "--format", "json"]);
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&common::stdout_ok(&out)).expect("json");
    let states = rows
        .iter()
        .map(|r| {
            (
                format!(
                    "{} {}",
                    r["job"].as_str().unwrap_or(""),
                    r["partition"].as_str().unwrap_or("")
                ),
                (
                    r["state"].as_str().unwrap_or("").to_string(),
                    r["stale_upstream"].as_array().map_or(0, Vec::len),
                ),
            )
        })
        .collect();
    (states, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The state of `job`'s `day` in `states`.
fn state<'a>(states: &'a HashMap<String, (String, usize)>, job: &str, day: &str) -> &'a str {
    states
        .get(&format!("{job} {day}"))
        .map(|(s, _)| s.as_str())
        .unwrap_or_else(|| panic!("{job} {day}: {states:?}"))
}

fn retarget(config: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(config).expect("config");
    let changed = text.replace(
        &format!("target = \"{from}\""),
        &format!("target = \"{to}\""),
    );
    assert_ne!(text, changed, "{from} is not a target in the config");
    std::fs::write(config, changed).expect("retarget");
}

/// `CREATE TABLE` of a `(id, dt)` table named exactly `name` (quoted).
fn create(kind: Kind, name: &str) -> String {
    let quoted = match kind {
        Kind::MySql => format!("`{name}`"),
        _ => format!("\"{name}\""),
    };
    format!("CREATE TABLE {quoted} (id INTEGER NOT NULL, dt DATE NOT NULL)")
}

/// A job named `fct` once loaded table `old_fct`; the config now has
/// another job under that name, renamed there from `fct_v2`, loading
/// `fct`. Its partitions read the old job's loads of `old_fct`: the day
/// `fct_v2` loaded showed stale, the other vanished, and the note of the
/// rename was not given (the name "had loads of its own"). Now they read
/// as `fct`'s rows say (unmanaged, missing), both notes are given once,
/// and `idem log fct` marks the old loads with their table.
async fn a_name_reused_for_another_table_starts_without_its_history(kind: Kind) {
    let db = TestDb::new(kind).await.expect("test database");
    let (config, parsed) = db.config(&common::replace_job("fct", "old_fct", "2026-01-02", SELECT));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    wh.execute_script(&[&create(kind, "old_fct")])
        .await
        .expect("setup");
    wh.close().await;
    common::stdout_ok(&idem(&config, &["run", "fct"]));

    std::fs::write(
        &config,
        std::fs::read_to_string(&config).expect("config").replace(
            &common::replace_job("fct", "old_fct", "2026-01-02", SELECT),
            &common::replace_job("fct_v2", "fct", "2026-01-02", SELECT),
        ),
    )
    .expect("config");
    let one_day = ["--from", "2026-01-01", "--to", "2026-01-01"];
    common::stdout_ok(&idem(&config, &[&["run", "fct_v2"][..], &one_day].concat()));
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, text.replace("name = \"fct_v2\"", "name = \"fct\"")).expect("rename");

    let (states, said) = read_states(&config);
    assert_eq!(state(&states, "fct", "2026-01-01"), "unmanaged", "{said}");
    assert_eq!(state(&states, "fct", "2026-01-02"), "missing", "{said}");
    let elsewhere = format!(
        "idem: the ledger holds 2 loads of fct into old_fct, which is not its target in {} (fct): its partitions do not count them (idem log fct shows them)",
        config.display()
    );
    assert_eq!(said.matches(&elsewhere).count(), 1, "{said}");
    assert!(
        said.contains("under the job name \"fct_v2\""),
        "the rename is said too: {said}"
    );
    let out = idem(&config, &["jobs"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches(&elsewhere).count(), 1, "{stderr}");

    let log = common::stdout_ok(&idem(&config, &["log", "fct"]));
    assert_eq!(
        log.matches(" · into old_fct, not its target now").count(),
        2,
        "{log}"
    );
}

/// `fct_daily` loaded `fct`, then its `target` moved to `fct_stage`
/// (which held a row by hand): the partitions read the loads of `fct` as
/// loads of `fct_stage` (stale, vanished). Now they read as its rows say,
/// and the loads of `fct` are said once. Loaded into `fct_stage`, then
/// moved back, the loads of `fct` count again (loaded; the newer loads of
/// `fct_stage` made it stale and its reader stale upstream before), and a
/// change of its SQL still makes it stale.
async fn a_target_changed_in_place_and_back(kind: Kind) {
    let db = TestDb::new(kind).await.expect("test database");
    let reader = "select id, dt from fct where dt >= :start and dt < :end";
    let (config, parsed) = db.config(&format!(
        "{}{}",
        common::replace_job("fct_daily", "fct", "2026-01-02", SELECT),
        common::replace_job("fct_copy", "fct_copy", "2026-01-02", reader),
    ));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    wh.execute_script(&[
        &create(kind, "fct_copy"),
        &create(kind, "fct_stage"),
        "INSERT INTO fct_stage VALUES (7, '2026-01-01')",
    ])
    .await
    .expect("setup");
    wh.close().await;
    common::stdout_ok(&idem(&config, &["run", "fct_daily"]));
    common::stdout_ok(&idem(&config, &["run", "fct_copy"]));

    retarget(&config, "fct", "fct_stage");
    let (states, said) = read_states(&config);
    assert_eq!(
        state(&states, "fct_daily", "2026-01-01"),
        "unmanaged",
        "{said}"
    );
    assert_eq!(
        state(&states, "fct_daily", "2026-01-02"),
        "missing",
        "{said}"
    );
    let note = format!(
        "idem: the ledger holds 2 loads of fct_daily into fct, which is not its target in {} (fct_stage): its partitions do not count them (idem log fct_daily shows them)",
        config.display()
    );
    assert_eq!(said.matches(&note).count(), 1, "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");

    // Loaded into its target now, the old loads are history, said no more.
    common::stdout_ok(&idem(&config, &["run", "fct_daily"]));
    let (states, said) = read_states(&config);
    assert_eq!(
        state(&states, "fct_daily", "2026-01-02"),
        "loaded",
        "{said}"
    );
    assert!(said.is_empty(), "{said}");

    retarget(&config, "fct_stage", "fct");
    let (states, said) = read_states(&config);
    for day in ["2026-01-01", "2026-01-02"] {
        assert_eq!(state(&states, "fct_daily", day), "loaded", "{said}");
        assert_eq!(
            states[&format!("fct_copy {day}")],
            ("loaded".to_string(), 0),
            "loads into fct_stage changed nothing fct_copy reads: {states:?}"
        );
    }
    assert!(said.is_empty(), "{said}");
    let log = common::stdout_ok(&idem(&config, &["log", "fct_daily"]));
    assert_eq!(
        log.matches(" · into fct_stage, not its target now").count(),
        2,
        "{log}"
    );

    // Its SQL changed, its target not: its loads are stale.
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        text.replacen("select id, dt from src", "select id, dt from src s", 1),
    )
    .expect("edit");
    let (states, said) = read_states(&config);
    for day in ["2026-01-01", "2026-01-02"] {
        assert_eq!(state(&states, "fct_daily", day), "stale", "{said}");
    }
}

/// A target changed by case alone (`fct` to `FCT`) is the same table on
/// SQLite, whose loads still count (as of an older definition: its text
/// changed); PostgreSQL (the name is quoted) and MariaDB/MySQL on Linux
/// tell them apart: there the loads of `fct` read as loads of the empty
/// `FCT` (vanished), and now do not count.
async fn a_target_changed_by_case_alone(kind: Kind) {
    let db = TestDb::new(kind).await.expect("test database");
    let (config, parsed) = db.config(&common::replace_job(
        "fct_daily",
        "fct",
        "2026-01-02",
        SELECT,
    ));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    if kind != Kind::Sqlite {
        wh.execute_script(&[&create(kind, "FCT")])
            .await
            .expect("setup");
    }
    wh.close().await;
    common::stdout_ok(&idem(&config, &["run", "fct_daily"]));
    retarget(&config, "fct", "FCT");

    let (states, said) = read_states(&config);
    let note = "idem: the ledger holds 2 loads of fct_daily into fct, which is not its target";
    for day in ["2026-01-01", "2026-01-02"] {
        let expected = if kind == Kind::Sqlite {
            "stale"
        } else {
            "missing"
        };
        assert_eq!(state(&states, "fct_daily", day), expected, "{said}");
    }
    assert_eq!(
        said.matches(note).count(),
        usize::from(kind != Kind::Sqlite),
        "{said}"
    );
}

/// The console's detail said nothing of it; it now says, in one line read
/// when the console connects, how many loads went where and the command
/// that shows them.
async fn the_console_detail_says_where_the_loads_went(kind: Kind) {
    let db = TestDb::new(kind).await.expect("test database");
    let (path, parsed) = db.config(&common::replace_job(
        "fct_daily",
        "fct",
        "2026-01-02",
        SELECT,
    ));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    wh.execute_script(&[&create(kind, "fct_stage")])
        .await
        .expect("setup");
    common::stdout_ok(&idem(&path, &["run", "fct_daily"]));
    retarget(&path, "fct", "fct_stage");
    let config = idem::config::load(&path).expect("config");
    let now = chrono::Utc::now().naive_utc();
    let mut app = App::new(config.clone(), Theme::default_theme(), now);
    app.update(Msg::Resize(180, 48));
    app.start();
    app.update(Msg::Connected(Ok(idem::tui::app::Connection {
        url: "the warehouse".into(),
        syntax: config.warehouse.engine().into(),
        table_names: config.warehouse.engine().table_names(),
        granted: None,
    })));
    let said = std::sync::Mutex::new(Vec::new());
    let lineage = idem::lineage::Lineage::of(&config).expect("lineage");
    let seen = idem::tui::Seen::default();
    idem::tui::read_states(&wh, &config, &lineage, &config.jobs, None, &seen, |m| {
        said.lock().expect("lock").push(m)
    })
    .await;
    let mut said = said.into_inner().expect("lock");
    said.extend(idem::tui::read_history_elsewhere(&wh, &config).await);
    for msg in said {
        app.update(msg);
    }
    app.update(Msg::Tick(now));
    let line = "loads elsewhere (not counted): 2 into fct; idem log fct_daily";
    let screen = common::screen_text(&app);
    assert_eq!(screen.matches(line).count(), 1, "{screen}");
    wh.close().await;
}

on_every_engine!(
    a_name_reused_for_another_table_starts_without_its_history,
    a_target_changed_in_place_and_back,
    a_target_changed_by_case_alone,
    the_console_detail_says_where_the_loads_went,
);
