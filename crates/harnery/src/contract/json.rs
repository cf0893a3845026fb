//! An event's canonical JSON, written directly.
//!
//! The stored, hashed form of an event is what serde_json writes for it.
//! Going through serde costs a generic call and an escape scan for every
//! key, and finalize writes every event once; this writer emits the fixed
//! keys as literals, checks each string for characters that need escaping
//! eight bytes at a time, writes integers and JSON values itself (the hook
//! spans' payloads and those of a record's lines among them), and hands
//! the rarer payload types and floating-point numbers to serde_json. Its
//! output is serde_json's output: tests compare the two for every payload
//! type, every enum value, numbers at their limits and every character that
//! needs escaping, so the two cannot drift apart unnoticed.

use super::canonical::Json;
use super::event::{AdapterId, Attestation, Confidence, Event, RawRef, TimeSource, TurnSource};
use super::event_id::EventId;
use super::json_text::Integer;
// Re-exported so that trace rows and the OTLP writer keep their one import.
pub(crate) use super::json_text::{needs_escape, number, plain_len, string};
use super::payload::{
    MessageAssistant, MessageUser, Observation, Outcome, PairedBy, Payload, ReasoningRecorded,
    RecordAt, Recovery, SessionMetadata, ToolRecorded, UsageReported,
};

impl Event {
    /// The event's canonical JSON: byte for byte what `serde_json` writes.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(1024);
        self.write_json(&mut out);
        out
    }

    /// Append the event's canonical JSON to `out`.
    pub(crate) fn write_json(&self, out: &mut String) {
        out.push_str("{\"id\":");
        string(out, self.id.as_str());
        out.push_str(",\"session\":{\"adapter\":\"");
        out.push_str(adapter_name(self.session.adapter));
        out.push_str("\",\"session_id\":");
        string(out, &self.session.session_id);
        out.push_str("},\"offset\":");
        number(out, self.offset);
        out.push_str(",\"time_unix_ns\":");
        number(out, self.time_unix_ns);
        out.push_str(",\"time_source\":\"");
        out.push_str(time_source_name(self.time_source));
        out.push('"');
        if let Some(clock) = &self.clock {
            out.push_str(",\"clock\":{\"boot_id\":");
            optional_string(out, clock.boot_id.as_deref());
            out.push_str(",\"boottime_ns\":");
            optional_number(out, clock.boottime_ns);
            out.push('}');
        }
        if let Some(agent) = &self.agent_id {
            out.push_str(",\"agent_id\":");
            string(out, agent);
        }
        out.push_str(",\"turn\":{\"source\":\"");
        out.push_str(turn_source_name(self.turn.source));
        out.push('"');
        if let Some(turn) = &self.turn.turn_id {
            out.push_str(",\"turn_id\":");
            string(out, turn);
        }
        out.push_str("},\"provenance\":{\"attestation\":\"");
        out.push_str(attestation_name(self.provenance.attestation));
        out.push_str("\",\"confidence\":\"");
        out.push_str(confidence_name(self.provenance.confidence));
        out.push_str("\"},\"raw\":[");
        for (i, raw) in self.raw.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            raw_ref(out, raw);
        }
        out.push_str("],");
        payload(out, &self.payload);
        out.push('}');
    }
}

fn raw_ref(out: &mut String, raw: &RawRef) {
    out.push_str("{\"record_digest\":");
    string(out, &raw.record_digest);
    out.push_str(",\"event_name\":");
    optional_string(out, raw.event_name.as_deref());
    out.push('}');
}

/// The `type` and `payload` members. The payloads of nearly every event
/// finalize writes are written here; the others go through serde_json,
/// whose `{"type":…,"payload":…}` is exactly these members in braces.
fn payload(out: &mut String, payload: &Payload) {
    out.push_str("\"type\":\"");
    out.push_str(payload.event_type().as_str());
    out.push_str("\",\"payload\":");
    match payload {
        Payload::ToolRequested(p) => {
            out.push_str("{\"tool_call_id\":");
            optional_string(out, p.tool_call_id.as_deref());
            out.push_str(",\"tool_name\":");
            string(out, &p.tool_name);
            out.push_str(",\"input_digest\":");
            string(out, &p.input_digest);
            out.push_str(",\"input\":");
            optional_value(out, p.input.as_ref());
            out.push_str(",\"recovery\":");
            optional_recovery(out, p.recovery.as_ref());
        }
        Payload::ToolCompleted(p) => {
            out.push_str("{\"tool_call_id\":");
            optional_string(out, p.tool_call_id.as_deref());
            out.push_str(",\"tool_name\":");
            string(out, &p.tool_name);
            out.push_str(",\"requested_event_id\":");
            optional_id(out, p.requested_event_id.as_ref());
            out.push_str(",\"outcome\":\"");
            out.push_str(outcome_name(p.outcome));
            out.push_str("\",\"duration_ms\":");
            observation(out, &p.duration_ms);
            out.push_str(",\"exit_code\":");
            optional_number(out, p.exit_code);
            out.push_str(",\"error\":");
            optional_string(out, p.error.as_deref());
            out.push_str(",\"content\":");
            optional_value(out, p.content.as_ref());
            out.push_str(",\"recovery\":");
            optional_recovery(out, p.recovery.as_ref());
            // Written only when set, as serde skips it.
            if let Some(PairedBy::Order) = p.paired_by {
                out.push_str(",\"paired_by\":\"order\"");
            }
        }
        Payload::PromptSubmitted(p) => {
            out.push_str("{\"prompt\":");
            optional_string(out, p.prompt.as_deref());
            out.push_str(",\"transformed\":");
            out.push_str(if p.transformed { "true" } else { "false" });
        }
        Payload::TurnStarted(p) => {
            out.push_str("{\"prompt_event_id\":");
            optional_id(out, p.prompt_event_id.as_ref());
        }
        Payload::TurnCompleted(p) => {
            out.push_str("{\"stop_reason\":");
            optional_string(out, p.stop_reason.as_deref());
        }
        Payload::MessageUser(p) => message_user(out, p),
        Payload::MessageAssistant(p) => message_assistant(out, p),
        Payload::ReasoningRecorded(p) => reasoning(out, p),
        Payload::UsageReported(p) => usage(out, p),
        Payload::SessionMetadata(p) => metadata(out, p),
        Payload::ToolRecorded(p) => tool_recorded(out, p),
        other => {
            let text = serde_json::to_string(other).expect("payloads always serialize");
            let content = text
                .strip_suffix('}')
                .and_then(|t| t.split_once(",\"payload\":"))
                .map(|(_, content)| content)
                .expect("a payload serializes as {\"type\":…,\"payload\":…}");
            out.push_str(content);
            return;
        }
    }
    out.push('}');
}

// The payloads of a record's lines (most of what finalize writes when it
// follows a record), each opening `{` and leaving its `}` to `payload`.

fn open_with_record(out: &mut String, at: &RecordAt) {
    out.push_str("{\"record\":{\"path\":");
    string(out, &at.path);
    out.push_str(",\"offset\":");
    number(out, at.offset);
    out.push('}');
}

fn message_user(out: &mut String, p: &MessageUser) {
    open_with_record(out, &p.record);
    optional_strings(
        out,
        [
            (",\"message_id\":", p.message_id.as_deref()),
            (",\"text\":", p.text.as_deref()),
        ],
    );
    if let Some(source) = &p.source {
        out.push_str(",\"source\":");
        string(out, source);
    }
}

fn message_assistant(out: &mut String, p: &MessageAssistant) {
    open_with_record(out, &p.record);
    optional_strings(
        out,
        [
            (",\"message_id\":", p.message_id.as_deref()),
            (",\"model\":", p.model.as_deref()),
            (",\"text\":", p.text.as_deref()),
        ],
    );
    out.push_str(",\"tool_call_ids\":[");
    for (i, id) in p.tool_call_ids.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, id);
    }
    out.push(']');
}

fn reasoning(out: &mut String, p: &ReasoningRecorded) {
    open_with_record(out, &p.record);
    optional_strings(
        out,
        [
            (",\"message_id\":", p.message_id.as_deref()),
            (",\"text\":", p.text.as_deref()),
            (",\"continuation\":", p.continuation.as_deref()),
        ],
    );
}

fn usage(out: &mut String, p: &UsageReported) {
    open_with_record(out, &p.record);
    optional_strings(
        out,
        [
            (",\"message_id\":", p.message_id.as_deref()),
            (",\"model\":", p.model.as_deref()),
        ],
    );
    optional_numbers(
        out,
        [
            (",\"input_tokens\":", p.input_tokens),
            (",\"output_tokens\":", p.output_tokens),
            (",\"cache_read_tokens\":", p.cache_read_tokens),
            (",\"cache_write_tokens\":", p.cache_write_tokens),
        ],
    );
    out.push_str(",\"cost\":");
    optional_value(out, p.cost.as_ref());
    optional_numbers(
        out,
        [
            (",\"duration_ms\":", p.duration_ms),
            (",\"time_to_first_token_ms\":", p.time_to_first_token_ms),
            (",\"reasoning_tokens\":", p.reasoning_tokens),
        ],
    );
    out.push_str(",\"raw\":");
    optional_value(out, p.raw.as_ref());
    out.push_str(",\"copied_from_session\":");
    optional_string(out, p.copied_from_session.as_deref());
}

fn metadata(out: &mut String, p: &SessionMetadata) {
    open_with_record(out, &p.record);
    optional_strings(
        out,
        [
            (",\"agent_version\":", p.agent_version.as_deref()),
            (",\"head_commit\":", p.head_commit.as_deref()),
            (",\"cwd\":", p.cwd.as_deref()),
            (",\"model\":", p.model.as_deref()),
        ],
    );
}

fn tool_recorded(out: &mut String, p: &ToolRecorded) {
    open_with_record(out, &p.record);
    out.push_str(",\"span_request_event_id\":");
    optional_id(out, p.span_request_event_id.as_ref());
    out.push_str(",\"tool_call_id\":");
    string(out, &p.tool_call_id);
    out.push_str(",\"tool_name\":");
    string(out, &p.tool_name);
    out.push_str(",\"turn_id\":");
    optional_string(out, p.turn_id.as_deref());
    out.push_str(",\"success\":");
    out.push_str(match p.success {
        Some(true) => "true",
        Some(false) => "false",
        None => "null",
    });
    out.push_str(",\"exit_code\":");
    optional_number(out, p.exit_code);
    if let Some(output) = &p.output {
        out.push_str(",\"output\":");
        string(out, output);
    }
    if let Some(cut) = p.output_cut_bytes {
        out.push_str(",\"output_cut_bytes\":");
        number(out, cut);
    }
}

/// Each key (its leading comma and trailing colon included) and its text,
/// or `null`, in order.
fn optional_strings<const N: usize>(out: &mut String, fields: [(&str, Option<&str>); N]) {
    for (key, text) in fields {
        out.push_str(key);
        optional_string(out, text);
    }
}

/// Each key (as for [`optional_strings`]) and its number, or `null`.
fn optional_numbers<const N: usize>(out: &mut String, fields: [(&str, Option<u64>); N]) {
    for (key, n) in fields {
        out.push_str(key);
        optional_number(out, n);
    }
}

fn observation(out: &mut String, value: &Observation<u64>) {
    match value {
        Observation::Observed(n) => {
            out.push_str("{\"observed\":");
            number(out, *n);
        }
        Observation::Unknown(reason) => {
            out.push_str("{\"unknown\":");
            string(out, reason);
        }
    }
    out.push('}');
}

fn optional_recovery(out: &mut String, recovery: Option<&Recovery>) {
    match recovery {
        Some(r) => out.push_str(&serde_json::to_string(r).expect("a recovery serializes")),
        None => out.push_str("null"),
    }
}

fn optional_value(out: &mut String, value: Option<&Json>) {
    out.push_str(value.map_or("null", Json::as_str));
}

fn optional_id(out: &mut String, id: Option<&EventId>) {
    optional_string(out, id.map(EventId::as_str));
}

fn optional_string(out: &mut String, text: Option<&str>) {
    match text {
        Some(t) => string(out, t),
        None => out.push_str("null"),
    }
}

fn optional_number(out: &mut String, n: Option<impl Integer>) {
    match n {
        Some(n) => number(out, n),
        None => out.push_str("null"),
    }
}

fn adapter_name(adapter: AdapterId) -> &'static str {
    adapter.as_str()
}

fn time_source_name(source: TimeSource) -> &'static str {
    match source {
        TimeSource::Agent => "agent",
        TimeSource::Received => "received",
        TimeSource::Finalizer => "finalizer",
    }
}

pub fn turn_source_name(source: TurnSource) -> &'static str {
    match source {
        TurnSource::Native => "native",
        TurnSource::Stamped => "stamped",
        TurnSource::None => "none",
    }
}

pub fn attestation_name(attestation: Attestation) -> &'static str {
    match attestation {
        Attestation::Native => "native",
        Attestation::Derived => "derived",
        Attestation::Record => "record",
    }
}

fn confidence_name(confidence: Confidence) -> &'static str {
    match confidence {
        Confidence::Low => "low",
        Confidence::Medium => "medium",
        Confidence::High => "high",
    }
}

pub fn outcome_name(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Success => "success",
        Outcome::Failure => "failure",
        Outcome::Interrupted => "interrupted",
        Outcome::Unknown => "unknown",
    }
}
