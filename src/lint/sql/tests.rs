use super::*;
use crate::config::Engine;
/// A MariaDB/MySQL server with ANSI_QUOTES in its sql_mode reads
/// `"o"."dt"` as a column, as PostgreSQL does; by default it is a
/// string there, and no window filter.
#[test]
fn a_server_with_ansi_quotes_reads_double_quotes_as_names() {
    let sql = "select \"o\".\"id\", \"o\".\"dt\"\nfrom \"fct\" \"o\"\n\
               where \"o\".\"dt\" >= :start and \"o\".\"dt\" < :end and \"a\"\"b\" = 1";
    let filters = |syntax: Syntax| -> Vec<(String, usize)> {
        let r = read(sql, syntax);
        assert!(r.parsed, "{syntax:?}");
        r.window_filters
            .into_iter()
            .map(|w| (w.column, w.line))
            .collect()
    };
    let ansi = Syntax {
        ansi_quotes: true,
        ..Engine::MySql.into()
    };
    let dt = || ("dt".to_string(), 3);
    assert_eq!(filters(ansi), [dt(), dt()]);
    assert_eq!(filters(Engine::Postgres.into()), [dt(), dt()]);
    assert_eq!(filters(Engine::MySql.into()), []);
    let outputs = read(sql, ansi).outputs.unwrap_or_default();
    let names: Vec<_> = outputs.iter().map(|o| o.name.as_deref()).collect();
    assert_eq!(names, [Some("id"), Some("dt")]);
}

fn calls(sql: &str) -> Vec<String> {
    read(sql, Engine::Postgres)
        .volatile
        .into_iter()
        .map(|v| v.call)
        .collect()
}

#[test]
fn finds_clock_calls_but_not_lookalikes() {
    assert_eq!(calls("select now() as t from x"), vec!["now()"]);
    assert_eq!(calls("select CURRENT_DATE from x"), vec!["current_date"]);
    assert_eq!(
        calls("select now_ts, 'now()' as s, \"now\" from x -- now()\n"),
        Vec::<String>::new()
    );
    assert_eq!(calls("select date('now') from x"), vec!["date('now')"]);
    assert_eq!(
        calls("select date(created_at) from x"),
        Vec::<String>::new()
    );
    assert_eq!(
        calls("select 'now'::timestamp as t"),
        vec!["'now'::timestamp"]
    );
}

#[test]
fn parameters_keep_their_lines() {
    let r = read(
        "select a\nfrom t\nwhere d >= :start\n and d < :end",
        Engine::Postgres,
    );
    assert_eq!(
        r.params,
        vec![("start".to_string(), 3), ("end".to_string(), 4)]
    );
    assert!(r.parsed);
    let cols: Vec<&str> = r.window_filters.iter().map(|w| w.column.as_str()).collect();
    assert_eq!(cols, vec!["d", "d"]);
    assert_eq!(r.window_filters[0].line, 3);
}

#[test]
fn each_engine_reads_comments_as_its_server_does() {
    let filters = |sql: &str, engine: Engine| -> Vec<String> {
        read(sql, engine)
            .window_filters
            .into_iter()
            .map(|w| w.column)
            .collect()
    };
    // MariaDB: `0--1` is arithmetic, and the window after it is code.
    let dashes = "select id from t where 0--1 and dt >= :start and dt < :end";
    assert_eq!(filters(dashes, Engine::MySql), ["dt", "dt"]);
    // PostgreSQL: a nested block comment ends at its own `*/`.
    let nested = "select id /* a /* b */ c */ from t where dt >= :start and dt < :end";
    assert_eq!(filters(nested, Engine::Postgres), ["dt", "dt"]);
    assert!(read(nested, Engine::Postgres).parsed);
}

#[test]
fn lineage_follows_aliases() {
    let r = read(
        "with b as (select cast(event_time as date) as dt from e where event_time >= :start)\nselect dt from b",
        Engine::Postgres,
    );
    assert!(r.lineage("dt").contains("event_time"));
}

/// A SELECT nested as deep as the parser reads (its limit is 50) is read
/// on a thread of a small stack, as the console's background tasks are
/// (2 MiB, where a build without optimisations spends tens of KiB a
/// level): the parser grows its stack as it goes down rather than
/// overflowing it and aborting the process.
#[test]
fn a_deeply_nested_select_is_read_on_a_small_stack() {
    let depth = 40;
    let sql = format!(
        "select {}1{} as x, d from t where d >= :start and d < :end",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let read_it = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || read(&sql, Engine::Postgres).parsed)
        .expect("a thread");
    assert!(read_it.join().expect("read without overflowing"));
}
