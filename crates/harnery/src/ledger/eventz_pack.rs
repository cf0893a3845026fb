//! Events packed in blocks: after a run has committed, the compaction pass
//! (`finalize::compaction`) takes the rows written since it last ran and
//! stores their texts a session's run of events at a time, in one zstd
//! frame at a higher level than the writer's, with the ledger's newest
//! dictionary. A session's events repeat one another (the same ids, paths
//! and tool names): on the peer bench's ledger, 27,456 events kept 7.7 MB
//! as one frame each at level 1 and 2.2 MB in blocks of 64 (docs/perf/peer.md).
//!
//! A block is a row of `event_blocks`; its `body` has the layout of an
//! event body (`ledger::eventz`: format 1, dictionary id, check, frame), and
//! what its frame decompresses to is
//!
//! ```text
//! n                    4 bytes, little endian: the events it holds
//! n lengths            4 bytes each, little endian
//! the n texts          one after another
//! ```
//!
//! A packed row's `body` then names its text in a block (format 2):
//!
//! ```text
//! 0x02                 1 byte: format version
//! block                8 bytes, little endian: its id in event_blocks
//! index                2 bytes, little endian: the text's place in it
//! check                8 bytes: the block body's own check, copied
//! ```
//!
//! Every byte counts: a changed block id or check names no block or one
//! whose check differs, a changed index another event's text (which hashes
//! to no link), and a changed byte in a block fails its check, so `verify`
//! names every row whose text it holds. A reader decompresses a whole
//! block for one event (64 at most, 256 KiB of text at most) and keeps the
//! last few it read, so reading a session or the ledger in order costs one
//! decompression a block.
//!
//! Packing is one transaction per [`STEP_ROWS`] rows (each row's text read
//! back through `event_json` and compared before the commit), its progress
//! in `event_packed`, so a kill at any moment leaves rows packed or as they
//! were, and the next pass goes on. Only a ledger holding `event_blocks` is
//! packed: a new epoch has it from its first row, an older ledger gets it
//! from `harnery archive compact-events`, never silently.

use std::collections::{HashMap, VecDeque};

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use zstd::zstd_safe::{CCtx, CDict};

use super::{CHECK_LEN, Decoder, HEADER_LEN, UNDECODABLE};
use crate::ledger::LedgerError;

/// The format byte a packed row's body begins with.
pub(super) const REF_FORMAT: u8 = 2;
const REF_LEN: usize = 1 + 8 + 2 + CHECK_LEN;
/// At most this many events, and this many bytes of text, a block.
pub(crate) const BLOCK_EVENTS: usize = 64;
const BLOCK_TEXT: usize = 256 << 10;
/// The zstd level of a block (docs/perf/peer.md, "The ledger's blocks").
pub(crate) const LEVEL: i32 = 9;
/// Rows read, packed and committed in one transaction.
const STEP_ROWS: i64 = 4096;
/// Blocks a reading connection keeps decompressed.
const RECENT: usize = 8;

/// The blocks' table and the packing's progress: the last seq looked at,
/// and the bytes packing freed since the file was last rewritten.
pub(crate) const SCHEMA: &str = r#"
CREATE TABLE event_blocks (
    id   INTEGER PRIMARY KEY,
    body BLOB NOT NULL
) STRICT;
CREATE TABLE event_packed (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    through_seq INTEGER NOT NULL,
    freed       INTEGER NOT NULL
) STRICT;
INSERT INTO event_packed (id, through_seq, freed) VALUES (1, 0, 0);
"#;

/// A block decompressed: its texts one after another and where each ends.
struct Block {
    id: i64,
    check: [u8; CHECK_LEN],
    text: Vec<u8>,
    ends: Vec<usize>,
}

impl Block {
    fn get(&self, index: usize) -> Option<Vec<u8>> {
        let end = *self.ends.get(index)?;
        let start = index.checked_sub(1).map_or(0, |i| self.ends[i]);
        Some(self.text[start..end].to_vec())
    }
}

/// The blocks a connection read last, newest at the back.
#[derive(Default)]
pub(super) struct Recent(VecDeque<Block>);

/// The text a packed row's `body` names, read from its block; `Err` says
/// why it does not decode.
pub(super) fn read_ref(
    conn: &Connection,
    d: &mut Decoder,
    body: &[u8],
) -> rusqlite::Result<Result<Vec<u8>, String>> {
    if body.len() != REF_LEN {
        return Ok(Err(format!(
            "a block reference of {} bytes, not {REF_LEN}",
            body.len()
        )));
    }
    let id = i64::from_le_bytes(body[1..9].try_into().expect("8"));
    let index = usize::from(u16::from_le_bytes([body[9], body[10]]));
    let want: [u8; CHECK_LEN] = body[11..].try_into().expect("check");
    if let Some(b) = d.blocks.0.iter().find(|b| b.id == id && b.check == want) {
        return Ok(b.get(index).ok_or_else(|| no_place(id, index)));
    }
    let stored: Option<Vec<u8>> = conn
        .prepare_cached("SELECT body FROM event_blocks WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?;
    let Some(stored) = stored else {
        return Ok(Err(format!("block {id} is not in event_blocks")));
    };
    if stored.get(3..HEADER_LEN) != Some(&want[..]) {
        return Ok(Err(format!(
            "block {id}'s check is not the one the row names"
        )));
    }
    super::load_dict(conn, d, super::dict_id(&stored))?;
    let block = match super::decode(d, &stored).and_then(|content| split(id, want, content)) {
        Ok(block) => block,
        Err(why) => return Ok(Err(format!("block {id}: {why}"))),
    };
    let got = block.get(index).ok_or_else(|| no_place(id, index));
    if d.blocks.0.len() >= RECENT {
        d.blocks.0.pop_front();
    }
    d.blocks.0.push_back(block);
    Ok(got)
}

fn no_place(id: i64, index: usize) -> String {
    format!("block {id} holds no event {index}")
}

/// A block's decompressed content as its texts.
fn split(id: i64, check: [u8; CHECK_LEN], content: Vec<u8>) -> Result<Block, String> {
    let u32_at = |at: usize| {
        content
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4")) as usize)
    };
    let n = u32_at(0).ok_or("it holds no count")?;
    let head = n
        .checked_mul(4)
        .and_then(|l| l.checked_add(4))
        .filter(|&l| l <= content.len())
        .ok_or_else(|| format!("it counts {n} events, more than its bytes hold"))?;
    let mut ends = Vec::with_capacity(n);
    let mut end = 0usize;
    for i in 0..n {
        end += u32_at(4 + 4 * i).expect("within the head");
        ends.push(end);
    }
    if end != content.len() - head {
        return Err(format!(
            "its lengths add up to {end} bytes, it holds {}",
            content.len() - head
        ));
    }
    Ok(Block {
        id,
        check,
        text: content[head..].to_vec(),
        ends,
    })
}

/// Whether the ledger on `conn` packs its events in blocks.
pub(crate) fn has_blocks(conn: &Connection) -> Result<bool, LedgerError> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'event_blocks')",
        )?
        .query_row([], |r| r.get(0))?)
}

/// What packing did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Packed {
    /// Rows whose text went into a block.
    pub events: u64,
    pub blocks: u64,
    /// The bytes of the bodies packing replaced, less the blocks' and the
    /// references', since the file was last rewritten (by this pass and
    /// earlier ones: what a `VACUUM` can give back).
    pub freed: i64,
    /// Stopped with rows left for the next pass.
    pub unfinished: bool,
}

/// Pack the rows written since the last pass, [`STEP_ROWS`] a
/// transaction, until there are none or `stop` says so between two.
pub(crate) fn pack(conn: &mut Connection, stop: &dyn Fn() -> bool) -> Result<Packed, LedgerError> {
    let mut done = Packed::default();
    if !has_blocks(conn)? {
        return Ok(done);
    }
    let dict: Option<(u16, Vec<u8>)> = conn
        .prepare_cached("SELECT id, dict FROM event_dicts ORDER BY id DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let mut freed_before = 0;
    let mut packer = Packer {
        cctx: CCtx::create(),
        dict: dict.map(|(id, d)| (id, CDict::create(&d, LEVEL))),
        content: Vec::new(),
        frame: Vec::new(),
        body: Vec::new(),
    };
    let dir = conn
        .path()
        .and_then(|p| std::path::Path::new(p).parent())
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    for step in 0.. {
        if step > 0 {
            // A test's finalizer comes to wait for the lease here.
            crate::failpoint::pause("pack-between-steps", &dir);
        }
        if stop() {
            done.unfinished = true;
            break;
        }
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let through: i64 =
            tx.query_row("SELECT through_seq FROM event_packed", [], |r| r.get(0))?;
        let (rows, last) = step_rows(&tx, through)?;
        let Some(last) = last else {
            break;
        };
        for run in runs(rows) {
            packer.write(&tx, &run, &mut done)?;
        }
        tx.execute(
            "UPDATE event_packed SET through_seq = ?1, freed = freed + ?2",
            [last, done.freed - freed_before],
        )?;
        tx.commit().map_err(LedgerError::CommitFailed)?;
        freed_before = done.freed;
    }
    done.freed = conn.query_row("SELECT freed FROM event_packed", [], |r| r.get(0))?;
    Ok(done)
}

/// The file was rewritten: nothing packing freed is left to give back.
pub(crate) fn rewritten(conn: &Connection) -> Result<(), LedgerError> {
    if has_blocks(conn)? {
        conn.execute("UPDATE event_packed SET freed = 0", [])?;
    }
    Ok(())
}

/// A row to pack: its text as the view reads it.
struct Row {
    seq: i64,
    session: (String, String),
    body_len: usize,
    text: Vec<u8>,
}

/// The next rows after `through`, and the last seq looked at; rows that
/// are not format 1 (packed already) or do not decode (a damaged row stays
/// as it is, for `verify` to name) are left out.
fn step_rows(tx: &Connection, through: i64) -> Result<(Vec<Row>, Option<i64>), LedgerError> {
    let mut stmt = tx.prepare_cached(
        "SELECT seq, adapter, session_id, body, event_json(body) FROM event_store \
         WHERE seq > ?1 ORDER BY seq LIMIT ?2",
    )?;
    let mut rows = stmt.query(params![through, STEP_ROWS])?;
    let mut out: Vec<Row> = Vec::new();
    let mut last = None;
    while let Some(r) = rows.next()? {
        let seq: i64 = r.get(0)?;
        last = Some(seq);
        let body = r.get_ref(3)?.as_blob().unwrap_or_default();
        let text = match r.get::<_, Value>(4)? {
            Value::Text(t) if !t.starts_with(UNDECODABLE) => t.into_bytes(),
            _ => continue,
        };
        if body.first() != Some(&1) {
            continue;
        }
        out.push(Row {
            seq,
            session: (r.get(1)?, r.get(2)?),
            body_len: body.len(),
            text,
        });
    }
    Ok((out, last))
}

/// The rows as blocks: each session's rows in seq order, cut at
/// [`BLOCK_EVENTS`] events or [`BLOCK_TEXT`] bytes.
fn runs(rows: Vec<Row>) -> Vec<Vec<Row>> {
    let mut sessions: Vec<Vec<Row>> = Vec::new();
    let mut at: HashMap<(String, String), usize> = HashMap::new();
    for row in rows {
        let i = *at.entry(row.session.clone()).or_insert_with(|| {
            sessions.push(Vec::new());
            sessions.len() - 1
        });
        sessions[i].push(row);
    }
    let mut blocks = Vec::new();
    for rows in sessions {
        let mut block: Vec<Row> = Vec::new();
        let mut bytes = 0;
        for row in rows {
            if !block.is_empty()
                && (block.len() == BLOCK_EVENTS || bytes + row.text.len() > BLOCK_TEXT)
            {
                blocks.push(std::mem::take(&mut block));
                bytes = 0;
            }
            bytes += row.text.len();
            block.push(row);
        }
        if !block.is_empty() {
            blocks.push(block);
        }
    }
    blocks
}

/// `events` as bodies with `dict`: one block for each run of them when
/// `packs`, one body for each otherwise.
pub(super) fn make(
    cctx: &mut CCtx<'static>,
    frame: &mut Vec<u8>,
    dict: Option<&super::Dict>,
    events: &[super::Text],
    packs: bool,
) -> Result<super::Bodies, LedgerError> {
    if !packs {
        return super::one_each(cctx, frame, dict, events.iter().map(|(_, t)| *t));
    }
    let mut out = super::Bodies {
        dict: dict.map_or(0, |d| d.id),
        ..super::Bodies::default()
    };
    let cuts = cuts(events);
    let mut block = Vec::new();
    let mut start = 0;
    for &end in &cuts {
        content(events[start..end].iter().map(|(_, t)| *t), &mut block);
        super::compress(cctx, dict, &block, frame, &mut out.bytes)?;
        out.ends.push(out.bytes.len());
        start = end;
    }
    out.cuts = Some(cuts);
    Ok(out)
}

/// A block's content (the layout above) of `texts`, into `out` (cleared
/// first).
pub(super) fn content<'t>(texts: impl Iterator<Item = &'t [u8]> + Clone, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&(texts.clone().count() as u32).to_le_bytes());
    for t in texts.clone() {
        out.extend_from_slice(&(t.len() as u32).to_le_bytes());
    }
    for t in texts {
        out.extend_from_slice(t);
    }
}

/// Where the writer cuts a batch's events into blocks, as the pass does:
/// a block holds one session's run of consecutive events, at most
/// [`BLOCK_EVENTS`] of them and [`BLOCK_TEXT`] bytes of text (an event
/// longer than that alone); the index each block ends before.
pub(super) fn cuts(events: &[super::Text]) -> Vec<usize> {
    let mut cuts = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, (session, text)) in events.iter().enumerate() {
        if i > start
            && (*session != events[start].0
                || i - start == BLOCK_EVENTS
                || bytes + text.len() > BLOCK_TEXT)
        {
            cuts.push(i);
            (start, bytes) = (i, 0);
        }
        bytes += text.len();
    }
    if start < events.len() {
        cuts.push(events.len());
    }
    cuts
}

/// A packed row's body: block `id`, whose body is `block`; its index is
/// written by the caller (bytes 9 and 10).
fn reference_to(id: i64, block: &[u8]) -> [u8; REF_LEN] {
    let mut reference = [0u8; REF_LEN];
    reference[0] = REF_FORMAT;
    reference[1..9].copy_from_slice(&id.to_le_bytes());
    reference[11..].copy_from_slice(&block[3..HEADER_LEN]);
    reference
}

/// The writer's side of packed bodies: row by row, the body each of a
/// batch's events is stored with, the first of each block storing the
/// block (in the append's transaction).
pub(crate) struct RefWriter<'b> {
    bodies: &'b super::Bodies,
    cuts: &'b [usize],
    block: usize,
    index: usize,
    reference: [u8; REF_LEN],
}

impl<'b> RefWriter<'b> {
    /// Over `bodies` if they are packed.
    pub(crate) fn of(bodies: &'b super::Bodies) -> Option<RefWriter<'b>> {
        Some(RefWriter {
            bodies,
            cuts: bodies.cuts.as_deref()?,
            block: 0,
            index: 0,
            reference: [0; REF_LEN],
        })
    }

    /// The next event's body.
    pub(crate) fn next(&mut self, tx: &Connection) -> Result<&[u8], LedgerError> {
        if self.index == 0 {
            let block = self.bodies.get(self.block);
            tx.prepare_cached("INSERT INTO event_blocks (body) VALUES (?1)")?
                .execute([block])?;
            self.reference = reference_to(tx.last_insert_rowid(), block);
        }
        self.reference[9..11].copy_from_slice(&(self.index as u16).to_le_bytes());
        let start = self.block.checked_sub(1).map_or(0, |b| self.cuts[b]);
        self.index += 1;
        if start + self.index == self.cuts[self.block] {
            (self.block, self.index) = (self.block + 1, 0);
        }
        Ok(&self.reference)
    }
}

/// The packing pass's compressor and its buffers.
struct Packer {
    cctx: CCtx<'static>,
    dict: Option<(u16, CDict<'static>)>,
    content: Vec<u8>,
    frame: Vec<u8>,
    body: Vec<u8>,
}

impl Packer {
    /// Store `rows` as one block and point each at it; read back.
    fn write(
        &mut self,
        tx: &Connection,
        rows: &[Row],
        done: &mut Packed,
    ) -> Result<(), LedgerError> {
        let content = &mut self.content;
        self::content(rows.iter().map(|r| &r.text[..]), content);
        let frame = &mut self.frame;
        frame.clear();
        frame.reserve(zstd::zstd_safe::compress_bound(content.len()));
        let compressed = match &self.dict {
            Some((_, cdict)) => self.cctx.compress_using_cdict(frame, content, cdict),
            None => self.cctx.compress(frame, content, LEVEL),
        };
        compressed.map_err(|code| LedgerError::Corrupt {
            path: "event_blocks".into(),
            detail: format!(
                "zstd could not compress a block: {}",
                zstd::zstd_safe::get_error_name(code)
            ),
        })?;
        self.body.clear();
        super::seal_onto(
            self.dict.as_ref().map_or(0, |(id, _)| *id),
            frame,
            &mut self.body,
        );
        tx.prepare_cached("INSERT INTO event_blocks (body) VALUES (?1)")?
            .execute([&self.body])?;
        let id = tx.last_insert_rowid();
        let mut reference = reference_to(id, &self.body);
        let mut update = tx.prepare_cached("UPDATE event_store SET body = ?1 WHERE seq = ?2")?;
        let mut back =
            tx.prepare_cached("SELECT event_json(body) FROM event_store WHERE seq = ?1")?;
        for (index, r) in rows.iter().enumerate() {
            reference[9..11].copy_from_slice(&(index as u16).to_le_bytes());
            update.execute(params![&reference[..], r.seq])?;
            let read: Value = back.query_row([r.seq], |x| x.get(0))?;
            if !matches!(&read, Value::Text(t) if t.as_bytes() == r.text) {
                return Err(LedgerError::Corrupt {
                    path: "event_blocks".into(),
                    detail: format!(
                        "row {} did not read back as it was once packed in block {id}; nothing was changed",
                        r.seq
                    ),
                });
            }
            done.freed += r.body_len as i64 - REF_LEN as i64;
        }
        done.freed -= self.body.len() as i64;
        done.events += rows.len() as u64;
        done.blocks += 1;
        Ok(())
    }
}

#[cfg(test)]
#[path = "eventz_pack_tests.rs"]
mod tests;
