//! `harnery serve [--addr HOST:PORT] [--allow-host NAME]… [--from URL]
//! [--open] [--no-drain]`: a read-only local web app over the live ledger
//! (kept current from the spool while it runs), or the fleet's sessions
//! with `--from` (see `harnery::serve`). Prints the URL with its access
//! token, then answers requests until interrupted.

use std::io::Write;

use super::{CmdResult, Outcome};
use harnery::fleet::{PgEnv, Target};
use harnery::home::Home;
use harnery::serve::fleet::Fleet;
use harnery::serve::{Backend, Options};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Binds 127.0.0.1 unless --addr names another address. Every request needs \
    the token in the printed URL (the first one sets a cookie for the rest), and must name \
    the server by its address (any IP address when bound to 0.0.0.0 or [::]) or a name \
    --allow-host gives. No request writes anything; while serving a home, the spool is \
    drained into its ledger when it changes, as `harnery finalize` does (--no-drain: never). \
    Port 0 takes a free port."
)]
pub struct Args {
    /// Where to listen.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:8719")]
    addr: String,
    /// Also answer requests that name the server NAME (a DNS name of this
    /// machine, with the bound port), e.g. its LAN name. Repeatable.
    #[arg(long, value_name = "NAME", value_parser = harnery::serve::guard::host_name)]
    allow_host: Vec<String>,
    /// Serve the fleet's sessions from this PostgreSQL (a reader role's
    /// URL; `harnery fleet add-reader`) instead of this home's ledger.
    #[arg(long, value_name = "postgresql://…")]
    from: Option<String>,
    /// Open the URL in the desktop's browser (xdg-open) once listening.
    #[arg(long)]
    open: bool,
    /// Do not drain the spool while serving: pages show what `harnery
    /// finalize` last wrote.
    #[arg(long)]
    no_drain: bool,
}

pub fn run(args: Args) -> CmdResult {
    let backend = match &args.from {
        Some(url) => Backend::Fleet(Box::new(Fleet {
            target: Target::resolve(Some(url), &PgEnv::from_process())?,
        })),
        None => {
            let home = Home::from_env()?;
            offer_import(&home)?;
            Backend::home(home)
        }
    };
    let options = Options {
        allow_hosts: args.allow_host.clone(),
        drain: !args.no_drain,
    };
    let bound = harnery::serve::bind(&args.addr, backend, options)?;
    let url = bound.url();
    let mut out = std::io::stdout().lock();
    writeln!(out, "harnery serve: {url}")?;
    out.flush()?;
    drop(out);
    if args.open {
        // A browser that cannot be started is said, not fatal: the URL is printed.
        if let Err(e) = std::process::Command::new("xdg-open").arg(&url).spawn() {
            harnery::terminal::warn(&format!(
                "cannot open a browser (xdg-open: {e}); open {url}"
            ));
        }
    }
    bound.run()?;
    Ok(Outcome::Clean)
}

/// On a first start (the ledger holds no imported session) with sessions
/// in the agents' own records that the ledger does not hold: say on stderr
/// how many and the command that reads them in; at a terminal, offer to
/// run it now. Nothing found, or the records not readable: nothing said.
fn offer_import(home: &Home) -> Result<(), super::CmdError> {
    use std::io::IsTerminal;
    let Ok(Some(n)) = harnery::import::not_yet_imported(home) else {
        return Ok(());
    };
    if n == 0 {
        return Ok(());
    }
    eprintln!(
        "harnery serve: your agents' own records hold {n} session(s) the ledger does not \
         (recorded before harnery was installed, or where its hooks did not run); \
         `harnery import` reads them in as imported sessions (`--dry-run` says what it would read)"
    );
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Ok(());
    }
    eprint!("Import them now? [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        super::import::run_every_agent()?;
    }
    Ok(())
}
