//! `harnery epoch verify`: every archived epoch is what its advance left
//! (the tree manifest lists exactly its files, the path fence names it,
//! nothing is writable, its hash chain recomputes), every epoch's rows fit
//! the contract generation that wrote it (its own shape, not this build's),
//! and the anchors link the first epoch to the live one: each epoch's
//! anchor names the epoch before it, that epoch's chain head and row count.
//!
//! A problem is a finding, not an error: one damaged archive is reported
//! and the others are still checked.

use serde::Serialize;

use super::{EpochEntry, EpochError, TreeManifest, archive::writable_paths};
use crate::home::Home;
use crate::ledger::{FENCE_FILE, LedgerReader};

/// The findings for every epoch checked.
#[derive(Debug, Clone, Serialize)]
pub struct EpochVerdict {
    pub ok: bool,
    pub epochs: Vec<EpochCheck>,
}

/// One epoch's findings.
#[derive(Debug, Clone, Serialize)]
pub struct EpochCheck {
    pub genesis_id: String,
    pub live: bool,
    pub dir: String,
    pub rows: Option<u64>,
    pub chain_head: Option<String>,
    /// Each one names the file, row or link at fault.
    pub problems: Vec<String>,
}

/// Check the epochs of `home`; with `only`, that epoch and the anchor
/// links into and out of it.
pub fn verify(home: &Home, only: Option<&str>) -> Result<EpochVerdict, EpochError> {
    let all = super::epochs(home)?;
    let wanted = match only {
        Some(id) => Some(
            super::select(home, &super::EpochSelector::Id(id.to_string()))?
                .remove(0)
                .genesis_id,
        ),
        None => None,
    };
    let mut checks: Vec<EpochCheck> = all.iter().map(check_epoch).collect();
    for i in 0..all.len() {
        let before = i.checked_sub(1).map(|j| (&all[j], &checks[j]));
        let problems = link_problems(home, &all[i], before);
        checks[i].problems.extend(problems);
    }
    let kept: Vec<EpochCheck> = match &wanted {
        None => checks,
        Some(id) => {
            let at = all.iter().position(|e| &e.genesis_id == id).unwrap_or(0);
            let mut kept = vec![checks[at].clone()];
            if let Some(next) = checks.get(at + 1) {
                let into: Vec<String> = next
                    .problems
                    .iter()
                    .filter(|p| p.starts_with("anchor"))
                    .cloned()
                    .collect();
                if !into.is_empty() {
                    let mut c = next.clone();
                    c.problems = into;
                    kept.push(c);
                }
            }
            kept
        }
    };
    Ok(EpochVerdict {
        ok: kept.iter().all(|c| c.problems.is_empty()),
        epochs: kept,
    })
}

fn check_epoch(e: &EpochEntry) -> EpochCheck {
    let mut check = EpochCheck {
        genesis_id: e.genesis_id.clone(),
        live: e.live,
        dir: e.dir.display().to_string(),
        rows: None,
        chain_head: None,
        problems: Vec::new(),
    };
    if let Err(detail) = &e.genesis {
        check.problems.push(format!("genesis.json: {detail}"));
        return check;
    }
    if !e.live {
        check.problems.extend(archive_problems(e));
    }
    match chain(e) {
        Ok((rows, head, breaks)) => {
            check.rows = Some(rows);
            check.chain_head = Some(head);
            check.problems.extend(breaks);
        }
        Err(err) => check.problems.push(format!("ledger unreadable: {err}")),
    }
    check.problems.extend(shape_problems(e));
    if e.live {
        check.problems.extend(raw_archive_problems(e));
    }
    check
}

/// Each row against the shape of the contract generation that wrote the
/// epoch. An epoch of a generation this build does not know is left to
/// its files and chain (`list` names its generation as unknown).
fn shape_problems(e: &EpochEntry) -> Vec<String> {
    let Some(generation) = e.generation() else {
        return Vec::new();
    };
    let found =
        LedgerReader::open_dir(&e.dir, None).and_then(|l| l.verify().shape_problems(generation));
    match found {
        Ok((_, problems)) => problems
            .into_iter()
            .map(|p| format!("{} ({}): {}", p.rule, p.event_id, p.detail))
            .collect(),
        // Reported above, as the ledger being unreadable.
        Err(_) => Vec::new(),
    }
}

/// The live epoch's raw archive files against what its ledger recorded
/// (an archive's are covered by its tree manifest).
fn raw_archive_problems(e: &EpochEntry) -> Vec<String> {
    let faults = LedgerReader::open_dir(&e.dir, None).and_then(|l| l.raw().faults());
    match faults {
        Ok(faults) => faults
            .into_iter()
            .map(|f| format!("raw archive: {} {}", f.path.display(), f.what))
            .collect(),
        // Reported above, as the ledger being unreadable.
        Err(_) => Vec::new(),
    }
}

/// The fence, the manifest and the read-only state of an archive.
fn archive_problems(e: &EpochEntry) -> Vec<String> {
    let mut out = Vec::new();
    match std::fs::read(e.dir.join(FENCE_FILE)) {
        Ok(bytes) => {
            let named = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v["genesis_id"].as_str().map(str::to_string));
            if named.as_deref() != Some(e.genesis_id.as_str()) {
                out.push(format!(
                    "{FENCE_FILE}: does not name epoch {} (names {named:?})",
                    e.genesis_id
                ));
            }
        }
        Err(err) => out.push(format!("{FENCE_FILE}: {err}")),
    }
    match TreeManifest::read(&e.dir) {
        Ok(m) if m.genesis_id != e.genesis_id => out.push(format!(
            "MANIFEST.json: names epoch {}, not {}",
            m.genesis_id, e.genesis_id
        )),
        Ok(_) => {}
        Err(err) => out.push(err.to_string()),
    }
    match TreeManifest::check(&e.dir) {
        Ok(problems) => out.extend(problems),
        Err(EpochError::Manifest { .. }) => {}
        Err(err) => out.push(err.to_string()),
    }
    match writable_paths(&e.dir) {
        Ok(paths) => out.extend(
            paths
                .into_iter()
                .map(|p| format!("{p}: writable (an archive is read-only)")),
        ),
        Err(err) => out.push(err.to_string()),
    }
    out
}

fn chain(e: &EpochEntry) -> Result<(u64, String, Vec<String>), EpochError> {
    // The chain does not depend on the contract: read any digest, any
    // generation.
    let ledger = LedgerReader::open_dir(&e.dir, None)?;
    let (rows, breaks) = ledger.verify().chain()?;
    let breaks = breaks
        .into_iter()
        .map(|b| {
            format!(
                "chain broken at seq {} ({}): {}",
                b.seq, b.event_id, b.detail
            )
        })
        .collect();
    Ok((rows, ledger.chain_head()?, breaks))
}

/// How `e`'s anchor fails to link it to the epoch before it in the chain.
fn link_problems(
    home: &Home,
    e: &EpochEntry,
    before: Option<(&EpochEntry, &EpochCheck)>,
) -> Vec<String> {
    let Ok(genesis) = &e.genesis else {
        return Vec::new();
    };
    let (anchor, (prev, prev_check)) = match (&genesis.anchor, before) {
        (None, None) => return Vec::new(),
        (None, Some((prev, _))) => {
            return vec![format!(
                "anchor: missing, but epoch {} comes before this one",
                prev.genesis_id
            )];
        }
        (Some(a), None) => {
            return vec![format!(
                "anchor: names epoch {}, which is not in this home",
                a.genesis_id
            )];
        }
        (Some(a), Some(p)) => (a, p),
    };
    let mut out = Vec::new();
    if anchor.genesis_id != prev.genesis_id {
        out.push(format!(
            "anchor: names epoch {}, but the epoch before is {}",
            anchor.genesis_id, prev.genesis_id
        ));
        return out;
    }
    if let Some(head) = &prev_check.chain_head
        && head != &anchor.terminal_segment_digest
    {
        out.push(format!(
            "anchor: terminal-segment digest {} is not the chain head {head} of epoch {}",
            anchor.terminal_segment_digest, prev.genesis_id
        ));
    }
    if let Some(rows) = prev_check.rows
        && rows != anchor.events
    {
        out.push(format!(
            "anchor: says epoch {} ended with {} events; it holds {rows}",
            prev.genesis_id, anchor.events
        ));
    }
    if let Ok(pg) = &prev.genesis
        && pg.schema_digest != anchor.schema_digest
    {
        out.push(format!(
            "anchor: schema digest {} is not epoch {}'s {}",
            anchor.schema_digest, prev.genesis_id, pg.schema_digest
        ));
    }
    if home.root().join(&anchor.archive) != prev.dir {
        out.push(format!(
            "anchor: archive path {} is not where epoch {} is ({})",
            anchor.archive,
            prev.genesis_id,
            prev.dir.display()
        ));
    }
    out
}
