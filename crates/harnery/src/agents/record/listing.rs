//! The sessions an agent's record directory holds, by name and
//! modification time alone (for `health`'s check of sessions whose hooks
//! never ran harnery): never a record's bytes.

use std::path::{Path, PathBuf};

use super::place::is_plain_id;

/// `<projects>/<project>/<id>.jsonl` for a plain id.
pub(crate) fn claude_sessions(projects: &Path) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for project in entries(projects).filter(|p| p.is_dir()) {
        for file in entries(&project) {
            let Some(id) = file
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".jsonl"))
                .filter(|id| is_plain_id(id))
            else {
                continue;
            };
            out.extend(modified_ns(&file).map(|t| (id.to_string(), t)));
        }
    }
    out
}

/// `<session-state>/<id>/events.jsonl` for a plain id.
pub(crate) fn copilot_sessions(state: &Path) -> Vec<(String, i64)> {
    entries(state)
        .filter_map(|dir| {
            let id = dir.file_name()?.to_str().filter(|id| is_plain_id(id))?;
            let t = modified_ns(&dir.join("events.jsonl"))?;
            Some((id.to_string(), t))
        })
        .collect()
}

pub(crate) fn entries(dir: &Path) -> impl Iterator<Item = PathBuf> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
}

pub(crate) fn modified_ns(path: &Path) -> Option<i64> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.is_file()
        .then(|| meta.mtime() * 1_000_000_000 + meta.mtime_nsec())
}
