//! `harnery spool ls` and `harnery spool cat`: look inside the intake spool.

use std::io::Write;

use base64::Engine;

use super::{CmdResult, Outcome};
use harnery::home::Home;
use harnery::report::spool_listing::{
    damage_line, dead_letter_line, dead_letters, spooled_session, summarize,
};
use harnery::spool::IntakeSpool;

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
            write!(out, "{}", sum.text())?;
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
                writeln!(out, "{}", dead_letter_line(&path, e))?;
            }
        }
        for dmg in &read.damage {
            writeln!(out, "  {}", damage_line(dmg))?;
        }
    }
    Ok(Outcome::problems_if(damaged || dead))
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
