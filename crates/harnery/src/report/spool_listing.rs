//! What `harnery spool ls` and `harnery spool cat` show of the intake
//! spool: each session's records and damage read from every file of it,
//! oldest record first, and the session a name picks, and the lines
//! `spool ls` and `spool cat` word them in. Reads only.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::clock::format_ns;
use crate::contract::AdapterId;
use crate::contract::session_name::{NameError, pick};
use crate::spool::{
    Damage, Envelope, IntakeSpool, SegmentKind, SegmentRead, SessionSpool, SpoolError, SpoolRecord,
    read_segment,
};

/// Why the spool could not be listed or a session of it read.
#[derive(Debug, thiserror::Error)]
pub enum SpoolReadError {
    #[error(transparent)]
    Spool(#[from] SpoolError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Name(#[from] NameError),
    #[error("no spooled session {session_id:?} for adapter {adapter:?}")]
    NotSpooled { session_id: String, adapter: String },
}

/// One session of the spool, as `spool ls` lists it.
#[derive(Debug, Serialize)]
pub struct SessionSummary {
    pub adapter: String,
    pub session_key: String,
    pub session_id: Option<String>,
    pub records: usize,
    pub bytes: u64,
    pub first_received_ns: Option<i64>,
    pub last_received_ns: Option<i64>,
    pub sealed_files: usize,
    pub fallback_files: usize,
    pub damage: Vec<Damage>,
}

impl SessionSummary {
    /// The session's line in `spool ls`, then one line per damaged range.
    pub fn text(&self) -> String {
        let when = |t: Option<i64>| t.map(format_ns).unwrap_or_else(|| "-".into());
        let mut out = format!(
            "{} {} records={} bytes={} first={} last={} sealed={} fallback={} damaged={}\n",
            self.adapter,
            self.session_id.as_deref().unwrap_or(&self.session_key),
            self.records,
            self.bytes,
            when(self.first_received_ns),
            when(self.last_received_ns),
            self.sealed_files,
            self.fallback_files,
            self.damage.len()
        );
        for d in &self.damage {
            out.push_str(&format!("  {}\n", damage_line(d)));
        }
        out
    }
}

/// A record of the dead letter file `path`, as `spool ls` lists it.
pub fn dead_letter_line(path: &Path, e: &Envelope) -> String {
    format!(
        "dead letter: {} {} {} at {} ({}) in {}",
        e.adapter,
        e.session_id.as_deref().unwrap_or("-"),
        e.event.as_deref().unwrap_or("-"),
        format_ns(e.received_ns),
        e.fallback_reason.as_deref().unwrap_or("no reason recorded"),
        path.display()
    )
}

/// A damaged byte range, as every spool listing words it.
pub fn damage_line(d: &Damage) -> String {
    format!(
        "damage {} bytes {}..{} in {}",
        d.kind.as_str(),
        d.start,
        d.end,
        d.file.display()
    )
}

/// Records, damage and file kinds of one session.
type SessionRead = (Vec<SpoolRecord>, Vec<Damage>, Vec<SegmentKind>);

/// Records and damage of every file of a session, oldest record first.
fn read_session(s: &SessionSpool) -> Result<SessionRead, SpoolReadError> {
    let (mut records, mut damage, mut kinds) = (Vec::new(), Vec::new(), Vec::new());
    for f in s.files()? {
        let read = read_segment(&f.path)?;
        records.extend(read.records);
        damage.extend(read.damage);
        kinds.push(f.kind);
    }
    records.sort_by_key(|r| r.envelope.received_ns);
    Ok((records, damage, kinds))
}

/// One session's counts, times, file kinds and damage.
pub fn summarize(s: &SessionSpool) -> Result<SessionSummary, SpoolReadError> {
    let (records, damage, kinds) = read_session(s)?;
    let files_of = |kind| kinds.iter().filter(|k| **k == kind).count();
    Ok(SessionSummary {
        adapter: s.adapter.clone(),
        session_key: s.session_key.clone(),
        session_id: records.iter().find_map(|r| r.envelope.session_id.clone()),
        records: records.len(),
        bytes: records.iter().map(|r| r.payload.len() as u64).sum(),
        first_received_ns: records.iter().map(|r| r.envelope.received_ns).min(),
        last_received_ns: records.iter().map(|r| r.envelope.received_ns).max(),
        sealed_files: files_of(SegmentKind::Sealed),
        fallback_files: files_of(SegmentKind::Fallback),
        damage,
    })
}

/// Every dead letter file, each read as it is taken.
pub fn dead_letters(
    spool: &IntakeSpool,
) -> Result<impl Iterator<Item = Result<(PathBuf, SegmentRead), SpoolReadError>>, SpoolReadError> {
    let files = spool.dead_letters()?;
    Ok(files.into_iter().map(|d| {
        let read = read_segment(&d.path)?;
        Ok((d.path, read))
    }))
}

/// One session's records, oldest first, with the damage found.
pub struct SpooledSession {
    pub session_id: String,
    pub records: Vec<SpoolRecord>,
    pub damage: Vec<Damage>,
}

/// The session `name` (a full id or a unique prefix) picks under
/// `adapter`: its spool's records and those dead letters hold for it (and
/// every dead letter's damage). A name no spooled session has is looked
/// for as given among the dead letters; finding nothing is an error.
pub fn spooled_session(
    spool: &IntakeSpool,
    adapter: &str,
    name: &str,
) -> Result<SpooledSession, SpoolReadError> {
    let session_id = spooled_id(spool, adapter, name)?;
    let (mut records, mut damage) = match spool.session(adapter, Some(&session_id))? {
        Some(s) => {
            let (r, d, _) = read_session(&s)?;
            (r, d)
        }
        None => (Vec::new(), Vec::new()),
    };
    // Dead letters name their session only inside the envelope.
    for f in spool.dead_letters()? {
        let read = read_segment(&f.path)?;
        damage.extend(read.damage);
        records.extend(read.records.into_iter().filter(|r| {
            r.envelope.adapter == adapter
                && r.envelope.session_id.as_deref() == Some(session_id.as_str())
        }));
    }
    if records.is_empty() && damage.is_empty() {
        let adapter = adapter.to_string();
        return Err(SpoolReadError::NotSpooled {
            session_id,
            adapter,
        });
    }
    records.sort_by_key(|r| r.envelope.received_ns);
    Ok(SpooledSession {
        session_id,
        records,
        damage,
    })
}

/// The spooled session `name` picks under `adapter`; a name no spooled
/// session has is kept as given (dead letters may still hold it).
fn spooled_id(spool: &IntakeSpool, adapter: &str, name: &str) -> Result<String, SpoolReadError> {
    let Some(adapter) = AdapterId::parse(adapter) else {
        return Ok(name.to_string());
    };
    let known = super::spool_facts::spooled_sessions(spool.home())?;
    match pick(name, Some(adapter), known, "") {
        Ok(found) => Ok(found.session_id),
        Err(NameError::Unknown { .. }) => Ok(name.to_string()),
        Err(e) => Err(e.into()),
    }
}
