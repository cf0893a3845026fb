//! The fallback when harnery's raw archive cannot give a Claude Code
//! session's record back (it was recorded with record following off, or
//! before it existed) but Claude Code's own transcript is still there:
//! Claude Code forks it at a row itself, `claude -p --resume <id>
//! --resume-session-at <row uuid> --fork-session` (2.1.332 accepts the flag
//! though `--help` hides it; print mode only: interactively it is ignored
//! and the whole history is sent).
//!
//! The row is the last `assistant` row of the turns the checkpoint keeps
//! (the turns of the live prompts and turn events below its offset),
//! before the first prompt row of any other turn. The transcript is the
//! one the session's start named, opened only where Claude Code writes
//! this session's record (`agents::record::place`).

use std::collections::HashSet;
use std::io::BufRead;
use std::path::Path;

use crate::agents::record::place::{self, RecordRole};
use crate::contract::{AdapterId, EventType, Payload};
use crate::ledger::{LedgerError, LedgerReader};
use crate::restore::log::SessionLog;

/// Where Claude Code forks its own transcript for a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct ForkAt {
    pub transcript: String,
    /// The `uuid` of the last row kept.
    pub row: String,
    /// The session's directory, as its start named it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// The row of the session's own transcript that the checkpoint pinned at
/// `boundary` ends at, or why there is none.
pub(crate) fn fork_at(
    ledger: &LedgerReader,
    log: &SessionLog,
    boundary: u64,
) -> Result<ForkAt, String> {
    fork_at_across(&[], ledger, log, boundary)
}

/// [`fork_at`] for a session that began before an epoch advance: its
/// start (the transcript, the directory) and its earlier turns are in the
/// `earlier` epochs (oldest first), all of them below the checkpoint.
pub(crate) fn fork_at_across(
    earlier: &[&LedgerReader],
    ledger: &LedgerReader,
    log: &SessionLog,
    boundary: u64,
) -> Result<ForkAt, String> {
    let session = &log.session;
    if session.adapter != AdapterId::ClaudeCode {
        return Err("only Claude Code forks its own transcript".into());
    }
    let types = [
        EventType::SessionStarted,
        EventType::PromptSubmitted,
        EventType::TurnStarted,
        EventType::TurnCompleted,
    ];
    let read = |ledger: &LedgerReader| {
        ledger
            .events()
            .session_events_of(session, &types)
            .map_err(|e: LedgerError| e.to_string())
    };
    let mut before = Vec::new();
    for ledger in earlier {
        before.extend(read(ledger)?);
    }
    let events = read(ledger)?;
    let mut kept = HashSet::new();
    let (mut transcript, mut cwd) = (None, None);
    let here = events
        .iter()
        .filter(|e| e.offset < boundary && !log.is_superseded(e.offset));
    for e in before.iter().chain(here) {
        if let Some(t) = &e.turn.turn_id {
            kept.insert(t.clone());
        }
        if let Payload::SessionStarted(p) = &e.payload {
            transcript = p.transcript_path.clone().or(transcript);
            cwd = p.cwd.clone().or(cwd);
        }
    }
    let transcript = transcript.ok_or("the session's start named no transcript")?;
    let file = place::open(
        session.adapter,
        &session.session_id,
        RecordRole::Session,
        Path::new(&transcript),
    )
    .map_err(|e| format!("{transcript}: {e:?}"))?;
    let row = last_kept_row(std::io::BufReader::new(file), &kept)
        .ok_or_else(|| format!("{transcript} holds no assistant row of the kept turns"))?;
    Ok(ForkAt {
        transcript,
        row,
        cwd,
    })
}

/// The `uuid` of the last `assistant` row before the first prompt row of
/// a turn not in `kept` (once a kept turn was seen).
fn last_kept_row(lines: impl BufRead, kept: &HashSet<String>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Row {
        #[serde(rename = "type")]
        kind: Option<String>,
        uuid: Option<String>,
        #[serde(rename = "promptId")]
        prompt_id: Option<String>,
    }
    let mut last = None;
    let mut seen_kept = false;
    for line in lines.lines() {
        let Ok(line) = line else { break };
        let Ok(row) = serde_json::from_str::<Row>(&line) else {
            continue;
        };
        match (&row.prompt_id, row.kind.as_deref()) {
            (Some(p), _) if kept.contains(p) => seen_kept = true,
            (Some(_), Some("user")) if seen_kept => break,
            (_, Some("assistant")) if seen_kept => last = row.uuid.or(last),
            _ => {}
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_row_is_the_kept_turns_last_assistant_row() {
        let text = [
            r#"{"type":"user","uuid":"u1","promptId":"p1"}"#,
            r#"{"type":"assistant","uuid":"a1"}"#,
            r#"{"type":"user","uuid":"u2","promptId":"p1"}"#,
            r#"{"type":"assistant","uuid":"a2"}"#,
            r#"{"type":"file-history-snapshot"}"#,
            r#"{"type":"user","uuid":"u3","promptId":"p2"}"#,
            r#"{"type":"assistant","uuid":"a3"}"#,
        ]
        .join("\n");
        let kept: HashSet<String> = ["p1".to_string()].into();
        assert_eq!(last_kept_row(text.as_bytes(), &kept), Some("a2".into()));
        let none: HashSet<String> = HashSet::new();
        assert_eq!(last_kept_row(text.as_bytes(), &none), None);
    }
}
