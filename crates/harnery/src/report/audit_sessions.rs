//! `harnery audit`'s run: which epochs are read, which sessions are
//! classified, and what each verdict rests on.
//!
//! Each session is classified as a whole: every reason any of its parts
//! gives, and every reason an epoch advance's recorded closure holds
//! against it (so a live session closed in an archive is audit-only in the
//! live view too). The default reads the live epoch; a session named there
//! that only an archive holds is looked for in every epoch. A session only
//! an unreadable archive holds is still reported, from its closure.
//!
//! Warnings about epochs or parts that cannot be read go to stderr (as
//! [`super::epochs`] words them) and are counted in [`AuditRun::failed`].

use std::collections::BTreeMap;

use serde::Serialize;

use super::audit::Classification;
use super::epochs::{Epochs, OpenEpoch, classify_whole_with};
use super::source::{Closed, SourceError, closed_sessions, names};
use crate::contract::SessionRef;
use crate::epoch::EpochSelector;
use crate::home::Home;
use crate::ledger::{GENESIS_FILE, LedgerReader};

/// What one audit asks.
pub struct AuditAsk<'a> {
    /// Only this session (its id or a unique prefix, or adapter/id).
    pub session: Option<&'a str>,
    pub selector: &'a EpochSelector,
    /// Count the ranges a resume superseded too.
    pub include_superseded: bool,
}

/// One session's verdict and the epochs it was found in.
pub struct Verdict {
    pub epochs: Vec<String>,
    pub classification: Classification,
}

/// What one audit read.
pub struct AuditRun {
    /// The epochs read (for the caller's report of rows set aside).
    pub epochs: Epochs,
    pub rows: BTreeMap<SessionRef, Verdict>,
    /// Epochs, or parts of them, that could not be read.
    pub failed: usize,
    include_superseded: bool,
}

/// One session as `audit --json` prints it.
#[derive(Serialize)]
pub struct AuditRow<'a> {
    /// `live`, or the genesis id of the last archived epoch it is in.
    pub epoch: &'a str,
    /// Every epoch the session is in, oldest first (not in the default view).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epochs: Option<&'a [String]>,
    pub session: &'a SessionRef,
    #[serde(flatten)]
    pub classification: &'a Classification,
}

/// Classify the sessions `ask` selects.
pub fn audit(home: &Home, ask: &AuditAsk) -> Result<AuditRun, SourceError> {
    let closed = closed_sessions(home)?;
    let epochs = open(home, ask.selector)?;
    let mut run = AuditRun {
        failed: epochs.unreadable.len(),
        epochs,
        rows: BTreeMap::new(),
        include_superseded: ask.include_superseded,
    };
    match ask.session {
        Some(name) => {
            let tagged = run.epochs.tagged;
            let in_live = !tagged && run.epochs.session("audit", name).is_ok();
            if !tagged && !in_live {
                // Not in the live epoch: an archive may hold it.
                run.epochs = Epochs::open(home, &EpochSelector::All)?;
                run.failed = run.epochs.unreadable.len();
            }
            run.epochs.warn_unreadable("audit");
            run.one_session(name, &closed)?;
        }
        None => {
            run.epochs.warn_unreadable("audit");
            run.every_session(&closed);
        }
    }
    Ok(run)
}

/// The selected epochs; the default view of a home with no ledger yet is
/// empty rather than an error.
fn open(home: &Home, selector: &EpochSelector) -> Result<Epochs, SourceError> {
    let dir = LedgerReader::live_dir(home);
    let no_live = !dir.join(GENESIS_FILE).exists() && crate::ledger::integrity::is_new(&dir)?;
    if *selector == EpochSelector::Live && no_live {
        return Ok(Epochs::none());
    }
    Epochs::open(home, selector)
}

impl AuditRun {
    /// Every verdict, in session order, as it is printed.
    pub fn printed(&self) -> impl Iterator<Item = AuditRow<'_>> {
        let tagged = self.epochs.tagged;
        self.rows.iter().map(move |(session, verdict)| {
            let epoch = verdict.epochs.last().map_or("live", String::as_str);
            AuditRow {
                epoch,
                epochs: (tagged || epoch != "live").then_some(verdict.epochs.as_slice()),
                session,
                classification: &verdict.classification,
            }
        })
    }

    fn one_session(
        &mut self,
        name: &str,
        closed: &BTreeMap<SessionRef, Closed>,
    ) -> Result<(), SourceError> {
        match self.epochs.session("audit", name) {
            Ok(found) => {
                let (session, parts) = (&found.session, &found.parts);
                let whole = self.include_superseded;
                let verdict = verdict(session, parts, closed, &mut self.failed, whole);
                self.rows.insert(session.clone(), verdict);
            }
            Err(SourceError::NoSuchSession(_)) => {
                // Only a recorded closure knows it (its archive is unreadable).
                let known = closed.iter().find(|(s, _)| names(name, s));
                let (session, c) = known.ok_or_else(|| SourceError::NoSuchSession(name.into()))?;
                self.closure_only(session, c);
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn every_session(&mut self, closed: &BTreeMap<SessionRef, Closed>) {
        for (session, parts) in self.epochs.sessions("audit", &mut self.failed) {
            let parts: Vec<&OpenEpoch> = parts.into_iter().map(|(e, _)| e).collect();
            let whole = self.include_superseded;
            let verdict = verdict(&session, &parts, closed, &mut self.failed, whole);
            self.rows.insert(session, verdict);
        }
        if !self.epochs.tagged {
            return;
        }
        // A session only an unreadable archive holds is still known by the
        // closure the next epoch recorded for it.
        let selected: Vec<String> = (self.epochs.open.iter())
            .map(|e| e.genesis_id.clone())
            .chain(self.epochs.unreadable.iter().map(|u| u.label.clone()))
            .collect();
        for (session, c) in closed {
            let wanted = c.archives.iter().any(|a| selected.contains(a));
            if wanted && !self.rows.contains_key(session) {
                self.closure_only(session, c);
            }
        }
    }

    fn closure_only(&mut self, session: &SessionRef, c: &Closed) {
        let mut classification = Classification::eligible();
        classification.add_reasons(c.reasons.clone());
        let verdict = Verdict {
            epochs: c.archives.clone(),
            classification,
        };
        self.rows.insert(session.clone(), verdict);
    }
}

/// A session's verdict from its parts and its recorded closure; a part
/// that cannot be read is reported and counted in `failed`.
fn verdict(
    session: &SessionRef,
    parts: &[&OpenEpoch],
    closed: &BTreeMap<SessionRef, Closed>,
    failed: &mut usize,
    include_superseded: bool,
) -> Verdict {
    let closed = closed.get(session);
    Verdict {
        epochs: parts.iter().map(|e| e.label.clone()).collect(),
        classification: classify_whole_with(
            "audit",
            session,
            parts,
            closed,
            failed,
            include_superseded,
        ),
    }
}
