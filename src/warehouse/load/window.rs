//! The window a replace owns on its target, as its statements filter it
//! and its log lines and errors write it.

use super::super::sql::Sql;
use super::super::{ColumnKind, WarehouseError};
use super::{Target, partition_column};
use crate::config::{Ident, TableName};
use crate::partition::Partition;

/// The window a replace owns on its target: the rows whose partition column
/// lies in the partition, compared as a value of the column's kind.
#[derive(Clone, Copy)]
pub(super) struct Window<'a> {
    pub(super) target: &'a TableName,
    pub(super) column: &'a Ident,
    pub(super) partition: &'a Partition,
    pub(super) kind: ColumnKind,
}

impl<'a> Window<'a> {
    pub(super) fn of(t: &Target<'a>) -> Result<Window<'a>, WarehouseError> {
        Ok(Window {
            target: &t.job.target,
            column: partition_column(t.job)?,
            partition: t.partition,
            kind: t.shape.partition_kind,
        })
    }

    /// The condition on the partition column alone.
    pub(super) fn filter(&self, sql: &mut Sql) {
        sql.window_filter_as("", self.column, self.partition, self.kind);
    }

    /// ` FROM target WHERE` the condition.
    pub(super) fn from(&self, sql: &mut Sql) {
        sql.push(" FROM ").table(self.target).push(" WHERE ");
        self.filter(sql);
    }

    /// `DELETE FROM target WHERE` the condition.
    pub(super) fn delete(&self, sql: &mut Sql) {
        sql.push("DELETE");
        self.from(sql);
    }

    /// The window as its log lines and errors write it
    /// ([`ColumnKind::bounds`]).
    pub(super) fn bounds(&self) -> String {
        self.kind.bounds(self.partition)
    }
}
