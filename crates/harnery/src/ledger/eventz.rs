//! Compact event storage: every event's canonical text kept zstd-compressed
//! with a dictionary the ledger trains on its own events, and read back
//! byte for byte through one SQL function, so that no query and no caller
//! ever sees a compressed byte.
//!
//! A compact ledger keeps its rows in `event_store`, whose `body` column
//! holds the compressed text (and `batch_k` the batch's number in
//! `event_batches`, not its 62-byte name); `events` is then a view over it with the same
//! columns as the table an older ledger has, `json` decoded by
//! `event_json(body)`. Every query of the read side reads `events` either
//! way. The hash chain is over the canonical text, as before: the writer
//! hashes the text, then compresses it; `verify` decodes and hashes again.
//!
//! A body (format 1):
//!
//! ```text
//! 0x01                 1 byte: format version
//! dictionary id        2 bytes, little endian: a row of `event_dicts`, 0 = none
//! check                8 bytes: the first of blake3(dictionary id, frame)
//! zstd frame           the text compressed (its length in the frame header)
//! ```
//!
//! Trace chunks (`ledger::trace_rows`) are kept the same way: their
//! entries compressed without a dictionary in `trace_chunk_store`, and
//! `trace_chunks` a view over it, with a trigger that compresses what an
//! append inserts; they are read a session at a time, and a chunk's text
//! (hundreds of events' entries) compresses well on its own.
//!
//! So are the sessions' producer states (`producer_state`, a view over
//! `producer_state_store`).
//!
//! Dictionaries (`event_dicts`) are trained by the writer from the ledger's
//! own latest events, the first once it holds [`FIRST_TRAINING`] events and
//! each next one when it holds [`RETRAIN_FACTOR`] times as many as the last
//! was trained at; a new one only applies to rows written after it, so every
//! dictionary stays as long as the ledger (they are its versions). A body
//! that does not decode reads as a text beginning with
//! [`UNDECODABLE`]: it parses as no event and hashes to no link, so
//! `verify` names its row like any other damaged row.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::functions::FunctionFlags;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use zstd::zstd_safe::{CCtx, CDict, DCtx, DDict};

use super::LedgerError;
use crate::contract::SessionRef;

/// The format byte a body begins with.
const FORMAT: u8 = 1;
/// The format byte, the dictionary id, the check.
const HEADER_LEN: usize = 3 + CHECK_LEN;
/// The first bytes of the blake3 of the dictionary id and the frame: a
/// changed byte anywhere in a body is found even where zstd would decode
/// the changed frame to the same text (as it can, in parts of a frame
/// that do not matter to the output).
const CHECK_LEN: usize = 8;
/// The zstd level bodies are written at (measured in docs/perf/figures.md,
/// "The ledger's size"): 1, zstd's fastest with a dictionary; bodies a
/// ledger holds from level 3 (the first level of this format) decode the
/// same, a frame names no level.
pub(crate) const LEVEL: i32 = 1;
/// Events a ledger holds when its first dictionary is trained.
pub(crate) const FIRST_TRAINING: i64 = 1_000;
/// Each next dictionary is trained once the ledger holds this many times
/// the events the last one was trained at.
const RETRAIN_FACTOR: i64 = 4;
/// What a body that does not decode reads as (followed by why).
pub(crate) const UNDECODABLE: &str = "!event body does not decode: ";

/// The table and view of a compact ledger; `events` is the view.
const COMPACT_SCHEMA: &str = r#"
CREATE TABLE event_dicts (
    id               INTEGER PRIMARY KEY CHECK (id BETWEEN 1 AND 65535),
    trained_at_seq   INTEGER NOT NULL,
    samples          INTEGER NOT NULL,
    dict             BLOB NOT NULL
) STRICT;
CREATE TABLE event_store (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL,
    adapter      TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    offset       INTEGER NOT NULL,
    type         TEXT NOT NULL,
    time_unix_ns INTEGER NOT NULL,
    body         BLOB NOT NULL,
    prev_hash    BLOB NOT NULL,
    hash         BLOB NOT NULL,
    batch_k      INTEGER NOT NULL,
    UNIQUE (adapter, session_id, offset)
) STRICT;
CREATE TABLE event_batches (
    k     INTEGER PRIMARY KEY,
    batch TEXT NOT NULL UNIQUE
) STRICT;
"#;

/// The trace chunks' table and view (the view replaces the table of the
/// `trace_chunks` migration: same columns, same index).
const CHUNKS: &str = r#"
CREATE TABLE trace_chunk_store (
    adapter      TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    first_offset INTEGER NOT NULL,
    events       INTEGER NOT NULL,
    notes        INTEGER NOT NULL,
    wholes       TEXT,
    entries      BLOB NOT NULL,
    PRIMARY KEY (adapter, session_id, first_offset)
) STRICT, WITHOUT ROWID;
INSERT INTO trace_chunk_store (adapter, session_id, first_offset, events, notes, wholes, entries)
    SELECT adapter, session_id, first_offset, events, notes, wholes, event_body(entries)
    FROM trace_chunks;
DROP TABLE trace_chunks;
CREATE INDEX trace_chunk_notes ON trace_chunk_store (adapter, session_id) WHERE notes > 0;
CREATE VIEW trace_chunks AS SELECT adapter, session_id, first_offset, events, notes, wholes,
    event_json(entries) AS entries FROM trace_chunk_store;
CREATE TRIGGER trace_chunks_insert INSTEAD OF INSERT ON trace_chunks BEGIN
    INSERT INTO trace_chunk_store (adapter, session_id, first_offset, events, notes, wholes, entries)
    VALUES (NEW.adapter, NEW.session_id, NEW.first_offset, NEW.events, NEW.notes, NEW.wholes,
        event_body(NEW.entries));
END;
CREATE TRIGGER trace_chunks_update INSTEAD OF UPDATE ON trace_chunks BEGIN
    UPDATE trace_chunk_store SET events = NEW.events, notes = NEW.notes, wholes = NEW.wholes,
        entries = CASE WHEN NEW.entries IS OLD.entries THEN entries ELSE event_body(NEW.entries) END
    WHERE adapter = OLD.adapter AND session_id = OLD.session_id AND first_offset = OLD.first_offset;
END;
CREATE TRIGGER trace_chunks_delete INSTEAD OF DELETE ON trace_chunks BEGIN
    DELETE FROM trace_chunk_store
    WHERE adapter = OLD.adapter AND session_id = OLD.session_id AND first_offset = OLD.first_offset;
END;
"#;

/// Each session's producer state (a snapshot finalize reads back at the
/// session's next batch, much of it ids and digests) kept compressed the
/// same way: `producer_state` a view over `producer_state_store`, with
/// triggers for what writes it (an append's `INSERT OR REPLACE`, whose
/// conflict policy SQLite applies to the trigger's insert) and for a hand
/// repair.
const STATES: &str = r#"
CREATE TABLE producer_state_store (
    adapter    TEXT NOT NULL,
    session_id TEXT NOT NULL,
    state      BLOB NOT NULL,
    batch      TEXT NOT NULL,
    PRIMARY KEY (adapter, session_id)
) STRICT;
INSERT INTO producer_state_store (adapter, session_id, state, batch)
    SELECT adapter, session_id, event_body(state), batch FROM producer_state;
DROP TABLE producer_state;
CREATE VIEW producer_state AS SELECT adapter, session_id, event_json(state) AS state, batch
    FROM producer_state_store;
CREATE TRIGGER producer_state_insert INSTEAD OF INSERT ON producer_state BEGIN
    INSERT INTO producer_state_store (adapter, session_id, state, batch)
    VALUES (NEW.adapter, NEW.session_id, event_body(NEW.state), NEW.batch);
END;
CREATE TRIGGER producer_state_update INSTEAD OF UPDATE ON producer_state BEGIN
    UPDATE producer_state_store SET adapter = NEW.adapter, session_id = NEW.session_id,
        state = event_body(NEW.state), batch = NEW.batch
    WHERE adapter = OLD.adapter AND session_id = OLD.session_id;
END;
CREATE TRIGGER producer_state_delete INSTEAD OF DELETE ON producer_state BEGIN
    DELETE FROM producer_state_store WHERE adapter = OLD.adapter AND session_id = OLD.session_id;
END;
"#;

/// The view, and the trigger that lets an `UPDATE events` (a repair by
/// hand, a test that damages a row) reach the stored row: the new text is
/// stored compressed without a dictionary.
const VIEW: &str = r#"
CREATE VIEW events AS SELECT seq, id, adapter, session_id, offset, type,
    time_unix_ns, event_json(body) AS json, prev_hash, hash,
    (SELECT batch FROM event_batches WHERE k = batch_k) AS batch FROM event_store;
CREATE TRIGGER events_update INSTEAD OF UPDATE ON events BEGIN
    INSERT OR IGNORE INTO event_batches (batch) VALUES (NEW.batch);
    UPDATE event_store SET id = NEW.id, adapter = NEW.adapter, session_id = NEW.session_id,
        offset = NEW.offset, type = NEW.type, time_unix_ns = NEW.time_unix_ns,
        body = CASE WHEN NEW.json IS OLD.json THEN body ELSE event_body(NEW.json) END,
        prev_hash = NEW.prev_hash, hash = NEW.hash,
        batch_k = (SELECT k FROM event_batches WHERE batch = NEW.batch)
    WHERE seq = OLD.seq;
END;
"#;

/// Whether the ledger on `conn` stores its events compactly.
pub(crate) fn is_compact(conn: &Connection) -> Result<bool, LedgerError> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'event_store')",
        )?
        .query_row([], |r| r.get(0))?)
}

/// Decoding state of one connection: a context, the dictionaries met and
/// the blocks (`eventz_pack`) last read.
struct Decoder {
    dctx: DCtx<'static>,
    dicts: HashMap<u16, DDict<'static>>,
    blocks: pack::Recent,
}

/// Register `event_json(body)` and `event_body(text)` (a text as a body
/// without a dictionary) on `conn`: every connection that opens a ledger
/// does, before any query (an older ledger never calls them); so does
/// anything else that reads a ledger file with SQL of its own.
pub fn register(conn: &Connection) -> Result<(), LedgerError> {
    let cctx = Mutex::new(CCtx::create());
    conn.create_scalar_function(
        "event_body",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        move |ctx| {
            let text = ctx.get_raw(0);
            let text = text
                .as_bytes()
                .or_else(|_| text.as_blob())
                .unwrap_or_default();
            let mut cctx = cctx.lock().unwrap_or_else(|p| p.into_inner());
            let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(text.len()));
            cctx.compress(&mut frame, text, LEVEL).map_err(|c| {
                rusqlite::Error::UserFunctionError(zstd::zstd_safe::get_error_name(c).into())
            })?;
            let mut body = Vec::with_capacity(HEADER_LEN + frame.len());
            seal_onto(0, &frame, &mut body);
            Ok(body)
        },
    )?;
    let state = Mutex::new(Decoder {
        dctx: DCtx::create(),
        dicts: HashMap::new(),
        blocks: Default::default(),
    });
    conn.create_scalar_function(
        "event_json",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        move |ctx| {
            let body = ctx.get_raw(0).as_blob().unwrap_or_default();
            let mut d = state.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: the connection is the one running this call, used
            // only on this thread and only until the call returns.
            let conn = unsafe { ctx.get_connection() }?;
            let decoded = if body.first() == Some(&pack::REF_FORMAT) {
                pack::read_ref(&conn, &mut d, body)?
            } else {
                load_dict(&conn, &mut d, dict_id(body))?;
                decode(&mut d, body)
            };
            // Text as stored; bytes that are not UTF-8 (a row damaged by
            // hand) come back as they were, as a blob, for the reader to
            // name as it names such a row of a plain ledger.
            Ok(match decoded {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => Value::Text(text),
                    Err(e) => Value::Blob(e.into_bytes()),
                },
                Err(why) => Value::Text(format!("{UNDECODABLE}{why}")),
            })
        },
    )?;
    Ok(())
}

/// Make dictionary `id` (if any, and if the ledger holds it) one `d` has.
fn load_dict(conn: &Connection, d: &mut Decoder, id: Option<u16>) -> rusqlite::Result<()> {
    if let Some(id) = id.filter(|&id| id != 0 && !d.dicts.contains_key(&id)) {
        let dict: Option<Vec<u8>> = conn
            .prepare_cached("SELECT dict FROM event_dicts WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        if let Some(dict) = dict {
            d.dicts.insert(id, DDict::create(&dict));
        }
    }
    Ok(())
}

/// `frame`, compressed with dictionary `id`, as a body appended to `out`.
fn seal_onto(id: u16, frame: &[u8], out: &mut Vec<u8>) {
    out.reserve(HEADER_LEN + frame.len());
    out.push(FORMAT);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&check(&id.to_le_bytes(), frame));
    out.extend_from_slice(frame);
}

fn check(id: &[u8], frame: &[u8]) -> [u8; CHECK_LEN] {
    let mut h = blake3::Hasher::new();
    h.update(id);
    h.update(frame);
    let mut out = [0u8; CHECK_LEN];
    out.copy_from_slice(&h.finalize().as_bytes()[..CHECK_LEN]);
    out
}

fn dict_id(body: &[u8]) -> Option<u16> {
    match body {
        [FORMAT, a, b, ..] => Some(u16::from_le_bytes([*a, *b])),
        _ => None,
    }
}

/// The length of the text `body` holds, as its frame names it, without
/// decoding it; `None` for a body of another format, or one that names no
/// length (neither is checked: [`decode`] reads and checks a body).
pub(crate) fn declared_len(body: &[u8]) -> Option<u64> {
    dict_id(body)?;
    let frame = body.get(HEADER_LEN..)?;
    zstd::zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten()
}

fn decode(d: &mut Decoder, body: &[u8]) -> Result<Vec<u8>, String> {
    let id = dict_id(body).ok_or_else(|| match body.first() {
        Some(v) => format!("format {v} is not one this build reads"),
        None => "the body is empty".to_string(),
    })?;
    let frame = body
        .get(HEADER_LEN..)
        .ok_or_else(|| format!("{} bytes, shorter than a header", body.len()))?;
    if check(&body[1..3], frame)[..] != body[3..HEADER_LEN] {
        return Err("its check does not match its bytes".into());
    }
    let len = declared_len(body).ok_or("its zstd frame names no content size")?;
    let mut out: Vec<u8> = Vec::with_capacity(len as usize);
    let Decoder { dctx, dicts, .. } = d;
    let done = if id == 0 {
        dctx.decompress(&mut out, frame)
    } else {
        let dict = dicts
            .get(&id)
            .ok_or_else(|| format!("dictionary {id} is not in event_dicts"))?;
        dctx.decompress_using_ddict(&mut out, frame, dict)
    };
    done.map_err(|code| zstd::zstd_safe::get_error_name(code).to_string())?;
    if out.len() as u64 != len {
        return Err(format!(
            "{} bytes decoded where the frame names {len}",
            out.len()
        ));
    }
    Ok(out)
}

/// A dictionary new bodies are compressed with: its row in `event_dicts`
/// and zstd's prepared form of it (made once, shared by every compressor
/// that uses it).
pub(crate) struct Dict {
    id: u16,
    cdict: CDict<'static>,
}

/// Where the writer publishes its newest dictionary for compressors on
/// other threads ([`Ahead`]).
type Newest = Arc<Mutex<Option<Arc<Dict>>>>;

/// The writer's side: compresses texts with the ledger's newest dictionary.
pub(crate) struct Encoder {
    maker: Maker,
    dict: Option<Arc<Dict>>,
    newest: Newest,
}

/// What makes bodies on one thread: a zstd context, room for the last
/// frame (kept for the next), and whether events are packed.
struct Maker {
    cctx: CCtx<'static>,
    frame: Vec<u8>,
    /// The ledger keeps blocks (`eventz_pack`): a batch's events are
    /// written packed, a session's run of them in one block.
    packs: bool,
}

impl Maker {
    fn new(packs: bool) -> Maker {
        Maker {
            cctx: CCtx::create(),
            frame: Vec::new(),
            packs,
        }
    }

    fn events(&mut self, dict: Option<&Dict>, events: &[Text]) -> Result<Bodies, LedgerError> {
        pack::make(&mut self.cctx, &mut self.frame, dict, events, self.packs)
    }
}

/// `text` compressed with `dict` (none: without a dictionary) as a body,
/// appended to `out`; `frame` is room for the frame, kept between calls.
fn compress(
    cctx: &mut CCtx<'static>,
    dict: Option<&Dict>,
    text: &[u8],
    frame: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> Result<(), LedgerError> {
    frame.clear();
    frame.reserve(zstd::zstd_safe::compress_bound(text.len()));
    let done = match dict {
        Some(d) => cctx.compress_using_cdict(frame, text, &d.cdict),
        None => cctx.compress(frame, text, LEVEL),
    };
    done.map_err(|code| LedgerError::Corrupt {
        path: "event_store".into(),
        detail: format!(
            "zstd could not compress an event: {}",
            zstd::zstd_safe::get_error_name(code)
        ),
    })?;
    seal_onto(dict.map_or(0, |d| d.id), frame, out);
    Ok(())
}

impl Encoder {
    /// The encoder for the ledger on `conn`: its newest dictionary, if any.
    pub(crate) fn load(conn: &Connection) -> Result<Encoder, LedgerError> {
        let newest: Option<(u16, Vec<u8>)> = conn
            .prepare_cached("SELECT id, dict FROM event_dicts ORDER BY id DESC LIMIT 1")?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let dict = newest.map(|(id, d)| {
            Arc::new(Dict {
                id,
                cdict: CDict::create(&d, LEVEL),
            })
        });
        Ok(Encoder {
            maker: Maker::new(pack::has_blocks(conn)?),
            newest: Arc::new(Mutex::new(dict.clone())),
            dict,
        })
    }

    /// `text` as a body, written into `out` (cleared first).
    pub(crate) fn encode(&mut self, text: &[u8], out: &mut Vec<u8>) -> Result<(), LedgerError> {
        out.clear();
        let m = &mut self.maker;
        compress(&mut m.cctx, self.dict.as_deref(), text, &mut m.frame, out)
    }

    /// A compressor for another thread that makes the same bodies as this
    /// encoder would, ahead of the append ([`Ahead`]).
    pub(crate) fn ahead(&self) -> Ahead {
        Ahead {
            maker: Maker::new(self.maker.packs),
            newest: self.newest.clone(),
        }
    }

    /// The bodies of a batch's events as this encoder would make them now,
    /// if `pre` holds them: made with the dictionary it uses, packed if it
    /// packs, for `count` events.
    pub(crate) fn takes<'p>(&self, pre: Option<&'p Bodies>, count: usize) -> Option<&'p Bodies> {
        pre.filter(|p| {
            p.dict == self.dict.as_ref().map_or(0, |d| d.id)
                && p.cuts.is_some() == self.maker.packs
                && p.len() == count
        })
    }

    /// A batch's event bodies made here, as [`Ahead::events`] makes them.
    pub(crate) fn events(&mut self, events: &[Text]) -> Result<Bodies, LedgerError> {
        self.maker.events(self.dict.as_deref(), events)
    }

    /// Train and store a new dictionary if the ledger has grown enough
    /// since the last (or holds its first [`FIRST_TRAINING`] events), and
    /// use it from now on. Inside the append's transaction: the dictionary
    /// is committed with the rows that led to it, before any row uses it.
    pub(crate) fn train_if_due(&mut self, tx: &Transaction) -> Result<(), LedgerError> {
        let head: i64 = tx
            .prepare_cached("SELECT coalesce(max(seq), 0) FROM event_store")?
            .query_row([], |r| r.get(0))?;
        let last: Option<(i64, i64)> = tx
            .prepare_cached("SELECT id, trained_at_seq FROM event_dicts ORDER BY id DESC LIMIT 1")?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let due = match last {
            None => head >= FIRST_TRAINING,
            Some((id, at)) => id < 65535 && head >= at.saturating_mul(RETRAIN_FACTOR),
        };
        if !due {
            return Ok(());
        }
        let id = last.map_or(1, |(id, _)| id + 1);
        if let Some(dict) = train(tx, head)? {
            tx.prepare_cached(
                "INSERT INTO event_dicts (id, trained_at_seq, samples, dict) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![id, head, dict.1, dict.0])?;
            let dict = Arc::new(Dict {
                id: id as u16,
                cdict: CDict::create(&dict.0, LEVEL),
            });
            *self.newest.lock().unwrap_or_else(|p| p.into_inner()) = Some(dict.clone());
            self.dict = Some(dict);
        }
        Ok(())
    }
}

/// A compressor on another thread than the writer's (the drain's flushing
/// stage): it makes a batch's bodies ahead of its append, with the
/// dictionary the writer published last, so that the append only binds
/// them. A dictionary trained between the two (by the appends in between)
/// makes the writer compress that batch again itself ([`Encoder::takes`]):
/// every body is made with the dictionary the writer holds at its row, as
/// when the writer made them all.
pub(crate) struct Ahead {
    maker: Maker,
    newest: Newest,
}

/// One event of a batch: its session and its text.
pub(crate) type Text<'t> = (&'t SessionRef, &'t [u8]);

/// Bodies made ahead, one after another, and which dictionary made them
/// (0: none). Packed (`cuts`), each body is a block of a run of the
/// events (`eventz_pack`), and `cuts` says after which event each ends.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Bodies {
    dict: u16,
    bytes: Vec<u8>,
    /// Where each body ends in `bytes`.
    ends: Vec<usize>,
    cuts: Option<Vec<usize>>,
}

impl Bodies {
    /// How many texts they hold.
    pub(crate) fn len(&self) -> usize {
        match &self.cuts {
            Some(cuts) => cuts.last().copied().unwrap_or(0),
            None => self.ends.len(),
        }
    }

    /// The `i`th body.
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

impl Ahead {
    /// A batch's event bodies with the writer's newest dictionary, packed
    /// if the writer packs.
    pub(crate) fn events(&mut self, events: &[Text]) -> Result<Bodies, LedgerError> {
        let dict = self
            .newest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        self.maker.events(dict.as_deref(), events)
    }

    /// `texts` as bodies without a dictionary, as `event_body` makes them
    /// (the producer states' and trace chunks' form).
    pub(crate) fn plain<'t>(
        &mut self,
        texts: impl ExactSizeIterator<Item = &'t [u8]>,
    ) -> Result<Bodies, LedgerError> {
        one_each(&mut self.maker.cctx, &mut self.maker.frame, None, texts)
    }
}

/// `texts` as bodies with `dict`, one for each.
fn one_each<'t>(
    cctx: &mut CCtx<'static>,
    frame: &mut Vec<u8>,
    dict: Option<&Dict>,
    texts: impl ExactSizeIterator<Item = &'t [u8]>,
) -> Result<Bodies, LedgerError> {
    let mut out = Bodies {
        dict: dict.map_or(0, |d| d.id),
        ends: Vec::with_capacity(texts.len()),
        ..Bodies::default()
    };
    for text in texts {
        compress(cctx, dict, text, frame, &mut out.bytes)?;
        out.ends.push(out.bytes.len());
    }
    Ok(out)
}

/// The number of a batch's name in `event_batches`, given it one if new
/// (the last asked kept: a batch's rows come one after another).
#[derive(Default)]
pub(crate) struct Batches {
    last: Option<(String, i64)>,
}

impl Batches {
    pub(crate) fn key(&mut self, tx: &Connection, batch: &str) -> Result<i64, LedgerError> {
        if let Some((name, k)) = &self.last
            && name == batch
        {
            return Ok(*k);
        }
        tx.prepare_cached("INSERT OR IGNORE INTO event_batches (batch) VALUES (?1)")?
            .execute([batch])?;
        let k: i64 = tx
            .prepare_cached("SELECT k FROM event_batches WHERE batch = ?1")?
            .query_row([batch], |r| r.get(0))?;
        self.last = Some((batch.to_string(), k));
        Ok(k)
    }
}

/// Make the ledger on `tx` compact: create `event_store` and the
/// dictionaries' table, move every row of the `events` table into it
/// compressed (the first dictionary trained from them when there are
/// enough), and put the view in the table's place. One transaction: a kill
/// leaves the ledger as it was or converted, never between. Returns the
/// rows moved. A ledger already compact is left alone (0).
pub(crate) fn make_compact(tx: &Transaction) -> Result<u64, LedgerError> {
    if is_compact(tx)? {
        return Ok(0);
    }
    tx.execute_batch(COMPACT_SCHEMA)?;
    let rows: i64 = tx.query_row("SELECT count(*) FROM events", [], |r| r.get(0))?;
    if rows >= FIRST_TRAINING {
        let head: i64 = tx.query_row("SELECT max(seq) FROM events", [], |r| r.get(0))?;
        if let Some((dict, samples)) = train(tx, head)? {
            tx.execute(
                "INSERT INTO event_dicts (id, trained_at_seq, samples, dict) VALUES (1, ?1, ?2, ?3)",
                params![head, samples, dict],
            )?;
        }
    }
    let mut enc = Encoder::load(tx)?;
    {
        let mut read = tx.prepare(
            "SELECT seq, id, adapter, session_id, offset, type, time_unix_ns, CAST(json AS BLOB), prev_hash, hash, batch \
             FROM events ORDER BY seq",
        )?;
        let mut write = tx.prepare(
            "INSERT INTO event_store (seq, id, adapter, session_id, offset, type, time_unix_ns, body, prev_hash, hash, batch_k) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?;
        let mut batches = Batches::default();
        let mut rows = read.query([])?;
        let mut body = Vec::new();
        while let Some(r) = rows.next()? {
            enc.encode(r.get_ref(7)?.as_blob().unwrap_or_default(), &mut body)?;
            // Every column but the text goes over as it is, type and all.
            let v = |i| r.get_ref(i).map(rusqlite::types::ToSqlOutput::Borrowed);
            write.execute(params![
                v(0)?,
                v(1)?,
                v(2)?,
                v(3)?,
                v(4)?,
                v(5)?,
                v(6)?,
                &body,
                v(8)?,
                v(9)?,
                batches.key(tx, r.get_ref(10)?.as_str().unwrap_or_default())?,
            ])?;
        }
    }
    tx.execute_batch("DROP TABLE events;")?;
    tx.execute_batch(VIEW)?;
    tx.execute_batch(CHUNKS)?;
    tx.execute_batch(STATES)?;
    tx.execute_batch(pack::SCHEMA)?;
    Ok(rows as u64)
}

#[path = "eventz_pack.rs"]
pub(crate) mod pack;

#[path = "eventz_train.rs"]
mod train;
use train::train;
pub use train::{DICT_MAX, SAMPLE_BYTES, SAMPLE_ROWS, fast_cover};

#[cfg(test)]
#[path = "eventz_tests.rs"]
mod tests;
