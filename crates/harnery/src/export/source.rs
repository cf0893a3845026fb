//! What an export reads: the epochs asked for and which of their rows
//! ([`Source`]), what the workers know of each ([`Label`], no ledger
//! handle), and how a row left out is named on stderr.

use std::fs::File;
use std::io::BufWriter;

use super::ExportError;
use crate::contract::SessionRef;
use crate::ledger::{LedgerError, RowFilter};
use crate::report::epochs::{Epochs, OpenEpoch, warn};
use crate::report::source::SourceError;

/// Where an export writes: standard output as a plain file. `Stdout`
/// looks for the last newline in every write it is given (it flushes at
/// lines), which for hundreds of megabytes of lines is work for nothing;
/// the buffer in front of it already writes whole blocks.
pub(crate) type Out = BufWriter<File>;

/// One epoch to read, and which of its rows.
pub struct Source<'e> {
    pub epoch: &'e OpenEpoch,
    pub filter: RowFilter,
}

/// The sources of an export: the epochs `session` (by id or adapter/id)
/// has parts in, or every open epoch; rows at or after `since`.
pub fn sources<'e>(
    epochs: &'e Epochs,
    session: Option<&str>,
    since: Option<i64>,
) -> Result<Vec<Source<'e>>, SourceError> {
    let filter = |session: Option<SessionRef>| RowFilter {
        session,
        since_unix_ns: since,
    };
    Ok(match session {
        Some(name) => {
            let found = epochs.session("export", name)?;
            let session = Some(found.session.clone());
            let parts = found.parts.iter();
            parts
                .map(|epoch| Source {
                    epoch,
                    filter: filter(session.clone()),
                })
                .collect()
        }
        None => epochs
            .open
            .iter()
            .map(|epoch| Source {
                epoch,
                filter: filter(None),
            })
            .collect(),
    })
}

/// What the workers know of a source: no ledger handle leaves the reading
/// thread.
pub(super) struct Label {
    /// The epoch label rows carry, when they carry one.
    pub tag: Option<String>,
    /// The genesis id of an archived epoch.
    pub archive: Option<String>,
}

impl Label {
    /// `epoch <label>: ` where rows carry their epoch.
    pub(crate) fn epoch_prefix(&self) -> String {
        self.tag
            .as_ref()
            .map_or(String::new(), |t| format!("epoch {t}: "))
    }

    pub(crate) fn of(epochs: &Epochs, source: &Source<'_>) -> Label {
        let epoch = source.epoch;
        Label {
            tag: epochs.tagged.then(|| epoch.label.clone()),
            archive: (epoch.label != "live").then(|| epoch.genesis_id.clone()),
        }
    }

    pub(crate) fn all(epochs: &Epochs, sources: &[Source<'_>]) -> Vec<Label> {
        sources.iter().map(|s| Label::of(epochs, s)).collect()
    }
}

/// Read every source; an epoch that fails part way is reported and the
/// rest still read, unless only the live epoch was asked for.
pub(super) fn each_source<'e>(
    epochs: &Epochs,
    sources: &'e [Source<'e>],
    mut read: impl FnMut(usize, &'e Source<'e>) -> Result<bool, LedgerError>,
) -> Result<(), ExportError> {
    for (i, source) in sources.iter().enumerate() {
        match read(i, source) {
            Ok(true) => {}
            // The writer stopped (a closed pipe): its error is the answer.
            Ok(false) => return Ok(()),
            Err(e) if epochs.tagged => warn("export", &source.epoch.label, &e.to_string()),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// A row left out, as stderr names it (by its event id too, where known).
pub(super) fn damaged(label: &Label, seq: i64, id: Option<&str>, what: &str) -> String {
    let event = id.map_or(String::new(), |id| format!(" (event {id})"));
    format!(
        "harnery export: {}row seq {seq}{event} {what}",
        label.epoch_prefix()
    )
}

/// Name each row left out on stderr, and count them.
pub(super) fn report(count: &mut usize, problems: &[String]) {
    for p in problems {
        crate::terminal::warn(p);
    }
    *count += problems.len();
}

/// The writer's error first (a closed pipe ends the reading early, so the
/// reader's answer is moot), then the reader's.
pub(super) fn finish_sink<S>(
    made: Result<(), ExportError>,
    written: std::io::Result<S>,
) -> Result<S, ExportError> {
    let sink = written?;
    made?;
    Ok(sink)
}
