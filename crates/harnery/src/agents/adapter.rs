//! The one shape of an agent. Every agent harnery records is a folder
//! under `agents/` with a unit type that implements [`Adapter`]: how its
//! hooks read ([`Adapter::normalize`]), how its own record reads and where
//! it may be ([`Adapter::read_marked`], [`Adapter::record_shape`]), where
//! its hooks are configured ([`Adapter::hooks`]) and how a session is
//! resumed ([`Adapter::resume`]). `agents::agent` is the registry: the rest of
//! the crate asks it, never matches on the agent.
//!
//! `docs/guide/adding-an-agent.md` walks through adding one.

use std::path::{Path, PathBuf};

use super::capability::{CapabilityProfile, RecoveryPolicy};
pub(crate) use super::record::listing::RecordedFile;
pub(crate) use super::record::place::{Part, RecordShape};
use super::record::place::{RecordRole, Refusal};
use super::record::{LineMark, NamedRecord, RecordLine};
use super::signal::Normalized;
use crate::contract::RecordAt;

/// How the lines of an agent's record find the turn they belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordTurns {
    /// Each line names its prompt, or the line it follows on from (Claude
    /// Code's `promptId` and `parentUuid` chain).
    PromptChain,
    /// A line belongs to the turn whose hook prompt its interaction's user
    /// message repeats (the record has no id the hooks share).
    PromptText,
}

/// How harnery's hook entry is written into an agent's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryShape {
    /// Claude Code's matcher groups, `{"hooks": [{"type": "command",
    /// "command": <bin>, "args": [<adapter>], "timeout": <s>}]}`: the exec
    /// form, no shell per event.
    ExecGroup,
    /// Matcher groups whose entry is one command line run by a shell,
    /// `"command": "'<bin>' <adapter> <event>"`, with a timeout in `unit`s
    /// per second (1: seconds; 1000: milliseconds).
    CommandGroup { per_second: u64 },
    /// Copilot's flat entries, exec or bash form (see `install::form`).
    CopilotEntry,
}

/// A place an agent reads its hooks from, and the form of its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HookPlace {
    /// A JSON settings file with a `hooks` object of event lists.
    Settings {
        /// The user-scope file, relative to the agent's directory.
        user_file: &'static str,
        /// The project-scope file, relative to the project root.
        project_file: &'static str,
        events: &'static [&'static str],
        entry: EntryShape,
        /// Every hook's timeout, seconds; `end_timeout_s` for the session
        /// end event where the agent gives that one a tighter budget.
        timeout_s: u64,
        end_timeout_s: Option<(&'static str, u64)>,
    },
    /// A plugin file harnery owns whole (OpenCode): its text names the hook
    /// binary where `{hook_bin}` stands.
    #[allow(dead_code)] // the OpenCode adapter lands in the next commits
    Plugin {
        user_file: &'static str,
        project_file: &'static str,
        text: &'static str,
    },
}

/// Where an agent keeps its files: the variable that moves its directory
/// and the default under the user's home.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AgentHome {
    pub var: &'static str,
    /// Relative to the user's home.
    pub default: &'static str,
}

impl AgentHome {
    /// The directory, as the agent resolves it from this environment (the
    /// variable counts when it is set and not empty), and whether the
    /// variable moved it.
    pub(crate) fn resolve(&self, user_home: &Path) -> (PathBuf, bool) {
        match std::env::var_os(self.var).filter(|v| !v.is_empty()) {
            Some(dir) => (PathBuf::from(dir), true),
            None => (user_home.join(self.default), false),
        }
    }
}

/// How a recorded session is taken up again in the agent: the program and
/// the arguments before the session id (`claude --resume <id>`). Every
/// agent harnery records can resume a session by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resume {
    pub program: &'static str,
    pub before_id: &'static [&'static str],
}

/// A stretch of an agent's record rendered as lines
/// ([`Adapter::render_record`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RenderedRecord {
    /// Where `bytes` start in the whole rendering.
    pub base: u64,
    /// The rendering from `base` on, to the end of its last line.
    pub bytes: Vec<u8>,
}

/// Everything harnery knows about one agent.
pub(crate) trait Adapter: Sync {
    /// The agent's name for a human ("Claude Code").
    fn name(&self) -> &'static str;

    // ---- hooks ----
    /// What its hooks deliver (digested into every genesis).
    fn capability(&self) -> CapabilityProfile;
    /// Which ADR 0078 recovery rules run for it.
    fn recovery(&self) -> RecoveryPolicy;
    /// One hook payload in, one neutral signal out; with `record`, also the
    /// record file the payload names where the dialect reads it with the
    /// rest (else [`NamedRecord::Unread`]). `event` is the name the hook's
    /// argv gave.
    fn normalize(
        &self,
        event: Option<&str>,
        payload: &[u8],
        received_unix_ns: i64,
        record: bool,
    ) -> (Normalized, NamedRecord);
    /// The session a signal that arrived under another id belongs to (a
    /// Copilot subagent's hooks come under the agent id).
    fn parent_session(&self, _payload: &[u8]) -> Option<String> {
        None
    }
    /// A subagent's own record a hook payload names, with the subagent's
    /// id (Claude Code's `SubagentStop` `agent_transcript_path`).
    fn subagent_record(&self, payload: &[u8]) -> Option<(String, String)> {
        super::record::subagent_record_in_payload(payload)
    }

    // ---- its own record ----
    /// Read one line of its record (without the newline), with the
    /// session it names (`Some(None)`: read and names none; `None`: not
    /// looked at, ask [`Adapter::line_session`]) and its mark.
    fn read_marked(
        &self,
        line: &[u8],
        at: &RecordAt,
    ) -> (RecordLine, Option<Option<String>>, LineMark);
    /// The session a line says it belongs to, when it says one.
    fn line_session(&self, line: &[u8]) -> Option<String>;
    /// What a line of this type is to a turn's end.
    fn line_mark(&self, kind: &str) -> LineMark;
    fn record_turns(&self) -> RecordTurns;
    /// The path shape of `role`'s record of `session_id`, the only place
    /// a record is read from (see `record::place`).
    fn record_shape(&self, session_id: &str, role: RecordRole) -> Result<RecordShape, Refusal>;
    /// The record of `session_id` found without a hook naming it (Copilot:
    /// `events.jsonl` under its home), or a path that would leave the
    /// agent's directory with the reason; `Ok(None)`: not found this way.
    /// Whether [`Adapter::found_record`] looks anywhere.
    fn finds_record_by_id(&self) -> bool {
        false
    }
    fn found_record(&self, _session_id: &str) -> Result<Option<PathBuf>, (PathBuf, String)> {
        Ok(None)
    }
    /// The record of `session_id` as lines, where the agent keeps it in a
    /// form that is not lines (OpenCode's SQLite journal): read from
    /// `path`, which already passed the trust gate, and only ever grown by
    /// the agent, so what was read before reads the same. Only the stretch
    /// of the rendering from `keep_from` on is kept, and rendering stops at
    /// the first line end at or past `upto` (the rest is read next time).
    /// `None`: the record is the file itself.
    fn render_record(
        &self,
        _path: &Path,
        _session_id: &str,
        _keep_from: u64,
        _upto: u64,
    ) -> Option<std::io::Result<RenderedRecord>> {
        None
    }

    /// The title the agent keeps beside its record `record` rather than in
    /// its lines (Copilot's `workspace.yaml` `name`), as written: read by
    /// the finalizer each time it follows the record, recorded when it
    /// changed (`harnery.title`). `None` for an agent that keeps none, or
    /// keeps it in the record's lines (`RecordItem::Title`).
    fn title_beside(&self, _record: &Path) -> Option<crate::contract::SessionTitled> {
        None
    }

    /// The folder of its records under its directory `home`, as `health`
    /// names it.
    fn records_dir(&self, home: &Path) -> PathBuf;
    /// The sessions whose record is under `home`, each with the record's
    /// modification time (unix ns); read from names and times alone.
    fn recorded_sessions(&self, home: &Path) -> Vec<(String, i64)>;
    /// [`Adapter::recorded_sessions`] with each record's path, as `harnery
    /// import` reads them; by default each found by its id
    /// ([`Adapter::found_record`]).
    fn recorded_files(&self, home: &Path) -> Vec<RecordedFile> {
        self.recorded_sessions(home)
            .into_iter()
            .filter_map(|(session_id, modified_ns)| {
                let path = self.found_record(&session_id).ok().flatten()?;
                Some(RecordedFile {
                    session_id,
                    path,
                    modified_ns,
                    subagents: Vec::new(),
                })
            })
            .collect()
    }

    // ---- set-up and resume ----
    /// Its directory and the variable that moves it.
    fn home(&self) -> AgentHome;
    /// Its directory as it resolves it in this environment, and whether
    /// the variable moved it: [`AgentHome::resolve`], unless the variable
    /// names something else than the directory itself (Gemini CLI's names
    /// the user's home).
    fn dir(&self, user_home: &Path) -> (PathBuf, bool) {
        self.home().resolve(user_home)
    }
    fn hooks(&self) -> HookPlace;
    /// A file that must change with its hooks file `hooks_file` (Codex
    /// trusts each hook in the user's `config.toml`), given the hooks
    /// file's text before and after the change, the user's home, and the
    /// test of a hook command being harnery's; `None` for most agents.
    fn companion(&self, _change: &HooksChange) -> Option<Companion> {
        None
    }
    fn resume(&self) -> Resume;
    /// Whether the agent runs its tool hooks for a tool its record names
    /// `record_tool` (Codex runs them for its shell, `apply_patch` and MCP
    /// tools only): a record call of a tool without hooks is no lost
    /// hook signal.
    fn hooked_tool(&self, _record_tool: &str) -> bool {
        true
    }
    /// Whether the agent sends byte-identical payloads for distinct events
    /// (Codex: one `PreModelRequest` per model request of a turn, the
    /// `SessionEnd` of every run of a resumed session), so that a payload
    /// repeated exactly is not one delivery seen twice.
    fn repeats_payloads(&self) -> bool {
        false
    }
}

/// A change to an agent's hooks file, as [`Adapter::companion`] sees it.
pub(crate) struct HooksChange<'a> {
    pub hooks_file: &'a Path,
    pub before: Option<&'a str>,
    pub after: Option<&'a str>,
    pub user_home: &'a Path,
    /// Whether a hook's command line or program is harnery's.
    pub is_ours: fn(&str) -> bool,
}

/// A second file an agent's hooks need changed with them: where it is and
/// how its text changes (`None`: no such file, before or after).
pub(crate) struct Companion {
    pub path: PathBuf,
    pub rewrite: CompanionRewrite,
}

/// A companion's new text from its current text, or why it cannot be
/// changed.
pub(crate) type CompanionRewrite = Box<dyn Fn(Option<&str>) -> Result<Option<String>, String>>;
