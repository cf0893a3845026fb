//! `harnery verify`'s checks: recompute an epoch's hash chain, and check
//! that every raw signal's bytes are where its row says.
//!
//! The chain does not depend on the contract, so the live epoch is
//! verified whatever its digest. A live epoch that cannot be opened
//! because a file of it is damaged is a finding, not an error. With a
//! selection, an epoch whose rows cannot be read is a problem of that
//! epoch, and the others are still checked. (`harnery epoch verify` checks
//! what links the epochs: anchors, manifests, fences.)

use std::fmt::Write;

use serde::Serialize;

use super::epochs::open_as_written;
use crate::epoch::{EpochEntry, EpochError, EpochSelector, select};
use crate::home::Home;
use crate::ledger::integrity::RawFault;
use crate::ledger::{ChainBreak, LedgerError, LedgerReader, RawProblem};
use crate::progress::Progress;

/// One epoch's chain and raw-archive check (the default's JSON fields,
/// with the epoch's label and genesis id).
#[derive(Serialize, Default)]
pub struct Verified {
    pub epoch: String,
    pub genesis_id: String,
    pub rows: u64,
    pub chain_head: String,
    pub ok: bool,
    pub breaks: Vec<ChainBreak>,
    pub raw_signals: u64,
    pub raw_problems: Vec<RawProblem>,
    /// Why this build could not check the epoch at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// A live epoch file that is not what the ledger recorded (the
    /// refusal `harnery finalize` gives, as a finding).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub home_problems: Vec<RawFault>,
}

impl Verified {
    /// The check in lines, each after `prefix` (the epoch's label and
    /// `: ` when several epochs are reported): why the epoch could not be
    /// read, each damaged file, chain break and misplaced raw signal, and
    /// one `ok` line when the epoch is sound.
    pub fn text(&self, prefix: &str) -> String {
        let mut out = String::new();
        if let Some(why) = &self.unreadable {
            let _ = writeln!(out, "{prefix}unreadable: {why}");
        }
        for p in &self.home_problems {
            let _ = writeln!(
                out,
                "{prefix}damaged: {} {}; {}",
                p.path.display(),
                p.what,
                crate::ledger::integrity::recovery(&p.path)
            );
        }
        for b in &self.breaks {
            let _ = writeln!(
                out,
                "{prefix}seq {} event {}: {}",
                b.seq, b.event_id, b.detail
            );
        }
        for p in &self.raw_problems {
            let _ = writeln!(
                out,
                "{prefix}raw signal {} of session {} in batch {}: {}",
                p.record_digest,
                crate::terminal::escape(&p.session_key),
                p.batch,
                p.detail
            );
        }
        if self.ok {
            let _ = writeln!(
                out,
                "{prefix}ok: {} rows, chain head {}; {} raw signals, each where its row says",
                self.rows, self.chain_head, self.raw_signals
            );
        }
        out
    }
}

/// The live epoch, checked.
pub fn verify_live(home: &Home, progress: &Progress) -> Result<Verified, LedgerError> {
    match LedgerReader::open_dir(&LedgerReader::live_dir(home), None) {
        Ok(ledger) => verified(&ledger, progress),
        Err(e) => damaged(e),
    }
}

/// Each selected epoch, checked on its own, oldest first.
pub fn verify_epochs(
    home: &Home,
    selector: &EpochSelector,
    progress: &Progress,
) -> Result<Vec<Verified>, EpochError> {
    Ok(select(home, selector)?
        .iter()
        .map(|e| check(e, progress))
        .collect())
}

/// A live epoch that cannot be opened because a file of it is damaged:
/// a finding; any other error stays one.
fn damaged(e: LedgerError) -> Result<Verified, LedgerError> {
    let fault = e.damage().ok_or(e)?;
    Ok(Verified {
        epoch: "live".into(),
        home_problems: vec![fault],
        ..Verified::default()
    })
}

fn check(entry: &EpochEntry, progress: &Progress) -> Verified {
    progress.stage(entry.label());
    let result =
        open_as_written(entry).and_then(|l| verified(&l, progress).map_err(|e| e.to_string()));
    let mut v = result.unwrap_or_else(|why| Verified {
        unreadable: Some(why),
        ..Verified::default()
    });
    v.epoch = entry.label().to_string();
    v.genesis_id = entry.genesis_id.clone();
    v
}

/// The chain and the raw archive of one epoch, checked at once: each half
/// of the raw signals (by receive time) on a connection of its own while
/// the chain's chunks run.
fn verified(ledger: &LedgerReader, progress: &Progress) -> Result<Verified, LedgerError> {
    let dir = ledger.dir();
    let mid = ledger.raw().midpoint()?;
    let (chain, halves) = std::thread::scope(|scope| {
        let halves: Vec<_> = [(None, mid), (mid, None)]
            .into_iter()
            .take(if mid.is_some() { 2 } else { 1 })
            .map(|(from, to)| {
                scope.spawn(move || {
                    LedgerReader::open_dir(dir, None)?
                        .raw()
                        .verify_range(from, to)
                })
            })
            .collect();
        let chain = ledger.verify().chain_threads(None, progress);
        let halves: Vec<_> = halves
            .into_iter()
            .map(|h| h.join().expect("the raw check does not panic"))
            .collect();
        (chain, halves)
    });
    let (rows, breaks) = chain?;
    let (mut raw_signals, mut raw_problems) = (0, Vec::new());
    for half in halves {
        let (n, problems) = half?;
        raw_signals += n;
        raw_problems.extend(problems);
    }
    let chain_head = ledger.chain_head()?;
    Ok(Verified {
        epoch: "live".into(),
        genesis_id: ledger.genesis().genesis_id.clone(),
        rows,
        ok: breaks.is_empty() && raw_problems.is_empty(),
        chain_head,
        breaks,
        raw_signals,
        raw_problems,
        unreadable: None,
        home_problems: Vec::new(),
    })
}
