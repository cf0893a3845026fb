//! `harnery spool ls` and `harnery spool cat`: look inside the intake spool.

use std::io::Write;

use base64::Engine;

use super::{CmdResult, Outcome};
use harnery::clock::format_ns;
use harnery::home::Home;
use harnery::report::spool_listing::{SessionSummary, dead_letters, spooled_session, summarize};
use harnery::spool::{Damage, IntakeSpool};

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
    let mut dead = false;
    for letter in dead_letters(spool)? {
        let (path, read) = letter?;
        dead = true;
        for r in &read.records {
            let e = &r.envelope;
            if json {
                let line = serde_json::json!({"dead_letter": path, "adapter": e.adapter,
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
                    path.display()
                )?;
            }
        }
        for dmg in &read.damage {
            writeln!(out, "  {}", damage_line(dmg))?;
        }
    }
    Ok(Outcome::problems_if(damaged || dead))
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
        writeln!(out, "  {}", damage_line(d))?;
    }
    Ok(())
}

/// A damaged byte range, as every spool listing words it.
fn damage_line(d: &Damage) -> String {
    format!(
        "damage {} bytes {}..{} in {}",
        d.kind.as_str(),
        d.start,
        d.end,
        d.file.display()
    )
}

fn cat(spool: &IntakeSpool, adapter: &str, name: &str, json: bool) -> CmdResult {
    let read = spooled_session(spool, adapter, name)?;
    let (records, damage) = (&read.records, &read.damage);
    let mut out = harnery::terminal::stdout(json);
    for r in records {
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
    for d in damage {
        if json {
            writeln!(out, "{}", serde_json::json!({"damage": d}))?;
        } else {
            writeln!(out, "!!! {}", damage_line(d))?;
        }
    }
    Ok(Outcome::problems_if(!damage.is_empty()))
}
