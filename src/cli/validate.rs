//! `harnery validate`: every row against the contract, offsets, span
//! states, and the genesis digest against this build's.

use super::{CmdResult, Outcome};
use crate::home::Home;
use crate::ledger::{Ledger, ValidationProblem, binary_digest};
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let ledger = Ledger::open_dir_read(&Ledger::live_dir(&home), None)?;
    let mut problems = Vec::new();
    let binary = binary_digest();
    if ledger.genesis().schema_digest != binary {
        problems.push(ValidationProblem {
            event_id: "genesis".into(),
            rule: "genesis-digest".into(),
            detail: format!(
                "ledger schema digest {} is not this build's {binary}; run `harnery epoch advance`",
                ledger.genesis().schema_digest
            ),
        });
    }
    let (rows, found) = ledger.validate_all()?;
    problems.extend(found);
    if args.json {
        let v =
            serde_json::json!({"rows": rows, "ok": problems.is_empty(), "violations": problems});
        writeln!(std::io::stdout(), "{v}")?;
    } else {
        for p in &problems {
            writeln!(
                std::io::stdout(),
                "{}: {}: {}",
                p.event_id,
                p.rule,
                p.detail
            )?;
        }
        if problems.is_empty() {
            writeln!(
                std::io::stdout(),
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
