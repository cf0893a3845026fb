//! Events: a session's events in offset order, every event streamed in
//! chain order (parsed, or as its stored text), one event's time, the
//! event count, and the newest captured agent environment.

use rusqlite::{OptionalExtension, params};

use super::{DamagedRow, LedgerReader};
use crate::contract::{Event, EventType, SessionRef};
use crate::ledger::LedgerError;

/// One event row as stored: the chain position, the stored text and hash.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub seq: i64,
    pub json: String,
    pub hash: Vec<u8>,
    pub event: Event,
}

/// Which event rows a stream yields: one session's (by its offset
/// index, in offset order) or every session's (in chain order), and only
/// those at or after a time. The filters combine.
#[derive(Debug, Clone, Default)]
pub struct RowFilter {
    pub session: Option<SessionRef>,
    pub since_unix_ns: Option<i64>,
}

/// One event row's stored text, borrowed for the length of a callback:
/// nothing is parsed, so a damaged row still arrives, to be judged by
/// whoever reads it.
#[derive(Debug, Clone, Copy)]
pub struct StoredText<'r> {
    pub seq: i64,
    pub id: &'r str,
    pub json: &'r [u8],
}

/// The canonical events a ledger holds: a session's, all of them, or their stored text streamed.
pub struct Events<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Events<'_> {
    /// One session's events in offset order.
    pub fn session_events(&self, session: &SessionRef) -> Result<Vec<Event>, LedgerError> {
        let mut stmt = self.r.conn.prepare_cached(
            "SELECT json FROM events WHERE adapter = ?1 AND session_id = ?2 ORDER BY offset",
        )?;
        let rows = stmt.query_map(params![session.adapter.as_str(), session.session_id], |r| {
            r.get::<_, String>(0)
        })?;
        let mut out = Vec::new();
        for json in rows {
            out.push(self.parse_event(&json?)?);
        }
        Ok(out)
    }

    /// [`Events::session_events`], but a row whose text does not parse is
    /// set aside, named by its sequence number, and the rest still read.
    pub(crate) fn session_events_lenient(
        &self,
        session: &SessionRef,
    ) -> Result<(Vec<Event>, Vec<DamagedRow>), LedgerError> {
        let mut stmt = self.r.conn.prepare_cached(
            "SELECT seq, id, CAST(json AS BLOB) FROM events WHERE adapter = ?1 AND session_id = ?2 ORDER BY offset",
        )?;
        let mut rows = stmt.query(params![session.adapter.as_str(), session.session_id])?;
        let (mut events, mut damaged) = (Vec::new(), Vec::new());
        while let Some(r) = rows.next()? {
            let json = r.get_ref(2)?.as_blob().unwrap_or_default();
            match serde_json::from_slice::<Event>(json) {
                Ok(e) => events.push(e),
                Err(e) => damaged.push(DamagedRow {
                    seq: r.get(0)?,
                    event_id: String::from_utf8_lossy(r.get_ref(1)?.as_bytes().unwrap_or_default())
                        .into_owned(),
                    detail: format!("the row's text does not parse as an event: {e}"),
                }),
            }
        }
        Ok((events, damaged))
    }

    /// Every event in chain order, one at a time, without loading them all.
    pub(crate) fn for_each_event(
        &self,
        mut f: impl FnMut(StoredEvent) -> Result<(), LedgerError>,
    ) -> Result<(), LedgerError> {
        let mut stmt = self
            .r
            .conn
            .prepare("SELECT seq, json, hash FROM events ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let json: String = r.get(1)?;
            let event = self.parse_event(&json)?;
            f(StoredEvent {
                seq: r.get(0)?,
                hash: r.get(2)?,
                json,
                event,
            })?;
        }
        Ok(())
    }

    /// The stored text of every row `filter` keeps, one row at a time:
    /// in offset order for one session, else in chain order. Nothing is
    /// parsed or kept; `f` sees each row once and may stop the stream with
    /// an error of its own.
    pub(crate) fn for_each_stored_text<E: From<LedgerError>>(
        &self,
        filter: &RowFilter,
        f: impl FnMut(StoredText<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let since = filter.since_unix_ns.unwrap_or(i64::MIN);
        let (adapter, session_id) = match &filter.session {
            Some(s) => (Some(s.adapter.as_str()), Some(s.session_id.as_str())),
            None => (None, None),
        };
        // Parameters keep their numbers in every form; a form binds those
        // up to the highest it names. Unfiltered (a whole-ledger export),
        // no row's time is even read.
        let sql = match (&filter.session, filter.since_unix_ns) {
            (Some(_), _) => {
                "SELECT seq, id, CAST(json AS BLOB) FROM events \
                 WHERE adapter = ?1 AND session_id = ?2 AND time_unix_ns >= ?3 ORDER BY offset"
            }
            (None, Some(_)) => {
                "SELECT seq, id, CAST(json AS BLOB) FROM events \
                 WHERE time_unix_ns >= ?3 ORDER BY seq"
            }
            (None, None) => "SELECT seq, id, CAST(json AS BLOB) FROM events ORDER BY seq",
        };
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut stmt = self.r.conn.prepare_cached(sql).map_err(read)?;
        let bound: [&dyn rusqlite::ToSql; 3] = [&adapter, &session_id, &since];
        let used = &bound[..stmt.parameter_count()];
        let rows = stmt.query(used).map_err(read)?;
        each_stored_text(rows, f)
    }

    /// How many events a session has and the seq of its newest: what
    /// changes when it grows (one pass over its part of the offset index).
    pub(crate) fn session_size(&self, session: &SessionRef) -> Result<(u64, i64), LedgerError> {
        let (n, last): (i64, Option<i64>) = self
            .r
            .conn
            .prepare_cached(
                "SELECT count(*), max(seq) FROM events WHERE adapter = ?1 AND session_id = ?2",
            )?
            .query_row(params![session.adapter.as_str(), session.session_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        Ok((n as u64, last.unwrap_or(0)))
    }

    /// The stored text of every row after `seq`, in chain order: what a
    /// reader that keeps a running tally has not seen yet.
    pub(crate) fn for_each_stored_text_after<E: From<LedgerError>>(
        &self,
        seq: i64,
        f: impl FnMut(StoredText<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut stmt = self
            .r
            .conn
            .prepare_cached(
                "SELECT seq, id, CAST(json AS BLOB) FROM events WHERE seq > ?1 ORDER BY seq",
            )
            .map_err(read)?;
        let rows = stmt.query([seq]).map_err(read)?;
        each_stored_text(rows, f)
    }

    /// One session's rows of the given event types, in offset order, as
    /// [`Events::for_each_stored_text`] gives them. The types are those of
    /// the `type` column the ledger keeps beside each row's text, so only
    /// the rows asked for are read whole.
    pub(crate) fn for_each_stored_text_of_types<E: From<LedgerError>>(
        &self,
        session: &SessionRef,
        types: &[EventType],
        f: impl FnMut(StoredText<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let names: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
        let names = serde_json::to_string(&names).expect("a list of names is JSON");
        let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
        let mut stmt = self
            .r
            .conn
            .prepare_cached(
                "SELECT seq, id, CAST(json AS BLOB) FROM events \
                 WHERE adapter = ?1 AND session_id = ?2 \
                 AND type IN (SELECT value FROM json_each(?3)) ORDER BY offset",
            )
            .map_err(read)?;
        let key = params![session.adapter.as_str(), session.session_id, names];
        let rows = stmt.query(key).map_err(read)?;
        each_stored_text(rows, f)
    }

    /// Every event in chain order (loads them all; prefer `for_each_event`).
    pub fn all(&self) -> Result<Vec<Event>, LedgerError> {
        let mut out = Vec::new();
        self.for_each_event(|e| {
            out.push(e.event);
            Ok(())
        })?;
        Ok(out)
    }

    /// The time of one event of `session`, found by its id (read through
    /// the session's rows: ids have no index of their own).
    pub(crate) fn event_time(
        &self,
        session: &SessionRef,
        id: &str,
    ) -> Result<Option<i64>, LedgerError> {
        Ok(self.r
            .conn
            .prepare_cached(
                "SELECT time_unix_ns FROM events WHERE adapter = ?1 AND session_id = ?2 AND id = ?3",
            )?
            .query_row(params![session.adapter.as_str(), session.session_id, id], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// The newest raw signal of `adapter` whose captured agent environment
    /// contains `needle`, only of `session_key` when one is given:
    /// (receive time, session key, environment as a JSON object). Walks the
    /// receive-time index newest first and stops at the first match.
    pub(crate) fn newest_env_with(
        &self,
        adapter: &str,
        session_key: Option<&str>,
        needle: &str,
    ) -> Result<Option<(i64, String, String)>, LedgerError> {
        let mut stmt = self.r.conn.prepare(
            "SELECT received_unix_ns, session_key, env FROM raw_signals \
             WHERE adapter = ?1 AND (?2 IS NULL OR session_key = ?2) AND instr(env, ?3) > 0 \
             ORDER BY received_unix_ns DESC LIMIT 1",
        )?;
        let mut rows = stmt.query(params![adapter, session_key, needle])?;
        match rows.next()? {
            Some(r) => Ok(Some((r.get(0)?, r.get(1)?, r.get(2)?))),
            None => Ok(None),
        }
    }

    /// Number of event rows.
    pub fn event_count(&self) -> Result<u64, LedgerError> {
        let n: i64 = self
            .r
            .conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))?;
        Ok(n as u64)
    }

    pub(super) fn parse_event(&self, json: &str) -> Result<Event, LedgerError> {
        serde_json::from_str(json).map_err(|e| LedgerError::Corrupt {
            path: self.r.dir.join(crate::ledger::DB_FILE),
            detail: format!("an event row does not parse: {e}"),
        })
    }
}

/// Hand each row of a `seq, id, json` query to `f` as [`StoredText`],
/// borrowed from the row.
pub(in crate::ledger) fn each_stored_text<E: From<LedgerError>>(
    mut rows: rusqlite::Rows<'_>,
    mut f: impl FnMut(StoredText<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let read = |e: rusqlite::Error| E::from(LedgerError::from(e));
    while let Some(r) = rows.next().map_err(read)? {
        let text = |i| r.get_ref(i).map_err(read);
        // The id column only names the row (its text holds the id too): a
        // damaged one is shown as it can be and the row still arrives.
        let id = String::from_utf8_lossy(text(1)?.as_bytes().map_err(|e| read(e.into()))?);
        f(StoredText {
            seq: r.get(0).map_err(read)?,
            id: &id,
            json: text(2)?.as_blob().map_err(|e| read(e.into()))?,
        })?;
    }
    Ok(())
}
