//! Resuming exactly at a checkpoint, without harnery writing anything:
//! what the look-only `restore` may print, and what it must not.
//!
//! The agents' plain resume (`claude --resume <id>`, `copilot --resume
//! <id>`) hands the model the whole session, every turn after the
//! checkpoint included. So:
//!
//! - Claude Code resumes its own transcript at a row: `claude -p --resume
//!   <id> --resume-session-at <row uuid> [--fork-session]` keeps every
//!   row up to and including that one (RESUME-FACTS, 2.1.332). The row is
//!   the last `assistant` row of the turns the checkpoint keeps
//!   ([`last_assistant_row`]). The flag is honoured in print mode only
//!   (interactively it is ignored and the whole history sent), so the
//!   command carries `-p`; an interactive resume goes through `restore
//!   --apply`, which puts the record back as a new session.
//! - Copilot has no such flag: its plain resume is offered only when the
//!   checkpoint is the session's latest point, no later turn known to the
//!   ledger or written in the agent's record since ([`later_turn`]);
//!   otherwise `restore --apply`.

use std::collections::HashSet;
use std::io::{BufRead, Read, Seek, SeekFrom};

use crate::contract::{EventType, Payload};
use crate::ledger::{LedgerError, LedgerReader};
use crate::restore::log::SessionLog;

/// The `uuid` of the last main-line `assistant` row in Claude Code's
/// record `bytes` (whole lines): where `--resume-session-at` keeps the
/// transcript up to.
pub(crate) fn last_assistant_row(bytes: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Row {
        #[serde(rename = "type")]
        kind: Option<String>,
        uuid: Option<String>,
        #[serde(rename = "isSidechain", default)]
        sidechain: bool,
    }
    bytes
        .split(|b| *b == b'\n')
        .rev()
        .filter_map(|line| serde_json::from_slice::<Row>(line).ok())
        .find(|row| row.kind.as_deref() == Some("assistant") && !row.sidechain)
        .and_then(|row| row.uuid)
}

/// Whether the session went on past the checkpoint pinned at `boundary`
/// with a turn the checkpoint does not keep: a live prompt or user
/// message at or above the boundary of a turn none of the live events
/// below it belongs to (one stamped with no turn counts: it cannot be
/// shown to be kept).
pub(crate) fn later_turn(
    ledger: &LedgerReader,
    log: &SessionLog,
    boundary: u64,
) -> Result<bool, LedgerError> {
    let types = [
        EventType::PromptSubmitted,
        EventType::TurnStarted,
        EventType::MessageUser,
    ];
    let events = ledger.events().session_events_of(&log.session, &types)?;
    let live = events.iter().filter(|e| !log.is_superseded(e.offset));
    let kept: HashSet<&str> = live
        .clone()
        .filter(|e| e.offset < boundary)
        .filter_map(|e| e.turn.turn_id.as_deref())
        .collect();
    Ok(live.filter(|e| e.offset >= boundary).any(|e| {
        let prompt = matches!(
            e.payload,
            Payload::PromptSubmitted(_) | Payload::MessageUser(_)
        );
        match e.turn.turn_id.as_deref() {
            Some(turn) => !kept.contains(turn),
            None => prompt,
        }
    }))
}

/// Whether a live event of a turn the checkpoint pinned at `boundary`
/// keeps lies at or above the boundary (the turn's record lines, read
/// after the next prompt pinned the checkpoint, say). A recorded restore
/// supersedes the whole range from the boundary on, so it would mark them
/// superseded though the agent is given them: `restore --record` then
/// records nothing.
pub(crate) fn kept_turn_goes_on(
    ledger: &LedgerReader,
    log: &SessionLog,
    boundary: u64,
) -> Result<bool, LedgerError> {
    let mut kept: HashSet<String> = HashSet::new();
    let mut past = false;
    ledger
        .events()
        .for_each_in_session_range(&log.session, 0, log.head, |e| {
            let Some(turn) = e.turn.turn_id.filter(|_| !log.is_superseded(e.offset)) else {
                return Ok::<(), LedgerError>(());
            };
            if e.offset < boundary {
                kept.insert(turn);
            } else if kept.contains(&turn) {
                past = true;
            }
            Ok(())
        })?;
    Ok(past)
}

/// Whether Copilot's own record at `path` holds a user message past byte
/// `end`, which harnery may not have read yet: the agent went on after
/// the checkpoint. A record that cannot be read says nothing.
pub(crate) fn copilot_record_goes_on(path: &std::path::Path, end: u64) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    if file.seek(SeekFrom::Start(end)).is_err() {
        return false;
    }
    #[derive(serde::Deserialize)]
    struct Line {
        #[serde(rename = "type")]
        kind: Option<String>,
    }
    // Bounded: a record's tail past a checkpoint is read line by line.
    let reader = std::io::BufReader::new(file.take(1 << 30));
    reader.split(b'\n').map_while(Result::ok).any(|line| {
        serde_json::from_slice::<Line>(&line)
            .ok()
            .and_then(|l| l.kind)
            .is_some_and(|k| k == "user.message")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_row_is_the_last_main_line_assistant_row() {
        let text = [
            r#"{"type":"user","uuid":"u1"}"#,
            r#"{"type":"assistant","uuid":"a1"}"#,
            r#"{"type":"assistant","uuid":"s1","isSidechain":true}"#,
            r#"{"type":"system","uuid":"x1"}"#,
            r#"{"type":"last-prompt"}"#,
            "",
        ]
        .join("\n");
        assert_eq!(last_assistant_row(text.as_bytes()), Some("a1".into()));
        assert_eq!(last_assistant_row(b"{\"type\":\"user\"}\n"), None);
    }

    #[test]
    fn a_user_message_past_the_end_means_the_record_went_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let first = "{\"type\":\"user.message\"}\n{\"type\":\"assistant.turn_end\"}\n";
        let later = "{\"type\":\"session.shutdown\"}\n";
        std::fs::write(&path, format!("{first}{later}")).unwrap();
        let end = first.len() as u64;
        assert!(!copilot_record_goes_on(&path, end));
        std::fs::write(
            &path,
            format!("{first}{later}{{\"type\":\"user.message\"}}\n"),
        )
        .unwrap();
        assert!(copilot_record_goes_on(&path, end));
        assert!(!copilot_record_goes_on(&dir.path().join("gone"), 0));
    }
}
