//! The finalizer: drains sealed intake spools into the ledger.

pub mod producer;
