//! The session log as `checkpoints` and `restore` read it across ledger
//! epochs (`--epoch live|all|GENESIS`): an advance starts each continuing
//! session again in the new epoch (offsets from 0, no checkpoints), so the
//! checkpoints of its earlier part stay in the archived epoch, and are
//! read there. A checkpoint pinned before the advance and placed in the
//! agent's record after it (`checkpoint.located`) is placed in a later
//! epoch: its place is joined to it here. A restore that needs what
//! another epoch holds of the session (its record's first bytes, its
//! directory) opens the epochs [`around`] the one it reads. `checkpoints`
//! reads the live log ([`live_log`]), `restore` the ledger
//! [`restore_ledger`] picks or, for one checkpoint across epochs,
//! the newest part that has it ([`newest_with`]).

use super::error::PlanError;
use super::log::SessionLog;
use crate::epoch::EpochSelector;
use crate::home::Home;
use crate::ledger::LedgerReader;
use crate::report::epochs::{Epochs, OpenEpoch};
use crate::report::source::SourceError;

/// The session `name` names, and its log in each selected epoch that
/// holds part of it, oldest first.
pub fn logs<'a>(
    epochs: &'a Epochs,
    command: &str,
    name: &str,
) -> Result<Vec<(&'a OpenEpoch, SessionLog)>, SourceError> {
    epochs.report_unreadable(command)?;
    let found = epochs.session(command, name)?;
    let mut logs = found.read(command, epochs, SessionLog::read)?;
    // A checkpoint pinned before an advance is placed after it, in a
    // later epoch's part of the session.
    for i in 1..logs.len() {
        let (earlier, later) = logs.split_at_mut(i);
        for (_, log) in earlier.iter_mut() {
            log.place_from(&later[0].1);
        }
    }
    Ok(logs)
}

/// The live epoch's log of the session `name` names (`checkpoints` with
/// the default `--epoch live`); an empty home has no session to name.
pub fn live_log(home: &Home, name: &str) -> Result<SessionLog, PlanError> {
    let ledger = live(home, name)?;
    let session = ledger.sessions().resolve(name)?;
    Ok(SessionLog::read(&ledger, &session)?)
}

/// The live ledger, to look for the session `name` in; an empty home has
/// no session to name.
fn live(home: &Home, name: &str) -> Result<LedgerReader, PlanError> {
    crate::report::source::live_or_none(home)?
        .ok_or_else(|| format!("no session matches {name:?}: the ledger is empty").into())
}

/// The ledger `harnery restore` reads, and the label of its epoch when
/// `--epoch` chose one: the live ledger by default, else the newest
/// selected epoch where the session has `checkpoint` valid
/// ([`for_restore`]).
pub fn restore_ledger(
    home: &Home,
    selector: &EpochSelector,
    name: &str,
    checkpoint: &str,
    record: bool,
) -> Result<(LedgerReader, Option<String>), PlanError> {
    if *selector == EpochSelector::Live {
        return Ok((live(home, name)?, None));
    }
    let mut epochs = Epochs::open(home, selector)?;
    let label = for_restore(&epochs, name, checkpoint, record)?
        .label
        .clone();
    let at = epochs.open.iter().position(|e| e.label == label);
    let part = epochs
        .open
        .swap_remove(at.expect("the chosen epoch is among the selected"));
    Ok((part.ledger, Some(part.label)))
}

/// One part's log as `checkpoints --epoch all --json` prints it: the log's
/// fields with the label of the epoch that holds it.
#[derive(serde::Serialize)]
pub struct EpochLog<'a> {
    pub epoch: &'a str,
    #[serde(flatten)]
    pub log: &'a SessionLog,
}

impl<'a> EpochLog<'a> {
    /// Each part of `logs`, tagged, oldest first.
    pub fn all(logs: &'a [(&'a OpenEpoch, SessionLog)]) -> Vec<EpochLog<'a>> {
        let tag = |(e, log): &'a (&'a OpenEpoch, SessionLog)| EpochLog {
            epoch: &e.label,
            log,
        };
        logs.iter().map(tag).collect()
    }
}

/// Where `checkpoints --id ID|--latest` looks across epochs: the newest
/// part whose log has `wanted` (an id, or `latest`) valid, else the newest.
pub fn newest_with<'l, 'a>(
    logs: &'l [(&'a OpenEpoch, SessionLog)],
    wanted: &str,
) -> &'l (&'a OpenEpoch, SessionLog) {
    let found = logs
        .iter()
        .rev()
        .find(|(_, l)| l.choose(Some(wanted)).is_ok());
    found.unwrap_or(logs.last().expect("a session has a part"))
}

/// The epoch a restore of `checkpoint` (an id, or `latest`) reads: the
/// newest selected one where the session has that checkpoint valid. With
/// `record` (`--record`), only the live epoch: a finalize never writes to
/// an archived one.
pub(crate) fn for_restore<'a>(
    epochs: &'a Epochs,
    name: &str,
    checkpoint: &str,
    record: bool,
) -> Result<&'a OpenEpoch, PlanError> {
    let part = for_checkpoint(epochs, name, checkpoint)?;
    if record && part.label != "live" {
        return Err(format!(
            "--record: checkpoint {checkpoint:?} is in the archived epoch {}, which a finalize \
             never writes to; use --apply",
            part.label
        )
        .into());
    }
    Ok(part)
}

fn for_checkpoint<'a>(
    epochs: &'a Epochs,
    name: &str,
    checkpoint: &str,
) -> Result<&'a OpenEpoch, PlanError> {
    let logs = logs(epochs, "restore", name)?;
    let mut refusal = None;
    for (epoch, log) in logs.iter().rev() {
        match log.choose(Some(checkpoint)) {
            Ok(_) => return Ok(epoch),
            Err(e) => {
                refusal.get_or_insert(e);
            }
        }
    }
    Err(match refusal {
        Some(e) => e.to_string().into(),
        None => format!("no selected epoch holds {name:?}").into(),
    })
}

/// Every epoch of the home but `read`'s, opened: those before it (oldest
/// first) and those after it. An epoch that cannot be opened is left out:
/// what it held is then missing, and the restore says what.
pub(crate) fn around(
    home: &Home,
    read: &LedgerReader,
) -> Result<(Vec<LedgerReader>, Vec<LedgerReader>), SourceError> {
    let epochs = Epochs::open(home, &EpochSelector::All)?;
    let this = read.genesis().genesis_id.clone();
    let (mut earlier, mut later) = (Vec::new(), Vec::new());
    let mut past = false;
    for epoch in epochs.open {
        if epoch.genesis_id == this {
            past = true;
        } else if past {
            later.push(epoch.ledger);
        } else {
            earlier.push(epoch.ledger);
        }
    }
    Ok((earlier, later))
}
