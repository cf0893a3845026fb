//! What a followed record is read from: the agent's file, or the stretch
//! of lines an adapter rendered from a record that is not lines
//! (`Adapter::render_record`: OpenCode's SQLite journal), addressed by the
//! whole rendering's offsets, so `finalize::record` reads both alike.

use std::io::{Read, Seek, SeekFrom};

use crate::agents::harnery::FINGERPRINT_LEN;
use crate::agents::record::place::{LINE_CEILING, OVERSIZED_HEAD};

/// What a record is read from: the file, or the stretch of lines an
/// adapter rendered from it (see `Adapter::render_record`), which starts at
/// its `base` offset: offsets are the whole rendering's.
pub(super) enum Source {
    File(std::fs::File),
    Rendered(u64, std::io::Cursor<Vec<u8>>),
}

impl Source {
    pub(super) fn len(&self) -> std::io::Result<u64> {
        match self {
            Source::File(f) => Ok(f.metadata()?.len()),
            Source::Rendered(base, c) => Ok(base + c.get_ref().len() as u64),
        }
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Source::File(f) => f.read(buf),
            Source::Rendered(_, c) => c.read(buf),
        }
    }
}

impl Seek for Source {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match (self, pos) {
            (Source::File(f), pos) => f.seek(pos),
            (Source::Rendered(base, c), SeekFrom::Start(at)) => match at.checked_sub(*base) {
                Some(within) => Ok(c.seek(SeekFrom::Start(within))? + *base),
                None => Err(std::io::Error::other(format!(
                    "offset {at} is before the rendered stretch (from {base})"
                ))),
            },
            (Source::Rendered(base, c), pos) => Ok(c.seek(pos)? + *base),
        }
    }
}

/// What [`whole_lines`] found.
pub(super) enum Lines {
    /// Whole lines (at most the bytes asked for, or one longer line up to
    /// [`LINE_CEILING`]), after the headroom asked for.
    Whole(Vec<u8>),
    /// One line longer than [`LINE_CEILING`]: its length (with its
    /// newline) and first bytes, after the headroom asked for.
    Oversized { len: u64, head: Vec<u8> },
    /// No newline ends what is there yet (a line the agent is still
    /// writing).
    Unfinished,
}

/// Whole lines from `at`: at most `want` bytes of them, or one longer
/// line, read into memory only up to [`LINE_CEILING`]; what is read lands
/// after `headroom` bytes.
pub(super) fn whole_lines(
    file: &mut Source,
    at: u64,
    len: u64,
    mut want: usize,
    headroom: usize,
) -> std::io::Result<Lines> {
    let asked = want;
    loop {
        let n = (len - at).min(want as u64) as usize;
        let mut buf = read_after(file, at, n, headroom)?;
        let read = &buf[headroom..];
        // Past what was asked for, only the one longer line.
        let cut = if want == asked {
            memchr::memrchr(b'\n', read)
        } else {
            memchr::memchr(b'\n', read)
        };
        if let Some(last) = cut {
            buf.truncate(headroom + last + 1);
            return Ok(Lines::Whole(buf));
        }
        if n < want {
            return Ok(Lines::Unfinished);
        }
        if want >= LINE_CEILING {
            buf.truncate(headroom + OVERSIZED_HEAD);
            buf.shrink_to_fit();
            return Ok(match newline_after(file, at + n as u64, len)? {
                Some(nl) => Lines::Oversized {
                    len: nl + 1 - at,
                    head: buf,
                },
                None => Lines::Unfinished,
            });
        }
        want = (want * 4).min(LINE_CEILING);
    }
}

/// `n` bytes of `file` from `at`, after `headroom` zero bytes (read
/// straight into the buffer, which is never zeroed first).
fn read_after(file: &mut Source, at: u64, n: usize, headroom: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(headroom + n);
    buf.resize(headroom, 0);
    file.seek(SeekFrom::Start(at))?;
    (&mut *file).take(n as u64).read_to_end(&mut buf)?;
    if buf.len() < headroom + n {
        // What `read_exact` says.
        let short = "failed to fill whole buffer";
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            short,
        ));
    }
    Ok(buf)
}

/// The offset of the first newline at or after `from`, read in small
/// blocks (a line over the ceiling is never held whole).
fn newline_after(file: &mut Source, from: u64, len: u64) -> std::io::Result<Option<u64>> {
    let mut block = vec![0u8; 1 << 20];
    let mut at = from;
    file.seek(SeekFrom::Start(at))?;
    while at < len {
        let n = (len - at).min(block.len() as u64) as usize;
        file.read_exact(&mut block[..n])?;
        if let Some(i) = memchr::memchr(b'\n', &block[..n]) {
            return Ok(Some(at + i as u64));
        }
        at += n as u64;
    }
    Ok(None)
}

/// blake3 (hex) of the (at most [`FINGERPRINT_LEN`]) bytes before `end`.
pub(super) fn tail_fingerprint(file: &mut Source, end: u64) -> std::io::Result<String> {
    let from = end.saturating_sub(FINGERPRINT_LEN);
    let mut buf = vec![0u8; (end - from) as usize];
    file.seek(SeekFrom::Start(from))?;
    file.read_exact(&mut buf)?;
    Ok(blake3::hash(&buf).to_hex().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whole lines are read after the headroom, as they are in the file.
    #[test]
    fn whole_lines_land_after_the_headroom() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, b"one\ntwo\nthree").expect("written");
        let mut file = Source::File(std::fs::File::open(&path).expect("opened"));
        let len = 13;
        let Lines::Whole(buf) = whole_lines(&mut file, 0, len, 100, 9).expect("read") else {
            panic!("whole lines expected");
        };
        assert_eq!(&buf[9..], b"one\ntwo\n");
        let Lines::Whole(buf) = whole_lines(&mut file, 4, len, 2, 3).expect("read") else {
            panic!("the one longer line expected");
        };
        assert_eq!(&buf[3..], b"two\n");
        assert!(matches!(
            whole_lines(&mut file, 8, len, 100, 3),
            Ok(Lines::Unfinished)
        ));
        let short = read_after(&mut file, 8, 10, 3).expect_err("past the end");
        assert_eq!(short.to_string(), "failed to fill whole buffer");
    }
}
