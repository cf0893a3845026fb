//! The agent's own record joins the hook signals: its lines become events
//! attested `record`, and its tool calls are linked to the hook spans they
//! match, never changing a row the hooks produced.
//!
//! The state kept per session ([`RecordFollow`]) is where the record is,
//! how far it was read (a byte cursor and a fingerprint of the bytes just
//! before it, which the finalizer checks before it reads on), the hook
//! tool requests a record call may still join, and the message ids whose
//! usage was already counted (Claude Code repeats a message's usage on
//! each of its content blocks). All of it is bounded.
//!
//! Joining: Claude Code by `tool_use_id`; Copilot, whose hooks carry no
//! call id, by tool name and argument digest, the oldest unjoined request
//! first (the order the hooks arrived in). A record call with no hook span
//! at all is still recorded: it shows that a hook signal was lost.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::SessionProducer;
use super::emit::{Draft, Trigger};
use crate::adapter::harnery::RecordChunk;
use crate::adapter::record::{RecordItem, RecordLine, RecordedCall, RecordedResult};
use crate::contract::{
    AdapterId, Attestation, Confidence, Event, EventId, Payload, Provenance, RecordAt,
    RecordProblem, SessionMetadata, SignalUnrecognized, TimeSource, ToolRecorded, TurnAttribution,
};

/// Where a session's record stands, read from its stored producer state
/// alone: the rest of the state is skipped unparsed, so reading every
/// session's cursor stays cheap (`finalize` before each pass, `health`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RecordCursor {
    /// The record file, once a hook named it or the finalizer found it.
    #[serde(default)]
    pub path: Option<String>,
    /// Bytes of the record read and applied.
    #[serde(default)]
    pub cursor: u64,
    /// blake3 (hex) of the bytes just before `cursor`.
    #[serde(default)]
    pub fingerprint: String,
    /// The problem last reported, if any.
    #[serde(default)]
    pub problem: Option<String>,
}

impl RecordCursor {
    /// The cursor in a stored producer state (`None`: the state does not
    /// parse, which the drain that loads it reports).
    pub fn of_state(text: &str) -> Option<RecordCursor> {
        #[derive(Deserialize)]
        struct State {
            #[serde(default)]
            record: RecordCursor,
        }
        serde_json::from_str::<State>(text).ok().map(|s| s.record)
    }
}

/// Hook tool requests remembered for joining.
const REMEMBERED_REQUESTS: usize = 256;
/// Message ids remembered for usage de-duplication.
const REMEMBERED_USAGE: usize = 64;

/// The record as one session follows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordFollow {
    /// The record file, once a hook named it (or the finalizer found it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Bytes of the record read and applied.
    #[serde(default)]
    pub cursor: u64,
    /// blake3 (hex) of the bytes just before `cursor`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
    /// The last problem reported, so that it is reported once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    requests: VecDeque<HookRequest>,
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    usage_seen: VecDeque<String>,
    /// What the session's metadata last said (Claude Code repeats it on
    /// every line): only a change is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<MetadataSaid>,
    /// The record's own calls (id, tool name), for naming their results.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    calls: VecDeque<(String, String)>,
}

/// Agent version, head commit, cwd and model, as metadata last said them.
type MetadataSaid = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// A hook tool request a record call may join.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct HookRequest {
    event_id: EventId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call_id: Option<String>,
    tool_name: String,
    input_digest: String,
    /// The record call joined to it, once one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    joined: Option<String>,
}

impl RecordFollow {
    /// Nothing known of a record yet (state from before generation 2
    /// writes back as it was).
    pub fn is_unused(&self) -> bool {
        *self == RecordFollow::default()
    }

    /// Remember the hook tool requests among `events` for joining (not
    /// while the record cannot be read: a missing record would only make
    /// the state grow).
    pub fn remember_requests(&mut self, events: &[Event]) {
        if self.problem.is_some() {
            return;
        }
        for event in events {
            let Payload::ToolRequested(t) = &event.payload else {
                continue;
            };
            if event.provenance.attestation != Attestation::Native {
                continue;
            }
            if self.requests.len() == REMEMBERED_REQUESTS {
                self.requests.pop_front();
            }
            self.requests.push_back(HookRequest {
                event_id: event.id.clone(),
                call_id: t.tool_call_id.clone(),
                tool_name: t.tool_name.clone(),
                input_digest: t.input_digest.clone(),
                joined: None,
            });
        }
    }

    /// The hook request `call` joins: by call id where the hook had one,
    /// else the oldest unjoined request of the same tool and input.
    fn join(&mut self, adapter: AdapterId, call: &RecordedCall) -> Option<EventId> {
        let found = self.by_call(&call.tool_call_id).or_else(|| match adapter {
            AdapterId::ClaudeCode => None,
            AdapterId::Copilot => self.requests.iter().position(|r| {
                r.joined.is_none()
                    && r.tool_name == call.tool_name
                    && r.input_digest == call.input_digest
            }),
        })?;
        let request = &mut self.requests[found];
        request.joined = Some(call.tool_call_id.clone());
        Some(request.event_id.clone())
    }

    /// The request already joined to the record call `call_id`.
    fn joined(&self, call_id: &str) -> Option<(EventId, String)> {
        let r = &self.requests[self.by_call(call_id)?];
        Some((r.event_id.clone(), r.tool_name.clone()))
    }

    /// The request the hook gave `call_id`, or that was joined to it.
    fn by_call(&self, call_id: &str) -> Option<usize> {
        self.requests.iter().position(|r| {
            r.joined.as_deref() == Some(call_id) || r.call_id.as_deref() == Some(call_id)
        })
    }

    /// A record call that finished needs its hook request no more.
    fn forget(&mut self, call_id: &str) {
        self.requests
            .retain(|r| r.joined.as_deref() != Some(call_id));
        self.calls.retain(|(id, _)| id != call_id);
    }

    fn remember_call(&mut self, call: &RecordedCall) {
        if self.calls.len() == REMEMBERED_REQUESTS {
            self.calls.pop_front();
        }
        self.calls
            .push_back((call.tool_call_id.clone(), call.tool_name.clone()));
    }

    fn call_name(&self, call_id: &str) -> Option<String> {
        self.calls
            .iter()
            .rev()
            .find(|(id, _)| id == call_id)
            .map(|(_, name)| name.clone())
    }

    /// Whether `m` says something the session's metadata did not yet say
    /// (and remember it).
    fn new_metadata(&mut self, m: &SessionMetadata) -> bool {
        let said = (
            m.agent_version.clone(),
            m.head_commit.clone(),
            m.cwd.clone(),
            m.model.clone(),
        );
        let says_nothing =
            said.0.is_none() && said.1.is_none() && said.2.is_none() && said.3.is_none();
        if says_nothing || self.metadata.as_ref() == Some(&said) {
            return false;
        }
        self.metadata = Some(said);
        true
    }

    /// Whether `message_id`'s usage is new (and remember it).
    fn first_usage(&mut self, message_id: Option<&str>) -> bool {
        let Some(id) = message_id else {
            return true;
        };
        if self.usage_seen.iter().any(|seen| seen == id) {
            return false;
        }
        if self.usage_seen.len() == REMEMBERED_USAGE {
            self.usage_seen.pop_front();
        }
        self.usage_seen.push_back(id.to_string());
        true
    }
}

fn from_record() -> Provenance {
    Provenance {
        attestation: Attestation::Record,
        confidence: Confidence::High,
    }
}

impl SessionProducer {
    /// Apply a run of record lines. A run that ends at or before the
    /// cursor was applied already (a finalizer killed between reading and
    /// committing reads it again) and yields nothing.
    pub(super) fn on_record_chunk(
        &mut self,
        chunk: RecordChunk,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let header = &chunk.header;
        if header.end <= self.record.cursor {
            return;
        }
        if self.record.path.is_none() {
            self.record.path = Some(header.path.clone());
        }
        let received = (trigger.time_unix_ns, trigger.time_source);
        for (offset, line) in chunk.lines {
            if offset < self.record.cursor {
                continue;
            }
            (trigger.time_unix_ns, trigger.time_source) = match line.time_unix_ns {
                Some(t) => (t, TimeSource::Agent),
                None => received,
            };
            self.on_record_line(&header.path, offset, line, trigger, out);
        }
        (trigger.time_unix_ns, trigger.time_source) = received;
        self.record.cursor = header.end;
        self.record.fingerprint = header.fingerprint.clone();
        self.record.problem = None;
    }

    /// A problem following the record, reported once per kind. Hook
    /// requests are not kept for joining while the record cannot be read.
    pub(super) fn on_record_problem(
        &mut self,
        problem: RecordProblem,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        self.record.requests.clear();
        self.record.calls.clear();
        if self.record.problem.as_deref() == Some(&problem.kind) {
            return;
        }
        self.record.problem = Some(problem.kind.clone());
        let draft = Draft {
            tag: format!("record-problem:{}", problem.kind),
            payload: Payload::RecordProblem(problem),
            provenance: super::recovery::derived_high(),
            turn: TurnAttribution::none(),
            agent_id: None,
        };
        self.emit(trigger, draft, out);
    }

    fn on_record_line(
        &mut self,
        path: &str,
        offset: u64,
        line: RecordLine,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        // Copilot's record numbers its turns per interaction, a namespace
        // the stamped hook turns do not share: its lines stay unattributed.
        let turn = match self.session.adapter {
            AdapterId::ClaudeCode => self.speaker(None, line.native_turn_id.clone()).turn,
            AdapterId::Copilot => TurnAttribution::none(),
        };
        for item in line.items {
            let payload = match item {
                RecordItem::UserMessage(m) => Payload::MessageUser(m),
                RecordItem::AssistantMessage(m) => Payload::MessageAssistant(m),
                RecordItem::Reasoning(r) => Payload::ReasoningRecorded(r),
                RecordItem::Metadata(m) => {
                    if !self.record.new_metadata(&m) {
                        continue;
                    }
                    Payload::SessionMetadata(m)
                }
                RecordItem::Usage(u) => {
                    if !self.record.first_usage(u.message_id.as_deref()) {
                        continue;
                    }
                    Payload::UsageReported(u)
                }
                RecordItem::ToolStarted(call) => {
                    self.recorded_start(path, offset, call, &line.native_turn_id)
                }
                RecordItem::ToolFinished(result) => self.recorded_finish(path, offset, result),
                RecordItem::Unrecognized { reason } => {
                    Payload::SignalUnrecognized(SignalUnrecognized {
                        adapter_event: None,
                        reason,
                        record: Some(RecordAt {
                            path: path.to_string(),
                            offset,
                        }),
                    })
                }
                // Turn marks, resumes and shutdowns of the record carry no
                // event of their own in this generation, and neither do the
                // agent's running totals: they restate the calls' usage,
                // which is recorded call by call.
                RecordItem::UsageTotal(_)
                | RecordItem::TurnStarted { .. }
                | RecordItem::TurnEnded { .. }
                | RecordItem::Resumed
                | RecordItem::Shutdown => continue,
            };
            let draft = Draft {
                tag: format!("record:{offset}"),
                payload,
                provenance: from_record(),
                turn: turn.clone(),
                agent_id: line.agent_id.clone(),
            };
            self.emit(trigger, draft, out);
        }
    }

    fn recorded_start(
        &mut self,
        path: &str,
        offset: u64,
        call: RecordedCall,
        line_turn: &Option<String>,
    ) -> Payload {
        let span = self.record.join(self.session.adapter, &call);
        self.record.remember_call(&call);
        Payload::ToolRecorded(ToolRecorded {
            record: RecordAt {
                path: path.to_string(),
                offset,
            },
            span_request_event_id: span,
            tool_call_id: call.tool_call_id,
            tool_name: call.tool_name,
            turn_id: call.turn_id.or_else(|| line_turn.clone()),
            success: None,
            exit_code: None,
        })
    }

    fn recorded_finish(&mut self, path: &str, offset: u64, result: RecordedResult) -> Payload {
        let joined = self.record.joined(&result.tool_call_id);
        self.record.forget(&result.tool_call_id);
        let tool_name = self
            .record
            .call_name(&result.tool_call_id)
            .or_else(|| joined.as_ref().map(|(_, name)| name.clone()))
            .unwrap_or_else(|| "unknown".to_string());
        let span = joined.map(|(id, _)| id);
        Payload::ToolRecorded(ToolRecorded {
            record: RecordAt {
                path: path.to_string(),
                offset,
            },
            span_request_event_id: span,
            tool_call_id: result.tool_call_id,
            tool_name,
            turn_id: result.turn_id,
            success: result.success,
            exit_code: result.exit_code,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cursor a stored state holds is read back from the state's text
    /// alone, whatever else the state holds; a state without a record part
    /// has none, and a state that is not JSON is not read.
    #[test]
    fn the_cursor_reads_back_from_a_stored_state() {
        let follow = RecordFollow {
            path: Some("/r.jsonl".into()),
            cursor: 42,
            fingerprint: "ab".into(),
            problem: Some("rewritten".into()),
            usage_seen: VecDeque::from(["m1".to_string()]),
            ..RecordFollow::default()
        };
        let text = serde_json::json!({"next_offset": 7, "record": follow}).to_string();
        let read = RecordCursor::of_state(&text).unwrap();
        assert_eq!(read.path.as_deref(), Some("/r.jsonl"));
        assert_eq!((read.cursor, read.fingerprint.as_str()), (42, "ab"));
        assert_eq!(read.problem.as_deref(), Some("rewritten"));
        assert_eq!(
            RecordCursor::of_state(r#"{"next_offset": 7}"#),
            Some(RecordCursor::default())
        );
        assert_eq!(RecordCursor::of_state("not json"), None);
    }
}
