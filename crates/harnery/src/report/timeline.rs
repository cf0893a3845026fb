//! A session's timeline for `harnery show`: its events in offset order,
//! with each tool or command span shown once, at its request, carrying the
//! state, outcome and duration its terminal gave it. The ledger's queries
//! give the rows; the words each line says (`describe`) are made here, on
//! the read side, never in the storage layer.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::agents::agent;
use crate::contract::{Event, Observation, Payload, SessionRef};
use crate::ledger::{DamagedRow, LedgerError, LedgerReader, SessionSummary, SpanRow};

/// One line of a timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineEntry {
    pub offset: u64,
    /// Milliseconds since the session's first event.
    pub at_ms: i64,
    pub kind: String,
    pub turn: Option<String>,
    pub agent_id: Option<String>,
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<SpanRow>,
    /// On the line that closes a turn (its completion, else its start):
    /// the input plus output tokens its usage records reported. Set by
    /// the reader that sums usage, never here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_tokens: Option<u64>,
    /// On a span's line: what the agent's own record says of the call it
    /// joined (`tool.recorded`): its call id, turn id, exit code, success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<RecordJoin>,
    /// In a range a resume superseded: shown, but left out of the counts.
    /// Set by the reader that knows the resumes, never here.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
    /// The offset of the `session.resumed` that superseded it.
    #[serde(skip)]
    pub superseded_by: Option<u64>,
    /// On a `message.user` that was not the user: who sent it (its
    /// `source`, generation 6; Copilot's steering, ADR-0007).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steering: Option<String>,
    /// A copy of a parent's event (a `restore --apply` session's copied
    /// record): the parent, `adapter/id`. Set by the reader that knows the
    /// links, never here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inherited_from: Option<String>,
}

/// The agent's record of a hook span's call, from the `tool.recorded`
/// events joined to it (the start's and the result's, merged).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecordJoin {
    pub tool_call_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
}

impl RecordJoin {
    /// The record's call of each joined span, by its request event id.
    pub(crate) fn of_events<'a>(
        events: impl IntoIterator<Item = &'a Event>,
    ) -> HashMap<String, RecordJoin> {
        let mut out: HashMap<String, RecordJoin> = HashMap::new();
        for e in events {
            let Payload::ToolRecorded(t) = &e.payload else {
                continue;
            };
            let Some(span) = &t.span_request_event_id else {
                continue;
            };
            let j = out.entry(span.to_string()).or_default();
            j.tool_call_id.clone_from(&t.tool_call_id);
            j.turn_id = t.turn_id.clone().or(j.turn_id.take());
            j.exit_code = t.exit_code.or(j.exit_code);
            j.success = t.success.or(j.success);
        }
        out
    }

    fn text(&self) -> String {
        let mut text = format!(" · record: call {}", self.tool_call_id);
        if let Some(t) = &self.turn_id {
            text.push_str(&format!(", turn {t}"));
        }
        if let Some(c) = self.exit_code {
            text.push_str(&format!(", exit {c}"));
        }
        text
    }
}

/// Calls the record shows the agent refused before any hook ran: no hook
/// span, and its result an error (the call never ran, so no hook fired).
fn refused_calls(events: &[Event]) -> HashSet<String> {
    events
        .iter()
        .filter_map(|e| match &e.payload {
            Payload::ToolRecorded(t)
                if t.span_request_event_id.is_none() && t.success == Some(false) =>
            {
                Some(t.tool_call_id.clone())
            }
            _ => None,
        })
        .collect()
}

/// What a `tool.recorded` without a hook span says.
const LOST: &str = " (no hook span: a hook signal was lost)";
const REFUSED: &str = " (no hook span: the agent refused the call before its hooks ran)";
const UNHOOKED: &str = " (no hook span: the agent runs no hooks for this tool)";
const IMPORTED: &str = " (no hook span: imported from the agent's record, no hook ran)";

/// In a session `harnery import` read, the offset where hooks began to
/// see it (a resume), if they did: the calls its record holds before
/// that had no hook to run.
fn imported_until(events: &[Event]) -> Option<u64> {
    events
        .iter()
        .any(|e| matches!(e.payload, Payload::SessionImported(_)))
        .then(|| {
            let hooked = |e: &&Event| {
                matches!(
                    e.payload,
                    Payload::SessionStarted(_)
                        | Payload::PromptSubmitted(_)
                        | Payload::ToolRequested(_)
                )
            };
            events.iter().find(hooked).map_or(u64::MAX, |e| e.offset)
        })
}

#[derive(Debug, Clone, Serialize)]
pub struct Timeline {
    pub summary: SessionSummary,
    pub entries: Vec<TimelineEntry>,
    /// Rows of the session whose text could not be read; left out above.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damaged_rows: Vec<DamagedRow>,
}

/// Build the timeline of one session.
pub fn timeline(ledger: &LedgerReader, session: &SessionRef) -> Result<Timeline, LedgerError> {
    Ok(with_events(ledger, session)?.0)
}

/// [`timeline`], and the events it was built from (those that parsed), for
/// a reader that projects them further.
pub(crate) fn with_events(
    ledger: &LedgerReader,
    session: &SessionRef,
) -> Result<(Timeline, Vec<Event>), LedgerError> {
    let summary = ledger
        .sessions()
        .list()?
        .into_iter()
        .find(|s| &s.session == session)
        .ok_or_else(|| LedgerError::UnknownSession(session.session_id.clone()))?;
    let spans: HashMap<String, SpanRow> = ledger
        .spans()
        .list(Some(session))?
        .into_iter()
        .flat_map(|s| {
            let mut keys = vec![s.request_event_id.clone()];
            keys.extend(s.completed_event_id.clone());
            keys.into_iter().map(move |k| (k, s.clone()))
        })
        .collect();
    let start = summary.first_unix_ns;
    let (events, damaged_rows) = ledger.events().session_events_lenient(session)?;
    let joins = RecordJoin::of_events(&events);
    let refused = refused_calls(&events);
    let imported = imported_until(&events);
    let entries = events
        .iter()
        .filter_map(|e| {
            let mut entry = entry(e, start, &spans)?;
            if let Some(s) = &mut entry.span
                && let Some(j) = joins.get(&s.request_event_id)
            {
                if s.tool_call_id.is_none() {
                    s.tool_call_id = Some(j.tool_call_id.clone());
                }
                entry.text.push_str(&j.text());
                entry.record = Some(j.clone());
            }
            if let Payload::ToolRecorded(t) = &e.payload
                && let Some(cut) = entry.text.strip_suffix(LOST)
            {
                if imported.is_some_and(|until| e.offset < until) {
                    entry.text = format!("{cut}{IMPORTED}");
                } else if refused.contains(&t.tool_call_id) {
                    entry.text = format!("{cut}{REFUSED}");
                } else if !agent(session.adapter).hooked_tool(&t.tool_name) {
                    entry.text = format!("{cut}{UNHOOKED}");
                }
            }
            Some(entry)
        })
        .collect();
    let timeline = Timeline {
        summary,
        entries,
        damaged_rows,
    };
    Ok((timeline, events))
}

fn entry(e: &Event, start: i64, spans: &HashMap<String, SpanRow>) -> Option<TimelineEntry> {
    let span = spans.get(e.id.as_str()).cloned();
    // A paired terminal is shown on its request's line.
    if let Some(s) = &span
        && s.request_event_id != e.id.as_str()
    {
        return None;
    }
    Some(TimelineEntry {
        offset: e.offset,
        at_ms: (e.time_unix_ns - start) / 1_000_000,
        kind: e.event_type().as_str().to_string(),
        turn: e.turn.turn_id.clone(),
        agent_id: e.agent_id.clone(),
        text: describe(&e.payload, span.as_ref()),
        span,
        turn_tokens: None,
        record: None,
        superseded: false,
        superseded_by: None,
        steering: match &e.payload {
            Payload::MessageUser(m) => m.source.clone(),
            _ => None,
        },
        inherited_from: None,
    })
}

fn clip(text: &str, max: usize) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max).collect();
    out.push('…');
    out
}

fn span_text(name: &str, s: Option<&SpanRow>) -> String {
    let Some(s) = s else {
        return name.to_string();
    };
    let mut text = format!("{name} [{}]", s.state.as_str());
    if let Some(outcome) = &s.outcome {
        text.push_str(&format!(" {outcome}"));
    }
    match (s.duration_ms, s.requested_unix_ns, s.completed_unix_ns) {
        (Some(ms), _, _) => text.push_str(&format!(" {ms} ms")),
        // Recovered terminals carry no time worth showing; a native one
        // without a reported duration still has two observed instants.
        (None, Some(from), Some(to)) if s.reason.is_none() && to >= from => {
            text.push_str(&format!(
                " {} ms between request and completion",
                (to - from) / 1_000_000
            ))
        }
        (None, _, _) if s.completed_event_id.is_some() => text.push_str(" duration unknown"),
        (None, _, _) => {}
    }
    if let Some(reason) = &s.reason {
        text.push_str(&format!(" (recovery: {reason})"));
    } else if s.kind == "tool" && s.tool_call_id.is_none() && s.completed_event_id.is_some() {
        // The agent sent no call id: the completion took the oldest open
        // request of the same tool and input (`paired_by: order`).
        text.push_str(" (paired by order: no call id)");
    }
    text
}

fn describe(p: &Payload, span: Option<&SpanRow>) -> String {
    match p {
        Payload::SessionStarted(s) => format!(
            "session started{}",
            s.source
                .as_ref()
                .map(|x| format!(" ({x})"))
                .unwrap_or_default()
        ),
        Payload::SessionEnded(s) => format!(
            "session ended{}",
            s.reason
                .as_ref()
                .map(|x| format!(" ({x})"))
                .unwrap_or_default()
        ),
        Payload::PromptSubmitted(s) => {
            format!("prompt: {}", clip(s.prompt.as_deref().unwrap_or(""), 72))
        }
        Payload::TurnStarted(_) => "turn started".into(),
        Payload::TurnCompleted(s) => format!(
            "turn completed{}",
            s.stop_reason
                .as_ref()
                .map(|x| format!(" ({x})"))
                .unwrap_or_default()
        ),
        Payload::ToolRequested(t) => format!("tool {}", span_text(&t.tool_name, span)),
        Payload::ToolCompleted(t) => {
            format!("tool {} completed {:?}", t.tool_name, t.outcome).to_lowercase()
        }
        Payload::CommandRequested(c) => {
            format!("command {}", span_text(&clip(&c.argv.join(" "), 60), span))
        }
        Payload::CommandCompleted(c) => format!("command completed {:?}", c.outcome).to_lowercase(),
        Payload::SubagentStarted(s) => format!(
            "subagent started {} {}",
            s.agent_type.as_deref().unwrap_or("-"),
            s.agent_id
        ),
        Payload::SubagentStopped(s) => format!(
            "subagent stopped {} {}",
            s.agent_type.as_deref().unwrap_or("-"),
            s.agent_id
        ),
        Payload::CompactionStarted(_) => "compaction started".into(),
        Payload::CompactionCompleted(_) => "compaction completed".into(),
        Payload::ErrorReported(e) => format!("error: {}", clip(&e.message, 72)),
        Payload::PermissionRequested(p) => format!("permission requested for {}", p.tool_name),
        Payload::Notification(n) => format!(
            "notification: {}",
            clip(n.message.as_deref().unwrap_or(""), 60)
        ),
        Payload::MessageDisplayed(m) => {
            format!("message: {}", clip(m.text.as_deref().unwrap_or(""), 60))
        }
        Payload::HookObserved(h) => format!(
            "hook {}{}{}",
            h.event,
            h.model
                .as_deref()
                .map(|m| format!(" model {m}"))
                .unwrap_or_default(),
            h.detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ),
        Payload::SessionImported(i) => format!("imported from {} ({} bytes)", i.path, i.bytes),
        Payload::SessionTitled(t) => format!("titled {:?} ({} in {})", t.title, t.field, t.path),
        Payload::ToolBatchCompleted(b) => format!("tool batch of {} completed", b.calls),
        Payload::ToolBatchResult(r) => format!(
            "{} result in the batch ({} bytes)",
            r.tool_name,
            r.output.len() as u64 + r.output_cut_bytes.unwrap_or(0)
        ),
        Payload::LateEvidence(l) => format!(
            "late evidence for {} ({:?})",
            l.span_request_event_id, l.outcome
        )
        .to_lowercase(),
        Payload::EndRequested(r) => format!(
            "end requested by {} ({} approved spans)",
            r.origin,
            r.approved_spans.len()
        ),
        Payload::EndSalvaged(s) => format!("end salvaged {} spans", s.salvaged_spans),
        Payload::EndCancelled(c) => format!("end cancelled ({})", c.cause),
        Payload::EndExpired(_) => "end expired".into(),
        Payload::HealthCondition(h) => format!("health {}: {}", h.code, clip(&h.detail, 72)),
        Payload::SignalUnrecognized(s) => format!(
            "unrecognized signal {} ({}){}",
            s.adapter_event.as_deref().unwrap_or("-"),
            s.reason,
            s.record
                .as_ref()
                .map(|r| format!(" at {} byte {}", r.path, r.offset))
                .unwrap_or_default()
        ),
        Payload::MessageUser(m) => match &m.source {
            Some(from) => format!(
                "steering from {}: {}",
                clip(from, 48),
                first_line(m.text.as_deref(), 72)
            ),
            None => format!("user: {}", first_line(m.text.as_deref(), 72)),
        },
        Payload::MessageAssistant(m) => {
            let mut text = format!("assistant: {}", first_line(m.text.as_deref(), 72));
            if !m.tool_call_ids.is_empty() {
                text.push_str(&format!(" (asks for {} tools)", m.tool_call_ids.len()));
            }
            text
        }
        Payload::ReasoningRecorded(r) => {
            format!("reasoning: {}", first_line(r.text.as_deref(), 72))
        }
        Payload::UsageReported(u) => format!(
            "usage {}: {} in, {} out, {} cache read, {} cache write",
            u.model.as_deref().unwrap_or("-"),
            count(u.input_tokens),
            count(u.output_tokens),
            count(u.cache_read_tokens),
            count(u.cache_write_tokens)
        ),
        Payload::UsageSummary(u) => format!(
            "agent's totals for {}: {} requests, {} premium requests, {} in, {} out, {} cache read",
            u.model,
            count(u.requests),
            u.premium_requests.as_ref().map_or("-", |p| p.as_str()),
            count(u.input_tokens),
            count(u.output_tokens),
            count(u.cache_read_tokens)
        ),
        Payload::SessionMetadata(m) => format!(
            "agent {}{}",
            m.agent_version.as_deref().unwrap_or("version unknown"),
            m.head_commit
                .as_ref()
                .map(|c| format!(" at commit {}", clip(c, 12)))
                .unwrap_or_default()
        ),
        Payload::ToolRecorded(t) => format!(
            "record: tool {} call {}{}{}{}",
            t.tool_name,
            t.tool_call_id,
            t.turn_id
                .as_ref()
                .map(|turn| format!(" in native turn {turn}"))
                .unwrap_or_default(),
            t.exit_code
                .map(|c| format!(" exit {c}"))
                .unwrap_or_default(),
            if t.span_request_event_id.is_none() {
                LOST
            } else {
                ""
            }
        ),
        Payload::RecordProblem(r) => format!("record {}: {}", r.kind, clip(&r.detail, 72)),
        Payload::CheckpointLocated(c) => format!(
            "checkpoint {} stands at byte {} of the agent's record{}",
            c.checkpoint_id,
            c.end,
            c.line_id
                .as_deref()
                .map(|id| format!(" (last line {})", clip(id, 12)))
                .unwrap_or_default()
        ),
        Payload::CheckpointRecorded(c) => format!(
            "checkpoint {} at offset {} ({}, {} effects){}",
            c.checkpoint_id,
            c.offset,
            match &c.commit {
                Observation::Observed(sha) => format!("commit {}", clip(sha, 12)),
                Observation::Unknown(why) => format!("commit unknown: {why}"),
            },
            c.effects.len(),
            // `restore --apply` starts a session from its parent's checkpoint.
            c.effects
                .iter()
                .find(|e| e.kind == "restored_from")
                .map(|e| format!(" · restored from {}", clip(&e.reference, 120)))
                .unwrap_or_default()
        ),
        Payload::RestoreRecorded(r) => format!(
            "restore from checkpoint {} (offsets below {})",
            r.checkpoint_id, r.boundary_offset
        ),
        Payload::SessionResumed(r) => format!(
            "resumed as incarnation {} at offset {} (supersedes {}..{}, {} checkpoints invalid)",
            r.incarnation,
            r.boundary_offset,
            r.superseded.from,
            r.superseded.to,
            r.invalidated_checkpoints.len()
        ),
        Payload::StaleSignal(s) => format!(
            "stale signal {} ({})",
            s.adapter_event.as_deref().unwrap_or("-"),
            s.reason
        ),
    }
}

/// The first line of `text`, clipped.
fn first_line(text: Option<&str>, max: usize) -> String {
    clip(text.unwrap_or("").lines().next().unwrap_or(""), max)
}

/// A count the agent reported, or `-`.
pub(crate) fn count(n: Option<u64>) -> String {
    n.map_or("-".into(), |n| n.to_string())
}
