//! Spans as the read side sees them: a request, at most one terminal, and any
//! late evidence, paired from one session's events.
//!
//! Pairing follows the links the producer wrote (`requested_event_id` on the
//! terminal or in its recovery block) and falls back to the tool call id, then
//! to the oldest open span of the same tool name. A terminal that matches
//! nothing becomes a span without a request, so no row is ever dropped.

use std::collections::HashMap;

use crate::contract::{Event, EventId, Observation, Outcome, Payload, RecoveryReason};

/// Tool spans come from the agent; command spans from `harnery exec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Tool,
    Command,
}

/// The three states of ADR 0078.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanState {
    /// No terminal yet: awaiting a native completion or salvage.
    Open,
    /// Closed by a native (or, for commands, teed) completion.
    Closed,
    /// Closed by a derived terminal carrying this reason.
    Recovered(RecoveryReason),
}

/// One span of one session.
#[derive(Debug, Clone)]
pub struct Span<'a> {
    pub kind: SpanKind,
    pub request: Option<&'a Event>,
    pub terminal: Option<&'a Event>,
    /// Native completions that arrived after the span was recovered.
    pub late: Vec<&'a Event>,
}

impl<'a> Span<'a> {
    fn new(kind: SpanKind, request: Option<&'a Event>) -> Span<'a> {
        Span {
            kind,
            request,
            terminal: None,
            late: Vec::new(),
        }
    }

    pub fn state(&self) -> SpanState {
        match self.terminal.and_then(|t| t.payload.recovery()) {
            Some(recovery) => SpanState::Recovered(recovery.reason),
            None if self.terminal.is_some() => SpanState::Closed,
            None => SpanState::Open,
        }
    }

    /// The request was minted by recovery (`request_not_observed`).
    pub fn request_recovered(&self) -> bool {
        self.request.is_some_and(|r| r.payload.recovery().is_some())
    }

    /// The turn the span belongs to: the request's, else the terminal's.
    pub fn turn_id(&self) -> Option<&'a str> {
        let of = |e: &'a Event| e.turn.turn_id.as_deref();
        self.request
            .and_then(of)
            .or_else(|| self.terminal.and_then(of))
    }

    /// The event that identifies the span (request, else terminal).
    pub fn anchor(&self) -> &'a Event {
        self.request
            .or(self.terminal)
            .expect("a span always holds a request or a terminal")
    }

    pub fn tool_name(&self) -> Option<&'a str> {
        match (&self.anchor().payload, self.terminal.map(|t| &t.payload)) {
            (Payload::ToolRequested(p), _) => Some(&p.tool_name),
            (_, Some(Payload::ToolCompleted(p))) => Some(&p.tool_name),
            (Payload::ToolCompleted(p), _) => Some(&p.tool_name),
            _ => None,
        }
    }

    pub fn tool_call_id(&self) -> Option<&'a str> {
        let from = |e: &'a Event| match &e.payload {
            Payload::ToolRequested(p) => p.tool_call_id.as_deref(),
            Payload::ToolCompleted(p) => p.tool_call_id.as_deref(),
            _ => None,
        };
        self.request
            .and_then(from)
            .or_else(|| self.terminal.and_then(from))
    }

    /// The terminal's outcome (`None` while open).
    pub fn outcome(&self) -> Option<Outcome> {
        match &self.terminal?.payload {
            Payload::ToolCompleted(p) => Some(p.outcome),
            Payload::CommandCompleted(p) => Some(p.outcome),
            _ => None,
        }
    }

    /// The duration the terminal reports, observed or unknown.
    pub fn reported_duration(&self) -> Option<&'a Observation<u64>> {
        match &self.terminal?.payload {
            Payload::ToolCompleted(p) => Some(&p.duration_ms),
            Payload::CommandCompleted(p) => Some(&p.duration_ms),
            _ => None,
        }
    }

    /// The recovery bound, when the terminal is recovered and carries one.
    pub fn upper_bound_ms(&self) -> Option<&'a Observation<u64>> {
        self.terminal?
            .payload
            .recovery()?
            .elapsed_upper_bound_ms
            .as_ref()
    }
}

/// Pair one session's events (offset order) into spans, in request order.
pub fn pair_spans<'a>(events: &[&'a Event]) -> Vec<Span<'a>> {
    let mut pairing = Pairing::default();
    for event in events {
        pairing.feed(event);
    }
    pairing.spans
}

#[derive(Default)]
struct Pairing<'a> {
    spans: Vec<Span<'a>>,
    by_request: HashMap<&'a EventId, usize>,
}

impl<'a> Pairing<'a> {
    fn feed(&mut self, event: &'a Event) {
        match &event.payload {
            Payload::ToolRequested(_) => self.open(SpanKind::Tool, event),
            Payload::CommandRequested(_) => self.open(SpanKind::Command, event),
            Payload::ToolCompleted(_) => self.close(SpanKind::Tool, event),
            Payload::CommandCompleted(_) => self.close(SpanKind::Command, event),
            Payload::LateEvidence(p) => self.late(&p.span_request_event_id, event),
            _ => {}
        }
    }

    fn open(&mut self, kind: SpanKind, event: &'a Event) {
        self.by_request.insert(&event.id, self.spans.len());
        self.spans.push(Span::new(kind, Some(event)));
    }

    fn close(&mut self, kind: SpanKind, event: &'a Event) {
        match self.match_terminal(kind, event) {
            Some(i) => self.spans[i].terminal = Some(event),
            None => {
                let mut span = Span::new(kind, None);
                span.terminal = Some(event);
                self.spans.push(span);
            }
        }
    }

    fn late(&mut self, request: &EventId, event: &'a Event) {
        if let Some(&i) = self.by_request.get(request) {
            self.spans[i].late.push(event);
        }
    }

    fn match_terminal(&self, kind: SpanKind, event: &'a Event) -> Option<usize> {
        let is_open = |i: &usize| self.spans[*i].terminal.is_none() && self.spans[*i].kind == kind;
        if let Some(link) = terminal_link(event) {
            return self.by_request.get(link).copied().filter(is_open);
        }
        let call_id = match &event.payload {
            Payload::ToolCompleted(p) => p.tool_call_id.as_deref(),
            _ => None,
        };
        let name = match &event.payload {
            Payload::ToolCompleted(p) => Some(p.tool_name.as_str()),
            _ => None,
        };
        (0..self.spans.len()).filter(is_open).find(|&i| {
            let span = &self.spans[i];
            match call_id {
                Some(id) => span.tool_call_id() == Some(id),
                None => span.tool_name() == name,
            }
        })
    }
}

/// The request a terminal names, in its payload or its recovery block.
pub(crate) fn terminal_link(event: &Event) -> Option<&EventId> {
    let direct = match &event.payload {
        Payload::ToolCompleted(p) => p.requested_event_id.as_ref(),
        Payload::CommandCompleted(p) => p.requested_event_id.as_ref(),
        _ => None,
    };
    direct.or_else(|| event.payload.recovery()?.requested_event_id.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::testkit::Script;

    #[test]
    fn pairs_by_link_and_call_id_and_keeps_orphans() {
        let mut t = Script::new("s1");
        t.turn("t1");
        let a = t.request("Bash", 0);
        t.complete(&a, 10, Some(5));
        let b = t.request("Read", 20);
        t.recover(
            &b,
            30,
            RecoveryReason::CompletionNotObservedBeforeTurnEnd,
            Some(9),
        );
        t.request("Edit", 40);
        t.orphan_completion("Grep", 50);
        let events = t.events();
        let refs: Vec<&Event> = events.iter().collect();
        let spans = pair_spans(&refs);
        let states: Vec<SpanState> = spans.iter().map(Span::state).collect();
        assert_eq!(
            states,
            vec![
                SpanState::Closed,
                SpanState::Recovered(RecoveryReason::CompletionNotObservedBeforeTurnEnd),
                SpanState::Open,
                SpanState::Closed,
            ]
        );
        assert!(spans[3].request.is_none());
        assert_eq!(spans[1].upper_bound_ms(), Some(&Observation::Observed(9)));
    }
}
