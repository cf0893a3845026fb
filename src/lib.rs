//! harnery: a spool-first recorder and finalizer for AI coding agents.
//!
//! The library owns every rule; the two binaries in `bin/` only parse their
//! arguments and call in here. Layers, from the bottom up:
//! `home`, `clock` → `spool`, `contract` → `adapter`, `ledger` →
//! `finalize`, `epoch`, `read`, `operator`, `recover`, `install` → `view`,
//! `fleet` → `cli`.
//! The hook binary reaches only `home`, `clock` and `spool`.

pub mod adapter;
pub mod cli;
pub mod clock;
pub mod contract;
pub mod epoch;
pub mod finalize;
pub mod fingerprint;
pub mod fleet;
pub mod home;
pub mod install;
pub mod ledger;
pub mod operator;
pub mod progress;
pub mod read;
pub mod recover;
pub mod session_log;
pub mod spool;
pub mod terminal;
pub mod view;
