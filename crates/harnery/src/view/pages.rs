//! The pages `harnery view` makes: the rows a session's page needs, read
//! from each selected epoch that holds part of it, drawn with [`super::page`];
//! and the index of every session (newest first) with each session's page
//! written beside it. The only part of the view that reads the ledger or
//! writes a file.
//!
//! A range a resume superseded is drawn marked and counted as `show`
//! counts it; a restored session's copy of its parent's record is drawn as
//! inherited (its turns are the parent's). Index rows are counted as
//! `sessions` counts them: without superseded ranges.

use std::path::{Path, PathBuf};

use super::index::IndexRow;
use super::{PartRows, build, page, page_file, page_files};
use crate::contract::{Event, SessionRef};
use crate::epoch::EpochError;
use crate::home::Home;
use crate::ledger::{LedgerError, LedgerReader, SpanRow};
use crate::report::epochs::{
    Epochs, OpenEpoch, SessionParts, WholeSession, classify_whole, report_damaged,
};
use crate::report::inherited::Inherited;
use crate::report::source::{SourceError, closed_sessions};
use crate::report::superseded::{mark_timeline, superseded};
use crate::report::timeline::Timeline;
use crate::restore::log::SessionLog;

/// Why a page or the index could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Epoch(#[from] EpochError),
    #[error("writing {}: {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
    #[error(
        "the index links to one page per session, so it needs a file \
                    (e.g. -o index.html); name a session to print its page to stdout"
    )]
    IndexNeedsFile,
}

/// Where one session's page goes: `-` is standard output; no output is
/// the session's default page file.
pub enum PageTarget {
    Stdout,
    File(PathBuf),
}

impl PageTarget {
    pub fn of(output: Option<&Path>, session: &SessionRef) -> PageTarget {
        match output {
            Some(p) if p == Path::new("-") => PageTarget::Stdout,
            Some(p) => PageTarget::File(p.to_path_buf()),
            None => PageTarget::File(PathBuf::from(page_file(&session.session_id))),
        }
    }
}

/// What one epoch's part of a session gives the view.
struct PartRead {
    timeline: Timeline,
    spans: Vec<SpanRow>,
    events: Vec<Event>,
}

/// A session's page, and whether any of its rows could not be read (each
/// reported on stderr).
pub fn session_page(epochs: &Epochs, found: &SessionParts) -> Result<(String, bool), ViewError> {
    let read: Vec<(&OpenEpoch, PartRead)> = found.read("view", epochs, read_part)?;
    let mut damaged = false;
    for (epoch, part) in &read {
        damaged |= report_damaged("view", &epoch.label, &part.timeline.damaged_rows);
    }
    let parts: Vec<PartRows> = read
        .iter()
        .map(|(epoch, p)| PartRows {
            epoch: &epoch.label,
            timeline: &p.timeline,
            spans: &p.spans,
            events: &p.events,
        })
        .collect();
    Ok((page::render(&build(&parts, epochs.tagged)), damaged))
}

/// What [`write_site`] wrote.
pub struct Site {
    pub index: PathBuf,
    pub pages: usize,
    /// Whether anything could not be read (each reported on stderr).
    pub problems: bool,
}

/// The index at `output` (default `index.html`; never standard output)
/// and every session's page beside it.
pub fn write_site(home: &Home, epochs: &Epochs, output: Option<&Path>) -> Result<Site, ViewError> {
    if output == Some(Path::new("-")) {
        return Err(ViewError::IndexNeedsFile);
    }
    let index = output.unwrap_or(Path::new("index.html"));
    let dir = index.parent().unwrap_or(Path::new(""));
    let closed = closed_sessions(home)?;
    let mut failed = 0;
    let wholes = epochs.newest_first("view", &mut failed);
    let refs: Vec<SessionRef> = wholes.iter().map(|w| w.session.clone()).collect();
    let files = page_files(&refs);
    let mut rows = Vec::with_capacity(wholes.len());
    let mut damaged = false;
    for (whole, file) in wholes.into_iter().zip(files) {
        let class = classify_whole(
            "view",
            &whole.session,
            &whole.parts,
            closed.get(&whole.session),
            &mut failed,
        );
        let (html, d) = session_page(epochs, &parts_of(&whole))?;
        damaged |= d;
        write_file(&dir.join(&file), &html)?;
        let mut summary = whole.summary;
        for part in &whole.parts {
            superseded(&part.ledger, &whole.session)?.leave_out(&mut summary);
        }
        rows.push(IndexRow {
            summary,
            eligibility: class.class.to_string(),
            epochs: whole.parts.iter().map(|e| e.label.clone()).collect(),
            file,
        });
    }
    write_file(index, &super::index::render(&rows, epochs.tagged))?;
    Ok(Site {
        index: index.to_path_buf(),
        pages: rows.len(),
        problems: damaged || failed > 0,
    })
}

fn parts_of<'a>(whole: &WholeSession<'a>) -> SessionParts<'a> {
    SessionParts {
        session: whole.session.clone(),
        parts: whole.parts.clone(),
    }
}

fn read_part(ledger: &LedgerReader, session: &SessionRef) -> Result<PartRead, LedgerError> {
    let (mut timeline, events) = crate::report::timeline::with_events(ledger, session)?;
    let log = SessionLog::read_resumes(ledger, session)?;
    mark_timeline(ledger, &log, &mut timeline, false)?;
    let inherited = Inherited::of(ledger, session)?;
    inherited.mark(&mut timeline, &events);
    let events = inherited.own(&events).into_iter().cloned().collect();
    Ok(PartRead {
        timeline,
        spans: ledger.spans().list(Some(session))?,
        // Rows that do not parse are named once, by the timeline.
        events,
    })
}

/// Write one page.
pub fn write_file(path: &Path, html: &str) -> Result<(), ViewError> {
    std::fs::write(path, html).map_err(|err| ViewError::Write {
        path: path.to_path_buf(),
        err,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::AdapterId;

    #[test]
    fn a_page_goes_to_stdout_a_named_file_or_its_default() {
        let s = SessionRef {
            adapter: AdapterId::Copilot,
            session_id: "9c520b8b-ad43-42aa".into(),
        };
        assert!(matches!(
            PageTarget::of(Some(Path::new("-")), &s),
            PageTarget::Stdout
        ));
        let named = PageTarget::of(Some(Path::new("out/x.html")), &s);
        assert!(matches!(named, PageTarget::File(p) if p == Path::new("out/x.html")));
        let default = PageTarget::of(None, &s);
        assert!(matches!(default, PageTarget::File(p) if p == Path::new("9c520b8b.html")));
    }

    #[test]
    fn the_index_is_never_written_to_stdout() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let err = write_site(&home, &Epochs::none(), Some(Path::new("-")))
            .err()
            .expect("refused");
        assert!(matches!(err, ViewError::IndexNeedsFile));
        assert!(!dir.path().join("index.html").exists());
    }
}
