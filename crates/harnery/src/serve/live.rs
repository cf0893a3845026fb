//! `serve` keeps the home's ledger current: a thread looks at the spool
//! every [`LOOK`] and, when it changed, drains it as `harnery finalize`
//! does ([`crate::finalize::drain_if_free`]), so a hook event shows in the
//! pages within seconds with no schedule at all.
//!
//! The look is cheap: the names of the session directories, and for each
//! its own modification time and its active segment's inode, size and
//! modification time (two `stat`s; nothing is read or opened). A drain
//! runs under finalize's lease and never waits for it: when another
//! finalizer holds it (cron's `finalize`, an epoch advance) the round is
//! skipped quietly and the next look tries again. Drains start at most
//! every [`GAP`]. A drain's error is said on stderr once per distinct
//! message and never stops the server; after one, the spool is drained
//! again when it changes, or after [`RETRY`].
//!
//! Only a home's own ledger is drained, never the fleet's (`serve --from`
//! starts no drain at all).

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::finalize::{Drained, FinalizeOptions, drain_if_free};
use crate::home::Home;

/// How often the spool is looked at.
pub const LOOK: Duration = Duration::from_millis(200);
/// The least time between the starts of two drains.
pub const GAP: Duration = Duration::from_secs(1);
/// After a failed drain, how long before an unchanged spool is tried again.
pub const RETRY: Duration = Duration::from_secs(30);

/// Start the thread that keeps `home`'s ledger current. A thread that
/// cannot start is said; the server answers all the same.
pub fn start(home: Home) {
    let spawned = std::thread::Builder::new()
        .name("harnery-live".into())
        .spawn(move || Live::new(home).run());
    if let Err(e) = spawned {
        crate::terminal::warn(&format!(
            "harnery serve: cannot start the spool drain ({e}); pages show what `harnery finalize` wrote"
        ));
    }
}

/// What a look at the spool saw: per session directory, its path, its
/// modification time, and its active segment's inode, size and
/// modification time (none when it has none).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    dirs: Vec<DirSeen>,
}

/// One directory as a look saw it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct DirSeen {
    path: PathBuf,
    mtime_ns: i128,
    active: Option<FileSeen>,
}

/// A file as a look saw it: a file replaced, grown or touched differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct FileSeen {
    inode: u64,
    len: u64,
    mtime_ns: i128,
}

impl Snapshot {
    /// Look at `home`'s spool. A directory that cannot be listed counts as
    /// empty: the drain, if anything else changed, says what is wrong.
    pub fn of(home: &Home) -> Snapshot {
        let mut dirs = Vec::new();
        let dead = home.dead_letter_dir();
        if let Ok(m) = std::fs::metadata(&dead) {
            dirs.push(DirSeen {
                path: dead,
                mtime_ns: mtime_ns(&m),
                active: None,
            });
        }
        for adapter in children(&home.intake_dir()) {
            for session in children(&adapter) {
                let Ok(m) = std::fs::metadata(&session) else {
                    continue;
                };
                let active = std::fs::metadata(session.join(crate::spool::ACTIVE_SEGMENT))
                    .ok()
                    .map(|a| FileSeen {
                        inode: a.ino(),
                        len: a.len(),
                        mtime_ns: mtime_ns(&a),
                    });
                dirs.push(DirSeen {
                    path: session,
                    mtime_ns: mtime_ns(&m),
                    active,
                });
            }
        }
        dirs.sort();
        Snapshot { dirs }
    }

    /// Whether a session has records in its active segment (written after
    /// the last seal: a drain that just ran did not take them).
    fn has_active_records(&self) -> bool {
        self.dirs
            .iter()
            .any(|d| d.active.is_some_and(|a| a.len > 0))
    }
}

fn mtime_ns(m: &std::fs::Metadata) -> i128 {
    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
}

/// The directories in `dir`, sorted; none when it cannot be listed.
fn children(dir: &std::path::Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The drain's memory between looks.
struct Live {
    home: Home,
    /// The spool as the last drain left it (or found it, when it failed);
    /// `None` before the first drain, and when records came in meanwhile.
    drained: Option<Snapshot>,
    last_start: Option<Instant>,
    failed_at: Option<Instant>,
    /// Errors already said, so each is said once.
    said: HashSet<String>,
}

impl Live {
    fn new(home: Home) -> Live {
        Live {
            home,
            drained: None,
            last_start: None,
            failed_at: None,
            said: HashSet::new(),
        }
    }

    fn run(mut self) {
        loop {
            self.look();
            std::thread::sleep(LOOK);
        }
    }

    /// One look: drain when the spool changed (or a failed drain is due
    /// again) and the last drain started at least [`GAP`] ago.
    fn look(&mut self) {
        let now = Snapshot::of(&self.home);
        // A home no hook wrote to has nothing to drain: no ledger is made.
        if now.dirs.is_empty() {
            self.drained = Some(now);
            return;
        }
        let retry = self.failed_at.is_some_and(|t| t.elapsed() >= RETRY);
        let changed = self.drained.as_ref() != Some(&now);
        let too_soon = self.last_start.is_some_and(|t| t.elapsed() < GAP);
        if (!changed && !retry) || too_soon {
            return;
        }
        self.last_start = Some(Instant::now());
        let home = self.home.clone();
        let outcome = std::panic::catch_unwind(move || drain(&home))
            .unwrap_or_else(|_| Err("the drain panicked; see the message above".to_string()));
        self.settle(outcome, now);
    }

    /// Remember what a drain of the spool seen as `before` came to.
    fn settle(&mut self, outcome: Result<Drained, String>, before: Snapshot) {
        match outcome {
            Ok(Drained::Ran(_)) => {
                self.failed_at = None;
                let after = Snapshot::of(&self.home);
                self.drained = (!after.has_active_records()).then_some(after);
            }
            // The holder drains; the next look sees what it left.
            Ok(Drained::Busy) => {}
            Ok(Drained::AdvanceUnderway) => {
                self.say(
                    "an epoch advance is underway; run `harnery finalize` to complete it".into(),
                );
                self.drained = Some(before);
            }
            Err(e) => {
                self.say(e);
                self.failed_at = Some(Instant::now());
                self.drained = Some(before);
            }
        }
    }

    fn say(&mut self, why: String) {
        if self.said.insert(why.clone()) {
            crate::terminal::warn(&format!(
                "harnery serve: the spool was not drained: {why} \
                 (the server goes on, and drains again when the spool changes)"
            ));
        }
    }
}

/// One drain at the current "now" (`HARNERY_NOW` when it pins one).
fn drain(home: &Home) -> Result<Drained, String> {
    let pinned = crate::now::pinned_now(None).map_err(|e| e.to_string())?;
    drain_if_free(home, &FinalizeOptions::at(pinned)).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_sees_a_segment_made_grown_or_replaced() {
        let root = tempfile::tempdir().unwrap();
        let home = Home::at(root.path());
        assert!(Snapshot::of(&home).dirs.is_empty());
        let session = home.intake_dir().join("claude-code").join("s1");
        std::fs::create_dir_all(&session).unwrap();
        let empty = Snapshot::of(&home);
        assert_eq!(empty.dirs.len(), 1);
        assert!(!empty.has_active_records());
        let active = session.join(crate::spool::ACTIVE_SEGMENT);
        std::fs::write(&active, b"one").unwrap();
        let one = Snapshot::of(&home);
        assert_ne!(one, empty);
        assert!(one.has_active_records());
        assert_eq!(
            Snapshot::of(&home),
            one,
            "an unchanged spool looks the same"
        );
        std::fs::write(&active, b"one, two").unwrap();
        let grown = Snapshot::of(&home);
        assert_ne!(grown, one);
        // Sealed away and a new segment of the same size begun: another inode.
        std::fs::rename(&active, session.join("sealed-1-1.seg")).unwrap();
        std::fs::write(&active, b"one, two").unwrap();
        assert_ne!(Snapshot::of(&home), grown);
    }
}
