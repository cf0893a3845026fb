//! An imported session ships to the fleet as what it is: class
//! `imported` (the central schema's migration `imported_class`).

use super::AgentDirs;
use crate::common::{self, stderr, stdout};
use crate::fleet::support::PgServer;

#[test]
fn an_imported_session_ships_as_imported() {
    let pg = PgServer::start();
    let target = pg.database("imported");
    let agents = AgentDirs::new();
    let id = agents.claude_record("basic");
    let home = tempfile::tempdir().unwrap();
    agents.import_json(home.path(), &[]);
    let out = common::run(home.path(), &["ship", "--to", &target]);
    assert!(out.status.success(), "ship: {}", stderr(&out));
    let out = common::harnery(std::path::Path::new("/nonexistent-harnery-home"))
        .args(["fleet", "sessions", "--from", &target, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let row = rows
        .iter()
        .find(|r| r.to_string().contains(&id))
        .unwrap_or_else(|| panic!("{id} in {rows:?}"));
    assert!(row.to_string().contains("\"imported\""), "{row}");
}
