//! What a session holds of its parents': a `restore --apply` session's
//! record starts with a copy of its parent's record up to the checkpoint
//! (the same message ids, line uuids and tool call ids), linked to the
//! parent by its first checkpoint's `restored_from` effect. Those copied
//! lines are the parent's calls, not new ones: every view shows them as
//! inherited and counts them nowhere again (turn tokens, receipts, OTLP,
//! the sessions list), and `usage` judges them the same way
//! ([`super::usage_calls`]).
//!
//! A record event is inherited when the session descends from one whose
//! events carry the same id: a message or usage id, or the call id of a
//! record call no hook span joined (and, in a parent's turn, what a copied
//! line restates without an id: metadata, the agent's running cost). A `--fork-session` copy says so itself
//! (`copied_from_session`). Only the session's own ledger is read: a parent
//! in another epoch is not found, and its copies then count as the
//! session's own (never lost).

use std::collections::{HashMap, HashSet};

use super::timeline::Timeline;
use crate::contract::{AdapterId, Event, EventType, Payload, SessionRef};
use crate::ledger::{LedgerError, LedgerReader};
use crate::report::superseded::restored_from;
use crate::report::usage::{Prices, UsageGroup, UsageTally};

/// How far a chain of restores is followed.
const MAX_ANCESTORS: usize = 64;

/// The record events a copy can repeat.
const COPIED_KINDS: &[EventType] = &[
    EventType::MessageUser,
    EventType::MessageAssistant,
    EventType::ReasoningRecorded,
    EventType::UsageReported,
    EventType::ToolRecorded,
    EventType::SessionMetadata,
];

/// A session's parents and what they recorded.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inherited {
    /// The nearest parent, `adapter/id`.
    parent: Option<String>,
    /// The parents, nearest first.
    ancestors: Vec<SessionRef>,
    /// Message, line and usage ids the parents recorded.
    ids: HashSet<String>,
    /// Record calls of the parents: call id and tool name.
    calls: HashMap<String, String>,
    /// The parents' turns their records' lines belong to.
    turns: HashSet<String>,
}

impl Inherited {
    /// `session`'s parents (through `restore --apply` links) and their
    /// record events, read from `ledger`.
    pub(crate) fn of(
        ledger: &LedgerReader,
        session: &SessionRef,
    ) -> Result<Inherited, LedgerError> {
        let mut out = Inherited::default();
        let mut at = session.clone();
        for _ in 0..MAX_ANCESTORS {
            let Some(parent) = parent_of(ledger, &at)? else {
                break;
            };
            if parent == *session || out.ancestors.contains(&parent) {
                break;
            }
            out.parent
                .get_or_insert_with(|| format!("{}/{}", parent.adapter, parent.session_id));
            for e in ledger.events().session_events_of(&parent, COPIED_KINDS)? {
                out.note(&e);
            }
            out.ancestors.push(parent.clone());
            at = parent;
        }
        Ok(out)
    }

    fn note(&mut self, e: &Event) {
        if let Some(turn) = &e.turn.turn_id {
            self.turns.insert(turn.clone());
        }
        if let Some(id) = record_id(&e.payload) {
            self.ids.insert(id.to_string());
        }
        if let Payload::ToolRecorded(t) = &e.payload
            && t.tool_name != "unknown"
        {
            self.calls
                .insert(t.tool_call_id.clone(), t.tool_name.clone());
        }
    }

    /// Whether `e` is a copy of a parent's event.
    pub(crate) fn is_copy(&self, e: &Event) -> bool {
        if let Payload::UsageReported(u) = &e.payload
            && u.copied_from_session.is_some()
        {
            return true;
        }
        if let Payload::ToolRecorded(t) = &e.payload {
            return t.span_request_event_id.is_none() && self.calls.contains_key(&t.tool_call_id);
        }
        // What a copied line restates without an id of its own (the
        // session's version and directory, the agent's running cost)
        // belongs to the parent's turn it was copied from.
        let in_parents_turn = || {
            e.turn
                .turn_id
                .as_ref()
                .is_some_and(|t| self.turns.contains(t))
        };
        match &e.payload {
            Payload::SessionMetadata(_) => return in_parents_turn(),
            Payload::UsageReported(u) if u.message_id.is_none() => return in_parents_turn(),
            _ => {}
        }
        record_id(&e.payload).is_some_and(|id| self.ids.contains(id))
    }

    /// The events of `events` that are the session's own.
    pub(crate) fn own<'a>(&'a self, events: impl IntoIterator<Item = &'a Event>) -> Vec<&'a Event> {
        events.into_iter().filter(|e| !self.is_copy(e)).collect()
    }

    /// Mark each copied event's line of `timeline` as inherited from the
    /// parent, instead of a call whose hook signal was lost.
    pub(crate) fn mark(&self, timeline: &mut Timeline, events: &[Event]) {
        let Some(parent) = &self.parent else {
            return;
        };
        let copies: HashMap<u64, &Event> = events
            .iter()
            .filter(|e| self.is_copy(e))
            .map(|e| (e.offset, e))
            .collect();
        for entry in &mut timeline.entries {
            let Some(e) = copies.get(&entry.offset) else {
                continue;
            };
            entry.inherited_from = Some(parent.clone());
            entry.text = match &e.payload {
                Payload::ToolRecorded(t) => format!(
                    "record: tool {} call {} (inherited from {parent}: its call, copied into \
                     this session's record)",
                    self.calls.get(&t.tool_call_id).unwrap_or(&t.tool_name),
                    t.tool_call_id
                ),
                _ => format!("{} (inherited from {parent})", entry.text),
            };
        }
    }

    /// `session`'s usage as `harnery usage --session` counts it: its
    /// parents' calls (a restore's or a fork's copies) inherited, its
    /// reported cost its own.
    pub(crate) fn usage(
        &self,
        ledger: &LedgerReader,
        session: &SessionRef,
        prices: Option<Prices>,
    ) -> Result<UsageGroup, LedgerError> {
        const KINDS: &[EventType] = &[EventType::UsageReported, EventType::CheckpointRecorded];
        let mut tally = UsageTally::new(crate::report::usage::GroupBy::Session, prices);
        let events = ledger.events().session_events_of(session, KINDS)?;
        let mut parents: Vec<SessionRef> = self.ancestors.iter().rev().cloned().collect();
        // A fork names the session its copies came from.
        for e in &events {
            if let Payload::UsageReported(u) = &e.payload
                && let Some(from) = &u.copied_from_session
            {
                let fork_parent = SessionRef {
                    adapter: session.adapter,
                    session_id: from.clone(),
                };
                if !parents.contains(&fork_parent) {
                    parents.insert(0, fork_parent);
                }
            }
        }
        for parent in &parents {
            for e in ledger.events().session_events_of(parent, KINDS)? {
                tally.observe(&e);
            }
        }
        for e in &events {
            tally.add(e);
        }
        Ok(tally.total)
    }
}

/// The session `session` was restored from, in the same agent.
fn parent_of(
    ledger: &LedgerReader,
    session: &SessionRef,
) -> Result<Option<SessionRef>, LedgerError> {
    let Some(from) = restored_from(ledger, session)? else {
        return Ok(None);
    };
    let Some((adapter, id)) = from.session.split_once('/') else {
        return Ok(None);
    };
    let adapter = AdapterId::parse(adapter);
    Ok(adapter
        .filter(|a| *a == session.adapter)
        .map(|adapter| SessionRef {
            adapter,
            session_id: id.to_string(),
        }))
}

/// The id a copied record event keeps: a message's id (a user line's
/// uuid), a usage record's call id, a reasoning's message id.
fn record_id(p: &Payload) -> Option<&str> {
    match p {
        Payload::MessageUser(m) => m.message_id.as_deref(),
        Payload::MessageAssistant(m) => m.message_id.as_deref(),
        Payload::ReasoningRecorded(r) => r.message_id.as_deref(),
        Payload::UsageReported(u) => u.message_id.as_deref(),
        _ => None,
    }
}
