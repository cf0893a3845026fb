//! `harnery epoch advance`: ship a contract change as a new ledger epoch
//! (ADR 0078, DESIGN §9). Four steps, each resumable:
//!
//! 1. **quiesce**: apply every pending ready file to the old ledger (ready
//!    rows carry the digest they were minted under; applying them needs no
//!    normalization, only validation and append) and refuse to go on while
//!    any ready row remains. Intake rows are raw, digest-free, and are
//!    carried instead.
//! 2. **archive**: fold the old database into one file, write a tree
//!    manifest (path, size, blake3 of every file) and a path fence, move the
//!    whole live root to `ledgers/v2-candidates/<genesis-id>/` and make it
//!    read-only. Archived epochs are never repaired.
//! 3. **reinstall**: build a candidate genesis with this build's digest,
//!    anchored to the archive's chain head (its terminal-segment digest),
//!    in `ledgers/v2.candidate/`; the candidate gate checks it, the
//!    activation gate renames it into place.
//! 4. **carry**: drain the intake spool into the new epoch.
//!
//! Progress is recorded in `ledgers/epoch-advance.json`; rerunning the
//! command after a crash at any step resumes from what is on disk.

mod archive;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use archive::{ArchivedSession, TreeManifest, archived_epochs, archived_open_span_sessions};

use crate::finalize::{self, FinalizeError, FinalizeOptions, failpoint, lease::Lease};
use crate::home::Home;
use crate::ledger::{
    Anchor, CANDIDATES_DIR, GENESIS_FILE, GenesisManifest, Ledger, LedgerError, binary_digest,
    durable,
};

/// Why an advance stopped.
#[derive(Debug, thiserror::Error)]
pub enum EpochError {
    #[error(transparent)]
    Finalize(#[from] FinalizeError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("quiesce refused: {0}")]
    Undrained(String),
    #[error("candidate gate refused the new epoch: {0}")]
    CandidateGate(String),
    #[error("activation gate refused: {0}")]
    ActivationGate(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EpochError + '_ {
    move |source| EpochError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The durable record of an advance in progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Progress {
    from_genesis_id: String,
    from_digest: String,
    to_digest: String,
    /// quiesced, archived, activated.
    step: String,
}

/// What an advance did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AdvanceReport {
    /// Nothing to do: the live epoch already speaks this build's digest.
    pub already_current: bool,
    pub archived_genesis_id: Option<String>,
    pub archive: Option<String>,
    pub terminal_segment_digest: Option<String>,
    pub archived_events: u64,
    pub ready_files_applied_to_old_epoch: u64,
    pub new_genesis_id: Option<String>,
    pub schema_digest: String,
    pub carried: Option<finalize::Summary>,
    pub audit_only_sessions: usize,
}

fn progress_path(home: &Home) -> PathBuf {
    home.ledgers_dir().join("epoch-advance.json")
}

fn candidate_dir(home: &Home) -> PathBuf {
    home.ledgers_dir().join("v2.candidate")
}

fn read_progress(home: &Home) -> Result<Option<Progress>, EpochError> {
    let path = progress_path(home);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(&path)(e)),
    }
}

fn write_progress(home: &Home, p: &Progress) -> Result<(), EpochError> {
    let text = serde_json::to_vec_pretty(p).expect("progress serializes");
    Ok(durable::write_atomic(&progress_path(home), &text)?)
}

/// Run (or resume) an advance to this build's schema digest.
pub fn advance(home: &Home, opts: &FinalizeOptions) -> Result<AdvanceReport, EpochError> {
    let lease = Lease::take(home).map_err(FinalizeError::from)?;
    let mut report = AdvanceReport {
        schema_digest: binary_digest(),
        ..AdvanceReport::default()
    };
    let progress = match read_progress(home)? {
        Some(p) => p,
        None => match begin(home, opts, &mut report)? {
            Some(p) => p,
            None => {
                report.already_current = true;
                return Ok(report);
            }
        },
    };
    if progress.step == "quiesced" {
        archive_step(home, &progress, &mut report)?;
    }
    let anchor = archive::anchor_of(home, &progress.from_genesis_id)?;
    report.archived_genesis_id = Some(anchor.genesis_id.clone());
    report.archive = Some(anchor.archive.clone());
    report.terminal_segment_digest = Some(anchor.terminal_segment_digest.clone());
    report.archived_events = anchor.events;
    if progress.step != "activated" {
        reinstall(home, anchor, opts)?;
        write_progress(
            home,
            &Progress {
                step: "activated".into(),
                ..progress.clone()
            },
        )?;
        failpoint::hit("epoch-after-activate");
    }
    drop(lease);
    report.carried = Some(finalize::finalize(home, opts)?);
    remove_progress(home)?;
    report.new_genesis_id = Some(Ledger::open_read(home)?.genesis().genesis_id.clone());
    report.audit_only_sessions = archived_open_span_sessions(home)?.len();
    Ok(report)
}

fn remove_progress(home: &Home) -> Result<(), EpochError> {
    let path = progress_path(home);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(durable::sync_dir(&home.ledgers_dir())?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(&path)(e)),
    }
}

/// Quiesce, or find there is nothing to advance. `None`: already current.
fn begin(
    home: &Home,
    opts: &FinalizeOptions,
    report: &mut AdvanceReport,
) -> Result<Option<Progress>, EpochError> {
    let live = Ledger::live_dir(home);
    if !live.join(GENESIS_FILE).exists() {
        return Ok(None);
    }
    let genesis = GenesisManifest::read(&live.join(GENESIS_FILE))?;
    if genesis.schema_digest == binary_digest() {
        return Ok(None);
    }
    let mut old = Ledger::open_dir_write(&live, opts.now_unix_ns, false)?;
    let incarnation = old.take_incarnation()?;
    let mut summary = finalize::Summary::default();
    report.ready_files_applied_to_old_epoch =
        finalize::apply_pending(home, &mut old, incarnation, opts, &mut summary)?;
    let left = finalize::ready::pending(home)?;
    if !left.is_empty() {
        return Err(EpochError::Undrained(format!(
            "{} ready file(s) remain in {}; they were minted under a digest the old epoch does not speak",
            left.len(),
            finalize::ready::ready_dir(home).display()
        )));
    }
    drop(old);
    let progress = Progress {
        from_genesis_id: genesis.genesis_id,
        from_digest: genesis.schema_digest,
        to_digest: binary_digest(),
        step: "quiesced".into(),
    };
    write_progress(home, &progress)?;
    failpoint::hit("epoch-after-quiesce");
    Ok(Some(progress))
}

fn archive_step(home: &Home, p: &Progress, report: &mut AdvanceReport) -> Result<(), EpochError> {
    let live = Ledger::live_dir(home);
    let target = home
        .ledgers_dir()
        .join(CANDIDATES_DIR)
        .join(&p.from_genesis_id);
    if live.join(GENESIS_FILE).exists() {
        let g = GenesisManifest::read(&live.join(GENESIS_FILE))?;
        if g.genesis_id == p.from_genesis_id {
            archive::archive_live(home, &live, &target)?;
        }
    }
    if !target.exists() {
        return Err(EpochError::ActivationGate(format!(
            "the archive {} of epoch {} is missing",
            target.display(),
            p.from_genesis_id
        )));
    }
    report.archive = Some(target.display().to_string());
    write_progress(
        home,
        &Progress {
            step: "archived".into(),
            ..p.clone()
        },
    )?;
    failpoint::hit("epoch-after-archive");
    Ok(())
}

/// Candidate genesis → candidate gate → activation gate.
fn reinstall(home: &Home, anchor: Anchor, opts: &FinalizeOptions) -> Result<(), EpochError> {
    let live = Ledger::live_dir(home);
    if live.join(GENESIS_FILE).exists() {
        let g = GenesisManifest::read(&live.join(GENESIS_FILE))?;
        return match g.anchor {
            Some(a)
                if a.terminal_segment_digest == anchor.terminal_segment_digest
                    && g.schema_digest == binary_digest() =>
            {
                Ok(())
            }
            _ => Err(EpochError::ActivationGate(format!(
                "{} is occupied by epoch {} which does not anchor to the archive",
                live.display(),
                g.genesis_id
            ))),
        };
    }
    let cand = candidate_dir(home);
    if cand.exists() {
        std::fs::remove_dir_all(&cand).map_err(io(&cand))?;
    }
    crate::ledger::create_dir_private(&cand)?;
    GenesisManifest::new(Some(anchor.clone()), opts.now_unix_ns).write(&cand.join(GENESIS_FILE))?;
    drop(Ledger::open_dir_write(&cand, opts.now_unix_ns, true)?);
    candidate_gate(home, &cand, &anchor)?;
    failpoint::hit("epoch-after-candidate");
    std::fs::rename(&cand, &live).map_err(io(&live))?;
    Ok(durable::sync_dir(&home.ledgers_dir())?)
}

/// The candidate must speak this build's digest, hold no events yet, and
/// anchor to a chain head that the archive itself recomputes to.
fn candidate_gate(home: &Home, cand: &Path, anchor: &Anchor) -> Result<(), EpochError> {
    let ledger = Ledger::open_dir_read(cand, Some(&binary_digest()))?;
    if ledger.event_count()? != 0 {
        return Err(EpochError::CandidateGate(
            "the candidate already holds events".into(),
        ));
    }
    let archived = Ledger::open_dir_read(&home.root().join(&anchor.archive), None)?;
    let (_, breaks) = archived.verify_chain()?;
    if let Some(b) = breaks.first() {
        return Err(EpochError::CandidateGate(format!(
            "the archived chain is broken at seq {} ({}): {}",
            b.seq, b.event_id, b.detail
        )));
    }
    if archived.chain_head()? != anchor.terminal_segment_digest {
        return Err(EpochError::CandidateGate(
            "the anchor does not match the archive's chain head".into(),
        ));
    }
    Ok(())
}
