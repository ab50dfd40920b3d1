use super::server::{dialect_of, has_returning};
use super::{Dialect, lock_name};

#[test]
fn a_server_without_returning_hashes_by_reading() {
    let columns = [("id".to_string(), "int".to_string())];
    let mariadb = dialect_of("STRICT_TRANS_TABLES", "10.11.19-MariaDB", false);
    assert!(mariadb.returned_row_hash(&columns).is_some());
    for plain in [
        dialect_of("STRICT_TRANS_TABLES", "8.0.36", false),
        dialect_of("NO_BACKSLASH_ESCAPES", "10.4.1-MariaDB", false),
        dialect_of("STRICT_TRANS_TABLES", "10.11.19-MariaDB", true),
    ] {
        assert!(plain.returned_row_hash(&columns).is_none());
    }
    assert!(!dialect_of("NO_BACKSLASH_ESCAPES", "8.0.36", false).backslash_escapes());
}

#[test]
fn mariadb_bounds_the_lock_statement_as_a_whole() {
    let text = |d: &super::MySql, secs: u64| {
        let names = ["a".to_string(), "b".to_string()];
        d.lock(&names, std::time::Duration::from_secs(secs))[0]
            .text()
            .to_string()
    };
    let mariadb = dialect_of("STRICT_TRANS_TABLES", "10.11.19-MariaDB", false);
    assert!(
        text(mariadb, 2).starts_with("SET STATEMENT max_statement_time = 2.000 FOR SELECT"),
        "{}",
        text(mariadb, 2)
    );
    // MySQL has no SET STATEMENT; "do not wait" needs no bound.
    assert!(text(dialect_of("STRICT_TRANS_TABLES", "8.0.36", false), 2).starts_with("SELECT"));
    assert!(text(mariadb, 0).starts_with("SELECT"));
}

#[test]
fn returning_is_mariadbs_from_10_5() {
    assert!(has_returning("10.11.19-MariaDB-0+deb12u1"));
    assert!(has_returning("10.5.2-MariaDB"));
    assert!(has_returning("11.4.2-MariaDB-ubu2404"));
    assert!(!has_returning("10.4.34-MariaDB"));
    assert!(!has_returning("8.0.36"));
    assert!(!has_returning("8.4.0-0ubuntu0.24.04.1"));
}

#[test]
fn lock_names_are_the_ones_the_server_makes() {
    // Each as MariaDB 10.11 printed it for
    // `CONCAT('idem:', LEFT(SHA2(CONCAT(db, ':', key), 256), 40))`.
    assert_eq!(
        lock_name("test", "fct:2026-01-01T00"),
        "idem:3638710e5b0944bdf1a72c39fe63cb19d398c45f"
    );
    assert_eq!(
        lock_name("", "fct:2026-01-01T00"),
        "idem:ea42e55823eb47310e4996b782518971233a5948"
    );
    assert_eq!(
        lock_name("lagerbestände", "verkäufe:2026-01"),
        "idem:b6f9f2cd63482443b0694db48ab669fc84e8ded6"
    );
}

#[test]
fn the_sessions_sql_mode_says_how_strings_and_names_are_quoted() {
    let mariadb = "10.11.19-MariaDB";
    let default = dialect_of("STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION", mariadb, false);
    assert!(default.backslash_escapes() && !default.ansi_quotes());
    // `ANSI` is listed with the modes it stands for.
    let ansi = "REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ANSI";
    let ansi = dialect_of(ansi, mariadb, false);
    assert!(ansi.backslash_escapes() && ansi.ansi_quotes());
    let both = dialect_of("ANSI_QUOTES,NO_BACKSLASH_ESCAPES", mariadb, false);
    assert!(!both.backslash_escapes() && both.ansi_quotes());
    assert!(both.returned_row_hash(&[]).is_some(), "still MariaDB");
}
