//! Compact raw signal rows: what a ledger keeps of every spooled record
//! (its digest, session, receive time, where its bytes are in the raw
//! archive, the events it made) in a narrow table, read through a view
//! with exactly the columns and text forms of the table an older ledger
//! has, so that no query and no caller sees the difference.
//!
//! A compact ledger keeps its rows in `raw_signal_store`: the record
//! digest as its 32 bytes (`digest`), the adapter and session key as a
//! number in `signal_sessions` (`session_k`), the batch as its number in
//! `event_batches` (`batch_k`, shared with `event_store`), and the event
//! ids packed, 16 bytes each (`event_ids`). `raw_signals` is then a view
//! over it in plain SQL (no function of this crate), so `sqlite3` and
//! Python read it as they read the table. A value the packed form cannot
//! hold exactly (a digest that is not 64 lowercase hex digits, an id list
//! that is not `["ev_<32 hex>",...]` as the writer spells it) is kept as
//! its text, which the view gives back as it is: `digest` and `event_ids`
//! are `ANY`, a blob for the packed form, a text otherwise.
//!
//! The writer inserts into the store directly (`ledger::write::append`),
//! not through a trigger, so `finalize` pays no per-row SQL for the view.
//! The view's triggers serve a write by hand (a repair, a test that
//! damages a row); they keep a digest packed as the writer does, so the
//! key `(received_unix_ns, digest)` stays unique, and id lists as their
//! text.
//!
//! A new epoch is compact from its first row; an existing ledger is
//! converted only by `harnery archive compact-events` ([`make_compact`],
//! one transaction with the events' conversion), never silently.

use rusqlite::{CachedStatement, Connection, Transaction};

use super::LedgerError;

/// Bytes of a packed record digest (a blake3 hash).
pub(crate) const DIGEST_LEN: usize = 32;
/// Bytes of a packed event id (`ev_` and 32 hex digits).
pub(crate) const ID_LEN: usize = 16;
/// What every event id this build mints begins with.
const ID_PREFIX: &str = "ev_";

/// The store and the sessions' numbers.
const STORE: &str = r#"
CREATE TABLE signal_sessions (
    k           INTEGER PRIMARY KEY,
    adapter     TEXT NOT NULL,
    session_key TEXT NOT NULL,
    UNIQUE (adapter, session_key)
) STRICT;
CREATE TABLE raw_signal_store (
    received_unix_ns INTEGER NOT NULL,
    digest           ANY NOT NULL
        CHECK (typeof(digest) = 'text' OR (typeof(digest) = 'blob' AND length(digest) = 32)),
    session_k        INTEGER NOT NULL,
    event_name       TEXT,
    env              TEXT,
    archive_at       INTEGER,
    envelope         TEXT,
    payload          BLOB,
    event_ids        ANY NOT NULL
        CHECK (typeof(event_ids) = 'text' OR (typeof(event_ids) = 'blob' AND length(event_ids) % 16 = 0)),
    duplicate_of     TEXT,
    batch_k          INTEGER NOT NULL,
    PRIMARY KEY (received_unix_ns, digest),
    CHECK ((archive_at IS NULL) = (payload IS NOT NULL) AND (envelope IS NULL) = (payload IS NULL))
) STRICT, WITHOUT ROWID;
"#;

/// The view (the columns of the `raw_archive` migration's table, in its
/// order) and its triggers. The ids are spelled by a recursive walk over
/// the packed bytes, 16 at a time, in order.
const VIEW: &str = r#"
CREATE VIEW raw_signals AS SELECT
    CASE typeof(digest) WHEN 'blob' THEN lower(hex(digest)) ELSE digest END AS record_digest,
    (SELECT adapter FROM signal_sessions WHERE k = session_k) AS adapter,
    (SELECT session_key FROM signal_sessions WHERE k = session_k) AS session_key,
    event_name, received_unix_ns, env, archive_at, envelope, payload,
    CASE typeof(event_ids) WHEN 'blob' THEN (
        WITH RECURSIVE at(n) AS (
            SELECT 0 UNION ALL SELECT n + 16 FROM at WHERE n + 16 < length(event_ids))
        SELECT '[' || coalesce(group_concat('"ev_' || lower(hex(substr(event_ids, n + 1, 16))) || '"', ','), '') || ']'
        FROM at WHERE n < length(event_ids))
    ELSE event_ids END AS event_ids,
    duplicate_of,
    (SELECT batch FROM event_batches WHERE k = batch_k) AS batch
FROM raw_signal_store;
CREATE TRIGGER raw_signals_insert INSTEAD OF INSERT ON raw_signals BEGIN
    INSERT OR IGNORE INTO signal_sessions (adapter, session_key) VALUES (NEW.adapter, NEW.session_key);
    INSERT OR IGNORE INTO event_batches (batch) VALUES (NEW.batch);
    INSERT INTO raw_signal_store (received_unix_ns, digest, session_k, event_name, env, archive_at,
        envelope, payload, event_ids, duplicate_of, batch_k)
    VALUES (NEW.received_unix_ns,
        iif(typeof(NEW.record_digest) = 'text' AND length(NEW.record_digest) = 64
            AND NEW.record_digest NOT GLOB '*[^0-9a-f]*', unhex(NEW.record_digest), NEW.record_digest),
        (SELECT k FROM signal_sessions WHERE adapter = NEW.adapter AND session_key = NEW.session_key),
        NEW.event_name, NEW.env, NEW.archive_at, NEW.envelope, NEW.payload, NEW.event_ids,
        NEW.duplicate_of, (SELECT k FROM event_batches WHERE batch = NEW.batch));
END;
CREATE TRIGGER raw_signals_update INSTEAD OF UPDATE ON raw_signals BEGIN
    INSERT OR IGNORE INTO signal_sessions (adapter, session_key) VALUES (NEW.adapter, NEW.session_key);
    INSERT OR IGNORE INTO event_batches (batch) VALUES (NEW.batch);
    UPDATE raw_signal_store SET received_unix_ns = NEW.received_unix_ns,
        digest = iif(typeof(NEW.record_digest) = 'text' AND length(NEW.record_digest) = 64
            AND NEW.record_digest NOT GLOB '*[^0-9a-f]*', unhex(NEW.record_digest), NEW.record_digest),
        session_k = (SELECT k FROM signal_sessions WHERE adapter = NEW.adapter AND session_key = NEW.session_key),
        event_name = NEW.event_name, env = NEW.env, archive_at = NEW.archive_at,
        envelope = NEW.envelope, payload = NEW.payload,
        event_ids = CASE WHEN NEW.event_ids IS OLD.event_ids THEN event_ids ELSE NEW.event_ids END,
        duplicate_of = NEW.duplicate_of,
        batch_k = (SELECT k FROM event_batches WHERE batch = NEW.batch)
    WHERE received_unix_ns = OLD.received_unix_ns
        AND CASE typeof(digest) WHEN 'blob' THEN lower(hex(digest)) ELSE digest END = OLD.record_digest;
END;
CREATE TRIGGER raw_signals_delete INSTEAD OF DELETE ON raw_signals BEGIN
    DELETE FROM raw_signal_store WHERE received_unix_ns = OLD.received_unix_ns
        AND CASE typeof(digest) WHEN 'blob' THEN lower(hex(digest)) ELSE digest END = OLD.record_digest;
END;
"#;

/// Whether the ledger on `conn` stores its raw signal rows compactly.
pub(crate) fn is_compact(conn: &Connection) -> Result<bool, LedgerError> {
    Ok(conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'raw_signal_store')",
        )?
        .query_row([], |r| r.get(0))?)
}

/// Whether `digest` is 64 lowercase hex digits (every digest this build
/// makes: the store keeps those as their bytes, any other as its text),
/// and then its bytes in `out` (cleared first).
fn packed_digest(digest: &str, out: &mut Vec<u8>) -> bool {
    out.clear();
    digest.len() == 2 * DIGEST_LEN && unhex_lower(digest.as_bytes(), out)
}

/// Pack `ids` into `out` (cleared first), 16 bytes an id: false, and `out`
/// left unusable, when one is not `ev_` and 32 lowercase hex digits.
pub(crate) fn pack_ids<'a>(ids: impl IntoIterator<Item = &'a str>, out: &mut Vec<u8>) -> bool {
    out.clear();
    ids.into_iter().all(|id| {
        id.strip_prefix(ID_PREFIX)
            .is_some_and(|hex| hex.len() == 2 * ID_LEN && unhex_lower(hex.as_bytes(), out))
    })
}

/// Pack an id list kept as text (an older table's `event_ids`) into `out`:
/// false when the text is not exactly what the view spells from the packed
/// form, `["ev_<hex>","ev_<hex>"]` with nothing between.
pub(crate) fn pack_ids_text(text: &str, out: &mut Vec<u8>) -> bool {
    let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) else {
        return false;
    };
    if inner.is_empty() {
        out.clear();
        return true;
    }
    pack_ids(
        inner.split(',').map(|item| {
            item.strip_prefix('"')
                .and_then(|i| i.strip_suffix('"'))
                .unwrap_or("")
        }),
        out,
    )
}

/// Each byte's value as a lowercase hex digit, or 0xff for any other.
const HEX_DIGIT: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 16 {
        table[b"0123456789abcdef"[i] as usize] = i as u8;
        i += 1;
    }
    table
};

/// Append the bytes of the lowercase hex digits `hex` to `out`: false
/// (with `out` unusable) at any other character or an odd length. A table
/// and one check at the end: a drain packs two of these a signal, and a
/// branch a digit cost more than the rest of a signal row's packing.
fn unhex_lower(hex: &[u8], out: &mut Vec<u8>) -> bool {
    if !hex.len().is_multiple_of(2) {
        return false;
    }
    let mut seen = 0u8;
    out.extend(hex.chunks_exact(2).map(|pair| {
        let (hi, lo) = (HEX_DIGIT[pair[0] as usize], HEX_DIGIT[pair[1] as usize]);
        seen |= hi | lo;
        hi << 4 | lo
    }));
    seen < 16
}

/// The number of an adapter's session key in `signal_sessions`, given it
/// one if new (the numbers met kept: a batch's signals come a session at
/// a time).
#[derive(Default)]
pub(crate) struct Sessions {
    known: std::collections::HashMap<(String, String), i64>,
    last: Option<(String, String, i64)>,
}

impl Sessions {
    pub(crate) fn key(
        &mut self,
        tx: &Connection,
        adapter: &str,
        session_key: &str,
    ) -> Result<i64, LedgerError> {
        if let Some((a, s, k)) = &self.last
            && a == adapter
            && s == session_key
        {
            return Ok(*k);
        }
        let pair = (adapter.to_string(), session_key.to_string());
        if let Some(&k) = self.known.get(&pair) {
            self.last = Some((pair.0, pair.1, k));
            return Ok(k);
        }
        tx.prepare_cached(
            "INSERT OR IGNORE INTO signal_sessions (adapter, session_key) VALUES (?1, ?2)",
        )?
        .execute([adapter, session_key])?;
        let k: i64 = tx
            .prepare_cached(
                "SELECT k FROM signal_sessions WHERE adapter = ?1 AND session_key = ?2",
            )?
            .query_row([adapter, session_key], |r| r.get(0))?;
        self.last = Some((pair.0.clone(), pair.1.clone(), k));
        self.known.insert(pair, k);
        Ok(k)
    }
}

/// One raw signal row, as the `raw_signals` view shows it (the event ids
/// as a list, or as the text an older table kept).
pub(crate) struct Row<'a> {
    pub record_digest: &'a str,
    pub adapter: &'a str,
    pub session_key: &'a str,
    pub event_name: Option<&'a str>,
    pub received_unix_ns: i64,
    pub env: Option<&'a str>,
    pub archive_at: Option<i64>,
    pub envelope: Option<&'a str>,
    pub payload: Option<&'a [u8]>,
    pub event_ids: Ids<'a>,
    pub duplicate_of: Option<&'a str>,
    pub batch: &'a str,
}

/// A signal's event ids: the writer's list, or an older table's text.
pub(crate) enum Ids<'a> {
    List(&'a [String]),
    Text(&'a str),
}

/// What inserts rows into the store within one transaction: its
/// statement, prepared once, the numbers of the sessions and batches met,
/// and room for the packed ids, kept between rows. A binding outlives the
/// statement's reset after each row, so the session's and batch's numbers
/// and the envelope's environment are bound only when they change (a
/// batch's signals come a session at a time, and text costs SQLite a copy
/// to bind); the rest are bound by type, one by one.
pub(crate) struct Inserter<'c> {
    conn: &'c Connection,
    insert: CachedStatement<'c>,
    sessions: Sessions,
    batches: super::eventz::Batches,
    ids: Vec<u8>,
    digest: Vec<u8>,
    text: String,
    bound: Bound,
}

/// What the statement holds from the rows before: nothing until a row
/// binds it.
#[derive(Default)]
struct Bound {
    session_k: Option<i64>,
    batch_k: Option<i64>,
    env: Option<Option<String>>,
}

impl<'c> Inserter<'c> {
    pub(crate) fn new(conn: &'c Connection) -> Result<Inserter<'c>, LedgerError> {
        Ok(Inserter {
            conn,
            insert: conn.prepare_cached(
                "INSERT INTO raw_signal_store (received_unix_ns, digest, session_k, event_name, env, \
                 archive_at, envelope, payload, event_ids, duplicate_of, batch_k) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
                 ON CONFLICT (received_unix_ns, digest) DO NOTHING",
            )?,
            sessions: Sessions::default(),
            batches: Default::default(),
            ids: Vec::new(),
            digest: Vec::with_capacity(DIGEST_LEN),
            text: String::new(),
            bound: Bound::default(),
        })
    }

    /// Insert `row` into the store, unless a row with its receive time and
    /// digest is there already (a rerun of the batch that wrote it).
    pub(crate) fn row(&mut self, row: &Row) -> Result<(), LedgerError> {
        let session_k = self.sessions.key(self.conn, row.adapter, row.session_key)?;
        let batch_k = self.batches.key(self.conn, row.batch)?;
        let stmt = &mut self.insert;
        stmt.raw_bind_parameter(1, row.received_unix_ns)?;
        if packed_digest(row.record_digest, &mut self.digest) {
            stmt.raw_bind_parameter(2, self.digest.as_slice())?;
        } else {
            stmt.raw_bind_parameter(2, row.record_digest)?;
        }
        if self.bound.session_k != Some(session_k) {
            stmt.raw_bind_parameter(3, session_k)?;
            self.bound.session_k = Some(session_k);
        }
        stmt.raw_bind_parameter(4, row.event_name)?;
        if self
            .bound
            .env
            .as_ref()
            .is_none_or(|e| e.as_deref() != row.env)
        {
            stmt.raw_bind_parameter(5, row.env)?;
            self.bound.env = Some(row.env.map(str::to_owned));
        }
        stmt.raw_bind_parameter(6, row.archive_at)?;
        stmt.raw_bind_parameter(7, row.envelope)?;
        stmt.raw_bind_parameter(8, row.payload)?;
        let packed = match row.event_ids {
            Ids::List(ids) => pack_ids(ids.iter().map(String::as_str), &mut self.ids),
            Ids::Text(text) => pack_ids_text(text, &mut self.ids),
        };
        match (packed, &row.event_ids) {
            (true, _) => stmt.raw_bind_parameter(9, self.ids.as_slice())?,
            (false, Ids::Text(text)) => stmt.raw_bind_parameter(9, *text)?,
            // Ids this build did not mint: the text the plain table keeps.
            (false, Ids::List(ids)) => {
                self.text = serde_json::to_string(ids).expect("a list of strings serializes");
                stmt.raw_bind_parameter(9, self.text.as_str())?
            }
        }
        stmt.raw_bind_parameter(10, row.duplicate_of)?;
        if self.bound.batch_k != Some(batch_k) {
            stmt.raw_bind_parameter(11, batch_k)?;
            self.bound.batch_k = Some(batch_k);
        }
        stmt.raw_execute()?;
        Ok(())
    }
}

/// Make the raw signal rows of the ledger on `tx` compact: create the
/// store, move every row of the `raw_signals` table into it, and put the
/// view in the table's place. The events must be compact already (their
/// `event_batches` numbers the batches). Inside the caller's transaction:
/// a kill leaves the rows as they were or converted, never between.
/// Returns the rows moved; a ledger already compact is left alone (0).
pub(crate) fn make_compact(tx: &Transaction) -> Result<u64, LedgerError> {
    if is_compact(tx)? {
        return Ok(0);
    }
    tx.execute_batch(STORE)?;
    let mut moved = 0u64;
    {
        let mut read = tx.prepare(
            "SELECT record_digest, adapter, session_key, event_name, received_unix_ns, env, \
             archive_at, envelope, payload, event_ids, duplicate_of, batch \
             FROM raw_signals ORDER BY received_unix_ns, record_digest",
        )?;
        let mut rows = read.query([])?;
        let mut put = Inserter::new(tx)?;
        while let Some(r) = rows.next()? {
            let ns: i64 = r.get(4)?;
            let row = read_row(r).map_err(|e| LedgerError::Corrupt {
                path: "raw_signals".into(),
                detail: format!(
                    "the row received at {ns} ns cannot be moved, nothing was converted: {e}"
                ),
            })?;
            put.row(&row)?;
            moved += 1;
        }
    }
    tx.execute_batch("DROP TABLE raw_signals;")?;
    tx.execute_batch(VIEW)?;
    Ok(moved)
}

/// A row of the plain table as the store takes it (columns in the order
/// [`make_compact`] selects them); an error for a text that is not UTF-8.
fn read_row<'r>(r: &'r rusqlite::Row) -> rusqlite::Result<Row<'r>> {
    let text = |i| -> rusqlite::Result<Option<&str>> { Ok(r.get_ref(i)?.as_str_or_null()?) };
    let some = |i| -> rusqlite::Result<&str> { Ok(r.get_ref(i)?.as_str()?) };
    Ok(Row {
        record_digest: some(0)?,
        adapter: some(1)?,
        session_key: some(2)?,
        event_name: text(3)?,
        received_unix_ns: r.get(4)?,
        env: text(5)?,
        archive_at: r.get(6)?,
        envelope: text(7)?,
        payload: r.get_ref(8)?.as_blob_or_null()?,
        event_ids: Ids::Text(some(9)?),
        duplicate_of: text(10)?,
        batch: some(11)?,
    })
}

#[cfg(test)]
#[path = "signalz_tests.rs"]
mod tests;
