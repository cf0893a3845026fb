//! Model calls as a trace shows them: one `chat {model}` span per call the
//! agent's record reported usage for (`usage.reported`; one call per
//! message id, a report without one a call of its own), under the call's
//! turn. Where spans carry words, an assistant message (`message.assistant`)
//! gives its call its text, and a message without usage is a call too.
//!
//! A turn's calls are held until an event of another turn arrives (or the
//! session ends): a call's usage and its message text come from the same
//! record lines, in either order, and a turn's prompt rides its first
//! call. What is held is one turn's calls, never the session's.

use crate::contract::{Event, Payload};
use crate::ledger::ChainMark;
use crate::report::usage::Tokens;
use crate::report::usage_kinds::normalized;

/// One model call, as its events have told it so far.
#[derive(Debug)]
pub(crate) struct ModelCall {
    pub message_id: Option<String>,
    pub model: Option<String>,
    pub tokens: Tokens,
    pub turn_id: Option<String>,
    pub start_unix_ns: i64,
    pub end_unix_ns: i64,
    /// The first event of the call: its id and place in the chain.
    pub event_id: String,
    pub mark: Option<ChainMark>,
    /// The turn's prompt (first call of the turn) and the call's text.
    pub input: Option<String>,
    pub output: Option<String>,
}

/// A session's model calls, a turn at a time.
#[derive(Default)]
pub(crate) struct ModelCalls {
    held: Vec<ModelCall>,
    /// The turn the held calls belong to.
    turn: Option<String>,
    /// A prompt not yet given to a call, with its turn.
    prompt: Option<(Option<String>, String)>,
}

impl ModelCalls {
    /// Take the session's next event (with its words, if spans carry
    /// them); the calls of a turn that has ended go to `done`.
    pub(crate) fn take(
        &mut self,
        event: &Event,
        words: Option<&str>,
        mark: Option<ChainMark>,
        done: &mut Vec<ModelCall>,
    ) {
        let turn = event.turn.turn_id.as_ref();
        if turn.is_some() && turn != self.turn.as_ref() {
            done.append(&mut self.held);
            self.turn = turn.cloned();
        }
        let (message_id, model) = match &event.payload {
            Payload::PromptSubmitted(_) => {
                if let Some(words) = words {
                    self.prompt = Some((turn.cloned(), words.to_string()));
                }
                return;
            }
            // Another session's call, copied here: that session's trace
            // has it (as `harnery usage` counts it there).
            Payload::UsageReported(u) if u.copied_from_session.is_some() => return,
            Payload::UsageReported(u) => (&u.message_id, &u.model),
            // A message's text needs a call only where spans carry words;
            // else a call is its usage (what a ledger's trace chunks keep
            // of a message is its time alone).
            Payload::MessageAssistant(m) if words.is_some() => (&m.message_id, &m.model),
            _ => return,
        };
        let call = self.call_for(event, message_id.as_deref(), mark);
        if call.model.is_none() {
            call.model.clone_from(model);
        }
        let t = event.time_unix_ns;
        call.start_unix_ns = call.start_unix_ns.min(t);
        call.end_unix_ns = call.end_unix_ns.max(t);
        match &event.payload {
            Payload::UsageReported(u) => {
                let u = normalized(event.session.adapter, u);
                call.tokens.add(&u);
                if let Some(ms) = u.duration_ms {
                    let ns = i64::try_from(ms.saturating_mul(1_000_000)).unwrap_or(i64::MAX);
                    call.start_unix_ns = call.start_unix_ns.min(t.saturating_sub(ns));
                }
            }
            _ => {
                if let Some(words) = words {
                    let out = call.output.get_or_insert_with(String::new);
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(words);
                }
            }
        }
    }

    /// The held call of `message_id`, or a new one (a call without a
    /// message id is always new).
    fn call_for(
        &mut self,
        event: &Event,
        message_id: Option<&str>,
        mark: Option<ChainMark>,
    ) -> &mut ModelCall {
        let found = message_id.and_then(|id| {
            self.held
                .iter()
                .position(|c| c.message_id.as_deref() == Some(id))
        });
        if let Some(i) = found {
            return &mut self.held[i];
        }
        let turn = event.turn.turn_id.clone();
        let input = match &self.prompt {
            Some((t, _)) if *t == turn => self.prompt.take().map(|(_, p)| p),
            _ => None,
        };
        self.held.push(ModelCall {
            message_id: message_id.map(str::to_string),
            model: None,
            tokens: Tokens::default(),
            turn_id: turn,
            start_unix_ns: event.time_unix_ns,
            end_unix_ns: event.time_unix_ns,
            event_id: event.id.as_str().to_string(),
            mark,
            input,
            output: None,
        });
        self.held.last_mut().expect("just pushed")
    }

    /// The session has ended: every call still held.
    pub(crate) fn finish(self) -> Vec<ModelCall> {
        self.held
    }
}
