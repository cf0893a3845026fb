//! The read side: what a user learns from a finished ledger.
//!
//! The projections are pure over canonical events (`&[Event]`, in offset
//! order per session) plus, for health, facts gathered from the spool by
//! [`spool_facts`]. Nothing here writes, and nothing here reads agent dialects: the
//! rows mean what `contract` says they mean, and a recovered span stays
//! unknown however it is projected.
//!
//! - [`spans`]: pairing requests with terminals, shared by the others.
//! - [`receipts`]: per-turn latency receipts (known tool time vs recovery bounds).
//! - [`audit`]: evidence eligibility per session.
//! - [`health`]: loud conditions (span cap, ends, spool damage, stale spools).
//!   [`finalize_overdue`]: signals waiting and no finalize run for too long.
//! - [`export`](crate::export): JSON lines and OTLP/JSON traces.
//! - [`session_rows`]: health and pending ends from session-level rows.
//! - [`usage`]: model usage as the agents reported it, by session, day or
//!   model, and per turn; its [`usage::tally_ledger`] streams stored rows.
//!   [`agent_totals`]: the agents' own session totals beside it;
//!   [`usage_text`]: the table `usage` prints.
//! - [`session_list`]: the sessions `harnery sessions` lists, filtered and paged.
//! - [`stored_reasons`]: a session's audit reasons as one epoch's ledger holds them.
//! - [`superseded`]: a summary's counts without superseded ranges, and the
//!   session a restore started one from.
//! - [`unhooked`]: agents whose records show sessions the spool never saw
//!   (names and times of the agents' record files only, never their bytes).
//! - The commands' runs over the selected epochs: [`audit_sessions`]
//!   (`audit`), [`receipts_parts`] (`receipts`), [`replay`], [`usage_epochs`]
//!   (`usage`), [`validate`], [`verify`], [`spool_listing`] (`spool ls|cat`).
//! - [`timeline`]: a session's timeline for `show`, `view` and `serve`, and
//!   the wording of each of its lines; [`show`]: the parts `show` prints,
//!   marked and combined across epochs, or the entries around one offset.
//! - [`source`], [`epochs`], [`stored_reasons`], [`session_rows`], [`spool_facts`], [`timeline`]: the only parts that read storage, with
//!   the commands' runs above, through [`epochs`] ([`epochs`] opens the epochs `--epoch` selects, and finds a session's
//!   parts across their boundaries).

pub(crate) mod agent_totals;
pub mod ago;
pub mod audit;
pub mod audit_sessions;
pub mod epochs;
pub mod finalize_overdue;
pub mod health;
pub mod health_check;
pub(crate) mod inherited;
pub(crate) mod prices;
pub mod receipts;
pub mod receipts_parts;
pub(crate) mod record_state;
pub mod replay;
pub mod session_list;
pub mod session_rows;
pub mod show;
pub mod source;
pub(crate) mod spans;
pub mod spool_facts;
pub mod spool_listing;
pub mod stored_reasons;
pub(crate) mod superseded;
pub mod timeline;
pub mod unhooked;
pub mod usage;
pub(crate) mod usage_calls;
pub mod usage_doc;
pub mod usage_epochs;
pub(crate) mod usage_kinds;
pub(crate) mod usage_sums;
pub(crate) mod usage_text;
pub mod validate;
pub mod verify;

use std::collections::BTreeMap;

use crate::contract::{Event, SessionRef};

/// Group events by session, each group sorted by offset.
pub fn by_session(events: &[Event]) -> BTreeMap<SessionRef, Vec<&Event>> {
    let mut groups: BTreeMap<SessionRef, Vec<&Event>> = BTreeMap::new();
    for event in events {
        groups.entry(event.session.clone()).or_default().push(event);
    }
    for group in groups.values_mut() {
        group.sort_by_key(|e| e.offset);
    }
    groups
}

/// Nanoseconds to whole milliseconds (floor; negatives clamp to zero).
pub(crate) fn ns_to_ms(ns: i64) -> u64 {
    u64::try_from(ns.max(0) / 1_000_000).unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod testkit;
