//! What a ranked search needs to know of each doc without reading its
//! rows: its length in words (what BM25 weighs a match by) and a tag of
//! its kind, its tool and whether its span failed. They are kept per run
//! of [`CHUNK`] doc ids as two blobs of `u16`s (little-endian), so a query
//! loads an epoch's facts in a few reads instead of one row lookup per
//! match.
//!
//! A tag is a pre-filter, never the answer: it rules a doc out only when
//! the doc cannot pass (another kind, another tool's hash, no failure),
//! and every doc it lets through is still tested against its `docs` row.
//! A tag of 0 means the doc's facts are not known (the ranker then asks
//! FTS5 for the length and filters nothing).

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::extract::Kind;

/// Doc ids per facts row (a power of two).
const CHUNK_BITS: u32 = 14;
const CHUNK: i64 = 1 << CHUNK_BITS;

/// The facts row holding doc `id`, and the doc's place in it.
fn chunk_of(id: i64) -> (i64, usize) {
    (id >> CHUNK_BITS, (id & (CHUNK - 1)) as usize)
}

/// A doc's tag: its kind (bits 0–2, 1-based), whether its span failed
/// (bit 3), its tool's hash (bits 4–15, 0 for none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tag(u16);

const FAILED: u16 = 1 << 3;

impl Tag {
    pub fn new(kind: Kind, tool: Option<&str>) -> Tag {
        let kind = Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0) as u16 + 1;
        Tag(kind | (tool.map_or(0, tool_hash) << 4))
    }

    fn failed(self, failed: bool) -> Tag {
        match failed {
            true => Tag(self.0 | FAILED),
            false => Tag(self.0 & !FAILED),
        }
    }
}

/// A tool name's 12-bit hash (any ASCII case alike, as `--tool` matches),
/// never 0.
pub(crate) fn tool_hash(name: &str) -> u16 {
    // FNV-1a over the lowercased bytes, folded to 12 bits.
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ u32::from(b.to_ascii_lowercase())).wrapping_mul(0x0100_0193);
    }
    let folded = ((h >> 12) ^ h) & 0x0fff;
    folded.max(1) as u16
}

/// What a query keeps, as a test of tags.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TagFilter {
    /// Bit `k` set: kind code `k` (1-based) is kept; 0 keeps every kind.
    pub kinds: u8,
    /// The tool's hash, 0 for any.
    pub tool: u16,
    pub failed: bool,
}

impl TagFilter {
    pub fn new(kinds: &[Kind], tool: Option<&str>, failed: bool) -> TagFilter {
        let kinds = kinds
            .iter()
            .map(|k| 1u8 << (Tag::new(*k, None).0 & 7))
            .fold(0, |a, b| a | b);
        TagFilter {
            kinds,
            tool: tool.map_or(0, tool_hash),
            failed,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.kinds == 0 && self.tool == 0 && !self.failed
    }

    /// Whether a doc of this tag can pass (a tag of 0 always can).
    pub(crate) fn admits(&self, tag: u16) -> bool {
        tag == 0
            || ((self.kinds == 0 || self.kinds & (1 << (tag & 7)) != 0)
                && (self.tool == 0 || self.tool == tag >> 4)
                && (!self.failed || tag & FAILED != 0))
    }
}

/// The facts of some doc id ranges, in memory: per range, its facts rows
/// as read (a missing one is a hole: nothing known).
#[derive(Debug, Default)]
pub(crate) struct Facts {
    spans: Vec<Span>,
}

#[derive(Debug)]
struct Span {
    /// The first facts row's id.
    first: i64,
    rows: Vec<Option<Chunk>>,
}

impl Facts {
    /// Load the facts of the docs in `ranges` (`[lo, hi]` doc ids); their
    /// tags only when `tags` is set.
    pub(crate) fn load(
        conn: &Connection,
        ranges: &[(i64, i64)],
        tags: bool,
    ) -> Result<Facts, rusqlite::Error> {
        let mut stmt = conn.prepare_cached(
            "SELECT id, lens, CASE WHEN ?3 THEN tags END FROM facts \
             WHERE id BETWEEN ?1 AND ?2 ORDER BY id",
        )?;
        let mut spans = Vec::new();
        for &(lo, hi) in ranges {
            let mut rows = stmt.query(params![lo >> CHUNK_BITS, hi >> CHUNK_BITS, tags])?;
            let mut span: Option<Span> = None;
            while let Some(r) = rows.next()? {
                let id: i64 = r.get(0)?;
                let chunk = Chunk {
                    lens: r.get(1)?,
                    tags: r.get::<_, Option<Vec<u8>>>(2)?.unwrap_or_default(),
                };
                let s = span.get_or_insert_with(|| Span {
                    first: id,
                    rows: Vec::new(),
                });
                let at = (id - s.first) as usize;
                s.rows.resize_with(at, || None);
                s.rows.push(Some(chunk));
            }
            spans.extend(span);
        }
        Ok(Facts { spans })
    }

    /// Doc `id`'s length in words and tag (0 when its tags were not
    /// loaded), if its facts are known.
    pub(crate) fn get(&self, id: i64) -> Option<(u16, u16)> {
        let (row, at) = chunk_of(id);
        let chunk = self.spans.iter().find_map(|s| {
            let i = usize::try_from(row - s.first).ok()?;
            s.rows.get(i)?.as_ref()
        })?;
        // Lengths are stored plus one: 0 is a doc whose facts are unknown.
        let len = read_u16(&chunk.lens, at * 2)?.checked_sub(1)?;
        Some((len, read_u16(&chunk.tags, at * 2).unwrap_or(0)))
    }
}

fn read_u16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

/// Facts rows changed by one batch of indexing, written back by
/// [`Pending::flush`].
#[derive(Default)]
pub(crate) struct Pending {
    chunks: HashMap<i64, Chunk>,
}

/// One facts row's blobs.
#[derive(Debug, Default)]
struct Chunk {
    lens: Vec<u8>,
    tags: Vec<u8>,
}

impl Pending {
    /// The facts row holding doc `id` (read on first use), grown to hold
    /// it, and the doc's byte offset in its blobs.
    fn chunk(&mut self, tx: &Transaction, id: i64) -> Result<(&mut Chunk, usize), rusqlite::Error> {
        use std::collections::hash_map::Entry;
        let (chunk, at) = chunk_of(id);
        let entry = match self.chunks.entry(chunk) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let row = tx
                    .prepare_cached("SELECT lens, tags FROM facts WHERE id = ?1")?
                    .query_row([chunk], |r| {
                        Ok(Chunk {
                            lens: r.get(0)?,
                            tags: r.get(1)?,
                        })
                    })
                    .optional()?;
                e.insert(row.unwrap_or_default())
            }
        };
        let need = (at + 1) * 2;
        for v in [&mut entry.lens, &mut entry.tags] {
            if v.len() < need {
                v.resize(need, 0);
            }
        }
        Ok((entry, at * 2))
    }

    /// Doc `id` has `len` words and this tag.
    pub(crate) fn set(
        &mut self,
        tx: &Transaction,
        id: i64,
        len: u64,
        tag: Tag,
    ) -> Result<(), rusqlite::Error> {
        // Stored plus one, so that 0 is a hole; a doc is at most 64 KiB.
        let len = len.saturating_add(1).min(u64::from(u16::MAX)) as u16;
        let (c, at) = self.chunk(tx, id)?;
        c.lens[at..at + 2].copy_from_slice(&len.to_le_bytes());
        c.tags[at..at + 2].copy_from_slice(&tag.0.to_le_bytes());
        Ok(())
    }

    /// Doc `id`'s span failed, or not.
    pub(crate) fn set_failed(
        &mut self,
        tx: &Transaction,
        id: i64,
        failed: bool,
    ) -> Result<(), rusqlite::Error> {
        let (c, at) = self.chunk(tx, id)?;
        let tag = Tag(u16::from_le_bytes([c.tags[at], c.tags[at + 1]]));
        if tag.0 != 0 {
            c.tags[at..at + 2].copy_from_slice(&tag.failed(failed).0.to_le_bytes());
        }
        Ok(())
    }

    pub(crate) fn flush(self, tx: &Transaction) -> Result<(), rusqlite::Error> {
        let mut stmt =
            tx.prepare_cached("INSERT OR REPLACE INTO facts (id, lens, tags) VALUES (?1, ?2, ?3)")?;
        for (chunk, c) in self.chunks {
            stmt.execute(params![chunk, c.lens, c.tags])?;
        }
        Ok(())
    }
}

/// The length in words FTS5 recorded for each doc of `[lo, hi]` in the
/// word table (its `docsize` rows: one varint per column).
pub(crate) fn lengths(
    tx: &Transaction,
    lo: i64,
    hi: i64,
) -> Result<Vec<(i64, u64)>, rusqlite::Error> {
    let mut stmt =
        tx.prepare_cached("SELECT id, sz FROM words_docsize WHERE id BETWEEN ?1 AND ?2")?;
    let rows = stmt.query_map([lo, hi], |r| {
        let sz: Vec<u8> = r.get(1)?;
        Ok((r.get(0)?, varint(&sz)))
    })?;
    rows.collect()
}

/// The first varint of `bytes` (SQLite's format: 7 bits a byte, high bit
/// set for more, the ninth byte whole).
fn varint(bytes: &[u8]) -> u64 {
    let mut v: u64 = 0;
    for (i, &b) in bytes.iter().enumerate().take(9) {
        if i == 8 {
            return (v << 8) | u64::from(b);
        }
        v = (v << 7) | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            break;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_as_sqlite_writes_them() {
        assert_eq!(varint(&[0x05]), 5);
        assert_eq!(varint(&[0x81, 0x00]), 128);
        assert_eq!(varint(&[0x82, 0x81, 0x7f]), (2 << 14) | (1 << 7) | 0x7f);
    }

    #[test]
    fn a_tag_filter_admits_what_can_pass_and_unknown_docs() {
        let bash = Tag::new(Kind::ToolInput, Some("Bash"));
        let f = TagFilter::new(&[Kind::ToolInput], Some("BASH"), false);
        assert!(f.admits(bash.0));
        assert!(!f.admits(Tag::new(Kind::ToolOutput, Some("Bash")).0));
        assert!(!f.admits(Tag::new(Kind::ToolInput, None).0));
        assert!(f.admits(0));
        let failed = TagFilter::new(&[], None, true);
        assert!(!failed.admits(bash.0));
        assert!(failed.admits(bash.failed(true).0));
        assert!(TagFilter::new(&[], None, false).is_empty());
    }
}
