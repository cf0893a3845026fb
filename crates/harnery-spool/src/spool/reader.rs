//! Reading segments: every intact record, and every damaged byte range.
//!
//! The reader never trusts a length it has not verified: a header must carry
//! the magic and a matching header check, and a record is returned only when
//! its trailing digest matches. Anything else is reported as a [`Damage`]
//! byte range and the reader resynchronises at the next magic marker at a
//! later offset. It always makes progress, so it never stalls.
//!
//! The framing is shared by every way of reading. Records come out
//! owned ([`SpoolRecord`]: [`read_segment`], [`SegmentReader`]) or, from
//! bytes already in memory, borrowed from them ([`RecordView`]:
//! [`read_views`], what the finalizer uses).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::envelope::{Envelope, EnvelopeView, SPOOL_FORMAT_VERSION};
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

/// One intact record decoded in place: its payload and envelope strings
/// borrowed from the bytes it was read from. The finalizer holds each
/// chunk's files in memory anyway, so it reads records this way instead of
/// copying every one out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordView<'a> {
    pub envelope: EnvelopeView<'a>,
    /// The payload bytes exactly as stored (the first bytes when truncated).
    pub payload: &'a [u8],
    pub file: &'a Path,
    pub offset: u64,
}

impl RecordView<'_> {
    /// The record with its bytes copied out.
    pub fn into_owned(self) -> SpoolRecord {
        SpoolRecord {
            envelope: self.envelope.into_owned(),
            payload: self.payload.to_vec(),
            at: RecordAt {
                file: self.file.to_path_buf(),
                offset: self.offset,
            },
        }
    }
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

/// [`SegmentRead`], borrowing from the bytes it was decoded from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SegmentView<'a> {
    pub records: Vec<RecordView<'a>>,
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
    Ok(read_bytes(&read_segment_whole(path)?, path))
}

/// A segment's bytes exactly as read, to decode with [`read_views`] (the
/// finalizer keeps them in the ledger's raw archive).
pub fn read_segment_whole(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
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
    let views = read_views(bytes, file);
    SegmentRead {
        records: views
            .records
            .into_iter()
            .map(RecordView::into_owned)
            .collect(),
        damage: views.damage,
    }
}

/// [`read_bytes`] without copying: the records borrow from `bytes`.
pub fn read_views<'a>(bytes: &'a [u8], file: &'a Path) -> SegmentView<'a> {
    let mut out = SegmentView::default();
    let mut frames = Decoder::new(bytes);
    for frame in frames.records_checked_together() {
        match frame.view(file) {
            Ok(rec) => out.records.push(rec),
            Err(d) => out.damage.push(d),
        }
    }
    // From the first record whose digest does not hold (or that does not
    // frame), one at a time, each damaged range found as always. Reading
    // from memory fails only past the end, which framing never reaches;
    // stop there rather than loop.
    while let Some(Ok(frame)) = frames.next_frame() {
        match frame.view(file) {
            Ok(rec) => out.records.push(rec),
            Err(d) => out.damage.push(d),
        }
    }
    out
}

/// Decode only the first item of `bytes` (a record, or the damaged range
/// that starts there), naming it as `file`; the record borrows from `bytes`.
pub fn read_first_view<'a>(
    bytes: &'a [u8],
    file: &'a Path,
) -> Option<Result<RecordView<'a>, Damage>> {
    let frame = Decoder::new(bytes).next_frame()?.ok()?;
    Some(frame.view(file))
}

impl SegmentItem {
    /// A decoded record (copied out) or its damage.
    fn owned(decoded: Result<RecordView<'_>, Damage>) -> SegmentItem {
        match decoded {
            Ok(rec) => SegmentItem::Record(Box::new(rec.into_owned())),
            Err(d) => SegmentItem::Damage(d),
        }
    }
}

/// Streaming reader over one file: memory use is one record at a time.
/// The length is fixed when the file is opened; bytes appended later are
/// left for the next read.
pub struct SegmentReader {
    frames: Decoder<File>,
    file: PathBuf,
}

impl SegmentReader {
    /// Open `path` for reading (never through a symlink).
    pub fn open(path: &Path) -> io::Result<SegmentReader> {
        Ok(SegmentReader {
            frames: Decoder::new(open_regular(path)?),
            file: path.to_path_buf(),
        })
    }
}

impl Iterator for SegmentReader {
    type Item = io::Result<SegmentItem>;
    fn next(&mut self) -> Option<Self::Item> {
        let frame = self.frames.next_frame()?;
        Some(frame.map(|f| SegmentItem::owned(f.as_slice().view(&self.file))))
    }
}

/// Random access to the bytes being decoded.
trait Source {
    /// A record's bytes after its header: read into a buffer from a file,
    /// borrowed in place from memory.
    type Body: AsRef<[u8]>;
    fn size(&self) -> io::Result<u64>;
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    fn body(&self, offset: u64, len: usize) -> io::Result<Self::Body>;
}

impl Source for File {
    type Body = Vec<u8>;
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }
    fn body(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        FileExt::read_exact_at(self, &mut buf, offset)?;
        Ok(buf)
    }
}

impl<'a> Source for &'a [u8] {
    type Body = &'a [u8];
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        buf.copy_from_slice(self.body(offset, buf.len())?);
        Ok(())
    }
    fn body(&self, offset: u64, len: usize) -> io::Result<&'a [u8]> {
        let bytes: &'a [u8] = self;
        usize::try_from(offset)
            .ok()
            .and_then(|start| bytes.get(start..start.checked_add(len)?))
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))
    }
}

/// What framing found at one offset: a record whose digest matches, or a
/// damaged range. Its envelope is decoded (and its file named) by
/// [`Frame::view`].
enum Frame<B> {
    Record {
        start: u64,
        end: u64,
        envelope_len: usize,
        /// Envelope, payload and digest.
        body: B,
    },
    Damaged {
        start: u64,
        end: u64,
        kind: DamageKind,
    },
}

impl<B: AsRef<[u8]>> Frame<B> {
    fn as_slice(&self) -> Frame<&[u8]> {
        match *self {
            Frame::Record {
                start,
                end,
                envelope_len,
                ref body,
            } => Frame::Record {
                start,
                end,
                envelope_len,
                body: body.as_ref(),
            },
            Frame::Damaged { start, end, kind } => Frame::Damaged { start, end, kind },
        }
    }
}

impl<'a> Frame<&'a [u8]> {
    /// The record, named as `file`; or the damage, including a record
    /// whose envelope does not decode.
    fn view(self, file: &'a Path) -> Result<RecordView<'a>, Damage> {
        let damage = |start, end, kind| Damage {
            file: file.to_path_buf(),
            start,
            end,
            kind,
        };
        match self {
            Frame::Damaged { start, end, kind } => Err(damage(start, end, kind)),
            Frame::Record {
                start,
                end,
                envelope_len,
                body,
            } => {
                let content = &body[..body.len() - DIGEST_LEN];
                let (env_bytes, payload) = content.split_at(envelope_len);
                match EnvelopeView::from_json(env_bytes) {
                    Some(envelope) => Ok(RecordView {
                        envelope,
                        payload,
                        file,
                        offset: start,
                    }),
                    None => Err(damage(start, end, DamageKind::BadEnvelope)),
                }
            }
        }
    }
}

/// Framing over one source: each call finds the next record or damaged
/// range.
struct Decoder<S: Source> {
    src: S,
    pos: u64,
    eof: Option<u64>,
}

impl<'a> Decoder<&'a [u8]> {
    /// The records from here on, framed before any digest is checked and
    /// then checked all at once (`hash_many`: one record's digest alone
    /// leaves the vector unit idle). Stops before the first record that
    /// does not frame or whose digest does not hold, and leaves the
    /// decoder there: [`Decoder::next_frame`] goes on from it, one record
    /// at a time, so damage is found and named as it always is. Every
    /// record returned is one `next_frame` would have returned.
    fn records_checked_together(&mut self) -> Vec<Frame<&'a [u8]>> {
        let bytes = self.src;
        let mut spans = Vec::new();
        let mut at = self.pos as usize;
        while let Some(head) = bytes.get(at..at + HEADER_LEN) {
            let head: &[u8; HEADER_LEN] = head.try_into().expect("a header's length");
            let Ok(header) = frame::decode_header(head) else {
                break;
            };
            let Some(end) = usize::try_from(header.record_len())
                .ok()
                .and_then(|len| at.checked_add(len))
                .filter(|&end| header.version == SPOOL_FORMAT_VERSION && end <= bytes.len())
            else {
                break;
            };
            spans.push((at, end, header.envelope_len as usize));
            at = end;
        }
        // A framed record is longer than its header, let alone a digest.
        let split: Vec<(&[u8], &[u8])> = spans
            .iter()
            .map(|&(start, end, _)| frame::digest_split(&bytes[start..end]).expect("framed"))
            .collect();
        let covered: Vec<&[u8]> = split.iter().map(|&(covered, _)| covered).collect();
        let mut digests = Vec::with_capacity(covered.len());
        crate::hash_many::hash_each(&covered, &mut digests);
        let mut frames = Vec::with_capacity(spans.len());
        for ((&(start, end, envelope_len), (_, carried)), digest) in
            spans.iter().zip(&split).zip(&digests)
        {
            if carried[..] != digest[..] {
                break;
            }
            frames.push(Frame::Record {
                start: start as u64,
                end: end as u64,
                envelope_len,
                body: &bytes[start + HEADER_LEN..end],
            });
            self.pos = end as u64;
        }
        frames
    }
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
    fn new(src: S) -> Self {
        Decoder {
            src,
            pos: 0,
            eof: None,
        }
    }

    fn next_frame(&mut self) -> Option<io::Result<Frame<S::Body>>> {
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
        Some(self.frame_at(eof))
    }

    fn frame_at(&mut self, eof: u64) -> io::Result<Frame<S::Body>> {
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
        let envelope_len = header.envelope_len as usize;
        let body_len = usize::try_from(header.record_len()).map_err(io::Error::other)? - HEADER_LEN;
        let body = self.src.body(start + HEADER_LEN as u64, body_len)?;
        let (content, digest) = body.as_ref().split_at(body_len - DIGEST_LEN);
        let (env_bytes, payload) = content.split_at(envelope_len);
        if frame::record_digest(&hb, env_bytes, payload)[..] != digest[..] {
            return self.resync(start, eof, Reject::Checksum(end));
        }
        self.pos = end;
        Ok(Frame::Record {
            start,
            end,
            envelope_len,
            body,
        })
    }

    /// Skip from `start` to the next magic marker after it (or EOF).
    fn resync(&mut self, start: u64, eof: u64, why: Reject) -> io::Result<Frame<S::Body>> {
        let next = self.find_magic(start + 1, eof)?;
        self.damage_to(start, next.unwrap_or(eof), eof, why)
    }

    fn damage_to(
        &mut self,
        start: u64,
        end: u64,
        eof: u64,
        why: Reject,
    ) -> io::Result<Frame<S::Body>> {
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
        Ok(Frame::Damaged { start, end, kind })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::frame::encode_record;
    use crate::spool::{Envelope, WritePath};

    fn envelope(event: &str) -> Vec<u8> {
        serde_json::to_vec(&Envelope {
            v: 1,
            record_id: "0195f0c0-0000-7000-8000-000000000000".into(),
            adapter: "claude-code".into(),
            event: Some(event.into()),
            session_id: Some("s\\1".into()),
            session_key: "s1".into(),
            received_ns: 7,
            boot_id: None,
            boottime_ns: None,
            pid: 1,
            writer: "test".into(),
            payload_len: 2,
            payload_blake3: String::new(),
            truncated: false,
            incomplete: false,
            write_path: WritePath::Segment,
            fallback_reason: None,
            env: [("CLAUDE_PROJECT_DIR".to_string(), "/p".to_string())].into(),
        })
        .unwrap()
    }

    /// Records, garbage, a record whose envelope does not decode, and a torn
    /// tail: every reader must report the same items in the same order.
    fn damaged_segment() -> Vec<u8> {
        let mut bytes = encode_record(1, &envelope("Stop"), b"{}");
        bytes.extend(b"junk");
        bytes.extend(encode_record(1, b"{not json", b"{}"));
        bytes.extend(encode_record(1, &envelope("SessionStart"), b"[]"));
        let torn = encode_record(1, &envelope("Stop"), b"{}");
        bytes.extend(&torn[..torn.len() / 2]);
        bytes
    }

    fn items(read: SegmentRead) -> Vec<SegmentItem> {
        let mut items: Vec<(u64, SegmentItem)> = read
            .records
            .into_iter()
            .map(|r| (r.at.offset, SegmentItem::Record(Box::new(r))))
            .chain(
                read.damage
                    .into_iter()
                    .map(|d| (d.start, SegmentItem::Damage(d))),
            )
            .collect();
        items.sort_by_key(|(at, _)| *at);
        items.into_iter().map(|(_, item)| item).collect()
    }

    #[test]
    fn every_reader_reports_the_same_records_and_damage() {
        let bytes = damaged_segment();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("active.seg");
        std::fs::write(&path, &bytes).unwrap();

        let read = read_segment(&path).unwrap();
        let kinds: Vec<_> = read.damage.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                DamageKind::Garbage,
                DamageKind::BadEnvelope,
                DamageKind::TornTail
            ]
        );
        assert_eq!(read.records.len(), 2);
        assert_eq!(read.records[0].envelope.session_id.as_deref(), Some("s\\1"));

        let views = read_views(&bytes, &path);
        let owned: Vec<_> = views
            .records
            .iter()
            .cloned()
            .map(RecordView::into_owned)
            .collect();
        assert_eq!(owned, read.records);
        assert_eq!(views.damage, read.damage);

        let streamed: Vec<_> = SegmentReader::open(&path)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let expected = items(read);
        assert_eq!(streamed, expected);

        let firsts: Vec<_> = expected
            .iter()
            .map(|item| {
                let at = match item {
                    SegmentItem::Record(r) => r.at.offset,
                    SegmentItem::Damage(d) => d.start,
                };
                let view = read_first_view(&bytes[at as usize..], &path).unwrap();
                let mut first = SegmentItem::owned(view);
                match &mut first {
                    SegmentItem::Record(r) => r.at.offset += at,
                    SegmentItem::Damage(d) => (d.start, d.end) = (d.start + at, d.end + at),
                }
                first
            })
            .collect();
        assert_eq!(firsts, expected);
    }

    #[test]
    fn views_borrow_the_payload_from_the_bytes_read() {
        let bytes = damaged_segment();
        let views = read_views(&bytes, Path::new("mem"));
        let payload = views.records[1].payload;
        let at = payload.as_ptr() as usize - bytes.as_ptr() as usize;
        assert_eq!(&bytes[at..at + payload.len()], b"[]");
    }
}
