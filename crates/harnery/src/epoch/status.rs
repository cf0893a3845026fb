//! `harnery epoch status`: where the home stands. The live epoch and the
//! contract it speaks, this build's contract, an advance underway, what is
//! still undrained, and the archives; plus the one thing to do next.
//! Reads only: nothing is opened for writing.

use serde::Serialize;

use super::{EpochError, read_progress};
use crate::contract::current_generation;
use crate::home::Home;
use crate::ledger::{Anchor, binary_digest};
use crate::spool::IntakeSpool;

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct EpochStatus {
    pub build: Contract,
    pub live: Option<LiveEpoch>,
    pub advance_in_progress: Option<AdvanceMarker>,
    pub undrained: Undrained,
    pub archives: Vec<ArchiveSummary>,
    /// What to do next, in a sentence.
    pub next: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Contract {
    pub generation: u32,
    pub schema_digest: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct LiveEpoch {
    pub genesis_id: String,
    pub generation: u32,
    pub schema_digest: String,
    pub created_unix_ns: i64,
    /// The live epoch speaks this build's digest.
    pub current: bool,
    pub anchor: Option<Anchor>,
}

/// An advance underway: its progress record (or why it cannot be read),
/// and the archive still waiting for a live epoch to anchor to it.
#[derive(Debug, Clone, Serialize)]
pub struct AdvanceMarker {
    pub step: Option<String>,
    pub from_genesis_id: Option<String>,
    pub to_digest: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Undrained {
    /// Canonical ready files minted but not yet applied.
    pub ready_files: u64,
    /// Intake sessions with spool files, their files and bytes.
    pub intake_sessions: u64,
    pub intake_files: u64,
    pub intake_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ArchiveSummary {
    pub genesis_id: String,
    pub dir: String,
    pub generation: Option<u32>,
    pub schema_digest: Option<String>,
    pub events: Option<u64>,
    /// Whether this build knows the contract generation it was written in.
    pub readable: bool,
    /// Why the archive could not be read, if it could not.
    pub error: Option<String>,
}

/// Gather the status of `home`.
pub fn status(home: &Home) -> Result<EpochStatus, EpochError> {
    let entries = super::epochs(home)?;
    let live = entries
        .iter()
        .find(|e| e.live)
        .and_then(|e| e.genesis.as_ref().ok())
        .map(|g| LiveEpoch {
            genesis_id: g.genesis_id.clone(),
            generation: g.contract_generation,
            schema_digest: g.schema_digest.clone(),
            created_unix_ns: g.created_unix_ns,
            current: g.schema_digest == binary_digest(),
            anchor: g.anchor.clone(),
        });
    let advance_in_progress = marker(home)?;
    let archives = entries
        .iter()
        .filter(|e| !e.live)
        .map(|e| {
            let opened = e.open(home);
            ArchiveSummary {
                genesis_id: e.genesis_id.clone(),
                dir: e.dir.display().to_string(),
                generation: e.genesis.as_ref().ok().map(|g| g.contract_generation),
                schema_digest: e.genesis.as_ref().ok().map(|g| g.schema_digest.clone()),
                events: opened
                    .as_ref()
                    .ok()
                    .and_then(|l| l.events().event_count().ok()),
                readable: e.generation().is_some(),
                error: opened.err().map(|err| err.to_string()),
            }
        })
        .collect();
    let next = next_action(live.as_ref(), advance_in_progress.as_ref());
    Ok(EpochStatus {
        build: Contract {
            generation: current_generation().number,
            schema_digest: binary_digest(),
        },
        live,
        advance_in_progress,
        undrained: undrained(home)?,
        archives,
        next,
    })
}

fn marker(home: &Home) -> Result<Option<AdvanceMarker>, EpochError> {
    if !super::advance_underway(home)? {
        return Ok(None);
    }
    Ok(Some(match read_progress(home) {
        Ok(Some(p)) => AdvanceMarker {
            step: Some(p.step),
            from_genesis_id: Some(p.from_genesis_id),
            to_digest: Some(p.to_digest),
            error: None,
        },
        Ok(None) => AdvanceMarker {
            step: Some("archived".into()),
            from_genesis_id: super::list::dangling_archive(home)?,
            to_digest: None,
            error: None,
        },
        Err(e) => AdvanceMarker {
            step: None,
            from_genesis_id: None,
            to_digest: None,
            error: Some(e.to_string()),
        },
    }))
}

fn next_action(live: Option<&LiveEpoch>, advance: Option<&AdvanceMarker>) -> String {
    match (live, advance) {
        (_, Some(a)) if a.error.is_some() => {
            "the advance record is damaged: remove it and run `harnery epoch advance`".into()
        }
        (_, Some(_)) => "an advance is underway: `harnery epoch advance` (or the next `harnery finalize`) completes it".into(),
        (Some(l), None) if !l.current => "the live epoch speaks another contract: run `harnery epoch advance`".into(),
        (Some(_), None) => "nothing: the live epoch speaks this build's contract".into(),
        (None, None) => "nothing yet: the first `harnery finalize` creates the live epoch".into(),
    }
}

fn undrained(home: &Home) -> Result<Undrained, EpochError> {
    let mut out = Undrained {
        ready_files: crate::finalize::ready::pending(home)?.len() as u64,
        ..Undrained::default()
    };
    let spool = IntakeSpool::open(home);
    let sessions = spool
        .sessions()
        .map_err(|e| crate::finalize::FinalizeError::Spool(e.to_string()))?;
    for session in sessions {
        let files = session
            .files()
            .map_err(|e| crate::finalize::FinalizeError::Spool(e.to_string()))?;
        if files.is_empty() {
            continue;
        }
        out.intake_sessions += 1;
        out.intake_files += files.len() as u64;
        out.intake_bytes += files
            .iter()
            .filter_map(|f| std::fs::metadata(&f.path).ok())
            .map(|m| m.len())
            .sum::<u64>();
    }
    Ok(out)
}
