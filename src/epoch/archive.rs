//! Archived epochs: the move into `ledgers/v2-candidates/<genesis-id>/`,
//! the tree manifest and path fence that come with it, and the audit facts
//! the read side needs about what an archive left unfinished.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{EpochError, io};
use crate::contract::SessionRef;
use crate::home::Home;
use crate::ledger::{Anchor, CANDIDATES_DIR, FENCE_FILE, Ledger, SpanState, durable};

pub const MANIFEST_FILE: &str = "MANIFEST.json";

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

    /// Whether `dir` still holds exactly what the manifest lists.
    pub fn check(dir: &Path) -> Result<Vec<String>, EpochError> {
        let path = dir.join(MANIFEST_FILE);
        let text = std::fs::read(&path).map_err(io(&path))?;
        let want: TreeManifest = serde_json::from_slice(&text)
            .map_err(|e| EpochError::CandidateGate(format!("{}: {e}", path.display())))?;
        let got = TreeManifest::build(dir, &want.genesis_id)?;
        let mut problems = Vec::new();
        if got.files != want.files {
            problems.push(format!("{} does not match its manifest", dir.display()));
        }
        Ok(problems)
    }
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
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        out.push(ManifestEntry {
            path: rel,
            size: meta.len(),
            blake3: blake3::hash(&bytes).to_hex().to_string(),
        });
    }
    Ok(())
}

/// Fold the live epoch into one file, fence it, manifest it, move it under
/// `target` and make it read-only.
pub(super) fn archive_live(home: &Home, live: &Path, target: &Path) -> Result<(), EpochError> {
    let ledger = Ledger::open_dir_write(live, 0, false)?;
    let genesis_id = ledger.genesis().genesis_id.clone();
    ledger.checkpoint_for_archive()?;
    for leftover in ["ledger.sqlite-wal", "ledger.sqlite-shm"] {
        let _ = std::fs::remove_file(live.join(leftover));
    }
    let fence = serde_json::json!({
        "genesis_id": genesis_id,
        "archived": true,
        "note": "archived epoch: read-only, never appended to or repaired",
    });
    durable::write_atomic(&live.join(FENCE_FILE), fence.to_string().as_bytes())?;
    let manifest = TreeManifest::build(live, &genesis_id)?;
    let text = serde_json::to_vec_pretty(&manifest).expect("manifest serializes");
    durable::write_atomic(&live.join(MANIFEST_FILE), &text)?;
    let parent = home.ledgers_dir().join(CANDIDATES_DIR);
    crate::ledger::create_dir_private(&parent)?;
    std::fs::rename(live, target).map_err(io(target))?;
    durable::sync_dir(&parent)?;
    durable::sync_dir(&home.ledgers_dir())?;
    make_read_only(target)
}

fn make_read_only(dir: &Path) -> Result<(), EpochError> {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        if path.is_dir() {
            make_read_only(&path)?;
        } else {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400))
                .map_err(io(&path))?;
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o500)).map_err(io(dir))
}

/// The anchor a new epoch takes from the archive of `genesis_id`.
pub(super) fn anchor_of(home: &Home, genesis_id: &str) -> Result<Anchor, EpochError> {
    let rel = PathBuf::from("ledgers")
        .join(CANDIDATES_DIR)
        .join(genesis_id);
    let dir = home.root().join(&rel);
    let problems = TreeManifest::check(&dir)?;
    if let Some(p) = problems.first() {
        return Err(EpochError::CandidateGate(p.clone()));
    }
    let ledger = Ledger::open_dir_read(&dir, None)?;
    Ok(Anchor {
        genesis_id: genesis_id.to_string(),
        schema_digest: ledger.genesis().schema_digest.clone(),
        terminal_segment_digest: ledger.chain_head()?,
        events: ledger.event_count()?,
        archive: rel.to_string_lossy().into_owned(),
    })
}

/// Every archived epoch directory, by name.
pub fn archived_epochs(home: &Home) -> Result<Vec<PathBuf>, EpochError> {
    let dir = home.ledgers_dir().join(CANDIDATES_DIR);
    let mut out = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for e in entries {
                let path = e.map_err(io(&dir))?.path();
                if path.join(FENCE_FILE).exists() {
                    out.push(path);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&dir)(e)),
    }
    out.sort();
    Ok(out)
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
    /// `tool_pairing_incomplete` and/or `command_pairing_incomplete`.
    pub reasons: Vec<String>,
}

/// Sessions left unfinished in any archived epoch.
pub fn archived_open_span_sessions(home: &Home) -> Result<Vec<ArchivedSession>, EpochError> {
    let mut out = Vec::new();
    for dir in archived_epochs(home)? {
        let ledger = Ledger::open_dir_read(&dir, None)?;
        let gid = ledger.genesis().genesis_id.clone();
        let mut by: BTreeMap<SessionRef, ArchivedSession> = BTreeMap::new();
        let blank = |s: &SessionRef| ArchivedSession {
            genesis_id: gid.clone(),
            session: s.clone(),
            open_tool_spans: 0,
            open_command_spans: 0,
            superseded_end_requests: 0,
            reasons: Vec::new(),
        };
        for span in ledger
            .spans(None)?
            .into_iter()
            .filter(|s| s.state == SpanState::Open)
        {
            let row = by
                .entry(span.session.clone())
                .or_insert_with(|| blank(&span.session));
            if span.kind == "command" {
                row.open_command_spans += 1;
            } else {
                row.open_tool_spans += 1;
            }
        }
        for end in ledger.pending_end_requests()? {
            by.entry(end.session.clone())
                .or_insert_with(|| blank(&end.session))
                .superseded_end_requests += 1;
        }
        for (_, mut row) in by {
            if row.open_tool_spans > 0 {
                row.reasons.push("tool_pairing_incomplete".into());
            }
            if row.open_command_spans > 0 {
                row.reasons.push("command_pairing_incomplete".into());
            }
            out.push(row);
        }
    }
    Ok(out)
}
