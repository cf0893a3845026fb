//! Copilot's steering messages, kept apart from what the user said
//! (ADR-0007): a `user.message` whose `data.source` names who sent it
//! (a subagent, `agent-<id>`, say) is not the user's direction. The ledger
//! records every `user.message` as `message.user`; since generation 6 with
//! the sender as `source`. For a row of an older generation, which has no
//! `source`, it is read back from the agent's own line, which each event
//! names (`record: {path, offset}`), in the record bytes a restore already
//! holds.

use crate::contract::{EventType, Payload};
use crate::ledger::{LedgerError, LedgerReader};
use crate::restore::log::SessionLog;

/// One steering message below a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Steering {
    pub event_id: String,
    pub offset: u64,
    /// Who sent it, as `data.source` says.
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The steering messages among the live `message.user` events below
/// `boundary` whose lines `bytes` (the record at `path` from byte 0)
/// holds.
pub(crate) fn below(
    ledger: &LedgerReader,
    log: &SessionLog,
    boundary: u64,
    path: &str,
    bytes: &[u8],
) -> Result<Vec<Steering>, LedgerError> {
    let mut out = Vec::new();
    for e in ledger
        .events()
        .session_events_of(&log.session, &[EventType::MessageUser])?
    {
        if e.offset >= boundary || log.is_superseded(e.offset) {
            continue;
        }
        let Payload::MessageUser(m) = &e.payload else {
            continue;
        };
        if m.record.path != path {
            continue;
        }
        let stored = m.source.clone();
        if let Some(source) = stored.or_else(|| source_at(bytes, m.record.offset)) {
            out.push(Steering {
                event_id: e.id.as_str().to_string(),
                offset: e.offset,
                source,
                text: m.text.clone(),
            });
        }
    }
    Ok(out)
}

/// `data.source` of the line that starts at `at`, if it names one.
fn source_at(bytes: &[u8], at: u64) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Line {
        data: Option<Data>,
    }
    #[derive(serde::Deserialize)]
    struct Data {
        source: Option<String>,
    }
    let rest = bytes.get(usize::try_from(at).ok()?..)?;
    let line = &rest[..rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len())];
    let source = serde_json::from_slice::<Line>(line).ok()?.data?.source?;
    (!source.is_empty()).then_some(source)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_marks_steering() {
        let bytes = b"{\"type\":\"user.message\",\"data\":{\"content\":\"hi\"}}\n{\"type\":\"user.message\",\"data\":{\"content\":\"go\",\"source\":\"agent-1\"}}\n";
        assert_eq!(source_at(bytes, 0), None);
        let second = bytes.iter().position(|b| *b == b'\n').unwrap() as u64 + 1;
        assert_eq!(source_at(bytes, second), Some("agent-1".into()));
        assert_eq!(source_at(bytes, 9999), None);
    }
}
