//! The canonical event contract: what a ledger row means.
//!
//! Owns the event envelope (id, offset, session, turn attribution,
//! provenance, raw pointers), the strict payload of every event type, the
//! `recovery` block of ADR 0078, the validator rules and the confidence
//! table they check, the schema digest that gates a ledger epoch, and the
//! registry of contract generations this build reads. It never reads agent
//! dialects (that is `adapter`) and never touches storage (that is
//! `ledger`).

mod canonical;
mod confidence;
mod digest;
mod digest_writer;
pub mod eligibility;
mod event;
mod event_de;
mod event_id;
mod generation;
pub(crate) mod json;
mod json_text;
mod outcome;
mod payload;
pub mod session_name;
mod validate;

pub use canonical::Json;
pub use confidence::recovered_confidence;
pub use digest::{
    CONTRACT_GENERATION, DESCRIPTION, SchemaDescription, schema_digest, schema_digest_hex,
};
pub use digest_writer::DigestWriter;
pub use event::{
    AdapterId, Attestation, Confidence, Event, Provenance, RawRef, SessionRef, TimeSource,
    TurnAttribution, TurnSource,
};
pub use event_id::{EventId, digest_parts};
pub use generation::{GENERATIONS, Generation, current_generation, generation_by_digest};
pub use payload::{
    CheckpointLocated, CheckpointRecorded, CommandCompleted, CommandRequested, CompactionCompleted,
    CompactionStarted, Effect, EndCancelled, EndExpired, EndRequested, EndSalvaged, ErrorReported,
    EventType, HealthCondition, LateEvidence, MessageAssistant, MessageDisplayed, MessageUser,
    Notification, Observation, OffsetRange, Outcome, Payload, PermissionRequested, PromptSubmitted,
    ReasoningRecorded, RecordAt, RecordProblem, Recovery, RecoveryReason, RestoreRecorded,
    SessionEnded, SessionMetadata, SessionResumed, SessionStarted, SignalUnrecognized, StaleSignal,
    SubagentStarted, SubagentStopped, ToolBatchCompleted, ToolCompleted, ToolRecorded,
    ToolRequested, TurnCompleted, TurnStarted, UsageReported, UsageSummary,
};
pub use validate::{Rule, Violation, validate_event};

#[cfg(test)]
mod digest_tests;
#[cfg(test)]
mod event_de_tests;
#[cfg(test)]
mod samples;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validate_tests;
