//! `harnery validate`: every row against the contract, offsets, span
//! states, and the genesis digest against this build's.
//!
//! With `--epoch all` (or a genesis id) each epoch is checked on its own
//! and reported under its label. An archive validates under its own
//! contract generation, so its digest is never compared with this build's;
//! one written by a newer generation, or whose rows cannot be read, is a
//! problem of that epoch, and the others are still checked.

use serde::Serialize;

use super::{CmdResult, EpochArg, Outcome};
use harnery::epoch::{EpochEntry, EpochSelector, select};
use harnery::home::Home;
use harnery::ledger::integrity::RawFault;
use harnery::ledger::{LedgerReader, ValidationProblem, binary_digest};
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

/// One epoch's validation.
#[derive(Serialize)]
struct Checked {
    epoch: String,
    genesis_id: String,
    rows: u64,
    ok: bool,
    violations: Vec<ValidationProblem>,
    /// Why this build could not validate the epoch at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable: Option<String>,
    #[serde(skip)]
    digest: String,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let progress = super::progress::bar("rows", args.json);
    progress.stage("validate");
    if args.epoch.epoch == EpochSelector::Live {
        return run_live(&home, args.json, &progress);
    }
    let checked: Vec<Checked> = select(&home, &args.epoch.epoch)?
        .iter()
        .map(|e| check(e, &progress))
        .collect();
    for c in &checked {
        if let Some(why) = &c.unreadable {
            warn("validate", &c.epoch, why);
        }
    }
    let ok = checked.iter().all(|c| c.ok);
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        writeln!(out, "{}", serde_json::json!({"ok": ok, "epochs": checked}))?;
    } else {
        for c in &checked {
            write_text(&mut out, c)?;
        }
    }
    Ok(if ok {
        Outcome::Clean
    } else {
        Outcome::Problems
    })
}

/// The default: the live epoch, printed as it always has been.
fn run_live(home: &Home, json: bool, progress: &Progress) -> CmdResult {
    let (rows, problems) = match LedgerReader::open_dir(&LedgerReader::live_dir(home), None) {
        Ok(ledger) => {
            let mut problems = digest_problems(&ledger);
            problems.extend(home_problems(&ledger)?);
            let (rows, found) = ledger.verify().validate_with(progress)?;
            problems.extend(found);
            (rows, problems)
        }
        Err(e) => (0, vec![damage_problem(e.damage().ok_or(e)?)]),
    };
    let binary = binary_digest();
    if json {
        let v =
            serde_json::json!({"rows": rows, "ok": problems.is_empty(), "violations": problems});
        writeln!(harnery::terminal::stdout(json), "{v}")?;
    } else {
        for p in &problems {
            writeln!(harnery::terminal::stdout(json), "{}", problem_line(p))?;
        }
        if problems.is_empty() {
            writeln!(
                harnery::terminal::stdout(json),
                "ok: {rows} rows valid under schema digest {binary}"
            )?;
        }
    }
    Ok(if problems.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Problems
    })
}

/// A live epoch file that is not what the ledger recorded, as a problem
/// (`harnery finalize` refuses to write over it).
fn damage_problem(fault: RawFault) -> ValidationProblem {
    ValidationProblem {
        event_id: "home".into(),
        rule: "home-damaged".into(),
        detail: format!(
            "{} {}; {}",
            fault.path.display(),
            fault.what,
            harnery::ledger::integrity::recovery(&fault.path)
        ),
    }
}

/// The live epoch's raw archive files against what the ledger recorded.
fn home_problems(
    ledger: &LedgerReader,
) -> Result<Vec<ValidationProblem>, harnery::ledger::LedgerError> {
    Ok(ledger
        .raw()
        .faults()?
        .into_iter()
        .map(damage_problem)
        .collect())
}

/// The live epoch must speak this build's digest; an archive speaks its own.
fn digest_problems(ledger: &LedgerReader) -> Vec<ValidationProblem> {
    let binary = binary_digest();
    if ledger.genesis().schema_digest == binary {
        return Vec::new();
    }
    vec![ValidationProblem {
        event_id: "genesis".into(),
        rule: "genesis-digest".into(),
        detail: format!(
            "ledger schema digest {} is not this build's {binary}; run `harnery epoch advance`",
            ledger.genesis().schema_digest
        ),
    }]
}

fn check(entry: &EpochEntry, progress: &Progress) -> Checked {
    progress.stage(entry.label());
    let mut c = Checked {
        epoch: entry.label().to_string(),
        genesis_id: entry.genesis_id.clone(),
        rows: 0,
        ok: false,
        violations: Vec::new(),
        unreadable: None,
        digest: String::new(),
    };
    let ledger = match open_as_written(entry) {
        Ok(l) => l,
        Err(why) => {
            c.unreadable = Some(why);
            return c;
        }
    };
    c.digest = ledger.genesis().schema_digest.clone();
    if entry.live {
        c.violations = digest_problems(&ledger);
        match home_problems(&ledger) {
            Ok(found) => c.violations.extend(found),
            Err(e) => c.unreadable = Some(e.to_string()),
        }
    }
    match ledger.verify().validate_with(progress) {
        Ok((rows, found)) => {
            c.rows = rows;
            c.violations.extend(found);
            c.ok = c.violations.is_empty();
        }
        Err(e) => c.unreadable = Some(e.to_string()),
    }
    c
}

fn write_text(out: &mut impl Write, c: &Checked) -> std::io::Result<()> {
    let label = &c.epoch;
    if let Some(why) = &c.unreadable {
        writeln!(out, "{label}: unreadable: {why}")?;
    }
    for p in &c.violations {
        writeln!(out, "{label}: {}", problem_line(p))?;
    }
    if c.ok {
        writeln!(
            out,
            "{label}: ok: {} rows valid under schema digest {}",
            c.rows, c.digest
        )?;
    }
    Ok(())
}

fn problem_line(p: &ValidationProblem) -> String {
    format!("{}: {}: {}", p.event_id, p.rule, p.detail)
}
