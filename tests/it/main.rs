//! The integration suite: one test binary, one folder per library module.
//! Every test runs the real binaries (`harnery`, `harnery-hook`) over real
//! files in a temporary home; fixtures are under `tests/fixtures/` (captured
//! from the real clients), golden outputs under `tests/snapshots/`.

mod common;

mod agents;
mod epoch;
mod export;
mod finalize;
mod fleet;
mod hook;
mod import;
mod install;
mod ledger;
mod mcp;
mod operator;
mod otlp;
mod progress_tty;
mod real_home_guard;
mod recover;
mod report;
mod restore;
mod search;
mod serve;
mod session;
mod spool;
mod view;
