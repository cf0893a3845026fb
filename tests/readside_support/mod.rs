//! Shared helpers for the read-side integration tests: a temporary
//! HARNERY_HOME, the real `harnery` binary, and a reader for the records
//! `harnery end` / `harnery exec` left in the intake spool.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::cargo::CommandCargoExt;
use harnery::home::Home;
use harnery::spool::{IntakeSpool, SpoolRecord, read_segment};

pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `harnery <args>` with this home and a pinned clock.
    pub fn harnery(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::cargo_bin("harnery").expect("the harnery binary");
        cmd.args(args)
            .env("HARNERY_HOME", self.home())
            .env("HARNERY_NOW", "2026-11-30T00:00:00Z")
            .env("HARNERY_RECORDS", "off")
            .current_dir(self.dir.path());
        cmd
    }

    /// Every intact record in the intake spool, in file order per session.
    pub fn spooled(&self) -> Vec<SpoolRecord> {
        let spool = IntakeSpool::open(&Home::at(self.home()));
        let mut out = Vec::new();
        for session in spool.sessions().expect("listing the spool") {
            for file in session.files().expect("listing a session") {
                out.extend(read(&file.path));
            }
        }
        out
    }

    /// The JSON payloads of spooled records named `event`.
    pub fn payloads(&self, event: &str) -> Vec<serde_json::Value> {
        self.spooled()
            .into_iter()
            .filter(|r| r.envelope.event.as_deref() == Some(event))
            .map(|r| serde_json::from_slice(&r.payload).expect("harnery writes JSON"))
            .collect()
    }
}

fn read(path: &Path) -> Vec<SpoolRecord> {
    read_segment(path).expect("a readable segment").records
}
