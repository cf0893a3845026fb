//! The canonical event contract: what a ledger row means.
//!
//! Owns the event envelope (id, offset, session, turn attribution,
//! provenance, raw pointers), the strict payload of every event type, the
//! `recovery` block of ADR 0078, the validator rules and the confidence
//! table they check, the contract's shape read from its types and the
//! schema digest over it that gates a ledger epoch, and the registry of
//! contract generations this build reads, each with its own shape (the
//! shipped ones frozen), by which an archived epoch's rows are judged. It never reads agent
//! dialects (that is `adapter`) and never touches storage (that is
//! `ledger`).

mod canonical;
#[cfg(test)]
pub(crate) use canonical::tests::any_json_text;
mod confidence;
mod digest;
mod digest_writer;
pub(crate) mod eligibility;
mod event;
mod event_de;
mod event_id;
pub(crate) mod frozen;
mod generation;
pub(crate) mod json;
mod json_text;
mod outcome;
mod payload;
pub(crate) mod session_name;
mod shape;
mod shape_check;
mod validate;

pub use canonical::Json;
pub(crate) use confidence::recovered_confidence;
pub use digest::{CONTRACT_GENERATION, contract_shape, derived_schema_digest, shape_digest};
pub(crate) use digest_writer::{DigestWriter, frame_parts_u64};
pub use event::{
    AdapterId, Attestation, Confidence, Event, Provenance, RawRef, SessionRef, TimeSource,
    TurnAttribution, TurnSource,
};
pub use event_id::{EventId, digest_parts};
pub use generation::{
    GENERATIONS, Generation, current_generation, generation_by_digest, schema_digest,
    schema_digest_hex,
};
pub use payload::{
    CheckpointLocated, CheckpointRecorded, CommandCompleted, CommandRequested, CompactionCompleted,
    CompactionStarted, Effect, EndCancelled, EndExpired, EndRequested, EndSalvaged, ErrorReported,
    EventType, HealthCondition, HookObserved, LateEvidence, MessageAssistant, MessageDisplayed,
    MessageUser, Notification, OUTPUT_CAP, Observation, OffsetRange, Outcome, PairedBy, Payload,
    PermissionRequested, PromptSubmitted, ReasoningRecorded, RecordAt, RecordProblem, Recovery,
    RecoveryReason, RestoreRecorded, SessionEnded, SessionImported, SessionMetadata,
    SessionResumed, SessionStarted, SessionTitled, SignalUnrecognized, StaleSignal,
    SubagentStarted, SubagentStopped, ToolBatchCompleted, ToolBatchResult, ToolCompleted,
    ToolRecorded, ToolRequested, TurnCompleted, TurnStarted, UsageReported, UsageSummary,
    capped_output,
};
pub(crate) use shape::Shape;
pub use validate::{Rule, Violation, validate_event};

#[cfg(test)]
mod digest_tests;
#[cfg(test)]
mod event_de_tests;
#[cfg(test)]
mod samples;
#[cfg(test)]
mod shape_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod validate_tests;
