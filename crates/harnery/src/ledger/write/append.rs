//! Appending one ready batch: events with their chain links, the tables
//! derived from them, the raw signals, producer state and the exactly-once
//! bookkeeping, all in ONE transaction that first checks the fencing token.

use rusqlite::{Transaction, TransactionBehavior, params};

use super::LedgerWriter;
use super::ahead::{MadeAhead, chain_head, texts};
use super::batch::{AppendBatch, AppendOutcome, BatchSignal, RawBytes};
use super::derive::Derivation;
use crate::contract::{Event, SessionRef, validate_event};
use crate::ledger::{LedgerError, chain, eventz, signalz, trace_rows};
use crate::progress::timing;

impl LedgerWriter {
    /// Take the next incarnation: every writer with an older one is fenced.
    pub fn take_incarnation(&mut self) -> Result<u64, LedgerError> {
        let tx = self
            .conn_mut()
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.prepare_cached("UPDATE incarnation SET value = value + 1 WHERE id = 1")?
            .execute([])?;
        let value: i64 = tx
            .prepare_cached("SELECT value FROM incarnation WHERE id = 1")?
            .query_row([], |r| r.get(0))?;
        tx.commit().map_err(LedgerError::CommitFailed)?;
        Ok(value as u64)
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
        self.append_ahead(batch, None, incarnation, now_unix_ns, midway)
    }

    /// [`append`](Self::append), with `batch`'s work made ahead
    /// ([`LedgerWriter::ahead`]): links made from the head the batch
    /// extends are taken as they are, and bodies made with the dictionary
    /// the writer holds; the rest is made here. The rows are the same
    /// either way.
    pub(crate) fn append_ahead(
        &mut self,
        batch: &AppendBatch,
        made: Option<&MadeAhead>,
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
            .read
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
        insert_events(&tx, batch, seed, self.encoder.as_mut(), made, midway)?;
        timing("append-events", t);
        let t = std::time::Instant::now();
        insert_signals(&tx, batch)?;
        let states = made
            .and_then(|m| m.bodies.as_ref())
            .map(|(_, states)| states)
            .filter(|s| s.len() == batch.states.len());
        insert_states(&tx, batch, self.encoder.is_some(), states)?;
        let states = batch.states.iter().map(|s| (&s.session, &*s.state));
        super::session_list::note_states(&tx, states)?;
        insert_bookkeeping(&tx, batch, incarnation, now_unix_ns)?;
        if batch
            .signals
            .iter()
            .any(|s| matches!(s.bytes, RawBytes::Archived { .. }))
        {
            crate::ledger::integrity::record_members(&tx, &self.read.dir, &batch.id)?;
        }
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
    mut encoder: Option<&mut eventz::Encoder>,
    made: Option<&MadeAhead>,
    midway: &dyn Fn(),
) -> Result<(), LedgerError> {
    let mut prev = chain_head(tx, seed)?;
    let links = made.and_then(|m| m.links.from(&prev, batch.events.len()));
    let pre = made
        .and_then(|m| m.bodies.as_ref())
        .map(|(events, _)| events);
    // A compact ledger stores the text compressed (`ledger::eventz`); the
    // chain links the text itself either way.
    let mut stmt = tx.prepare_cached(match encoder {
        Some(_) => "INSERT INTO event_store (id, adapter, session_id, offset, type, time_unix_ns, body, prev_hash, hash, batch_k) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        None => "INSERT INTO events (id, adapter, session_id, offset, type, time_unix_ns, json, prev_hash, hash, batch) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    })?;
    let mut traced = trace_rows::ChunkWriter::new(tx, encoder.is_some())?;
    let half = batch.events.len() / 2;
    let mut derived = Derivation::new(tx, batch.events.len());
    // As in `insert_signals`: bindings outlive each row, so the batch id is
    // bound once and the session only when it changes (a batch's events
    // come session by session); the rest are bound by type.
    match encoder {
        Some(_) => {
            let k = eventz::Batches::default().key(tx, &batch.id)?;
            stmt.raw_bind_parameter(10, k)?
        }
        None => stmt.raw_bind_parameter(10, batch.id.as_str())?,
    }
    // Bodies made ahead are taken as they are when this encoder would make
    // the same; otherwise they are made here, all of the batch's at once.
    let made;
    let bodies = match encoder.as_deref_mut() {
        None => None,
        Some(enc) => match enc.takes(pre, batch.events.len()) {
            Some(pre) => Some(pre),
            None => {
                made = enc.events(&texts(batch))?;
                Some(&made)
            }
        },
    };
    let mut packed = bodies.and_then(eventz::pack::RefWriter::of);
    let mut session: Option<&SessionRef> = None;
    for (i, row) in batch.events.iter().enumerate() {
        if i == half && i > 0 {
            midway();
        }
        let e = &row.event;
        let slot = derived.admit(e)?;
        let hash = match links {
            Some(links) => links[i],
            None => chain::link(&prev, row.json.as_bytes()),
        };
        if session != Some(&e.session) {
            stmt.raw_bind_parameter(2, e.session.adapter.as_str())?;
            stmt.raw_bind_parameter(3, e.session.session_id.as_str())?;
            session = Some(&e.session);
        }
        stmt.raw_bind_parameter(1, e.id.as_str())?;
        stmt.raw_bind_parameter(4, e.offset as i64)?;
        stmt.raw_bind_parameter(5, e.event_type().as_str())?;
        stmt.raw_bind_parameter(6, e.time_unix_ns)?;
        match (&mut packed, bodies) {
            (Some(refs), _) => stmt.raw_bind_parameter(7, refs.next(tx)?)?,
            (None, Some(bodies)) => stmt.raw_bind_parameter(7, bodies.get(i))?,
            (None, None) => stmt.raw_bind_parameter(7, row.json.as_str())?,
        }
        stmt.raw_bind_parameter(8, &prev[..])?;
        stmt.raw_bind_parameter(9, &hash[..])?;
        stmt.raw_execute().map_err(|err| refuse_duplicate(e, err))?;
        traced.add(tx.last_insert_rowid(), e)?;
        derived.file(slot, e)?;
        prev = hash;
    }
    traced.flush()?;
    derived.store()?;
    if let Some(enc) = encoder {
        enc.train_if_due(tx)?;
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
            reason: "an event with this session offset is already in the ledger".into(),
        };
    }
    err.into()
}

fn insert_signals(tx: &Transaction, batch: &AppendBatch) -> Result<(), LedgerError> {
    if signalz::is_compact(tx)? {
        return insert_signal_rows(tx, batch);
    }
    let mut stmt = tx.prepare_cached(
        "INSERT INTO raw_signals (record_digest, adapter, session_key, event_name, received_unix_ns, env, archive_at, envelope, payload, event_ids, duplicate_of, batch) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
         ON CONFLICT (received_unix_ns, record_digest) DO NOTHING",
    )?;
    // A binding outlives the statement's reset after each row, so the
    // batch id is bound once and a column the row before bound to the same
    // value (the adapter, mostly the session, absent values) keeps its
    // binding: binding text costs SQLite an allocation and a copy. The
    // rest are bound by type, one by one, not through a `&dyn ToSql` slice.
    stmt.raw_bind_parameter(12, batch.id.as_str())?;
    let mut ids = String::new();
    let mut prev: Option<&BatchSignal> = None;
    for s in &batch.signals {
        let differs =
            |same: fn(&BatchSignal, &BatchSignal) -> bool| prev.is_none_or(|p| !same(p, s));
        stmt.raw_bind_parameter(1, s.record_digest.as_str())?;
        if differs(|a, b| a.adapter == b.adapter) {
            stmt.raw_bind_parameter(2, s.adapter.as_str())?;
        }
        if differs(|a, b| a.session_key == b.session_key) {
            stmt.raw_bind_parameter(3, s.session_key.as_str())?;
        }
        stmt.raw_bind_parameter(4, s.event_name.as_deref())?;
        stmt.raw_bind_parameter(5, s.received_unix_ns)?;
        if differs(|a, b| a.env == b.env) {
            stmt.raw_bind_parameter(6, s.env.as_deref())?;
        }
        match &s.bytes {
            RawBytes::Archived { at } => {
                stmt.raw_bind_parameter(7, *at as i64)?;
                // Envelope and payload are absent in every archived row.
                if differs(|a, _| matches!(a.bytes, RawBytes::Archived { .. })) {
                    stmt.raw_bind_parameter(8, None::<&str>)?;
                    stmt.raw_bind_parameter(9, None::<&[u8]>)?;
                }
            }
            RawBytes::Inline { envelope, payload } => {
                stmt.raw_bind_parameter(7, None::<i64>)?;
                stmt.raw_bind_parameter(8, envelope.as_str())?;
                stmt.raw_bind_parameter(9, payload.as_slice())?;
            }
        }
        ids.clear();
        event_ids_text(&mut ids, &s.event_ids);
        stmt.raw_bind_parameter(10, ids.as_str())?;
        if differs(|a, b| a.duplicate_of == b.duplicate_of) {
            stmt.raw_bind_parameter(11, s.duplicate_of.as_deref())?;
        }
        stmt.raw_execute()?;
        prev = Some(s);
    }
    Ok(())
}

/// The batch's signals straight into a compact ledger's store
/// (`ledger::signalz`), as the `raw_signals` view shows them.
fn insert_signal_rows(tx: &Transaction, batch: &AppendBatch) -> Result<(), LedgerError> {
    let mut put = signalz::Inserter::new(tx)?;
    for s in &batch.signals {
        let (archive_at, envelope, payload) = match &s.bytes {
            RawBytes::Archived { at } => (Some(*at as i64), None, None),
            RawBytes::Inline { envelope, payload } => {
                (None, Some(envelope.as_str()), Some(payload.as_slice()))
            }
        };
        let row = signalz::Row {
            record_digest: &s.record_digest,
            adapter: &s.adapter,
            session_key: &s.session_key,
            event_name: s.event_name.as_deref(),
            received_unix_ns: s.received_unix_ns,
            env: s.env.as_deref(),
            archive_at,
            envelope,
            payload,
            event_ids: signalz::Ids::List(&s.event_ids),
            duplicate_of: s.duplicate_of.as_deref(),
            batch: &batch.id,
        };
        put.row(&row)?;
    }
    Ok(())
}

/// A signal's event ids as the ledger keeps them: the JSON text serde_json
/// writes for the list. An id with nothing to escape (every id this crate
/// mints) is copied between quotes; a list holding any other is left to
/// serde_json.
fn event_ids_text(out: &mut String, ids: &[String]) {
    let plain = |id: &String| !crate::contract::json::needs_escape(id.as_bytes());
    if !ids.iter().all(plain) {
        out.push_str(&serde_json::to_string(ids).expect("a list of strings serializes"));
        return;
    }
    out.push('[');
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(id);
        out.push('"');
    }
    out.push(']');
}

/// The batch's producer states. A compact ledger's go straight into its
/// store, as the `producer_state` view's trigger would write them: their
/// bodies compressed ahead, or compressed here by the same `event_body`
/// (not through the trigger: see `trace_rows::ChunkWriter::new`). An
/// older ledger's go into its table.
fn insert_states(
    tx: &Transaction,
    batch: &AppendBatch,
    compact: bool,
    bodies: Option<&eventz::Bodies>,
) -> Result<(), LedgerError> {
    let bodies = bodies.filter(|_| compact);
    let mut stmt = tx.prepare_cached(match (compact, bodies) {
        (true, Some(_)) => "INSERT OR REPLACE INTO producer_state_store (adapter, session_id, state, batch) VALUES (?1, ?2, ?3, ?4)",
        (true, None) => "INSERT OR REPLACE INTO producer_state_store (adapter, session_id, state, batch) VALUES (?1, ?2, event_body(?3), ?4)",
        (false, _) => "INSERT OR REPLACE INTO producer_state (adapter, session_id, state, batch) VALUES (?1, ?2, ?3, ?4)",
    })?;
    stmt.raw_bind_parameter(4, batch.id.as_str())?;
    for (i, s) in batch.states.iter().enumerate() {
        stmt.raw_bind_parameter(1, s.session.adapter.as_str())?;
        stmt.raw_bind_parameter(2, s.session.session_id.as_str())?;
        match bodies {
            Some(bodies) => stmt.raw_bind_parameter(3, bodies.get(i))?,
            None => stmt.raw_bind_parameter(3, &*s.state)?,
        }
        stmt.raw_execute()?;
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
            "INSERT INTO drained_segments (segment, batch) VALUES (?1, ?2) ON CONFLICT (segment) DO NOTHING",
        )?
        .execute(params![source, batch.id])?;
    }
    tx.prepare_cached("INSERT INTO applied_batches (batch, incarnation, events, signals, applied_unix_ns) VALUES (?1, ?2, ?3, ?4, ?5)")?.execute(
        params![batch.id, incarnation as i64, batch.events.len() as i64, batch.signals.len() as i64, now_unix_ns],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{AppendBatch, BatchSignal, RawBytes, event_ids_text};
    use crate::home::Home;
    use crate::ledger::LedgerWriter;

    fn text(ids: &[String]) -> String {
        let mut out = String::new();
        event_ids_text(&mut out, ids);
        out
    }

    #[test]
    fn event_ids_are_written_as_serde_json_writes_them() {
        let lists: [&[&str]; 6] = [
            &[],
            &[""],
            &["ev_62aa87cc2cbe603d5f6e36028d66caeb"],
            &["ev_1", "ev_2", "é ✓ \u{7f}"],
            &["ev_1", "a\"b"],
            &["\\", "\u{0}\u{1f}\n\t\u{8}\u{c}\r"],
        ];
        for list in lists {
            let ids: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            assert_eq!(text(&ids), serde_json::to_string(&ids).unwrap());
        }
    }

    proptest! {
        #[test]
        fn any_event_ids_are_written_as_serde_json_writes_them(ids in prop::collection::vec(any::<String>(), 0..4)) {
            prop_assert_eq!(text(&ids), serde_json::to_string(&ids).unwrap());
        }
    }

    /// Twelve signals that vary every column against the row before in
    /// turn, so a binding kept from the row before would show.
    fn varied_signals() -> Vec<BatchSignal> {
        (0..12u64)
            .map(|i| BatchSignal {
                record_digest: format!("r{i}"),
                adapter: ["claude-code", "copilot"][i as usize % 2].into(),
                session_key: format!("s{}", i / 2 % 2),
                event_name: (i % 3 != 1).then(|| format!("E{i}")),
                received_unix_ns: i as i64,
                env: (i % 3 == 0).then(|| format!(r#"{{"V":"{}"}}"#, i / 6)),
                bytes: if i % 4 == 3 {
                    RawBytes::Inline {
                        envelope: format!("envelope {i}"),
                        payload: vec![i as u8; i as usize],
                    }
                } else {
                    RawBytes::Archived { at: i * 100 }
                },
                event_ids: (0..i % 3).map(|n| format!("ev_{i}_{n}")).collect(),
                duplicate_of: (i % 5 == 4).then(|| "r0".into()),
            })
            .collect()
    }

    #[test]
    fn every_signal_row_holds_its_own_values() {
        let dir = tempfile::tempdir().unwrap();
        let mut ledger = LedgerWriter::open(&Home::at(dir.path()), 1).unwrap();
        let incarnation = ledger.take_incarnation().unwrap();
        let batch = AppendBatch {
            id: "b1".into(),
            contract_digest: ledger.genesis().schema_digest.clone(),
            sources: Vec::new(),
            signals: varied_signals(),
            events: Vec::new(),
            states: Vec::new(),
        };
        ledger.append(&batch, incarnation, 1, &|| {}).unwrap();
        type Row = (String, String, String, Option<String>, i64, Option<String>);
        type Rest = (
            Option<i64>,
            Option<String>,
            Option<Vec<u8>>,
            String,
            Option<String>,
            String,
        );
        let mut stmt = ledger
            .conn
            .prepare(
                "SELECT record_digest, adapter, session_key, event_name, received_unix_ns, env, \
                 archive_at, envelope, payload, event_ids, duplicate_of, batch \
                 FROM raw_signals ORDER BY received_unix_ns",
            )
            .unwrap();
        let stored: Vec<(Row, Rest)> = stmt
            .query_map([], |r| {
                let row = (
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                );
                let rest = (
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                    r.get(9)?,
                    r.get(10)?,
                    r.get(11)?,
                );
                Ok((row, rest))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected: Vec<(Row, Rest)> = batch
            .signals
            .iter()
            .map(|s| {
                let (at, envelope, payload) = match &s.bytes {
                    RawBytes::Archived { at } => (Some(*at as i64), None, None),
                    RawBytes::Inline { envelope, payload } => {
                        (None, Some(envelope.clone()), Some(payload.clone()))
                    }
                };
                let row = (
                    s.record_digest.clone(),
                    s.adapter.clone(),
                    s.session_key.clone(),
                    s.event_name.clone(),
                    s.received_unix_ns,
                    s.env.clone(),
                );
                let ids = serde_json::to_string(&s.event_ids).unwrap();
                let rest = (
                    at,
                    envelope,
                    payload,
                    ids,
                    s.duplicate_of.clone(),
                    "b1".into(),
                );
                (row, rest)
            })
            .collect();
        assert_eq!(stored, expected);
    }
}
