//! Tells the tests which database servers they can reach: a test of an
//! engine whose server is not named is marked ignored ("no PostgreSQL
//! server"), so a run that tested neither never looks like one that did.
//! Under CI=true every engine's tests run, and fail loudly without a server.

fn main() {
    let ci = std::env::var("CI").as_deref() == Ok("true");
    for (var, cfg) in [
        ("IDEM_TEST_POSTGRES_URL", "idem_test_postgres"),
        ("IDEM_TEST_MYSQL_URL", "idem_test_mysql"),
    ] {
        println!("cargo::rerun-if-env-changed={var}");
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let named = std::env::var(var).is_ok_and(|url| !url.is_empty());
        if named || ci {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    println!("cargo::rerun-if-env-changed=CI");
    println!("cargo::rerun-if-changed=build.rs");
}
