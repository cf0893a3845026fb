//! Crash-injection points for the exactly-once tests. With the cargo
//! feature `failpoints` on, `HARNERY_FAILPOINT=<name>` makes the process
//! SIGKILL itself when it reaches the point of that name; with the feature
//! off (release builds) every point compiles to nothing.
//!
//! `HARNERY_FAILPOINT=fsync-error` instead makes the next durable write
//! report a failed fsync, to test that a durability error stops the run.

/// Points along `harnery finalize`, in the order a run reaches them.
pub const FINALIZE_POINTS: &[&str] = &[
    "after-seal",
    "mid-normalize",
    "after-raw-write",
    "after-ready-write",
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

/// Points along `harnery archive compact`, per file converted.
pub const COMPACT_POINTS: &[&str] = &[
    "compact-after-write",
    "compact-after-rename",
    "compact-after-record",
];

/// Die here if the failpoint `name` is armed.
pub fn hit(name: &str) {
    #[cfg(feature = "failpoints")]
    if std::env::var("HARNERY_FAILPOINT").as_deref() == Ok(name) {
        // SAFETY: raise only sends a signal to this process.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
    let _ = name;
}

/// Sleep 20 ms here if the failpoint `name` is armed: a test slows one
/// thread of the drain down to see another run ahead of it.
pub fn delay(name: &str) {
    #[cfg(feature = "failpoints")]
    if std::env::var("HARNERY_FAILPOINT").as_deref() == Ok(name) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = name;
}

/// Stop here, the first time a process reaches it, if the failpoint
/// `name` is armed: create `dir/<name>` and wait (at most a minute) until
/// the test removes it, so a test can stop the server or cut the
/// connection while the process is at this point.
pub fn pause(name: &str, dir: &std::path::Path) {
    #[cfg(feature = "failpoints")]
    if std::env::var("HARNERY_FAILPOINT").as_deref() == Ok(name) {
        static PAUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if PAUSED.swap(true, std::sync::atomic::Ordering::SeqCst) {
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
    let _ = (name, dir);
}

/// Whether an injected durability failure is armed.
pub fn fsync_fails() -> bool {
    #[cfg(feature = "failpoints")]
    if std::env::var("HARNERY_FAILPOINT").as_deref() == Ok("fsync-error") {
        return true;
    }
    false
}
