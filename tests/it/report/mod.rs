//! The read side: audit, receipts, health, usage, session rows, superseded reads.

pub(crate) mod support;
pub(crate) mod usage_support;

mod cli;
mod corpus;
mod epochs;
mod health_unhooked;
mod hostile_bytes;
pub(crate) mod record_usage;
mod session_list;
mod session_rows;
pub(crate) mod superseded;
pub(crate) mod titles;
mod usage;
mod usage_alone;
mod usage_cached;
pub(crate) mod usage_copies;
