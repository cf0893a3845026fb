//! The epoch advance: ship a contract change as a new ledger epoch (ADR
//! 0078, DESIGN §9). An advance has four steps, each resumable:
//!
//! 1. **quiesce**: apply every pending ready file to the old ledger (ready
//!    rows carry the digest they were minted under; applying them needs no
//!    normalization, only validation and append) and refuse to go on while
//!    any ready row remains. Intake rows are raw, digest-free, and are
//!    carried instead.
//! 2. **archive**: fold the old database's WAL into its file (the only
//!    change made to it: no migration, no journal-mode change), write a
//!    path fence and a tree manifest (path, size, blake3 of every file),
//!    move the whole live root to `ledgers/v2-candidates/<genesis-id>/` and
//!    make it read-only. Archived epochs are never repaired.
//! 3. **reinstall**: build a candidate genesis with this build's digest,
//!    anchored to the archive's chain head (its terminal-segment digest)
//!    and recording what the advance closed administratively there, in
//!    `ledgers/v2.candidate/`; the candidate gate checks it, the
//!    activation gate renames it into place.
//! 4. **carry**: drain the intake spool into the new epoch.
//!
//! What step comes next is read from disk, so a crash anywhere resumes:
//! `ledgers/epoch-advance.json` marks an advance as underway (and says
//! what it advances from), the directories say how far it got. While it
//! is underway no command starts a fresh epoch, and `harnery finalize`
//! completes the advance before it drains (see [`finalize`](fn@finalize)); finalize
//! never starts one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{EpochError, archive, io, list};
use crate::failpoint;
use crate::finalize::{self, FinalizeError, FinalizeOptions, lease::Lease};
use crate::home::Home;
use crate::ledger::{
    ADVANCE_FILE, Anchor, CANDIDATES_DIR, GENESIS_FILE, GenesisManifest, LedgerReader,
    LedgerWriter, binary_digest, durable,
};

/// The durable record of an advance underway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progress {
    pub from_genesis_id: String,
    pub from_digest: String,
    pub to_digest: String,
    /// The last step done: `quiesced`, `archived` or `activated`.
    pub step: String,
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
    /// Sessions the advance closed administratively in the archive.
    pub audit_only_sessions: usize,
    /// Pending end requests the advance superseded.
    pub superseded_end_requests: usize,
}

fn progress_path(home: &Home) -> PathBuf {
    home.ledgers_dir().join(ADVANCE_FILE)
}

fn candidate_dir(home: &Home) -> PathBuf {
    home.ledgers_dir().join("v2.candidate")
}

/// The progress record, if one exists; a damaged one is an error that says
/// how to go on.
pub fn read_progress(home: &Home) -> Result<Option<Progress>, EpochError> {
    let path = progress_path(home);
    match std::fs::read(&path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| EpochError::CorruptProgress {
                    path,
                    detail: e.to_string(),
                })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(&path)(e)),
    }
}

fn write_progress(home: &Home, p: &Progress) -> Result<(), EpochError> {
    let text = serde_json::to_vec_pretty(p).expect("progress serializes");
    Ok(durable::write_atomic(&progress_path(home), &text)?)
}

fn remove_progress(home: &Home) -> Result<(), EpochError> {
    let path = progress_path(home);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(durable::sync_dir(&home.ledgers_dir())?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io(&path)(e)),
    }
}

/// Whether an advance is underway: its progress record exists (damaged or
/// not), or an archive exists that no live epoch anchors to.
pub fn advance_underway(home: &Home) -> Result<bool, EpochError> {
    Ok(progress_path(home).exists() || list::dangling_archive(home)?.is_some())
}

/// What `harnery finalize` ran: the drain, and the advance it completed
/// first when it found one underway.
#[derive(Debug, Clone, Serialize)]
pub struct FinalizeRun {
    #[serde(flatten)]
    pub summary: finalize::Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_epoch_advance: Option<AdvanceReport>,
}

/// `harnery finalize`: drain the spools. An advance found underway is
/// completed first, by the same steps `harnery epoch advance` runs, and
/// its carry is the drain. With no advance underway this never starts
/// one: a live epoch under another digest is refused and nothing drained.
pub fn finalize(home: &Home, opts: &FinalizeOptions) -> Result<FinalizeRun, EpochError> {
    if !advance_underway(home)? {
        return Ok(FinalizeRun {
            summary: finalize::finalize(home, opts)?,
            completed_epoch_advance: None,
        });
    }
    let report = advance(home, opts)?;
    let summary = match &report.carried {
        Some(s) => s.clone(),
        None => finalize::finalize(home, opts)?,
    };
    Ok(FinalizeRun {
        summary,
        completed_epoch_advance: Some(report),
    })
}

/// Where a resumed advance picks up, read from disk.
enum Next {
    /// The live epoch speaks this build's digest and no advance is underway.
    Current,
    /// Quiesce and archive the live epoch, then reinstall and carry.
    Quiesce(GenesisManifest),
    /// Archive the live epoch (already quiesced), then reinstall and carry.
    Archive(Progress),
    /// Install a new epoch anchored to this archive, then carry.
    Reinstall(String),
    /// The new epoch is live; drain into it.
    Carry,
}

fn next_step(home: &Home, progress: Option<&Progress>) -> Result<Next, EpochError> {
    let live = LedgerReader::live_dir(home);
    if !live.join(GENESIS_FILE).exists() {
        if !crate::ledger::integrity::is_new(&live)? {
            return Err(crate::ledger::integrity::damaged(
                &live.join(GENESIS_FILE),
                "is missing, but the epoch directory holds files (a ledger, its raw archive)",
            )
            .into());
        }
        return Ok(match progress {
            Some(p) if p.step != "quiesced" => Next::Reinstall(p.from_genesis_id.clone()),
            _ => match list::dangling_archive(home)? {
                Some(id) => Next::Reinstall(id),
                None => Next::Current,
            },
        });
    }
    let genesis = GenesisManifest::read(&live.join(GENESIS_FILE))?;
    if genesis.schema_digest == binary_digest() {
        return Ok(if progress.is_some() {
            Next::Carry
        } else {
            Next::Current
        });
    }
    Ok(match progress {
        Some(p) if p.step == "quiesced" && p.from_genesis_id == genesis.genesis_id => {
            Next::Archive(p.clone())
        }
        _ => Next::Quiesce(genesis),
    })
}

/// Run (or resume) an advance to this build's schema digest.
pub fn advance(home: &Home, opts: &FinalizeOptions) -> Result<AdvanceReport, EpochError> {
    let lease = Lease::take(home).map_err(FinalizeError::from)?;
    let mut report = AdvanceReport {
        schema_digest: binary_digest(),
        ..AdvanceReport::default()
    };
    let progress = read_progress(home)?;
    let mut next = next_step(home, progress.as_ref())?;
    if let Next::Current = next {
        // A record left with neither a live epoch nor an archive to go on
        // from has nothing to finish; it would only keep a fresh epoch
        // from starting.
        if progress.is_some() {
            remove_progress(home)?;
        }
        report.already_current = true;
        return Ok(report);
    }
    if let Next::Quiesce(genesis) = next {
        opts.progress.stage("quiesce");
        next = Next::Archive(quiesce(home, genesis, opts, &mut report)?);
    }
    if let Next::Archive(p) = next {
        opts.progress.stage("archive");
        archive_step(home, &p)?;
        next = Next::Reinstall(p.from_genesis_id);
    }
    if let Next::Reinstall(from) = &next {
        opts.progress.stage("reinstall");
        let anchor = archive::anchor_of(home, from)?;
        note_anchor(&mut report, &anchor);
        reinstall(home, &anchor, opts)?;
        let mut p = progress_or(home, &anchor)?;
        p.step = "activated".into();
        write_progress(home, &p)?;
        failpoint::hit("epoch-after-activate");
    } else if let Some(anchor) = live_anchor(home)? {
        note_anchor(&mut report, &anchor);
    }
    drop(lease);
    opts.progress.stage("carry");
    report.carried = Some(finalize::finalize(home, opts)?);
    remove_progress(home)?;
    report.new_genesis_id = Some(LedgerReader::open(home)?.genesis().genesis_id.clone());
    Ok(report)
}

fn note_anchor(report: &mut AdvanceReport, anchor: &Anchor) {
    report.archived_genesis_id = Some(anchor.genesis_id.clone());
    report.archive = Some(anchor.archive.clone());
    report.terminal_segment_digest = Some(anchor.terminal_segment_digest.clone());
    report.archived_events = anchor.events;
    if let Some(c) = &anchor.closure {
        report.audit_only_sessions = c.sessions.len();
        report.superseded_end_requests = c
            .sessions
            .iter()
            .map(|s| s.superseded_end_requests.len())
            .sum();
    }
}

fn live_anchor(home: &Home) -> Result<Option<Anchor>, EpochError> {
    let g = GenesisManifest::read(&LedgerReader::live_dir(home).join(GENESIS_FILE))?;
    Ok(g.anchor)
}

/// The progress record to update, or (when it was lost) one rebuilt from
/// the archive being anchored to.
fn progress_or(home: &Home, anchor: &Anchor) -> Result<Progress, EpochError> {
    Ok(read_progress(home)?.unwrap_or_else(|| Progress {
        from_genesis_id: anchor.genesis_id.clone(),
        from_digest: anchor.schema_digest.clone(),
        to_digest: binary_digest(),
        step: "archived".into(),
    }))
}

/// Step 1: apply the old epoch's pending ready files to it, and refuse to
/// go on while any remain. The old epoch is opened for writing only when
/// there is something to apply, and only when that needs no migration of
/// its tables (its bytes are to be archived as the old build left them).
fn quiesce(
    home: &Home,
    genesis: GenesisManifest,
    opts: &FinalizeOptions,
    report: &mut AdvanceReport,
) -> Result<Progress, EpochError> {
    let live = LedgerReader::live_dir(home);
    // A damaged epoch is refused here, before it would be archived as it
    // is (`ledger::integrity`).
    LedgerReader::check_epoch(&live)?;
    finalize::ready::remove_orphans(home)?;
    let pending = finalize::ready::pending(home)?;
    if !pending.is_empty() {
        if LedgerReader::open_dir(&live, None)?.schema_behind()? {
            return Err(EpochError::Undrained(format!(
                "{} ready file(s) in {} were minted by the build that wrote epoch {}, whose tables this build would have to migrate to apply them; run `harnery finalize` with that build once, then `harnery epoch advance`",
                pending.len(),
                finalize::ready::ready_dir(home).display(),
                genesis.genesis_id
            )));
        }
        let mut old = LedgerWriter::open_dir(&live, opts.now_unix_ns, false)?;
        let incarnation = old.take_incarnation()?;
        let mut summary = finalize::Summary::default();
        report.ready_files_applied_to_old_epoch =
            finalize::apply_pending(home, &mut old, incarnation, opts, &mut summary)?;
    }
    let left = finalize::ready::pending(home)?;
    if !left.is_empty() {
        return Err(EpochError::Undrained(format!(
            "{} ready file(s) remain in {}; they were minted under a digest the old epoch does not speak",
            left.len(),
            finalize::ready::ready_dir(home).display()
        )));
    }
    let progress = Progress {
        from_genesis_id: genesis.genesis_id,
        from_digest: genesis.schema_digest,
        to_digest: binary_digest(),
        step: "quiesced".into(),
    };
    write_progress(home, &progress)?;
    failpoint::hit("epoch-after-quiesce");
    Ok(progress)
}

/// Step 2: move the quiesced live epoch into the archive.
fn archive_step(home: &Home, p: &Progress) -> Result<(), EpochError> {
    // Quiesce checked the epoch through a reader; a resumed archive step
    // may find a full disk that a reader cannot open under, so folding
    // the WAL checks the database file itself (`ledger::fold_wal`).
    let live = LedgerReader::live_dir(home);
    let target = home
        .ledgers_dir()
        .join(CANDIDATES_DIR)
        .join(&p.from_genesis_id);
    if target.exists() {
        return Err(EpochError::ActivationGate(format!(
            "both the live epoch and its archive {} exist; remove neither, and report this",
            target.display()
        )));
    }
    archive::archive_live(home, &live, &target)?;
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

/// Step 3: candidate genesis → candidate gate → activation gate.
fn reinstall(home: &Home, anchor: &Anchor, opts: &FinalizeOptions) -> Result<(), EpochError> {
    let cand = candidate_dir(home);
    if cand.exists() {
        std::fs::remove_dir_all(&cand).map_err(io(&cand))?;
    }
    crate::ledger::create_dir_private(&cand)?;
    GenesisManifest::new(Some(anchor.clone()), opts.now_unix_ns).write(&cand.join(GENESIS_FILE))?;
    drop(LedgerWriter::create_epoch(&cand, opts.now_unix_ns)?);
    candidate_gate(home, &cand, anchor)?;
    failpoint::hit("epoch-after-candidate");
    let live = LedgerReader::live_dir(home);
    std::fs::rename(&cand, &live).map_err(io(&live))?;
    Ok(durable::sync_dir(&home.ledgers_dir())?)
}

/// The candidate must speak this build's digest, hold no events yet, and
/// anchor to a chain head that the archive itself recomputes to.
fn candidate_gate(home: &Home, cand: &Path, anchor: &Anchor) -> Result<(), EpochError> {
    let ledger = LedgerReader::open_dir(cand, Some(&binary_digest()))?;
    if ledger.event_count()? != 0 {
        return Err(EpochError::CandidateGate(
            "the candidate already holds events".into(),
        ));
    }
    let archived = LedgerReader::open_dir(&home.root().join(&anchor.archive), None)?;
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
