//! The producer's state as the ledger stores it (the bookkeeping table's
//! `producer_state`, as JSON): one flat object whose keys, order and
//! error wording are those of the stored rows, whatever parts the
//! producer is cut into in memory. Loading goes through this module's own
//! [`SessionProducer`]; saving writes the same keys from borrowed parts.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize, Serializer};

use super::deliveries::DeliveryMemory;
use super::emit::Stamp;
use super::ends::{EndRequests, PendingEnd};
use super::record::RecordFollow;
use super::session_log::SessionLogBook;
use super::spans::{SpanBook, SpanPairer};
use super::turns::TurnBook;
use crate::contract::SessionRef;

/// A stored state, as loaded. Named like the producer, so a row that is
/// not an object says it expected `struct SessionProducer` (the error
/// names the type itself, whatever it is renamed to).
#[derive(Deserialize)]
pub(super) struct SessionProducer {
    session: SessionRef,
    capability_digest: String,
    next_offset: u64,
    turns: TurnBook,
    spans: SpanBook,
    deliveries: DeliveryMemory,
    pending_end: Option<PendingEnd>,
    running_agents: BTreeSet<String>,
    span_cap_raised: bool,
    #[serde(default)]
    record: RecordFollow,
    #[serde(default)]
    log: SessionLogBook,
}

/// A state to store, borrowed from the producer's parts; the same keys in
/// the same order as the stored [`SessionProducer`].
#[derive(Serialize)]
struct StoredRef<'a> {
    session: &'a SessionRef,
    capability_digest: &'a str,
    next_offset: u64,
    turns: &'a TurnBook,
    spans: &'a SpanBook,
    deliveries: &'a DeliveryMemory,
    pending_end: &'a Option<PendingEnd>,
    running_agents: &'a BTreeSet<String>,
    span_cap_raised: bool,
    #[serde(skip_serializing_if = "record_unused")]
    record: &'a RecordFollow,
    #[serde(skip_serializing_if = "log_unused")]
    log: &'a SessionLogBook,
}

fn record_unused(record: &&RecordFollow) -> bool {
    record.is_unused()
}

fn log_unused(log: &&SessionLogBook) -> bool {
    log.is_unused()
}

impl From<SessionProducer> for super::SessionProducer {
    fn from(stored: SessionProducer) -> super::SessionProducer {
        super::SessionProducer {
            stamp: Stamp {
                session: stored.session,
                capability_digest: stored.capability_digest,
                next_offset: stored.next_offset,
            },
            turns: stored.turns,
            pairer: SpanPairer {
                spans: stored.spans,
                running_agents: stored.running_agents,
                span_cap_raised: stored.span_cap_raised,
            },
            deliveries: stored.deliveries,
            ends: EndRequests {
                pending: stored.pending_end,
            },
            record: stored.record,
            log: stored.log,
            policy_override: None,
        }
    }
}

impl Serialize for super::SessionProducer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StoredRef {
            session: &self.stamp.session,
            capability_digest: &self.stamp.capability_digest,
            next_offset: self.stamp.next_offset,
            turns: &self.turns,
            spans: &self.pairer.spans,
            deliveries: &self.deliveries,
            pending_end: &self.ends.pending,
            running_agents: &self.pairer.running_agents,
            span_cap_raised: self.pairer.span_cap_raised,
            record: &self.record,
            log: &self.log,
        }
        .serialize(serializer)
    }
}
