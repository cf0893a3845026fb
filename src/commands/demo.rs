//! `harnery demo`: bundled real sessions of both agents, replayed through
//! the real hook binary into a temporary home, then finalized, validated,
//! verified and shown. Needs no agent installed and reads nothing outside
//! the binary: the fixtures are compiled in.

use std::io::Write;
use std::path::Path;

use super::{CmdResult, Outcome};
use harnery::demo::{self, Checks};
use harnery::home::Home;
use harnery::ledger::LedgerReader;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep the temporary home instead of deleting it.
    #[arg(long)]
    pub keep: bool,
}

pub fn run(args: Args) -> CmdResult {
    let dir = demo::temp_home()?;
    let result = run_demo(&dir);
    if args.keep {
        writeln!(
            std::io::stdout(),
            "\nthe demo home is kept at {}",
            dir.display()
        )?;
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn run_demo(dir: &Path) -> CmdResult {
    let home = Home::at(dir);
    let calls = demo::calls();
    let hook = demo::sibling_hook();
    match &hook {
        Some(hook) => writeln!(
            std::io::stdout(),
            "replaying {} recorded hook calls through {}",
            calls.len(),
            hook.display()
        )?,
        None => writeln!(
            std::io::stdout(),
            "harnery-hook was not found next to this binary; writing {} recorded signals with the in-process spool writer instead",
            calls.len()
        )?,
    }
    demo::record(dir, hook.as_deref(), &calls)?;
    let mut opts = super::finalize::options(None)?;
    // The bundled sessions come without the agents' own records (their
    // hooks name files on the machine that captured them).
    opts.follow_records = false;
    let summary = harnery::finalize::Run::once(&home, &opts)?;
    write!(
        std::io::stdout(),
        "\n$ harnery finalize\n{}",
        summary.text()
    )?;
    let ledger = LedgerReader::open(&home)?;
    let checks = Checks::of(&ledger)?;
    write!(std::io::stdout(), "{}", checks.text())?;
    let sessions = ledger.sessions().list()?;
    write!(
        std::io::stdout(),
        "\n$ harnery sessions\n{}",
        super::sessions::table(
            &sessions,
            &harnery::report::stored_reasons::classify_summaries(&ledger, &sessions)?,
            harnery::now::resolve_now(None)?,
            None,
            None
        )
    )?;
    if let Some((session, short)) = demo::shown(&sessions) {
        write!(
            std::io::stdout(),
            "\n$ harnery show {short}\n{}",
            super::show::render(&harnery::report::timeline::timeline(&ledger, session)?)
        )?;
    }
    Ok(Outcome::problems_if(!checks.clean()))
}
