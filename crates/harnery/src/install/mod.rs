//! Hook configuration for each agent: put `harnery-hook` on every hook event,
//! take it off again, and leave everything else in the file as it was.
//!
//! - Claude Code reads `hooks.<Event>` = a list of matcher groups
//!   `{"matcher"?, "hooks": [{"type": "command", …}]}` from
//!   `~/.claude/settings.json` (user; `$CLAUDE_CONFIG_DIR/settings.json`
//!   when that variable is set, as Claude Code itself reads it) or
//!   `<project>/.claude/settings.json`.
//!   harnery adds one group per event with the exec form (`command` = the
//!   absolute path of `harnery-hook`, `args` = `["claude-code"]`), so no
//!   shell is started per event.
//! - Copilot CLI reads `hooks.<event>` = a list of `{"type": "command", …,
//!   "timeoutSec": …}` from any `*.json` in `~/.copilot/hooks/` (user;
//!   `$COPILOT_HOME/hooks/` when that variable is set) or
//!   `<repo>/.github/hooks/` (repo). harnery owns its own file,
//!   `harnery.json`, in either place, and writes either the exec form
//!   (`exec` + `args`) or the `bash` form; [`form`] decides which.
//!
//! An entry is harnery's when its command or program names a file called
//! `harnery-hook`. Installing removes every such entry (of either form) and
//! adds a fresh one per event, so installing twice equals installing once and
//! a change of form replaces the old entries. A file that does not parse is
//! never rewritten. Every change is preceded by a backup copy.
//!
//! [`mcp`] registers `harnery mcp` in Claude Code's and Copilot's MCP
//! configuration (`install --mcp`).
//!
//! Beside the hooks, [`schedule`] sets up (and removes) the periodic
//! `harnery finalize` that turns what the hooks spool into the ledger.

pub mod form;
pub(crate) mod json;
pub mod mcp;
pub mod schedule;

use std::path::{Path, PathBuf};

use form::CopilotForm;
use json::Json;

use crate::agents;
use crate::agents::adapter::{EntryShape, HookPlace};

/// Name of the hook binary harnery recognises as its own.
pub(crate) const HOOK_BIN_NAME: &str = "harnery-hook";

/// Which agent to configure.
pub use crate::contract::AdapterId as Agent;

/// Errors of install and uninstall.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("hook binary {} does not exist (use --hook-bin)", .0.display())]
    NoHookBin(PathBuf),
    #[error("refusing to rewrite {path}: not valid JSON at line {line} column {column}: {message}")]
    Unparsable {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("refusing to rewrite {path}: {what}")]
    UnexpectedShape { path: PathBuf, what: String },
    #[error(
        "--mcp registers harnery mcp with claude-code and copilot; for {0}, add the stdio \
         server `harnery mcp` to its MCP settings yourself (docs/guide/mcp.md)"
    )]
    NoMcp(Agent),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A computed change to one settings file.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub path: PathBuf,
    /// The file's text before (None: it does not exist).
    pub before: Option<String>,
    /// The text after the change (None: the file should be removed because
    /// harnery owned all of it).
    pub after: Option<String>,
}

impl Plan {
    /// Whether applying the plan changes anything.
    pub fn changes(&self) -> bool {
        self.before != self.after
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub path: PathBuf,
    pub backup: Option<PathBuf>,
    pub changed: bool,
}

/// Plan adding harnery's hooks for `agent` to the file at `path`. `form` is
/// the Copilot entry form; it is not read for Claude Code, whose entries are
/// always exec form.
pub fn plan_install(
    agent: Agent,
    path: &Path,
    hook_bin: &Path,
    form: CopilotForm,
) -> Result<Plan, InstallError> {
    let before = read_optional(path)?;
    if let HookPlace::Plugin { text, .. } = agents::agent(agent).hooks() {
        let bin = hook_bin.to_string_lossy();
        return Ok(Plan {
            path: path.to_path_buf(),
            before,
            after: Some(text.replace("{hook_bin}", &js_string(&bin))),
        });
    }
    let mut doc = parse(path, before.as_deref())?;
    strip(agent, path, &mut doc)?;
    add(agent, path, &mut doc, hook_bin, form)?;
    Ok(Plan {
        path: path.to_path_buf(),
        before,
        after: Some(doc.pretty()),
    })
}

/// `s` as a JavaScript string literal (JSON's is one).
fn js_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// Plan removing harnery's hooks for `agent` from the file at `path`.
pub fn plan_uninstall(agent: Agent, path: &Path) -> Result<Plan, InstallError> {
    let before = read_optional(path)?;
    let Some(text) = before.as_deref() else {
        return Ok(Plan {
            path: path.to_path_buf(),
            before: None,
            after: None,
        });
    };
    if let HookPlace::Plugin { .. } = agents::agent(agent).hooks() {
        // harnery's own file, named for it: removed whole.
        return Ok(Plan {
            path: path.to_path_buf(),
            before,
            after: None,
        });
    }
    let mut doc = parse(path, Some(text))?;
    if !strip(agent, path, &mut doc)? {
        return Ok(Plan {
            path: path.to_path_buf(),
            after: before.clone(),
            before,
        });
    }
    let owned_whole = agent == Agent::Copilot && is_only_version(&doc);
    Ok(Plan {
        path: path.to_path_buf(),
        before,
        after: (!owned_whole).then(|| doc.pretty()),
    })
}

/// The plans for the files that must change with `plan`'s hooks file
/// (Codex's trust of each hook in its `config.toml`; none for most agents).
pub fn plan_companions(
    agent: Agent,
    plan: &Plan,
    user_home: &Path,
) -> Result<Vec<Plan>, InstallError> {
    let change = crate::agents::adapter::HooksChange {
        hooks_file: &plan.path,
        before: plan.before.as_deref(),
        after: plan.after.as_deref(),
        user_home,
        is_ours: names_hook_bin,
    };
    let Some(companion) = agents::agent(agent).companion(&change) else {
        return Ok(Vec::new());
    };
    let before = read_optional(&companion.path)?;
    let after =
        (companion.rewrite)(before.as_deref()).map_err(|what| shape(&companion.path, &what))?;
    Ok(vec![Plan {
        path: companion.path,
        before,
        after,
    }])
}

/// Write a plan: back up the old file (`<name>.harnery-backup-<unix ns>`),
/// write the new text to a temporary file, fsync, rename over the original.
pub fn apply(plan: &Plan) -> Result<Applied, InstallError> {
    let io = |source| InstallError::Io {
        path: plan.path.clone(),
        source,
    };
    if !plan.changes() {
        return Ok(Applied {
            path: plan.path.clone(),
            backup: None,
            changed: false,
        });
    }
    let backup = match &plan.before {
        Some(text) => {
            let name = format!(
                "{}.harnery-backup-{}",
                plan.path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                crate::clock::wall_now_ns()
            );
            let b = plan.path.with_file_name(name);
            std::fs::write(&b, text).map_err(io)?;
            Some(b)
        }
        None => None,
    };
    match &plan.after {
        Some(text) => replace_settings(&plan.path, text).map_err(io)?,
        None => std::fs::remove_file(&plan.path).map_err(io)?,
    }
    Ok(Applied {
        path: plan.path.clone(),
        backup,
        changed: true,
    })
}

/// Replace an agent's settings file durably, keeping its permissions.
fn replace_settings(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::durable::write_atomic(path, text.as_bytes(), crate::durable::Mode::Inherit)
        .map_err(|e| e.into_parts().1)
}

fn read_optional(path: &Path) -> Result<Option<String>, InstallError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InstallError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn parse(path: &Path, text: Option<&str>) -> Result<Json, InstallError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok(Json::Object(Vec::new()));
    };
    let doc = Json::parse(text).map_err(|e| InstallError::Unparsable {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    if !matches!(doc, Json::Object(_)) {
        return Err(shape(path, "the top level is not a JSON object"));
    }
    Ok(doc)
}

fn shape(path: &Path, what: &str) -> InstallError {
    InstallError::UnexpectedShape {
        path: path.to_path_buf(),
        what: what.to_owned(),
    }
}

fn is_only_version(doc: &Json) -> bool {
    match doc {
        Json::Object(kv) => kv
            .iter()
            .all(|(k, v)| k == "version" || (k == "hooks" && *v == Json::Object(Vec::new()))),
        _ => false,
    }
}

/// Is this hook entry (`{"type":"command", …}`) one of harnery's? `exec` is
/// Copilot's program field; the others hold a program or a command line.
fn is_ours(entry: &Json) -> bool {
    ["command", "exec", "bash", "powershell"].iter().any(|k| {
        entry
            .get(k)
            .and_then(Json::as_str)
            .is_some_and(names_hook_bin)
    })
}

/// Whether a program or command line names a file called
/// [`HOOK_BIN_NAME`]: what makes a hook entry harnery's.
pub(crate) fn names_hook_bin(cmd: &str) -> bool {
    cmd.split(|c: char| c.is_whitespace() || c == '\'' || c == '"')
        .any(|word| {
            Path::new(word)
                .file_name()
                .is_some_and(|n| n == HOOK_BIN_NAME)
        })
}

/// Remove every harnery entry; returns whether anything was removed.
fn strip(agent: Agent, path: &Path, doc: &mut Json) -> Result<bool, InstallError> {
    let Some(hooks) = doc.get_mut("hooks") else {
        return Ok(false);
    };
    let Json::Object(events) = hooks else {
        return Err(shape(path, "`hooks` is not an object"));
    };
    let mut removed = false;
    for (_, list) in events.iter_mut() {
        let Json::Array(items) = list else { continue };
        let before = items.len();
        match entry_shape(agent) {
            Some(EntryShape::CopilotEntry) | None => items.retain(|e| !is_ours(e)),
            Some(_) => strip_groups(items, &mut removed),
        }
        removed |= items.len() != before;
    }
    if removed {
        events.retain(|(_, v)| *v != Json::Array(Vec::new()));
    }
    Ok(removed)
}

/// Claude Code: drop harnery entries inside matcher groups; drop a group
/// only when harnery's removal emptied it.
fn strip_groups(groups: &mut Vec<Json>, removed: &mut bool) {
    groups.retain_mut(|group| {
        let Some(Json::Array(entries)) = group.get_mut("hooks") else {
            return true;
        };
        let before = entries.len();
        entries.retain(|e| !is_ours(e));
        let changed = entries.len() != before;
        *removed |= changed;
        !(changed && entries.is_empty())
    });
}

fn add(
    agent: Agent,
    path: &Path,
    doc: &mut Json,
    hook_bin: &Path,
    form: CopilotForm,
) -> Result<(), InstallError> {
    if doc.get("hooks").is_none() {
        if agent == Agent::Copilot && doc.get("version").is_none() {
            doc.set("version", Json::Number(1.into()));
        }
        doc.set("hooks", Json::Object(Vec::new()));
    }
    let hooks = doc.get_mut("hooks").expect("hooks was just ensured");
    let bin = hook_bin.to_string_lossy().into_owned();
    let HookPlace::Settings {
        events,
        entry,
        timeout_s,
        end_timeout_s,
        ..
    } = agents::agent(agent).hooks()
    else {
        return Ok(());
    };
    let timeout = |event: &str| match end_timeout_s {
        Some((end, s)) if end == event => s,
        _ => timeout_s,
    };
    let items: Vec<(&str, Json)> = events
        .iter()
        .map(|e| {
            let item = match entry {
                EntryShape::ExecGroup => exec_group(&bin, agent, timeout(e)),
                EntryShape::CommandGroup { per_second } => {
                    command_group(&bin, agent, e, timeout(e) * per_second)
                }
                EntryShape::CopilotEntry => copilot_entry(&bin, e, form),
            };
            (*e, item)
        })
        .collect();
    for (event, item) in items {
        match hooks.get_mut(event) {
            Some(Json::Array(list)) => list.push(item),
            Some(_) => return Err(shape(path, &format!("`hooks.{event}` is not a list"))),
            None => hooks.set(event, Json::Array(vec![item])),
        }
    }
    Ok(())
}

fn s(v: &str) -> Json {
    Json::String(v.to_owned())
}

/// The shape of `agent`'s entries, where it has a settings file.
fn entry_shape(agent: Agent) -> Option<EntryShape> {
    match agents::agent(agent).hooks() {
        HookPlace::Settings { entry, .. } => Some(entry),
        HookPlace::Plugin { .. } => None,
    }
}

/// A matcher group of one exec-form entry: the program and its argument.
fn exec_group(bin: &str, agent: Agent, timeout: u64) -> Json {
    let entry = Json::Object(vec![
        ("type".into(), s("command")),
        ("command".into(), s(bin)),
        ("args".into(), Json::Array(vec![s(agent.as_str())])),
        ("timeout".into(), Json::Number(timeout.into())),
    ]);
    Json::Object(vec![("hooks".into(), Json::Array(vec![entry]))])
}

/// A matcher group of one command line a shell runs, naming the event
/// (the agents that take no argument list).
fn command_group(bin: &str, agent: Agent, event: &str, timeout: u64) -> Json {
    let line = format!("{} {} {event}", shell_quote(bin), agent.as_str());
    let entry = Json::Object(vec![
        ("type".into(), s("command")),
        ("command".into(), s(&line)),
        ("timeout".into(), Json::Number(timeout.into())),
    ]);
    Json::Object(vec![("hooks".into(), Json::Array(vec![entry]))])
}

fn copilot_entry(bin: &str, event: &str, form: CopilotForm) -> Json {
    let mut fields = vec![("type".into(), s("command"))];
    match form {
        CopilotForm::Exec => {
            fields.push(("exec".into(), s(bin)));
            fields.push(("args".into(), Json::Array(vec![s("copilot"), s(event)])));
        }
        CopilotForm::Bash => fields.push((
            "bash".into(),
            s(&format!("{} copilot {event}", shell_quote(bin))),
        )),
    }
    fields.push((
        "timeoutSec".into(),
        Json::Number(crate::agents::copilot::TIMEOUT_S.into()),
    ));
    Json::Object(fields)
}

/// Single-quote for POSIX sh.
pub(crate) fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Where an agent reads its user-scope configuration, and what decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDir {
    /// Claude Code's config directory or Copilot's home.
    pub dir: PathBuf,
    /// The environment variable that moved it there (`CLAUDE_CONFIG_DIR`,
    /// `COPILOT_HOME`), or `None` for the agent's default under `HOME`.
    pub moved_by: Option<&'static str>,
}

impl AgentDir {
    /// The agent's directory as the agent itself resolves it from this
    /// process's environment: Claude Code's `$CLAUDE_CONFIG_DIR`, else
    /// `~/.claude`; Copilot's `$COPILOT_HOME`, else `~/.copilot` (each
    /// variable counts when it is set and not empty).
    pub(crate) fn from_env(agent: Agent, user_home: &Path) -> AgentDir {
        let home = agents::agent(agent).home();
        let (dir, moved) = agents::agent(agent).dir(user_home);
        AgentDir {
            dir,
            moved_by: moved.then_some(home.var),
        }
    }

    /// One line saying where the agent reads and why.
    pub fn describe(&self, agent: Agent) -> String {
        let var = agents::agent(agent).home().var;
        let (what, place) = match agent {
            Agent::ClaudeCode => (
                "claude code reads its user settings from".to_string(),
                self.dir.clone(),
            ),
            Agent::Copilot => (
                "copilot reads its user hooks from".to_string(),
                self.dir.join("hooks"),
            ),
            other => {
                let file = user_file(other);
                let place = self.dir.join(file);
                (
                    format!("{} reads its user hooks from", other.as_str()),
                    place,
                )
            }
        };
        let why = match self.moved_by {
            Some(_) => format!("${var} is set"),
            None => format!("the default: ${var} is not set"),
        };
        format!("{what} {} ({why})", place.display())
    }
}

/// The hook binary to configure: `flag` made absolute, else
/// [`HOOK_BIN_NAME`] beside the running executable.
pub fn hook_bin(flag: Option<&Path>) -> std::io::Result<PathBuf> {
    if let Some(p) = flag {
        return std::path::absolute(p);
    }
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| std::io::Error::other("cannot locate the harnery executable's directory"))?;
    Ok(dir.join(HOOK_BIN_NAME))
}

/// A hook binary that is not there would make every hook fail.
pub fn check_hook_bin(path: &Path) -> Result<(), InstallError> {
    match path.is_file() {
        true => Ok(()),
        false => Err(InstallError::NoHookBin(path.to_path_buf())),
    }
}

/// The file to change for `agent` in the user scope (`user`) or the
/// project's (`project`, default the current directory), and in the user
/// scope where the agent reads, judged from its environment and `user_home`.
pub fn target_file(
    agent: Agent,
    user: bool,
    user_home: &Path,
    project: Option<&Path>,
) -> std::io::Result<(PathBuf, Option<AgentDir>)> {
    let agent_dir = AgentDir::from_env(agent, user_home);
    let project = match project {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir()?,
    };
    let path = settings_path(agent, user, &agent_dir, &project);
    Ok((path, user.then_some(agent_dir)))
}

/// The settings file for an agent and scope: in the user scope, the file
/// the agent reads in `agent_dir` (see [`AgentDir::from_env`]); else in
/// `project`, the project (Claude Code) or repository (Copilot) root.
pub(crate) fn settings_path(
    agent: Agent,
    user_scope: bool,
    agent_dir: &AgentDir,
    project: &Path,
) -> PathBuf {
    let (user_file, project_file) = match agents::agent(agent).hooks() {
        HookPlace::Settings {
            user_file,
            project_file,
            ..
        }
        | HookPlace::Plugin {
            user_file,
            project_file,
            ..
        } => (user_file, project_file),
    };
    match user_scope {
        true => agent_dir.dir.join(user_file),
        false => project.join(project_file),
    }
}

/// The user-scope file of `agent`, relative to its directory.
fn user_file(agent: Agent) -> &'static str {
    match agents::agent(agent).hooks() {
        HookPlace::Settings { user_file, .. } | HookPlace::Plugin { user_file, .. } => user_file,
    }
}

/// The agents other than `except` whose user-scope file still holds
/// harnery's hooks (a file that cannot be read or parsed counts as
/// holding them: it may). Uninstall keeps the schedule while any remain.
pub fn still_hooked(except: Agent, user_home: &Path) -> Vec<Agent> {
    Agent::ALL
        .into_iter()
        .filter(|&agent| agent != except)
        .filter(|&agent| {
            let agent_dir = AgentDir::from_env(agent, user_home);
            let path = settings_path(agent, true, &agent_dir, user_home);
            plan_uninstall(agent, &path).map_or(true, |plan| plan.changes())
        })
        .collect()
}
