//! What `harnery replay` shows of a session: its events in offset order,
//! part by part across the selected epochs, in chain order.
//!
//! Offsets start again in each epoch, so a `[from, to]` window is only
//! taken for a session read from one epoch; it is checked against the
//! session's length and read as one range (`log::replay`, half-open
//! `[from, to + 1)`). Events a resume superseded are left out unless
//! asked for, then kept marked; each event carries its incarnation once
//! the session was resumed.

use super::epochs::{Epochs, OpenEpoch, report_damaged};
use super::source::SourceError;
use crate::contract::Event;
use crate::ledger::LedgerError;
use crate::restore::log::{self, SessionLog};

/// Why a replay could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Range(#[from] log::ReplayError),
    /// A window asked of a session that spans several epochs, or one that
    /// does not fit the session.
    #[error("{0}")]
    Window(String),
}

/// One part of the session: its events (the window's, when one was asked)
/// and its log of resumes.
pub struct ReplayPart<'a> {
    pub part: &'a OpenEpoch,
    events: Vec<Event>,
    log: SessionLog,
}

/// One event as replay shows it.
pub struct Replayed<'e> {
    pub event: &'e Event,
    pub superseded: bool,
    /// The session's incarnation at the event, once it was resumed.
    pub incarnation: Option<u64>,
}

/// Every part of the session `name` names, in chain order, and whether a
/// row of any could not be read (each named on stderr).
pub fn replay<'a>(
    epochs: &'a Epochs,
    name: &str,
    from: Option<u64>,
    to: Option<u64>,
) -> Result<(Vec<ReplayPart<'a>>, bool), ReplayError> {
    let found = epochs.session("replay", name)?;
    let windowed = from.is_some() || to.is_some();
    if windowed && found.parts.len() > 1 {
        return Err(ReplayError::Window(format!(
            "--from/--to name offsets within one epoch, and this session spans {}; pick one with --epoch <genesis id>",
            found.parts.len()
        )));
    }
    // A window is read as its own range below; only a whole replay reads
    // the whole session here.
    let read = found.read("replay", epochs, |l, s| {
        let log = SessionLog::read_resumes(l, s)?;
        let (events, bad) = match windowed {
            true => Default::default(),
            false => l.events().session_events_lenient(s)?,
        };
        Ok((events, bad, log))
    })?;
    let mut parts = Vec::with_capacity(read.len());
    let mut damaged = false;
    for (epoch, (mut events, bad, log)) in read {
        damaged |= report_damaged("replay", &epoch.label, &bad);
        if windowed {
            let (from, to) = window(from, to, log.head).map_err(ReplayError::Window)?;
            let end = Some(to as i64 + 1);
            events = log::replay(&epoch.ledger, &found.session, from as i64, end)?;
        }
        parts.push(ReplayPart {
            part: epoch,
            events,
            log,
        });
    }
    Ok((parts, damaged))
}

impl ReplayPart<'_> {
    /// The part's events as replay shows them.
    pub fn shown(&self, include_superseded: bool) -> impl Iterator<Item = Replayed<'_>> {
        let log = &self.log;
        let resumed = !log.resumes.is_empty();
        log::live_events(log, &self.events, include_superseded)
            .into_iter()
            .map(move |(event, superseded)| Replayed {
                event,
                superseded,
                incarnation: resumed.then(|| log.incarnation_at(event.offset)),
            })
    }
}

/// Check a `[from, to]` window against a session of `len` events.
pub(crate) fn window(from: Option<u64>, to: Option<u64>, len: u64) -> Result<(u64, u64), String> {
    let last = len.checked_sub(1).ok_or("the session has no events")?;
    let (from, to) = (from.unwrap_or(0), to.unwrap_or(last));
    if from > last {
        return Err(format!(
            "--from {from} is past the session's last offset {last}"
        ));
    }
    if to > last {
        return Err(format!(
            "--to {to} is past the session's last offset {last}"
        ));
    }
    if from > to {
        return Err(format!("inverted window: --from {from} is after --to {to}"));
    }
    Ok((from, to))
}

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn a_window_is_checked_against_the_session() {
        assert_eq!(window(None, None, 5), Ok((0, 4)));
        assert_eq!(window(Some(2), Some(3), 5), Ok((2, 3)));
        assert_eq!(
            window(Some(5), None, 5).unwrap_err(),
            "--from 5 is past the session's last offset 4"
        );
        assert_eq!(
            window(None, Some(9), 5).unwrap_err(),
            "--to 9 is past the session's last offset 4"
        );
        assert_eq!(
            window(Some(3), Some(1), 5).unwrap_err(),
            "inverted window: --from 3 is after --to 1"
        );
        assert_eq!(
            window(None, None, 0).unwrap_err(),
            "the session has no events"
        );
    }
}
