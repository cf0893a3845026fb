//! The ready spool (`spool/ready/`): canonical rows stamped with the
//! contract digest, waiting to be appended. One file per batch, written
//! atomically (temporary file, fsync, rename, fsync the directory) and
//! removed only after the ledger transaction that applied it committed.
//!
//! A drain no longer writes one for each of its batches (since 2026-12-07):
//! it appends the rows it holds in memory and deletes a batch's intake
//! files only once its commit is durable, so the intake spool is what a
//! stopped run leaves, and a ready file would be a second copy of it (a
//! third of the bytes a drain wrote; without it, 0.85 times the time).
//! What still reads and applies them: the start of every run and an
//! epoch's quiesce, for files an older build left (a build of before
//! then, killed mid-drain) or that a tool put there ([`fn@write`]).
//!
//! Format `harnery.ready.v4` (written): the line `harnery.ready.v4\n`, then
//! frames of `kind: u8 ‖ u64le(len) ‖ len bytes`, in this order: one `H`
//! (header JSON: format, batch, contract_digest, sources); an `S` per raw
//! signal; an `E` per event (its canonical text, byte for byte what the
//! ledger stores and hashes); a `T` per producer state. `S` and `T` hold
//! fields one after the other, not JSON: a text is `u32le(len) ‖ UTF-8`,
//! an optional text a `0` byte or a `1` byte and the text, a number eight
//! bytes little-endian. `S` is record_digest, adapter, session_key,
//! event_name?, received_unix_ns (i64), env?, archive_at (u64: the byte
//! offset of its record in the batch's raw archive, which is durable before
//! the ready file is written), a u32le count and that many event ids,
//! duplicate_of?. `T` is adapter, session_id, then the state's JSON text to
//! the end of the frame. No text is escaped: as JSON, every state (tens of
//! kilobytes of JSON) was escaped again as a string, once per session and
//! batch. The file is renamed into place only after its fsync, so a reader
//! never sees a torn one; any malformed frame refuses the whole file with
//! the frame number.
//!
//! Older formats are still read, so a ready file a crashed older build left
//! behind is applied: `harnery.ready.v3` (the same frames, but `S` is a JSON
//! object of the same fields by name and `T` the JSON of `{session,
//! state}`), and, with their raw bytes kept inline in the ledger,
//! `harnery.ready.v2` (v3's frames, without env and archive_at, each `S`
//! directly followed by a `V` with the envelope's JSON text and a `P` with
//! the payload bytes) and `harnery.ready.v1` (JSON lines: a header line
//! `{"header":{format, batch, contract_digest, sources}}`, then
//! `{"signal":…}` lines with the payload in base64, `{"event":<canonical
//! event text>}` and `{"state":…}`). `tests/fixtures/ready/` keeps a v3 file
//! as the last build that wrote v3 wrote it.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use self::fields::{Fields, put_count, put_optional, put_text};
use super::FinalizeError;
use crate::contract::{AdapterId, SessionRef};
use crate::durable;
use crate::home::Home;
use crate::ledger::{
    AppendBatch, BatchSignal, BatchState, RawBytes, ReadyEvent, create_dir_private,
};

mod fields;

pub(crate) const READY_FORMAT: &str = "harnery.ready.v4";
const READY_V1: &str = "harnery.ready.v1";
const V4_MAGIC: &[u8] = b"harnery.ready.v4\n";
const V3_MAGIC: &[u8] = b"harnery.ready.v3\n";
const V2_MAGIC: &[u8] = b"harnery.ready.v2\n";
const SUFFIX: &str = ".ready";

/// The framed formats; they differ in how a signal and a state are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framed {
    V2,
    V3,
    V4,
}

impl Framed {
    fn name(self) -> &'static str {
        match self {
            Framed::V2 => "harnery.ready.v2",
            Framed::V3 => "harnery.ready.v3",
            Framed::V4 => READY_FORMAT,
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    format: String,
    batch: String,
    contract_digest: String,
    sources: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Header(Header),
    Signal(SignalV1),
    Event(Box<RawValue>),
    State(BatchState),
}

/// `HARNERY_HOME/spool/ready`.
pub(crate) fn ready_dir(home: &Home) -> PathBuf {
    home.spool_dir().join("ready")
}

/// Pending ready files, oldest first (names start with a timestamp).
pub(crate) fn pending(home: &Home) -> Result<Vec<PathBuf>, FinalizeError> {
    let dir = ready_dir(home);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(FinalizeError::io(&dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| FinalizeError::io(&dir, e))?.path();
        if path.to_string_lossy().ends_with(SUFFIX) {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// The batch id a ready file's name carries.
pub(crate) fn batch_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    name.strip_suffix(SUFFIX).map(str::to_string)
}

/// Delete temporary files a killed run left half written (their batch was
/// never renamed into place, so its intake segments were never deleted and
/// will be drained again), and the spare files (`.spare-0` to `.spare-7`,
/// never read) that builds which wrote a ready file per batch kept for
/// reuse. Call only under the finalizer lease.
pub(crate) fn remove_orphans(home: &Home) -> Result<(), FinalizeError> {
    let dir = ready_dir(home);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    for entry in entries {
        let path = entry.map_err(|e| FinalizeError::io(&dir, e))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let spare = name
            .strip_prefix(".spare-")
            .is_some_and(|k| k.len() == 1 && k.as_bytes()[0].is_ascii_digit());
        if spare || (name.starts_with('.') && name.ends_with(".tmp")) {
            std::fs::remove_file(&path).map_err(|e| FinalizeError::io(&path, e))?;
        }
    }
    Ok(())
}

/// A fresh batch id: the run's time and a per-process sequence number (so
/// a run's files sort in creation order even under a pinned "now"), and a
/// random part.
pub(crate) fn new_batch_id(now_unix_ns: i64) -> String {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "{now_unix_ns:020}-{seq:08}-{}",
        uuid::Uuid::new_v4().simple()
    )
}

/// Write `batch` durably as one ready file; returns its path. The next
/// `finalize` applies it (tests put batches in the ledger this way).
pub fn write(home: &Home, batch: &AppendBatch) -> Result<PathBuf, FinalizeError> {
    let dir = ready_dir(home);
    create_dir_private(&dir)?;
    let path = dir.join(format!("{}{SUFFIX}", batch.id));
    let tmp = dir.join(format!(".{}.tmp", batch.id));
    let file = durable::create_private(&tmp).map_err(|e| FinalizeError::io(&tmp, e))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    write_frames(&mut out, batch).map_err(|e| FinalizeError::io(&tmp, e))?;
    let file = out
        .into_inner()
        .map_err(|e| FinalizeError::io(&tmp, e.into_error()))?;
    if crate::failpoint::fsync_fails() {
        return Err(FinalizeError::Durability(format!(
            "fsync of {} failed (injected)",
            tmp.display()
        )));
    }
    file.sync_all().map_err(|e| {
        FinalizeError::Durability(format!("fsync of {} failed: {e}", tmp.display()))
    })?;
    std::fs::rename(&tmp, &path).map_err(|e| FinalizeError::io(&path, e))?;
    durable::sync_dir(&dir)?;
    Ok(path)
}

/// A v3 `S` frame, or (without `env` and `archive_at`) a v2 one.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignalHeadOwned {
    record_digest: String,
    adapter: String,
    session_key: String,
    event_name: Option<String>,
    received_unix_ns: i64,
    #[serde(default)]
    env: Option<String>,
    #[serde(default)]
    archive_at: Option<u64>,
    event_ids: Vec<String>,
    duplicate_of: Option<String>,
}

/// A v1 `signal` line.
#[derive(Debug, Serialize, Deserialize)]
struct SignalV1 {
    record_digest: String,
    adapter: String,
    session_key: String,
    event_name: Option<String>,
    received_unix_ns: i64,
    envelope: String,
    #[serde(with = "b64")]
    payload: Vec<u8>,
    event_ids: Vec<String>,
    duplicate_of: Option<String>,
}

mod b64 {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

fn write_frames(out: &mut impl Write, batch: &AppendBatch) -> std::io::Result<()> {
    out.write_all(V4_MAGIC)?;
    let header = Header {
        format: READY_FORMAT.into(),
        batch: batch.id.clone(),
        contract_digest: batch.contract_digest.clone(),
        sources: batch.sources.clone(),
    };
    frame(out, b'H', &serde_json::to_vec(&header)?)?;
    let mut buf = Vec::new();
    for s in &batch.signals {
        buf.clear();
        signal_fields(&mut buf, s)?;
        frame(out, b'S', &buf)?;
    }
    for e in &batch.events {
        frame(out, b'E', e.json.as_bytes())?;
    }
    for s in &batch.states {
        buf.clear();
        put_text(&mut buf, s.session.adapter.as_str())?;
        put_text(&mut buf, &s.session.session_id)?;
        frame_of_two(out, b'T', &buf, s.state.as_bytes())?;
    }
    Ok(())
}

/// A signal's fields as a v4 `S` frame holds them.
fn signal_fields(buf: &mut Vec<u8>, s: &BatchSignal) -> std::io::Result<()> {
    let RawBytes::Archived { at } = s.bytes else {
        return Err(std::io::Error::other(format!(
            "signal {} has no place in the raw archive",
            s.record_digest
        )));
    };
    put_text(buf, &s.record_digest)?;
    put_text(buf, &s.adapter)?;
    put_text(buf, &s.session_key)?;
    put_optional(buf, s.event_name.as_deref())?;
    buf.extend_from_slice(&s.received_unix_ns.to_le_bytes());
    put_optional(buf, s.env.as_deref())?;
    buf.extend_from_slice(&at.to_le_bytes());
    put_count(buf, s.event_ids.len())?;
    for id in &s.event_ids {
        put_text(buf, id)?;
    }
    put_optional(buf, s.duplicate_of.as_deref())
}

fn frame(out: &mut impl Write, kind: u8, bytes: &[u8]) -> std::io::Result<()> {
    frame_of_two(out, kind, bytes, &[])
}

/// One frame whose body is `head` then `tail`, so a large tail is copied
/// once, into the file's buffer.
fn frame_of_two(out: &mut impl Write, kind: u8, head: &[u8], tail: &[u8]) -> std::io::Result<()> {
    out.write_all(&[kind])?;
    out.write_all(&((head.len() + tail.len()) as u64).to_le_bytes())?;
    out.write_all(head)?;
    out.write_all(tail)
}

/// Read a ready file back into a batch (any format); anything malformed
/// refuses the whole file with its line (v1) or frame (v2 on) number.
pub(crate) fn read(path: &Path) -> Result<AppendBatch, FinalizeError> {
    let bytes = std::fs::read(path).map_err(|e| FinalizeError::io(path, e))?;
    for (magic, version) in [
        (V4_MAGIC, Framed::V4),
        (V3_MAGIC, Framed::V3),
        (V2_MAGIC, Framed::V2),
    ] {
        if let Some(frames) = bytes.strip_prefix(magic) {
            return read_frames(path, frames, version);
        }
    }
    read_v1(path, &bytes)
}

/// The frames of a v4, v3 or v2 file (`version`); v2 signals carry their
/// envelope and payload in `V` and `P` frames.
fn read_frames(
    path: &Path,
    mut rest: &[u8],
    version: Framed,
) -> Result<AppendBatch, FinalizeError> {
    let bad = |n: usize, why: String| FinalizeError::BadReady {
        path: path.to_path_buf(),
        line: n,
        detail: format!("frame {n}: {why}"),
    };
    let inline = version == Framed::V2;
    let mut batch: Option<AppendBatch> = None;
    let mut n = 0;
    while !rest.is_empty() {
        n += 1;
        let (kind, body, after) = split_frame(rest).ok_or_else(|| bad(n, "cut short".into()))?;
        rest = after;
        let json_err = |e: serde_json::Error| bad(n, e.to_string());
        match (kind, batch.as_mut()) {
            (b'H', None) => {
                let h: Header = serde_json::from_slice(body).map_err(json_err)?;
                if h.format != version.name() {
                    return Err(bad(n, format!("unknown format {:?}", h.format)));
                }
                batch = Some(from_header(h));
            }
            (_, None) => return Err(bad(n, "the first frame must be the header".into())),
            (b'S', Some(b)) if version == Framed::V4 => b
                .signals
                .push(signal_v4(body).map_err(|why| bad(n, format!("signal {why}")))?),
            (b'T', Some(b)) if version == Framed::V4 => b
                .states
                .push(state_v4(body).map_err(|why| bad(n, format!("state {why}")))?),
            (b'S', Some(b)) => {
                let head: SignalHeadOwned = serde_json::from_slice(body).map_err(json_err)?;
                let bytes = if inline {
                    let (envelope, payload, after) = signal_parts(rest).ok_or_else(|| {
                        bad(
                            n + 1,
                            "a signal must be followed by its V and P frames".into(),
                        )
                    })?;
                    rest = after;
                    n += 2;
                    RawBytes::Inline { envelope, payload }
                } else {
                    let at = head
                        .archive_at
                        .ok_or_else(|| bad(n, "a signal without archive_at".into()))?;
                    RawBytes::Archived { at }
                };
                b.signals.push(signal_from(head, bytes));
            }
            (b'E', Some(b)) => {
                let text = std::str::from_utf8(body).map_err(|e| bad(n, e.to_string()))?;
                let event =
                    ReadyEvent::parse(text).map_err(|why| bad(n, format!("event {why}")))?;
                b.events.push(event);
            }
            (b'T', Some(b)) => b
                .states
                .push(serde_json::from_slice(body).map_err(json_err)?),
            (other, Some(_)) => return Err(bad(n, format!("unexpected frame kind {other:#04x}"))),
        }
    }
    batch.ok_or_else(|| bad(0, "empty ready file".into()))
}

/// A v4 `S` frame's signal.
fn signal_v4(body: &[u8]) -> Result<BatchSignal, String> {
    let mut f = Fields(body);
    // A struct expression evaluates its fields in the order written, which
    // is the order the frame holds them in.
    let signal = BatchSignal {
        record_digest: f.text()?.into(),
        adapter: f.text()?.into(),
        session_key: f.text()?.into(),
        event_name: f.optional()?.map(str::to_string),
        received_unix_ns: i64::from_le_bytes(f.word()?),
        env: f.optional()?.map(str::to_string),
        bytes: RawBytes::Archived {
            at: u64::from_le_bytes(f.word()?),
        },
        event_ids: {
            let n = f.count()?;
            (0..n)
                .map(|_| f.text().map(str::to_string))
                .collect::<Result<_, _>>()?
        },
        duplicate_of: f.optional()?.map(str::to_string),
    };
    f.end()?;
    Ok(signal)
}

/// A v4 `T` frame's state.
fn state_v4(body: &[u8]) -> Result<BatchState, String> {
    let mut f = Fields(body);
    let name = f.text()?;
    let adapter = AdapterId::parse(name).ok_or_else(|| format!("of unknown adapter {name:?}"))?;
    let session_id = f.text()?.to_string();
    Ok(BatchState {
        session: SessionRef {
            adapter,
            session_id,
        },
        state: f.rest()?.into(),
    })
}

/// The `V` (envelope text) and `P` (payload) frames after a v2 `S`.
fn signal_parts(bytes: &[u8]) -> Option<(String, Vec<u8>, &[u8])> {
    let (kind, envelope, rest) = split_frame(bytes)?;
    let envelope = std::str::from_utf8(envelope)
        .ok()
        .filter(|_| kind == b'V')?;
    let (kind, payload, rest) = split_frame(rest)?;
    (kind == b'P').then(|| (envelope.to_string(), payload.to_vec(), rest))
}

/// One frame off the front of `bytes`: its kind, body and what follows.
fn split_frame(bytes: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&kind, rest) = bytes.split_first()?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
    (len <= rest.len()).then(|| (kind, &rest[..len], &rest[len..]))
}

fn signal_from(h: SignalHeadOwned, bytes: RawBytes) -> BatchSignal {
    let env = match &bytes {
        RawBytes::Inline { envelope, .. } => env_of(envelope),
        RawBytes::Archived { .. } => h.env,
    };
    BatchSignal {
        record_digest: h.record_digest,
        adapter: h.adapter,
        session_key: h.session_key,
        event_name: h.event_name,
        received_unix_ns: h.received_unix_ns,
        env,
        bytes,
        event_ids: h.event_ids,
        duplicate_of: h.duplicate_of,
    }
}

/// The captured agent environment of an envelope's JSON text, as the
/// ledger keeps it (a JSON object, or nothing when it captured none).
fn env_of(envelope: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct EnvOnly {
        #[serde(default)]
        env: std::collections::BTreeMap<String, String>,
    }
    let parsed: EnvOnly = serde_json::from_str(envelope).ok()?;
    crate::ledger::raw::env_text(&parsed.env)
}

/// A `harnery.ready.v1` file (JSON lines), as a crashed older run left it.
fn read_v1(path: &Path, bytes: &[u8]) -> Result<AppendBatch, FinalizeError> {
    let bad = |n: usize, why: String| FinalizeError::BadReady {
        path: path.to_path_buf(),
        line: n,
        detail: why,
    };
    let mut batch: Option<AppendBatch> = None;
    for (i, line) in bytes.lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| FinalizeError::io(path, e))?;
        let parsed: Line = serde_json::from_str(&line).map_err(|e| bad(n, e.to_string()))?;
        match (parsed, batch.as_mut()) {
            (Line::Header(h), None) if h.format == READY_V1 => batch = Some(from_header(h)),
            (Line::Header(h), None) => {
                return Err(bad(n, format!("unknown format {:?}", h.format)));
            }
            (_, None) => return Err(bad(n, "the first line must be the header".into())),
            (Line::Header(_), Some(_)) => return Err(bad(n, "a second header".into())),
            (Line::Signal(s), Some(b)) => b.signals.push(BatchSignal {
                record_digest: s.record_digest,
                adapter: s.adapter,
                session_key: s.session_key,
                event_name: s.event_name,
                received_unix_ns: s.received_unix_ns,
                env: env_of(&s.envelope),
                bytes: RawBytes::Inline {
                    envelope: s.envelope,
                    payload: s.payload,
                },
                event_ids: s.event_ids,
                duplicate_of: s.duplicate_of,
            }),
            (Line::State(s), Some(b)) => b.states.push(s),
            (Line::Event(raw), Some(b)) => {
                let event =
                    ReadyEvent::parse(raw.get()).map_err(|why| bad(n, format!("event {why}")))?;
                b.events.push(event);
            }
        }
    }
    batch.ok_or_else(|| bad(0, "empty ready file".into()))
}

fn from_header(h: Header) -> AppendBatch {
    AppendBatch {
        id: h.batch,
        contract_digest: h.contract_digest,
        sources: h.sources,
        signals: Vec::new(),
        events: Vec::new(),
        states: Vec::new(),
    }
}

/// Remove a ready file after its batch committed. Not fsynced: a ready
/// file that reappears after a crash names a batch the ledger already
/// records as applied, so the next run only removes it again.
pub(crate) fn remove(path: &Path) -> Result<(), FinalizeError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(FinalizeError::io(path, e)),
    }
}

#[cfg(test)]
mod tests;
