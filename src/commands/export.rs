//! `harnery export [--format jsonl|otlp] [--session S] [--since T] [--epoch E]`.
//!
//! Every format streams: rows are read, written and dropped, so an export
//! holds a few batches of rows at a time, never the ledger nor a whole
//! session (OTLP keeps only the session's open spans and per-turn tallies,
//! `read::export::otlp::TraceStream`). The thread that reads the ledger
//! only reads; checking and parsing run beside it
//! (`read::export::ordered`), and the writer builds spans as they end.
//!
//! - JSON lines: each row's stored text, in chain order (in offset order
//!   with `--session`). With `--epoch` other than the default, each line
//!   ends with `"epoch":"<label>"`.
//! - OTLP: `ExportTraceServiceRequest` documents, one per line, each with
//!   at most `SPANS_PER_DOCUMENT` spans; a session's spans may go on in
//!   the next document under a repeat of its resource. A session's spans
//!   come as they end (tool and command spans at their terminal; open
//!   spans, turns and the root at its last row). With `--epoch`, each
//!   resource carries `harnery.epoch`.
//!
//! OTLP reads each event's trace entry (`ledger::trace_rows`) rather than
//! its text, and parses the text only of the few events whose trace needs
//! more; a ledger without trace entries is read from its text.
//!
//! `--since T` keeps JSON lines at or after T, and OTLP sessions with any
//! event at or after T (whole sessions: a trace cut at T would misstate
//! its spans). A row that cannot be used (not JSON; for OTLP, not an event,
//! or a trace entry that does not decode) is named on stderr by its
//! sequence number (and event id, where known), and the export goes on to
//! the end, then exits 1.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::AsFd;

use super::{CmdError, CmdResult, EpochArg, Outcome};
use harnery::contract::{Event, SessionRef};
use harnery::export::SPANS_PER_DOCUMENT;
use harnery::export::jsonl::{self, JsonLines};
use harnery::export::ordered::{Feed, run_ordered, workers};
use harnery::export::otlp::{
    Documents, Part, RunText, SpanNotes, TraceStream, Traced, keep_traced_fields,
};
use harnery::home::Home;
use harnery::ledger::ChunkRead;
use harnery::ledger::trace_rows::{CHUNK_EVENTS, TraceBatch};
use harnery::ledger::{LedgerError, LedgerReader, RowFilter, StoredText};
use harnery::progress::Progress;
use harnery::report::epochs::{Epochs, OpenEpoch, warn};

/// Bytes of stored text per JSON lines job.
const BATCH_BYTES: usize = 256 * 1024;

/// Bytes of stored text per OTLP job: small beside a session, so that a
/// job holds about as many rows whatever the sessions' length, and what
/// the jobs in flight hold (rows and their parsed events) stays the same.
const RUN_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Format {
    /// One canonical event per line: each row's stored text.
    Jsonl,
    /// OTLP/JSON ExportTraceServiceRequest documents, one per line, each
    /// with a bounded number of spans.
    Otlp,
}

#[derive(Debug, clap::Args)]
#[command(after_help = after_help())]
pub struct Args {
    #[arg(long, value_enum, default_value = "jsonl")]
    format: Format,
    /// Only this session (its id, or adapter/id).
    #[arg(long)]
    session: Option<String>,
    /// Only events at or after this RFC 3339 time (OTLP: sessions with an
    /// event at or after it, whole).
    #[arg(long, value_name = "RFC3339", value_parser = super::parse_instant)]
    since: Option<i64>,
    #[command(flatten)]
    epoch: EpochArg,
}

fn after_help() -> String {
    format!(
        "OTLP documents carry at most {SPANS_PER_DOCUMENT} spans each; a session with more \
         goes on in the next document under a repeat of its resource. A recovered span \
         ends at its request time; its recovery bound is an attribute, never a duration.\n\
         A row that cannot be exported is named on stderr by its seq and event id, and the \
         export goes on to the end; the exit code is then 1."
    )
}

/// Where an export writes: standard output as a plain file. `Stdout`
/// looks for the last newline in every write it is given (it flushes at
/// lines), which for hundreds of megabytes of lines is work for nothing;
/// the buffer in front of it already writes whole blocks.
type Out = BufWriter<File>;

fn stdout_file() -> std::io::Result<File> {
    Ok(File::from(std::io::stdout().as_fd().try_clone_to_owned()?))
}

/// One epoch to read, and which of its rows.
struct Source<'e> {
    epoch: &'e OpenEpoch,
    filter: RowFilter,
}

/// What the workers know of a source: no ledger handle leaves the reading
/// thread.
struct Label {
    /// The epoch label rows carry, when they carry one.
    tag: Option<String>,
    /// The genesis id of an archived epoch.
    archive: Option<String>,
}

impl Label {
    /// `epoch <label>: ` where rows carry their epoch.
    fn epoch_prefix(&self) -> String {
        self.tag
            .as_ref()
            .map_or(String::new(), |t| format!("epoch {t}: "))
    }

    fn of(epochs: &Epochs, source: &Source<'_>) -> Label {
        let epoch = source.epoch;
        Label {
            tag: epochs.tagged.then(|| epoch.label.clone()),
            archive: (epoch.label != "live").then(|| epoch.genesis_id.clone()),
        }
    }
}

pub fn run(args: Args) -> CmdResult {
    let since = args.since;
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("export")?;
    let sources = sources(&epochs, args.session.as_deref(), since)?;
    let out = BufWriter::with_capacity(1 << 16, stdout_file()?);
    let progress = super::progress::bar("rows", false);
    progress.stage("export");
    let damaged = match args.format {
        Format::Jsonl => export_jsonl(&epochs, &sources, out, &progress)?,
        Format::Otlp => export_otlp(&epochs, &sources, since, out, &progress)?,
    };
    let set_aside = epochs.report_set_aside("export");
    Ok(if damaged > 0 || set_aside {
        Outcome::Problems
    } else {
        Outcome::Clean
    })
}

fn sources<'e>(
    epochs: &'e Epochs,
    session: Option<&str>,
    since: Option<i64>,
) -> Result<Vec<Source<'e>>, CmdError> {
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

/// Read every source; an epoch that fails part way is reported and the
/// rest still read, unless only the live epoch was asked for.
fn each_source<'e>(
    epochs: &Epochs,
    sources: &'e [Source<'e>],
    mut read: impl FnMut(usize, &'e Source<'e>) -> Result<bool, LedgerError>,
) -> Result<(), CmdError> {
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

/// Consecutive rows of one source as read (a JSON lines job, or one
/// session's rows for OTLP): their stored text, each followed by a newline
/// (so that, all rows sound and untagged, a JSON lines job is its own
/// output), their ids, and each row's (seq, end of id, end of text).
struct RowBatch {
    source: usize,
    text: Vec<u8>,
    ids: Vec<u8>,
    rows: Vec<(i64, usize, usize)>,
}

impl RowBatch {
    fn new(source: usize, bytes: usize) -> RowBatch {
        RowBatch {
            source,
            text: Vec::with_capacity(bytes + 4096),
            ids: Vec::new(),
            rows: Vec::new(),
        }
    }

    fn add(&mut self, row: StoredText<'_>) {
        self.ids.extend_from_slice(row.id.as_bytes());
        self.text.extend_from_slice(row.json);
        self.rows.push((row.seq, self.ids.len(), self.text.len()));
        self.text.push(b'\n');
    }

    /// Each row: seq, id, stored text (without its newline).
    fn each(&self) -> impl Iterator<Item = (i64, &[u8], &[u8])> {
        let mut starts = (0, 0);
        self.rows.iter().map(move |&(seq, id_end, end)| {
            let (id, text) = (&self.ids[starts.0..id_end], &self.text[starts.1..end]);
            starts = (id_end, end + 1);
            (seq, id, text)
        })
    }
}

/// Lines ready to write, and what was left out.
struct Lines {
    bytes: Vec<u8>,
    problems: Vec<String>,
}

fn export_jsonl(
    epochs: &Epochs,
    sources: &[Source<'_>],
    out: Out,
    progress: &Progress,
) -> Result<usize, CmdError> {
    let labels: Vec<Label> = sources.iter().map(|s| Label::of(epochs, s)).collect();
    let writers: Vec<JsonLines> = labels
        .iter()
        .map(|l| JsonLines::new(l.tag.as_deref()))
        .collect();
    let produce = |feed: &mut Feed<RowBatch>| {
        each_source(epochs, sources, |i, source| {
            let mut batch = RowBatch::new(i, BATCH_BYTES);
            let mut open = true;
            source
                .epoch
                .ledger
                .for_each_stored_text(&source.filter, |row| {
                    if open {
                        progress.add(1);
                        batch.add(row);
                        if batch.text.len() >= BATCH_BYTES {
                            open = feed
                                .send(std::mem::replace(&mut batch, RowBatch::new(i, BATCH_BYTES)));
                        }
                    }
                    Ok::<_, LedgerError>(())
                })?;
            Ok(open && feed.send(batch))
        })
    };
    let work = |batch: RowBatch| lines_of(&writers[batch.source], &labels[batch.source], batch);
    finish(run_ordered(
        workers(),
        8,
        produce,
        work,
        (out, 0),
        write_lines,
    ))
}

/// A batch's lines. Untagged and sound, the batch's own text is the
/// output; otherwise lines are built row by row.
fn lines_of(writer: &JsonLines, label: &Label, batch: RowBatch) -> Lines {
    let sound = |text: &[u8]| jsonl::check(text).is_ok();
    if writer.untagged() && batch.each().all(|(_, _, text)| sound(text)) {
        return Lines {
            bytes: batch.text,
            problems: Vec::new(),
        };
    }
    let mut lines = Lines {
        bytes: Vec::with_capacity(batch.text.len() + batch.rows.len() * 32),
        problems: Vec::new(),
    };
    for (seq, id, text) in batch.each() {
        if writer.push(text, &mut lines.bytes).is_err() {
            let id = String::from_utf8_lossy(id);
            let what = "is not a JSON object on one line; left out";
            lines.problems.push(damaged(label, seq, Some(&id), what));
        }
    }
    lines
}

fn write_lines(sink: &mut LineSink, lines: Lines) -> std::io::Result<()> {
    report(&mut sink.1, &lines.problems);
    sink.0.write_all(&lines.bytes)
}

/// A run of one session's rows as read, to be parsed off this thread. A
/// session's rows go out in runs of at most about [`RUN_BYTES`] of text
/// (stored or trace entries), so a job's size does not follow the
/// session's.
/// The first run carries the rows its [`SpanNotes`] come from; the last is
/// marked (and may be empty: a session none of whose rows parse still has
/// its root span).
struct SessionRun {
    session: SessionRef,
    notes: Option<RowBatch>,
    /// The stored text of the rows to parse (every row, or the whole
    /// entries of `chunks`).
    rows: RowBatch,
    /// The trace chunks to decode, and how many of `rows` follow each
    /// (the text of its whole entries).
    chunks: TraceBatch,
    chunk_texts: Vec<usize>,
    /// Every row or chunk in offset order.
    items: Vec<RunItem>,
    /// The events the run counts (its rows, once decoded).
    events: usize,
    last: bool,
}

enum RunItem {
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
            rows: RowBatch::new(source, RUN_BYTES),
            chunks: TraceBatch::default(),
            chunk_texts: Vec::new(),
            items: Vec::new(),
            events: 0,
            last: false,
        }
    }

    fn full(&self) -> bool {
        self.rows.text.len() + self.chunks.text_len() >= RUN_BYTES
    }
}

/// A run's rows as its trace takes them (events parsed and stripped to
/// what the trace reads, tool rows and marks decoded from their entries,
/// their strings in `text`), and the rows it had to leave out.
struct ParsedRun {
    session: SessionRef,
    source: usize,
    notes: Option<SpanNotes>,
    rows: Vec<Traced>,
    /// The strings `rows` name.
    text: RunText,
    last: bool,
    problems: Vec<String>,
}

fn export_otlp(
    epochs: &Epochs,
    sources: &[Source<'_>],
    since: Option<i64>,
    out: Out,
    progress: &Progress,
) -> Result<usize, CmdError> {
    let labels: Vec<Label> = sources.iter().map(|s| Label::of(epochs, s)).collect();
    let produce = |feed: &mut Feed<SessionRun>| {
        each_source(epochs, sources, |i, source| {
            let ledger = &source.epoch.ledger;
            let traced = ledger.keeps_trace_rows()?;
            let (sessions, noted) = match &source.filter.session {
                Some(s) => {
                    let sessions = ledger.session_refs(since)?.into_iter();
                    (sessions.filter(|r| r == s).collect(), None)
                }
                // Few sessions have notes: the index of note rows (or one
                // pass over the type column) finds them, and spares every
                // other session a read of all its rows for none.
                None if traced => (
                    ledger.session_refs(since)?,
                    Some(ledger.sessions_with_notes()?),
                ),
                None => (
                    ledger.session_refs(since)?,
                    Some(ledger.sessions_with_types(SpanNotes::TYPES)?),
                ),
            };
            for session in sessions {
                let notes = noted.as_ref().is_none_or(|n| n.contains(&session));
                let reader = SessionReader {
                    ledger,
                    source: i,
                    traced,
                };
                if !reader.send_runs(session, notes, feed, progress)? {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    };
    let work = |run: SessionRun| parse_run(&labels[run.rows.source], run);
    let sink = TraceSink {
        docs: Documents::new(out, SPANS_PER_DOCUMENT),
        damaged: 0,
        stream: None,
    };
    let consume = |sink: &mut TraceSink, run: ParsedRun| sink.take(&labels, run);
    let (made, written) = run_ordered(workers(), 8, produce, work, sink, consume);
    let sink = finish_sink(made, written)?;
    sink.docs.finish()?.flush()?;
    Ok(sink.damaged)
}

/// What reads one source's sessions for OTLP.
struct SessionReader<'a> {
    ledger: &'a LedgerReader,
    source: usize,
    /// The ledger keeps trace rows: the text of most rows is never read.
    traced: bool,
}

impl SessionReader<'_> {
    /// Read one session's rows (whole: `--since` picks sessions, not rows)
    /// and hand them on in runs, the rows of its span notes first
    /// (`noted`: it may have some). False once the writer has stopped.
    fn send_runs(
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
            (true, true) => self.ledger.for_each_note_text(&session, &mut add)?,
            (true, false) => {
                let types = SpanNotes::TYPES;
                self.ledger
                    .for_each_stored_text_of_types(&session, types, &mut add)?
            }
        }
        let mut run = SessionRun::new(session.clone(), self.source, Some(notes));
        let mut open = true;
        let mut send = |run: &mut SessionRun, feed: &mut Feed<SessionRun>| {
            if open && run.full() {
                let next = SessionRun::new(session.clone(), self.source, None);
                open = feed.send(std::mem::replace(run, next));
            }
            open
        };
        if self.traced {
            self.ledger.read_trace_chunks(&session, |read| {
                match read {
                    // A chunk's whole texts follow it: a run is sent only
                    // before a chunk, so they stay in its run.
                    ChunkRead::Entries { events, entries } => {
                        send(&mut run, feed);
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
            self.ledger.for_each_stored_text(&whole, |row| {
                progress.add(1);
                run.rows.add(row);
                run.items.push(RunItem::Text);
                run.events += 1;
                send(&mut run, feed);
                Ok::<_, LedgerError>(())
            })?;
        }
        run.last = true;
        Ok(open && feed.send(run))
    }
}

/// Parse a stored text as an event. Checked once as a whole, the text is
/// parsed without a UTF-8 check per string.
fn parse_event(json: &[u8]) -> Result<Event, String> {
    let text = std::str::from_utf8(json).map_err(|e| e.to_string())?;
    serde_json::from_str::<Event>(text).map_err(|e| e.to_string())
}

fn parse_run(label: &Label, run: SessionRun) -> ParsedRun {
    // A note row that does not parse is named where the session's rows
    // meet it again, below, like any other.
    let notes = run.notes.map(|rows| {
        let mut notes = SpanNotes::default();
        for (_, _, json) in rows.each() {
            if let Ok(event) = parse_event(json) {
                notes.add(event);
            }
        }
        notes
    });
    let mut problems = Vec::new();
    let mut rows = Vec::with_capacity(run.events);
    let mut texts = run.rows.each();
    let mut chunks = 0..run.chunks.len();
    let parse = |(seq, id, json): (i64, &[u8], &[u8]),
                 rows: &mut Vec<Traced>,
                 problems: &mut Vec<String>| match parse_event(json) {
        Ok(mut event) => {
            keep_traced_fields(&mut event);
            rows.push(Traced::Event(Box::new(event)));
        }
        Err(e) => {
            let id = String::from_utf8_lossy(id);
            let what = format!("does not parse as an event ({e}); left out of its session's trace");
            problems.push(damaged(label, seq, Some(&id), &what));
        }
    };
    let mut text = RunText::default();
    for item in run.items {
        match item {
            RunItem::Text => parse(
                texts.next().expect("a text item has its row"),
                &mut rows,
                &mut problems,
            ),
            RunItem::Chunk => {
                let at = chunks.next().expect("a chunk item has its chunk");
                // The texts the reader found for this chunk's whole entries.
                let mut found: Vec<_> = texts.by_ref().take(run.chunk_texts[at]).collect();
                // A chunk that does not decode is left out whole.
                let kept = (rows.len(), problems.len());
                let decoded = run.chunks.each_entry(at, |(seq, facts)| {
                    let facts = match facts {
                        Ok(facts) => facts,
                        Err(why) => {
                            let what = format!(
                                "has a trace entry that cannot be used ({why}); left out of its session's trace"
                            );
                            problems.push(damaged(label, seq, None, &what));
                            return;
                        }
                    };
                    if let Some(traced) = Traced::of_facts(facts, &mut text) {
                        rows.push(traced);
                        return;
                    }
                    // A whole entry: its text, unless its event row is gone.
                    match found.iter().position(|(s, _, _)| *s == seq) {
                        Some(i) => parse(found.remove(i), &mut rows, &mut problems),
                        None => problems.push(damaged(
                            label,
                            seq,
                            None,
                            "has a trace entry whose event row is not there; left out of its session's trace",
                        )),
                    }
                });
                if let Err(why) = decoded {
                    rows.truncate(kept.0);
                    problems.truncate(kept.1);
                    let session = &run.session;
                    problems.push(format!(
                        "harnery export: {}session {}/{} has a trace chunk that cannot be read ({why}); its events are left out of its trace",
                        label.epoch_prefix(), session.adapter, session.session_id
                    ));
                }
            }
        }
    }
    ParsedRun {
        session: run.session,
        source: run.rows.source,
        notes,
        rows,
        text,
        last: run.last,
        problems,
    }
}

/// The writer's side of OTLP: the documents, the rows left out so far,
/// and the trace of the session being read.
struct TraceSink {
    docs: Documents<Out>,
    damaged: usize,
    stream: Option<TraceStream>,
}

impl TraceSink {
    /// Take one run: its session's spans as they end, and at the
    /// session's last run the rest of its trace.
    fn take(&mut self, labels: &[Label], run: ParsedRun) -> std::io::Result<()> {
        report(&mut self.damaged, &run.problems);
        let docs = &mut self.docs;
        if let Some(notes) = run.notes {
            let label = &labels[run.source];
            let part = Part {
                epoch_tag: label.tag.as_deref(),
                archive: label.archive.as_deref(),
            };
            let stream = TraceStream::new(run.session, part, notes);
            docs.start_resource(stream.resource_head());
            self.stream = Some(stream);
        }
        let stream = self
            .stream
            .as_mut()
            .expect("a session's first run carries its notes");
        for row in run.rows {
            stream.take(row, &run.text, docs)?;
        }
        if run.last {
            let stream = self.stream.take().expect("the session is open");
            stream.finish(docs)?;
            docs.end_resource();
        }
        Ok(())
    }
}

/// A row left out, as stderr names it (by its event id too, where known).
fn damaged(label: &Label, seq: i64, id: Option<&str>, what: &str) -> String {
    let event = id.map_or(String::new(), |id| format!(" (event {id})"));
    format!(
        "harnery export: {}row seq {seq}{event} {what}",
        label.epoch_prefix()
    )
}

fn report(count: &mut usize, problems: &[String]) {
    for p in problems {
        harnery::terminal::warn(p);
    }
    *count += problems.len();
}

type LineSink = (Out, usize);

fn finish(
    (made, written): (Result<(), CmdError>, std::io::Result<LineSink>),
) -> Result<usize, CmdError> {
    let (mut out, damaged) = finish_sink(made, written)?;
    out.flush()?;
    Ok(damaged)
}

/// The writer's error first (a closed pipe ends the reading early, so the
/// reader's answer is moot), then the reader's.
fn finish_sink<S>(made: Result<(), CmdError>, written: std::io::Result<S>) -> Result<S, CmdError> {
    let sink = written?;
    made?;
    Ok(sink)
}
