//! `harnery fleet verify`: every host's chains recomputed on the server
//! from the stored bytes, row by row, and every anchor checked.
//!
//! Per epoch: the genesis manifest the host sent gives the seed; rows must
//! run 1, 2, 3, ... with each `prev_hash` the hash of the row before; an
//! unmasked row's hash must be the link over its stored bytes; a masked
//! row carries the host's hash of the original (its bytes never left the
//! host), and its masked bytes must match the digest it was shipped with.
//! An epoch that anchors to another must find that epoch on the server
//! with the head and row count the anchor names. Rows are streamed, so
//! memory stays flat whatever the server holds.

use postgres::Client;
use postgres::fallible_iterator::FallibleIterator;
use serde::Serialize;

use super::FleetError;
use super::read::{ReadFilter, prepare};
use crate::ledger::{GenesisManifest, chain};

/// One place a host's chain does not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FleetBreak {
    pub host_id: String,
    pub genesis_id: String,
    /// The row (0 for the epoch as a whole: its manifest, count or anchor).
    pub seq: i64,
    pub detail: String,
}

impl std::fmt::Display for FleetBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "host {} epoch {} row {}: {}",
            self.host_id, self.genesis_id, self.seq, self.detail
        )
    }
}

/// One epoch as verified.
#[derive(Debug, Clone, Serialize)]
pub struct EpochVerified {
    pub host_id: String,
    pub genesis_id: String,
    pub rows: i64,
    pub masked_rows: i64,
    pub chain_head: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct FleetVerified {
    pub epochs: Vec<EpochVerified>,
    pub breaks: Vec<FleetBreak>,
}

struct ServerEpoch {
    host: String,
    genesis: String,
    manifest: Vec<u8>,
    events: i64,
}

/// Verify every epoch of every host (or of one).
pub fn verify(client: &mut Client, host: Option<&str>) -> Result<FleetVerified, FleetError> {
    let filter = ReadFilter {
        host: host.map(str::to_string),
        since_unix_ns: None,
    };
    prepare(client, &filter)?;
    let epochs: Vec<ServerEpoch> = client
        .query(
            "SELECT host_id, genesis_id, genesis, events FROM harnery.epochs \
             WHERE $1::text IS NULL OR host_id = $1 ORDER BY host_id, genesis_id",
            &[&filter.host],
        )?
        .iter()
        .map(|r| ServerEpoch {
            host: r.get(0),
            genesis: r.get(1),
            manifest: r.get(2),
            events: r.get(3),
        })
        .collect();
    let mut out = FleetVerified {
        epochs: Vec::new(),
        breaks: Vec::new(),
    };
    let mut heads = Vec::new();
    for e in &epochs {
        let (verified, manifest) = verify_epoch(client, e, &mut out.breaks)?;
        heads.push((e, manifest, verified.chain_head.clone(), verified.rows));
        out.epochs.push(verified);
    }
    for (e, manifest, _, _) in &heads {
        let Some(anchor) = manifest.as_ref().and_then(|m| m.anchor.as_ref()) else {
            continue;
        };
        let prev = heads
            .iter()
            .find(|(p, _, _, _)| p.host == e.host && p.genesis == anchor.genesis_id);
        let problem = match prev {
            None => Some(format!(
                "anchors to epoch {}, which the server does not hold for this host",
                anchor.genesis_id
            )),
            Some((_, _, head, rows)) if *head != anchor.terminal_segment_digest => Some(format!(
                "anchors to epoch {} at head {}, but its chain on the server ends at {head} ({rows} rows)",
                anchor.genesis_id, anchor.terminal_segment_digest
            )),
            Some((_, _, _, rows)) if *rows as u64 != anchor.events => Some(format!(
                "anchors to epoch {} with {} rows, but the server holds {rows}",
                anchor.genesis_id, anchor.events
            )),
            Some(_) => None,
        };
        if let Some(detail) = problem {
            out.breaks.push(epoch_break(e, 0, detail));
        }
    }
    Ok(out)
}

fn epoch_break(e: &ServerEpoch, seq: i64, detail: String) -> FleetBreak {
    FleetBreak {
        host_id: e.host.clone(),
        genesis_id: e.genesis.clone(),
        seq,
        detail,
    }
}

fn verify_epoch(
    client: &mut Client,
    e: &ServerEpoch,
    breaks: &mut Vec<FleetBreak>,
) -> Result<(EpochVerified, Option<GenesisManifest>), FleetError> {
    let manifest = match serde_json::from_slice::<GenesisManifest>(&e.manifest) {
        Ok(m) if m.genesis_id == e.genesis => Some(m),
        Ok(m) => {
            breaks.push(epoch_break(
                e,
                0,
                format!("its genesis manifest names epoch {}", m.genesis_id),
            ));
            None
        }
        Err(err) => {
            breaks.push(epoch_break(
                e,
                0,
                format!("its genesis manifest does not parse: {err}"),
            ));
            None
        }
    };
    let seed = manifest.as_ref().map_or([0u8; 32], |m| m.chain_seed());
    let mut rows = client.query_raw(
        "SELECT seq, json, prev_hash, hash, shipped_digest FROM harnery.events \
         WHERE host_id = $1 AND genesis_id = $2 ORDER BY seq",
        [&e.host, &e.genesis],
    )?;
    let mut prev: Vec<u8> = seed.to_vec();
    let (mut expected, mut masked) = (1i64, 0i64);
    while let Some(r) = rows.next()? {
        let seq: i64 = r.get(0);
        let json: &[u8] = r.get(1);
        let prev_hash: &[u8] = r.get(2);
        let hash: &[u8] = r.get(3);
        let digest: Option<&[u8]> = r.get(4);
        if seq != expected {
            breaks.push(epoch_break(
                e,
                seq,
                format!("rows {expected}..{} are missing", seq - 1),
            ));
        }
        expected = seq + 1;
        if prev_hash != prev.as_slice() {
            breaks.push(epoch_break(
                e,
                seq,
                "its prev_hash is not the hash of the row before (or the epoch's seed)".into(),
            ));
        }
        match digest {
            Some(d) => {
                masked += 1;
                if blake3::hash(json).as_bytes() != d {
                    breaks.push(epoch_break(
                        e,
                        seq,
                        "its masked bytes differ from the digest they were shipped with".into(),
                    ));
                }
            }
            None => {
                let link: [u8; 32] = prev_hash.try_into().unwrap_or([0u8; 32]);
                if chain::link(&link, json) != hash {
                    breaks.push(epoch_break(
                        e,
                        seq,
                        "its hash is not the link over its stored bytes".into(),
                    ));
                }
            }
        }
        prev = hash.to_vec();
    }
    let held = expected - 1;
    if held != e.events {
        breaks.push(epoch_break(
            e,
            0,
            format!(
                "the epoch records {} rows shipped, the server holds {held}",
                e.events
            ),
        ));
    }
    let verified = EpochVerified {
        host_id: e.host.clone(),
        genesis_id: e.genesis.clone(),
        rows: held,
        masked_rows: masked,
        chain_head: chain::hex(&prev),
    };
    Ok((verified, manifest))
}
