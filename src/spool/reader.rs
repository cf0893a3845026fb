//! Reading segments: every intact record, and every damaged byte range.
//!
//! The reader never trusts a length it has not verified: a header must carry
//! the magic and a matching header check, and a record is returned only when
//! its trailing digest matches. Anything else is reported as a [`Damage`]
//! byte range and the reader resynchronises at the next magic marker at a
//! later offset. It always makes progress, so it never stalls.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::envelope::{Envelope, SPOOL_FORMAT_VERSION};
use super::frame::{self, DIGEST_LEN, HEADER_LEN, HeaderFault, MAGIC};

/// Where a record sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordAt {
    pub file: PathBuf,
    pub offset: u64,
}

/// One intact record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolRecord {
    pub envelope: Envelope,
    /// The payload bytes exactly as stored (the first bytes when truncated).
    pub payload: Vec<u8>,
    pub at: RecordAt,
}

/// What kind of damage a byte range shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DamageKind {
    /// An incomplete record at the end of the file (a writer died mid-append).
    TornTail,
    /// An incomplete record followed by further records.
    TornRecord,
    /// Only NUL bytes (preallocated or zero-filled blocks after a crash).
    NulRun,
    /// Bytes that do not start a valid record header.
    Garbage,
    /// A complete record whose digest does not match.
    ChecksumMismatch,
    /// A record written with a format version this reader does not know.
    UnsupportedVersion,
    /// A record whose digest matches but whose envelope does not decode.
    BadEnvelope,
}

impl DamageKind {
    /// The snake_case name used in JSON and in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            DamageKind::TornTail => "torn_tail",
            DamageKind::TornRecord => "torn_record",
            DamageKind::NulRun => "nul_run",
            DamageKind::Garbage => "garbage",
            DamageKind::ChecksumMismatch => "checksum_mismatch",
            DamageKind::UnsupportedVersion => "unsupported_version",
            DamageKind::BadEnvelope => "bad_envelope",
        }
    }
}

/// A skipped byte range `[start, end)` of `file`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Damage {
    pub file: PathBuf,
    pub start: u64,
    pub end: u64,
    pub kind: DamageKind,
}

/// Everything read from one segment, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentRead {
    pub records: Vec<SpoolRecord>,
    pub damage: Vec<Damage>,
}

/// One item of a segment, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentItem {
    Record(Box<SpoolRecord>),
    Damage(Damage),
}

/// Read a whole segment (or fallback / dead-letter file) into memory: one
/// read of the file, then decoding from memory (two reads per record cost
/// the finalizer more than the decoding).
pub fn read_segment(path: &Path) -> io::Result<SegmentRead> {
    read_segment_whole(path).map(|(_, read)| read)
}

/// [`read_segment`], also handing back the file's bytes exactly as read
/// (the finalizer keeps them in the ledger's raw archive).
pub fn read_segment_whole(path: &Path) -> io::Result<(Vec<u8>, SegmentRead)> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    let read = read_bytes(&bytes, path);
    Ok((bytes, read))
}

/// Open `path` for reading, never through a symlink, and only a regular file.
fn open_regular(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok(file)
}

/// Decode records from bytes in memory, naming them as `file`.
pub fn read_bytes(bytes: &[u8], file: &Path) -> SegmentRead {
    let mut out = SegmentRead::default();
    let mut r = Decoder::new(bytes, file.to_path_buf());
    while let Some(item) = r.next_item() {
        match item {
            Ok(SegmentItem::Record(rec)) => out.records.push(*rec),
            Ok(SegmentItem::Damage(d)) => out.damage.push(d),
            Err(_) => break,
        }
    }
    out
}

/// Decode only the first item of `bytes` (a record, or the damaged range
/// that starts there), naming it as `file`.
pub fn read_first(bytes: &[u8], file: &Path) -> Option<SegmentItem> {
    Decoder::new(bytes, file.to_path_buf())
        .next_item()
        .and_then(Result::ok)
}

/// Streaming reader over one file: memory use is one record at a time.
/// The length is fixed when the file is opened; bytes appended later are
/// left for the next read.
pub struct SegmentReader {
    inner: Decoder<File>,
}

impl SegmentReader {
    /// Open `path` for reading (never through a symlink).
    pub fn open(path: &Path) -> io::Result<SegmentReader> {
        Ok(SegmentReader {
            inner: Decoder::new(open_regular(path)?, path.to_path_buf()),
        })
    }
}

impl Iterator for SegmentReader {
    type Item = io::Result<SegmentItem>;
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next_item()
    }
}

/// Random access to the bytes being decoded.
trait Source {
    fn size(&self) -> io::Result<u64>;
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// The `len` bytes at `offset` in place, when the source is in memory
    /// (so decoding copies only the payload it returns).
    fn in_place(&self, _offset: u64, _len: usize) -> Option<&[u8]> {
        None
    }
}

impl Source for File {
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
}

impl Source for &[u8] {
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let src = self
            .get(start..start + buf.len())
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn in_place(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        self.get(start..start.checked_add(len)?)
    }
}

struct Decoder<S: Source> {
    src: S,
    file: PathBuf,
    pos: u64,
    eof: Option<u64>,
}

/// Why the record at `pos` was rejected before resynchronising.
enum Reject {
    NoMagic,
    Torn,
    /// Digest mismatch; the claimed end of the record.
    Checksum(u64),
    Version,
}

impl<S: Source> Decoder<S> {
    fn new(src: S, file: PathBuf) -> Self {
        Decoder {
            src,
            file,
            pos: 0,
            eof: None,
        }
    }

    fn next_item(&mut self) -> Option<io::Result<SegmentItem>> {
        let eof = match self.eof {
            Some(e) => e,
            None => match self.src.size() {
                Ok(e) => *self.eof.insert(e),
                Err(e) => return Some(Err(e)),
            },
        };
        if self.pos >= eof {
            return None;
        }
        Some(self.item_at(eof))
    }

    fn item_at(&mut self, eof: u64) -> io::Result<SegmentItem> {
        let start = self.pos;
        if eof - start < HEADER_LEN as u64 {
            return self.damage_to(start, eof, eof, Reject::Torn);
        }
        let mut hb = [0u8; HEADER_LEN];
        self.src.read_exact_at(&mut hb, start)?;
        let header = match frame::decode_header(&hb) {
            Ok(h) => h,
            Err(HeaderFault::NoMagic) => return self.resync(start, eof, Reject::NoMagic),
            Err(_) => return self.resync(start, eof, Reject::NoMagic),
        };
        if header.version != SPOOL_FORMAT_VERSION {
            return self.resync(start, eof, Reject::Version);
        }
        let end = start + header.record_len();
        if end > eof {
            return self.resync(start, eof, Reject::Torn);
        }
        let el = header.envelope_len as usize;
        let body_len = usize::try_from(header.record_len()).map_err(io::Error::other)? - HEADER_LEN;
        let read;
        let body = match self.src.in_place(start + HEADER_LEN as u64, body_len) {
            Some(bytes) => bytes,
            None => {
                let mut buf = vec![0u8; body_len];
                self.src
                    .read_exact_at(&mut buf, start + HEADER_LEN as u64)?;
                read = buf;
                &read[..]
            }
        };
        let (content, digest) = body.split_at(body_len - DIGEST_LEN);
        let (env_bytes, payload) = content.split_at(el);
        if frame::record_digest(&hb, env_bytes, payload)[..] != digest[..] {
            return self.resync(start, eof, Reject::Checksum(end));
        }
        self.pos = end;
        match Envelope::from_json(env_bytes) {
            Some(envelope) => Ok(SegmentItem::Record(Box::new(SpoolRecord {
                envelope,
                payload: payload.to_vec(),
                at: RecordAt {
                    file: self.file.clone(),
                    offset: start,
                },
            }))),
            None => Ok(SegmentItem::Damage(self.damage(
                start,
                end,
                DamageKind::BadEnvelope,
            ))),
        }
    }

    /// Skip from `start` to the next magic marker after it (or EOF).
    fn resync(&mut self, start: u64, eof: u64, why: Reject) -> io::Result<SegmentItem> {
        let next = self.find_magic(start + 1, eof)?;
        self.damage_to(start, next.unwrap_or(eof), eof, why)
    }

    fn damage_to(
        &mut self,
        start: u64,
        end: u64,
        eof: u64,
        why: Reject,
    ) -> io::Result<SegmentItem> {
        self.pos = end;
        let kind = if self.all_zero(start, end)? {
            DamageKind::NulRun
        } else {
            match why {
                Reject::Torn if end == eof => DamageKind::TornTail,
                Reject::Torn => DamageKind::TornRecord,
                // Another record starts inside the claimed span: this one was cut short.
                Reject::Checksum(claimed_end) if end < claimed_end => DamageKind::TornRecord,
                Reject::Checksum(_) => DamageKind::ChecksumMismatch,
                Reject::Version => DamageKind::UnsupportedVersion,
                Reject::NoMagic if end == eof && self.starts_like_magic(start, end)? => {
                    DamageKind::TornTail
                }
                Reject::NoMagic => DamageKind::Garbage,
            }
        };
        Ok(SegmentItem::Damage(self.damage(start, end, kind)))
    }

    fn damage(&self, start: u64, end: u64, kind: DamageKind) -> Damage {
        Damage {
            file: self.file.clone(),
            start,
            end,
            kind,
        }
    }

    /// A short tail that is a prefix of the magic is a header cut short.
    fn starts_like_magic(&self, start: u64, end: u64) -> io::Result<bool> {
        let n = (end - start).min(MAGIC.len() as u64) as usize;
        let mut b = [0u8; 8];
        self.src.read_exact_at(&mut b[..n], start)?;
        Ok(b[..n] == MAGIC[..n])
    }

    fn find_magic(&self, from: u64, eof: u64) -> io::Result<Option<u64>> {
        const CHUNK: u64 = 64 * 1024;
        let mut at = from;
        let mut buf = vec![0u8; CHUNK as usize + MAGIC.len()];
        while at + MAGIC.len() as u64 <= eof {
            let n = (eof - at).min(CHUNK + MAGIC.len() as u64) as usize;
            self.src.read_exact_at(&mut buf[..n], at)?;
            if let Some(i) = buf[..n].windows(MAGIC.len()).position(|w| w == MAGIC) {
                return Ok(Some(at + i as u64));
            }
            at += CHUNK;
        }
        Ok(None)
    }

    fn all_zero(&self, start: u64, end: u64) -> io::Result<bool> {
        const CHUNK: u64 = 64 * 1024;
        let mut at = start;
        let mut buf = vec![0u8; CHUNK.min(end - start) as usize];
        while at < end {
            let n = (end - at).min(CHUNK) as usize;
            self.src.read_exact_at(&mut buf[..n], at)?;
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
            at += n as u64;
        }
        Ok(true)
    }
}
