//! A damaged home is refused, never replaced (`ledger::integrity`), and
//! read commands never write.
//!
//! Each fault is made on a home the real binaries drained: `finalize`
//! refuses it (exit 2, naming the path), `verify`, `validate`, `health` and
//! `epoch verify` report it (exit 1, naming the path), nothing already
//! recorded changes, hook records delivered meanwhile wait in the spool,
//! and once the file is put back the next `finalize` drains them all.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use common::*;

/// A home the real hook and finalizer filled with one session.
fn drained_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    feed_fixture(home.path(), "claude-code", "basic");
    let out = run(home.path(), &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    home
}

fn live(home: &Path) -> PathBuf {
    home.join("ledgers/v2")
}

fn db(home: &Path) -> PathBuf {
    live(home).join("ledger.sqlite")
}

/// Every file below `dir` with its bytes and mtime (ns).
fn files(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, i64)> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let path = e.unwrap().path();
        let m = std::fs::symlink_metadata(&path).unwrap();
        if m.is_dir() {
            out.extend(files(&path));
        } else {
            let mtime = m.mtime() * 1_000_000_000 + m.mtime_nsec();
            out.insert(path.clone(), (std::fs::read(&path).unwrap(), mtime));
        }
    }
    out
}

fn raw_files(home: &Path) -> BTreeMap<PathBuf, (Vec<u8>, i64)> {
    files(&live(home).join("raw"))
}

/// The spool files waiting in the intake spool (segments, not leases).
fn waiting_segments(home: &Path) -> usize {
    files(&home.join("spool/intake"))
        .keys()
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .count()
}

/// Deterministic bytes that are no database.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// How a case damages a home: the file at fault, and what is kept to put
/// it back.
struct Fault {
    path: PathBuf,
    /// The file's bytes before the damage (`None`: it did not exist).
    original: Option<Vec<u8>>,
}

impl Fault {
    fn of(path: PathBuf) -> Fault {
        let original = std::fs::read(&path).ok();
        Fault { path, original }
    }

    /// Put the file back as a backup restore would (a plain copy: the
    /// bytes, not the time).
    fn restore(&self) {
        match &self.original {
            Some(bytes) => std::fs::write(&self.path, bytes).unwrap(),
            None => drop(std::fs::remove_file(&self.path)),
        }
    }
}

/// Run one fault case end to end; `damage` breaks the home and says which
/// file is at fault, `words` is what the refusal says is wrong.
fn case(name: &str, words: &str, damage: impl FnOnce(&Path) -> Fault) {
    let dir = drained_home();
    let home = dir.path();
    let rows_before = ledger_rows(home);
    assert!(!rows_before.is_empty());
    let raw_before = raw_files(home);
    let fault = damage(home);
    let raw_damaged = raw_files(home);
    let at_fault = files(&live(home));
    let shown = fault.path.display().to_string();
    // `verify` names a raw signal's record by its archive and offset.
    let archive = fault.path.parent().unwrap().display().to_string();

    // Hooks keep spooling while the home is damaged.
    let delivered = feed_fixture(home, "claude-code", "compact");
    let out = run(home, &["finalize"]);
    assert_eq!(out.status.code(), Some(2), "{name}: {}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains(&shown), "{name}: names the path: {err}");
    assert!(err.contains(words), "{name}: says {words:?}: {err}");
    assert!(
        err.contains("restore"),
        "{name}: says how to recover: {err}"
    );
    for cmd in [
        &["verify"][..],
        &["validate"],
        &["health"],
        &["epoch", "verify"],
    ] {
        let out = run(home, cmd);
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(1), "{name}: {cmd:?}: {said}");
        let named = said.contains(&shown) || (shown.contains("/raw/") && said.contains(&archive));
        assert!(named, "{name}: {cmd:?} names the path: {said}");
    }
    // Nothing was written, repaired or deleted in the epoch, and what the
    // hooks delivered waits in the spool.
    for (path, (bytes, mtime)) in files(&live(home)) {
        if path.to_string_lossy().ends_with("-shm") {
            continue;
        }
        let before = at_fault.get(&path);
        assert_eq!(
            before.map(|b| &b.0),
            Some(&bytes),
            "{name}: {} changed",
            path.display()
        );
        assert_eq!(
            before.map(|b| b.1),
            Some(mtime),
            "{name}: {} touched",
            path.display()
        );
    }
    assert_eq!(
        raw_files(home),
        raw_damaged,
        "{name}: the raw archive is as it was"
    );
    assert!(
        waiting_segments(home) > 0,
        "{name}: the spool keeps the records"
    );

    fault.restore();
    let out = run(home, &["finalize", "--json"]);
    assert!(
        out.status.success(),
        "{name}: after the fix: {}",
        stderr(&out)
    );
    let summary: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        summary["signals_drained"], delivered as u64,
        "{name}: {summary}"
    );
    assert_eq!(waiting_segments(home), 0, "{name}: the spool is drained");
    let rows = ledger_rows(home);
    assert_eq!(
        rows[..rows_before.len()],
        rows_before[..],
        "{name}: earlier rows"
    );
    assert!(rows.len() > rows_before.len());
    let raw_after = raw_files(home);
    for (path, (bytes, _)) in &raw_before {
        assert_eq!(
            raw_after.get(path).map(|r| &r.0),
            Some(bytes),
            "{name}: {}",
            path.display()
        );
    }
    for cmd in [
        &["verify"][..],
        &["validate"],
        &["health"],
        &["epoch", "verify"],
    ] {
        let out = run(home, cmd);
        assert!(
            out.status.success(),
            "{name}: {cmd:?} after the fix: {}",
            stdout(&out)
        );
    }
}

#[test]
fn an_empty_ledger_is_refused_not_replaced() {
    case("0-byte ledger", "is empty (0 bytes)", |home| {
        let f = Fault::of(db(home));
        std::fs::write(&f.path, b"").unwrap();
        f
    });
}

#[test]
fn a_missing_ledger_is_refused_not_recreated() {
    case("missing ledger", "is missing", |home| {
        let f = Fault::of(db(home));
        std::fs::remove_file(&f.path).unwrap();
        for side in ["-wal", "-shm"] {
            drop(std::fs::remove_file(format!("{}{side}", f.path.display())));
        }
        f
    });
}

#[test]
fn a_truncated_ledger_is_refused() {
    case("truncated ledger", "is truncated", |home| {
        let f = Fault::of(db(home));
        let bytes = f.original.clone().unwrap();
        std::fs::write(&f.path, &bytes[..bytes.len() / 2]).unwrap();
        f
    });
}

#[test]
fn a_ledger_of_random_bytes_is_refused() {
    case("random-bytes ledger", "is not an SQLite database", |home| {
        let f = Fault::of(db(home));
        let len = f.original.as_ref().unwrap().len();
        std::fs::write(&f.path, noise(len)).unwrap();
        f
    });
}

#[test]
fn a_ledger_of_another_genesis_is_refused() {
    let other = tempfile::tempdir().unwrap();
    let out = run(other.path(), &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let foreign = std::fs::read(db(other.path())).unwrap();
    case("foreign-genesis ledger", "belongs to epoch", |home| {
        let f = Fault::of(db(home));
        std::fs::write(&f.path, &foreign).unwrap();
        f
    });
}

#[test]
fn a_missing_genesis_is_refused_not_rewritten() {
    case("missing genesis.json", "is missing", |home| {
        let path = live(home).join("genesis.json");
        let f = Fault::of(path);
        std::fs::remove_file(&f.path).unwrap();
        f
    });
}

#[test]
fn an_edited_genesis_is_refused() {
    case("edited genesis.json", "was edited", |home| {
        let f = Fault::of(live(home).join("genesis.json"));
        let text = String::from_utf8(f.original.clone().unwrap()).unwrap();
        let edited = text.replacen("\"created_unix_ns\": 1", "\"created_unix_ns\": 2", 1);
        assert_ne!(edited, text);
        std::fs::write(&f.path, edited).unwrap();
        f
    });
}

/// The first file of the raw archive.
fn first_raw_file(home: &Path) -> PathBuf {
    raw_files(home)
        .into_keys()
        .next()
        .expect("an archived file")
}

#[test]
fn a_deleted_raw_archive_file_is_refused() {
    case("deleted raw archive file", "is missing", |home| {
        let f = Fault::of(first_raw_file(home));
        std::fs::remove_file(&f.path).unwrap();
        f
    });
}

#[test]
fn an_altered_raw_archive_file_is_refused() {
    case("altered raw archive file", "was altered", |home| {
        let f = Fault::of(first_raw_file(home));
        let mut bytes = f.original.clone().unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x20;
        std::fs::write(&f.path, bytes).unwrap();
        f
    });
}

/// A first epoch is built whole and renamed into place: an empty live
/// directory (an older build's first run cut short) and a half-built one
/// are a new home, nothing else is.
#[test]
fn only_a_new_home_gets_a_first_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    std::fs::create_dir_all(live(home)).unwrap();
    std::fs::create_dir_all(home.join("ledgers/v2.new")).unwrap();
    std::fs::write(home.join("ledgers/v2.new/ledger.sqlite"), b"half").unwrap();
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(db(home).is_file() && live(home).join("genesis.json").is_file());
    assert!(!home.join("ledgers/v2.new").exists());

    // A live directory with anything in it is not new.
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    std::fs::create_dir_all(live(home).join("raw")).unwrap();
    std::fs::write(live(home).join("raw/kept.seg"), b"evidence").unwrap();
    let out = run(home, &["finalize"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("genesis.json is missing"),
        "{}",
        stderr(&out)
    );
    assert!(!live(home).join("genesis.json").exists());
    assert!(!db(home).exists());
    assert_eq!(
        std::fs::read(live(home).join("raw/kept.seg")).unwrap(),
        b"evidence"
    );
}

/// Every read command, over a drained home.
fn read_commands(session: &str) -> Vec<Vec<String>> {
    let cmds: [&[&str]; 13] = [
        &["sessions"],
        &["sessions", "--json"],
        &["show", session],
        &["replay", session],
        &["receipts", session],
        &["export"],
        &["verify"],
        &["validate"],
        &["health"],
        &["audit"],
        &["epoch", "verify"],
        &["epoch", "list"],
        &["epoch", "status"],
    ];
    cmds.iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect()
}

fn the_session(home: &Path) -> String {
    let sessions = sessions_json(home);
    sessions[0]["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The home's files, SQLite's shared-memory WAL index aside: every reader
/// of a WAL database coordinates with writers through it.
fn home_files(home: &Path) -> BTreeMap<PathBuf, (Vec<u8>, i64)> {
    files(home)
        .into_iter()
        .filter(|(p, _)| !p.to_string_lossy().ends_with("-shm"))
        .collect()
}

#[test]
fn read_commands_change_no_file() {
    let dir = drained_home();
    let home = dir.path();
    let session = the_session(home);
    let before = home_files(home);
    for cmd in read_commands(&session) {
        let out = harnery(home).args(&cmd).output().unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{cmd:?}: {}",
            stderr(&out)
        );
    }
    assert_eq!(home_files(home), before);
}

/// `chmod -R a-w` on the home; as root, the commands run as `nobody`
/// (through `setpriv`), for whom the mode bits hold.
#[test]
fn a_read_only_home_reads_fine() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    copy_tree(drained_home().path(), &home);
    let session = the_session(&home);
    // SAFETY: geteuid takes nothing and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let setpriv = Path::new("/usr/bin/setpriv");
    if root && !setpriv.exists() {
        eprintln!("skipped: running as root without setpriv");
        return;
    }
    let sh = |args: &[&str]| {
        assert!(
            std::process::Command::new(args[0])
                .args(&args[1..])
                .status()
                .unwrap()
                .success()
        );
    };
    let shown = home.display().to_string();
    if root {
        sh(&["chmod", "0755", &dir.path().display().to_string()]);
        sh(&["chown", "-R", "65534:65534", &shown]);
    }
    sh(&["chmod", "-R", "a-w", &shown]);
    let before = files(&home);
    let bin = assert_cmd::cargo::cargo_bin("harnery");
    for cmd in read_commands(&session) {
        let mut c = if root {
            let mut c = std::process::Command::new(setpriv);
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&bin);
            c
        } else {
            std::process::Command::new(&bin)
        };
        let out = c
            .args(&cmd)
            .env("HARNERY_HOME", &home)
            .env("HARNERY_NOW", NOW)
            .env("HARNERY_RECORDS", "off")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{cmd:?}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        if cmd == ["sessions"] {
            assert!(stdout(&out).contains(&session[..8]), "{}", stdout(&out));
        }
    }
    assert_eq!(
        files(&home),
        before,
        "a read-only home is left exactly as it was"
    );
    sh(&["chmod", "-R", "u+w", &shown]);
}

/// A ledger whose tables are older than this build's (here: the build
/// before `raw_members`) is read as it is, and only `finalize` migrates it.
#[test]
fn an_older_schema_is_read_as_it_is_and_finalize_migrates_it() {
    let dir = drained_home();
    let home = dir.path();
    let session = the_session(home);
    let expected = stdout(&run(home, &["export"]));
    {
        let conn = rusqlite::Connection::open(db(home)).unwrap();
        harnery::ledger::eventz::register(&conn).unwrap();
        conn.execute_batch(
            "DROP TABLE raw_members; DELETE FROM migrations WHERE name LIKE '%_raw_members';
             DELETE FROM meta WHERE key IN ('genesis_blake3', 'raw_members_recorded');",
        )
        .unwrap();
    }
    let migrations = |home: &Path| -> i64 {
        let conn = rusqlite::Connection::open_with_flags(
            db(home),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        harnery::ledger::eventz::register(&conn).unwrap();
        conn.query_row("SELECT count(*) FROM migrations", [], |r| r.get(0))
            .unwrap()
    };
    let older = migrations(home);
    let before = home_files(home);
    for cmd in read_commands(&session) {
        let out = harnery(home).args(&cmd).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{cmd:?}: {}{}",
            stdout(&out),
            stderr(&out)
        );
    }
    assert_eq!(stdout(&run(home, &["export"])), expected);
    assert_eq!(home_files(home), before, "no read migrated anything");
    assert_eq!(migrations(home), older);
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(migrations(home), older + 1);
    // The files it found are recorded now: deleting one is refused.
    let raw = first_raw_file(home);
    std::fs::remove_file(&raw).unwrap();
    let out = run(home, &["finalize"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&raw.display().to_string()));
}

/// An advance moves the live epoch into the archive as it is: a damaged
/// one is refused before anything moves. (A contract to advance to exists
/// only in failpoints builds: `next` perturbs the schema digest.)
#[cfg(feature = "failpoints")]
#[test]
fn an_advance_refuses_a_damaged_epoch_and_archives_nothing() {
    let dir = drained_home();
    let home = dir.path();
    std::fs::write(db(home), b"").unwrap();
    let before = home_files(&live(home));
    let out = next(home, &["epoch", "advance"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        stderr(&out).contains(&db(home).display().to_string()),
        "{}",
        stderr(&out)
    );
    assert!(!home.join("ledgers/v2-candidates").exists());
    assert!(!home.join("ledgers/epoch-advance.json").exists());
    assert_eq!(home_files(&live(home)), before);
}
