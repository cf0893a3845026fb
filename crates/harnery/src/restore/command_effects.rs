//! `harnery exec` commands as effects. harnery attests command telemetry
//! as derived, so the producer's effect ledger, which takes native closes
//! only, leaves them out of every checkpoint; they are joined on the read
//! side, the same way for the checkpoints (`log`: each to the checkpoint
//! that first pins past its completion) and for a restore's seed
//! (`seed_effects`).

use std::collections::BTreeMap;

use crate::contract::{Effect, Event, Payload};
use crate::session::effects::command_effect;

/// One command, paired: where its completion stands, and the effect.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PairedCommand {
    /// The offset of its completion.
    pub closed_at: u64,
    pub effect: Effect,
    /// Closed by a derived terminal (a recovery): it may have run.
    pub derived: bool,
}

/// The commands among `events` (live ones, in offset order), each paired
/// with its completion; the requests no completion closed follow, still
/// open.
pub(crate) fn pair(events: impl IntoIterator<Item = Event>) -> (Vec<PairedCommand>, Vec<Effect>) {
    let mut open: BTreeMap<String, Effect> = BTreeMap::new();
    let mut closed = Vec::new();
    for e in events {
        match &e.payload {
            Payload::CommandRequested(p) => {
                open.insert(e.id.as_str().to_string(), command_effect(&e, &p.argv));
            }
            Payload::CommandCompleted(p) => {
                let Some(requested) = &p.requested_event_id else {
                    continue;
                };
                if let Some(mut effect) = open.remove(requested.as_str()) {
                    effect.outcome = Some(p.outcome);
                    effect.exit_code = p.exit_code;
                    closed.push(PairedCommand {
                        closed_at: e.offset,
                        effect,
                        derived: p.recovery.is_some(),
                    });
                }
            }
            _ => {}
        }
    }
    (closed, open.into_values().collect())
}
