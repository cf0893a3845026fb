//! A ready file is written once, read back only after a crash, and deleted
//! as soon as its batch commits. Copying its bytes into the page cache
//! (and having the kernel write them back later) is pure cost, so whole
//! blocks go to the disk with `O_DIRECT` from an aligned buffer; the last
//! partial block, which `O_DIRECT` cannot write, goes through the page
//! cache. A file system that refuses `O_DIRECT` (tmpfs) gets plain writes.
//! The caller still fsyncs: `O_DIRECT` skips the page cache, not the
//! disk's own cache or the file's metadata.

use std::alloc::{Layout, alloc, dealloc};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;

/// The alignment `O_DIRECT` asks of offsets, lengths and buffers; 4 KiB
/// covers every block device Linux ships with.
const BLOCK: usize = 4096;
/// The buffer, and so the size of every direct write but the last.
const BUFFER: usize = 1 << 20;

pub(crate) struct DirectWriter {
    file: File,
    buf: Aligned,
    len: usize,
    direct: bool,
}

/// BUFFER bytes aligned to BLOCK, owned by one writer.
struct Aligned(*mut u8);

// SAFETY: the allocation is reachable only through its one owner.
unsafe impl Send for Aligned {}

impl DirectWriter {
    /// Take over `file` (opened for writing, empty). Direct I/O is used if
    /// the file system accepts it, plain writes otherwise.
    pub(crate) fn new(file: File) -> DirectWriter {
        let direct = set_direct(&file, true).is_ok();
        // SAFETY: the layout is non-zero in size with a power-of-two
        // alignment; a null result is handled below.
        let buf = unsafe { alloc(layout()) };
        if buf.is_null() {
            std::alloc::handle_alloc_error(layout());
        }
        DirectWriter {
            file,
            buf: Aligned(buf),
            len: 0,
            direct,
        }
    }

    /// Write what is buffered and hand the file back, ready to be synced.
    pub(crate) fn finish(mut self) -> io::Result<File> {
        let whole = self.len / BLOCK * BLOCK;
        self.write_out(0, whole)?;
        if self.len > whole {
            if self.direct {
                set_direct(&self.file, false)?;
                self.direct = false;
            }
            self.write_out(whole, self.len)?;
        }
        Ok(self.file)
    }

    fn write_out(&mut self, from: usize, to: usize) -> io::Result<()> {
        if from == to {
            return Ok(());
        }
        // SAFETY: `from..to` lies within the `len` bytes written so far.
        let mut rest = unsafe { std::slice::from_raw_parts(self.buf.0.add(from), to - from) };
        while !rest.is_empty() {
            match self.file.write(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Some file systems accept the flag and refuse the write:
                // go on from where the last write stopped, without it.
                Err(e) if self.direct && e.raw_os_error() == Some(libc::EINVAL) => {
                    set_direct(&self.file, false)?;
                    self.direct = false;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Write for DirectWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.len == BUFFER {
            self.write_out(0, BUFFER)?;
            self.len = 0;
        }
        let n = bytes.len().min(BUFFER - self.len);
        // SAFETY: `n` bytes fit after `len` in the BUFFER-byte allocation,
        // and `bytes` cannot overlap a buffer nobody else can see.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.buf.0.add(self.len), n) };
        self.len += n;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `DirectWriter::new` with this layout, freed
        // only here.
        unsafe { dealloc(self.0, layout()) };
    }
}

fn layout() -> Layout {
    Layout::from_size_align(BUFFER, BLOCK).expect("a power-of-two alignment")
}

fn set_direct(file: &File, on: bool) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process owns, with integer
    // arguments only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = if on {
        flags | libc::O_DIRECT
    } else {
        flags & !libc::O_DIRECT
    };
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn written(sizes: &[usize]) -> (Vec<u8>, Vec<u8>) {
        written_in(tempfile::tempdir().unwrap(), sizes)
    }

    fn written_in(dir: tempfile::TempDir, sizes: &[usize]) -> (Vec<u8>, Vec<u8>) {
        let path = dir.path().join("f");
        let mut w = DirectWriter::new(File::create(&path).unwrap());
        let mut expect = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let chunk: Vec<u8> = (0..n).map(|j| (i * 31 + j * 7) as u8).collect();
            w.write_all(&chunk).unwrap();
            expect.extend_from_slice(&chunk);
        }
        let file = w.finish().unwrap();
        file.sync_all().unwrap();
        let mut got = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut got).unwrap();
        (expect, got)
    }

    #[test]
    fn every_byte_lands_whatever_the_sizes() {
        for sizes in [
            vec![],
            vec![1],
            vec![BLOCK],
            vec![BLOCK - 1, 2],
            vec![BUFFER],
            vec![BUFFER + 1],
            vec![BUFFER - 3, 7, BLOCK * 3 + 5],
            vec![3 * BUFFER + 123, 17, 1],
        ] {
            let (expect, got) = written(&sizes);
            assert_eq!(got.len(), expect.len(), "{sizes:?}");
            assert!(got == expect, "content differs for {sizes:?}");
        }
    }

    /// A write `O_DIRECT` refuses (here: an unaligned length, which ext4
    /// refuses with EINVAL) goes on without it, each byte written once.
    #[test]
    fn a_refused_direct_write_goes_on_without_direct_io() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut w = DirectWriter::new(File::create(&path).unwrap());
        w.write_all(b"ten bytes!").unwrap();
        w.write_out(0, 10).unwrap();
        drop(w);
        assert_eq!(std::fs::read(&path).unwrap(), b"ten bytes!");
    }
}
