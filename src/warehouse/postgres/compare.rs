//! How a PostgreSQL merge tells a changed value from an unchanged one.

/// Types whose `=` is sameness: two values it calls equal read alike to
/// anyone (a zoned timestamp is one instant, whatever zone wrote it).
const SAME_WHEN_EQUAL: [&str; 15] = [
    "smallint",
    "integer",
    "bigint",
    "boolean",
    "date",
    "timestamp without time zone",
    "timestamp with time zone",
    "time without time zone",
    "time with time zone",
    "uuid",
    "bytea",
    "inet",
    "oid",
    "name",
    "money",
];

/// Text byte for byte: under a nondeterministic collation 'alice' to
/// 'Alice' would be no change, never written.
const TEXT: [&str; 3] = ["text", "character varying", "character"];

/// A null-safe "values differ" test. Values of any other type than the
/// above differ where their texts do, a type's text output being canonical
/// for its value: some types' `=` is not sameness (`numeric` 1.0 = 1.000,
/// floats -0 = 0, `interval` '1 day' = '24 hours', `jsonb` and `numrange`
/// likewise inside, `box` and `circle` compare areas), and some have no
/// `=` at all (`json`, `xml`, `point`, `jsonpath`, `pg_snapshot`), nor
/// may an array's elements or an extension's type.
pub(super) fn differs(a: &str, b: &str, type_name: &str) -> String {
    if SAME_WHEN_EQUAL.contains(&type_name) {
        format!("{a} IS DISTINCT FROM {b}")
    } else if TEXT.contains(&type_name) {
        format!("{a} IS DISTINCT FROM {b} COLLATE \"C\"")
    } else {
        format!("CAST({a} AS text) IS DISTINCT FROM CAST({b} AS text) COLLATE \"C\"")
    }
}
