//! Multi-signal finalization end to end: the real hook binary records a
//! real Claude Code session's hooks, the transcript the same run wrote is
//! where the hooks say, and `finalize` follows it. Expectations come from
//! the transcript itself, read here with serde_json.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::{stderr, stdout};

/// `harnery args…` in `home`, following the agents' records (the shared
/// helper turns that off for the hook-only corpus tests).
pub(crate) fn run(home: &Path, args: &[&str]) -> std::process::Output {
    common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .args(args)
        .output()
        .unwrap()
}
use serde_json::Value;

const SCENARIO_TRANSCRIPT: &str = "tests/fixtures/records/claude-code/basic.jsonl";
/// The `basic` scenario's session.
const SCENARIO_SESSION: &str = "82655d0f-45cd-404f-9e4e-e90fea255247";

/// Where Claude Code writes the `basic` session's transcript (its config
/// dir under `home`): only that shape is followed.
fn transcript_place(home: &Path) -> std::path::PathBuf {
    let dir = home.join("claude/projects/-tmp-proj");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{SCENARIO_SESSION}.jsonl"))
}

/// Feed the `basic` scenario's hooks with their transcript path pointed at
/// `transcript`.
fn feed(home: &Path, transcript: &Path) {
    feed_hooks(home, transcript, |_| true);
}

/// Feed the `basic` scenario's hooks whose number `which` takes, their
/// transcript path pointed at `transcript`.
fn feed_hooks(home: &Path, transcript: &Path, which: impl Fn(usize) -> bool) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let hooks =
        std::fs::read_to_string(root.join("tests/fixtures/claude-code/basic/hooks.jsonl")).unwrap();
    let hooks = hooks.lines().filter(|l| !l.trim().is_empty());
    for (_, line) in hooks.enumerate().filter(|(n, _)| which(*n)) {
        let mut payload: Value = serde_json::from_str(line).unwrap();
        payload["transcript_path"] = Value::String(transcript.display().to_string());
        hook(home, &payload);
    }
}

/// Deliver one Claude Code payload through the real hook.
fn hook(home: &Path, payload: &Value) {
    crate::common::hook(home, &["claude-code"], payload.to_string());
}

/// The scenario's transcript copied into `home`, and its hooks fed with
/// their transcript path pointed at the copy; the copy's path.
pub(crate) fn with_transcript(home: &Path) -> std::path::PathBuf {
    let transcript = transcript_place(home);
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(SCENARIO_TRANSCRIPT),
        &transcript,
    )
    .unwrap();
    feed(home, &transcript);
    transcript
}

/// Append `line` and a newline to the record at `path` (made if missing),
/// as the agent does.
pub(crate) fn append_line(path: &Path, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(f, "{line}").unwrap();
}

/// Every event of the ledger, parsed.
pub(crate) fn events(home: &Path) -> Vec<Value> {
    let out = run(home, &["export", "--format", "jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub(crate) fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

pub(crate) fn finalize(home: &Path) -> Value {
    let out = run(home, &["finalize", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_transcript_joins_the_hook_signals_once_and_is_followed_from_its_cursor() {
    let home = tempfile::tempdir().unwrap();
    let transcript = with_transcript(home.path());
    let summary = finalize(home.path());
    assert!(
        summary["record_signals"].as_u64().unwrap() >= 1,
        "{summary}"
    );
    let all = events(home.path());

    // What the transcript holds, read here.
    let text = std::fs::read_to_string(&transcript).unwrap();
    let mut texts = Vec::new();
    let mut usage_ids = BTreeSet::new();
    let mut tool_ids = BTreeSet::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] != "assistant" {
            continue;
        }
        let message = &v["message"];
        if message.get("usage").is_some() {
            usage_ids.insert(message["id"].as_str().unwrap().to_string());
        }
        for block in message["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => texts.push(block["text"].as_str().unwrap().to_string()),
                Some("tool_use") => {
                    tool_ids.insert(block["id"].as_str().unwrap().to_string());
                }
                _ => {}
            }
        }
    }
    assert!(
        !texts.is_empty() && !tool_ids.is_empty(),
        "the scenario has both"
    );

    let assistant: Vec<String> = of_type(&all, "message.assistant")
        .iter()
        .map(|e| e["payload"]["text"].as_str().unwrap_or("").to_string())
        .collect();
    for t in &texts {
        assert_eq!(
            assistant.iter().filter(|a| a.contains(t.as_str())).count(),
            1,
            "assistant text {t:?} is recorded once"
        );
    }
    // Model calls (the cost reports of Claude Code's running total carry
    // no message id and no tokens).
    let usage: Vec<&Value> = of_type(&all, "usage.reported")
        .into_iter()
        .filter(|e| !e["payload"]["message_id"].is_null())
        .collect();
    let recorded_usage: BTreeSet<String> = usage
        .iter()
        .map(|e| e["payload"]["message_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(usage.len(), usage_ids.len(), "one usage per message");
    assert_eq!(recorded_usage, usage_ids);
    for e in of_type(&all, "usage.reported")
        .into_iter()
        .chain(of_type(&all, "message.assistant"))
    {
        assert_eq!(e["provenance"]["attestation"], "record", "{e}");
    }

    // Each record tool call is joined to the hook span of the same id.
    let requests: BTreeMap<String, String> = of_type(&all, "tool.requested")
        .iter()
        .map(|e| {
            (
                e["payload"]["tool_call_id"].as_str().unwrap().to_string(),
                e["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let recorded = of_type(&all, "tool.recorded");
    for id in &tool_ids {
        let joined: Vec<_> = recorded
            .iter()
            .filter(|e| e["payload"]["tool_call_id"] == id.as_str())
            .collect();
        assert!(!joined.is_empty(), "tool call {id} is recorded");
        for e in joined {
            assert_eq!(
                e["payload"]["span_request_event_id"].as_str(),
                requests.get(id).map(String::as_str),
                "{e}"
            );
        }
    }
    for cmd in [["validate"], ["verify"]] {
        let out = run(home.path(), &cmd);
        assert!(out.status.success(), "{cmd:?}: {}", stdout(&out));
    }

    // Nothing new: nothing added. One new line: one new message.
    let before = all.len();
    finalize(home.path());
    assert_eq!(
        events(home.path()).len(),
        before,
        "a second run adds nothing"
    );
    append_line(
        &transcript,
        &format!(
            r#"{{"type":"user","message":{{"role":"user","content":"one more thing"}},"uuid":"u-extra","timestamp":"2026-11-30T00:00:00.000Z","sessionId":"{SCENARIO_SESSION}"}}"#
        ),
    );
    finalize(home.path());
    let after = events(home.path());
    let users: Vec<_> = of_type(&after, "message.user")
        .into_iter()
        .filter(|e| e["payload"]["text"] == "one more thing")
        .collect();
    assert_eq!(users.len(), 1, "the appended line is read once");
    assert_eq!(after.len(), before + 1);

    // Bytes changed under the cursor: one loud problem, then silence.
    let mut bytes = std::fs::read(&transcript).unwrap();
    let at = bytes.len() - 10;
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    std::fs::write(&transcript, &bytes).unwrap();
    finalize(home.path());
    finalize(home.path());
    let problems: Vec<_> = of_type(&events(home.path()), "record.problem")
        .into_iter()
        .map(|e| e["payload"]["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(problems, ["rewritten"]);
    let health = run(home.path(), &["health"]);
    assert!(stdout(&health).contains("rewritten"), "{}", stdout(&health));
}

#[test]
fn a_transcript_that_is_gone_is_a_problem_and_the_hooks_still_land() {
    let home = tempfile::tempdir().unwrap();
    let transcript = transcript_place(home.path());
    feed(home.path(), &transcript);
    // Past the grace after the first prompt (the hooks' times are the
    // wall clock's).
    let summary = finalize_at(home.path(), FAR_LATER);
    assert!(
        summary["events_appended"].as_u64().unwrap() > 1,
        "{summary}"
    );
    let all = events(home.path());
    let problems = of_type(&all, "record.problem");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["payload"]["kind"], "missing");
    assert!(!of_type(&all, "tool.requested").is_empty());
    finalize_at(home.path(), FAR_LATER);
    assert_eq!(of_type(&events(home.path()), "record.problem").len(), 1);
}

/// Well past any grace, by the wall clock the hooks stamp their signals
/// with.
const FAR_LATER: &str = "2100-01-01T00:00:00Z";

/// The wall clock now, for a finalize that runs just after the hooks.
fn wall_now() -> String {
    let ns = harnery::clock::wall_now_ns();
    harnery::clock::format_ns(ns)
}

fn problems(home: &Path) -> Vec<String> {
    of_type(&events(home), "record.problem")
        .iter()
        .map(|e| e["payload"]["kind"].as_str().unwrap().to_string())
        .collect()
}

fn health(home: &Path) -> (Option<i32>, String) {
    let out = common::harnery(home)
        .args(["health", "--now", FAR_LATER])
        .output()
        .unwrap();
    (out.status.code(), stdout(&out))
}

/// Every `tool.recorded` names the hook span it joined.
fn assert_every_call_joined(all: &[Value]) {
    let recorded = of_type(all, "tool.recorded");
    assert!(!recorded.is_empty());
    for r in recorded {
        assert!(
            r["payload"]["span_request_event_id"].is_string(),
            "unjoined: {r}"
        );
        assert_ne!(r["payload"]["tool_name"], "unknown", "{r}");
    }
}

/// Claude Code writes its transcript only at the session's first prompt: a
/// finalize that runs between `SessionStart` and that moment finds it
/// pending, not missing, and keeps the hook requests for joining.
#[test]
fn a_finalize_right_after_session_start_reports_nothing_missing() {
    let home = tempfile::tempdir().unwrap();
    let transcript = transcript_place(home.path());
    write_part(home.path(), &transcript, 0..0, &[0]);
    assert!(!transcript.exists());
    finalize_at(home.path(), FAR_LATER);
    assert!(problems(home.path()).is_empty());
    write_part(
        home.path(),
        &transcript,
        0..usize::MAX,
        &[1, 2, 3, 4, 5, 6, 7, 8],
    );
    finalize_at(home.path(), FAR_LATER);
    let all = events(home.path());
    assert!(of_type(&all, "record.problem").is_empty());
    assert_every_call_joined(&all);
    let (code, text) = health(home.path());
    assert_eq!(code, Some(0), "{text}");
}

/// A session opened and quit without a prompt has no transcript, and
/// nothing is missing.
#[test]
fn a_session_without_a_prompt_has_no_record_to_miss() {
    let home = tempfile::tempdir().unwrap();
    let transcript = transcript_place(home.path());
    write_part(home.path(), &transcript, 0..0, &[0, 8]);
    finalize_at(home.path(), FAR_LATER);
    finalize_at(home.path(), FAR_LATER);
    assert!(problems(home.path()).is_empty());
    assert_eq!(health(home.path()).0, Some(0));
}

/// Just after the first prompt the record is still pending; past the
/// grace it is missing (and loud); once it appears the condition clears,
/// and the calls made meanwhile join their hook spans.
#[test]
fn a_missing_record_is_reported_after_the_grace_and_clears_when_it_appears() {
    let home = tempfile::tempdir().unwrap();
    let transcript = transcript_place(home.path());
    write_part(home.path(), &transcript, 0..0, &[0, 1, 2, 3]);
    finalize_at(home.path(), &wall_now());
    assert!(
        problems(home.path()).is_empty(),
        "pending just after the prompt"
    );
    finalize_at(home.path(), FAR_LATER);
    assert_eq!(problems(home.path()), ["missing"]);
    let (code, text) = health(home.path());
    assert_eq!(code, Some(1));
    assert!(text.contains("reported:record_missing"), "{text}");

    write_part(home.path(), &transcript, 0..usize::MAX, &[4, 5, 6, 7, 8]);
    finalize_at(home.path(), FAR_LATER);
    let all = events(home.path());
    assert_every_call_joined(&all);
    let (code, text) = health(home.path());
    assert_eq!(code, Some(0), "cleared: {text}");
}

/// A finished session whose transcript the agent deleted after it was read
/// is `removed`: a note in `health` (exit 0), and the session's last
/// activity does not move.
#[test]
fn a_record_the_agent_deleted_is_removed_a_note_and_last_does_not_move() {
    let home = tempfile::tempdir().unwrap();
    let transcript = with_transcript(home.path());
    finalize(home.path());
    let last = |home: &Path| {
        let out = run(home, &["sessions", "--json"]);
        let v: Value = serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap();
        v["last_unix_ns"].as_i64().unwrap()
    };
    let before = last(home.path());
    let listed = stdout(&run(home.path(), &["sessions", "--json"]));
    assert!(!listed.contains("\"record\""), "{listed}");
    std::fs::remove_file(&transcript).unwrap();
    finalize_at(home.path(), FAR_LATER);
    finalize_at(home.path(), FAR_LATER);
    assert_eq!(problems(home.path()), ["removed"]);
    assert_eq!(last(home.path()), before);
    let out = common::harnery(home.path())
        .args(["health", "--json", "--now", FAR_LATER])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let notes: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0]["code"], "reported:record_removed");
    assert_eq!(notes[0]["note"], true);
    // `sessions` says so, in JSON and under the table.
    let listed = stdout(&run(home.path(), &["sessions", "--json"]));
    let v: Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    assert_eq!(v["record"], "removed", "{listed}");
    let table = stdout(&run(home.path(), &["sessions"]));
    let id = v["session"]["session_id"].as_str().unwrap().to_string();
    let note = table.lines().last().unwrap();
    assert!(
        note.starts_with("record removed by the agent, history only in harnery: ")
            && note.contains(&id),
        "{table}"
    );
}

/// Generation 2 ships the way every contract change does: from the home
/// generation 1 wrote, `finalize` names the advance and drains nothing,
/// `epoch advance` archives the old epoch, and the record's events land in
/// the new one.
#[test]
fn generation_two_ships_by_an_epoch_advance_from_the_generation_one_home() {
    let home = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/epoch/gen1/home");
    common::copy_tree(&fixture, home.path());
    let refused = run(home.path(), &["finalize"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
    assert!(
        stderr(&refused).contains("epoch advance"),
        "{}",
        stderr(&refused)
    );

    let out = run(home.path(), &["epoch", "advance"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A later build advances it straight to its own generation, which
    // still reads the agent's records.
    common::live_epoch_is_current_and_anchored(home.path());

    with_transcript(home.path());
    finalize(home.path());
    let all = events(home.path());
    assert!(!of_type(&all, "message.assistant").is_empty());
    assert!(!of_type(&all, "usage.reported").is_empty());
    // Generation 1 stays readable: its archived rows come back with the
    // live ones, each line tagged with its epoch.
    assert!(common::both_epochs_stay_readable(home.path()) > all.len());
}

/// A copy of the home an older generation wrote (`tests/fixtures/epoch/<gen>`):
/// `finalize` refuses it until `epoch advance`, which then succeeds; the
/// home and the new live epoch's genesis.
pub(crate) fn advanced_from(generation: &str) -> (tempfile::TempDir, serde_json::Value) {
    let home = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/epoch")
        .join(generation)
        .join("home");
    common::copy_tree(&fixture, home.path());
    let refused = run(home.path(), &["finalize"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
    assert!(stderr(&refused).contains("epoch advance"));
    let out = run(home.path(), &["epoch", "advance"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let live = common::live_epoch_is_current_and_anchored(home.path());
    (home, live)
}

/// Generation 4 (usage token kinds normalized, the agent's numbers kept as
/// `raw`) ships by an epoch advance from the home generation 3 wrote (built
/// by main before generation 4): the old rows stay readable beside the new.
#[test]
fn generation_four_ships_by_an_epoch_advance_from_the_generation_three_home() {
    let (home, live) = advanced_from("gen3");
    // Advanced to this build's generation (4, or a later one since).
    assert!(
        live.to_string()
            .contains(&harnery::contract::schema_digest_hex()),
        "{live}"
    );

    with_transcript(home.path());
    finalize(home.path());
    let all = events(home.path());
    let usage = of_type(&all, "usage.reported");
    assert!(!usage.is_empty());
    assert!(
        usage
            .iter()
            .filter(|u| !u["payload"]["message_id"].is_null())
            .all(|u| u["payload"]["raw"].is_object()),
        "{usage:?}"
    );
    // Generation 3's rows read on beside generation 4's.
    assert!(common::both_epochs_stay_readable(home.path()) > all.len());
    let out = run(home.path(), &["sessions", "--epoch", "all", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The fixture's four sessions (the two Claude Code ones go on here).
    assert!(stdout(&out).lines().count() >= 4, "{}", stdout(&out));
    let out = run(home.path(), &["usage", "--epoch", "all", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for cmd in ["validate", "verify"] {
        let out = run(home.path(), &[cmd]);
        assert!(out.status.success(), "{cmd}: {}", stdout(&out));
    }
}

/// Generation 5 (the agent's own totals, `usage.summary`) ships by an
/// epoch advance from the home generation 4 wrote (built by main before
/// generation 5): the old rows stay readable beside a Copilot session
/// recorded after the advance with its own totals.
#[test]
fn generation_five_ships_by_an_epoch_advance_from_the_generation_four_home() {
    let (home, live) = advanced_from("gen4");
    // Advanced to this build's generation (5, or a later one since).
    assert!(
        live.to_string()
            .contains(&harnery::contract::schema_digest_hex()),
        "{live}"
    );

    // A Copilot session after the advance, its record on this machine.
    let copilot_home = home.path().join("copilot");
    let session = "bbf92ffe-5f53-473e-a34d-68d043380e76";
    let dir = copilot_home.join("session-state").join(session);
    std::fs::create_dir_all(&dir).unwrap();
    let record = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/records/copilot/hook-exit2-preToolUse.events.jsonl");
    std::fs::copy(&record, dir.join("events.jsonl")).unwrap();
    let events_file = dir.join("events.jsonl");
    common::copilot_hooks(home.path(), "hook-exit2-preToolUse", &events_file);
    let out = common::harnery(home.path())
        .env("HARNERY_RECORDS", "on")
        .env("COPILOT_HOME", &copilot_home)
        .arg("finalize")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(home.path(), &["usage", "--epoch", "all", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["total"]["agent_totals"]["requests"].as_u64() > Some(0),
        "{v:#}"
    );
    assert!(common::both_epochs_stay_readable(home.path()) > 0);
    let out = run(home.path(), &["sessions", "--epoch", "all", "--json"]);
    assert!(stdout(&out).lines().count() >= 4, "{}", stdout(&out));
    for cmd in ["validate", "verify"] {
        let out = run(home.path(), &[cmd, "--epoch", "all"]);
        assert!(out.status.success(), "{cmd}: {}", stdout(&out));
    }
}

/// A record with bytes `finalize` has not read, last changed close to the
/// agent's cleanup period, is a health warning until it is read.
#[test]
fn an_unread_record_near_the_cleanup_period_is_a_warning() {
    let home = tempfile::tempdir().unwrap();
    let transcript = with_transcript(home.path());
    finalize(home.path());
    let quiet = run(home.path(), &["health"]);
    assert!(
        !stdout(&quiet).contains("record_unread"),
        "{}",
        stdout(&quiet)
    );
    // Bytes the agent wrote that no finalize has read yet, 25 days ago.
    append_line(
        &transcript,
        r#"{"type":"user","message":{"role":"user","content":"late"}}"#,
    );
    let now = std::time::UNIX_EPOCH
        + std::time::Duration::from_nanos(
            harnery::clock::parse_rfc3339_ns(common::NOW).unwrap() as u64
        );
    std::fs::File::options()
        .append(true)
        .open(&transcript)
        .unwrap()
        .set_modified(now - std::time::Duration::from_secs(25 * 24 * 3600))
        .unwrap();
    let warned = run(home.path(), &["health"]);
    assert_eq!(warned.status.code(), Some(1));
    assert!(
        stdout(&warned).contains("record_unread_near_cleanup"),
        "{}",
        stdout(&warned)
    );
    finalize(home.path());
    let read = run(home.path(), &["health"]);
    assert!(
        !stdout(&read).contains("record_unread"),
        "{}",
        stdout(&read)
    );
}

/// A record read in many small passes in one run gives the same events as
/// one pass: each pass is drained before the next reads on. The pass size
/// is a test knob, read only by failpoint builds.
#[cfg(feature = "failpoints")]
#[test]
fn many_small_passes_give_what_one_pass_gives() {
    let mut texts = Vec::new();
    for pass in [None, Some("4096")] {
        let home = tempfile::tempdir().unwrap();
        with_transcript(home.path());
        let mut cmd = common::harnery(home.path());
        cmd.env("HARNERY_RECORDS", "on")
            .args(["finalize", "--json"]);
        if let Some(bytes) = pass {
            cmd.env("HARNERY_RECORD_PASS_BYTES", bytes);
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        let signals = summary["record_signals"].as_u64().unwrap();
        if pass.is_some() {
            assert!(signals >= 2, "{signals} passes");
        }
        // The same but for where the home is (in paths, and so in ids).
        let record: Vec<String> = events(home.path())
            .into_iter()
            .filter(|e| e["provenance"]["attestation"] == "record")
            .map(|e| {
                let mut p = e["payload"].clone();
                p["record"]["path"] = Value::Null;
                if let Some(span) = p.get_mut("span_request_event_id") {
                    *span = Value::Bool(span.is_string());
                }
                p.to_string()
            })
            .collect();
        texts.push(record);
    }
    assert!(!texts[0].is_empty());
    assert_eq!(texts[0], texts[1]);
}

/// `harnery finalize --json` at the time `now`.
fn finalize_at(home: &Path, now: &str) -> Value {
    let out = common::harnery(home)
        .env("HARNERY_RECORDS", "on")
        .env("HARNERY_NOW", now)
        .args(["finalize", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Append lines `from..to` of the scenario's transcript to `to_file`, and
/// feed hooks `hooks` of its hook capture (pointed at `to_file`).
fn write_part(home: &Path, to_file: &Path, lines: std::ops::Range<usize>, hooks: &[usize]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(SCENARIO_TRANSCRIPT)).unwrap();
    for line in text.lines().skip(lines.start).take(lines.len()) {
        append_line(to_file, line);
    }
    if !lines.is_empty() {
        // Written a minute ago: a finalizer reading it to its end keeps its
        // stamp at once (a file written within the last 2 s is stamped by a
        // later pass), so what each pass reads does not hang on how fast
        // this test runs.
        let file = std::fs::File::options().append(true).open(to_file).unwrap();
        let ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        file.set_modified(ago).unwrap();
    }
    feed_hooks(home, to_file, |n| hooks.contains(&n));
}

/// The `basic` transcript's one tool call (line 21, written at
/// 00:38:47.369Z); Claude Code runs `PreToolUse` (hook 3) just after it.
const CALL_LINE: usize = 21;
const PRE_TOOL_USE: usize = 3;
const JUST_AFTER: &str = "2026-11-30T00:38:47.400Z";
const STILL_YOUNG: &str = "2026-11-30T00:38:47.450Z";
const SETTLED: &str = "2026-11-30T00:39:30Z";

/// A finalizer that reads the record between the agent writing a call and
/// its hook spooling `PreToolUse` does not report the hook signal lost: the
/// call waits (30 s by its line's time) for the request, then joins it;
/// the record need not grow for that to happen.
#[test]
fn a_call_read_before_its_hook_waits_for_it_and_joins() {
    let home = tempfile::tempdir().unwrap();
    let transcript = transcript_place(home.path());
    write_part(home.path(), &transcript, 0..CALL_LINE + 1, &[0, 1, 2]);
    let call_id = |all: &[Value]| {
        of_type(all, "tool.recorded")
            .into_iter()
            .cloned()
            .collect::<Vec<Value>>()
    };
    finalize_at(home.path(), JUST_AFTER);
    assert!(call_id(&events(home.path())).is_empty(), "held");

    write_part(home.path(), &transcript, 0..0, &[PRE_TOOL_USE]);
    let summary = finalize_at(home.path(), STILL_YOUNG);
    assert_eq!(summary["record_signals"], 0, "not due yet: {summary}");
    assert!(call_id(&events(home.path())).is_empty(), "still held");

    let summary = finalize_at(home.path(), SETTLED);
    assert_eq!(summary["record_signals"], 1, "one empty chunk: {summary}");
    let all = events(home.path());
    let request = of_type(&all, "tool.requested")[0]["id"].clone();
    let recorded = call_id(&all);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0]["payload"]["span_request_event_id"], request);
    assert_eq!(
        recorded[0]["time_unix_ns"], 1_795_999_127_369_000_000_i64,
        "at its own line's time"
    );
    let summary = finalize_at(home.path(), SETTLED);
    assert_eq!(summary["record_signals"], 0, "settled once: {summary}");

    // The rest of the session: the call's result joins the same span, and
    // its start is recorded once.
    write_part(
        home.path(),
        &transcript,
        CALL_LINE + 1..usize::MAX,
        &[4, 5, 6, 7, 8],
    );
    finalize_at(home.path(), SETTLED);
    let all = events(home.path());
    let recorded = call_id(&all);
    assert_eq!(recorded.len(), 2, "start and result: {recorded:?}");
    assert!(
        recorded
            .iter()
            .all(|e| e["payload"]["span_request_event_id"] == request)
    );
    for cmd in ["validate", "verify"] {
        let out = run(home.path(), &[cmd]);
        assert!(out.status.success(), "{cmd}: {}", stdout(&out));
    }
}

/// A call whose hook never comes is recorded without a span once it has
/// waited: the evidence that a hook signal was lost.
#[test]
fn a_call_whose_hook_never_comes_is_recorded_without_a_span() {
    let home = tempfile::tempdir().unwrap();
    let transcript = transcript_place(home.path());
    write_part(home.path(), &transcript, 0..CALL_LINE + 1, &[0, 1, 2]);
    finalize_at(home.path(), JUST_AFTER);
    assert!(of_type(&events(home.path()), "tool.recorded").is_empty());
    finalize_at(home.path(), SETTLED);
    let all = events(home.path());
    let recorded = of_type(&all, "tool.recorded");
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(recorded[0]["payload"]["span_request_event_id"].is_null());
    assert!(of_type(&all, "tool.requested").is_empty());
}

/// Sessions enough that the record pass hands them to its followers
/// several at a time (163: jobs of 5 on two cores, of 2 on four or more,
/// the last one short): every session is followed once, from its own
/// state, and none is lost at the end of a job or of the pass. Half of
/// them have their transcript (a copy of the scenario's, naming the
/// session), half have none.
#[test]
fn many_sessions_are_each_followed_once() {
    let home = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let transcript = std::fs::read_to_string(root.join(SCENARIO_TRANSCRIPT)).unwrap();
    let hooks =
        std::fs::read_to_string(root.join("tests/fixtures/claude-code/basic/hooks.jsonl")).unwrap();
    let start_and_prompt: Vec<&str> = hooks.lines().take(2).collect();
    let dir = home.path().join("claude/projects/-tmp-proj");
    std::fs::create_dir_all(&dir).unwrap();
    let sessions: Vec<String> = (0..163)
        .map(|i| format!("{i:08x}-0000-4000-8000-000000000000"))
        .collect();
    for (i, sid) in sessions.iter().enumerate() {
        let path = dir.join(format!("{sid}.jsonl"));
        if i % 2 == 0 {
            std::fs::write(&path, transcript.replace(SCENARIO_SESSION, sid)).unwrap();
        }
        for line in &start_and_prompt {
            let mut payload: Value = serde_json::from_str(line).unwrap();
            payload["session_id"] = Value::String(sid.clone());
            payload["transcript_path"] = Value::String(path.display().to_string());
            hook(home.path(), &payload);
        }
    }
    finalize_at(home.path(), FAR_LATER);
    let all = events(home.path());
    let by_session = |ty: &str| {
        let mut n = BTreeMap::<String, usize>::new();
        for e in of_type(&all, ty) {
            *n.entry(e["session"]["session_id"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
        n
    };
    let (answers, problems) = (
        by_session("message.assistant"),
        by_session("record.problem"),
    );
    let first = answers[&sessions[0]];
    assert!(first > 0);
    for (i, sid) in sessions.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!(answers.get(sid), Some(&first), "{sid}");
            assert_eq!(problems.get(sid), None, "{sid}");
        } else {
            assert_eq!(answers.get(sid), None, "{sid}");
            assert_eq!(problems.get(sid), Some(&1), "{sid}");
        }
    }
    assert_eq!(answers.len() + problems.len(), sessions.len());
}
