//! What a followed record is read from: the agent's file, or the stretch
//! of lines an adapter rendered from a record that is not lines
//! (`Adapter::render_record`: OpenCode's SQLite journal), addressed by the
//! whole rendering's offsets, so `finalize::record` reads both alike.

use std::io::{Read, Seek, SeekFrom};

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
