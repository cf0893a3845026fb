//! A session's receipts across the selected epochs, as `harnery receipts`
//! reads them: each part of the session gets its own receipts, in chain
//! order. A turn never spans an epoch boundary (an archive's open spans can
//! never close), so parts are never merged.
//!
//! What a part shows: the events a resume superseded are left out (kept,
//! and their turns noted `superseded`, with `include_superseded`), and a
//! restored session's copy of its parent's record is left out too: those
//! turns are in the parent's receipts.

use std::collections::HashSet;

use serde::Serialize;

use super::epochs::{Epochs, OpenEpoch, report_damaged};
use super::inherited::Inherited;
use super::receipts::{SessionReceipts, session_receipts};
use super::source::SourceError;
use crate::contract::{Event, SessionRef};
use crate::restore::log::{self, SessionLog};

/// One part's receipts (`receipts --epoch …`'s JSON, per part).
#[derive(Serialize)]
pub struct PartReceipts<'a> {
    #[serde(skip)]
    pub part: &'a OpenEpoch,
    pub epoch: &'a str,
    pub genesis_id: &'a str,
    #[serde(flatten)]
    pub receipts: SessionReceipts,
}

/// Every part's receipts of one session.
#[derive(Serialize)]
pub struct WholeReceipts<'a> {
    pub session: SessionRef,
    pub parts: Vec<PartReceipts<'a>>,
    /// Whether a row of any part could not be read (each named on stderr).
    #[serde(skip)]
    pub damaged: bool,
}

/// The receipts of the session `name` names, part by part.
pub fn receipts_across<'a>(
    epochs: &'a Epochs,
    name: &str,
    include_superseded: bool,
) -> Result<WholeReceipts<'a>, SourceError> {
    let found = epochs.session("receipts", name)?;
    let read = found.read("receipts", epochs, |l, s| {
        let log = SessionLog::read_resumes(l, s)?;
        let (events, bad) = l.events().session_events_lenient(s)?;
        Ok((events, bad, log, Inherited::of(l, s)?))
    })?;
    let mut whole = WholeReceipts {
        session: found.session.clone(),
        parts: Vec::new(),
        damaged: false,
    };
    for (epoch, (events, bad, log, inherited)) in &read {
        whole.damaged |= report_damaged("receipts", &epoch.label, bad);
        let mut shown = log::live_events(log, events, include_superseded);
        shown.retain(|(e, _)| !inherited.is_copy(e));
        let refs: Vec<_> = shown.iter().map(|(e, _)| *e).collect();
        let mut receipts = session_receipts(&refs);
        mark_superseded(&mut receipts, &shown);
        whole.parts.push(PartReceipts {
            part: epoch,
            epoch: &epoch.label,
            genesis_id: &epoch.genesis_id,
            receipts,
        });
    }
    Ok(whole)
}

/// A turn all of whose events a resume superseded (shown only with
/// `include_superseded`) is noted `superseded`.
fn mark_superseded(receipts: &mut SessionReceipts, shown: &[(&Event, bool)]) {
    let mut live = HashSet::new();
    let mut superseded = HashSet::new();
    for (e, sup) in shown {
        if let Some(turn) = e.turn.turn_id.as_deref() {
            if *sup {
                superseded.insert(turn);
            } else {
                live.insert(turn);
            }
        }
    }
    for turn in &mut receipts.turns {
        let id = turn.turn_id.as_str();
        if superseded.contains(id) && !live.contains(id) {
            turn.notes.push("superseded");
        }
    }
}
