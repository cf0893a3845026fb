//! Where a session's record stands, as `finalize` reads it before each
//! pass and `health` reports it: a cheap view of the stored producer
//! state ([`RecordCursor`]).

use serde::Deserialize;

use super::{RECORD_GRACE_NS, SETTLE_NS, SubagentRecord};
use crate::agents::harnery::RecordStamp;

/// Where a session's record stands, read from its stored producer state
/// alone: the rest of the state is skipped unparsed, so reading every
/// session's cursor stays cheap (`finalize` before each pass, `health`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct RecordCursor {
    /// The record file, once a hook named it or the finalizer found it.
    #[serde(default)]
    pub path: Option<String>,
    /// Bytes of the record read and applied.
    #[serde(default)]
    pub cursor: u64,
    /// blake3 (hex) of the bytes just before `cursor`.
    #[serde(default)]
    pub fingerprint: String,
    /// The problem last reported, if any.
    #[serde(default)]
    pub problem: Option<String>,
    /// Subagents' own records still to read.
    #[serde(default)]
    pub subagents: Vec<SubagentRecord>,
    /// Record calls held for their hook request (only their times are
    /// read here).
    #[serde(default)]
    pub held: Vec<HeldSince>,
    /// When the session's first prompt was ingested (see
    /// [`RecordCursor::expected_by`]).
    #[serde(default)]
    pub prompted_ns: Option<i64>,
    /// The record's title the session last took.
    #[serde(default)]
    pub title: Option<String>,
    /// The record file as it was when last read to its end.
    #[serde(default)]
    pub seen: Option<RecordStamp>,
}

/// When a held record call's line was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub(crate) struct HeldSince {
    pub time_unix_ns: i64,
}

impl RecordCursor {
    /// Whether a record that a hook named and that does not exist is
    /// missing at `now_ns` rather than pending: Claude Code writes its
    /// transcript only at the session's first prompt (a session opened and
    /// closed without one has none), and just after it, so it is missing
    /// only once the first prompt is [`RECORD_GRACE_NS`] old.
    pub(crate) fn expected_by(&self, now_ns: i64) -> bool {
        self.prompted_ns
            .is_some_and(|t| t.saturating_add(RECORD_GRACE_NS) <= now_ns)
    }

    /// When the oldest held call may be settled (`None`: none is held).
    pub(crate) fn held_due_ns(&self) -> Option<i64> {
        self.held.iter().map(|h| h.time_unix_ns + SETTLE_NS).min()
    }
}

impl RecordCursor {
    /// The cursor in a stored producer state (`None`: the state does not
    /// parse, which the drain that loads it reports).
    pub(crate) fn of_state(text: &str) -> Option<RecordCursor> {
        #[derive(Deserialize)]
        struct State {
            #[serde(default)]
            record: RecordCursor,
        }
        serde_json::from_str::<State>(text).ok().map(|s| s.record)
    }
}
