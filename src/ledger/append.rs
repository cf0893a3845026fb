//! Appending one ready batch: events with their chain links, the tables
//! derived from them, the raw signals, producer state and the exactly-once
//! bookkeeping, all in ONE transaction that first checks the fencing token.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};

use super::{Ledger, LedgerError, chain};
use crate::contract::{Event, Outcome, Payload, SessionRef, validate_event};

/// One canonical event of a batch: its stored text and its parsed form.
#[derive(Debug, Clone)]
pub struct ReadyEvent {
    /// Exactly the bytes that are stored and hashed.
    pub json: String,
    pub event: Event,
}

impl ReadyEvent {
    /// Serialize an event into its canonical stored text.
    pub fn new(event: Event) -> ReadyEvent {
        let json = serde_json::to_string(&event).expect("events always serialize");
        ReadyEvent { json, event }
    }

    /// Parse stored text, refusing anything that is not canonical.
    pub fn parse(json: &str) -> Result<ReadyEvent, String> {
        let event: Event =
            serde_json::from_str(json).map_err(|e| format!("does not parse: {e}"))?;
        let again = serde_json::to_string(&event).map_err(|e| e.to_string())?;
        if again != json {
            return Err("is not in canonical form".into());
        }
        Ok(ReadyEvent {
            json: json.to_string(),
            event,
        })
    }
}

/// One raw signal a batch drained: kept whole so no byte is lost after the
/// spool segment is deleted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchSignal {
    pub record_digest: String,
    pub adapter: String,
    pub session_key: String,
    pub event_name: Option<String>,
    pub received_unix_ns: i64,
    /// The spool envelope as JSON text.
    pub envelope: String,
    #[serde(with = "b64")]
    pub payload: Vec<u8>,
    pub event_ids: Vec<String>,
    pub duplicate_of: Option<String>,
}

/// A session's producer state after the batch, as serde JSON text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BatchState {
    pub session: SessionRef,
    pub state: String,
}

/// What one transaction appends.
#[derive(Debug, Clone)]
pub struct AppendBatch {
    pub id: String,
    pub contract_digest: String,
    /// Intake segments (relative to the home) this batch drained.
    pub sources: Vec<String>,
    pub signals: Vec<BatchSignal>,
    pub events: Vec<ReadyEvent>,
    pub states: Vec<BatchState>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOutcome {
    Appended {
        events: usize,
        signals: usize,
    },
    /// The batch was committed by an earlier run.
    AlreadyApplied,
}

mod b64 {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

impl Ledger {
    /// Take the next incarnation: every writer with an older one is fenced.
    pub fn take_incarnation(&mut self) -> Result<u64, LedgerError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.prepare_cached("UPDATE incarnation SET value = value + 1 WHERE id = 1")?
            .execute([])?;
        let value: i64 = tx
            .prepare_cached("SELECT value FROM incarnation WHERE id = 1")?
            .query_row([], |r| r.get(0))?;
        tx.commit().map_err(LedgerError::CommitFailed)?;
        Ok(value as u64)
    }

    /// Whether a batch with this id was already committed.
    pub fn batch_applied(&self, id: &str) -> Result<bool, LedgerError> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM applied_batches WHERE batch = ?1)",
            [id],
            |r| r.get(0),
        )?)
    }

    /// Whether an intake segment was drained by a committed batch.
    pub fn segment_drained(&self, segment: &str) -> Result<bool, LedgerError> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM drained_segments WHERE segment = ?1)",
            [segment],
            |r| r.get(0),
        )?)
    }

    /// Append `batch` under `incarnation` in one transaction. `midway` runs
    /// halfway through the event inserts (a crash-injection point).
    pub fn append(
        &mut self,
        batch: &AppendBatch,
        incarnation: u64,
        now_unix_ns: i64,
        midway: &dyn Fn(),
    ) -> Result<AppendOutcome, LedgerError> {
        if self.poisoned {
            return Err(LedgerError::Poisoned);
        }
        check_batch(batch, &self.genesis.schema_digest)?;
        let seed = self.genesis.chain_seed();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        fence(&tx, incarnation)?;
        let done: bool = tx
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM applied_batches WHERE batch = ?1)")?
            .query_row([&batch.id], |r| r.get(0))?;
        if done {
            return Ok(AppendOutcome::AlreadyApplied);
        }
        insert_events(&tx, batch, seed, midway)?;
        insert_signals(&tx, batch)?;
        insert_states(&tx, batch)?;
        insert_bookkeeping(&tx, batch, incarnation, now_unix_ns)?;
        if let Err(e) = tx.commit() {
            self.poisoned = true;
            return Err(LedgerError::CommitFailed(e));
        }
        Ok(AppendOutcome::Appended {
            events: batch.events.len(),
            signals: batch.signals.len(),
        })
    }

    /// The producer state stored for a session, as serde JSON text.
    pub fn producer_state(&self, session: &SessionRef) -> Result<Option<String>, LedgerError> {
        Ok(self
            .conn
            .query_row(
                "SELECT state FROM producer_state WHERE adapter = ?1 AND session_id = ?2",
                params![session.adapter.as_str(), session.session_id],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Every session that has producer state, in a stable order.
    pub fn producer_sessions(&self) -> Result<Vec<SessionRef>, LedgerError> {
        let mut stmt = self.conn.prepare(
            "SELECT adapter, session_id FROM producer_state ORDER BY adapter, session_id",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        let mut out = Vec::new();
        for row in rows {
            let (adapter, session_id) = row?;
            if let Some(adapter) = crate::contract::AdapterId::parse(&adapter) {
                out.push(SessionRef {
                    adapter,
                    session_id,
                });
            }
        }
        Ok(out)
    }

    /// How many events a session has (its next offset).
    pub fn next_offset(&self, session: &SessionRef) -> Result<u64, LedgerError> {
        let n: Option<i64> = self
            .conn
            .query_row(
                "SELECT events FROM sessions WHERE adapter = ?1 AND session_id = ?2",
                params![session.adapter.as_str(), session.session_id],
                |r| r.get(0),
            )
            .optional()?;
        Ok(n.unwrap_or(0) as u64)
    }
}

fn fence(tx: &Transaction, mine: u64) -> Result<(), LedgerError> {
    let current: i64 = tx
        .prepare_cached("SELECT value FROM incarnation WHERE id = 1")?
        .query_row([], |r| r.get(0))?;
    if current as u64 != mine {
        return Err(LedgerError::Stale {
            mine,
            current: current as u64,
        });
    }
    Ok(())
}

/// Contract checks on every row before anything is written.
fn check_batch(batch: &AppendBatch, ledger_digest: &str) -> Result<(), LedgerError> {
    if batch.contract_digest != ledger_digest {
        return Err(LedgerError::Refused {
            event_id: format!("batch {}", batch.id),
            reason: format!(
                "stamped with contract digest {}, the ledger speaks {ledger_digest}",
                batch.contract_digest
            ),
        });
    }
    for row in &batch.events {
        if let Some(v) = validate_event(&row.event).first() {
            return Err(LedgerError::Refused {
                event_id: row.event.id.to_string(),
                reason: v.to_string(),
            });
        }
    }
    Ok(())
}

fn insert_events(
    tx: &Transaction,
    batch: &AppendBatch,
    seed: [u8; 32],
    midway: &dyn Fn(),
) -> Result<(), LedgerError> {
    let head: Option<Vec<u8>> = tx
        .prepare_cached("SELECT hash FROM events ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    let mut prev = match head {
        Some(h) => h.try_into().unwrap_or([0u8; 32]),
        None => seed,
    };
    let mut stmt = tx.prepare_cached(
        "INSERT INTO events (id, adapter, session_id, offset, type, time_unix_ns, json, prev_hash, hash, batch) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    let half = batch.events.len() / 2;
    let mut sessions: HashMap<&SessionRef, SessionAgg> = HashMap::new();
    for (i, row) in batch.events.iter().enumerate() {
        if i == half && i > 0 {
            midway();
        }
        let e = &row.event;
        let agg = match sessions.entry(&e.session) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) => v.insert(SessionAgg::load(tx, &e.session)?),
        };
        agg.admit(e)?;
        let hash = chain::link(&prev, row.json.as_bytes());
        let inserted = stmt.execute(params![
            e.id.as_str(),
            e.session.adapter.as_str(),
            e.session.session_id,
            e.offset as i64,
            e.event_type().as_str(),
            e.time_unix_ns,
            row.json,
            &prev[..],
            &hash[..],
            batch.id,
        ]);
        inserted.map_err(|err| refuse_duplicate(e, err))?;
        derive(tx, e)?;
        prev = hash;
    }
    for (session, agg) in sessions {
        agg.store(tx, session)?;
    }
    tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES ('chain_head', ?1)")?
        .execute([chain::hex(&prev)])?;
    Ok(())
}

fn refuse_duplicate(e: &Event, err: rusqlite::Error) -> LedgerError {
    if let rusqlite::Error::SqliteFailure(f, _) = &err
        && f.code == rusqlite::ErrorCode::ConstraintViolation
    {
        return LedgerError::Refused {
            event_id: e.id.to_string(),
            reason: "an event with this id or session offset is already in the ledger".into(),
        };
    }
    err.into()
}

/// A session's row in the `sessions` table, kept in memory for one batch.
struct SessionAgg {
    next: u64,
    first: i64,
    last: i64,
    turns: u64,
    existed: bool,
}

impl SessionAgg {
    fn load(tx: &Transaction, s: &SessionRef) -> Result<SessionAgg, LedgerError> {
        let row: Option<(i64, i64, i64, i64)> = tx
            .prepare_cached(
                "SELECT events, first_unix_ns, last_unix_ns, turns FROM sessions WHERE adapter = ?1 AND session_id = ?2",
            )?
            .query_row(params![s.adapter.as_str(), s.session_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()?;
        Ok(match row {
            Some((n, first, last, turns)) => SessionAgg {
                next: n as u64,
                first,
                last,
                turns: turns as u64,
                existed: true,
            },
            None => SessionAgg {
                next: 0,
                first: i64::MAX,
                last: i64::MIN,
                turns: 0,
                existed: false,
            },
        })
    }

    /// Offsets run from 0 without gaps within a session.
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
        self.last = self.last.max(e.time_unix_ns);
        self.turns += u64::from(matches!(e.payload, Payload::TurnStarted(_)));
        Ok(())
    }

    fn store(&self, tx: &Transaction, s: &SessionRef) -> Result<(), LedgerError> {
        let sql = if self.existed {
            "UPDATE sessions SET events = ?3, first_unix_ns = ?4, last_unix_ns = ?5, turns = ?6 WHERE adapter = ?1 AND session_id = ?2"
        } else {
            "INSERT INTO sessions (adapter, session_id, events, first_unix_ns, last_unix_ns, turns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        };
        tx.prepare_cached(sql)?.execute(params![
            s.adapter.as_str(),
            s.session_id,
            self.next as i64,
            self.first,
            self.last,
            self.turns as i64
        ])?;
        Ok(())
    }
}

/// Keep the tables derived from events in step with the event rows.
fn derive(tx: &Transaction, e: &Event) -> Result<(), LedgerError> {
    match &e.payload {
        Payload::ToolRequested(p) => open_span(
            tx,
            e,
            "tool",
            &p.tool_name,
            p.tool_call_id.as_deref(),
            p.recovery.as_ref().map(|r| r.reason.as_str()),
        ),
        Payload::CommandRequested(p) => open_span(tx, e, "command", &p.argv.join(" "), None, None),
        Payload::ToolCompleted(p) => close_span(
            tx,
            e,
            Terminal {
                kind: "tool",
                name: &p.tool_name,
                requested: p.requested_event_id.as_ref().map(|i| i.as_str()),
                tool_call_id: p.tool_call_id.as_deref(),
                outcome: p.outcome,
                duration: p.duration_ms.observed().copied(),
                reason: p.recovery.as_ref().map(|r| r.reason.as_str()),
            },
        ),
        Payload::CommandCompleted(p) => close_span(
            tx,
            e,
            Terminal {
                kind: "command",
                name: "",
                requested: p.requested_event_id.as_ref().map(|i| i.as_str()),
                tool_call_id: None,
                outcome: p.outcome,
                duration: p.duration_ms.observed().copied(),
                reason: p.recovery.as_ref().map(|r| r.reason.as_str()),
            },
        ),
        Payload::EndRequested(p) => {
            let approved = serde_json::to_string(&p.approved_spans).expect("ids serialize");
            tx.prepare_cached("INSERT INTO end_requests (end_event_id, adapter, session_id, origin, reason, approved_spans, requested_unix_ns, state) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending')")?.execute(
                params![e.id.as_str(), e.session.adapter.as_str(), e.session.session_id, p.origin, p.reason, approved, e.time_unix_ns],
            )?;
            Ok(())
        }
        Payload::EndSalvaged(p) => resolve_end(tx, p.end_event_id.as_str(), "salvaged", e),
        Payload::EndCancelled(p) => resolve_end(tx, p.end_event_id.as_str(), "cancelled", e),
        Payload::EndExpired(p) => resolve_end(tx, p.end_event_id.as_str(), "expired", e),
        Payload::HealthCondition(p) => {
            tx.prepare_cached("INSERT INTO health (event_id, adapter, session_id, code, detail, time_unix_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?.execute(
                params![e.id.as_str(), e.session.adapter.as_str(), e.session.session_id, p.code, p.detail, e.time_unix_ns],
            )?;
            Ok(())
        }
        _ => Ok(()),
    }
}

fn open_span(
    tx: &Transaction,
    e: &Event,
    kind: &str,
    name: &str,
    tool_call_id: Option<&str>,
    reason: Option<&str>,
) -> Result<(), LedgerError> {
    tx.prepare_cached("INSERT INTO spans (request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, requested_unix_ns, state, reason) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'open', ?10)")?.execute(
        params![
            e.id.as_str(),
            e.session.adapter.as_str(),
            e.session.session_id,
            kind,
            name,
            tool_call_id,
            e.agent_id,
            e.turn.turn_id,
            e.time_unix_ns,
            reason
        ],
    )?;
    Ok(())
}

struct Terminal<'a> {
    kind: &'a str,
    name: &'a str,
    requested: Option<&'a str>,
    tool_call_id: Option<&'a str>,
    outcome: Outcome,
    duration: Option<u64>,
    reason: Option<&'a str>,
}

fn close_span(tx: &Transaction, e: &Event, t: Terminal) -> Result<(), LedgerError> {
    let span = find_open_span(tx, e, &t)?;
    let state = if t.reason.is_some() {
        "recovered"
    } else {
        "closed_native"
    };
    let outcome = serde_json::to_value(t.outcome).expect("outcome serializes");
    let outcome = outcome.as_str().unwrap_or("unknown").to_string();
    let Some(span) = span else {
        // A terminal whose request is not in this epoch: keep it as its own
        // span row so counts still add up.
        tx.prepare_cached("INSERT OR IGNORE INTO spans (request_event_id, adapter, session_id, kind, name, tool_call_id, agent_id, turn_id, state, reason, completed_event_id, outcome, duration_ms, completed_unix_ns) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?1, ?11, ?12, ?13)")?.execute(
            params![e.id.as_str(), e.session.adapter.as_str(), e.session.session_id, t.kind, t.name, t.tool_call_id, e.agent_id, e.turn.turn_id, state, t.reason, outcome, t.duration.map(|d| d as i64), e.time_unix_ns],
        )?;
        return Ok(());
    };
    tx.prepare_cached("UPDATE spans SET state = ?2, reason = coalesce(?3, reason), completed_event_id = ?4, outcome = ?5, duration_ms = ?6, completed_unix_ns = ?7 \
         WHERE request_event_id = ?1")?.execute(
        params![span, state, t.reason, e.id.as_str(), outcome, t.duration.map(|d| d as i64), e.time_unix_ns],
    )?;
    Ok(())
}

fn find_open_span(
    tx: &Transaction,
    e: &Event,
    t: &Terminal,
) -> Result<Option<String>, LedgerError> {
    if let Some(id) = t.requested {
        let found: Option<String> = tx
            .prepare_cached("SELECT request_event_id FROM spans WHERE request_event_id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        if found.is_some() {
            return Ok(found);
        }
    }
    let Some(call) = t.tool_call_id else {
        return Ok(None);
    };
    Ok(tx.prepare_cached("SELECT request_event_id FROM spans WHERE adapter = ?1 AND session_id = ?2 AND tool_call_id = ?3 AND state = 'open' LIMIT 1")?.query_row(
            params![e.session.adapter.as_str(), e.session.session_id, call],
            |r| r.get(0),
        )
        .optional()?)
}

fn resolve_end(tx: &Transaction, end_id: &str, state: &str, e: &Event) -> Result<(), LedgerError> {
    tx.prepare_cached(
        "UPDATE end_requests SET state = ?2, resolved_event_id = ?3 WHERE end_event_id = ?1",
    )?
    .execute(params![end_id, state, e.id.as_str()])?;
    Ok(())
}

fn insert_signals(tx: &Transaction, batch: &AppendBatch) -> Result<(), LedgerError> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR IGNORE INTO raw_signals (record_digest, adapter, session_key, event_name, received_unix_ns, envelope, payload, event_ids, duplicate_of, batch) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for s in &batch.signals {
        let ids = serde_json::to_string(&s.event_ids).expect("ids serialize");
        stmt.execute(params![
            s.record_digest,
            s.adapter,
            s.session_key,
            s.event_name,
            s.received_unix_ns,
            s.envelope,
            s.payload,
            ids,
            s.duplicate_of,
            batch.id
        ])?;
    }
    Ok(())
}

fn insert_states(tx: &Transaction, batch: &AppendBatch) -> Result<(), LedgerError> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR REPLACE INTO producer_state (adapter, session_id, state, batch) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for s in &batch.states {
        stmt.execute(params![
            s.session.adapter.as_str(),
            s.session.session_id,
            s.state,
            batch.id
        ])?;
    }
    Ok(())
}

fn insert_bookkeeping(
    tx: &Transaction,
    batch: &AppendBatch,
    incarnation: u64,
    now_unix_ns: i64,
) -> Result<(), LedgerError> {
    for source in &batch.sources {
        tx.prepare_cached(
            "INSERT OR IGNORE INTO drained_segments (segment, batch) VALUES (?1, ?2)",
        )?
        .execute(params![source, batch.id])?;
    }
    tx.prepare_cached("INSERT INTO applied_batches (batch, incarnation, events, signals, applied_unix_ns) VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(
        params![batch.id, incarnation as i64, batch.events.len() as i64, batch.signals.len() as i64, now_unix_ns],
    )?;
    Ok(())
}
