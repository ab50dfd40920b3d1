//! Why a backfill could not be planned.

use crate::warehouse::WarehouseError;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Warehouse(#[from] WarehouseError),
    #[error("--from {from} is after --to {to}")]
    EmptyRange { from: String, to: String },
    /// `--from` alone, after the range's default end.
    #[error("--from {from} is after {to_is} (the default --to): choose --from {to} or earlier")]
    FromAfterDefaultTo {
        from: String,
        to: String,
        to_is: String,
    },
    /// `--to` alone, before the job's first partition.
    #[error(
        "--to {to} is before {job}'s first partition {start} (its start, the default --from): choose --to {start} or later"
    )]
    ToBeforeStart {
        job: String,
        to: String,
        start: String,
    },
    /// Neither bound given, and the job's first partition has not ended.
    #[error(
        "{job}'s start {start} is in the future or not over yet (its first partition ends {end} UTC): there is nothing to run until then"
    )]
    StartsLater {
        job: String,
        start: String,
        end: String,
    },
    #[error(
        "{partition} is outside {job}'s partitions ({first} to {last}); choose a range inside them"
    )]
    OutOfRange {
        job: String,
        partition: String,
        first: String,
        last: String,
    },
    #[error(
        "{partition} has not ended yet (it ends {end} UTC): loading it now would record a window its source is still filling. Choose --to {last_complete} or earlier, or pass --allow-incomplete to load it anyway (it then stays pending, never final)"
    )]
    Incomplete {
        partition: String,
        end: String,
        last_complete: String,
    },
    #[error(
        "{partition} has not begun: there is nothing to load yet. --allow-incomplete loads the window open now ({open}) and those before it; choose --to {open} or earlier"
    )]
    NotBegun { partition: String, open: String },
}
