//! `harnery install <agent> --mcp`: register `harnery mcp` as an MCP
//! server in the agent's own MCP configuration, and take it out again
//! (`uninstall --mcp`), leaving every other server and key as it was.
//!
//! Where the real clients read (probed with each client's own `mcp add`
//! in a scratch home; docs/guide/mcp.md):
//!
//! - Claude Code, user scope: `mcpServers` of `~/.claude.json`, or of
//!   `$CLAUDE_CONFIG_DIR/.claude.json` when that variable is set; project
//!   scope: `<project>/.mcp.json`. Entry: `{"type": "stdio", "command",
//!   "args": ["mcp"], "env": {}}`.
//! - Copilot CLI, user scope: `mcpServers` of `~/.copilot/mcp-config.json`,
//!   or `$COPILOT_HOME/mcp-config.json`; repo scope:
//!   `<repo>/.github/mcp.json`. Entry: `{"type": "local", "command",
//!   "args": ["mcp"], "tools": ["*"]}`.
//!
//! The entry is named `harnery`; it is harnery's when its command names a
//! file called `harnery` and its arguments are `["mcp"]`. A `harnery`
//! entry that is not (the user's own server of that name) is never
//! overwritten nor removed.

use std::path::{Path, PathBuf};

use super::json::Json;
use super::{Agent, AgentDir, InstallError, Plan, parse, read_optional, shape};

/// The server's name in the agents' configurations.
pub const SERVER_NAME: &str = "harnery";

/// The file that holds `agent`'s MCP servers in the user scope (`user`)
/// or the project's; only Claude Code and Copilot are configured here.
pub fn mcp_file(
    agent: Agent,
    user: bool,
    user_home: &Path,
    project: Option<&Path>,
) -> Result<PathBuf, InstallError> {
    let project = || match project {
        Some(p) => Ok(p.to_path_buf()),
        None => std::env::current_dir().map_err(|source| InstallError::Io {
            path: PathBuf::from("."),
            source,
        }),
    };
    match (agent, user) {
        (Agent::ClaudeCode, true) => {
            let dir = AgentDir::from_env(agent, user_home);
            Ok(match dir.moved_by {
                Some(_) => dir.dir.join(".claude.json"),
                None => user_home.join(".claude.json"),
            })
        }
        (Agent::ClaudeCode, false) => Ok(project()?.join(".mcp.json")),
        (Agent::Copilot, true) => Ok(AgentDir::from_env(agent, user_home)
            .dir
            .join("mcp-config.json")),
        (Agent::Copilot, false) => Ok(project()?.join(".github").join("mcp.json")),
        (other, _) => Err(InstallError::NoMcp(other)),
    }
}

/// Plan registering `harnery_bin mcp` in `path`: the `harnery` entry
/// added or brought up to date; nothing else changes. `harnery_home` (the
/// `HARNERY_HOME` install ran with) goes into the entry's environment, so
/// the server reads the same home whatever environment the client passes.
pub fn plan_install(
    agent: Agent,
    path: &Path,
    harnery_bin: &Path,
    harnery_home: Option<&Path>,
) -> Result<Plan, InstallError> {
    let before = read_optional(path)?;
    let mut doc = parse(path, before.as_deref())?;
    let servers = servers(path, &mut doc)?;
    if let Some(theirs) = servers.get(SERVER_NAME).filter(|e| !is_ours(e)) {
        return Err(shape(
            path,
            &format!(
                "mcpServers.{SERVER_NAME} is another server ({}); rename it first",
                command_of(theirs).unwrap_or("no command")
            ),
        ));
    }
    servers.set(SERVER_NAME, entry(agent, harnery_bin, harnery_home));
    Ok(Plan {
        path: path.to_path_buf(),
        before,
        after: Some(doc.pretty()),
    })
}

/// Plan removing harnery's entry from `path` (a file left holding nothing
/// but an empty `mcpServers` is removed).
pub fn plan_uninstall(path: &Path) -> Result<Plan, InstallError> {
    let before = read_optional(path)?;
    let same = Plan {
        path: path.to_path_buf(),
        before: before.clone(),
        after: before.clone(),
    };
    let Some(text) = before.as_deref() else {
        return Ok(same);
    };
    let mut doc = parse(path, Some(text))?;
    let Some(Json::Object(servers)) = doc.get_mut("mcpServers") else {
        return Ok(same);
    };
    let Some(at) = servers
        .iter()
        .position(|(k, v)| k == SERVER_NAME && is_ours(v))
    else {
        return Ok(same);
    };
    servers.remove(at);
    let empty = matches!(&doc, Json::Object(kv)
        if kv.len() == 1 && kv[0].0 == "mcpServers" && kv[0].1 == Json::Object(Vec::new()));
    Ok(Plan {
        after: (!empty).then(|| doc.pretty()),
        ..same
    })
}

/// `mcpServers` of `doc`, made when missing.
fn servers<'a>(path: &Path, doc: &'a mut Json) -> Result<&'a mut Json, InstallError> {
    if doc.get("mcpServers").is_none() {
        doc.set("mcpServers", Json::Object(Vec::new()));
    }
    match doc.get_mut("mcpServers") {
        Some(s @ Json::Object(_)) => Ok(s),
        _ => Err(shape(path, "mcpServers is not a JSON object")),
    }
}

/// The entry each client reads.
fn entry(agent: Agent, harnery_bin: &Path, harnery_home: Option<&Path>) -> Json {
    let s = |t: &str| Json::String(t.to_owned());
    let command = s(&harnery_bin.to_string_lossy());
    let args = Json::Array(vec![s("mcp")]);
    let env = Json::Object(
        harnery_home
            .map(|h| ("HARNERY_HOME".to_owned(), s(&h.to_string_lossy())))
            .into_iter()
            .collect(),
    );
    let mut fields = match agent {
        Agent::Copilot => vec![
            ("type".into(), s("local")),
            ("command".into(), command),
            ("args".into(), args),
            ("tools".into(), Json::Array(vec![s("*")])),
        ],
        _ => vec![
            ("type".into(), s("stdio")),
            ("command".into(), command),
            ("args".into(), args),
        ],
    };
    // Claude Code's own `mcp add` always writes `env`; Copilot's only when
    // there is some.
    if agent != Agent::Copilot || harnery_home.is_some() {
        fields.push(("env".into(), env));
    }
    Json::Object(fields)
}

fn command_of(entry: &Json) -> Option<&str> {
    entry.get("command").and_then(Json::as_str)
}

/// Whether a server entry is harnery's: its command a file called
/// `harnery`, its arguments `["mcp"]`.
fn is_ours(entry: &Json) -> bool {
    let named = command_of(entry)
        .and_then(|c| Path::new(c).file_name())
        .is_some_and(|n| n == "harnery");
    named && entry.get("args") == Some(&Json::Array(vec![Json::String("mcp".into())]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(plan: &Plan) -> String {
        plan.after.clone().unwrap_or_default()
    }

    #[test]
    fn install_keeps_other_servers_and_keys_and_twice_is_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude.json");
        let before = r#"{"zeta": 1, "mcpServers": {"other": {"command": "x"}}, "alpha": [true]}"#;
        std::fs::write(&path, before).unwrap();
        let bin = Path::new("/opt/bin/harnery");
        let once = plan_install(Agent::ClaudeCode, &path, bin, None).unwrap();
        let doc = Json::parse(&after(&once)).unwrap();
        let servers = doc.get("mcpServers").unwrap();
        assert!(servers.get("other").is_some());
        assert!(is_ours(servers.get(SERVER_NAME).unwrap()));
        let keys: Vec<&str> = match &doc {
            Json::Object(kv) => kv.iter().map(|(k, _)| k.as_str()).collect(),
            _ => vec![],
        };
        assert_eq!(keys, ["zeta", "mcpServers", "alpha"]);
        std::fs::write(&path, after(&once)).unwrap();
        let twice = plan_install(Agent::ClaudeCode, &path, bin, None).unwrap();
        assert!(!twice.changes());
        let gone = plan_uninstall(&path).unwrap();
        let doc = Json::parse(&after(&gone)).unwrap();
        assert!(doc.get("mcpServers").unwrap().get(SERVER_NAME).is_none());
        assert!(doc.get("mcpServers").unwrap().get("other").is_some());
    }

    #[test]
    fn a_users_own_harnery_server_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-config.json");
        let theirs =
            r#"{"mcpServers": {"harnery": {"command": "/usr/bin/python3", "args": ["x.py"]}}}"#;
        std::fs::write(&path, theirs).unwrap();
        let err = plan_install(Agent::Copilot, &path, Path::new("/b/harnery"), None).unwrap_err();
        assert!(err.to_string().contains("another server"), "{err}");
        assert!(!plan_uninstall(&path).unwrap().changes());
    }

    #[test]
    fn a_file_left_empty_is_removed_and_other_agents_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-config.json");
        let plan = plan_install(Agent::Copilot, &path, Path::new("/b/harnery"), None).unwrap();
        assert!(after(&plan).contains("\"local\""));
        std::fs::write(&path, after(&plan)).unwrap();
        assert_eq!(plan_uninstall(&path).unwrap().after, None);
        let err = mcp_file(Agent::Codex, true, dir.path(), None).unwrap_err();
        assert!(err.to_string().contains("claude-code and copilot"), "{err}");
    }
}
