//! Which searchable texts are the same occurrence said twice, so that it
//! is one hit: a prompt or message said by a hook and by the agent's
//! record in one turn, a tool call's input or output said under one call
//! id (or span) by a hook, by the record and by a batch summary, a
//! permission asked for a request already indexed. Kept in the index's
//! `said` table, one key per session, scope, kind and digest (see
//! [`super::keys::said_key`]); the first said (in chain order) is the
//! hit.

use rusqlite::Transaction;

use super::SearchError;
use super::extract::{Doc, Kind, output_pieces};
use super::keys::said_key;
use crate::contract::{Event, EventId, Payload, ToolBatchResult, ToolRecorded};

/// Whether `doc` is a text its session already has a hit for, the same
/// occurrence seen twice: a prompt or message said in the same turn (the
/// hook's `prompt.submitted` and the record's `message.user`, or
/// `message.displayed` and `message.assistant`, carry the one text the
/// user or the model wrote); a tool call's input or output under the same
/// call id (the hook's `tool.completed`, the record's `tool.recorded` and
/// a batch's `tool.batch_result` of a result whose text is the same, or is
/// a string of the hook's under a header of whole lines: see
/// [`wrapped_piece`]); a permission asked for a call whose request, with
/// the same input, is already in that turn. The first indexed (in chain
/// order) is kept. Without a turn or a call id two texts cannot be told to
/// be the same occurrence, and both stay.
pub(super) fn said_before(tx: &Transaction, event: &Event, doc: &Doc) -> Result<bool, SearchError> {
    let turn = event.turn.turn_id.as_deref();
    let call = match &event.payload {
        Payload::ToolRequested(p) => p.tool_call_id.as_deref(),
        Payload::ToolCompleted(p) => p.tool_call_id.as_deref(),
        Payload::ToolRecorded(p) => Some(p.tool_call_id.as_str()),
        Payload::ToolBatchResult(p) => p.tool_call_id.as_deref(),
        _ => None,
    };
    let digest = blake3::hash(doc.text.trim().as_bytes());
    // Already said: noting it added nothing.
    let said = |scope: &str, kind: &str| Ok(!note(tx, event, scope, kind, digest.as_bytes())?);
    match (doc.kind, &event.payload) {
        (Kind::Prompt | Kind::Message, _) => match turn {
            Some(turn) => said(turn, doc.kind.as_str()),
            None => Ok(false),
        },
        (_, Payload::PermissionRequested(_)) => match turn {
            Some(turn) => said(turn, Kind::ToolInput.as_str()),
            None => Ok(false),
        },
        // A hook's output notes each of its strings under its call and
        // span, so that the record's text of the same result, one of
        // them, is not a second hit.
        (Kind::ToolOutput, Payload::ToolCompleted(p)) => {
            let scopes = output_scopes(call, p.requested_event_id.as_ref());
            for piece in output_pieces(p.content.as_ref()) {
                let piece = blake3::hash(piece.as_bytes());
                for scope in &scopes {
                    note(tx, event, scope, PIECE, piece.as_bytes())?;
                }
            }
            match call {
                Some(call) => said(&format!("call:{call}"), doc.kind.as_str()),
                None => Ok(false),
            }
        }
        // The record's text of a result, or a batch's: one hit with the
        // other and with a string of the hook's completion.
        (
            Kind::ToolOutput,
            Payload::ToolRecorded(ToolRecorded {
                span_request_event_id: span,
                ..
            }),
        )
        | (
            Kind::ToolOutput,
            Payload::ToolBatchResult(ToolBatchResult {
                requested_event_id: span,
                ..
            }),
        ) => {
            let scopes = output_scopes(call, span.as_ref());
            if wrapped_piece(tx, event, &scopes, &doc.text)? {
                return Ok(true);
            }
            for scope in &scopes {
                if !note(tx, event, scope, PIECE, digest.as_bytes())? {
                    return Ok(true);
                }
            }
            match call {
                Some(call) => said(&format!("call:{call}"), doc.kind.as_str()),
                None => Ok(false),
            }
        }
        _ => {
            // A request's input is noted under its turn too, for the
            // permission asked for it after.
            if let (Payload::ToolRequested(_), Some(turn)) = (&event.payload, turn) {
                said(turn, Kind::ToolInput.as_str())?;
            }
            match call {
                Some(call) => said(&format!("call:{call}"), doc.kind.as_str()),
                None => Ok(false),
            }
        }
    }
}

/// The `said` kind of one string of a hook's tool output.
const PIECE: &str = "tool-output-piece";

/// Where a tool's output is noted: under its call id and its span's
/// request (Copilot's hooks carry no call id; its record's
/// `tool.recorded` names the span it joined).
fn output_scopes(call: Option<&str>, span: Option<&EventId>) -> Vec<String> {
    let call = call.map(|c| format!("call:{c}"));
    let span = span.map(|s| format!("span:{}", s.as_str()));
    call.into_iter().chain(span).collect()
}

/// Note `digest` under `scope` and `kind` for `event`'s session: whether
/// it is new.
fn note(
    tx: &Transaction,
    event: &Event,
    scope: &str,
    kind: &str,
    digest: &[u8],
) -> Result<bool, SearchError> {
    let added = tx
        .prepare_cached("INSERT INTO said (key) VALUES (?1) ON CONFLICT DO NOTHING")?
        .execute([said_key(&event.session, scope, kind, digest)])?;
    Ok(added == 1)
}

/// How many leading lines a record may wrap around a hook's text of the
/// same result (Codex's unified exec writes five: chunk id, wall time,
/// exit code, token count, `Output:`).
const HEADER_LINES: usize = 8;

/// Whether `text` is a string of a hook's output under one of `scopes`
/// with a header of at most [`HEADER_LINES`] whole lines before it: the
/// agent's record wraps what its hook sent (Codex's rollout holds the
/// shell's output under unified exec's header, its `PostToolUse` the
/// output alone). The header's own words are then not found for that
/// call: they restate what the event holds (the exit code) or name
/// nothing (a chunk id, a wall time).
fn wrapped_piece(
    tx: &Transaction,
    event: &Event,
    scopes: &[String],
    text: &str,
) -> Result<bool, SearchError> {
    let text = text.trim();
    let bodies = text
        .match_indices('\n')
        .take(HEADER_LINES)
        .map(|(at, _)| text[at + 1..].trim())
        .filter(|body| !body.is_empty());
    for body in bodies {
        let digest = blake3::hash(body.as_bytes());
        for scope in scopes {
            if noted(tx, event, scope, PIECE, digest.as_bytes())? {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Whether `digest` is noted under `scope` and `kind` for `event`'s
/// session.
fn noted(
    tx: &Transaction,
    event: &Event,
    scope: &str,
    kind: &str,
    digest: &[u8],
) -> Result<bool, SearchError> {
    Ok(tx
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM said WHERE key = ?1)")?
        .query_row([said_key(&event.session, scope, kind, digest)], |r| {
            r.get(0)
        })?)
}
