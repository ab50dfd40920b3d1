//! Content fingerprints: a row count plus an order-independent hash. Each row
//! is hashed on its own and the hashes are added (mod 2^128), so the result does
//! not depend on row order and duplicates add up instead of cancelling out.

use std::fmt;

use futures::{Stream, TryStreamExt};
use sha2::{Digest, Sha256};
use sqlx::any::AnyRow;

use super::WarehouseError;
use super::sql::Sql;
use crate::config::Ident;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fingerprint {
    pub rows: i64,
    pub sum: u128,
}

impl Fingerprint {
    pub fn add_row(&mut self, values: &[Option<String>]) {
        let mut h = Sha256::new();
        for v in values {
            match v {
                // Length-prefixed so that ("ab","c") and ("a","bc") differ.
                Some(s) => {
                    h.update([1]);
                    h.update((s.len() as u64).to_le_bytes());
                    h.update(s.as_bytes());
                }
                None => h.update([0]),
            }
        }
        let digest = h.finalize();
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest[..16]);
        self.rows += 1;
        self.sum = self.sum.wrapping_add(u128::from_le_bytes(first));
    }

    /// Parses the text form written by `Display`.
    pub fn parse(text: &str) -> Option<Fingerprint> {
        let (rows, sum) = text.split_once(':')?;
        Some(Fingerprint {
            rows: rows.parse().ok()?,
            sum: u128::from_str_radix(sum, 16).ok()?,
        })
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{:032x}", self.rows, self.sum)
    }
}

/// The columns, quoted and prefixed by `alias`, in name order.
fn sorted_columns(dialect: &dyn super::Dialect, columns: &[Ident], alias: &str) -> Vec<String> {
    let mut sorted: Vec<&Ident> = columns.iter().collect();
    sorted.sort();
    sorted
        .iter()
        .map(|c| format!("{alias}{}", dialect.quote(c.as_str())))
        .collect()
}

/// `SELECT <each column as text>` in a fixed column order.
pub(super) fn select_as_text(sql: &mut Sql, columns: &[Ident], alias: &str) {
    let dialect = sql.dialect();
    let texts: Vec<String> = sorted_columns(dialect, columns, alias)
        .iter()
        .map(|c| dialect.text_expr(c))
        .collect();
    sql.push("SELECT ").push(&texts.join(", "));
}

/// The fingerprint of the rows that `from` selects (it appends ` FROM …`).
/// Engines that can hash a row sum the hashes themselves and send one row;
/// the others send every row as text to be hashed here. The two ways give
/// different values, each deterministic on its engine.
pub(super) async fn of(
    conn: &mut sqlx::AnyConnection,
    dialect: &'static dyn super::Dialect,
    columns: &[Ident],
    alias: &str,
    from: impl FnOnce(&mut Sql),
) -> Result<Fingerprint, WarehouseError> {
    let mut sql = Sql::new(dialect);
    let Some(hash) = dialect.row_hash(&sorted_columns(dialect, columns, alias)) else {
        select_as_text(&mut sql, columns, alias);
        from(&mut sql);
        return compute(sql.query().fetch(&mut *conn)).await;
    };
    let sum = dialect.text_expr(&format!("COALESCE(SUM({hash}), 0)"));
    sql.push("SELECT COUNT(*), ").push(&sum);
    from(&mut sql);
    let row = sql.query().fetch_one(&mut *conn).await?;
    let rows: i64 = sqlx::Row::try_get(&row, 0)?;
    let sum: String = sqlx::Row::try_get(&row, 1)?;
    let sum = sum.split('.').next().unwrap_or_default();
    Ok(Fingerprint {
        rows,
        sum: sum
            .parse()
            .map_err(|_| WarehouseError::Job(format!("unreadable fingerprint sum {sum}")))?,
    })
}

pub(super) async fn compute<'a>(
    mut rows: impl Stream<Item = Result<AnyRow, sqlx::Error>> + Unpin + 'a,
) -> Result<Fingerprint, WarehouseError> {
    let mut fp = Fingerprint::default();
    while let Some(row) = rows.try_next().await? {
        fp.add_row(&super::text_columns(&row)?);
    }
    Ok(fp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(rows: &[&[&str]]) -> Fingerprint {
        let mut f = Fingerprint::default();
        for r in rows {
            f.add_row(&r.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>());
        }
        f
    }

    #[test]
    fn order_does_not_matter_but_duplicates_do() {
        let a = fp(&[&["1", "x"], &["2", "y"]]);
        let b = fp(&[&["2", "y"], &["1", "x"]]);
        assert_eq!(a, b);
        let doubled = fp(&[&["1", "x"], &["2", "y"], &["1", "x"], &["2", "y"]]);
        assert_ne!(a.sum, doubled.sum);
        assert_eq!(doubled.rows, 4);
        assert_ne!(fp(&[&["ab", "c"]]), fp(&[&["a", "bc"]]));
    }

    #[test]
    fn text_form_round_trips() {
        let a = fp(&[&["1", "x"]]);
        assert_eq!(Fingerprint::parse(&a.to_string()), Some(a));
    }
}
