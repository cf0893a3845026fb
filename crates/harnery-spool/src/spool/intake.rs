//! The reader's side of the intake spool: listing sessions, sealing active
//! segments, and removing files once their records are durable downstream.
//!
//! Sealing takes the session lease, renames `active.seg` to a sealed name and
//! fsyncs the directory, so a writer that gets the lease afterwards starts a
//! new active segment. A crash after sealing leaves sealed files that the
//! next run picks up: sealing is idempotent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::writer::acquire_lease;
use super::{
    ACTIVE_SEGMENT, DEAD_LETTER_PREFIX, FALLBACK_PREFIX, SEALED_PREFIX, SpoolError, TMP_PREFIX,
};
use crate::clock::wall_now_ns;
use crate::home::{Home, PrivateDir};

/// How long sealing waits for a writer to release the lease.
pub const SEAL_LEASE_WAIT: Duration = Duration::from_secs(5);

/// The intake spool of one home.
#[derive(Debug, Clone)]
pub struct IntakeSpool {
    home: Home,
}

/// One session's spool directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSpool {
    /// Adapter directory name (`claude-code`, `copilot`, ...).
    pub adapter: String,
    /// Session directory name (see [`super::session_key`]).
    pub session_key: String,
    /// `…/spool/intake/<adapter>/<session_key>`.
    pub dir: PathBuf,
}

/// What kind of spool file a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    /// The segment writers currently append to (only from [`SessionSpool::files`]).
    Active,
    /// A segment renamed by the sealer; no writer will touch it again.
    Sealed,
    /// A single-record file written when the lease or the append failed.
    Fallback,
    /// A single-record file in `spool/dead-letter/`.
    DeadLetter,
}

/// A file whose records are ready to drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedSegment {
    pub path: PathBuf,
    pub kind: SegmentKind,
    /// Unix ns from the file name (seal time, or write time of a fallback).
    pub stamp_ns: i64,
}

impl IntakeSpool {
    /// The intake spool of `home` (nothing is created).
    pub fn open(home: &Home) -> IntakeSpool {
        IntakeSpool { home: home.clone() }
    }

    /// Every session directory, sorted by adapter then key.
    pub fn sessions(&self) -> Result<Vec<SessionSpool>, SpoolError> {
        let mut out = Vec::new();
        for adapter in list_dirs(&self.home.intake_dir())? {
            let adir = self.home.intake_dir().join(&adapter);
            for key in list_dirs(&adir)? {
                out.push(SessionSpool {
                    dir: adir.join(&key),
                    adapter: adapter.clone(),
                    session_key: key,
                });
            }
        }
        Ok(out)
    }

    /// The session spool for `adapter` and a raw session id, if it exists.
    pub fn session(
        &self,
        adapter: &str,
        session_id: Option<&str>,
    ) -> Result<Option<SessionSpool>, SpoolError> {
        let (akey, skey) = (
            super::key::adapter_key(adapter),
            super::session_key(session_id),
        );
        Ok(self
            .sessions()?
            .into_iter()
            .find(|s| s.adapter == akey && s.session_key == skey))
    }

    /// Dead-letter files, oldest first. Their envelopes name adapter and session.
    pub fn dead_letters(&self) -> Result<Vec<SealedSegment>, SpoolError> {
        let dir = self.home.dead_letter_dir();
        let mut out = Vec::new();
        for name in list_files(&dir)? {
            if let Some(stamp_ns) = stamp(&name, DEAD_LETTER_PREFIX) {
                out.push(SealedSegment {
                    path: dir.join(&name),
                    kind: SegmentKind::DeadLetter,
                    stamp_ns,
                });
            }
        }
        out.sort_by(|a, b| (a.stamp_ns, &a.path).cmp(&(b.stamp_ns, &b.path)));
        Ok(out)
    }

    pub fn home(&self) -> &Home {
        &self.home
    }
}

impl SessionSpool {
    /// Seal the active segment (under the lease) and return every file ready
    /// to drain: sealed segments and fallback files, oldest first. Safe to
    /// call again after a crash; an empty active segment is removed instead.
    pub fn seal(&self) -> Result<Vec<SealedSegment>, SpoolError> {
        if self.seal_unsynced()? {
            self.sync()?;
        }
        self.pending()
    }

    /// Seal the active segment like [`seal`](Self::seal), but leave the
    /// directory unsynced: returns whether it changed. A caller sealing many
    /// sessions renames them all first and then calls [`sync`](Self::sync)
    /// on each that changed, before reading any of their sealed files, so
    /// one journal commit covers them all instead of one each.
    pub fn seal_unsynced(&self) -> Result<bool, SpoolError> {
        // Most sessions of a home are idle: one `lstat` says there is no
        // active segment, without opening the directory's path component
        // by component. Only an absent name is trusted (a writer that
        // creates one after this look is the next run's to seal, as one
        // that writes after the seal); anything else takes the checked way.
        if matches!(
            std::fs::symlink_metadata(self.dir.join(ACTIVE_SEGMENT)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound
        ) {
            return Ok(false);
        }
        let dir = self.open_dir()?;
        if dir
            .open_file(ACTIVE_SEGMENT, rustix::fs::OFlags::RDONLY, false)
            .is_ok()
        {
            let _lease = acquire_lease(&dir, SEAL_LEASE_WAIT)?;
            seal_active(&dir, wall_now_ns().max(0))?;
            return Ok(true);
        }
        Ok(false)
    }

    /// fsync the session's directory (its seal's rename or removal).
    pub fn sync(&self) -> Result<(), SpoolError> {
        Ok(self.open_dir()?.sync()?)
    }

    /// Sealed segments and fallback files, oldest first (nothing is changed).
    pub fn pending(&self) -> Result<Vec<SealedSegment>, SpoolError> {
        let mut out: Vec<SealedSegment> = self
            .files()?
            .into_iter()
            .filter(|s| s.kind != SegmentKind::Active)
            .collect();
        out.sort_by(|a, b| (a.stamp_ns, &a.path).cmp(&(b.stamp_ns, &b.path)));
        Ok(out)
    }

    /// Every record file of the session, including the active segment
    /// (stamped `i64::MAX`: it is the newest), oldest first.
    pub fn files(&self) -> Result<Vec<SealedSegment>, SpoolError> {
        let mut out = Vec::new();
        for name in list_files(&self.dir)? {
            let path = self.dir.join(&name);
            let entry = if name == ACTIVE_SEGMENT {
                Some((SegmentKind::Active, i64::MAX))
            } else if let Some(ns) = stamp(&name, SEALED_PREFIX) {
                Some((SegmentKind::Sealed, ns))
            } else {
                stamp(&name, FALLBACK_PREFIX).map(|ns| (SegmentKind::Fallback, ns))
            };
            if let Some((kind, stamp_ns)) = entry {
                out.push(SealedSegment {
                    path,
                    kind,
                    stamp_ns,
                });
            }
        }
        out.sort_by(|a, b| (a.stamp_ns, &a.path).cmp(&(b.stamp_ns, &b.path)));
        Ok(out)
    }

    fn open_dir(&self) -> Result<PrivateDir, SpoolError> {
        // dir = <root>/spool/intake/<adapter>/<key>
        let root = self
            .dir
            .ancestors()
            .nth(4)
            .ok_or_else(|| SpoolError::Layout(self.dir.clone()))?;
        Ok(PrivateDir::open_path(
            root,
            &["spool", "intake", &self.adapter, &self.session_key],
            false,
        )?)
    }
}

/// Under the session lease: rename `active.seg` to a sealed name stamped
/// `stamp_ns` (or remove it when empty). Whether there was one.
pub(super) fn seal_active(dir: &PrivateDir, stamp_ns: i64) -> Result<bool, SpoolError> {
    match dir.open_file(ACTIVE_SEGMENT, rustix::fs::OFlags::RDONLY, false) {
        Ok((f, _)) if f.metadata()?.len() == 0 => dir.remove(ACTIVE_SEGMENT)?,
        Ok(_) => {
            let name = format!("{SEALED_PREFIX}{stamp_ns:020}-{}.seg", std::process::id());
            dir.rename(ACTIVE_SEGMENT, &name)?;
        }
        Err(_) => return Ok(false),
    }
    Ok(true)
}

/// Delete a drained file and fsync its directory. Call only after every
/// record in it is durable downstream.
pub fn remove_segment(path: &Path) -> Result<(), SpoolError> {
    let parent = path
        .parent()
        .ok_or_else(|| SpoolError::Layout(path.to_path_buf()))?;
    std::fs::remove_file(path)?;
    std::fs::File::open(parent)?.sync_all()?;
    Ok(())
}

/// Parse `<prefix><20-digit ns>[-…].<ext>`.
pub(super) fn stamp(name: &str, prefix: &str) -> Option<i64> {
    let rest = name.strip_prefix(prefix)?;
    if name.starts_with(TMP_PREFIX) {
        return None;
    }
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn list_dirs(dir: &Path) -> Result<Vec<String>, SpoolError> {
    list(dir, true)
}

pub(super) fn list_files(dir: &Path) -> Result<Vec<String>, SpoolError> {
    list(dir, false)
}

/// Names of subdirectories (or regular files) of `dir`, sorted; symlinks are
/// never listed; a missing `dir` is empty.
fn list(dir: &Path, dirs: bool) -> Result<Vec<String>, SpoolError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        let ft = entry.file_type()?;
        let wanted = if dirs { ft.is_dir() } else { ft.is_file() };
        if let (true, Ok(name)) = (wanted, entry.file_name().into_string()) {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}
