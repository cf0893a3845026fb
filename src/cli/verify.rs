//! `harnery verify`: recompute the live epoch's hash chain, and check that
//! every raw signal's bytes are where its row says.

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
    let (raw_signals, raw_problems) = ledger.verify_raw()?;
    let ok = breaks.is_empty() && raw_problems.is_empty();
    if args.json {
        let v = serde_json::json!({
            "rows": rows,
            "chain_head": head,
            "ok": ok,
            "breaks": breaks,
            "raw_signals": raw_signals,
            "raw_problems": raw_problems,
        });
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
        for p in &raw_problems {
            writeln!(
                std::io::stdout(),
                "raw signal {} of batch {}: {}",
                p.record_digest,
                p.batch,
                p.detail
            )?;
        }
        if ok {
            writeln!(
                std::io::stdout(),
                "ok: {rows} rows, chain head {head}; {raw_signals} raw signals, each where its row says"
            )?;
        }
    }
    Ok(if ok {
        Outcome::Clean
    } else {
        Outcome::Problems
    })
}
