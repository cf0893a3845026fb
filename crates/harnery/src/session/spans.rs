//! Span bookkeeping: open spans in the order they opened, and a bounded
//! memory of closed ones (to recognise late evidence and repeated posts).
//!
//! A span ends in exactly one of three states: closed natively, recovered
//! with a reason (its terminal is a derived event), or still open awaiting
//! salvage. Closed spans are remembered only while their turn is the current
//! one or one of the two before it; spans without a turn keep a short,
//! fixed-size memory of their own.

use std::collections::{BTreeSet, VecDeque};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::turns::TurnBook;
use crate::clock::ClockSample;
use crate::contract::{EventId, TurnAttribution, TurnSource};

/// Closed spans without a turn that are remembered, newest last.
const UNATTRIBUTED_MEMORY: usize = 32;

/// Tool call or `harnery exec` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    Tool,
    Command,
}

/// One open span, as the producer holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenSpan {
    pub kind: SpanKind,
    pub request_event_id: EventId,
    /// Tool name, or the command's `argv[0]`.
    pub name: String,
    /// Claude Code `tool_use_id`, or the `harnery exec` command id.
    pub call_id: Option<String>,
    /// Tool name + input digest: the pairing key where there is no call id.
    pub pair_key: String,
    pub turn: TurnAttribution,
    pub agent_id: Option<String>,
    pub requested_unix_ns: i64,
    pub requested_clock: Option<ClockSample>,
}

/// How a closed span ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Closure {
    Native,
    /// Recovered by the derived terminal with this id; `late_seen` once a
    /// native completion arrived after it.
    Recovered {
        terminal: EventId,
        late_seen: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ClosedSpan {
    pub span: OpenSpan,
    pub closure: Closure,
    /// The digests of the strings its native completion's content held
    /// (see [`said_digests`]), so that a batch listing the same text adds
    /// no second copy. Empty for older states and other closures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub said: Vec<String>,
}

/// At most this many strings of a completion's content are remembered.
const SAID_STRINGS: usize = 8;

/// Content past this many bytes is not read for its strings (a batch
/// listing the same text then keeps its own copy).
const SAID_CONTENT_BYTES: usize = 64 * 1024;

/// The digests of the first [`SAID_STRINGS`] non-blank strings of a
/// completion's `content`, each trimmed: 16 hex digits of blake3.
///
/// The strings are those a walk over the parsed value meets, in its
/// order: canonical text holds an object's members sorted by key, no key
/// twice, just as a parsed map does, so the text is walked as it stands,
/// without building the value (a map node and a string each). Text that
/// does not parse has none.
pub(crate) fn said_digests(content: Option<&crate::contract::Json>) -> Vec<String> {
    let Some(content) = content.filter(|c| c.as_str().len() <= SAID_CONTENT_BYTES) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut de = serde_json::Deserializer::from_str(content.as_str());
    match Strings(&mut out)
        .deserialize(&mut de)
        .and_then(|()| de.end())
    {
        Ok(()) => out,
        Err(_) => Vec::new(),
    }
}

/// The digest [`said_digests`] keeps of one text.
pub(crate) fn said_digest(text: &str) -> String {
    blake3::hash(text.trim().as_bytes()).to_hex()[..16].to_string()
}

/// Reads one JSON value, keeping the digests of its non-blank strings
/// (not its keys) while fewer than [`SAID_STRINGS`] are kept.
struct Strings<'a>(&'a mut Vec<String>);

impl<'de> DeserializeSeed<'de> for Strings<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strings<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<(), E> {
        if self.0.len() < SAID_STRINGS && !text.trim().is_empty() {
            self.0.push(said_digest(text));
        }
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items.next_element_seed(Strings(&mut *self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        while members.next_key::<IgnoredAny>()?.is_some() {
            members.next_value_seed(Strings(&mut *self.0))?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct SpanBook {
    pub open: Vec<OpenSpan>,
    closed: VecDeque<ClosedSpan>,
    pub closed_native: u64,
    pub recovered: u64,
}

impl SpanBook {
    /// Drop the turn attribution of every open span that has one (state
    /// of another capability profile); returns how many lost one.
    pub(super) fn forget_turns(&mut self) -> usize {
        let mut distrusted = 0;
        for span in &mut self.open {
            if span.turn.source != TurnSource::None {
                span.turn = TurnAttribution::none();
                distrusted += 1;
            }
        }
        distrusted
    }

    pub(crate) fn open_count(&self) -> usize {
        self.open.len()
    }

    pub(crate) fn push_open(&mut self, span: OpenSpan) {
        self.open.push(span);
    }

    /// Take the open span with this call id.
    pub(crate) fn take_by_call_id(&mut self, kind: SpanKind, call_id: &str) -> Option<OpenSpan> {
        let at = self
            .open
            .iter()
            .position(|s| s.kind == kind && s.call_id.as_deref() == Some(call_id))?;
        Some(self.open.remove(at))
    }

    /// Take the oldest open span with this pairing key (and no call id).
    pub(crate) fn take_by_pair_key(&mut self, pair_key: &str) -> Option<OpenSpan> {
        let at = self.open.iter().position(|s| {
            s.kind == SpanKind::Tool && s.call_id.is_none() && s.pair_key == pair_key
        })?;
        Some(self.open.remove(at))
    }

    /// Take the open span whose request had this id.
    pub(crate) fn take_by_request(&mut self, request: &EventId) -> Option<OpenSpan> {
        let at = self
            .open
            .iter()
            .position(|s| &s.request_event_id == request)?;
        Some(self.open.remove(at))
    }

    /// Whether any span, open or remembered, has this call id.
    pub(crate) fn knows_call_id(&self, call_id: &str) -> bool {
        self.request_of_call(call_id).is_some()
    }

    /// The request of the span, open or remembered, with this call id.
    pub(crate) fn request_of_call(&self, call_id: &str) -> Option<&EventId> {
        let matches = |s: &&OpenSpan| s.call_id.as_deref() == Some(call_id);
        self.open
            .iter()
            .find(matches)
            .or_else(|| self.closed.iter().map(|c| &c.span).find(matches))
            .map(|s| &s.request_event_id)
    }

    /// Close `span` natively; `said`: its completion's [`said_digests`].
    pub(crate) fn close_native(&mut self, span: OpenSpan, said: Vec<String>) {
        self.closed_native += 1;
        self.remember(ClosedSpan {
            span,
            closure: Closure::Native,
            said,
        });
    }

    /// Whether the span with this call id closed natively with a
    /// completion holding `text` as one of its strings.
    pub(crate) fn completion_said(&self, call_id: &str, text: &str) -> bool {
        let digest = said_digest(text);
        self.closed.iter().any(|c| {
            c.span.call_id.as_deref() == Some(call_id)
                && c.closure == Closure::Native
                && c.said.contains(&digest)
        })
    }

    pub(crate) fn close_recovered(&mut self, span: OpenSpan, terminal: EventId) {
        self.recovered += 1;
        self.remember(ClosedSpan {
            span,
            closure: Closure::Recovered {
                terminal,
                late_seen: false,
            },
            said: Vec::new(),
        });
    }

    fn remember(&mut self, closed: ClosedSpan) {
        self.closed.push_back(closed);
    }

    /// A recovered span this late completion belongs to: by call id where
    /// there is one, else the oldest recovered span with the pairing key
    /// that has not yet received late evidence. Marks it as seen.
    pub(crate) fn claim_recovered(
        &mut self,
        kind: SpanKind,
        call_id: Option<&str>,
        pair_key: &str,
    ) -> Option<(EventId, EventId)> {
        let found = self.closed.iter_mut().find(|c| {
            let same = match call_id {
                Some(id) => c.span.call_id.as_deref() == Some(id),
                None => c.span.call_id.is_none() && c.span.pair_key == pair_key,
            };
            same && c.span.kind == kind
                && matches!(
                    c.closure,
                    Closure::Recovered {
                        late_seen: false,
                        ..
                    }
                )
        })?;
        let Closure::Recovered {
            terminal,
            late_seen,
        } = &mut found.closure
        else {
            return None;
        };
        *late_seen = true;
        Some((found.span.request_event_id.clone(), terminal.clone()))
    }

    /// Whether a closed span with this call id ended natively.
    pub(crate) fn closed_natively(&self, call_id: &str) -> bool {
        self.closed
            .iter()
            .any(|c| c.span.call_id.as_deref() == Some(call_id) && c.closure == Closure::Native)
    }

    /// Forget closed spans whose turn fell out of the turn memory.
    pub(crate) fn prune(&mut self, turns: &TurnBook) {
        // Closed spans come in runs of one turn: ask the turn book once per
        // run, and touch the memory only when some turn was forgotten.
        let mut forgotten: Vec<String> = Vec::new();
        let mut last: Option<&str> = None;
        for turn in self
            .closed
            .iter()
            .filter_map(|c| c.span.turn.turn_id.as_deref())
        {
            if last != Some(turn) {
                last = Some(turn);
                if !turns.is_remembered(turn) && !forgotten.iter().any(|f| f == turn) {
                    forgotten.push(turn.to_string());
                }
            }
        }
        if !forgotten.is_empty() {
            self.closed.retain(|c| {
                c.span
                    .turn
                    .turn_id
                    .as_ref()
                    .is_none_or(|turn| !forgotten.contains(turn))
            });
        }
        let unattributed = self
            .closed
            .iter()
            .filter(|c| c.span.turn.turn_id.is_none())
            .count();
        let mut excess = unattributed.saturating_sub(UNATTRIBUTED_MEMORY);
        if excess == 0 {
            return;
        }
        self.closed.retain(|c| {
            if excess > 0 && c.span.turn.turn_id.is_none() {
                excess -= 1;
                return false;
            }
            true
        });
    }
}

/// The session's spans and the rules that open, pair, recover and cap
/// them: tool spans here, their derived terminals and sweeps in
/// `recovery.rs`, command spans in `ends.rs`. Events go out through the emitter each rule is
/// handed; the recovery table and the turns are read, never kept.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct SpanPairer {
    pub spans: SpanBook,
    /// Subagents started and not yet stopped: a turn-end sweep spares
    /// their spans (they may yet post).
    pub running_agents: BTreeSet<String>,
    /// Whether the span-cap condition is raised (it is raised once until
    /// the open count falls back under the cap).
    pub span_cap_raised: bool,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::contract::{Json, any_json_text};

    /// The digests a walk over the parsed value keeps: what
    /// [`said_digests`] kept while it built the value.
    fn through_value(content: &Json) -> Vec<String> {
        fn walk(value: &serde_json::Value, out: &mut Vec<String>) {
            use serde_json::Value;
            match value {
                _ if out.len() >= SAID_STRINGS => {}
                Value::String(s) if !s.trim().is_empty() => out.push(said_digest(s)),
                Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
                Value::Object(map) => map.values().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(&serde_json::from_str(content.as_str()).unwrap(), &mut out);
        out
    }

    proptest! {
        #[test]
        fn said_digests_are_those_a_walk_over_the_parsed_value_keeps(raw in any_json_text()) {
            let content = Json::parse(&raw).unwrap();
            prop_assert_eq!(said_digests(Some(&content)), through_value(&content));
        }

        /// More strings than are kept, some blank, under keys in any
        /// order, some repeated: which are kept, and in what order.
        #[test]
        fn said_digests_keep_the_first_strings_in_key_order(
            members in prop::collection::vec(("[a-e]{1,2}", "[ a-c]{0,2}"), 0..24),
        ) {
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("\"{k}\":[\"{v}\",{{\"x\":\"{v}{k}\"}}]"))
                .collect();
            let content = Json::parse(&format!("{{{}}}", body.join(","))).unwrap();
            prop_assert_eq!(said_digests(Some(&content)), through_value(&content));
        }
    }

    fn span(call: &str) -> OpenSpan {
        OpenSpan {
            kind: SpanKind::Tool,
            request_event_id: EventId(format!("ev_{call}")),
            name: "Bash".into(),
            call_id: Some(call.into()),
            pair_key: String::new(),
            turn: TurnAttribution::none(),
            agent_id: None,
            requested_unix_ns: 0,
            requested_clock: None,
        }
    }

    /// A closed span remembers the strings of its completion (trimmed), so
    /// a batch listing one of them is said; another text, another call, a
    /// recovered span or a content past the bound is not.
    #[test]
    fn a_native_completion_remembers_its_strings() {
        let mut book = SpanBook::default();
        let content = Json::parse(r#"{"stdout":"one\n","stderr":"","interrupted":false}"#).unwrap();
        book.close_native(span("c1"), said_digests(Some(&content)));
        assert!(book.completion_said("c1", "one"));
        assert!(book.completion_said("c1", "  one \n"));
        assert!(!book.completion_said("c1", "two"));
        assert!(!book.completion_said("c2", "one"));
        book.close_recovered(span("c3"), EventId("ev_t".into()));
        assert!(!book.completion_said("c3", "one"));
        let long = Json::from_value(&serde_json::json!("x".repeat(SAID_CONTENT_BYTES)));
        assert!(said_digests(Some(&long)).is_empty());
        let many = Json::from_value(&serde_json::json!(
            (0..20).map(|i| i.to_string()).collect::<Vec<_>>()
        ));
        assert_eq!(said_digests(Some(&many)).len(), SAID_STRINGS);
        // An older state, without the member, reads as remembering none.
        let old: ClosedSpan = serde_json::from_value(serde_json::json!({
            "span": serde_json::to_value(span("c4")).unwrap(),
            "closure": "native",
        }))
        .unwrap();
        assert!(old.said.is_empty());
    }
}
