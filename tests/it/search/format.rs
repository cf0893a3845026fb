//! An index of an earlier format, through the real binaries: the real
//! file the previous build wrote (format 5, kept in the generation 11
//! epoch fixture's home) is made again by the first search or `finalize`
//! that opens it, with the hits an index made from nothing gives; and
//! searches, `/api/search` and `finalize` started at once over such a file
//! all answer while one of them makes it again.

use super::load::{SESSION, hits, home_in, index, ok, prompt};
use crate::common;
use crate::serve::support::{Served, request};

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};

use common::stderr;
use serde_json::Value;

/// The index the previous format's build wrote (`harnery-search-5`), for
/// another ledger than the tests': both reasons to make it again.
fn format_5_index() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/epoch/gen11/home/search/index.sqlite")
}

fn search(home: &Path, args: &[&str]) -> Output {
    common::harnery(home)
        .args(["search", "--json"])
        .args(args)
        .output()
        .unwrap()
}

/// The index file replaced by the previous format's.
fn put_format_5(home: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index(home).display()));
    }
    std::fs::copy(format_5_index(), index(home)).unwrap();
    assert_eq!(format_of(home), "harnery-search-5");
}

fn format_of(home: &Path) -> String {
    rusqlite::Connection::open(index(home))
        .unwrap()
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get(0)
        })
        .unwrap()
}

/// Searches of every kind of query and filter, each as `--json` lines.
fn answers(home: &Path) -> Vec<Vec<Value>> {
    let queries: [&[&str]; 6] = [
        &["exit", "--limit", "100"],
        &["plum*", "--limit", "100", "--sort", "time"],
        &["exit", "--failed"],
        &["echo", "--kind", "tool-input"],
        &["exit", "--session", SESSION, "--tool", "bash"],
        &["*lum1", "--limit", "100"],
    ];
    queries.iter().map(|q| hits(&ok(search(home, q)))).collect()
}

#[test]
fn an_index_of_the_previous_format_is_made_again_by_a_search_with_the_same_hits() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_in(dir.path(), 12);
    let want = answers(&home);
    assert!(want.iter().all(|hits| !hits.is_empty()), "{want:?}");
    put_format_5(&home);
    let out = ok(search(&home, &["exit", "--limit", "100"]));
    assert_eq!(stderr(&out), "", "made again silently");
    assert_eq!(format_of(&home), harnery::search::FORMAT);
    assert_eq!(answers(&home), want);
}

#[test]
fn an_index_of_the_previous_format_is_made_again_by_finalize() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_in(dir.path(), 12);
    let want = answers(&home);
    put_format_5(&home);
    ok(common::harnery(&home).arg("finalize").output().unwrap());
    assert_eq!(format_of(&home), harnery::search::FORMAT);
    // Made whole before any search catches up.
    let docs: i64 = rusqlite::Connection::open(index(&home))
        .unwrap()
        .query_row("SELECT count(*) FROM docs", [], |r| r.get(0))
        .unwrap();
    assert!(docs >= 12, "{docs}");
    assert_eq!(answers(&home), want);
}

/// Over an index of the previous format, four loops of `harnery search`,
/// one of `GET /api/search` and a `finalize` run with a new prompt start
/// at once: one of them makes the index again while the others search
/// the index as it stands (a part of it, or one in memory), so every
/// search exits 0 and every answer is 200, and no hit shows text its
/// ledger row does not hold. Then a search finds every prompt.
#[test]
fn searches_answer_while_an_index_of_the_previous_format_is_made_again() {
    const PROMPTS: usize = 300;
    const ROUNDS: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let home = home_in(dir.path(), PROMPTS);
    let served = Served::start(&home);
    for round in 0..ROUNDS {
        put_format_5(&home);
        let start = Barrier::new(6);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let mut loops = Vec::new();
            for _ in 0..4 {
                loops.push(s.spawn(|| {
                    start.wait();
                    let mut runs = 0;
                    while runs == 0 || !done.load(Ordering::Relaxed) {
                        let out = ok(search(&home, &["--limit", "1000", "plum*"]));
                        assert!(!stderr(&out).contains("left out"), "{}", stderr(&out));
                        for hit in hits(&out) {
                            let snippet = hit["snippet"].as_str().unwrap();
                            assert!(snippet.contains("plum"), "{snippet}");
                        }
                        runs += 1;
                    }
                }));
            }
            loops.push(s.spawn(|| {
                start.wait();
                let mut runs = 0;
                while runs == 0 || !done.load(Ordering::Relaxed) {
                    let r = request(
                        served.port,
                        "GET",
                        "/api/search?q=plum*&limit=1000",
                        Some(&served.cookie()),
                    );
                    assert_eq!(r.status, 200, "{}", r.body);
                    let hits: Vec<Value> = serde_json::from_str(&r.body).unwrap();
                    assert!(
                        hits.iter()
                            .all(|h| h["snippet"].as_str().unwrap().contains("plum"))
                    );
                    runs += 1;
                }
            }));
            prompt(
                &home,
                &format!("p-late-{round}"),
                &format!("a late plum{round}"),
            );
            start.wait();
            ok(common::harnery(&home).arg("finalize").output().unwrap());
            done.store(true, Ordering::Relaxed);
            for l in loops {
                l.join().unwrap();
            }
        });
        let out = ok(search(&home, &["--limit", "1000", "plum*"]));
        let found = hits(&out);
        assert_eq!(found.len(), PROMPTS + round + 1, "{}", stderr(&out));
        assert!(found.iter().all(|h| h["index_behind"] == 0));
        assert_eq!(format_of(&home), harnery::search::FORMAT);
    }
}

/// Indexed a row per transaction, FTS5 merges many small segments and
/// frees their pages; each catch-up gives them back, so the file keeps no
/// free page (and says it can give them back: incremental auto-vacuum).
#[test]
fn an_index_made_in_small_batches_keeps_no_free_page() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_in(dir.path(), 0);
    // Texts of many words each: a segment spans pages.
    for i in 0..60 {
        let words: Vec<String> = (0..300).map(|j| format!("w{i}x{j}")).collect();
        prompt(&home, &format!("p-long-{i}"), &words.join(" "));
    }
    ok(common::harnery(&home).arg("finalize").output().unwrap());
    let want = answers(&home);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index(&home).display()));
    }
    let lib = harnery::home::Home::at(&home);
    let sizes = harnery::search::Sizes {
        batch: 1,
        handoff: 1,
    };
    let read = harnery::search::update_live_sized(&lib, u64::MAX, sizes).unwrap();
    assert!(read > 60, "{read}");
    let conn = rusqlite::Connection::open(index(&home)).unwrap();
    let pragma = |name: &str| -> i64 {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(pragma("auto_vacuum"), 2, "incremental");
    assert_eq!(pragma("freelist_count"), 0);
    drop(conn);
    assert_eq!(answers(&home), want);
}
