//! On a terminal `harnery import` draws its progress on stderr (the
//! sessions it names, then the events it reads); with `--json` it draws
//! nothing.

use super::AgentDirs;
use crate::common;

/// `harnery args…` under a pseudo-terminal (util-linux `script`): what
/// the terminal showed.
fn on_a_terminal(agents: &AgentDirs, home: &std::path::Path, args: &str) -> String {
    let bin = assert_cmd::cargo::cargo_bin("harnery");
    let line = format!("{} {args}", bin.display());
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("HARNERY_HOME", home)
        .env("HARNERY_NOW", common::NOW)
        .env("TERM", "xterm")
        .env_remove("HARNERY_RECORDS");
    common::without_installed_agents(&mut cmd, agents.user.path());
    let out = cmd.output().expect("util-linux `script` runs");
    assert!(out.status.success(), "{line}: {}", common::stdout(&out));
    common::stdout(&out)
}

#[test]
fn a_terminal_gets_progress_and_json_gets_none() {
    let agents = AgentDirs::new();
    let bytes = std::fs::read(super::fixture("claude-code/parallel.jsonl")).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    let from = agents.claude_record("parallel");
    for i in 0..60 {
        let id = format!("{i:08x}-1111-4000-8000-000000000000");
        agents.write_claude(&id, text.replace(&from, &id).as_bytes());
    }
    let home = tempfile::tempdir().unwrap();
    let shown = on_a_terminal(&agents, home.path(), "import");
    assert!(
        shown.contains("sessions (") || shown.contains("events ("),
        "{shown:?}"
    );
    assert!(shown.contains("61 session(s) imported"), "{shown:?}");
    let home = tempfile::tempdir().unwrap();
    let json = on_a_terminal(&agents, home.path(), "import --json");
    assert!(!json.contains("sessions ("), "{json:?}");
    assert!(
        !json.contains('\u{1b}'),
        "no escape sequences with --json: {json:?}"
    );
}
