//! `idem lint`: every finding is raised by SQL that has the mistake and not
//! by the same word in a comment, a string literal or a column name; the
//! checks that need the warehouse run on SQLite, PostgreSQL and MariaDB; the
//! binary exits 1 on errors and 0 on warnings alone.

mod common;

use std::path::Path;

use common::{Kind, TestDb};
use idem::config::{self, Job};
use idem::lint::{self, Finding, Severity};

/// The line of `idem.toml` where [`job`]'s SQL starts.
const SQL_LINE: usize = 12;

/// A job parsed from an `idem.toml` whose SQL starts at [`SQL_LINE`].
fn job(strategy: &str, sql: &str) -> Job {
    let keys = match strategy {
        "merge_key" => "unique_key = [\"id\"]",
        _ => "partition_column = \"dt\"",
    };
    let text = format!(
        "[warehouse]\nurl = \"sqlite://unused.db\"\n\n[[jobs]]\nname = \"j\"\ntarget = \"t\"\nstrategy = \"{strategy}\"\n{keys}\ngrain = \"day\"\nstart = \"2026-01-01\"\nsql = '''\n{sql}\n'''\n"
    );
    let config = config::parse(Path::new("idem.toml"), &text, &|_| None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let job = config.jobs.into_iter().next().expect("one job");
    assert_eq!(job.sql_line, SQL_LINE, "fixture layout");
    job
}

fn replace(sql: &str) -> Vec<Finding> {
    lint::static_findings(&job("replace_partition", sql))
}

fn merge(sql: &str) -> Vec<Finding> {
    lint::static_findings(&job("merge_key", sql))
}

/// The findings whose message contains `needle`.
fn matching<'a>(findings: &'a [Finding], needle: &str) -> Vec<&'a Finding> {
    findings
        .iter()
        .filter(|f| f.message.contains(needle))
        .collect()
}

const WINDOW: &str = "where created_at >= :start and created_at < :end";

/// A replace job's SQL with `column` in its SELECT list, otherwise clean.
fn with_column(column: &str) -> String {
    format!("select id,\n  {column},\n  cast(created_at as date) as dt\nfrom src\n{WINDOW}")
}

#[test]
fn a_clean_job_has_no_findings() {
    assert_eq!(replace(&with_column("amount")), vec![]);
    assert_eq!(
        merge("select id, email from customers where _loaded_at >= :start and _loaded_at < :end"),
        vec![]
    );
}

#[test]
fn non_deterministic_functions_are_errors_on_their_line() {
    let cases = [
        ("now() as loaded_at", "now()"),
        ("NOW() as loaded_at", "now()"),
        ("Now ( ) as loaded_at", "now()"),
        ("pg_catalog.now() as loaded_at", "now()"),
        ("current_date as loaded_on", "current_date"),
        ("CURRENT_TIMESTAMP as loaded_at", "current_timestamp"),
        ("current_timestamp(3) as loaded_at", "current_timestamp"),
        ("localtimestamp as loaded_at", "localtimestamp"),
        ("sysdate() as loaded_at", "sysdate()"),
        ("getdate() as loaded_at", "getdate()"),
        ("clock_timestamp() as loaded_at", "clock_timestamp()"),
        ("unix_timestamp() as loaded_at", "unix_timestamp()"),
        ("datetime('now') as loaded_at", "datetime('now')"),
        ("'now'::timestamp as loaded_at", "'now'::timestamp"),
        ("random() as r", "random()"),
        ("RAND() as r", "rand()"),
        ("gen_random_uuid() as row_id", "gen_random_uuid()"),
        ("uuid() as row_id", "uuid()"),
        ("uuid_generate_v4() as row_id", "uuid_generate_v4()"),
        ("NEWID() as row_id", "newid()"),
    ];
    for (column, call) in cases {
        let findings = replace(&with_column(column));
        assert_eq!(findings.len(), 1, "{column}: {findings:#?}");
        let f = &findings[0];
        assert_eq!(f.severity, Severity::Error, "{column}");
        assert_eq!(
            f.line,
            SQL_LINE + 1,
            "{column}: the SELECT list's second line"
        );
        assert!(f.message.starts_with(call), "{column}: {}", f.message);
        if call.contains("uuid") || call.contains("newid") {
            assert!(f.fix.contains("hash of the natural key"), "{}", f.fix);
        } else if call.contains("rand") {
            assert!(f.fix.contains(":start / :end"), "{}", f.fix);
        } else {
            assert_eq!(f.fix, "pass the run date in: use :start / :end");
        }
    }
}

/// What QA found lint let through: sequences, transaction and connection
/// ids, PostgreSQL's other clocks and UUIDs, MariaDB's, and SQLite's
/// strftime with a format alone (the current time). A re-run of the
/// partition writes other values for each (idem verify sees the sequences,
/// clocks and UUIDs change inside its own transaction; ids differ between
/// runs).
#[test]
fn sequences_session_ids_and_engine_clocks_are_errors() {
    let cases = [
        ("nextval('orders_seq') as row_id", "nextval(…)", "sequence"),
        ("txid_current() as tx", "txid_current()", "transaction"),
        (
            "pg_current_xact_id() as tx",
            "pg_current_xact_id()",
            "transaction",
        ),
        ("pg_backend_pid() as pid", "pg_backend_pid()", "connection"),
        ("clock_timestamp() as t", "clock_timestamp()", "clock"),
        (
            "statement_timestamp() as t",
            "statement_timestamp()",
            "clock",
        ),
        (
            "transaction_timestamp() as t",
            "transaction_timestamp()",
            "clock",
        ),
        ("gen_random_uuid() as u", "gen_random_uuid()", "UUID"),
        ("uuid_generate_v1() as u", "uuid_generate_v1()", "UUID"),
        ("uuid_generate_v1mc() as u", "uuid_generate_v1mc()", "UUID"),
        ("uuid_generate_v4() as u", "uuid_generate_v4()", "UUID"),
        ("uuid_short() as u", "uuid_short()", "UUID"),
        ("connection_id() as c", "connection_id()", "connection"),
        ("sysdate() as t", "sysdate()", "clock"),
        ("rand() as r", "rand()", "random"),
        ("strftime('%Y-%m-%d') as d", "strftime(…)", "clock"),
        ("strftime('%s', 'now') as d", "strftime('now')", "clock"),
        ("date('now') as d", "date('now')", "clock"),
        ("datetime() as d", "datetime()", "clock"),
    ];
    for (column, call, what) in cases {
        let findings = replace(&with_column(column));
        assert_eq!(findings.len(), 1, "{column}: {findings:#?}");
        let f = &findings[0];
        assert_eq!(f.severity, Severity::Error, "{column}");
        assert_eq!(f.line, SQL_LINE + 1, "{column}");
        assert!(f.message.starts_with(call), "{column}: {}", f.message);
        assert!(f.message.contains(what), "{column}: {}", f.message);
    }
    // Deterministic relatives stay clean: a name-based UUID, a formatted
    // column, the sequence's name as a column.
    for column in [
        "uuid_generate_v5(uuid_ns_url(), url) as u",
        "strftime('%Y-%m-%d', created_at) as d",
        "nextval_seen as n",
    ] {
        assert_eq!(replace(&with_column(column)), vec![], "{column}");
    }
}

/// QA: PostgreSQL's TABLESAMPLE picks other rows on every run (REPEATABLE
/// keeps them only while the table's pages stay as they are): an error like
/// random(), on its line; the word as a name or in a string is none.
#[test]
fn tablesample_is_random_like_random() {
    for clause in [
        "tablesample system (10)",
        "TABLESAMPLE BERNOULLI (5) REPEATABLE (42)",
    ] {
        let sql = format!("select id, cast(created_at as date) as dt\nfrom src {clause}\n{WINDOW}");
        let found = replace(&sql);
        let [f] = found.as_slice() else {
            panic!("{clause}: {found:#?}");
        };
        assert_eq!(f.severity, Severity::Error, "{clause}");
        assert_eq!(f.line, SQL_LINE + 1, "{clause}");
        assert!(
            f.message.starts_with("tablesample picks rows at random"),
            "{}",
            f.message
        );
        assert!(f.fix.contains("hash of the natural key"), "{}", f.fix);
    }
    for clean in [
        "select id, 'tablesample' as s, cast(created_at as date) as dt\nfrom src\n",
        "select id, \"tablesample\", cast(created_at as date) as dt\nfrom src -- tablesample system (1)\n",
    ] {
        assert_eq!(replace(&format!("{clean}{WINDOW}")), vec![], "{clean}");
    }
}

/// QA: LIMIT (and OFFSET, FETCH FIRST, TOP) without ORDER BY keeps
/// whichever rows the plan reads first, so a re-run can load others. An
/// error on the clause's line, in a subquery or CTE as at the top; an
/// ORDER BY in the same query, or an EXISTS, is none (one that may tie is
/// a warning: the next test). SQL no dialect parses is read by its
/// parentheses.
#[test]
fn limit_without_order_by_is_an_error() {
    let flagged = [
        ("select id, dt\nfrom src {W}\nlimit 100", "LIMIT", 2),
        ("select id, dt\nfrom src {W}\nlimit 10, 100", "LIMIT", 2),
        ("select id, dt\nfrom src {W}\noffset 5", "OFFSET", 2),
        (
            "select id, dt from src {W}\norder by id\nlimit 5 offset 5",
            "",
            0,
        ),
        (
            "select id, dt\nfrom src {W}\nfetch first 10 rows only",
            "FETCH FIRST",
            2,
        ),
        (
            "select id, dt from src {W}\noffset 5 rows\nfetch next 10 rows only",
            "FETCH FIRST",
            2,
        ),
        ("select top 10 id, dt\nfrom src {W}", "TOP", 0),
        ("select top 10 id, dt from src {W} order by id", "", 0),
        // The subquery's own ORDER BY orders its LIMIT; an outer one does not.
        (
            "select id, dt from (select id, dt from src {W}\n order by dt, id limit 10) s",
            "",
            0,
        ),
        (
            "select id, dt from (select id, dt from src {W}\nlimit 10) s\norder by id",
            "LIMIT",
            1,
        ),
        (
            "with last as (select id, dt from src {W}\nlimit 10)\nselect id, dt from last",
            "LIMIT",
            1,
        ),
        (
            "select id, dt,\n (select rate from fx where fx.d <= src.dt\n limit 1) as rate\nfrom src {W}",
            "LIMIT",
            2,
        ),
        (
            "select id, dt,\n (select rate from fx where fx.d <= src.dt order by fx.d desc limit 1) as rate\nfrom src {W}",
            "",
            0,
        ),
        (
            "select id, dt from src {W}\nand exists (select 1 from orders o where o.id = src.id limit 1)",
            "",
            0,
        ),
        // Words and windows that only look alike.
        (
            "select id, dt, 'limit 10' as note, \"limit\" from src {W}",
            "",
            0,
        ),
        (
            "select id, dt, sum(v) over (order by id) as running from src {W}",
            "",
            0,
        ),
    ];
    for (sql, clause, line) in flagged {
        let sql = sql.replace("{W}", "where dt >= :start and dt < :end");
        let found: Vec<Finding> = replace(&sql)
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .collect();
        if clause.is_empty() {
            assert_eq!(found, vec![], "{sql}");
            continue;
        }
        let [f] = found.as_slice() else {
            panic!("{sql}: {found:#?}");
        };
        assert_eq!(f.line, SQL_LINE + line, "{sql}: {f:?}");
        assert!(
            f.message
                .starts_with(&format!("{clause} without ORDER BY keeps whichever rows")),
            "{sql}: {}",
            f.message
        );
        assert!(f.fix.contains("ORDER BY"), "{}", f.fix);
    }
    // No dialect parses these (three words in a row): their tokens are read.
    let unparsed = |tail: &str| {
        merge(&format!(
            "select id, frobnicate frobnicate frobnicate from src where _loaded_at >= :start and _loaded_at < :end {tail}"
        ))
        .into_iter()
        .filter(|f| f.message.contains("without ORDER BY"))
        .map(|f| f.message)
        .collect::<Vec<_>>()
    };
    assert_eq!(unparsed("limit 5").len(), 1);
    assert!(unparsed("order by id limit 5").is_empty());
    assert!(unparsed("and id in (select id from x order by id limit 5)").is_empty());
    assert_eq!(
        unparsed("and id in (select id from x limit 5) order by id").len(),
        1
    );
    assert!(unparsed("and exists (select 1 from x limit 1)").is_empty());
}

/// LIMIT (and OFFSET, FETCH FIRST, TOP) over an ORDER BY that may tie
/// keeps whichever of the tied rows the plan reads first: the same pick on
/// every run of `idem verify` (the plan reads the same pages the same way),
/// another once the table's pages change. A warning on the clause's line,
/// naming the ORDER BY: its columns may be unique, which the SQL does not
/// say. One over every column the query selects (by expression, alias,
/// name or place) cannot tie: tied rows are the same rows.
#[test]
fn limit_over_an_order_by_that_may_tie_is_a_warning() {
    let cases = [
        (
            "select id, dt, amount from src {W}\norder by amount desc\nlimit 10",
            Some(("LIMIT over ORDER BY amount DESC, which may tie", 2)),
        ),
        (
            "select id, dt, amount from src {W}\norder by amount desc, id, dt\nlimit 10",
            None,
        ),
        (
            "select id, dt, amount from src {W} order by 3 desc, 1, 2 limit 10",
            None,
        ),
        (
            "select s.id, s.dt, s.amount as total from src s {W}\norder by total, dt, s.id\nlimit 10",
            None,
        ),
        (
            "select * from src {W}\norder by id, dt\nlimit 10",
            Some(("LIMIT over ORDER BY id, dt, which may tie", 2)),
        ),
        (
            "select id, dt from src {W}\norder by dt\nfetch first 10 rows only",
            Some(("FETCH FIRST over ORDER BY dt, which may tie", 2)),
        ),
        (
            "select top 10 id, dt from src {W} order by id",
            Some(("TOP over ORDER BY id, which may tie", 0)),
        ),
        // An as-of lookup: two rates of one day tie.
        (
            "select id, dt,\n (select rate from fx where fx.d <= src.dt order by fx.d desc limit 1) as rate\nfrom src {W}",
            Some(("LIMIT over ORDER BY fx.d DESC, which may tie", 1)),
        ),
        (
            "select id, dt,\n (select rate from fx where fx.d <= src.dt order by fx.d desc, rate limit 1) as rate\nfrom src {W}",
            None,
        ),
    ];
    for (sql, expected) in cases {
        let sql = sql.replace("{W}", "where dt >= :start and dt < :end");
        let found = replace(&sql);
        let Some((message, line)) = expected else {
            assert_eq!(found, vec![], "{sql}");
            continue;
        };
        let [f] = found.as_slice() else {
            panic!("{sql}: {found:#?}");
        };
        assert_eq!(f.severity, Severity::Warning, "{sql}");
        assert_eq!(f.line, SQL_LINE + line, "{sql}: {f:?}");
        assert!(f.message.starts_with(message), "{sql}: {}", f.message);
        assert!(
            f.message.contains("keeps whichever the plan reads first"),
            "{}",
            f.message
        );
        assert!(
            f.fix
                .starts_with("end the ORDER BY with a column no two rows share"),
            "{}",
            f.fix
        );
    }
    // SQL no dialect parses: its tokens do not say whether an ORDER BY
    // may tie, and nothing is said.
    let unparsed = merge(
        "select id, frobnicate frobnicate frobnicate from src where _loaded_at >= :start and _loaded_at < :end order by id limit 5",
    );
    assert!(
        unparsed.iter().all(|f| !f.message.contains("may tie")),
        "{unparsed:#?}"
    );
}

#[test]
fn lookalikes_of_non_deterministic_functions_are_not_findings() {
    for column in [
        "now_ts",
        "t.now",
        "\"now\"",
        "\"current_date\"",
        "'now()' as label",
        "'current_timestamp' as label",
        "'now' as label",
        "random_value",
        "rand_seed",
        "uuid_col",
        "newid_source",
        "sysdate_local",
        "date(created_at) as created_on",
        "unix_timestamp(created_at) as epoch",
        "amount -- now(), random() and uuid() in a comment",
        "/* current_date, getdate() */ amount",
    ] {
        assert_eq!(replace(&with_column(column)), vec![], "{column}");
    }
}

#[test]
fn dialect_quoting_and_strings_are_read_as_their_engines_read_them() {
    // MySQL backticks, PostgreSQL dollar quotes and E'' strings, SQLite
    // brackets: names and strings, never calls.
    let mysql = "select `id`, `now`, now() as t, cast(`created_at` as date) as `dt`\nfrom src where `created_at` >= :start and `created_at` < :end";
    let findings = replace(mysql);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert!(findings[0].message.starts_with("now() reads the clock"));
    for column in [
        "$$now()$$ as label",
        "$tag$ random() $tag$ as label",
        "'it''s now()' as label",
        "[now] as label",
    ] {
        assert_eq!(replace(&with_column(column)), vec![], "{column}");
    }
}

#[test]
fn row_number_keys_are_warnings_but_deduplication_is_not() {
    let findings = replace(&with_column(
        "row_number() over (order by created_at) as order_key",
    ));
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].severity, Severity::Warning);
    assert_eq!(findings[0].line, SQL_LINE + 1);
    assert!(
        findings[0]
            .message
            .contains("row_number() numbers rows (column order_key)")
    );
    assert_eq!(
        findings[0].fix,
        "use a hash of the natural key instead, e.g. md5(order_id || event_type)"
    );
    for f in ["rank", "DENSE_RANK"] {
        let findings = replace(&with_column(&format!(
            "{f}() over (partition by customer_id order by created_at) as seq"
        )));
        assert_eq!(matching(&findings, "numbers rows").len(), 1, "{f}");
    }

    // As the merge key itself, it is an error.
    let findings = merge(
        "select row_number() over (order by email) as id, email\nfrom customers\nwhere _loaded_at >= :start and _loaded_at < :end",
    );
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].severity, Severity::Error);
    assert!(findings[0].message.contains("is the merge key"));

    // Keeping the latest row per key is deduplication, not a key.
    let dedup = format!(
        "select id, amount, dt from (\n  select id, amount, cast(created_at as date) as dt,\n    row_number() over (partition by id order by updated_at desc) as rn\n  from src\n  {WINDOW}\n) latest\nwhere rn = 1"
    );
    assert_eq!(replace(&dedup), vec![]);
    for column in [
        "row_number_col",
        "'row_number() over ()' as label",
        "amount -- row_number() over (order by id)",
    ] {
        assert_eq!(replace(&with_column(column)), vec![], "{column}");
    }
}

#[test]
fn sql_without_window_parameters_is_flagged() {
    let findings =
        replace("select id, amount, cast(created_at as date) as dt\nfrom src\nwhere amount > 0");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].severity, Severity::Error);
    assert_eq!(findings[0].line, SQL_LINE);
    assert!(findings[0].message.contains("never uses :start or :end"));

    // A merge job re-merging its whole source is still idempotent: a warning.
    let findings = merge("select id, email from customers");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].severity, Severity::Warning);

    // Parameters in comments and strings are not parameters.
    let findings = replace(
        "select id, ':start' as label, cast(created_at as date) as dt\nfrom src -- where created_at >= :start\n/* and created_at < :end */",
    );
    assert_eq!(matching(&findings, "never uses :start").len(), 1);

    // :partition names the window too.
    assert_eq!(
        replace("select id, dt from src where cast(dt as text) = :partition"),
        vec![]
    );
}

#[test]
fn unknown_parameters_are_errors() {
    let findings = replace(&format!(
        "select id, cast(created_at as date) as dt\nfrom src\n{WINDOW} and region = :region"
    ));
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].severity, Severity::Error);
    assert_eq!(findings[0].line, SQL_LINE + 2);
    assert!(findings[0].message.contains(":region"));
}

#[test]
fn a_window_on_another_column_than_the_partition_is_a_warning() {
    // The seed's mistake: the partition comes from event_time, the window
    // selects by created_at, so late rows never reach their partition.
    let findings = replace(
        "select id, cast(event_time as date) as dt\nfrom events\nwhere created_at >= :start\n  and created_at < :end",
    );
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let f = &findings[0];
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.line, SQL_LINE + 2);
    assert!(
        f.message.contains("filters on created_at")
            && f.message
                .contains("partition column dt takes its value from event_time"),
        "{}",
        f.message
    );
    assert!(f.fix.contains("event_time >= :start"), "{}", f.fix);

    // The same column, however the partition value is computed: clean.
    for sql in [
        "select id, cast(created_at as date) as dt from src where created_at >= :start and created_at < :end",
        "select id, date_trunc('day', o.created_at)::date as dt from raw.orders o where o.created_at >= :start and o.created_at < :end",
        "select id, dt from src where dt between :start and :end",
        "select id, event_date as dt from src where event_date >= :start and event_date < :end",
        // Through a CTE: the outer dt is the CTE's cast of event_time.
        "with e as (select id, cast(event_time as date) as dt from events where event_time >= :start and event_time < :end) select id, dt from e",
        "select id, dt from (select id, cast(event_time as date) as dt from events) e where e.dt >= :start and e.dt < :end",
    ] {
        assert_eq!(replace(sql), vec![], "{sql}");
    }

    // Merge windows are source windows: any column may bound them.
    assert_eq!(
        merge("select id, email from customers where _loaded_at >= :start and _loaded_at < :end"),
        vec![]
    );
}

#[test]
fn statements_that_swallow_duplicates_are_errors() {
    for (sql, clause) in [
        (
            "insert ignore into t select id, dt from src where dt >= :start and dt < :end",
            "INSERT IGNORE",
        ),
        (
            "INSERT OR IGNORE INTO t SELECT id, dt FROM src WHERE dt >= :start AND dt < :end",
            "INSERT OR IGNORE",
        ),
        (
            "insert into t select id, dt from src where dt >= :start and dt < :end\non conflict (id) do nothing",
            "ON CONFLICT DO NOTHING",
        ),
        (
            "insert into t select id, dt from src where dt >= :start and dt < :end\nON CONFLICT ON CONSTRAINT t_pkey DO NOTHING",
            "ON CONFLICT DO NOTHING",
        ),
    ] {
        let findings = replace(sql);
        let found = matching(&findings, "hides duplicates instead of preventing them");
        assert_eq!(found.len(), 1, "{sql}: {findings:#?}");
        assert_eq!(found[0].severity, Severity::Error);
        assert!(found[0].message.starts_with(clause), "{}", found[0].message);
        let line = if sql.contains('\n') {
            SQL_LINE + 1
        } else {
            SQL_LINE
        };
        assert_eq!(found[0].line, line, "{sql}");
    }
    // An upsert that updates is not one; nor the words in comments, strings
    // or names.
    for sql in [
        "insert into t select id, dt from src where dt >= :start and dt < :end on conflict (id) do update set dt = excluded.dt",
        "select id, 'insert ignore' as a, ignore_flag, dt from src where dt >= :start and dt < :end -- on conflict do nothing",
        "select id, dt /* INSERT OR IGNORE */ from src where dt >= :start and dt < :end",
    ] {
        assert_eq!(
            matching(&replace(sql), "hides duplicates").len(),
            0,
            "{sql}"
        );
    }
}

#[test]
fn sql_that_writes_or_has_several_statements_is_an_error() {
    // The seed's "INSERT without DELETE", and its delete-then-insert outside
    // a transaction: idem writes the target, by the strategy, in one.
    let findings = replace(&format!(
        "insert into t\nselect id, cast(created_at as date) as dt from src {WINDOW}"
    ));
    let not_select = matching(&findings, "is an INSERT statement, not a SELECT");
    assert_eq!(not_select.len(), 1, "{findings:#?}");
    assert_eq!(not_select[0].line, SQL_LINE);
    assert_eq!(findings.len(), 1, "{findings:#?}");

    let findings = replace(&format!(
        "delete from t where dt >= :start and dt < :end;\nselect id, cast(created_at as date) as dt from src {WINDOW};"
    ));
    let several = matching(&findings, "the SQL has 2 statements");
    assert_eq!(several.len(), 1, "{findings:#?}");
    assert_eq!(several[0].line, SQL_LINE + 1);
    assert_eq!(matching(&findings, "is a DELETE statement").len(), 1);

    // One SELECT with a trailing semicolon, a CTE, a UNION: all fine.
    for sql in [
        format!("select id, cast(created_at as date) as dt from src {WINDOW};"),
        format!(
            "with s as (select * from src {WINDOW}) select id, cast(created_at as date) as dt from s"
        ),
        format!(
            "select id, cast(created_at as date) as dt from src {WINDOW}\nunion all\nselect id, cast(created_at as date) as dt from src2 {WINDOW}"
        ),
    ] {
        assert_eq!(replace(&sql), vec![], "{sql}");
    }
}

/// QA: a replace job reading its own target loads nothing: its load
/// deletes the window, then its SELECT reads the emptied window, while the
/// dry run (before the delete) counted the old rows and the shrink guard's
/// `--allow-shrink` then deleted them. An error; a merge deletes nothing.
/// SQL of comments alone passes the config's "is empty" check but is no
/// statement: one error says so, not the window parameters it lacks
/// (QA: lint said only that :start was never used).
#[test]
fn sql_of_comments_alone_is_an_error() {
    for sql in ["-- nothing yet", "/* select 1 */\n-- :start", ";"] {
        for found in [replace(sql), merge(sql)] {
            let [finding] = found.as_slice() else {
                panic!("{sql:?}: {found:#?}");
            };
            assert_eq!(finding.severity, Severity::Error, "{sql:?}");
            assert_eq!(finding.line, SQL_LINE, "{sql:?}");
            assert!(
                finding
                    .message
                    .starts_with("the SQL holds no statement, only comments"),
                "{sql:?}: {}",
                finding.message
            );
        }
    }
}

#[test]
fn a_replace_job_reading_its_own_target_is_an_error() {
    for sql in [
        "select id, dt from t where dt >= :start and dt < :end",
        "select s.id, s.dt from src s\njoin T on T.id = s.id\nwhere s.dt >= :start and s.dt < :end",
        "with old as (select id, dt from main.t where dt >= :start and dt < :end)\nselect id, dt from old",
    ] {
        let found = replace(sql);
        let [f] = found.as_slice() else {
            panic!("{sql}: {found:#?}");
        };
        assert_eq!(f.severity, Severity::Error, "{sql}");
        assert_eq!(f.line, SQL_LINE, "{sql}");
        assert!(
            f.message.contains(
                ", the job's own target: a load deletes the window's rows before its SELECT runs"
            ),
            "{}",
            f.message
        );
        assert!(f.fix.contains("merge_key"), "{}", f.fix);
    }
    // A merge reads its target's rows as they are; a table named like the
    // target in a string, or a CTE of its name, is no read of it.
    assert_eq!(
        merge("select id, dt from t where dt >= :start and dt < :end"),
        vec![]
    );
    for sql in [
        "select id, 't' as dt from src where dt >= :start and dt < :end",
        "with t as (select id, dt from src where dt >= :start and dt < :end)\nselect id, dt from t",
        "select id, dt from t_staging where dt >= :start and dt < :end",
        // Another schema's t (an attached database's): the target t is
        // main's.
        "select id, dt from raw.t where dt >= :start and dt < :end",
    ] {
        assert_eq!(replace(sql), vec![], "{sql}");
    }
}

/// A starter job of `idem init` uncommented as it was written reads
/// `<source>`: said at its line offline too, with what to put there (it
/// passed `--offline`, and the warehouse said only "syntax error at or
/// near <"). In a comment or a string it is no read.
#[test]
fn a_starter_jobs_source_placeholder_is_an_error() {
    for strategy in ["replace_partition", "merge_key"] {
        let found = lint::static_findings(&job(
            strategy,
            "select \"id\", \"dt\"\nfrom <source>   -- the table this job loads from, not t (its target)\nwhere \"dt\" >= :start and \"dt\" < :end",
        ));
        let [f] = matching(&found, "<source>")[..] else {
            panic!("{strategy}: {found:#?}");
        };
        assert_eq!(f.severity, Severity::Error);
        assert_eq!(f.line, SQL_LINE + 1);
        assert!(
            f.message.contains("the placeholder idem init wrote"),
            "{}",
            f.message
        );
        assert!(
            f.fix
                .contains("replace <source> with the table this job loads from (not t"),
            "{}",
            f.fix
        );
    }
    let sql = "select id, '<source>' as dt\nfrom src -- was <source>\nwhere created_at >= :start and created_at < :end";
    assert!(matching(&replace(sql), "<source>").is_empty());
}

/// A unique_key on a replace job does nothing (a replace matches no row by
/// key): a warning at its line, rather than silence that reads as
/// deduplication.
#[test]
fn a_unique_key_on_a_replace_job_is_said_to_do_nothing() {
    let text = "[warehouse]\nurl = \"sqlite://unused.db\"\n\n[[jobs]]\nname = \"j\"\ntarget = \"t\"\nstrategy = \"replace_partition\"\npartition_column = \"dt\"\nunique_key = [\"id\"]\ngrain = \"day\"\nstart = \"2026-01-01\"\nsql = \"select id, dt from src where dt >= :start and dt < :end\"\n";
    let config = config::parse(Path::new("idem.toml"), text, &|_| None).unwrap();
    let found = lint::static_findings(&config.jobs[0]);
    let [f] = found.as_slice() else {
        panic!("{found:#?}");
    };
    assert_eq!((f.severity, f.line), (Severity::Warning, 9));
    assert!(
        f.message
            .starts_with("unique_key (id) is not used by replace_partition"),
        "{}",
        f.message
    );
    assert!(f.fix.contains("merge_key"), "{}", f.fix);
    // A merge uses it.
    assert_eq!(
        merge("select id, dt from src where dt >= :start and dt < :end"),
        vec![]
    );
}

#[test]
fn a_partition_column_missing_from_the_select_is_an_error() {
    let findings = replace(&format!("select id, amount\nfrom src\n{WINDOW}"));
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(findings[0].severity, Severity::Error);
    assert!(
        findings[0]
            .message
            .contains("partition column dt is not among the SELECT's output columns (id, amount)")
    );
    // With `*` or an unnamed expression the warehouse must say; no guess here.
    assert_eq!(replace(&format!("select * from src {WINDOW}")), vec![]);
    assert_eq!(
        replace(&format!(
            "select id, cast(created_at as date) from src {WINDOW}"
        )),
        vec![]
    );
    // A qualified column is named by its last part.
    assert_eq!(
        replace("select s.id, s.dt from src s where s.dt >= :start and s.dt < :end"),
        vec![]
    );

    let findings =
        merge("select email from customers where _loaded_at >= :start and _loaded_at < :end");
    assert_eq!(
        matching(&findings, "unique_key column id is not among").len(),
        1,
        "{findings:#?}"
    );
}

#[test]
fn sql_no_dialect_parses_still_gets_token_checks() {
    // A trailing `frobnicate` is no SQL any dialect knows; tokens still are.
    let sql = "select id, now() as t, row_number() over (order by id) as k,\n  'random()' as label, cast(created_at as date) as dt -- uuid()\nfrom src\nwhere created_at >= :start and created_at < :end frobnicate (";
    let findings = replace(sql);
    let now = matching(&findings, "now() reads the clock");
    assert_eq!(now.len(), 1, "{findings:#?}");
    assert_eq!(now[0].line, SQL_LINE);
    assert_eq!(matching(&findings, "row_number() numbers rows").len(), 1);
    assert_eq!(findings.len(), 2, "{findings:#?}");

    let findings =
        replace("select id, dt from src where dt >= :start and dt < :end\nand ' unterminated");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert!(findings[0].message.contains("cannot read this SQL"));
}

/// The seed article's MERGE example, verbatim: `current_timestamp as
/// updated_at` makes every run write a new value.
const SEED_MERGE: &str = "MERGE INTO analytics.dim_customers t
USING (
    select
        customer_id,
        email,
        country,
        signup_date,
        current_timestamp as updated_at
    from raw.customers
    where _loaded_at > '2026-06-03'
) s
ON t.customer_id = s.customer_id
WHEN MATCHED THEN UPDATE SET
    email = s.email,
    country = s.country,
    updated_at = s.updated_at
WHEN NOT MATCHED THEN INSERT (customer_id, email, country, signup_date, updated_at)
    VALUES (s.customer_id, s.email, s.country, s.signup_date, s.updated_at);";

#[test]
fn the_seed_merge_example_is_flagged() {
    // As idem would run it: the USING query is the job's SQL.
    let using = "select\n    customer_id,\n    email,\n    country,\n    signup_date,\n    current_timestamp as updated_at\nfrom raw.customers\nwhere _loaded_at > '2026-06-03'";
    for sql in [using, SEED_MERGE] {
        let findings = merge(sql);
        let clock = matching(&findings, "current_timestamp reads the clock");
        assert_eq!(clock.len(), 1, "{findings:#?}");
        assert_eq!(clock[0].severity, Severity::Error);
        let offset = if sql == using { 5 } else { 7 };
        assert_eq!(clock[0].line, SQL_LINE + offset);
    }
    // Its literal watermark is the other mistake lint reports there.
    assert_eq!(
        matching(&merge(using), "never uses :start or :end").len(),
        1
    );
}

#[test]
fn the_seed_replace_example_as_an_idem_job_is_clean() {
    // The seed selects one day with a literal: `where date_trunc('day',
    // created_at)::date = date '2026-06-04'`. idem binds that day's window
    // instead, on the same column the partition is computed from; written
    // that way the example is exactly what lint must accept.
    let idem_form = "select\n    order_id,\n    customer_id,\n    amount_usd,\n    date_trunc('day', created_at)::date as dt\nfrom raw.orders\nwhere created_at >= :start and created_at < :end";
    assert_eq!(replace(idem_form), vec![]);
    // The seed's literal form is fine SQL but not an idem job: only the
    // missing window parameters are reported, nothing else.
    let seed_form = "select\n    order_id,\n    customer_id,\n    amount_usd,\n    date_trunc('day', created_at)::date as dt\nfrom raw.orders\nwhere date_trunc('day', created_at)::date = date '2026-06-04'";
    let findings = replace(seed_form);
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert!(findings[0].message.contains("never uses :start or :end"));
}

// ---- checks that need the warehouse, on every engine ----

const WAREHOUSE_JOBS: &str = r#"
[[jobs]]
name = "merge_no_index"
target = "dim_plain"
strategy = "merge_key"
unique_key = ["id"]
grain = "day"
start = "2026-01-01"
sql = "select id, v from src where dt >= :start and dt < :end"

[[jobs]]
name = "merge_pk"
target = "dim_pk"
strategy = "merge_key"
unique_key = ["id"]
grain = "day"
start = "2026-01-01"
sql = "select id, v from src where dt >= :start and dt < :end"

[[jobs]]
name = "merge_unique_pair"
target = "dim_pair"
strategy = "merge_key"
unique_key = ["b", "a"]
grain = "day"
start = "2026-01-01"
sql = "select id as a, v as b from src where dt >= :start and dt < :end"

[[jobs]]
name = "merge_unique_constraint"
target = "dim_uq"
strategy = "merge_key"
unique_key = ["a"]
grain = "day"
start = "2026-01-01"
sql = "select id as a, v as b from src where dt >= :start and dt < :end"

[[jobs]]
name = "merge_composite_pk"
target = "dim_cpk"
strategy = "merge_key"
unique_key = ["a", "b"]
grain = "day"
start = "2026-01-01"
sql = "select id as a, v as b from src where dt >= :start and dt < :end"

[[jobs]]
name = "merge_wider_key"
target = "dim_pk"
strategy = "merge_key"
unique_key = ["id", "v"]
grain = "day"
start = "2026-01-01"
sql = "select id, v from src where dt >= :start and dt < :end"

[[jobs]]
name = "replace_ok"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, v, dt from src where dt >= :start and dt < :end"

[[jobs]]
name = "renamed"
target = "fct_renamed"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, v, dt from src where dt >= :start and dt < :end"

[[jobs]]
name = "nulls"
target = "fct_nulls"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, v, dt from src where dt >= :start and dt < :end"

[[jobs]]
name = "star_ok"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select * from src where dt >= :start and dt < :end"

[[jobs]]
name = "star_without_dt"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select * from src_undated where day_of >= :start and day_of < :end"

[[jobs]]
name = "broken_sql"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select * from no_such_source where dt >= :start and dt < :end"

[[jobs]]
name = "named_from_no_source"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, v, dt from no_such_source where dt >= :start and dt < :end"

[[jobs]]
name = "named_no_such_column"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, no_such_column as v, dt from src where dt >= :start and dt < :end"

[[jobs]]
name = "named_extra_column"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, v, dt, 1 as extra_col from src where dt >= :start and dt < :end"

[[jobs]]
name = "no_target"
target = "nowhere"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, v, dt from src where dt >= :start and dt < :end"
"#;

async fn warehouse_checks(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config(WAREHOUSE_JOBS);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, v INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE src_undated (id INTEGER NOT NULL, v INTEGER NOT NULL, day_of DATE NOT NULL)",
        "CREATE TABLE dim_plain (id INTEGER NOT NULL, v INTEGER)",
        "CREATE INDEX dim_plain_id ON dim_plain (id)",
        "CREATE TABLE dim_pk (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)",
        "CREATE TABLE dim_pair (a INTEGER NOT NULL, b INTEGER NOT NULL, c INTEGER)",
        "CREATE UNIQUE INDEX dim_pair_ab ON dim_pair (a, b)",
        "CREATE TABLE dim_uq (a INTEGER NOT NULL, b INTEGER, UNIQUE (a))",
        "CREATE TABLE dim_cpk (a INTEGER NOT NULL, b INTEGER NOT NULL, c INTEGER, PRIMARY KEY (a, b))",
        "CREATE TABLE fct (id INTEGER NOT NULL, v INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct_renamed (id INTEGER NOT NULL, v INTEGER NOT NULL, event_date DATE)",
        "CREATE TABLE fct_nulls (id INTEGER NOT NULL, v INTEGER NOT NULL, dt DATE, event_date DATE)",
        "INSERT INTO fct_nulls (id, v, dt, event_date) VALUES (1, 1, '2026-01-01', NULL), (2, 2, NULL, '2026-01-01'), (3, 3, NULL, '2026-01-02')",
    ])
    .await
    .expect("fixture");

    let mut by_job = std::collections::HashMap::new();
    for job in &config.jobs {
        assert_eq!(
            lint::static_findings(job),
            vec![],
            "{} is clean as SQL",
            job.name
        );
        let found = lint::warehouse_findings(&wh, job)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", job.name));
        by_job.insert(job.name.clone(), found);
    }
    let only = |name: &str, severity: Severity, needle: &str| {
        let found = &by_job[name];
        assert_eq!(found.len(), 1, "{kind:?} {name}: {found:#?}");
        assert_eq!(found[0].severity, severity, "{kind:?} {name}");
        // Each finding is on the line of the field it is about: the
        // target, the partition column, the key, or else the SQL.
        let job = config.jobs.iter().find(|j| j.name == name).expect("job");
        let line = if needle.starts_with("target table") {
            job.lines.target
        } else if needle.starts_with("partition column") && needle.contains("SELECT") {
            job.sql_line
        } else if needle.contains("partition column") {
            job.lines.partition_column
        } else if needle.contains("unique index") {
            job.lines.unique_key
        } else {
            job.sql_line
        };
        assert_eq!(found[0].line, line, "{kind:?} {name}: {:?}", found[0]);
        assert!(
            [
                job.lines.target,
                job.lines.partition_column,
                job.lines.unique_key
            ]
            .iter()
            .all(|l| *l != job.sql_line),
            "{name}: the fields' lines differ from the SQL's"
        );
        assert!(
            found[0].message.contains(needle),
            "{kind:?} {name}: {}",
            found[0].message
        );
    };
    only(
        "merge_no_index",
        Severity::Error,
        "no primary key or unique index on (id) in dim_plain",
    );
    assert_eq!(by_job["merge_pk"], vec![], "{kind:?}");
    assert_eq!(by_job["merge_unique_pair"], vec![], "{kind:?}");
    assert_eq!(by_job["merge_unique_constraint"], vec![], "{kind:?}");
    assert_eq!(by_job["merge_composite_pk"], vec![], "{kind:?}");
    only(
        "merge_wider_key",
        Severity::Error,
        "no primary key or unique index on (id, v)",
    );
    assert_eq!(by_job["replace_ok"], vec![], "{kind:?}");
    only(
        "renamed",
        Severity::Error,
        "partition column dt is not a column of fct_renamed",
    );
    only(
        "nulls",
        Severity::Warning,
        "2 rows of fct_nulls have NULL in partition column dt",
    );
    assert_eq!(by_job["star_ok"], vec![], "{kind:?}");
    only(
        "star_without_dt",
        Severity::Error,
        "partition column dt is not among the SELECT's output columns (id, v, day_of)",
    );
    only(
        "no_target",
        Severity::Error,
        "target table nowhere does not exist",
    );
    // An output the target has no column for fails every load: lint says
    // so first.
    only(
        "named_extra_column",
        Severity::Error,
        "the job's SELECT returns extra_col, which is not a column of fct",
    );
    // A source table or column that is not there is found by lint, whether
    // or not the SQL's text names every output: not first by a run.
    for name in ["broken_sql", "named_from_no_source", "named_no_such_column"] {
        only(
            name,
            Severity::Error,
            "the warehouse rejects the job's SELECT",
        );
    }
    wh.close().await;
}

const TYPED_JOBS: &str = r#"
[[jobs]]
name = "int_partition"
target = "fct_int"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, dt from fct_int where id >= :start and id < :end"

[[jobs]]
name = "text_partition"
target = "fct_text"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, dt from fct_text where dt >= :start and dt < :end"

[[jobs]]
name = "timestamp_partition"
target = "fct_ts"
strategy = "replace_partition"
partition_column = "dt"
grain = "hour"
start = "2026-01-01T00"
sql = "select id, dt from fct_ts where dt >= :start and dt < :end"

[[jobs]]
name = "merge_int_partition"
target = "dim_int"
strategy = "merge_key"
unique_key = ["id"]
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = "select id, dt from dim_int where id >= :start and id < :end"
"#;

/// A partition column the window cannot be compared with is a lint error
/// naming its type, not a run-time "operator does not exist".
async fn partition_column_types(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let (_, config) = db.config(TYPED_JOBS);
    let wh = db.warehouse(&config).await;
    let timestamp = if kind == Kind::MySql {
        "DATETIME"
    } else {
        "TIMESTAMP"
    };
    wh.execute_script(&[
        "CREATE TABLE fct_int (id INTEGER NOT NULL, dt INTEGER NOT NULL)",
        "CREATE TABLE fct_text (id INTEGER NOT NULL, dt VARCHAR(10) NOT NULL)",
        &format!("CREATE TABLE fct_ts (id INTEGER NOT NULL, dt {timestamp} NOT NULL)"),
        "CREATE TABLE dim_int (id INTEGER PRIMARY KEY, dt BIGINT)",
    ])
    .await
    .expect("fixture");
    let mut by_job = std::collections::HashMap::new();
    for job in &config.jobs {
        let found = lint::warehouse_findings(&wh, job)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", job.name));
        by_job.insert(job.name.as_str(), found);
    }
    let type_error = |name: &str, type_word: &str| {
        let found = &by_job[name];
        let f = found
            .iter()
            .find(|f| f.message.contains("not a date or timestamp"))
            .unwrap_or_else(|| panic!("{kind:?} {name}: {found:#?}"));
        assert_eq!(f.severity, Severity::Error, "{kind:?} {name}");
        assert!(
            f.message.to_lowercase().contains(type_word),
            "{kind:?} {name} names the type: {}",
            f.message
        );
        assert!(
            f.message.contains("partition column dt of"),
            "{}",
            f.message
        );
    };
    type_error("int_partition", "int");
    type_error("merge_int_partition", "bigint");
    if kind == Kind::Sqlite {
        // SQLite has no date type: ISO text is how it stores dates.
        assert_eq!(by_job["text_partition"], vec![], "{kind:?}");
    } else {
        type_error("text_partition", "char");
    }
    assert_eq!(by_job["timestamp_partition"], vec![], "{kind:?}");

    // And the binary says so, with exit 1.
    let (code, stdout, _) = idem(&db.path().join("idem.toml"), &["int_partition"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("not a date or timestamp"), "{stdout}");
    wh.close().await;
}

/// QA: comments read as each server reads them. PostgreSQL nests block
/// comments, so `/* /* */ :x */` is all comment (idem took `:x` for an
/// unknown parameter); MariaDB reads `0--1` as arithmetic, so the `:start`
/// after it is code (idem took the rest of the line for a comment and sent
/// `:start` unbound). Lint is clean and the job loads its rows.
async fn comments_are_read_as_the_server_reads_them(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let sql = match kind {
        Kind::Postgres => {
            "select id, dt from src /* a /* nested */ comment, :x */ where dt >= :start and dt < :end"
        }
        Kind::MySql => "select id, dt from src where 0--1 and dt >= :start and dt < :end",
        Kind::Sqlite => "select id, dt from src /* :x */ where dt >= :start and dt < :end -- :y",
    };
    let jobs = common::replace_job("commented", "fct", "2026-01-02", sql);
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02'), (3, '2026-01-05')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .expect("fixture");
    let job = &parsed.jobs[0];
    assert_eq!(
        lint::static_findings_as(job, wh.syntax(), wh.table_names()),
        vec![],
        "{kind:?}"
    );
    let (code, stdout, stderr) = idem_command(&config, &["run", "commented"]);
    assert_eq!(code, 0, "{kind:?}: {stdout}{stderr}");
    let mut sql = wh.sql();
    sql.push("SELECT COUNT(*) FROM fct");
    let loaded: i64 =
        sqlx::Row::try_get(&sql.query().fetch_one(wh.pool()).await.expect("count"), 0)
            .expect("count");
    assert_eq!(loaded, 2, "{kind:?}");
    wh.close().await;
}

/// QA: a target column that the table numbers (serial, identity,
/// AUTO_INCREMENT, SQLite's rowid) or fills with a DEFAULT that reads the
/// clock or a random source, left out of a replace job's SELECT, takes new
/// values on every load: verify proves it, and lint names each such column
/// with its fix. A deterministic default, a column the job writes, and a
/// merge (which leaves a kept row's other columns alone) are no finding.
async fn columns_the_table_fills_anew(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let window = "from src where dt >= :start and dt < :end";
    let jobs = [
        common::replace_job(
            "numbered",
            "fct",
            "2026-01-02",
            &format!("select n, dt, written_at {window}"),
        ),
        common::replace_job(
            "random",
            "fct_random",
            "2026-01-02",
            &format!("select id, n, dt {window}"),
        ),
        common::merge_job(
            "merged",
            "fct",
            "2026-01-02",
            &format!("select n, dt, written_at {window}"),
        ),
    ]
    .concat()
    .replace("unique_key = [\"id\"]", "unique_key = [\"n\"]");
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    let (fct, fct_random, random) = match kind {
        Kind::Postgres => (
            "CREATE TABLE fct (id SERIAL, n INTEGER NOT NULL UNIQUE, dt DATE NOT NULL, loaded_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP(6), status TEXT DEFAULT 'new', written_at TIMESTAMP DEFAULT now())",
            "CREATE TABLE fct_random (id INTEGER NOT NULL, n INTEGER NOT NULL, dt DATE NOT NULL, seq BIGINT GENERATED BY DEFAULT AS IDENTITY, u UUID DEFAULT gen_random_uuid(), half INTEGER GENERATED ALWAYS AS (n / 2) STORED)",
            ["seq", "u"].as_slice(),
        ),
        Kind::MySql => (
            "CREATE TABLE fct (id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, n INTEGER NOT NULL UNIQUE, dt DATE NOT NULL, loaded_at DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6), status VARCHAR(10) DEFAULT 'new', written_at DATETIME DEFAULT now())",
            "CREATE TABLE fct_random (id INTEGER NOT NULL, n INTEGER NOT NULL, dt DATE NOT NULL, u CHAR(36) DEFAULT (uuid()), half INTEGER AS (n DIV 2) STORED)",
            ["u"].as_slice(),
        ),
        // Without AUTOINCREMENT, SQLite numbers past the highest rowid
        // left: a re-run moves the window's numbers once a later
        // partition's rows were loaded after them; with it, every time.
        Kind::Sqlite => (
            "CREATE TABLE fct (id INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER NOT NULL UNIQUE, dt DATE NOT NULL, loaded_at TEXT DEFAULT CURRENT_TIMESTAMP, status TEXT DEFAULT 'new', written_at TEXT DEFAULT (datetime('now')))",
            // A composite primary key is no rowid.
            "CREATE TABLE fct_random (id INTEGER NOT NULL, n INTEGER NOT NULL, dt DATE NOT NULL, u TEXT DEFAULT (random()), half INTEGER AS (n / 2), PRIMARY KEY (id, n))",
            ["u"].as_slice(),
        ),
    };
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, n INTEGER NOT NULL, dt DATE NOT NULL, written_at DATE NOT NULL)",
        "INSERT INTO src VALUES (1, 1, '2026-01-01', '2026-01-01'), (2, 2, '2026-01-01', '2026-01-01')",
        fct,
        fct_random,
        // A later day's row: a re-run of 2026-01-01 numbers its rows past it.
        "INSERT INTO fct (n, dt) VALUES (9, '2026-01-05')",
    ])
    .await
    .expect("fixture");
    let job = |name: &str| config.jobs.iter().find(|j| j.name == name).expect("job");
    let day = idem::partition::Partition::parse(
        idem::partition::Grain::Day,
        "2026-01-01",
        idem::partition::RangeEnd::From,
    )
    .expect("day");
    let verified = wh
        .verify_partition(job("numbered"), &day, &Default::default())
        .await
        .expect("verify");
    assert!(!verified.is_idempotent(), "{kind:?}: {verified:?}");

    let filled = async |name: &str| {
        let job = job(name);
        let found = lint::warehouse_findings(&wh, job).await.expect("lint");
        assert!(
            found
                .iter()
                .all(|f| f.severity == Severity::Error && f.line == job.sql_line),
            "{kind:?} {name}: {found:#?}"
        );
        found
    };
    let found = filled("numbered").await;
    let [id, loaded_at] = found.as_slice() else {
        panic!("{kind:?}: {found:#?}");
    };
    let numbered = match kind {
        Kind::Postgres => "defaults to nextval(…), which takes new numbers from a sequence",
        Kind::MySql => "is AUTO_INCREMENT, which numbers every row inserted",
        Kind::Sqlite => "is its rowid (INTEGER PRIMARY KEY), which numbers every row inserted",
    };
    assert!(
        id.message.starts_with(&format!(
            "column id of fct {numbered}, and the job's SELECT leaves id out"
        )),
        "{kind:?}: {}",
        id.message
    );
    assert!(
        id.fix.starts_with("select id in the job's SQL"),
        "{}",
        id.fix
    );
    assert!(
        loaded_at
            .message
            .starts_with("column loaded_at of fct defaults to current_timestamp")
            && loaded_at.message.contains("which reads the clock"),
        "{kind:?}: {}",
        loaded_at.message
    );
    assert!(
        loaded_at.fix.ends_with("or drop its default from fct"),
        "{}",
        loaded_at.fix
    );

    let found = filled("random").await;
    let named: Vec<&str> = found
        .iter()
        .filter_map(|f| f.message.strip_prefix("column "))
        .filter_map(|m| m.split(' ').next())
        .collect();
    assert_eq!(named, random, "{kind:?}: {found:#?}");

    assert_eq!(filled("merged").await, vec![], "{kind:?}");
    wh.close().await;
}

/// A SELECT column with a non-ASCII name (`montö`) that the target has is
/// one of the target's columns: lint says only that a run refuses such a
/// column, not also that the SELECT returns a column the target lacks, and
/// a column the target does lack is told among all of its columns.
async fn a_column_named_beyond_ascii_is_the_targets(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let window = "from ventas_src where dt >= :start and dt < :end";
    let jobs = common::replace_job(
        "ventas",
        "ventas",
        "2026-01-02",
        &format!("select id, dt, montö {window}"),
    ) + &common::replace_job(
        "extra",
        "ventas",
        "2026-01-02",
        &format!("select id, dt, montö, 1 as extra {window}"),
    );
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE ventas_src (id INTEGER NOT NULL, dt DATE NOT NULL, montö INTEGER)",
        "CREATE TABLE ventas (id INTEGER NOT NULL, dt DATE NOT NULL, montö INTEGER)",
    ])
    .await
    .expect("fixture");
    let messages = |found: Vec<Finding>| -> Vec<String> {
        found
            .into_iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.message)
            .collect()
    };
    let found = messages(
        lint::warehouse_findings(&wh, &config.jobs[0])
            .await
            .unwrap(),
    );
    assert_eq!(found.len(), 1, "{kind:?}: {found:#?}");
    assert!(
        found[0].starts_with("column \"montö\" of ventas is not a plain identifier"),
        "{kind:?}: {found:#?}"
    );
    let found = messages(
        lint::warehouse_findings(&wh, &config.jobs[1])
            .await
            .unwrap(),
    );
    assert_eq!(found.len(), 2, "{kind:?}: {found:#?}");
    assert!(
        found[1].starts_with(
            "the job's SELECT returns extra, which is not a column of ventas (its columns: id, dt, montö)"
        ),
        "{kind:?}: {found:#?}"
    );
    wh.close().await;
}

/// A SELECT that writes a column the target computes (a generated column;
/// on PostgreSQL also an identity `GENERATED ALWAYS`) fails every load at
/// its first partition with the server's refusal: lint says so first, as
/// an error naming the column, at the job's SQL, and says nothing else of
/// it (SQLite lists no generated column among a table's columns, which
/// must not read as a column the target lacks). A SELECT that leaves it
/// out is clean.
async fn a_select_writing_a_computed_column_is_an_error(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let window = "from gen_src where dt >= :start and dt < :end";
    let jobs = [
        common::replace_job(
            "writes_half",
            "gen_fct",
            "2026-01-02",
            &format!("select id, dt, n, n / 2 as half {window}"),
        ),
        common::replace_job(
            "leaves_half",
            "gen_fct",
            "2026-01-02",
            &format!("select id, dt, n {window}"),
        ),
        common::replace_job(
            "writes_seq",
            "gen_identity",
            "2026-01-02",
            &format!("select id as seq, dt {window}"),
        ),
    ]
    .concat();
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    let (generated, identity) = match kind {
        Kind::Postgres => (
            "CREATE TABLE gen_fct (id INTEGER NOT NULL, dt DATE NOT NULL, n INTEGER, half INTEGER GENERATED ALWAYS AS (n / 2) STORED)",
            "CREATE TABLE gen_identity (seq BIGINT GENERATED ALWAYS AS IDENTITY, dt DATE NOT NULL)",
        ),
        Kind::MySql => (
            "CREATE TABLE gen_fct (id INTEGER NOT NULL, dt DATE NOT NULL, n INTEGER, half INTEGER AS (n DIV 2) VIRTUAL)",
            "CREATE TABLE gen_identity (seq BIGINT AS (1) STORED, dt DATE NOT NULL)",
        ),
        Kind::Sqlite => (
            "CREATE TABLE gen_fct (id INTEGER NOT NULL, dt DATE NOT NULL, n INTEGER, half INTEGER AS (n / 2))",
            "CREATE TABLE gen_identity (seq INTEGER AS (1) STORED, dt DATE NOT NULL)",
        ),
    };
    wh.execute_script(&[
        "CREATE TABLE gen_src (id INTEGER NOT NULL, dt DATE NOT NULL, n INTEGER)",
        "INSERT INTO gen_src VALUES (1, '2026-01-01', 4)",
        generated,
        identity,
    ])
    .await
    .expect("fixture");
    let job = |name: &str| config.jobs.iter().find(|j| j.name == name).expect("job");

    let found = lint::warehouse_findings(&wh, job("writes_half"))
        .await
        .expect("lint");
    let [finding] = found.as_slice() else {
        panic!("{kind:?}: {found:#?}");
    };
    assert_eq!(finding.severity, Severity::Error, "{kind:?}");
    assert_eq!(finding.line, job("writes_half").sql_line, "{kind:?}");
    assert!(
        finding.message.starts_with(
            "the job's SELECT writes half, a generated column of gen_fct: the table computes it"
        ),
        "{kind:?}: {}",
        finding.message
    );
    assert!(
        finding.fix.starts_with("drop half from the job's SELECT"),
        "{}",
        finding.fix
    );
    // What lint says is what a run meets: the server refuses the load.
    let day = idem::partition::Partition::parse(
        idem::partition::Grain::Day,
        "2026-01-01",
        idem::partition::RangeEnd::From,
    )
    .expect("day");
    let verified = wh
        .verify_partition(job("writes_half"), &day, &Default::default())
        .await;
    assert!(verified.is_err(), "{kind:?}: {verified:?}");

    let found = lint::warehouse_findings(&wh, job("leaves_half"))
        .await
        .expect("lint");
    assert_eq!(found, vec![], "{kind:?}");

    let found = lint::warehouse_findings(&wh, job("writes_seq"))
        .await
        .expect("lint");
    let what = match kind {
        Kind::Postgres => "an identity GENERATED ALWAYS column",
        _ => "a generated column",
    };
    assert!(
        found.iter().any(|f| f.severity == Severity::Error
            && f.message.starts_with(&format!(
                "the job's SELECT writes seq, {what} of gen_identity"
            ))),
        "{kind:?}: {found:#?}"
    );
    wh.close().await;
}

/// `idem jobs`' LINT column is `idem lint`'s word on each job, the
/// warehouse's checks with the SQL's: a target that is not there is an
/// error in both, not `ok` in one.
async fn the_jobs_listing_badge_agrees_with_lint(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let jobs = [
        common::replace_job(
            "clean",
            "fct",
            "2026-01-03",
            "select id, dt from src where dt >= :start and dt < :end",
        ),
        common::replace_job(
            "no_target",
            "nowhere",
            "2026-01-03",
            "select id, dt from src where dt >= :start and dt < :end",
        ),
        common::merge_job(
            "no_key_index",
            "dim",
            "2026-01-03",
            "select id, v from src_dim where dt >= :start and dt < :end",
        ),
    ]
    .concat();
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE src_dim (id INTEGER NOT NULL, v INTEGER, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE dim (id INTEGER NOT NULL, v INTEGER)",
    ])
    .await
    .expect("fixture");
    wh.close().await;

    let (code, stdout, stderr) = idem(&path, &["--format", "json"]);
    assert_eq!(code, 1, "{kind:?}: {stdout}{stderr}");
    let found: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("lint JSON");
    let errors = |job: &str| {
        found
            .iter()
            .filter(|f| f["job"] == job && f["severity"] == "error")
            .count()
    };
    assert_eq!(errors("clean"), 0, "{kind:?}: {stdout}");
    assert_eq!(errors("no_target"), 1, "{kind:?}: {stdout}");
    assert_eq!(errors("no_key_index"), 1, "{kind:?}: {stdout}");

    let (_, listing, stderr) = idem_command(&path, &["jobs"]);
    let badge = |job: &str| {
        let line = listing
            .lines()
            .find(|l| l.starts_with(&format!("{job} ")))
            .unwrap_or_else(|| panic!("{kind:?}: no {job} in {listing}{stderr}"));
        // JOB, STRATEGY, GRAIN, TARGET, then the badge (one or two words).
        line.split_whitespace()
            .skip(4)
            .take(2)
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(badge("clean").starts_with("ok"), "{kind:?}: {listing}");
    assert_eq!(badge("no_target"), "1 error", "{kind:?}: {listing}");
    assert_eq!(badge("no_key_index"), "1 error", "{kind:?}: {listing}");

    // The console's jobs pane says the same once the warehouse's lint
    // answers (it showed the SQL text's findings alone: no badge at all).
    let mut app = idem::tui::new_app(
        config.clone(),
        &idem::tui::Options::default(),
        idem::partition::now_utc(),
    );
    let errors = |app: &idem::tui::App, job: &str| {
        let j = app.jobs.by_name(job).expect("the job");
        j.lint().iter().filter(|n| n.error).count()
    };
    assert_eq!(errors(&app, "no_target"), 0, "before the warehouse answers");
    let wh = db.warehouse(&config).await;
    let said = std::sync::Mutex::new(Vec::new());
    idem::tui::lint_jobs(&wh, &config.jobs, |m| said.lock().expect("lock").push(m)).await;
    wh.close().await;
    for m in said.into_inner().expect("lock") {
        app.update(m);
    }
    assert_eq!(errors(&app, "clean"), 0, "{kind:?}");
    assert_eq!(errors(&app, "no_target"), 1, "{kind:?}");
    assert_eq!(errors(&app, "no_key_index"), 1, "{kind:?}");
}

on_every_engine!(
    the_jobs_listing_badge_agrees_with_lint,
    a_select_writing_a_computed_column_is_an_error,
    a_column_named_beyond_ascii_is_the_targets,
    columns_the_table_fills_anew,
    warehouse_checks,
    partition_column_types,
    comments_are_read_as_the_server_reads_them
);

// ---- the binary ----

fn idem(config: &Path, args: &[&str]) -> (i32, String, String) {
    let mut lint = vec!["lint"];
    lint.extend_from_slice(args);
    idem_command(config, &lint)
}

/// `idem --config CONFIG ARGS…`: its exit code, stdout and stderr.
fn idem_command(config: &Path, args: &[&str]) -> (i32, String, String) {
    let out = crate::common::idem_command()
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .expect("run idem");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const CLI_JOBS: &str = r#"
[[jobs]]
name = "stamped"
target = "fct"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = """
select id,
  now() as loaded_at,
  dt
from src where dt >= :start and dt < :end
"""

[[jobs]]
name = "numbered"
target = "fct_numbered"
strategy = "replace_partition"
partition_column = "dt"
grain = "day"
start = "2026-01-01"
sql = """
select row_number() over (order by id) as id, dt
from src where dt >= :start and dt < :end
"""
"#;

#[tokio::test]
async fn the_binary_exits_1_on_errors_and_0_on_warnings() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let (path, config) = db.config(CLI_JOBS);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, loaded_at TEXT, dt DATE NOT NULL)",
        "CREATE TABLE fct_numbered (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .expect("fixture");
    wh.close().await;
    let stamped = &config.jobs[0];
    let numbered = &config.jobs[1];

    let (code, stdout, stderr) = idem(&path, &[]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let file = path.display().to_string();
    assert!(
        stdout.contains(&format!(
            "{file}:{}: job stamped: error: now() reads the clock: a re-run of the same partition writes different values — fix: pass the run date in: use :start / :end",
            stamped.sql_line + 1
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "{file}:{}: job numbered: warning: row_number() numbers rows (column id)",
            numbered.sql_line
        )),
        "{stdout}"
    );
    // SQLite has no now(): the warehouse rejects the SELECT, and lint says
    // so before a run would.
    assert!(
        stdout.contains(
            "job stamped: error: the warehouse rejects the job's SELECT: no such function: now"
        ),
        "{stdout}"
    );
    assert!(stderr.contains("2 errors, 1 warning in 2 jobs"), "{stderr}");

    let (code, stdout, stderr) = idem(&path, &["numbered"]);
    assert_eq!(code, 0, "warnings alone pass: {stdout}{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");

    let (code, stdout, _) = idem(&path, &["stamped", "--format", "json", "--offline"]);
    assert_eq!(code, 1);
    let rows: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(rows[0]["job"], "stamped");
    assert_eq!(rows[0]["severity"], "error");
    assert_eq!(rows[0]["line"], stamped.sql_line + 1);
    assert_eq!(rows[0]["fix"], "pass the run date in: use :start / :end");

    let (code, _, stderr) = idem(&path, &["nope"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no job named \"nope\""), "{stderr}");

    // Without the warehouse the SQL findings still print, but the run says
    // it is incomplete; --offline asks for the SQL checks alone.
    let unreachable = db.path().join("unreachable.toml");
    let text = std::fs::read_to_string(&path)
        .expect("read")
        .replace(&db.url, "sqlite:///nonexistent-idem-dir/none.db");
    std::fs::write(&unreachable, text).expect("write");
    let (code, stdout, stderr) = idem(&unreachable, &["numbered"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("job numbered: warning"), "{stdout}");
    assert!(stderr.contains("warehouse checks skipped"), "{stderr}");
    let (code, _, stderr) = idem(&unreachable, &["numbered", "--offline"]);
    assert_eq!(code, 0, "{stderr}");

    let bad = db.path().join("bad.toml");
    std::fs::write(&bad, "[warehouse]\nurl = \"sqlite://x.db\"\nbogus = 1\n").expect("write");
    let (code, _, stderr) = idem(&bad, &[]);
    assert_eq!(code, 2, "{stderr}");
}

/// A job whose partition of its target sits beside another job's.
fn job_on(name: &str, target: &str, strategy: &str) -> String {
    let keys = match strategy {
        "merge_key" => "unique_key = [\"id\"]",
        _ => "partition_column = \"dt\"",
    };
    format!(
        "\n[[jobs]]\nname = \"{name}\"\ntarget = \"{target}\"\nstrategy = \"{strategy}\"\n{keys}\ngrain = \"day\"\nstart = \"2026-01-01\"\nsql = \"select id, dt from src where dt >= :start and dt < :end\"\n"
    )
}

/// Two jobs replacing partitions of one target delete each other's rows
/// and see them as unmanaged: an error on the second job's `target` line
/// naming the first. A replace and a merge on one target is a warning.
#[tokio::test]
async fn jobs_sharing_a_target_are_flagged_on_the_second_jobs_target_line() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let jobs = [
        job_on("orders_eu", "analytics.fct_orders", "replace_partition"),
        job_on("orders_us", "analytics.FCT_ORDERS", "replace_partition"),
        job_on("orders_fix", "analytics.fct_orders", "merge_key"),
        job_on("alone", "analytics.fct_other", "replace_partition"),
    ]
    .concat();
    let (path, config) = db.config(&jobs);
    let [eu, us, fix, alone] = &config.jobs[..] else {
        panic!("four jobs");
    };

    let (code, stdout, stderr) = idem(&path, &["--offline"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    let file = path.display().to_string();
    assert!(
        stdout.contains(&format!(
            "{file}:{}: job orders_us: error: job orders_eu (line {}) also replaces partitions of analytics.FCT_ORDERS: each job's load deletes the other's rows in its windows, and each counts the other's rows as unmanaged — fix: give each target one replace_partition job",
            us.lines.target, eu.lines.target
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "{file}:{}: job orders_fix: warning: job orders_eu (line {}) replaces partitions of analytics.fct_orders, which this job merges into",
            fix.lines.target, eu.lines.target
        )),
        "{stdout}"
    );
    assert_eq!(stdout.matches("job orders_eu:").count(), 0, "{stdout}");
    assert!(
        !stdout.contains(&format!("{file}:{}:", alone.lines.target)),
        "{stdout}"
    );
    assert!(stderr.contains("1 error, 1 warning in 4 jobs"), "{stderr}");

    // Linting the second job alone still names the first.
    let (code, stdout, _) = idem(&path, &["orders_us", "--offline", "--format", "json"]);
    assert_eq!(code, 1, "{stdout}");
    let rows: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(rows[0]["job"], "orders_us");
    assert_eq!(rows[0]["severity"], "error");
    assert_eq!(rows[0]["line"], us.lines.target);

    // A merge written first, then a replace: the replace's line warns.
    let (path, config) = db.config(
        &[
            job_on("merged", "fct", "merge_key"),
            job_on("replaced", "fct", "replace_partition"),
        ]
        .concat(),
    );
    let (code, stdout, stderr) = idem(&path, &["--offline"]);
    assert_eq!(code, 0, "warnings alone pass: {stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            ":{}: job replaced: warning: job merged (line {}) merges into fct, whose partitions this job replaces",
            config.jobs[1].lines.target, config.jobs[0].lines.target
        )),
        "{stdout}"
    );
}

/// SQLite holds timestamps as text and binds an hour's bounds as
/// `2026-01-01 05:00:00`; a target value written with a `T`
/// (`2026-01-01T05:30:00`) sorts after every bound of its day, so no
/// hour's DELETE matches it and a load adds the hour's rows beside it.
/// lint names such values as an error; once rewritten as SQLite's
/// `datetime()` writes them, the load replaces the hour and lint is clean.
#[tokio::test]
async fn sqlite_hours_written_with_a_t_are_an_error_and_would_load_twice() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let jobs = r#"
[[jobs]]
name = "hourly"
target = "fct"
strategy = "replace_partition"
partition_column = "ts"
grain = "hour"
start = "2026-01-01T05"
end = "2026-01-01T05"
sql = "select id, ts from src where ts >= :start and ts < :end"
"#;
    let (path, config) = db.config(jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, ts TEXT NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, ts TEXT NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01 05:30:00')",
        // The same row, loaded earlier by a tool that writes ISO text.
        "INSERT INTO fct VALUES (1, '2026-01-01T05:30:00')",
    ])
    .await
    .expect("fixture");
    let rows = async || -> i64 {
        let mut sql = wh.sql();
        sql.push("SELECT COUNT(*) FROM fct");
        sqlx::Row::get(&sql.query().fetch_one(wh.pool()).await.expect("count"), 0)
    };
    let run = || {
        let out = crate::common::idem_command()
            .arg("--config")
            .arg(&path)
            .args(["run", "hourly"])
            .output()
            .expect("run idem");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };

    // What the finding warns of: the load leaves the old row beside its own.
    run();
    assert_eq!(rows().await, 2, "the hour's DELETE missed the T row");
    let (code, stdout, stderr) = idem(&path, &["hourly"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "error: 1 row of fct holds ts as text like '2026-01-01T05:30:00', which sorts after every hour bound of its day"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("UPDATE fct SET ts = datetime(ts)"),
        "{stdout}"
    );

    // Rewritten as the fix says: clean, and the hour is replaced whole.
    wh.execute_script(&["UPDATE fct SET ts = datetime(ts)"])
        .await
        .expect("rewrite");
    let (code, stdout, stderr) = idem(&path, &["hourly"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    run();
    assert_eq!(rows().await, 1);
    wh.close().await;
}

/// SQLite compares a window's bounds with the column's text. Values in
/// other forms (an offset, minutes without seconds at the hour, a month
/// without its day) sort into another window than their date: lint names
/// each, and `idem status` counts every value in the window a load puts
/// it in, so a load is never followed by "vanished" or "drift".
#[tokio::test]
async fn sqlite_text_forms_are_named_and_counted_where_loads_put_them() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let jobs = r#"
[[jobs]]
name = "hourly"
target = "fct"
strategy = "replace_partition"
partition_column = "ts"
grain = "hour"
start = "2024-03-10T03"
end = "2024-03-10T05"
sql = "select id, ts from src where ts >= :start and ts < :end"

[[jobs]]
name = "monthly"
target = "agg"
strategy = "replace_partition"
partition_column = "month"
grain = "month"
start = "2024-03"
end = "2024-03"
sql = "select strftime('%Y-%m', ts) as month, count(*) as n from src where ts >= :start and ts < :end group by 1"
"#;
    let (path, config) = db.config(jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, ts TEXT NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, ts TEXT NOT NULL)",
        "CREATE TABLE agg (month TEXT NOT NULL, n INTEGER NOT NULL)",
        // Hour 05 as written (UTC 03:30), hour 04, and 05:00 without
        // seconds, which sorts before 05's bound: hour 04 as well.
        "INSERT INTO src VALUES (1, '2024-03-10 05:30:00+02:00'), (2, '2024-03-10 04:10:00'), (3, '2024-03-10 05:00')",
        "INSERT INTO agg VALUES ('2024-02', 9)",
    ])
    .await
    .expect("fixture");
    let cli = |args: &[&str]| idem_command(&path, args);
    let (code, stdout, stderr) = cli(&["run", "hourly"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (_, stdout, _) = cli(&["status", "hourly", "--format", "json"]);
    let status: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("json");
    let text = stdout.clone();
    for p in &status {
        assert!(
            matches!(p["state"].as_str(), Some("loaded" | "empty")),
            "{text}"
        );
        assert_eq!(p["drift"], false, "{text}");
    }
    let rows_of = |name: &str| {
        status
            .iter()
            .find(|p| p["partition"] == name)
            .map(|p| p["rows_now"].clone())
            .unwrap_or_else(|| panic!("no {name}: {text}"))
    };
    assert_eq!(rows_of("2024-03-10T03"), 0, "{text}");
    assert_eq!(rows_of("2024-03-10T04"), 2, "{text}");
    assert_eq!(rows_of("2024-03-10T05"), 1, "{text}");

    let (code, stdout, stderr) = idem(&path, &[]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    for said in [
        "warning: 1 row of fct holds ts as text like '2024-03-10 05:00', which sorts before the bound of the hour it names",
        "warning: 1 row of fct holds ts as text like '2024-03-10 05:30:00+02:00', whose offset a text comparison ignores",
        "error: 1 row of agg holds month as text like '2024-02', which does not begin with a date written as the window bounds are",
    ] {
        assert!(stdout.contains(said), "{said}: {stdout}");
    }
    // The month job's own rows would be written that way: its load says
    // why they fall outside its window.
    let (code, stdout, stderr) = cli(&["run", "monthly"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("SQLite compares them as text"),
        "{stdout}{stderr}"
    );
    wh.close().await;
}

/// QA: a column declared `DATE` (or `TIMESTAMP`) keeps seconds since 1970
/// as numbers, which SQLite sorts before every text bound: no window holds
/// them, so status counted none of them and lint said nothing. Lint names
/// them, and its fix puts every row in its day.
#[tokio::test]
async fn sqlite_epoch_numbers_in_a_date_column_are_named() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let jobs = r#"
[[jobs]]
name = "daily"
target = "fct"
strategy = "replace_partition"
partition_column = "d"
grain = "day"
start = "2026-01-01"
end = "2026-01-03"
sql = "select id, d from src where d >= :start and d < :end"
"#;
    let (path, config) = db.config(jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, d DATE NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, d DATE NOT NULL)",
        // 2026-01-02 00:00 and 2026-01-02 12:00 UTC, and a date as text.
        "INSERT INTO fct VALUES (1, 1767312000), (2, 1767355200.0), (3, '2026-01-01')",
    ])
    .await
    .expect("fixture");
    let rows_in = |name: &str| {
        let (_, stdout, _) = idem_command(&path, &["status", "daily", "--format", "json"]);
        let status: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("json");
        status
            .iter()
            .find(|p| p["partition"] == name)
            .map(|p| p["rows_now"].clone())
            .unwrap_or_else(|| panic!("no {name}: {stdout}"))
    };
    assert_eq!(rows_in("2026-01-02"), 0, "numbers lie in no window");

    let (code, stdout, stderr) = idem(&path, &["daily"]);
    assert_eq!(code, 1, "an error: {stdout}{stderr}");
    assert!(
        stdout.contains("error: 2 rows of fct hold d as a number like 1767312000, where the window bounds are text"),
        "{stdout}"
    );
    let fix = "UPDATE fct SET d = date(d, 'unixepoch') WHERE typeof(d) IN ('integer', 'real')";
    assert!(stdout.contains(fix), "{stdout}");
    assert!(!stdout.contains("as text like"), "one finding: {stdout}");

    wh.execute_script(&[fix]).await.expect("rewrite");
    let (code, stdout, stderr) = idem(&path, &["daily"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(rows_in("2026-01-02"), 2);
    assert_eq!(rows_in("2026-01-01"), 1);
    wh.close().await;
}

/// QA: a date alone ('2026-01-02') in a SQLite hourly job's column sorts
/// before its day's first bound ('2026-01-02 00:00:00'): loads and status
/// put it in the day before's hour 23. Lint warns of it as it does of an
/// hour without seconds, and the fix (datetime()) moves it to hour 00.
#[tokio::test]
async fn sqlite_a_date_alone_in_an_hourly_column_is_named() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let jobs = r#"
[[jobs]]
name = "hourly"
target = "fct"
strategy = "replace_partition"
partition_column = "ts"
grain = "hour"
start = "2026-01-01T23"
end = "2026-01-02T00"
sql = "select id, ts from src where ts >= :start and ts < :end"
"#;
    let (path, config) = db.config(jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, ts TEXT NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, ts TEXT NOT NULL)",
        "INSERT INTO fct VALUES (1, '2026-01-02')",
    ])
    .await
    .expect("fixture");
    let rows_in = |stdout: &str, name: &str| {
        let status: Vec<serde_json::Value> = serde_json::from_str(stdout).expect("json");
        status
            .iter()
            .find(|p| p["partition"] == name)
            .map(|p| p["rows_now"].clone())
            .unwrap_or_else(|| panic!("no {name}: {stdout}"))
    };
    let (_, stdout, _) = idem_command(&path, &["status", "hourly", "--format", "json"]);
    assert_eq!(rows_in(&stdout, "2026-01-01T23"), 1, "{stdout}");
    assert_eq!(rows_in(&stdout, "2026-01-02T00"), 0, "{stdout}");

    let (code, stdout, stderr) = idem(&path, &["hourly"]);
    assert_eq!(code, 0, "a warning: {stdout}{stderr}");
    assert!(
        stdout.contains("warning: 1 row of fct holds ts as text like '2026-01-02', which sorts before the bound of the hour it names"),
        "{stdout}"
    );
    assert!(stdout.contains("datetime(ts)"), "{stdout}");

    wh.execute_script(&["UPDATE fct SET ts = datetime(ts)"])
        .await
        .expect("rewrite");
    let (code, stdout, stderr) = idem(&path, &["hourly"]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    let (_, stdout, _) = idem_command(&path, &["status", "hourly", "--format", "json"]);
    assert_eq!(rows_in(&stdout, "2026-01-02T00"), 1, "{stdout}");
    wh.close().await;
}

/// QA: a SELECT column that differs from its target column only by case
/// (`id as "ID"` into `id`) passed lint on PostgreSQL, then every partition
/// failed with `column src.id does not exist`. Lint and the run both name
/// the two spellings now; the column aliased as the target spells it loads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
async fn a_select_column_named_but_for_case_is_refused_by_lint_and_run_alike() {
    let Some(db) = TestDb::new(Kind::Postgres).await else {
        return;
    };
    let jobs = [
        common::replace_job(
            "cased",
            "fct",
            "2026-01-02",
            "select id as \"ID\", dt from src where dt >= :start and dt < :end",
        ),
        common::replace_job(
            "plain",
            "fct",
            "2026-01-02",
            "select id as ID, dt from src where dt >= :start and dt < :end",
        ),
    ]
    .concat();
    let (config, parsed) = db.config(&jobs);
    let wh = db.warehouse(&parsed).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-02')",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .expect("fixture");
    let lint_of = |name: &str| {
        let job = parsed.jobs.iter().find(|j| j.name == name).expect("job");
        lint::warehouse_findings(&wh, job)
    };
    let found = lint_of("cased").await.expect("lint");
    let cased: Vec<&Finding> = found
        .iter()
        .filter(|f| f.message.contains("only by case"))
        .collect();
    let [f] = cased.as_slice() else {
        panic!("{found:#?}");
    };
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("\"ID\"") && f.message.contains("column \"id\" of fct"),
        "{}",
        f.message
    );
    assert_eq!(lint_of("plain").await.expect("lint"), vec![]);

    let (code, stdout, stderr) = idem_command(&config, &["run", "cased"]);
    let said = format!("{stdout}{stderr}");
    assert_ne!(code, 0, "{said}");
    assert!(
        said.contains("only by case") && said.contains("\"ID\""),
        "{said}"
    );
    assert!(!said.contains("does not exist"), "{said}");
    let (code, stdout, stderr) = idem_command(&config, &["run", "plain"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    wh.close().await;
}

/// A MariaDB job `daily` into `fct (id, dt)`, its partition column of
/// `dt_type`, whose target holds `rows` written with the server's zero
/// dates allowed (an empty sql_mode).
async fn zero_dates(
    db: &TestDb,
    dt_type: &str,
    rows: &str,
) -> (
    std::path::PathBuf,
    idem::config::Config,
    idem::warehouse::Warehouse,
) {
    let jobs = common::replace_job(
        "daily",
        "fct",
        "2026-02-02",
        "select id, dt from src where dt >= :start and dt < :end",
    );
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        &format!("CREATE TABLE src (id INTEGER NOT NULL, dt {dt_type} NOT NULL)"),
        &format!("CREATE TABLE fct (id INTEGER NOT NULL, dt {dt_type} NOT NULL)"),
        "SET SESSION sql_mode = ''",
        &format!("INSERT INTO fct VALUES {rows}"),
    ])
    .await
    .expect("fixture");
    (path, config, wh)
}

/// QA: MariaDB keeps a DATE with a zero day ('2026-02-00') where the
/// server's sql_mode lacks NO_ZERO_IN_DATE. The day's bounds put it in
/// 2026-01-31's window (a load replaces it there), while status counted it
/// under no partition. Lint names such values and says how to fix them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
async fn mariadb_zero_in_date_values_are_named() {
    let Some(db) = TestDb::new(Kind::MySql).await else {
        return;
    };
    let (path, config, wh) = zero_dates(
        &db,
        "DATE",
        "(1, '2026-02-00'), (2, '2026-01-31'), (3, '2026-00-00')",
    )
    .await;
    let found = lint::warehouse_findings(&wh, &config.jobs[0])
        .await
        .expect("lint");
    let zero: Vec<&Finding> = found
        .iter()
        .filter(|f| f.message.contains("zero month or day"))
        .collect();
    let [f] = zero.as_slice() else {
        panic!("{found:#?}");
    };
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(f.line, config.jobs[0].lines.partition_column);
    assert!(
        f.message
            .starts_with("2 rows of fct hold dt with a zero month or day, like '2026-0"),
        "{}",
        f.message
    );
    assert!(f.fix.contains("NO_ZERO_IN_DATE"), "{}", f.fix);
    let (code, stdout, stderr) = idem(&path, &["daily"]);
    assert_eq!(code, 0, "a warning: {stdout}{stderr}");
    assert!(stdout.contains("zero month or day"), "{stdout}");

    // Real dates only: nothing to say.
    wh.execute_script(&["DELETE FROM fct WHERE id <> 2"])
        .await
        .expect("delete");
    let found = lint::warehouse_findings(&wh, &config.jobs[0])
        .await
        .expect("lint");
    assert!(
        found.iter().all(|f| !f.message.contains("zero month")),
        "{found:#?}"
    );
    wh.close().await;
}

/// QA: MariaDB answers `IS NULL` on a NOT NULL date column with its
/// '0000-00-00' values, so lint said such a row "has NULL in partition
/// column dt ... the signature of a renamed partition column" beside the
/// zero-date finding that names it truly: one row, two stories, one false.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
async fn mariadb_zero_dates_are_not_called_null() {
    let Some(db) = TestDb::new(Kind::MySql).await else {
        return;
    };
    let (_path, config, wh) = zero_dates(
        &db,
        "DATETIME",
        "(1, '0000-00-00 00:00:00'), (2, '2026-02-02 10:00:00')",
    )
    .await;
    let found = lint::warehouse_findings(&wh, &config.jobs[0])
        .await
        .expect("lint");
    assert!(
        found
            .iter()
            .any(|f| f.message.contains("zero month or day")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .all(|f| !f.message.contains("NULL in partition column")),
        "{found:#?}"
    );
    wh.close().await;
}

/// Lint says what `idem verify` finds: for each call QA found lint let
/// through, verify sees a re-run of the partition write other values, and
/// lint's static check raises an error naming the call.
async fn lint_flags_what_verify_catches(kind: Kind) {
    let Some(db) = TestDb::new(kind).await else {
        return;
    };
    let calls: &[(&str, &str)] = match kind {
        Kind::Postgres => &[
            ("cast(nextval('s') as text)", "nextval(…)"),
            ("cast(txid_current() as text)", "txid_current()"),
            ("cast(clock_timestamp() as text)", "clock_timestamp()"),
            (
                "cast(statement_timestamp() as text)",
                "statement_timestamp()",
            ),
            ("cast(gen_random_uuid() as text)", "gen_random_uuid()"),
        ],
        _ => &[
            ("cast(nextval(s) as char)", "nextval(…)"),
            ("cast(uuid_short() as char)", "uuid_short()"),
            ("cast(sysdate(6) as char)", "sysdate(…)"),
            ("cast(rand() as char)", "rand()"),
        ],
    };
    let jobs: String = calls
        .iter()
        .enumerate()
        .map(|(i, (expr, _))| {
            common::replace_job(
                &format!("j{i}"),
                "fct",
                "2026-01-02",
                &format!("select id, {expr} as v, dt from src where dt >= :start and dt < :end"),
            )
        })
        .collect();
    let (_, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE SEQUENCE s",
        "CREATE TABLE src (id INTEGER NOT NULL, dt DATE NOT NULL)",
        "INSERT INTO src VALUES (1, '2026-01-01'), (2, '2026-01-01')",
        "CREATE TABLE fct (id INTEGER NOT NULL, v VARCHAR(100) NOT NULL, dt DATE NOT NULL)",
    ])
    .await
    .expect("fixture");
    let day = idem::partition::Partition::parse(
        idem::partition::Grain::Day,
        "2026-01-01",
        idem::partition::RangeEnd::From,
    )
    .expect("day");
    for (job, (expr, call)) in config.jobs.iter().zip(calls) {
        let verified = wh
            .verify_partition(job, &day, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("{kind:?} {expr}: {e}"));
        assert!(!verified.is_idempotent(), "{kind:?} {expr}: verify");
        let found = lint::static_findings_as(job, wh.syntax(), wh.table_names());
        assert!(
            found
                .iter()
                .any(|f| f.severity == Severity::Error && f.message.starts_with(call)),
            "{kind:?} {expr}: {found:#?}"
        );
    }
    wh.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_postgres),
    ignore = "no PostgreSQL server: set IDEM_TEST_POSTGRES_URL"
)]
async fn lint_flags_what_verify_catches_on_postgres() {
    lint_flags_what_verify_catches(Kind::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(idem_test_mysql),
    ignore = "no MariaDB/MySQL server: set IDEM_TEST_MYSQL_URL"
)]
async fn lint_flags_what_verify_catches_on_mariadb() {
    lint_flags_what_verify_catches(Kind::MySql).await;
}

/// MariaDB's `INSERT … ON DUPLICATE KEY UPDATE` matches a row by any unique
/// index: a merge keyed on `k` into a table also unique on `email` would
/// overwrite key 1's row with key 2's values (and count an insert), and
/// one into a table unique on `(k, region)` only would count a new row as
/// an update. Lint says so, and a run refuses before writing anything; a
/// surrogate key the job does not write is no such index.
#[cfg_attr(not(idem_test_mysql), ignore = "needs IDEM_TEST_MYSQL_URL")]
#[tokio::test]
async fn mariadb_a_merge_matched_by_another_unique_index_is_refused() {
    let Some(db) = TestDb::new(Kind::MySql).await else {
        return;
    };
    let select = "select k, email, name from src where loaded_at >= :start and loaded_at < :end";
    let jobs = [
        common::merge_job("dim", "dim", "2026-01-02", select),
        common::merge_job("wide", "wide", "2026-01-02", select),
        common::merge_job("surrogate", "surrogate", "2026-01-02", select),
    ]
    .concat()
    .replace("unique_key = [\"id\"]", "unique_key = [\"k\"]");
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (k INTEGER NOT NULL, email VARCHAR(50) NOT NULL, name VARCHAR(20) NOT NULL, loaded_at DATETIME NOT NULL)",
        "INSERT INTO src VALUES (1, 'x@example.com', 'one', '2026-01-01 01:00:00'), (2, 'x@example.com', 'two', '2026-01-02 01:00:00')",
        "CREATE TABLE dim (k INTEGER NOT NULL PRIMARY KEY, email VARCHAR(50) NOT NULL UNIQUE, name VARCHAR(20) NOT NULL)",
        "CREATE TABLE wide (k INTEGER NOT NULL, email VARCHAR(50) NOT NULL, name VARCHAR(20) NOT NULL, PRIMARY KEY (k, email))",
        "CREATE TABLE surrogate (id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY, k INTEGER NOT NULL UNIQUE, email VARCHAR(50) NOT NULL, name VARCHAR(20) NOT NULL)",
    ])
    .await
    .expect("fixture");
    let job = |name: &str| config.jobs.iter().find(|j| j.name == name).unwrap();

    let found = lint::warehouse_findings(&wh, job("dim"))
        .await
        .expect("lint");
    let other: Vec<&Finding> = found
        .iter()
        .filter(|f| {
            f.message
                .contains("unique index on (email) besides unique_key (k)")
        })
        .collect();
    let [f] = other.as_slice() else {
        panic!("{found:#?}");
    };
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.line, job("dim").lines.unique_key);
    let surrogate = lint::warehouse_findings(&wh, job("surrogate"))
        .await
        .expect("lint");
    assert!(
        surrogate.iter().all(|f| f.severity != Severity::Error),
        "{surrogate:#?}"
    );

    for (name, words) in [
        (
            "dim",
            "has a unique index on (email) besides unique_key (k)",
        ),
        (
            "wide",
            "no primary key or unique index of wide is (k) alone",
        ),
    ] {
        let (code, stdout, stderr) = idem_command(&path, &["run", name, "--yes"]);
        assert_eq!(code, 1, "{stdout}{stderr}");
        assert!(stderr.contains(words), "{name}: {stderr}");
        let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&db.url)
            .await
            .expect("connect");
        let rows: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {name}")))
                .fetch_one(&mut conn)
                .await
                .expect("count");
        assert_eq!(rows, 0, "{name} was written");
    }
    let (code, stdout, stderr) = idem_command(&path, &["run", "surrogate", "--yes"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    wh.close().await;
}

/// A SQLite day job's target holding dates not written as its bounds are
/// ('2026-1-5', '2026-09'): status counts each in the window its text
/// sorts into, the one whose load deletes it (a dry run says so before),
/// and lint names them as such.
#[tokio::test]
async fn sqlite_dates_not_written_as_bounds_are_counted_where_loads_delete_them() {
    let Some(db) = TestDb::new(Kind::Sqlite).await else {
        return;
    };
    let jobs = common::replace_job(
        "f",
        "fct",
        "2026-10-01",
        "select id, dt from src where dt >= :start and dt < :end",
    )
    .replace("start = \"2026-01-01\"", "start = \"2026-08-30\"");
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE src (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "CREATE TABLE fct (id INTEGER NOT NULL, dt TEXT NOT NULL)",
        "INSERT INTO src VALUES (2, '2026-09-30')",
        // '2026-1-5' sorts after '2026-09-30' and before '2026-10-01';
        // '2026-09' before '2026-09-01'.
        "INSERT INTO fct VALUES (100, '2026-1-5'), (101, '2026-09'), (102, '2026-09-30')",
    ])
    .await
    .expect("fixture");
    let cli = |args: &[&str]| idem_command(&path, args);
    let (code, stdout, stderr) = cli(&["status", "f", "--format", "json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let status: Vec<serde_json::Value> = serde_json::from_str(&stdout).expect("json");
    let rows_of = |name: &str| {
        status
            .iter()
            .find(|p| p["partition"] == name)
            .map(|p| p["rows_now"].clone())
            .unwrap_or_else(|| panic!("no {name}: {stdout}"))
    };
    assert_eq!(rows_of("2026-09-30"), 2, "{stdout}");
    assert_eq!(rows_of("2026-08-31"), 1, "{stdout}");
    assert_eq!(rows_of("2026-09-01"), 0, "{stdout}");

    let (_, stdout, stderr) = cli(&[
        "run",
        "f",
        "--from",
        "2026-09-30",
        "--to",
        "2026-09-30",
        "--dry-run",
    ]);
    assert!(stdout.contains("2 rows"), "{stdout}{stderr}");
    let (code, stdout, stderr) = cli(&[
        "run",
        "f",
        "--from",
        "2026-09-30",
        "--to",
        "2026-09-30",
        "--yes",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("deleted 2"),
        "{stdout}{stderr}"
    );

    let (code, stdout, stderr) = idem(&path, &[]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("error: 1 row of fct holds dt as text like '2026-09', which does not begin with a date written as the window bounds are"),
        "{stdout}"
    );
    wh.close().await;
}

/// SQLite: a SELECT naming two columns alike but for case (`v`, `V`) is
/// said as such by lint and the run, not under the name SQLite gives the
/// second (`V:1`), which the job's SQL never wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_two_select_columns_alike_but_for_case_are_named_as_written() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let job = common::replace_job(
        "clash",
        "clash",
        "2026-01-01",
        "select id, v, V2 as V, dt from clash_src where dt >= :start and dt < :end",
    );
    let (path, config) = db.config(&job);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE clash (id, v, dt)",
        "CREATE TABLE clash_src (id, v, V2, dt)",
        "INSERT INTO clash_src VALUES (1, 'lower', 'UPPER', '2026-01-01')",
    ])
    .await
    .unwrap();
    for args in [&["lint"][..], &["run", "clash", "-y"][..]] {
        let out = common::idem(&path, args);
        let said = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert!(
            said.contains("returns two columns named v"),
            "{args:?}: {said}"
        );
        assert!(!said.contains("drop V:1"), "{args:?}: {said}");
    }
}

/// SQLite reads a double-quoted name that names no column or table as a
/// string: `select "amount_usd"` from a source without that column loads
/// the text into every row. Lint warns at the name's line, naming it with
/// how to write it; a double-quoted name that is a column, an alias or a
/// table, a name in backticks, and a string in single quotes are no
/// finding.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_double_quoted_name_read_as_text_is_named() {
    let db = TestDb::new(Kind::Sqlite).await.expect("sqlite");
    let jobs = [
        common::replace_job(
            "text_for_a_column",
            "dq_fct",
            "2026-01-02",
            "select id, dt,\n  \"amount_usd\" as amount\nfrom \"dq_src\" where dt >= :start and dt < :end",
        ),
        common::replace_job(
            "real_columns",
            "dq_fct",
            "2026-01-02",
            "select \"id\", \"dt\", `amount` as \"amount\"\nfrom \"dq_src\" where \"dt\" >= :start and dt < :end and 'amount_usd' <> ''",
        ),
    ]
    .concat();
    let (path, config) = db.config(&jobs);
    let wh = db.warehouse(&config).await;
    wh.execute_script(&[
        "CREATE TABLE dq_src (id INTEGER NOT NULL, dt DATE NOT NULL, amount INTEGER)",
        "INSERT INTO dq_src VALUES (1, '2026-01-01', 5)",
        "CREATE TABLE dq_fct (id INTEGER NOT NULL, dt DATE NOT NULL, amount INTEGER)",
    ])
    .await
    .expect("fixture");
    let job = &config.jobs[0];
    let found = lint::warehouse_findings(&wh, job).await.expect("lint");
    let [finding] = found.as_slice() else {
        panic!("{found:#?}");
    };
    assert_eq!(finding.severity, Severity::Warning);
    assert_eq!(finding.line, job.sql_line + 1, "the name's own line");
    assert!(
        finding.message.starts_with(
            "\"amount_usd\" names no column or table where it stands, so SQLite reads it as the text 'amount_usd'"
        ),
        "{}",
        finding.message
    );
    assert!(finding.fix.contains("`amount_usd`"), "{}", finding.fix);
    let found = lint::warehouse_findings(&wh, &config.jobs[1])
        .await
        .expect("lint");
    assert_eq!(found, vec![]);
    wh.close().await;
    // The binary names the job and the line, and a warning alone exits 0.
    let (code, stdout, stderr) = idem(&path, &["text_for_a_column"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "idem.toml:{}: job text_for_a_column: warning: \"amount_usd\" names no column",
            job.sql_line + 1
        )),
        "{stdout}{stderr}"
    );
}
