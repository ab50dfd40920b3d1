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
