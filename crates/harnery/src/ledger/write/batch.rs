//! What one append writes: a ready batch (its events, raw signals and
//! producer states) and what the append made of it.

use crate::contract::{Event, SessionRef};

/// One canonical event of a batch: its stored text and its parsed form.
#[derive(Debug, Clone)]
pub struct ReadyEvent {
    /// Exactly the bytes that are stored and hashed.
    pub json: String,
    pub event: Event,
}

impl ReadyEvent {
    /// Serialize an event into its canonical stored text.
    pub fn new(event: Event) -> ReadyEvent {
        // Byte for byte what serde_json writes (tested in contract::json),
        // without its per-field machinery.
        let json = event.to_json();
        ReadyEvent { json, event }
    }

    /// Parse stored text, refusing anything that is not canonical.
    pub fn parse(json: &str) -> Result<ReadyEvent, String> {
        let event: Event =
            serde_json::from_str(json).map_err(|e| format!("does not parse: {e}"))?;
        let again = serde_json::to_string(&event).map_err(|e| e.to_string())?;
        if again != json {
            return Err("is not in canonical form".into());
        }
        Ok(ReadyEvent {
            json: json.to_string(),
            event,
        })
    }
}

/// One raw signal a batch drained: where its bytes are kept, what it
/// produced, and the few envelope facts the read side looks up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSignal {
    pub record_digest: String,
    pub adapter: String,
    pub session_key: String,
    pub event_name: Option<String>,
    pub received_unix_ns: i64,
    /// The envelope's captured agent environment as a JSON object, when
    /// it captured any.
    pub env: Option<String>,
    pub bytes: RawBytes,
    pub event_ids: Vec<String>,
    pub duplicate_of: Option<String>,
}

/// Where a raw signal's envelope and payload are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawBytes {
    /// In the batch's raw archive (`raw/<batch>.seg`), as the spool record
    /// that starts at this byte offset.
    Archived { at: u64 },
    /// In the row itself: ready files written before the raw archive
    /// existed carry the envelope text and the payload.
    Inline { envelope: String, payload: Vec<u8> },
}

/// A session's producer state after the batch, as serde JSON text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchState {
    pub session: SessionRef,
    pub state: std::sync::Arc<str>,
}

/// What one transaction appends.
#[derive(Debug, Clone)]
pub struct AppendBatch {
    pub id: String,
    pub contract_digest: String,
    /// Intake segments (relative to the home) this batch drained.
    pub sources: Vec<String>,
    pub signals: Vec<BatchSignal>,
    pub events: Vec<ReadyEvent>,
    pub states: Vec<BatchState>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOutcome {
    Appended {
        events: usize,
        signals: usize,
    },
    /// The batch was committed by an earlier run.
    AlreadyApplied,
}
