//! The session log of seed 004, as the producer keeps it (contract
//! generation 3): checkpoints pinned to offsets with their effect ledger,
//! restores, resumes and the incarnations they start.
//!
//! - A checkpoint pins the offset right after its own event: a restore
//!   hands back every live event below it, the checkpoint included. The
//!   first checkpoint recorded under an id is the one that counts; a later
//!   request for the same id leaves a `health.condition`
//!   (`checkpoint_id_taken`), never a second checkpoint.
//! - Each natively completed turn (the agent's own turn-boundary hook)
//!   gets a checkpoint of its own, `turn:<turn id>`, pinned once what
//!   closes the turn is in: before the next turn's work, or at the end of
//!   the finalize run, after the agent's own record was read.
//! - The effect ledger of a checkpoint is what closed natively since the
//!   previous checkpoint (`effects`).
//! - A resume is the agent's own word (generation 6): its session start
//!   saying so (Claude Code `SessionStart`, Copilot `sessionStart`, both
//!   with `source: "resume"`), or a new prompt of the main agent after the
//!   session ended natively (the Copilot SDK's resumed leg prompts before
//!   its `sessionStart`; a process that still runs has sent no end). A
//!   recorded restore waits for that word: the original process's own
//!   prompts, tools and stops stay on its line meanwhile (generations 3 to
//!   5 took any native signal as the resume). A resume appends
//!   `session.resumed` before the signal's own events and starts the next
//!   incarnation. After a restore from a
//!   checkpoint pinned at P, the events from P up to the restore are
//!   superseded and every checkpoint pinned above P is invalid.
//!   The spans still open that were requested in the superseded range
//!   (and the tool calls the original process made after the restore and
//!   left open: their ends could only arrive as stale evidence) are
//!   salvaged by the resume (a derived terminal, `explicit_end_salvage`
//!   for tools, `command_completion_not_observed` for commands, before
//!   `session.resumed`), so every span ends and no sweep of the live line
//!   reaches them later.
//! - A hook signal of an older incarnation that arrives after a resume (an
//!   agent timestamp before the resume, or a native turn of an older
//!   incarnation) is kept as `session.stale_signal`, never applied to the
//!   live line.
//!
//! Nothing here reads a clock or storage; it sees the events the other
//! rules emit and the signals routed to it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::SessionProducer;
use super::effects::EffectBook;
use super::emit::{Draft, Trigger};
use crate::agents::harnery::{CheckpointPayload, RestorePayload};
use crate::agents::{Normalized, SignalKind};
use crate::contract::{
    Attestation, CheckpointRecorded, Effect, Event, HealthCondition, Observation, OffsetRange,
    Payload, Provenance, RestoreRecorded, SessionResumed, StaleSignal, TimeSource, TurnAttribution,
    TurnSource,
};

/// The health code of a checkpoint request whose id is already taken.
pub(crate) const CHECKPOINT_ID_TAKEN: &str = "checkpoint_id_taken";
/// The health code of a restore that names no valid checkpoint.
pub(crate) const RESTORE_CHECKPOINT_UNKNOWN: &str = "restore_checkpoint_unknown";
/// Native turn ids of the live incarnation remembered for stale detection.
pub(crate) const REMEMBERED_LIVE_TURNS: usize = 64;

/// Why a commit is unknown on a checkpoint.
const NO_COMMIT_KNOWN: &str = "no_head_commit_known";

/// A checkpoint as producer state remembers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct PinnedCheckpoint {
    pub offset: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub invalid: bool,
    /// The offset of its `checkpoint.located`, once written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub located_at: Option<u64>,
}

/// A restore waiting for the agent's resume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct PendingRestore {
    pub checkpoint_id: String,
    pub boundary_offset: u64,
    /// The offset of the `restore.recorded` event: the superseded range
    /// ends there.
    pub restore_offset: u64,
}

/// A turn checkpoint waiting to be pinned, and the time of the latest
/// event since (the checkpoint takes it when a timer pins it, so that it
/// never stretches the session's time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct PendingTurn {
    pub turn: TurnAttribution,
    pub time_unix_ns: i64,
    pub time_source: TimeSource,
}

/// The session log's producer state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct SessionLogBook {
    /// Resumes so far; the live incarnation is one more.
    #[serde(default)]
    resumes: u64,
    #[serde(default)]
    checkpoints: BTreeMap<String, PinnedCheckpoint>,
    /// The effect ledger since the previous checkpoint.
    #[serde(default)]
    effects: EffectBook,
    /// The head commit the agent's record named last.
    #[serde(default)]
    head_commit: Option<String>,
    #[serde(default)]
    pending_restore: Option<PendingRestore>,
    /// The session ended natively in the live incarnation.
    #[serde(default)]
    ended: bool,
    /// A resume was recorded before its leg's `sessionStart` arrived.
    #[serde(default)]
    awaiting_start: bool,
    /// A natively completed turn whose checkpoint is not pinned yet.
    #[serde(default)]
    pending_turn: Option<PendingTurn>,
    /// The agent time of the signal that started the live incarnation.
    #[serde(default)]
    resumed_at_unix_ns: Option<i64>,
    /// Native turn ids of the live incarnation, newest last.
    #[serde(default)]
    live_turns: VecDeque<String>,
    /// Native turn ids of older incarnations.
    #[serde(default)]
    stale_turns: BTreeSet<String>,
    /// The session's directory as its start named it last, and as its
    /// record did: a checkpoint names the first, else the second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd_record: Option<String>,
}

impl SessionLogBook {
    /// Whether a natively completed turn's checkpoint waits to be pinned
    /// (the time rules pin it).
    pub(super) fn has_pending_turn(&self) -> bool {
        self.pending_turn.is_some()
    }

    pub(crate) fn is_unused(&self) -> bool {
        *self == SessionLogBook::default()
    }

    /// The live incarnation, from 1.
    pub(crate) fn incarnation(&self) -> u64 {
        self.resumes + 1
    }

    /// Learn from events the other rules emitted: effects opened and
    /// closed, the head commit, the live incarnation's native turns.
    pub(super) fn observe(&mut self, events: &[Event]) {
        for e in events {
            if let Some(p) = &mut self.pending_turn
                && e.time_unix_ns > p.time_unix_ns
            {
                p.time_unix_ns = e.time_unix_ns;
                p.time_source = e.time_source;
            }
            // A turn is the live incarnation's by its hooks, not by the
            // agent's record: Codex writes a resumed turn's lines before it
            // runs the hooks that resume it, and a finalize in between must
            // not make that turn an older incarnation's.
            if e.turn.source == TurnSource::Native
                && e.provenance.attestation != Attestation::Record
                && let Some(turn) = &e.turn.turn_id
                && self.live_turns.back() != Some(turn)
                && !self.live_turns.contains(turn)
            {
                self.live_turns.push_back(turn.clone());
                if self.live_turns.len() > REMEMBERED_LIVE_TURNS {
                    self.live_turns.pop_front();
                }
            }
            self.effects.observe(e);
            if let Payload::SessionMetadata(m) = &e.payload
                && let Some(sha) = &m.head_commit
            {
                self.head_commit = Some(sha.clone());
            }
            match &e.payload {
                Payload::SessionStarted(s) if e.agent_id.is_none() && s.cwd.is_some() => {
                    self.cwd = s.cwd.clone();
                }
                Payload::SessionMetadata(m) if e.agent_id.is_none() && m.cwd.is_some() => {
                    self.cwd_record = m.cwd.clone();
                }
                _ => {}
            }
        }
    }

    /// Whether a hook signal belongs to an older incarnation, and why.
    fn stale_reason(&self, signal: &Normalized) -> Option<&'static str> {
        if matches!(signal.kind, SignalKind::SessionStarted(_)) {
            return None;
        }
        if let Some(turn) = &signal.native_turn_id
            && self.stale_turns.contains(turn)
        {
            return Some("native_turn_of_an_older_incarnation");
        }
        match self.resumed_at_unix_ns {
            Some(at) if signal.time_source == TimeSource::Agent && signal.time_unix_ns < at => {
                Some("agent_time_before_the_resume")
            }
            _ => None,
        }
    }

    pub(super) fn known_commit(&self) -> (Observation<String>, Option<String>) {
        match &self.head_commit {
            Some(sha) => (Observation::Observed(sha.clone()), Some("record".into())),
            None => (Observation::unknown(NO_COMMIT_KNOWN), None),
        }
    }

    /// Where a restore to `boundary` supersedes from: past the places
    /// (`checkpoint.located`) of the checkpoints it keeps that were written
    /// just after it; they say where the kept record ends, not what the
    /// session did after the checkpoint.
    pub(super) fn kept_places_from(&self, boundary: u64) -> u64 {
        let kept: Vec<u64> = (self.checkpoints.values())
            .filter(|cp| !cp.invalid && cp.offset <= boundary)
            .filter_map(|cp| cp.located_at)
            .collect();
        let mut from = boundary;
        while kept.contains(&from) {
            from += 1;
        }
        from
    }

    /// A checkpoint's place was written at `offset`.
    pub(super) fn note_located(&mut self, checkpoint_id: &str, offset: u64) {
        if let Some(cp) = self.checkpoints.get_mut(checkpoint_id) {
            cp.located_at = Some(offset);
        }
    }
}

/// Whether a signal begins new work of the session (a turn, a tool call,
/// a session start): a waiting turn checkpoint is pinned before it.
fn starts_work(signal: &Normalized) -> bool {
    matches!(
        signal.kind,
        SignalKind::PromptSubmitted(_)
            | SignalKind::SessionStarted(_)
            | SignalKind::ToolRequested(_)
            | SignalKind::SubagentStarted(_)
    )
}

/// Whether a signal says the agent resumed the session itself.
fn is_agent_resume(signal: &Normalized) -> bool {
    matches!(&signal.kind, SignalKind::SessionStarted(s) if s.source.as_deref() == Some("resume"))
}

impl SessionProducer {
    /// Before a hook signal of the agent is applied: keep a stale one off
    /// the live line (returns true when it was kept as evidence), and
    /// append `session.resumed` when the signal resumes the session.
    pub(super) fn session_log_before(
        &mut self,
        signal: &Normalized,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) -> bool {
        if let Some(reason) = self.log.stale_reason(signal) {
            let payload = Payload::StaleSignal(StaleSignal {
                adapter_event: trigger.raw.and_then(|r| r.event_name).map(str::to_string),
                reason: reason.to_string(),
                live_incarnation: self.log.incarnation(),
            });
            let draft = Draft {
                tag: "stale".into(),
                ..Draft::native(payload, TurnAttribution::none(), signal.agent_id.clone())
            };
            self.emit(trigger, draft, out);
            return true;
        }
        if starts_work(signal) {
            self.flush_turn_checkpoint(trigger, out);
        }
        self.detect_resume(signal, trigger, out);
        if matches!(signal.kind, SignalKind::SessionEnded(_)) {
            self.log.ended = true;
        }
        false
    }

    /// Whether the signal resumes the session, on the agent's own word: its
    /// `source: "resume"`, or a new prompt after the session ended natively
    /// (the Copilot SDK sends its resumed leg's prompt before its
    /// `sessionStart`). A recorded restore is taken up by that resume and
    /// by nothing else: any other signal is the original process going on.
    /// One resume per leg: the leg's own `sessionStart` after a resume
    /// already recorded is not a second one.
    fn detect_resume(&mut self, signal: &Normalized, trigger: &mut Trigger, out: &mut Vec<Event>) {
        let says_resume = is_agent_resume(signal);
        let is_prompt = matches!(signal.kind, SignalKind::PromptSubmitted(_));
        if says_resume && std::mem::take(&mut self.log.awaiting_start) {
            return;
        }
        // A subagent's spool drains after its parent's: its prompts are
        // no resume of the session. `ended` is the live line's own native
        // end, so a process that still runs never gets here.
        let after_end = self.log.ended && is_prompt && signal.agent_id.is_none();
        if !(says_resume || after_end) {
            if !is_prompt {
                self.log.awaiting_start = false;
            }
            return;
        }
        let evidence = if says_resume {
            "agent_resume"
        } else {
            "prompt_after_end"
        };
        self.resume(signal, evidence, trigger, out);
        self.log.awaiting_start = !matches!(signal.kind, SignalKind::SessionStarted(_));
    }

    fn resume(
        &mut self,
        signal: &Normalized,
        evidence: &str,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let at = self.stamp.next_offset;
        self.log.ended = false;
        let restore = self.log.pending_restore.take();
        let (boundary, superseded) = match &restore {
            Some(r) => (
                r.boundary_offset,
                OffsetRange {
                    from: self.log.kept_places_from(r.boundary_offset),
                    to: r.restore_offset,
                },
            ),
            None => (at, OffsetRange { from: at, to: at }),
        };
        let mut invalidated = Vec::new();
        for (id, cp) in self.log.checkpoints.iter_mut() {
            if !cp.invalid && cp.offset > boundary && !superseded.is_empty() {
                cp.invalid = true;
                invalidated.push(id.clone());
            }
        }
        // A span requested in the superseded range ends here, salvaged by
        // the resume: the live line never reaches it, and every span ends.
        // So does a tool call the original process made after the restore
        // and has not finished: its end can only come as stale evidence.
        let mut gone = self.log.effects.forget_open(superseded);
        if let Some(r) = &restore {
            let since_restore = OffsetRange {
                from: r.restore_offset,
                to: at,
            };
            gone.extend(self.log.effects.forget_open_tools(since_restore));
        }
        for id in gone {
            let Some(span) = self
                .pairer
                .spans
                .take_by_request(&crate::contract::EventId(id))
            else {
                continue;
            };
            let reason = match span.kind {
                super::spans::SpanKind::Tool => crate::contract::RecoveryReason::ExplicitEndSalvage,
                super::spans::SpanKind::Command => {
                    crate::contract::RecoveryReason::CommandCompletionNotObserved
                }
            };
            let (pairer, mut em) = self.pairing();
            pairer.recover_span(&mut em, span, reason, trigger, out);
        }
        self.record.locate.forget(&invalidated);
        self.record.locate.resumed();
        self.log.resumes += 1;
        let live = std::mem::take(&mut self.log.live_turns);
        self.log.stale_turns.extend(live);
        self.log.resumed_at_unix_ns =
            (signal.time_source == TimeSource::Agent).then_some(signal.time_unix_ns);
        let payload = Payload::SessionResumed(SessionResumed {
            boundary_offset: boundary,
            superseded,
            invalidated_checkpoints: invalidated,
            incarnation: self.log.incarnation(),
            checkpoint_id: restore.as_ref().map(|r| r.checkpoint_id.clone()),
            evidence: if restore.is_some() {
                "restore"
            } else {
                evidence
            }
            .into(),
        });
        let draft = Draft {
            provenance: super::emit::derived_high(),
            tag: "resumed".into(),
            ..Draft::native(payload, TurnAttribution::none(), None)
        };
        self.emit(trigger, draft, out);
    }

    /// After a signal's events were emitted: learn from them, and hold a
    /// checkpoint for a natively completed turn until the turn's evidence
    /// is in (see [`Self::flush_turn_checkpoint`]).
    pub(super) fn session_log_after(&mut self, trigger: &mut Trigger, out: &mut Vec<Event>) {
        let turn = out.iter().rev().find_map(|e| match &e.payload {
            Payload::TurnCompleted(_)
                if e.provenance.attestation == Attestation::Native && e.agent_id.is_none() =>
            {
                Some(PendingTurn {
                    turn: e.turn.clone(),
                    time_unix_ns: e.time_unix_ns,
                    time_source: e.time_source,
                })
            }
            _ => None,
        });
        if let Some(turn) = turn {
            self.flush_turn_checkpoint(trigger, out);
            self.log.pending_turn = Some(turn);
        }
        self.log.observe(out);
    }

    /// Pin the checkpoint of the last natively completed turn, if one is
    /// waiting. It waits past the turn's boundary hook so that what closes
    /// the turn (the session's end, the agent's own record of the turn,
    /// read after the hooks, with the head commit it names) is below it;
    /// it is pinned before the next turn's work or at the end of the
    /// finalize run (`tick`), whichever comes first.
    pub(super) fn flush_turn_checkpoint(&mut self, trigger: &mut Trigger, out: &mut Vec<Event>) {
        let Some(PendingTurn { turn, .. }) = self.log.pending_turn.take() else {
            return;
        };
        let id = match &turn.turn_id {
            Some(t) => format!("turn:{t}"),
            None => format!("turn-at:{}", self.stamp.next_offset),
        };
        if self.log.checkpoints.contains_key(&id) {
            return;
        }
        let (commit, commit_source) = self.log.known_commit();
        let spec = CheckpointSpec {
            id,
            origin: "turn",
            commit,
            commit_source,
            extra: Vec::new(),
            provenance: super::emit::derived_high(),
            turn,
        };
        self.pin_checkpoint(spec, trigger, out);
    }

    /// At the end of a finalize run: pin a waiting turn checkpoint.
    pub(super) fn session_log_tick(&mut self) -> Vec<Event> {
        let Some(pending) = &self.log.pending_turn else {
            return Vec::new();
        };
        let key = format!(
            "checkpoint:{}:{}",
            pending.turn.turn_id.as_deref().unwrap_or("-"),
            self.stamp.next_offset
        );
        let mut trigger = Trigger {
            key: std::borrow::Cow::Owned(key),
            raw: None,
            time_unix_ns: pending.time_unix_ns,
            time_source: pending.time_source,
            clock: None,
            emitted: 0,
        };
        let mut out = Vec::new();
        self.flush_turn_checkpoint(&mut trigger, &mut out);
        out
    }

    fn pin_checkpoint(
        &mut self,
        spec: CheckpointSpec,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let offset = self.stamp.next_offset + 1;
        let mut effects = self.log.effects.take_closed();
        effects.extend(spec.extra);
        let pinned = PinnedCheckpoint {
            offset,
            invalid: false,
            located_at: None,
        };
        self.log.checkpoints.insert(spec.id.clone(), pinned);
        let id = spec.id.clone();
        let payload = Payload::CheckpointRecorded(CheckpointRecorded {
            checkpoint_id: spec.id,
            origin: spec.origin.into(),
            offset,
            commit: spec.commit,
            commit_source: spec.commit_source,
            effects,
            cwd: self.log.cwd.clone().or_else(|| self.log.cwd_record.clone()),
        });
        let draft = Draft {
            provenance: spec.provenance,
            tag: "checkpoint".into(),
            ..Draft::native(payload, spec.turn, None)
        };
        let event_id = self.emit(trigger, draft, out).clone();
        self.record.locate.pin(id, event_id);
        self.emit_places(trigger, out);
    }

    /// `harnery checkpoint`: pin one, unless its id is taken.
    pub(super) fn on_checkpoint_requested(
        &mut self,
        request: CheckpointPayload,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        self.flush_turn_checkpoint(trigger, out);
        let turn = self.turns.speaker(None, None).turn;
        if let Some(first) = self.log.checkpoints.get(&request.checkpoint_id) {
            let detail = format!(
                "checkpoint {:?} is already pinned at offset {}; the first one stands",
                request.checkpoint_id, first.offset
            );
            self.emit_health(CHECKPOINT_ID_TAKEN, detail, turn, trigger, out);
            return;
        }
        let (commit, commit_source) = match request.commit {
            Some(sha) => (Observation::Observed(sha), Some("operator".into())),
            None => self.log.known_commit(),
        };
        let extra = request
            .effects
            .into_iter()
            .map(|e| Effect {
                kind: e.kind,
                reference: e.reference,
                tool_name: None,
                tool_call_id: None,
                outcome: None,
                paths: Vec::new(),
                command: None,
                exit_code: None,
            })
            .collect();
        let spec = CheckpointSpec {
            id: request.checkpoint_id,
            origin: "operator",
            commit,
            commit_source,
            extra,
            provenance: Provenance::NATIVE,
            turn,
        };
        self.pin_checkpoint(spec, trigger, out);
    }

    /// `harnery restore --record`: record it; the agent's next resume
    /// takes it up.
    pub(super) fn on_restore_requested(
        &mut self,
        request: RestorePayload,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        self.flush_turn_checkpoint(trigger, out);
        let turn = TurnAttribution::none();
        let known = self.log.checkpoints.get(&request.checkpoint_id);
        if known.is_none_or(|cp| cp.invalid || cp.offset != request.boundary_offset) {
            let detail = format!(
                "restore from checkpoint {:?} at offset {}: the session has no valid checkpoint there",
                request.checkpoint_id, request.boundary_offset
            );
            self.emit_health(RESTORE_CHECKPOINT_UNKNOWN, detail, turn, trigger, out);
            return;
        }
        let restore_offset = self.stamp.next_offset;
        let payload = Payload::RestoreRecorded(RestoreRecorded {
            checkpoint_id: request.checkpoint_id.clone(),
            boundary_offset: request.boundary_offset,
        });
        self.emit(trigger, Draft::native(payload, turn, None), out);
        self.log.pending_restore = Some(PendingRestore {
            checkpoint_id: request.checkpoint_id,
            boundary_offset: request.boundary_offset,
            restore_offset,
        });
    }

    fn emit_health(
        &mut self,
        code: &str,
        detail: String,
        turn: TurnAttribution,
        trigger: &mut Trigger,
        out: &mut Vec<Event>,
    ) {
        let payload = Payload::HealthCondition(HealthCondition {
            code: code.into(),
            detail,
        });
        let draft = Draft {
            provenance: super::emit::derived_high(),
            tag: code.into(),
            ..Draft::native(payload, turn, None)
        };
        self.emit(trigger, draft, out);
    }
}

/// What a new checkpoint holds besides the effects producer state kept.
struct CheckpointSpec {
    id: String,
    origin: &'static str,
    commit: Observation<String>,
    commit_source: Option<String>,
    extra: Vec<Effect>,
    provenance: Provenance,
    turn: TurnAttribution,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_incarnation_counts_from_one_and_an_unused_book_is_not_stored() {
        let mut book = SessionLogBook::default();
        assert!(book.is_unused());
        assert_eq!(book.incarnation(), 1);
        book.resumes = 2;
        assert_eq!(book.incarnation(), 3);
        assert!(!book.is_unused());
    }
}
