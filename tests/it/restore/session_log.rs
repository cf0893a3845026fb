//! The session log of seed 004 (contract generation 3) over the real
//! binaries and the corpus resume scenarios: checkpoints (operator and
//! per native turn, first write wins), restore seeds and shims, resumes
//! that supersede a range and start the next incarnation, stale signals,
//! the replay range, and the advance from a home generation 2 wrote.
//! Copilot's runs are in `session_log_copilot`.

use crate::common;
use crate::restore::session_log_support;

use std::path::Path;

use common::{copy_tree, stderr};
use harnery::contract::{AdapterId, SessionRef};
use harnery::home::Home;
use harnery::ledger::LedgerReader;
use harnery::resume::log::{self, RangeError, ReplayError, SessionLog};
use serde_json::Value;
use session_log_support::*;

/// Leg one of the Claude Code `resume` scenario, with an operator
/// checkpoint right after its session start.
fn claude_first_leg(home: &Path) -> Vec<String> {
    let all = lines("claude-code", "resume");
    assert_eq!(all.len(), 16, "two legs of eight signals");
    feed(home, "claude-code", &all[..1]);
    ok(
        home,
        &[
            "checkpoint",
            CLAUDE,
            "--id",
            "early",
            "--commit",
            "abc123",
            "--effect",
            "deploy:staging-7",
        ],
    );
    feed(home, "claude-code", &all[1..8]);
    ok(home, &["finalize"]);
    all
}

#[test]
fn checkpoints_are_pinned_by_the_operator_and_at_each_native_turn() {
    let home = tempfile::tempdir().unwrap();
    claude_first_leg(home.path());
    let log = json(home.path(), &["checkpoints", CLAUDE, "--json"]);
    let cps = log["checkpoints"].as_array().unwrap();
    assert_eq!(cps.len(), 2, "{log:#}");
    let early = &cps[0];
    assert_eq!(early["checkpoint_id"], "early");
    assert_eq!(early["origin"], "operator");
    assert_eq!(early["commit"], serde_json::json!({"observed": "abc123"}));
    assert_eq!(early["commit_source"], "operator");
    assert_eq!(
        early["effects"],
        serde_json::json!([{"kind": "deploy", "ref": "staging-7"}])
    );
    // The checkpoint pins the offset after its own event.
    assert_eq!(early["offset"], early["event_offset"].as_u64().unwrap() + 1);

    let turn = &cps[1];
    assert_eq!(turn["checkpoint_id"], format!("turn:{CLAUDE_TURN_1}"));
    assert_eq!(turn["origin"], "turn");
    // Claude Code's hooks name no commit: it is unknown, with the reason.
    assert_eq!(
        turn["commit"],
        serde_json::json!({"unknown": "no_head_commit_known"})
    );
    let effects = turn["effects"].as_array().unwrap();
    assert_eq!(effects.len(), 1, "{effects:?}");
    assert_eq!(effects[0]["kind"], "tool");
    assert_eq!(effects[0]["tool_name"], "Bash");
    assert_eq!(effects[0]["outcome"], "success");
    assert!(effects[0]["tool_call_id"].is_string());
    assert!(effects[0]["command"].as_str().unwrap().contains("echo"));
    // The turn's checkpoint waits for what closes the turn (here the
    // session's end): it is pinned last, at the end of the finalize run.
    let events = replay(home.path(), CLAUDE, &[]);
    let done = of_type(&events, "turn.completed")[0]["offset"].as_u64();
    let ended = of_type(&events, "session.ended")[0]["offset"].as_u64();
    assert!(done < ended);
    assert_eq!(turn["event_offset"], events.len() as u64 - 1);
    assert_eq!(turn["offset"], events.len() as u64);
    assert_eq!(log["incarnation"], 1);

    // Latest and by id, as flags.
    let latest = json(home.path(), &["checkpoints", CLAUDE, "--latest", "--json"]);
    assert_eq!(latest["checkpoint_id"], turn["checkpoint_id"]);
    let by_id = json(
        home.path(),
        &["checkpoints", CLAUDE, "--id", "early", "--json"],
    );
    assert_eq!(by_id["commit"], early["commit"]);
    let text = ok(home.path(), &["checkpoints", CLAUDE]);
    assert!(text.contains("early") && text.contains("valid"), "{text}");
}

#[test]
fn the_first_checkpoint_under_an_id_wins() {
    let home = tempfile::tempdir().unwrap();
    claude_first_leg(home.path());
    ok(
        home.path(),
        &["checkpoint", CLAUDE, "--id", "early", "--commit", "fff999"],
    );
    ok(home.path(), &["finalize"]);
    let log = json(home.path(), &["checkpoints", CLAUDE, "--json"]);
    let early: Vec<&Value> = log["checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["checkpoint_id"] == "early")
        .collect();
    assert_eq!(early.len(), 1);
    assert_eq!(early[0]["commit"]["observed"], "abc123", "the first stands");
    let events = replay(home.path(), CLAUDE, &[]);
    let taken = of_type(&events, "health.condition");
    assert_eq!(taken.len(), 1, "the repeat is kept as a condition");
    assert_eq!(taken[0]["payload"]["code"], "checkpoint_id_taken");
    assert_eq!(of_type(&events, "checkpoint.recorded").len(), 2);
}

#[test]
fn a_restore_seeds_the_first_leg_and_the_resumed_leg_is_the_next_incarnation() {
    let home = tempfile::tempdir().unwrap();
    let all = claude_first_leg(home.path());
    let first_leg = replay(home.path(), CLAUDE, &[]);
    // Neither the agent's transcript nor harnery's archive of it is here
    // (record following off): no command is offered, and the restore is
    // recorded as `--record` records one whose resume is exact.
    let restore = record_restore(home.path(), "claude-code", CLAUDE, "latest");
    let seed = &restore["seed"];
    let boundary = seed["boundary_offset"].as_u64().unwrap();
    assert_eq!(
        seed["checkpoint"]["checkpoint_id"],
        format!("turn:{CLAUDE_TURN_1}")
    );
    let seeded: Vec<Value> = seed["events"].as_array().unwrap().clone();
    assert_eq!(seeded, first_leg, "the seed is the first leg");
    assert_eq!(boundary, first_leg.len() as u64);
    assert_eq!(
        seeded.last().unwrap()["type"],
        "checkpoint.recorded",
        "and ends with the checkpoint"
    );
    assert_eq!(seed["next_offset"], first_leg.len() as u64);
    assert_eq!(seed["next_incarnation"], 2);
    // The effect ledger up to the checkpoint: the operator's and the tool's.
    assert_eq!(seed["effects"].as_array().unwrap().len(), 2);
    let shim = &restore["shim"];
    assert_eq!(shim["runnable"], false, "{shim:#}");
    assert!(shim.get("program").is_none());
    // The session's directory: the checkpoint names it (generation 6),
    // even with the agent's record not followed.
    let cwd = of_type(&first_leg, "session.started")[0]["payload"]["cwd"].clone();
    assert_eq!(seed["checkpoint"]["cwd"], cwd);

    // The agent resumes (its SessionStart says `resume`).
    feed(home.path(), "claude-code", &all[8..]);
    ok(home.path(), &["finalize"]);
    let everything = replay(home.path(), CLAUDE, &["--include-superseded"]);
    let restored = of_type(&everything, "restore.recorded");
    assert_eq!(restored.len(), 1);
    let restore_at = restored[0]["offset"].as_u64().unwrap();
    assert_eq!(
        restore_at,
        first_leg.len() as u64,
        "at the seed's next offset"
    );
    let resumed = of_type(&everything, "session.resumed");
    assert_eq!(resumed.len(), 1);
    let r = resumed[0];
    assert_eq!(r["offset"], restore_at + 1, "the resumed leg goes on next");
    assert_eq!(r["payload"]["evidence"], "restore");
    assert_eq!(r["payload"]["boundary_offset"], boundary);
    assert_eq!(
        r["payload"]["superseded"],
        serde_json::json!({"from": boundary, "to": restore_at}),
        "nothing of the first leg is superseded"
    );
    assert_eq!(r["payload"]["incarnation"], 2);
    assert_eq!(
        r["payload"]["invalidated_checkpoints"],
        serde_json::json!([])
    );
    // Offsets stay gapless; everything from the resume on is incarnation 2.
    for (i, e) in everything.iter().enumerate() {
        assert_eq!(e["offset"], i as u64);
        let incarnation = if i as u64 >= r["offset"].as_u64().unwrap() {
            2
        } else {
            1
        };
        assert_eq!(e["incarnation"], incarnation, "{e}");
        assert!(e.get("superseded").is_none(), "{e}");
    }
    let live = replay(home.path(), CLAUDE, &[]);
    assert_eq!(live, everything);
    assert_eq!(of_type(&live, "session.started").len(), 2);
    // One causal session: one session, two incarnations, the second leg's
    // turn checkpointed in incarnation 2.
    let log = json(home.path(), &["checkpoints", CLAUDE, "--json"]);
    assert_eq!(log["incarnation"], 2);
    let cps = log["checkpoints"].as_array().unwrap();
    assert_eq!(cps.len(), 3);
    assert_eq!(cps[2]["incarnation"], 2);
    assert!(cps.iter().all(|c| c["valid"] == true));
    let sessions = common::sessions_json(home.path());
    assert_eq!(sessions.len(), 1);
}

#[test]
fn a_checkpoint_above_the_resume_boundary_is_invalid() {
    let home = tempfile::tempdir().unwrap();
    let all = claude_first_leg(home.path());
    // Nothing resumes Claude Code before its first reply: the restore
    // is recorded as `--record` records an exact one.
    let restore = record_restore(home.path(), "claude-code", CLAUDE, "early");
    let boundary = restore["seed"]["boundary_offset"].as_u64().unwrap();
    assert_eq!(restore["seed"]["effects"].as_array().unwrap().len(), 1);
    feed(home.path(), "claude-code", &all[8..]);
    ok(home.path(), &["finalize"]);
    let log = json(home.path(), &["checkpoints", CLAUDE, "--json"]);
    let turn = format!("turn:{CLAUDE_TURN_1}");
    let resumed = &log["resumes"][0];
    assert_eq!(resumed["boundary_offset"], boundary);
    assert_eq!(
        resumed["invalidated_checkpoints"],
        serde_json::json!([turn])
    );
    let cps = log["checkpoints"].as_array().unwrap();
    let first_turn = cps.iter().find(|c| c["checkpoint_id"] == turn).unwrap();
    assert_eq!(first_turn["valid"], false);
    assert_eq!(first_turn["invalidated_at"], resumed["offset"]);
    let text = ok(home.path(), &["checkpoints", CLAUDE]);
    assert!(text.contains("invalid (resume at offset"), "{text}");
    // An invalidated checkpoint cannot be restored; `latest` skips it.
    refused(
        home.path(),
        &["restore", CLAUDE, "--checkpoint", &turn, "--dry-run"],
        "invalidated",
    );
    let latest = json(home.path(), &["restore", CLAUDE, "--json", "--dry-run"]);
    assert_eq!(latest["seed"]["checkpoint"]["incarnation"], 2);
    // The seed leaves the superseded range out unless asked.
    let seed = &latest["seed"];
    let offsets: Vec<u64> = seed["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["offset"].as_u64().unwrap())
        .collect();
    assert!(!offsets.contains(&boundary), "{offsets:?}");
    let with = json(
        home.path(),
        &[
            "restore",
            CLAUDE,
            "--json",
            "--dry-run",
            "--include-superseded",
        ],
    );
    assert!(
        with["seed"]["superseded_offsets"]
            .as_array()
            .unwrap()
            .contains(&Value::from(boundary))
    );
    // The rest of the first leg's turn, above `early`, is superseded whole.
    let everything = replay(home.path(), CLAUDE, &["--include-superseded"]);
    assert_eq!(
        superseded_turns_are_marked(home.path(), CLAUDE, &everything),
        1
    );
}

#[test]
fn restoring_an_unknown_session_or_checkpoint_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    refused(home.path(), &["restore", "nobody"], "nobody");
    claude_first_leg(home.path());
    refused(
        home.path(),
        &["restore", "nobody"],
        "no session matches \"nobody\"",
    );
    refused(
        home.path(),
        &["restore", CLAUDE, "--checkpoint", "nope"],
        "has no checkpoint \"nope\"",
    );
    refused(
        home.path(),
        &["checkpoint", CLAUDE, "--effect", "nocolon"],
        "KIND:REF",
    );
    // Nothing was recorded by the failed restores.
    ok(home.path(), &["finalize"]);
    let events = replay(home.path(), CLAUDE, &[]);
    assert!(of_type(&events, "restore.recorded").is_empty());
}

#[test]
fn a_straggler_of_the_older_incarnation_is_kept_off_the_live_line() {
    let home = tempfile::tempdir().unwrap();
    let all = claude_first_leg(home.path());
    feed(home.path(), "claude-code", &all[8..]);
    ok(home.path(), &["finalize"]);
    // A late PostToolUse of leg one's turn, a call the ledger never saw.
    let mut late: Value = serde_json::from_str(&all[3]).unwrap();
    assert_eq!(late["hook_event_name"], "PostToolUse");
    late["tool_use_id"] = "toolu_straggler".into();
    common::deliver(home.path(), "claude-code", &late.to_string());
    ok(home.path(), &["finalize"]);
    let events = replay(home.path(), CLAUDE, &[]);
    let stale = of_type(&events, "session.stale_signal");
    assert_eq!(stale.len(), 1);
    assert_eq!(
        stale[0]["payload"]["reason"],
        "native_turn_of_an_older_incarnation"
    );
    assert_eq!(stale[0]["payload"]["live_incarnation"], 2);
    assert!(
        !events
            .iter()
            .any(|e| e["payload"]["tool_call_id"] == "toolu_straggler"),
        "no span of it on the live tail"
    );
}

#[test]
fn replay_reads_a_checked_half_open_range() {
    let home = tempfile::tempdir().unwrap();
    claude_first_leg(home.path());
    let ledger = LedgerReader::open(&Home::at(home.path().to_path_buf())).unwrap();
    let session = SessionRef {
        adapter: AdapterId::ClaudeCode,
        session_id: CLAUDE.into(),
    };
    let head = ledger.events().session_head(&session).unwrap();
    let window = log::replay(&ledger, &session, 2, Some(5)).unwrap();
    let offsets: Vec<u64> = window.iter().map(|e| e.offset).collect();
    assert_eq!(offsets, [2, 3, 4]);
    assert_eq!(
        log::replay(&ledger, &session, 0, None).unwrap().len() as u64,
        head
    );
    assert!(
        log::replay(&ledger, &session, head as i64, None)
            .unwrap()
            .is_empty()
    );
    let out_of_range = |from, to| match log::replay(&ledger, &session, from, to) {
        Err(ReplayError::Range(e)) => e,
        other => panic!("refused, not {other:?}"),
    };
    assert_eq!(
        out_of_range(-1, None),
        RangeError::Negative {
            bound: "from",
            value: -1
        }
    );
    assert_eq!(
        out_of_range(0, Some(-3)),
        RangeError::Negative {
            bound: "to",
            value: -3
        }
    );
    assert_eq!(
        out_of_range(4, Some(2)),
        RangeError::Inverted { from: 4, to: 2 }
    );
    let past = out_of_range(0, Some(head as i64 + 1));
    assert!(past.to_string().contains("`to`"), "{past}");
    assert!(matches!(
        out_of_range(head as i64 + 1, None),
        RangeError::PastHead { bound: "from", .. }
    ));
    // The CLI's inclusive window sits on top of it.
    let cli = replay(home.path(), CLAUDE, &["--from", "2", "--to", "4"]);
    let offsets: Vec<u64> = cli.iter().map(|e| e["offset"].as_u64().unwrap()).collect();
    assert_eq!(offsets, [2, 3, 4]);
    refused(
        home.path(),
        &["replay", CLAUDE, "--to", &head.to_string()],
        "--to",
    );
    let log = SessionLog::read(&ledger, &session).unwrap();
    assert_eq!(log.head, head);
    let latest = log.latest().unwrap();
    assert_eq!(latest.checkpoint_id, format!("turn:{CLAUDE_TURN_1}"));
    assert_eq!(
        latest.offset, head,
        "pinned last, once the turn's end is in"
    );
}

/// Generation 3 ships by an epoch advance: from the home generation 2
/// wrote, finalize refuses until the advance; after it the carried Claude
/// Code `resume` session is recorded with its checkpoints and resume, and
/// the generation 2 rows stay readable, verifiable and exportable.
#[test]
fn generation_three_ships_by_an_epoch_advance_from_the_generation_two_home() {
    let home = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/epoch/gen2/home");
    copy_tree(&fixture, home.path());
    refused(home.path(), &["finalize"], "epoch advance");
    let before_advance = run(home.path(), &["checkpoints", CLAUDE]);
    assert_eq!(before_advance.status.code(), Some(2));

    ok(home.path(), &["epoch", "advance"]);
    common::live_epoch_is_current_and_anchored(home.path());
    ok(home.path(), &["finalize"]);
    // The carried session: two legs, one resume, a checkpoint per turn.
    let log = json(home.path(), &["checkpoints", CLAUDE, "--json"]);
    assert_eq!(log["checkpoints"].as_array().unwrap().len(), 2, "{log:#}");
    assert_eq!(log["resumes"][0]["evidence"], "agent_resume");
    assert_eq!(log["incarnation"], 2);
    // Generation 2's rows: verified, exported tagged with their epoch,
    // replayed.
    common::both_epochs_stay_readable(home.path());
    let old = "82655d0f-45cd-404f-9e4e-e90fea255247";
    let replayed = ok(home.path(), &["replay", old, "--epoch", "all"]);
    assert!(replayed.contains("session.started"), "{replayed}");
    let out = run(home.path(), &["receipts", old, "--epoch", "all"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// No false resumes: over every captured scenario, fed into one home in
/// name order (so each resumed run follows its first), only the sessions
/// the agents resumed are resumed, once per resumed run; every other
/// session (subagents drained after their parent included) stays in its
/// first incarnation.
#[test]
fn only_the_resumed_corpus_sessions_are_resumed() {
    let home = tempfile::tempdir().unwrap();
    for agent in ["claude-code", "copilot"] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(agent);
        let mut scenarios: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        scenarios.sort();
        for scenario in scenarios {
            feed(home.path(), agent, &lines(agent, &scenario));
        }
    }
    ok(home.path(), &["finalize"]);
    let out = ok(home.path(), &["export", "--format", "jsonl"]);
    let mut resumed = std::collections::BTreeMap::<String, usize>::new();
    for line in out.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        if e["type"] == "session.resumed" {
            let id = e["session"]["session_id"].as_str().unwrap().to_string();
            *resumed.entry(id).or_default() += 1;
        }
    }
    // Claude Code's `compact` run resumes its session twice (`--resume`
    // for the compaction, then again), Copilot's `compaction-precompact-hook`
    // once (it resumes a session captured elsewhere).
    let want: std::collections::BTreeMap<String, usize> = [
        (CLAUDE, 1),
        (COPILOT_RESUME, 1),
        (COPILOT_KILLED, 1),
        ("221d6ed5-93db-49fb-b651-1c5540460db1", 2),
        ("7bab536b-679c-48b2-999b-7a76c3bb8d7f", 1),
    ]
    .into_iter()
    .map(|(s, n)| (s.to_string(), n))
    .collect();
    assert_eq!(resumed, want);
    // Each session row counts its resumes, so a listing asks only those.
    let ledger =
        LedgerReader::open_dir(&LedgerReader::live_dir(&Home::at(home.path())), None).unwrap();
    for s in ledger.sessions().list().unwrap() {
        let n = want.get(&s.session.session_id).copied().unwrap_or(0);
        let kept = ledger.sessions().resumes(&s.session).unwrap();
        assert_eq!(kept, Some(n as u64), "{:?}", s.session);
    }
}
