//! Archived epochs: the move into `ledgers/v2-candidates/<genesis-id>/`,
//! the tree manifest and path fence that come with it, the read-only
//! state, and the administrative closure of what an archive left
//! unfinished (recorded in the next epoch's anchor).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{EpochError, io};
use crate::contract::SessionRef;
use crate::contract::eligibility::{
    COMMAND_PAIRING_INCOMPLETE, END_REQUEST_SUPERSEDED, TOOL_PAIRING_INCOMPLETE,
};
use crate::durable;
use crate::home::Home;
use crate::ledger::{
    Anchor, CANDIDATES_DIR, ClosedSession, Closure, FENCE_FILE, GENESIS_FILE, GenesisManifest,
    LedgerError, LedgerReader,
};

pub(crate) const MANIFEST_FILE: &str = "MANIFEST.json";

/// Every file of an archived tree with its size and blake3.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeManifest {
    pub genesis_id: String,
    pub files: Vec<ManifestEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub path: String,
    pub size: u64,
    pub blake3: String,
}

impl TreeManifest {
    /// Describe every regular file under `dir` except the manifest itself.
    pub fn build(dir: &Path, genesis_id: &str) -> Result<TreeManifest, EpochError> {
        let mut files = Vec::new();
        walk(dir, dir, &mut files)?;
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(TreeManifest {
            genesis_id: genesis_id.to_string(),
            files,
        })
    }

    /// Read the manifest stored in `dir`.
    pub fn read(dir: &Path) -> Result<TreeManifest, EpochError> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read(&path).map_err(io(&path))?;
        serde_json::from_slice(&text).map_err(|e| EpochError::Manifest {
            path,
            detail: e.to_string(),
        })
    }

    /// Every way `dir` differs from its manifest, one line per file:
    /// altered, missing or added.
    ///
    /// A listed temporary file of the archive's own bookkeeping that is
    /// gone is no difference: an earlier build's advance, resumed after a
    /// kill inside its manifest write, may have listed the killed write's
    /// `.MANIFEST.json.tmp` and then renamed that very file to
    /// `MANIFEST.json`. It never held the epoch's data. Found on disk, such
    /// a file is still reported as added.
    pub(crate) fn check(dir: &Path) -> Result<Vec<String>, EpochError> {
        let want = TreeManifest::read(dir)?;
        let got = TreeManifest::build(dir, &want.genesis_id)?;
        let have: BTreeMap<&str, &ManifestEntry> =
            got.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let listed: BTreeMap<&str, &ManifestEntry> =
            want.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let mut problems = Vec::new();
        for (path, entry) in &listed {
            match have.get(path) {
                None if is_bookkeeping_leftover(path) => {}
                None => problems.push(format!("{path}: missing (listed in the manifest)")),
                Some(found) if found != entry => problems.push(format!(
                    "{path}: altered ({} bytes, blake3 {}; the manifest says {} bytes, blake3 {})",
                    found.size, found.blake3, entry.size, entry.blake3
                )),
                Some(_) => {}
            }
        }
        for path in have.keys().filter(|p| !listed.contains_key(*p)) {
            problems.push(format!("{path}: added (not in the manifest)"));
        }
        Ok(problems)
    }
}

/// The files an advance writes into the tree it archives (the fence, the
/// manifest) are written through a temporary file; a run killed inside
/// such a write leaves that file behind.
fn bookkeeping_leftovers() -> [String; 2] {
    [FENCE_FILE, MANIFEST_FILE].map(durable::temp_name)
}

fn is_bookkeeping_leftover(rel: &str) -> bool {
    bookkeeping_leftovers().iter().any(|name| name == rel)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<ManifestEntry>) -> Result<(), EpochError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
        if meta.is_dir() {
            walk(root, &path, out)?;
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        if rel == MANIFEST_FILE || !meta.is_file() {
            continue;
        }
        out.push(ManifestEntry {
            path: rel,
            size: meta.len(),
            blake3: hash_file(&path)?,
        });
    }
    Ok(())
}

fn hash_file(path: &Path) -> Result<String, EpochError> {
    let mut file = std::fs::File::open(path).map_err(io(path))?;
    let mut h = blake3::Hasher::new();
    std::io::copy(&mut file, &mut h).map_err(io(path))?;
    Ok(h.finalize().to_hex().to_string())
}

/// Fold the live epoch's WAL into its database (the one change allowed
/// before the manifest is taken), fence it, manifest it, move it under
/// `target` and make it read-only. Rerunning after a crash at any point
/// does the remaining steps: nothing here depends on a step not redone.
pub(super) fn archive_live(home: &Home, live: &Path, target: &Path) -> Result<(), EpochError> {
    let genesis_id = GenesisManifest::read(&live.join(GENESIS_FILE))?.genesis_id;
    // A killed run's half-written fence or manifest is not the epoch's:
    // the manifest must describe the epoch, never a leftover of the
    // advance itself (the write below would rename it away once listed).
    for leftover in bookkeeping_leftovers() {
        remove_file_if_there(&live.join(leftover))?;
    }
    crate::ledger::fold_wal(live)?;
    for leftover in ["ledger.sqlite-wal", "ledger.sqlite-shm"] {
        remove_empty_leftover(&live.join(leftover))?;
    }
    let fence = serde_json::json!({
        "genesis_id": genesis_id,
        "archived": true,
        "note": "archived epoch: read-only, never appended to or repaired",
    });
    durable::write_atomic(
        &live.join(FENCE_FILE),
        fence.to_string().as_bytes(),
        durable::Mode::Private,
    )?;
    let manifest = TreeManifest::build(live, &genesis_id)?;
    let text = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
    durable::write_atomic(&live.join(MANIFEST_FILE), &text, durable::Mode::Private)?;
    let parent = home.ledgers_dir().join(CANDIDATES_DIR);
    crate::ledger::create_dir_private(&parent)?;
    std::fs::rename(live, target).map_err(io(target))?;
    durable::sync_dir(&parent)?;
    durable::sync_dir(&home.ledgers_dir())?;
    make_read_only(target)
}

/// A `-wal` left by a reader that still had the database open is empty
/// once folded, and a `-shm` is only an index of it: neither holds data.
/// A non-empty WAL would, and is never removed.
fn remove_empty_leftover(path: &Path) -> Result<(), EpochError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.len() == 0 || path.extension().is_some_and(|e| e == "sqlite-shm") => {
            std::fs::remove_file(path).map_err(io(path))
        }
        Ok(_) => Err(EpochError::Manifest {
            path: path.to_path_buf(),
            detail: "the WAL still holds frames after the fold; nothing was archived".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(path)(e)),
    }
}

fn remove_file_if_there(path: &Path) -> Result<(), EpochError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path)(e)),
        _ => Ok(()),
    }
}

/// Files 0400, directories 0500 (idempotent: a resumed advance reapplies it).
pub(super) fn make_read_only(dir: &Path) -> Result<(), EpochError> {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
        if meta.is_dir() {
            make_read_only(&path)?;
        } else if meta.is_file() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400))
                .map_err(io(&path))?;
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o500)).map_err(io(dir))
}

/// Every file or directory below `dir` (and `dir` itself) that has a
/// write bit.
pub(crate) fn writable_paths(dir: &Path) -> Result<Vec<String>, EpochError> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
        if meta.permissions().mode() & 0o222 != 0 {
            let rel = path.strip_prefix(dir).unwrap_or(&path);
            out.push(if rel.as_os_str().is_empty() {
                ".".to_string()
            } else {
                rel.to_string_lossy().into_owned()
            });
        }
        if meta.is_dir() {
            for e in std::fs::read_dir(&path).map_err(io(&path))? {
                stack.push(e.map_err(io(&path))?.path());
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The anchor a new epoch takes from the archive of `genesis_id`: its
/// chain head, and the administrative closure of what it left unfinished.
pub(super) fn anchor_of(home: &Home, genesis_id: &str) -> Result<Anchor, EpochError> {
    let rel = PathBuf::from("ledgers")
        .join(CANDIDATES_DIR)
        .join(genesis_id);
    let dir = home.root().join(&rel);
    make_read_only(&dir)?;
    let problems = TreeManifest::check(&dir)?;
    if let Some(p) = problems.first() {
        return Err(EpochError::CandidateGate(format!("{}: {p}", dir.display())));
    }
    let ledger = LedgerReader::open_dir(&dir, None)?;
    Ok(Anchor {
        genesis_id: genesis_id.to_string(),
        schema_digest: ledger.genesis().schema_digest.clone(),
        terminal_segment_digest: ledger.chain_head()?,
        events: ledger.events().event_count()?,
        archive: rel.to_string_lossy().into_owned(),
        closure: Some(closure_of(&ledger)?),
    })
}

/// What an epoch leaves unfinished: sessions with open spans or pending
/// end requests. Read from its span and end-request rows, so it is known
/// even when this build cannot read the epoch's events.
pub fn closure_of(ledger: &LedgerReader) -> Result<Closure, LedgerError> {
    let mut by: BTreeMap<SessionRef, ClosedSession> = BTreeMap::new();
    let blank = |s: &SessionRef| ClosedSession {
        session: s.clone(),
        open_tool_spans: Vec::new(),
        open_command_spans: Vec::new(),
        superseded_end_requests: Vec::new(),
        reasons: Vec::new(),
    };
    for span in ledger.spans().open()? {
        let row = by
            .entry(span.session.clone())
            .or_insert_with(|| blank(&span.session));
        if span.kind == "command" {
            row.open_command_spans.push(span.request_event_id);
        } else {
            row.open_tool_spans.push(span.request_event_id);
        }
    }
    for end in ledger.ends().pending()? {
        by.entry(end.session.clone())
            .or_insert_with(|| blank(&end.session))
            .superseded_end_requests
            .push(end.end_event_id);
    }
    let sessions = by
        .into_values()
        .map(|mut row| {
            row.superseded_end_requests.sort();
            if !row.open_tool_spans.is_empty() {
                row.reasons.push(TOOL_PAIRING_INCOMPLETE.into());
            }
            if !row.open_command_spans.is_empty() {
                row.reasons.push(COMMAND_PAIRING_INCOMPLETE.into());
            }
            if !row.superseded_end_requests.is_empty() {
                row.reasons.push(END_REQUEST_SUPERSEDED.into());
            }
            row
        })
        .collect();
    Ok(Closure { sessions })
}

/// A session an archived epoch left with open spans or a pending end: it
/// is audit-only (ADR 0078, disposition of pre-advance epochs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchivedSession {
    pub genesis_id: String,
    pub session: SessionRef,
    pub open_tool_spans: u64,
    pub open_command_spans: u64,
    pub superseded_end_requests: u64,
    pub reasons: Vec<String>,
}

/// Sessions left unfinished in any archived epoch: the closure each advance
/// recorded, or for an archive whose advance recorded none (an older
/// build's), the same facts read from the archive's rows.
pub fn archived_open_span_sessions(home: &Home) -> Result<Vec<ArchivedSession>, EpochError> {
    let entries = super::list::epochs(home)?;
    let mut recorded = super::list::closures(&entries);
    let mut out = Vec::new();
    for entry in entries.iter().filter(|e| !e.live) {
        let sessions = match recorded.remove(&entry.genesis_id) {
            Some(sessions) => sessions,
            None => match entry.open(home).and_then(|l| closure_of(&l)) {
                Ok(c) => c.sessions,
                Err(_) => continue,
            },
        };
        out.extend(sessions.into_iter().map(|c| ArchivedSession {
            genesis_id: entry.genesis_id.clone(),
            session: c.session,
            open_tool_spans: c.open_tool_spans.len() as u64,
            open_command_spans: c.open_command_spans.len() as u64,
            superseded_end_requests: c.superseded_end_requests.len() as u64,
            reasons: c.reasons,
        }));
    }
    Ok(out)
}
