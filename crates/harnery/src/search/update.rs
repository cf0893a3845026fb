//! Bringing the index up to date with one epoch: the rows after the last
//! one indexed, read in chain order through [`LedgerReader`], a batch per
//! transaction. Each batch records how far it got and that row's hash, so
//! a run that stops half-way resumes where it stopped, and a ledger that
//! is not the one indexed (another history under the same genesis, a
//! shorter chain) is noticed: [`SearchError::Stale`], and the caller
//! makes the index again.
//!
//! A span's state and outcome are copied from the ledger's span rows onto
//! its request's and its terminal's docs whenever a batch holds one of
//! its events (its state changes only with one), so `--failed` sees a
//! span closed after its request was indexed.

use std::collections::{BTreeSet, HashSet};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::SearchError;
use super::extract::doc_of;
use crate::contract::{Event, EventType, SessionRef};
use crate::ledger::{ChainRow, LedgerReader};

/// Rows read per transaction.
const BATCH: u64 = 5_000;

/// Index the rows of `ledger` after those already indexed, all of them or
/// (with `budget`) about that many at most; how many rows were read. Each
/// batch reads how far the index is inside its own write transaction, so a
/// search and a finalize catching up at once never index a row twice.
pub fn catch_up(
    conn: &mut Connection,
    ledger: &LedgerReader,
    budget: Option<u64>,
) -> Result<u64, SearchError> {
    let genesis = ledger.genesis().genesis_id.clone();
    let last = ledger.last_seq()?;
    let mut read = 0;
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (after, hash) = indexed(&tx, &genesis)?;
        if after > last || (after > 0 && ledger.row_hash(after)? != hash) {
            return Err(SearchError::Stale(genesis));
        }
        if after == last || budget.is_some_and(|b| read >= b) {
            return Ok(read);
        }
        let batch = index_batch(&tx, ledger, &genesis, after)?;
        tx.commit()?;
        if batch.rows == 0 {
            return Ok(read);
        }
        read += batch.rows;
    }
}

/// How far `genesis` is indexed: the last row's seq and its hash.
fn indexed(conn: &Connection, genesis: &str) -> Result<(i64, Option<Vec<u8>>), SearchError> {
    Ok(conn
        .query_row(
            "SELECT indexed_seq, seq_hash FROM ledgers WHERE genesis_id = ?1",
            [genesis],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
        .unwrap_or((0, None)))
}

/// What one batch read.
struct Batch {
    rows: u64,
    last_seq: i64,
    last_hash: Vec<u8>,
    /// Sessions with a span event in the batch.
    spans_of: BTreeSet<SessionRef>,
    /// The ids of the batch's span events: a span's state changes only
    /// with an event of its own.
    span_events: HashSet<String>,
}

fn index_batch(
    tx: &Transaction,
    ledger: &LedgerReader,
    genesis: &str,
    after: i64,
) -> Result<Batch, SearchError> {
    let mut batch = Batch {
        rows: 0,
        last_seq: after,
        last_hash: Vec::new(),
        spans_of: BTreeSet::new(),
        span_events: HashSet::new(),
    };
    ledger.for_each_chain_row(after, BATCH, |row| index_row(tx, genesis, row, &mut batch))?;
    if batch.rows == 0 {
        return Ok(batch);
    }
    for session in &batch.spans_of {
        copy_span_states(tx, ledger, genesis, session, &batch.span_events)?;
    }
    tx.execute(
        "INSERT INTO ledgers (genesis_id, indexed_seq, seq_hash) VALUES (?1, ?2, ?3) \
         ON CONFLICT (genesis_id) DO UPDATE SET indexed_seq = ?2, seq_hash = ?3",
        params![genesis, batch.last_seq, batch.last_hash],
    )?;
    Ok(batch)
}

fn index_row(
    tx: &Transaction,
    genesis: &str,
    row: ChainRow<'_>,
    batch: &mut Batch,
) -> Result<(), SearchError> {
    batch.rows += 1;
    batch.last_seq = row.seq;
    batch.last_hash = row.hash.to_vec();
    // A row that does not parse has no text to offer; `verify` and
    // `validate` are what name it.
    let Ok(event) = serde_json::from_slice::<Event>(row.json) else {
        return Ok(());
    };
    if is_span_event(event.event_type()) {
        batch.spans_of.insert(event.session.clone());
        batch.span_events.insert(event.id.as_str().to_string());
    }
    let Some(doc) = doc_of(&event) else {
        return Ok(());
    };
    tx.prepare_cached(
        "INSERT INTO docs (genesis_id, seq, adapter, session_id, offset, event_id, event_type, \
         time_unix_ns, turn, kind, tool, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        genesis,
        row.seq,
        event.session.adapter.as_str(),
        event.session.session_id,
        event.offset as i64,
        event.id.as_str(),
        event.event_type().as_str(),
        event.time_unix_ns,
        event.turn.turn_id,
        doc.kind.as_str(),
        doc.tool,
        doc.text,
    ])?;
    let id = tx.last_insert_rowid();
    for table in ["words", "grams"] {
        tx.prepare_cached(&format!(
            "INSERT INTO {table} (rowid, text) VALUES (?1, ?2)"
        ))?
        .execute(params![id, doc.text])?;
    }
    Ok(())
}

fn is_span_event(ty: EventType) -> bool {
    matches!(
        ty,
        EventType::ToolRequested
            | EventType::ToolCompleted
            | EventType::CommandRequested
            | EventType::CommandCompleted
    )
}

/// Copy the state and outcome of each span of `session` that has an
/// event in the batch (`touched`) onto the docs of its request and its
/// terminal.
fn copy_span_states(
    tx: &Transaction,
    ledger: &LedgerReader,
    genesis: &str,
    session: &SessionRef,
    touched: &HashSet<String>,
) -> Result<(), SearchError> {
    let mut update = tx.prepare_cached(
        "UPDATE docs SET span_state = ?1, outcome = ?2 \
         WHERE genesis_id = ?3 AND event_id IN (?4, ?5)",
    )?;
    for span in ledger.spans(Some(session))? {
        let completed = span.completed_event_id.as_deref();
        if !touched.contains(&span.request_event_id)
            && !completed.is_some_and(|c| touched.contains(c))
        {
            continue;
        }
        update.execute(params![
            span.state.as_str(),
            span.outcome,
            genesis,
            span.request_event_id,
            span.completed_event_id,
        ])?;
    }
    Ok(())
}
