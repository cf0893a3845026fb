//! `harnery fleet verify`: every host's shipped rows rechecked on the
//! server, and (`--local`, on a host) compared with that host's ledger.
//!
//! From the server alone, per epoch: rows run 1, 2, 3, ...; each row's
//! link is the chain over its columns from the link before (the first
//! from the host's and epoch's seed), so a row changed, inserted, deleted
//! or copied from another host breaks it; the epoch's head (its last seq
//! and link) is signed by the key the host registered on its first ship,
//! so a chain recomputed after a change still fails there; the row count
//! matches; an epoch that anchors to another finds it with the row count
//! the anchor names; each row's search text (what `fleet search` shows) is
//! the text local search's rules extract from the row as shipped, and no
//! search text stands without its row. None of this needs the host's
//! secret, and none of it could test a guess of masked text.
//!
//! With `--local`, on the host: each of its rows on the server must carry
//! the host's keyed commitment to its own ledger row (so the server row is
//! exactly what this host shipped for that row), the server must hold no
//! row the ledger lacks and lack none it shipped, each epoch's genesis
//! commitment must match the manifest here; and each row is shipped again
//! in memory, masked the same way, and compared column by column. Rows are
//! streamed, so memory stays flat whatever the server holds.

use postgres::Client;
use postgres::fallible_iterator::FallibleIterator;
use serde::Serialize;

use super::FleetError;
use super::key::{HostKey, Purpose};
use super::link::{self, ShippedRow};
use super::mask::Masker;
use super::read::{ReadFilter, prepare};
use super::search_ship::search_doc;
use super::ship::{Content, outgoing};
use crate::epoch::epochs;
use crate::home::Home;
use crate::ledger::{GENESIS_FILE, GenesisManifest, chain};
use crate::report::epochs::open_as_written;

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
    /// What was checked, in words.
    pub checks: Vec<String>,
    pub epochs: Vec<EpochVerified>,
    pub breaks: Vec<FleetBreak>,
    /// Rows that are what this host shipped but not what it would ship
    /// today (its mask rules changed since): not breaks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<FleetBreak>,
}

/// What the server-side checks are, as `verify` reports them.
pub(crate) const SERVER_CHECKS: &[&str] = &[
    "rows numbered 1..n with no gap",
    "each row's link recomputed over its columns from the host's and epoch's seed",
    "each epoch's head signed by the host's registered key",
    "row counts",
    "anchors to the previous epoch",
    "each row's search text is the text of the row as shipped, and no other",
];

/// What `--local` adds.
pub(crate) const LOCAL_CHECKS: &[&str] = &[
    "each server row's commitment to this host's ledger row (keyed, checked here)",
    "no server row this ledger lacks, none missing that it shipped",
    "each epoch's genesis manifest",
    "each row shipped again here, masked the same way, compared column by column",
];

struct ServerEpoch {
    host: String,
    genesis: String,
    manifest: Vec<u8>,
    events: i64,
    head_link: Option<Vec<u8>>,
    head_sig: Option<Vec<u8>>,
    sign_key: Option<Vec<u8>>,
    genesis_commit: Vec<u8>,
}

/// Verify every epoch of every host (or of one).
pub fn verify(client: &mut Client, host: Option<&str>) -> Result<FleetVerified, FleetError> {
    let filter = ReadFilter {
        host: host.map(str::to_string),
        since_unix_ns: None,
    };
    prepare(client, &filter)?;
    let epochs = server_epochs(client, filter.host.as_deref())?;
    let mut out = FleetVerified {
        checks: SERVER_CHECKS.iter().map(|c| c.to_string()).collect(),
        epochs: Vec::new(),
        breaks: Vec::new(),
        notes: Vec::new(),
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

fn server_epochs(client: &mut Client, host: Option<&str>) -> Result<Vec<ServerEpoch>, FleetError> {
    Ok(client
        .query(
            "SELECT e.host_id, e.genesis_id, e.genesis, e.events, e.head_link, e.head_sig, h.sign_key, e.genesis_commit \
             FROM harnery.epochs e JOIN harnery.hosts h USING (host_id) \
             WHERE $1::text IS NULL OR e.host_id = $1 ORDER BY e.host_id, e.genesis_id",
            &[&host],
        )?
        .iter()
        .map(|r| ServerEpoch {
            host: r.get(0),
            genesis: r.get(1),
            manifest: r.get(2),
            events: r.get(3),
            head_link: r.get(4),
            head_sig: r.get(5),
            sign_key: r.get(6),
            genesis_commit: r.get(7),
        })
        .collect())
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
    // Each row with the search text the server holds for it (if any).
    let mut rows = client.query_raw(
        "SELECT e.seq, e.event_id, e.adapter, e.session_id, e.event_offset, e.type, e.time_unix_ns, e.content, \
         e.masked, e.json, e.link, s.seq IS NOT NULL, s.kind, s.tool, s.turn_id, s.text \
         FROM harnery.events e LEFT JOIN harnery.search_text s \
           ON s.host_id = e.host_id AND s.genesis_id = e.genesis_id AND s.seq = e.seq \
         WHERE e.host_id = $1 AND e.genesis_id = $2 ORDER BY e.seq",
        [&e.host, &e.genesis],
    )?;
    let mut prev: Vec<u8> = link::seed(&e.host, &e.genesis).to_vec();
    let (mut expected, mut masked) = (1i64, 0i64);
    while let Some(r) = rows.next()? {
        let seq: i64 = r.get(0);
        let patterns: Vec<String> = r.get(8);
        let stored: &[u8] = r.get(10);
        let row = shipped_row(&r, &patterns);
        if seq != expected {
            breaks.push(epoch_break(
                e,
                seq,
                format!("rows {expected}..{} are missing", seq - 1),
            ));
        }
        if link::link(&prev, &row) != stored {
            let detail = match seq {
                1 => "its link is not the chain over its columns from this host's and epoch's seed (changed, inserted, or copied from another host)".to_string(),
                _ => format!(
                    "its link is not the chain over its columns from row {}'s link (this row or row {} was changed, inserted, or copied from another host)",
                    expected - 1,
                    expected - 1
                ),
            };
            breaks.push(epoch_break(e, seq, detail));
        }
        if let Some(detail) = search_text_differs(&r) {
            breaks.push(epoch_break(e, seq, detail));
        }
        masked += i64::from(!patterns.is_empty());
        expected = seq + 1;
        prev = stored.to_vec();
    }
    drop(rows);
    for r in client.query(
        "SELECT s.seq FROM harnery.search_text s WHERE s.host_id = $1 AND s.genesis_id = $2 \
         AND NOT EXISTS (SELECT 1 FROM harnery.events e \
             WHERE e.host_id = s.host_id AND e.genesis_id = s.genesis_id AND e.seq = s.seq) ORDER BY s.seq",
        &[&e.host, &e.genesis],
    )? {
        breaks.push(epoch_break(
            e,
            r.get(0),
            "the server holds search text for this row, but no such row".into(),
        ));
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
    let head_ok = match (&e.head_link, &e.head_sig, &e.sign_key) {
        (Some(l), Some(sig), Some(k)) => {
            let msg = link::head_message(&e.host, &e.genesis, e.events, l);
            if !link::signature_holds(k, &msg, sig) {
                Some(format!(
                    "its signed head (row {}) does not verify under the key the host registered",
                    e.events
                ))
            } else if held > 0 && l.as_slice() != prev.as_slice() {
                Some(format!(
                    "its signed head is row {} at link {}, but the rows end at row {held} with link {}",
                    e.events,
                    chain::hex(l),
                    chain::hex(&prev)
                ))
            } else {
                None
            }
        }
        _ if held == 0 && e.events == 0 => None,
        (_, _, None) => Some("the host has no signing key registered".into()),
        _ => Some("it has rows but no signed head".into()),
    };
    if let Some(detail) = head_ok {
        breaks.push(epoch_break(e, e.events, detail));
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

/// Whether the search text the server holds for a row (columns 11..=15
/// of the verify query) is the text `ship` extracts from the row as it
/// was shipped: `fleet search` shows it, so it is checked like the row.
fn search_text_differs(r: &postgres::Row) -> Option<String> {
    let want = match r.get::<_, &str>(7) {
        "none" => None,
        _ => search_doc(r.get(9)),
    };
    type Held<'a> = (&'a str, Option<&'a str>, Option<&'a str>, &'a str);
    let held: Option<Held<'_>> = r
        .get::<_, bool>(11)
        .then(|| (r.get(12), r.get(13), r.get(14), r.get(15)));
    let detail = match (held, want) {
        (None, None) => return None,
        (Some(h), Some(w))
            if h == (
                w.kind,
                w.tool.as_deref(),
                w.turn_id.as_deref(),
                w.text.as_str(),
            ) =>
        {
            return None;
        }
        (Some(_), None) => {
            "the server holds search text for this row, but the row as shipped has none"
        }
        (None, Some(_)) => "the row's search text is missing on the server",
        (Some(_), Some(_)) => {
            "its search text is not the text of the row as shipped (`fleet search` would show a forged snippet)"
        }
    };
    Some(detail.into())
}

/// `fleet verify --local`: this host's rows on the server against its
/// ledger, for every epoch of the home and every epoch the server holds
/// for the host.
pub(crate) fn verify_local(
    client: &mut Client,
    home: &Home,
    host: &str,
    key: &HostKey,
    masker: &Masker,
    out: &mut FleetVerified,
) -> Result<(), FleetError> {
    out.checks
        .extend(LOCAL_CHECKS.iter().map(|c| format!("{c} (host {host})")));
    let server = server_epochs(client, Some(host))?;
    let local = epochs(home)?;
    for e in &server {
        if !local.iter().any(|l| l.genesis_id == e.genesis) {
            out.breaks.push(epoch_break(
                e,
                0,
                "the server holds this epoch for this host, but this home has no such epoch".into(),
            ));
        }
    }
    for entry in &local {
        let Some(e) = server.iter().find(|s| s.genesis == entry.genesis_id) else {
            continue;
        };
        let ledger = match open_as_written(entry) {
            Ok(l) => l,
            Err(why) => {
                out.notes
                    .push(epoch_break(e, 0, format!("not compared: {why}")));
                continue;
            }
        };
        let manifest = std::fs::read(entry.dir.join(GENESIS_FILE)).unwrap_or_default();
        if key.hash(Purpose::Genesis, &[b"manifest", &manifest])[..] != e.genesis_commit[..] {
            out.breaks.push(epoch_break(
                e,
                0,
                "its genesis manifest on the server is not this home's".into(),
            ));
        }
        compare_rows(client, e, &ledger, key, masker, out)?;
    }
    Ok(())
}

/// A page of the comparison at a time: the server's rows after `after`
/// and the ledger's, side by side by seq.
fn compare_rows(
    client: &mut Client,
    e: &ServerEpoch,
    ledger: &crate::ledger::LedgerReader,
    key: &HostKey,
    masker: &Masker,
    out: &mut FleetVerified,
) -> Result<(), FleetError> {
    const PAGE: i64 = 5_000;
    let local_last = ledger.rows().last_seq()?;
    let mut after = 0i64;
    let mut prev_link: Vec<u8> = link::seed(&e.host, &e.genesis).to_vec();
    loop {
        let page = client.query(
            "SELECT seq, event_id, adapter, session_id, event_offset, type, time_unix_ns, content, masked, json, link, commit \
             FROM harnery.events WHERE host_id = $1 AND genesis_id = $2 AND seq > $3 ORDER BY seq LIMIT $4",
            &[&e.host, &e.genesis, &after, &PAGE],
        )?;
        let Some(last) = page.last().map(|r| r.get::<_, i64>(0)) else {
            break;
        };
        // The ledger's rows over the same range, shipped again here.
        let mut mine: std::collections::BTreeMap<i64, (Vec<u8>, Local)> = Default::default();
        ledger
            .rows()
            .for_each_chain_row(after, (last - after) as u64, |row| {
                let mut per_content = Vec::new();
                for content in [Content::Full, Content::Masked, Content::None] {
                    let o = outgoing(masker, content, &row);
                    per_content.push(Reshipped {
                        content: content.as_str(),
                        event_id: o.event_id.into_owned(),
                        adapter: o.adapter.into_owned(),
                        session_id: o.session_id.into_owned(),
                        ty: o.ty.into_owned(),
                        json: o.json.into_owned(),
                        masked: o.masked,
                    });
                }
                mine.insert(
                    row.seq,
                    (
                        row.hash.to_vec(),
                        Local {
                            offset: row.offset,
                            time: row.time_unix_ns,
                            per_content,
                        },
                    ),
                );
                Ok::<(), crate::ledger::LedgerError>(())
            })?;
        let mut expected = after + 1;
        for r in &page {
            let seq: i64 = r.get(0);
            for missing in expected..seq {
                if missing <= local_last {
                    out.breaks.push(epoch_break(
                        e,
                        missing,
                        "this host shipped this row, but the server no longer holds it (deleted)"
                            .into(),
                    ));
                }
            }
            expected = seq + 1;
            let Some((hash, local)) = mine.get(&seq) else {
                out.breaks.push(epoch_break(
                    e,
                    seq,
                    "the server holds this row, but this host's ledger has no such row (inserted)"
                        .into(),
                ));
                continue;
            };
            let stored_link: &[u8] = r.get(10);
            let stored_commit: &[u8] = r.get(11);
            let patterns: Vec<String> = r.get(8);
            let columns = shipped_row(r, &patterns);
            let follows = link::link(&prev_link, &columns)[..] == *stored_link;
            prev_link = stored_link.to_vec();
            if !follows {
                out.breaks.push(epoch_break(
                    e,
                    seq,
                    "the server's row is not what this host shipped (its columns or the row before it changed)".into(),
                ));
                continue;
            }
            if link::commit(key, hash, stored_link)[..] != *stored_commit {
                out.breaks.push(epoch_break(
                    e,
                    seq,
                    "the server's row is not what this host shipped for its ledger row (changed, inserted or copied; its commitment does not match)".into(),
                ));
                continue;
            }
            let content: &str = r.get(7);
            let same = local
                .per_content
                .iter()
                .find(|c| c.content == content)
                .is_some_and(|c| {
                    c.event_id == r.get::<_, &str>(1)
                        && c.adapter == r.get::<_, &str>(2)
                        && c.session_id == r.get::<_, &str>(3)
                        && local.offset == r.get::<_, i64>(4)
                        && c.ty == r.get::<_, &str>(5)
                        && local.time == r.get::<_, i64>(6)
                        && c.masked == r.get::<_, Vec<String>>(8)
                        && c.json == r.get::<_, &[u8]>(9)
                });
            if !same {
                out.notes.push(epoch_break(
                    e,
                    seq,
                    format!(
                        "shipped by this host ({content}), but this build would ship it differently today (the mask rules changed?)"
                    ),
                ));
            }
        }
        after = last;
    }
    let shipped = e.events.max(after);
    for missing in (after + 1)..=shipped.min(local_last) {
        out.breaks.push(epoch_break(
            e,
            missing,
            "this host shipped this row, but the server no longer holds it (deleted)".into(),
        ));
    }
    Ok(())
}

struct Local {
    offset: i64,
    time: i64,
    /// The row as each content mode ships it.
    per_content: Vec<Reshipped>,
}

struct Reshipped {
    content: &'static str,
    event_id: String,
    adapter: String,
    session_id: String,
    ty: String,
    json: Vec<u8>,
    masked: Vec<String>,
}

/// A stored row's columns as the link covers them, read from a query that
/// selects seq, event id, adapter, session, offset, type, time, content,
/// masked patterns and JSON as its first ten columns, in that order.
fn shipped_row<'a>(r: &'a postgres::Row, masked: &'a [String]) -> ShippedRow<'a> {
    ShippedRow {
        seq: r.get(0),
        event_id: r.get(1),
        adapter: r.get(2),
        session_id: r.get(3),
        offset: r.get(4),
        ty: r.get(5),
        time_unix_ns: r.get(6),
        content: r.get(7),
        masked,
        json: r.get(9),
    }
}
