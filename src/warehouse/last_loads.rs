//! What a partition's latest successful load left, read from the ledger
//! once for a run: a replace on an engine whose rows name their writer
//! trusts it instead of reading the window before it deletes.

use std::collections::HashMap;

use sqlx::Row;

use super::fingerprint::{self, Fingerprint};
use super::ledger::{AttemptStatus, TXID};
use super::ledger_targets::JobLedger;
use super::sql::Sql;
use super::{Dialect, Warehouse, WarehouseError};

/// What a partition's latest successful load left in its window, for a
/// replace on an engine whose rows name their writer: the load checks
/// that the window still holds exactly that load's rows (see
/// `load::replace`), so one read before the load may have gone stale
/// without harm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastLoad {
    /// The id of the load's transaction, as [`Dialect::transaction_ids`] gave it.
    pub txid: i64,
    pub fingerprint: Fingerprint,
    pub rows: i64,
}

/// The last loads a run may trust: rows carry the low 32 bits of their
/// writer's id, so a load 2^32 ids back could share them with a later
/// writer. Half of 2^31 leaves a run more ids than it could see given out.
const TRUSTED_TXID_AGE: i64 = 1 << 30;

/// Per partition named from `first` through `last`, its [`LastLoad`]: none
/// where the engine does not name writers, or the partition's latest
/// success has no transaction recorded, a fingerprint of another version
/// or a transaction too old to be told apart. Only loads into the job's
/// target now count ([`JobLedger`]).
fn last_loads_query(
    dialect: &'static dyn Dialect,
    job: &JobLedger,
    (first, last): (&str, &str),
) -> Option<Sql> {
    let ids = dialect.transaction_ids()?;
    let table = dialect.ledger_table();
    let mut sql = Sql::new(dialect);
    sql.push("SELECT l.partition_key, l.")
        .push(TXID)
        .push(", l.fingerprint, l.rows_after, ")
        .push(ids.next)
        .push(" FROM (SELECT partition_key, MAX(id) AS id FROM ")
        .table(&table)
        .push(" WHERE ");
    job.push_rows(&mut sql, "job", "definition_hash");
    sql.push(" AND partition_key >= ")
        .bind(first)
        .push(" AND partition_key <= ")
        .bind(last)
        .push(" AND status = ")
        .bind(AttemptStatus::Succeeded.as_str())
        .push(" GROUP BY partition_key) g JOIN ")
        .table(&table)
        .push(" l ON l.id = g.id");
    Some(sql)
}

/// One row of [`last_loads_query`], if the load it names can be trusted.
fn last_load_of(row: &sqlx::any::AnyRow) -> Result<Option<(String, LastLoad)>, WarehouseError> {
    let partition: String = row.try_get(0)?;
    let txid: Option<i64> = row.try_get(1)?;
    let text: Option<String> = row.try_get(2)?;
    let rows: i64 = row.try_get(3)?;
    let next: i64 = row.try_get(4)?;
    let (Some(txid), Some((fingerprint::VERSION, fp))) =
        (txid, text.as_deref().and_then(Fingerprint::parse))
    else {
        return Ok(None);
    };
    if !(0..TRUSTED_TXID_AGE).contains(&(next - txid)) || fp.rows != rows {
        return Ok(None);
    }
    Ok(Some((
        partition,
        LastLoad {
            txid,
            fingerprint: fp,
            rows,
        },
    )))
}

impl Warehouse {
    /// The [`LastLoad`]s of a job's partitions named from `first` through
    /// `last`, by name, read once for a run: empty on an engine whose rows
    /// do not name their writer.
    pub async fn last_loads(
        &self,
        job: &JobLedger,
        range: (&str, &str),
    ) -> Result<HashMap<String, LastLoad>, WarehouseError> {
        let mut out = HashMap::new();
        if !self.ledger_presence().await?.txid {
            return Ok(out);
        }
        let Some(sql) = last_loads_query(self.dialect(), job, range) else {
            return Ok(out);
        };
        for row in sql.query().fetch_all(&mut *self.pooled().await?).await? {
            if let Some((partition, load)) = last_load_of(&row)? {
                out.insert(partition, load);
            }
        }
        Ok(out)
    }
}
