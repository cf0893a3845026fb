//! The compressed raw archive file, `.segz` (format version 1): a batch's
//! whole archive packed, `raw/<batch>.segz` (in an older build's, one
//! spool file of it, `raw/<batch>/NNNNNNNN.segz`). Its bytes (spool
//! records, damaged ranges included) are cut into pieces of [`FRAME_LEN`]
//! original bytes, each stored as an independent zstd frame (with zstd's
//! content checksum), followed by an index of the frames and a fixed
//! footer. A record is read by decompressing the one or two frames that
//! hold it, never the whole file.
//!
//! ```text
//! "HRNZSEG\x01"                         8 bytes: magic, format version 1
//! frame 0 … frame n-1                   zstd frames, one after another
//! index: n × (compressed offset u64,    16 bytes a frame, little endian;
//!             compressed len u32,       frame i holds original bytes
//!             original len u32)         [sum of earlier original lens, +len)
//! footer: original len u64, n u64,      32 bytes, little endian
//!         index offset u64, "HRNZIDX\x01"
//! ```
//!
//! Every frame but the last holds the same number of original bytes:
//! [`FRAME_LEN`] in a file this build writes, 256 KiB in one an earlier
//! build wrote (the index gives each frame's length, so both read alike).
//! The bytes decompressed are the original ones, byte for byte, so a
//! record's offset, its spool digest and the blake3 its raw signal row and
//! the hash chain carry are those of the uncompressed archive.

use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The first bytes of a compressed archive file (format version 1).
pub(crate) const MAGIC: &[u8; 8] = b"HRNZSEG\x01";
const FOOTER_MAGIC: &[u8; 8] = b"HRNZIDX\x01";
const FOOTER_LEN: u64 = 32;
const ENTRY_LEN: usize = 16;
/// Original bytes a frame holds: a record read decompresses at most this
/// much more than itself. The transcripts a batch holds repeat themselves
/// over more than a megabyte (resumed sessions), so longer frames keep
/// less: on the peer bench's data, packed batches in 1, 2 and 4 MiB
/// frames keep 7.9, 6.3 and 4.9 MB (docs/ledger.md, "The frame size").
pub(crate) const FRAME_LEN: usize = 4 << 20;
/// The zstd level `harnery archive compact` uses by default (see
/// docs/ledger.md, "A compressed raw archive", for the measurement).
pub const DEFAULT_LEVEL: i32 = 9;
/// The suffix of a compressed archive file.
pub(crate) const SUFFIX: &str = ".segz";

/// One frame as the index lists it.
#[derive(Debug, Clone, Copy)]
struct Frame {
    at: u64,
    len: u32,
    original_at: u64,
    original_len: u32,
}

/// A compressed archive file opened for reading: its index, read once.
#[derive(Debug)]
pub struct Compressed {
    file: std::fs::File,
    frames: Vec<Frame>,
    original_len: u64,
}

impl Compressed {
    /// Read the footer and index of the file at `path`.
    pub fn open(path: &Path) -> Result<Compressed, String> {
        let shown = path.display();
        let file = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
        let len = file.metadata().map_err(|e| format!("{shown}: {e}"))?.len();
        let bad = |what: &str| format!("{shown}: not a compressed archive file: {what}");
        if len < MAGIC.len() as u64 + FOOTER_LEN {
            return Err(bad(&format!(
                "{len} bytes, shorter than its header and footer"
            )));
        }
        let mut head = [0u8; 8];
        read_exact_at(&file, &mut head, 0).map_err(|e| format!("{shown}: {e}"))?;
        if &head != MAGIC {
            return Err(bad("it does not begin with HRNZSEG\\x01"));
        }
        let mut footer = [0u8; FOOTER_LEN as usize];
        read_exact_at(&file, &mut footer, len - FOOTER_LEN).map_err(|e| format!("{shown}: {e}"))?;
        let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8"));
        if &footer[24..] != FOOTER_MAGIC {
            return Err(bad("its footer does not end with HRNZIDX\\x01"));
        }
        let original_len = u64_at(&footer, 0);
        let count = u64_at(&footer, 8);
        let index_at = u64_at(&footer, 16);
        let index_len = count.checked_mul(ENTRY_LEN as u64);
        if index_len.and_then(|l| l.checked_add(index_at)) != Some(len - FOOTER_LEN) {
            return Err(bad(&format!(
                "its footer counts {count} frames from byte {index_at}, which does not fit {len} bytes"
            )));
        }
        let mut index = vec![0u8; index_len.expect("checked") as usize];
        read_exact_at(&file, &mut index, index_at).map_err(|e| format!("{shown}: {e}"))?;
        let mut frames = Vec::with_capacity(count as usize);
        let mut original_at = 0u64;
        for (i, e) in index.chunks_exact(ENTRY_LEN).enumerate() {
            let u32_at = |i: usize| u32::from_le_bytes(e[i..i + 4].try_into().expect("4"));
            let frame = Frame {
                at: u64_at(e, 0),
                len: u32_at(8),
                original_at,
                original_len: u32_at(12),
            };
            if frame.at < MAGIC.len() as u64 || frame.at + u64::from(frame.len) > index_at {
                return Err(bad(&format!("frame {i} lies outside the frames")));
            }
            original_at += u64::from(frame.original_len);
            frames.push(frame);
        }
        if original_at != original_len {
            return Err(bad(&format!(
                "its frames hold {original_at} bytes, its footer says {original_len}"
            )));
        }
        Ok(Compressed {
            file,
            frames,
            original_len,
        })
    }

    /// The length of the original (uncompressed) file.
    pub(crate) fn original_len(&self) -> u64 {
        self.original_len
    }

    /// Decompress the frames holding original bytes `[at, at + want)` (or
    /// up to the end) into `out`; returns the original offset of `out[0]`.
    pub fn read(&self, at: u64, want: usize, out: &mut Vec<u8>) -> Result<u64, String> {
        out.clear();
        let first = self
            .frames
            .partition_point(|f| f.original_at + u64::from(f.original_len) <= at);
        let end = at.saturating_add(want as u64);
        let start = self
            .frames
            .get(first)
            .map_or(self.original_len, |f| f.original_at);
        let mut compressed = Vec::new();
        for (i, f) in self.frames.iter().enumerate().skip(first) {
            if f.original_at >= end && i > first {
                break;
            }
            compressed.resize(f.len as usize, 0);
            read_exact_at(&self.file, &mut compressed, f.at)
                .map_err(|e| format!("frame {i}: {e}"))?;
            let before = out.len();
            out.reserve(f.original_len as usize);
            let got = zstd::stream::copy_decode(&compressed[..], &mut *out).map_err(|e| {
                format!(
                    "frame {i} (original bytes {}..{}) does not decompress: {e}",
                    f.original_at,
                    f.original_at + u64::from(f.original_len)
                )
            });
            got?;
            if out.len() - before != f.original_len as usize {
                return Err(format!(
                    "frame {i} decompresses to {} bytes, its index says {}",
                    out.len() - before,
                    f.original_len
                ));
            }
        }
        Ok(start)
    }
}

fn read_exact_at(file: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<()> {
    file.read_exact_at(buf, at)
}

/// Whether the file at `path` begins as a compressed archive file does.
pub fn is_compressed(path: &Path) -> bool {
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|f| f.read_exact_at(&mut head, 0))
        .is_ok()
        && &head == MAGIC
}

/// Write `from`'s bytes compressed at `level` to a new file `to`, synced;
/// the compressed file's length.
#[cfg(test)]
pub(crate) fn compress_file(from: &Path, to: &Path, level: i32) -> std::io::Result<u64> {
    compress(&mut std::fs::File::open(from)?, to, level)
}

/// Write every byte `src` reads, compressed at `level`, to a new file
/// `to` (never an existing one), synced; the compressed file's length.
pub(crate) fn compress(src: &mut impl Read, to: &Path, level: i32) -> std::io::Result<u64> {
    let out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    out.write_all(MAGIC)?;
    let mut at = MAGIC.len() as u64;
    let mut compressor = zstd::bulk::Compressor::new(level)?;
    compressor.include_checksum(true)?;
    compressor.include_contentsize(true)?;
    let mut index = Vec::new();
    let mut buf = vec![0u8; FRAME_LEN];
    let mut original_len = 0u64;
    let mut count = 0u64;
    loop {
        let n = fill(src, &mut buf)?;
        if n == 0 {
            break;
        }
        let frame = compressor.compress(&buf[..n])?;
        out.write_all(&frame)?;
        index.extend_from_slice(&at.to_le_bytes());
        index.extend_from_slice(&(frame.len() as u32).to_le_bytes());
        index.extend_from_slice(&(n as u32).to_le_bytes());
        at += frame.len() as u64;
        original_len += n as u64;
        count += 1;
        if n < buf.len() {
            break;
        }
    }
    out.write_all(&index)?;
    out.write_all(&original_len.to_le_bytes())?;
    out.write_all(&count.to_le_bytes())?;
    out.write_all(&at.to_le_bytes())?;
    out.write_all(FOOTER_MAGIC)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok(at + index.len() as u64 + FOOTER_LEN)
}

/// Read from `src` until `buf` is full or `src` ends; how much was read.
fn fill(src: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Whether the compressed file `z` holds exactly the `len` bytes `original`
/// reads (named `what` in the answer), read frame by frame; why not, when
/// it does not.
pub(crate) fn same_bytes(
    z: &Path,
    original: &mut impl Read,
    len: u64,
    what: &str,
) -> Result<(), String> {
    let c = Compressed::open(z)?;
    if len != c.original_len {
        return Err(format!(
            "{} holds {} bytes, {what} holds {len}",
            z.display(),
            c.original_len
        ));
    }
    let mut got = Vec::new();
    let mut want = vec![0u8; FRAME_LEN];
    let mut at = 0u64;
    while at < len {
        c.read(at, 1, &mut got)
            .map_err(|e| format!("{}: {e}", z.display()))?;
        let want = &mut want[..got.len()];
        let n = fill(original, want).map_err(|e| format!("{what}: {e}"))?;
        if n != want.len() || got != *want {
            return Err(format!(
                "{} differs from {what} in original bytes {at}..{}",
                z.display(),
                at + got.len() as u64
            ));
        }
        at += got.len() as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_back_byte_for_byte_from_any_offset() {
        let dir = tempfile::tempdir().unwrap();
        let (src, z) = (dir.path().join("a.seg"), dir.path().join("a.segz"));
        let bytes: Vec<u8> = (0..FRAME_LEN * 2 + 777)
            .map(|i| (i % 251) as u8 ^ (i / 4096) as u8)
            .collect();
        std::fs::write(&src, &bytes).unwrap();
        compress_file(&src, &z, 3).unwrap();
        assert!(is_compressed(&z) && !is_compressed(&src));
        let len = bytes.len() as u64;
        same_bytes(&z, &mut &bytes[..], len, "the original").unwrap();
        let mut other = bytes.clone();
        other[FRAME_LEN + 9] ^= 1;
        let err = same_bytes(&z, &mut &other[..], len, "the other").unwrap_err();
        assert!(
            err.contains(&format!("original bytes {FRAME_LEN}..")),
            "{err}"
        );
        let c = Compressed::open(&z).unwrap();
        assert_eq!(c.original_len(), bytes.len() as u64);
        let mut out = Vec::new();
        for at in [0u64, 5, FRAME_LEN as u64 - 3, 2 * FRAME_LEN as u64 + 776] {
            let start = c.read(at, 10, &mut out).unwrap();
            let from = (at - start) as usize;
            let n = 10.min(out.len() - from);
            assert_eq!(&out[from..from + n], &bytes[at as usize..at as usize + n]);
        }
        // A flipped byte inside a frame is found, naming the frame.
        let mut damaged = std::fs::read(&z).unwrap();
        damaged[40] ^= 0x55;
        std::fs::write(&z, &damaged).unwrap();
        let err = Compressed::open(&z)
            .unwrap()
            .read(0, 10, &mut out)
            .unwrap_err();
        assert!(err.contains("frame 0"), "{err}");
        // An empty file compresses to no frames and reads as empty.
        std::fs::write(&src, b"").unwrap();
        std::fs::remove_file(&z).unwrap();
        compress_file(&src, &z, 3).unwrap();
        assert_eq!(Compressed::open(&z).unwrap().original_len(), 0);
    }
}
