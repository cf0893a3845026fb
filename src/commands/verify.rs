//! `harnery verify`: recompute the live epoch's hash chain, and check that
//! every raw signal's bytes are where its row says.
//!
//! With `--epoch all` (or a genesis id) each epoch's chain and raw archive
//! is checked on its own and reported under its label; an epoch whose rows
//! cannot be read is a problem of that epoch, and the others are still
//! checked. (`harnery epoch verify` checks what links the epochs: anchors,
//! manifests, fences.)

use std::io::Write;

use super::{CmdResult, EpochArg, Outcome};
use harnery::epoch::EpochSelector;
use harnery::home::Home;
use harnery::report::epochs::warn;
use harnery::report::verify::{Verified, verify_epochs, verify_live};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub epoch: EpochArg,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let progress = super::progress::bar("rows", args.json);
    progress.stage("verify");
    if args.epoch.epoch == EpochSelector::Live {
        return finish(&[verify_live(&home, &progress)?], args.json, false);
    }
    let checked = verify_epochs(&home, &args.epoch.epoch, &progress)?;
    for v in &checked {
        if let Some(why) = &v.unreadable {
            warn("verify", &v.epoch, why);
        }
    }
    finish(&checked, args.json, true)
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
                write!(out, "{}", v.text(&prefix))?;
            }
        }
    }
    Ok(Outcome::problems_if(!ok))
}
