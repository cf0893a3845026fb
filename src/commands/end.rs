//! `harnery end <session> [--reason TEXT]` records an explicit end request;
//! `harnery end --list` shows the pending ones with their open spans.
//!
//! The request goes through the spool as a `harnery.end_requested` signal,
//! so it reaches the producer in order with the agent's own signals; it takes
//! effect at the next `harnery finalize`.

use std::io::Write;

use super::{CmdResult, Outcome};
use harnery::clock::format_ns;
use harnery::home::Home;
use harnery::now::resolve_now;
use harnery::operator;
use harnery::report::health::PendingEnd;
use harnery::report::health_check::end_requests;
use harnery::report::spool_facts::SpooledEnd;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The session to end: its id, a unique prefix, or adapter/id.
    #[arg(required_unless_present = "list", conflicts_with = "list")]
    session: Option<String>,
    /// Why the session is being ended (kept with the request).
    #[arg(long)]
    reason: Option<String>,
    /// claude-code, copilot, codex, gemini-cli, qwen-code or opencode; found from the spool or ledger when omitted.
    #[arg(long)]
    adapter: Option<String>,
    /// List pending end requests and their open spans instead.
    #[arg(long)]
    list: bool,
    /// With --list: print JSON.
    #[arg(long)]
    json: bool,
    /// Pin the request time (RFC 3339 or unix ns); default HARNERY_NOW or the clock.
    #[arg(long)]
    now: Option<String>,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    match args.session.clone() {
        Some(session) if !args.list => request(&home, &session, &args),
        _ => list(&home, args.json),
    }
}

fn request(home: &Home, name: &str, args: &Args) -> CmdResult {
    let target = operator::Target::find(home, name, args.adapter.as_deref())?;
    let now = resolve_now(args.now.as_deref())?;
    let adapter = target.adapter;
    let receipt = operator::request_end(&target, args.reason.as_deref(), now)?;
    if let Some(warning) = operator::dead_letter_warning(&receipt) {
        harnery::terminal::warn(&format!("harnery end: {warning}"));
    }
    writeln!(
        harnery::terminal::stdout(false),
        "end requested for {adapter}/{}; it takes effect at the next `harnery finalize`",
        target.session_id
    )?;
    Ok(Outcome::Clean)
}

fn list(home: &Home, json: bool) -> CmdResult {
    let listing = end_requests(home)?;
    let mut out = harnery::terminal::stdout(json);
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&listing)?)?;
        return Ok(Outcome::Clean);
    }
    if listing.pending.is_empty() && listing.spooled.is_empty() {
        writeln!(out, "no pending end requests")?;
    }
    for end in &listing.pending {
        write_pending(&mut out, end)?;
    }
    for end in &listing.spooled {
        write_spooled(&mut out, end)?;
    }
    Ok(Outcome::Clean)
}

fn write_spooled(out: &mut impl Write, end: &SpooledEnd) -> std::io::Result<()> {
    writeln!(
        out,
        "{}/{}  awaiting finalize  requested {}  reason {}",
        end.adapter,
        end.session_id.as_deref().unwrap_or("?"),
        format_ns(end.received_unix_ns),
        end.reason.as_deref().unwrap_or("-")
    )
}

fn write_pending(out: &mut impl Write, end: &PendingEnd) -> std::io::Result<()> {
    let reason = end.reason.as_deref().unwrap_or("-");
    writeln!(
        out,
        "{}/{}  {}  requested {}  origin {}  reason {reason}",
        end.session.adapter,
        end.session.session_id,
        end.end_event_id,
        format_ns(end.requested_unix_ns),
        end.origin
    )?;
    for span in &end.open_spans {
        let mark = if span.approved {
            "approved"
        } else {
            "not approved"
        };
        let turn = span.turn_id.as_deref().unwrap_or("no turn");
        writeln!(
            out,
            "    open {} {}  {}  turn {turn}  since {}  ({mark})",
            span.kind,
            span.name,
            span.request_event_id,
            format_ns(span.requested_unix_ns)
        )?;
    }
    Ok(())
}
