#![cfg(feature = "failpoints")]
//! The read commands over archived epochs (`--epoch live|all|<id>`),
//! through the real binaries. One home holds two epochs: a Claude Code
//! session that continues across the boundary (its first tool call left
//! open in the archive, its clean remainder in the live epoch) and a clean
//! session only the archive holds. The test-only digest change
//! (`HARNERY_TEST_SCHEMA_SUFFIX`, failpoint builds) makes the advance.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::*;
use serde_json::Value;

/// The `basic` fixture's session: wholly in the archive, clean.
const ARCHIVED_ONLY: &str = "82655d0f-45cd-404f-9e4e-e90fea255247";
/// Events the crossing session has in each epoch.
const ARCHIVED_PART: u64 = 4;
/// (Its turn ends in the live part, whose checkpoint is one of them; its
/// `Read` and `Edit` batches each list a result their posts did not hold:
/// two `tool.batch_result`s, contract generation 12.)
const LIVE_PART: u64 = 15;

/// A home with one archived epoch and a live one.
struct TwoEpochs {
    _dir: tempfile::TempDir,
    home: PathBuf,
    archive: String,
    live: String,
    crossing: String,
}

impl TwoEpochs {
    fn build() -> TwoEpochs {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_path_buf();
        let lines = fixture_lines("file-tools");
        feed_lines(&home, &lines[..3]);
        feed_fixture(&home, "claude-code", "basic");
        assert!(run(&home, &["finalize"]).status.success());
        let advance = next(&home, &["epoch", "advance"]);
        assert!(advance.status.success(), "{}", stderr(&advance));
        // The session goes on after the advance; the first tool's
        // completion never arrives.
        feed_lines(&home, &lines[5..]);
        let done = next(&home, &["finalize"]);
        assert!(done.status.success(), "{}", stderr(&done));
        let genesis: Value =
            serde_json::from_slice(&std::fs::read(home.join("ledgers/v2/genesis.json")).unwrap())
                .unwrap();
        let crossing = serde_json::from_str::<Value>(&lines[0]).unwrap()["session_id"]
            .as_str()
            .unwrap()
            .to_string();
        TwoEpochs {
            archive: genesis["anchor"]["genesis_id"].as_str().unwrap().into(),
            live: genesis["genesis_id"].as_str().unwrap().into(),
            crossing,
            home,
            _dir: dir,
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        next(&self.home, args)
    }

    /// Run, expect exit 0, and parse stdout as JSON lines.
    fn lines(&self, args: &[&str]) -> Vec<Value> {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        json_lines(&out)
    }

    /// Run and parse stdout as JSON lines whatever the exit code.
    fn lines_allowing(&self, args: &[&str]) -> Vec<Value> {
        json_lines(&self.run(args))
    }

    fn archive_dir(&self) -> PathBuf {
        self.home.join("ledgers/v2-candidates").join(&self.archive)
    }

    /// Overwrite the archive's database header: no build can open it.
    fn corrupt_archive(&self) {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.archive_dir();
        let db = dir.join("ledger.sqlite");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut bytes = std::fs::read(&db).unwrap();
        bytes[..100].fill(0x5a);
        std::fs::write(&db, bytes).unwrap();
    }

    /// Replace the archive's first event row with text no build parses:
    /// the archive opens, its events do not read.
    fn garble_archive_rows(&self) {
        let changed = self
            .archive_db()
            .execute(
                "UPDATE event_store SET body = event_body('{\"not\": \"an event\"}') \
                 WHERE seq = (SELECT min(seq) FROM event_store)",
                [],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }

    /// The archive as an older build left it: no trace entries.
    fn drop_archive_trace_rows(&self) {
        self.archive_db()
            .execute_batch("DROP VIEW trace_chunks; DROP TABLE trace_chunk_store;")
            .unwrap();
    }

    /// The archive's database, opened for writing (the test's own damage).
    fn archive_db(&self) -> rusqlite::Connection {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.archive_dir();
        let db = dir.join("ledger.sqlite");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
        let conn = rusqlite::Connection::open(&db).unwrap();
        harnery::ledger::eventz::register(&conn).unwrap();
        conn
    }

    fn boundary(&self) -> String {
        format!("── epoch boundary: {} → {} ──", self.archive, self.live)
    }
}

fn fixture_lines(scenario: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code")
        .join(scenario)
        .join("hooks.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

fn feed_lines(home: &Path, lines: &[String]) {
    for line in lines {
        crate::common::hook(home, &["claude-code"], line.as_bytes().to_vec());
    }
}

fn json_lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn json(out: &Output) -> Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect()
}

fn row_of<'a>(rows: &'a [Value], session: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["session"]["session_id"] == session)
        .unwrap_or_else(|| panic!("no row for {session}: {rows:?}"))
}

#[test]
fn sessions_lists_a_crossing_session_once_with_its_parts_summed() {
    let h = TwoEpochs::build();
    let rows = h.lines(&["sessions", "--json", "--epoch", "all"]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let crossing = row_of(&rows, &h.crossing);
    assert_eq!(crossing["events"], ARCHIVED_PART + LIVE_PART);
    assert_eq!(crossing["turns"], 2);
    assert_eq!(crossing["spans"]["open"], 1);
    assert_eq!(crossing["spans"]["closed_native"], 2);
    assert_eq!(strs(&crossing["epochs"]), [h.archive.as_str(), "live"]);
    assert_eq!(crossing["eligibility"]["class"], "audit_only");
    assert_eq!(
        strs(&crossing["eligibility"]["reasons"]),
        ["tool_pairing_incomplete"]
    );
    let archived = row_of(&rows, ARCHIVED_ONLY);
    assert_eq!(strs(&archived["epochs"]), [h.archive.as_str()]);
    assert_eq!(archived["eligibility"]["class"], "eligible");

    let text = stdout(&h.run(&["sessions", "--epoch", "all"]));
    assert!(text.lines().next().unwrap().ends_with("EPOCHS"), "{text}");
    assert!(text.contains(&format!("{},live", h.archive)), "{text}");
}

#[test]
fn show_replay_and_receipts_mark_the_boundary() {
    let h = TwoEpochs::build();
    let show = stdout(&h.run(&["show", &h.crossing, "--epoch", "all"]));
    assert!(show.contains(&h.boundary()), "{show}");
    assert!(
        show.contains(&format!("epochs: {} → live", h.archive)),
        "{show}"
    );
    let (before, after) = show.split_once(&h.boundary()).unwrap();
    assert!(before.contains("tool Write [open]"), "{show}");
    assert!(after.contains("tool Edit [closed_native]"), "{show}");

    let doc = json(&h.run(&["show", &h.crossing, "--json", "--epoch", "all"]));
    assert_eq!(doc["summary"]["events"], ARCHIVED_PART + LIVE_PART);
    let parts = doc["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0]["epoch"], h.archive.as_str());
    assert_eq!(parts[0]["summary"]["events"], ARCHIVED_PART);
    assert_eq!(parts[1]["epoch"], "live");
    assert_eq!(parts[1]["genesis_id"], h.live.as_str());
    let entries = doc["entries"].as_array().unwrap();
    assert_eq!(entries[0]["epoch"], h.archive.as_str());
    assert_eq!(entries.last().unwrap()["epoch"], "live");

    let replay = h.lines(&["replay", &h.crossing, "--json", "--epoch", "all"]);
    assert_eq!(replay.len() as u64, ARCHIVED_PART + LIVE_PART);
    let epochs: Vec<&str> = replay
        .iter()
        .map(|e| e["epoch"].as_str().unwrap())
        .collect();
    assert!(epochs[..4].iter().all(|e| *e == h.archive));
    assert!(epochs[4..].iter().all(|e| *e == "live"));
    let text = stdout(&h.run(&["replay", &h.crossing, "--epoch", "all"]));
    let marked: Vec<&str> = text.lines().collect();
    assert_eq!(marked.len() as u64, ARCHIVED_PART + LIVE_PART + 1);
    assert_eq!(marked[4], h.boundary());
    let windowed = h.run(&["replay", &h.crossing, "--epoch", "all", "--from", "1"]);
    assert_eq!(windowed.status.code(), Some(2));
    assert!(stderr(&windowed).contains("pick one with --epoch"));

    let receipts = json(&h.run(&["receipts", &h.crossing, "--json", "--epoch", "all"]));
    let parts = receipts["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0]["epoch"], h.archive.as_str());
    assert_eq!(parts[0]["turns"][0]["tools"]["open"], 1);
    assert_eq!(parts[1]["turns"][0]["tools"]["eligible_for_ranking"], true);
    let text = stdout(&h.run(&["receipts", &h.crossing, "--epoch", "all"]));
    assert!(text.contains(&h.boundary()), "{text}");
}

#[test]
fn export_tags_every_line_with_its_epoch() {
    let h = TwoEpochs::build();
    let lines = h.lines(&["export", "--epoch", "all", "--session", &h.crossing]);
    assert_eq!(lines.len() as u64, ARCHIVED_PART + LIVE_PART);
    assert_eq!(lines[0]["epoch"], h.archive.as_str());
    assert_eq!(lines[0]["offset"], 0);
    assert_eq!(lines[4]["epoch"], "live");
    assert_eq!(lines[4]["offset"], 0);
    let all = h.lines(&["export", "--epoch", "all"]);
    let archived = all.iter().filter(|l| l["epoch"] == h.archive.as_str());
    assert!(
        archived
            .clone()
            .any(|l| l["session"]["session_id"] == ARCHIVED_ONLY)
    );
    assert_eq!(
        all.iter().filter(|l| l["epoch"] == "live").count() as u64,
        LIVE_PART
    );
    let otlp = h.lines(&["export", "--epoch", "all", "--format", "otlp"]);
    assert_eq!(otlp.len(), 1, "few spans: one document for both epochs");
    let resources = otlp[0]["resourceSpans"].as_array().unwrap();
    let value = |r: &Value, key: &str| -> String {
        let attrs = r["resource"]["attributes"].as_array().unwrap();
        let found = attrs.iter().find(|a| a["key"] == key).expect(key);
        found["value"]["stringValue"].as_str().unwrap().to_string()
    };
    let crossing: Vec<&Value> = resources
        .iter()
        .filter(|r| value(r, "harnery.session.id") == h.crossing)
        .collect();
    let epochs: Vec<String> = crossing.iter().map(|r| value(r, "harnery.epoch")).collect();
    assert_eq!(epochs, [h.archive.as_str(), "live"]);
    // Each part has a root span of its own, in the session's one trace.
    let root = |r: &Value| {
        let spans = r["scopeSpans"][0]["spans"].as_array().unwrap();
        let root = spans
            .iter()
            .find(|s| s.get("parentSpanId").is_none())
            .unwrap();
        (root["spanId"].clone(), root["traceId"].clone())
    };
    let (archived, live) = (root(crossing[0]), root(crossing[1]));
    assert_ne!(archived.0, live.0);
    assert_eq!(archived.1, live.1);
}

#[test]
fn one_epoch_is_named_by_its_id_or_a_unique_prefix() {
    let h = TwoEpochs::build();
    let prefix = &h.archive[..h.archive.len() - 6];
    for wanted in [h.archive.as_str(), prefix] {
        let rows = h.lines(&["sessions", "--json", "--epoch", wanted]);
        assert_eq!(rows.len(), 2, "{wanted}: {rows:?}");
        let crossing = row_of(&rows, &h.crossing);
        assert_eq!(crossing["events"], ARCHIVED_PART);
        assert_eq!(strs(&crossing["epochs"]), [h.archive.as_str()]);
        let replay = h.lines(&["replay", &h.crossing, "--json", "--epoch", wanted]);
        assert_eq!(replay.len() as u64, ARCHIVED_PART);
        let from = h.lines(&[
            "replay",
            &h.crossing,
            "--json",
            "--epoch",
            wanted,
            "--from",
            "3",
        ]);
        assert_eq!(from.len(), 1);
        assert_eq!(from[0]["type"], "tool.requested");
    }
    let verified = json(&h.run(&["verify", "--json", "--epoch", prefix]));
    assert_eq!(verified["epochs"].as_array().unwrap().len(), 1);
    assert_eq!(verified["epochs"][0]["genesis_id"], h.archive.as_str());
    let live = h.lines(&["replay", &h.crossing, "--json", "--epoch", &h.live]);
    assert_eq!(live.len() as u64, LIVE_PART);
    assert_eq!(live[0]["epoch"], "live");
}

#[test]
fn an_unknown_or_ambiguous_epoch_is_a_usage_error_naming_the_known_ones() {
    let h = TwoEpochs::build();
    let commands: [&[&str]; 8] = [
        &["sessions"],
        &["show", &h.crossing],
        &["replay", &h.crossing],
        &["validate"],
        &["verify"],
        &["audit"],
        &["receipts", &h.crossing],
        &["export"],
    ];
    for cmd in commands {
        let mut args = cmd.to_vec();
        args.extend(["--epoch", "gen_nope"]);
        let out = h.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(err.contains("no epoch \"gen_nope\""), "{args:?}: {err}");
        assert!(err.contains(&h.archive) && err.contains(&h.live), "{err}");
        assert!(stdout(&out).is_empty(), "{args:?}");
    }
    let out = h.run(&["sessions", "--epoch", "gen_"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("matches 2 epochs"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_default_stays_the_live_epoch_and_says_archives_exist() {
    let h = TwoEpochs::build();
    let out = h.run(&["sessions", "--json"]);
    let rows = json_lines(&out);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["events"], LIVE_PART);
    assert!(rows[0].get("epochs").is_none(), "{}", rows[0]);
    assert!(stderr(&out).is_empty(), "no note beside --json");
    let text = h.run(&["sessions"]);
    assert_eq!(
        stderr(&text),
        "note: 1 archived epoch; --epoch all includes it\n"
    );
    assert!(!stdout(&text).contains("EPOCHS"));
    let audit = h.run(&["audit"]);
    assert_eq!(audit.status.code(), Some(0));
    assert!(stderr(&audit).contains("note: 1 archived epoch"));

    let replay = h.lines(&["replay", &h.crossing, "--json"]);
    assert_eq!(replay.len() as u64, LIVE_PART);
    assert!(replay.iter().all(|e| e.get("epoch").is_none()));
    let shown = json(&h.run(&["show", &h.crossing, "--json"]));
    assert!(shown.get("parts").is_none());
    assert_eq!(shown["summary"]["events"], LIVE_PART);
    let show = stdout(&h.run(&["show", &h.crossing]));
    assert!(!show.contains("epoch boundary"), "{show}");
    let receipts = json(&h.run(&["receipts", &h.crossing, "--json"]));
    assert!(receipts.get("parts").is_none() && receipts.get("turns").is_some());
    let exported = h.lines(&["export"]);
    assert_eq!(exported.len() as u64, LIVE_PART);
    assert!(exported.iter().all(|e| e.get("epoch").is_none()));
    let validate = json(&h.run(&["validate", "--json"]));
    assert_eq!(validate["ok"], true);
    assert_eq!(validate["rows"], LIVE_PART);
    let verify = json(&h.run(&["verify", "--json"]));
    assert_eq!(verify["rows"], LIVE_PART);
    assert!(verify.get("epochs").is_none());
}

#[test]
fn a_live_session_closed_in_an_archive_is_never_eligible() {
    let h = TwoEpochs::build();
    // Its live half alone is clean: every span closed natively.
    let shown = json(&h.run(&["show", &h.crossing, "--json"]));
    assert_eq!(shown["summary"]["spans"]["closed_native"], 2);
    assert_eq!(shown["summary"]["spans"]["open"], 0);
    assert_eq!(shown["summary"]["spans"]["recovered"], 0);

    let rows = h.lines(&["sessions", "--json"]);
    assert_eq!(rows[0]["eligibility"]["class"], "audit_only");
    assert_eq!(
        strs(&rows[0]["eligibility"]["reasons"]),
        ["tool_pairing_incomplete"]
    );
    let text = stdout(&h.run(&["sessions"]));
    assert!(
        text.contains("audit_only") && !text.contains("eligible\n"),
        "{text}"
    );
    let audit = h.lines(&["audit", "--json"]);
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0]["epoch"], "live");
    assert!(audit[0].get("epochs").is_none());
    assert_eq!(audit[0]["class"], "audit_only");
    assert_eq!(strs(&audit[0]["reasons"]), ["tool_pairing_incomplete"]);

    let all = h.lines(&["audit", "--json", "--epoch", "all"]);
    assert_eq!(all.len(), 2, "each session once: {all:?}");
    let crossing = row_of(&all, &h.crossing);
    assert_eq!(crossing["epoch"], "live");
    assert_eq!(strs(&crossing["epochs"]), [h.archive.as_str(), "live"]);
    assert_eq!(crossing["class"], "audit_only");
}

#[test]
fn audit_finds_a_session_only_an_archive_holds() {
    let h = TwoEpochs::build();
    let rows = h.lines(&["audit", "--json", "--session", ARCHIVED_ONLY]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["epoch"], h.archive.as_str());
    assert_eq!(strs(&rows[0]["epochs"]), [h.archive.as_str()]);
    assert_eq!(rows[0]["class"], "eligible");
    let text = stdout(&h.run(&["audit", "--session", &ARCHIVED_ONLY[..8]]));
    assert!(
        text.starts_with(&format!(
            "{} claude-code/{ARCHIVED_ONLY}  eligible",
            h.archive
        )),
        "{text}"
    );
    let missing = h.run(&["audit", "--session", "no-such-session"]);
    assert_eq!(missing.status.code(), Some(2));
}

#[test]
fn validate_and_verify_check_each_epoch_under_its_own_contract() {
    let h = TwoEpochs::build();
    let validated = json(&h.run(&["validate", "--json", "--epoch", "all"]));
    assert_eq!(validated["ok"], true, "{validated}");
    let epochs = validated["epochs"].as_array().unwrap();
    assert_eq!(epochs.len(), 2);
    assert_eq!(epochs[0]["epoch"], h.archive.as_str());
    // The archive speaks the digest this build would have without the
    // test suffix, and is not held to this build's.
    assert_eq!(epochs[0]["violations"].as_array().unwrap().len(), 0);
    assert_eq!(epochs[1]["epoch"], "live");
    assert_eq!(epochs[1]["rows"], LIVE_PART);
    let text = stdout(&h.run(&["validate", "--epoch", "all"]));
    assert!(text.starts_with(&format!("{}: ok: ", h.archive)), "{text}");

    let verified = json(&h.run(&["verify", "--json", "--epoch", "all"]));
    assert_eq!(verified["ok"], true);
    let epochs = verified["epochs"].as_array().unwrap();
    assert_eq!(epochs[1]["rows"], LIVE_PART);
    assert_eq!(epochs[1]["genesis_id"], h.live.as_str());
    let genesis: Value =
        serde_json::from_slice(&std::fs::read(h.home.join("ledgers/v2/genesis.json")).unwrap())
            .unwrap();
    assert_eq!(
        epochs[0]["chain_head"],
        genesis["anchor"]["terminal_segment_digest"]
    );
}

#[test]
fn an_unreadable_archive_is_reported_and_the_others_still_read() {
    let h = TwoEpochs::build();
    h.corrupt_archive();
    let named = |out: &Output| {
        let err = stderr(out);
        assert!(
            err.contains(&format!("epoch {} unreadable", h.archive)),
            "{err}"
        );
    };
    let out = h.run(&["sessions", "--json", "--epoch", "all"]);
    assert_eq!(out.status.code(), Some(0));
    named(&out);
    let rows = json_lines(&out);
    assert_eq!(rows.len(), 1);
    assert_eq!(strs(&rows[0]["epochs"]), ["live"]);
    // The closure the live genesis recorded still holds.
    assert_eq!(rows[0]["eligibility"]["class"], "audit_only");

    for cmd in ["show", "replay", "receipts"] {
        let out = h.run(&[cmd, &h.crossing, "--epoch", "all"]);
        assert_eq!(out.status.code(), Some(0), "{cmd}: {}", stderr(&out));
        named(&out);
        assert!(!stdout(&out).contains("epoch boundary"), "{cmd}");
    }
    let out = h.run(&["export", "--epoch", "all"]);
    assert_eq!(out.status.code(), Some(0));
    named(&out);
    assert_eq!(json_lines(&out).len() as u64, LIVE_PART);

    for cmd in ["validate", "verify", "audit"] {
        let out = h.run(&[cmd, "--json", "--epoch", "all"]);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {}", stderr(&out));
        named(&out);
    }
    let validated: Value =
        serde_json::from_slice(&h.run(&["validate", "--json", "--epoch", "all"]).stdout).unwrap();
    assert_eq!(validated["ok"], false);
    let epochs = validated["epochs"].as_array().unwrap();
    assert!(
        epochs[0]["unreadable"]
            .as_str()
            .unwrap()
            .contains("is not an SQLite database"),
        "{validated}"
    );
    assert_eq!(epochs[1]["ok"], true);
    assert_eq!(epochs[1]["rows"], LIVE_PART);
    let audit = h.lines_allowing(&["audit", "--json", "--epoch", "all"]);
    assert_eq!(row_of(&audit, &h.crossing)["class"], "audit_only");

    // The archive alone: nothing to list is an error.
    let alone = h.run(&["sessions", "--epoch", &h.archive]);
    assert_eq!(alone.status.code(), Some(2));
    named(&alone);
}

#[test]
fn an_archive_of_a_newer_contract_generation_is_not_misread() {
    use std::os::unix::fs::PermissionsExt;
    let h = TwoEpochs::build();
    let dir = h.archive_dir();
    let path = dir.join("genesis.json");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut genesis: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    genesis["contract_generation"] = (harnery::contract::CONTRACT_GENERATION + 1).into();
    std::fs::write(&path, genesis.to_string()).unwrap();

    let out = h.run(&["validate", "--json", "--epoch", "all"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let why = doc["epochs"][0]["unreadable"].as_str().unwrap();
    assert!(
        why.starts_with("written by a newer contract generation")
            && why.ends_with("not readable by this build"),
        "{why}"
    );
    assert_eq!(doc["epochs"][1]["ok"], true);
    let out = h.run(&["sessions", "--json", "--epoch", "all"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("newer contract generation"));
}

#[test]
fn an_archive_whose_rows_do_not_parse_is_reported_per_part() {
    let h = TwoEpochs::build();
    h.garble_archive_rows();
    // The damaged row is named by its seq; the rest of its part and the
    // other parts are still shown, and the command exits 1.
    let named = |out: &Output| {
        let err = stderr(out);
        assert!(
            err.contains(&format!("epoch {}: row seq 1 (event ", h.archive)),
            "{err}"
        );
        assert_eq!(out.status.code(), Some(1), "{err}");
    };
    let out = h.run(&["replay", &h.crossing, "--json", "--epoch", "all"]);
    named(&out);
    let lines = json_lines(&out);
    assert_eq!(lines.len() as u64, ARCHIVED_PART - 1 + LIVE_PART);
    let archived = lines
        .iter()
        .filter(|l| l["epoch"] == h.archive.as_str())
        .count();
    assert_eq!(archived as u64, ARCHIVED_PART - 1);
    let out = h.run(&["show", &h.crossing, "--json", "--epoch", "all"]);
    named(&out);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["parts"].as_array().unwrap().len(), 2);
    let out = h.run(&["receipts", &h.crossing, "--epoch", "all"]);
    named(&out);

    // The audit answers from session rows, which the garbled event text
    // does not touch: the archive's part is still classified (finding the
    // damage is validate's and verify's work).
    let out = h.run(&["audit", "--json", "--epoch", "all"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let crossing = json_lines(&out)
        .into_iter()
        .find(|l| l["session"]["session_id"] == h.crossing.as_str())
        .expect("the crossing session is audited");
    assert_eq!(crossing["class"], "audit_only", "{crossing}");
    let out = h.run(&["validate", "--json", "--epoch", "all"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&str> = doc["epochs"][0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"contract-parse"), "{doc}");
    assert_eq!(doc["epochs"][1]["ok"], true);
    // OTLP answers from trace entries, which the garbled text does not touch
    // either: the traces of both parts are exported whole.
    let otlp = h.run(&["export", "--format", "otlp", "--epoch", "all"]);
    assert_eq!(otlp.status.code(), Some(0), "{}", stderr(&otlp));
    assert_eq!(json_lines(&otlp).len(), 1);
    // Without them (an archive an older build wrote) OTLP reads every
    // row's text: the row is named and every other row still exported.
    h.drop_archive_trace_rows();
    let out = h.run(&["export", "--format", "otlp", "--epoch", "all"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("epoch {}: row seq 1 (event ", h.archive)),
        "{err}"
    );
    assert_eq!(json_lines(&out).len(), 1);
    // The archive alone: what of it can be read, and the damaged row named.
    let out = h.run(&["replay", &h.crossing, "--epoch", &h.archive]);
    named(&out);
    assert_eq!(stdout(&out).lines().count() as u64, ARCHIVED_PART - 1);
}
