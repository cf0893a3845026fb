//! `verify`: recompute the hash chain from the stored bytes of every event
//! row, in parallel chunks of the sequence, and check the recorded chain
//! head.

use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;

use super::LedgerReader;
use crate::ledger::{LedgerError, chain};
use crate::progress::Progress;

/// One row where the chain does not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainBreak {
    pub seq: i64,
    /// The event id column (as stored, possibly damaged itself).
    pub event_id: String,
    pub detail: String,
}

/// Check the rows with `lo <= seq <= hi` on `conn`.
fn verify_range(
    conn: &Connection,
    seed: &[u8; 32],
    lo: i64,
    hi: i64,
    progress: &Progress,
) -> Result<ChunkResult, LedgerError> {
    let (mut stored_prev, mut computed_prev) = predecessor(conn, seed, lo)?;
    let mut stmt = conn.prepare(
        "SELECT seq, id, adapter, session_id, offset, type, CAST(json AS BLOB), prev_hash, hash \
         FROM events WHERE seq >= ?1 AND seq <= ?2 ORDER BY seq",
    )?;
    let mut rows = stmt.query([lo, hi])?;
    let mut out = ChunkResult::default();
    let mut scratch = Vec::with_capacity(256);
    while let Some(r) = rows.next()? {
        let row = RowRef::of(r)?;
        out.rows += 1;
        if out.rows.is_multiple_of(PROGRESS_STEP) {
            progress.add(PROGRESS_STEP);
        }
        let computed = check_row(
            &row,
            &stored_prev,
            &computed_prev,
            &mut scratch,
            &mut out.breaks,
        );
        stored_prev.clear();
        stored_prev.extend_from_slice(row.hash);
        computed_prev.clear();
        computed_prev.extend_from_slice(&computed);
    }
    out.last_hash = stored_prev;
    progress.add(out.rows % PROGRESS_STEP);
    Ok(out)
}

/// The stored and the recomputed hash of the row before `seq` (the
/// epoch's seed for the first row).
fn predecessor(
    conn: &Connection,
    seed: &[u8; 32],
    seq: i64,
) -> Result<(Vec<u8>, Vec<u8>), LedgerError> {
    let before: Option<(Vec<u8>, Vec<u8>, Vec<u8>)> = conn
        .query_row(
            "SELECT CAST(json AS BLOB), prev_hash, hash FROM events WHERE seq < ?1 ORDER BY seq DESC LIMIT 1",
            [seq],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    Ok(match before {
        None => (seed.to_vec(), seed.to_vec()),
        Some((json, prev, hash)) => {
            let prev: [u8; 32] = prev.as_slice().try_into().unwrap_or([0u8; 32]);
            (hash, chain::link(&prev, &json).to_vec())
        }
    })
}

/// The first and last sequence numbers (none for an empty epoch), and the
/// chain head recorded in `meta`.
type ChainBounds = (Option<(i64, i64)>, Option<String>);

/// What one chunk of a parallel verify found.
#[derive(Default)]
struct ChunkResult {
    rows: u64,
    breaks: Vec<ChainBreak>,
    /// The stored hash of the chunk's last row.
    last_hash: Vec<u8>,
}

/// Rows between two progress reports.
pub(super) const PROGRESS_STEP: u64 = 4096;

/// Rows below this many are verified on one thread.
const PARALLEL_VERIFY_MIN_ROWS: i64 = 20_000;

fn verify_threads(rows: i64) -> usize {
    if rows < PARALLEL_VERIFY_MIN_ROWS {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// `[first, last]` cut into `n` contiguous ranges of nearly equal length.
fn chunk_ranges(first: i64, last: i64, n: usize) -> Vec<(i64, i64)> {
    let n = n.max(1) as i64;
    let len = last - first + 1;
    (0..n)
        .map(|i| (first + len * i / n, first + len * (i + 1) / n - 1))
        .filter(|(lo, hi)| lo <= hi)
        .collect()
}

/// The envelope fields a row also keeps in indexed columns, borrowed from
/// the stored text. Reading only these (serde skips the rest unparsed) is
/// what lets `verify` run near the speed of hashing; `validate` is what
/// reads each event whole.
#[derive(serde::Deserialize)]
struct StoredColumns<'a> {
    #[serde(borrow)]
    id: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    session: StoredSession<'a>,
    offset: i64,
    #[serde(rename = "type", borrow)]
    ty: std::borrow::Cow<'a, str>,
}

#[derive(serde::Deserialize)]
struct StoredSession<'a> {
    #[serde(borrow)]
    adapter: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    session_id: std::borrow::Cow<'a, str>,
}

/// One event row as `verify` reads it, borrowed from SQLite's row buffer:
/// nothing is copied or allocated for a row that checks out.
struct RowRef<'r> {
    seq: i64,
    id: &'r [u8],
    adapter: &'r [u8],
    session_id: &'r [u8],
    offset: i64,
    ty: &'r [u8],
    json: &'r [u8],
    prev: &'r [u8],
    hash: &'r [u8],
}

impl<'r> RowRef<'r> {
    fn of(r: &'r rusqlite::Row<'r>) -> rusqlite::Result<RowRef<'r>> {
        let bytes = |i: usize| -> rusqlite::Result<&'r [u8]> {
            Ok(match r.get_ref(i)? {
                rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => b,
                _ => &[],
            })
        };
        Ok(RowRef {
            seq: r.get(0)?,
            id: bytes(1)?,
            adapter: bytes(2)?,
            session_id: bytes(3)?,
            offset: r.get(4)?,
            ty: bytes(5)?,
            json: bytes(6)?,
            prev: bytes(7)?,
            hash: bytes(8)?,
        })
    }
}

/// The checks of a ledger: its chain ([`Verify::chain`]) and its rows against the contract ([`Verify::validate`]).
pub struct Verify<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Verify<'_> {
    /// Recompute every link. A damaged row is reported at that row only:
    /// each row is checked against its own stored predecessor link, and a
    /// predecessor counts as matching when it equals either the stored or
    /// the recomputed hash of the row before.
    ///
    /// Every row stores its predecessor's hash, so the rows are checked in
    /// parallel chunks of the sequence, each on a connection of its own; a
    /// chunk starts from the row before it, read and hashed once more at
    /// each seam. The bounds and the recorded chain head are read in one
    /// snapshot first, so rows a writer appends meanwhile are not counted.
    pub fn chain(&self) -> Result<(u64, Vec<ChainBreak>), LedgerError> {
        self.chain_threads(None, &Progress::none())
    }

    /// [`Verify::chain`] on `threads` threads (`None`: one per core
    /// once the epoch is large enough to gain from it). The findings never
    /// depend on the thread count.
    pub fn chain_threads(
        &self,
        threads: Option<usize>,
        progress: &Progress,
    ) -> Result<(u64, Vec<ChainBreak>), LedgerError> {
        let (bounds, recorded_head) = self.chain_bounds()?;
        let Some((first, last)) = bounds else {
            let seed = self.r.genesis.chain_seed();
            self.check_head(recorded_head, &seed, 0, &mut Vec::new())?;
            return Ok((0, Vec::new()));
        };
        let threads = threads.unwrap_or_else(|| verify_threads(last - first + 1));
        let chunks = chunk_ranges(first, last, threads);
        progress.total((last - first + 1) as u64);
        let seed = self.r.genesis.chain_seed();
        let db = self.r.dir.join(super::DB_FILE);
        let results: Vec<Result<ChunkResult, LedgerError>> = if chunks.len() == 1 {
            vec![verify_range(&self.r.conn, &seed, first, last, progress)]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = chunks
                    .iter()
                    .map(|&(lo, hi)| {
                        let db = &db;
                        scope.spawn(move || {
                            verify_range(&super::open_readonly(db)?, &seed, lo, hi, progress)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("a verify thread does not panic"))
                    .collect()
            })
        };
        let mut breaks = Vec::new();
        let (mut count, mut last_hash) = (0u64, Vec::new());
        for r in results {
            let r = r?;
            count += r.rows;
            breaks.extend(r.breaks);
            last_hash = r.last_hash;
        }
        self.check_head(recorded_head, &last_hash, count, &mut breaks)?;
        Ok((count, breaks))
    }

    /// The first and last sequence numbers and the recorded chain head, in
    /// one read snapshot.
    fn chain_bounds(&self) -> Result<ChainBounds, LedgerError> {
        self.r.conn.execute_batch("BEGIN")?;
        let read = (|| {
            let bounds: (Option<i64>, Option<i64>) =
                self.r
                    .conn
                    .query_row("SELECT min(seq), max(seq) FROM events", [], |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })?;
            let head: Option<String> = self
                .r
                .conn
                .query_row("SELECT value FROM meta WHERE key = 'chain_head'", [], |r| {
                    r.get(0)
                })
                .optional()?;
            Ok::<_, LedgerError>((bounds.0.zip(bounds.1), head))
        })();
        self.r.conn.execute_batch("COMMIT")?;
        read
    }

    fn check_head(
        &self,
        head: Option<String>,
        last: &[u8],
        count: u64,
        out: &mut Vec<ChainBreak>,
    ) -> Result<(), LedgerError> {
        if let Some(head) = head
            && head != chain::hex(last)
        {
            out.push(ChainBreak {
                seq: count as i64,
                event_id: "(chain head)".into(),
                detail: format!("the recorded chain head {head} is not the last row's hash; rows are missing at the end"),
            });
        }
        Ok(())
    }
}

/// Check one row; returns its recomputed hash.
fn check_row(
    row: &RowRef,
    stored_prev: &[u8],
    computed_prev: &[u8],
    scratch: &mut Vec<u8>,
    out: &mut Vec<ChainBreak>,
) -> [u8; 32] {
    let mut details: Vec<String> = Vec::new();
    let mut fail = |detail: String| details.push(detail);
    if row.prev != stored_prev && row.prev != computed_prev {
        fail("prev_hash does not link to the row before".into());
    }
    let prev: [u8; 32] = row.prev.try_into().unwrap_or([0u8; 32]);
    let computed = chain::link(&prev, row.json);
    if computed.as_slice() != row.hash {
        fail(format!(
            "stored hash {} but the stored bytes hash to {}",
            chain::hex(row.hash),
            chain::hex(&computed)
        ));
    }
    if !columns_agree(row, scratch) {
        match serde_json::from_slice::<StoredColumns>(row.json) {
            Err(e) => fail(format!("stored event text does not parse: {e}")),
            Ok(ev) => {
                let columns_match = ev.id.as_bytes() == row.id
                    && ev.session.adapter.as_bytes() == row.adapter
                    && ev.session.session_id.as_bytes() == row.session_id
                    && ev.offset == row.offset
                    && ev.ty.as_bytes() == row.ty;
                if !columns_match {
                    fail(
                        "indexed columns (id, session, offset, type) disagree with the stored event"
                            .into(),
                    );
                }
            }
        }
    }
    if !details.is_empty() {
        out.push(ChainBreak {
            seq: row.seq,
            event_id: String::from_utf8_lossy(row.id).into_owned(),
            detail: details.join("; "),
        });
    }
    computed
}

/// The fast check of the indexed columns: the stored text starts with
/// exactly the id, session and offset the columns hold, in the order
/// `Event` writes them, and its first `"type":` key (the envelope's: no
/// field before it holds arbitrary JSON, and a string cannot hold an
/// unescaped quote) names the column's type. `false` is not a verdict:
/// the caller then parses the text to decide.
fn columns_agree(row: &RowRef, scratch: &mut Vec<u8>) -> bool {
    let (Ok(id), Ok(adapter), Ok(session), Ok(ty)) = (
        std::str::from_utf8(row.id),
        std::str::from_utf8(row.adapter),
        std::str::from_utf8(row.session_id),
        std::str::from_utf8(row.ty),
    ) else {
        return false;
    };
    scratch.clear();
    scratch.extend_from_slice(b"{\"id\":");
    let put = |s: &str, scratch: &mut Vec<u8>| serde_json::to_writer(scratch, s).is_ok();
    let built = put(id, scratch)
        && {
            scratch.extend_from_slice(b",\"session\":{\"adapter\":");
            put(adapter, scratch)
        }
        && {
            scratch.extend_from_slice(b",\"session_id\":");
            put(session, scratch)
        };
    if !built {
        return false;
    }
    scratch.extend_from_slice(b"},\"offset\":");
    scratch.extend_from_slice(row.offset.to_string().as_bytes());
    scratch.push(b',');
    if !row.json.starts_with(scratch) {
        return false;
    }
    static TYPE_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"type\":"));
    let Some(at) = TYPE_KEY.find(row.json) else {
        return false;
    };
    scratch.clear();
    if !put(ty, scratch) {
        return false;
    }
    let rest = &row.json[at + 7..];
    rest.starts_with(scratch) && matches!(rest.get(scratch.len()), Some(b',' | b'}'))
}

#[cfg(test)]
mod chunk_tests {
    use super::chunk_ranges;

    #[test]
    fn chunks_cover_the_range_once_in_order() {
        assert_eq!(chunk_ranges(1, 10, 3), vec![(1, 3), (4, 6), (7, 10)]);
        assert_eq!(chunk_ranges(5, 5, 4), vec![(5, 5)]);
        assert_eq!(chunk_ranges(1, 2, 1), vec![(1, 2)]);
    }
}

#[cfg(test)]
mod column_tests {
    use super::{RowRef, columns_agree};

    fn row<'a>(
        json: &'a [u8],
        id: &'a [u8],
        session: &'a [u8],
        offset: i64,
        ty: &'a [u8],
    ) -> RowRef<'a> {
        RowRef {
            seq: 1,
            id,
            adapter: b"claude-code",
            session_id: session,
            offset,
            ty,
            json,
            prev: &[],
            hash: &[],
        }
    }

    const JSON: &[u8] = br#"{"id":"ev_1","session":{"adapter":"claude-code","session_id":"s\"1"},"offset":4,"time_unix_ns":5,"raw":[],"type":"tool.requested","payload":{"tool_name":"x","input":{"type":"turn.started","payload":1}}}"#;

    #[test]
    fn the_fast_check_accepts_only_exact_columns() {
        let mut scratch = Vec::new();
        assert!(columns_agree(
            &row(JSON, b"ev_1", br#"s"1"#, 4, b"tool.requested"),
            &mut scratch
        ));
        for bad in [
            row(JSON, b"ev_2", br#"s"1"#, 4, b"tool.requested"),
            row(JSON, b"ev_1", b"s1", 4, b"tool.requested"),
            row(JSON, b"ev_1", br#"s"1"#, 5, b"tool.requested"),
            row(JSON, b"ev_1", br#"s"1"#, 4, b"tool.request"),
            // The nested lookalike in the tool input never counts.
            row(JSON, b"ev_1", br#"s"1"#, 4, b"turn.started"),
        ] {
            assert!(!columns_agree(&bad, &mut scratch));
        }
    }
}
