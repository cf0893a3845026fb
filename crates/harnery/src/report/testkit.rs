//! Builders for canonical event sequences in unit tests. Times are given in
//! milliseconds from an arbitrary base so the arithmetic reads plainly.

use crate::contract::*;

const BASE_NS: i64 = 1_800_000_000_000_000_000;

/// A session's events, written in order by a test.
pub(crate) struct Script {
    session: SessionRef,
    turn: TurnAttribution,
    events: Vec<Event>,
}

pub(crate) fn ms(at: i64) -> i64 {
    BASE_NS + at * 1_000_000
}

impl Script {
    pub(crate) fn new(session_id: &str) -> Script {
        Script {
            session: SessionRef {
                adapter: AdapterId::ClaudeCode,
                session_id: session_id.into(),
            },
            turn: TurnAttribution::none(),
            events: Vec::new(),
        }
    }

    /// Attribute the following events to native turn `id`.
    pub(crate) fn turn(&mut self, id: &str) {
        self.turn = TurnAttribution {
            source: TurnSource::Native,
            turn_id: Some(id.into()),
        };
    }

    /// Following events carry no turn.
    pub(crate) fn no_turn(&mut self) {
        self.turn = TurnAttribution::none();
    }

    pub(crate) fn events(&self) -> Vec<Event> {
        self.events.clone()
    }

    pub(crate) fn push(&mut self, at: i64, payload: Payload, provenance: Provenance) -> EventId {
        let offset = self.events.len() as u64;
        let id = EventId(format!("ev_{}_{offset}", self.session.session_id));
        self.events.push(Event {
            id: id.clone(),
            session: self.session.clone(),
            offset,
            time_unix_ns: ms(at),
            time_source: TimeSource::Received,
            clock: None,
            agent_id: None,
            turn: self.turn.clone(),
            provenance,
            raw: Vec::new(),
            payload,
        });
        id
    }

    pub(crate) fn start(&mut self, at: i64) -> EventId {
        let p = Payload::TurnStarted(TurnStarted {
            prompt_event_id: None,
        });
        self.push(at, p, Provenance::NATIVE)
    }

    pub(crate) fn stop(&mut self, at: i64) -> EventId {
        let p = Payload::TurnCompleted(TurnCompleted { stop_reason: None });
        self.push(at, p, Provenance::NATIVE)
    }

    pub(crate) fn request(&mut self, tool: &str, at: i64) -> EventId {
        let offset = self.events.len();
        let p = Payload::ToolRequested(ToolRequested {
            tool_call_id: Some(format!("call_{offset}")),
            tool_name: tool.into(),
            input_digest: "d".into(),
            input: None,
            recovery: None,
        });
        self.push(at, p, Provenance::NATIVE)
    }

    /// A native completion linked to `req`, with the agent's own duration if given.
    pub(crate) fn complete(&mut self, req: &EventId, at: i64, duration: Option<u64>) -> EventId {
        let (name, call) = self.tool_of(req);
        let p = Payload::ToolCompleted(ToolCompleted {
            tool_call_id: call,
            tool_name: name,
            requested_event_id: Some(req.clone()),
            outcome: Outcome::Success,
            duration_ms: duration
                .map(Observation::Observed)
                .unwrap_or_else(|| Observation::unknown("not_reported")),
            exit_code: None,
            error: None,
            content: None,
            recovery: None,
            paired_by: None,
        });
        self.push(at, p, Provenance::NATIVE)
    }

    /// A derived terminal for `req` with `reason` and an optional observed bound.
    pub(crate) fn recover(
        &mut self,
        req: &EventId,
        at: i64,
        reason: RecoveryReason,
        bound: Option<u64>,
    ) -> EventId {
        let (name, call) = self.tool_of(req);
        let recovery = Recovery {
            reason,
            requested_event_id: Some(req.clone()),
            elapsed_upper_bound_ms: Some(
                bound
                    .map(Observation::Observed)
                    .unwrap_or_else(|| Observation::unknown("cross_boot")),
            ),
        };
        let p = Payload::ToolCompleted(ToolCompleted {
            tool_call_id: call,
            tool_name: name,
            requested_event_id: None,
            outcome: Outcome::Unknown,
            duration_ms: Observation::unknown(reason.as_str()),
            exit_code: None,
            error: None,
            content: None,
            recovery: Some(recovery),
            paired_by: None,
        });
        self.push(at, p, derived(Confidence::Medium))
    }

    /// A completion whose request was never seen (no link, no call id match).
    pub(crate) fn orphan_completion(&mut self, tool: &str, at: i64) -> EventId {
        let p = Payload::ToolCompleted(ToolCompleted {
            tool_call_id: Some("call_orphan".into()),
            tool_name: tool.into(),
            requested_event_id: None,
            outcome: Outcome::Success,
            duration_ms: Observation::Observed(1),
            exit_code: None,
            error: None,
            content: None,
            recovery: None,
            paired_by: None,
        });
        self.push(at, p, Provenance::NATIVE)
    }

    /// A derived request for a post that matched nothing, then its native post.
    pub(crate) fn unmatched_post(&mut self, tool: &str, at: i64, duration: Option<u64>) -> EventId {
        let p = Payload::ToolRequested(ToolRequested {
            tool_call_id: Some(format!("call_u{at}")),
            tool_name: tool.into(),
            input_digest: "d".into(),
            input: None,
            recovery: Some(Recovery {
                reason: RecoveryReason::RequestNotObserved,
                requested_event_id: None,
                elapsed_upper_bound_ms: None,
            }),
        });
        let req = self.push(at, p, derived(Confidence::High));
        self.complete(&req, at, duration)
    }

    pub(crate) fn command(&mut self, at: i64) -> EventId {
        let p = Payload::CommandRequested(CommandRequested {
            argv: vec!["make".into()],
            cwd: None,
            pid: None,
        });
        self.push(at, p, derived(Confidence::High))
    }

    pub(crate) fn command_done(&mut self, req: &EventId, at: i64, exit: i64) -> EventId {
        let p = Payload::CommandCompleted(CommandCompleted {
            requested_event_id: Some(req.clone()),
            outcome: if exit == 0 {
                Outcome::Success
            } else {
                Outcome::Failure
            },
            duration_ms: Observation::Observed(1),
            exit_code: Some(exit),
            signal: None,
            recovery: None,
        });
        self.push(at, p, derived(Confidence::High))
    }

    pub(crate) fn end_requested(&mut self, at: i64, approved: Vec<EventId>) -> EventId {
        let p = Payload::EndRequested(EndRequested {
            origin: "operator".into(),
            reason: None,
            approved_spans: approved,
        });
        self.push(at, p, derived(Confidence::High))
    }

    pub(crate) fn late(&mut self, req: &EventId, recovered: &EventId, at: i64) -> EventId {
        let p = Payload::LateEvidence(LateEvidence {
            span_request_event_id: req.clone(),
            recovered_event_id: recovered.clone(),
            outcome: Outcome::Success,
            error: None,
        });
        self.push(at, p, Provenance::NATIVE)
    }

    pub(crate) fn health(&mut self, at: i64, code: &str) -> EventId {
        let p = Payload::HealthCondition(HealthCondition {
            code: code.into(),
            detail: "test".into(),
        });
        self.push(at, p, derived(Confidence::High))
    }

    fn tool_of(&self, req: &EventId) -> (String, Option<String>) {
        let found = self.events.iter().find(|e| &e.id == req);
        match found.map(|e| &e.payload) {
            Some(Payload::ToolRequested(p)) => (p.tool_name.clone(), p.tool_call_id.clone()),
            _ => ("unknown".into(), None),
        }
    }
}

pub(crate) fn derived(confidence: Confidence) -> Provenance {
    Provenance {
        attestation: Attestation::Derived,
        confidence,
    }
}
