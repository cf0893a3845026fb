//! Bringing the index up to date with one epoch: the rows after the last
//! one indexed, read in chain order through [`LedgerReader`], a batch per
//! transaction. Each batch records how far it got and that row's hash, so
//! a run that stops half-way resumes where it stopped, and a ledger that
//! is not the one indexed (another history under the same genesis, a
//! shorter chain) is noticed: [`SearchError::Stale`], and the caller
//! makes the index again.
//!
//! Two threads share the work: the caller's reads the ledger (through the
//! caller's own connection: one opened now would wait on the WAL that a
//! `finalize` may be cutting beside it) and parses the rows, and a thread
//! of its own writes the index, the larger part (two thirds, measured).
//! Each batch begins on the writing thread, which says where the index
//! stands; the reading thread checks that against the ledger, reads the
//! batch's rows after it and hands them over a few hundred at a time, then
//! the span rows the batch needs; the writing thread commits.
//!
//! A span's state and outcome are copied from the ledger's span rows onto
//! its request's and its terminal's docs whenever a batch holds one of
//! its events or a `tool.recorded` joined to it (its state and outcome
//! change only with one), so `--failed` sees a span closed, or found to
//! have exited non-zero, after its request was indexed.
//!
//! A text said twice (a prompt or message by a hook and by the agent's
//! record in one turn, a tool call's text twice under one call id (its
//! output by the hook and by the record among them), a
//! permission asked for a request already indexed) is indexed once:
//! `said::said_before`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use rusqlite::{Connection, Transaction, TransactionBehavior, params};

use super::SearchError;
use super::extract::{Doc, doc_of, has_text};
use super::facts::{self, Pending, Tag};
use super::keys::{event_key, kind_code};
use super::said::said_before;
use super::store::{self, doc_id, doc_range};
use crate::contract::{Event, EventType, Payload, SessionRef};
use crate::failpoint;
use crate::ledger::{ChainRow, LedgerReader, SpanRow};

/// How rows are grouped: a write transaction per `batch` rows, handed to
/// the writing thread `handoff` at a time (tests make both small).
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub batch: u64,
    pub handoff: usize,
}

impl Sizes {
    /// 5,000 rows a transaction, 256 a handoff.
    pub const DEFAULT: Sizes = Sizes {
        batch: 5_000,
        handoff: 256,
    };
}

/// How many handoffs may wait for the writing thread (about a megabyte of
/// parsed events at the default sizes).
const HANDOFFS_WAITING: usize = 4;

/// The in-process failpoint (see `failpoint::arm_hook`, keyed by the
/// index's path) run after each batch commits: tests index more rows from
/// another connection there.
pub const AFTER_BATCH: &str = "search-after-batch";

/// Index the rows of `ledger` after those already indexed, all of them or
/// (with `budget`) that many at most; how many rows were read. Each
/// batch reads how far the index is inside its own write transaction, so a
/// search and a finalize catching up at once never index a row twice.
pub(crate) fn catch_up(
    conn: &mut Connection,
    ledger: &LedgerReader,
    budget: Option<u64>,
    sizes: Sizes,
) -> Result<u64, SearchError> {
    store::cache_kib(conn, store::INDEXING_CACHE_KIB)?;
    let read = catch_up_rows(conn, ledger, budget, sizes).and_then(|n| {
        if n > 0 {
            store::give_back_free_pages(conn)?;
        }
        Ok(n)
    });
    store::cache_kib(conn, store::DEFAULT_CACHE_KIB)?;
    read
}

/// What the reading thread tells the writing one.
enum Order {
    /// The batch's next rows.
    Rows(Vec<Row>),
    /// The batch is read: the span rows it touched (a span's state changes
    /// only with an event of its own); commit it.
    End(Vec<SpanRow>),
}

fn catch_up_rows(
    conn: &mut Connection,
    ledger: &LedgerReader,
    budget: Option<u64>,
    sizes: Sizes,
) -> Result<u64, SearchError> {
    let genesis = ledger.genesis().genesis_id.clone();
    let last = ledger.rows().last_seq()?;
    std::thread::scope(|scope| {
        let (order, orders) = sync_channel(HANDOFFS_WAITING);
        let (tell, told) = sync_channel(1);
        let writer = std::thread::Builder::new()
            .name("harnery-index".into())
            .spawn_scoped(scope, || write_batches(conn, &genesis, orders, tell))
            .map_err(|e| SearchError::io(ledger.dir(), e))?;
        let read = read_batches(ledger, last, budget, sizes, &order, &told);
        drop(order);
        let written = writer.join().expect("the index writer does not panic");
        // When the writing thread stopped first, its failure is why.
        match (read, written) {
            (Err(ReadStop::Failed(e)), _) | (_, Err(e)) => Err(e),
            (Ok(read), Ok(())) => Ok(read),
            (Err(ReadStop::WriterGone), Ok(())) => Err(SearchError::io(
                ledger.dir(),
                std::io::Error::other("the search index's writing thread stopped early"),
            )),
        }
    })
}

/// Why the reading stopped before the end.
enum ReadStop {
    /// The writing thread is gone: its result says why.
    WriterGone,
    Failed(SearchError),
}

impl<E: Into<SearchError>> From<E> for ReadStop {
    fn from(e: E) -> ReadStop {
        ReadStop::Failed(e.into())
    }
}

/// The reading thread's part: at each batch the writing thread says where
/// the index stands; check it, read the rows after it (`sizes.batch`, or
/// what is left of the budget), hand them over and end the batch; how many
/// rows were read in all.
fn read_batches(
    ledger: &LedgerReader,
    last: i64,
    budget: Option<u64>,
    sizes: Sizes,
    order: &SyncSender<Order>,
    told: &Receiver<Indexed>,
) -> Result<u64, ReadStop> {
    let genesis = &ledger.genesis().genesis_id;
    let handoff = sizes.handoff.max(1);
    let send = |o: Order| order.send(o).map_err(|_| ReadStop::WriterGone);
    let mut read = 0;
    loop {
        let at = told.recv().map_err(|_| ReadStop::WriterGone)?;
        // The row the index stands at is read afresh: another run may have
        // indexed rows this run's view of the ledger did not have yet (the
        // chain only grows), which is the index being ahead, not stale.
        if at.seq > 0 && ledger.rows().row_hash(at.seq)? != at.hash {
            return Err(SearchError::Stale(genesis.clone()).into());
        }
        if at.seq >= last || budget.is_some_and(|b| read >= b) {
            return Ok(read);
        }
        let rows = budget.map_or(sizes.batch, |b| sizes.batch.min(b - read));
        // The sessions with a span event in the batch, and those events.
        let mut spans_of = BTreeSet::new();
        let mut touched = HashSet::new();
        let mut chunk = Vec::with_capacity(handoff);
        let n = ledger.rows().for_each_chain_row(at.seq, rows, |row| {
            let row = read_row(row);
            if let Some((event, _)) = &row.event
                && let Some(span) = touched_span(event)
            {
                spans_of.insert(event.session.clone());
                touched.insert(span.to_string());
            }
            chunk.push(row);
            if chunk.len() == handoff {
                send(Order::Rows(std::mem::replace(
                    &mut chunk,
                    Vec::with_capacity(handoff),
                )))?;
            }
            Ok::<(), ReadStop>(())
        })?;
        send(Order::Rows(chunk))?;
        let mut spans = Vec::new();
        for session in spans_of {
            spans.extend(
                ledger
                    .spans()
                    .list(Some(&session))?
                    .into_iter()
                    .filter(|span| {
                        touched.contains(&span.request_event_id)
                            || span
                                .completed_event_id
                                .as_ref()
                                .is_some_and(|c| touched.contains(c))
                    }),
            );
        }
        send(Order::End(spans))?;
        if n == 0 {
            return Ok(read);
        }
        read += n;
    }
}

/// The writing thread's part: begin a batch, say where the index stands,
/// index what the reading thread hands over, commit at its end; until the
/// reading thread stops (a batch it did not end is not committed).
fn write_batches(
    conn: &mut Connection,
    genesis: &str,
    orders: Receiver<Order>,
    tell: SyncSender<Indexed>,
) -> Result<(), SearchError> {
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let at = indexed(&tx, genesis)?;
        if tell.send(at.clone()).is_err() {
            return Ok(());
        }
        let mut batch = Batch::new(&at);
        let spans = loop {
            match orders.recv() {
                Ok(Order::Rows(rows)) => {
                    for row in rows {
                        index_row(&tx, row, &mut batch)?;
                    }
                }
                Ok(Order::End(spans)) => break spans,
                Err(_) => return Ok(()),
            }
        };
        if batch.rows > 0 {
            end_batch(&tx, &at, &batch, &spans)?;
        }
        tx.commit()?;
        if let Some(hook) = conn
            .path()
            .and_then(|p| failpoint::take_hook(AFTER_BATCH, p.as_ref()))
        {
            hook();
        }
    }
}

/// One ledger row as indexing needs it, read (and, when it can hold text
/// or change a span's state, parsed) on the reading thread.
struct Row {
    seq: i64,
    hash: Vec<u8>,
    /// The row's event, and its doc when it has searchable text; `None`
    /// for a row passed over (see [`worth_reading`]) or one that does not
    /// parse (`verify` and `validate` are what name it).
    event: Option<(Event, Option<Doc>)>,
}

fn read_row(row: ChainRow<'_>) -> Row {
    let event = worth_reading(row.ty)
        .then(|| serde_json::from_slice::<Event>(row.json).ok())
        .flatten()
        .map(|event| {
            let doc = doc_of(&event);
            (event, doc)
        });
    Row {
        seq: row.seq,
        hash: row.hash.to_vec(),
        event,
    }
}

/// How far an epoch is indexed.
#[derive(Clone)]
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
    /// Each session's first and last doc id in the batch, by its key.
    docs_of: BTreeMap<i64, (i64, i64)>,
    /// The keys of the sessions the batch has docs of.
    keys: HashMap<SessionRef, i64>,
    /// The tag of each doc the batch added.
    tags: Vec<(i64, Tag)>,
}

impl Batch {
    fn new(at: &Indexed) -> Batch {
        Batch {
            epoch: at.epoch,
            rows: 0,
            last_seq: at.seq,
            last_hash: Vec::new(),
            max_time: at.max_time,
            docs_of: BTreeMap::new(),
            keys: HashMap::new(),
            tags: Vec::new(),
        }
    }
}

/// A batch's rows are indexed: its docs' facts and sessions, the state of
/// the spans its events touched (`spans`), and how far the index now is.
fn end_batch(
    tx: &Transaction,
    at: &Indexed,
    batch: &Batch,
    spans: &[SpanRow],
) -> Result<(), SearchError> {
    let mut pending = Pending::default();
    if let (Some((first, _)), Some((last, _))) = (batch.tags.first(), batch.tags.last()) {
        let lengths: HashMap<i64, u64> = facts::lengths(tx, *first, *last)?.into_iter().collect();
        for (id, tag) in &batch.tags {
            pending.set(tx, *id, lengths.get(id).copied().unwrap_or(0), *tag)?;
        }
    }
    for (session, (first, last)) in &batch.docs_of {
        tx.prepare_cached(
            "INSERT INTO ranges (epoch, session, first_id, last_id) \
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO UPDATE SET \
             first_id = min(first_id, excluded.first_id), last_id = max(last_id, excluded.last_id)",
        )?
        .execute(params![at.epoch, session, first, last])?;
    }
    copy_span_states(tx, at.epoch, spans, &mut pending)?;
    pending.flush(tx)?;
    tx.execute(
        "UPDATE epochs SET indexed_seq = ?2, seq_hash = ?3, max_time = ?4 WHERE id = ?1",
        params![at.epoch, batch.last_seq, batch.last_hash, batch.max_time],
    )?;
    Ok(())
}

/// Whether a row can hold searchable text or change a span's state (a
/// `tool.recorded` can make its span a failure): every
/// other row is passed over without being parsed.
fn worth_reading(ty: &[u8]) -> bool {
    std::str::from_utf8(ty)
        .ok()
        .and_then(EventType::parse)
        .is_some_and(|ty| has_text(ty) || is_span_event(ty) || ty == EventType::ToolRecorded)
}

fn index_row(tx: &Transaction, row: Row, batch: &mut Batch) -> Result<(), SearchError> {
    batch.rows += 1;
    batch.last_seq = row.seq;
    batch.last_hash = row.hash;
    let Some((event, doc)) = row.event else {
        return Ok(());
    };
    let Some(doc) = doc else {
        return Ok(());
    };
    if said_before(tx, &event, &doc)? {
        return Ok(());
    }
    // The running maximum: no doc before this one in the epoch is newer,
    // which lets a newest-first search stop early.
    batch.max_time = batch.max_time.max(event.time_unix_ns);
    let id = doc_id(batch.epoch, row.seq);
    let session = session_key(tx, &mut batch.keys, &event.session)?;
    let span = batch.docs_of.entry(session).or_insert((id, id));
    span.1 = id;
    batch
        .tags
        .push((id, Tag::new(doc.kind, doc.tool.as_deref())));
    // A bound that is the doc's own time (each doc whose time is the
    // newest yet, as where times rise along the chain) is kept as NULL,
    // which takes no bytes.
    let bound = (batch.max_time != event.time_unix_ns).then_some(batch.max_time);
    tx.prepare_cached(
        "INSERT INTO docs (id, session, time_unix_ns, time_bound, kind, tool) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        id,
        session,
        event.time_unix_ns,
        bound,
        kind_code(doc.kind),
        doc.tool,
    ])?;
    tx.prepare_cached("INSERT INTO doc_events (event, id) VALUES (?1, ?2)")?
        .execute(params![event_key(event.id.as_str()), id])?;
    for table in ["texts", "words", "grams"] {
        tx.prepare_cached(&format!(
            "INSERT INTO {table} (rowid, text) VALUES (?1, ?2)"
        ))?
        .execute(params![id, doc.text])?;
    }
    Ok(())
}

/// The index's key of `session`, given it when it has none yet; `keys`
/// remembers those the batch has used.
fn session_key(
    tx: &Transaction,
    keys: &mut HashMap<SessionRef, i64>,
    session: &SessionRef,
) -> Result<i64, SearchError> {
    if let Some(key) = keys.get(session) {
        return Ok(*key);
    }
    let params = params![session.adapter.as_str(), session.session_id];
    tx.prepare_cached(
        "INSERT INTO sessions (adapter, session_id) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
    )?
    .execute(params)?;
    let key = tx
        .prepare_cached("SELECT id FROM sessions WHERE adapter = ?1 AND session_id = ?2")?
        .query_row(params, |r| r.get(0))?;
    keys.insert(session.clone(), key);
    Ok(key)
}

/// The span an event may change the state or outcome of, by an id of its
/// request or terminal: a span event's own id, or the span a
/// `tool.recorded` joined (its exit code can make the span a failure).
fn touched_span(event: &Event) -> Option<&str> {
    match &event.payload {
        Payload::ToolRecorded(t) => t.span_request_event_id.as_ref().map(|id| id.as_str()),
        _ => is_span_event(event.event_type()).then(|| event.id.as_str()),
    }
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

/// Copy the state and outcome of each span in `spans` onto the docs of its
/// request and its terminal.
fn copy_span_states(
    tx: &Transaction,
    epoch: i64,
    spans: &[SpanRow],
    pending: &mut Pending,
) -> Result<(), SearchError> {
    let (first, last) = doc_range(epoch);
    let mut update = tx.prepare_cached(
        "UPDATE docs SET span_state = ?1, outcome = ?2 WHERE id IN \
         (SELECT id FROM doc_events WHERE event IN (?4, ?5) AND id BETWEEN ?3 AND ?6) \
         RETURNING id",
    )?;
    for span in spans {
        let ids = update
            .query_map(
                params![
                    span.state.as_str(),
                    span.outcome,
                    first,
                    event_key(&span.request_event_id),
                    span.completed_event_id.as_deref().map(event_key),
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
