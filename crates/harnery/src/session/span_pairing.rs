//! Tool spans: pairing requests with completions, and the
//! `request_not_observed` rule for completions that match no open span.
//!
//! Pairing is by call id where the adapter has one (Claude Code
//! `tool_use_id`), else in arrival order per (tool name, input digest)
//! (Copilot). A completion that finds no open span is, in order: late
//! evidence for a span that was already recovered; a repeat of a completion
//! already recorded; or a post whose request was never observed, which gets
//! a derived `tool.requested` and then closes it natively with its real
//! outcome.

use super::emit::{Draft, Trigger};
use super::emitter::Emitter;
use super::recovery::recovery_provenance;
use super::spans::{OpenSpan, SpanKind, SpanPairer, said_digests};
use super::turns::Speaker;
use crate::agents::{BatchedCall, RecoveryPolicy, ToolCall, ToolResult};
use crate::contract::{
    Event, EventId, Json, LateEvidence, Observation, Outcome, PairedBy, Payload, Provenance,
    Recovery, RecoveryReason, SignalUnrecognized, ToolBatchCompleted, ToolBatchResult,
    ToolCompleted, ToolRequested, TurnAttribution, capped_output,
};

/// Claude Code marks a tool error inside a batch response this way.
const TOOL_ERROR_MARKER: &str = "<tool_use_error>";

fn pair_key(call: &ToolCall) -> String {
    pair_key_of(&call.tool_name, &call.input_digest())
}

/// The pairing key from a tool name and its input digest.
fn pair_key_of(tool_name: &str, input_digest: &str) -> String {
    let mut key = String::with_capacity(tool_name.len() + 1 + input_digest.len());
    key.push_str(tool_name);
    key.push('\u{0}');
    key.push_str(input_digest);
    key
}

impl SpanPairer {
    pub(super) fn on_tool_requested(
        &mut self,
        em: &mut Emitter,
        call: ToolCall,
        who: Speaker,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let tracked = call
            .call_id
            .as_deref()
            .is_some_and(|id| self.spans.knows_call_id(id));
        if tracked {
            // A request for a call already tracked (a late pre after its
            // post) opens no second span; the raw record stays linked.
            let payload = passed_over("request_for_tracked_call");
            em.emit(trigger, Draft::native(payload, who.turn, who.agent_id), out);
            return;
        }
        let input_digest = call.input_digest();
        let pair_key = pair_key_of(&call.tool_name, &input_digest);
        let (name, call_id) = (call.tool_name.clone(), call.call_id.clone());
        let payload = Payload::ToolRequested(ToolRequested {
            tool_call_id: call.call_id,
            tool_name: call.tool_name,
            input_digest,
            input: call.input,
            recovery: None,
        });
        let draft = Draft::native(payload, who.turn.clone(), who.agent_id.clone());
        let request_event_id = em.emit(trigger, draft, out).clone();
        self.spans.push_open(OpenSpan {
            kind: SpanKind::Tool,
            request_event_id,
            name,
            call_id,
            pair_key,
            turn: who.turn,
            agent_id: who.agent_id,
            requested_unix_ns: trigger.time_unix_ns,
            requested_clock: trigger.clock.cloned(),
        });
    }

    pub(super) fn on_tool_completed(
        &mut self,
        em: &mut Emitter,
        policy: RecoveryPolicy,
        result: ToolResult,
        who: Speaker,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        // The pairing key matters only to a call without an id; it costs a
        // digest of the input, so a call with an id does not build it.
        let key = match result.call.call_id {
            Some(_) => String::new(),
            None => pair_key(&result.call),
        };
        let span = match result.call.call_id.as_deref() {
            Some(id) => self.spans.take_by_call_id(SpanKind::Tool, id),
            None => self.spans.take_by_pair_key(&key),
        };
        if let Some(span) = span {
            let request = span.request_event_id.clone();
            let said = said_digests(result.content.as_ref());
            emit_native_completion(
                em,
                result,
                Some(request),
                &span.turn,
                span.agent_id.clone(),
                trigger,
                out,
            );
            self.spans.close_native(span, said);
            return;
        }
        let call_id = result.call.call_id.as_deref();
        if let Some((request, recovered)) =
            self.spans.claim_recovered(SpanKind::Tool, call_id, &key)
        {
            let evidence = LateEvidence {
                span_request_event_id: request,
                recovered_event_id: recovered,
                outcome: result.outcome,
                error: result.error.clone(),
            };
            emit_late_evidence(em, evidence, &who, trigger, out);
            return;
        }
        if call_id.is_some_and(|id| self.spans.closed_natively(id)) {
            let payload = passed_over("completion_for_closed_span");
            em.emit(trigger, Draft::native(payload, who.turn, who.agent_id), out);
            return;
        }
        self.complete_unrequested(em, policy, result, who, trigger, out);
    }

    /// A completion that matched no span: mint its request (when the table
    /// allows), then close it natively with the real outcome.
    fn complete_unrequested(
        &mut self,
        em: &mut Emitter,
        policy: RecoveryPolicy,
        result: ToolResult,
        who: Speaker,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        if !policy.request_not_observed {
            emit_native_completion(em, result, None, &who.turn, who.agent_id, trigger, out);
            return;
        }
        let request = mint_request(em, &result.call, &who, trigger, out);
        let span = open_span(&result.call, request.clone(), &who, trigger);
        let said = said_digests(result.content.as_ref());
        emit_native_completion(
            em,
            result,
            Some(request),
            &who.turn,
            who.agent_id,
            trigger,
            out,
        );
        self.spans.close_native(span, said);
    }

    /// A batch summary closes nothing a post could close. A call in it that
    /// no span knows (its pre and post were never delivered) is a
    /// completion whose request was not observed. A known call's result
    /// text, where the batch gives one, is a `tool.batch_result` after the
    /// summary (generation 12): the text the model was given, which the
    /// call's post may not hold (a denied or blocked call has none; a
    /// `Write`'s post holds the file, not its confirmation). Where the
    /// post's content held the same text as one of its strings (a shell's
    /// `stdout`), the batch adds no second copy.
    pub(super) fn on_tool_batch(
        &mut self,
        em: &mut Emitter,
        policy: RecoveryPolicy,
        calls: Vec<BatchedCall>,
        who: Speaker,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let summary = Payload::ToolBatchCompleted(ToolBatchCompleted {
            calls: calls.len() as u64,
        });
        em.emit(
            trigger,
            Draft::native(summary, who.turn.clone(), who.agent_id.clone()),
            out,
        );
        for batched in calls {
            let known = batched
                .call
                .call_id
                .as_deref()
                .and_then(|id| self.spans.request_of_call(id))
                .cloned();
            let unknown = batched.call.call_id.is_some() && known.is_none();
            if let (Some(request), Some(text)) = (known, &batched.text) {
                let id = batched.call.call_id.as_deref().unwrap_or_default();
                if self.spans.completion_said(id, text) {
                    continue;
                }
                let payload = batch_result_of(batched, request);
                let draft = Draft::native(payload, who.turn.clone(), who.agent_id.clone());
                em.emit(trigger, draft, out);
                continue;
            }
            if unknown && !batched.call.tool_name.is_empty() {
                let result = batch_result(batched);
                let who = Speaker {
                    turn: who.turn.clone(),
                    agent_id: who.agent_id.clone(),
                };
                self.complete_unrequested(em, policy, result, who, trigger, out);
            }
        }
    }
}

fn mint_request(
    em: &mut Emitter,
    call: &ToolCall,
    who: &Speaker,
    trigger: &mut Trigger,
    out: &mut Vec<Event>,
) -> EventId {
    let reason = RecoveryReason::RequestNotObserved;
    let payload = Payload::ToolRequested(ToolRequested {
        tool_call_id: call.call_id.clone(),
        tool_name: call.tool_name.clone(),
        input_digest: call.input_digest(),
        input: call.input.clone(),
        recovery: Some(Recovery {
            reason,
            requested_event_id: None,
            elapsed_upper_bound_ms: None,
        }),
    });
    let draft = Draft {
        payload,
        provenance: recovery_provenance(reason, call.input.is_some(), who.turn.source),
        turn: who.turn.clone(),
        agent_id: who.agent_id.clone(),
        tag: reason.as_str().to_string(),
    };
    em.emit(trigger, draft, out).clone()
}

fn emit_native_completion(
    em: &mut Emitter,
    result: ToolResult,
    requested: Option<EventId>,
    turn: &TurnAttribution,
    agent_id: Option<String>,
    trigger: &mut Trigger,
    out: &mut Vec<Event>,
) {
    // A request found with no call id was found by order: say so.
    let paired_by =
        (result.call.call_id.is_none() && requested.is_some()).then_some(PairedBy::Order);
    let payload = Payload::ToolCompleted(ToolCompleted {
        tool_call_id: result.call.call_id,
        tool_name: result.call.tool_name,
        requested_event_id: requested,
        outcome: result.outcome,
        duration_ms: match result.duration_ms {
            Some(ms) => Observation::Observed(ms),
            None => Observation::unknown("not_reported"),
        },
        exit_code: result.exit_code,
        error: result.error,
        content: result.content,
        recovery: None,
        paired_by,
    });
    em.emit(trigger, Draft::native(payload, turn.clone(), agent_id), out);
}

/// A pairing signal that opens and closes nothing, `reason` saying why
/// (its raw record stays linked).
pub(super) fn passed_over(reason: &str) -> Payload {
    Payload::SignalUnrecognized(SignalUnrecognized {
        adapter_event: None,
        reason: reason.to_string(),
        record: None,
    })
}

/// Record a native completion that arrived after its span was
/// recovered: linked evidence, never a second terminal.
pub(super) fn emit_late_evidence(
    em: &mut Emitter,
    evidence: LateEvidence,
    who: &Speaker,
    trigger: &mut Trigger,
    out: &mut Vec<Event>,
) {
    let draft = Draft {
        payload: Payload::LateEvidence(evidence),
        provenance: Provenance::NATIVE,
        turn: who.turn.clone(),
        agent_id: who.agent_id.clone(),
        tag: String::new(),
    };
    em.emit(trigger, draft, out);
}

fn open_span(call: &ToolCall, request: EventId, who: &Speaker, trigger: &Trigger) -> OpenSpan {
    OpenSpan {
        kind: SpanKind::Tool,
        request_event_id: request,
        name: call.tool_name.clone(),
        call_id: call.call_id.clone(),
        pair_key: pair_key(call),
        turn: who.turn.clone(),
        agent_id: who.agent_id.clone(),
        requested_unix_ns: trigger.time_unix_ns,
        requested_clock: trigger.clock.cloned(),
    }
}

/// A known call's result as its batch lists it, cut at the output cap.
fn batch_result_of(batched: BatchedCall, request: EventId) -> Payload {
    let (output, output_cut_bytes) = capped_output(batched.text.unwrap_or_default());
    Payload::ToolBatchResult(ToolBatchResult {
        tool_call_id: batched.call.call_id,
        tool_name: batched.call.tool_name,
        requested_event_id: Some(request),
        output,
        output_cut_bytes,
    })
}

/// The outcome a batch entry states: an error marker means failure;
/// anything else is not stated, so it stays unknown.
fn batch_result(batched: BatchedCall) -> ToolResult {
    let errored = batched
        .response
        .as_ref()
        .and_then(Json::as_string)
        .is_some_and(|s| s.starts_with(TOOL_ERROR_MARKER));
    ToolResult {
        call: batched.call,
        outcome: if errored {
            Outcome::Failure
        } else {
            Outcome::Unknown
        },
        duration_ms: None,
        exit_code: None,
        error: None,
        content: batched.response,
    }
}
