//! A row with only its metadata (`ship --content none`): nothing of what
//! the agent or the user wrote, and nothing of the record's text.
//!
//! The envelope stays (ids keyed, digests keyed, session, turn, times,
//! provenance); of the payload, numbers, booleans and the strings under a
//! key that names rather than says (tool name, outcome, model, ...), and
//! only when the string is itself a name: one token of letters, digits
//! and `_ - . : / @ + [ ]`, at most 128 bytes (a model's name may also
//! hold single spaces). A free text under such a key (a reason with
//! spaces, a quoted excerpt) is dropped.
//!
//! A fork's copied usage names its source session (`copied_from_session`)
//! and a `restore --apply` session's first checkpoint its parent (the
//! `restored_from` effect's ref): both stay, so that the fleet counts a
//! copy once, as the host does.
//!
//! Why an event could not be read (`signal.unrecognized`,
//! `session.stale_signal`) is said by harnery, but often quotes the record
//! (`malformed_json: invalid type: string "…"`, `unknown frame type
//! "…"`): only its class, from a fixed list, leaves. The event name of an
//! unrecognized signal is the record's own word for it, so it is withheld
//! too.

use serde_json::Value;

use super::super::ids;
use super::Masker;

/// Payload strings kept by `--content none` (when they are names).
const METADATA_STRINGS: &[&str] = &[
    "tool_name",
    "tool_call_id",
    "name",
    "kind",
    "outcome",
    "status",
    "state",
    "model",
    "agent_id",
    "agent_type",
    "turn_id",
    "source",
    "reason",
    "stop_reason",
    "unknown",
    "currency",
    "unit",
    "event_name",
    "requested_event_id",
    "completed_event_id",
    "message_id",
    "copied_from_session",
    "permission_mode",
    "trigger",
    "signal",
    "class",
];

/// Reasons harnery gives in so many words, with nothing of the record.
const WHOLE_REASONS: &[&str] = &[
    "unknown_event",
    "no hook_event_name",
    "no event name on argv or in payload",
    "tool event without tool_name",
    "tool event without toolName",
    "permission request without tool_name",
    "permission request without toolName",
    "subagent event without agent_id",
    "frame without a type",
    "message frame without a message",
];

/// Reasons that go on to quote the record: only the words before the
/// quote leave.
const REASON_PREFIXES: &[&str] = &[
    "malformed_json",
    "not a frame",
    "message in no known shape",
    "usage in no known shape",
    "unknown frame type",
];

/// What leaves of an unreadable signal's reason under `--content none`.
pub(crate) fn reason_class(reason: &str) -> &'static str {
    if let Some(whole) = WHOLE_REASONS.iter().find(|r| **r == reason) {
        return whole;
    }
    REASON_PREFIXES
        .iter()
        .find(|p| {
            reason
                .strip_prefix(**p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', ' ']))
        })
        .copied()
        .unwrap_or("withheld")
}

/// A string that names: one short token, no spaces or quotes. A model's
/// name may hold single spaces (`Claude Sonnet 4.5`), as agents show it.
fn is_name(key: &str, s: &str) -> bool {
    let spaced = key == "model" && !s.starts_with(' ') && !s.contains("  ");
    !s.is_empty()
        && s.len() <= 128
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric() || b"_-.:/@+[]".contains(&b) || (spaced && b == b' ')
        })
}

impl Masker {
    /// A row with only its metadata (see the module's text); digests and
    /// ids keyed as [`Masker::mask`] keys them.
    pub(crate) fn metadata_only(&self, json: &[u8]) -> Vec<u8> {
        let Ok(mut v) = serde_json::from_slice::<Value>(json) else {
            return b"{}".to_vec();
        };
        self.key_values(&mut v, None);
        let unreadable = matches!(
            v.get("type").and_then(Value::as_str),
            Some("signal.unrecognized" | "session.stale_signal")
        );
        if let Some(o) = v.as_object_mut() {
            if let Some(p) = o.get_mut("payload") {
                let class = p
                    .get("reason")
                    .and_then(Value::as_str)
                    .filter(|_| unreadable)
                    .map(reason_class);
                *p = metadata(p);
                if let (Some(class), Some(kept)) = (class, p.as_object_mut()) {
                    kept.insert("reason".into(), Value::from(class));
                }
            }
            if let Some(Value::Array(raw)) = o.get_mut("raw").filter(|_| unreadable) {
                for r in raw.iter_mut().filter_map(Value::as_object_mut) {
                    r.insert("event_name".into(), Value::Null);
                }
            }
        }
        serde_json::to_vec(&v).expect("a value serialises")
    }

    /// Every `*_digest` string keyed, and every id derived from raw bytes.
    fn key_values(&self, v: &mut Value, key: Option<&str>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    self.key_values(x, Some(k));
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.key_values(x, None)),
            Value::String(s) => {
                if let std::borrow::Cow::Owned(id) = ids::keyed_within(&self.key, s) {
                    *s = id;
                } else if key.is_some_and(|k| k.ends_with("_digest")) {
                    *s = self.keyed_digest(s);
                }
            }
            _ => {}
        }
    }
}

/// A `restore --apply` session's link to its parent (an effect of kind
/// `restored_from`, ref `<adapter>/<session>@<checkpoint>`): session ids
/// and turn ids, nothing written, and what `fleet usage` needs to count a
/// restored session's copies once.
fn is_restore_link(m: &serde_json::Map<String, Value>, key: &str, s: &str) -> bool {
    key == "ref"
        && m.get("kind").and_then(Value::as_str) == Some(crate::report::superseded::RESTORED_FROM)
        && crate::report::superseded::RestoredFrom::parse(s).is_some()
        && is_name(key, s)
}

fn metadata(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter_map(|(k, x)| match x {
                    Value::String(s) if METADATA_STRINGS.contains(&k.as_str()) && is_name(k, s) => {
                        Some((k.clone(), x.clone()))
                    }
                    Value::String(s) if is_restore_link(m, k, s) => Some((k.clone(), x.clone())),
                    Value::String(_) => None,
                    Value::Object(_) | Value::Array(_) => Some((k.clone(), metadata(x))),
                    _ => Some((k.clone(), x.clone())),
                })
                .collect(),
        ),
        Value::Array(a) => {
            Value::Array(a.iter().filter(|x| !x.is_string()).map(metadata).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_signals_reason_keeps_only_its_class() {
        for (reason, class) in [
            (
                "malformed_json: invalid type: string \"password=sunshine1\", expected a boolean at line 1 column 9",
                "malformed_json",
            ),
            ("unknown frame type \"secret-frame\"", "unknown frame type"),
            (
                "not a frame: invalid type: integer `5`, expected a string",
                "not a frame",
            ),
            ("secret-frame data: missing field `x`", "withheld"),
            ("secret-frame without data", "withheld"),
            ("unknown_event", "unknown_event"),
            ("unknown_eventual leak", "withheld"),
            ("frame without a type", "frame without a type"),
        ] {
            assert_eq!(reason_class(reason), class, "{reason}");
        }
    }

    #[test]
    fn names_stay_and_texts_go() {
        for name in [
            "Bash",
            "mcp__github__create_issue",
            "claude-opus-4-1[1m]",
            "prompt_input_exit",
        ] {
            assert!(is_name("tool_name", name), "{name}");
        }
        assert!(is_name("model", "Claude Sonnet 4.5"));
        for text in ["", "the user asked", "invalid \"x\"", &"a".repeat(129)] {
            assert!(!is_name("reason", text), "{text}");
            assert!(!is_name("model", &format!("{text}\"")), "{text}");
        }
    }

    #[test]
    fn a_copys_links_stay_and_other_refs_go() {
        let payload = serde_json::json!({
            "message_id": "msg_1",
            "copied_from_session": "352c328f-717f-4fc1-9025-91757a024a6f",
            "effects": [
                {"kind": "restored_from", "ref": "claude-code/p-1@turn:t-1"},
                {"kind": "restored_from", "ref": "claude-code/p-1@a label with words"},
                {"kind": "restored_from", "ref": "no-link"},
                {"kind": "file_edit", "ref": "src/secret.rs"},
            ]
        });
        let kept = metadata(&payload);
        assert_eq!(kept["copied_from_session"], payload["copied_from_session"]);
        let refs: Vec<Option<&str>> = kept["effects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["ref"].as_str())
            .collect();
        assert_eq!(refs, [Some("claude-code/p-1@turn:t-1"), None, None, None]);
    }
}
