//! `harnery serve`'s first start offers the import: with sessions in the
//! agents' records that the ledger does not hold and no imported session
//! yet, it says how many and the command; once imported, it says nothing.

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;

use super::AgentDirs;

/// What `serve` says on stderr before it answers (it is then ended).
fn serve_stderr(agents: &AgentDirs, home: &std::path::Path) -> String {
    let mut child = agents
        .process(home)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("harnery serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("serve prints its URL");
    assert!(line.starts_with("harnery serve: http://"), "{line:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

#[test]
fn serve_offers_the_import_on_its_first_start_only() {
    let agents = AgentDirs::new();
    agents.claude_record("basic");
    agents.copilot_record("basic-shell-openai");
    let home = tempfile::tempdir().unwrap();
    let said = serve_stderr(&agents, home.path());
    assert!(said.contains("hold 2 session(s)"), "{said}");
    assert!(said.contains("`harnery import`"), "{said}");
    assert!(
        !said.contains("[y/N]"),
        "no question without a terminal: {said}"
    );

    agents.import_json(home.path(), &[]);
    agents.claude_record("tool-failure");
    let said = serve_stderr(&agents, home.path());
    assert!(!said.contains("harnery import"), "imported once: {said}");
}
