//! Asking for a checkpoint (`harnery checkpoint`): a `harnery.checkpoint`
//! signal appended to the session's intake spool, so that it lands in
//! order with the session's own signals and is pinned at the offset the
//! session is at when `finalize` applies it. The first checkpoint
//! recorded under an id stands (`log`).

use crate::agents::harnery::{CHECKPOINT, CheckpointPayload, OperatorEffect};
use crate::operator::Target;
use crate::spool::{AppendReceipt, SpoolError};

/// A checkpoint request that was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("--id must not be empty")]
    EmptyId,
    #[error(transparent)]
    Spool(#[from] SpoolError),
}

/// `KIND:REF`, both parts non-empty: an effect a restore cannot undo.
pub fn parse_effect(text: &str) -> Result<OperatorEffect, String> {
    match text.split_once(':') {
        Some((kind, reference)) if !kind.is_empty() && !reference.is_empty() => {
            Ok(OperatorEffect {
                kind: kind.into(),
                reference: reference.into(),
            })
        }
        _ => Err(format!(
            "{text:?} is not KIND:REF (e.g. deploy:prod-42): both parts must be non-empty"
        )),
    }
}

/// Record the request for `target` at `now`: under `id`, else
/// `cp-<now in unix ns>`. Says what was asked and where it went.
pub fn request(
    target: &Target,
    id: Option<&str>,
    commit: Option<String>,
    effects: Vec<OperatorEffect>,
    now: i64,
) -> Result<(CheckpointPayload, AppendReceipt), RequestError> {
    if id.is_some_and(|id| id.trim().is_empty()) {
        return Err(RequestError::EmptyId);
    }
    let payload = CheckpointPayload {
        checkpoint_id: id.map_or_else(|| format!("cp-{now}"), str::to_string),
        commit,
        effects,
    };
    let receipt = target.append(CHECKPOINT, &payload, now)?;
    Ok((payload, receipt))
}
