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

use super::content::{TEXT_BYTES, cut};
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
                    // A message's texts joined, cut as one text is.
                    if out.len() <= TEXT_BYTES {
                        if !out.is_empty() {
                            out.push('\n');
                        }
                        out.push_str(words);
                        *out = cut(out);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{MessageAssistant, Provenance, RecordAt, UsageReported};
    use crate::report::testkit::Script;

    fn at() -> RecordAt {
        RecordAt {
            path: "t.jsonl".into(),
            offset: 0,
        }
    }

    fn usage(message: Option<&str>, input: u64, copied: bool) -> Payload {
        Payload::UsageReported(UsageReported {
            record: at(),
            message_id: message.map(String::from),
            model: Some("m".into()),
            input_tokens: Some(input),
            output_tokens: Some(1),
            cache_read_tokens: None,
            cache_write_tokens: None,
            cost: None,
            duration_ms: Some(500),
            time_to_first_token_ms: None,
            reasoning_tokens: None,
            raw: None,
            copied_from_session: copied.then(|| "parent".into()),
        })
    }

    fn message(id: &str) -> Payload {
        Payload::MessageAssistant(MessageAssistant {
            record: at(),
            message_id: Some(id.into()),
            model: Some("m".into()),
            text: Some("answer".into()),
            tool_call_ids: Vec::new(),
        })
    }

    /// Every call of `script`'s events, each event with `words` if given.
    fn calls(script: &Script, words: &[Option<&str>]) -> Vec<ModelCall> {
        let mut calls = ModelCalls::default();
        let mut done = Vec::new();
        for (i, e) in script.events().iter().enumerate() {
            let w = words.get(i).copied().flatten();
            calls.take(e, w, None, &mut done);
        }
        done.extend(calls.finish());
        done
    }

    #[test]
    fn a_message_id_is_one_call_and_its_reports_add_up() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.push(10, usage(Some("a"), 3, false), Provenance::NATIVE);
        s.push(20, usage(Some("a"), 4, false), Provenance::NATIVE);
        s.push(30, usage(None, 5, false), Provenance::NATIVE);
        s.push(40, usage(None, 6, false), Provenance::NATIVE);
        s.push(50, usage(Some("b"), 100, true), Provenance::NATIVE);
        let got = calls(&s, &[]);
        let inputs: Vec<_> = got.iter().map(|c| c.tokens.input).collect();
        assert_eq!(inputs, [Some(7), Some(5), Some(6)], "{got:?}");
        // From the first report's time less its duration, to the last's.
        let a = &got[0];
        assert_eq!(
            (a.start_unix_ns, a.end_unix_ns),
            (ms(10) - 500_000_000, ms(20))
        );
    }

    use crate::report::testkit::ms;

    #[test]
    fn a_message_is_a_call_only_with_words_and_a_turn_ends_its_calls() {
        let mut s = Script::new("s");
        s.turn("t1");
        s.push(10, message("a"), Provenance::NATIVE);
        s.push(20, usage(Some("a"), 3, false), Provenance::NATIVE);
        s.push(30, message("c"), Provenance::NATIVE);
        s.turn("t2");
        s.push(40, usage(Some("d"), 1, false), Provenance::NATIVE);
        // No words: the messages are no calls.
        let bare = calls(&s, &[]);
        let ids: Vec<_> = bare.iter().map(|c| c.message_id.as_deref()).collect();
        assert_eq!(ids, [Some("a"), Some("d")]);
        assert!(bare.iter().all(|c| c.output.is_none()));
        // Words: the message before its usage opens the call and gives it
        // its text; a message without usage is a call of its own.
        let words = [Some("first"), None, Some("second")];
        let worded = calls(&s, &words);
        let ids: Vec<_> = worded.iter().map(|c| c.message_id.as_deref()).collect();
        assert_eq!(ids, [Some("a"), Some("c"), Some("d")]);
        assert_eq!(worded[0].output.as_deref(), Some("first"));
        assert_eq!(worded[0].tokens.input, Some(3));
        assert_eq!(worded[0].turn_id.as_deref(), Some("t1"));
        assert_eq!(worded[2].turn_id.as_deref(), Some("t2"));
    }
}
