//! `harnery-hook`: the hot path. Read stdin, append one record, exit 0.
//!
//! What this code must never do: print to stdout, exit non-zero, open SQLite,
//! parse a config file, or wait without bound. A Copilot `preToolUse` hook
//! that exits non-zero denies the tool; a Claude Code hook that exits 2
//! blocks it; anything on stdout may be read as a hook decision. So stdout is
//! pointed at `/dev/null` first thing, panics are caught, and every failure
//! ends as one line on stderr at worst.
//!
//! Bounds: payloads up to [`MAX_PAYLOAD`] are kept whole; beyond that the
//! first [`MAX_PAYLOAD`] bytes are kept with the full length and blake3 of
//! everything read (`truncated`). Stdin that does not reach EOF is given up
//! on after [`STDIN_STALL`] without a byte, after [`STDIN_IDLE`] without a
//! byte once the bytes read form a complete JSON value, or after
//! [`STDIN_TOTAL`] in all (`incomplete`).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use super::envelope::CAPTURED_ENV;
use super::writer::{Signal, SpoolWriter, WriterOptions};
use crate::clock::{ClockSample, wall_now_ns};
use crate::home::Home;

/// Largest payload kept whole: 64 MiB.
pub const MAX_PAYLOAD: usize = 64 << 20;
/// Longest the hook waits for a byte on stdin before giving up on EOF.
pub const STDIN_STALL: Duration = Duration::from_millis(1000);
/// Longest the hook reads stdin in all, however fast bytes arrive (below
/// the agents' configured hook timeouts, so the record is always written).
pub const STDIN_TOTAL: Duration = Duration::from_secs(5);
/// Silence after a complete JSON value that ends the read early.
pub const STDIN_IDLE: Duration = Duration::from_millis(50);

/// What was read from stdin.
#[derive(Debug, Default)]
pub struct StdinRead {
    /// The kept bytes (all of them unless `truncated`).
    pub bytes: Vec<u8>,
    /// Every byte read, kept or not.
    pub total_len: u64,
    /// blake3 hex of every byte read.
    pub blake3: String,
    pub truncated: bool,
    /// EOF was not seen.
    pub incomplete: bool,
}

/// Make sure nothing can reach stdout and that a panic prints one stderr line.
pub fn guard_process() {
    silence_stdout();
    std::panic::set_hook(Box::new(|info| {
        let _ = writeln!(
            std::io::stderr(),
            "harnery-hook: internal error (recorded nothing more): {info}"
        );
    }));
}

/// fd 1 becomes `/dev/null`; a failure leaves stdout as it was (the hook
/// never writes to it).
fn silence_stdout() {
    let flags = OFlags::WRONLY | OFlags::CLOEXEC;
    if let Ok(null) = rustix::fs::open("/dev/null", flags, Mode::empty()) {
        let _ = rustix::stdio::dup2_stdout(&null);
    }
}

/// Run the hook for the given argv (`harnery-hook <adapter> [event]`).
/// Never panics out (the caller also wraps it), never returns an error.
pub fn run(args: Vec<OsString>) {
    let received_ns = wall_now_ns();
    if crate::failpoint::io_error("panic").is_err() {
        panic!("failpoint panic");
    }
    let clock = ClockSample::now();
    let adapter = args.get(1).map(|a| a.to_string_lossy().into_owned());
    let adapter = adapter
        .as_deref()
        .filter(|a| !a.is_empty())
        .unwrap_or("claude-code");
    let argv_event = args.get(2).map(|a| a.to_string_lossy().into_owned());
    let input = read_stdin(MAX_PAYLOAD, STDIN_STALL, STDIN_IDLE);
    // Copilot names the event in argv; then only the session id is needed.
    let want_event = adapter != "copilot" || argv_event.is_none();
    let routing = super::scan::routing(&input.bytes, want_event);
    let event = match adapter {
        "copilot" => argv_event.as_deref().or(routing.event.as_deref()),
        _ => routing.event.as_deref().or(argv_event.as_deref()),
    };
    let signal = Signal {
        adapter,
        event,
        session_id: routing.session_id.as_deref(),
        payload: &input.bytes,
        payload_len: input.total_len,
        payload_blake3: input.blake3.clone(),
        truncated: input.truncated,
        incomplete: input.incomplete,
        received_ns,
        clock,
        env: captured_env(),
    };
    let outcome = Home::from_env()
        .map_err(|e| e.to_string())
        .and_then(|home| {
            writer(home)
                .append_signal(&signal)
                .map_err(|e| e.to_string())
        });
    if let Err(reason) = outcome {
        let _ = writeln!(
            std::io::stderr(),
            "harnery-hook: LOST {adapter} {} session {:?}: {} bytes blake3 {}: {reason}",
            event.unwrap_or("-"),
            signal.session_id.unwrap_or("-"),
            input.total_len,
            input.blake3,
        );
    }
}

fn writer(home: Home) -> SpoolWriter {
    SpoolWriter::with_options(
        home,
        WriterOptions {
            writer: concat!("harnery-hook ", env!("CARGO_PKG_VERSION")).to_owned(),
            ..WriterOptions::default()
        },
    )
}

fn captured_env() -> BTreeMap<String, String> {
    CAPTURED_ENV
        .iter()
        .filter_map(|&k| {
            std::env::var_os(k).map(|v| (k.to_owned(), v.to_string_lossy().into_owned()))
        })
        .collect()
}

/// Read fd 0 to EOF within the bounds described in the module doc.
pub fn read_stdin(limit: usize, stall: Duration, idle: Duration) -> StdinRead {
    let start = Instant::now();
    let mut last_byte = start;
    let mut out = StdinRead::default();
    let mut hasher = blake3::Hasher::new();
    let mut scratch = Vec::new();
    out.bytes.reserve(16 * 1024);
    loop {
        if start.elapsed() >= STDIN_TOTAL {
            out.incomplete = true;
            break;
        }
        let left = stall
            .saturating_sub(last_byte.elapsed())
            .min(STDIN_TOTAL.saturating_sub(start.elapsed()));
        match poll_stdin(left.min(idle)) {
            Poll::Ready => {}
            Poll::Quiet if left.is_zero() || left <= idle => {
                out.incomplete = true;
                break;
            }
            Poll::Quiet if looks_complete(&out.bytes) => {
                out.incomplete = true;
                break;
            }
            Poll::Quiet => continue,
            Poll::Failed => break,
        }
        let n = match read_some(&mut out.bytes, &mut scratch, limit) {
            Ok(0) => break,
            Ok(n) => n,
            Err(Errno::INTR | Errno::AGAIN) => continue,
            Err(Errno::BADF) => break,
            Err(_) => {
                out.incomplete = true;
                break;
            }
        };
        last_byte = Instant::now();
        keep(&mut out, &scratch, &mut hasher, n, limit);
    }
    if out.bytes.len() as u64 == out.total_len {
        out.blake3 = blake3::hash(&out.bytes).to_hex().to_string();
    } else {
        out.blake3 = hasher.finalize().to_hex().to_string();
    }
    out
}

/// One `read(2)` from fd 0: into the spare capacity of `bytes` while below
/// the limit (its length grows by what was read), else into `scratch`, whose
/// bytes are only hashed and counted.
fn read_some(bytes: &mut Vec<u8>, scratch: &mut Vec<u8>, limit: usize) -> Result<usize, Errno> {
    let stdin = rustix::stdio::stdin();
    if bytes.len() < limit {
        if bytes.capacity() - bytes.len() < 4096 {
            let grow = bytes.capacity().clamp(16 * 1024, 8 << 20);
            bytes.reserve(grow.min(limit - bytes.len()));
        }
        let room = (bytes.capacity() - bytes.len()).min(limit - bytes.len());
        let (read, _) = rustix::io::read(stdin, &mut bytes.spare_capacity_mut()[..room])?;
        let n = read.len();
        // SAFETY: read(2) has just initialised the first `n` spare bytes.
        unsafe { bytes.set_len(bytes.len() + n) };
        return Ok(n);
    }
    scratch.resize(256 * 1024, 0);
    rustix::io::read(stdin, &mut scratch[..])
}

fn keep(out: &mut StdinRead, scratch: &[u8], hasher: &mut blake3::Hasher, n: usize, limit: usize) {
    let before = out.total_len;
    out.total_len += n as u64;
    if (before as usize) < limit {
        return; // landed in `bytes`; hashed once at the end or on overflow
    }
    if !out.truncated {
        hasher.update(&out.bytes);
    }
    out.truncated = true;
    hasher.update(&scratch[..n]);
}

enum Poll {
    Ready,
    Quiet,
    Failed,
}

fn poll_stdin(timeout: Duration) -> Poll {
    let mut pfd = [PollFd::from_borrowed_fd(
        rustix::stdio::stdin(),
        PollFlags::IN,
    )];
    // Whole milliseconds, as poll(2) takes them.
    let ms = timeout.as_millis().min(i32::MAX as u128) as i64;
    let wait = Timespec {
        tv_sec: ms / 1000,
        tv_nsec: ms % 1000 * 1_000_000,
    };
    match rustix::event::poll(&mut pfd, Some(&wait)) {
        Ok(0) => Poll::Quiet,
        Ok(_) if pfd[0].revents().contains(PollFlags::NVAL) => Poll::Failed,
        Ok(_) => Poll::Ready,
        Err(Errno::INTR) => Poll::Quiet,
        Err(_) => Poll::Failed,
    }
}

fn looks_complete(bytes: &[u8]) -> bool {
    !bytes.is_empty() && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}
