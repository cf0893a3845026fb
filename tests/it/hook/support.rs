//! Shared helpers for the hook and spool integration tests: run the real
//! `harnery-hook` binary in a temporary `HARNERY_HOME` and read back the spool.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use harnery::home::Home;
use harnery::spool::{Damage, IntakeSpool, SpoolRecord, read_segment};

pub fn hook_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("harnery-hook")
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A hook command with a clean environment pointing at `home`.
pub fn hook_cmd(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(hook_bin());
    c.args(args)
        .env_clear()
        .env("HARNERY_HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Run the hook with `input` on stdin; assert exit 0 and empty stdout.
pub fn run_hook(home: &Path, args: &[&str], input: &[u8]) -> Output {
    run_cmd(hook_cmd(home, args), input)
}

/// Run with `input` as stdin. The bytes come from an unlinked temporary
/// file, so they and the EOF are there at once: a busy machine cannot make
/// the hook see a stalled stdin (that case has its own tests).
pub fn run_cmd(mut c: Command, input: &[u8]) -> Output {
    use std::io::{Seek, SeekFrom};
    let mut file = tempfile::tempfile().expect("temp file");
    file.write_all(input).expect("write stdin file");
    file.seek(SeekFrom::Start(0)).expect("rewind stdin file");
    let out = c
        .stdin(Stdio::from(file))
        .output()
        .expect("run harnery-hook");
    assert_ok(&out);
    out
}

pub fn assert_ok(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "hook exit status; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout.is_empty(),
        "hook printed to stdout: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Every record and damage range in the spool of `home` (all sessions, all
/// files including the active segments, and dead letters).
pub fn read_all(home: &Path) -> (Vec<SpoolRecord>, Vec<Damage>) {
    let spool = IntakeSpool::open(&Home::at(home));
    let (mut recs, mut dmg) = (Vec::new(), Vec::new());
    let mut files: Vec<PathBuf> = Vec::new();
    for s in spool.sessions().expect("sessions") {
        files.extend(s.files().expect("files").into_iter().map(|f| f.path));
    }
    files.extend(
        spool
            .dead_letters()
            .expect("dead letters")
            .into_iter()
            .map(|f| f.path),
    );
    for f in files {
        let r = read_segment(&f).expect("read segment");
        recs.extend(r.records);
        dmg.extend(r.damage);
    }
    (recs, dmg)
}

/// Every path below `dir` (files and dirs), sorted.
pub fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}
