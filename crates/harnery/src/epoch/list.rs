//! Every epoch a home holds, in chain order: the archived epochs below
//! `ledgers/v2-candidates/`, oldest first along their anchors, then the live
//! epoch. The read side selects from this list (`--epoch live|all|<id>`)
//! and opens each epoch read-only; an archive that cannot be read is still
//! listed, with the reason, so one damaged archive never hides the others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{EpochError, io};
use crate::contract::{Generation, current_generation, generation_by_digest};
use crate::home::Home;
use crate::ledger::{
    CANDIDATES_DIR, ClosedSession, FENCE_FILE, GENESIS_FILE, GenesisManifest, LedgerError,
    LedgerReader, binary_digest,
};

/// One epoch of the home.
#[derive(Debug, Clone)]
pub struct EpochEntry {
    /// The genesis id, or the directory name when the genesis is unreadable.
    pub genesis_id: String,
    pub dir: PathBuf,
    pub live: bool,
    /// The manifest, or why it could not be read.
    pub genesis: Result<GenesisManifest, String>,
}

impl EpochEntry {
    /// `live`, or the genesis id of an archive.
    pub(crate) fn label(&self) -> &str {
        if self.live { "live" } else { &self.genesis_id }
    }

    /// Open read-only. The live epoch must speak this build's digest (and
    /// is read as it is, never migrated);
    /// an archive is read under the contract generation it was written in,
    /// which must be one this build knows.
    pub(crate) fn open(&self, home: &Home) -> Result<LedgerReader, LedgerError> {
        if self.live {
            return LedgerReader::open(home);
        }
        let genesis = self
            .genesis
            .as_ref()
            .map_err(|detail| LedgerError::Corrupt {
                path: self.dir.join(GENESIS_FILE),
                detail: detail.clone(),
            })?;
        let refused = self.newer_generation().or_else(|| {
            self.generation().is_none().then(|| {
                format!(
                    "written under schema digest {} (contract generation {}), which this build does not know; `harnery epoch verify` still checks its files and chain",
                    genesis.schema_digest, genesis.contract_generation
                )
            })
        });
        if let Some(detail) = refused {
            return Err(LedgerError::Corrupt {
                path: self.dir.join(GENESIS_FILE),
                detail,
            });
        }
        LedgerReader::open_dir(&self.dir, None)
    }

    /// Why this build cannot read the epoch at all, when a later contract
    /// generation than this build's wrote it.
    pub(crate) fn newer_generation(&self) -> Option<String> {
        let written = self.genesis.as_ref().ok()?.contract_generation;
        let mine = current_generation().number;
        (written > mine).then(|| {
            format!(
                "written by a newer contract generation ({written}; this build reads up to {mine}); not readable by this build"
            )
        })
    }

    /// The contract generation this epoch was written in, when this build
    /// reads it (looked up by digest, never by the number alone).
    pub(crate) fn generation(&self) -> Option<&'static Generation> {
        let digest = &self.genesis.as_ref().ok()?.schema_digest;
        if *digest == binary_digest() {
            // A test build's perturbed digest is its own generation.
            return Some(current_generation());
        }
        generation_by_digest(digest)
    }

    /// The archive this epoch anchors to, if any.
    pub(crate) fn anchor_id(&self) -> Option<&str> {
        let g = self.genesis.as_ref().ok()?;
        g.anchor.as_ref().map(|a| a.genesis_id.as_str())
    }
}

/// Which epochs a read command looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EpochSelector {
    Live,
    All,
    /// A genesis id, or a unique prefix of one.
    Id(String),
}

impl std::str::FromStr for EpochSelector {
    type Err = String;

    fn from_str(s: &str) -> Result<EpochSelector, String> {
        match s {
            "" => Err("--epoch needs `live`, `all` or a genesis id".into()),
            "live" => Ok(EpochSelector::Live),
            "all" => Ok(EpochSelector::All),
            id => Ok(EpochSelector::Id(id.to_string())),
        }
    }
}

/// Every epoch of `home` in chain order (oldest first, the live one last).
pub fn epochs(home: &Home) -> Result<Vec<EpochEntry>, EpochError> {
    let mut archives: BTreeMap<String, EpochEntry> = archive_entries(home)?
        .into_iter()
        .map(|e| (e.genesis_id.clone(), e))
        .collect();
    let live = live_entry(home);
    let mut chain = Vec::new();
    let mut next = live
        .as_ref()
        .and_then(|l| l.anchor_id().map(str::to_string));
    if next.is_none() {
        next = newest_unanchored(&archives);
    }
    while let Some(id) = next.take() {
        let Some(entry) = archives.remove(&id) else {
            break;
        };
        next = entry.anchor_id().map(str::to_string);
        chain.push(entry);
    }
    chain.reverse();
    // Archives off the chain (never anchored to) come first, by id.
    let mut out: Vec<EpochEntry> = archives.into_values().collect();
    out.extend(chain);
    out.extend(live);
    Ok(out)
}

/// The epochs `selector` names; an unknown id is an error that lists the
/// ids there are.
pub fn select(home: &Home, selector: &EpochSelector) -> Result<Vec<EpochEntry>, EpochError> {
    let all = epochs(home)?;
    match selector {
        EpochSelector::All => Ok(all),
        EpochSelector::Live => Ok(all.into_iter().filter(|e| e.live).collect()),
        EpochSelector::Id(id) => {
            let hits: Vec<EpochEntry> = all
                .iter()
                .filter(|e| e.genesis_id == *id || (id.len() >= 4 && e.genesis_id.starts_with(id)))
                .cloned()
                .collect();
            match hits.len() {
                1 => Ok(hits),
                0 => Err(EpochError::UnknownEpoch {
                    wanted: id.clone(),
                    known: all.iter().map(|e| e.genesis_id.clone()).collect(),
                }),
                _ => Err(EpochError::UnknownEpoch {
                    wanted: format!("{id} (matches {} epochs; give more of it)", hits.len()),
                    known: hits.iter().map(|e| e.genesis_id.clone()).collect(),
                }),
            }
        }
    }
}

/// The live epoch; none in a new home (an empty or absent live directory),
/// but one with files and no genesis is listed, its genesis unreadable.
fn live_entry(home: &Home) -> Option<EpochEntry> {
    let dir = LedgerReader::live_dir(home);
    if !dir.join(GENESIS_FILE).exists() && crate::ledger::integrity::is_new(&dir).unwrap_or(true) {
        return None;
    }
    Some(entry(dir, true))
}

fn entry(dir: PathBuf, live: bool) -> EpochEntry {
    let genesis = GenesisManifest::read(&dir.join(GENESIS_FILE)).map_err(|e| e.to_string());
    let genesis_id = match &genesis {
        Ok(g) => g.genesis_id.clone(),
        Err(_) => dir_name(&dir),
    };
    EpochEntry {
        genesis_id,
        dir,
        live,
        genesis,
    }
}

fn dir_name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn archive_entries(home: &Home) -> Result<Vec<EpochEntry>, EpochError> {
    Ok(archive_dirs(home)?
        .into_iter()
        .map(|d| entry(d, false))
        .collect())
}

/// Every archived epoch directory (one holding a path fence), by name.
pub fn archive_dirs(home: &Home) -> Result<Vec<PathBuf>, EpochError> {
    let dir = home.ledgers_dir().join(CANDIDATES_DIR);
    let mut out = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            for e in entries {
                let path = e.map_err(io(&dir))?.path();
                if path.join(FENCE_FILE).exists() {
                    out.push(path);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(&dir)(e)),
    }
    out.sort();
    Ok(out)
}

/// The archive no other epoch anchors to; the newest by creation when
/// there are several. With no live epoch, this is the one an advance in
/// progress must anchor the new epoch to.
fn newest_unanchored(archives: &BTreeMap<String, EpochEntry>) -> Option<String> {
    let anchored: BTreeSet<&str> = archives.values().filter_map(|e| e.anchor_id()).collect();
    archives
        .values()
        .filter(|e| !anchored.contains(e.genesis_id.as_str()))
        .max_by_key(|e| {
            let created = e.genesis.as_ref().map(|g| g.created_unix_ns).unwrap_or(0);
            (created, e.genesis_id.clone())
        })
        .map(|e| e.genesis_id.clone())
}

/// The archive an advance in progress left without a live epoch anchored
/// to it, if any.
pub(super) fn dangling_archive(home: &Home) -> Result<Option<String>, EpochError> {
    if live_entry(home).is_some() {
        return Ok(None);
    }
    let archives: BTreeMap<String, EpochEntry> = archive_entries(home)?
        .into_iter()
        .map(|e| (e.genesis_id.clone(), e))
        .collect();
    Ok(newest_unanchored(&archives))
}

/// The administrative closure each advance recorded, by the genesis id of
/// the archived epoch it closed (read from the anchors of the epochs that
/// followed them, listed as `entries`).
pub fn closures(entries: &[EpochEntry]) -> BTreeMap<String, Vec<ClosedSession>> {
    let mut out = BTreeMap::new();
    for e in entries {
        let Ok(g) = &e.genesis else { continue };
        let Some(anchor) = &g.anchor else { continue };
        if let Some(closure) = &anchor.closure {
            out.insert(anchor.genesis_id.clone(), closure.sessions.clone());
        }
    }
    out
}

/// One epoch as `harnery epoch list` shows it: what its genesis says (each
/// `None` when the genesis cannot be read) and how many events it holds,
/// or why it could not be opened. The fields are in name order, the order
/// the JSON lines have always had.
#[derive(Debug, serde::Serialize)]
pub struct ListedEpoch {
    pub anchor: Option<String>,
    pub created_unix_ns: Option<i64>,
    pub dir: String,
    pub error: Option<String>,
    pub events: Option<u64>,
    pub generation: Option<u32>,
    pub genesis_id: String,
    pub live: bool,
    pub schema_digest: Option<String>,
}

impl ListedEpoch {
    /// `entry`, opened read-only to count its events.
    pub fn of(home: &Home, entry: &EpochEntry) -> ListedEpoch {
        let events = entry.open(home).and_then(|l| l.events().event_count());
        let g = entry.genesis.as_ref().ok();
        ListedEpoch {
            anchor: entry.anchor_id().map(str::to_string),
            created_unix_ns: g.map(|g| g.created_unix_ns),
            dir: entry.dir.display().to_string(),
            error: events.as_ref().err().map(|err| err.to_string()),
            events: events.ok(),
            generation: g.map(|g| g.contract_generation),
            genesis_id: entry.genesis_id.clone(),
            live: entry.live,
            schema_digest: g.map(|g| g.schema_digest.clone()),
        }
    }
}
