//! `harnery verify`: recompute the live epoch's hash chain, and check that
//! every raw signal's bytes are where its row says.
//!
//! With `--epoch all` (or a genesis id) each epoch's chain and raw archive
//! is checked on its own and reported under its label; an epoch whose rows
//! cannot be read is a problem of that epoch, and the others are still
//! checked. (`harnery epoch verify` checks what links the epochs: anchors,
//! manifests, fences.)

use serde::Serialize;

use super::{CmdResult, EpochArg, Outcome};
use harnery::epoch::{EpochEntry, EpochSelector, select};
use harnery::home::Home;
use harnery::ledger::RawProblem;
use harnery::ledger::integrity::RawFault;
use harnery::ledger::{ChainBreak, LedgerError, LedgerReader};
use harnery::progress::Progress;
use harnery::report::epochs::{open_as_written, warn};
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub epoch: EpochArg,
}

/// One epoch's chain and raw-archive check (the default's JSON fields,
/// with the epoch's label and genesis id).
#[derive(Serialize, Default)]
struct Verified {
    epoch: String,
    genesis_id: String,
    rows: u64,
    chain_head: String,
    ok: bool,
    breaks: Vec<ChainBreak>,
    raw_signals: u64,
    raw_problems: Vec<RawProblem>,
    /// Why this build could not check the epoch at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable: Option<String>,
    /// A live epoch file that is not what the ledger recorded (the
    /// refusal `harnery finalize` gives, as a finding).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    home_problems: Vec<RawFault>,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let progress = super::progress::bar("rows", args.json);
    progress.stage("verify");
    if args.epoch.epoch == EpochSelector::Live {
        // The chain does not depend on the contract: verify any digest.
        let v = match LedgerReader::open_dir(&LedgerReader::live_dir(&home), None) {
            Ok(ledger) => verified(&ledger, &progress)?,
            Err(e) => damaged(e)?,
        };
        return finish(&[v], args.json, false);
    }
    let checked: Vec<Verified> = select(&home, &args.epoch.epoch)?
        .iter()
        .map(|e| check(e, &progress))
        .collect();
    for v in &checked {
        if let Some(why) = &v.unreadable {
            warn("verify", &v.epoch, why);
        }
    }
    finish(&checked, args.json, true)
}

/// A live epoch that cannot be opened because a file of it is damaged:
/// a finding; any other error stays one.
fn damaged(e: LedgerError) -> Result<Verified, LedgerError> {
    let fault = e.damage().ok_or(e)?;
    Ok(Verified {
        epoch: "live".into(),
        home_problems: vec![fault],
        ..Verified::default()
    })
}

fn check(entry: &EpochEntry, progress: &Progress) -> Verified {
    progress.stage(entry.label());
    let result =
        open_as_written(entry).and_then(|l| verified(&l, progress).map_err(|e| e.to_string()));
    let mut v = result.unwrap_or_else(|why| Verified {
        unreadable: Some(why),
        ..Verified::default()
    });
    v.epoch = entry.label().to_string();
    v.genesis_id = entry.genesis_id.clone();
    v
}

/// The chain and the raw archive of one epoch, checked at once: each half
/// of the raw signals (by receive time) on a connection of its own while
/// the chain's chunks run.
fn verified(ledger: &LedgerReader, progress: &Progress) -> Result<Verified, LedgerError> {
    let dir = ledger.dir();
    let mid = ledger.raw().midpoint()?;
    let (chain, halves) = std::thread::scope(|scope| {
        let halves: Vec<_> = [(None, mid), (mid, None)]
            .into_iter()
            .take(if mid.is_some() { 2 } else { 1 })
            .map(|(from, to)| {
                scope.spawn(move || {
                    LedgerReader::open_dir(dir, None)?
                        .raw()
                        .verify_range(from, to)
                })
            })
            .collect();
        let chain = ledger.verify().chain_threads(None, progress);
        let halves: Vec<_> = halves
            .into_iter()
            .map(|h| h.join().expect("the raw check does not panic"))
            .collect();
        (chain, halves)
    });
    let (rows, breaks) = chain?;
    let (mut raw_signals, mut raw_problems) = (0, Vec::new());
    for half in halves {
        let (n, problems) = half?;
        raw_signals += n;
        raw_problems.extend(problems);
    }
    let chain_head = ledger.chain_head()?;
    Ok(Verified {
        epoch: "live".into(),
        genesis_id: ledger.genesis().genesis_id.clone(),
        rows,
        ok: breaks.is_empty() && raw_problems.is_empty(),
        chain_head,
        breaks,
        raw_signals,
        raw_problems,
        unreadable: None,
        home_problems: Vec::new(),
    })
}

/// Print every epoch's result; `tagged` prefixes text with the epoch and
/// wraps JSON as `{"ok", "epochs": [...]}`.
fn finish(checked: &[Verified], json: bool, tagged: bool) -> CmdResult {
    let ok = checked.iter().all(|v| v.ok);
    let mut out = harnery::terminal::stdout(json);
    match (json, tagged) {
        (true, false) => {
            let v = &checked[0];
            let mut doc = serde_json::json!({
                "rows": v.rows,
                "chain_head": v.chain_head,
                "ok": v.ok,
                "breaks": v.breaks,
                "raw_signals": v.raw_signals,
                "raw_problems": v.raw_problems,
            });
            if !v.home_problems.is_empty() {
                doc["home_problems"] = serde_json::json!(v.home_problems);
            }
            writeln!(out, "{doc}")?;
        }
        (true, true) => writeln!(out, "{}", serde_json::json!({"ok": ok, "epochs": checked}))?,
        (false, _) => {
            for v in checked {
                let prefix = if tagged {
                    format!("{}: ", v.epoch)
                } else {
                    String::new()
                };
                write_text(&mut out, &prefix, v)?;
            }
        }
    }
    Ok(if ok {
        Outcome::Clean
    } else {
        Outcome::Problems
    })
}

fn write_text(out: &mut impl Write, prefix: &str, v: &Verified) -> std::io::Result<()> {
    if let Some(why) = &v.unreadable {
        writeln!(out, "{prefix}unreadable: {why}")?;
    }
    for p in &v.home_problems {
        writeln!(
            out,
            "{prefix}damaged: {} {}; {}",
            p.path.display(),
            p.what,
            harnery::ledger::integrity::recovery(&p.path)
        )?;
    }
    for b in &v.breaks {
        writeln!(
            out,
            "{prefix}seq {} event {}: {}",
            b.seq, b.event_id, b.detail
        )?;
    }
    for p in &v.raw_problems {
        writeln!(
            out,
            "{prefix}raw signal {} of session {} in batch {}: {}",
            p.record_digest,
            harnery::terminal::escape(&p.session_key),
            p.batch,
            p.detail
        )?;
    }
    if v.ok {
        writeln!(
            out,
            "{prefix}ok: {} rows, chain head {}; {} raw signals, each where its row says",
            v.rows, v.chain_head, v.raw_signals
        )?;
    }
    Ok(())
}
