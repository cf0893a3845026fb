//! What an operator records by hand: explicit session ends (`harnery end`)
//! and command spans (`harnery exec`).
//!
//! Both are written as harnery's own signals (`harnery.end_requested`,
//! `harnery.command_requested`, `harnery.command_completed`; payloads in
//! `agents::harnery`) into the session's intake spool through the same
//! [`SpoolWriter`] the hook uses, so they are ordered with the agent's
//! signals and normalized by the same producer. Nothing here touches the
//! ledger: an end request takes effect when `finalize` reads it.

pub mod command;

use serde::Serialize;

use crate::agents::harnery::EndRequestPayload;
use crate::clock::ClockSample;
use crate::contract::AdapterId;
use crate::home::Home;
use crate::spool::{AppendReceipt, Signal, SpoolError, SpoolWriter};

pub(crate) use crate::agents::harnery::{COMMAND_COMPLETED, COMMAND_REQUESTED, END_REQUESTED};

/// Where and when an operator signal is recorded.
#[derive(Debug, Clone)]
pub struct Target {
    pub home: Home,
    pub adapter: AdapterId,
    /// The session id exactly as the agent names it.
    pub session_id: String,
}

impl Target {
    /// The session spool an operator command (`end`, `exec`, `checkpoint`)
    /// writes to: the session `name` picks among those the spool or the
    /// live ledger knows, under `adapter` when given. An unknown or
    /// ambiguous name is an error; no session is ever created by a name.
    pub fn find(home: &Home, name: &str, adapter: Option<&str>) -> Result<Target, TargetError> {
        let adapter = adapter
            .map(|a| AdapterId::parse(a).ok_or_else(|| AdapterChoiceError::BadName(a.into())))
            .transpose()?;
        let found = crate::report::source::find_session(home, name, adapter)?;
        Ok(Target {
            home: home.clone(),
            adapter: found.adapter,
            session_id: found.session_id,
        })
    }

    /// Append one signal durably (fdatasync) and say where it went.
    pub fn append(
        &self,
        event: &str,
        payload: &impl Serialize,
        received_ns: i64,
    ) -> Result<AppendReceipt, SpoolError> {
        let bytes = serde_json::to_vec(payload).expect("signal payloads are plain JSON objects");
        let mut signal = Signal::new(
            self.adapter.as_str(),
            Some(event),
            Some(&self.session_id),
            &bytes,
        );
        signal.received_ns = received_ns;
        signal.clock = ClockSample::now();
        SpoolWriter::new(self.home.clone()).append_signal(&signal)
    }
}

/// An `--adapter` that names no agent harnery knows.
#[derive(Debug, thiserror::Error)]
pub enum AdapterChoiceError {
    #[error("unknown adapter {0:?} (expected {choices})", choices = AdapterId::choices())]
    BadName(String),
}

/// Why [`Target::find`] found no session to write to.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Adapter(#[from] AdapterChoiceError),
    #[error(transparent)]
    Session(#[from] crate::report::source::SourceError),
}

/// A warning for the user when a signal went to the dead-letter directory:
/// it is on disk, but outside the session's spool.
pub fn dead_letter_warning(receipt: &AppendReceipt) -> Option<String> {
    (receipt.write_path == crate::spool::WritePath::DeadLetter).then(|| {
        format!(
            "the session spool was unusable, so the signal went to the dead letter {}: {}",
            receipt.file.display(),
            receipt
                .fallback_reason
                .as_deref()
                .unwrap_or("no reason recorded")
        )
    })
}

/// Record an explicit end request for the target session.
pub fn request_end(
    target: &Target,
    reason: Option<&str>,
    now_ns: i64,
) -> Result<AppendReceipt, SpoolError> {
    let payload = EndRequestPayload {
        reason: reason.map(str::to_string),
    };
    target.append(END_REQUESTED, &payload, now_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::{IntakeSpool, read_segment};

    #[test]
    fn an_end_request_lands_in_the_session_spool() {
        let dir = tempfile::tempdir().unwrap();
        let target = Target {
            home: Home::at(dir.path().join("h")),
            adapter: AdapterId::Copilot,
            session_id: "sess-1".into(),
        };
        let receipt = request_end(&target, Some("done"), 42).unwrap();
        let read = read_segment(&receipt.file).unwrap();
        let record = &read.records[0];
        assert_eq!(record.envelope.event.as_deref(), Some(END_REQUESTED));
        assert_eq!(record.envelope.session_id.as_deref(), Some("sess-1"));
        assert_eq!(record.envelope.received_ns, 42);
        let payload: serde_json::Value = serde_json::from_slice(&record.payload).unwrap();
        assert_eq!(payload, serde_json::json!({"reason": "done"}));
        let spool = IntakeSpool::open(&target.home);
        assert!(spool.session("copilot", Some("sess-1")).unwrap().is_some());
    }
}
