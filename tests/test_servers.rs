//! The PostgreSQL and MariaDB tests run exactly where a server is named, or
//! CI demands one; elsewhere they are reported as ignored, never as passed.

fn named(var: &str) -> bool {
    std::env::var(var).is_ok_and(|url| !url.is_empty())
}

#[test]
fn server_tests_run_where_a_server_is_named() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    assert_eq!(
        cfg!(idem_test_postgres),
        named("IDEM_TEST_POSTGRES_URL") || ci,
        "the PostgreSQL tests run if and only if IDEM_TEST_POSTGRES_URL is set (or CI=true)"
    );
    assert_eq!(
        cfg!(idem_test_mysql),
        named("IDEM_TEST_MYSQL_URL") || ci,
        "the MariaDB tests run if and only if IDEM_TEST_MYSQL_URL is set (or CI=true)"
    );
}

/// A test written for one server (outside `on_every_engine!`) carries the
/// attribute that reports it ignored where that server is not named;
/// without it, a run with no servers fails instead of saying what it left out.
#[test]
fn every_single_server_test_is_ignored_without_its_server() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("tests dir") {
        let path = entry.expect("entry").path();
        // This file names the calls it looks for.
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("test_servers.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable");
        for (server, cfg) in [
            ("TestDb::new(Kind::Postgres)", "not(idem_test_postgres)"),
            ("TestDb::new(Kind::MySql)", "not(idem_test_mysql)"),
        ] {
            for (at, _) in text.match_indices(server) {
                let before = &text[..at];
                let Some(f) = before
                    .rfind("\nasync fn ")
                    .or_else(|| before.rfind("\nfn "))
                else {
                    continue;
                };
                // The attributes between the item before and this function.
                let attrs = &before[before[..f].rfind("\n}").unwrap_or(0)..f];
                if !attrs.contains(cfg) {
                    let name = before[f..].lines().nth(1).unwrap_or_default();
                    missing.push(format!("{}: {name}", path.display()));
                }
            }
        }
    }
    assert!(missing.is_empty(), "add the ignore attribute: {missing:#?}");
}
