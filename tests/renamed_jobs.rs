//! A job renamed in idem.toml keeps its target, but its loads stay in the
//! ledger under the old name: `idem status` and `idem jobs` say where its
//! history went, on every engine.

mod common;

use common::{Kind, TestDb, idem};

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
        "idem: the ledger holds loads of fct under the job name \"fct_daily\", which {} no longer has: fct_by_day's partitions do not count them (a renamed job starts without its history); name the job \"fct_daily\" again to take them back",
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

on_every_engine!(a_renamed_job_is_told_where_its_history_is);
