//! The names and payloads of harnery's own signals (see the parent module
//! for what each means): what `harnery end`, `exec`, `checkpoint`,
//! `restore` and the finalizer's record reader write, and the typed
//! `harnery.record` chunk they are read into.

use serde::Deserialize;

use crate::agents::record::{LineMark, RecordLine};

pub(crate) const END_REQUESTED: &str = "harnery.end_requested";
pub(crate) const COMMAND_REQUESTED: &str = "harnery.command_requested";
pub(crate) const COMMAND_COMPLETED: &str = "harnery.command_completed";
pub(crate) const RECORD: &str = "harnery.record";
pub(crate) const RECORD_PROBLEM: &str = "harnery.record_problem";
pub(crate) const CHECKPOINT: &str = "harnery.checkpoint";
pub const RESTORE: &str = "harnery.restore";
pub(crate) const IMPORT: &str = "harnery.import";
pub(crate) const TITLE: &str = "harnery.title";

/// How many bytes before a record cursor its fingerprint covers.
pub(crate) const FINGERPRINT_LEN: u64 = 4096;

/// The header line of a `harnery.record` payload.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct RecordChunkHeader {
    pub path: String,
    pub start: u64,
    pub end: u64,
    pub fingerprint: String,
    /// The chunk reaches the end the file had when it was read (a
    /// subagent's record, read after the subagent stopped, is then done).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub at_end: bool,
    /// The chunk is one line longer than the line ceiling, `end - start`
    /// bytes: only its first bytes are carried (as evidence), and it reads
    /// as one unrecognized line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub oversized_line: bool,
    /// The record file as the reader found it, on a chunk that reaches its
    /// end: the finalizer skips the record while it stays so (see
    /// [`RecordStamp`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<RecordStamp>,
}

/// A record file's identity, size and modification time, as one `fstat`
/// gave them when a chunk read it to its end. While `stat` gives the same
/// again, nothing was appended (the size would differ) and nothing was
/// rewritten (the modification time would): the finalizer does not open
/// the record. Only kept when the modification time was at least
/// [`RecordStamp::SETTLED_NS`] older than the reading, so a write in the
/// same clock tick as the read cannot hide behind an unchanged time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct RecordStamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
}

impl RecordStamp {
    /// How much older than the reading a modification time must be for the
    /// stamp to be kept (file systems keep times to a tick of a few ms).
    pub(crate) const SETTLED_NS: i64 = 2_000_000_000;

    pub(crate) fn of(meta: &std::fs::Metadata) -> RecordStamp {
        use std::os::unix::fs::MetadataExt;
        RecordStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
        }
    }

    /// Whether the file's time is settled at the wall-clock time `now_ns`.
    pub(crate) fn settled_at(&self, now_ns: i64) -> bool {
        self.mtime_ns.saturating_add(Self::SETTLED_NS) <= now_ns
    }
}

/// A `harnery.record` signal, read: its header and each whole line with
/// where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordChunk {
    pub header: RecordChunkHeader,
    pub lines: Vec<(LineAt, RecordLine)>,
    /// Lines that name another session than the one the chunk was spooled
    /// for (offset, the session named): refused, not read.
    pub foreign: Vec<(u64, String)>,
}

/// Where a line of a chunk stands in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineAt {
    /// The byte it starts at.
    pub offset: u64,
    /// Its length, its newline included.
    pub bytes: u32,
    /// What it is to a turn's end.
    pub mark: LineMark,
}

/// A `harnery.record` payload: the header line, then the bytes.
pub(crate) fn record_payload(header: &RecordChunkHeader, bytes: &[u8]) -> Vec<u8> {
    let mut out = serde_json::to_vec(header).expect("the header is plain JSON");
    out.push(b'\n');
    out.extend_from_slice(bytes);
    out
}

/// Whether an event name belongs to harnery rather than an agent.
pub(crate) fn is_harnery_event(event_name: &str) -> bool {
    event_name.starts_with("harnery.")
}

/// `harnery.end_requested`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
pub(crate) struct EndRequestPayload {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One operator effect of a `harnery.checkpoint` (`--effect KIND:REF`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct OperatorEffect {
    pub kind: String,
    #[serde(rename = "ref")]
    pub reference: String,
}

/// `harnery.checkpoint`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct CheckpointPayload {
    pub checkpoint_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<OperatorEffect>,
}

/// `harnery.restore`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct RestorePayload {
    pub checkpoint_id: String,
    pub boundary_offset: u64,
}

/// `harnery.command_requested`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub(crate) struct CommandRequestPayload {
    pub command_id: String,
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// `harnery.command_completed`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub(crate) struct CommandCompletionPayload {
    pub command_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// `harnery.import`: the session is read from the agent's own record at
/// `path`, found by `harnery import` with this size and modification time.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub(crate) struct ImportPayload {
    pub path: String,
    pub bytes: u64,
    pub modified_unix_ns: i64,
    /// Its subagents' own records, followed beside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<ImportedSubagent>,
}

/// A subagent's own record an import names.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, Deserialize)]
pub(crate) struct ImportedSubagent {
    pub agent_id: String,
    pub path: String,
}
