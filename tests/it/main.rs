//! The integration suite: one test binary, one module per area. Every test
//! runs the real binaries (`harnery`, `harnery-hook`) over real files in a
//! temporary home; fixtures are under `tests/fixtures/` (captured from the
//! real clients), golden outputs under `tests/snapshots/`.

mod browser;
mod common;
mod fleet_support;
mod hook_support;
mod producer_support;
mod readside_support;
mod session_log_support;
mod usage_support;

mod archive_compact;
mod archive_compact_crash;
mod epoch_advance;
mod epoch_lifecycle;
mod export_otlp_proto;
mod export_stream;
mod export_trace_rows;
mod finalize_corpus;
mod finalize_crash;
mod finalize_records;
mod finalize_records_corpus;
mod finalize_wal;
mod fleet_security;
mod fleet_ship;
mod home_faults;
mod hook_bad_input;
mod hook_concurrency;
mod hook_corpus;
mod hook_kill;
mod hook_lease;
mod hostile_bytes;
mod install_roundtrip;
mod ledger_cli;
mod ledger_derive;
mod ledger_session_rows;
mod ledger_snapshot;
mod ledger_store;
mod ledger_verify_chunks;
mod producer_authority;
mod producer_corpus;
mod producer_props;
mod producer_rules;
mod progress_tty;
mod readside_cli;
mod readside_corpus;
mod readside_epochs;
mod readside_exec;
mod readside_rows;
mod readside_usage;
mod record_join;
mod record_normalizers;
mod record_paths;
mod record_turns;
mod record_usage;
mod recover_built;
mod recover_cli;
mod recover_corpus;
mod recover_policy;
mod session_log;
mod session_log_copilot;
mod session_prefixes;
mod spool_cli;
mod spool_seal;
mod view_browser;
