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

use std::collections::HashSet;

use crate::contract::{Attestation, Effect, Event, EventType, Payload};
use crate::ledger::{LedgerError, LedgerReader, SpanState};
use crate::restore::log::SessionLog;
use crate::session::effects::effect_detail;

/// What the live events below `boundary` add to `recorded` (the
/// checkpoints' effects): commands closed by `harnery exec`, and the
/// spans that may have run. Commands are few and read by type; of the
/// tool calls, only the spans the ledger holds recovered or open are
/// looked up (by id), not every call.
pub(crate) fn beyond_checkpoints(
    ledger: &LedgerReader,
    log: &SessionLog,
    boundary: u64,
    recorded: &[Effect],
) -> Result<(Vec<Effect>, Vec<Effect>), LedgerError> {
    let known: HashSet<&str> = recorded.iter().map(|e| e.reference.as_str()).collect();
    let live = |e: &Event| e.offset < boundary && !log.is_superseded(e.offset);
    let mut commands = Vec::new();
    let mut may_have_run = Vec::new();
    let types = [EventType::CommandRequested, EventType::CommandCompleted];
    let events = ledger.events().session_events_of(&log.session, &types)?;
    let (closed, open) = super::command_effects::pair(events.into_iter().filter(live));
    for c in closed {
        match c.derived {
            true => may_have_run.push(c.effect),
            false => commands.push(c.effect),
        }
    }
    may_have_run.extend(open);
    for span in ledger.spans().list(Some(&log.session))? {
        if span.kind != "tool" || span.state == SpanState::ClosedNative {
            continue;
        }
        let Some(req) = ledger
            .events()
            .session_event(&log.session, &span.request_event_id)?
        else {
            continue;
        };
        let Some((_, mut effect, _)) = request(&req).filter(|_| live(&req)) else {
            continue;
        };
        if let Some(done) = &span.completed_event_id
            && let Some(end) = ledger.events().session_event(&log.session, done)?
            && let Some((_, outcome, exit_code, _)) = completion(&end)
        {
            effect.outcome = Some(outcome);
            effect.exit_code = exit_code;
        }
        may_have_run.push(effect);
    }
    commands.retain(|e| !known.contains(e.reference.as_str()));
    may_have_run.retain(|e| !known.contains(e.reference.as_str()));
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
