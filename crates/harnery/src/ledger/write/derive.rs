//! Tables derived from event rows at append time, in the same transaction:
//! a session's summary row, tool and command spans (open, closed natively
//! or recovered), and explicit end requests and health conditions. Nothing
//! here decides what an event means; it only files what the event says,
//! with the contract's one outcome rule ([`Outcome::judged`]): a span
//! whose terminal, or whose joined `tool.recorded`, reports a non-zero exit
//! is filed as a failure.
//!
//! One [`Derivation`] files a whole batch. A request and its terminal
//! usually arrive in the same batch, so a span first written in the batch
//! is kept in memory and stored once, as the row it ends the batch as; only
//! spans of earlier batches are updated in place. The rows, and their
//! order, are exactly those that filing one event at a time leaves.

use std::borrow::Cow;
use std::collections::HashMap;

use rusqlite::{CachedStatement, Connection, OptionalExtension, params};

use super::LedgerError;
use super::session_usage::SessionUsage;
use super::titles::About;
use crate::contract::eligibility::{COMMAND_UNPAIRED_BIT, TOOL_UNPAIRED_BIT, event_flags};
use crate::contract::json::outcome_name;
use crate::contract::{Event, Outcome, Payload, SessionRef};
use crate::fingerprint::FingerprintState;

/// Writes a span row whole. Rows are written in the order they were
/// created, so each takes the `seq` that an insert at its event would have.
/// (Conflicts are named, never `OR IGNORE`: that would also skip, silently,
/// a row that breaks a CHECK or NOT NULL rule.)
macro_rules! insert_span {
    ($on_conflict:literal) => {
        concat!(
            "INSERT INTO spans (request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, \
             requested_unix_ns, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            $on_conflict
        )
    };
}

const LOAD_SESSION: &str = "SELECT events, first_unix_ns, last_unix_ns, turns, spans_open, spans_closed_native, spans_recovered, \
     audit_flags, resumes, title, title_source, cwd, project FROM sessions WHERE adapter = ?1 AND session_id = ?2";
const UPDATE_SESSION: &str = "UPDATE sessions SET events = ?3, first_unix_ns = ?4, last_unix_ns = ?5, turns = ?6, \
     spans_open = ?7, spans_closed_native = ?8, spans_recovered = ?9, audit_flags = ?10, resumes = ?11, \
     title = ?12, title_source = ?13, cwd = ?14, project = ?15 WHERE adapter = ?1 AND session_id = ?2";
const INSERT_SESSION: &str = "INSERT INTO sessions (adapter, session_id, events, first_unix_ns, last_unix_ns, turns, \
     spans_open, spans_closed_native, spans_recovered, audit_flags, resumes, title, title_source, cwd, project) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
const STORED_SPAN_STATE: &str =
    "SELECT state FROM spans WHERE adapter = ?1 AND session_id = ?2 AND request_event_id = ?3";
const CLOSE_STORED_SPAN: &str = "UPDATE spans SET state = ?2, reason = coalesce(?3, reason), completed_event_id = ?4, outcome = ?5, duration_ms = ?6, completed_unix_ns = ?7 \
     WHERE adapter = ?8 AND session_id = ?9 AND request_event_id = ?1";
/// `spans_open_calls` holds exactly the open spans, in rowid order within a
/// call, so the oldest comes first without a sort.
pub(in crate::ledger) const STORED_OPEN_SPAN_OF_CALL: &str = "SELECT request_event_id FROM spans WHERE adapter = ?1 AND session_id = ?2 AND tool_call_id = ?3 AND state = 'open' ORDER BY seq LIMIT 1";
const INSERT_SPAN: &str = insert_span!("");
const INSERT_OWN_SPAN: &str =
    insert_span!(" ON CONFLICT (adapter, session_id, request_event_id) DO NOTHING");
const INSERT_END_REQUEST: &str = "INSERT INTO end_requests (end_event_id, adapter, session_id, origin, reason, approved_spans, requested_unix_ns, state) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending')";
const RESOLVE_END_REQUEST: &str =
    "UPDATE end_requests SET state = ?2, resolved_event_id = ?3 WHERE end_event_id = ?1";
/// A stored span closed as a success or unknown, its call's exit non-zero.
const RECORDED_FAILURE: &str = "UPDATE spans SET outcome = ?4 \
     WHERE adapter = ?1 AND session_id = ?2 AND request_event_id = ?3 AND outcome IN ('success', 'unknown')";
const INSERT_HEALTH: &str = "INSERT INTO health (event_id, adapter, session_id, code, detail, time_unix_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

/// A statement prepared on its first use in a batch and held to the end of
/// it, instead of a statement-cache lookup per event.
struct Held<'c> {
    sql: &'static str,
    stmt: Option<CachedStatement<'c>>,
}

impl<'c> Held<'c> {
    fn new(sql: &'static str) -> Held<'c> {
        Held { sql, stmt: None }
    }

    fn get(&mut self, conn: &'c Connection) -> rusqlite::Result<&mut CachedStatement<'c>> {
        let stmt = match self.stmt.take() {
            Some(stmt) => stmt,
            None => conn.prepare_cached(self.sql)?,
        };
        Ok(self.stmt.insert(stmt))
    }
}

/// Where a session of the batch is kept in its [`Derivation`].
#[derive(Debug, Clone, Copy)]
pub(super) struct SessionSlot(usize);

/// Files one batch's events into the derived tables.
pub(super) struct Derivation<'c, 'b> {
    conn: &'c Connection,
    sessions: Vec<SessionWork<'b>>,
    by_session: HashMap<&'b SessionRef, usize, FingerprintState>,
    /// The session of the latest event: events of a session mostly come
    /// in runs, so it is checked before the map.
    recent: usize,
    /// Span rows first written in this batch, in the order they were
    /// created.
    spans: Vec<NewSpan<'b>>,
    load_session: Held<'c>,
    close_stored_span: Held<'c>,
    stored_span_state: Held<'c>,
    stored_open_span_of_call: Held<'c>,
    insert_end_request: Held<'c>,
    resolve_end_request: Held<'c>,
    insert_health: Held<'c>,
    usage: SessionUsage<'c>,
}

/// One session's part of the batch.
struct SessionWork<'b> {
    session: &'b SessionRef,
    agg: SessionAgg,
    /// The session's rows in `Derivation::spans`, by request event id.
    spans: HashMap<&'b str, usize, FingerprintState>,
    /// Its spans opened in this batch with a tool call id, oldest first.
    calls: HashMap<&'b str, Vec<usize>, FingerprintState>,
}

/// A session's row in the `sessions` table, kept in memory for one batch.
struct SessionAgg {
    next: u64,
    first: i64,
    last: i64,
    turns: u64,
    /// The session's spans by state (see [`state_index`]), kept with the
    /// session so that counting them never reads the spans.
    spans: [i64; 3],
    /// The audit reasons its events carry (`contract::eligibility`).
    flags: u32,
    /// Its `session.resumed` events.
    resumes: i64,
    /// Its title, cwd and project (`titles`).
    about: About,
    existed: bool,
}

/// Where a span state counts in [`SessionAgg::spans`]; the same order as
/// the `spans_*` columns.
fn state_index(state: &str) -> usize {
    match state {
        "open" => 0,
        "closed_native" => 1,
        _ => 2,
    }
}

/// A span row created in this batch, written when the batch is stored.
struct NewSpan<'b> {
    /// Its session's place in `Derivation::sessions`.
    slot: usize,
    request_event_id: &'b str,
    session: &'b SessionRef,
    kind: &'static str,
    name: Cow<'b, str>,
    tool_call_id: Option<&'b str>,
    agent_id: Option<&'b str>,
    turn_id: Option<&'b str>,
    requested_unix_ns: Option<i64>,
    state: &'static str,
    reason: Option<&'static str>,
    completion: Option<Completion<'b>>,
    /// A terminal kept as its own row: written only if no row has its id.
    own_row: bool,
}

/// What a terminal writes into the span it closes.
#[derive(Clone, Copy)]
struct Completion<'b> {
    event_id: &'b str,
    outcome: &'static str,
    duration_ms: Option<i64>,
    unix_ns: i64,
}

/// A tool or command terminal, as it files.
struct Terminal<'b> {
    kind: &'static str,
    name: &'b str,
    requested: Option<&'b str>,
    tool_call_id: Option<&'b str>,
    state: &'static str,
    reason: Option<&'static str>,
    completion: Completion<'b>,
}

impl<'c, 'b> Derivation<'c, 'b> {
    /// A derivation for a batch of `events` events. Most of a batch's
    /// events are tool requests and their terminals, so room for a span
    /// row per two events is reserved up front.
    pub(super) fn new(conn: &'c Connection, events: usize) -> Derivation<'c, 'b> {
        Derivation {
            conn,
            sessions: Vec::new(),
            by_session: HashMap::default(),
            recent: 0,
            spans: Vec::with_capacity(events / 2),
            load_session: Held::new(LOAD_SESSION),
            close_stored_span: Held::new(CLOSE_STORED_SPAN),
            stored_span_state: Held::new(STORED_SPAN_STATE),
            stored_open_span_of_call: Held::new(STORED_OPEN_SPAN_OF_CALL),
            insert_end_request: Held::new(INSERT_END_REQUEST),
            resolve_end_request: Held::new(RESOLVE_END_REQUEST),
            insert_health: Held::new(INSERT_HEALTH),
            usage: SessionUsage::new(conn),
        }
    }

    /// Admit `e` to its session's sequence: offsets run from 0 without
    /// gaps within a session. Returns where the session is kept.
    pub(super) fn admit(&mut self, e: &'b Event) -> Result<SessionSlot, LedgerError> {
        let slot = self.slot(&e.session)?;
        self.sessions[slot.0].agg.admit(e)?;
        Ok(slot)
    }

    fn slot(&mut self, session: &'b SessionRef) -> Result<SessionSlot, LedgerError> {
        if self
            .sessions
            .get(self.recent)
            .is_some_and(|s| s.session == session)
        {
            return Ok(SessionSlot(self.recent));
        }
        self.recent = match self.by_session.get(session) {
            Some(&i) => i,
            None => self.add_session(session)?,
        };
        Ok(SessionSlot(self.recent))
    }

    fn add_session(&mut self, session: &'b SessionRef) -> Result<usize, LedgerError> {
        let agg = SessionAgg::load(self.load_session.get(self.conn)?, session)?;
        self.by_session.insert(session, self.sessions.len());
        self.sessions.push(SessionWork {
            session,
            agg,
            spans: HashMap::default(),
            calls: HashMap::default(),
        });
        Ok(self.sessions.len() - 1)
    }

    /// File what `e`, admitted at `slot`, says into the derived tables.
    pub(super) fn file(&mut self, slot: SessionSlot, e: &'b Event) -> Result<(), LedgerError> {
        match &e.payload {
            Payload::ToolRequested(p) => {
                let reason = p.recovery.as_ref().map(|r| r.reason.as_str());
                let name = Cow::Borrowed(p.tool_name.as_str());
                self.open_span(slot, e, "tool", name, p.tool_call_id.as_deref(), reason);
                Ok(())
            }
            Payload::CommandRequested(p) => {
                let name = Cow::Owned(p.argv.join(" "));
                self.open_span(slot, e, "command", name, None, None);
                Ok(())
            }
            Payload::ToolCompleted(p) => {
                let reason = p.recovery.as_ref().map(|r| r.reason.as_str());
                let terminal = Terminal {
                    kind: "tool",
                    name: &p.tool_name,
                    requested: p.requested_event_id.as_ref().map(|i| i.as_str()),
                    tool_call_id: p.tool_call_id.as_deref(),
                    state: terminal_state(reason),
                    reason,
                    completion: completion(
                        e,
                        p.outcome.judged(p.exit_code),
                        p.duration_ms.observed(),
                    ),
                };
                self.close_span(slot, e, terminal)
            }
            Payload::ToolRecorded(p) => match &p.span_request_event_id {
                Some(request) if Outcome::Success.judged(p.exit_code) == Outcome::Failure => {
                    self.recorded_failure(slot, e, request.as_str())
                }
                _ => Ok(()),
            },
            Payload::CommandCompleted(p) => {
                let reason = p.recovery.as_ref().map(|r| r.reason.as_str());
                let terminal = Terminal {
                    kind: "command",
                    name: "",
                    requested: p.requested_event_id.as_ref().map(|i| i.as_str()),
                    tool_call_id: None,
                    state: terminal_state(reason),
                    reason,
                    completion: completion(
                        e,
                        p.outcome.judged(p.exit_code),
                        p.duration_ms.observed(),
                    ),
                };
                self.close_span(slot, e, terminal)
            }
            Payload::EndRequested(p) => {
                let approved = serde_json::to_string(&p.approved_spans).expect("ids serialize");
                self.insert_end_request.get(self.conn)?.execute(params![
                    e.id.as_str(),
                    e.session.adapter.as_str(),
                    e.session.session_id,
                    p.origin,
                    p.reason,
                    approved,
                    e.time_unix_ns
                ])?;
                Ok(())
            }
            Payload::EndSalvaged(p) => self.resolve_end(p.end_event_id.as_str(), "salvaged", e),
            Payload::EndCancelled(p) => self.resolve_end(p.end_event_id.as_str(), "cancelled", e),
            Payload::EndExpired(p) => self.resolve_end(p.end_event_id.as_str(), "expired", e),
            Payload::HealthCondition(p) => self.health_row(e, &p.code, &p.detail),
            // The agent's own record could not be followed: as loud as any
            // condition the finalizer records.
            Payload::RecordProblem(p) => {
                self.health_row(e, &format!("record_{}", p.kind), &p.detail)
            }
            // What the session's usage and list rows keep.
            _ => self.usage.note(e),
        }
    }

    fn open_span(
        &mut self,
        slot: SessionSlot,
        e: &'b Event,
        kind: &'static str,
        name: Cow<'b, str>,
        tool_call_id: Option<&'b str>,
        reason: Option<&'static str>,
    ) {
        let at = self.spans.len();
        self.spans.push(NewSpan {
            slot: slot.0,
            request_event_id: e.id.as_str(),
            session: &e.session,
            kind,
            name,
            tool_call_id,
            agent_id: e.agent_id.as_deref(),
            turn_id: e.turn.turn_id.as_deref(),
            requested_unix_ns: Some(e.time_unix_ns),
            state: "open",
            reason,
            completion: None,
            own_row: false,
        });
        let session = &mut self.sessions[slot.0];
        session.spans.insert(e.id.as_str(), at);
        if let Some(call) = tool_call_id {
            session.calls.entry(call).or_default().push(at);
        }
    }

    /// Close the span the terminal's request names (in any state), else
    /// the oldest open span of its call; failing both, keep the terminal
    /// as its own row so counts still add up (its request is not in this
    /// epoch). A stored span always predates one of this batch.
    fn close_span(
        &mut self,
        slot: SessionSlot,
        e: &'b Event,
        t: Terminal<'b>,
    ) -> Result<(), LedgerError> {
        if let Some(id) = t.requested
            && self.close_by_request(slot, e, &t, id)?
        {
            return Ok(());
        }
        if let Some(call) = t.tool_call_id {
            if let Some(span) = self.stored_open_span_of_call(e, call)? {
                self.close_stored(slot, e, &t, &span)?;
                return Ok(());
            }
            if let Some(at) = self.new_open_span_of_call(slot, call) {
                self.spans[at].close(&t);
                return Ok(());
            }
        }
        self.own_row(slot, e, t);
        Ok(())
    }

    fn close_by_request(
        &mut self,
        slot: SessionSlot,
        e: &Event,
        t: &Terminal<'b>,
        id: &str,
    ) -> Result<bool, LedgerError> {
        if let Some(&at) = self.sessions[slot.0].spans.get(id) {
            self.spans[at].close(t);
            return Ok(true);
        }
        self.close_stored(slot, e, t, id)
    }

    /// Close a span of an earlier batch; whether there was one.
    fn close_stored(
        &mut self,
        slot: SessionSlot,
        e: &Event,
        t: &Terminal,
        request: &str,
    ) -> Result<bool, LedgerError> {
        let was: Option<String> = self
            .stored_span_state
            .get(self.conn)?
            .query_row(
                params![e.session.adapter.as_str(), e.session.session_id, request],
                |r| r.get(0),
            )
            .optional()?;
        let Some(was) = was else {
            return Ok(false);
        };
        let counts = &mut self.sessions[slot.0].agg.spans;
        counts[state_index(&was)] -= 1;
        counts[state_index(t.state)] += 1;
        let c = t.completion;
        self.close_stored_span.get(self.conn)?.execute(params![
            request,
            t.state,
            t.reason,
            c.event_id,
            c.outcome,
            c.duration_ms,
            c.unix_ns,
            e.session.adapter.as_str(),
            e.session.session_id
        ])?;
        Ok(true)
    }

    /// The agent's record says the call of span `request` exited non-zero:
    /// a span closed as a success (or unknown) is filed as a failure. An
    /// open span is left to its terminal.
    fn recorded_failure(
        &mut self,
        slot: SessionSlot,
        e: &Event,
        request: &str,
    ) -> Result<(), LedgerError> {
        let failed = outcome_name(Outcome::Failure);
        if let Some(&at) = self.sessions[slot.0].spans.get(request) {
            if let Some(c) = self.spans[at].completion.as_mut()
                && matches!(c.outcome, "success" | "unknown")
            {
                c.outcome = failed;
            }
            return Ok(());
        }
        self.conn
            .prepare_cached(RECORDED_FAILURE)?
            .execute(params![
                e.session.adapter.as_str(),
                e.session.session_id,
                request,
                failed
            ])?;
        Ok(())
    }

    fn stored_open_span_of_call(
        &mut self,
        e: &Event,
        call: &str,
    ) -> Result<Option<String>, LedgerError> {
        Ok(self
            .stored_open_span_of_call
            .get(self.conn)?
            .query_row(
                params![e.session.adapter.as_str(), e.session.session_id, call],
                |r| r.get(0),
            )
            .optional()?)
    }

    fn new_open_span_of_call(&self, slot: SessionSlot, call: &str) -> Option<usize> {
        let opened = self.sessions[slot.0].calls.get(call)?;
        opened
            .iter()
            .copied()
            .find(|&at| self.spans[at].state == "open")
    }

    fn own_row(&mut self, slot: SessionSlot, e: &'b Event, t: Terminal<'b>) {
        let at = self.spans.len();
        let session = &mut self.sessions[slot.0];
        if session.spans.contains_key(e.id.as_str()) {
            return;
        }
        session.agg.flags |= if t.kind == "command" {
            COMMAND_UNPAIRED_BIT
        } else {
            TOOL_UNPAIRED_BIT
        };
        session.spans.insert(e.id.as_str(), at);
        self.spans.push(NewSpan {
            slot: slot.0,
            request_event_id: e.id.as_str(),
            session: &e.session,
            kind: t.kind,
            name: Cow::Borrowed(t.name),
            tool_call_id: t.tool_call_id,
            agent_id: e.agent_id.as_deref(),
            turn_id: e.turn.turn_id.as_deref(),
            requested_unix_ns: None,
            state: t.state,
            reason: t.reason,
            completion: Some(t.completion),
            own_row: true,
        });
    }

    fn health_row(&mut self, e: &Event, code: &str, detail: &str) -> Result<(), LedgerError> {
        self.insert_health.get(self.conn)?.execute(params![
            e.id.as_str(),
            e.session.adapter.as_str(),
            e.session.session_id,
            code,
            detail,
            e.time_unix_ns
        ])?;
        Ok(())
    }

    fn resolve_end(&mut self, end_id: &str, state: &str, e: &Event) -> Result<(), LedgerError> {
        self.resolve_end_request
            .get(self.conn)?
            .execute(params![end_id, state, e.id.as_str()])?;
        Ok(())
    }

    /// Write the span rows the batch created, then its session rows.
    pub(super) fn store(mut self) -> Result<(), LedgerError> {
        let mut insert = Held::new(INSERT_SPAN);
        let mut insert_own = Held::new(INSERT_OWN_SPAN);
        for span in &self.spans {
            let stmt = if span.own_row {
                &mut insert_own
            } else {
                &mut insert
            };
            if span.store(stmt.get(self.conn)?)? {
                self.sessions[span.slot].agg.spans[state_index(span.state)] += 1;
            }
        }
        let mut update = Held::new(UPDATE_SESSION);
        let mut insert = Held::new(INSERT_SESSION);
        for s in &mut self.sessions {
            s.agg.about.settle();
            let stmt = if s.agg.existed {
                &mut update
            } else {
                &mut insert
            };
            s.agg.store(stmt.get(self.conn)?, s.session)?;
        }
        self.usage.store()
    }
}

impl SessionAgg {
    fn load(stmt: &mut CachedStatement, s: &SessionRef) -> Result<SessionAgg, LedgerError> {
        let stored = stmt
            .query_row(params![s.adapter.as_str(), s.session_id], |r| {
                Ok(SessionAgg {
                    next: r.get::<_, i64>(0)? as u64,
                    first: r.get(1)?,
                    last: r.get(2)?,
                    turns: r.get::<_, i64>(3)? as u64,
                    spans: [r.get(4)?, r.get(5)?, r.get(6)?],
                    flags: r.get::<_, i64>(7)? as u32,
                    resumes: r.get(8)?,
                    about: About {
                        title: r.get(9)?,
                        title_source: r.get(10)?,
                        cwd: r.get(11)?,
                        project: r.get(12)?,
                    },
                    existed: true,
                })
            })
            .optional()?;
        Ok(stored.unwrap_or(SessionAgg {
            next: 0,
            first: i64::MAX,
            last: i64::MIN,
            turns: 0,
            spans: [0; 3],
            flags: 0,
            resumes: 0,
            about: About::default(),
            existed: false,
        }))
    }

    fn admit(&mut self, e: &Event) -> Result<(), LedgerError> {
        if e.offset != self.next {
            return Err(LedgerError::Refused {
                event_id: e.id.to_string(),
                reason: format!(
                    "offset {} breaks the session sequence (next is {})",
                    e.offset, self.next
                ),
            });
        }
        self.next += 1;
        self.first = self.first.min(e.time_unix_ns);
        // A record problem is stamped with the finalizer's time, not the
        // agent's: it says nothing of when the session was active.
        if self.last == i64::MIN || !matches!(e.payload, Payload::RecordProblem(_)) {
            self.last = self.last.max(e.time_unix_ns);
        }
        self.turns += u64::from(matches!(e.payload, Payload::TurnStarted(_)));
        self.flags |= event_flags(e).0;
        self.resumes += i64::from(matches!(e.payload, Payload::SessionResumed(_)));
        self.about.admit(e);
        Ok(())
    }

    fn store(&self, stmt: &mut CachedStatement, s: &SessionRef) -> Result<(), LedgerError> {
        stmt.execute(params![
            s.adapter.as_str(),
            s.session_id,
            self.next as i64,
            self.first,
            self.last,
            self.turns as i64,
            self.spans[0],
            self.spans[1],
            self.spans[2],
            i64::from(self.flags),
            self.resumes,
            self.about.title,
            self.about.title_source,
            self.about.cwd,
            self.about.project
        ])?;
        Ok(())
    }
}

impl<'b> NewSpan<'b> {
    fn close(&mut self, t: &Terminal<'b>) {
        self.state = t.state;
        self.reason = t.reason.or(self.reason);
        self.completion = Some(t.completion);
    }

    /// Bound by type, one by one: a `&dyn ToSql` slice costs a dynamic
    /// call and a conversion per value, for every span of the batch.
    /// Whether the row was written (an own row yields to one already
    /// there).
    fn store(&self, stmt: &mut CachedStatement) -> Result<bool, LedgerError> {
        let c = self.completion;
        stmt.raw_bind_parameter(1, self.request_event_id)?;
        stmt.raw_bind_parameter(2, self.session.adapter.as_str())?;
        stmt.raw_bind_parameter(3, self.session.session_id.as_str())?;
        stmt.raw_bind_parameter(4, self.kind)?;
        stmt.raw_bind_parameter(5, self.name.as_ref())?;
        stmt.raw_bind_parameter(6, self.tool_call_id)?;
        stmt.raw_bind_parameter(7, self.agent_id)?;
        stmt.raw_bind_parameter(8, self.turn_id)?;
        stmt.raw_bind_parameter(9, self.requested_unix_ns)?;
        stmt.raw_bind_parameter(10, self.state)?;
        stmt.raw_bind_parameter(11, self.reason)?;
        stmt.raw_bind_parameter(12, c.map(|c| c.event_id))?;
        stmt.raw_bind_parameter(13, c.map(|c| c.outcome))?;
        stmt.raw_bind_parameter(14, c.and_then(|c| c.duration_ms))?;
        stmt.raw_bind_parameter(15, c.map(|c| c.unix_ns))?;
        Ok(stmt.raw_execute()? > 0)
    }
}

fn terminal_state(reason: Option<&str>) -> &'static str {
    if reason.is_some() {
        "recovered"
    } else {
        "closed_native"
    }
}

fn completion<'b>(e: &'b Event, outcome: Outcome, duration: Option<&u64>) -> Completion<'b> {
    Completion {
        event_id: e.id.as_str(),
        outcome: outcome_name(outcome),
        duration_ms: duration.map(|&d| d as i64),
        unix_ns: e.time_unix_ns,
    }
}
