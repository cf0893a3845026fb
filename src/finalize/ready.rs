//! The ready spool (`spool/ready/`): canonical rows stamped with the
//! contract digest, waiting to be appended. One file per batch, written
//! atomically (temporary file, fsync, rename, fsync the directory) and
//! deleted only after the ledger transaction that applied it committed.
//!
//! Format `harnery.ready.v1`, JSON lines: a header line
//! `{"header":{format, batch, contract_digest, sources}}`, then any number
//! of `{"signal":…}`, `{"event":<canonical event text>}` and `{"state":…}`
//! lines. The event text is kept byte for byte: it is what the ledger
//! stores and hashes.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::FinalizeError;
use crate::home::Home;
use crate::ledger::{
    AppendBatch, BatchSignal, BatchState, ReadyEvent, create_dir_private, durable,
};

pub const READY_FORMAT: &str = "harnery.ready.v1";
const SUFFIX: &str = ".ready";

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
    Signal(BatchSignal),
    Event(Box<RawValue>),
    State(BatchState),
}

/// `HARNERY_HOME/spool/ready`.
pub fn ready_dir(home: &Home) -> PathBuf {
    home.spool_dir().join("ready")
}

/// Pending ready files, oldest first (names start with a timestamp).
pub fn pending(home: &Home) -> Result<Vec<PathBuf>, FinalizeError> {
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

/// Delete temporary files a killed run left half written (their batch was
/// never renamed into place, so its intake segments were never deleted and
/// will be drained again). Call only under the finalizer lease.
pub fn remove_orphans(home: &Home) -> Result<(), FinalizeError> {
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
        if name.starts_with('.') && name.ends_with(".tmp") {
            std::fs::remove_file(&path).map_err(|e| FinalizeError::io(&path, e))?;
        }
    }
    Ok(())
}

/// A fresh batch id: the run's time and a per-process sequence number (so
/// a run's files sort in creation order even under a pinned "now"), and a
/// random part.
pub fn new_batch_id(now_unix_ns: i64) -> String {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "{now_unix_ns:020}-{seq:08}-{}",
        uuid::Uuid::new_v4().simple()
    )
}

/// Write `batch` durably as one ready file; returns its path.
pub fn write(home: &Home, batch: &AppendBatch) -> Result<PathBuf, FinalizeError> {
    let dir = ready_dir(home);
    create_dir_private(&dir)?;
    let path = dir.join(format!("{}{SUFFIX}", batch.id));
    let tmp = dir.join(format!(".{}.tmp", batch.id));
    let file = durable::create_private(&tmp).map_err(|e| FinalizeError::io(&tmp, e))?;
    let mut out = BufWriter::new(file);
    write_lines(&mut out, batch).map_err(|e| FinalizeError::io(&tmp, e))?;
    let file = out
        .into_inner()
        .map_err(|e| FinalizeError::io(&tmp, e.into_error()))?;
    if super::failpoint::fsync_fails() {
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

fn write_lines(out: &mut impl Write, batch: &AppendBatch) -> std::io::Result<()> {
    let header = Line::Header(Header {
        format: READY_FORMAT.into(),
        batch: batch.id.clone(),
        contract_digest: batch.contract_digest.clone(),
        sources: batch.sources.clone(),
    });
    put(out, &header)?;
    for s in &batch.signals {
        put(out, &Line::Signal(s.clone()))?;
    }
    for e in &batch.events {
        out.write_all(b"{\"event\":")?;
        out.write_all(e.json.as_bytes())?;
        out.write_all(b"}\n")?;
    }
    for s in &batch.states {
        put(out, &Line::State(s.clone()))?;
    }
    Ok(())
}

fn put(out: &mut impl Write, line: &Line) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

/// Read a ready file back into a batch; any malformed line refuses the
/// whole file with its line number.
pub fn read(path: &Path) -> Result<AppendBatch, FinalizeError> {
    let file = File::open(path).map_err(|e| FinalizeError::io(path, e))?;
    let bad = |n: usize, why: String| FinalizeError::BadReady {
        path: path.to_path_buf(),
        line: n,
        detail: why,
    };
    let mut batch: Option<AppendBatch> = None;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let n = i + 1;
        let line = line.map_err(|e| FinalizeError::io(path, e))?;
        let parsed: Line = serde_json::from_str(&line).map_err(|e| bad(n, e.to_string()))?;
        match (parsed, batch.as_mut()) {
            (Line::Header(h), None) if h.format == READY_FORMAT => batch = Some(from_header(h)),
            (Line::Header(h), None) => {
                return Err(bad(n, format!("unknown format {:?}", h.format)));
            }
            (_, None) => return Err(bad(n, "the first line must be the header".into())),
            (Line::Header(_), Some(_)) => return Err(bad(n, "a second header".into())),
            (Line::Signal(s), Some(b)) => b.signals.push(s),
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
/// records as applied, so the next run only deletes it again.
pub fn remove(path: &Path) -> Result<(), FinalizeError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(FinalizeError::io(path, e)),
    }
}
