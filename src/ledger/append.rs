//! Appending one ready batch: events with their chain links, the tables
//! derived from them, the raw signals, producer state and the exactly-once
//! bookkeeping, all in ONE transaction that first checks the fencing token.

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};

use super::derive::Derivation;
use super::{Ledger, LedgerError, chain};
use crate::contract::{Event, SessionRef, validate_event};

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
        // Byte for byte what serde_json writes (tested in contract::json),
        // without its per-field machinery.
        let json = event.to_json();
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

/// One raw signal a batch drained: where its bytes are kept, what it
/// produced, and the few envelope facts the read side looks up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSignal {
    pub record_digest: String,
    pub adapter: String,
    pub session_key: String,
    pub event_name: Option<String>,
    pub received_unix_ns: i64,
    /// The envelope's captured agent environment as a JSON object, when
    /// it captured any.
    pub env: Option<String>,
    pub bytes: RawBytes,
    pub event_ids: Vec<String>,
    pub duplicate_of: Option<String>,
}

/// Where a raw signal's envelope and payload are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawBytes {
    /// In the batch's raw archive (`raw/<batch>.seg`), as the spool record
    /// that starts at this byte offset.
    Archived { at: u64 },
    /// In the row itself: ready files written before the raw archive
    /// existed carry the envelope text and the payload.
    Inline { envelope: String, payload: Vec<u8> },
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

    /// Hold one read snapshot until [`Ledger::end_snapshot`], instead of one
    /// per query (each costs a lock round trip on the WAL index).
    pub fn begin_snapshot(&self) -> Result<(), LedgerError> {
        Ok(self.conn.execute_batch("BEGIN DEFERRED")?)
    }

    pub fn end_snapshot(&self) -> Result<(), LedgerError> {
        if !self.conn.is_autocommit() {
            self.conn.execute_batch("COMMIT")?;
        }
        Ok(())
    }

    /// Whether a raw signal with this record digest (which covers the
    /// receive time) is already kept.
    pub fn signal_known(
        &self,
        received_unix_ns: i64,
        record_digest: &str,
    ) -> Result<bool, LedgerError> {
        Ok(self
            .conn
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM raw_signals WHERE received_unix_ns = ?1 AND record_digest = ?2)")?
            .query_row(params![received_unix_ns, record_digest], |r| r.get(0))?)
    }

    /// The newest receive time among the kept raw signals. A record
    /// received later cannot be one of them (its digest covers its receive
    /// time), so it needs no lookup.
    pub fn newest_signal_ns(&self) -> Result<Option<i64>, LedgerError> {
        Ok(self
            .conn
            .prepare_cached("SELECT max(received_unix_ns) FROM raw_signals")?
            .query_row([], |r| r.get(0))?)
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
        let t = std::time::Instant::now();
        check_batch(batch, &self.genesis.schema_digest)?;
        timing("append-check", t);
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
        let t = std::time::Instant::now();
        insert_events(&tx, batch, seed, midway)?;
        timing("append-events", t);
        let t = std::time::Instant::now();
        insert_signals(&tx, batch)?;
        insert_states(&tx, batch)?;
        insert_bookkeeping(&tx, batch, incarnation, now_unix_ns)?;
        timing("append-signals", t);
        let t = std::time::Instant::now();
        if let Err(e) = tx.commit() {
            self.poisoned = true;
            return Err(LedgerError::CommitFailed(e));
        }
        timing("append-commit", t);
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

/// With `HARNERY_TIMING` set, report how long a step took on stderr.
fn timing(step: &str, since: std::time::Instant) {
    if std::env::var_os("HARNERY_TIMING").is_some() {
        eprintln!("timing {step}: {:?}", since.elapsed());
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
    let mut derived = Derivation::new(tx, batch.events.len());
    for (i, row) in batch.events.iter().enumerate() {
        if i == half && i > 0 {
            midway();
        }
        let e = &row.event;
        let slot = derived.admit(e)?;
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
        derived.file(slot, e)?;
        prev = hash;
    }
    derived.store()?;
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
            reason: "an event with this session offset is already in the ledger".into(),
        };
    }
    err.into()
}

fn insert_signals(tx: &Transaction, batch: &AppendBatch) -> Result<(), LedgerError> {
    let mut stmt = tx.prepare_cached(
        "INSERT OR IGNORE INTO raw_signals (record_digest, adapter, session_key, event_name, received_unix_ns, env, archive_at, envelope, payload, event_ids, duplicate_of, batch) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    for s in &batch.signals {
        let ids = serde_json::to_string(&s.event_ids).expect("ids serialize");
        let (at, envelope, payload) = match &s.bytes {
            RawBytes::Archived { at } => (Some(*at as i64), None, None),
            RawBytes::Inline { envelope, payload } => (None, Some(envelope), Some(payload)),
        };
        stmt.execute(params![
            s.record_digest,
            s.adapter,
            s.session_key,
            s.event_name,
            s.received_unix_ns,
            s.env,
            at,
            envelope,
            payload,
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
