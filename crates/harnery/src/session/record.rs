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
//!
//! Copilot's record numbers its turns per interaction (`turnId` 0, 1, …
//! in each), a namespace the hooks do not share; its hooks' turns are
//! stamped by producer state from `userPromptSubmitted` to `agentStop`.
//! The two meet at the prompt: a record `user.message` whose text is that
//! of a hook prompt not yet met (the oldest first) opens that prompt's
//! stamped turn for the lines of the same agent that follow, until its next
//! `user.message`. A message that meets no prompt (its hook was lost)
//! leaves the lines unattributed rather than guessed.
//!
//! The agent writes a call to its record before it runs the hook that
//! announces it (Claude Code's `tool_use` line precedes `PreToolUse` by a
//! few tens of milliseconds), so a finalizer that reads the record just
//! then would find no hook request yet and report a loss that is not one.
//! A call that joins nothing while its line is younger than [`SETTLE_NS`]
//! is therefore held, and joined again (or recorded without a span) once
//! it is older: at the session's next record chunk (the finalizer spools an
//! empty one for a session holding calls), at the call's own result, or at
//! the end of its turn.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::SessionProducer;
use super::emit::{Draft, Trigger};
use crate::agents::harnery::{RecordChunk, RecordStamp};
use crate::agents::record::{RecordItem, RecordLine, RecordedCall, RecordedResult};
use crate::contract::{
    AdapterId, Attestation, Confidence, Event, EventId, Payload, Provenance, RecordAt,
    RecordProblem, RecoveryReason, SessionMetadata, SessionTitled, SignalUnrecognized, TimeSource,
    ToolRecorded, TurnAttribution, UsageReported,
};

/// A subagent's own record (Claude Code names it on `SubagentStop`),
/// followed beside the session's from a cursor of its own until a pass
/// reads it to its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SubagentRecord {
    pub agent_id: String,
    pub path: String,
    #[serde(default)]
    pub cursor: u64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
}

/// Hook tool requests remembered for joining.
const REMEMBERED_REQUESTS: usize = 256;
/// Message ids remembered for usage de-duplication.
const REMEMBERED_USAGE: usize = 64;
/// Hook prompts remembered for meeting the record's user messages.
const REMEMBERED_PROMPTS: usize = 16;
/// Claude Code record lines remembered for their turn (a line's parent is
/// nearly always one of the few lines just before it).
const REMEMBERED_LINES: usize = 128;
/// Agents whose current interaction is remembered.
const REMEMBERED_AGENTS: usize = 16;
/// How long a record call may wait for the hook request it joins.
pub(crate) const SETTLE_NS: i64 = 30_000_000_000;
/// How long after the session's first prompt an absent record is still
/// pending rather than missing.
pub(crate) const RECORD_GRACE_NS: i64 = 30_000_000_000;
/// Subagent records followed at once; past this the oldest is given up
/// (each is read to its end by the pass after its subagent stopped, so
/// only a session that outruns the finalizer by this many subagents
/// loses one, and it is reported).
const FOLLOWED_SUBAGENTS: usize = 64;

/// The record as one session follows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordFollow {
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
    /// The model the record last named in its metadata, for a usage line
    /// that names none (Codex's usage lines; its `turn_context` names the
    /// turn's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// The record's own calls not yet finished, for naming their results
    /// and for the turn-end sweep.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    calls: VecDeque<CallMemo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    subagents: Vec<SubagentRecord>,
    /// Calls the record copied from the session that made them (a fork's
    /// copy): their results are that session's, not this one's.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    copied: VecDeque<String>,
    /// Record calls that joined no hook request yet (see the module doc).
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    held: VecDeque<HeldCall>,
    /// Copilot hook prompts the record has not met yet: blake3 of the
    /// prompt text, and the turn it started.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    prompts: VecDeque<(String, TurnAttribution)>,
    /// The turn each agent's record lines belong to, from the prompt its
    /// last user message met (agent key "" is the main agent).
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    interactions: VecDeque<(String, TurnAttribution)>,
    /// When the session's first prompt was ingested: before it (and for a
    /// grace after it) an absent record is pending, not missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompted_ns: Option<i64>,
    /// Claude Code's recent record lines (`uuid`) and the prompt
    /// (`promptId`) each descends from, newest last: an assistant line
    /// carries no `promptId` and takes its turn from its `parentUuid`.
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    lineage: VecDeque<(String, String)>,
    /// The `promptId` the record last named, for a line whose chain leads
    /// to no line remembered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_prompt: Option<String>,
    /// The agent's running cost total per model, as last reported (Claude
    /// Code's `cost-state` lines), for recording what it grew by.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    cost_totals: std::collections::BTreeMap<String, f64>,
    /// Checkpoints waiting for their place in the record (generation 7),
    /// carried across an epoch advance with the cursor.
    #[serde(default, skip_serializing_if = "super::locate::Locator::is_unused")]
    pub(super) locate: super::locate::Locator,
    /// The title from the agent's record the session last took (cleaned),
    /// so the same title is not taken twice (generation 11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The record file (identity, size, modification time) as the chunk
    /// that last read it to its end found it, while the cursor is there:
    /// the finalizer does not open a record that still is so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<RecordStamp>,
}

fn prompt_digest(text: &str) -> String {
    blake3::hash(text.as_bytes()).to_hex().to_string()
}

/// A record call waiting for the hook request it joins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct HeldCall {
    tool_call_id: String,
    tool_name: String,
    input_digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    /// The turn its line's events are attributed to.
    turn: TurnAttribution,
    record: RecordAt,
    /// The line's time (the agent's, else when it was read).
    time_unix_ns: i64,
    time_source: TimeSource,
}

impl HeldCall {
    fn call(&self) -> RecordedCall {
        RecordedCall {
            tool_call_id: self.tool_call_id.clone(),
            tool_name: self.tool_name.clone(),
            input_digest: self.input_digest.clone(),
            turn_id: self.turn_id.clone(),
        }
    }
}

/// Which held calls to settle now.
enum Settle<'a> {
    /// Those older than [`SETTLE_NS`] at this time.
    DueAt(i64),
    /// This call (its result is here).
    Call(&'a str),
    /// This agent's calls of this turn (the turn is over).
    Turn(Option<&'a str>, &'a str),
    /// All of them.
    All,
}

/// A call the record started and has not yet finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "CallMemoStored")]
struct CallMemo {
    id: String,
    name: String,
    /// The agent that made it (a Copilot subagent numbers its own turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    /// The record's turn id for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn: Option<String>,
}

/// A [`CallMemo`] as stored: the first generation-2 builds kept only the
/// pair (id, tool name).
#[derive(Deserialize)]
#[serde(untagged)]
enum CallMemoStored {
    Pair(String, String),
    Full {
        id: String,
        name: String,
        #[serde(default)]
        agent: Option<String>,
        #[serde(default)]
        turn: Option<String>,
    },
}

impl From<CallMemoStored> for CallMemo {
    fn from(stored: CallMemoStored) -> CallMemo {
        match stored {
            CallMemoStored::Pair(id, name) => CallMemo {
                id,
                name,
                agent: None,
                turn: None,
            },
            CallMemoStored::Full {
                id,
                name,
                agent,
                turn,
            } => CallMemo {
                id,
                name,
                agent,
                turn,
            },
        }
    }
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
    /// Until any of the record was read, the record a hook names is the
    /// one followed (a session carried from an epoch whose record was
    /// elsewhere moves on to it).
    pub(super) fn unread(&self) -> bool {
        self.path.is_none() || self.cursor == 0
    }

    /// Nothing known of a record yet (state from before generation 2
    /// writes back as it was).
    pub(crate) fn is_unused(&self) -> bool {
        *self == RecordFollow::default()
    }

    /// What an epoch advance carries into the new epoch: where the record
    /// is and how far it was read, the usage already counted, the turn
    /// lineage and metadata; not the joins in progress (their hook spans
    /// are in the archived epoch).
    pub(crate) fn carried(self) -> RecordFollow {
        RecordFollow {
            requests: VecDeque::new(),
            calls: VecDeque::new(),
            held: VecDeque::new(),
            ..self
        }
    }

    /// Follow a subagent's own record too. Returns the record given up to
    /// make room, if one was.
    pub(crate) fn follow_subagent(
        &mut self,
        agent_id: String,
        path: String,
    ) -> Option<SubagentRecord> {
        let known = self.path.as_deref() == Some(path.as_str())
            || self.subagents.iter().any(|s| s.path == path);
        if known {
            return None;
        }
        let given_up =
            (self.subagents.len() == FOLLOWED_SUBAGENTS).then(|| self.subagents.remove(0));
        self.subagents.push(SubagentRecord {
            agent_id,
            path,
            ..SubagentRecord::default()
        });
        given_up
    }

    fn subagent(&self, path: &str) -> Option<usize> {
        self.subagents.iter().position(|s| s.path == path)
    }

    /// Remember a Copilot hook prompt that started `turn`, for the record
    /// user message that says the same.
    pub(crate) fn remember_prompt(&mut self, text: &str, turn: TurnAttribution) {
        if self.prompts.len() == REMEMBERED_PROMPTS {
            self.prompts.pop_front();
        }
        self.prompts.push_back((prompt_digest(text), turn));
    }

    /// A record user message of `agent`: the turn of the oldest hook
    /// prompt with its text starts this agent's interaction (none met: the
    /// agent's lines are unattributed until one is).
    fn enter_interaction(&mut self, agent: Option<&str>, text: Option<&str>) {
        let key = agent.unwrap_or_default();
        self.interactions.retain(|(a, _)| a != key);
        let digest = text.map(prompt_digest);
        let met = self
            .prompts
            .iter()
            .position(|(d, _)| Some(d) == digest.as_ref());
        let Some(met) = met else {
            return;
        };
        let (_, turn) = self.prompts.remove(met).expect("found just now");
        if self.interactions.len() == REMEMBERED_AGENTS {
            self.interactions.pop_front();
        }
        self.interactions.push_back((key.to_string(), turn));
    }

    /// The turn `agent`'s record lines belong to now.
    fn interaction_turn(&self, agent: Option<&str>) -> TurnAttribution {
        let key = agent.unwrap_or_default();
        self.interactions
            .iter()
            .find(|(a, _)| a == key)
            .map_or_else(TurnAttribution::none, |(_, turn)| turn.clone())
    }

    /// Remember the hook tool requests among `events` for joining,
    /// whatever the record's state (a record not written yet, or one that
    /// cannot be read now, may be read later); bounded.
    pub(crate) fn remember_requests(&mut self, events: &[Event]) {
        for event in events {
            if matches!(event.payload, Payload::PromptSubmitted(_)) && self.prompted_ns.is_none() {
                self.prompted_ns = Some(event.time_unix_ns);
            }
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
        let in_order = !crate::agents::agent(adapter).capability().tool_call_ids;
        let found = self.by_call(&call.tool_call_id).or_else(|| {
            if !in_order {
                return None;
            }
            self.requests.iter().position(|r| {
                r.joined.is_none()
                    && r.tool_name == call.tool_name
                    && r.input_digest == call.input_digest
            })
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
        self.calls.retain(|c| c.id != call_id);
    }

    fn remember_call(&mut self, call: &RecordedCall, agent: Option<&str>, turn: Option<&str>) {
        if self.calls.len() == REMEMBERED_REQUESTS {
            self.calls.pop_front();
        }
        self.calls.push_back(CallMemo {
            id: call.tool_call_id.clone(),
            name: call.tool_name.clone(),
            agent: agent.map(str::to_string),
            turn: turn.map(str::to_string),
        });
    }

    pub(super) fn note_copied(&mut self, call_id: String) {
        if self.copied.len() == REMEMBERED_REQUESTS {
            self.copied.pop_front();
        }
        self.copied.push_back(call_id);
    }

    pub(super) fn copied(&self, call_id: &str) -> bool {
        self.copied.iter().any(|c| c == call_id)
    }

    fn call_name(&self, call_id: &str) -> Option<String> {
        self.calls
            .iter()
            .rev()
            .find(|c| c.id == call_id)
            .map(|c| c.name.clone())
    }

    /// The hook spans of the record's calls that `agent` started in
    /// `turn` and never finished: the record's turn ended without them.
    /// They are forgotten as calls; a result the record still writes for
    /// one finds its span through the join.
    fn unfinished_in_turn(&mut self, agent: Option<&str>, turn: &str) -> Vec<EventId> {
        let mut spans = Vec::new();
        let requests = &self.requests;
        self.calls.retain(|c| {
            let in_turn = c.agent.as_deref() == agent && c.turn.as_deref() == Some(turn);
            if in_turn
                && let Some(r) = requests
                    .iter()
                    .find(|r| r.joined.as_deref() == Some(c.id.as_str()))
            {
                spans.push(r.event_id.clone());
            }
            !in_turn
        });
        spans
    }

    /// The prompt a Claude Code record line belongs to: its own
    /// `promptId`, else that of the line its `parentUuid` names, else the
    /// one the record last named. Remembered under the line's `uuid` for
    /// the lines that follow on from it, so the answer depends only on the
    /// record, never on when finalize read it.
    fn line_prompt(&mut self, line: &RecordLine) -> Option<String> {
        let prompt = line
            .native_turn_id
            .clone()
            .or_else(|| {
                let parent = line.parent_uuid.as_deref()?;
                self.lineage
                    .iter()
                    .rev()
                    .find(|(u, _)| **u == *parent)
                    .map(|(_, p)| p.clone())
            })
            .or_else(|| self.last_prompt.clone());
        if line.native_turn_id.is_some() {
            self.last_prompt = line.native_turn_id.clone();
        }
        if let (Some(uuid), Some(p)) = (&line.uuid, &prompt) {
            if self.lineage.len() == REMEMBERED_LINES {
                self.lineage.pop_front();
            }
            self.lineage.push_back((uuid.to_string(), p.clone()));
        }
        prompt
    }

    /// A running cost total's growth since the last total of its model, as
    /// a cost-only usage report (`None`: no cost, or it did not grow).
    fn cost_growth(&mut self, total: UsageReported) -> Option<UsageReported> {
        let model = total.model.clone()?;
        let now: f64 = total.cost.as_ref()?.as_str().parse().ok()?;
        if !now.is_finite() {
            return None;
        }
        let before = self.cost_totals.insert(model.clone(), now).unwrap_or(0.0);
        // A total below the last one starts a new count (a new process).
        let grew = if now >= before { now - before } else { now };
        if grew <= 0.0 {
            return None;
        }
        let text = format!("{grew:.10}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        Some(UsageReported {
            record: total.record,
            message_id: None,
            model: Some(model),
            input_tokens: None,
            output_tokens: None,
            cache_read_tokens: None,
            cache_write_tokens: None,
            cost: Some(crate::contract::Json::parse(text).ok()?),
            duration_ms: None,
            time_to_first_token_ms: None,
            reasoning_tokens: None,
            raw: None,
            copied_from_session: None,
        })
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

    /// Remember the model `m` names, if it names one.
    fn note_model(&mut self, m: &SessionMetadata) {
        if let Some(model) = &m.model {
            self.model = Some(model.clone());
        }
    }

    /// The model the record last named.
    fn last_model(&self) -> Option<String> {
        self.model.clone()
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

#[path = "record_apply.rs"]
mod apply;

#[path = "record_cursor.rs"]
mod cursor;
pub(crate) use cursor::RecordCursor;

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
