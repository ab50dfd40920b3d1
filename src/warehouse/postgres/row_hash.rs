//! How a PostgreSQL load hashes a row's values for its fingerprint.

/// The 64-bit hash of one value by its type's own extended hash function,
/// seeded: what the type's hash operator class uses, or an exact conversion
/// to a type that has one (a date as the timestamp of its midnight,
/// infinities included; a zoned timestamp as its UTC time; a boolean as 0
/// or 1), bytea, whose function cannot be called, as a one-value record.
/// None for a type (as `information_schema.columns.data_type` names it)
/// without a default hash operator class.
///
/// A type whose hash is one of equality, not of sameness, is hashed by its
/// text, which is canonical for what a reader sees (the session pins the
/// settings it depends on, see `session_setup`): `numeric` (1.0 = 1.000;
/// NaN and ±Infinity all hash to the bare seed, zero to one below it),
/// `real` and `double precision` (-0 = 0, and 0 hashes to the seed),
/// `interval` ('1 day' = '24 hours') and `jsonb` (`{}` and `[]` hash to the
/// seed; 1.0 = 1.00 inside). The 64-bit types (`bigint`, timestamps) hash
/// their two halves XORed together: a change that keeps that fold escapes,
/// with odds of one in 2^32 for a value changed at random.
pub(super) fn hash_value(column: &str, type_name: &str, seed: usize) -> Option<String> {
    let call = |f: &str, arg: String| Some(format!("{f}({arg}, {seed})"));
    match type_name {
        "smallint" => call("hashint2extended", column.into()),
        "integer" => call("hashint4extended", column.into()),
        "bigint" => call("hashint8extended", column.into()),
        "numeric" | "real" | "double precision" | "interval" | "jsonb" => {
            call("hashtextextended", format!("CAST({column} AS text)"))
        }
        // Hashed as bytes: a nondeterministic collation's hash is one of
        // the value folded (case, accents), which would hide such a change.
        // Under any other collation the hash is the same.
        "text" | "character varying" => call("hashtextextended", format!("{column} COLLATE \"C\"")),
        "character" => call("hashbpcharextended", format!("{column} COLLATE \"C\"")),
        "name" => call("hashnameextended", column.into()),
        "date" => call(
            "timestamp_hash_extended",
            format!("CAST({column} AS timestamp)"),
        ),
        "timestamp without time zone" => call("timestamp_hash_extended", column.into()),
        "timestamp with time zone" => call(
            "timestamp_hash_extended",
            format!("({column} AT TIME ZONE 'UTC')"),
        ),
        "time without time zone" => call("time_hash_extended", column.into()),
        "boolean" => call("hashint4extended", format!("CAST({column} AS integer)")),
        "uuid" => call("uuid_hash_extended", column.into()),
        "inet" => call("hashinetextended", column.into()),
        "bytea" => call("hash_record_extended", format!("ROW({column})")),
        _ => None,
    }
}

/// What a NULL in the column at `place` hashes as: a fixed 62-bit value of
/// its own per place, where a value's hash would have to fall by chance.
pub(super) fn null_hash(place: usize) -> i64 {
    const NULL: i64 = 0x2545_f491_4f6c_dd1d;
    NULL ^ (place as i64).wrapping_mul(0x0000_9e37_79b9_7f4b)
}
