//! The session log over Copilot's corpus runs: resumes with and without a
//! restore, the restore policy and its shims (CLI and SDK), and turn
//! checkpoints that take their commit from the agent's record.

use crate::common;
use crate::restore::session_log_support;

use std::path::Path;

use common::{stderr, stdout};
use harnery::home::Home;
use harnery::ledger::LedgerReader;
use serde_json::Value;
use session_log_support::*;

/// Copilot's `resume-1-first-run`, finalized; its events.
fn copilot_first_run(home: &Path) -> Vec<Value> {
    feed(home, "copilot", &lines("copilot", "resume-1-first-run"));
    ok(home, &["finalize"]);
    replay(home, COPILOT_RESUME, &[])
}

/// Then `resume-2-resumed-run`, finalized; the session's events.
fn copilot_second_run(home: &Path) -> Vec<Value> {
    feed(home, "copilot", &lines("copilot", "resume-2-resumed-run"));
    ok(home, &["finalize"]);
    replay(home, COPILOT_RESUME, &[])
}

#[test]
fn copilot_resume_without_a_restore_supersedes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let first = copilot_first_run(home.path());
    let all = copilot_second_run(home.path());
    assert_eq!(ids(&all[..first.len()]), ids(&first), "leg one unchanged");
    let resumed = &all[first.len()];
    assert_eq!(resumed["type"], "session.resumed");
    assert_eq!(resumed["payload"]["evidence"], "agent_resume");
    assert_eq!(resumed["payload"]["boundary_offset"], first.len() as u64);
    let empty = serde_json::json!({"from": first.len(), "to": first.len()});
    assert_eq!(resumed["payload"]["superseded"], empty);
    assert_eq!(resumed["payload"]["incarnation"], 2);
    assert!(all[first.len()..].iter().all(|e| e["incarnation"] == 2));
    // Each leg's agentStop pinned a checkpoint, stamped turns and all.
    let log = json(home.path(), &["checkpoints", COPILOT_RESUME, "--json"]);
    let cps = log["checkpoints"].as_array().unwrap();
    assert_eq!(cps.len(), 2, "{log:#}");
    assert_eq!(cps[0]["incarnation"], 1);
    assert_eq!(cps[1]["incarnation"], 2);
    assert_eq!(cps[0]["effects"][0]["tool_name"], "bash");
    assert!(
        cps[0]["effects"][0]["command"]
            .as_str()
            .unwrap()
            .contains("hello-from-fake-model")
    );
}

#[test]
fn a_killed_copilot_session_restores_through_the_policy_and_resumes() {
    let home = tempfile::tempdir().unwrap();
    // The checkpoint goes in before the tool call the kill interrupted.
    let killed = lines("copilot", "interrupted-sigkill-1-killed");
    assert!(killed[6].contains("\"preToolUse\""), "{}", killed[6]);
    feed(home.path(), "copilot", &killed[..6]);
    ok(
        home.path(),
        &["checkpoint", COPILOT_KILLED, "--id", "before-kill"],
    );
    feed(home.path(), "copilot", &killed[6..]);
    ok(home.path(), &["finalize"]);
    let first = replay(home.path(), COPILOT_KILLED, &[]);
    // The checkpoint went in before the prompt, so Copilot's own resume
    // would hand the model the turn past it, and the archive holds no
    // record to put back: no command is offered (none that would fail),
    // whatever the transport, and `--record` records nothing.
    let empty = tempfile::tempdir().unwrap();
    let bare = restore_json(home.path(), COPILOT_KILLED, empty.path(), &["--record"]);
    assert_eq!(bare["shim"]["runnable"], false, "{:#}", bare["shim"]);
    assert!(bare["shim"].get("program").is_none());
    let (copilot_home, _) =
        copilot_home_with_record(COPILOT_KILLED, "interrupted-sigkill-1-killed");
    let sdk_args = ["--dry-run", "--transport", "sdk"];
    let sdk = restore_json(home.path(), COPILOT_KILLED, copilot_home.path(), &sdk_args);
    assert_eq!(sdk["shim"]["runnable"], false, "{:#}", sdk["shim"]);
    let text = ok(
        home.path(),
        &[
            "restore",
            COPILOT_KILLED,
            "--record",
            "--copilot-home",
            copilot_home.path().to_str().unwrap(),
        ],
    );
    assert!(text.contains("resume: none"), "{text}");
    assert!(
        text.contains("none resumes this session exactly at the checkpoint"),
        "{text}"
    );
    let restore = record_restore(home.path(), "copilot", COPILOT_KILLED, "before-kill");
    let boundary = restore["seed"]["boundary_offset"].as_u64().unwrap();
    let seeded = restore["seed"]["events"].as_array().unwrap();
    assert_eq!(ids(seeded), ids(&first[..boundary as usize]));

    feed(
        home.path(),
        "copilot",
        &lines("copilot", "interrupted-sigkill-2-resumed"),
    );
    ok(home.path(), &["finalize"]);
    let all = replay(home.path(), COPILOT_KILLED, &["--include-superseded"]);
    assert_eq!(of_type(&all, "restore.recorded").len(), 1, "the native one");
    let resumed = of_type(&all, "session.resumed");
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0]["payload"]["evidence"], "restore");
    assert_eq!(resumed[0]["payload"]["checkpoint_id"], "before-kill");
    assert_eq!(resumed[0]["payload"]["incarnation"], 2);
    // The killed leg's unfinished tool call is superseded: the live line
    // and the audit leave it out; --include-superseded counts it.
    let superseded: Vec<&Value> = all.iter().filter(|e| e["superseded"] == true).collect();
    assert!(
        superseded.iter().any(|e| e["type"] == "tool.requested"),
        "{superseded:?}"
    );
    let audit = |extra: &[&str]| {
        let mut args = vec!["audit", "--session", COPILOT_KILLED, "--json"];
        args.extend_from_slice(extra);
        let out = run(home.path(), &args);
        serde_json::from_str::<Value>(stdout(&out).lines().next().unwrap()).unwrap()
    };
    let with = audit(&["--include-superseded"]);
    let without = audit(&[]);
    assert_ne!(with["reasons"], without["reasons"], "{with} / {without}");
    // Session rows from before the resume count (its column and migration
    // taken away, read as they are): the resume is found from the events,
    // and the reasons are the same.
    let dir = LedgerReader::live_dir(&Home::at(home.path()));
    let conn = rusqlite::Connection::open(dir.join("ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    conn.execute_batch(
        "ALTER TABLE sessions DROP COLUMN resumes; \
         DELETE FROM migrations WHERE name LIKE '%_session_resumes';",
    )
    .unwrap();
    drop(conn);
    let ledger = LedgerReader::open_dir(&dir, None).unwrap();
    let session = ledger.sessions().resolve(COPILOT_KILLED).unwrap();
    assert_eq!(ledger.sessions().resumes(&session).unwrap(), None);
    let reasons = harnery::report::stored_reasons::part_reasons(&ledger, &session).unwrap();
    assert_eq!(serde_json::json!(reasons), without["reasons"]);
    drop(ledger);
    let receipts = run(home.path(), &["receipts", COPILOT_KILLED, "--json"]);
    assert!(receipts.status.success(), "{}", stderr(&receipts));
    superseded_turns_are_marked(home.path(), COPILOT_KILLED, &all);
}

/// With the agent's own record followed, a Copilot turn's checkpoint is
/// pinned after the record's account of the turn, with the head commit the
/// record's `session.start` names.
#[test]
fn a_copilot_turn_checkpoint_takes_the_head_commit_from_the_record() {
    let home = tempfile::tempdir().unwrap();
    let (copilot_home, record) = copilot_home_with_record(COPILOT_RESUME, "resume-1-first-run");
    // The hooks name the record where it was captured: point them here.
    let here = record.display().to_string();
    for line in lines("copilot", "resume-1-first-run") {
        let mut v: Value = serde_json::from_str(&line).unwrap();
        if let Some(raw) = v["stdin_raw"].as_str()
            && let Ok(mut payload) = serde_json::from_str::<Value>(raw)
        {
            if payload.get("transcriptPath").is_some() {
                payload["transcriptPath"] = here.clone().into();
            }
            v["stdin_raw"] = payload.to_string().into();
        }
        common::deliver(home.path(), "copilot", &v.to_string());
    }
    let out = common::harnery(home.path())
        .env("HARNERY_RECORDS", "on")
        .env("COPILOT_HOME", copilot_home.path())
        .arg("finalize")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let events = replay(home.path(), COPILOT_RESUME, &[]);
    assert!(!of_type(&events, "message.assistant").is_empty());
    let cps = of_type(&events, "checkpoint.recorded");
    assert_eq!(cps.len(), 1);
    let cp = cps[0];
    assert_eq!(
        cp["payload"]["commit"]["observed"],
        "359e604ddf561ef3842327fe2c8cd192f795f7ef"
    );
    assert_eq!(cp["payload"]["commit_source"], "record");
    let last_record = events
        .iter()
        .filter(|e| e["provenance"]["attestation"] == "record")
        .map(|e| e["offset"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(
        cp["payload"]["offset"].as_u64().unwrap() > last_record,
        "{cp}"
    );
    // Copilot's hooks name no call id or exit code; the checkpoint's tool
    // effect shows the record's, joined to its span.
    let joined: Vec<&Value> = of_type(&events, "tool.recorded")
        .into_iter()
        .filter(|r| r["payload"]["span_request_event_id"].is_string())
        .collect();
    assert!(!joined.is_empty());
    let out = run(home.path(), &["checkpoints", COPILOT_RESUME, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let effects = listed["checkpoints"][0]["effects"].as_array().unwrap();
    // The last the record says of a call (its result) names the exit code.
    let last: std::collections::BTreeMap<String, &Value> = joined
        .into_iter()
        .map(|r| (r["payload"]["span_request_event_id"].to_string(), r))
        .collect();
    for r in last.values() {
        let span = &r["payload"]["span_request_event_id"];
        let effect = effects.iter().find(|e| e["ref"] == *span).unwrap();
        assert_eq!(
            effect["tool_call_id"], r["payload"]["tool_call_id"],
            "{effect}"
        );
        assert_eq!(effect["exit_code"], r["payload"]["exit_code"], "{effect}");
    }
}

/// The Copilot SDK's create-then-resume run: its hooks (as its record logs
/// each hook's input) prompt before the resumed leg's `sessionStart`; the
/// ledger records one resume, before that prompt, and the restore shim is
/// the SDK's `resumeSession`.
#[test]
fn a_copilot_sdk_session_resumes_once_and_restores_through_resume_session() {
    const SDK: &str = "0a9af379-2103-4817-b8ed-722e7c4eaed6";
    let record = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/records/copilot/sdk-create-resume.events.jsonl");
    let frames: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let cut = frames
        .iter()
        .position(|f| f["type"] == "session.resume")
        .expect("the record shows the resume");
    let hooks = |frames: &[Value]| -> Vec<String> {
        frames
            .iter()
            .filter(|f| f["type"] == "hook.start")
            .map(|f| {
                serde_json::json!({
                    "event": f["data"]["hookType"],
                    "stdin_raw": f["data"]["input"].to_string(),
                })
                .to_string()
            })
            .collect()
    };
    let home = tempfile::tempdir().unwrap();
    feed(home.path(), "copilot", &hooks(&frames[..cut]));
    ok(home.path(), &["finalize"]);
    let first = replay(home.path(), SDK, &[]);
    feed(home.path(), "copilot", &hooks(&frames[cut..]));
    ok(home.path(), &["finalize"]);
    let all = replay(home.path(), SDK, &[]);
    assert_eq!(ids(&all[..first.len()]), ids(&first));
    let resumed = of_type(&all, "session.resumed");
    assert_eq!(resumed.len(), 1, "one resume for the leg");
    assert_eq!(
        resumed[0]["offset"],
        first.len() as u64,
        "before its prompt"
    );
    assert_eq!(resumed[0]["payload"]["evidence"], "prompt_after_end");
    assert_eq!(resumed[0]["payload"]["incarnation"], 2);
    let prompts = of_type(&all, "prompt.submitted");
    let again = prompts
        .iter()
        .find(|p| p["payload"]["prompt"] == "Run it again.")
        .unwrap();
    assert_eq!(again["incarnation"], 2);
    let log = json(home.path(), &["checkpoints", SDK, "--json"]);
    assert_eq!(log["checkpoints"].as_array().unwrap().len(), 2, "{log:#}");

    let (copilot_home, _) = copilot_home_with_record(SDK, "sdk-create-resume");
    let sdk_args = ["--dry-run", "--transport", "sdk"];
    let restore = restore_json(home.path(), SDK, copilot_home.path(), &sdk_args);
    assert_eq!(restore["shim"]["call"], "resumeSession");
    assert_eq!(restore["shim"]["arguments"], serde_json::json!([SDK]));
    assert_eq!(
        restore["seed"]["events"].as_array().unwrap().len(),
        all.len()
    );
}

/// Copilot's `resume-1-first-run` / `resume-2-resumed-run`, with a restore
/// between them: the seed is the first run, and the resumed run goes on at
/// the seed's next offset as incarnation 2, on the restore's evidence.
#[test]
fn a_copilot_restore_seeds_the_first_run_and_the_resumed_run_follows() {
    let home = tempfile::tempdir().unwrap();
    let first = copilot_first_run(home.path());
    let (copilot_home, _) = copilot_home_with_record(COPILOT_RESUME, "resume-1-first-run");
    let restore = restore_json(
        home.path(),
        COPILOT_RESUME,
        copilot_home.path(),
        &["--record"],
    );
    let seed = &restore["seed"];
    assert_eq!(seed["events"].as_array().unwrap(), &first);
    assert_eq!(seed["next_offset"], first.len() as u64);
    // In the session's directory, which the checkpoint names.
    let cwd = of_type(&first, "session.started")[0]["payload"]["cwd"].clone();
    assert_eq!(restore["shim"]["cwd"], cwd);
    assert_eq!(
        restore["shim"]["text"],
        format!(
            "cd {} && copilot --resume {COPILOT_RESUME}",
            cwd.as_str().unwrap()
        )
    );
    let text = ok(
        home.path(),
        &[
            "restore",
            COPILOT_RESUME,
            "--dry-run",
            "--copilot-home",
            copilot_home.path().to_str().unwrap(),
        ],
    );
    assert!(text.contains("copilot --resume"), "{text}");
    assert!(text.contains("not recorded"), "{text}");
    let all = copilot_second_run(home.path());
    assert_eq!(all[first.len()]["type"], "restore.recorded");
    let resumed = &all[first.len() + 1];
    assert_eq!(resumed["type"], "session.resumed");
    assert_eq!(resumed["payload"]["evidence"], "restore");
    assert_eq!(resumed["payload"]["incarnation"], 2);
    assert!(all[first.len() + 1..].iter().all(|e| e["incarnation"] == 2));
    assert_eq!(of_type(&all, "session.resumed").len(), 1);
}
