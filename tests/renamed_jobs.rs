//! A job renamed in idem.toml keeps its target, but its loads stay in the
//! ledger under the old name: `idem status`, `idem jobs`, `idem log` and
//! the console's detail say where its history went, and `idem log OLD`
//! shows it, on every engine.

mod common;

use std::path::PathBuf;

use common::{Kind, TestDb, idem};
use idem::tui::{App, Effect, Msg, Theme};

const SELECT: &str = "select id, dt from src where dt >= :start and dt < :end";

/// Renamed, both loaded days showed as unmanaged and nothing said why; now
/// each command says once that the ledger holds them under the old name
/// and how to take them back, and says nothing once the name is back.
async fn a_renamed_job_is_told_where_its_history_is(kind: Kind) {
    let db = TestDb::new(kind).await.expect("test database");
    let other = "[[jobs]]\nname = \"copy\"\ntarget = \"fct_copy\"\nstrategy = \"replace_partition\"\n\
                 partition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\nend = \"2026-01-02\"\n\
                 sql = \"select id, dt from fct where dt >= :start and dt < :end\"\n";
    let (config, parsed) = db.config(&format!(
        "{}{other}",
        common::replace_job("fct_daily", "fct", "2026-01-02", SELECT)
    ));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    wh.execute_script(&["CREATE TABLE fct_copy (id INTEGER NOT NULL, dt DATE NOT NULL)"])
        .await
        .expect("setup");
    wh.close().await;
    common::stdout_ok(&idem(&config, &["run", "fct_daily"]));
    common::stdout_ok(&idem(&config, &["run", "copy"]));
    let original = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        original.replace("name = \"fct_daily\"", "name = \"fct_by_day\""),
    )
    .expect("rename");

    let note = format!(
        "idem: the ledger holds loads of fct under the job name \"fct_daily\", which {} no longer has: fct_by_day's partitions do not count them (a renamed job starts without its history); name the job \"fct_daily\" again to take them back, or read them with idem log fct_daily",
        config.display()
    );
    for args in [
        &["status", "--format", "csv"][..],
        &["status", "fct_by_day"],
        &["jobs"],
    ] {
        let out = idem(&config, args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.matches(&note).count(), 1, "{args:?}: {stderr}");
        // The job that kept its name is not named in it.
        assert!(!stderr.contains("\"copy\""), "{args:?}: {stderr}");
        if args.contains(&"csv") {
            assert!(
                stdout.contains("fct_by_day,2026-01-01,unmanaged"),
                "{stdout}"
            );
        }
    }
    // Asked of the other job alone, the renamed one's history is not its.
    let out = idem(&config, &["status", "copy"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("fct_daily"),
        "{out:?}"
    );

    // Renamed on purpose and loaded under the new name, the old name's
    // loads are history: said no more (it was said on every status).
    common::stdout_ok(&idem(
        &config,
        &[
            "run",
            "fct_by_day",
            "--from",
            "2026-01-01",
            "--to",
            "2026-01-01",
        ],
    ));
    let out = idem(&config, &["status", "--format", "csv"]);
    assert!(common::stdout_ok(&out).contains("fct_by_day,2026-01-01,loaded"));
    assert!(out.stderr.is_empty(), "{out:?}");

    std::fs::write(&config, &original).expect("rename back");
    let out = idem(&config, &["status", "--format", "csv"]);
    let stdout = common::stdout_ok(&out);
    assert!(stdout.contains("fct_daily,2026-01-01,loaded"), "{stdout}");
    assert!(out.stderr.is_empty(), "{out:?}");
}

/// `fct_daily` (target `fct`) loaded over both days, then renamed in the
/// config by `rename`: the database, the config's path and its text before.
async fn loaded_then_renamed(kind: Kind, rename: &str) -> (TestDb, PathBuf, String) {
    let db = TestDb::new(kind).await.expect("test database");
    let (config, parsed) = db.config(&common::replace_job(
        "fct_daily",
        "fct",
        "2026-01-02",
        SELECT,
    ));
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&common::TWO_DAYS).await.expect("setup");
    wh.close().await;
    common::stdout_ok(&idem(&config, &["run", "fct_daily"]));
    let original = std::fs::read_to_string(&config).expect("config");
    rename_in(&config, "fct_daily", rename);
    (db, config, original)
}

fn rename_in(config: &PathBuf, from: &str, to: &str) {
    let text = std::fs::read_to_string(config).expect("config");
    let renamed = text.replace(&format!("name = \"{from}\""), &format!("name = \"{to}\""));
    assert_ne!(text, renamed, "{from} is not in the config");
    std::fs::write(config, renamed).expect("rename");
}

/// `idem log fct_daily` after the rename was refused as no job; it now
/// shows the old name's history, one partition or all, saying which job
/// loads the target now. The new name's empty log says where the history
/// is; a name the ledger never held is still unknown. `idem log fct_daily
/// DAY --lines` was refused as no job while the forms without --lines
/// worked: it prints the run log its runs wrote under that name.
async fn the_old_name_shows_its_history(kind: Kind) {
    let (_db, config, _) = loaded_then_renamed(kind, "fct_by_day").await;
    let out = idem(&config, &["log", "fct_daily"]);
    let stdout = common::stdout_ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.starts_with("FINISHED (UTC)"), "{stdout}");
    for day in ["2026-01-01", "2026-01-02"] {
        assert!(
            stdout.lines().any(|l| l.contains(day)
                && l.contains("succeeded")
                && l.contains("-0 +1 → 1 in window")),
            "{day}: {stdout}"
        );
    }
    assert!(
        stderr.contains(&format!(
            "{} has no job \"fct_daily\"; the ledger holds its loads of fct, which job fct_by_day loads now (idem log fct_by_day shows that job's)",
            config.display()
        )),
        "{stderr}"
    );
    let out = idem(&config, &["log", "fct_daily", "2026-01-02"]);
    let stdout = common::stdout_ok(&out);
    assert!(
        stdout.contains("2026-01-02") && !stdout.contains("2026-01-01"),
        "{stdout}"
    );

    let out = idem(&config, &["log", "fct_daily", "2026-01-02", "--lines"]);
    let stdout = common::stdout_ok(&out);
    assert!(
        stdout.contains("attempt 1 succeeded: 1 row,") && !stdout.contains("2026-01-01"),
        "{stdout}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("which job fct_by_day loads now"),
        "{out:?}"
    );

    let out = idem(&config, &["log", "fct_by_day"]);
    assert_eq!(
        common::stdout_ok(&out),
        "no attempts recorded for fct_by_day\n"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("or read them with idem log fct_daily"),
        "{stderr}"
    );

    for args in [
        &["log", "fct_weekly"][..],
        &["log", "fct_weekly", "2026-01-02", "--lines"],
    ] {
        let out = idem(&config, args);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("no job named \"fct_weekly\""), "{stderr}");
    }
}

/// Renamed twice with the definition unchanged, the middle name's loads
/// were never recorded under it: the note named the first name alone (whose
/// loads are older) and `idem log` refused the middle one. Both are named
/// now, the one loaded last first, as the name to take back.
async fn a_job_renamed_twice_is_told_both_names(kind: Kind) {
    let (_db, config, _) = loaded_then_renamed(kind, "fct_b").await;
    let one_day = ["--from", "2026-01-02", "--to", "2026-01-02"];
    common::stdout_ok(&idem(&config, &[&["run", "fct_b"][..], &one_day].concat()));
    rename_in(&config, "fct_b", "fct_c");
    let out = idem(&config, &["status", "--format", "csv"]);
    let stdout = common::stdout_ok(&out);
    assert!(stdout.contains("fct_c,2026-01-02,unmanaged"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("under the job names \"fct_b\", \"fct_daily\" (loaded last first)")
            && stderr.contains("name the job \"fct_b\" again to take that name's loads back, or read them with idem log fct_b"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let stdout = common::stdout_ok(&idem(&config, &["log", "fct_b"]));
    assert_eq!(
        stdout.lines().count(),
        2,
        "a header and fct_b's one load: {stdout}"
    );
    assert!(stdout.contains("2026-01-02"), "{stdout}");
}

/// On MariaDB/MySQL the ledger's `_ci` collation read "FCT_DAILY" as
/// "fct_daily": a rename of case alone kept the old name's loads as the
/// new one's, where the other engines start it without them, and said
/// nothing. Now it is a rename there too.
async fn a_rename_of_case_alone_is_a_rename(kind: Kind) {
    let (_db, config, _) = loaded_then_renamed(kind, "FCT_DAILY").await;
    let out = idem(&config, &["status", "--format", "csv"]);
    let stdout = common::stdout_ok(&out);
    assert!(
        stdout.contains("FCT_DAILY,2026-01-01,unmanaged"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("under the job name \"fct_daily\"")
            && stderr.contains("FCT_DAILY's partitions"),
        "{stderr}"
    );
    // Its own first load is numbered 1, not after the old name's.
    common::stdout_ok(&idem(
        &config,
        &[
            "run",
            "FCT_DAILY",
            "--from",
            "2026-01-01",
            "--to",
            "2026-01-01",
        ],
    ));
    let stdout = common::stdout_ok(&idem(&config, &["log", "FCT_DAILY"]));
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stdout.contains(" #1 "), "{stdout}");
    let stdout = common::stdout_ok(&idem(&config, &["log", "fct_daily"]));
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
}

/// The console's detail said nothing of a renamed job's history: every
/// partition unmanaged, its loads "none". It now says, in one line read in
/// the background when the console connects, where they are and the
/// command that shows them; once the job loads under its new name, no more.
async fn the_console_detail_says_where_the_history_is(kind: Kind) {
    let (db, path, _) = loaded_then_renamed(kind, "fct_by_day").await;
    let config = idem::config::load(&path).expect("config");
    let wh = db.warehouse(&config).await;
    let mut app = App::new(config.clone(), Theme::default_theme(), now());
    app.update(Msg::Resize(160, 48));
    app.start();
    let effects = app.update(Msg::Connected(Ok(idem::tui::app::Connection {
        url: "the warehouse".into(),
        syntax: config.warehouse.engine().into(),
        table_names: config.warehouse.engine().table_names(),
        granted: None,
    })));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::ReadHistoryElsewhere)),
        "{effects:?}"
    );
    // A refresh reads the states alone: the renamed jobs are read when
    // the console connects and when the config's jobs change.
    let read = |renamed: bool| {
        let wh = &wh;
        let config = &config;
        async move {
            let said = std::sync::Mutex::new(Vec::new());
            let lineage = idem::lineage::Lineage::of(config).expect("lineage");
            let seen = idem::tui::Seen::default();
            idem::tui::read_states(wh, config, &lineage, &config.jobs, None, &seen, |m| {
                said.lock().expect("lock").push(m)
            })
            .await;
            let mut said = said.into_inner().expect("lock");
            if renamed {
                said.extend(idem::tui::read_history_elsewhere(wh, config).await);
            }
            said
        }
    };
    for msg in read(true).await {
        app.update(msg);
    }
    app.update(Msg::Tick(now()));
    let line = "renamed? its loads are under \"fct_daily\" (not counted): idem log fct_daily";
    let screen = common::screen_text(&app);
    assert_eq!(screen.matches(line).count(), 1, "{screen}");

    common::stdout_ok(&idem(
        &path,
        &[
            "run",
            "fct_by_day",
            "--from",
            "2026-01-01",
            "--to",
            "2026-01-01",
        ],
    ));
    for msg in read(false).await {
        app.update(msg);
    }
    app.update(Msg::Tick(now()));
    let screen = common::screen_text(&app);
    assert!(!screen.contains("renamed?"), "{screen}");
    wh.close().await;
}

fn now() -> chrono::NaiveDateTime {
    chrono::Utc::now().naive_utc()
}

on_every_engine!(
    a_renamed_job_is_told_where_its_history_is,
    the_old_name_shows_its_history,
    a_job_renamed_twice_is_told_both_names,
    a_rename_of_case_alone_is_a_rename,
    the_console_detail_says_where_the_history_is,
);
