//! The sessions an agent's record directory holds, by name and
//! modification time alone (for `health`'s check of sessions whose hooks
//! never ran harnery, and the records `harnery import` reads): never a
//! record's bytes.

use std::path::{Path, PathBuf};

use super::place::is_plain_id;

/// A session's record file as a listing found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordedFile {
    pub session_id: String,
    pub path: PathBuf,
    /// Its modification time (unix ns).
    pub modified_ns: i64,
    /// Its subagents' own records, each with the subagent's id (Claude
    /// Code's `<id>/subagents/agent-<agent id>.jsonl` beside it).
    pub subagents: Vec<(String, PathBuf)>,
}

impl RecordedFile {
    fn at(session_id: String, path: PathBuf) -> Option<RecordedFile> {
        let modified_ns = modified_ns(&path)?;
        Some(RecordedFile {
            session_id,
            path,
            modified_ns,
            subagents: Vec::new(),
        })
    }
}

/// Each file's session and modification time.
pub(crate) fn ids_and_times(files: Vec<RecordedFile>) -> Vec<(String, i64)> {
    files
        .into_iter()
        .map(|f| (f.session_id, f.modified_ns))
        .collect()
}

/// `<projects>/<project>/<id>.jsonl` for a plain id.
pub(crate) fn claude_sessions(projects: &Path) -> Vec<(String, i64)> {
    ids_and_times(claude_files(projects))
}

/// [`claude_sessions`], with each record's path.
pub(crate) fn claude_files(projects: &Path) -> Vec<RecordedFile> {
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
            out.extend(RecordedFile::at(id.to_string(), file.clone()).map(|mut f| {
                f.subagents = claude_subagents(&project.join(id).join("subagents"));
                f
            }));
        }
    }
    out
}

/// `agent-<agent id>.jsonl` in a Claude Code session's `subagents` folder,
/// for a plain agent id, by name.
fn claude_subagents(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = entries(dir)
        .filter_map(|file| {
            let name = file.file_name()?.to_str()?;
            let agent = name.strip_prefix("agent-")?.strip_suffix(".jsonl")?;
            is_plain_id(agent).then(|| (agent.to_string(), file.clone()))
        })
        .collect();
    out.sort();
    out
}

/// `<session-state>/<id>/events.jsonl` for a plain id.
pub(crate) fn copilot_sessions(state: &Path) -> Vec<(String, i64)> {
    ids_and_times(copilot_files(state))
}

/// [`copilot_sessions`], with each record's path.
pub(crate) fn copilot_files(state: &Path) -> Vec<RecordedFile> {
    entries(state)
        .filter_map(|dir| {
            let id = dir.file_name()?.to_str().filter(|id| is_plain_id(id))?;
            RecordedFile::at(id.to_string(), dir.join("events.jsonl"))
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
