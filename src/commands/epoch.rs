//! `harnery epoch advance|status|list|verify`: ship a contract change as a
//! new ledger epoch, and see and check every epoch the home holds.

use std::io::Write;

use super::run_report::render_advance;
use super::{CmdResult, Outcome};
use harnery::clock::format_time;
use harnery::epoch::{self, AdvanceReport, EpochStatus, EpochVerdict, ListedEpoch};
use harnery::home::Home;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: EpochCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum EpochCommand {
    /// Quiesce, archive, reinstall, carry (idempotent; resumes after a crash).
    Advance {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// "Now" for the carried finalize run, RFC 3339.
        #[arg(long)]
        now: Option<String>,
    },
    /// The live epoch, this build's contract, an advance underway, what is undrained, the archives.
    Status {
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Every epoch, oldest first, the live one last.
    List {
        /// Print JSON lines, one epoch per line.
        #[arg(long)]
        json: bool,
    },
    /// Check archives (manifest, fence, read-only, chain) and the anchor links to the live epoch; exit 1 on any problem.
    Verify {
        /// Only this epoch (a genesis id or a unique prefix) and its links.
        genesis_id: Option<String>,
        /// Print the findings as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    match args.command {
        EpochCommand::Advance { json, now } => {
            let mut opts = super::finalize::options(now.as_deref())?;
            opts.progress = super::progress::bar("events", json);
            let report = epoch::advance(&home, &opts)?;
            print_advance(&report, json)?;
            Ok(Outcome::Clean)
        }
        EpochCommand::Status { json } => {
            print_status(&epoch::status(&home)?, json)?;
            Ok(Outcome::Clean)
        }
        EpochCommand::List { json } => {
            print_list(&home, json)?;
            Ok(Outcome::Clean)
        }
        EpochCommand::Verify { genesis_id, json } => {
            let verdict = epoch::verify(&home, genesis_id.as_deref())?;
            print_verdict(&verdict, json)?;
            Ok(if verdict.ok {
                Outcome::Clean
            } else {
                Outcome::Problems
            })
        }
    }
}

/// The advance report, as JSON or as the lines a person reads.
pub fn print_advance(report: &AdvanceReport, json: bool) -> std::io::Result<()> {
    let mut out = harnery::terminal::stdout(json);
    if json {
        return writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(report).expect("a report serializes")
        );
    }
    if report.already_current {
        return writeln!(
            out,
            "the live epoch already speaks schema digest {}; nothing to advance",
            report.schema_digest
        );
    }
    write!(out, "{}", render_advance(report))
}

fn print_status(s: &EpochStatus, json: bool) -> std::io::Result<()> {
    let mut out = harnery::terminal::stdout(json);
    if json {
        return writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(s).expect("a status serializes")
        );
    }
    writeln!(
        out,
        "this build: contract generation {}, schema digest {}",
        s.build.generation, s.build.schema_digest
    )?;
    match &s.live {
        Some(l) => {
            writeln!(
                out,
                "live epoch: {} (generation {}, digest {}{}), created {}",
                l.genesis_id,
                l.generation,
                l.schema_digest,
                if l.current { "" } else { ", NOT this build's" },
                format_time(l.created_unix_ns)
            )?;
            match &l.anchor {
                Some(a) => writeln!(
                    out,
                    "  anchored to {} at {} ({} events, head {})",
                    a.genesis_id, a.archive, a.events, a.terminal_segment_digest
                )?,
                None => writeln!(out, "  first epoch (no anchor)")?,
            }
        }
        None => writeln!(out, "live epoch: none")?,
    }
    if let Some(a) = &s.advance_in_progress {
        match &a.error {
            Some(e) => writeln!(out, "advance underway, record damaged: {e}")?,
            None => writeln!(
                out,
                "advance underway: last step {}, from epoch {}",
                a.step.as_deref().unwrap_or("-"),
                a.from_genesis_id.as_deref().unwrap_or("-")
            )?,
        }
    }
    let u = &s.undrained;
    writeln!(
        out,
        "undrained: {} ready files; intake {} files ({} bytes) in {} sessions",
        u.ready_files, u.intake_files, u.intake_bytes, u.intake_sessions
    )?;
    writeln!(out, "archives: {}", s.archives.len())?;
    for a in &s.archives {
        match &a.error {
            Some(e) => writeln!(out, "  {}  unreadable: {e}", a.genesis_id)?,
            None => writeln!(
                out,
                "  {}  generation {}, {} events  {}",
                a.genesis_id,
                a.generation.map_or("?".into(), |g| g.to_string()),
                a.events.map_or("?".into(), |n| n.to_string()),
                a.dir
            )?,
        }
    }
    writeln!(out, "next: {}", s.next)
}

fn print_list(home: &Home, json: bool) -> Result<(), super::CmdError> {
    let mut out = harnery::terminal::stdout(json);
    if !json {
        writeln!(
            out,
            "{:<38} {:<8} {:>4} {:>8}  {:<24}  ANCHOR",
            "GENESIS", "STATE", "GEN", "EVENTS", "CREATED"
        )?;
    }
    for e in epoch::epochs(home)? {
        let e = ListedEpoch::of(home, &e);
        if json {
            writeln!(out, "{}", serde_json::to_string(&e)?)?;
            continue;
        }
        writeln!(
            out,
            "{:<38} {:<8} {:>4} {:>8}  {:<24}  {}",
            e.genesis_id,
            if e.live { "live" } else { "archived" },
            e.generation.map_or("?".into(), |g| g.to_string()),
            e.events.map_or("?".into(), |n| n.to_string()),
            e.created_unix_ns.map_or("?".into(), format_time),
            e.anchor.as_deref().unwrap_or("-")
        )?;
    }
    Ok(())
}

fn print_verdict(v: &EpochVerdict, json: bool) -> std::io::Result<()> {
    let mut out = harnery::terminal::stdout(json);
    if json {
        return writeln!(
            out,
            "{}",
            serde_json::to_string(v).expect("a verdict serializes")
        );
    }
    for c in &v.epochs {
        let what = if c.live { "live" } else { "archived" };
        if c.problems.is_empty() {
            writeln!(
                out,
                "ok: {what} epoch {}: {} rows, chain head {}",
                c.genesis_id,
                c.rows.unwrap_or(0),
                c.chain_head.as_deref().unwrap_or("-")
            )?;
        }
        for p in &c.problems {
            writeln!(out, "{what} epoch {}: {p}", c.genesis_id)?;
        }
    }
    if v.epochs.is_empty() {
        writeln!(out, "no epochs in this home")?;
    }
    Ok(())
}
