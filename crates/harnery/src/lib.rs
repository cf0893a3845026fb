//! harnery: every rule of the recorder and finalizer for AI coding agents.
//!
//! The `harnery` binary (the workspace root) only parses arguments, calls in
//! here, and prints; the hook's hot path lives below this crate, in
//! `harnery-spool`, whose `home`, `clock` and `spool` are re-exported here.
//! Layers, from the bottom up:
//! `home`, `clock`, `spool`, `now` → `contract` → `agents`, `ledger` → `session` →
//! `finalize`, `epoch`, `report`, `export`, `operator`, `recover`, `restore`, `install`, `demo`
//! → `view`, `fleet`, `search` → `serve`.

pub use harnery_spool::{clock, failpoint, home, spool};

pub mod agents;
pub(crate) mod config;
pub mod contract;
pub mod demo;
pub(crate) mod durable;
pub mod epoch;
pub mod export;
pub mod finalize;
pub(crate) mod fingerprint;
pub mod fleet;
pub mod import;
pub mod install;
pub mod ledger;
pub mod mcp;
pub mod now;
pub mod operator;
pub(crate) mod ordered;
pub mod otlp;
pub mod progress;
pub mod recover;
pub mod report;
pub mod restore;
pub mod search;
pub mod serve;
pub mod session;
pub mod terminal;
pub mod view;
