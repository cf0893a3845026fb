//! The session log as `checkpoints` and `restore` read it across ledger
//! epochs (`--epoch live|all|GENESIS`): an advance starts each continuing
//! session again in the new epoch (offsets from 0, no checkpoints), so the
//! checkpoints of its earlier part stay in the archived epoch, and are
//! read there. A checkpoint pinned before the advance and placed in the
//! agent's record after it (`checkpoint.located`) is placed in a later
//! epoch: its place is joined to it here.

use harnery::report::epochs::{Epochs, OpenEpoch};
use harnery::restore::log::SessionLog;

use super::CmdError;

/// The session `name` names, and its log in each selected epoch that
/// holds part of it, oldest first.
pub fn logs<'a>(
    epochs: &'a Epochs,
    command: &str,
    name: &str,
) -> Result<Vec<(&'a OpenEpoch, SessionLog)>, CmdError> {
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

/// The epoch a restore of `checkpoint` (an id, or `latest`) reads: the
/// newest selected one where the session has that checkpoint valid.
pub fn for_checkpoint<'a>(
    epochs: &'a Epochs,
    name: &str,
    checkpoint: &str,
) -> Result<&'a OpenEpoch, CmdError> {
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
