//! Facts about the spool that `harnery health` reports: damaged byte ranges
//! in undrained files, dead-letter files, and how old the oldest undrained
//! record of each session is.
//!
//! Reading only: nothing is sealed, moved or deleted. A torn tail in the
//! active segment is not reported, since a writer may be mid-append there.

use super::health::{DamagedRange, DeadLetter, SpoolFacts, SpoolSessionAge};
use crate::contract::{AdapterId, SessionRef};
use crate::home::Home;
use crate::spool::key::is_plain;
use crate::spool::{
    DamageKind, IntakeSpool, SealedSegment, SegmentKind, SessionSpool, SpoolError, read_segment,
};

/// Walk the intake spool and the dead-letter directory of `home`.
pub(crate) fn gather(home: &Home) -> Result<SpoolFacts, SpoolError> {
    let spool = IntakeSpool::open(home);
    let mut facts = SpoolFacts::default();
    for session in spool.sessions()? {
        gather_session(&session, &mut facts)?;
    }
    for dl in spool.dead_letters()? {
        facts.dead_letters.push(DeadLetter {
            file: describe_dead_letter(&dl),
            written_unix_ns: dl.stamp_ns,
        });
    }
    Ok(facts)
}

/// The file, and the session its envelope names when it can be read.
fn describe_dead_letter(dl: &SealedSegment) -> String {
    let path = dl.path.display();
    let read = read_segment(&dl.path).ok();
    match read.as_ref().and_then(|r| r.records.first()) {
        Some(record) => {
            let env = &record.envelope;
            let session = env.session_id.as_deref().unwrap_or("no session id");
            format!("{path} ({}/{session})", env.adapter)
        }
        None => format!("{path} (unreadable)"),
    }
}

fn gather_session(session: &SessionSpool, facts: &mut SpoolFacts) -> Result<(), SpoolError> {
    let files = session.files()?;
    let mut oldest: Option<i64> = None;
    let mut records = 0;
    for file in &files {
        if let Some((t, n)) = scan_file(file, facts)? {
            oldest = Some(oldest.map_or(t, |o| o.min(t)));
            records += n;
        }
    }
    if let Some(oldest_unix_ns) = oldest {
        facts.sessions.push(SpoolSessionAge {
            adapter: session.adapter.clone(),
            session_key: session.session_key.clone(),
            oldest_unix_ns,
            files: files.len(),
            records,
        });
    }
    Ok(())
}

/// Record the file's damage; return its oldest receive time and how many
/// records it holds.
fn scan_file(
    file: &SealedSegment,
    facts: &mut SpoolFacts,
) -> Result<Option<(i64, u64)>, SpoolError> {
    let read = match read_segment(&file.path) {
        Ok(read) => read,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let active = file.kind == SegmentKind::Active;
    for damage in read.damage {
        if active && damage.kind == DamageKind::TornTail {
            continue;
        }
        facts.damaged.push(DamagedRange {
            file: damage.file.display().to_string(),
            start: damage.start,
            end: damage.end,
            kind: damage.kind.as_str().to_string(),
        });
    }
    let count = read.records.len() as u64;
    Ok(read
        .records
        .iter()
        .map(|r| r.envelope.received_ns)
        .min()
        .map(|oldest| (oldest, count)))
}

/// Every session the intake spool holds records of (not yet drained, or
/// in a dead letter), by the raw id its records carry: a directory named
/// by the plain id is that id; a hashed one is named by its first record.
/// A directory with no record left (drained) is not listed: the ledger
/// knows that session.
pub(crate) fn spooled_sessions(home: &Home) -> Result<Vec<SessionRef>, SpoolError> {
    spooled(home, false)
}

/// [`spooled_sessions`], leaving out a plain directory with no whole
/// record in it (a drain emptied it, or a writer was killed before its
/// first record was whole): what `harnery import` takes as known.
pub(crate) fn spooled_sessions_holding_records(home: &Home) -> Result<Vec<SessionRef>, SpoolError> {
    spooled(home, true)
}

fn spooled(home: &Home, only_holding: bool) -> Result<Vec<SessionRef>, SpoolError> {
    let spool = IntakeSpool::open(home);
    let mut out = Vec::new();
    for session in spool.sessions()? {
        let Some(adapter) = AdapterId::parse(&session.adapter) else {
            continue;
        };
        let files = session.files()?;
        let id = match is_plain(&session.session_key) {
            true => (!only_holding || holds_a_record(&files)).then(|| session.session_key.clone()),
            false => first_session_id(&files),
        };
        out.extend(id.map(|session_id| SessionRef {
            adapter,
            session_id,
        }));
    }
    for dl in spool.dead_letters()? {
        let Ok(read) = read_segment(&dl.path) else {
            continue;
        };
        for env in read.records.iter().map(|r| &r.envelope) {
            if let (Some(adapter), Some(id)) = (AdapterId::parse(&env.adapter), &env.session_id) {
                out.push(SessionRef {
                    adapter,
                    session_id: id.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// Whether a session's spool files hold a whole record (a directory a
/// drain emptied keeps only its lease; a writer killed before its first
/// record was whole left none).
fn holds_a_record(files: &[SealedSegment]) -> bool {
    files
        .iter()
        .any(|f| read_segment(&f.path).is_ok_and(|r| !r.records.is_empty()))
}

fn first_session_id(files: &[SealedSegment]) -> Option<String> {
    files.iter().find_map(|f| {
        let read = read_segment(&f.path).ok()?;
        read.records.into_iter().find_map(|r| r.envelope.session_id)
    })
}

/// An end request written by `harnery end` that `finalize` has not read yet.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SpooledEnd {
    pub adapter: String,
    pub session_id: Option<String>,
    pub received_unix_ns: i64,
    pub reason: Option<String>,
}

/// Every `harnery.end_requested` record still in the intake spool.
pub(crate) fn spooled_ends(home: &Home) -> Result<Vec<SpooledEnd>, SpoolError> {
    let mut out = Vec::new();
    for session in IntakeSpool::open(home).sessions()? {
        for file in session.files()? {
            let Ok(read) = read_segment(&file.path) else {
                continue;
            };
            out.extend(read.records.iter().filter_map(spooled_end));
        }
    }
    out.sort_by_key(|e| e.received_unix_ns);
    Ok(out)
}

fn spooled_end(record: &crate::spool::SpoolRecord) -> Option<SpooledEnd> {
    let env = &record.envelope;
    if env.event.as_deref() != Some(crate::agents::harnery::END_REQUESTED) {
        return None;
    }
    let payload: crate::agents::harnery::EndRequestPayload =
        serde_json::from_slice(&record.payload).unwrap_or_default();
    Some(SpooledEnd {
        adapter: env.adapter.clone(),
        session_id: env.session_id.clone(),
        received_unix_ns: env.received_ns,
        reason: payload.reason,
    })
}
