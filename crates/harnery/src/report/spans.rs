//! Spans as the read side sees them: a request, at most one terminal, and any
//! late evidence, paired from one session's events.
//!
//! Pairing follows the links the producer wrote (`requested_event_id` on the
//! terminal or in its recovery block) and falls back to the tool call id, then
//! to the oldest open span of the same tool name. A terminal that matches
//! nothing becomes a span without a request, so no row is ever dropped.
//!
//! A span's request and terminal are events here; the OTLP export, which
//! reads most of them from trace entries rather than whole events, pairs
//! its own rows through the same [`SpanSide`] reads.

use std::collections::{BTreeMap, HashMap};

use crate::contract::{Event, EventId, Observation, Outcome, Payload, Recovery};

/// Tool spans come from the agent; command spans from `harnery exec`: the
/// producer's word for it.
pub(crate) use crate::session::SpanKind;

/// The three states of ADR 0078, in the ledger's words: open (no terminal
/// yet), closed natively (or, for commands, by a teed completion), or
/// recovered by a derived terminal (its reason is the terminal's).
pub(crate) use crate::ledger::SpanState;

/// What a span reads of its request and its terminal: an event, or a row
/// that stands for one and answers the same.
pub(crate) trait SpanSide<'a>: Copy {
    fn event_id(self) -> &'a str;
    fn time_unix_ns(self) -> i64;
    fn turn_id(self) -> Option<&'a str>;
    /// A tool request's or terminal's tool name.
    fn tool_name(self) -> Option<&'a str>;
    /// A tool request's or terminal's call id.
    fn tool_call_id(self) -> Option<&'a str>;
    /// A terminal's outcome.
    fn outcome(self) -> Option<Outcome>;
    /// The duration a terminal reports, observed or unknown.
    fn reported_duration(self) -> Option<&'a Observation<u64>>;
    /// The recovery block of a derived request or terminal.
    fn recovery(self) -> Option<&'a Recovery>;
    /// The request a terminal names, in its payload or its recovery block.
    fn link(self) -> Option<&'a str>;
}

impl<'a> SpanSide<'a> for &'a Event {
    fn event_id(self) -> &'a str {
        self.id.as_str()
    }

    fn time_unix_ns(self) -> i64 {
        self.time_unix_ns
    }

    fn turn_id(self) -> Option<&'a str> {
        self.turn.turn_id.as_deref()
    }

    fn tool_name(self) -> Option<&'a str> {
        match &self.payload {
            Payload::ToolRequested(p) => Some(&p.tool_name),
            Payload::ToolCompleted(p) => Some(&p.tool_name),
            _ => None,
        }
    }

    fn tool_call_id(self) -> Option<&'a str> {
        match &self.payload {
            Payload::ToolRequested(p) => p.tool_call_id.as_deref(),
            Payload::ToolCompleted(p) => p.tool_call_id.as_deref(),
            _ => None,
        }
    }

    fn outcome(self) -> Option<Outcome> {
        match &self.payload {
            Payload::ToolCompleted(p) => Some(p.outcome.judged(p.exit_code)),
            Payload::CommandCompleted(p) => Some(p.outcome.judged(p.exit_code)),
            _ => None,
        }
    }

    fn reported_duration(self) -> Option<&'a Observation<u64>> {
        match &self.payload {
            Payload::ToolCompleted(p) => Some(&p.duration_ms),
            Payload::CommandCompleted(p) => Some(&p.duration_ms),
            _ => None,
        }
    }

    fn recovery(self) -> Option<&'a Recovery> {
        self.payload.recovery()
    }

    fn link(self) -> Option<&'a str> {
        let direct = match &self.payload {
            Payload::ToolCompleted(p) => p.requested_event_id.as_ref(),
            Payload::CommandCompleted(p) => p.requested_event_id.as_ref(),
            _ => None,
        };
        let id = direct.or_else(|| self.payload.recovery()?.requested_event_id.as_ref());
        id.map(EventId::as_str)
    }
}

/// One span of one session.
#[derive(Debug, Clone)]
pub(crate) struct Span<'a, R = &'a Event> {
    pub kind: SpanKind,
    pub request: Option<R>,
    pub terminal: Option<R>,
    /// Native completions that arrived after the span was recovered.
    pub late: Vec<&'a Event>,
}

impl<'a, R: SpanSide<'a>> Span<'a, R> {
    pub(crate) fn new(kind: SpanKind, request: Option<R>) -> Span<'a, R> {
        Span {
            kind,
            request,
            terminal: None,
            late: Vec::new(),
        }
    }

    pub(crate) fn state(&self) -> SpanState {
        match self.terminal.and_then(R::recovery) {
            Some(_) => SpanState::Recovered,
            None if self.terminal.is_some() => SpanState::ClosedNative,
            None => SpanState::Open,
        }
    }

    /// The request was minted by recovery (`request_not_observed`).
    pub(crate) fn request_recovered(&self) -> bool {
        self.request.is_some_and(|r| r.recovery().is_some())
    }

    /// The turn the span belongs to: the request's, else the terminal's.
    pub(crate) fn turn_id(&self) -> Option<&'a str> {
        self.request
            .and_then(R::turn_id)
            .or_else(|| self.terminal.and_then(R::turn_id))
    }

    /// The row that identifies the span (request, else terminal).
    pub(crate) fn anchor(&self) -> R {
        self.request
            .or(self.terminal)
            .expect("a span always holds a request or a terminal")
    }

    pub(crate) fn tool_name(&self) -> Option<&'a str> {
        self.anchor()
            .tool_name()
            .or_else(|| self.terminal.and_then(R::tool_name))
    }

    pub(crate) fn tool_call_id(&self) -> Option<&'a str> {
        self.request
            .and_then(R::tool_call_id)
            .or_else(|| self.terminal.and_then(R::tool_call_id))
    }

    /// The terminal's outcome (`None` while open).
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        self.terminal?.outcome()
    }

    /// The duration the terminal reports, observed or unknown.
    pub(crate) fn reported_duration(&self) -> Option<&'a Observation<u64>> {
        self.terminal?.reported_duration()
    }

    /// The recovery bound, when the terminal is recovered and carries one.
    pub(crate) fn upper_bound_ms(&self) -> Option<&'a Observation<u64>> {
        self.terminal?.recovery()?.elapsed_upper_bound_ms.as_ref()
    }

    /// Whether `terminal`, which names no request, closes this open span:
    /// by its call id, or without one by its tool name.
    pub(crate) fn takes_unlinked(&self, terminal: R) -> bool {
        match terminal.tool_call_id() {
            Some(id) => self.tool_call_id() == Some(id),
            None => self.tool_name() == terminal.tool_name(),
        }
    }
}

/// Pair one session's events (offset order) into spans, in request order.
pub(crate) fn pair_spans<'a>(events: &[&'a Event]) -> Vec<Span<'a>> {
    let mut pairing = Pairing::default();
    for event in events {
        pairing.feed(event);
    }
    pairing.spans
}

#[derive(Default)]
struct Pairing<'a> {
    spans: Vec<Span<'a>>,
    by_request: HashMap<&'a str, usize>,
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
        self.by_request.insert(event.id.as_str(), self.spans.len());
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
        if let Some(&i) = self.by_request.get(request.as_str()) {
            self.spans[i].late.push(event);
        }
    }

    fn match_terminal(&self, kind: SpanKind, event: &'a Event) -> Option<usize> {
        let is_open = |i: &usize| self.spans[*i].terminal.is_none() && self.spans[*i].kind == kind;
        if let Some(link) = event.link() {
            return self.by_request.get(link).copied().filter(is_open);
        }
        (0..self.spans.len())
            .filter(is_open)
            .find(|&i| self.spans[i].takes_unlinked(event))
    }
}

/// What a span reads of one request or terminal, kept by value: the few
/// fields [`SpanSide`] answers, without the event's inputs, outputs and
/// provenance. [`SpanStream`] holds one per span still open.
#[derive(Debug, Clone)]
pub(crate) struct SideRecord {
    event_id: String,
    time_unix_ns: i64,
    turn_id: Option<String>,
    tool_name: Option<String>,
    tool_call_id: Option<String>,
    outcome: Option<Outcome>,
    reported_duration: Option<Observation<u64>>,
    recovery: Option<Recovery>,
    link: Option<String>,
}

impl SideRecord {
    /// What `event` answers as a span side, read through its own
    /// [`SpanSide`] so both answer alike.
    pub(crate) fn of(event: &Event) -> SideRecord {
        SideRecord {
            event_id: event.event_id().to_string(),
            time_unix_ns: event.time_unix_ns(),
            turn_id: SpanSide::turn_id(event).map(str::to_string),
            tool_name: SpanSide::tool_name(event).map(str::to_string),
            tool_call_id: SpanSide::tool_call_id(event).map(str::to_string),
            outcome: SpanSide::outcome(event),
            reported_duration: SpanSide::reported_duration(event).cloned(),
            recovery: SpanSide::recovery(event).cloned(),
            link: event.link().map(str::to_string),
        }
    }
}

impl<'a> SpanSide<'a> for &'a SideRecord {
    fn event_id(self) -> &'a str {
        &self.event_id
    }

    fn time_unix_ns(self) -> i64 {
        self.time_unix_ns
    }

    fn turn_id(self) -> Option<&'a str> {
        self.turn_id.as_deref()
    }

    fn tool_name(self) -> Option<&'a str> {
        self.tool_name.as_deref()
    }

    fn tool_call_id(self) -> Option<&'a str> {
        self.tool_call_id.as_deref()
    }

    fn outcome(self) -> Option<Outcome> {
        self.outcome
    }

    fn reported_duration(self) -> Option<&'a Observation<u64>> {
        self.reported_duration.as_ref()
    }

    fn recovery(self) -> Option<&'a Recovery> {
        self.recovery.as_ref()
    }

    fn link(self) -> Option<&'a str> {
        self.link.as_deref()
    }
}

/// [`pair_spans`] one event at a time, for a session too large to hold:
/// each span is handed out as soon as nothing later can change it (when
/// its terminal is read, or at [`SpanStream::finish`] for those still
/// open), the same spans `pair_spans` finds, though not in request order
/// and without their late evidence (which changes no state or duration).
/// It holds one [`SideRecord`] per open span, never the session's events.
#[derive(Default)]
pub(crate) struct SpanStream {
    /// The open spans by the order their requests came in.
    open: BTreeMap<u64, (SpanKind, SideRecord)>,
    /// The latest request of each event id, while it is open: a link
    /// reaches only the latest request of its id, as in `pair_spans`, and
    /// finds nothing once that one has closed.
    by_request: HashMap<String, u64>,
    next: u64,
}

impl SpanStream {
    /// Take the session's next event; `done` gets the span it closes.
    pub(crate) fn feed(&mut self, event: &Event, done: impl FnOnce(&Span<'_, &SideRecord>)) {
        let (kind, opens) = match &event.payload {
            Payload::ToolRequested(_) => (SpanKind::Tool, true),
            Payload::CommandRequested(_) => (SpanKind::Command, true),
            Payload::ToolCompleted(_) => (SpanKind::Tool, false),
            Payload::CommandCompleted(_) => (SpanKind::Command, false),
            _ => return,
        };
        let side = SideRecord::of(event);
        if opens {
            self.by_request.insert(side.event_id.clone(), self.next);
            self.open.insert(self.next, (kind, side));
            self.next += 1;
            return;
        }
        let request = self.match_terminal(kind, &side).map(|at| {
            let (_, request) = self.open.remove(&at).expect("matched an open span");
            if self.by_request.get(&request.event_id) == Some(&at) {
                self.by_request.remove(&request.event_id);
            }
            request
        });
        let mut span = Span::new(kind, request.as_ref());
        span.terminal = Some(&side);
        done(&span);
    }

    /// The session has no more events: `done` gets each span still open.
    pub(crate) fn finish(self, mut done: impl FnMut(&Span<'_, &SideRecord>)) {
        for (kind, request) in self.open.values() {
            done(&Span::new(*kind, Some(request)));
        }
    }

    /// The open span `terminal` closes, as `pair_spans` finds it.
    fn match_terminal(&self, kind: SpanKind, terminal: &SideRecord) -> Option<u64> {
        if let Some(link) = terminal.link() {
            let at = *self.by_request.get(link)?;
            return self.open.get(&at).filter(|(k, _)| *k == kind).map(|_| at);
        }
        self.open
            .iter()
            .filter(|(_, (k, _))| *k == kind)
            .find(|(_, (k, request))| Span::new(*k, Some(request)).takes_unlinked(terminal))
            .map(|(&at, _)| at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::RecoveryReason;
    use crate::report::testkit::Script;

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
                SpanState::ClosedNative,
                SpanState::Recovered,
                SpanState::Open,
                SpanState::ClosedNative,
            ]
        );
        assert_eq!(
            spans[1]
                .terminal
                .and_then(|t| t.recovery())
                .map(|r| r.reason),
            Some(RecoveryReason::CompletionNotObservedBeforeTurnEnd)
        );
        assert!(spans[3].request.is_none());
        assert_eq!(spans[1].upper_bound_ms(), Some(&Observation::Observed(9)));
    }
}
