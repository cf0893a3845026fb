//! The one failpoint facility: crash and failure injection for the
//! exactly-once tests, and the test-only tuning knobs.
//!
//! With the cargo feature `failpoints` on (harnery's and the root crate's
//! features forward to this one), `HARNERY_FAILPOINTS=<name>[,<name>…]`
//! arms the named points: [`hit`] SIGKILLs the process there, [`delay`]
//! sleeps 20 ms, [`pause`] waits for a test, [`io_error`] fails a write
//! path, and `fsync-error` makes the next durable write report a failed
//! fsync ([`fsync_fails`]). In-process tests arm hooks instead
//! (`arm_hook`, `arm_flag`, built with the feature only), keyed by a point
//! and a path. Test-only tuning variables ([`tuning`]) live here too.
//!
//! With the feature off (release builds) every function below compiles to
//! nothing that reads the environment: no point is ever armed.

/// The environment variable that arms failpoints (a comma list of names).
pub const FAILPOINTS_ENV: &str = "HARNERY_FAILPOINTS";

/// Points along `harnery finalize`, in the order a run reaches them.
pub const FINALIZE_POINTS: &[&str] = &[
    "after-seal",
    "mid-normalize",
    "after-raw-write",
    "mid-transaction",
    "after-commit",
];

/// Points along `harnery ship` (`ship-pause` waits instead, see [`pause`]).
pub const SHIP_POINTS: &[&str] = &[
    "ship-mid-copy",
    "ship-before-commit",
    "ship-after-commit",
    "ship-derived-before-commit",
];

/// Points along `harnery epoch advance`.
pub const EPOCH_POINTS: &[&str] = &[
    "epoch-after-quiesce",
    "epoch-after-archive",
    "epoch-after-candidate",
    "epoch-after-activate",
];

/// Points along `harnery archive compact`, per batch packed (the last
/// after the first old file is deleted).
pub const COMPACT_POINTS: &[&str] = &[
    "compact-after-write",
    "compact-after-rename",
    "compact-after-record",
    "compact-mid-remove",
];

/// Test-only tuning variables, read only by failpoint builds: the bytes
/// that close a drain chunk, the WAL frames past which a drain restarts
/// the WAL, the bytes of one record pass, and the milliseconds a search
/// catch-up keeps the ledger open after it is done.
pub const CHUNK_BYTES_ENV: &str = "HARNERY_CHUNK_BYTES";
pub const WAL_RESTART_FRAMES_ENV: &str = "HARNERY_WAL_RESTART_FRAMES";
pub const RECORD_PASS_BYTES_ENV: &str = "HARNERY_RECORD_PASS_BYTES";
pub const SEARCH_HOLD_MS_ENV: &str = "HARNERY_SEARCH_HOLD_MS";
/// Perturbs the schema digest, to exercise an epoch advance without a real
/// contract change.
pub const TEST_SCHEMA_SUFFIX_ENV: &str = "HARNERY_TEST_SCHEMA_SUFFIX";
/// Stands in for the password database's home directory of the effective
/// user, so a test can run a binary with neither `HARNERY_HOME` nor `HOME`
/// set without reaching the developer's real home.
pub const TEST_PASSWD_HOME_ENV: &str = "HARNERY_TEST_PASSWD_HOME";

/// Whether the failpoint `name` is armed.
pub fn armed(name: &str) -> bool {
    #[cfg(feature = "failpoints")]
    if let Some(list) = std::env::var_os(FAILPOINTS_ENV) {
        return list.to_string_lossy().split(',').any(|n| n == name);
    }
    let _ = name;
    false
}

/// Die here (SIGKILL) if the failpoint `name` is armed.
pub fn hit(name: &str) {
    if armed(name) {
        // SAFETY: raise only sends a signal to this process.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
}

/// Sleep 20 ms here if the failpoint `name` is armed: a test slows one
/// thread of the drain down to see another run ahead of it.
pub fn delay(name: &str) {
    if armed(name) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Stop here, the first time a process reaches it, if the failpoint
/// `name` is armed: create `dir/<name>` and wait (at most a minute) until
/// the test removes it, so a test can stop the server or cut the
/// connection while the process is at this point.
pub fn pause(name: &str, dir: &std::path::Path) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static PAUSED: AtomicBool = AtomicBool::new(false);
    if !armed(name) || PAUSED.swap(true, Ordering::SeqCst) {
        return;
    }
    let marker = dir.join(name);
    if std::fs::write(&marker, b"").is_ok() {
        for _ in 0..1200 {
            if !marker.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// An I/O error here if the failpoint `name` is armed (the spool's write
/// paths: `segment_append`, `fallback-`, `dl-`, and `panic` in the hook).
pub fn io_error(name: &str) -> std::io::Result<()> {
    if armed(name) {
        return Err(std::io::Error::other(format!("failpoint {name}")));
    }
    Ok(())
}

/// Whether an injected durability failure (`fsync-error`) is armed.
pub fn fsync_fails() -> bool {
    armed("fsync-error")
}

/// A test-only tuning variable as a number (see [`CHUNK_BYTES_ENV`] and
/// the others); `None` without the feature, whatever the environment says.
pub fn tuning(name: &str) -> Option<u64> {
    tuning_text(name)?.to_str()?.parse().ok()
}

/// A test-only tuning variable as text, set and not empty; `None` without
/// the feature.
pub fn tuning_text(name: &str) -> Option<std::ffi::OsString> {
    #[cfg(feature = "failpoints")]
    if let Some(value) = std::env::var_os(name).filter(|s| !s.is_empty()) {
        return Some(value);
    }
    let _ = name;
    None
}

/// A hook an in-process test arms, run once where the code reaches it.
pub type Hook = Box<dyn FnOnce() + Send>;

#[cfg(feature = "failpoints")]
type Armed = std::sync::Mutex<Vec<(&'static str, std::path::PathBuf, Option<Hook>)>>;
#[cfg(feature = "failpoints")]
static IN_PROCESS: Armed = std::sync::Mutex::new(Vec::new());

/// Arm `hook` to run once at the in-process point `point` for `at`.
#[cfg(feature = "failpoints")]
pub fn arm_hook(point: &'static str, at: &std::path::Path, hook: Hook) {
    let mut armed = IN_PROCESS.lock().expect("failpoint lock");
    armed.push((point, at.to_path_buf(), Some(hook)));
}

/// Arm the in-process point `point` for `at` for good (a flag, no hook).
#[cfg(feature = "failpoints")]
pub fn arm_flag(point: &'static str, at: &std::path::Path) {
    let mut armed = IN_PROCESS.lock().expect("failpoint lock");
    armed.push((point, at.to_path_buf(), None));
}

/// The hook armed at `point` for `at`, taken (it runs once).
pub fn take_hook(point: &str, at: &std::path::Path) -> Option<Hook> {
    #[cfg(feature = "failpoints")]
    if let Ok(mut armed) = IN_PROCESS.lock()
        && let Some(i) = armed
            .iter()
            .position(|(p, a, h)| *p == point && a == at && h.is_some())
    {
        return armed.remove(i).2;
    }
    let _ = (point, at);
    None
}

/// Whether a flag is armed at `point` for `at`.
pub fn flag_armed(point: &str, at: &std::path::Path) -> bool {
    #[cfg(feature = "failpoints")]
    if IN_PROCESS.lock().is_ok_and(|armed| {
        armed
            .iter()
            .any(|(p, a, h)| *p == point && a == at && h.is_none())
    }) {
        return true;
    }
    let _ = (point, at);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build without the feature never reads the variables: whatever the
    /// environment says, nothing is armed and no tuning applies.
    #[cfg(not(feature = "failpoints"))]
    #[test]
    fn without_the_feature_nothing_is_armed() {
        // SAFETY: this test binary sets the variables only here, before
        // reading them on this thread; no other test reads them.
        unsafe {
            std::env::set_var(FAILPOINTS_ENV, "after-seal,fsync-error,segment_append");
            std::env::set_var(CHUNK_BYTES_ENV, "1");
        }
        assert!(!armed("after-seal"));
        assert!(!fsync_fails());
        assert!(io_error("segment_append").is_ok());
        hit("after-seal");
        assert_eq!(tuning(CHUNK_BYTES_ENV), None);
        assert!(take_hook("p", std::path::Path::new("/")).is_none());
    }

    #[cfg(feature = "failpoints")]
    #[test]
    fn with_the_feature_a_comma_list_arms_points() {
        // SAFETY: as above.
        unsafe {
            std::env::set_var(FAILPOINTS_ENV, "a-point,b-point");
        }
        assert!(armed("a-point") && armed("b-point"));
        assert!(!armed("a-poin") && !fsync_fails());
        assert!(io_error("b-point").is_err());
        arm_flag("flag", std::path::Path::new("/x"));
        assert!(flag_armed("flag", std::path::Path::new("/x")));
        assert!(!flag_armed("flag", std::path::Path::new("/y")));
        arm_hook("hook", std::path::Path::new("/x"), Box::new(|| ()));
        assert!(take_hook("hook", std::path::Path::new("/x")).is_some());
        assert!(take_hook("hook", std::path::Path::new("/x")).is_none());
    }
}
