//! The raw archive, `raw/` beside the ledger database: the intake spool
//! files each batch drained, kept byte for byte once the spool lets them go.
//!
//! One directory per batch, `raw/<batch>/`, holding the batch's spool files
//! as `00000000.seg`, `00000001.seg`, … in the batch's order. Read one after
//! another they are the batch's archive: a spool file holds records and
//! nothing else (spool format §2), so the archive is itself spool data that
//! the spool reader reads, damaged ranges kept as they were, and no drained
//! byte is lost. A raw signal row names its record by the batch and the
//! record's byte offset in that concatenation (`archive_at`).
//!
//! The files are hard links to the spool files, so keeping them copies no
//! byte: a sealed spool file never changes, and the hook already synced
//! it. Each is still synced (nearly free when it is clean) in case a bulk
//! writer skipped that, and a filesystem that cannot link (the ledger on
//! another device) gets copies. The directory is built under a temporary
//! name, synced and renamed into place before the batch's ready file is
//! written, so no committed row can point at bytes that a crash could still
//! take away; an archive whose batch neither committed nor has a ready file
//! waiting is the leftover of a killed run, and [`remove_orphans`](crate::finalize::ready::remove_orphans) deletes
//! it.
//!
//! Ledgers written before archives were linked keep one file per batch,
//! `raw/<batch>.seg`, the same concatenation written out; it is still read.
//! Compaction (`ledger::write::compact`) packs a batch's archive into that
//! single-file form, compressed: `raw/<batch>.segz` (`ledger::rawz`), the
//! whole concatenation as one stream. It is renamed into place before the
//! directory it replaces is deleted, and a reader looks for it first, so a
//! reader finds the batch's bytes whatever moment it opens the archive at.
//!
//! The bytes live outside SQLite because the ledger would otherwise write
//! each of them twice more (WAL, then checkpoint) and carry them through
//! every page it touches.

use std::path::{Path, PathBuf};

use super::LedgerError;
use crate::durable;
use crate::spool::envelope::EnvelopeView;
use crate::spool::frame::{HEADER_LEN, decode_header};
use crate::spool::{SpoolRecord, read_first_view};

/// The archive directory's name inside the ledger directory.
pub(crate) const RAW_DIR: &str = "raw";
pub(super) const SUFFIX: &str = ".seg";

/// Where the archive of `batch` lives.
pub(crate) fn archive_path(ledger_dir: &Path, batch: &str) -> PathBuf {
    ledger_dir.join(RAW_DIR).join(batch)
}

/// Where an archive written as one file lives (uncompressed, before
/// archives were linked).
fn single_file_path(ledger_dir: &Path, batch: &str) -> PathBuf {
    ledger_dir.join(RAW_DIR).join(format!("{batch}{SUFFIX}"))
}

/// Where a batch's packed archive lives: the single-file form,
/// compressed (`raw/<batch>.segz`).
pub(crate) fn packed_path(ledger_dir: &Path, batch: &str) -> PathBuf {
    compressed_path(&single_file_path(ledger_dir, batch))
}

/// The name of the `index`th file of an archive.
fn member_name(index: usize) -> String {
    format!("{index:08}{SUFFIX}")
}

/// Keep `files` (sealed spool files, in the batch's order) as the archive
/// of `batch`. Returns its path once it is durable.
pub(crate) fn keep(
    ledger_dir: &Path,
    batch: &str,
    files: &[&Path],
) -> Result<PathBuf, LedgerError> {
    let raw = ledger_dir.join(RAW_DIR);
    super::create_dir_private(&raw)?;
    let tmp = raw.join(format!(".{batch}.tmp"));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| LedgerError::io(&tmp, e))?;
    }
    super::create_dir_private(&tmp)?;
    let members: Vec<PathBuf> = (0..files.len()).map(|i| tmp.join(member_name(i))).collect();
    for (file, member) in files.iter().zip(&members) {
        link_or_copy(file, member)?;
        let handle = std::fs::File::open(member).map_err(|e| LedgerError::io(member, e))?;
        durable::start_writeback(&handle);
    }
    // Every member's writeback is under way before the first wait, so the
    // waits overlap instead of queueing one file's writes behind another's
    // (files are opened again rather than held: a chunk may have thousands).
    for member in &members {
        std::fs::File::open(member)
            .and_then(|f| f.sync_data())
            .map_err(|e| LedgerError::durability(member, e))?;
    }
    durable::sync_dir(&tmp)?;
    let path = archive_path(ledger_dir, batch);
    std::fs::rename(&tmp, &path).map_err(|e| LedgerError::io(&path, e))?;
    durable::sync_dir(&raw)?;
    Ok(path)
}

/// Where `batch`'s archive is and its files, as found now: the single
/// file when there is one, else the directory's files.
fn found_files(ledger_dir: &Path, batch: &str) -> (PathBuf, Vec<PathBuf>) {
    let single = single_file_path(ledger_dir, batch);
    if let Some(found) = either_form(&single) {
        return (single, vec![found]);
    }
    let path = archive_path(ledger_dir, batch);
    let files = listed_members(&path);
    if let Some(found) = either_form(&single) {
        // Packed while the directory was listed: the list may lack files
        // deleted since, the packed file holds them all.
        return (single, vec![found]);
    }
    if let Some(hook) = crate::failpoint::take_hook(LISTED, &path) {
        hook();
    }
    (path, files)
}

/// The in-process failpoint (`failpoint::arm_hook`, keyed by the batch's
/// directory) where [`found_files`] has listed a directory that was not
/// packed yet.
const LISTED: &str = "raw-archive-listed";

/// `path` (`….seg`) in its compressed form when that exists, else itself
/// when it exists.
fn either_form(path: &Path) -> Option<PathBuf> {
    let z = compressed_path(path);
    if z.exists() {
        Some(z)
    } else {
        path.exists().then(|| path.to_path_buf())
    }
}

/// The files of the archive directory `dir` in order, each in its
/// compressed form where that exists (the first named even when missing,
/// so that reading it says which file is missing).
fn listed_members(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for index in 0.. {
        let member = dir.join(member_name(index));
        match either_form(&member) {
            Some(found) => files.push(found),
            None if index == 0 => files.push(member),
            None => break,
        }
    }
    files
}

/// The compressed form of the archive file `path` (`….seg` → `….segz`).
pub(crate) fn compressed_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push("z");
    path.with_file_name(name)
}

/// A hard link where the filesystem allows one, else a copy.
fn link_or_copy(from: &Path, to: &Path) -> Result<(), LedgerError> {
    match std::fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices || is_unsupported(&e) => {
            std::fs::copy(from, to)
                .map(drop)
                .map_err(|e| LedgerError::io(to, e))
        }
        Err(e) => Err(LedgerError::io(to, e)),
    }
}

/// Filesystems without hard links say so with EPERM (vfat) or ENOTSUP.
fn is_unsupported(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOTSUP))
}

/// A record's captured agent environment as a raw signal row keeps it:
/// a compact JSON object, or nothing when it captured none.
pub(crate) fn env_text(env: &std::collections::BTreeMap<String, String>) -> Option<String> {
    (!env.is_empty()).then(|| serde_json::to_string(env).expect("env serializes"))
}

/// One batch's archive, read one record at a time: its files are opened,
/// not read whole, so memory holds one window (or one record larger than
/// it) whatever the size of the batch.
pub struct Archive {
    /// Where it was opened from, to open it again when compaction packed
    /// its files meanwhile.
    ledger_dir: PathBuf,
    batch: String,
    path: PathBuf,
    /// Each file and the archive offset it starts at.
    members: Vec<(PathBuf, u64)>,
    /// Each file's frame index, when it is compressed (`rawz`).
    packed: Vec<Option<super::rawz::Compressed>>,
    len: u64,
    /// The one member kept open (its index): records are looked up mostly
    /// in order, and a batch may have many files.
    current: Option<(usize, std::fs::File)>,
    window: Window,
}

/// Bytes read ahead from one member: records looked up in order cost one
/// read a window, not two a record.
#[derive(Default)]
struct Window {
    member: usize,
    /// The member offset of `bytes[0]`.
    start: u64,
    bytes: Vec<u8>,
}

/// How much a window reads ahead.
const WINDOW_LEN: usize = 64 << 10;

impl Archive {
    /// The archive of `batch`: its files one after another, or the single
    /// file of an older ledger.
    /// A file compacted (`harnery archive compact`) is read from its
    /// compressed form, `<name>.segz`, which holds the same bytes.
    pub fn open(ledger_dir: &Path, batch: &str) -> Result<Archive, LedgerError> {
        let (path, files) = found_files(ledger_dir, batch);
        match Archive::sized(ledger_dir, batch, path, &files) {
            // Packed after the listing and before a listed file was sized:
            // it is gone, and the packed file holds it now.
            Err(_) if files.iter().any(|f| !f.exists()) => {
                let (path, files) = found_files(ledger_dir, batch);
                Archive::sized(ledger_dir, batch, path, &files)
            }
            got => got,
        }
    }

    /// The archive of `files`, each opened or sized as it is now.
    fn sized(
        ledger_dir: &Path,
        batch: &str,
        path: PathBuf,
        files: &[PathBuf],
    ) -> Result<Archive, LedgerError> {
        let mut members = Vec::new();
        let mut packed = Vec::new();
        let mut len = 0u64;
        for f in files {
            let z = if f.extension().is_some_and(|e| e == "segz") {
                let z =
                    super::rawz::Compressed::open(f).map_err(|detail| LedgerError::Corrupt {
                        path: f.clone(),
                        detail,
                    })?;
                Some(z)
            } else {
                None
            };
            let size = match &z {
                Some(z) => z.original_len(),
                None => std::fs::metadata(f)
                    .map_err(|e| LedgerError::io(f, e))?
                    .len(),
            };
            members.push((f.clone(), len));
            packed.push(z);
            len += size;
        }
        Ok(Archive {
            ledger_dir: ledger_dir.to_path_buf(),
            batch: batch.to_string(),
            path,
            members,
            packed,
            len,
            current: None,
            window: Window::default(),
        })
    }

    /// The intact record that starts at byte `at` (copied out), or why
    /// there is none.
    pub fn record_at(&mut self, at: u64) -> Result<SpoolRecord, String> {
        let range = self.read_record(at)?;
        match read_first_view(&self.window.bytes[range], &self.path) {
            Some(Ok(rec)) => {
                let mut record = rec.into_owned();
                record.at.offset = at;
                Ok(record)
            }
            Some(Err(d)) => Err(format!("{}: {}", self.here(at), d.kind.as_str())),
            None => Err(format!("{}: no record", self.here(at))),
        }
    }

    /// Whether the intact record that starts at byte `at` carries `want`'s
    /// session key, event and receive time; decoded in place.
    pub(in crate::ledger) fn identity_at(
        &mut self,
        at: u64,
        want: &Identity<'_>,
    ) -> Result<(), String> {
        let range = self.read_record(at)?;
        let fault = match read_first_view(&self.window.bytes[range], &self.path) {
            Some(Ok(rec)) => {
                let got = Identity::of(&rec.envelope);
                if got == *want {
                    return Ok(());
                }
                return Err(format!(
                    "the record there is {got:?}, the row says {want:?}"
                ));
            }
            Some(Err(d)) => d.kind.as_str(),
            None => "no record",
        };
        Err(format!("{}: {fault}", self.here(at)))
    }

    fn here(&self, at: u64) -> String {
        format!("{} byte {at}", self.path.display())
    }

    /// Where in the window the bytes of the record that starts at byte
    /// `at` are (as many as there are, when it is torn; just the header's,
    /// when that does not check out). A file gone since the archive was
    /// opened is one compaction packed and deleted meanwhile: the archive
    /// is opened again, in its packed form, and read there.
    fn read_record(&mut self, at: u64) -> Result<std::ops::Range<usize>, String> {
        match self.read_record_once(at) {
            Err(Fault::Gone(_)) => {
                *self = Archive::open(&self.ledger_dir, &self.batch).map_err(|e| e.to_string())?;
                self.read_record_once(at).map_err(Fault::into_text)
            }
            got => got.map_err(Fault::into_text),
        }
    }

    fn read_record_once(&mut self, at: u64) -> Result<std::ops::Range<usize>, Fault> {
        if at >= self.len {
            let past = format!("{}: past the end of the archive", self.here(at));
            return Err(Fault::Other(past));
        }
        let member = self.members.partition_point(|(_, start)| *start <= at) - 1;
        let local = at - self.members[member].1;
        let got = self.fill(member, local, HEADER_LEN)?;
        let header: Option<&[u8; HEADER_LEN]> = self.window.bytes[self.window_at(local, got)]
            .try_into()
            .ok();
        let record_len = match header.map(decode_header) {
            Some(Ok(h)) => usize::try_from(h.record_len()).unwrap_or(usize::MAX),
            _ => got,
        };
        let got = self.fill(member, local, record_len.min(MAX_RECORD))?;
        Ok(self.window_at(local, got))
    }

    /// Where `len` bytes from member offset `local` are in the window
    /// (which [`Archive::fill`] made sure holds them).
    fn window_at(&self, local: u64, len: usize) -> std::ops::Range<usize> {
        let from = (local - self.window.start) as usize;
        from..from + len
    }

    /// Make the window hold `want` bytes of `member` from `local`, or as
    /// many as the file has; how many that is.
    fn fill(&mut self, member: usize, local: u64, want: usize) -> Result<usize, Fault> {
        let w = &self.window;
        let end = w.start + w.bytes.len() as u64;
        if w.member == member && w.start <= local && local + want as u64 <= end {
            return Ok(want);
        }
        if let Some(z) = &self.packed[member] {
            // Compressed: decompress the frames that hold the bytes.
            let path = &self.members[member].0;
            let start = z
                .read(local, want.max(1), &mut self.window.bytes)
                .map_err(|e| Fault::Other(format!("{}: {e}", path.display())))?;
            self.window.member = member;
            self.window.start = start;
            let end = start + self.window.bytes.len() as u64;
            return Ok((end.saturating_sub(local) as usize).min(want));
        }
        if self
            .current
            .as_ref()
            .is_none_or(|(open, _)| *open != member)
        {
            let path = &self.members[member].0;
            let file = std::fs::File::open(path).map_err(|e| {
                let text = format!("{}: {e}", path.display());
                match e.kind() {
                    std::io::ErrorKind::NotFound => Fault::Gone(text),
                    _ => Fault::Other(text),
                }
            })?;
            self.current = Some((member, file));
        }
        let (_, file) = self.current.as_ref().expect("just opened");
        let len = want.max(WINDOW_LEN);
        let bytes = &mut self.window.bytes;
        if bytes.capacity() > 2 * len {
            // A large record passed: give its memory back.
            *bytes = Vec::new();
        }
        bytes.resize(len, 0);
        let n = read_up_to(file, bytes, local);
        bytes.truncate(n);
        self.window.member = member;
        self.window.start = local;
        Ok(n.min(want))
    }
}

/// Why a read found no bytes: the file it opens is gone (packed since the
/// archive was opened), or anything else.
enum Fault {
    Gone(String),
    Other(String),
}

impl Fault {
    fn into_text(self) -> String {
        match self {
            Fault::Gone(t) | Fault::Other(t) => t,
        }
    }
}

/// The archives a verify keeps open, most recently used last: it reads
/// rows a block at a time, each block batch by batch, and the next block
/// comes back to the same batches (those drained together interleave in
/// receive time).
#[derive(Default)]
pub(in crate::ledger) struct OpenArchives {
    open: Vec<(String, Result<Archive, String>)>,
}

impl OpenArchives {
    const KEPT: usize = 32;
    /// The bytes the windows of the archives kept open may hold together:
    /// a packed archive's window is a whole decompressed frame (up to 4
    /// MiB), so 32 of them would hold 128 MiB. The least recently used
    /// give theirs back first, and decompress again when read again
    /// (`verify` reads a batch's rows together, so that is rare).
    const WINDOWS_LEN: usize = 8 << 20;

    /// Give back the windows of the least recently used archives beyond
    /// [`Self::WINDOWS_LEN`] (the one in use keeps its own).
    fn trim_windows(&mut self) {
        let mut held = 0;
        for (i, (_, a)) in self.open.iter_mut().rev().enumerate() {
            let Ok(a) = a else { continue };
            if i == 0 {
                held = a.window.bytes.capacity();
                continue;
            }
            held += a.window.bytes.capacity();
            if held > Self::WINDOWS_LEN && a.window.bytes.capacity() > 0 {
                held -= a.window.bytes.capacity();
                a.window = Window::default();
            }
        }
    }

    pub(in crate::ledger) fn get(
        &mut self,
        ledger_dir: &Path,
        batch: &str,
    ) -> &mut Result<Archive, String> {
        match self.open.iter().position(|(b, _)| b == batch) {
            Some(i) => {
                let hit = self.open.remove(i);
                self.open.push(hit);
            }
            None => {
                if self.open.len() == Self::KEPT {
                    drop(self.open.remove(0));
                }
                let opened = Archive::open(ledger_dir, batch).map_err(|e| e.to_string());
                self.open.push((batch.to_string(), opened));
            }
        }
        self.trim_windows();
        &mut self.open.last_mut().expect("just pushed").1
    }
}

/// The most bytes one record is read into memory for (a hook keeps at
/// most 64 MiB of payload).
const MAX_RECORD: usize = 80 << 20;

/// Fill as much of `buf` as the file has from `offset`; how much that was.
fn read_up_to(file: &std::fs::File, buf: &mut [u8], offset: u64) -> usize {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    done
}

/// Whether an envelope kept inline (a record written before the archive)
/// carries `want`'s identity.
pub(in crate::ledger) fn inline_identity(text: &str, want: &Identity<'_>) -> Result<(), String> {
    let env: crate::spool::Envelope = serde_json::from_str(text)
        .map_err(|e| format!("the inline envelope does not parse: {e}"))?;
    let got = Identity {
        session_key: &env.session_key,
        event: env.event.as_deref(),
        received_ns: env.received_ns,
    };
    if got == *want {
        Ok(())
    } else {
        Err(format!(
            "the record there is {got:?}, the row says {want:?}"
        ))
    }
}

/// What a raw signal row and its record must agree on.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::ledger) struct Identity<'a> {
    pub(in crate::ledger) session_key: &'a str,
    pub(in crate::ledger) event: Option<&'a str>,
    pub(in crate::ledger) received_ns: i64,
}

impl<'a> Identity<'a> {
    fn of(env: &'a EnvelopeView<'a>) -> Identity<'a> {
        Identity {
            session_key: &env.session_key,
            event: env.event.as_deref(),
            received_ns: env.received_ns,
        }
    }
}

/// A batch's archive read from its first byte to its last as one stream,
/// its files one after another, compressed ones decompressed a frame at a
/// time: what compaction packs into one file.
pub(crate) struct ArchiveBytes<'a> {
    archive: &'a Archive,
    member: usize,
    /// The offset in the member of the next byte.
    local: u64,
    /// The open member, when it is uncompressed.
    file: Option<std::fs::File>,
    /// Decompressed bytes of a compressed member, from member offset
    /// `frame_at`.
    frame: Vec<u8>,
    frame_at: u64,
}

impl Archive {
    /// The archive's length: its original bytes, all files.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Its files as found, in order (each in the form read).
    pub(crate) fn files(&self) -> impl Iterator<Item = &Path> {
        self.members.iter().map(|(p, _)| p.as_path())
    }

    /// Its bytes from the first, as one stream.
    pub(crate) fn bytes(&self) -> ArchiveBytes<'_> {
        ArchiveBytes {
            archive: self,
            member: 0,
            local: 0,
            file: None,
            frame: Vec::new(),
            frame_at: 0,
        }
    }

    /// The original length of member `i`.
    fn member_len(&self, i: usize) -> u64 {
        let end = self.members.get(i + 1).map_or(self.len, |(_, at)| *at);
        end - self.members[i].1
    }
}

impl std::io::Read for ArchiveBytes<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let a = self.archive;
        while self.member < a.members.len() && self.local >= a.member_len(self.member) {
            self.member += 1;
            self.local = 0;
            self.file = None;
            self.frame.clear();
        }
        if self.member == a.members.len() || out.is_empty() {
            return Ok(0);
        }
        let (path, _) = &a.members[self.member];
        let left = (a.member_len(self.member) - self.local).min(out.len() as u64) as usize;
        let n = match &a.packed[self.member] {
            Some(z) => {
                let end = self.frame_at + self.frame.len() as u64;
                if self.local < self.frame_at || self.local >= end {
                    self.frame_at = z
                        .read(self.local, 1, &mut self.frame)
                        .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?;
                }
                let from = (self.local - self.frame_at) as usize;
                let n = left.min(self.frame.len() - from);
                out[..n].copy_from_slice(&self.frame[from..from + n]);
                n
            }
            None => {
                use std::os::unix::fs::FileExt;
                if self.file.is_none() {
                    self.file = Some(std::fs::File::open(path)?);
                }
                let file = self.file.as_ref().expect("just opened");
                file.read_at(&mut out[..left], self.local)?
            }
        };
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "{} ends at byte {}, before its archived length",
                    path.display(),
                    self.local
                ),
            ));
        }
        self.local += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
#[path = "raw_tests.rs"]
mod tests;
