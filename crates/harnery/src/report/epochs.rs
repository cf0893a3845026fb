//! The epochs a read command looks at (`--epoch live|all|<genesis id>`),
//! opened read-only, and a session's parts across epoch boundaries.
//!
//! Beside [`super::source`], the only part of the read side that opens a
//! ledger. The default (`live`) opens the live epoch exactly as every read
//! command always has, so its errors and output stay what scripts expect.
//! Any other selection opens each chosen epoch on its own: one that cannot
//! be opened (a damaged file, a newer contract generation) is set aside
//! with its reason, and the rest are still read. Nothing here writes.

use crate::contract::session_name::NameError;
use std::collections::BTreeMap;

use super::audit::Classification;
use super::source::{Closed, SourceError, resolve};
use super::stored_reasons::part_reasons_with;
use crate::contract::SessionRef;
use crate::epoch::{EpochEntry, EpochSelector, select};
use crate::home::Home;
use crate::ledger::ListFacts;
use crate::ledger::{LedgerError, LedgerReader, SessionSummary, SpanCounts};

/// One epoch opened for reading.
pub struct OpenEpoch {
    /// `live`, or the genesis id of an archive.
    pub label: String,
    pub genesis_id: String,
    pub ledger: LedgerReader,
}

/// An epoch that was selected but could not be read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableEpoch {
    pub label: String,
    pub reason: String,
}

/// The selected epochs in chain order (oldest first, the live one last).
pub struct Epochs {
    pub open: Vec<OpenEpoch>,
    pub unreadable: Vec<UnreadableEpoch>,
    /// Whether rows carry their epoch: every selection but the default.
    pub tagged: bool,
}

/// A session as the selected epochs hold it: one part per epoch it has
/// events in, in chain order.
pub struct SessionParts<'a> {
    pub session: SessionRef,
    pub parts: Vec<&'a OpenEpoch>,
}

impl Epochs {
    /// Open what `selector` names. An unknown id is an error naming the
    /// known ones; with `live`, a live epoch that cannot be opened is too.
    pub fn open(home: &Home, selector: &EpochSelector) -> Result<Epochs, SourceError> {
        if *selector == EpochSelector::Live {
            return Ok(Epochs::live(LedgerReader::open(home)?));
        }
        let mut epochs = Epochs {
            open: Vec::new(),
            unreadable: Vec::new(),
            tagged: true,
        };
        for entry in select(home, selector)? {
            epochs.add(home, &entry);
        }
        Ok(epochs)
    }

    /// Only the live epoch, already open.
    pub(crate) fn live(ledger: LedgerReader) -> Epochs {
        let genesis_id = ledger.genesis().genesis_id.clone();
        Epochs {
            open: vec![OpenEpoch {
                label: "live".into(),
                genesis_id,
                ledger,
            }],
            unreadable: Vec::new(),
            tagged: false,
        }
    }

    fn add(&mut self, home: &Home, entry: &EpochEntry) {
        match entry.open(home).map_err(|e| e.to_string()) {
            Ok(ledger) => self.open.push(OpenEpoch {
                label: entry.label().to_string(),
                genesis_id: entry.genesis_id.clone(),
                ledger,
            }),
            Err(reason) => self.unreadable.push(UnreadableEpoch {
                label: entry.label().to_string(),
                reason,
            }),
        }
    }

    /// Say on stderr which selected epochs could not be read; with none
    /// readable at all, that is the command's error.
    pub fn report_unreadable(&self, command: &str) -> Result<(), SourceError> {
        if !self.open.is_empty() {
            self.warn_unreadable(command);
        }
        if self.open.is_empty() && !self.unreadable.is_empty() {
            let all: Vec<String> = self
                .unreadable
                .iter()
                .map(|u| format!("epoch {} unreadable: {}", u.label, u.reason))
                .collect();
            return Err(SourceError::NoReadableEpoch(all.join("; ")));
        }
        Ok(())
    }

    /// Say on stderr which selected epochs could not be read.
    pub(crate) fn warn_unreadable(&self, command: &str) {
        for u in &self.unreadable {
            warn(command, &u.label, &u.reason);
        }
    }

    /// Say on stderr which rows the reads so far passed over because
    /// they cannot be read (see `ledger::UnreadableRow`); whether there
    /// was any (the command then exits 1: it found a problem).
    pub fn report_set_aside(&self, command: &str) -> bool {
        let mut any = false;
        for epoch in &self.open {
            for row in epoch.ledger.take_set_aside() {
                crate::terminal::warn(&format!(
                    "harnery {command}: epoch {}: {row}; left out",
                    epoch.label
                ));
                any = true;
            }
        }
        any
    }

    /// No epoch at all: a home with no ledger yet.
    pub(crate) fn none() -> Epochs {
        Epochs {
            open: Vec::new(),
            unreadable: Vec::new(),
            tagged: false,
        }
    }

    /// The session `name` names, with every epoch that holds part of it.
    /// An epoch whose rows cannot be read while resolving is reported on
    /// stderr (as `command`) and left out.
    pub fn session(&self, command: &str, name: &str) -> Result<SessionParts<'_>, SourceError> {
        let mut found: Vec<(&OpenEpoch, SessionRef)> = Vec::new();
        for epoch in &self.open {
            match resolve(&epoch.ledger, name) {
                Ok(session) => found.push((epoch, session)),
                Err(e) if is_no_match(&e) => {}
                Err(e) if self.tagged && !is_ambiguous(&e) => {
                    warn(command, &epoch.label, &e.to_string())
                }
                Err(e) => return Err(e),
            }
        }
        let Some((_, session)) = found.first().cloned() else {
            // A row passed over may be the one asked for: say so.
            self.report_set_aside(command);
            return Err(SourceError::NoSuchSession(name.into()));
        };
        if let Some((_, other)) = found.iter().find(|(_, s)| *s != session) {
            return Err(SourceError::AcrossEpochs {
                name: name.into(),
                first: session,
                second: other.clone(),
            });
        }
        let parts = found.into_iter().map(|(e, _)| e).collect();
        Ok(SessionParts { session, parts })
    }

    /// Every session of the selected epochs, each once, with its summary
    /// in every epoch that holds part of it, ordered by first event time.
    /// An epoch whose session rows cannot be read is reported (as
    /// `command`) and counted in `failed`.
    pub(crate) fn sessions(&self, command: &str, failed: &mut usize) -> Vec<SessionAcross<'_>> {
        self.sessions_kept(command, failed)
            .into_iter()
            .map(|(session, parts)| {
                let parts = parts.into_iter().map(|(e, s, _)| (e, s)).collect();
                (session, parts)
            })
            .collect()
    }

    /// [`Epochs::sessions`], each part with what its rows keep for the list.
    fn sessions_kept(&self, command: &str, failed: &mut usize) -> Vec<KeptAcross<'_>> {
        let mut by: BTreeMap<SessionRef, Vec<KeptPart>> = BTreeMap::new();
        for epoch in &self.open {
            match epoch.ledger.sessions().listed() {
                Ok(list) => {
                    for (s, facts) in list {
                        by.entry(s.session.clone())
                            .or_default()
                            .push((epoch, s, facts));
                    }
                }
                Err(e) => {
                    warn(command, &epoch.label, &e.to_string());
                    *failed += 1;
                }
            }
        }
        let mut out: Vec<_> = by.into_iter().collect();
        out.sort_by(|(a, pa), (b, pb)| {
            let first = |p: &[KeptPart]| p[0].1.first_unix_ns;
            (first(pa), a).cmp(&(first(pb), b))
        });
        out
    }
}

/// One epoch's part of a session: its summary and what its rows keep.
type KeptPart<'a> = (&'a OpenEpoch, SessionSummary, ListFacts);
type KeptAcross<'a> = (SessionRef, Vec<KeptPart<'a>>);

/// A session as one whole: its parts' summaries combined, and the epochs
/// that hold them.
pub(crate) struct WholeSession<'a> {
    pub session: SessionRef,
    pub summary: SessionSummary,
    pub parts: Vec<&'a OpenEpoch>,
    /// What each part's rows keep for the list, in the order of `parts`.
    pub kept: Vec<ListFacts>,
    /// Where the whole's title came from (`record` or `prompt`).
    pub title_source: Option<String>,
}

impl Epochs {
    /// Every session of the selected epochs as a whole, newest activity
    /// first (by last event, then first event; ties by session): a session
    /// restored or forked from an older one sorts by its own last event,
    /// not its parent's start. Failures as [`Epochs::sessions`].
    pub(crate) fn newest_first(&self, command: &str, failed: &mut usize) -> Vec<WholeSession<'_>> {
        let mut out: Vec<WholeSession> = self
            .sessions_kept(command, failed)
            .into_iter()
            .map(|(session, parts)| {
                let summaries: Vec<SessionSummary> =
                    parts.iter().map(|(_, s, _)| s.clone()).collect();
                let mut summary = combine(&summaries).expect("a listed session has a part");
                let title_source = newest_title(&mut summary, &parts);
                WholeSession {
                    session,
                    summary,
                    parts: parts.iter().map(|(e, ..)| *e).collect(),
                    kept: parts.into_iter().map(|(.., k)| k).collect(),
                    title_source,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            let key = |w: &WholeSession| (w.summary.last_unix_ns, w.summary.first_unix_ns);
            (key(b), &a.session).cmp(&(key(a), &b.session))
        });
        out
    }
}

/// A session's classification as a whole: every reason any of its parts
/// gives, and every reason an advance's closure recorded against it. A
/// part whose events cannot be read is reported (as `command`) and
/// counted in `failed`.
pub(crate) fn classify_whole(
    command: &str,
    session: &SessionRef,
    parts: &[&OpenEpoch],
    closed: Option<&Closed>,
    failed: &mut usize,
) -> Classification {
    classify_whole_with(command, session, parts, closed, failed, false)
}

/// [`classify_whole`], with the ranges a resume superseded counted too
/// when `include_superseded`.
pub(crate) fn classify_whole_with(
    command: &str,
    session: &SessionRef,
    parts: &[&OpenEpoch],
    closed: Option<&Closed>,
    failed: &mut usize,
    include_superseded: bool,
) -> Classification {
    let mut whole = Classification::eligible();
    for epoch in parts {
        match part_reasons_with(&epoch.ledger, session, include_superseded) {
            Ok(reasons) => whole.add_reasons(reasons),
            Err(e) => {
                warn(command, &epoch.label, &e.to_string());
                *failed += 1;
            }
        }
    }
    if let Some(c) = closed {
        whole.add_reasons(c.reasons.clone());
    }
    whole
}

/// A session and its summary in each epoch that holds part of it.
pub(crate) type SessionAcross<'a> = (SessionRef, Vec<(&'a OpenEpoch, SessionSummary)>);

impl<'a> SessionParts<'a> {
    /// Read something of the session from each part. With a selection
    /// other than the default, a part that cannot be read is reported (as
    /// `command`) and left out, unless no part can be read at all.
    pub(crate) fn read<T>(
        &self,
        command: &str,
        epochs: &Epochs,
        f: impl Fn(&LedgerReader, &SessionRef) -> Result<T, LedgerError>,
    ) -> Result<Vec<(&'a OpenEpoch, T)>, SourceError> {
        let mut out = Vec::new();
        let mut first_failure = None;
        for epoch in &self.parts {
            match f(&epoch.ledger, &self.session) {
                Ok(v) => out.push((*epoch, v)),
                Err(e) if epochs.tagged => {
                    warn(command, &epoch.label, &e.to_string());
                    first_failure.get_or_insert(format!("{} ({e})", epoch.label));
                }
                Err(e) => return Err(e.into()),
            }
        }
        match (out.is_empty(), first_failure) {
            (true, Some(why)) => Err(SourceError::NoReadableEpoch(why)),
            _ => Ok(out),
        }
    }
}

/// Open one listed epoch as it was written, without asking that it speak
/// this build's digest (for the checks, which report a foreign digest
/// themselves), or say why this build cannot read it.
pub(crate) fn open_as_written(entry: &EpochEntry) -> Result<LedgerReader, String> {
    if let Some(why) = entry.newer_generation() {
        return Err(why);
    }
    if let Err(detail) = &entry.genesis {
        return Err(detail.clone());
    }
    LedgerReader::open_dir(&entry.dir, None).map_err(|e| e.to_string())
}

fn is_no_match(e: &SourceError) -> bool {
    matches!(
        e,
        SourceError::NoSuchSession(_)
            | SourceError::Ledger(LedgerError::UnknownSession(_))
            | SourceError::Ledger(LedgerError::SessionName(NameError::Unknown { .. }))
    )
}

fn is_ambiguous(e: &SourceError) -> bool {
    matches!(
        e,
        SourceError::Ledger(LedgerError::SessionName(NameError::Ambiguous { .. }))
    )
}

/// One stderr line for each row of an epoch a command read around; whether
/// there was any (the command then exits 1: it found a problem).
pub(crate) fn report_damaged(
    command: &str,
    label: &str,
    rows: &[crate::ledger::DamagedRow],
) -> bool {
    for r in rows {
        crate::terminal::warn(&format!(
            "harnery {command}: epoch {label}: row seq {} (event {}) left out: {}",
            r.seq, r.event_id, r.detail
        ));
    }
    !rows.is_empty()
}

/// One stderr line for an epoch a command could not read (or read fully).
pub fn warn(command: &str, label: &str, reason: &str) {
    crate::terminal::warn(&format!(
        "harnery {command}: epoch {label} unreadable: {reason}; the other epochs are still read"
    ));
}

/// The line that separates two parts of one session.
pub fn boundary(from: &OpenEpoch, to: &OpenEpoch) -> String {
    format!(
        "── epoch boundary: {} → {} ──",
        from.genesis_id, to.genesis_id
    )
}

/// One summary for a session's parts: the widest time range, every count
/// summed, and the title, project and cwd of the earliest part that knows
/// them (a later part's first prompt is not the session's first).
pub(crate) fn combine(parts: &[SessionSummary]) -> Option<SessionSummary> {
    let mut whole = parts.first()?.clone();
    for p in &parts[1..] {
        whole.first_unix_ns = whole.first_unix_ns.min(p.first_unix_ns);
        whole.last_unix_ns = whole.last_unix_ns.max(p.last_unix_ns);
        whole.events += p.events;
        whole.turns += p.turns;
        whole.spans = add_counts(whole.spans, p.spans);
        if whole.title.is_none() {
            whole.title.clone_from(&p.title);
        }
        if whole.project.is_none() {
            whole.project.clone_from(&p.project);
        }
        if whole.cwd.is_none() {
            whole.cwd.clone_from(&p.cwd);
        }
    }
    Some(whole)
}

/// The title of a session listed across epochs, as within one: the
/// agent's own title (`record`) wins over a prompt's, and the newest part's
/// own title over an older one's, so a rename made after an advance shows;
/// otherwise the earliest part's prompt title stays ([`combine`]). Sets it
/// on `whole`, and says where it came from.
fn newest_title(whole: &mut SessionSummary, parts: &[KeptPart]) -> Option<String> {
    let titled: Vec<(&SessionSummary, Option<&str>)> = parts
        .iter()
        .map(|(_, s, k)| (s, k.title_source.as_deref()))
        .collect();
    newest_own_title(whole, &titled).map(str::to_string)
}

/// [`newest_title`] over each part's summary and where its title came
/// from, oldest part first: `show` and the list name a session alike.
pub(crate) fn newest_own_title<'s>(
    whole: &mut SessionSummary,
    parts: &[(&SessionSummary, Option<&'s str>)],
) -> Option<&'s str> {
    let renamed = parts
        .iter()
        .rev()
        .find(|(s, source)| s.title.is_some() && *source == Some("record"));
    if let Some((s, source)) = renamed {
        whole.title.clone_from(&s.title);
        return *source;
    }
    parts
        .iter()
        .find(|(s, _)| s.title.is_some())
        .and_then(|(_, source)| *source)
}

fn add_counts(a: SpanCounts, b: SpanCounts) -> SpanCounts {
    SpanCounts {
        open: a.open + b.open,
        closed_native: a.closed_native + b.closed_native,
        recovered: a.recovered + b.recovered,
    }
}

/// How many archived epochs the note on stderr names, as that note.
pub fn archive_note(home: &Home) -> Option<String> {
    let n = crate::epoch::archive_dirs(home).map_or(0, |d| d.len());
    match n {
        0 => None,
        1 => Some("note: 1 archived epoch; --epoch all includes it".into()),
        n => Some(format!(
            "note: {n} archived epochs; --epoch all includes them"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::AdapterId;

    fn summary(first: i64, last: i64, events: u64, open: u64, native: u64) -> SessionSummary {
        SessionSummary {
            session: SessionRef {
                adapter: AdapterId::ClaudeCode,
                session_id: "s".into(),
            },
            first_unix_ns: first,
            last_unix_ns: last,
            events,
            turns: 1,
            spans: SpanCounts {
                open,
                closed_native: native,
                recovered: 0,
            },
            title: None,
            project: None,
            cwd: None,
        }
    }

    #[test]
    fn parts_combine_into_one_range_with_summed_counts() {
        let whole = combine(&[summary(10, 20, 4, 1, 0), summary(30, 50, 12, 0, 2)]).unwrap();
        assert_eq!((whole.first_unix_ns, whole.last_unix_ns), (10, 50));
        assert_eq!((whole.events, whole.turns), (16, 2));
        assert_eq!(
            whole.spans,
            SpanCounts {
                open: 1,
                closed_native: 2,
                recovered: 0
            }
        );
        assert!(combine(&[]).is_none());
    }
}
