//! What a session is about and where it ran, as its row keeps them
//! (migration `session_titles`): its title, its working directory and its
//! project.
//!
//! - The title is the first user prompt that says something once the
//!   context a harness wraps around it is taken out (`<current_datetime>`,
//!   `<system-reminder>`, a slash command's `<command-message>`, …), on
//!   one line and cut at [`TITLE_CHARS`] characters. A later prompt never
//!   replaces it.
//! - A title from the agent's own record (`session.titled`, generation
//!   11: Copilot's `workspace.yaml` name, Qwen Code's `custom_title`,
//!   Gemini CLI's `summary`, OpenCode's session title) takes precedence
//!   over a prompt's (`title_source = 'record'`), and the newest one wins:
//!   a session renamed in the agent is renamed here.
//! - The cwd is the first one the session's events name
//!   (`session.started`, `session.metadata`).
//! - The project is computed once, when the cwd is first learned: the
//!   nearest directory at or above it holding `.git` (a directory, or the
//!   file a worktree or submodule has), else the cwd itself. It is read
//!   from the filesystem as it is at that finalize, and kept: a repository
//!   made or removed later does not move a session. A session that goes
//!   on after an epoch advance has a row in the new epoch too, filled
//!   from its events there (its project looked up again at that
//!   finalize); a listing across epochs takes the earliest part's title,
//!   cwd and project (`report::epochs::combine`).
//!
//! Rows an older build wrote are marked `pending` by the migration and
//! filled here from their events the first time a writer opens the epoch.

use std::path::Path;

use rusqlite::{Connection, params};

use super::LedgerError;
use crate::contract::{Event, Payload};

/// The longest title kept, in characters; a longer one ends in `…`.
pub(crate) const TITLE_CHARS: usize = 100;

/// Wrappers a harness puts around or beside what the user typed; their
/// content is not the user's words. Collected from the corpus's Claude
/// Code, Copilot and Codex records.
const INJECTED: &[&str] = &[
    "current_datetime",
    "system-reminder",
    "system_notification",
    "environment_context",
    "user_instructions",
    "task-notification",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "command-message",
    "ide_opened_file",
    "ide_selection",
    "user-prompt-submit-hook",
];

/// A session's title, cwd and project, as its row holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct About {
    pub title: Option<String>,
    /// `record` or `prompt` (`pending` on a row not yet filled).
    pub title_source: Option<String>,
    pub cwd: Option<String>,
    pub project: Option<String>,
}

impl About {
    /// Learn what `e` says of the session: its first prompt as the title,
    /// its first cwd.
    pub(super) fn admit(&mut self, e: &Event) {
        match &e.payload {
            Payload::PromptSubmitted(p) => self.prompt(p.prompt.as_deref()),
            // The user's own words: a message another agent sent (a
            // subagent steering its parent) has a source.
            Payload::MessageUser(p) if p.source.is_none() => self.prompt(p.text.as_deref()),
            Payload::SessionStarted(p) => self.cwd(p.cwd.as_deref()),
            Payload::SessionMetadata(p) => self.cwd(p.cwd.as_deref()),
            Payload::SessionTitled(p) => {
                if let Some(title) = record_title(&p.title) {
                    self.title = Some(title);
                    self.title_source = Some("record".into());
                }
            }
            _ => {}
        }
    }

    fn prompt(&mut self, text: Option<&str>) {
        if self.title.is_some() {
            return;
        }
        if let Some(title) = text.and_then(prompt_title) {
            self.title = Some(title);
            self.title_source = Some("prompt".into());
        }
    }

    fn cwd(&mut self, cwd: Option<&str>) {
        if self.cwd.is_some() {
            return;
        }
        if let Some(cwd) = cwd.filter(|c| !c.trim().is_empty()) {
            self.cwd = Some(cwd.to_string());
        }
    }

    /// The project, computed once the cwd is known.
    pub(super) fn settle(&mut self) {
        if self.project.is_none()
            && let Some(cwd) = &self.cwd
        {
            self.project = Some(project_of(Path::new(cwd)));
        }
    }
}

/// A prompt as a title: the harness's wrappers taken out, a slash
/// command as `/name args`, whitespace folded onto one line, cut at
/// [`TITLE_CHARS`] characters. `None` when nothing of the user's is left.
pub(crate) fn prompt_title(text: &str) -> Option<String> {
    let mut rest = text.to_string();
    for tag in INJECTED {
        rest = strip_elements(&rest, tag);
    }
    let command = element(&rest, "command-name").map(|name| {
        let args = element(&rest, "command-args").unwrap_or_default();
        format!("{} {}", name.trim(), args.trim())
    });
    let words = match command {
        Some(c) => c,
        None => rest,
    };
    let line = words.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return None;
    }
    Some(cut(&line, TITLE_CHARS))
}

/// A title the agent's record gives (hostile text): control characters
/// (newlines and tabs among them) taken out as spaces, whitespace folded
/// onto one line, cut at [`TITLE_CHARS`] characters. `None` when nothing
/// is left.
pub fn record_title(text: &str) -> Option<String> {
    let spaced: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let line = spaced.split_whitespace().collect::<Vec<_>>().join(" ");
    (!line.is_empty()).then(|| cut(&line, TITLE_CHARS))
}

/// `text` cut to at most `max` characters (on a character boundary), the
/// last one `…` when it was cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((at, _)) if text[at..].chars().nth(1).is_some() => format!("{}…", &text[..at]),
        _ => text.to_string(),
    }
}

/// `text` without any `<tag …>…</tag>` element (an unclosed one runs to
/// the end).
fn strip_elements(text: &str, tag: &str) -> String {
    let open = format!("<{tag}");
    let close = format!("</{tag}>");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = find_open(rest, &open) {
        out.push_str(&rest[..at]);
        rest = match rest[at..].find(&close) {
            Some(end) => &rest[at + end + close.len()..],
            None => "",
        };
        out.push(' ');
    }
    out.push_str(rest);
    out
}

/// Where `<tag` opens an element (followed by `>` or a space, so that
/// `<command-name` does not match `<command-names`).
fn find_open(text: &str, open: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(open) {
        let at = from + i;
        match text[at + open.len()..].chars().next() {
            Some('>') | Some(' ') | Some('/') => return Some(at),
            _ => from = at + open.len(),
        }
    }
    None
}

/// The text of the first `<tag>…</tag>` element.
fn element(text: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = text.find(&open)? + open.len();
    let end = text[start..].find(&close)? + start;
    Some(text[start..end].to_string())
}

/// The git repository root at or above `cwd` (a `.git` directory or
/// file), else `cwd` itself.
pub fn project_of(cwd: &Path) -> String {
    let found = cwd
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok());
    found.unwrap_or(cwd).to_string_lossy().into_owned()
}

/// Fill the rows the migration marked `pending` from their events: one
/// pass over the events that can name a title or a cwd, in session order.
pub(in crate::ledger) fn fill_pending(conn: &Connection) -> Result<(), LedgerError> {
    let pending: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sessions WHERE title_source = 'pending')",
        [],
        |r| r.get(0),
    )?;
    if !pending {
        return Ok(());
    }
    let tx = conn.unchecked_transaction()?;
    let mut found: std::collections::BTreeMap<(String, String), About> = Default::default();
    {
        let mut stmt = tx.prepare(
            "SELECT e.adapter, e.session_id, e.json FROM events e \
             JOIN sessions s ON s.adapter = e.adapter AND s.session_id = e.session_id \
             WHERE s.title_source = 'pending' AND e.type IN \
             ('prompt.submitted', 'message.user', 'session.started', 'session.metadata', \
              'session.titled') \
             ORDER BY e.adapter, e.session_id, e.offset",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let key = (row.get::<_, String>(0)?, row.get::<_, String>(1)?);
            let text: String = row.get(2)?;
            // A row that does not parse says nothing here; `validate`
            // names it.
            if let Ok(event) = serde_json::from_str::<Event>(&text) {
                found.entry(key).or_default().admit(&event);
            }
        }
    }
    tx.execute(
        "UPDATE sessions SET title_source = NULL WHERE title_source = 'pending'",
        [],
    )?;
    let mut update = tx.prepare(
        "UPDATE sessions SET title = ?3, title_source = ?4, cwd = ?5, project = ?6 \
         WHERE adapter = ?1 AND session_id = ?2",
    )?;
    for ((adapter, session_id), mut about) in found {
        about.settle();
        update.execute(params![
            adapter,
            session_id,
            about.title,
            about.title_source,
            about.cwd,
            about.project
        ])?;
    }
    drop(update);
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_context_is_taken_out_of_a_prompt() {
        let copilot = "<current_datetime>2026-11-30T00:18:44.682+00:00</current_datetime>\n\n\
                       Run the shell command that prints hello.";
        assert_eq!(
            prompt_title(copilot).as_deref(),
            Some("Run the shell command that prints hello.")
        );
        let reminder = "<system-reminder>\nToday's date is x\n</system-reminder>\nFix   the\nbuild";
        assert_eq!(prompt_title(reminder).as_deref(), Some("Fix the build"));
        let slash = "<command-message>review is running…</command-message>\n\
                     <command-name>/review</command-name>\n<command-args>PR 12</command-args>";
        assert_eq!(prompt_title(slash).as_deref(), Some("/review PR 12"));
        let output = "<local-command-stdout>Compacted</local-command-stdout>";
        assert_eq!(prompt_title(output), None);
        assert_eq!(prompt_title("  \n "), None);
        // An unclosed wrapper hides the rest, never the words before it.
        assert_eq!(
            prompt_title("hello <system-reminder> never closed").as_deref(),
            Some("hello")
        );
        // A tag that only starts like a wrapper is the user's text.
        assert_eq!(
            prompt_title("<system-reminders> are noisy").as_deref(),
            Some("<system-reminders> are noisy")
        );
    }

    #[test]
    fn a_record_title_is_one_clean_line() {
        assert_eq!(
            record_title("  Fix\tthe\r\nbuild\u{1b}[31m red\u{7}  ").as_deref(),
            Some("Fix the build [31m red")
        );
        assert_eq!(record_title("\u{0}\u{85}\n "), None);
        let long = format!("{}tail", "w".repeat(TITLE_CHARS));
        let title = record_title(&long).unwrap();
        assert_eq!(title.chars().count(), TITLE_CHARS);
        assert!(title.ends_with('…'));
        // Markup is the agent's title, not a harness's wrapper.
        assert_eq!(
            record_title("<system-reminder> x").as_deref(),
            Some("<system-reminder> x")
        );
    }

    #[test]
    fn a_record_title_wins_over_prompts_and_the_newest_wins() {
        use crate::contract::{PromptSubmitted, SessionTitled};
        let event = |payload| {
            let mut script = crate::report::testkit::Script::new("s");
            let provenance = crate::contract::Provenance {
                attestation: crate::contract::Attestation::Native,
                confidence: crate::contract::Confidence::High,
            };
            script.push(0, payload, provenance);
            script.events().pop().expect("just pushed")
        };
        let prompt = |text: &str| {
            event(Payload::PromptSubmitted(PromptSubmitted {
                prompt: Some(text.into()),
                transformed: false,
            }))
        };
        let titled = |title: &str| {
            event(Payload::SessionTitled(SessionTitled {
                title: title.into(),
                field: "name".into(),
                user_named: None,
                path: "/w.yaml".into(),
                offset: None,
            }))
        };
        let mut about = About::default();
        about.admit(&prompt("first prompt"));
        assert_eq!(about.title.as_deref(), Some("first prompt"));
        assert_eq!(about.title_source.as_deref(), Some("prompt"));
        about.admit(&titled("Agent's\nname"));
        about.admit(&prompt("second prompt"));
        assert_eq!(about.title.as_deref(), Some("Agent's name"));
        assert_eq!(about.title_source.as_deref(), Some("record"));
        about.admit(&titled("Renamed"));
        assert_eq!(about.title.as_deref(), Some("Renamed"));
        // A title with nothing left in it leaves the last one.
        about.admit(&titled("\u{1}"));
        assert_eq!(about.title.as_deref(), Some("Renamed"));
    }

    #[test]
    fn a_long_title_is_cut_on_a_character_boundary() {
        let long = "é".repeat(150);
        let title = prompt_title(&long).unwrap();
        assert_eq!(title.chars().count(), TITLE_CHARS);
        assert!(title.ends_with('…'));
        let exact = "a".repeat(TITLE_CHARS);
        assert_eq!(prompt_title(&exact).unwrap(), exact);
        assert_eq!(cut("abc", 2), "a…");
    }

    #[test]
    fn the_project_is_the_git_root_else_the_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let deep = repo.join("src/deep");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        assert_eq!(project_of(&deep), repo.to_string_lossy());
        // A worktree's `.git` is a file.
        let tree = dir.path().join("tree");
        std::fs::create_dir_all(tree.join("a")).unwrap();
        std::fs::write(tree.join(".git"), "gitdir: elsewhere").unwrap();
        assert_eq!(project_of(&tree.join("a")), tree.to_string_lossy());
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        // The temporary directory is under no repository on a test machine
        // unless its parents are; compare with what the walk finds above.
        let above = dir
            .path()
            .ancestors()
            .find(|d| d.join(".git").exists())
            .map(|d| d.to_string_lossy().into_owned());
        assert_eq!(
            project_of(&plain),
            above.unwrap_or_else(|| plain.to_string_lossy().into_owned())
        );
    }
}
