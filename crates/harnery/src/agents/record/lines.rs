//! The bounded line reader under every stream scan.
//!
//! It reads a file from the start up to a length fixed before the first read
//! (so appends made while it runs are never read), in large chunks, finding
//! newlines with `memchr`. Complete lines are handed out as slices of its one
//! buffer; a line longer than the bound is never buffered: its first bytes are
//! kept for classification and the rest is skipped up to the next newline.
//! Memory is `max_line + chunk` bytes whatever the file's size.

use std::io::{self, Read};

/// How many bytes of an oversized line are kept to say what it was.
pub(crate) const OVERSIZED_HEAD: usize = 256;

/// One piece of the stream, in file order.
#[derive(Debug)]
pub(crate) enum Piece<'a> {
    /// A line without its newline; `terminated` is false only for the last
    /// bytes of the scanned range when no newline followed them.
    Line {
        offset: u64,
        bytes: &'a [u8],
        terminated: bool,
    },
    /// A line longer than the bound: its offset, full length, and first bytes.
    Oversized {
        offset: u64,
        len: u64,
        head: &'a [u8],
    },
}

/// Sizes for one scan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReaderLimits {
    /// Longest line handed out whole.
    pub max_line: usize,
    /// Bytes asked of the kernel per read.
    pub chunk: usize,
}

/// Reads `limit` bytes of `src` as lines.
pub(crate) struct LineReader<R> {
    src: R,
    limit: u64,
    limits: ReaderLimits,
    /// Called once after the first read (test hook for the append rule).
    after_first_read: Option<Box<dyn FnOnce() + Send>>,
    count_utf16: bool,
    progress: crate::progress::Progress,
}

/// What a finished read saw.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReadStats {
    /// Bytes read (the limit, unless the file shrank).
    pub bytes: u64,
    /// UTF-16 code units of the bytes read as UTF-8, when asked for.
    pub utf16_units: Option<u64>,
}

struct Window {
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    base: u64,
    /// Start of the current (unfinished) line in `buf`.
    start: usize,
    /// End of valid bytes in `buf`.
    filled: usize,
}

struct Skipping {
    offset: u64,
    len: u64,
    head: Vec<u8>,
}

impl<R: Read> LineReader<R> {
    /// A reader of the first `limit` bytes of `src`.
    pub(crate) fn new(src: R, limit: u64, limits: ReaderLimits) -> Self {
        LineReader {
            src,
            limit,
            limits,
            after_first_read: None,
            count_utf16: false,
            progress: crate::progress::Progress::none(),
        }
    }

    /// Also count UTF-16 code units (what a JavaScript string of the file holds).
    pub(crate) fn counting_utf16(mut self, on: bool) -> Self {
        self.count_utf16 = on;
        self
    }

    /// Tell `progress` how many bytes each read brings.
    pub(crate) fn with_progress(mut self, progress: crate::progress::Progress) -> Self {
        self.progress = progress;
        self
    }

    /// Run `hook` once, right after the first chunk has been read.
    pub(crate) fn with_after_first_read(mut self, hook: Option<Box<dyn FnOnce() + Send>>) -> Self {
        self.after_first_read = hook;
        self
    }

    /// Hand every piece to `sink`, in file order.
    pub(crate) fn run(mut self, mut sink: impl FnMut(Piece<'_>)) -> io::Result<ReadStats> {
        let mut units = 0u64;
        let cap = self
            .limits
            .max_line
            .saturating_add(self.limits.chunk)
            .max(2);
        let mut w = Window {
            buf: vec![0u8; cap],
            base: 0,
            start: 0,
            filled: 0,
        };
        let mut skipping: Option<Skipping> = None;
        let mut remaining = self.limit;
        while remaining > 0 {
            make_room(&mut w, self.limits.chunk);
            let want =
                (w.buf.len() - w.filled).min(usize::try_from(remaining).unwrap_or(usize::MAX));
            let n = read_retrying(&mut self.src, &mut w.buf[w.filled..w.filled + want])?;
            if n == 0 {
                break; // the file shrank under us: stop at what exists
            }
            if let Some(hook) = self.after_first_read.take() {
                hook();
            }
            remaining -= n as u64;
            self.progress.add(n as u64);
            if self.count_utf16 {
                units += utf16_units(&w.buf[w.filled..w.filled + n]);
            }
            let scan_from = w.filled;
            w.filled += n;
            self.split_lines(&mut w, scan_from, &mut skipping, &mut sink);
        }
        finish(&mut w, skipping, &mut sink);
        let utf16_units = self.count_utf16.then_some(units);
        Ok(ReadStats {
            bytes: self.limit - remaining,
            utf16_units,
        })
    }

    fn split_lines(
        &self,
        w: &mut Window,
        scan_from: usize,
        skipping: &mut Option<Skipping>,
        sink: &mut impl FnMut(Piece<'_>),
    ) {
        let mut from = scan_from;
        while let Some(pos) = memchr::memchr(b'\n', &w.buf[from..w.filled]) {
            let nl = from + pos;
            if let Some(skip) = skipping.take() {
                let len = skip.len + (nl - w.start) as u64;
                sink(Piece::Oversized {
                    offset: skip.offset,
                    len,
                    head: &skip.head,
                });
            } else {
                let offset = w.base + w.start as u64;
                let bytes = &w.buf[w.start..nl];
                if bytes.len() > self.limits.max_line {
                    let head = &bytes[..OVERSIZED_HEAD.min(bytes.len())];
                    sink(Piece::Oversized {
                        offset,
                        len: bytes.len() as u64,
                        head,
                    });
                } else {
                    sink(Piece::Line {
                        offset,
                        bytes,
                        terminated: true,
                    });
                }
            }
            w.start = nl + 1;
            from = w.start;
        }
        self.bound_partial(w, skipping);
    }

    /// A partial line past the bound is dropped from the buffer, not kept.
    fn bound_partial(&self, w: &mut Window, skipping: &mut Option<Skipping>) {
        let partial = w.filled - w.start;
        match skipping {
            Some(skip) => skip.len += partial as u64,
            None if partial > self.limits.max_line => {
                let head_len = partial.min(OVERSIZED_HEAD);
                *skipping = Some(Skipping {
                    offset: w.base + w.start as u64,
                    len: partial as u64,
                    head: w.buf[w.start..w.start + head_len].to_vec(),
                });
            }
            None => return,
        }
        w.base += w.filled as u64;
        w.start = 0;
        w.filled = 0;
    }
}

fn make_room(w: &mut Window, chunk: usize) {
    if w.buf.len() - w.filled >= chunk {
        return;
    }
    w.buf.copy_within(w.start..w.filled, 0);
    w.base += w.start as u64;
    w.filled -= w.start;
    w.start = 0;
}

fn finish(w: &mut Window, skipping: Option<Skipping>, sink: &mut impl FnMut(Piece<'_>)) {
    if let Some(skip) = skipping {
        let len = skip.len;
        sink(Piece::Oversized {
            offset: skip.offset,
            len,
            head: &skip.head,
        });
    } else if w.filled > w.start {
        let offset = w.base + w.start as u64;
        sink(Piece::Line {
            offset,
            bytes: &w.buf[w.start..w.filled],
            terminated: false,
        });
    }
}

/// UTF-16 code units of `bytes` decoded as UTF-8: one per sequence start,
/// two for a four-byte sequence. A stray continuation byte counts as none.
pub(crate) fn utf16_units(bytes: &[u8]) -> u64 {
    // Byte lanes that the compiler turns into vector adds: each lane gains at
    // most 2 per round, so 127 rounds fit a u8 before the lanes are summed.
    const LANES: usize = 32;
    const ROUNDS: usize = 127;
    let mut blocks = bytes.chunks_exact(LANES * ROUNDS);
    let mut total = 0u64;
    for block in &mut blocks {
        let mut lanes = [0u8; LANES];
        for chunk in block.chunks_exact(LANES) {
            for (lane, &b) in lanes.iter_mut().zip(chunk) {
                *lane += units_of(b);
            }
        }
        total += lanes.iter().map(|&l| u64::from(l)).sum::<u64>();
    }
    total
        + blocks
            .remainder()
            .iter()
            .map(|&b| u64::from(units_of(b)))
            .sum::<u64>()
}

fn units_of(b: u8) -> u8 {
    u8::from((b as i8) >= -64) + u8::from(b >= 0xF0)
}

fn read_retrying<R: Read>(src: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match src.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(data: &[u8], max_line: usize, chunk: usize) -> Vec<String> {
        let mut out = Vec::new();
        let reader = LineReader::new(data, data.len() as u64, ReaderLimits { max_line, chunk });
        reader
            .run(|p| match p {
                Piece::Line {
                    offset,
                    bytes,
                    terminated,
                } => out.push(format!(
                    "L{offset}:{}{}",
                    String::from_utf8_lossy(bytes),
                    if terminated { "" } else { "~" }
                )),
                Piece::Oversized { offset, len, head } => out.push(format!(
                    "O{offset}:{len}:{}",
                    String::from_utf8_lossy(&head[..head.len().min(3)])
                )),
            })
            .expect("reading a slice cannot fail");
        out
    }

    #[test]
    fn splits_lines_across_chunks() {
        assert_eq!(collect(b"ab\ncd\nef", 8, 3), ["L0:ab", "L3:cd", "L6:ef~"]);
    }

    #[test]
    fn oversized_line_skipped_with_length() {
        let got = collect(b"ok\n0123456789abcdef\nnext\n", 6, 4);
        assert_eq!(got, ["L0:ok", "O3:16:012", "L20:next"]);
    }

    #[test]
    fn oversized_at_end_reported() {
        assert_eq!(collect(b"a\nxxxxxxxxxxxx", 4, 2), ["L0:a", "O2:12:xxx"]);
    }

    #[test]
    fn utf16_units_match_std() {
        // Longer than one 4064-byte block, so the lane path runs too.
        let long = "ab😀é日".repeat(1000);
        for text in [
            "",
            "plain",
            "héllo wörld",
            "日本語",
            "emoji 😀 and 𝄞",
            &long,
            &long[1..],
        ] {
            assert_eq!(
                utf16_units(text.as_bytes()),
                text.encode_utf16().count() as u64,
                "{text}"
            );
        }
    }

    #[test]
    fn limit_stops_before_appended_bytes() {
        let data = b"one\ntwo\nthree\n";
        let mut out = Vec::new();
        LineReader::new(
            &data[..],
            8,
            ReaderLimits {
                max_line: 64,
                chunk: 3,
            },
        )
        .run(|p| {
            if let Piece::Line { bytes, .. } = p {
                out.push(bytes.to_vec())
            }
        })
        .expect("slice read");
        assert_eq!(out, [b"one".to_vec(), b"two".to_vec()]);
    }

    proptest::proptest! {
        #[test]
        fn every_short_line_comes_back(lines in proptest::collection::vec("[a-z{}\" ]{0,12}", 0..40), chunk in 1usize..9) {
            let text = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
            let mut got = Vec::new();
            LineReader::new(text.as_bytes(), text.len() as u64, ReaderLimits { max_line: 12, chunk })
                .run(|p| if let Piece::Line { bytes, .. } = p { got.push(String::from_utf8_lossy(bytes).into_owned()) })
                .expect("slice read");
            proptest::prop_assert_eq!(got, lines);
        }
    }

    proptest::proptest! {
        #[test]
        fn oversized_lines_are_reported_with_offset_and_length(
            lens in proptest::collection::vec(0usize..40, 0..30),
            chunk in 1usize..16,
        ) {
            let mut text = String::new();
            let mut expected = Vec::new();
            for (i, len) in lens.iter().enumerate() {
                let offset = text.len();
                let line: String = std::iter::repeat_n((b'a' + (i % 26) as u8) as char, *len).collect();
                expected.push(if *len > 12 { format!("O{offset}:{len}") } else { format!("L{offset}:{line}") });
                text.push_str(&line);
                text.push('\n');
            }
            let mut got = Vec::new();
            LineReader::new(text.as_bytes(), text.len() as u64, ReaderLimits { max_line: 12, chunk })
                .run(|p| got.push(match p {
                    Piece::Line { offset, bytes, .. } => format!("L{offset}:{}", String::from_utf8_lossy(bytes)),
                    Piece::Oversized { offset, len, .. } => format!("O{offset}:{len}"),
                }))
                .expect("slice read");
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
