//! Every config error names the file, line and column, the field, and what
//! would be valid; the CLI exits 2 on it.

mod common;

use std::path::Path;

use idem::config::{self, ConfigError};

const GOOD_JOB: &str = r#"
[[jobs]]
name = "fct_orders"
target = "analytics.fct_orders"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select 1 as x from t where d >= :start and d < :end"
"#;

fn parse(text: &str) -> Result<config::Config, ConfigError> {
    let env = |name: &str| (name == "DATABASE_URL").then(|| "sqlite://w.db".to_string());
    config::parse(Path::new("idem.toml"), text, &env)
}

fn error(text: &str) -> ConfigError {
    match parse(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

/// The 1-based line of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .expect("needle in text")
        + 1
}

fn with_warehouse(rest: &str) -> String {
    format!("[warehouse]\nurl = \"${{DATABASE_URL}}\"\n{rest}")
}

#[test]
fn a_good_config_parses() {
    let c = parse(&with_warehouse(GOOD_JOB)).unwrap();
    assert_eq!(c.warehouse.url, "sqlite://w.db");
    assert_eq!(c.jobs[0].target.to_string(), "analytics.fct_orders");
    assert_eq!(c.defaults.concurrency, 4);
}

#[test]
fn unknown_keys_are_errors() {
    let text =
        with_warehouse(&GOOD_JOB.replace("grain = \"day\"", "grain = \"day\"\ngrian = \"day\""));
    let e = error(&text);
    assert_eq!(e.line, line_of(&text, "grian"));
    assert_eq!(e.column, 1);
    assert!(e.to_string().contains("unknown key `grian`"), "{e}");
    assert!(e.to_string().contains("valid keys: `name`"), "{e}");
}

/// QA: a misspelt key in the third of forty jobs was said as "unknown key
/// `grian`, expected one of …" with no job named and the key meant left to
/// be found in a list of thirteen; the same in [warehouse] and at the top.
#[test]
fn an_unknown_key_names_its_job_and_the_key_meant() {
    let second = GOOD_JOB
        .replace("fct_orders", "dim_customers")
        .replace("grain = \"day\"", "grian = \"day\"");
    let text = with_warehouse(&format!("{GOOD_JOB}{second}"));
    let e = error(&text);
    assert_eq!(e.field, "jobs[1] (dim_customers)", "{e}");
    assert_eq!((e.line, e.column), (line_of(&text, "grian"), 1), "{e}");
    assert!(
        e.message
            .starts_with("unknown key `grian`; did you mean `grain`? valid keys: `name`,"),
        "{e}"
    );

    let text = with_warehouse(GOOD_JOB).replace("url =", "lock_timout = \"5s\"\nurl =");
    let e = error(&text);
    assert_eq!(e.field, "warehouse", "{e}");
    assert!(
        e.message
            .starts_with("unknown key `lock_timout`; did you mean `lock_timeout`?"),
        "{e}"
    );

    let text = format!("jbos = 1\n{}", with_warehouse(GOOD_JOB));
    let e = error(&text);
    assert_eq!((e.field.as_str(), e.line), ("", 1), "{e}");
    assert!(
        e.message
            .starts_with("unknown key `jbos` at the top level; did you mean `jobs`?"),
        "{e}"
    );
    // A key like none of them gets no guess.
    let text = format!("colour = 1\n{}", with_warehouse(GOOD_JOB));
    let e = error(&text);
    assert!(!e.message.contains("did you mean"), "{e}");
    assert!(
        e.message
            .contains("valid keys: `warehouse`, `defaults` and `jobs`"),
        "{e}"
    );
}

/// QA: `[[job]]` (or `[job]`) for `[[jobs]]` was said as "job[0]
/// (fct_orders): unknown key `job`": the table named as a field of itself.
/// It is said as written, at its header, with the tables a config has.
#[test]
fn a_misspelt_table_is_said_as_written_with_the_tables_there_are() {
    for (written, said) in [
        (
            "[[job]]",
            "[[job]] is not a table idem reads; did you mean [[jobs]]?",
        ),
        (
            "[job]",
            "[job] is not a table idem reads; did you mean [[jobs]]?",
        ),
        (
            "[[Jobs]]",
            "[[Jobs]] is not a table idem reads; did you mean [[jobs]]?",
        ),
    ] {
        let text = with_warehouse(GOOD_JOB).replace("[[jobs]]", written);
        let e = error(&text);
        assert_eq!(e.field, "", "{written}: {e}");
        assert_eq!(e.line, line_of(&text, written), "{written}: {e}");
        assert!(e.message.starts_with(said), "{written}: {e}");
        assert!(
            e.message
                .ends_with("a config has [warehouse], [defaults] and [[jobs]]"),
            "{written}: {e}"
        );
    }
    let text = with_warehouse(GOOD_JOB).replace("[[jobs]]", "[defualts]\nretries = 1\n[[jobs]]");
    let e = error(&text);
    assert!(
        e.to_string().starts_with(&format!(
            "idem.toml:{}:2: [defualts] is not a table idem reads; did you mean [defaults]?",
            line_of(&text, "[defualts]")
        )),
        "{e}"
    );
}

#[test]
fn bad_dates_name_the_field_and_format() {
    let text = with_warehouse(&GOOD_JOB.replace("2026-01-01", "2026-13-01"));
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].start");
    assert_eq!((e.line, e.column), (line_of(&text, "start ="), 9));
    assert!(e.message.contains("expected YYYY-MM-DD"), "{e}");
    assert!(
        e.to_string()
            .starts_with(&format!("idem.toml:{}:9: jobs[0].start:", e.line)),
        "{e}"
    );
    // QA: a date in that form but not of the calendar said only the form
    // the operator had written; it says what the calendar lacks, as
    // --from does.
    for (bad, fault) in [
        ("2026-13-01", "there is no such date (months are 01 to 12)"),
        ("2026-02-30", "there is no such date (2026-02 has 28 days)"),
        ("2024-02-30", "there is no such date (2024-02 has 29 days)"),
    ] {
        let e = error(&with_warehouse(&GOOD_JOB.replace("2026-01-01", bad)));
        assert!(e.message.contains(fault), "{bad}: {e}");
    }
    let text = with_warehouse(&GOOD_JOB.replace(
        "start = \"2026-01-01\"",
        "start = \"2026-01-01\"\nend = \"2026-04-31\"",
    ));
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].end");
    assert!(e.message.contains("(2026-04 has 30 days)"), "{e}");
}

/// A name finer than the job's grain (a day for a monthly job, an hour for
/// a daily one) is refused at its line, with the partition it falls in:
/// taken as that partition, it would silently stand for more than it says.
#[test]
fn a_start_finer_than_the_grain_is_refused_with_what_it_meant() {
    for (grain, start, meant) in [
        ("month", "2026-01-15", "2026-01"),
        ("day", "2026-01-15T05", "2026-01-15"),
    ] {
        let text = with_warehouse(
            &GOOD_JOB
                .replace("grain = \"day\"", &format!("grain = \"{grain}\""))
                .replace("2026-01-01", start),
        );
        let e = error(&text);
        assert_eq!(e.field, "jobs[0].start");
        assert_eq!((e.line, e.column), (line_of(&text, "start ="), 9));
        assert!(
            e.message.contains(&format!(
                "\"{start}\" is not a {grain} partition; did you mean \"{meant}\"?"
            )),
            "{e}"
        );
    }
}

#[test]
fn bad_grains_list_the_valid_ones() {
    let text = with_warehouse(&GOOD_JOB.replace("grain = \"day\"", "grain = \"weekly\""));
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].grain");
    assert_eq!((e.line, e.column), (line_of(&text, "weekly"), 9));
    assert!(
        e.message.contains("expected one of hour, day, month"),
        "{e}"
    );
}

/// QA (new user, MariaDB): a 300-character job name loaded nothing: every
/// partition failed writing its ledger row ("Data too long for column
/// 'job'") and no run log could be kept (its folder's name too long). It
/// is a config error now, at the name; 128 characters still load.
#[test]
fn a_job_name_too_long_for_the_ledger_is_refused_at_its_line() {
    let named = |name: &str| {
        with_warehouse(&GOOD_JOB.replace("name = \"fct_orders\"", &format!("name = \"{name}\"")))
    };
    let longest = "j".repeat(config::MAX_JOB_NAME);
    assert_eq!(parse(&named(&longest)).unwrap().jobs[0].name, longest);
    let text = named(&"j".repeat(config::MAX_JOB_NAME + 1));
    let e = error(&text);
    assert_eq!(e.line, line_of(&text, "name = "));
    assert!(
        e.to_string()
            .contains("a job name of 129 characters is too long: at most 128"),
        "{e}"
    );
}

#[test]
fn duplicate_job_names_point_at_the_second() {
    let text = with_warehouse(&format!("{GOOD_JOB}{GOOD_JOB}"));
    let e = error(&text);
    assert_eq!(e.field, "jobs[1].name");
    let second = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("name ="))
        .nth(1)
        .unwrap()
        .0
        + 1;
    assert_eq!(e.line, second);
    assert!(
        e.message.contains(&format!(
            "duplicate job name \"fct_orders\" (first at line {})",
            line_of(&text, "name =")
        )),
        "{e}"
    );
}

#[test]
fn merge_key_needs_unique_key() {
    let job = GOOD_JOB.replace("replace_partition", "merge_key");
    let text = with_warehouse(&job);
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].unique_key");
    assert_eq!(e.line, line_of(&text, "merge_key"));
    assert!(e.message.contains("unique_key = [\"customer_id\"]"), "{e}");
}

#[test]
fn replace_partition_needs_partition_column() {
    let text = with_warehouse(&GOOD_JOB.replace("partition_column = \"dt\"\n", ""));
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].partition_column");
    assert_eq!(e.line, line_of(&text, "strategy"));
    assert!(
        e.message
            .contains("replace_partition needs partition_column"),
        "{e}"
    );
}

#[test]
fn identifiers_must_be_plain() {
    let text = with_warehouse(
        &GOOD_JOB.replace("analytics.fct_orders", "analytics.fct_orders; drop table x"),
    );
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].target");
    assert_eq!((e.line, e.column), (line_of(&text, "target"), 10));
    assert!(e.message.contains("plain identifiers"), "{e}");

    let text = with_warehouse(
        &GOOD_JOB.replace("partition_column = \"dt\"", "partition_column = \"d-t\""),
    );
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].partition_column");
    assert!(e.message.contains("not a plain identifier"), "{e}");

    let text = with_warehouse(&GOOD_JOB.replace("replace_partition", "merge_key").replace(
        "partition_column = \"dt\"",
        "unique_key = [\"id\", \"bad key\"]",
    ));
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].unique_key");
    assert_eq!(e.column, 21);
}

/// Names are ASCII: the errors say so, not "letters" that `ñ` is one of.
#[test]
fn names_say_they_are_ascii() {
    let text = with_warehouse(&GOOD_JOB.replace("name = \"fct_orders\"", "name = \"año\""));
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].name");
    assert_eq!(e.line, line_of(&text, "name ="));
    assert!(
        e.message
            .contains("use only ASCII letters (a-z, A-Z), digits (0-9), _, - and ."),
        "{e}"
    );
    for (field, text) in [
        (
            "jobs[0].partition_column",
            GOOD_JOB.replace("partition_column = \"dt\"", "partition_column = \"año\""),
        ),
        (
            "jobs[0].target",
            GOOD_JOB.replace("analytics.fct_orders", "analytics.años"),
        ),
    ] {
        let e = error(&with_warehouse(&text));
        assert_eq!(e.field, field);
        assert!(
            e.message.contains("ASCII letter") && !e.message.contains(" a letter"),
            "{e}"
        );
    }
}

#[test]
fn missing_required_keys_are_named() {
    // Missing from the file, not from the table that begins it (jobs
    // pasted from `idem import-dbt` into an empty file).
    for text in ["[defaults]\nretries = 1\n", GOOD_JOB.trim_start()] {
        let e = error(text);
        assert!(
            e.message.contains("missing required key `warehouse`"),
            "{e}"
        );
        assert_eq!(e.field, "", "{e}");
    }
    let text = with_warehouse(&GOOD_JOB.replace("target = \"analytics.fct_orders\"\n", ""));
    let e = error(&text);
    assert!(e.message.contains("missing required key `target`"), "{e}");
    assert_eq!(
        e.line,
        line_of(&text, "[[jobs]]"),
        "points at the job missing it"
    );
    // And names it, with what to write.
    assert_eq!(e.field, "jobs[0] (fct_orders)");
    assert!(
        e.message
            .contains("(the table the job loads, e.g. target = \"analytics.fct_orders\")"),
        "{e}"
    );
}

#[test]
fn unset_environment_variables_are_named() {
    let text = "[warehouse]\nurl = \"${NOT_SET_ANYWHERE}\"\n";
    let e = error(text);
    assert_eq!(
        (e.field.as_str(), e.line, e.column),
        ("warehouse.url", 2, 7)
    );
    assert!(e.message.contains("NOT_SET_ANYWHERE is not set"), "{e}");
}

#[test]
fn wrong_types_and_ranges_are_positioned() {
    let text = with_warehouse("[defaults]\nconcurrency = 0\n");
    let e = error(&text);
    assert_eq!((e.field.as_str(), e.line), ("defaults.concurrency", 4));
    assert!(e.message.contains("expected 1 to 64"), "{e}");

    let text = with_warehouse("lock_timeout = \"soon\"\n");
    let e = error(&text);
    assert_eq!(e.field, "warehouse.lock_timeout");
    assert!(e.message.contains("\"10s\""), "{e}");
}

#[test]
fn out_of_range_timeouts_are_config_errors() {
    for (field, value) in [
        ("lock_timeout", "18446744073709551615h"),
        ("lock_timeout", "1152921504606846976h"),
        ("lock_timeout", "600h"),
        ("statement_timeout", "2147483648ms"),
    ] {
        let text = with_warehouse(&format!("{field} = \"{value}\"\n"));
        let e = error(&text);
        assert_eq!(e.field, format!("warehouse.{field}"), "{e}");
        assert_eq!((e.line, e.column), (3, field.len() + 4), "{e}");
        assert!(e.message.contains("out of range"), "{e}");
        assert!(e.message.contains("at most 596h"), "{e}");
    }
    // The longest that every engine takes, and zero, are fine.
    for value in ["596h", "0s"] {
        let c = parse(&with_warehouse(&format!("lock_timeout = \"{value}\"\n"))).unwrap();
        assert!(c.warehouse.lock_timeout <= config::MAX_TIMEOUT);
    }
    // A statement timeout of zero is no limit, set as such; left out, none is set.
    let c = parse(&with_warehouse("statement_timeout = \"0s\"\n")).unwrap();
    assert_eq!(
        c.warehouse.statement_timeout,
        Some(std::time::Duration::ZERO)
    );
    let c = parse(&with_warehouse("")).unwrap();
    assert_eq!(c.warehouse.statement_timeout, None);
}

#[test]
fn the_cli_exits_2_with_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idem.toml");
    std::fs::write(
        &path,
        with_warehouse(&GOOD_JOB.replace("grain = \"day\"", "grain = \"weekly\"")),
    )
    .unwrap();
    for args in [vec!["status"], vec!["run", "fct_orders"], vec!["jobs"]] {
        let out = crate::common::idem_command()
            .env("DATABASE_URL", "sqlite://unused.db")
            .arg("--config")
            .arg(&path)
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("idem.toml:9:9: jobs[0].grain: \"weekly\" is not a grain"),
            "{stderr}"
        );
    }
    let missing = crate::common::idem_command()
        .args(["--config", "/nonexistent/idem.toml", "status"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("no config at /nonexistent/idem.toml; run `idem init URL`"),
        "{stderr}"
    );
}

#[test]
fn a_missing_config_says_how_to_get_one() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["jobs"][..], &["status"], &["run", "x"], &[]] {
        let out = crate::common::idem_command()
            .current_dir(dir.path())
            .env_remove("IDEM_CONFIG")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("idem: no idem.toml here; run `idem init URL`"),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains("`idem demo`") && stderr.contains("--config"),
            "{stderr}"
        );
        assert!(!stderr.contains(":0:0"), "{stderr}");
    }
}

#[test]
fn a_value_of_the_wrong_type_names_its_field_and_how_to_write_it() {
    // Each case: the line as written, the field the error must name, and
    // what it must say to write instead.
    let cases = [
        (
            "lock_timeout = 10",
            "warehouse.lock_timeout",
            "lock_timeout = \"10s\"",
        ),
        (
            "statement_timeout = true",
            "warehouse.statement_timeout",
            "\"10s\"",
        ),
    ];
    for (line, field, fix) in cases {
        let text = with_warehouse(&format!("{line}\n{GOOD_JOB}"));
        let e = error(&text);
        assert_eq!(e.field, field, "{e}");
        assert_eq!(e.line, line_of(&text, line), "{e}");
        assert!(e.to_string().contains(fix), "{e}");
    }
    let in_defaults = with_warehouse(&format!("[defaults]\nconcurrency = \"4\"\n{GOOD_JOB}"));
    let e = error(&in_defaults);
    assert_eq!(e.field, "defaults.concurrency", "{e}");
    assert!(e.to_string().contains("concurrency = 4"), "{e}");
    assert!(e.message.contains("expected a whole number"), "{e}");
    assert!(!e.message.contains("i64"), "{e}");

    // A key written as one name, or a list of the wrong things.
    let merge = GOOD_JOB
        .replace("replace_partition", "merge_key")
        .replace("grain = \"day\"", "grain = \"day\"\nunique_key = \"id\"");
    let e = error(&with_warehouse(&merge));
    assert_eq!(e.field, "jobs[0].unique_key", "{e}");
    assert!(e.message.contains("expected a list"), "{e}");
    assert!(e.to_string().contains("unique_key = [\"id\"]"), "{e}");
    let e = error(&with_warehouse(
        &merge.replace("unique_key = \"id\"", "unique_key = [1]"),
    ));
    assert_eq!(e.field, "jobs[0].unique_key", "{e}");
    assert!(e.to_string().contains("unique_key = [\"id\"]"), "{e}");

    // The second job's field is named by its place among the jobs.
    let second = GOOD_JOB.replace("fct_orders\"", "fct_daily\"");
    let text = with_warehouse(&format!(
        "{GOOD_JOB}{}",
        second.replace(
            "grain = \"day\"",
            "grain = \"day\"\ntruncate_partitions = \"no\""
        )
    ));
    let e = error(&text);
    assert_eq!(e.line, line_of(&text, "truncate_partitions"), "{e}");
    assert_eq!(e.field, "jobs[1].truncate_partitions", "{e}");
    assert!(e.to_string().contains("true or false"), "{e}");
    // A date without quotes is a TOML date, which the error says.
    let text = with_warehouse(&format!(
        "{GOOD_JOB}{}",
        second.replace("start = \"2026-01-01\"", "start = 2026-01-01")
    ));
    let e = error(&text);
    assert_eq!(e.line, line_of(&text, "start = 2026"), "{e}");
    assert_eq!(e.field, "jobs[1].start", "{e}");
    assert!(e.message.contains("a TOML date"), "{e}");
    assert!(!e.message.contains("map"), "{e}");
    assert!(e.to_string().contains("start = \"2026-01-01\""), "{e}");
}

/// `idem run --from` would read the job's name as an option: a name must
/// begin as no option does.
#[test]
fn a_job_name_that_reads_as_an_option_is_refused() {
    for bad in ["--from", "-x", ".hidden"] {
        let text = with_warehouse(&GOOD_JOB.replace("\"fct_orders\"", &format!("\"{bad}\"")));
        let e = error(&text);
        assert_eq!(e.field, "jobs[0].name", "{bad}");
        assert_eq!(e.line, line_of(&text, bad), "{bad}");
        assert!(
            e.message.contains("begin it with a letter, digit or _"),
            "{e}"
        );
    }
}

#[test]
fn a_config_that_cannot_be_read_says_why_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let run = |path: &Path| {
        let out = crate::common::idem_command()
            .arg("--config")
            .arg(path)
            .arg("status")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };

    let folder = dir.path().join("conf");
    std::fs::create_dir(&folder).unwrap();
    let stderr = run(&folder);
    assert!(!stderr.contains(":0:0"), "{stderr}");
    assert!(!stderr.contains("create one"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: cannot read config: it is a directory; pass the config file inside it, e.g. --config {}",
            folder.display(),
            folder.join("idem.toml").display()
        )),
        "{stderr}"
    );

    let latin1 = dir.path().join("latin1.toml");
    std::fs::write(
        &latin1,
        b"# ok\n[warehouse]\nurl = \"sqlite://caf\xe9.db\"\n",
    )
    .unwrap();
    let stderr = run(&latin1);
    assert!(!stderr.contains("create one"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}:3:20: cannot read config: the file is not UTF-8 text; save it as UTF-8",
            latin1.display()
        )),
        "{stderr}"
    );
}

/// A value of a kind the field never takes names the field and what it
/// takes, not the reader's words for a Rust type.
#[test]
fn a_value_of_another_kind_says_what_the_field_takes() {
    for (written, says) in [
        (
            "\"50%\"",
            "write shrink_guard = 0.5 (a number, without quotes)",
        ),
        (
            "\"0.5\"",
            "write shrink_guard = 0.5 (a number, without quotes)",
        ),
        ("true", "true is not a fraction"),
        ("[0.5]", "e.g. shrink_guard = 0.5"),
    ] {
        let line = format!("shrink_guard = {written}");
        let text = with_warehouse(
            &GOOD_JOB.replace("grain = \"day\"", &format!("grain = \"day\"\n{line}")),
        );
        let e = error(&text);
        assert_eq!(e.field, "jobs[0].shrink_guard", "{written}: {e}");
        assert_eq!(e.line, line_of(&text, &line), "{written}: {e}");
        assert!(e.message.contains("a fraction from 0"), "{written}: {e}");
        assert!(e.message.contains(says), "{written}: {e}");
        assert!(!e.message.contains("untagged"), "{written}: {e}");
        // The same in [defaults].
        let text = with_warehouse(&format!("[defaults]\n{line}\n{GOOD_JOB}"));
        let e = error(&text);
        assert_eq!(e.field, "defaults.shrink_guard", "{written}: {e}");
        assert!(e.message.contains("a fraction from 0"), "{written}: {e}");
    }

    let text = with_warehouse(&GOOD_JOB.replace(
        "strategy = \"replace_partition\"",
        "strategy = [\"replace_partition\"]",
    ));
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].strategy", "{e}");
    assert_eq!(
        (e.line, e.column),
        (line_of(&text, "strategy ="), 12),
        "{e}"
    );
    assert!(
        e.message
            .contains("write strategy = \"replace_partition\" or \"merge_key\""),
        "{e}"
    );

    let text = with_warehouse(&GOOD_JOB.replace("grain = \"day\"", "grain = 1"));
    let e = error(&text);
    assert_eq!(e.field, "jobs[0].grain", "{e}");
    assert!(e.message.contains("hour, day, month"), "{e}");

    let text = with_warehouse(&GOOD_JOB.replace("[[jobs]]", "[jobs]"));
    let e = error(&text);
    assert_eq!(e.field, "jobs (fct_orders)", "{e}");
    assert!(e.message.contains("write each job under [[jobs]]"), "{e}");

    let text = with_warehouse(GOOD_JOB).replace("[warehouse]", "[[warehouse]]");
    let e = error(&text);
    assert_eq!(e.field, "warehouse", "{e}");
    assert!(e.message.contains("write [warehouse] (one bracket)"), "{e}");
}

/// A URL made of an empty environment variable says where the empty text
/// came from.
#[test]
fn a_url_from_an_empty_variable_names_the_variable() {
    let text = format!("[warehouse]\nurl = \"${{QA_EMPTY}}\"\n{GOOD_JOB}");
    let env = |name: &str| (name == "QA_EMPTY").then(String::new);
    let Err(e) = config::parse(Path::new("idem.toml"), &text, &env) else {
        panic!("an empty URL parsed");
    };
    assert_eq!(
        (e.field.as_str(), e.line, e.column),
        ("warehouse.url", 2, 7)
    );
    assert!(
        e.message
            .contains("\"\" is not a warehouse URL (it comes from ${QA_EMPTY}, which is empty)"),
        "{e}"
    );
    // Set but wrong, it is named without "empty".
    let env = |name: &str| (name == "QA_EMPTY").then(|| "w.db".to_string());
    let Err(e) = config::parse(Path::new("idem.toml"), &text, &env) else {
        panic!("a bad URL parsed");
    };
    assert!(e.message.contains("(it comes from ${QA_EMPTY});"), "{e}");
}

/// A SQLite URL that names no file (`sqlite://`, an empty `${DB}` after
/// it, `:memory:`) would open an empty database in memory: every target
/// missing, a ledger gone at exit. It is an error at its line.
#[test]
fn a_sqlite_url_naming_no_file_is_refused() {
    let env = |name: &str| (name == "QA_EMPTY").then(String::new);
    for url in [
        "sqlite://",
        "sqlite://${QA_EMPTY}",
        "sqlite::memory:",
        "sqlite://?mode=rwc",
        "sqlite://w.db?mode=memory",
    ] {
        let text = format!("[warehouse]\nurl = \"{url}\"\n{GOOD_JOB}");
        let Err(e) = config::parse(Path::new("idem.toml"), &text, &env) else {
            panic!("{url} parsed");
        };
        assert_eq!(
            (e.field.as_str(), e.line, e.column),
            ("warehouse.url", 2, 7),
            "{url}"
        );
        assert!(e.message.contains("names no database file"), "{url}: {e}");
        assert!(e.message.contains("expected sqlite://PATH"), "{url}: {e}");
    }
    let text = format!("[warehouse]\nurl = \"sqlite://${{QA_EMPTY}}\"\n{GOOD_JOB}");
    let e = config::parse(Path::new("idem.toml"), &text, &env).unwrap_err();
    assert!(
        e.message
            .contains("(it comes from ${QA_EMPTY}, which is empty)"),
        "{e}"
    );
    for url in [
        "sqlite://w.db",
        "sqlite:///srv/w.db?mode=rwc",
        "sqlite:w.db",
    ] {
        let text = format!("[warehouse]\nurl = \"{url}\"\n{GOOD_JOB}");
        assert!(
            config::parse(Path::new("idem.toml"), &text, &env).is_ok(),
            "{url}"
        );
    }
}

/// A MariaDB/MySQL URL without a database selects none: every command
/// stopped at the server's "No database selected". It is a config error
/// at its line that says what to write (and shows no password).
#[test]
fn a_mysql_url_without_a_database_is_refused() {
    for url in [
        "mysql://root@127.0.0.1:3306",
        "mysql://root:s3cret@db/",
        "mysql://root@db:3306?ssl-mode=disabled",
    ] {
        let text = format!("[warehouse]\nurl = \"{url}\"\n{GOOD_JOB}");
        let e = error(&text);
        assert_eq!(
            (e.field.as_str(), e.line, e.column),
            ("warehouse.url", 2, 7),
            "{url}"
        );
        assert!(
            e.message.contains("names no database")
                && e.message
                    .contains("expected mysql://USER@HOST:PORT/DATABASE"),
            "{url}: {e}"
        );
        assert!(!e.message.contains("s3cret"), "{e}");
    }
    for url in [
        "mysql://root@127.0.0.1:3306/test",
        "mysql://r:p%2Fq@db/w?ssl-mode=disabled",
        "postgres://db:5432",
    ] {
        let text = format!("[warehouse]\nurl = \"{url}\"\n{GOOD_JOB}");
        assert!(parse(&text).is_ok(), "{url}");
    }
}

/// A key or table given twice is named, with what to do (the TOML reader
/// said "duplicate key" alone).
#[test]
fn a_key_given_twice_is_named() {
    let text =
        with_warehouse(&GOOD_JOB.replace("grain = \"day\"", "grain = \"day\"\ngrain = \"hour\""));
    let e = error(&text);
    assert_eq!(e.line, line_of(&text, "grain = \"hour\""));
    assert!(
        e.message
            .contains("duplicate key `grain`: a table takes each key once"),
        "{e}"
    );
    let text = format!("{}[warehouse]\nlock_timeout = \"1s\"\n", with_warehouse(""));
    let e = error(&text);
    assert_eq!(e.line, 3, "{e}");
    assert!(
        e.message
            .contains("[warehouse] is given twice; write its keys under one [warehouse]"),
        "{e}"
    );
}

/// Where a job's SQL begins, which every lint finding counts from: after a
/// multi-line string's opening quotes and the line end TOML trims there,
/// `\r\n` too (a config saved on Windows put every finding a line early),
/// and past a line-ending backslash.
#[test]
fn the_sql_begins_where_toml_reads_its_first_line() {
    let head = "[warehouse]\nurl = \"sqlite://w.db\"\n[[jobs]]\nname = \"j\"\ntarget = \"t\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\ngrain = \"day\"\nstart = \"2026-01-01\"\n";
    for (sql, line) in [
        ("sql = \"select 1 as dt\"\n", 10),
        ("sql = \"\"\"select 1\nas dt\"\"\"\n", 10),
        ("sql = \"\"\"\nselect 1 as dt\"\"\"\n", 11),
        ("sql = '''\nselect 1 as dt'''\n", 11),
        ("sql = \"\"\"\n\nselect 1 as dt\"\"\"\n", 11),
        ("sql = \"\"\"\\\n\n   select 1 as dt\"\"\"\n", 12),
    ] {
        for crlf in [false, true] {
            let text = format!("{head}{sql}");
            let text = if crlf {
                text.replace('\n', "\r\n")
            } else {
                text
            };
            let config = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(config.jobs[0].sql_line, line, "{sql:?} crlf {crlf}");
        }
    }
}

/// A config path that is no config file: `/dev/zero` (QA: read until
/// memory ran out), a file far larger than any config. Each is refused at
/// once, naming the limit; a config piped in (`--config /dev/stdin`, as
/// `<(envsubst < idem.toml)` gives one) is still read.
#[test]
fn a_file_larger_than_any_config_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.toml");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(config::MAX_CONFIG_BYTES + 1)
        .unwrap();
    for path in [std::path::Path::new("/dev/zero"), &huge] {
        let mut child = crate::common::idem_command()
            .arg("--config")
            .arg(path)
            .arg("jobs")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(30) {
                child.kill().unwrap();
                panic!(
                    "idem --config {} jobs still reading after 30 s",
                    path.display()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "{}: cannot read config: it is larger than 64 MiB, which no config is",
                path.display()
            )),
            "{stderr}"
        );
    }
    let mut piped = crate::common::idem_command()
        .args(["--config", "/dev/stdin", "jobs"])
        .env("DATABASE_URL", "sqlite://unused.db")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let text = with_warehouse(&GOOD_JOB.replace("grain = \"day\"", "grain = \"weekly\""));
    use std::io::Write;
    piped
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = piped.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/dev/stdin:9:9: jobs[0].grain: \"weekly\" is not a grain"),
        "the piped config is read and checked: {stderr}"
    );
}
