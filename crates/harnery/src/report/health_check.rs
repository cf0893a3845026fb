//! Everything `harnery health` looks at, gathered in one place: the
//! conditions of the live ledger (span caps, ends, records, rows set
//! aside, raw-archive faults) and of the spool (damage, dead letters,
//! stale sessions), agents whose sessions never reach the spool
//! ([`crate::report::unhooked`]), a finalize that stopped running
//! ([`finalize_overdue`]), with the archive's size and the spool's
//! facts, for the command and for `harnery serve` alike; and the end
//! requests still pending (`harnery end --list`).

use crate::home::Home;
use crate::ledger::integrity::RawFault;
use crate::ledger::{ArchiveSize, LedgerError};
use crate::report::finalize_overdue::{self, FinalizeFacts};
use crate::report::health::{Condition, SpoolFacts, USAGE_IDS_SHARED, spool_conditions};
use crate::report::source::SourceError;
use crate::report::unhooked::{self, AgentRecordDir};
use std::collections::HashSet;

/// What a health check found.
pub struct HealthReport {
    pub conditions: Vec<Condition>,
    /// The raw archive's size on disk beside its original size, when the
    /// live ledger could be read.
    pub archive: Option<ArchiveSize>,
    pub spool: SpoolFacts,
    /// The last finalize run and the signals waiting for the next.
    pub finalize: FinalizeFacts,
}

impl HealthReport {
    /// Whether a condition asks for a look: notes alone (a record the
    /// agent deleted after it was read) are not something to fix.
    pub fn needs_attention(&self) -> bool {
        !self.conditions.iter().all(Condition::is_note)
    }
}

/// A staleness limit given in hours, in nanoseconds.
pub fn hours_to_ns(hours: f64) -> i64 {
    (hours * 3600.0 * 1e9) as i64
}

/// The end requests not yet settled.
#[derive(serde::Serialize)]
pub struct EndListing {
    /// Read by `finalize`, not yet salvaged, cancelled or expired.
    pub pending: Vec<crate::report::health::PendingEnd>,
    /// Still in the intake spool: the next `finalize` reads them.
    pub spooled: Vec<crate::report::spool_facts::SpooledEnd>,
}

/// The pending end requests of the live ledger (none without one) and
/// those still in the spool.
pub fn end_requests(home: &Home) -> Result<EndListing, HealthError> {
    let pending = match crate::report::source::live_or_none(home)? {
        Some(ledger) => crate::report::session_rows::pending_ends(&ledger)?,
        None => Vec::new(),
    };
    Ok(EndListing {
        pending,
        spooled: crate::report::spool_facts::spooled_ends(home)?,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum HealthError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Spool(#[from] crate::spool::SpoolError),
}

/// Check `home` at `now_ns`; a session spool holding data older than
/// `stale_ns` is stale; `agents` are the record directories to compare
/// with what harnery saw ([`AgentRecordDir::from_env`]).
pub fn gather(
    home: &Home,
    now_ns: i64,
    stale_ns: i64,
    agents: &[AgentRecordDir],
) -> Result<HealthReport, HealthError> {
    let mut archive = None;
    let mut known = HashSet::new();
    let mut began_ns = None;
    let mut conditions = match crate::report::source::live_or_none(home) {
        Ok(Some(ledger)) => {
            archive = ledger.raw().size().ok();
            began_ns = Some(ledger.genesis().created_unix_ns);
            known.extend(ledger.bookkeeping().producer_sessions()?);
            let mut found = crate::report::session_rows::conditions(&ledger, now_ns)?;
            found.extend(crate::report::health::record_conditions(&ledger, now_ns)?);
            found.extend(ledger.raw().faults()?.into_iter().map(damaged));
            found.extend(crate::report::health::set_aside_conditions(&ledger));
            found.extend(shared_call_conditions(&ledger)?);
            found
        }
        Ok(None) => Vec::new(),
        Err(SourceError::Ledger(e)) => vec![damaged(e.damage().ok_or(e)?)],
        Err(e) => return Err(e.into()),
    };
    let spool = crate::report::spool_facts::gather(home)?;
    conditions.extend(spool_conditions(&spool, now_ns, stale_ns));
    let mut finalize = finalize_overdue::facts(home, &spool);
    conditions.extend(finalize_overdue::condition(home, &mut finalize, now_ns));
    // Harnery began recording here when the live epoch began, or (before
    // any finalize) with the oldest record still in the spool.
    let spooled_since = spool.sessions.iter().map(|s| s.oldest_unix_ns).min();
    if let Some(since_ns) = began_ns.or(spooled_since) {
        known.extend(crate::report::spool_facts::spooled_sessions(home)?);
        conditions.extend(unhooked::conditions(agents, &known, since_ns, now_ns));
    }
    Ok(HealthReport {
        conditions,
        archive,
        spool,
        finalize,
    })
}

/// The line `harnery health --json` prints for `condition`.
pub fn condition_json(condition: &Condition) -> serde_json::Value {
    let mut v = serde_json::to_value(condition).expect("a condition serializes");
    if condition.is_note() {
        v["note"] = serde_json::Value::Bool(true);
    }
    v
}

impl HealthReport {
    /// The line `harnery health --json` prints for `condition`, one of
    /// this report's: [`condition_json`], and for `finalize_overdue` the
    /// [`FinalizeFacts`] beside the condition's own fields.
    pub fn condition_json(&self, condition: &Condition) -> serde_json::Value {
        let mut v = condition_json(condition);
        if condition.code == finalize_overdue::FINALIZE_OVERDUE
            && let (Some(line), serde_json::Value::Object(facts)) = (
                v.as_object_mut(),
                serde_json::to_value(&self.finalize).expect("the facts serialize"),
            )
        {
            line.extend(facts);
        }
        v
    }
}

/// How many shared ids a condition names before it only counts them.
const SHARED_IDS_NAMED: usize = 5;

/// `usage_ids_shared`: model call ids that two sessions, neither a copy
/// of the other, both reported (a proxy or a local model that does not
/// make ids unique). Each session keeps its calls' tokens; this says
/// which sessions and ids, so that a real copy harnery could not prove
/// is found by a person. A note: nothing is wrong with the record.
fn shared_call_conditions(
    ledger: &crate::ledger::LedgerReader,
) -> Result<Vec<Condition>, LedgerError> {
    use crate::report::usage::{GroupBy, UsageTally, tally_ledger};
    let mut tally = UsageTally::new(GroupBy::Session, None);
    tally_ledger(ledger, &crate::ledger::RowFilter::default(), &mut tally)?;
    let conditions = tally.shared_calls().into_iter().map(|shared| {
        let named: Vec<&str> = shared
            .ids
            .iter()
            .take(SHARED_IDS_NAMED)
            .map(String::as_str)
            .collect();
        let more = shared.ids.len() - named.len();
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        Condition {
            code: USAGE_IDS_SHARED.into(),
            session: Some(crate::contract::SessionRef {
                adapter: shared.adapter,
                session_id: shared.then.clone(),
            }),
            at_unix_ns: None,
            detail: format!(
                "{} model call id(s) also reported by {}/{}, which this session is no copy of: \
                 counted in both ({}{more})",
                shared.ids.len(),
                shared.adapter,
                shared.first,
                named.join(", ")
            ),
        }
    });
    Ok(conditions.collect())
}

/// A live epoch file that is not what the ledger recorded: `home_damaged`,
/// the condition under which `harnery finalize` refuses to run.
fn damaged(fault: RawFault) -> Condition {
    Condition {
        code: "home_damaged".into(),
        session: None,
        at_unix_ns: None,
        detail: format!(
            "{} {}; {}",
            fault.path.display(),
            fault.what,
            crate::ledger::integrity::recovery(&fault.path)
        ),
    }
}
