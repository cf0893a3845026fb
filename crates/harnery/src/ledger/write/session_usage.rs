//! What a session's row keeps so that its usage and its parent are read
//! from its own rows alone (migration `session_usage`), kept as events are
//! appended, in the same transaction:
//!
//! - `restored_from`: the link `restore --apply` pins on a session's first
//!   checkpoint (`<adapter>/<parent>@<checkpoint>`, as its first
//!   `restored_from` effect wrote it), `''` when the first checkpoint has
//!   none, null before the session's first checkpoint. The sessions list
//!   and the sessions page read it instead of looking for that checkpoint
//!   among the session's events.
//! - `usage_tied`: whether the session's usage may depend on another
//!   session's rows (`report::usage_calls`): 0 when not, [`BY_PARENT`]
//!   when it names a parent (a `restored_from` link, or a record copied
//!   from another session), [`BY_CALL`] when it reports a model call id
//!   another session reported before it (or a copy claimed for its
//!   parent). While no session of the epoch is tied by a call, no call is
//!   shared, and a session not tied has a `usage --session` document that
//!   its own rows give exactly as the whole epoch's would; otherwise it is
//!   tallied from every row.
//!
//! Who reported each call first is kept in `usage_calls`, keyed by 64 bits
//! of the call id's BLAKE3 and holding 64 bits of the session's (0 for a
//! call a copy claimed for its parent: whoever reports it is tied). Two
//! call ids sharing a key can only tie a session that need not be (it is
//! then tallied from every row: slower, the same figures).
//!
//! Rows an older build wrote are filled once, by [`fill_pending`], when a
//! writer first opens the epoch: every event in chain order, through the
//! reader's own row reads, as if appended again.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};

use super::LedgerError;
use super::session_list::Superseding;
use super::usage_sums::UsageSums;
use crate::contract::{Event, Payload, SessionRef};
use crate::ledger::read::{RESTORED_FROM, USAGE_PENDING};
use crate::ledger::{LedgerReader, RowFilter, ValidationProblem};
use crate::report::usage_kinds::normalized;

/// The session a copy claims a call for: not a session's own key.
const CLAIMED_BY_COPY: i64 = 0;

/// `usage_tied`: the session names a parent.
const BY_PARENT: i64 = 1;
/// `usage_tied`: another session reported one of its calls first.
const BY_CALL: i64 = 2;

const LOAD: &str =
    "SELECT restored_from, usage_tied FROM sessions WHERE adapter = ?1 AND session_id = ?2";
const STORE: &str = "UPDATE sessions SET restored_from = ?3, usage_tied = ?4 WHERE adapter = ?1 AND session_id = ?2";
const FIRST: &str = "SELECT session FROM usage_calls WHERE call = ?1";
const CLAIM: &str = "INSERT INTO usage_calls (call, session) VALUES (?1, ?2)";

/// One session's kept usage facts, for one batch.
#[derive(Debug, Clone, Default)]
struct Kept {
    restored_from: Option<String>,
    /// 0, [`BY_PARENT`] or [`BY_CALL`]: the strongest tie seen.
    tied: i64,
}

/// The usage facts of a batch's sessions, noted event by event and stored
/// once the batch's session rows are written. Without a connection (what
/// `validate` derives to compare), the call owners are kept in memory and
/// every session starts with nothing noted.
pub(super) struct SessionUsage<'c> {
    conn: Option<&'c Connection>,
    sessions: HashMap<SessionRef, Kept>,
    calls: HashMap<i64, i64>,
    sums: UsageSums,
    /// What the list keeps of the batch's resumes (`session_list`).
    superseding: Superseding,
}

impl<'c> SessionUsage<'c> {
    pub(super) fn new(conn: &'c Connection) -> SessionUsage<'c> {
        SessionUsage {
            conn: Some(conn),
            sessions: HashMap::new(),
            calls: HashMap::new(),
            sums: UsageSums::default(),
            superseding: Superseding::default(),
        }
    }

    fn in_memory() -> SessionUsage<'static> {
        SessionUsage {
            conn: None,
            sessions: HashMap::new(),
            calls: HashMap::new(),
            sums: UsageSums::default(),
            superseding: Superseding::default(),
        }
    }

    /// Note what `e` says of its session's parent and calls, and of
    /// ranges its resumes supersede.
    pub(super) fn note(&mut self, e: &Event) -> Result<(), LedgerError> {
        match &e.payload {
            Payload::SessionResumed(_) => self.superseding.note(e),
            Payload::CheckpointRecorded(c) => {
                let link = c.effects.iter().find(|x| x.kind == RESTORED_FROM);
                let kept = self.kept(&e.session)?;
                if kept.restored_from.is_none() {
                    let reference = link.map_or(String::new(), |x| x.reference.clone());
                    kept.restored_from = Some(reference);
                }
                // A later checkpoint's link is still one the tally follows.
                if link.is_some() {
                    kept.tied = kept.tied.max(BY_PARENT);
                }
            }
            Payload::UsageReported(u) => {
                // Whether the session reported this call before: a copy
                // (what the sums of an untied session need).
                let mut again = false;
                let tied = match (&u.copied_from_session, &u.message_id) {
                    (Some(_), Some(id)) => {
                        self.claim(&e.session, id, CLAIMED_BY_COPY)?;
                        BY_PARENT
                    }
                    (Some(_), None) => BY_PARENT,
                    (None, Some(id)) => {
                        let mine = session_key(&e.session);
                        let (first, fresh) = self.claim(&e.session, id, mine)?;
                        again = !fresh;
                        match first == mine {
                            true => 0,
                            false => BY_CALL,
                        }
                    }
                    (None, None) => 0,
                };
                let kept = self.kept(&e.session)?;
                kept.tied = kept.tied.max(tied);
                let u = normalized(e.session.adapter, u);
                self.sums.add(self.conn, &e.session, &u, again)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Who reported call `id` first (`by` when nobody had), and whether
    /// nobody had.
    fn claim(
        &mut self,
        session: &SessionRef,
        id: &str,
        by: i64,
    ) -> Result<(i64, bool), LedgerError> {
        let call = call_key(session, id);
        let Some(conn) = self.conn else {
            let fresh = !self.calls.contains_key(&call);
            return Ok((*self.calls.entry(call).or_insert(by), fresh));
        };
        let first: Option<i64> = conn
            .prepare_cached(FIRST)?
            .query_row([call], |r| r.get(0))
            .optional()?;
        if let Some(first) = first {
            return Ok((first, false));
        }
        conn.prepare_cached(CLAIM)?.execute([call, by])?;
        Ok((by, true))
    }

    fn kept(&mut self, session: &SessionRef) -> Result<&mut Kept, LedgerError> {
        if !self.sessions.contains_key(session) {
            let stored = match self.conn {
                None => None,
                Some(conn) => conn
                    .prepare_cached(LOAD)?
                    .query_row(params![session.adapter.as_str(), session.session_id], |r| {
                        Ok(Kept {
                            restored_from: r.get(0)?,
                            tied: r.get(1)?,
                        })
                    })
                    .optional()?,
            };
            self.sessions
                .insert(session.clone(), stored.unwrap_or_default());
        }
        Ok(self
            .sessions
            .get_mut(session)
            .expect("the session was just inserted"))
    }

    /// Write what was noted onto the session rows (written already).
    pub(super) fn store(self) -> Result<(), LedgerError> {
        let Some(conn) = self.conn else {
            return Ok(());
        };
        self.sums.store(conn)?;
        self.superseding.store(conn)?;
        let mut stmt = conn.prepare_cached(STORE)?;
        for (session, kept) in &self.sessions {
            stmt.execute(params![
                session.adapter.as_str(),
                session.session_id,
                kept.restored_from,
                kept.tied
            ])?;
        }
        Ok(())
    }
}

/// 64 bits of BLAKE3 over `parts`, each length-prefixed.
fn key_of(parts: &[&[u8]]) -> i64 {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let bytes: [u8; 8] = h.finalize().as_bytes()[..8]
        .try_into()
        .expect("a BLAKE3 hash is 32 bytes");
    i64::from_le_bytes(bytes)
}

/// A session's key in `usage_calls` (never [`CLAIMED_BY_COPY`]).
fn session_key(s: &SessionRef) -> i64 {
    match key_of(&[s.adapter.as_str().as_bytes(), s.session_id.as_bytes()]) {
        CLAIMED_BY_COPY => 1,
        k => k,
    }
}

/// A model call's key: its id within its agent.
fn call_key(s: &SessionRef, id: &str) -> i64 {
    key_of(&[s.adapter.as_str().as_bytes(), id.as_bytes()])
}

/// The prefilter of the fill: a row whose text holds neither is not usage
/// nor a checkpoint, unparsed.
const USAGE: &[u8] = b"\"usage.reported\"";
const CHECKPOINT: &[u8] = b"\"checkpoint.recorded\"";

/// Fill the rows of a ledger from before `session_usage` (the migration
/// left [`USAGE_PENDING`] in `meta`): every event in chain order, noted as
/// an append notes it, in one transaction that also clears the mark. A row
/// whose text does not parse says nothing here; `validate` names it.
pub(super) fn fill_pending(ledger: &LedgerReader) -> Result<(), LedgerError> {
    let conn = &ledger.conn;
    let pending: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM meta WHERE key = ?1)",
        [USAGE_PENDING],
        |r| r.get(0),
    )?;
    if !pending {
        return Ok(());
    }
    let tx = conn.unchecked_transaction()?;
    tx.execute_batch(
        "DELETE FROM usage_calls; DELETE FROM usage_sums; \
         UPDATE sessions SET restored_from = NULL, usage_tied = 0, reported_cost = NULL, \
         cost_records = 0, cost_unreadable = 0;",
    )?;
    let mut usage = SessionUsage::new(&tx);
    note_every_row(ledger, &mut usage)?;
    usage.store()?;
    tx.execute("DELETE FROM meta WHERE key = ?1", [USAGE_PENDING])?;
    tx.commit()?;
    Ok(())
}

/// Note every event of `ledger`, in chain order, that can say something.
fn note_every_row(ledger: &LedgerReader, usage: &mut SessionUsage) -> Result<(), LedgerError> {
    ledger
        .events()
        .for_each_stored_text(&RowFilter::default(), |row| {
            let found = |needle| memchr::memmem::find(row.json, needle).is_some();
            if !found(USAGE) && !found(CHECKPOINT) {
                return Ok(());
            }
            match serde_json::from_slice::<Event>(row.json) {
                Ok(e) => usage.note(&e),
                Err(_) => Ok::<(), LedgerError>(()),
            }
        })
}

/// What `validate` finds wrong with the kept usage facts: each session
/// row's link and tie, and each call's owner, against what its events
/// give (nothing when the epoch does not keep them).
pub(crate) fn check(ledger: &LedgerReader) -> Result<Vec<ValidationProblem>, LedgerError> {
    let mut out = super::session_list::check(ledger)?;
    if !ledger.sessions().keeps_usage()? {
        return Ok(out);
    }
    let mut usage = SessionUsage::in_memory();
    note_every_row(ledger, &mut usage)?;
    let mut stmt = ledger.conn.prepare(
        "SELECT adapter, session_id, restored_from, usage_tied FROM sessions ORDER BY adapter, session_id",
    )?;
    // A row whose text is damaged is read lossily here: `validate` names
    // it as an unreadable row elsewhere.
    let text = |r: &rusqlite::Row, i| -> rusqlite::Result<Option<String>> {
        let v = r.get_ref(i)?;
        Ok(v.as_bytes_or_null()?
            .map(|b| String::from_utf8_lossy(b).into_owned()))
    };
    let read = stmt.query_map([], |r| {
        Ok((
            text(r, 0)?.unwrap_or_default(),
            text(r, 1)?.unwrap_or_default(),
            text(r, 2)?,
            r.get::<_, i64>(3)?,
        ))
    })?;
    let mut derived: HashMap<(String, String), Kept> = std::mem::take(&mut usage.sessions)
        .into_iter()
        .map(|(s, k)| ((s.adapter.as_str().to_string(), s.session_id), k))
        .collect();
    for row in read {
        let (adapter, id, link, tied) = row?;
        let want = derived
            .remove(&(adapter.clone(), id.clone()))
            .unwrap_or_default();
        if (&link, tied) != (&want.restored_from, want.tied) {
            out.push(ValidationProblem {
                event_id: format!("{adapter}/{id}"),
                rule: "session-usage".into(),
                detail: format!(
                    "the session row keeps link {link:?} and tie {tied}, its events give {:?} and {}",
                    want.restored_from, want.tied
                ),
            });
        }
    }
    drop(stmt);
    let kept: HashMap<i64, i64> = ledger
        .conn
        .prepare("SELECT call, session FROM usage_calls")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    if kept != usage.calls {
        let wrong = usage
            .calls
            .iter()
            .filter(|(call, by)| kept.get(call) != Some(by))
            .count()
            + kept.keys().filter(|c| !usage.calls.contains_key(c)).count();
        out.push(ValidationProblem {
            event_id: "usage_calls".into(),
            rule: "session-usage".into(),
            detail: format!("{wrong} call owners differ from those the events give"),
        });
    }
    Ok(out)
}

/// Clear the mark on a new epoch's database: it has no rows to fill.
pub(super) fn none_pending(conn: &Connection) -> Result<(), LedgerError> {
    conn.execute("DELETE FROM meta WHERE key = ?1", [USAGE_PENDING])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{AdapterId, Provenance, RecordAt, UsageReported};
    use crate::report::testkit::Script;
    use crate::report::usage::{GroupBy, Prices, UsageTally};
    use crate::report::usage_sums::group_of;

    #[test]
    fn the_keys_of_stored_rows_are_pinned() {
        let s = SessionRef {
            adapter: AdapterId::ClaudeCode,
            session_id: "a".into(),
        };
        // Golden values: the keys of stored rows must never move.
        assert_eq!(session_key(&s), 1_058_205_211_932_729_945);
        assert_eq!(call_key(&s, "msg_1"), -3_146_353_757_493_628_907);
    }

    fn report(
        id: Option<&str>,
        model: Option<&str>,
        tokens: [Option<u64>; 5],
        cost: Option<&str>,
    ) -> Payload {
        Payload::UsageReported(UsageReported {
            record: RecordAt {
                path: "t.jsonl".into(),
                offset: 0,
            },
            message_id: id.map(String::from),
            model: model.map(String::from),
            input_tokens: tokens[0],
            output_tokens: tokens[1],
            cache_read_tokens: tokens[2],
            cache_write_tokens: tokens[3],
            reasoning_tokens: tokens[4],
            cost: cost.map(|c| crate::contract::Json::parse(c).unwrap()),
            duration_ms: None,
            time_to_first_token_ms: None,
            raw: None,
            copied_from_session: None,
        })
    }

    /// The sums a session's usage keeps give, priced at read, the group
    /// the tally over its events gives, field for field (the same float
    /// bytes): several models, a record read twice, cost lines alone, an
    /// unreadable cost, a model without a price, a kind without a price
    /// (unpriced where not zero), no model at all.
    #[test]
    fn the_kept_sums_give_the_tallys_group() {
        let prices = Prices::parse(
            "[models.a]\ninput = 3.0\noutput = 15.0\ncache_read = 0.3\ncache_write = 3.75\n\
             [models.b]\ninput = 1.25\noutput = 10.0\n",
        )
        .unwrap();
        let mut s = Script::new("s");
        let some = |n: u64| Some(n);
        let reports = [
            report(
                Some("1"),
                Some("a"),
                [some(12), some(340), some(9_000), some(77), None],
                None,
            ),
            report(
                Some("2"),
                Some("a"),
                [some(3), some(1), None, None, None],
                Some("0.0123"),
            ),
            report(
                Some("1"),
                Some("a"),
                [some(12), some(340), some(9_000), some(77), None],
                None,
            ),
            report(None, Some("a"), [None; 5], Some("0.1")),
            report(None, Some("a"), [None; 5], Some("0.2")),
            report(
                Some("3"),
                Some("b"),
                [some(5), some(6), some(0), None, some(4)],
                None,
            ),
            report(
                Some("4"),
                Some("b"),
                [some(5), some(6), some(10), None, None],
                Some("\"x\""),
            ),
            report(
                Some("5"),
                Some("c"),
                [some(1), some(2), None, None, None],
                None,
            ),
            report(Some("6"), None, [some(1), None, None, None, None], None),
            report(Some("7"), Some("b"), [None; 5], None),
            report(
                Some("8"),
                Some("a"),
                [some(7), some(0), some(1), some(1), None],
                Some("0.7"),
            ),
        ];
        for (i, r) in reports.into_iter().enumerate() {
            s.push(i as i64, r, Provenance::NATIVE);
        }
        let events = s.events();
        let mut usage = SessionUsage::in_memory();
        let mut tally = UsageTally::new(GroupBy::Session, Some(prices.clone()));
        for e in &events {
            usage.note(e).unwrap();
            tally.add(e);
        }
        let kept = usage.sums.stored(&events[0].session);
        let group = group_of(&kept, Some(&prices));
        assert_eq!(group, tally.total);
        assert_eq!(group.inherited_records, 1);
        assert_eq!(group.unpriced_records, Some(3));
        assert!(group.priced_cost.is_some() && group.reported_cost.is_some());
        assert_eq!(group_of(&kept, None), {
            let mut t = UsageTally::new(GroupBy::Session, None);
            events.iter().for_each(|e| t.add(e));
            t.total
        });
    }
}
