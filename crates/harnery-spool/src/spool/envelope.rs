//! The envelope: what the hook knew about a signal besides its bytes.
//!
//! Encoded as one compact JSON object inside each record (see
//! `spool-format/README.md`). Readers must ignore fields they do not know, so
//! new optional fields can be added without a format version bump.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod decode;

/// Spool format version written by this build.
pub const SPOOL_FORMAT_VERSION: u16 = 1;

/// How a record reached the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WritePath {
    /// Appended to the session's active segment under the lease.
    Segment,
    /// The lease was not had in time or the append failed: a fallback file.
    Fallback,
    /// The session directory was unusable: a dead-letter file.
    DeadLetter,
}

/// Metadata written with every record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    /// Spool format version (1).
    pub v: u16,
    /// A fresh UUIDv7 per signal. A record written twice (a segment append
    /// whose fdatasync failed, then its fallback copy) keeps the same id, so
    /// readers de-duplicate on it.
    pub record_id: String,
    /// Adapter that produced the signal (`claude-code`, `copilot`, ...).
    pub adapter: String,
    /// Event name: Claude Code's `hook_event_name`, Copilot's argv event.
    pub event: Option<String>,
    /// The session id exactly as the payload gave it (`None` when absent).
    pub session_id: Option<String>,
    /// Directory name the session is spooled under (the id, or its hash).
    pub session_key: String,
    /// UTC wall time the hook received the signal, unix nanoseconds.
    pub received_ns: i64,
    /// Boot id at receive time.
    pub boot_id: Option<String>,
    /// `CLOCK_BOOTTIME` at receive time, nanoseconds.
    pub boottime_ns: Option<u64>,
    /// Process id of the writer.
    pub pid: u32,
    /// Version of the writing binary (`harnery-hook 0.1.0`).
    pub writer: String,
    /// Full length of the payload as received (may exceed the stored bytes).
    pub payload_len: u64,
    /// blake3 of the full payload as received, lowercase hex.
    pub payload_blake3: String,
    /// Only the first bytes were kept (payload above the size bound).
    #[serde(default)]
    pub truncated: bool,
    /// Stdin did not reach EOF in the time allowed; the bytes are what arrived.
    #[serde(default)]
    pub incomplete: bool,
    /// Which path wrote this record.
    pub write_path: WritePath,
    /// Why a fallback or dead-letter path was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    /// Agent environment values that later stages need.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// An [`Envelope`] decoded where it lies: its strings borrowed from the
/// record's bytes (copied only when they hold escapes). The finalizer reads
/// every record this way and copies only the few fields it keeps. The
/// fields mean what [`Envelope`]'s do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvelopeView<'a> {
    pub v: u16,
    pub record_id: Cow<'a, str>,
    pub adapter: Cow<'a, str>,
    pub event: Option<Cow<'a, str>>,
    pub session_id: Option<Cow<'a, str>>,
    pub session_key: Cow<'a, str>,
    pub received_ns: i64,
    pub boot_id: Option<Cow<'a, str>>,
    pub boottime_ns: Option<u64>,
    pub pid: u32,
    pub writer: Cow<'a, str>,
    pub payload_len: u64,
    pub payload_blake3: Cow<'a, str>,
    pub truncated: bool,
    pub incomplete: bool,
    pub write_path: WritePath,
    pub fallback_reason: Option<Cow<'a, str>>,
    pub env: BTreeMap<Cow<'a, str>, Cow<'a, str>>,
}

impl<'a> EnvelopeView<'a> {
    /// Decode an envelope as a record stores it: UTF-8 JSON, fields this
    /// build does not know ignored, absent optional fields defaulted, as
    /// [`Envelope`]'s `Deserialize` reads it. `None` when it does not
    /// decode (the record is then damaged).
    ///
    /// Every record's envelope passes through here, so the common shape is
    /// scanned directly; anything the scan does not settle goes to
    /// `serde_json` and the derived `Deserialize` of [`Envelope`], whose
    /// answer the scan agrees with wherever it gives one.
    pub fn from_json(bytes: &'a [u8]) -> Option<EnvelopeView<'a>> {
        let text = std::str::from_utf8(bytes).ok()?;
        decode::decode(text).or_else(|| {
            serde_json::from_str::<Envelope>(text)
                .ok()
                .map(EnvelopeView::from)
        })
    }

    /// The envelope with every string copied out.
    pub fn into_owned(self) -> Envelope {
        let owned = |text: Option<Cow<'_, str>>| text.map(Cow::into_owned);
        Envelope {
            v: self.v,
            record_id: self.record_id.into_owned(),
            adapter: self.adapter.into_owned(),
            event: owned(self.event),
            session_id: owned(self.session_id),
            session_key: self.session_key.into_owned(),
            received_ns: self.received_ns,
            boot_id: owned(self.boot_id),
            boottime_ns: self.boottime_ns,
            pid: self.pid,
            writer: self.writer.into_owned(),
            payload_len: self.payload_len,
            payload_blake3: self.payload_blake3.into_owned(),
            truncated: self.truncated,
            incomplete: self.incomplete,
            write_path: self.write_path,
            fallback_reason: owned(self.fallback_reason),
            env: self
                .env
                .into_iter()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        }
    }

    /// The captured environment as [`Envelope::env`] holds it (no
    /// allocation when there is none).
    pub fn env_owned(&self) -> BTreeMap<String, String> {
        self.env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl From<Envelope> for EnvelopeView<'static> {
    fn from(e: Envelope) -> EnvelopeView<'static> {
        let owned = |text: Option<String>| text.map(Cow::Owned);
        EnvelopeView {
            v: e.v,
            record_id: Cow::Owned(e.record_id),
            adapter: Cow::Owned(e.adapter),
            event: owned(e.event),
            session_id: owned(e.session_id),
            session_key: Cow::Owned(e.session_key),
            received_ns: e.received_ns,
            boot_id: owned(e.boot_id),
            boottime_ns: e.boottime_ns,
            pid: e.pid,
            writer: Cow::Owned(e.writer),
            payload_len: e.payload_len,
            payload_blake3: Cow::Owned(e.payload_blake3),
            truncated: e.truncated,
            incomplete: e.incomplete,
            write_path: e.write_path,
            fallback_reason: owned(e.fallback_reason),
            env: e
                .env
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), Cow::Owned(v)))
                .collect(),
        }
    }
}

/// Environment variables the hook copies into the envelope when set.
pub const CAPTURED_ENV: &[&str] = &[
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_CHILD_SESSION",
    "CLAUDE_PID",
    "COPILOT_CLI",
    "COPILOT_CLI_BINARY_VERSION",
    "COPILOT_CLI_RESOLVED_DIST_DIR",
    "COPILOT_HOOK_DIR",
    "COPILOT_PROJECT_DIR",
    "COPILOT_MODEL",
    "TRACEPARENT",
    "TRACESTATE",
];
