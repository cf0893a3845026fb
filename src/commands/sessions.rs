//! `harnery sessions`: one line per recorded session, newest activity
//! first, with its project and title, and `--since`, `--until`,
//! `--adapter`, `--class`, `--project` and `--limit` (in text and in
//! `--json` alike). The table says when each was last active relative to
//! now ("3 min ago"); `--json` keeps absolute times.
//!
//! A session's eligibility is that of the whole session: a live session an
//! epoch advance closed administratively in an archive is audit-only here
//! too. With `--epoch all` a session that continues across a boundary is
//! one line, its counts summed over its parts, with the epochs it spans.
//!
//! A resumed session's turns and spans leave out what its resumes
//! superseded; a session `restore --apply` started names its parent under
//! the table (`restored_from` in JSON).

use super::{CmdResult, EpochArg, Outcome};
use harnery::contract::AdapterId;
use harnery::home::Home;
use harnery::ledger::SessionSummary;
use harnery::report::ago::ago;
use harnery::report::audit::{AuditClass, Classification};
use harnery::report::epochs::{Epochs, archive_note};
use harnery::report::session_list::{Listed, SessionFilter, list};
use std::io::{IsTerminal, Write};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Sessions are listed newest activity first (by last event), with their \
    project and title; the table gives times relative to now, --json absolute ones. \
    The filters combine; --limit applies after them."
)]
pub struct Args {
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub epoch: EpochArg,
    /// Only sessions with an event at or after this time (RFC 3339).
    #[arg(long, value_parser = super::parse_instant)]
    pub since: Option<i64>,
    /// Only sessions that started at or before this time (RFC 3339).
    #[arg(long, value_parser = super::parse_instant)]
    pub until: Option<i64>,
    /// Only this agent's sessions: claude-code, copilot, codex, gemini-cli, qwen-code or opencode.
    #[arg(long, value_parser = parse_adapter)]
    pub adapter: Option<AdapterId>,
    /// Only sessions of this evidence class.
    #[arg(long, value_enum)]
    pub class: Option<ClassFilter>,
    /// At most this many sessions (the newest).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only sessions of this project: a directory written as a path (`.`,
    /// `./src`, `/home/u/src/harnery`: the git repository it is in, else the
    /// directory itself), or a project root's name or trailing part
    /// (`harnery`, `src/harnery`).
    #[arg(long, value_name = "PATH|NAME")]
    pub project: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum ClassFilter {
    Eligible,
    AuditOnly,
}

/// What `--project` names: an argument that is a directory (`.`, a path)
/// names the project it is in, as finalize computes one; anything else is
/// matched as it is (a root, a name, a trailing part).
fn project_arg(text: &str) -> String {
    match std::fs::canonicalize(text) {
        Ok(dir) if dir.is_dir() && (text.contains('/') || text.starts_with('.')) => {
            harnery::ledger::project_of(&dir)
        }
        _ => text.to_string(),
    }
}

fn parse_adapter(text: &str) -> Result<AdapterId, String> {
    AdapterId::parse(text).ok_or_else(|| {
        format!(
            "{text:?} is not an adapter: {}",
            harnery::contract::AdapterId::choices()
        )
    })
}

impl Args {
    /// The library's filter for these flags (every session from the
    /// newest, up to `--limit`).
    fn filter(&self) -> SessionFilter {
        SessionFilter {
            since: self.since,
            until: self.until,
            adapter: self.adapter,
            class: self.class.map(|c| match c {
                ClassFilter::Eligible => AuditClass::Eligible,
                ClassFilter::AuditOnly => AuditClass::AuditOnly,
            }),
            skip: 0,
            limit: self.limit,
            project: self.project.as_deref().map(project_arg),
        }
    }
}

pub fn run(args: Args) -> CmdResult {
    let home = Home::from_env()?;
    let epochs = Epochs::open(&home, &args.epoch.epoch)?;
    epochs.report_unreadable("sessions")?;
    let listed = list(&home, &epochs, "sessions", &args.filter())?;
    let mut out = harnery::terminal::stdout(args.json);
    if args.json {
        for l in &listed {
            writeln!(out, "{}", l.to_json(epochs.tagged))?;
        }
        return Ok(Outcome::problems_if(epochs.report_set_aside("sessions")));
    }
    let (summaries, classes): (Vec<_>, Vec<_>) = listed
        .iter()
        .map(|l| (l.summary.clone(), l.class.clone()))
        .unzip();
    let spans: Vec<Vec<String>> = listed.iter().map(|l| l.epochs.clone()).collect();
    let now = harnery::now::resolve_now(None)?;
    let tagged = epochs.tagged.then_some(spans.as_slice());
    let text = table(&summaries, &classes, now, terminal_width(), tagged);
    if !epochs.tagged
        && let Some(note) = archive_note(&home)
    {
        harnery::terminal::warn(&note);
    }
    write!(out, "{text}")?;
    write!(out, "{}", removed_note(&listed))?;
    write!(out, "{}", restored_note(&listed))?;
    out.flush()?;
    // Exit 1 when rows were passed over, for they are a problem found.
    Ok(Outcome::problems_if(epochs.report_set_aside("sessions")))
}

/// A line under the table naming the sessions whose agent deleted its own
/// record after harnery read it (nothing when there are none).
fn removed_note(listed: &[Listed]) -> String {
    let removed: Vec<&str> = listed
        .iter()
        .filter(|l| l.record_removed())
        .map(|l| l.summary.session.session_id.as_str())
        .collect();
    if removed.is_empty() {
        return String::new();
    }
    format!(
        "record removed by the agent, history only in harnery: {}\n",
        removed.join(", ")
    )
}

/// A line under the table for each session `restore --apply` started
/// from another's checkpoint (nothing when there are none).
fn restored_note(listed: &[Listed]) -> String {
    listed
        .iter()
        .filter_map(|l| {
            let from = l.restored_from.as_ref()?;
            Some(format!(
                "{} was restored from {} at checkpoint {}\n",
                l.summary.session.session_id, from.session, from.checkpoint
            ))
        })
        .collect()
}

/// The text table, one session per line, newest activity first: when it
/// was last active (relative to `now_unix_ns`), its counts and class, then
/// its project and title, cut so that a line fits in `width` columns
/// where the terminal's width is known (the fixed columns are never cut).
/// With `epochs`, a last column names the epochs each session spans.
pub fn table(
    sessions: &[SessionSummary],
    classes: &[Classification],
    now_unix_ns: i64,
    width: Option<usize>,
    epochs: Option<&[Vec<String>]>,
) -> String {
    let home = std::env::var("HOME").ok().filter(|h| h.len() > 1);
    let projects: Vec<String> = sessions
        .iter()
        .map(|s| shown_project(s.project.as_deref(), home.as_deref()))
        .collect();
    let titles: Vec<&str> = sessions
        .iter()
        .map(|s| s.title.as_deref().unwrap_or("-"))
        .collect();
    let widest =
        |cells: &mut dyn Iterator<Item = usize>, head: usize| cells.max().unwrap_or(0).max(head);
    let mut project_w = widest(&mut projects.iter().map(|p| p.chars().count()), 7);
    let mut title_w = widest(&mut titles.iter().map(|t| t.chars().count()), 5);
    if let Some(width) = width {
        let room = width.saturating_sub(FIXED + 2);
        // The project keeps up to a third of the room, the title the rest;
        // neither goes below a few characters.
        project_w = project_w.min((room / 3).max(12));
        title_w = title_w.min(room.saturating_sub(project_w).max(16));
    }
    let mut out = String::new();
    let mut line = |cells: [&str; 8], project: &str, title: &str, epochs: Option<String>| {
        let [
            adapter,
            session,
            last,
            turns,
            open,
            native,
            recovered,
            class,
        ] = cells;
        let mut l = format!(
            "{adapter:<11} {session:<36} {last:<10} {turns:>5} {open:>4} {native:>6} {recovered:>9}  {class:<11} {:<project_w$} {:<title_w$}",
            cut_left(project, project_w),
            cut_right(title, title_w),
        );
        match epochs {
            Some(e) => l.push_str(&format!("  {e}")),
            None => l.truncate(l.trim_end().len()),
        }
        out.push_str(&l);
        out.push('\n');
    };
    let head = [
        "ADAPTER",
        "SESSION",
        "LAST",
        "TURNS",
        "OPEN",
        "NATIVE",
        "RECOVERED",
        "ELIGIBILITY",
    ];
    line(
        head,
        "PROJECT",
        "TITLE",
        epochs.map(|_| "EPOCHS".to_string()),
    );
    for (i, (s, class)) in sessions.iter().zip(classes).enumerate() {
        let class = class.class.to_string();
        let cells = [
            s.session.adapter.as_str(),
            &s.session.session_id,
            &ago(s.last_unix_ns, now_unix_ns),
            &s.turns.to_string(),
            &s.spans.open.to_string(),
            &s.spans.closed_native.to_string(),
            &s.spans.recovered.to_string(),
            &class,
        ];
        line(
            cells,
            &projects[i],
            titles[i],
            epochs.map(|e| e[i].join(",")),
        );
    }
    out
}

/// The width of the columns before PROJECT, with their separators.
const FIXED: usize = 11 + 1 + 36 + 1 + 10 + 1 + 5 + 1 + 4 + 1 + 6 + 1 + 9 + 2 + 11 + 1;

/// A project as the table shows it: under the home directory as `~/…`;
/// `-` when unknown.
fn shown_project(project: Option<&str>, home: Option<&str>) -> String {
    let Some(p) = project else {
        return "-".into();
    };
    match home.and_then(|h| p.strip_prefix(h)) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("~{rest}"),
        _ => p.to_string(),
    }
}

/// `text` in at most `max` characters, its end replaced by `…` when cut.
fn cut_right(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// `text` in at most `max` characters, its start replaced by `…` when cut
/// (a path's last parts say most).
fn cut_left(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let kept: String = text.chars().skip(n - max.saturating_sub(1)).collect();
    format!("…{kept}")
}

/// The terminal's width in columns: `COLUMNS` where set, else the width
/// of the terminal stdout is, else none (a pipe gets whole lines).
fn terminal_width() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return Some(n).filter(|&n: &usize| n > 0);
    }
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which
    // points at a live, writable `winsize` of this frame.
    let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) };
    (r == 0 && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_cells_are_cut_at_the_end_or_the_start() {
        assert_eq!(cut_right("abcdef", 4), "abc…");
        assert_eq!(cut_right("abc", 4), "abc");
        assert_eq!(cut_left("/a/b/c/d", 5), "…/c/d");
        assert_eq!(shown_project(Some("/home/u/p"), Some("/home/u")), "~/p");
        assert_eq!(shown_project(Some("/home/us"), Some("/home/u")), "/home/us");
        assert_eq!(shown_project(None, Some("/home/u")), "-");
    }
}
