//! The reading thread's side of OTLP: one session's rows, read whole
//! (`--since` picks sessions, not rows), handed on in runs of about
//! [`RUN_BYTES`] of text: the rows of its span notes first, then its trace
//! entries (or, in a ledger without them, its stored text) in offset order.

use super::super::rows::RowBatch;
use super::SpanNotes;
use crate::contract::SessionRef;
use crate::ledger::trace_rows::{CHUNK_EVENTS, TraceBatch};
use crate::ledger::{
    ChainMark, ChunkRead, LedgerError, LedgerReader, MarkRange, RowFilter, StoredText,
};
use crate::ordered::Feed;
use crate::progress::Progress;
use crate::report::inherited::Inherited;

/// Bytes of stored text per OTLP job: small beside a session, so that a
/// job holds about as many rows whatever the sessions' length, and what
/// the jobs in flight hold (rows and their parsed events) stays the same.
const RUN_BYTES: usize = 64 * 1024;

/// A run of one session's rows as read, to be parsed off this thread. A
/// session's rows go out in runs of at most about [`RUN_BYTES`] of text
/// (stored or trace entries), so a job's size does not follow the
/// session's.
/// The first run carries the rows its [`SpanNotes`] come from; the last is
/// marked (and may be empty: a session none of whose rows parse still has
/// its root span).
pub(super) struct SessionRun {
    pub(super) session: SessionRef,
    pub(super) notes: Option<RowBatch>,
    /// On the session's first run: what it copied from its parents.
    pub(super) inherited: Option<Inherited>,
    /// The stored text of the rows to parse (every row, or the whole
    /// entries of `chunks`).
    pub(super) rows: RowBatch,
    /// The trace chunks to decode, and how many of `rows` follow each
    /// (the text of its whole entries).
    pub(super) chunks: TraceBatch,
    pub(super) chunk_texts: Vec<usize>,
    /// Every row or chunk in offset order.
    pub(super) items: Vec<RunItem>,
    /// Where the run's rows stand in the chain, in offset order.
    pub(super) marks: Vec<ChainMark>,
    /// The events the run counts (its rows, once decoded).
    pub(super) events: usize,
    pub(super) last: bool,
}

pub(super) enum RunItem {
    /// The next row of [`SessionRun::rows`].
    Text,
    /// The next chunk of [`SessionRun::chunks`].
    Chunk,
}

impl SessionRun {
    fn new(session: SessionRef, source: usize, notes: Option<RowBatch>) -> SessionRun {
        SessionRun {
            session,
            notes,
            inherited: None,
            rows: RowBatch::new(source, RUN_BYTES),
            chunks: TraceBatch::default(),
            chunk_texts: Vec::new(),
            items: Vec::new(),
            marks: Vec::new(),
            events: 0,
            last: false,
        }
    }

    fn full(&self) -> bool {
        self.rows.text.len() + self.chunks.text_len() >= RUN_BYTES
    }

    /// The chain marks of the rows read whole (a ledger without trace
    /// chunks), by their seqs: one range query for the run.
    fn mark_rows(&mut self, ledger: &LedgerReader) -> Result<(), LedgerError> {
        let seqs = self.rows.each().map(|(seq, _, _)| seq);
        let Some((low, high)) = seqs.fold(None, |r: Option<(i64, i64)>, s| {
            Some(r.map_or((s, s), |(l, h)| (l.min(s), h.max(s))))
        }) else {
            return Ok(());
        };
        let marks = &mut self.marks;
        let range = MarkRange::Seqs { low, high };
        ledger
            .chain_marks()
            .each(&self.session, range, |m| marks.push(m))
    }
}

/// What reads one source's sessions for OTLP.
pub(super) struct SessionReader<'a> {
    pub(super) ledger: &'a LedgerReader,
    pub(super) source: usize,
    /// The ledger keeps trace rows: the text of most rows is never read.
    pub(super) traced: bool,
}

impl SessionReader<'_> {
    /// Read one session's rows (whole: `--since` picks sessions, not rows)
    /// and hand them on in runs, the rows of its span notes first
    /// (`noted`: it may have some). False once the writer has stopped.
    pub(super) fn send_runs(
        &self,
        session: SessionRef,
        noted: bool,
        feed: &mut Feed<SessionRun>,
        progress: &Progress,
    ) -> Result<bool, LedgerError> {
        let mut notes = RowBatch::new(self.source, 0);
        let mut add = |row: StoredText<'_>| {
            notes.add(row);
            Ok::<_, LedgerError>(())
        };
        match (noted, self.traced) {
            (false, _) => {}
            (true, true) => self.ledger.trace().for_each_note_text(&session, &mut add)?,
            (true, false) => {
                let types = SpanNotes::TYPES;
                self.ledger
                    .events()
                    .for_each_stored_text_of_types(&session, types, &mut add)?
            }
        }
        let mut run = SessionRun::new(session.clone(), self.source, Some(notes));
        run.inherited = Some(Inherited::of(self.ledger, &session)?);
        let mut open = true;
        let traced = self.traced;
        let ledger = self.ledger;
        let mut send = |run: &mut SessionRun, feed: &mut Feed<SessionRun>| {
            if open && run.full() {
                if !traced {
                    run.mark_rows(ledger)?;
                }
                let next = SessionRun::new(session.clone(), self.source, None);
                open = feed.send(std::mem::replace(run, next));
            }
            Ok::<_, LedgerError>(open)
        };
        if self.traced {
            self.ledger.trace().read_trace_chunks(&session, |read| {
                match read {
                    // A chunk's whole texts follow it: a run is sent only
                    // before a chunk, so they stay in its run.
                    ChunkRead::Entries {
                        first_offset,
                        events,
                        entries,
                    } => {
                        send(&mut run, feed)?;
                        let range = MarkRange::Offsets {
                            first: first_offset,
                            count: events,
                        };
                        let marks = &mut run.marks;
                        ledger
                            .chain_marks()
                            .each(&session, range, |m| marks.push(m))?;
                        progress.add(events);
                        // A count read from the ledger: room for at most
                        // what a chunk can hold.
                        let counted = usize::try_from(events).unwrap_or(CHUNK_EVENTS);
                        run.events += counted.min(CHUNK_EVENTS);
                        run.chunks.push(entries);
                        run.chunk_texts.push(0);
                        run.items.push(RunItem::Chunk);
                    }
                    ChunkRead::Whole(text) => {
                        run.rows.add(text);
                        *run.chunk_texts
                            .last_mut()
                            .expect("a text follows its chunk") += 1;
                    }
                }
                Ok::<_, LedgerError>(())
            })?;
        } else {
            let whole = RowFilter {
                session: Some(session.clone()),
                since_unix_ns: None,
            };
            self.ledger.events().for_each_stored_text(&whole, |row| {
                progress.add(1);
                run.rows.add(row);
                run.items.push(RunItem::Text);
                run.events += 1;
                send(&mut run, feed)?;
                Ok::<_, LedgerError>(())
            })?;
            run.mark_rows(self.ledger)?;
        }
        run.last = true;
        Ok(open && feed.send(run))
    }
}
