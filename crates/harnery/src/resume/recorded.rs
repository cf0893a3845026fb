//! What harnery's own hooks recorded about the Copilot that ran: the
//! `COPILOT_CLI_BINARY_VERSION` and `COPILOT_CLI_RESOLVED_DIST_DIR` values
//! in the envelopes of Copilot hook records. The running version can be
//! newer than the installed one (auto-update), so this is the best
//! evidence of what a resume would start.
//!
//! Records are looked for in the intake spool (not finalized yet) and in
//! the ledger's raw signals (where finalized records keep their
//! envelope's captured environment), the session's own records first,
//! then any session's, the newest receive time winning. Everything here
//! is read-only and best-effort: an unreadable spool file or ledger only
//! means less evidence, never an error.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::evidence::RunningCopilotHint;
use crate::home::Home;
use crate::ledger::LedgerReader;
use crate::spool::{IntakeSpool, SegmentItem, SegmentReader, session_key};

const VERSION_KEY: &str = "COPILOT_CLI_BINARY_VERSION";
const DIST_KEY: &str = "COPILOT_CLI_RESOLVED_DIST_DIR";
const ADAPTER: &str = "copilot";

/// One recorded value and where it was seen.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    received_ns: i64,
    value: String,
    origin: String,
}

/// The newest value of each key, preferring the session's own records.
pub fn hint_from_harnery(home: &Home, session_id: Option<&str>) -> RunningCopilotHint {
    let own_key = session_id.map(|id| session_key(Some(id)));
    let mut hint = RunningCopilotHint::default();
    if let Some(seen) = newest(home, own_key.as_deref(), VERSION_KEY) {
        hint.binary_version = Some(seen.value);
        hint.source.push(seen.origin);
    }
    if let Some(seen) = newest(home, own_key.as_deref(), DIST_KEY) {
        hint.resolved_dist_dir = Some(PathBuf::from(seen.value));
        hint.source.push(seen.origin);
    }
    hint
}

fn newest(home: &Home, own_key: Option<&str>, key: &str) -> Option<Seen> {
    let ledger = LedgerReader::open(home).ok();
    let pick = |scope: Option<&str>| {
        let spool = in_spool(home, scope, key);
        let recorded = ledger.as_ref().and_then(|l| in_ledger(l, scope, key));
        [spool, recorded]
            .into_iter()
            .flatten()
            .max_by_key(|s| s.received_ns)
    };
    own_key.and_then(|k| pick(Some(k))).or_else(|| pick(None))
}

fn in_ledger(ledger: &LedgerReader, scope: Option<&str>, key: &str) -> Option<Seen> {
    let (received_ns, session_key, env) = ledger
        .events()
        .newest_env_with(ADAPTER, scope, &format!("\"{key}\""))
        .ok()??;
    let env: BTreeMap<String, String> = serde_json::from_str(&env).ok()?;
    let value = env.get(key).filter(|v| !v.is_empty())?.clone();
    Some(Seen {
        received_ns,
        value,
        origin: format!("ledger:{session_key}@{received_ns}"),
    })
}

fn in_spool(home: &Home, scope: Option<&str>, key: &str) -> Option<Seen> {
    let spool = IntakeSpool::open(home);
    let sessions = spool.sessions().ok()?;
    let mut best: Option<Seen> = None;
    for session in sessions.iter().filter(|s| s.adapter == ADAPTER) {
        if scope.is_some_and(|k| k != session.session_key) {
            continue;
        }
        for file in session.files().ok()? {
            for seen in values_in(&file.path, key) {
                if best
                    .as_ref()
                    .is_none_or(|b| seen.received_ns > b.received_ns)
                {
                    best = Some(seen);
                }
            }
        }
    }
    best
}

fn values_in(path: &std::path::Path, key: &str) -> Vec<Seen> {
    let Ok(reader) = SegmentReader::open(path) else {
        return Vec::new();
    };
    reader
        .filter_map(|item| match item {
            Ok(SegmentItem::Record(rec)) => {
                let value = rec.envelope.env.get(key).filter(|v| !v.is_empty())?.clone();
                Some(Seen {
                    received_ns: rec.envelope.received_ns,
                    value,
                    origin: format!("spool:{}", path.display()),
                })
            }
            _ => None,
        })
        .collect()
}
