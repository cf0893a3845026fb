//! The effects a restore names beyond the checkpoints' own ledgers, read
//! from the session's live events below the boundary:
//!
//! - `harnery exec` commands closed by their own completion (harnery
//!   attests command telemetry as derived, so the producer's effect ledger,
//!   which takes native closes, leaves them out): the command and its
//!   exit code;
//! - spans a derived terminal closed, or whose request was minted: they
//!   lost a side, and may still have changed the world, so they are listed
//!   as effects that may have run, never dropped; so are spans still
//!   open at the boundary.

use std::collections::{BTreeMap, HashSet};

use crate::contract::{Attestation, Effect, Event, EventType, Payload};
use crate::ledger::{LedgerError, LedgerReader};
use crate::resume::log::SessionLog;
use crate::session::effects::effect_detail;

/// What the live events below `boundary` add to `recorded` (the
/// checkpoints' effects): commands closed by `harnery exec`, and the
/// spans that may have run.
pub fn beyond_checkpoints(
    ledger: &LedgerReader,
    log: &SessionLog,
    boundary: u64,
    recorded: &[Effect],
) -> Result<(Vec<Effect>, Vec<Effect>), LedgerError> {
    let types = [
        EventType::ToolRequested,
        EventType::ToolCompleted,
        EventType::CommandRequested,
        EventType::CommandCompleted,
    ];
    let events = ledger.session_events_of(&log.session, &types)?;
    let known: HashSet<&str> = recorded.iter().map(|e| e.reference.as_str()).collect();
    // Requests by event id, in offset order, with whether harnery minted
    // the request.
    let mut open: BTreeMap<String, (Effect, bool)> = BTreeMap::new();
    let mut commands = Vec::new();
    let mut may_have_run = Vec::new();
    for e in events {
        if e.offset >= boundary || log.is_superseded(e.offset) {
            continue;
        }
        if let Some((id, effect, minted)) = request(&e) {
            open.insert(id, (effect, minted));
            continue;
        }
        let Some((request_id, outcome, exit_code, derived_end)) = completion(&e) else {
            continue;
        };
        let Some((mut effect, minted)) = open.remove(&request_id) else {
            continue;
        };
        if known.contains(effect.reference.as_str()) {
            continue;
        }
        effect.outcome = Some(outcome);
        effect.exit_code = exit_code;
        match (&e.payload, derived_end || minted) {
            (_, true) => may_have_run.push(effect),
            (Payload::CommandCompleted(_), false) => commands.push(effect),
            _ => {}
        }
    }
    // Still open at the boundary: they may have run too.
    let still_open = open.into_values().map(|(effect, _)| effect);
    may_have_run.extend(still_open.filter(|e| !known.contains(e.reference.as_str())));
    Ok((commands, may_have_run))
}

/// A span's request: its event id, the effect it would be, and whether
/// harnery minted it.
fn request(e: &Event) -> Option<(String, Effect, bool)> {
    let id = e.id.as_str().to_string();
    let mut effect = Effect {
        kind: String::new(),
        reference: id.clone(),
        tool_name: None,
        tool_call_id: None,
        outcome: None,
        paths: Vec::new(),
        command: None,
        exit_code: None,
    };
    match &e.payload {
        Payload::ToolRequested(p) => {
            let (paths, command) = effect_detail(p.input.as_ref());
            effect.kind = "tool".into();
            effect.tool_name = Some(p.tool_name.clone());
            effect.tool_call_id = p.tool_call_id.clone();
            effect.paths = paths;
            effect.command = command;
            Some((id, effect, p.recovery.is_some()))
        }
        Payload::CommandRequested(p) => {
            effect.kind = "command".into();
            effect.command = Some(p.argv.join(" "));
            Some((id, effect, false))
        }
        _ => None,
    }
}

/// A span's completion: the request it closes, its outcome and exit code,
/// and whether it is a derived terminal.
fn completion(e: &Event) -> Option<(String, crate::contract::Outcome, Option<i64>, bool)> {
    let (requested, outcome, exit_code, recovered) = match &e.payload {
        Payload::ToolCompleted(p) => (&p.requested_event_id, p.outcome, p.exit_code, &p.recovery),
        Payload::CommandCompleted(p) => {
            (&p.requested_event_id, p.outcome, p.exit_code, &p.recovery)
        }
        _ => return None,
    };
    let derived = recovered.is_some()
        || (matches!(e.payload, Payload::ToolCompleted(_))
            && e.provenance.attestation != Attestation::Native);
    Some((
        requested.as_ref()?.as_str().to_string(),
        outcome,
        exit_code,
        derived,
    ))
}
