//! The per-session rules engine (the producer):
//! the stateful, per-session half of normalization.
//!
//! The agents layer reads one raw signal at a time; the producer holds what
//! must be remembered between signals and turns signals into canonical
//! events: gapless offsets from 0, deterministic ids, turn attribution
//! (native, stamped or none), duplicate delivery, span pairing, every
//! recovery rule of ADR 0078, explicit ends, command spans, late evidence and
//! the span caps. Its state is plain serde data, so the finalizer can store
//! it between runs; its policy comes from the adapter's recovery table in
//! code and is never stored. Stored state names the capability profile it
//! was built under; state of another profile is checked, not silently
//! reused (see `authority`).
//!
//! It never touches storage and never reads a clock: time arrives with each
//! signal and with each [`SessionProducer::tick`].
//!
//! Files (this one holds [`SessionProducer`] and the signal dispatch):
//! - `emit.rs`: building events: offsets, deterministic ids, raw pointers,
//!   time (`Stamp`, `Emitter`).
//! - `turns.rs`: turn attribution (native, stamped or none; `TurnBook`).
//! - `deliveries.rs`: the duplicate-delivery memory.
//! - `spans.rs`: span bookkeeping, open and recently closed.
//! - `span_pairing.rs`: tool spans, the span-pairing rules (request ↔
//!   completion), in `SpanPairer`.
//! - `recovery.rs`: ADR 0078 recovery: derived terminals, sweeps, span caps
//!   (the pairer's).
//! - `ends.rs`: explicit ends (`EndRequests`) and command spans (the
//!   pairer's).
//! - `effects.rs`: a checkpoint's effect ledger.
//! - `locate.rs`: where each checkpoint stands in the agent's own record.
//! - `session_log.rs`: checkpoints, restores and resumes (the session log).
//! - `record.rs`: the agent's own record joining the hook signals;
//!   `record_apply.rs`: the rules for taking its lines.
//! - `authority.rs`: the capability-profile check on stored state.
//! - `stored.rs`: the state as the ledger stores it (one flat object).
//! - `tests.rs`, `record_tests.rs`: tests.

mod authority;
mod deliveries;
pub(crate) mod effects;
mod emit;
mod emitter;
mod ends;
mod imported;
mod locate;
pub(crate) mod policy;
mod record;
mod recovery;
mod session_log;
mod span_pairing;
mod spans;
mod stored;
mod titled;
mod turns;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

use serde::Deserialize;

pub(crate) use ends::{EndOrigin, PendingEnd};
pub use policy::{END_EXPIRY_NS, READ_SIDE_SPAN_CAP, SPAN_CAP_CONDITION, SPAN_WATERMARK};
pub(crate) use record::RecordCursor;
pub(crate) use spans::{OpenSpan, SpanKind};

use emit::{Draft, RawSource, Trigger};
use spans::SpanPairer;
use turns::Speaker;

use crate::agents::adapter::RecordTurns;
use crate::agents::harnery::is_harnery_event;
use crate::agents::{Normalized, RawSignal, RecoveryPolicy, SignalKind, TurnEnd, recovery_policy};
use crate::clock::ClockSample;
use crate::contract::{
    Event, EventId, HealthCondition, Payload, PromptSubmitted, RecoveryReason, SessionRef,
    TimeSource, TurnAttribution, TurnCompleted, TurnSource, TurnStarted,
};

/// What one raw signal produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Ingested {
    pub events: Vec<Event>,
    /// Set when the signal was a second delivery of one already seen: no
    /// events, and the id of the first delivery's first event.
    pub duplicate_of: Option<EventId>,
}

/// The per-session state machine. See the module doc. Each part owns its
/// own state; the producer routes signals to them and runs the rules that
/// need several. Stored as one flat object (see `stored.rs`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "stored::SessionProducer")]
pub struct SessionProducer {
    /// The session, its capability profile and the next offset.
    stamp: emit::Stamp,
    turns: turns::TurnBook,
    /// Open and recently closed spans, with the rules that pair, recover
    /// and cap them.
    pairer: SpanPairer,
    /// Recent delivery keys and the first event each produced, oldest first.
    deliveries: deliveries::DeliveryMemory,
    /// The end request still pending, if any.
    ends: ends::EndRequests,
    /// The agent's own record of the session, as far as it was followed.
    record: record::RecordFollow,
    /// Checkpoints, restores and resumes (contract generation 3).
    log: session_log::SessionLogBook,
    /// Test-only override of the adapter's recovery table; never stored.
    policy_override: Option<RecoveryPolicy>,
}

impl SessionProducer {
    /// A new producer for a session that an epoch advance carried over:
    /// its record is followed on from where the archived epoch's producer
    /// left it (cursor, fingerprint, usage already counted, turn lineage),
    /// so nothing of it is read or counted twice. `archived` is the whole
    /// producer state the archived epoch stored, as JSON text; `None` when
    /// it says nothing of a record.
    pub(crate) fn carrying_record(session: SessionRef, archived: &str) -> Option<SessionProducer> {
        #[derive(Deserialize)]
        struct Stored {
            #[serde(default)]
            record: record::RecordFollow,
        }
        let stored: Stored = serde_json::from_str(archived).ok()?;
        if stored.record.is_unused() {
            return None;
        }
        let mut producer = SessionProducer::new(session);
        producer.record = stored.record.carried();
        Some(producer)
    }

    pub fn new(session: SessionRef) -> SessionProducer {
        SessionProducer {
            stamp: emit::Stamp::new(session),
            turns: turns::TurnBook::default(),
            pairer: SpanPairer::default(),
            deliveries: deliveries::DeliveryMemory::default(),
            ends: ends::EndRequests::default(),
            record: record::RecordFollow::default(),
            log: session_log::SessionLogBook::default(),
            policy_override: None,
        }
    }

    /// A producer that runs `policy` instead of the adapter's table (tests,
    /// and experiments with enabling a rule).
    pub fn with_policy(session: SessionRef, policy: RecoveryPolicy) -> SessionProducer {
        SessionProducer {
            policy_override: Some(policy),
            ..SessionProducer::new(session)
        }
    }

    pub fn session(&self) -> &SessionRef {
        &self.stamp.session
    }

    #[cfg(test)]
    pub(crate) fn capability_digest(&self) -> &str {
        &self.stamp.capability_digest
    }

    #[cfg(test)]
    /// The offset the next event will get.
    pub(crate) fn next_offset(&self) -> u64 {
        self.stamp.next_offset
    }

    /// How the agent's record lines meet this session's turns.
    fn record_turns(&self) -> RecordTurns {
        crate::agents::agent(self.stamp.session.adapter).record_turns()
    }

    /// Whether the agent's record is found by the session id alone, with
    /// no hook naming it (Copilot's `events.jsonl`).
    fn finds_own_record(&self) -> bool {
        crate::agents::agent(self.stamp.session.adapter).finds_record_by_id()
    }

    pub(crate) fn policy(&self) -> RecoveryPolicy {
        self.policy_override
            .unwrap_or_else(|| recovery_policy(self.stamp.session.adapter))
    }

    /// The span pairer with an emitter beside it, for a rule that changes
    /// spans and emits.
    fn pairing(&mut self) -> (&mut SpanPairer, emitter::Emitter<'_>) {
        let em = emitter::Emitter {
            stamp: &mut self.stamp,
            record: &mut self.record,
        };
        (&mut self.pairer, em)
    }

    /// The end requests, with the span pairer (salvage closes spans) and
    /// an emitter beside them.
    fn ending(
        &mut self,
    ) -> (
        &mut ends::EndRequests,
        &mut SpanPairer,
        emitter::Emitter<'_>,
    ) {
        let em = emitter::Emitter {
            stamp: &mut self.stamp,
            record: &mut self.record,
        };
        (&mut self.ends, &mut self.pairer, em)
    }

    /// How the session's spans stand, in the ledger's words.
    pub fn span_counts(&self) -> crate::ledger::SpanCounts {
        crate::ledger::SpanCounts {
            open: self.pairer.spans.open_count() as u64,
            closed_native: self.pairer.spans.closed_native,
            recovered: self.pairer.spans.recovered,
        }
    }

    pub fn open_spans(&self) -> &[OpenSpan] {
        &self.pairer.spans.open
    }

    pub fn pending_end(&self) -> Option<&PendingEnd> {
        self.ends.pending.as_ref()
    }

    /// Normalize one raw signal of this session into events.
    pub fn ingest(&mut self, signal: &RawSignal) -> Ingested {
        let from_agent = !signal.event_name.is_some_and(is_harnery_event);
        // The record a hook names is read with the payload while it may
        // still move the following (below), not parsed out a second time.
        let (mut normalized, named) = signal.normalize_naming(from_agent && self.record.unread());
        let keys = delivery_keys(signal, normalized.delivery_key.take());
        if let Some(first) = self.deliveries.first_of(&keys) {
            return Ingested {
                events: Vec::new(),
                duplicate_of: Some(first),
            };
        }
        let mut trigger = Trigger {
            key: Cow::Borrowed(signal.record_digest),
            raw: Some(RawSource {
                record_digest: signal.record_digest,
                event_name: signal.event_name,
            }),
            time_unix_ns: normalized.time_unix_ns,
            time_source: normalized.time_source,
            clock: Some(&signal.clock),
            emitted: 0,
        };
        let mut out = Vec::new();
        // A signal of an older incarnation is kept as evidence only.
        if from_agent && self.session_log_before(&normalized, &mut trigger, &mut out) {
            if let Some(first) = out.first() {
                self.deliveries.remember(keys, &first.id);
            }
            return Ingested {
                events: out,
                duplicate_of: None,
            };
        }
        if from_agent && normalized.kind.is_native_work() {
            let (ends, _, mut em) = self.ending();
            ends.cancel(&mut em, "native_work", &mut trigger, &mut out);
        }
        // The record a hook names; until any of it was read, a hook that
        // names another (a session carried from an epoch whose record was
        // elsewhere) moves the following there.
        if from_agent && self.record.unread() {
            let named = named.or_look_in(signal.payload);
            if named.is_some() && named != self.record.path {
                if self.record.path.is_some() {
                    self.record.problem = None;
                }
                self.record.path = named;
            }
        }
        self.apply(normalized, &mut trigger, &mut out);
        if from_agent
            && let Some((agent, path)) =
                crate::agents::agent(signal.adapter).subagent_record(signal.payload)
        {
            self.follow_subagent_record(agent, path, &mut trigger, &mut out);
        }
        self.session_log_after(&mut trigger, &mut out);
        // Only a session whose record may be followed keeps its requests
        // for joining (Copilot's record is found without a hook naming it).
        if from_agent && (self.record.path.is_some() || self.finds_own_record()) {
            self.record.remember_requests(&out);
        }
        let (policy, turns) = (self.policy(), &self.turns);
        let em = &mut emitter::Emitter {
            stamp: &mut self.stamp,
            record: &mut self.record,
        };
        self.pairer
            .enforce_span_caps(em, policy, turns, &mut trigger, &mut out);
        self.pairer.spans.prune(&self.turns);
        if let Some(first) = out.first() {
            self.deliveries.remember(keys, &first.id);
        }
        Ingested {
            events: out,
            duplicate_of: None,
        }
    }

    /// Record a condition the finalizer observed about this session's own
    /// signals (damaged spool bytes, say) as a derived `health.condition`
    /// in the session, so the read side sees it where it applies. `key`
    /// identifies the condition; the same key yields the same event id.
    pub(crate) fn record_health(
        &mut self,
        key: &str,
        code: &str,
        detail: String,
        at_unix_ns: i64,
    ) -> Event {
        let mut trigger = Trigger {
            key: Cow::Owned(format!("health:{key}")),
            raw: None,
            time_unix_ns: at_unix_ns,
            time_source: TimeSource::Finalizer,
            clock: None,
            emitted: 0,
        };
        let draft = Draft {
            payload: Payload::HealthCondition(HealthCondition {
                code: code.to_string(),
                detail,
            }),
            provenance: emit::derived_high(),
            turn: TurnAttribution::none(),
            agent_id: None,
            tag: code.to_string(),
        };
        let mut out = Vec::new();
        self.emit(&mut trigger, draft, &mut out);
        out.pop().expect("emit queues the event it stamps")
    }

    /// Whether [`tick`](Self::tick) emits nothing, now and at any later
    /// time: no end request pending, no turn's checkpoint waiting to be
    /// pinned, no checkpoint to settle at the record's end. Until a batch
    /// changes such a state, a finalizer need not load it to tick it.
    pub fn ticks_nothing(&self) -> bool {
        self.ends.pending.is_none()
            && !self.log.has_pending_turn()
            && !self.record.locate.may_settle()
    }

    /// Time-based rules: evaluate a pending end (salvage before expiry).
    /// Call after the session's signals of a finalize run were ingested.
    /// A natively completed turn's checkpoint still waiting is pinned last.
    pub fn tick(&mut self, now_unix_ns: i64, clock: &ClockSample) -> Vec<Event> {
        let mut out = self.tick_pending_end(now_unix_ns, clock);
        out.extend(self.session_log_tick());
        out.extend(self.locate_tick(now_unix_ns, clock));
        out
    }

    fn tick_pending_end(&mut self, now_unix_ns: i64, clock: &ClockSample) -> Vec<Event> {
        let Some(pending) = &self.ends.pending else {
            return Vec::new();
        };
        let mut trigger = Trigger {
            key: Cow::Owned(format!("tick:{}", pending.end_event_id)),
            raw: None,
            time_unix_ns: now_unix_ns,
            time_source: TimeSource::Finalizer,
            clock: Some(clock),
            emitted: 0,
        };
        let mut out = Vec::new();
        let policy = self.policy();
        let (ends, pairer, mut em) = self.ending();
        ends.evaluate(&mut em, pairer, policy, now_unix_ns, &mut trigger, &mut out);
        self.pairer.spans.prune(&self.turns);
        self.log.observe(&out);
        out
    }

    /// Route one normalized signal to the rule that handles it.
    fn apply(&mut self, signal: Normalized, trigger: &mut Trigger, out: &mut Vec<Event>) {
        let agent = signal.agent_id.clone();
        match signal.kind {
            SignalKind::PromptSubmitted(prompt) => {
                self.on_prompt(prompt, agent, signal.native_turn_id, trigger, out)
            }
            SignalKind::TurnEnded(end) => {
                self.on_turn_end(end, agent, signal.native_turn_id, trigger, out)
            }
            SignalKind::ToolRequested(call) => {
                if agent.is_none()
                    && let Some(turn) = signal.native_turn_id.as_deref()
                {
                    self.turns.resume_latest(turn);
                }
                let who = self.speaker_for_tool(agent, signal.native_turn_id, trigger, out);
                let (pairer, mut em) = self.pairing();
                pairer.on_tool_requested(&mut em, call, who, trigger, out)
            }
            SignalKind::ToolCompleted(result) => {
                let who = self.speaker_for_tool(agent, signal.native_turn_id, trigger, out);
                let policy = self.policy();
                let (pairer, mut em) = self.pairing();
                pairer.on_tool_completed(&mut em, policy, result, who, trigger, out)
            }
            SignalKind::ToolBatch(calls) => {
                let who = self.speaker_for_tool(agent, signal.native_turn_id, trigger, out);
                let policy = self.policy();
                let (pairer, mut em) = self.pairing();
                pairer.on_tool_batch(&mut em, policy, calls, who, trigger, out)
            }
            SignalKind::SessionEnded(ended) => {
                if agent.is_none() {
                    self.record.locate.session_ended();
                }
                let who = self.turns.speaker(agent, signal.native_turn_id);
                let reason = ended.reason.clone();
                self.emit_plain(Payload::SessionEnded(ended), who, trigger, out);
                let (ends, pairer, mut em) = self.ending();
                ends.request(&mut em, pairer, EndOrigin::Native, reason, trigger, out);
            }
            SignalKind::EndRequested { reason } => {
                let (ends, pairer, mut em) = self.ending();
                ends.request(&mut em, pairer, EndOrigin::Operator, reason, trigger, out)
            }
            SignalKind::CommandRequested {
                command_id,
                request,
            } => {
                let (pairer, mut em) = self.pairing();
                pairer.on_command_requested(&mut em, command_id, request, trigger, out)
            }
            SignalKind::CommandCompleted(done) => {
                let (pairer, mut em) = self.pairing();
                pairer.on_command_completed(&mut em, done, trigger, out)
            }
            SignalKind::SubagentStarted(p) => {
                self.pairer.running_agents.insert(p.agent_id.clone());
                let who = self.turns.speaker(agent, signal.native_turn_id);
                self.emit_plain(Payload::SubagentStarted(p), who, trigger, out)
            }
            SignalKind::SubagentStopped(p) => {
                self.pairer.running_agents.remove(&p.agent_id);
                // A stopped subagent's own (stamped) turn is over, too.
                self.turns.end(Some(&p.agent_id), None);
                let who = self.turns.speaker(agent, signal.native_turn_id);
                self.emit_plain(Payload::SubagentStopped(p), who, trigger, out)
            }
            SignalKind::SessionStarted(p) => {
                let who = self.turns.speaker(agent, signal.native_turn_id);
                self.emit_plain(Payload::SessionStarted(p), who, trigger, out)
            }
            SignalKind::Lifecycle(payload) => {
                let who = self.turns.speaker(agent, signal.native_turn_id);
                self.emit_plain(payload, who, trigger, out)
            }
            SignalKind::Unrecognized(p) => {
                let who = self.turns.speaker(agent, signal.native_turn_id);
                self.emit_plain(Payload::SignalUnrecognized(p), who, trigger, out)
            }
            SignalKind::RecordChunk(chunk) => self.on_record_chunk(*chunk, trigger, out),
            SignalKind::RecordProblem(p) => self.on_record_problem(p, trigger, out),
            SignalKind::CheckpointRequested(p) => self.on_checkpoint_requested(p, trigger, out),
            SignalKind::RestoreRequested(p) => self.on_restore_requested(p, trigger, out),
            SignalKind::Imported(p) => self.on_imported(*p, trigger, out),
            SignalKind::Titled(t) => self.on_titled(t, trigger, out),
        }
    }

    fn emit_plain(
        &mut self,
        payload: Payload,
        who: Speaker,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        self.emit(trigger, Draft::native(payload, who.turn, who.agent_id), out);
    }

    /// Like [`turns::TurnBook::speaker`], but a native turn id never seen before
    /// starts that turn (its prompt signal was lost).
    fn speaker_for_tool(
        &mut self,
        agent: Option<String>,
        native_turn: Option<String>,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) -> Speaker {
        if let Some(id) = native_turn.as_deref().filter(|id| !self.turns.is_known(id)) {
            let turn = TurnAttribution {
                source: TurnSource::Native,
                turn_id: Some(id.to_string()),
            };
            self.start_turn(None, turn, None, trigger, out);
        }
        self.turns.speaker(agent, native_turn)
    }

    fn on_prompt(
        &mut self,
        prompt: PromptSubmitted,
        agent: Option<String>,
        native_turn: Option<String>,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let starts_turn = !prompt.transformed
            && match native_turn.as_deref() {
                Some(id) => !self.turns.is_known(id),
                None => true,
            };
        if !starts_turn {
            let who = self.turns.speaker(agent, native_turn);
            self.emit_plain(Payload::PromptSubmitted(prompt), who, trigger, out);
            return;
        }
        let turn = match native_turn {
            Some(id) => TurnAttribution {
                source: TurnSource::Native,
                turn_id: Some(id),
            },
            None => self.turns.mint_stamped(&trigger.key),
        };
        // Copilot's record meets its stamped turns at the prompt's text.
        if self.record_turns() == RecordTurns::PromptText
            && let Some(text) = prompt.prompt.as_deref()
        {
            self.record.remember_prompt(text, turn.clone());
        }
        let draft = Draft::native(
            Payload::PromptSubmitted(prompt),
            turn.clone(),
            agent.clone(),
        );
        let prompt_id = self.emit(trigger, draft, out).clone();
        // Native turn ids belong to the main agent (Claude subagents share
        // the parent's prompt_id); stamped turns belong to the speaker.
        let owner = if turn.source == TurnSource::Native {
            None
        } else {
            agent
        };
        self.start_turn(owner, turn, Some(prompt_id), trigger, out);
    }

    /// Start a turn for an agent; the turn it replaces lost its stop, so
    /// its spans get the next-turn sweep where the table enables it.
    fn start_turn(
        &mut self,
        agent: Option<String>,
        turn: TurnAttribution,
        prompt_event_id: Option<EventId>,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let replaced = self.turns.start(agent.as_deref(), turn.clone());
        if let Some(previous) = replaced.and_then(|t| t.turn_id)
            && self.policy().next_turn_sweep
        {
            let reason = RecoveryReason::CompletionNotObservedBeforeNextTurn;
            let (pairer, mut em) = self.pairing();
            pairer.sweep_turn(&mut em, &previous, reason, &[], trigger, out);
        }
        let payload = Payload::TurnStarted(TurnStarted { prompt_event_id });
        self.emit(trigger, Draft::native(payload, turn, agent), out);
    }

    fn on_turn_end(
        &mut self,
        end: TurnEnd,
        agent: Option<String>,
        native_turn: Option<String>,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let who = self.turns.speaker(agent.clone(), native_turn.clone());
        let owner = if native_turn.is_some() { None } else { agent };
        let ended = match self.turns.own_current(owner.as_deref()) {
            Some(_) => self.turns.end(owner.as_deref(), native_turn.as_deref()),
            None => None,
        };
        if let Some(turn_id) = ended.as_ref().and_then(|t| t.turn_id.clone())
            && self.policy().turn_end_sweep
        {
            let reason = RecoveryReason::CompletionNotObservedBeforeTurnEnd;
            let (pairer, mut em) = self.pairing();
            pairer.sweep_turn(&mut em, &turn_id, reason, &end.running_agents, trigger, out);
        }
        // A boundary signal that did not name its turn ends the turn producer
        // state holds, so the event says the turn was stamped.
        let turn = match (ended, native_turn) {
            (Some(t), Some(_)) => t,
            (Some(t), None) => turns::stamped_by_state(t),
            (None, _) => who.turn,
        };
        let payload = Payload::TurnCompleted(TurnCompleted {
            stop_reason: end.stop_reason,
        });
        self.emit(trigger, Draft::native(payload, turn, who.agent_id), out);
    }
}

/// The delivery identities of a signal: its exact bytes under its event
/// name, plus the dialect-independent key where the adapter gives one.
fn delivery_keys(signal: &RawSignal, dialect_key: Option<String>) -> Vec<String> {
    // An agent that sends the same bytes for distinct events (Codex) has
    // no exact repeat to drop: only its dialect's key says "seen".
    if crate::agents::agent(signal.adapter).repeats_payloads() {
        return dialect_key.into_iter().collect();
    }
    let computed;
    let digest = match signal.payload_blake3 {
        Some(known) => known,
        None => {
            computed = blake3::hash(signal.payload).to_hex();
            computed.as_str()
        }
    };
    let event = signal.event_name.unwrap_or("");
    let mut exact = String::with_capacity(8 + event.len() + digest.len());
    exact.push_str("exact:");
    exact.push_str(event);
    exact.push(':');
    exact.push_str(digest);
    let mut keys = Vec::with_capacity(2);
    keys.push(exact);
    keys.extend(dialect_key);
    keys
}
