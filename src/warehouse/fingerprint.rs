//! Content fingerprints: a row count plus an order-independent hash. Each row
//! is hashed on its own into 60 bits and the hashes are added (mod 2^128), so
//! the result does not depend on row order and duplicates add up instead of
//! cancelling out.
//!
//! Version 6 (written `v6:ROWS:SUM`) hashes a row's values with the engine's
//! own per-type hash functions where it has them (on PostgreSQL each
//! type's extended hash function, seeded by the column's place, or the
//! value's text where the type's hash is one of equality rather than
//! sameness, a NULL as a constant of its own, the values' hashes combined
//! by XOR), with SHA-1 of the `QUOTE`d values on MariaDB and MySQL (a
//! `FLOAT` as its exact `DOUBLE`, a long string by its own SHA-1), and in idem (XXH3) of
//! each row's JSON array on SQLite. The load takes it of the window before
//! its DELETE and after its INSERT (on MariaDB from the hashes those
//! statements return; before, on PostgreSQL, from the partition's last
//! load when the window's rows show that load wrote all of them and nothing
//! else wrote since). Version 5 differed on PostgreSQL (a NULL hashed
//! as its column's seed, which some values hash to as well: a NULL against
//! 0.0, NaN against Infinity, `{}` against `[]`; `numeric`, floats,
//! `interval` and `jsonb` by their types' hashes, blind to 1.0 against
//! 1.000; the XOR hashed again, down to 32 bits) and on MariaDB (a `FLOAT`
//! to six digits; a long value quoted past `max_allowed_packet`). Version 4 differed on PostgreSQL
//! (`hash_record_extended` of the row) and wrote SQLite's floating-point
//! values to 15 digits; version 3 on SQLite only (each row
//! as `quote()`d values joined by commas); version 2 on MariaDB/MySQL only
//! (MD5 of length-prefixed values); version 1 (`ROWS:SUM`, no prefix)
//! hashed each row's text with MD5 or SHA-256. Versions are never compared
//! with each other: a load compares the window's fingerprints before and
//! after itself, both of the current version (a last load's fingerprint of
//! another version is not taken for the window's).

use std::fmt;

use sqlx::Row;

use super::sql::Sql;
use super::{Column, WarehouseError};

/// The version of the fingerprints idem writes now.
pub const VERSION: u32 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fingerprint {
    pub rows: i64,
    pub sum: u128,
}

/// How an engine hashes one row.
pub enum RowHash {
    /// An SQL expression: a non-negative integer below 2^60 per row.
    Sql(String),
    /// For engines without a hash function: an aggregate rendering the rows
    /// as one JSON array of one unambiguous JSON value per row, which idem
    /// splits and hashes row by row. One value crosses to idem, not one per
    /// row, and nothing is parsed but the array's top level. `plain` is
    /// the cheap read: it fails on a value JSON cannot hold (a BLOB) and
    /// writes a floating-point value to 15 digits only. `exact` writes those
    /// two exactly and every other value as `plain` does, and costs more
    /// (SQLite: 1.5 ms against 0.8 ms for 2,000 rows). A window holding
    /// either is read again by `exact`, so a window's fingerprint never
    /// depends on which read made it. `each_row` is one row's element of
    /// `exact`, read row by row where the window's array would be longer
    /// than the engine's longest value (SQLite: 1e9 bytes, some 500 MB of
    /// BLOBs written in hexadecimal): the same rows' texts, so the same
    /// fingerprint (a row without a floating-point value or a BLOB reads
    /// alike in `plain` and `exact`).
    Json {
        plain: String,
        exact: String,
        each_row: String,
    },
}

/// Below 2^60, so that 2^68 rows' hashes still add up without overflow.
const HASH_MASK: u64 = (1 << 60) - 1;

impl Fingerprint {
    /// Adds a row hashed by the engine (below 2^60).
    pub fn add_hash(&mut self, hash: u64) {
        self.rows += 1;
        self.sum = self.sum.wrapping_add(u128::from(hash & HASH_MASK));
    }

    /// Adds a row given as its one unambiguous text.
    pub fn add_text(&mut self, text: &str) {
        self.add_bytes(text.as_bytes());
    }

    /// Adds a row given as the bytes of its text: a row's text need not be
    /// UTF-8 (SQLite keeps whatever bytes a TEXT value was given).
    pub fn add_bytes(&mut self, bytes: &[u8]) {
        self.add_hash(xxhash_rust::xxh3::xxh3_64(bytes));
    }

    /// Parses the text form written by `Display`, with its version.
    pub fn parse(text: &str) -> Option<(u32, Fingerprint)> {
        let (version, rest) = match text.strip_prefix('v') {
            Some(v) => {
                let (version, rest) = v.split_once(':')?;
                (version.parse().ok()?, rest)
            }
            None => (1, text),
        };
        let (rows, sum) = rest.split_once(':')?;
        Some((
            version,
            Fingerprint {
                rows: rows.parse().ok()?,
                sum: u128::from_str_radix(sum, 16).ok()?,
            },
        ))
    }
}

impl Fingerprint {
    /// A stored fingerprint as a person compares them at a glance: its row
    /// count and the low 24 bits of its sum (`10722:1fc4ec`).
    pub fn short(text: &str) -> String {
        match Fingerprint::parse(text) {
            Some((_, fp)) => format!("{}:{:06x}", fp.rows, fp.sum & 0xff_ffff),
            None => text.chars().take(12).collect(),
        }
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{VERSION}:{}:{:032x}", self.rows, self.sum)
    }
}

/// XXH3 (64 bits) of the bytes: a specified algorithm, stable across builds
/// and platforms, at several bytes a cycle.
#[cfg(test)]
fn hash_text(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

/// The columns, quoted and prefixed by `alias`, in name order, with their
/// declared types.
fn sorted_columns(
    dialect: &dyn super::Dialect,
    columns: &[Column],
    alias: &str,
) -> Vec<(String, String)> {
    let mut sorted: Vec<&Column> = columns.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    sorted
        .iter()
        .map(|c| {
            (
                format!("{alias}{}", dialect.quote(&c.name)),
                c.type_name.clone(),
            )
        })
        .collect()
}

/// How this engine hashes a row of these columns (each prefixed by `alias`).
pub(super) fn row_hash(dialect: &dyn super::Dialect, columns: &[Column], alias: &str) -> RowHash {
    dialect.row_hash(&sorted_columns(dialect, columns, alias))
}

/// How this engine's DELETE and INSERT return each written row's hash,
/// where a replace reads its fingerprints that way
/// ([`super::Dialect::returned_row_hash`]).
pub(super) fn returned_row_hash(
    dialect: &dyn super::Dialect,
    columns: &[Column],
    alias: &str,
) -> Option<String> {
    dialect.returned_row_hash(&sorted_columns(dialect, columns, alias))
}

/// A returned row hash's hexadecimal digits as the hash: the same integer
/// [`RowHash::Sql`] gives for the row. Decoded by table, a byte at a time:
/// `u64::from_str_radix` and a check of the digits took 290 instructions a
/// hash, more than the driver's whole conversion of the row.
pub(super) fn parse_returned_hash(hex: &str) -> Result<u64, WarehouseError> {
    let bad = || {
        WarehouseError::Job(format!(
            "internal: a returned row hash is not 15 hexadecimal digits: {hex:?}"
        ))
    };
    if hex.len() != 15 {
        return Err(bad());
    }
    let mut hash = 0u64;
    let mut seen = 0u8;
    for b in hex.bytes() {
        let digit = HEX_DIGIT[usize::from(b)];
        seen |= digit;
        hash = hash << 4 | u64::from(digit & 15);
    }
    if seen & NOT_HEX != 0 {
        return Err(bad());
    }
    Ok(hash)
}

/// Marks a byte that is no hexadecimal digit in [`HEX_DIGIT`].
const NOT_HEX: u8 = 16;

/// Each byte's value as a hexadecimal digit, or [`NOT_HEX`].
const HEX_DIGIT: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// `SELECT <each column as text>` in a fixed column order.
pub(super) fn select_as_text(sql: &mut Sql, columns: &[Column], alias: &str) {
    let dialect = sql.dialect();
    let texts: Vec<String> = sorted_columns(dialect, columns, alias)
        .iter()
        .map(|(c, type_name)| dialect.value_text(c, type_name))
        .collect();
    sql.push("SELECT ").push(&texts.join(", "));
}

/// The fingerprint of the rows that `from` selects (it appends ` FROM …`).
pub(super) async fn of(
    conn: &mut sqlx::AnyConnection,
    dialect: &'static dyn super::Dialect,
    columns: &[Column],
    alias: &str,
    from: impl Fn(&mut Sql),
) -> Result<Fingerprint, WarehouseError> {
    of_after(conn, Sql::new(dialect), columns, alias, from).await
}

/// [`of`], its SELECT appended to `sql`: a `WITH` clause whose statements
/// run in the same statement (see `Dialect::deletes_in_with`).
pub(super) async fn of_after(
    conn: &mut sqlx::AnyConnection,
    mut sql: Sql,
    columns: &[Column],
    alias: &str,
    from: impl Fn(&mut Sql),
) -> Result<Fingerprint, WarehouseError> {
    let dialect = sql.dialect();
    match row_hash(dialect, columns, alias) {
        RowHash::Sql(hash) => {
            let sum = dialect.text_expr(&format!("COALESCE(SUM({hash}), 0)"));
            sql.push("SELECT COUNT(*), ").push(&sum);
            from(&mut sql);
            let row = sql.query().fetch_one(&mut *conn).await?;
            Ok(Fingerprint {
                rows: row.try_get(0)?,
                sum: parse_sum(&row.try_get::<String, _>(1)?)?,
            })
        }
        RowHash::Json {
            plain,
            exact,
            each_row,
        } => {
            let mut first = sql.clone();
            first.push("SELECT COUNT(*), ").push(&plain);
            from(&mut first);
            let plain_read = match first.query().fetch_one(&mut *conn).await {
                Ok(row) => Some(row),
                // A failed SELECT leaves the transaction as it was.
                Err(e) if too_big(&e) => return row_by_row(conn, sql, &each_row, from).await,
                Err(sqlx::Error::Database(e)) if e.message().contains("BLOB") => None,
                Err(e) => return Err(e.into()),
            };
            if let Some(row) = plain_read {
                let (fp, floats) = scan_rows(row.try_get::<Option<&[u8]>, _>(1)?.unwrap_or(b"[]"))?;
                if !floats {
                    return all_rows(fp, row.try_get(0)?);
                }
            }
            let mut second = sql.clone();
            second.push("SELECT COUNT(*), ").push(&exact);
            from(&mut second);
            let row = match second.query().fetch_one(&mut *conn).await {
                Ok(row) => row,
                Err(e) if too_big(&e) => return row_by_row(conn, sql, &each_row, from).await,
                Err(e) => return Err(e.into()),
            };
            let (fp, _) = scan_rows(row.try_get::<Option<&[u8]>, _>(1)?.unwrap_or(b"[]"))?;
            all_rows(fp, row.try_get(0)?)
        }
    }
}

/// The engine's refusal to make a value longer than its limit (SQLite's
/// `SQLITE_TOOBIG`).
fn too_big(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(e) => {
            e.code().as_deref() == Some("18") || e.message().contains("too big")
        }
        _ => false,
    }
}

/// The fingerprint of the rows `from` selects, each row's text
/// (`each_row`, see [`RowHash::Json`]) read and hashed on its own.
async fn row_by_row(
    conn: &mut sqlx::AnyConnection,
    mut sql: Sql,
    each_row: &str,
    from: impl Fn(&mut Sql),
) -> Result<Fingerprint, WarehouseError> {
    use futures::TryStreamExt;
    sql.push("SELECT ").push(each_row);
    from(&mut sql);
    let mut fp = Fingerprint::default();
    let mut rows = sql.query().fetch(&mut *conn);
    while let Some(row) = rows.try_next().await? {
        fp.add_bytes(row.try_get::<&[u8], _>(0)?);
    }
    Ok(fp)
}

/// `fp`, if it holds all `rows` the window's `COUNT(*)` says it has.
fn all_rows(fp: Fingerprint, rows: i64) -> Result<Fingerprint, WarehouseError> {
    if fp.rows != rows {
        return Err(WarehouseError::Job(format!(
            "fingerprint read {} of {rows} rows",
            fp.rows
        )));
    }
    Ok(fp)
}

/// One pass over a JSON array of rows (see [`RowHash::Json`]): the
/// fingerprint of its top-level elements, each element's text as the
/// engine wrote it being one row's, and whether a number written with a
/// fraction or an exponent (a floating-point value) appears outside its
/// strings. Nothing else outside a string has a `.`, `e` or `E`: the rows
/// hold numbers, strings, `null` and arrays.
///
/// The bytes that change nothing (digits, a string's text) are skipped in
/// tight loops, outside strings by a table of the ones that matter: the
/// scan was idem's own largest cost in a SQLite re-run, and this took it
/// from 135 M to 77 M instructions for 45 days of 2,000 rows (callgrind;
/// `memchr` at each step cost more than it saved on such short spans).
fn scan_rows(array: &[u8]) -> Result<(Fingerprint, bool), WarehouseError> {
    let bytes = array.trim_ascii();
    if bytes.first() != Some(&b'[') || bytes.last() != Some(&b']') {
        return Err(unreadable());
    }
    let mut fp = Fingerprint::default();
    let mut floats = false;
    // Inside the outer array; the current element begins at `start`.
    let (mut depth, mut start, mut pos) = (1usize, 1usize, 1usize);
    while pos < bytes.len() {
        let b = bytes[pos];
        if !MATTERS[usize::from(b)] {
            pos += 1;
            continue;
        }
        let at = pos;
        pos += 1;
        match b {
            b'"' => {
                // To the closing quote, skipping each escaped byte.
                loop {
                    match bytes.get(pos) {
                        None => return Err(unreadable()),
                        Some(b'"') => break,
                        Some(b'\\') => pos += 2,
                        Some(_) => pos += 1,
                    }
                }
                pos += 1;
            }
            b'[' => depth += 1,
            b',' | b']' if depth == 1 => {
                take_row(&mut fp, bytes, start, at)?;
                start = at + 1;
                if b == b']' {
                    return match at + 1 == bytes.len() {
                        true => Ok((fp, floats)),
                        false => Err(unreadable()),
                    };
                }
            }
            b']' => depth -= 1,
            b'.' | b'e' | b'E' => floats = true,
            _ => {}
        }
    }
    Err(unreadable())
}

/// The error of a JSON array of rows that [`scan_rows`] cannot read.
fn unreadable() -> WarehouseError {
    WarehouseError::Job("unreadable rows for a fingerprint".into())
}

/// Adds the array's element `text[start..end]` to `fp`, cut at the `,` or
/// the closing `]` at `end` (ASCII punctuation outside strings). Only the
/// empty array has an empty element.
fn take_row(
    fp: &mut Fingerprint,
    text: &[u8],
    start: usize,
    end: usize,
) -> Result<(), WarehouseError> {
    let row = text.get(start..end).ok_or_else(unreadable)?.trim_ascii();
    match (row.is_empty(), text[end]) {
        (false, _) => fp.add_bytes(row),
        (true, b']') if fp.rows == 0 && start == 1 => {}
        (true, _) => return Err(unreadable()),
    }
    Ok(())
}

/// The bytes that [`scan_rows`] looks at outside strings.
const MATTERS: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    let bytes = b"\"[],.eE";
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
};

/// A sum of row hashes as the engine renders it (`123` or `123.0`).
pub(super) fn parse_sum(text: &str) -> Result<u128, WarehouseError> {
    let digits = text.split('.').next().unwrap_or_default();
    digits
        .parse()
        .map_err(|_| WarehouseError::Job(format!("unreadable fingerprint sum {text}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(rows: &[&str]) -> Fingerprint {
        let mut f = Fingerprint::default();
        for r in rows {
            f.add_text(r);
        }
        f
    }

    #[test]
    fn order_does_not_matter_but_duplicates_do() {
        let a = fp(&["1,'x'", "2,'y'"]);
        let b = fp(&["2,'y'", "1,'x'"]);
        assert_eq!(a, b);
        let doubled = fp(&["1,'x'", "2,'y'", "1,'x'", "2,'y'"]);
        assert_ne!(a.sum, doubled.sum);
        assert_eq!(doubled.rows, 4);
        // A row replaced by another of the same count is a change.
        assert_ne!(fp(&["1,'x'", "2,'y'"]), fp(&["1,'x'", "2,'z'"]));
    }

    #[test]
    fn hashes_are_stable_and_below_2_pow_60() {
        // Fixed values: a change of the hash would silently make every
        // later load look changed.
        assert_eq!(hash_text(""), 3_244_421_341_483_603_138);
        let mut f = Fingerprint::default();
        f.add_hash(u64::MAX);
        assert_eq!(f.sum, u128::from(HASH_MASK));
    }

    #[test]
    fn a_float_is_told_from_the_same_characters_in_a_string() {
        let floats = |json: &str| scan_rows(json.as_bytes()).unwrap().1;
        assert!(floats("[[1,0.3]]"));
        assert!(floats("[[1.0e+300]]"));
        assert!(!floats(r#"[[1,"0.3","e",null,-7]]"#));
        assert!(!floats(r#"[["a\"1.5\\",2]]"#));
        assert!(floats(r#"[["a\\",2.5]]"#));
        assert!(!floats("[]"));
    }

    #[test]
    fn json_rows_split_at_the_array_top_level_only() {
        let rows = [
            r#"[1,"a,b"]"#,
            r#"[2,"],[\"x"]"#,
            "[null,[\"00FF\"]]",
            "[1,\"a,b\"]",
        ];
        let array = format!("[{}]", rows.join(","));
        let read = |json: &str| scan_rows(json.as_bytes()).map(|(fp, _)| fp);
        assert_eq!(read(&array).unwrap(), fp(&rows));
        assert_eq!(read(&array).unwrap().rows, 4);
        // Cut short, or with a row missing, it is not read.
        for broken in [
            "[[1],",
            "[[1],[2]",
            "[[1],,[2]]",
            "[[1],]",
            r#"[["a]]"#,
            "[[1]]]",
            "",
        ] {
            assert!(read(broken).is_err(), "{broken}");
        }
        assert_eq!(read("[]").unwrap(), Fingerprint::default());
    }

    /// The scan as it was, byte by byte: what [`scan_rows`] must agree with
    /// in which bytes it looks at (both cut rows by [`take_row`]).
    fn scan_rows_bytewise(array: &str) -> Result<(Fingerprint, bool), WarehouseError> {
        let text = array.trim();
        let bytes = text.as_bytes();
        if bytes.first() != Some(&b'[') || bytes.last() != Some(&b']') {
            return Err(unreadable());
        }
        let mut fp = Fingerprint::default();
        let mut floats = false;
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        let mut start = 1;
        for (i, &b) in bytes.iter().enumerate() {
            if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' => depth += 1,
                b',' | b']' if depth == 1 => {
                    take_row(&mut fp, bytes, start, i)?;
                    start = i + 1;
                    if b == b']' {
                        depth = 0;
                        if i + 1 != bytes.len() {
                            return Err(unreadable());
                        }
                    }
                }
                b']' => depth = depth.checked_sub(1).ok_or_else(unreadable)?,
                b'.' | b'e' | b'E' => floats = true,
                _ => {}
            }
        }
        if depth != 0 || in_string {
            return Err(unreadable());
        }
        Ok((fp, floats))
    }

    #[test]
    fn a_returned_hash_reads_as_the_integer_its_digits_are() {
        assert_eq!(parse_returned_hash("000000000000000").unwrap(), 0);
        assert_eq!(parse_returned_hash("fffffffffffffff").unwrap(), HASH_MASK);
        assert_eq!(
            parse_returned_hash("0123456789abcde").unwrap(),
            0x0123456789abcde
        );
        assert_eq!(
            parse_returned_hash("0123456789ABCDE").unwrap(),
            0x0123456789abcde
        );
        // Anything but 15 hexadecimal digits is refused, never misread.
        for bad in [
            "",
            "fffffffffffffff0",
            "ffffffffffffff",
            "-00000000000000",
            "+00000000000000",
            "0123456789abcdg",
        ] {
            assert!(parse_returned_hash(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_scan_agrees_with_the_bytewise_one_on_any_text() {
        // Every text of up to 6 characters over the ones that matter, as it
        // is and between brackets, and rows as the engine writes them.
        let alphabet = "[],\"\\.e1 a".as_bytes();
        let agree = |t: &str| {
            assert_eq!(
                scan_rows(t.as_bytes()).ok(),
                scan_rows_bytewise(t).ok(),
                "{t:?}"
            )
        };
        for len in 0..=6 {
            let mut digits = vec![0usize; len];
            loop {
                let middle: String = digits.iter().map(|&d| alphabet[d] as char).collect();
                agree(&middle);
                agree(&format!("[{middle}]"));
                // The next text of this length, as an odometer turns.
                let Some(i) = digits.iter().rposition(|&d| d + 1 < alphabet.len()) else {
                    break;
                };
                digits[i] += 1;
                digits[i + 1..].fill(0);
            }
        }
        agree(r#"[[1,"a,b"],[2,"],[\"x"],[null,["00FF"]],[1.5e3,"\\"]]"#);
        agree(r#"[ [1] , [2] ]"#);
    }

    /// A window too long for SQLite's one value is read row by row: each
    /// row's text as the window's array holds it, so the fingerprint is the
    /// one the array would have given, whatever the rows hold.
    #[tokio::test]
    async fn sqlite_rows_read_one_by_one_fingerprint_as_the_whole_window() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::config::WarehouseConfig {
            url: format!("sqlite://{}/w.db?mode=rwc", dir.path().display()),
            statement_timeout: None,
            lock_timeout: std::time::Duration::from_secs(5),
            connect_timeout: std::time::Duration::from_secs(5),
        };
        let wh = super::super::Warehouse::connect(&config, 1).await.unwrap();
        let table = crate::config::TableName::parse("t").unwrap();
        let read = async |rows: &[&str]| {
            let mut script = vec![
                "DROP TABLE IF EXISTS t",
                "CREATE TABLE t (a, b TEXT, c REAL)",
            ];
            script.extend(rows);
            wh.execute_script(&script).await.unwrap();
            let columns = wh.columns(&table).await.unwrap();
            let mut conn = wh.pool().acquire().await.unwrap();
            let window = |sql: &mut Sql| {
                sql.push(" FROM t");
            };
            let whole = of(&mut conn, wh.dialect(), &columns, "", window)
                .await
                .unwrap();
            let RowHash::Json { each_row, .. } = row_hash(wh.dialect(), &columns, "") else {
                panic!("SQLite hashes rows in idem");
            };
            let one_by_one = row_by_row(&mut conn, Sql::new(wh.dialect()), &each_row, window)
                .await
                .unwrap();
            assert_eq!(whole, one_by_one, "{rows:?}");
            whole
        };
        // Integers and text only (the plain read), with floats, with BLOBs.
        let plain =
            read(&["INSERT INTO t VALUES (1, 'a,\"b\"]', NULL), ('1', CAST(x'ff00' AS TEXT), 2)"])
                .await;
        assert_eq!(plain.rows, 2);
        let floats = read(&["INSERT INTO t VALUES (1.0, 'x', 0.1 + 0.2), (2, NULL, -1e999)"]).await;
        assert_eq!(floats.rows, 2);
        let blobs =
            read(&["INSERT INTO t VALUES (x'01', 'x', 0.5), (x'', '', NULL), (1, 'y', 3)"]).await;
        assert_eq!(blobs.rows, 3);
        assert_eq!(read(&[]).await, Fingerprint::default());
    }

    #[test]
    fn text_form_round_trips_with_its_version() {
        let a = fp(&["1,'x'"]);
        assert!(a.to_string().starts_with("v6:1:"));
        assert_eq!(Fingerprint::parse(&a.to_string()), Some((6, a)));
        let old = Fingerprint::parse("3:00000000000000000000000000000abc");
        assert_eq!(
            old,
            Some((
                1,
                Fingerprint {
                    rows: 3,
                    sum: 0xabc
                }
            ))
        );
    }
}
