//! Stage one: seal the intake spool, normalize its records with the
//! per-session producer, keep each chunk's raw archive, and hand its batch
//! to stage two in memory. A chunk's intake files stay until the commit of
//! its batch is durable: they, not a ready file, are what a run that stops
//! earlier leaves for the next one to drain again.
//!
//! Work is cut into chunks of whole spool files (bounded by bytes, so peak
//! memory does not grow with the spool), in a fixed order: adapter, session
//! key, then file age. The same spool therefore always yields the same
//! chunks, and a rerun after a crash produces the same events in the same
//! chain order as an uninterrupted run.
//!
//! Beside it: `intake/normalizer.rs`, stage one's view of the ledger while
//! chunks are still uncommitted; `intake/spool_health.rs`, the health events
//! about the spool itself (damage, unknown adapters); `intake/checkpoints.rs`,
//! the thread that makes committed batches durable, releases them and
//! checkpoints.

mod checkpoints;
mod normalizer;
mod spool_health;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::sync_channel;

use super::apply::remove_segment;
use super::steps::Run;
use super::summary::{DamagedRange, FinalizeOptions};
use super::{FinalizeError, ready, timing};
use crate::agents::{self, RawSignal};
use crate::clock::ClockSample;
use crate::contract::{AdapterId, SessionRef};
use crate::failpoint;
use crate::home::Home;
use crate::ledger::{
    AppendBatch, BatchSignal, Checkpointer, LedgerReader, MadeAhead, RawBytes, ReadyEvent,
    WorkAhead, binary_digest, raw,
};
use crate::spool::reader::{RecordView, read_views};
use crate::spool::{Damage, IntakeSpool, read_segment_whole};
use checkpoints::{Checkpointed, Committed, wal_restart_frames};
use normalizer::Normalizer;
use spool_health::SpoolHealth;

/// A chunk closes once its files reach this many bytes
/// (`HARNERY_CHUNK_BYTES` overrides it in failpoint builds, for tests that
/// want many chunks). A chunk's batch in memory (event text, parsed events,
/// signal rows) is roughly three times its spool bytes (estimated from
/// the rows' sizes, not measured apart), and [`IN_FLIGHT`]
/// of them are held at once.
const CHUNK_BYTES: u64 = 2 << 20;

fn chunk_bytes() -> u64 {
    failpoint::tuning(failpoint::CHUNK_BYTES_ENV).unwrap_or(CHUNK_BYTES)
}
/// A chunk also closes at this many files: each session file brings its
/// session's producer (state of up to ~100 KiB, parsed and serialized
/// again), so a chunk of many small files (the record pass: one small
/// file for each of a thousand sessions) would hold a thousand producers
/// at once.
const CHUNK_FILES: usize = 64;
/// How many chunks may be uncommitted while one is normalized: that one,
/// one queued for flushing (the queue absorbs an fsync that takes long),
/// one being flushed and one being appended. The flushing stage hands a
/// chunk to the appending one without a queue (a rendezvous: it starts its
/// next chunk only once the appender took the last), so four chunks' rows
/// are in memory at most (a queue of one there too held five).
const IN_FLIGHT: usize = 4;
/// The session damaged spool ranges are recorded under.
pub(crate) const SPOOL_HEALTH_SESSION: &str = "harnery:spool";

/// One spool file to drain and the adapter directory it sits in.
struct SpoolFile {
    path: PathBuf,
    adapter_dir: String,
    /// The session's directory name (empty for a dead letter).
    session_key: String,
    size: u64,
}

impl Run<'_> {
    /// Seal every session and drain all sealed files, chunk by chunk, in a
    /// pipeline of three threads: one reads and normalizes chunks, one keeps
    /// their raw archive (links, then fsync) and makes their chain links and
    /// stored bodies ahead, and this one appends them, so the stages overlap.
    /// A fourth syncs the WAL, then releases the batches committed before
    /// that sync (deletes their intake files), and every 16th batch
    /// checkpoints (`intake/checkpoints.rs`): commits here do not wait for
    /// their own fsync (see `ledger::write::checkpoint`). Chunks pass
    /// through in order, so the order of batches, and so of the chain, is
    /// unchanged. (Reading on a thread of its own was measured slower on two
    /// cores.)
    pub(super) fn drain(&mut self) -> Result<(), FinalizeError> {
        let (home, opts) = (self.home, self.opts);
        let files = seal_all(home)?;
        failpoint::hit("after-seal");
        let t = std::time::Instant::now();
        let chunks = plan(home, &self.ledger, files)?;
        timing("plan", t);
        if chunks.is_empty() {
            return Ok(());
        }
        let mut normalizer = Normalizer {
            ledger: LedgerReader::open_dir(self.ledger.dir(), None)?,
            now_unix_ns: opts.now_unix_ns,
            states: HashMap::new(),
            offsets: BTreeMap::new(),
            recent: HashMap::default(),
            newest_kept: None,
            chunk: 0,
        };
        self.ledger.set_background_sync(true)?;
        let ledger_dir = self.ledger.dir().to_path_buf();
        // The flushing stage mostly waits on fsync: it makes each batch's
        // chain links and stored bodies there, off the appending thread.
        let mut ahead = self.ledger.ahead()?;
        let drained = std::thread::scope(|scope| {
            let (to_flush, normalized) = sync_channel::<Result<Normalized, FinalizeError>>(1);
            let (to_append, prepared) = sync_channel::<Result<Prepared, FinalizeError>>(0);
            let (recycle, applied) = std::sync::mpsc::channel::<AppendBatch>();
            stage(scope, "harnery-normalize", move || {
                for chunk in chunks {
                    // Applied batches are freed here, by the thread that built
                    // them: freed by the appending thread, every block would be
                    // a cross-thread free that thread then has to collect (4-5 %
                    // of a drain in mimalloc's free and collect).
                    applied.try_iter().for_each(drop);
                    let done =
                        load(chunk).and_then(|c| normalize_chunk(home, &mut normalizer, opts, c));
                    let failed = done.is_err();
                    if to_flush.send(done).is_err() || failed {
                        break;
                    }
                }
            });
            stage(scope, "harnery-flush", move || {
                for chunk in normalized {
                    let done = chunk
                        .and_then(|c| keep_raw(&ledger_dir, c))
                        .and_then(|p| work_ahead(&mut ahead, p));
                    let failed = done.is_err();
                    if to_append.send(done).is_err() || failed {
                        break;
                    }
                }
            });
            let checkpointer = Checkpointer::open(self.ledger.dir())?;
            let (committed, to_release) = std::sync::mpsc::channel::<Committed>();
            let (checkpointed, progress) = std::sync::mpsc::channel::<Checkpointed>();
            let checkpoints = stage(scope, "harnery-checkpoint", move || {
                checkpoints::run(home, &checkpointer, to_release, checkpointed)
            });
            let restart_frames = wal_restart_frames();
            let mut restart_at = restart_frames;
            let mut restarting: Option<usize> = None;
            for (number, p) in prepared.into_iter().enumerate() {
                let mut p = p?;
                if let Some(through) = restarting.take() {
                    let since = std::time::Instant::now();
                    let mut restarted = false;
                    while let Ok(c) = progress.recv() {
                        if c.through >= through {
                            restarted = c.restartable;
                            break;
                        }
                    }
                    timing("wal-restart-wait", since);
                    // A reader that held on keeps the WAL: try again once it
                    // has doubled, so a reader that stays costs a few waits.
                    restart_at = if restarted {
                        restart_frames
                    } else {
                        restart_at.saturating_mul(2)
                    };
                }
                self.summary.damaged_ranges.extend(p.damaged);
                let named = || origin(&p.batch);
                self.append_batch(&named, &p.batch, p.made.as_ref())?;
                // Past the limit, the checkpoint after this commit waits for
                // the WAL's readers, and the next transaction waits for that
                // checkpoint (while this thread waits for the next batch
                // anyway): with every frame copied and no reader left in the
                // WAL, SQLite writes the next transaction from the start of the
                // file again. Otherwise the WAL only grows while a drain runs,
                // to the size of all it appends, and every frame extends it.
                let restart = self.ledger.wal_frames() >= restart_at;
                let c = Committed {
                    number,
                    restart,
                    sources: std::mem::take(&mut p.batch.sources),
                };
                // A normalizing thread that is done no longer takes them.
                let _ = recycle.send(p.batch);
                // A checkpoint thread that is gone failed: stop and report it.
                if committed.send(c).is_err() {
                    break;
                }
                if restart {
                    restarting = Some(number);
                }
            }
            drop(committed);
            checkpoints
                .join()
                .expect("the checkpoint thread does not panic")
        });
        self.ledger.set_background_sync(false)?;
        drained
    }
}

/// Start one stage of the drain on a thread named for it (the name shows
/// in `top -H` and in profiles).
fn stage<'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    name: &str,
    work: impl FnOnce() -> T + Send + 'scope,
) -> std::thread::ScopedJoinHandle<'scope, T> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn_scoped(scope, work)
        .expect("the system starts a thread")
}

/// Cut the sealed files into chunks of whole files, in order (at most
/// [`chunk_bytes`] bytes, counting each session's producer state, or
/// [`CHUNK_FILES`] files each); files a committed batch already drained
/// are deleted instead.
fn plan(
    home: &Home,
    ledger: &LedgerReader,
    files: Vec<SpoolFile>,
) -> Result<Vec<Vec<SpoolFile>>, FinalizeError> {
    let mut chunks = Vec::new();
    let mut chunk: Vec<SpoolFile> = Vec::new();
    let mut bytes: u64 = 0;
    let limit = chunk_bytes();
    for file in files {
        if ledger
            .bookkeeping()
            .segment_drained(&relative(home, &file.path))?
        {
            remove_segment(&file.path)?;
            continue;
        }
        bytes = bytes.saturating_add(weight(ledger, &file)?);
        chunk.push(file);
        if bytes >= limit || chunk.len() >= CHUNK_FILES {
            chunks.push(std::mem::take(&mut chunk));
            bytes = 0;
        }
    }
    if !chunk.is_empty() {
        chunks.push(chunk);
    }
    Ok(chunks)
}

/// A chunk after normalization, not durable yet.
struct Normalized {
    batch: AppendBatch,
    /// The chunk's files: kept as the batch's raw archive.
    files: Vec<SpoolFile>,
    damaged: Vec<DamagedRange>,
}

/// A chunk after stage one: its batch, its raw archive durable, and the
/// work on it made ahead of its append.
struct Prepared {
    batch: AppendBatch,
    damaged: Vec<DamagedRange>,
    made: Option<MadeAhead>,
}

/// Make a chunk's chain links and stored bodies ahead of its
/// append.
fn work_ahead(ahead: &mut WorkAhead, mut p: Prepared) -> Result<Prepared, FinalizeError> {
    let t = std::time::Instant::now();
    p.made = Some(ahead.batch(&p.batch)?);
    timing("work-ahead", t);
    Ok(p)
}

fn seal_all(home: &Home) -> Result<Vec<SpoolFile>, FinalizeError> {
    let spool = IntakeSpool::open(home);
    let spool_err = |e: crate::spool::SpoolError| FinalizeError::Spool(e.to_string());
    let mut out = Vec::new();
    let sessions = spool.sessions().map_err(spool_err)?;
    // Every seal first, then every changed directory synced, several at
    // once (each sync waits on the disk: one after another, 200 sessions'
    // syncs were most of a small run); nothing sealed is read before all
    // are durable.
    let mut changed = Vec::with_capacity(sessions.len());
    for session in &sessions {
        if session.seal_unsynced().map_err(spool_err)? {
            changed.push(session);
        }
    }
    crate::durable::sync_each(&changed, |s| s.sync()).map_err(spool_err)?;
    for session in &sessions {
        for seg in session.pending().map_err(spool_err)? {
            out.push(spool_file(seg.path, &session.adapter, &session.session_key));
        }
    }
    for seg in spool.dead_letters().map_err(spool_err)? {
        out.push(spool_file(seg.path, "", ""));
    }
    Ok(out)
}

fn spool_file(path: PathBuf, adapter_dir: &str, session_key: &str) -> SpoolFile {
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    SpoolFile {
        path,
        adapter_dir: adapter_dir.to_string(),
        session_key: session_key.to_string(),
        size,
    }
}

/// What a file weighs in a chunk: its bytes, and the producer state its
/// session brings in (loaded, applied to and stored again by the chunk).
/// A session whose directory name is a hash of its id weighs its bytes
/// only; that is an estimate, never a limit on what is drained.
fn weight(ledger: &LedgerReader, file: &SpoolFile) -> Result<u64, FinalizeError> {
    if file.session_key.is_empty() || !crate::spool::key::is_plain(&file.session_key) {
        return Ok(file.size);
    }
    let state = ledger
        .bookkeeping()
        .producer_state_len(&file.adapter_dir, &file.session_key)?;
    // A damaged header may name any length: it closes the chunk, no more.
    Ok(file.size.saturating_add(state))
}

fn relative(home: &Home, path: &Path) -> String {
    path.strip_prefix(home.root())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// One chunk's files, read, before normalization.
struct Loaded {
    files: Vec<SpoolFile>,
    /// The chunk's files, whole and in order: their records are decoded
    /// in place ([`decode_records`]), and the records' offsets in the raw
    /// archive count through them.
    bytes: Vec<Vec<u8>>,
}

/// The records and damage of a loaded chunk, borrowing from its bytes.
struct Decoded<'a> {
    records: Vec<ChunkRecord<'a>>,
    damage: Vec<(Damage, Arc<str>)>,
}

/// One intact record of a chunk.
struct ChunkRecord<'a> {
    rec: RecordView<'a>,
    /// The adapter directory its file sits in (empty for dead letters).
    adapter_dir: Arc<str>,
    /// Where the record starts in the batch's raw archive.
    archive_at: u64,
}

fn load(files: Vec<SpoolFile>) -> Result<Loaded, FinalizeError> {
    let t = std::time::Instant::now();
    let mut bytes = Vec::with_capacity(files.len());
    for f in &files {
        bytes.push(read_segment_whole(&f.path).map_err(|e| FinalizeError::io(&f.path, e))?);
    }
    timing("load", t);
    Ok(Loaded { files, bytes })
}

fn decode_records(loaded: &Loaded) -> Decoded<'_> {
    let t = std::time::Instant::now();
    let reads: Vec<_> = loaded
        .files
        .iter()
        .zip(&loaded.bytes)
        .map(|(f, bytes)| read_views(bytes, &f.path))
        .collect();
    // Sized once: a chunk's vectors are tens of MiB, and growing them by
    // doubling faults in fresh pages at every step.
    let count = reads.iter().map(|r| r.records.len()).sum();
    let mut out = Decoded {
        records: Vec::with_capacity(count),
        damage: Vec::new(),
    };
    let mut base = 0;
    for ((f, bytes), read) in loaded.files.iter().zip(&loaded.bytes).zip(reads) {
        let adapter_dir: Arc<str> = Arc::from(f.adapter_dir.as_str());
        out.records
            .extend(read.records.into_iter().map(|rec| ChunkRecord {
                archive_at: base + rec.offset,
                rec,
                adapter_dir: adapter_dir.clone(),
            }));
        out.damage
            .extend(read.damage.into_iter().map(|d| (d, adapter_dir.clone())));
        base += bytes.len() as u64;
    }
    timing("decode", t);
    out
}

/// Stage one, first half: read a chunk and normalize it into its batch.
fn normalize_chunk(
    home: &Home,
    normalizer: &mut Normalizer,
    opts: &FinalizeOptions,
    loaded: Loaded,
) -> Result<Normalized, FinalizeError> {
    let files = &loaded.files;
    let decoded = decode_records(&loaded);
    let records = decoded.records.len();
    let mut batch = AppendBatch {
        id: ready::new_batch_id(opts.now_unix_ns),
        contract_digest: binary_digest(),
        sources: files.iter().map(|f| relative(home, &f.path)).collect(),
        signals: Vec::with_capacity(records),
        // Most signals make one event; turn boundaries make a second.
        events: Vec::with_capacity(records + records / 8),
        states: Vec::new(),
    };
    let t = std::time::Instant::now();
    let owners = owners_by_file(&decoded.records);
    normalizer.start_chunk();
    // One snapshot for the chunk: every batch it must see (all but those
    // in `recent`) committed before this chunk started.
    normalizer.ledger.bookkeeping().begin_snapshot()?;
    let unknown = normalizer
        .ledger
        .bookkeeping()
        .newest_signal_ns()
        .map_err(FinalizeError::from)
        .and_then(|newest| {
            normalizer.newest_kept = newest;
            normalize(normalizer, &decoded.records, &mut batch)
        });
    normalizer.ledger.bookkeeping().end_snapshot()?;
    let unknown = unknown?;
    timing("normalize", t);
    let mut health = SpoolHealth {
        normalizer,
        opts,
        damaged: Vec::new(),
    };
    health.damage(home, &decoded.damage, &owners, &mut batch)?;
    for i in unknown {
        health.unknown_adapter(home, &decoded.records[i], &mut batch)?;
    }
    let damaged = health.damaged;
    Ok(Normalized {
        batch,
        files: loaded.files,
        damaged,
    })
}

/// Stage one, second half: keep a normalized chunk's files as its batch's
/// raw archive, durable before the batch is appended (its signal rows point
/// into it). The files themselves stay in the intake spool until the
/// commit is durable ([`super::apply::release`]).
fn keep_raw(ledger_dir: &Path, chunk: Normalized) -> Result<Prepared, FinalizeError> {
    let Normalized {
        batch,
        files,
        damaged,
    } = chunk;
    let t = std::time::Instant::now();
    if failpoint::fsync_fails() {
        return Err(FinalizeError::Durability(format!(
            "fsync of the raw archive of batch {} failed (injected)",
            batch.id
        )));
    }
    let paths: Vec<&Path> = files.iter().map(|f| f.path.as_path()).collect();
    raw::keep(ledger_dir, &batch.id, &paths)?;
    timing("raw-write", t);
    failpoint::hit("after-raw-write");
    Ok(Prepared {
        batch,
        damaged,
        made: None,
    })
}

/// How a drain's batch is named if the ledger refuses it: by its id and
/// the intake files it came from, which stay where they are.
fn origin(batch: &AppendBatch) -> String {
    format!("batch {} (from {})", batch.id, batch.sources.join(", "))
}

/// The canonical session each session spool file belongs to, from its
/// records (routed before normalization moves their payloads out).
/// Dead-letter files mix sessions and have no owner.
fn owners_by_file(records: &[ChunkRecord]) -> HashMap<PathBuf, SessionRef> {
    let mut owners = HashMap::new();
    // A file's records are consecutive: look each file up once.
    let mut last: Option<&Path> = None;
    for r in records {
        if last == Some(r.rec.file) {
            continue;
        }
        last = Some(r.rec.file);
        let Some(adapter) = AdapterId::parse(&r.adapter_dir) else {
            continue;
        };
        owners
            .entry(r.rec.file.to_path_buf())
            .or_insert_with(|| route(&r.rec, adapter));
    }
    owners
}

fn raw_signal<'a>(rec: &'a RecordView, adapter: AdapterId, digest: &'a str) -> RawSignal<'a> {
    let env = &rec.envelope;
    RawSignal {
        clock: ClockSample {
            boot_id: env.boot_id.as_deref().map(str::to_owned),
            boottime_ns: env.boottime_ns,
        },
        record_digest: digest,
        ..unclocked(rec, adapter)
    }
}

/// The canonical session a record belongs to. Routing reads neither the
/// clock nor the digest, so the signal it is given copies no boot id.
fn route(rec: &RecordView, adapter: AdapterId) -> SessionRef {
    agents::route(&unclocked(rec, adapter))
}

/// A record as a signal without its clock sample and digest.
fn unclocked<'a>(rec: &'a RecordView, adapter: AdapterId) -> RawSignal<'a> {
    let env = &rec.envelope;
    RawSignal {
        adapter,
        event_name: env.event.as_deref(),
        session_id: env.session_id.as_deref().unwrap_or(&env.session_key),
        payload: rec.payload,
        received_unix_ns: env.received_ns,
        clock: ClockSample::default(),
        record_digest: "",
        payload_blake3: whole_payload_digest(rec),
    }
}

/// The payload digest the hook wrote in the envelope, when it describes
/// the stored payload: the whole payload was kept and its length matches.
/// The spool record's own digest covers the envelope, so it reached us as
/// the hook wrote it.
fn whole_payload_digest<'a>(rec: &'a RecordView) -> Option<&'a str> {
    let env = &rec.envelope;
    let hex: &str = &env.payload_blake3;
    let whole = !env.truncated && !env.incomplete && env.payload_len == rec.payload.len() as u64;
    let well_formed =
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (whole && well_formed).then_some(hex)
}

/// Route every record to its canonical session, then ingest each session's
/// records in arrival order (receive time; file order breaks ties).
/// Returns the records whose adapter this build does not know; they are
/// kept raw and reported, never dropped and never allowed to wedge a run.
fn normalize(
    normalizer: &mut Normalizer,
    records: &[ChunkRecord],
    batch: &mut AppendBatch,
) -> Result<Vec<usize>, FinalizeError> {
    let mut unknown = Vec::new();
    let mut by_session: BTreeMap<SessionRef, Vec<(usize, AdapterId, String)>> = BTreeMap::new();
    let adapters: Vec<Option<AdapterId>> = records
        .iter()
        .map(|r| match r.rec.envelope.adapter.as_ref() {
            "" => AdapterId::parse(&r.adapter_dir),
            name => AdapterId::parse(name),
        })
        .collect();
    let keys: Vec<agents::RecordKey> = records
        .iter()
        .zip(&adapters)
        .filter_map(|(r, adapter)| {
            let env = &r.rec.envelope;
            Some(agents::RecordKey {
                adapter: (*adapter)?,
                event_name: env.event.as_deref(),
                session_id: env.session_id.as_deref().unwrap_or(&env.session_key),
                received_unix_ns: env.received_ns,
                payload: r.rec.payload,
            })
        })
        .collect();
    let mut digests = agents::record_digests(&keys).into_iter();
    for (i, (r, adapter)) in records.iter().zip(adapters).enumerate() {
        let rec = &r.rec;
        let Some(adapter) = adapter else {
            unknown.push(i);
            continue;
        };
        let env = &rec.envelope;
        let digest = digests.next().expect("a digest for every known record");
        // The spool may hold one record twice (a segment append whose sync
        // failed, then its fallback copy): both copies have one digest.
        if normalizer.seen(env.received_ns, &digest)? {
            continue;
        }
        let session = route(rec, adapter);
        by_session
            .entry(session)
            .or_default()
            .push((i, adapter, digest));
    }
    let total = records.len();
    let mut done = 0;
    for (session, mut items) in by_session {
        items.sort_by_key(|(i, _, _)| (records[*i].rec.envelope.received_ns, *i));
        let mut producer = normalizer.producer(&session, batch)?;
        for (i, adapter, digest) in items {
            if done == total / 2 && done > 0 {
                failpoint::hit("mid-normalize");
            }
            done += 1;
            let r = &records[i];
            let ingested = producer.ingest(&raw_signal(&r.rec, adapter, &digest));
            batch.signals.push(signal_row(
                r,
                adapter.as_str(),
                digest,
                ingested.events.iter().map(|e| e.id.to_string()).collect(),
                ingested.duplicate_of.map(|d| d.to_string()),
            ));
            batch
                .events
                .extend(ingested.events.into_iter().map(ReadyEvent::new));
        }
        normalizer.keep_state(&session, producer, batch);
    }
    Ok(unknown)
}

/// A signal's row: its record stays where the raw archive keeps it.
fn signal_row(
    r: &ChunkRecord,
    adapter: &str,
    digest: String,
    event_ids: Vec<String>,
    duplicate_of: Option<String>,
) -> BatchSignal {
    let env = &r.rec.envelope;
    BatchSignal {
        record_digest: digest,
        adapter: adapter.to_string(),
        session_key: env.session_key.to_string(),
        event_name: env.event.as_deref().map(str::to_owned),
        received_unix_ns: env.received_ns,
        env: raw::env_text(&env.env_owned()),
        bytes: RawBytes::Archived { at: r.archive_at },
        event_ids,
        duplicate_of,
    }
}
