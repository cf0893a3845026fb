//! Appending records: lease, append, fdatasync, release; or a fallback file;
//! or a dead letter.
//!
//! The hook and in-process producers (`harnery exec`, benchmarks) share this
//! code, so both get the same guarantee: when `append` returns `Ok`, the
//! record is on disk in a file the reader will return, and when every path
//! has failed the caller gets an error that says so (the hook turns it into
//! one line on stderr).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::OFlags;

use super::envelope::{Envelope, SPOOL_FORMAT_VERSION, WritePath};
use super::frame;
use super::key::{adapter_key, session_key};
use super::{
    ACTIVE_SEGMENT, DEAD_LETTER_PREFIX, FALLBACK_PREFIX, LEASE_FILE, SpoolError, TMP_PREFIX,
};
use crate::clock::{ClockSample, wall_now_ns};
use crate::failpoint;
use crate::home::{Home, PrivateDir};

/// How long a writer waits for the session lease before writing a fallback file.
pub const DEFAULT_LEASE_WAIT: Duration = Duration::from_millis(100);

/// One signal to record, with everything the envelope needs.
#[derive(Debug, Clone)]
pub struct Signal<'a> {
    pub adapter: &'a str,
    pub event: Option<&'a str>,
    pub session_id: Option<&'a str>,
    /// Bytes to store (the first bytes when `truncated`).
    pub payload: &'a [u8],
    /// Full received length.
    pub payload_len: u64,
    /// blake3 hex of the full received payload.
    pub payload_blake3: String,
    pub truncated: bool,
    pub incomplete: bool,
    pub received_ns: i64,
    pub clock: ClockSample,
    pub env: BTreeMap<String, String>,
}

impl<'a> Signal<'a> {
    /// A complete signal received now, with its digest computed here.
    pub fn new(
        adapter: &'a str,
        event: Option<&'a str>,
        session_id: Option<&'a str>,
        payload: &'a [u8],
    ) -> Self {
        Signal {
            adapter,
            event,
            session_id,
            payload,
            payload_len: payload.len() as u64,
            payload_blake3: blake3::hash(payload).to_hex().to_string(),
            truncated: false,
            incomplete: false,
            received_ns: wall_now_ns(),
            clock: ClockSample::now(),
            env: BTreeMap::new(),
        }
    }
}

/// Where a record went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendReceipt {
    pub write_path: WritePath,
    /// The file holding the record.
    pub file: PathBuf,
    /// Byte offset of the record in `file`.
    pub offset: u64,
    pub session_key: String,
    /// Why the segment was not used (fallback and dead-letter paths).
    pub fallback_reason: Option<String>,
}

/// Tuning for a [`SpoolWriter`].
#[derive(Debug, Clone)]
pub struct WriterOptions {
    /// fdatasync every record (on by default; off only for bulk loads whose
    /// loss on power failure is acceptable, e.g. benchmarks).
    pub sync: bool,
    /// How long to wait for the lease before taking the fallback path.
    pub lease_wait: Duration,
    /// Written into each envelope's `writer` field.
    pub writer: String,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            sync: true,
            lease_wait: DEFAULT_LEASE_WAIT,
            writer: concat!("harnery ", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// Appends records to the intake spool of a [`Home`].
#[derive(Debug, Clone)]
pub struct SpoolWriter {
    home: Home,
    options: WriterOptions,
}

pub(super) static SEQ: AtomicU64 = AtomicU64::new(0);

impl SpoolWriter {
    /// A writer with default options (fdatasync on, 100 ms lease wait).
    pub fn new(home: Home) -> SpoolWriter {
        SpoolWriter::with_options(home, WriterOptions::default())
    }

    pub fn with_options(home: Home, options: WriterOptions) -> SpoolWriter {
        SpoolWriter { home, options }
    }

    /// The home the writer appends to.
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// Record `payload` for `adapter`; the session id is read from the payload
    /// (`session_id` / `sessionId`), the event from `event_name` or the payload.
    pub fn append(
        &self,
        adapter: &str,
        event_name: Option<&str>,
        payload: &[u8],
        env: &[(String, String)],
    ) -> Result<AppendReceipt, SpoolError> {
        let routing = super::scan::routing(payload, event_name.is_none());
        let event = event_name.or(routing.event.as_deref());
        let mut signal = Signal::new(adapter, event, routing.session_id.as_deref(), payload);
        signal.env = env.iter().cloned().collect();
        self.append_signal(&signal)
    }

    /// Record a fully described signal.
    pub fn append_signal(&self, s: &Signal<'_>) -> Result<AppendReceipt, SpoolError> {
        let skey = session_key(s.session_id);
        let akey = adapter_key(s.adapter);
        let mut env = self.envelope(s, &skey);
        let reason = match self.home.private_dir(&["spool", "intake", &akey, &skey]) {
            Ok(dir) => match self.to_segment(&dir, &env, s.payload) {
                Ok(r) => return Ok(r),
                Err(e) => {
                    let reason = e.to_string();
                    env.write_path = WritePath::Fallback;
                    env.fallback_reason = Some(reason.clone());
                    match self.to_new_file(&dir, FALLBACK_PREFIX, &env, s.payload) {
                        Ok(r) => return Ok(r),
                        Err(e2) => format!("{reason}; fallback file: {e2}"),
                    }
                }
            },
            Err(e) => format!("session directory: {e}"),
        };
        env.write_path = WritePath::DeadLetter;
        env.fallback_reason = Some(reason.clone());
        let dl = self
            .home
            .private_dir(&["spool", "dead-letter"])
            .map_err(SpoolError::from);
        match dl.and_then(|dir| self.to_new_file(&dir, DEAD_LETTER_PREFIX, &env, s.payload)) {
            Ok(r) => Ok(r),
            Err(e) => Err(SpoolError::Lost {
                reason: format!("{reason}; dead letter: {e}"),
            }),
        }
    }

    /// Append many payloads of one session under one lease, with a single
    /// fdatasync at the end (when syncing is on). No fallback path: an error
    /// is returned and the caller decides.
    pub fn append_batch(&self, signals: &[Signal<'_>]) -> Result<Vec<AppendReceipt>, SpoolError> {
        let Some(first) = signals.first() else {
            return Ok(Vec::new());
        };
        let skey = session_key(first.session_id);
        let dir =
            self.home
                .private_dir(&["spool", "intake", &adapter_key(first.adapter), &skey])?;
        let _lease = acquire_lease(&dir, self.options.lease_wait)?;
        let (mut seg, created) =
            dir.open_file(ACTIVE_SEGMENT, OFlags::WRONLY | OFlags::APPEND, true)?;
        let mut offset = seg.metadata()?.len();
        let mut receipts = Vec::with_capacity(signals.len());
        let mut buf = Vec::new();
        for s in signals {
            let env = self.envelope(s, &skey);
            let rec = encode(&env, s.payload)?;
            receipts.push(self.receipt(&dir, ACTIVE_SEGMENT, offset, &env));
            offset += rec.len() as u64;
            rec.extend(&mut buf);
            if buf.len() > 1 << 20 {
                seg.write_all(&buf)?;
                buf.clear();
            }
        }
        seg.write_all(&buf)?;
        self.finish(&seg, &dir, created)?;
        Ok(receipts)
    }

    pub(super) fn envelope(&self, s: &Signal<'_>, skey: &str) -> Envelope {
        Envelope {
            v: SPOOL_FORMAT_VERSION,
            record_id: uuid::Uuid::now_v7().to_string(),
            adapter: s.adapter.to_owned(),
            event: s.event.map(str::to_owned),
            session_id: s.session_id.map(str::to_owned),
            session_key: skey.to_owned(),
            received_ns: s.received_ns,
            boot_id: s.clock.boot_id.clone(),
            boottime_ns: s.clock.boottime_ns,
            pid: std::process::id(),
            writer: self.options.writer.clone(),
            payload_len: s.payload_len,
            payload_blake3: s.payload_blake3.clone(),
            truncated: s.truncated,
            incomplete: s.incomplete,
            write_path: WritePath::Segment,
            fallback_reason: None,
            env: s.env.clone(),
        }
    }

    fn to_segment(
        &self,
        dir: &PrivateDir,
        env: &Envelope,
        payload: &[u8],
    ) -> Result<AppendReceipt, SpoolError> {
        let rec = encode(env, payload)?;
        let _lease = acquire_lease(dir, self.options.lease_wait)?;
        failpoint::io_error("segment_append")?;
        let (mut seg, created) =
            dir.open_file(ACTIVE_SEGMENT, OFlags::WRONLY | OFlags::APPEND, true)?;
        let offset = seg.metadata()?.len();
        if let Err(e) = rec.write_to(&mut seg) {
            // Under the lease nobody else appends: cut the partial record off.
            let _ = seg.set_len(offset);
            return Err(e.into());
        }
        self.finish(&seg, dir, created)?;
        Ok(self.receipt(dir, ACTIVE_SEGMENT, offset, env))
    }

    fn finish(&self, file: &File, dir: &PrivateDir, created: bool) -> io::Result<()> {
        if self.options.sync {
            file.sync_data()?;
            if created {
                dir.sync()?;
            }
        }
        Ok(())
    }

    /// Write the record to a fresh uniquely named file: tmp, fsync, rename, fsync dir.
    fn to_new_file(
        &self,
        dir: &PrivateDir,
        prefix: &str,
        env: &Envelope,
        payload: &[u8],
    ) -> Result<AppendReceipt, SpoolError> {
        failpoint::io_error(prefix)?;
        let rec = encode(env, payload)?;
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!(
            "{prefix}{:020}-{}-{seq}.rec",
            wall_now_ns().max(0),
            std::process::id()
        );
        let tmp = format!("{TMP_PREFIX}{name}");
        let result = (|| -> io::Result<()> {
            let mut f = dir.create_new(&tmp)?;
            rec.write_to(&mut f)?;
            f.sync_all()?;
            dir.rename(&tmp, &name)?;
            dir.sync()
        })();
        if let Err(e) = result {
            let _ = dir.remove(&tmp);
            return Err(e.into());
        }
        Ok(self.receipt(dir, &name, 0, env))
    }

    fn receipt(&self, dir: &PrivateDir, name: &str, offset: u64, env: &Envelope) -> AppendReceipt {
        AppendReceipt {
            write_path: env.write_path,
            file: dir.path().join(name),
            offset,
            session_key: env.session_key.clone(),
            fallback_reason: env.fallback_reason.clone(),
        }
    }
}

/// A record ready to write: header + envelope, the payload (borrowed, so a
/// 64 MiB payload is never copied), and the trailing digest.
pub(super) struct Encoded<'a> {
    head: Vec<u8>,
    payload: &'a [u8],
    digest: [u8; frame::DIGEST_LEN],
}

/// Payloads up to this size are written with the header in one `write(2)`.
pub(super) const ONE_WRITE_MAX: usize = 256 * 1024;

impl Encoded<'_> {
    pub(super) fn len(&self) -> usize {
        self.head.len() + self.payload.len() + self.digest.len()
    }

    pub(super) fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        if self.payload.len() <= ONE_WRITE_MAX {
            let mut buf = Vec::with_capacity(self.len());
            self.extend(&mut buf);
            return out.write_all(&buf);
        }
        out.write_all(&self.head)?;
        out.write_all(self.payload)?;
        out.write_all(&self.digest)
    }

    pub(super) fn extend(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&self.head);
        buf.extend_from_slice(self.payload);
        buf.extend_from_slice(&self.digest);
    }
}

pub(super) fn encode<'a>(env: &Envelope, payload: &'a [u8]) -> Result<Encoded<'a>, SpoolError> {
    let env_bytes = serde_json::to_vec(env).map_err(|e| SpoolError::Io(io::Error::other(e)))?;
    let header = frame::encode_header(
        SPOOL_FORMAT_VERSION,
        env_bytes.len() as u32,
        payload.len() as u64,
    );
    let digest = frame::record_digest(&header, &env_bytes, payload);
    let mut head = Vec::with_capacity(header.len() + env_bytes.len());
    head.extend_from_slice(&header);
    head.extend_from_slice(&env_bytes);
    Ok(Encoded {
        head,
        payload,
        digest,
    })
}

/// The session lease: an exclusive `flock` on the session's `lease` file,
/// released when dropped (closing the file releases it, even on SIGKILL).
#[derive(Debug)]
pub struct Lease {
    _file: File,
}

/// Take the session lease, polling `try_lock` until `wait` has passed.
pub fn acquire_lease(dir: &PrivateDir, wait: Duration) -> Result<Lease, SpoolError> {
    let (file, _) = dir.open_file(LEASE_FILE, OFlags::RDWR, true)?;
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_micros(100);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Lease { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => return Err(e.into()),
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(SpoolError::LeaseTimeout { waited: wait });
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(2));
    }
}
