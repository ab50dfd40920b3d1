//! What a run says to do next, checked without a warehouse.

use super::repeat::repeat_line;
use super::*;

/// The partition of `grain` named `name`.
fn named(grain: crate::partition::Grain, name: &str) -> Partition {
    Partition::parse(grain, name, crate::partition::RangeEnd::From)
        .unwrap_or_else(|| panic!("no {grain:?} {name}"))
}

fn day(name: &str) -> Partition {
    named(crate::partition::Grain::Day, name)
}

fn hour(name: &str) -> Partition {
    named(crate::partition::Grain::Hour, name)
}

/// A command whose range holds more partitions than a run without a
/// terminal takes unasked carries --yes: printed for a cron line, it
/// runs as printed (QA: it exited 2 asking for --yes).
#[test]
fn a_wide_command_carries_yes() {
    let config = &AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG));
    let cascading = AsRun {
        cascade: true,
        ..AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG))
    };
    let narrow = crate::partition::range(day("2026-01-01"), day("2026-01-05"));
    assert_eq!(
        repeat_line(config, "j", &narrow, &[], true).as_deref(),
        Some("idem run j --only failed --from 2026-01-01 --to 2026-01-05")
    );
    let half_year = crate::partition::range(day("2026-01-01"), day("2026-06-30"));
    assert_eq!(
        repeat_line(&cascading, "j", &half_year, &[], false).as_deref(),
        Some("idem run j --from 2026-01-01 --to 2026-06-30 --cascade --yes")
    );
    let wide = [day("2026-01-01"), day("2026-06-30")];
    let summary = engine::RunSummary {
        refused: 2,
        failed: 2,
        refused_partitions: wide.to_vec(),
        ..Default::default()
    };
    let apart = refused_advice(config, "j", &summary).unwrap_or_default();
    assert!(
        apart.ends_with(
            "idem run j --only refused --from 2026-01-01 --to 2026-01-01 --allow-shrink ; idem run j --only refused --from 2026-06-30 --to 2026-06-30 --allow-shrink"
        ),
        "{apart}"
    );
    let scattered = engine::RunSummary {
        refused: 4,
        failed: 4,
        refused_partitions: vec![
            day("2026-01-01"),
            day("2026-02-01"),
            day("2026-03-01"),
            day("2026-06-30"),
        ],
        ..Default::default()
    };
    let wide = refused_advice(config, "j", &scattered).unwrap_or_default();
    assert!(
        wide.ends_with(
            "idem run j --only refused --from 2026-01-01 --to 2026-06-30 --allow-shrink --yes (over their whole span, which also takes any partition refused before between them)"
        ),
        "{wide}"
    );
}

/// A replace's window with no rows at all is likely a source that has
/// not landed, and is said so, with the command for once it has.
#[test]
fn an_empty_replace_window_is_said_as_a_late_source() {
    let config = &AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG));
    let text = "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"fct\"\n\
                target = \"fct\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\n\
                grain = \"day\"\nstart = \"2026-01-01\"\n\
                sql = \"select id, dt from s where dt >= :start and dt < :end\"\n";
    let parsed = crate::config::parse(config.config, text, &|_| None).expect("a config");
    let summary = engine::RunSummary {
        empty: vec![day("2026-01-03"), day("2026-01-04")],
        ..Default::default()
    };
    assert_eq!(
        empty_note(config, &parsed.jobs[0], &summary, &[]).as_deref(),
        Some(
            "2 partitions loaded empty, the source having no rows in their windows (2026-01-03 .. 2026-01-04). If it is late, load them again once it lands: idem run fct --only empty --from 2026-01-03 --to 2026-01-04"
        )
    );
}

/// A merge's late window is loaded again through its latest window:
/// merged alone, a late row of an older window would roll back the
/// newer values later windows gave its keys (QA).
#[test]
fn an_empty_merge_window_is_loaded_again_through_the_latest() {
    let config = &AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG));
    let text = "[warehouse]\nurl = \"sqlite://w.db\"\n\n[[jobs]]\nname = \"dim\"\n\
                target = \"dim\"\nstrategy = \"merge_key\"\nunique_key = [\"id\"]\n\
                grain = \"day\"\nstart = \"2026-01-01\"\n\
                sql = \"select id from s where dt >= :start and dt < :end\"\n";
    let parsed = crate::config::parse(config.config, text, &|_| None).expect("a config");
    let summary = engine::RunSummary {
        succeeded: 2,
        empty: vec![day("2026-01-03"), day("2026-01-04")],
        ..Default::default()
    };
    // Days apart are named, not spanned as though the days between
    // loaded empty too (QA).
    let apart = engine::RunSummary {
        empty: vec![day("2026-01-03"), day("2026-01-05"), day("2026-01-06")],
        ..Default::default()
    };
    let note = empty_note(config, &parsed.jobs[0], &apart, &[]).unwrap();
    assert!(
        note.starts_with("3 windows merged no rows, the source having no changes in them (2026-01-03, 2026-01-05, 2026-01-06). Should rows for them land later, merge them again: idem run dim --only empty"),
        "{note}"
    );
    let note = empty_note(config, &parsed.jobs[0], &summary, &[day("2026-01-04")]);
    // A merge window in which no row changed is usual for change data:
    // said as what it is, not as a source that may be late (QA).
    let said = "1 window merged no rows, the source having no changes in it (2026-01-03). Should rows for it land later, merge it again: idem run dim --only empty --from 2026-01-03 --to 2026-01-03 --through-latest --yes";
    assert_eq!(note.as_deref(), Some(said));
    // A cascade's step says so too (QA: only a run without --cascade
    // did), with what that step had empty before.
    let step = engine::Backfill::of(
        parsed.jobs[0].clone(),
        vec![day("2026-01-03"), day("2026-01-04")],
    );
    let outcome = engine::cascade::StepOutcome {
        added: Vec::new(),
        job: "dim".into(),
        summary: Some(summary),
        skipped: Vec::new(),
        not_started: Vec::new(),
        left: Vec::new(),
        reads_not_loaded: Vec::new(),
    };
    // Its command cascades, as the run did.
    let cascade = &AsRun {
        cascade: true,
        ..AsRun::plain(config.config)
    };
    assert_eq!(
        after_cascade(cascade, &[step], &[vec![day("2026-01-04")]], &[outcome]),
        [said.replace(" --yes", " --cascade --yes")]
    );
}

/// A cascade step whose only undone partitions were skipped, for an
/// upstream partition that failed, is in the upstream's repeat (which
/// cascades); where the upstream's were refused, it is named for once
/// they load (QA: it said "to finish", which reloaded nothing new).
#[test]
fn a_step_skipped_for_its_upstream_is_in_the_upstreams_repeat() {
    // A cascade's notes are made for a cascade.
    let config = &AsRun {
        cascade: true,
        ..AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG))
    };
    let upstream = |refused: bool| engine::cascade::StepOutcome {
        added: Vec::new(),
        job: "fct".into(),
        summary: Some(engine::RunSummary {
            failed: 1,
            refused: usize::from(refused),
            lasting: usize::from(!refused),
            unfinished: vec![day("2026-01-06")],
            refused_partitions: if refused {
                vec![day("2026-01-06")]
            } else {
                Vec::new()
            },
            ..Default::default()
        }),
        skipped: Vec::new(),
        not_started: Vec::new(),
        left: Vec::new(),
        reads_not_loaded: Vec::new(),
    };
    let agg = engine::cascade::StepOutcome {
        added: Vec::new(),
        job: "agg".into(),
        summary: None,
        skipped: vec![(day("2026-01-06"), "fct 2026-01-06".into())],
        not_started: Vec::new(),
        left: Vec::new(),
        reads_not_loaded: Vec::new(),
    };
    let failed = after_cascade(config, &[], &[], &[upstream(false), agg.clone()]);
    assert_eq!(
        failed,
        [
            "once the cause of fct's failures is fixed, repeat: idem run fct --only failed --from 2026-01-06 --to 2026-01-06 --cascade --yes"
        ]
    );
    // A step skipped in turn, for agg's skipped day, is in agg's
    // repeat, which cascades to it (QA: it was named again).
    let monthly = engine::cascade::StepOutcome {
        added: Vec::new(),
        job: "monthly".into(),
        summary: None,
        skipped: vec![(
            Partition::parse(
                crate::partition::Grain::Month,
                "2026-01",
                crate::partition::RangeEnd::From,
            )
            .unwrap(),
            "agg 2026-01-06".into(),
        )],
        not_started: Vec::new(),
        left: Vec::new(),
        reads_not_loaded: Vec::new(),
    };
    // The refusal's commands cascade, as the run did: they load the
    // steps it skipped, which are not named again (QA: agg's and
    // monthly's repeats followed, each naming what the first loads).
    let cascade = &AsRun {
        cascade: true,
        ..AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG))
    };
    let refused = after_cascade(cascade, &[], &[], &[upstream(true), agg, monthly]);
    assert_eq!(
        refused,
        [
            "fct: the source looks incomplete for 2026-01-06 (the shrink guard refused it, and kept its rows): fix the source and run it again (idem run fct --only refused --from 2026-01-06 --to 2026-01-06 --cascade --yes), or if it really shrank: idem run fct --only refused --from 2026-01-06 --to 2026-01-06 --allow-shrink --cascade --yes"
        ]
    );
}

/// A cancelled cascade: the root rolled one day back and left one
/// unstarted; the step downstream never began. Each is repeated as a
/// cascade, and the downstream job's undone days are named.
#[test]
fn a_cancelled_cascade_is_repeated_as_a_cascade_naming_what_is_undone() {
    // A cascade's notes are made for a cascade.
    let config = &AsRun {
        cascade: true,
        ..AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG))
    };
    let root = engine::cascade::StepOutcome {
        added: Vec::new(),
        job: "ev".into(),
        summary: Some(engine::RunSummary {
            succeeded: 1,
            not_started: 2,
            rolled_back: 1,
            cancelled: true,
            unfinished: vec![day("2026-01-02"), day("2026-01-03")],
            ..Default::default()
        }),
        skipped: Vec::new(),
        not_started: Vec::new(),
        left: Vec::new(),
        reads_not_loaded: Vec::new(),
    };
    assert_eq!(
        repeat_step(config, &root).as_deref(),
        Some("idem run ev --from 2026-01-02 --to 2026-01-03 --cascade --yes")
    );
    let downstream = engine::cascade::StepOutcome {
        added: Vec::new(),
        job: "daily".into(),
        summary: None,
        skipped: vec![(day("2026-01-02"), "ev 2026-01-02".into())],
        not_started: vec![day("2026-01-01"), day("2026-01-03")],
        left: Vec::new(),
        reads_not_loaded: Vec::new(),
    };
    assert_eq!(
        repeat_step(config, &downstream).as_deref(),
        Some("idem run daily --from 2026-01-01 --to 2026-01-03 --cascade --yes")
    );
    // The root's --only is the root's: the step downstream loads what
    // it made stale, whatever their states.
    let only = ["failed".to_string()];
    let asked = AsRun {
        config: config.config,
        only: &only,
        allow_incomplete: false,
        cascade: true,
    };
    assert_eq!(
        after_cascade(&asked, &[], &[], &[root.clone(), downstream.clone()]),
        [
            "to finish ev, repeat: idem run ev --only failed --from 2026-01-02 --to 2026-01-03 --cascade --yes",
            "to finish daily, repeat: idem run daily --from 2026-01-01 --to 2026-01-03 --cascade --yes"
        ]
    );
    // A run that is not a cascade is repeated as it was.
    let summary = root.summary.as_ref().expect("summary");
    assert_eq!(
        repeat_command(&AsRun::plain(config.config), "ev", summary).as_deref(),
        Some("idem run ev --from 2026-01-02 --to 2026-01-03")
    );
    // With its --only (and failed: a partition it chose may have
    // failed since) and --allow-incomplete (QA: the repeat of an --only
    // run reloaded every partition between, and an open window's was
    // refused without the flag).
    let only = ["stale".to_string()];
    let as_asked = AsRun {
        config: config.config,
        only: &only,
        allow_incomplete: true,
        cascade: false,
    };
    assert_eq!(
        repeat_command(&as_asked, "ev", summary).as_deref(),
        Some(
            "idem run ev --only stale,failed --from 2026-01-02 --to 2026-01-03 --allow-incomplete"
        )
    );
}

/// A cancelled run whose undone hours lie on both sides of one the shrink
/// guard refused (and one that loaded) is repeated in a command per span,
/// none over the refusal, which a repeat would refuse again (QA: one
/// `--from 08 --to 23` took the refused hour 10 and the loaded 11 too).
/// Spans no refusal parts are one command.
#[test]
fn a_repeat_leaves_out_a_refused_partition_inside_its_range() {
    let config = &AsRun::plain(Path::new(crate::cli::DEFAULT_CONFIG));
    let hours = |names: &[&str]| -> Vec<Partition> { names.iter().map(|h| hour(h)).collect() };
    let mut unfinished = hours(&["2026-11-02T08", "2026-11-02T10"]);
    unfinished.extend(crate::partition::range(
        hour("2026-11-02T12"),
        hour("2026-11-02T23"),
    ));
    let summary = engine::RunSummary {
        succeeded: 2,
        failed: 2,
        refused: 1,
        lasting: 1,
        not_started: 12,
        rolled_back: 1,
        cancelled: true,
        unfinished,
        refused_partitions: hours(&["2026-11-02T10"]),
        ..Default::default()
    };
    assert_eq!(
        repeat_command(config, "fct", &summary).as_deref(),
        Some(
            "idem run fct --from 2026-11-02T08 --to 2026-11-02T08 ; idem run fct --from 2026-11-02T12 --to 2026-11-02T23"
        )
    );
    // Apart, with no refusal between them: one command over the hour
    // between, which loaded (a repeat loads it again, safely).
    assert_eq!(
        repeat_line(
            config,
            "fct",
            &hours(&["2026-11-02T01", "2026-11-02T03"]),
            &[],
            true
        )
        .as_deref(),
        Some("idem run fct --only failed --from 2026-11-02T01 --to 2026-11-02T03")
    );
    // Five apart, a refusal between the second and the third: two commands.
    let undone = hours(&[
        "2026-11-02T01",
        "2026-11-02T03",
        "2026-11-02T05",
        "2026-11-02T07",
        "2026-11-02T09",
    ]);
    assert_eq!(
        repeat_line(config, "fct", &undone, &hours(&["2026-11-02T04"]), true).as_deref(),
        Some(
            "idem run fct --only failed --from 2026-11-02T01 --to 2026-11-02T03 ; idem run fct --only failed --from 2026-11-02T05 --to 2026-11-02T09"
        )
    );
}
