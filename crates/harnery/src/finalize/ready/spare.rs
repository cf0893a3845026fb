//! Spare ready files: a released ready file is renamed to one of a few
//! spare names instead of being deleted, and the next batch's file is a
//! spare renamed and truncated instead of a new file.
//!
//! Why: on ext4 without a journal, a new inode is never one freed in the
//! last minute (six while its inode table block is dirty), and the
//! allocator checks every such inode it passes (a lookup in the inode
//! table each). A drain that deleted a ready file per batch left hundreds
//! of them in the way of every file created after it in the run, its
//! record pass's spool file for each session above all (docs/perf/
//! figures.md). A spare keeps its inode.
//!
//! A spare is never read: [`super::pending`] lists only `*.ready` and
//! [`super::remove_orphans`] leaves spares alone, so they outlive the run
//! and serve the next one. Only the finalizer lease's holder touches them.

use std::path::{Path, PathBuf};

/// How many spares a ready directory keeps: more than the drain holds
/// ready files at once, so that releasing one always finds a free name.
const SPARES: usize = 8;

/// The name of spare `k` in `dir`.
fn spare(dir: &Path, k: usize) -> PathBuf {
    dir.join(format!(".spare-{k}"))
}

/// Rename a spare in `dir` to `to`: true if there was one (its old bytes
/// are still in it; the caller truncates it).
pub(super) fn take(dir: &Path, to: &Path) -> bool {
    (0..SPARES).any(|k| std::fs::rename(spare(dir, k), to).is_ok())
}

/// Keep the released ready file `path` (in `dir`) as a spare: true if it
/// was renamed to a free spare name (never over a spare), false when all
/// are taken or this file system cannot rename without replacing; the
/// caller then deletes it. `NotFound` if `path` is gone.
pub(super) fn keep(dir: &Path, path: &Path) -> std::io::Result<bool> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    use rustix::io::Errno;
    for k in 0..SPARES {
        match renameat_with(CWD, path, CWD, spare(dir, k), RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(true),
            Err(Errno::EXIST) => continue,
            Err(Errno::NOENT) => return Err(std::io::ErrorKind::NotFound.into()),
            Err(_) => return Ok(false),
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_file_is_taken_back_with_its_inode() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("b1.ready");
        std::fs::write(&ready, b"batch one").unwrap();
        let inode = std::fs::metadata(&ready).unwrap().ino();
        assert!(keep(dir.path(), &ready).unwrap());
        assert!(!ready.exists());
        let tmp = dir.path().join(".b2.tmp");
        assert!(take(dir.path(), &tmp));
        assert_eq!(std::fs::metadata(&tmp).unwrap().ino(), inode);
        assert!(
            !take(dir.path(), &dir.path().join(".b3.tmp")),
            "one spare, taken once"
        );
    }

    #[test]
    fn spares_are_never_replaced_and_a_full_set_declines() {
        let dir = tempfile::tempdir().unwrap();
        for k in 0..SPARES {
            let f = dir.path().join(format!("b{k}.ready"));
            std::fs::write(&f, format!("{k}")).unwrap();
            assert!(keep(dir.path(), &f).unwrap());
        }
        let extra = dir.path().join("extra.ready");
        std::fs::write(&extra, b"extra").unwrap();
        assert!(!keep(dir.path(), &extra).unwrap(), "no free name left");
        assert!(extra.exists(), "left for the caller to delete");
        for k in 0..SPARES {
            let kept = std::fs::read_to_string(spare(dir.path(), k)).unwrap();
            assert_eq!(kept, format!("{k}"), "spare {k} was not overwritten");
        }
        let gone = dir.path().join("gone.ready");
        let err = keep(dir.path(), &gone).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
