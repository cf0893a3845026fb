//! The suite never touches the developer's real harnery home.
//!
//! Before any test runs (an `.init_array` entry, so before libtest starts
//! its threads) this takes a fingerprint of every real home a forgetful
//! test could reach: the password database's home plus `.harnery` (where a
//! binary run with neither `HARNERY_HOME` nor `HOME` writes), `$HOME/.harnery`,
//! and `$HARNERY_HOME` when the developer has one set. When the test binary
//! exits (an `atexit` handler) it takes the fingerprints again; if anything
//! below one of them was created, changed or removed, it names the paths on
//! stderr and makes the run fail (exit 101), however the tests went.
//!
//! A harnery of the developer's own (a cron `finalize`, the hooks of the
//! agent the developer works with) may write there during the run too, so
//! outside CI the guard names the paths as a warning and the run's status
//! stands; under CI (`CI` set, as `.ci/run` runs), where nothing else runs,
//! it fails the run. `HARNERY_TEST_REAL_HOME_GUARD=off` turns it off,
//! `=fail` makes it fail anywhere.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What one entry looked like: kind, length, modification time, inode.
type Fingerprint = BTreeMap<PathBuf, (u32, u64, i64, i64, u64)>;

static BEFORE: OnceLock<Vec<(PathBuf, Fingerprint)>> = OnceLock::new();

#[used]
#[unsafe(link_section = ".init_array")]
static ARM: extern "C" fn() = arm;

extern "C" fn arm() {
    if std::env::var_os("HARNERY_TEST_REAL_HOME_GUARD").is_some_and(|v| v == "off") {
        return;
    }
    let before = real_homes()
        .into_iter()
        .map(|home| {
            let print = fingerprint(&home);
            (home, print)
        })
        .collect();
    if BEFORE.set(before).is_ok() {
        // SAFETY: registers a plain `extern "C" fn()` to run at exit.
        unsafe { libc::atexit(check) };
    }
}

extern "C" fn check() {
    let Some(before) = BEFORE.get() else { return };
    let mut changed = Vec::new();
    for (home, print) in before {
        changed.extend(differences(print, &fingerprint(home)));
    }
    if changed.is_empty() {
        return;
    }
    let mut message = String::from(
        "\nthe test suite changed the real harnery home (tests must use a temporary one):\n",
    );
    for path in changed.iter().take(20) {
        message.push_str(&format!("  {}\n", path.display()));
    }
    let fail = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
        || std::env::var_os("HARNERY_TEST_REAL_HOME_GUARD").is_some_and(|v| v == "fail");
    message.push_str(if fail {
        "(under CI nothing else writes there; rerun with HARNERY_TEST_REAL_HOME_GUARD=off \
         only if a harnery of your own did)\n"
    } else {
        "(a warning: a harnery of your own, such as your agent's hooks, may have written \
         there; CI fails on this)\n"
    });
    use std::io::Write;
    let _ = std::io::stderr().write_all(message.as_bytes());
    if !fail {
        return;
    }
    // SAFETY: ends the process at once with a failing status.
    unsafe { libc::_exit(101) };
}

/// Every real home a test could reach by forgetting to set its own.
fn real_homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = [
        passwd_home().map(|h| h.join(".harnery")),
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".harnery")),
        std::env::var_os("HARNERY_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
    ]
    .into_iter()
    .flatten()
    .filter(|h| h.is_absolute())
    .collect();
    homes.sort();
    homes.dedup();
    homes
}

fn passwd_home() -> Option<PathBuf> {
    // SAFETY: getpwuid returns a pointer into static storage or null; it is
    // read here before any other thread exists or after all have stopped.
    unsafe {
        let pw = libc::getpwuid(libc::geteuid());
        if pw.is_null() || (*pw).pw_dir.is_null() {
            return None;
        }
        let dir = CStr::from_ptr((*pw).pw_dir);
        Some(PathBuf::from(std::ffi::OsStr::from_bytes(dir.to_bytes())))
    }
}

/// Every entry below `root` (and `root` itself), never following a symlink.
fn fingerprint(root: &Path) -> Fingerprint {
    let mut print = Fingerprint::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let entry = (
            meta.mode() & libc::S_IFMT,
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ino(),
        );
        if meta.is_dir()
            && let Ok(children) = std::fs::read_dir(&path)
        {
            stack.extend(children.flatten().map(|c| c.path()));
        }
        print.insert(path, entry);
    }
    print
}

/// The paths that appeared, went or changed between two fingerprints.
fn differences(before: &Fingerprint, after: &Fingerprint) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = after
        .iter()
        .filter(|(path, entry)| before.get(*path) != Some(entry))
        .map(|(path, _)| path.clone())
        .collect();
    paths.extend(
        before
            .keys()
            .filter(|path| !after.contains_key(*path))
            .cloned(),
    );
    paths.sort();
    paths
}

#[test]
fn the_fingerprint_sees_a_new_changed_or_removed_file() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join(".harnery");
    let absent = fingerprint(&home);
    assert!(absent.is_empty());
    std::fs::create_dir_all(home.join("spool/intake")).unwrap();
    let created = fingerprint(&home);
    assert_eq!(differences(&absent, &created).len(), 3);
    assert!(differences(&created, &fingerprint(&home)).is_empty());
    std::fs::write(home.join("spool/intake/seg"), b"x").unwrap();
    let written = fingerprint(&home);
    let seg = home.join("spool/intake/seg");
    assert!(differences(&created, &written).contains(&seg));
    std::fs::write(&seg, b"xy").unwrap();
    assert!(differences(&written, &fingerprint(&home)).contains(&seg));
    std::fs::remove_file(&seg).unwrap();
    assert!(differences(&written, &fingerprint(&home)).contains(&seg));
}

#[test]
fn the_guarded_homes_include_the_passwd_home() {
    let homes = real_homes();
    if let Some(pw) = passwd_home() {
        assert!(homes.contains(&pw.join(".harnery")), "{homes:?}");
    }
}
