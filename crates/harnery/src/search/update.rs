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

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::SearchError;
use super::extract::{doc_of, has_text};
use super::facts::{self, Pending, Tag};
use super::store::{self, doc_id, doc_range};
use crate::contract::{Event, EventType, SessionRef};
use crate::ledger::{ChainRow, LedgerReader};

/// Rows read per transaction.
const BATCH: u64 = 5_000;

/// Index the rows of `ledger` after those already indexed, all of them or
/// (with `budget`) that many at most; how many rows were read. Each
/// batch reads how far the index is inside its own write transaction, so a
/// search and a finalize catching up at once never index a row twice.
pub fn catch_up(
    conn: &mut Connection,
    ledger: &LedgerReader,
    budget: Option<u64>,
) -> Result<u64, SearchError> {
    store::cache_kib(conn, store::INDEXING_CACHE_KIB)?;
    let read = catch_up_rows(conn, ledger, budget);
    store::cache_kib(conn, store::DEFAULT_CACHE_KIB)?;
    read
}

fn catch_up_rows(
    conn: &mut Connection,
    ledger: &LedgerReader,
    budget: Option<u64>,
) -> Result<u64, SearchError> {
    let genesis = ledger.genesis().genesis_id.clone();
    let last = ledger.last_seq()?;
    let mut read = 0;
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let at = indexed(&tx, &genesis)?;
        if at.seq > last || (at.seq > 0 && ledger.row_hash(at.seq)? != at.hash) {
            return Err(SearchError::Stale(genesis));
        }
        if at.seq == last || budget.is_some_and(|b| read >= b) {
            return Ok(read);
        }
        let rows = budget.map_or(BATCH, |b| BATCH.min(b - read));
        let batch = index_batch(&tx, ledger, &at, rows)?;
        tx.commit()?;
        if batch.rows == 0 {
            return Ok(read);
        }
        read += batch.rows;
    }
}

/// How far an epoch is indexed.
struct Indexed {
    /// The epoch's key in the index (see [`doc_id`]).
    epoch: i64,
    seq: i64,
    hash: Option<Vec<u8>>,
    /// The latest event time indexed so far.
    max_time: i64,
}

/// How far `genesis` is indexed, giving it a key when it has none yet.
fn indexed(tx: &Transaction, genesis: &str) -> Result<Indexed, SearchError> {
    tx.execute(
        "INSERT INTO epochs (genesis_id, indexed_seq) VALUES (?1, 0) ON CONFLICT DO NOTHING",
        [genesis],
    )?;
    Ok(tx.query_row(
        "SELECT id, indexed_seq, seq_hash, coalesce(max_time, ?2) FROM epochs WHERE genesis_id = ?1",
        params![genesis, i64::MIN],
        |r| {
            Ok(Indexed {
                epoch: r.get(0)?,
                seq: r.get(1)?,
                hash: r.get(2)?,
                max_time: r.get(3)?,
            })
        },
    )?)
}

/// What one batch read.
struct Batch {
    epoch: i64,
    rows: u64,
    last_seq: i64,
    last_hash: Vec<u8>,
    max_time: i64,
    /// Sessions with a span event in the batch.
    spans_of: BTreeSet<SessionRef>,
    /// Each session's first and last doc id in the batch.
    docs_of: BTreeMap<SessionRef, (i64, i64)>,
    /// The ids of the batch's span events: a span's state changes only
    /// with an event of its own.
    span_events: HashSet<String>,
    /// The tag of each doc the batch added.
    tags: Vec<(i64, Tag)>,
}

fn index_batch(
    tx: &Transaction,
    ledger: &LedgerReader,
    at: &Indexed,
    rows: u64,
) -> Result<Batch, SearchError> {
    let mut batch = Batch {
        epoch: at.epoch,
        rows: 0,
        last_seq: at.seq,
        last_hash: Vec::new(),
        max_time: at.max_time,
        spans_of: BTreeSet::new(),
        docs_of: BTreeMap::new(),
        span_events: HashSet::new(),
        tags: Vec::new(),
    };
    ledger.for_each_chain_row(at.seq, rows, |row| index_row(tx, row, &mut batch))?;
    if batch.rows == 0 {
        return Ok(batch);
    }
    let mut pending = Pending::default();
    if let (Some((first, _)), Some((last, _))) = (batch.tags.first(), batch.tags.last()) {
        let lengths: HashMap<i64, u64> = facts::lengths(tx, *first, *last)?.into_iter().collect();
        for (id, tag) in &batch.tags {
            pending.set(tx, *id, lengths.get(id).copied().unwrap_or(0), *tag)?;
        }
    }
    for (session, (first, last)) in &batch.docs_of {
        tx.prepare_cached(
            "INSERT INTO sessions (epoch, adapter, session_id, first_id, last_id) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO UPDATE SET \
             first_id = min(first_id, excluded.first_id), last_id = max(last_id, excluded.last_id)",
        )?
        .execute(params![
            at.epoch,
            session.adapter.as_str(),
            session.session_id,
            first,
            last
        ])?;
    }
    for session in &batch.spans_of {
        copy_span_states(
            tx,
            ledger,
            at.epoch,
            session,
            &batch.span_events,
            &mut pending,
        )?;
    }
    pending.flush(tx)?;
    tx.execute(
        "UPDATE epochs SET indexed_seq = ?2, seq_hash = ?3, max_time = ?4 WHERE id = ?1",
        params![at.epoch, batch.last_seq, batch.last_hash, batch.max_time],
    )?;
    Ok(batch)
}

/// Whether a row can hold searchable text or change a span's state: every
/// other row is passed over without being parsed.
fn worth_reading(ty: &[u8]) -> bool {
    std::str::from_utf8(ty)
        .ok()
        .and_then(EventType::parse)
        .is_some_and(|ty| has_text(ty) || is_span_event(ty))
}

fn index_row(tx: &Transaction, row: ChainRow<'_>, batch: &mut Batch) -> Result<(), SearchError> {
    batch.rows += 1;
    batch.last_seq = row.seq;
    batch.last_hash = row.hash.to_vec();
    if !worth_reading(row.ty) {
        return Ok(());
    }
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
    // The running maximum: no doc before this one in the epoch is newer,
    // which lets a newest-first search stop early.
    batch.max_time = batch.max_time.max(event.time_unix_ns);
    let id = doc_id(batch.epoch, row.seq);
    let span = batch
        .docs_of
        .entry(event.session.clone())
        .or_insert((id, id));
    span.1 = id;
    batch
        .tags
        .push((id, Tag::new(doc.kind, doc.tool.as_deref())));
    tx.prepare_cached(
        "INSERT INTO docs (id, adapter, session_id, offset, event_id, event_type, time_unix_ns, \
         time_bound, turn, kind, tool) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        id,
        event.session.adapter.as_str(),
        event.session.session_id,
        event.offset as i64,
        event.id.as_str(),
        event.event_type().as_str(),
        event.time_unix_ns,
        batch.max_time,
        event.turn.turn_id,
        doc.kind.as_str(),
        doc.tool,
    ])?;
    for table in ["texts", "words", "grams"] {
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
    epoch: i64,
    session: &SessionRef,
    touched: &HashSet<String>,
    pending: &mut Pending,
) -> Result<(), SearchError> {
    let (first, last) = doc_range(epoch);
    let mut update = tx.prepare_cached(
        "UPDATE docs SET span_state = ?1, outcome = ?2 \
         WHERE event_id IN (?4, ?5) AND id BETWEEN ?3 AND ?6 RETURNING id",
    )?;
    for span in ledger.spans(Some(session))? {
        let completed = span.completed_event_id.as_deref();
        if !touched.contains(&span.request_event_id)
            && !completed.is_some_and(|c| touched.contains(c))
        {
            continue;
        }
        let ids = update
            .query_map(
                params![
                    span.state.as_str(),
                    span.outcome,
                    first,
                    span.request_event_id,
                    span.completed_event_id,
                    last,
                ],
                |r| r.get::<_, i64>(0),
            )?
            .collect::<Result<Vec<i64>, _>>()?;
        let failed = span.outcome.as_deref() == Some("failure");
        for id in ids {
            pending.set_failed(tx, id, failed)?;
        }
    }
    Ok(())
}
