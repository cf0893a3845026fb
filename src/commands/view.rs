//! `harnery view [<session>] [--epoch …] [-o FILE]`: a session as one
//! self-contained HTML page, or, without a session, an index of every
//! session (newest first) with a page for each beside it. A range a resume
//! superseded is drawn as a labelled band, its spans marked.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{CmdResult, EpochArg, Outcome};
use harnery::home::Home;
use harnery::report::epochs::Epochs;
use harnery::view::pages::{PageTarget, session_page, write_file, write_site};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The page needs no network: style, drawing and script are inline. \
    Without a session, FILE is the index (default index.html) and each session's page \
    is written beside it."
)]
pub struct Args {
    /// Session id, or a unique prefix of one; without it, every session.
    pub session: Option<String>,
    #[command(flatten)]
    pub epoch: EpochArg,
    /// Where to write the page: a path, or `-` for stdout (one session
    /// only). Default: `<session-prefix>.html`, or `index.html`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("view")?;
    match &args.session {
        Some(name) => one(&epochs, name, args.output.as_deref()),
        None => all(&home, &epochs, args.output.as_deref()),
    }
}

/// One session's page, to the file asked for (or its default) or stdout.
fn one(epochs: &Epochs, name: &str, output: Option<&Path>) -> CmdResult {
    let found = epochs.session("view", name)?;
    let (html, damaged) = session_page(epochs, &found)?;
    match PageTarget::of(output, &found.session) {
        PageTarget::Stdout => std::io::stdout().lock().write_all(html.as_bytes())?,
        PageTarget::File(path) => {
            write_file(&path, &html)?;
            writeln!(std::io::stdout(), "{}", path.display())?;
        }
    }
    Ok(Outcome::problems_if(damaged))
}

/// The index of every session and each session's page beside it.
fn all(home: &Home, epochs: &Epochs, output: Option<&Path>) -> CmdResult {
    let site = write_site(home, epochs, output)?;
    let pages = match site.pages {
        1 => "1 session page".to_string(),
        n => format!("{n} session pages"),
    };
    writeln!(
        std::io::stdout(),
        "{} ({pages} beside it)",
        site.index.display()
    )?;
    Ok(Outcome::problems_if(site.problems))
}
