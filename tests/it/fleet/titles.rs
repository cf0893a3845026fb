//! Sessions' titles and projects in the fleet: shipped with the derived
//! session rows as `--content` says (as recorded, masked, or not at all),
//! read back by `fleet sessions` and carried by `fleet search` hits and
//! the local search's.

use std::path::Path;

use crate::common;
use crate::fleet::support::{PgServer, fleet, ship_ok};
use crate::report::titles::{prompt, started};

use common::*;

const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

/// A home with one session: its cwd in a repository, its first prompt
/// naming a token.
fn home_with_a_title(places: &Path) -> tempfile::TempDir {
    let repo = places.join("src/shop");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let home = tempfile::tempdir().unwrap();
    inject(
        home.path(),
        "b1",
        vec![
            started("titled", 0, &repo),
            prompt(
                "titled",
                1,
                &format!("deploy the banana service with {TOKEN}"),
            ),
        ],
    );
    let out = run(home.path(), &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
    home
}

fn fleet_json(target: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = fleet(None, target, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn titles_and_projects_ship_as_the_content_flag_says() {
    let pg = PgServer::start();
    let places = tempfile::tempdir().unwrap();
    let project = places.path().join("src/shop");
    let project = project.to_str().unwrap();
    let mut seen = Vec::new();
    for content in ["masked", "full", "none"] {
        let target = pg.database(&format!("titles_{content}"));
        let home = home_with_a_title(places.path());
        ship_ok(home.path(), &target, &["--content", content]);
        let rows = fleet_json(&target, &["sessions", "--json"]);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let (title, shipped_project) = (&rows[0]["title"], &rows[0]["project"]);
        match content {
            "masked" => {
                let t = title.as_str().unwrap();
                assert!(
                    t.starts_with("deploy the banana service with [masked:"),
                    "{t}"
                );
                assert!(!t.contains(TOKEN), "{t}");
                assert_eq!(shipped_project, project);
                assert!(!pg.pg_dump(&format!("titles_{content}")).contains(TOKEN));
            }
            "full" => {
                assert_eq!(
                    title.as_str().unwrap(),
                    format!("deploy the banana service with {TOKEN}")
                );
                assert_eq!(shipped_project, project);
            }
            _ => {
                assert!(title.is_null() && shipped_project.is_null(), "{rows:?}");
            }
        }
        // The text line names them too.
        let out = fleet(None, &target, &["sessions"]);
        let text = stdout(&out);
        assert_eq!(text.contains("project "), content != "none", "{text}");
        if content != "none" {
            // A hit in the fleet carries its session's title, as shipped.
            let hits = fleet_json(&target, &["search", "--json", "banana"]);
            assert!(!hits.is_empty(), "{content}: no hit");
            for h in &hits {
                assert_eq!(&h["title"], title, "{h}");
                assert_eq!(h["project"], project, "{h}");
            }
        }
        seen.push(home);
    }
    // A local hit carries the title as recorded.
    let local = run(seen[0].path(), &["search", "--json", "banana"]);
    assert!(local.status.success(), "{}", stderr(&local));
    let hit: serde_json::Value =
        serde_json::from_str(stdout(&local).lines().next().expect("a hit")).unwrap();
    assert_eq!(
        hit["title"],
        format!("deploy the banana service with {TOKEN}")
    );
    assert_eq!(hit["project"], project);
    let text = stdout(&run(seen[0].path(), &["search", "banana"]));
    assert!(text.contains("deploy the banana service"), "{text}");
}
