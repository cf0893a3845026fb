//! `harnery install claude-code|copilot --mcp` in scratch homes: `harnery
//! mcp` registered where each real client reads its MCP servers (probed
//! with the clients' own `mcp add`: `~/.claude.json` or
//! `$CLAUDE_CONFIG_DIR/.claude.json`; `~/.copilot/mcp-config.json` or
//! `$COPILOT_HOME/mcp-config.json`), the user's other servers and keys
//! kept, twice equal to once, and `uninstall --mcp` removing only ours.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

/// `harnery args` in the scratch home, as the round-trip tests run it.
fn harnery(home: &Path, args: &[&str], vars: &[(&str, &Path)]) -> Output {
    super::roundtrip::harnery_with(home, home, args, vars)
}

fn ok(home: &Path, args: &[&str], vars: &[(&str, &Path)]) -> String {
    let out = harnery(home, args, vars);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The user's file before harnery: other keys, another server.
fn users_file(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let doc = json!({
        "numStartups": 3,
        "mcpServers": {"weather": {"type": "stdio", "command": "/usr/bin/weather", "args": []}},
        "projects": {"/work": {"allowedTools": []}},
    });
    std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

#[test]
fn claude_code_reads_harnery_mcp_from_claude_json_and_uninstall_takes_only_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let file = home.join(".claude.json");
    users_file(&file);
    let said = ok(home, &["install", "claude-code", "--mcp"], &[]);
    assert!(said.contains("mcp server harnery registered"), "{said}");
    let doc = read(&file);
    let ours = &doc["mcpServers"]["harnery"];
    assert_eq!(ours["type"], "stdio");
    assert_eq!(ours["args"], json!(["mcp"]));
    assert_eq!(ours["env"], json!({}));
    let command = ours["command"].as_str().unwrap();
    assert!(
        Path::new(command).is_absolute() && command.ends_with("/harnery"),
        "{command}"
    );
    assert_eq!(doc["mcpServers"]["weather"]["command"], "/usr/bin/weather");
    assert_eq!(doc["numStartups"], 3);
    // The hooks are installed as always.
    assert!(home.join(".claude/settings.json").is_file());

    let text = std::fs::read_to_string(&file).unwrap();
    let again = ok(home, &["install", "claude-code", "--mcp"], &[]);
    assert!(again.contains("already up to date"), "{again}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    ok(home, &["uninstall", "claude-code", "--mcp"], &[]);
    let doc = read(&file);
    assert!(doc["mcpServers"].get("harnery").is_none(), "{doc}");
    assert_eq!(doc["mcpServers"]["weather"]["command"], "/usr/bin/weather");
    assert!(doc["projects"]["/work"].is_object());
    // uninstall --mcp leaves the hooks.
    let settings = std::fs::read_to_string(home.join(".claude/settings.json")).unwrap();
    assert!(settings.contains("harnery-hook"));
}

#[test]
fn claude_config_dir_moves_the_file_and_a_project_gets_mcp_json() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let config = home.join("elsewhere");
    std::fs::create_dir_all(&config).unwrap();
    let harnery_home = home.join("hh");
    ok(
        home,
        &["install", "claude-code", "--mcp"],
        &[
            ("CLAUDE_CONFIG_DIR", &config),
            ("HARNERY_HOME", &harnery_home),
        ],
    );
    let ours = &read(&config.join(".claude.json"))["mcpServers"]["harnery"];
    assert_eq!(ours["args"], json!(["mcp"]));
    // The home install ran with is the server's too.
    assert_eq!(ours["env"]["HARNERY_HOME"], harnery_home.to_str().unwrap());
    assert!(!home.join(".claude.json").exists());

    let project = home.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let p = project.to_str().unwrap();
    ok(
        home,
        &[
            "install",
            "claude-code",
            "--scope",
            "project",
            "--project-dir",
            p,
            "--mcp",
        ],
        &[],
    );
    assert_eq!(
        read(&project.join(".mcp.json"))["mcpServers"]["harnery"]["type"],
        "stdio"
    );
    ok(
        home,
        &[
            "uninstall",
            "claude-code",
            "--scope",
            "project",
            "--project-dir",
            p,
            "--mcp",
        ],
        &[],
    );
    // The file held only our entry: it is gone.
    assert!(!project.join(".mcp.json").exists());
}

#[test]
fn copilot_reads_harnery_mcp_from_mcp_config_json() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let file = home.join(".copilot/mcp-config.json");
    users_file(&file);
    ok(home, &["install", "copilot", "--mcp"], &[]);
    let doc = read(&file);
    let ours = &doc["mcpServers"]["harnery"];
    assert_eq!(ours["type"], "local");
    assert_eq!(ours["tools"], json!(["*"]));
    assert_eq!(ours["args"], json!(["mcp"]));
    assert!(ours.get("env").is_none(), "{ours}");
    assert!(doc["mcpServers"]["weather"].is_object());
    ok(home, &["uninstall", "copilot", "--mcp"], &[]);
    let doc = read(&file);
    assert!(doc["mcpServers"].get("harnery").is_none() && doc["mcpServers"]["weather"].is_object());

    let moved = home.join("copilot-home");
    std::fs::create_dir_all(&moved).unwrap();
    ok(
        home,
        &["install", "copilot", "--mcp"],
        &[("COPILOT_HOME", &moved)],
    );
    assert_eq!(
        read(&moved.join("mcp-config.json"))["mcpServers"]["harnery"]["type"],
        "local"
    );
}

#[test]
fn another_servers_harnery_name_and_other_agents_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let file = home.join(".claude.json");
    let theirs = r#"{"mcpServers": {"harnery": {"command": "/usr/bin/node", "args": ["x.js"]}}}"#;
    std::fs::write(&file, theirs).unwrap();
    let out = harnery(home, &["install", "claude-code", "--mcp"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another server"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), theirs);
    ok(home, &["uninstall", "claude-code", "--mcp"], &[]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), theirs);

    let out = harnery(home, &["install", "codex", "--mcp"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("claude-code and copilot") && err.contains("mcp.md"),
        "{err}"
    );
}
