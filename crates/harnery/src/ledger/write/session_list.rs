//! What the sessions list reads beside a session's row (migration
//! `session_list`), kept as batches are appended, in the same transaction,
//! so that a listing reads no events and no producer state:
//!
//! - `sessions.superseding`: how many of the session's `session.resumed`
//!   events supersede a range (a resume after `restore --apply`). While it
//!   is 0, the row's turn and span counts and its audit reasons are what
//!   the list shows; only a session a restore rewound has its superseded
//!   ranges read from its events.
//! - `session_records`: the problem finalize last reported for the
//!   session's own record (`removed`, `missing`, ...), as the record cursor
//!   of the producer state the batch stores for it says; one row for each
//!   session that has one.
//!
//! Rows an older build wrote are filled once, by [`fill_pending`], when a
//! writer first opens the epoch: in one transaction that also clears the
//! mark, so a fill cut short leaves the mark and is done again whole.

use std::collections::HashMap;

use rusqlite::{Connection, params};

use super::LedgerError;
use crate::contract::{Event, Payload, SessionRef};
use crate::ledger::read::LIST_PENDING;
use crate::ledger::{LedgerReader, RowFilter, ValidationProblem};
use crate::session::RecordCursor;

const ADD_SUPERSEDING: &str =
    "UPDATE sessions SET superseding = superseding + ?3 WHERE adapter = ?1 AND session_id = ?2";
const SET_PROBLEM: &str =
    "INSERT OR REPLACE INTO session_records (adapter, session_id, problem) VALUES (?1, ?2, ?3)";
const CLEAR_PROBLEM: &str = "DELETE FROM session_records WHERE adapter = ?1 AND session_id = ?2";

/// The superseding resumes of a batch's sessions, noted event by event and
/// added once the batch's session rows are written.
#[derive(Debug, Default)]
pub(super) struct Superseding {
    sessions: HashMap<SessionRef, i64>,
}

impl Superseding {
    /// Note a resume that supersedes a range.
    pub(super) fn note(&mut self, e: &Event) {
        if let Payload::SessionResumed(r) = &e.payload
            && !r.superseded.is_empty()
        {
            *self.sessions.entry(e.session.clone()).or_default() += 1;
        }
    }

    /// Add what was noted onto the session rows (written already).
    pub(super) fn store(&self, conn: &Connection) -> Result<(), LedgerError> {
        if self.sessions.is_empty() {
            return Ok(());
        }
        let mut stmt = conn.prepare_cached(ADD_SUPERSEDING)?;
        for (session, n) in &self.sessions {
            stmt.execute(params![session.adapter.as_str(), session.session_id, n])?;
        }
        Ok(())
    }
}

/// The record problem a stored producer state names (`None`: none, or a
/// state that does not parse, as `report::record_state` reads it).
fn problem_of(state: &str) -> Option<String> {
    RecordCursor::of_state(state).and_then(|c| c.problem)
}

/// Keep the record problem of each producer state a batch stores (its
/// session and the state's text).
pub(super) fn note_states<'a>(
    conn: &Connection,
    states: impl Iterator<Item = (&'a SessionRef, &'a str)>,
) -> Result<(), LedgerError> {
    for (session, state) in states {
        keep_problem(conn, session, problem_of(state).as_deref())?;
    }
    Ok(())
}

fn keep_problem(
    conn: &Connection,
    session: &SessionRef,
    problem: Option<&str>,
) -> Result<(), LedgerError> {
    let key = (session.adapter.as_str(), session.session_id.as_str());
    match problem {
        Some(p) => conn
            .prepare_cached(SET_PROBLEM)?
            .execute(params![key.0, key.1, p])?,
        None => conn
            .prepare_cached(CLEAR_PROBLEM)?
            .execute(params![key.0, key.1])?,
    };
    Ok(())
}

/// The prefilter of the fill: a row whose text does not hold it is no
/// resume, unparsed.
const RESUMED: &[u8] = b"\"session.resumed\"";

/// Every superseding resume of `ledger`'s events, by session. A row whose
/// text does not parse says nothing here; `validate` names it.
fn superseding_of(ledger: &LedgerReader) -> Result<Superseding, LedgerError> {
    let mut out = Superseding::default();
    ledger
        .events()
        .for_each_stored_text(&RowFilter::default(), |row| {
            if memchr::memmem::find(row.json, RESUMED).is_none() {
                return Ok(());
            }
            if let Ok(e) = serde_json::from_slice::<Event>(row.json) {
                out.note(&e);
            }
            Ok::<(), LedgerError>(())
        })?;
    Ok(out)
}

/// Every session's record problem as its stored producer state names it.
/// A state that cannot be read names none (the list reads it so).
fn problems_of(ledger: &LedgerReader) -> Result<HashMap<SessionRef, String>, LedgerError> {
    let mut out = HashMap::new();
    for session in ledger.bookkeeping().producer_sessions()? {
        let state = match ledger.bookkeeping().producer_state(&session) {
            Ok(state) => state,
            Err(LedgerError::Unreadable(_)) => None,
            Err(e) => return Err(e),
        };
        if let Some(p) = state.as_deref().and_then(problem_of) {
            out.insert(session, p);
        }
    }
    Ok(out)
}

/// Fill the rows of a ledger from before `session_list` (the migration
/// left [`LIST_PENDING`] in `meta`), in one transaction that also clears
/// the mark.
pub(super) fn fill_pending(ledger: &LedgerReader) -> Result<(), LedgerError> {
    let conn = &ledger.conn;
    let pending: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM meta WHERE key = ?1)",
        [LIST_PENDING],
        |r| r.get(0),
    )?;
    if !pending {
        return Ok(());
    }
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch("UPDATE sessions SET superseding = 0; DELETE FROM session_records;")?;
    superseding_of(ledger)?.store(&tx)?;
    for (session, problem) in problems_of(ledger)? {
        keep_problem(&tx, &session, Some(&problem))?;
    }
    tx.execute("DELETE FROM meta WHERE key = ?1", [LIST_PENDING])?;
    tx.commit()?;
    Ok(())
}

/// Clear the mark on a new epoch's database: it has no rows to fill.
pub(super) fn none_pending(conn: &Connection) -> Result<(), LedgerError> {
    conn.execute("DELETE FROM meta WHERE key = ?1", [LIST_PENDING])?;
    Ok(())
}

/// What `validate` finds wrong with what the list reads beside the rows:
/// each session row's superseding resumes against its events, and each
/// kept record problem against the session's producer state (nothing when
/// the epoch does not keep them).
pub(crate) fn check(ledger: &LedgerReader) -> Result<Vec<ValidationProblem>, LedgerError> {
    if !ledger.sessions().keeps_list()? {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let derived = superseding_of(ledger)?.sessions;
    let mut stmt = ledger.conn.prepare(
        "SELECT adapter, session_id, superseding FROM sessions ORDER BY adapter, session_id",
    )?;
    let text = |r: &rusqlite::Row, i| -> rusqlite::Result<String> {
        let v = r.get_ref(i)?;
        Ok(v.as_bytes_or_null()?
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default())
    };
    let rows = stmt.query_map([], |r| Ok((text(r, 0)?, text(r, 1)?, r.get::<_, i64>(2)?)))?;
    let mut want: HashMap<(String, String), i64> = derived
        .into_iter()
        .map(|(s, n)| ((s.adapter.as_str().to_string(), s.session_id), n))
        .collect();
    for row in rows {
        let (adapter, id, kept) = row?;
        let n = want.remove(&(adapter.clone(), id.clone())).unwrap_or(0);
        if kept != n {
            out.push(ValidationProblem {
                event_id: format!("{adapter}/{id}"),
                rule: "session-list".into(),
                detail: format!(
                    "the session row counts {kept} superseding resumes, its events give {n}"
                ),
            });
        }
    }
    drop(stmt);
    let mut want: HashMap<(String, String), String> = problems_of(ledger)?
        .into_iter()
        .map(|(s, p)| ((s.adapter.as_str().to_string(), s.session_id), p))
        .collect();
    let mut stmt = ledger.conn.prepare(
        "SELECT adapter, session_id, problem FROM session_records ORDER BY adapter, session_id",
    )?;
    let rows = stmt.query_map([], |r| Ok((text(r, 0)?, text(r, 1)?, text(r, 2)?)))?;
    let mut wrong = |session: String, detail: String| {
        out.push(ValidationProblem {
            event_id: session,
            rule: "session-list".into(),
            detail,
        })
    };
    for row in rows {
        let (adapter, id, kept) = row?;
        match want.remove(&(adapter.clone(), id.clone())) {
            Some(p) if p == kept => {}
            found => wrong(
                format!("{adapter}/{id}"),
                format!(
                    "the list keeps record problem {kept:?}, the producer state names {found:?}"
                ),
            ),
        }
    }
    let mut missing: Vec<_> = want.into_iter().collect();
    missing.sort();
    for ((adapter, id), p) in missing {
        wrong(
            format!("{adapter}/{id}"),
            format!("the producer state names record problem {p:?}, the list keeps none"),
        );
    }
    Ok(out)
}
