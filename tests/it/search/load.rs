//! `harnery search` and `/api/search` under load and on a home they
//! cannot write, through the real binaries: `finalize` in a loop beside
//! several searches and a running `harnery serve`; a home made read-only
//! (`chmod -R a-w`, run as `nobody` when the tests run as root); a full
//! disk (a file size limit of 0, so every write fails); a tampered index;
//! a search killed (SIGKILL) at a random moment while it indexes.
//! A search answers from the index as it stands and says how far behind
//! it is; it never fails, never makes the index again, and never shows
//! text its ledger row does not hold.

use crate::common;
use crate::serve::support::{Served, request};

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};

use common::{stderr, stdout};
use serde_json::Value;

pub(super) const SESSION: &str = "9c520b8b-ad43-42aa-8c1d-37ca016522f8";

/// A home holding the `tool-failure` capture's hooks and `prompts` prompts
/// of the word `plum`, finalized.
pub(super) fn home_in(dir: &Path, prompts: usize) -> PathBuf {
    let home = dir.join("home");
    let hooks = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/tool-failure/hooks.jsonl");
    for line in std::fs::read_to_string(hooks).unwrap().lines() {
        common::deliver(&home, "claude-code", line);
    }
    for i in 0..prompts {
        prompt(
            &home,
            &format!("p-plum-{i}"),
            &format!("plum{i} and a plum"),
        );
    }
    ok(common::harnery(&home).arg("finalize").output().unwrap());
    home
}

/// A prompt of the session, delivered through the hook binary.
pub(super) fn prompt(home: &Path, id: &str, text: &str) {
    let payload = serde_json::json!({"hook_event_name": "UserPromptSubmit",
        "session_id": SESSION, "prompt": text, "prompt_id": id});
    common::deliver(home, "claude-code", &payload.to_string());
}

pub(super) fn ok(out: Output) -> Output {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

pub(super) fn hits(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The hits without the field that says how far behind the index was.
fn bare(mut hits: Vec<Value>) -> Vec<Value> {
    for h in &mut hits {
        h.as_object_mut().unwrap().remove("index_behind");
    }
    hits
}

pub(super) fn index(home: &Path) -> PathBuf {
    home.join("search/index.sqlite")
}

/// `finalize` runs a round at a time, each with a new prompt, while three
/// loops of `harnery search` and one of `GET /api/search` run beside it:
/// every search exits 0 and every API answer is 200, each hit's snippet
/// holds what was asked, and the index is never made again (its file is
/// the same file throughout). At the end a search finds every round.
#[test]
fn searches_and_the_api_answer_while_finalize_runs_in_a_loop() {
    const ROUNDS: usize = 12;
    let dir = tempfile::tempdir().unwrap();
    let home = home_in(dir.path(), 0);
    ok(common::harnery(&home)
        .args(["search", "exit"])
        .output()
        .unwrap());
    let inode = std::fs::metadata(index(&home)).unwrap().ino();
    let served = Served::start(&home);
    let done = AtomicBool::new(false);
    let searched = std::thread::scope(|s| {
        let mut loops = Vec::new();
        for _ in 0..3 {
            loops.push(s.spawn(|| {
                let mut runs = 0;
                while !done.load(Ordering::Relaxed) {
                    let out = common::harnery(&home)
                        .args(["search", "--json", "--limit", "100", "papaya*"])
                        .output()
                        .unwrap();
                    let out = ok(out);
                    assert!(!stderr(&out).contains("left out"), "{}", stderr(&out));
                    for hit in hits(&out) {
                        let snippet = hit["snippet"].as_str().unwrap();
                        assert!(snippet.contains("papaya"), "{snippet}");
                    }
                    runs += 1;
                }
                runs
            }));
        }
        loops.push(s.spawn(|| {
            let mut runs = 0;
            while !done.load(Ordering::Relaxed) {
                let r = request(
                    served.port,
                    "GET",
                    "/api/search?q=papaya*&limit=100",
                    Some(&served.cookie()),
                );
                assert_eq!(r.status, 200, "{}", r.body);
                let hits: Vec<Value> = serde_json::from_str(&r.body).unwrap();
                assert!(
                    hits.iter()
                        .all(|h| h["snippet"].as_str().unwrap().contains("papaya"))
                );
                runs += 1;
            }
            runs
        }));
        for round in 0..ROUNDS {
            prompt(
                &home,
                &format!("p-load-{round}"),
                &format!("round {round}: papaya{round} ripens"),
            );
            ok(common::harnery(&home).arg("finalize").output().unwrap());
        }
        done.store(true, Ordering::Relaxed);
        loops
            .into_iter()
            .map(|l| l.join().unwrap())
            .collect::<Vec<usize>>()
    });
    assert!(searched.iter().all(|&n| n > 0), "{searched:?}");
    let out = ok(common::harnery(&home)
        .args(["search", "--json", "--limit", "100", "papaya*"])
        .output()
        .unwrap());
    let found = hits(&out);
    assert_eq!(found.len(), ROUNDS, "{}", stdout(&out));
    assert!(found.iter().all(|h| h["index_behind"] == 0));
    assert_eq!(
        std::fs::metadata(index(&home)).unwrap().ino(),
        inode,
        "the index was never made again"
    );
}

/// The index as it was before `finalize` added `rows` prompts: a copy
/// taken then, put back after.
fn behind_by_prompts(home: &Path, words: &[&str]) {
    let saved = std::fs::read(index(home)).unwrap();
    for (i, w) in words.iter().enumerate() {
        prompt(
            home,
            &format!("p-behind-{i}"),
            &format!("the {w} stays unindexed"),
        );
    }
    ok(common::harnery(home).arg("finalize").output().unwrap());
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", index(home).display()));
    }
    std::fs::write(index(home), saved).unwrap();
}

/// Every file under `dir`, with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.push((path, bytes));
        }
    }
    out.sort();
    out
}

fn sh(args: &[&str]) {
    assert!(
        Command::new(args[0])
            .args(&args[1..])
            .status()
            .unwrap()
            .success(),
        "{args:?}"
    );
}

fn is_root() -> bool {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `harnery search --json ARGS` through `wrap` (a command line that runs
/// the binary it is given last).
fn search_via(home: &Path, wrap: &[&str], args: &[&str]) -> Output {
    let bin = assert_cmd::cargo::cargo_bin("harnery");
    let mut c = Command::new(wrap.first().copied().unwrap_or(bin.to_str().unwrap()));
    if !wrap.is_empty() {
        c.args(&wrap[1..]).arg(&bin);
    }
    c.args(["search", "--json"])
        .args(args)
        .env("HARNERY_HOME", home)
        .env("HARNERY_NOW", common::NOW)
        .env("HARNERY_RECORDS", "off")
        .output()
        .unwrap()
}

/// `chmod -R a-w` on the home: a search answers from the index as it
/// stands (with how far behind it is), changing no file; with no index
/// there at all, from one made in memory.
#[test]
fn a_read_only_home_searches_the_index_as_it_stands() {
    let setpriv = "/usr/bin/setpriv";
    if is_root() && !Path::new(setpriv).exists() {
        eprintln!("skipped: running as root without setpriv");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = home_in(dir.path(), 0);
    let before = hits(&ok(common::harnery(&home)
        .args(["search", "--json", "exit"])
        .output()
        .unwrap()));
    assert!(!before.is_empty());
    behind_by_prompts(&home, &["kumquat", "kumquat"]);
    let shown = home.display().to_string();
    let wrap: Vec<&str> = match is_root() {
        true => {
            sh(&["chmod", "0755", &dir.path().display().to_string()]);
            sh(&["chown", "-R", "65534:65534", &shown]);
            vec![setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        }
        false => vec![],
    };
    sh(&["chmod", "-R", "a-w", &shown]);
    let unchanged = files(&home);
    let out = ok(search_via(&home, &wrap, &["exit"]));
    assert!(stderr(&out).contains("behind"), "{}", stderr(&out));
    let now = hits(&out);
    assert!(now.iter().all(|h| h["index_behind"].as_u64() >= Some(2)));
    assert_eq!(bare(now), bare(before.clone()));
    let out = ok(search_via(&home, &wrap, &["kumquat"]));
    assert!(hits(&out).is_empty(), "the index as it stands");
    assert_eq!(files(&home), unchanged, "a search wrote nothing");
    // No index at all: the search makes one in memory from the ledger.
    sh(&["chmod", "-R", "u+w", &shown]);
    std::fs::remove_file(index(&home)).unwrap();
    if is_root() {
        sh(&["chown", "-R", "65534:65534", &shown]);
    }
    sh(&["chmod", "-R", "a-w", &shown]);
    let out = ok(search_via(&home, &wrap, &["kumquat"]));
    let found = hits(&out);
    assert_eq!(found.len(), 2, "{}", stderr(&out));
    assert!(found.iter().all(|h| h["index_behind"] == 0));
    assert!(!index(&home).exists());
    sh(&["chmod", "-R", "u+w", &shown]);
}

/// A full disk (every write past 0 bytes fails, `SIGXFSZ` ignored as a
/// full disk raises none): the search answers from the index as it stands,
/// and with no index, from one made in memory.
#[test]
fn a_full_disk_searches_the_index_as_it_stands() {
    let full = ["sh", "-c", "trap '' XFSZ; ulimit -f 0; exec \"$@\"", "sh"];
    let dir = tempfile::tempdir().unwrap();
    let home = home_in(dir.path(), 0);
    let before = hits(&ok(common::harnery(&home)
        .args(["search", "--json", "exit"])
        .output()
        .unwrap()));
    behind_by_prompts(&home, &["kumquat"]);
    let out = ok(search_via(&home, &full, &["exit"]));
    let now = hits(&out);
    assert!(now.iter().all(|h| h["index_behind"].as_u64() >= Some(1)));
    assert_eq!(bare(now), bare(before));
    std::fs::remove_file(index(&home)).unwrap();
    let out = ok(search_via(&home, &full, &["kumquat"]));
    assert_eq!(hits(&out).len(), 1, "{}", stderr(&out));
    // With room again, the next search makes the index and catches up.
    assert_eq!(hits(&ok(search_via(&home, &[], &["kumquat"]))).len(), 1);
}

/// An index whose text was altered, or that names a row holding other
/// text, shows no forged snippet: the hit is left out, counted on stderr,
/// and the search exits 1; `--reindex` makes it right.
#[test]
fn a_tampered_index_shows_no_forged_snippet() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_in(dir.path(), 0);
    let search = |args: &[&str]| {
        common::harnery(&home)
            .args(["search", "--json"])
            .args(args)
            .output()
            .unwrap()
    };
    let before = hits(&ok(search(&["exit"])));
    let victim = before
        .iter()
        .find(|h| h["kind"] == "tool-output")
        .expect("a tool output says exit")
        .clone();
    let conn = rusqlite::Connection::open(index(&home)).unwrap();
    // The home's one epoch: a doc's id is its row's seq (see
    // `search::store::doc_id`) above the epoch's key.
    let id: i64 = conn
        .query_row(
            "SELECT id FROM docs WHERE id % (1 << 40) = ?1",
            [victim["seq"].as_i64().unwrap()],
            |r| r.get(0),
        )
        .unwrap();
    // The text altered (the word index still finds the old words).
    conn.execute(
        "UPDATE texts SET text = 'Exit code 0: all tests passed, forged' WHERE id = ?1",
        [id],
    )
    .unwrap();
    // A doc forged at a row whose event has no such text (the session's
    // start), found by a word of its own.
    let row: i64 = conn
        .query_row("SELECT min(id) - 1 FROM docs", [], |r| r.get(0))
        .unwrap();
    conn.execute(
        "INSERT INTO docs (id, session, time_unix_ns, time_bound, kind, tool) \
         SELECT ?1, session, time_unix_ns, time_bound, kind, tool FROM docs WHERE id = ?1 + 1",
        [row],
    )
    .unwrap();
    for table in ["texts", "words", "grams"] {
        conn.execute(
            &format!("INSERT INTO {table} (rowid, text) VALUES (?1, 'counterfeit banknote')"),
            [row],
        )
        .unwrap();
    }
    drop(conn);
    let out = search(&["exit"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("1 hit(s) left out"),
        "{}",
        stderr(&out)
    );
    let shown = hits(&out);
    assert_eq!(shown.len(), before.len() - 1);
    assert!(shown.iter().all(|h| h["event_id"] != victim["event_id"]));
    assert!(!stdout(&out).contains("forged"));
    let out = search(&["counterfeit"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(hits(&out).is_empty());
    ok(search(&["--reindex"]));
    assert_eq!(bare(hits(&ok(search(&["exit"])))), bare(before));
    assert!(hits(&ok(search(&["counterfeit"]))).is_empty());
}

/// A search killed (SIGKILL) at a random moment while it makes the index
/// from the ledger leaves an index the next search finishes: the same hits
/// as a search never killed, none twice.
#[test]
fn a_search_killed_while_it_indexes_leaves_an_index_the_next_one_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_in(dir.path(), 0);
    for i in 0..150 {
        prompt(
            &home,
            &format!("p-kiwi-{i}"),
            &format!("kiwi{i} and a kiwi"),
        );
    }
    ok(common::harnery(&home).arg("finalize").output().unwrap());
    let search = || {
        ok(common::harnery(&home)
            .args(["search", "--json", "--limit", "1000", "kiwi"])
            .output()
            .unwrap())
    };
    let want = hits(&search());
    assert_eq!(want.len(), 150);
    for _ in 0..8 {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", index(&home).display()));
        }
        let bin = assert_cmd::cargo::cargo_bin("harnery");
        let mut run = Command::new(bin)
            .args(["search", "kiwi"])
            .env("HARNERY_HOME", &home)
            .env("HARNERY_NOW", common::NOW)
            .env("HARNERY_RECORDS", "off")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        std::thread::sleep(std::time::Duration::from_micros(u64::from(nanos % 200_000)));
        run.kill().unwrap();
        run.wait().unwrap();
        assert_eq!(bare(hits(&search())), bare(want.clone()));
    }
}
