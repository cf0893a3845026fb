//! `harnery ship`: every event row of every epoch (archived and live),
//! masked, into the central server, exactly once; then the epoch's
//! derived rows.
//!
//! Rows are keyed by (host, genesis, seq) and sent in chain order, a batch
//! per transaction, so the server holds a prefix of each epoch's chain at
//! every instant: a run killed anywhere (the client, the server, the
//! connection) leaves whole batches, and the next run resumes after the
//! last row the server holds. Before it sends anything for an epoch, the
//! run checks that the server's hash at that row is the local one: a host
//! whose ledger was replaced or forked is refused, named by host, epoch
//! and row, and nothing of it is sent. One host's runs are serialised by
//! a session advisory lock keyed by its id, so a cron overlap cannot race
//! itself. The local ledger is only read.
//!
//! Each row is sent as `--content` asks (full, masked, or metadata only),
//! bound into the shipped chain and committed to the ledger row with the
//! host's key (`link`); the epoch's head is signed after every batch. A
//! host role (`fleet add-host`) writes through row-level security, which
//! PostgreSQL does not apply to `COPY`, so its rows are copied into a
//! temporary table and inserted from there; an administrator copies
//! straight in.

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use postgres::{Client, Transaction};
use serde::Serialize;

use super::derived::{self, DerivedCounts, EpochKey};
use super::host::{HostId, hostname};
use super::ids;
use super::key::{HostKey, Purpose};
use super::link::{self, ShippedRow, Signer, pg_text};
use super::mask::Masker;
use super::schema::{self, LOCK_SPACE};
use super::schema_search::SHIP_TEMP_SEARCH;
use super::search_ship::SearchRows;
use super::target::Target;
use super::{CopyError, ShipError};
use crate::epoch::{EpochEntry, closures, epochs};
use crate::failpoint;
use crate::home::Home;
use crate::ledger::{ChainRow, ClosedSession, GENESIS_FILE, LedgerReader, chain};
use crate::report::epochs::open_as_written;

/// Event rows per transaction unless told otherwise.
pub const DEFAULT_BATCH_ROWS: u64 = 50_000;

/// What one run did, per epoch.
#[derive(Debug, Clone, Serialize)]
pub struct ShipReport {
    pub host_id: String,
    pub server: String,
    pub schema_version: i32,
    pub epochs: Vec<EpochShipped>,
    /// Epochs this build could not read, and why (the rest were shipped).
    pub unreadable: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EpochShipped {
    pub epoch: String,
    pub genesis_id: String,
    /// The last row the server held before this run (0: none).
    pub resumed_after: i64,
    pub rows_sent: u64,
    pub masked_rows: u64,
    /// Rows the server holds for the epoch now.
    pub rows_total: i64,
    /// The derived rows, when they were sent this run.
    pub derived: Option<DerivedCounts>,
}

/// What of each row leaves the host (`ship --content`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Content {
    /// Every row as recorded.
    Full,
    /// Every row with its secrets masked (the default).
    Masked,
    /// Metadata only: no prompts, messages, tool inputs or outputs, paths
    /// or commands.
    None,
}

impl Content {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Content::Full => "full",
            Content::Masked => "masked",
            Content::None => "none",
        }
    }
}

/// The parts of a run.
pub struct Shipper<'a> {
    pub home: &'a Home,
    pub host: HostId,
    pub key: &'a HostKey,
    pub masker: &'a Masker,
    pub content: Content,
    pub batch_rows: u64,
}

/// A row as it is sent.
pub struct Outgoing<'r> {
    pub event_id: std::borrow::Cow<'r, str>,
    pub adapter: std::borrow::Cow<'r, str>,
    pub session_id: std::borrow::Cow<'r, str>,
    pub ty: std::borrow::Cow<'r, str>,
    pub json: std::borrow::Cow<'r, [u8]>,
    pub masked: Vec<String>,
}

/// A ledger row as this host sends it under `content`.
pub fn outgoing<'r>(masker: &Masker, content: Content, row: &ChainRow<'r>) -> Outgoing<'r> {
    let (json, masked) = match content {
        Content::Full => match masker.keyed_only(row.json) {
            Some(m) => (std::borrow::Cow::Owned(m.text.into_owned()), Vec::new()),
            None => (std::borrow::Cow::Borrowed(row.json), Vec::new()),
        },
        Content::Masked => match masker.mask(row.json) {
            Some(m) => (std::borrow::Cow::Owned(m.text.into_owned()), m.patterns),
            None => (std::borrow::Cow::Borrowed(row.json), Vec::new()),
        },
        Content::None => (
            std::borrow::Cow::Owned(masker.metadata_only(row.json)),
            Vec::new(),
        ),
    };
    Outgoing {
        event_id: match std::str::from_utf8(row.id) {
            Ok(id) => match masker.shipped_id(id) {
                std::borrow::Cow::Owned(keyed) => std::borrow::Cow::Owned(keyed),
                std::borrow::Cow::Borrowed(_) => pg_text(row.id),
            },
            Err(_) => pg_text(row.id),
        },
        adapter: pg_text(row.adapter),
        session_id: pg_text(row.session_id),
        ty: pg_text(row.ty),
        json,
        masked,
    }
}

impl Outgoing<'_> {
    pub(crate) fn shipped<'s>(&'s self, row: &ChainRow<'_>, content: &'s str) -> ShippedRow<'s> {
        ShippedRow {
            seq: row.seq,
            event_id: &self.event_id,
            adapter: &self.adapter,
            session_id: &self.session_id,
            offset: row.offset,
            ty: &self.ty,
            time_unix_ns: row.time_unix_ns,
            content,
            masked: &self.masked,
            json: &self.json,
        }
    }
}

/// The genesis manifest as it leaves the host: the anchor's digests (the
/// previous epoch's last chain hash, the closure's digest) keyed, since
/// an unkeyed chain hash could test guesses of masked rows, and the
/// closure's event ids keyed as the rows' are ([`super::ids`]).
pub fn shipped_genesis(key: &HostKey, bytes: &[u8]) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return bytes.to_vec();
    };
    fn walk(key: &HostKey, v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    match x {
                        serde_json::Value::String(s)
                            if k.contains("digest") && k != "schema_digest" =>
                        {
                            let h = key.hash(Purpose::Genesis, &[s.as_bytes()]);
                            *s = format!("keyed:{}", chain::hex(&h));
                        }
                        serde_json::Value::String(s) => {
                            if let std::borrow::Cow::Owned(id) = ids::shipped(key, s) {
                                *s = id;
                            }
                        }
                        _ => walk(key, x),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| match x {
                serde_json::Value::String(s) => {
                    if let std::borrow::Cow::Owned(id) = ids::shipped(key, s) {
                        *s = id;
                    }
                }
                x => walk(key, x),
            }),
            _ => {}
        }
    }
    walk(key, &mut v);
    serde_json::to_vec(&v).expect("a value serialises")
}

impl Shipper<'_> {
    /// A session's title or project as `--content` lets it leave: as it
    /// is, masked, or not at all.
    fn shown(&self, text: &str) -> Option<String> {
        match self.content {
            Content::Full => Some(text.to_string()),
            Content::Masked => Some(
                self.masker
                    .mask_text(text, false, &mut Vec::new())
                    .into_owned(),
            ),
            Content::None => None,
        }
    }

    /// Connect, migrate, take the host's lock and ship every epoch.
    pub fn run(&self, target: &Target) -> Result<ShipReport, ShipError> {
        let mut client = target.connect()?;
        let version = schema::migrate(&mut client)?;
        let host = self.host.as_str();
        let db = |e| ShipError::Server {
            host: host.to_string(),
            source: e,
        };
        client
            .execute(
                "SELECT pg_advisory_lock($1, hashtext($2))",
                &[&LOCK_SPACE, &host],
            )
            .map_err(db)?;
        let via_role = self.bind_role(&mut client)?;
        let signer = Signer::new(self.key);
        let public = signer.public_key();
        client
            .execute(
                "INSERT INTO harnery.hosts (host_id, hostname, sign_key) VALUES ($1, $2, $3)
                 ON CONFLICT (host_id) DO UPDATE SET hostname = excluded.hostname, last_ship = now()",
                &[&host, &pg_text(hostname().as_bytes()), &public],
            )
            .map_err(db)?;
        let held: Option<Vec<u8>> = client
            .query_one(
                "SELECT sign_key FROM harnery.hosts WHERE host_id = $1",
                &[&host],
            )
            .map_err(db)?
            .get(0);
        match held {
            Some(k) if k != public => {
                return Err(ShipError::KeyDiffers {
                    host: host.to_string(),
                });
            }
            Some(_) => {}
            None => {
                client
                    .execute(
                        "UPDATE harnery.hosts SET sign_key = $2 WHERE host_id = $1",
                        &[&host, &public],
                    )
                    .map_err(db)?;
            }
        }
        if via_role {
            client.batch_execute(schema::SHIP_TEMP_TABLES).map_err(db)?;
            client.batch_execute(SHIP_TEMP_SEARCH).map_err(db)?;
        }
        let entries = epochs(self.home)?;
        self.refuse_replaced(&mut client, &entries)?;
        let closed = closures(&entries);
        let mut report = ShipReport {
            host_id: host.to_string(),
            server: target.describe(),
            schema_version: version,
            epochs: Vec::new(),
            unreadable: Vec::new(),
        };
        for entry in &entries {
            let ledger = match open_as_written(entry) {
                Ok(l) => l,
                Err(why) => {
                    report.unreadable.push((entry.label().to_string(), why));
                    continue;
                }
            };
            let closed = closed.get(&entry.genesis_id).map(Vec::as_slice);
            let ctx = Run {
                signer: &signer,
                via_role,
            };
            let shipped = self.epoch(&mut client, &ctx, entry, &ledger, closed.unwrap_or(&[]))?;
            report.epochs.push(shipped);
        }
        Ok(report)
    }

    /// A host role ships one host id: bound on its first ship, refused
    /// for any other. Whether this connection is a host role.
    fn bind_role(&self, client: &mut Client) -> Result<bool, ShipError> {
        let host = self.host.as_str();
        let db = |e| ShipError::Server {
            host: host.to_string(),
            source: e,
        };
        let bound = client
            .query_opt(
                "SELECT host_id FROM harnery.host_roles WHERE role_name = session_user",
                &[],
            )
            .map_err(db)?;
        let Some(row) = bound else { return Ok(false) };
        match row.get::<_, Option<String>>(0) {
            Some(h) if h == host => Ok(true),
            Some(h) => Err(ShipError::RoleBound {
                host: host.to_string(),
                bound: h,
            }),
            None => {
                client
                    .execute(
                        "UPDATE harnery.host_roles SET host_id = $1 WHERE role_name = session_user AND host_id IS NULL",
                        &[&host],
                    )
                    .map_err(db)?;
                Ok(true)
            }
        }
    }

    /// Every epoch the server holds for this host must still be here: a
    /// home that lost one was replaced, and shipping it would fork.
    fn refuse_replaced(&self, client: &mut Client, local: &[EpochEntry]) -> Result<(), ShipError> {
        let host = self.host.as_str();
        let rows = client
            .query(
                "SELECT genesis_id, events FROM harnery.epochs WHERE host_id = $1 ORDER BY genesis_id",
                &[&host],
            )
            .map_err(|e| ShipError::Server {
                host: host.to_string(),
                source: e,
            })?;
        for r in rows {
            let genesis: String = r.get(0);
            if !local.iter().any(|e| e.genesis_id == genesis) {
                return Err(ShipError::Replaced {
                    host: host.to_string(),
                    epoch: genesis,
                    rows: r.get(1),
                });
            }
        }
        Ok(())
    }

    fn epoch(
        &self,
        client: &mut Client,
        run: &Run<'_>,
        entry: &EpochEntry,
        ledger: &LedgerReader,
        closed: &[ClosedSession],
    ) -> Result<EpochShipped, ShipError> {
        let key = EpochKey {
            host: self.host.as_str(),
            genesis: &entry.genesis_id,
        };
        let fail = |e: CopyError| ShipError::Copy {
            host: key.host.to_string(),
            epoch: entry.genesis_id.clone(),
            source: e,
        };
        let derived_at = register_epoch(client, self.key, &key, entry, ledger).map_err(fail)?;
        let (after, mut prev_link) = self.resume_point(client, &key, ledger)?;
        let mut shipped = EpochShipped {
            epoch: entry.label().to_string(),
            genesis_id: entry.genesis_id.clone(),
            resumed_after: after,
            rows_sent: 0,
            masked_rows: 0,
            rows_total: after,
            derived: None,
        };
        loop {
            let mut tx = client.transaction().map_err(|e| fail(e.into()))?;
            let (sent, masked, last) = self
                .copy_batch(
                    &mut tx,
                    run,
                    &key,
                    ledger,
                    shipped.rows_total,
                    &mut prev_link,
                )
                .map_err(fail)?;
            if sent == 0 {
                break;
            }
            let sig = run
                .signer
                .sign(&link::head_message(key.host, key.genesis, last, &prev_link));
            tx.execute(
                "UPDATE harnery.epochs SET events = events + $3, head_link = $4, head_sig = $5,
                 content = CASE WHEN $6 = ANY(content) THEN content ELSE content || $6 END
                 WHERE host_id = $1 AND genesis_id = $2",
                &[
                    &key.host,
                    &key.genesis,
                    &(sent as i64),
                    &&prev_link[..],
                    &sig,
                    &self.content.as_str(),
                ],
            )
            .map_err(|e| fail(e.into()))?;
            failpoint::hit("ship-before-commit");
            tx.commit().map_err(|e| fail(e.into()))?;
            failpoint::hit("ship-after-commit");
            failpoint::pause("ship-pause", self.home.root());
            shipped.rows_sent += sent;
            shipped.masked_rows += masked;
            shipped.rows_total = last;
        }
        let local_rows = ledger.rows().last_seq().map_err(|e| fail(e.into()))?;
        if derived_at != local_rows {
            let mut tx = client.transaction().map_err(|e| fail(e.into()))?;
            let shown = |text: &str| self.shown(text);
            let counts = derived::replace(
                &mut tx,
                &key,
                self.key,
                ledger,
                closed,
                run.via_role,
                &shown,
            )
            .map_err(fail)?;
            tx.execute(
                "UPDATE harnery.epochs SET derived_events = $3 WHERE host_id = $1 AND genesis_id = $2",
                &[&key.host, &key.genesis, &local_rows],
            )
            .map_err(|e| fail(e.into()))?;
            failpoint::hit("ship-derived-before-commit");
            tx.commit().map_err(|e| fail(e.into()))?;
            shipped.derived = Some(counts);
        }
        Ok(shipped)
    }

    /// The last row the server holds for the epoch and its link, its
    /// commitment checked against the local ledger's row of that number.
    fn resume_point(
        &self,
        client: &mut Client,
        key: &EpochKey<'_>,
        ledger: &LedgerReader,
    ) -> Result<(i64, [u8; 32]), ShipError> {
        let fail = |e: CopyError| ShipError::Copy {
            host: key.host.to_string(),
            epoch: key.genesis.to_string(),
            source: e,
        };
        let last = client
            .query_opt(
                "SELECT seq, link, commit FROM harnery.ship_head($1, $2)",
                &[&key.host, &key.genesis],
            )
            .map_err(|e| fail(e.into()))?;
        let Some(row) = last else {
            return Ok((0, link::seed(key.host, key.genesis)));
        };
        let (seq, server_link, server_commit): (i64, Vec<u8>, Vec<u8>) =
            (row.get(0), row.get(1), row.get(2));
        let local = ledger.rows().row_hash(seq).map_err(|e| fail(e.into()))?;
        let local_commit = local.map(|h| link::commit(self.key, &h, &server_link));
        match (local_commit, <[u8; 32]>::try_from(server_link.as_slice())) {
            (Some(c), Ok(l)) if c[..] == server_commit[..] => Ok((seq, l)),
            (other, _) => Err(ShipError::Forked {
                host: key.host.to_string(),
                epoch: key.genesis.to_string(),
                seq,
                server_hash: chain::hex(&server_commit),
                local_hash: other.map_or_else(|| "(no such row here)".into(), |h| chain::hex(&h)),
            }),
        }
    }

    /// COPY up to one batch of rows after `after` into the transaction
    /// (through the temporary table for a host role); `prev` is the link
    /// before, and after, the batch.
    fn copy_batch(
        &self,
        tx: &mut Transaction<'_>,
        run: &Run<'_>,
        key: &EpochKey<'_>,
        ledger: &LedgerReader,
        after: i64,
        prev: &mut [u8; 32],
    ) -> Result<(u64, u64, i64), CopyError> {
        let table = match run.via_role {
            true => "pg_temp.ship_events",
            false => "harnery.events",
        };
        let sink = tx.copy_in(&format!(
            "COPY {table} (host_id, genesis_id, seq, event_id, adapter, session_id, event_offset, \
             type, time_unix_ns, content, masked, json, link, commit) FROM STDIN (FORMAT binary)"
        ))?;
        let mut w = BinaryCopyInWriter::new(sink, EVENT_TYPES);
        let (mut masked_rows, mut last) = (0, after);
        let mut search = SearchRows::default();
        let content = self.content.as_str();
        let mut sent = 0;
        let read = ledger
            .rows()
            .for_each_chain_row(after, self.batch_rows, |row| {
                let out = outgoing(self.masker, self.content, &row);
                if self.content != Content::None {
                    search.push(row.seq, &out.json);
                }
                let l = link::link(prev, &out.shipped(&row, content));
                let c = link::commit(self.key, row.hash, &l);
                let values: [&(dyn ToSql + Sync); 14] = [
                    &key.host,
                    &key.genesis,
                    &row.seq,
                    &out.event_id,
                    &out.adapter,
                    &out.session_id,
                    &row.offset,
                    &out.ty,
                    &row.time_unix_ns,
                    &content,
                    &out.masked,
                    &&out.json[..],
                    &&l[..],
                    &&c[..],
                ];
                w.write(&values)?;
                masked_rows += u64::from(!out.masked.is_empty());
                *prev = l;
                last = row.seq;
                if row.seq == after + 1 {
                    failpoint::hit("ship-mid-copy");
                }
                sent += 1;
                match search.full() {
                    true => Err(CopyError::SearchFull),
                    false => Ok(()),
                }
            });
        match read {
            Ok(_) | Err(CopyError::SearchFull) => {}
            Err(e) => return Err(e),
        }
        w.finish()?;
        if run.via_role && sent > 0 {
            tx.execute(
                "INSERT INTO harnery.events SELECT * FROM pg_temp.ship_events",
                &[],
            )?;
            tx.execute("TRUNCATE pg_temp.ship_events", &[])?;
        }
        // After the events: each search row names its event row.
        search.copy(tx, key, run.via_role)?;
        Ok((sent, masked_rows, last))
    }
}

/// What every epoch of one run shares.
struct Run<'a> {
    signer: &'a Signer,
    /// A host role: rows go through temporary tables.
    via_role: bool,
}

const EVENT_TYPES: &[Type] = &[
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::TEXT_ARRAY,
    Type::BYTEA,
    Type::BYTEA,
    Type::BYTEA,
];

/// Record the epoch on the server (once), refusing one whose genesis the
/// server holds differently; the row count the derived rows are at.
fn register_epoch(
    client: &mut Client,
    host_key: &HostKey,
    key: &EpochKey<'_>,
    entry: &EpochEntry,
    ledger: &LedgerReader,
) -> Result<i64, CopyError> {
    let path = entry.dir.join(GENESIS_FILE);
    let original = std::fs::read(&path).map_err(|source| CopyError::Genesis { path, source })?;
    let bytes = shipped_genesis(host_key, &original);
    let commit = host_key.hash(Purpose::Genesis, &[b"manifest", &original]);
    let g = ledger.genesis();
    let generation = g.contract_generation as i32;
    let anchor = g.anchor.as_ref().map(|a| a.genesis_id.as_str());
    client.execute(
        "INSERT INTO harnery.epochs (host_id, genesis_id, contract_generation, schema_digest, anchor_genesis_id, genesis, genesis_commit, live)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (host_id, genesis_id) DO NOTHING",
        &[&key.host, &key.genesis, &generation, &g.schema_digest, &anchor, &bytes, &&commit[..], &entry.live],
    )?;
    let row = client.query_one(
        "SELECT genesis_commit, live, derived_events FROM harnery.epochs WHERE host_id = $1 AND genesis_id = $2",
        &[&key.host, &key.genesis],
    )?;
    let (held, live): (Vec<u8>, bool) = (row.get(0), row.get(1));
    if held != commit {
        return Err(CopyError::GenesisDiffers);
    }
    if live != entry.live {
        client.execute(
            "UPDATE harnery.epochs SET live = $3 WHERE host_id = $1 AND genesis_id = $2",
            &[&key.host, &key.genesis, &entry.live],
        )?;
    }
    Ok(row.get(2))
}

/// `harnery ship --dry-run`: what would be masked, row by row, without a
/// server. Calls `f` for every masked row with (epoch label, seq, event id,
/// patterns, masked text).
pub fn dry_run(
    home: &Home,
    masker: &Masker,
    mut f: impl FnMut(&str, &ChainRow<'_>, &[String], &[u8]),
) -> Result<Vec<(String, u64)>, ShipError> {
    let mut totals = Vec::new();
    for entry in epochs(home)? {
        let Ok(ledger) = open_as_written(&entry) else {
            continue;
        };
        let mut after = 0;
        let mut rows = 0;
        loop {
            let n = ledger
                .rows()
                .for_each_chain_row(after, DEFAULT_BATCH_ROWS, |row| {
                    after = row.seq;
                    if let Some(m) = masker.mask(row.json).filter(|m| !m.patterns.is_empty()) {
                        f(entry.label(), &row, &m.patterns, &m.text);
                    }
                    Ok::<(), crate::ledger::LedgerError>(())
                })?;
            rows += n;
            if n == 0 {
                break;
            }
        }
        totals.push((entry.label().to_string(), rows));
    }
    Ok(totals)
}

/// The server's rows for this host by epoch, for `ship --status`.
pub(crate) fn server_rows(
    client: &mut Client,
    host: &HostId,
) -> Result<Vec<(String, i64, bool)>, postgres::Error> {
    let rows = client.query(
        "SELECT genesis_id, events, live FROM harnery.epochs WHERE host_id = $1 ORDER BY genesis_id",
        &[&host.as_str()],
    )?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect())
}
