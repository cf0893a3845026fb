//! `harnery spool ls` and `harnery spool cat`: look inside the intake spool.

use std::io::Write;

use base64::Engine;
use serde::Serialize;

use super::{CmdError, CmdResult, Outcome};
use harnery::clock::format_ns;
use harnery::home::Home;
use harnery::spool::{Damage, IntakeSpool, SegmentKind, SessionSpool, SpoolRecord, read_segment};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: SpoolCommand,
}

#[derive(Debug, clap::Subcommand)]
enum SpoolCommand {
    /// Every session in the spool, with counts, times, fallbacks and damage.
    Ls {
        /// One JSON object per session, one per line.
        #[arg(long)]
        json: bool,
    },
    /// The decoded records of one session.
    Cat {
        /// Adapter (`claude-code`, `copilot`).
        adapter: String,
        /// The session id as the agent gave it, or a unique prefix of one.
        session_id: String,
        /// One JSON object per record (payload base64) and per damaged range.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let spool = IntakeSpool::open(&home);
    match args.command {
        SpoolCommand::Ls { json } => ls(&spool, json),
        SpoolCommand::Cat {
            adapter,
            session_id,
            json,
        } => cat(&spool, &adapter, &session_id, json),
    }
}

#[derive(Debug, Serialize)]
struct SessionSummary {
    adapter: String,
    session_key: String,
    session_id: Option<String>,
    records: usize,
    bytes: u64,
    first_received_ns: Option<i64>,
    last_received_ns: Option<i64>,
    sealed_files: usize,
    fallback_files: usize,
    damage: Vec<Damage>,
}

/// Records, damage and file kinds of one session.
type SessionRead = (Vec<SpoolRecord>, Vec<Damage>, Vec<SegmentKind>);

/// Records and damage of every file of a session, oldest file first.
fn read_session(s: &SessionSpool) -> Result<SessionRead, super::CmdError> {
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

fn summarize(s: &SessionSpool) -> Result<SessionSummary, super::CmdError> {
    let (records, damage, kinds) = read_session(s)?;
    Ok(SessionSummary {
        adapter: s.adapter.clone(),
        session_key: s.session_key.clone(),
        session_id: records.iter().find_map(|r| r.envelope.session_id.clone()),
        records: records.len(),
        bytes: records.iter().map(|r| r.payload.len() as u64).sum(),
        first_received_ns: records.iter().map(|r| r.envelope.received_ns).min(),
        last_received_ns: records.iter().map(|r| r.envelope.received_ns).max(),
        sealed_files: kinds.iter().filter(|k| **k == SegmentKind::Sealed).count(),
        fallback_files: kinds
            .iter()
            .filter(|k| **k == SegmentKind::Fallback)
            .count(),
        damage,
    })
}

fn ls(spool: &IntakeSpool, json: bool) -> CmdResult {
    let mut out = harnery::terminal::stdout(json);
    let mut damaged = false;
    for s in spool.sessions()? {
        let sum = summarize(&s)?;
        damaged |= !sum.damage.is_empty();
        if json {
            writeln!(out, "{}", serde_json::to_string(&sum)?)?;
        } else {
            print_summary(&mut out, &sum)?;
        }
    }
    let dead = spool.dead_letters()?;
    for d in &dead {
        let read = read_segment(&d.path)?;
        for r in &read.records {
            let e = &r.envelope;
            if json {
                let line = serde_json::json!({"dead_letter": d.path, "adapter": e.adapter,
                    "session_id": e.session_id, "event": e.event, "received_ns": e.received_ns,
                    "reason": e.fallback_reason});
                writeln!(out, "{line}")?;
            } else {
                writeln!(
                    out,
                    "dead letter: {} {} {} at {} ({}) in {}",
                    e.adapter,
                    e.session_id.as_deref().unwrap_or("-"),
                    e.event.as_deref().unwrap_or("-"),
                    format_ns(e.received_ns),
                    e.fallback_reason.as_deref().unwrap_or("no reason recorded"),
                    d.path.display()
                )?;
            }
        }
        for dmg in &read.damage {
            writeln!(
                out,
                "  damage {} bytes {}..{} in {}",
                dmg.kind.as_str(),
                dmg.start,
                dmg.end,
                dmg.file.display()
            )?;
        }
    }
    Ok(if damaged || !dead.is_empty() {
        Outcome::Problems
    } else {
        Outcome::Clean
    })
}

fn print_summary(out: &mut impl Write, s: &SessionSummary) -> std::io::Result<()> {
    let when = |t: Option<i64>| t.map(format_ns).unwrap_or_else(|| "-".into());
    writeln!(
        out,
        "{} {} records={} bytes={} first={} last={} sealed={} fallback={} damaged={}",
        s.adapter,
        s.session_id.as_deref().unwrap_or(&s.session_key),
        s.records,
        s.bytes,
        when(s.first_received_ns),
        when(s.last_received_ns),
        s.sealed_files,
        s.fallback_files,
        s.damage.len()
    )?;
    for d in &s.damage {
        writeln!(
            out,
            "  damage {} bytes {}..{} in {}",
            d.kind.as_str(),
            d.start,
            d.end,
            d.file.display()
        )?;
    }
    Ok(())
}

/// The spooled session `name` picks (a full id or a unique prefix) under
/// `adapter`; a name no spooled session has is kept as given (dead
/// letters may still hold it).
fn spooled_id(spool: &IntakeSpool, adapter: &str, name: &str) -> Result<String, CmdError> {
    use harnery::contract::session_name::{NameError, pick};
    let Some(adapter) = harnery::contract::AdapterId::parse(adapter) else {
        return Ok(name.to_string());
    };
    let known = harnery::report::spool_facts::spooled_sessions(spool.home())?;
    match pick(name, Some(adapter), known, "") {
        Ok(found) => Ok(found.session_id),
        Err(NameError::Unknown { .. }) => Ok(name.to_string()),
        Err(e) => Err(e.into()),
    }
}

fn cat(spool: &IntakeSpool, adapter: &str, name: &str, json: bool) -> CmdResult {
    let session_id = spooled_id(spool, adapter, name)?;
    let session_id = session_id.as_str();
    let (mut records, mut damage) = match spool.session(adapter, Some(session_id))? {
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
            r.envelope.adapter == adapter && r.envelope.session_id.as_deref() == Some(session_id)
        }));
    }
    if records.is_empty() && damage.is_empty() {
        return Err(format!("no spooled session {session_id:?} for adapter {adapter:?}").into());
    }
    records.sort_by_key(|r| r.envelope.received_ns);
    let mut out = harnery::terminal::stdout(json);
    for r in &records {
        if json {
            let b64 = base64::engine::general_purpose::STANDARD.encode(&r.payload);
            let line = serde_json::json!({"envelope": r.envelope, "payload_base64": b64, "file": r.at.file, "offset": r.at.offset});
            writeln!(out, "{line}")?;
        } else {
            writeln!(out, "--- {}:{}", r.at.file.display(), r.at.offset)?;
            writeln!(out, "{}", serde_json::to_string(&r.envelope)?)?;
            writeln!(out, "{}", String::from_utf8_lossy(&r.payload))?;
        }
    }
    for d in &damage {
        if json {
            writeln!(out, "{}", serde_json::json!({"damage": d}))?;
        } else {
            writeln!(
                out,
                "!!! damage {} bytes {}..{} in {}",
                d.kind.as_str(),
                d.start,
                d.end,
                d.file.display()
            )?;
        }
    }
    Ok(if damage.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Problems
    })
}
