//! The sessions whose stored producer state ticks to nothing at any time
//! ([`SessionProducer::ticks_nothing`](crate::session::SessionProducer)),
//! kept between runs so that the time rules do not load and parse every
//! session's state on every run: an idle `finalize` over 10,000 sessions
//! spent most of its time there.
//!
//! One small file, `ledgers/finalize.quiet`, beside `finalize.last` and
//! outside every epoch: not part of the ledger, only a hint. Its first
//! line names what it holds for (the version of harnery that wrote it, the
//! live epoch's genesis id, the contract digest and every agent's
//! capability profile this build has);
//! each next line is a JSON array `[adapter, session id, batch, length]`:
//! a session and the version of its stored state
//! ([`StateVersion`]) found quiet. A session is passed over only while
//! its state is that same version; a file that is missing, for another
//! epoch or build, or damaged holds nothing, and the run loads every
//! state as before.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::agents::CapabilityProfile;
use crate::contract::{AdapterId, SessionRef};
use crate::home::Home;
use crate::ledger::{LedgerReader, StateVersion, binary_digest};

/// The file's name in the home's `ledgers/` directory.
pub const FILE: &str = "finalize.quiet";

type Entry = (String, String, String, i64);

/// The quiet sessions a run found on disk, and those it found itself.
pub(super) struct Quiet {
    path: PathBuf,
    header: String,
    known: HashSet<Entry>,
    found: Vec<Entry>,
}

fn entry(session: &SessionRef, version: &StateVersion) -> Entry {
    (
        session.adapter.as_str().to_string(),
        session.session_id.clone(),
        version.batch.clone(),
        version.len,
    )
}

impl Quiet {
    /// What `ledgers/finalize.quiet` holds for `ledger` (nothing when it
    /// was written for another epoch or build, or does not read).
    pub(super) fn load(home: &Home, ledger: &LedgerReader) -> Quiet {
        let profiles: Vec<String> = AdapterId::ALL
            .iter()
            .map(|a| CapabilityProfile::of(*a).digest_hex())
            .collect();
        let header = serde_json::to_string(&(
            "harnery finalize.quiet 1",
            env!("CARGO_PKG_VERSION"),
            &ledger.genesis().genesis_id,
            binary_digest(),
            profiles,
        ))
        .expect("strings serialize");
        let path = home.ledgers_dir().join(FILE);
        let mut quiet = Quiet {
            path,
            header,
            known: HashSet::new(),
            found: Vec::new(),
        };
        let Ok(text) = std::fs::read_to_string(&quiet.path) else {
            return quiet;
        };
        let mut lines = text.lines();
        if lines.next() != Some(quiet.header.as_str()) {
            return quiet;
        }
        let known: Option<HashSet<Entry>> = lines.map(|l| serde_json::from_str(l).ok()).collect();
        quiet.known = known.unwrap_or_default();
        quiet
    }

    /// Whether `session`'s state at `version` was found quiet (it is kept
    /// for the next run too).
    pub(super) fn holds(&mut self, session: &SessionRef, version: &StateVersion) -> bool {
        let e = entry(session, version);
        let held = self.known.contains(&e);
        if held {
            self.found.push(e);
        }
        held
    }

    /// `session`'s state at `version` ticks to nothing.
    pub(super) fn add(&mut self, session: &SessionRef, version: &StateVersion) {
        self.found.push(entry(session, version));
    }

    /// Keep what this run found for the next (only when it changed). A
    /// failure costs the next run time, nothing else.
    pub(super) fn save(self) {
        let unchanged = self.found.len() == self.known.len()
            && self.found.iter().all(|e| self.known.contains(e));
        if unchanged {
            return;
        }
        let mut text = self.header;
        text.push('\n');
        for e in &self.found {
            text.push_str(&serde_json::to_string(e).expect("strings and a number serialize"));
            text.push('\n');
        }
        let _ = crate::durable::write_atomic(
            &self.path,
            text.as_bytes(),
            crate::durable::Mode::Private,
        );
    }
}
