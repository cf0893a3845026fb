//! The schema digest: blake3 over a canonical, byte-defined description of
//! the contract. The description is written out here by hand, field by
//! field, in a fixed order; tests (`digest_tests`) check it against every
//! struct of the contract at every level of nesting (field names,
//! optionality, enum values) and a golden test pins the digest, so any
//! change to the contract is noticed and ships as an epoch advance. The
//! generations a build can read are listed in `generation`.
//!
//! Encoding: the ASCII tag `harnery.contract`, then the generation as a
//! little-endian u32, then every item of `DESCRIPTION` as a length-prefixed
//! (u32 LE) UTF-8 string, in order.

/// Bumped with every contract change that ships as an epoch advance.
pub const CONTRACT_GENERATION: u32 = 7;

/// One described type: its name and its fields as `name:type` with a `?`
/// suffix for optional fields.
pub struct SchemaDescription {
    pub name: &'static str,
    pub fields: &'static [&'static str],
}

const fn d(name: &'static str, fields: &'static [&'static str]) -> SchemaDescription {
    SchemaDescription { name, fields }
}

/// The contract, described. Order is part of the digest.
pub const DESCRIPTION: &[SchemaDescription] = &[
    d(
        "envelope",
        &[
            "id:event_id",
            "session:session_ref",
            "offset:u64",
            "time_unix_ns:i64",
            "time_source:enum(agent,received,finalizer)",
            "clock:clock_sample?",
            "agent_id:string?",
            "turn:turn_attribution",
            "provenance:provenance",
            "raw:list(raw_ref)",
            "type:event_type",
            "payload:payload",
        ],
    ),
    d(
        "session_ref",
        &["adapter:enum(claude-code,copilot)", "session_id:string"],
    ),
    d("clock_sample", &["boot_id:string?", "boottime_ns:u64?"]),
    d(
        "turn_attribution",
        &["source:enum(native,stamped,none)", "turn_id:string?"],
    ),
    d(
        "provenance",
        &[
            "attestation:enum(native,derived,record)",
            "confidence:enum(low,medium,high)",
        ],
    ),
    d("raw_ref", &["record_digest:string", "event_name:string?"]),
    d("observation", &["observed:T|unknown:string"]),
    d("outcome", &["enum(success,failure,interrupted,unknown)"]),
    d(
        "recovery",
        &[
            "reason:enum(request_not_observed,completion_not_observed_before_turn_end,\
             completion_not_observed_before_next_turn,span_cap_pressure,\
             explicit_end_salvage,command_completion_not_observed)",
            "requested_event_id:event_id?",
            "elapsed_upper_bound_ms:observation(u64)?",
        ],
    ),
    d("record_at", &["path:string", "offset:u64"]),
    d(
        "effect",
        &[
            "kind:string",
            "ref:string",
            "tool_name:string?",
            "tool_call_id:string?",
            "outcome:outcome?",
            "paths:list(string)?",
            "command:string?",
            "exit_code:i64?",
        ],
    ),
    d("offset_range", &["from:u64", "to:u64"]),
    d(
        "session.started",
        &[
            "source:string?",
            "cwd:string?",
            "model:string?",
            "transcript_path:string?",
        ],
    ),
    d("session.ended", &["reason:string?"]),
    d("prompt.submitted", &["prompt:string?", "transformed:bool"]),
    d("turn.started", &["prompt_event_id:event_id?"]),
    d("turn.completed", &["stop_reason:string?"]),
    d(
        "tool.requested",
        &[
            "tool_call_id:string?",
            "tool_name:string",
            "input_digest:string",
            "input:json?",
            "recovery:recovery?",
        ],
    ),
    d(
        "tool.completed",
        &[
            "tool_call_id:string?",
            "tool_name:string",
            "requested_event_id:event_id?",
            "outcome:outcome",
            "duration_ms:observation(u64)",
            "exit_code:i64?",
            "error:string?",
            "content:json?",
            "recovery:recovery?",
        ],
    ),
    d(
        "command.requested",
        &["argv:list(string)", "cwd:string?", "pid:u32?"],
    ),
    d(
        "command.completed",
        &[
            "requested_event_id:event_id?",
            "outcome:outcome",
            "duration_ms:observation(u64)",
            "exit_code:i64?",
            "signal:i32?",
            "recovery:recovery?",
        ],
    ),
    d(
        "subagent.started",
        &[
            "agent_id:string",
            "agent_type:string?",
            "agent_name:string?",
        ],
    ),
    d(
        "subagent.stopped",
        &[
            "agent_id:string",
            "agent_type:string?",
            "stop_reason:string?",
        ],
    ),
    d("compaction.started", &["trigger:string?"]),
    d(
        "compaction.completed",
        &["trigger:string?", "summary:string?"],
    ),
    d(
        "error.reported",
        &["message:string", "context:string?", "recoverable:bool?"],
    ),
    d("permission.requested", &["tool_name:string", "input:json?"]),
    d("notification", &["kind:string?", "message:string?"]),
    d(
        "message.displayed",
        &["message_id:string?", "text:string?", "is_final:bool?"],
    ),
    d("tool.batch_completed", &["calls:u64"]),
    d(
        "tool.late_evidence",
        &[
            "span_request_event_id:event_id",
            "recovered_event_id:event_id",
            "outcome:outcome",
            "error:string?",
        ],
    ),
    d(
        "end.requested",
        &[
            "origin:string",
            "reason:string?",
            "approved_spans:list(event_id)",
        ],
    ),
    d(
        "end.salvaged",
        &["end_event_id:event_id", "salvaged_spans:u64"],
    ),
    d("end.cancelled", &["end_event_id:event_id", "cause:string"]),
    d("end.expired", &["end_event_id:event_id"]),
    d("health.condition", &["code:string", "detail:string"]),
    d(
        "signal.unrecognized",
        &[
            "adapter_event:string?",
            "reason:string",
            "record:record_at?",
        ],
    ),
    d(
        "message.user",
        &[
            "record:record_at",
            "message_id:string?",
            "text:string?",
            "source:string?",
        ],
    ),
    d(
        "message.assistant",
        &[
            "record:record_at",
            "message_id:string?",
            "model:string?",
            "text:string?",
            "tool_call_ids:list(string)",
        ],
    ),
    d(
        "reasoning.recorded",
        &[
            "record:record_at",
            "message_id:string?",
            "text:string?",
            "continuation:string?",
        ],
    ),
    d(
        "usage.reported",
        &[
            "record:record_at",
            "message_id:string?",
            "model:string?",
            "input_tokens:u64?",
            "output_tokens:u64?",
            "cache_read_tokens:u64?",
            "cache_write_tokens:u64?",
            "cost:json?",
            "duration_ms:u64?",
            "time_to_first_token_ms:u64?",
            "reasoning_tokens:u64?",
            "raw:json?",
            "copied_from_session:string?",
        ],
    ),
    d(
        "usage.summary",
        &[
            "record:record_at",
            "model:string",
            "requests:u64?",
            "premium_requests:json?",
            "input_tokens:u64?",
            "output_tokens:u64?",
            "cache_read_tokens:u64?",
            "cache_write_tokens:u64?",
            "reasoning_tokens:u64?",
            "credits_nano_aiu:json?",
            "raw:json?",
        ],
    ),
    d(
        "session.metadata",
        &[
            "record:record_at",
            "agent_version:string?",
            "head_commit:string?",
            "cwd:string?",
            "model:string?",
        ],
    ),
    d(
        "tool.recorded",
        &[
            "record:record_at",
            "span_request_event_id:event_id?",
            "tool_call_id:string",
            "tool_name:string",
            "turn_id:string?",
            "success:bool?",
            "exit_code:i64?",
        ],
    ),
    d(
        "record.problem",
        &["path:string", "kind:string", "detail:string"],
    ),
    d(
        "checkpoint.recorded",
        &[
            "checkpoint_id:string",
            "origin:string",
            "offset:u64",
            "commit:observation(string)",
            "commit_source:string?",
            "effects:list(effect)",
            "cwd:string?",
        ],
    ),
    d(
        "checkpoint.located",
        &[
            "checkpoint_id:string",
            "checkpoint_event_id:event_id",
            "path:string",
            "end:u64",
            "line_id:string?",
            "line_offset:u64?",
        ],
    ),
    d(
        "restore.recorded",
        &["checkpoint_id:string", "boundary_offset:u64"],
    ),
    d(
        "session.resumed",
        &[
            "boundary_offset:u64",
            "superseded:offset_range",
            "invalidated_checkpoints:list(string)",
            "incarnation:u64",
            "checkpoint_id:string?",
            "evidence:string",
        ],
    ),
    d(
        "session.stale_signal",
        &[
            "adapter_event:string?",
            "reason:string",
            "live_incarnation:u64",
        ],
    ),
];

/// The digest of this build's contract.
pub fn schema_digest() -> blake3::Hash {
    let mut w = super::DigestWriter::new();
    w.raw(b"harnery.contract")
        .raw(&CONTRACT_GENERATION.to_le_bytes());
    for ty in DESCRIPTION {
        w.field_u32(ty.name.as_bytes()).count_u32(ty.fields.len());
        for field in ty.fields {
            w.field_u32(field.as_bytes());
        }
    }
    w.finish()
}

/// The digest as lowercase hex, as stored in `genesis.json`.
pub fn schema_digest_hex() -> String {
    schema_digest().to_hex().to_string()
}
