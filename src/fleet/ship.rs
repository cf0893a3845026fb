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

use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use postgres::{Client, Transaction};
use serde::Serialize;

use super::derived::{self, DerivedCounts, EpochKey};
use super::host::{HostId, hostname};
use super::mask::Masker;
use super::schema::{self, LOCK_SPACE};
use super::target::Target;
use super::{CopyError, ShipError};
use crate::epoch::{EpochEntry, closures, epochs};
use crate::finalize::failpoint;
use crate::home::Home;
use crate::ledger::{ChainRow, ClosedSession, GENESIS_FILE, Ledger, chain};
use crate::read::epochs::open_as_written;

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

/// The parts of a run.
pub struct Shipper<'a> {
    pub home: &'a Home,
    pub host: HostId,
    pub masker: &'a Masker,
    pub batch_rows: u64,
}

impl Shipper<'_> {
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
        client
            .execute(
                "INSERT INTO harnery.hosts (host_id, hostname) VALUES ($1, $2)
                 ON CONFLICT (host_id) DO UPDATE SET hostname = excluded.hostname, last_ship = now()",
                &[&host, &hostname()],
            )
            .map_err(db)?;
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
            let shipped = self.epoch(&mut client, entry, &ledger, closed.unwrap_or(&[]))?;
            report.epochs.push(shipped);
        }
        Ok(report)
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
        entry: &EpochEntry,
        ledger: &Ledger,
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
        let derived_at = register_epoch(client, &key, entry, ledger).map_err(fail)?;
        let after = self.resume_point(client, &key, ledger)?;
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
                .copy_batch(&mut tx, &key, ledger, shipped.rows_total)
                .map_err(fail)?;
            if sent == 0 {
                break;
            }
            tx.execute(
                "UPDATE harnery.epochs SET events = events + $3 WHERE host_id = $1 AND genesis_id = $2",
                &[&key.host, &key.genesis, &(sent as i64)],
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
        let local_rows = ledger.last_seq().map_err(|e| fail(e.into()))?;
        if derived_at != local_rows {
            let mut tx = client.transaction().map_err(|e| fail(e.into()))?;
            let counts = derived::replace(&mut tx, &key, ledger, closed).map_err(fail)?;
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

    /// The last row the server holds for the epoch, checked against the
    /// local ledger's row of that number.
    fn resume_point(
        &self,
        client: &mut Client,
        key: &EpochKey<'_>,
        ledger: &Ledger,
    ) -> Result<i64, ShipError> {
        let last = client
            .query_opt(
                "SELECT seq, hash FROM harnery.events WHERE host_id = $1 AND genesis_id = $2 ORDER BY seq DESC LIMIT 1",
                &[&key.host, &key.genesis],
            )
            .map_err(|e| ShipError::Copy {
                host: key.host.to_string(),
                epoch: key.genesis.to_string(),
                source: e.into(),
            })?;
        let Some(row) = last else { return Ok(0) };
        let (seq, server_hash): (i64, Vec<u8>) = (row.get(0), row.get(1));
        let local = ledger.row_hash(seq).map_err(|e| ShipError::Copy {
            host: key.host.to_string(),
            epoch: key.genesis.to_string(),
            source: e.into(),
        })?;
        match local {
            Some(h) if h == server_hash => Ok(seq),
            other => Err(ShipError::Forked {
                host: key.host.to_string(),
                epoch: key.genesis.to_string(),
                seq,
                server_hash: chain::hex(&server_hash),
                local_hash: other.map_or_else(|| "(no such row here)".into(), |h| chain::hex(&h)),
            }),
        }
    }

    /// COPY up to one batch of rows after `after` into the transaction.
    fn copy_batch(
        &self,
        tx: &mut Transaction<'_>,
        key: &EpochKey<'_>,
        ledger: &Ledger,
        after: i64,
    ) -> Result<(u64, u64, i64), CopyError> {
        let sink = tx.copy_in(
            "COPY harnery.events (host_id, genesis_id, seq, event_id, adapter, session_id, event_offset, \
             type, time_unix_ns, json, prev_hash, hash, masked, shipped_digest) FROM STDIN (FORMAT binary)",
        )?;
        let mut w = BinaryCopyInWriter::new(sink, EVENT_TYPES);
        let (mut masked_rows, mut last) = (0, after);
        let sent = ledger.for_each_chain_row(after, self.batch_rows, |row| {
            masked_rows += u64::from(write_event(&mut w, key, self.masker, &row)?);
            last = row.seq;
            if row.seq == after + 1 {
                failpoint::hit("ship-mid-copy");
            }
            Ok::<(), CopyError>(())
        })?;
        w.finish()?;
        Ok((sent, masked_rows, last))
    }
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
    Type::BYTEA,
    Type::BYTEA,
    Type::BYTEA,
    Type::TEXT_ARRAY,
    Type::BYTEA,
];

/// One event row, masked where a pattern matches; whether it was.
fn write_event(
    w: &mut BinaryCopyInWriter<'_>,
    key: &EpochKey<'_>,
    masker: &Masker,
    row: &ChainRow<'_>,
) -> Result<bool, CopyError> {
    let masked = masker.mask(row.json);
    let (json, patterns, digest): (&[u8], Option<&[String]>, Option<[u8; 32]>) = match &masked {
        Some(m) => (
            &m.text,
            Some(&m.patterns),
            Some(*blake3::hash(&m.text).as_bytes()),
        ),
        None => (row.json, None, None),
    };
    let digest = digest.as_ref().map(|d| &d[..]);
    let values: [&(dyn ToSql + Sync); 14] = [
        &key.host,
        &key.genesis,
        &row.seq,
        &row.id,
        &row.adapter,
        &row.session_id,
        &row.offset,
        &row.ty,
        &row.time_unix_ns,
        &json,
        &row.prev_hash,
        &row.hash,
        &patterns,
        &digest,
    ];
    w.write(&values)?;
    Ok(masked.is_some())
}

/// Record the epoch on the server (once), refusing one whose genesis the
/// server holds differently; the row count the derived rows are at.
fn register_epoch(
    client: &mut Client,
    key: &EpochKey<'_>,
    entry: &EpochEntry,
    ledger: &Ledger,
) -> Result<i64, CopyError> {
    let path = entry.dir.join(GENESIS_FILE);
    let bytes = std::fs::read(&path).map_err(|source| CopyError::Genesis { path, source })?;
    let g = ledger.genesis();
    let generation = g.contract_generation as i32;
    let anchor = g.anchor.as_ref().map(|a| a.genesis_id.as_str());
    client.execute(
        "INSERT INTO harnery.epochs (host_id, genesis_id, contract_generation, schema_digest, anchor_genesis_id, genesis, live)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (host_id, genesis_id) DO NOTHING",
        &[&key.host, &key.genesis, &generation, &g.schema_digest, &anchor, &bytes, &entry.live],
    )?;
    let row = client.query_one(
        "SELECT genesis, live, derived_events FROM harnery.epochs WHERE host_id = $1 AND genesis_id = $2",
        &[&key.host, &key.genesis],
    )?;
    let (held, live): (Vec<u8>, bool) = (row.get(0), row.get(1));
    if held != bytes {
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
            let n = ledger.for_each_chain_row(after, DEFAULT_BATCH_ROWS, |row| {
                after = row.seq;
                if let Some(m) = masker.mask(row.json) {
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
pub fn server_rows(
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
