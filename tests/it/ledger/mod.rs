//! The ledger: the store, its derived rows, verify, the raw archive, a damaged home.

mod archive_compact;
mod archive_compact_crash;
mod archive_compact_default;
mod archive_pack;
mod cli;
mod compact_events;
mod compact_signals;
mod compaction_waiter;
mod derive;
mod home_faults;
mod raw_support;
mod session_rows;
mod snapshot;
mod store;
mod threads;
mod verify_chunks;
