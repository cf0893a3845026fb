//! Benchmark of stage one's per-signal work alone: read a chunk of spool
//! files once, then route and normalize its records with fresh producers,
//! serialize every event and each producer's state, several times over.
//! No ledger is opened; what is measured is the adapter, the producer and
//! event serialization, the part of `normalize` that does not query SQLite.
//!
//! Usage: bench_normalize <home> <sessions> <rounds>
//!
//! Prints the median and fastest round in milliseconds, the heap
//! allocations a record costs (a count that, unlike the time, does not
//! move with the machine's load), and a blake3 over every event's JSON,
//! every record digest and every state, so that two builds can be checked
//! to produce the same bytes.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use harnery::agents::{self, RawSignal};
use harnery::clock::ClockSample;
use harnery::contract::{AdapterId, SessionRef};
use harnery::ledger::ReadyEvent;
use harnery::session::SessionProducer;
use harnery::spool::{SpoolRecord, read_segment};

/// The allocator the finalizer runs with, counting what it hands out
/// (reallocations included).
struct Counted;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is passed on to mimalloc unchanged.
unsafe impl GlobalAlloc for Counted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on as it came.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counted = Counted;

fn load(home: &str, sessions: usize) -> Vec<SpoolRecord> {
    let dir = std::path::Path::new(home).join("spool/intake/claude-code");
    let mut dirs: Vec<_> = std::fs::read_dir(&dir)
        .expect("the spool has a claude-code folder")
        .map(|e| e.expect("readable entry").path())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for d in dirs.into_iter().take(sessions) {
        let read = read_segment(&d.join("active.seg")).expect("a readable segment");
        out.extend(read.records);
    }
    out
}

fn raw<'a>(rec: &'a SpoolRecord, digest: &'a str) -> RawSignal<'a> {
    let env = &rec.envelope;
    RawSignal {
        adapter: AdapterId::ClaudeCode,
        event_name: env.event.as_deref(),
        session_id: env.session_id.as_deref().unwrap_or(&env.session_key),
        payload: &rec.payload,
        received_unix_ns: env.received_ns,
        clock: ClockSample {
            boot_id: env.boot_id.clone(),
            boottime_ns: env.boottime_ns,
        },
        record_digest: digest,
        payload_blake3: None,
    }
}

/// One round: what `intake::normalize` does per record, less the ledger.
fn round(records: &[SpoolRecord]) -> (Vec<ReadyEvent>, Vec<String>, Vec<String>) {
    let mut by_session: BTreeMap<SessionRef, Vec<(usize, String)>> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for (i, rec) in records.iter().enumerate() {
        let env = &rec.envelope;
        let sid = env.session_id.as_deref().unwrap_or(&env.session_key);
        let digest = agents::record_digest(
            AdapterId::ClaudeCode,
            env.event.as_deref(),
            sid,
            env.received_ns,
            &rec.payload,
        );
        if !seen.insert(digest.clone()) {
            continue;
        }
        let session = agents::route(&raw(rec, &digest));
        by_session.entry(session).or_default().push((i, digest));
    }
    let mut events = Vec::new();
    let mut states = Vec::new();
    let mut digests = Vec::new();
    for (session, items) in by_session {
        let mut producer = SessionProducer::new(session);
        for (i, digest) in items {
            let ingested = producer.ingest(&raw(&records[i], &digest));
            events.extend(ingested.events.into_iter().map(ReadyEvent::new));
            digests.push(digest);
        }
        states.push(serde_json::to_string(&producer).expect("state serializes"));
    }
    (events, states, digests)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (home, sessions, rounds) = match &args[..] {
        [_, home, sessions, rounds] => (home, sessions, rounds),
        _ => {
            eprintln!("usage: bench_normalize <home> <sessions> <rounds>");
            std::process::exit(2);
        }
    };
    let records = load(home, sessions.parse().expect("a session count"));
    let mut times = Vec::new();
    let mut check = String::new();
    let mut allocations = 0;
    for _ in 0..rounds.parse::<usize>().expect("a round count") {
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let t = Instant::now();
        let out = round(&records);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
        let mut h = blake3::Hasher::new();
        for e in &out.0 {
            h.update(e.json.as_bytes());
        }
        for s in out.1.iter().chain(&out.2) {
            h.update(s.as_bytes());
        }
        check = h.finalize().to_hex().to_string();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{} records: median {:.1} ms, fastest {:.1} ms, {:.1} allocations a record, check {check}",
        records.len(),
        times[times.len() / 2],
        times[0],
        allocations as f64 / records.len() as f64
    );
}
