#![cfg(feature = "failpoints")]
//! `harnery search` and `harnery show --at` through the real binaries, over
//! a real finalized home: the `tool-failure` corpus session's hooks through
//! the real hook binary, its transcript (the agent's own record, one
//! assistant line given a thinking block here, as the corpus has no
//! reasoning text) where the hooks say it is, and a failing `harnery exec`
//! command. Expectations come from the fixture's text, never from
//! harnery's output.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{next, stderr, stdout};
use serde_json::Value;

const SESSION: &str = "9c520b8b-ad43-42aa-8c1d-37ca016522f8";
const THINKING: &str = "Maybe the useEffect hook in src/ledger/chain.rs matters here";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A finalized home holding the session, its record and an exec command.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
}

impl Home {
    /// The home with its signals spooled and nothing finalized yet.
    fn spooled() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let records = dir.path().join("claude/projects/-proj");
        std::fs::create_dir_all(&records).unwrap();
        let transcript = records.join(format!("{SESSION}.jsonl"));
        write_transcript(&transcript);
        let hooks = fixtures().join("claude-code/tool-failure/hooks.jsonl");
        for line in std::fs::read_to_string(hooks).unwrap().lines() {
            let mut payload: Value = serde_json::from_str(line).unwrap();
            payload["transcript_path"] = Value::String(transcript.display().to_string());
            common::deliver(&home, "claude-code", &payload.to_string());
        }
        let h = Home { _dir: dir, home };
        let exec = h.run(&[
            "exec",
            "--session",
            SESSION,
            "--adapter",
            "claude-code",
            "--",
            "sh",
            "-c",
            "echo deploy-banana; exit 4",
        ]);
        assert_eq!(exec.status.code(), Some(4), "{}", stderr(&exec));
        h
    }

    fn build() -> Home {
        let h = Home::spooled();
        h.ok(&["finalize"]);
        h
    }

    fn run(&self, args: &[&str]) -> Output {
        common::harnery(&self.home)
            .env("HARNERY_RECORDS", "on")
            .env("NO_COLOR", "1")
            .args(args)
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        out
    }

    /// `harnery search --json ARGS`, parsed.
    fn search(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["search", "--json"];
        all.extend_from_slice(args);
        lines_of(&self.ok(&all))
    }

    fn index(&self) -> PathBuf {
        self.home.join("search/index.sqlite")
    }
}

fn lines_of(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The corpus transcript, its last assistant line given a thinking block.
fn write_transcript(to: &Path) {
    let from = fixtures().join("records/claude-code/tool-failure.jsonl");
    let text = std::fs::read_to_string(from).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = lines
        .iter_mut()
        .rev()
        .find(|l| l["type"] == "assistant")
        .unwrap();
    let content = last["message"]["content"].as_array_mut().unwrap();
    content.insert(
        0,
        serde_json::json!({"type": "thinking", "thinking": THINKING, "signature": "sig"}),
    );
    let out: Vec<String> = lines.iter().map(Value::to_string).collect();
    std::fs::write(to, out.join("\n") + "\n").unwrap();
}

/// A kind of text, the event types that hold it, and (query, a text the
/// hit must mark) for a word, a phrase and a substring.
type Case = (
    &'static str,
    &'static [&'static str],
    [(&'static str, &'static str); 3],
);

/// The marked text of each match of a hit.
fn marked(hit: &Value) -> Vec<String> {
    let snippet = hit["snippet"].as_str().unwrap();
    hit["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let (a, b) = (m[0].as_u64().unwrap(), m[1].as_u64().unwrap());
            snippet[a as usize..b as usize].to_lowercase()
        })
        .collect()
}

#[test]
fn every_kind_is_found_by_a_word_a_phrase_and_a_substring() {
    let h = Home::build();
    // kind, event type, then (query, a text it must mark) for a word, a
    // phrase and a substring, from the fixture's own text.
    let cases: &[Case] = &[
        (
            "prompt",
            &["prompt.submitted", "message.user"],
            [
                ("failing", "failing"),
                ("\"run a failing\"", "run"),
                ("scenario:tool", "scenario:tool"),
            ],
        ),
        (
            "message",
            &["message.assistant", "message.displayed"],
            [
                ("failed", "failed"),
                ("\"failed with exit\"", "with"),
                ("*ailed", "ailed"),
            ],
        ),
        (
            "reasoning",
            &["reasoning.recorded"],
            [
                ("matters", "matters"),
                ("\"useeffect hook\"", "useeffect"),
                ("src/ledger", "src/ledger"),
            ],
        ),
        (
            "tool-input",
            &["tool.requested"],
            [
                ("echo", "echo"),
                ("\"fail with exit\"", "fail"),
                ("\"err >&2\"", "err >&2"),
            ],
        ),
        (
            "tool-output",
            &["tool.completed"],
            [("out", "out"), ("\"exit code 3\"", "code"), ("*xit", "xit")],
        ),
        (
            "command",
            &["command.requested"],
            [
                ("banana", "banana"),
                ("\"deploy banana\"", "deploy"),
                ("deploy-banana", "deploy-banana"),
            ],
        ),
    ];
    for (kind, types, queries) in cases {
        for (query, mark) in queries {
            let hits = h.search(&["--kind", kind, query]);
            assert!(!hits.is_empty(), "{kind} {query}: no hit");
            for hit in &hits {
                assert_eq!(hit["kind"], *kind, "{query}");
                assert!(
                    types.contains(&hit["event_type"].as_str().unwrap()),
                    "{hit}"
                );
                assert_eq!(hit["session"]["session_id"], SESSION);
            }
            assert!(
                hits.iter().any(|hit| marked(hit).iter().any(|m| m == mark)),
                "{kind} {query}: {mark:?} not marked in {hits:?}"
            );
        }
    }
    // Words and substrings together: both must match, each is marked.
    let both = h.search(&["echo", "\"err >&2\""]);
    assert!(!both.is_empty());
    for hit in &both {
        let marks = marked(hit);
        assert!(
            marks.iter().any(|m| m == "echo") && marks.iter().any(|m| m == "err >&2"),
            "{hit}"
        );
    }
    assert!(h.search(&["banana", "\"err >&2\""]).is_empty());
    // Without --kind, a word is found in every kind that holds it.
    let kinds: Vec<String> = h
        .search(&["exit", "--limit", "100"])
        .iter()
        .map(|hit| hit["kind"].as_str().unwrap().to_string())
        .collect();
    for kind in ["message", "tool-input", "tool-output", "command"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
}

#[test]
fn filters_combine() {
    let h = Home::build();
    let all = h.search(&["exit", "--limit", "100"]);
    let failed = h.search(&["exit", "--failed", "--limit", "100"]);
    assert!(!failed.is_empty() && failed.len() < all.len());
    for hit in &failed {
        assert_eq!(hit["outcome"], "failure", "{hit}");
    }
    // The Bash call failed (exit 3), and so did the exec command (exit 4).
    let bash = h.search(&[
        "exit",
        "--failed",
        "--tool",
        "bash",
        "--kind",
        "tool-input,tool-output",
        "--session",
        "9c52",
        "--adapter",
        "claude-code",
    ]);
    assert_eq!(bash.len(), 2, "{bash:?}");
    assert!(bash.iter().all(|hit| hit["tool"] == "Bash"));
    assert_eq!(bash[0]["span_state"], "closed_native");
    let command = h.search(&["exit", "--failed", "--kind", "command"]);
    assert_eq!(command.len(), 1);
    assert_eq!(command[0]["span_state"], "closed_native");
    // Another agent, or a time after every event, leaves nothing.
    assert!(h.search(&["exit", "--adapter", "copilot"]).is_empty());
    let newest = all
        .iter()
        .map(|x| x["time_unix_ns"].as_i64().unwrap())
        .max()
        .unwrap();
    let oldest = all
        .iter()
        .map(|x| x["time_unix_ns"].as_i64().unwrap())
        .min()
        .unwrap();
    let after = (newest + 1).to_string();
    let before = (oldest - 1).to_string();
    assert!(h.search(&["exit", "--since", &after]).is_empty());
    assert!(h.search(&["exit", "--until", &before]).is_empty());
    let at = newest.to_string();
    let last = h.search(&["exit", "--since", &at, "--until", &at]);
    assert!(!last.is_empty());
    assert!(
        last.iter()
            .all(|x| x["time_unix_ns"].as_i64() == Some(newest))
    );
    // --limit and --sort time: newest first.
    let by_time = h.search(&["exit", "--sort", "time", "--limit", "2"]);
    assert_eq!(by_time.len(), 2);
    assert!(by_time[0]["time_unix_ns"].as_i64() >= by_time[1]["time_unix_ns"].as_i64());
}

#[test]
fn a_hit_in_an_archived_epoch_is_found_with_epoch_all() {
    let h = Home::build();
    let live_before = h.search(&["banana"]);
    assert_eq!(live_before[0]["epoch"], "live");
    let advance = next(&h.home, &["epoch", "advance"]);
    assert!(advance.status.success(), "{}", stderr(&advance));
    let search = |args: &[&str]| {
        let out = next(&h.home, args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        lines_of(&out)
    };
    assert!(search(&["search", "--json", "banana"]).is_empty());
    let all = search(&["search", "--json", "--epoch", "all", "banana"]);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_ne!(all[0]["epoch"], "live");
    assert_eq!(all[0]["event_id"], live_before[0]["event_id"]);
    // Made again from every epoch, the index gives the same hit.
    let out = next(&h.home, &["search", "--reindex", "--epoch", "all"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        search(&["search", "--json", "--epoch", "all", "banana"]),
        all
    );
}

#[test]
fn a_deleted_index_is_made_again_by_the_next_finalize_with_the_same_hits() {
    let h = Home::build();
    let before = h.search(&["exit", "--limit", "100"]);
    assert!(h.index().exists());
    std::fs::remove_file(h.index()).unwrap();
    h.ok(&["finalize"]);
    assert!(h.index().exists(), "finalize made the index again");
    // The rows are there before any search catches up.
    let conn = rusqlite::Connection::open(h.index()).unwrap();
    let docs: i64 = conn
        .query_row("SELECT count(*) FROM docs", [], |r| r.get(0))
        .unwrap();
    assert!(docs as usize >= before.len());
    assert_eq!(h.search(&["exit", "--limit", "100"]), before);
}

#[test]
fn a_finalize_run_indexes_its_budget_and_the_next_runs_and_searches_catch_up() {
    let h = Home::build();
    let before = h.search(&["exit", "--limit", "100"]);
    let lib = harnery::home::Home::at(&h.home);
    let run = |budget: u64| harnery::search::update_live_within(&lib, budget).unwrap();
    let indexed = || -> i64 {
        rusqlite::Connection::open(h.index())
            .unwrap()
            .query_row("SELECT indexed_seq FROM epochs", [], |r| r.get(0))
            .unwrap()
    };
    let remove = || {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", h.index().display()));
        }
    };
    let last = indexed();
    let budget: u64 = 4;
    assert!(last > 2 * budget as i64, "the fixture outgrows two runs");
    remove();
    assert_eq!(run(budget), budget);
    assert_eq!(indexed(), budget as i64, "the run stopped at its budget");
    assert_eq!(run(budget), budget);
    assert_eq!(
        indexed(),
        2 * budget as i64,
        "the next run went on from there"
    );
    // A search reads on to the end, and finds what it found before.
    assert_eq!(h.search(&["exit", "--limit", "100"]), before);
    assert_eq!(indexed(), last);
    assert_eq!(run(budget), 0);
    // Runs alone catch up too, a budget at a time.
    remove();
    let mut runs = 0;
    while run(budget) > 0 {
        runs += 1;
    }
    assert_eq!(runs, (last as u64).div_ceil(budget));
    assert_eq!(indexed(), last);
    assert_eq!(h.search(&["exit", "--limit", "100"]), before);
}

/// `finalize` starts the catch-up once the hooks' intake is committed,
/// beside following the record, and catches up on the rest after the run:
/// the index ends the run at the ledger's last row (the record's text
/// among it, which only the record pass appended), and the ledger's WAL
/// is left empty although the early catch-up read while the run wrote.
#[test]
fn finalize_catches_up_early_and_after_the_run_to_the_last_row() {
    let h = Home::spooled();
    let out = common::harnery(&h.home)
        .env("HARNERY_RECORDS", "on")
        .env("HARNERY_TIMING", "1")
        .arg("finalize")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let timing = stderr(&out);
    assert!(timing.contains("timing search-early:"), "{timing}");
    assert!(timing.contains("timing search:"), "{timing}");
    let lib = harnery::home::Home::at(&h.home);
    let live = harnery::ledger::LedgerReader::live_dir(&lib);
    let last: i64 = rusqlite::Connection::open(live.join("ledger.sqlite"))
        .unwrap()
        .query_row("SELECT max(seq) FROM event_store", [], |r| r.get(0))
        .unwrap();
    let indexed: i64 = rusqlite::Connection::open(h.index())
        .unwrap()
        .query_row("SELECT indexed_seq FROM epochs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        indexed, last,
        "the run left the index at the ledger's last row"
    );
    let wal = std::fs::metadata(live.join("ledger.sqlite-wal")).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "the ledger's WAL is empty after the run");
    let hits = h.search(&["--kind", "reasoning", "useEffect"]);
    assert!(!hits.is_empty(), "the record's thinking is indexed");
    assert!(hits.iter().all(|hit| hit["index_behind"] == 0));
}

#[test]
fn an_index_of_the_previous_format_is_made_again_silently() {
    let h = Home::build();
    let before = h.search(&["exit", "--limit", "100"]);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", h.index().display()));
    }
    // The first format: epochs by genesis id, text in `docs`, positional
    // trigrams; its one doc claims a hit the ledger does not hold.
    let old = rusqlite::Connection::open(h.index()).unwrap();
    old.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO meta VALUES ('format', 'harnery-search-1');
         CREATE TABLE ledgers (genesis_id TEXT PRIMARY KEY, indexed_seq INTEGER NOT NULL, seq_hash BLOB);
         CREATE TABLE docs (id INTEGER PRIMARY KEY, genesis_id TEXT NOT NULL, seq INTEGER NOT NULL,
             adapter TEXT NOT NULL, session_id TEXT NOT NULL, offset INTEGER NOT NULL,
             event_id TEXT NOT NULL, event_type TEXT NOT NULL, time_unix_ns INTEGER NOT NULL,
             turn TEXT, kind TEXT NOT NULL, tool TEXT, span_state TEXT, outcome TEXT, text TEXT NOT NULL);
         CREATE VIRTUAL TABLE words USING fts5(text, content='docs', content_rowid='id');
         CREATE VIRTUAL TABLE grams USING fts5(text, content='docs', content_rowid='id', tokenize='trigram');
         INSERT INTO ledgers VALUES ('x', 1000000, NULL);
         INSERT INTO docs VALUES (1, 'x', 1, 'claude-code', 's', 0, 'e', 'prompt.submitted', 0,
             NULL, 'prompt', NULL, NULL, NULL, 'exit exit exit');
         INSERT INTO words (rowid, text) VALUES (1, 'exit exit exit');
         INSERT INTO grams (rowid, text) VALUES (1, 'exit exit exit');",
    )
    .unwrap();
    drop(old);
    let out = h.ok(&["search", "--json", "exit", "--limit", "100"]);
    assert_eq!(stderr(&out), "", "made again silently");
    assert_eq!(lines_of(&out), before);
    let conn = rusqlite::Connection::open(h.index()).unwrap();
    let format: String = conn
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(format, harnery::search::FORMAT);
}

#[test]
fn an_index_of_format_2_is_made_again_silently() {
    let h = Home::build();
    let queries: [&[&str]; 2] = [&["exit", "--failed"], &["echo", "--kind", "tool-input"]];
    let before: Vec<Vec<Value>> = queries.iter().map(|q| h.search(q)).collect();
    assert!(before.iter().all(|hits| !hits.is_empty()));
    // An index that says it is of format 2 (which had no `facts`) and
    // claims a failed hit the ledger does not hold (a tool input: kind 3):
    // a search that trusted it would show that hit.
    let old = rusqlite::Connection::open(h.index()).unwrap();
    old.execute_batch(
        "UPDATE meta SET value = 'harnery-search-2' WHERE key = 'format';
         INSERT INTO sessions (adapter, session_id) VALUES ('claude-code', 's');
         INSERT INTO docs (id, session, time_unix_ns, time_bound, kind, tool, outcome)
             SELECT max(id) + 1, (SELECT max(id) FROM sessions), 0, 0, 3, 'Bash', 'failure'
             FROM docs;
         INSERT INTO texts (id, text) SELECT max(id), 'exit echo exit echo' FROM docs;
         INSERT INTO words (rowid, text) SELECT max(id), 'exit echo exit echo' FROM docs;",
    )
    .unwrap();
    drop(old);
    for (q, hits) in queries.iter().zip(&before) {
        let mut args = vec!["search", "--json"];
        args.extend_from_slice(q);
        let out = h.ok(&args);
        assert_eq!(stderr(&out), "", "made again silently");
        assert_eq!(&lines_of(&out), hits, "{q:?}");
    }
}

#[test]
fn a_smaller_limit_gives_the_first_hits_of_the_same_order() {
    let h = Home::build();
    // Reading stops once no later match can be among the first N: every
    // N must give the first N of the whole order, ties included.
    let queries: &[&[&str]] = &[
        &["exit"],
        &["echo"],
        &["ech*", "--sort", "time"],
        &["\"exit code\""],
        &["fail*", "--kind", "tool-input,message"],
        &["*xit"],
        &["exit", "--failed"],
        &["echo", "*ech", "--sort", "relevance"],
    ];
    for q in queries {
        let all = h.search(&[q, &["--limit", "1000"][..]].concat());
        assert!(all.len() > 1, "{q:?} finds more than one hit");
        for n in 1..all.len() {
            let first = h.search(&[q, &["--limit", &n.to_string()][..]].concat());
            assert_eq!(first, all[..n], "{q:?} --limit {n}");
        }
    }
}

#[test]
fn a_damaged_index_is_made_again_silently() {
    let h = Home::build();
    let before = h.search(&["src/ledger"]);
    assert_eq!(before.len(), 1);
    for damage in [&b"this is not a database"[..], b""] {
        std::fs::write(h.index(), damage).unwrap();
        let out = h.ok(&["search", "--json", "src/ledger"]);
        assert!(stderr(&out).is_empty(), "{}", stderr(&out));
        assert_eq!(lines_of(&out), before);
    }
    // Another schema in a real SQLite file is made again too.
    std::fs::remove_file(h.index()).unwrap();
    let conn = rusqlite::Connection::open(h.index()).unwrap();
    conn.execute_batch(
        "CREATE TABLE meta (key TEXT, value TEXT); INSERT INTO meta VALUES ('format', 'old')",
    )
    .unwrap();
    drop(conn);
    assert_eq!(h.search(&["src/ledger"]), before);
    // verify never reads the index.
    std::fs::write(h.index(), b"garbage").unwrap();
    h.ok(&["verify"]);
}

#[test]
fn an_index_that_cannot_be_written_warns_and_finalize_still_succeeds() {
    let h = Home::build();
    std::fs::remove_dir_all(h.home.join("search")).unwrap();
    std::fs::write(
        h.home.join("search"),
        b"a file where the index directory goes",
    )
    .unwrap();
    common::deliver(
        &h.home,
        "claude-code",
        &serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION,
            "prompt": "one more kumquat", "prompt_id": "p-2"})
        .to_string(),
    );
    let out = h.ok(&["finalize"]);
    assert!(
        stderr(&out).contains("search index was not brought up to date"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(h.home.join("search")).unwrap();
    h.ok(&["finalize"]);
    let hits = h.search(&["kumquat"]);
    assert_eq!(hits.len(), 1);
}

#[test]
fn a_query_that_cannot_run_exits_2_and_says_why() {
    let h = Home::build();
    for (query, says) in [
        ("\"open", "never closed"),
        ("-f", "at least 3 characters"),
        ("a/b*", "prefix"),
        ("\"\"", "empty"),
    ] {
        let out = h.run(&["search", "--", query]);
        assert_eq!(out.status.code(), Some(2), "{query}");
        assert!(stderr(&out).contains(says), "{query}: {}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }
    // FTS5's own syntax is searched for as text, never run.
    h.ok(&["search", "NEAR(exit code) OR text:exit"]);
}

#[test]
fn show_at_shows_the_hit_in_its_timeline() {
    let h = Home::build();
    let hit = &h.search(&["--kind", "tool-input", "--tool", "Bash", "echo"])[0];
    let offset = hit["offset"].to_string();
    let out = h.ok(&["show", "9c52", "--at", &offset, "--context", "1"]);
    let text = stdout(&out);
    let marked: Vec<&str> = text.lines().filter(|l| l.starts_with(">>")).collect();
    assert_eq!(marked.len(), 1, "{text}");
    assert!(marked[0].contains("tool Bash"), "{text}");
    assert!(marked[0].contains(&format!(" {offset} ")), "{text}");
    let entries = text.lines().filter(|l| l.contains(" +")).count();
    assert!(entries <= 3, "{text}");
    let json: Value = serde_json::from_slice(
        &h.ok(&["show", "9c52", "--at", &offset, "--context", "1", "--json"])
            .stdout,
    )
    .unwrap();
    let hit_entries: Vec<&Value> = json["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["hit"] == true)
        .collect();
    assert_eq!(hit_entries.len(), 1);
    assert_eq!(hit_entries[0]["offset"].to_string(), offset);
    let beyond = h.run(&["show", "9c52", "--at", "100000"]);
    assert_eq!(beyond.status.code(), Some(2));
    assert!(stderr(&beyond).contains("not in session"));
}

#[test]
fn the_text_output_marks_matches_and_escapes_agent_text() {
    let h = Home::build();
    let out = h.ok(&["search", "banana", "--kind", "command"]);
    let text = stdout(&out);
    assert!(text.contains("[banana]"), "{text}");
    assert!(!text.contains('\x1b'), "no colour off a terminal: {text}");
    assert!(text.starts_with("9c520b8b-ad4 @"), "{text}");
}

#[test]
fn a_span_that_fails_after_its_request_was_indexed_is_found_by_failed() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let hooks =
        std::fs::read_to_string(fixtures().join("claude-code/tool-failure/hooks.jsonl")).unwrap();
    let lines: Vec<&str> = hooks.lines().collect();
    let pre = lines
        .iter()
        .position(|l| l.contains("\"PreToolUse\""))
        .unwrap();
    let search = |args: &[&str]| {
        let out = common::run(home, args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        lines_of(&out)
    };
    for line in &lines[..=pre] {
        common::deliver(home, "claude-code", line);
    }
    assert!(common::run(home, &["finalize"]).status.success());
    let open = search(&["search", "--json", "--kind", "tool-input", "echo"]);
    assert_eq!(open[0]["span_state"], "open");
    assert!(search(&["search", "--json", "--failed", "echo"]).is_empty());
    for line in &lines[pre + 1..] {
        common::deliver(home, "claude-code", line);
    }
    assert!(common::run(home, &["finalize"]).status.success());
    let failed = search(&[
        "search",
        "--json",
        "--failed",
        "--kind",
        "tool-input",
        "echo",
    ]);
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["event_id"], open[0]["event_id"]);
    assert_eq!(failed[0]["span_state"], "closed_native");
}

#[test]
fn an_index_held_by_another_run_is_searched_as_it_is_then_caught_up() {
    let h = Home::build();
    let before = h.search(&["exit", "--limit", "100"]);
    let lock = rusqlite::Connection::open(h.index()).unwrap();
    lock.execute_batch("BEGIN EXCLUSIVE").unwrap();
    common::deliver(
        &h.home,
        "claude-code",
        &serde_json::json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION,
            "prompt": "exit through the kumquat door", "prompt_id": "p-2"})
        .to_string(),
    );
    let out = h.ok(&["finalize"]);
    assert!(
        stderr(&out).contains("search index was not brought up to date"),
        "{}",
        stderr(&out)
    );
    let out = h.ok(&["search", "--json", "exit", "--limit", "100"]);
    assert!(
        stderr(&out).contains("another run is updating the index"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("3 ledger row(s) behind"),
        "{}",
        stderr(&out)
    );
    // The same hits, each saying how far behind the index was.
    let mut now = lines_of(&out);
    for hit in &mut now {
        assert_eq!(hit["index_behind"], 3);
        hit["index_behind"] = Value::from(0);
    }
    assert_eq!(now, before);
    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    let after = h.search(&["kumquat"]);
    assert_eq!(after.len(), 1);
    assert_eq!(after[0]["kind"], "prompt");
}

/// What the index holds, row by row (FTS5's own segments differ with the
/// transactions that wrote them, so the words are compared by what they
/// find instead).
fn index_rows(index: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(index).unwrap();
    let mut out = Vec::new();
    for (table, order) in [
        ("epochs", "id"),
        ("sessions", "id"),
        ("docs", "id"),
        ("doc_events", "event, id"),
        ("ranges", "epoch, session"),
        ("said", "key"),
        ("texts", "id"),
        ("facts", "id"),
    ] {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
            .unwrap();
        let columns = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let cells: Vec<String> = (0..columns)
                    .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                    .collect();
                Ok(format!("{table}: {}", cells.join(" | ")))
            })
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

/// The rows are read and parsed on one thread and handed in groups to
/// another that writes the index, a batch per transaction: whatever the
/// two sizes (one row, sizes that do not divide each other, more than the
/// ledger holds), the index holds the same rows and finds the same hits.
/// So it does when another indexer goes on between two batches (the next
/// batch starts where that one stopped).
#[test]
fn rows_in_any_grouping_index_the_same_rows() {
    let h = Home::build();
    let hits = h.search(&["exit", "--limit", "100"]);
    let substrings = h.search(&["anan", "--limit", "100"]);
    let whole = index_rows(&h.index());
    let lib = harnery::home::Home::at(&h.home);
    let remove = || {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", h.index().display()));
        }
    };
    let rows = harnery::search::update_live_within(&lib, 0).unwrap();
    assert_eq!(rows, 0, "a budget of nothing reads nothing");
    let last: i64 = rusqlite::Connection::open(h.index())
        .unwrap()
        .query_row("SELECT indexed_seq FROM epochs", [], |r| r.get(0))
        .unwrap();
    let last = last as u64;
    assert!(
        last > 10,
        "the fixture has rows enough for small groups: {last}"
    );
    for (batch, handoff) in [(1, 1), (2, 3), (3, 2), (7, 1), (1, 5), (1000, 1000)] {
        remove();
        let sizes = harnery::search::Sizes { batch, handoff };
        let read = harnery::search::update_live_sized(&lib, u64::MAX, sizes).unwrap();
        assert_eq!(read, last, "batch {batch}, handoff {handoff}");
        assert_eq!(
            index_rows(&h.index()),
            whole,
            "batch {batch}, handoff {handoff}"
        );
        assert_eq!(h.search(&["exit", "--limit", "100"]), hits);
        assert_eq!(h.search(&["anan", "--limit", "100"]), substrings);
    }
    // Another indexer goes on by two rows after the first batch.
    remove();
    let other = harnery::home::Home::at(&h.home);
    harnery::failpoint::arm_hook(
        harnery::search::AFTER_BATCH,
        &h.index(),
        Box::new(move || {
            assert_eq!(harnery::search::update_live_within(&other, 2).unwrap(), 2);
        }),
    );
    let sizes = harnery::search::Sizes {
        batch: 3,
        handoff: 2,
    };
    let read = harnery::search::update_live_sized(&lib, u64::MAX, sizes).unwrap();
    assert_eq!(
        read,
        last - 2,
        "the other indexer's two rows are not read again"
    );
    assert_eq!(index_rows(&h.index()), whole);
    assert_eq!(h.search(&["exit", "--limit", "100"]), hits);
}
