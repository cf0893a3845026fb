//! `harnery verify`: recompute the live epoch's hash chain.

use super::{CmdResult, Outcome};
use crate::home::Home;
use crate::ledger::Ledger;
use std::io::Write;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    // The chain does not depend on the contract: verify any digest.
    let ledger = Ledger::open_dir_read(&Ledger::live_dir(&home), None)?;
    let (rows, breaks) = ledger.verify_chain()?;
    let head = ledger.chain_head()?;
    if args.json {
        let v = serde_json::json!({"rows": rows, "chain_head": head, "ok": breaks.is_empty(), "breaks": breaks});
        writeln!(std::io::stdout(), "{v}")?;
    } else {
        for b in &breaks {
            writeln!(
                std::io::stdout(),
                "seq {} event {}: {}",
                b.seq,
                b.event_id,
                b.detail
            )?;
        }
        if breaks.is_empty() {
            writeln!(std::io::stdout(), "ok: {rows} rows, chain head {head}")?;
        }
    }
    Ok(if breaks.is_empty() {
        Outcome::Clean
    } else {
        Outcome::Problems
    })
}
