//! idem: re-run batch loads safely. Every partition is written in one
//! transaction, under a lock, by an idempotent strategy; the warehouse itself
//! says what is loaded.
#![forbid(unsafe_code)]
// Errors are handled, not unwrapped, outside tests.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod cli;
pub mod clock;
pub mod config;
pub mod demo;
pub mod engine;
pub mod exit;
pub mod lineage;
pub mod lint;
pub mod numbers;
pub mod partition;
pub mod runlog;
pub mod state;
pub mod terminal_text;
pub mod tui;
pub mod user_config;
pub mod warehouse;
pub mod xdg;
