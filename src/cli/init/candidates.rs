//! Which of a warehouse's relations `idem init` offers as jobs, by which
//! column, and which it leaves out and why.

use crate::config::TableName;
use crate::partition::{Grain, Partition, RangeEnd};
use crate::warehouse::{Column, Engine, Placeholders, RelationKind, Warehouse, WarehouseError};

/// A table offered as a job, partitioned by one of its columns.
pub(super) struct Candidate {
    pub table: TableName,
    pub columns: Vec<Column>,
    pub partition_column: Column,
    pub other_time_columns: Vec<String>,
    /// Columns the table computes, which an INSERT may not write, with
    /// what each is: left out of the starter's SELECT.
    pub generated: Vec<(String, &'static str)>,
    pub grain: Grain,
    pub start: Partition,
    /// The column's first plausible date, as the warehouse writes it.
    pub first_value: Option<String>,
    /// Whether `first_value` is of every row, not only of the first rows
    /// read (the column has no index, and the table is big).
    pub first_value_exact: bool,
    /// Dates left out of `first_value` and the grain's reading as likely
    /// placeholders: before 1970, over a year after today.
    pub placeholders: Vec<Placeholders>,
}

/// Why a relation is not offered.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Why {
    /// A PostgreSQL partition, loaded through its parent (named).
    PartitionOf(String),
    View,
    MaterializedView,
    /// Another kind of relation, as the engine calls it.
    Other(String),
    NotPlain,
    /// A column whose name a config cannot write: a run refuses the table.
    ColumnNotPlain,
    NoDateColumn,
    /// A table the role may not read.
    Unreadable,
}

impl Why {
    fn says(&self) -> String {
        match self {
            Why::PartitionOf(parent) => {
                format!("partitions of {parent} (loaded through it, offered as {parent})")
            }
            Why::View => "views (idem loads into tables)".into(),
            Why::MaterializedView => {
                "materialized views (refreshed whole, never by partition)".into()
            }
            Why::Other(kind) => format!("{kind}s (idem loads into tables)"),
            Why::NotPlain => {
                "names a config cannot write (an ASCII letter or _, then ASCII letters, digits or _)".into()
            }
            Why::ColumnNotPlain => {
                "tables with a column whose name idem cannot write (a run refuses them: rename the column)".into()
            }
            Why::NoDateColumn => "tables with no date or timestamp column to partition by".into(),
            Why::Unreadable => {
                "tables this role may not read (a run needs USAGE on the schema and SELECT on the table)".into()
            }
        }
    }
}

/// What `idem init` found.
#[derive(Default)]
pub(super) struct Survey {
    pub candidates: Vec<Candidate>,
    /// Each relation left out, with why.
    pub skipped: Vec<(String, Why)>,
}

impl Survey {
    /// One line per reason: what it is, then the relations (at most ten
    /// named).
    pub fn skipped_lines(&self) -> Vec<String> {
        let mut reasons: Vec<&Why> = self.skipped.iter().map(|(_, why)| why).collect();
        reasons.sort();
        reasons.dedup();
        reasons
            .into_iter()
            .map(|why| {
                let names: Vec<String> = self
                    .skipped
                    .iter()
                    .filter(|(_, w)| w == why)
                    .map(|(name, _)| match why {
                        Why::NotPlain => format!("\"{name}\""),
                        _ => name.clone(),
                    })
                    .collect();
                let shown = names
                    .iter()
                    .take(10)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                let more = match names.len() {
                    n if n > 10 => format!(" and {} more", n - 10),
                    _ => String::new(),
                };
                format!("{}: {shown}{more}", why.says())
            })
            .collect()
    }
}

pub(super) async fn survey(warehouse: &Warehouse) -> Result<Survey, WarehouseError> {
    let engine = warehouse.dialect().engine();
    let mut survey = Survey::default();
    let relations = warehouse.relations().await?;
    for relation in &relations {
        let why = match &relation.kind {
            RelationKind::Table => None,
            RelationKind::PartitionOf(parent) => {
                Some(Why::PartitionOf(partitioned_root(&relations, parent)))
            }
            RelationKind::View => Some(Why::View),
            RelationKind::MaterializedView => Some(Why::MaterializedView),
            RelationKind::Other(kind) => Some(Why::Other(kind.clone())),
            RelationKind::Unreadable => Some(Why::Unreadable),
        };
        let table = match (why, relation.table()) {
            (Some(why), _) => {
                survey.skipped.push((relation.name.clone(), why));
                continue;
            }
            (None, None) => {
                survey.skipped.push((relation.name.clone(), Why::NotPlain));
                continue;
            }
            (None, Some(table)) => table,
        };
        let columns = warehouse.columns(&table).await?;
        let odd = warehouse.columns_not_plain(&table).await?;
        if !odd.is_empty() {
            let odd: Vec<String> = odd.iter().map(|c| format!("\"{c}\"")).collect();
            survey
                .skipped
                .push((format!("{table} ({})", odd.join(", ")), Why::ColumnNotPlain));
            continue;
        }
        let mut time_columns = Vec::new();
        for column in &columns {
            if !column.holds_instants(engine) {
                continue;
            }
            // The first dated column is the partition column: the others'
            // ranges are not read. SQLite's text needs its values read to
            // say whether it holds dates.
            if engine != Engine::Sqlite && !time_columns.is_empty() {
                time_columns.push((column.clone(), None));
                continue;
            }
            let range = warehouse.date_range_as_text(&table, column).await?;
            // SQLite declares dates as text: its values say whether they
            // are, each whole (not a note that begins with a date), those
            // beyond the plausible dates too (text sorts after them).
            let read: Vec<&String> = range
                .values
                .iter()
                .flat_map(|(min, max)| [min, max])
                .chain(
                    range
                        .placeholders
                        .iter()
                        .flat_map(|p| [&p.least, &p.greatest]),
                )
                .collect();
            let holds_dates = match engine {
                Engine::Sqlite if read.is_empty() => declares_time(column),
                Engine::Sqlite => read.into_iter().all(|v| is_date_text(v)),
                _ => true,
            };
            if holds_dates {
                time_columns.push((column.clone(), Some(range)));
            }
        }
        let mut time_columns = time_columns.into_iter();
        let Some((partition_column, range)) = time_columns.next() else {
            survey.skipped.push((table.to_string(), Why::NoDateColumn));
            continue;
        };
        let (values, first_value_exact, placeholders) = range
            .map_or((None, true, Vec::new()), |r| {
                (r.values, r.exact, r.placeholders)
            });
        // The last value too: the first rows read may all be of one day.
        let (first_value, last_value) = values.unzip();
        let mut sample = warehouse
            .date_sample_as_text(&table, &partition_column, super::grain::SAMPLE)
            .await?;
        sample.extend(last_value);
        let (grain, start) = super::grain::grain_and_start(
            partition_column.name.as_str(),
            first_value.as_deref(),
            &sample,
        );
        let generated = warehouse.generated_columns(&table).await?;
        survey.candidates.push(Candidate {
            generated,
            table,
            other_time_columns: time_columns.map(|(c, _)| c.name.to_string()).collect(),
            columns,
            partition_column,
            grain,
            start,
            first_value,
            first_value_exact,
            placeholders,
        });
    }
    Ok(survey)
}

/// The table a partition is loaded through: its parent's parent, and so
/// on, for a partition of a partition (`pt_2026_eu` of `pt_2026` of `pt`),
/// since only the topmost table is offered.
fn partitioned_root(relations: &[crate::warehouse::Relation], parent: &str) -> String {
    let mut root = parent.to_string();
    // Bounded by the number of relations, should the catalogue loop.
    for _ in 0..relations.len() {
        match relations.iter().find(|r| r.name == root).map(|r| &r.kind) {
            Some(RelationKind::PartitionOf(up)) => root = up.clone(),
            _ => break,
        }
    }
    root
}

fn declares_time(column: &Column) -> bool {
    let t = column.type_name.to_ascii_lowercase();
    t.contains("date") || t.contains("time")
}

/// A whole value written as a date or a time: `2026-06`, `2026-06-04`,
/// `2026-06-04T13`, `2026-06-04 13:22`, `2026-06-04 13:22:11.5`, with `T`
/// or a space, and an optional `Z` or UTC offset.
pub(super) fn is_date_text(value: &str) -> bool {
    use chrono::{DateTime, NaiveDate, NaiveDateTime};
    let value = value.trim();
    if !value
        .get(..5)
        .is_some_and(|y| y.ends_with('-') && y[..4].bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    let date_time = |v: &str| {
        [
            "%Y-%m-%d %H:%M:%S%.f",
            "%Y-%m-%dT%H:%M:%S%.f",
            "%Y-%m-%d %H:%M",
            "%Y-%m-%dT%H:%M",
        ]
        .iter()
        .any(|f| NaiveDateTime::parse_from_str(v, f).is_ok())
    };
    let without_zone = value
        .strip_suffix('Z')
        .or_else(|| {
            let cut = value.len().checked_sub(6)?;
            let zone = value.get(cut..)?;
            (zone.starts_with(['+', '-']) && zone.get(3..4) == Some(":")).then(|| &value[..cut])
        })
        .filter(|rest| rest.len() > 10);
    NaiveDate::parse_from_str(value, "%Y-%m-%d").is_ok()
        || date_time(value)
        || without_zone.is_some_and(date_time)
        || DateTime::parse_from_rfc3339(value).is_ok()
        || (value.len() == 7 && Partition::parse(Grain::Month, value, RangeEnd::From).is_some())
        || (value.len() == 13 && Partition::parse(Grain::Hour, value, RangeEnd::From).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_is_the_whole_value() {
        for date in [
            "2026-06-04",
            "2026-06",
            "2026-06-04T13",
            "2026-06-04 13:22",
            "2026-06-04 13:22:11",
            "2026-06-04T13:22:11.250",
            "2026-06-04T13:22:11Z",
            "2026-06-04 13:22:11+02:00",
        ] {
            assert!(is_date_text(date), "{date}");
        }
        for not in [
            "2026-01-01 is a note",
            "2026-01-01T",
            "2026-13-01",
            "alice@example.com",
            "DE",
            "20260604",
            "+2026-06-04",
        ] {
            assert!(!is_date_text(not), "{not}");
        }
    }
}
