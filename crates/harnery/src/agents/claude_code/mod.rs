//! Claude Code: where it keeps its files (the one resolver of its config
//! directory), its hook dialect ([`hooks`]) and the dialect of its own
//! record, the JSONL transcript and stream-json frames ([`record`], each
//! line's envelope in [`line`](mod@line)).

pub(crate) mod hooks;
pub(crate) mod line;
mod message;
pub(crate) mod record;

use std::path::{Path, PathBuf};

pub use hooks::{normalize, normalize_naming};

/// The environment variable that moves Claude Code's config directory.
pub(crate) const CONFIG_VAR: &str = "CLAUDE_CONFIG_DIR";

/// Claude Code's config directory: `$CLAUDE_CONFIG_DIR` when it is set and
/// not empty, else `.claude` in `user_home`.
pub fn config_dir(user_home: &Path) -> PathBuf {
    std::env::var_os(CONFIG_VAR)
        .filter(|v| !v.is_empty())
        .map_or_else(|| user_home.join(".claude"), PathBuf::from)
}

/// The folder of per-project transcript folders under `config_dir`.
pub(crate) fn projects_dir(config_dir: &Path) -> PathBuf {
    config_dir.join("projects")
}

/// The transcript file of `session_id` in one project folder.
pub(crate) fn transcript_in(project_dir: &Path, session_id: &str) -> PathBuf {
    project_dir.join(format!("{session_id}.jsonl"))
}

/// Every recorded transcript under `tests/fixtures/records` (the record
/// reader's tests read each of their lines).
#[cfg(test)]
fn recorded_transcripts() -> Vec<PathBuf> {
    fn under(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("the fixtures dir reads") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                under(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/records");
    under(Path::new(root), &mut out);
    out
}
