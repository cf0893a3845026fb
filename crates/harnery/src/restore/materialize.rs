//! Giving a session back to its agent: its record up to a checkpoint
//! (`record_cut`) written as a NEW session of the agent, where the agent
//! looks for sessions, so the agent's own `--resume` of the new id starts
//! exactly there.
//!
//! - Claude Code: `<config dir>/projects/<project dir>/<new id>.jsonl`,
//!   the project dir the one the agent used for the session (Claude Code
//!   finds a session from the directory it starts in, and the shim starts
//!   it in the session's directory); the session id is the file's name.
//! - Copilot CLI: `<copilot home>/session-state/<new id>/events.jsonl`
//!   (the CLI recreates the rest); the id that counts is the one in
//!   `session.start`.
//!
//! The bytes are the archived record's, byte for byte, except that each
//! `"sessionId":"<old id>"` names the new id (an id the copy kept would
//! resume under the old identity). The file is created with `O_EXCL`
//! (and Copilot's session directory must be new), so a live file of the
//! agent is never overwritten; the new id must be a plain name. A file
//! that holds a beginning of those very bytes is a killed put-back's, and
//! its rerun completes it ([`write_new`]).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::agents::record::place::is_plain_id;
use crate::agents::{claude_code, copilot};
use crate::contract::AdapterId;

/// Why the record was not written.
#[derive(Debug, thiserror::Error)]
pub enum MaterializeError {
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MaterializeError + '_ {
    move |source| MaterializeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A fresh session id, as both agents spell theirs.
pub(crate) fn new_session_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// An id for the new session given on the command line: a plain name
/// (letters, digits, `.`, `_`, `-`), never a path.
pub(crate) fn check_new_id(id: &str) -> Result<(), MaterializeError> {
    if is_plain_id(id) {
        Ok(())
    } else {
        Err(MaterializeError::Refused(format!(
            "--new-id {id:?} is not a session id (a plain name: letters, digits, '.', '_', '-', \
             at most 128 bytes)"
        )))
    }
}

/// Claude Code's project directory for `cwd`: every character but an
/// ASCII letter or digit becomes `-` (`/tmp/a.b` → `-tmp-a-b`).
pub(crate) fn claude_project_dir(cwd: &str) -> Result<String, MaterializeError> {
    let slug: String = cwd
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    // Claude Code shortens longer names with a hash of its own.
    if !cwd.starts_with('/') || slug.len() > 200 {
        return Err(MaterializeError::Refused(format!(
            "the session's directory {cwd:?} does not name a Claude Code project directory"
        )));
    }
    Ok(slug)
}

/// Where the new session's record goes: see the module doc. `record` is
/// the path the agent wrote the original at (its project directory is
/// reused), `cwd` the session's directory.
pub(crate) fn destination(
    adapter: AdapterId,
    record: &str,
    cwd: Option<&str>,
    new_id: &str,
    user_home: &Path,
) -> Result<PathBuf, MaterializeError> {
    check_new_id(new_id)?;
    match adapter {
        AdapterId::ClaudeCode => {
            let folder = Path::new(record)
                .parent()
                .and_then(Path::file_name)
                .and_then(|n| n.to_str())
                .filter(|n| is_project_dir(n))
                .map(str::to_string);
            let folder = match (folder, cwd) {
                (Some(f), _) => f,
                (None, Some(cwd)) => claude_project_dir(cwd)?,
                (None, None) => {
                    return Err(MaterializeError::Refused(format!(
                        "{record}: not in a Claude Code project directory, and the session \
                         names no directory"
                    )));
                }
            };
            let projects = claude_code::projects_dir(&claude_code::config_dir(user_home));
            Ok(claude_code::transcript_in(&projects.join(folder), new_id))
        }
        AdapterId::Copilot => Ok(copilot::events_path(&copilot::home(user_home), new_id)),
        other => Err(unsupported(other)),
    }
}

/// Why a record of `adapter` is not written back: harnery writes the
/// records of Claude Code and Copilot only.
fn unsupported(adapter: AdapterId) -> MaterializeError {
    let agent = crate::agents::agent(adapter);
    MaterializeError::Refused(format!(
        "harnery cannot write a {} record back as a new session (it can for Claude Code and \
         Copilot); resume the session in {} itself",
        agent.name(),
        agent.name()
    ))
}

/// A name that can only be one directory below `projects/`.
fn is_project_dir(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && !name.contains('/')
        && !name.contains('\0')
        && name.len() <= 255
}

/// The members that name a line's session (Claude Code writes both).
const ID_KEYS: [&str; 2] = ["sessionId", "session_id"];

/// `bytes` with each `"sessionId":"<old>"` (or `"session_id"`) naming
/// `new` instead.
pub(crate) fn with_session_id(bytes: &[u8], old: &str, new: &str) -> Vec<u8> {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = ID_KEYS
        .iter()
        .map(|k| {
            let from = format!("\"{k}\":\"{old}\"").into_bytes();
            (from, format!("\"{k}\":\"{new}\"").into_bytes())
        })
        .collect();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    'bytes: while i < bytes.len() {
        if bytes[i] == b'"' {
            for (from, to) in &pairs {
                if bytes[i..].starts_with(from) {
                    out.extend_from_slice(to);
                    i += from.len();
                    continue 'bytes;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// How [`write_new`] left the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// It made the file.
    New,
    /// The file was there from an earlier run of the same put-back, killed
    /// before it finished: it held a beginning of `bytes` (now all of
    /// them) or all of them (the agent may have gone on in it since).
    Resumed,
}

/// Write `bytes` as a new file at `path` (never over an existing one;
/// Copilot's session directory must be new too), private (0600), synced.
///
/// A file already there that holds a beginning of `bytes`, or all of them,
/// is this very put-back's, left by a run killed after creating it: it is
/// completed, never rewritten ([`Written::Resumed`]). Anything else there
/// is the agent's own and refused.
pub(crate) fn write_new(
    adapter: AdapterId,
    path: &Path,
    bytes: &[u8],
) -> Result<Written, MaterializeError> {
    let dir = path
        .parent()
        .ok_or_else(|| MaterializeError::Refused(format!("{}: no directory", path.display())))?;
    match adapter {
        AdapterId::ClaudeCode => private_dirs(dir)?,
        AdapterId::Copilot => {
            let state = dir.parent().unwrap_or(dir);
            private_dirs(state)?;
            let made = std::fs::DirBuilder::new().mode(0o700).create(dir);
            // A killed run may have made the directory and no more.
            if let Err(e) = made
                && !(e.kind() == std::io::ErrorKind::AlreadyExists && holds_only(dir, path)?)
            {
                return Err(exists_or_io(dir, e));
            }
        }
        other => return Err(unsupported(other)),
    }
    if complete_own(path, bytes)? {
        return Ok(Written::Resumed);
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| exists_or_io(path, e))?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if let Err(e) = written {
        // Only our own, new file is taken back.
        let _ = std::fs::remove_file(path);
        return Err(io(path)(e));
    }
    sync_dir(dir);
    Ok(Written::New)
}

/// Whether `dir` holds nothing but (perhaps) `file`.
fn holds_only(dir: &Path, file: &Path) -> Result<bool, MaterializeError> {
    let mut entries = std::fs::read_dir(dir).map_err(io(dir))?;
    Ok(entries.all(|e| e.is_ok_and(|e| e.path() == file)))
}

/// Complete the file a killed run of this put-back left at `path`: true
/// when `path` now holds `bytes` (or begins with them), false when there
/// is no file; refused when it holds anything else.
fn complete_own(path: &Path, bytes: &[u8]) -> Result<bool, MaterializeError> {
    let found = match std::fs::read(path) {
        Ok(found) => found,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(io(path)(e)),
    };
    if found.starts_with(bytes) {
        return Ok(true);
    }
    if !bytes.starts_with(&found) {
        return Err(exists_or_io(path, std::io::ErrorKind::AlreadyExists.into()));
    }
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(io(path))?;
    file.write_all(&bytes[found.len()..])
        .and_then(|()| file.sync_all())
        .map_err(io(path))?;
    sync_dir(path.parent().unwrap_or(path));
    Ok(true)
}

/// The file is whole already; its directory entry's durability is best effort.
fn sync_dir(dir: &Path) {
    let _ = crate::durable::sync_dir(dir);
}

fn private_dirs(dir: &Path) -> Result<(), MaterializeError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io(dir))
}

fn exists_or_io(path: &Path, e: std::io::Error) -> MaterializeError {
    if e.kind() == std::io::ErrorKind::AlreadyExists {
        MaterializeError::Refused(format!(
            "{} already exists: a session of the agent is never overwritten",
            path.display()
        ))
    } else {
        io(path)(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_session_id_fields_change() {
        let old = "aaaa";
        let bytes = br#"{"sessionId":"aaaa","text":"aaaa","x":{"sessionId":"aaaab"}}"#;
        let out = with_session_id(bytes, old, "bbbb");
        assert_eq!(
            out,
            br#"{"sessionId":"bbbb","text":"aaaa","x":{"sessionId":"aaaab"}}"#
        );
    }

    #[test]
    fn claude_project_dirs_follow_the_clients_rule() {
        assert_eq!(
            claude_project_dir("/tmp/cc-capture/runs/interactive/proj").unwrap(),
            "-tmp-cc-capture-runs-interactive-proj"
        );
        assert_eq!(claude_project_dir("/a/b.c_d").unwrap(), "-a-b-c-d");
        assert!(claude_project_dir("relative").is_err());
    }

    #[test]
    fn hostile_ids_and_folders_are_refused() {
        for id in ["../x", "a/b", "", ".hidden"] {
            assert!(check_new_id(id).is_err(), "{id}");
        }
        let home = Path::new("/h");
        let bad = destination(
            AdapterId::ClaudeCode,
            "/p/projects/../x.jsonl",
            None,
            "n",
            home,
        );
        assert!(bad.is_err());
        assert!(!is_project_dir(".."));
        assert!(!is_project_dir(""));
    }
}
