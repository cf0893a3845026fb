//! The captured scenarios, each fed, finalized and checked (see the
//! parent module).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{
    Run, calls_and_texts_are_the_records, every_signal_once, fixture, hook, json_lines, spans,
    tokens_are_the_records,
};
use crate::common::{self, stderr, stdout};

#[test]
fn a_shell_call_is_one_closed_span_joined_to_the_record_and_found_by_search() {
    let run = Run::of("basic");
    every_signal_once(&run, "basic");
    tokens_are_the_records(&run, "basic");
    calls_and_texts_are_the_records(&run, "basic");
    let after_tool = run.fed_count("AfterTool") as u64;
    assert_eq!(spans(&run), (0, after_tool, 0));
    let completed = run.of_type("tool.completed");
    assert_eq!(completed[0]["payload"]["paired_by"], "order");
    assert_eq!(run.session_row()["turns"], 1);
    // The marker the command printed is found as the tool's output.
    let out = run.harnery(&[
        "search",
        "--json",
        "--kind",
        "tool-output",
        "hello-from-harnery-e2e",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["session"]["adapter"], "gemini-cli");
}

/// The model's thoughts (a `thought` part the client splits into a
/// subject and a description) are its reasoning, once, with its message.
#[test]
fn thoughts_are_recorded_as_reasoning() {
    let run = Run::of("think");
    every_signal_once(&run, "think");
    tokens_are_the_records(&run, "think");
    calls_and_texts_are_the_records(&run, "think");
    let want: Vec<(String, String)> = run
        .model_messages()
        .iter()
        .flat_map(|(id, m)| {
            m["thoughts"].as_array().unwrap().iter().map(move |t| {
                let text = format!(
                    "{}\n{}",
                    t["subject"].as_str().unwrap(),
                    t["description"].as_str().unwrap()
                );
                (id.clone(), text)
            })
        })
        .collect();
    assert_eq!(want.len(), 1, "the capture has one thought");
    let got: Vec<(String, String)> = run
        .of_type("reasoning.recorded")
        .iter()
        .map(|e| {
            let p = &e["payload"];
            (
                p["message_id"].as_str().unwrap().to_string(),
                p["text"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_command_that_exited_non_zero_is_a_failure_with_its_exit_code() {
    let run = Run::of("fail");
    every_signal_once(&run, "fail");
    tokens_are_the_records(&run, "fail");
    calls_and_texts_are_the_records(&run, "fail");
    // The code is in the text the tool gave the model, in the hook and
    // the record alike.
    let text =
        run.fed.iter().find(|(e, _)| e == "AfterTool").unwrap().1["tool_response"]["llmContent"]
            .as_str()
            .unwrap()
            .to_string();
    let code: i64 = text
        .lines()
        .find_map(|l| l.strip_prefix("Exit Code: "))
        .unwrap()
        .parse()
        .unwrap();
    let completed = run.of_type("tool.completed");
    assert_eq!(completed[0]["payload"]["exit_code"], code);
    let finished: Vec<&Value> = run
        .of_type("tool.recorded")
        .into_iter()
        .filter(|e| e["payload"]["success"].is_boolean())
        .collect();
    assert_eq!(finished[0]["payload"]["exit_code"], code);
    let out = run.harnery(&["search", "--json", "--failed", "nonexistent-harnery"]);
    assert!(
        stdout(&out).lines().count() > 0,
        "the failed call is found as one: {}",
        stderr(&out)
    );
}

#[test]
fn a_resumed_session_is_one_session_of_two_turns() {
    let run = Run::of("two-turns");
    every_signal_once(&run, "two-turns");
    tokens_are_the_records(&run, "two-turns");
    calls_and_texts_are_the_records(&run, "two-turns");
    let starts: Vec<&str> = run
        .fed
        .iter()
        .filter(|(e, _)| e == "SessionStart")
        .map(|(_, p)| p["source"].as_str().unwrap())
        .collect();
    assert_eq!(starts, ["startup", "resume"]);
    assert_eq!(run.of_type("session.resumed").len(), 1);
    assert_eq!(run.session_row()["turns"], 2);
    assert_eq!(spans(&run), (0, 2, 0));
}

/// A resume that begins in a later minute than the session did: the
/// client first writes a new file of the same session (its header and
/// context alone, named by the resumed leg's `SessionStart`), then goes on
/// in the original, which the leg's other hooks name. The original is the
/// one followed, both legs' calls and tokens from it.
#[test]
fn a_resume_in_a_later_minute_is_followed_in_the_file_the_client_writes() {
    let run = Run::of("resume-later");
    let named: BTreeSet<&str> = run
        .fed
        .iter()
        .map(|(_, p)| p["transcript_path"].as_str().unwrap())
        .collect();
    assert_eq!(named.len(), 2, "the capture names both files: {named:?}");
    every_signal_once(&run, "resume-later");
    tokens_are_the_records(&run, "resume-later");
    calls_and_texts_are_the_records(&run, "resume-later");
    assert_eq!(run.of_type("session.resumed").len(), 1);
    assert_eq!(run.session_row()["turns"], 2);
    assert_eq!(spans(&run), (0, 2, 0));
}

/// The same, with a finalize right after the resumed leg's `SessionStart`
/// and nothing of the session read before it: the file that start names
/// (the new one, a header and the context alone) is not the one taken up.
#[test]
fn a_finalize_after_the_resumed_start_still_follows_the_written_file() {
    let run = Run::finalized_between("resume-later", |p| {
        p["hook_event_name"] == "SessionStart" && p["source"] == "resume"
    });
    every_signal_once(&run, "resume-later");
    tokens_are_the_records(&run, "resume-later");
    calls_and_texts_are_the_records(&run, "resume-later");
}

#[test]
fn a_killed_client_leaves_its_span_open_until_the_session_is_ended() {
    let mut run = Run::of("kill");
    every_signal_once(&run, "kill");
    tokens_are_the_records(&run, "kill");
    // The client wrote the call that was running nowhere: no id to join.
    assert!(run.of_type("tool.recorded").is_empty());
    assert_eq!(
        (run.fed_count("BeforeTool"), run.fed_count("AfterTool")),
        (1, 0)
    );
    assert_eq!(spans(&run), (1, 0, 0));
    let session = run.session_row()["session"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let end = run.harnery(&[
        "end",
        &format!("gemini-cli/{session}"),
        "--reason",
        "killed",
    ]);
    assert!(end.status.success(), "{}", stderr(&end));
    run.finalize("kill, ended");
    assert_eq!(spans(&run), (0, 0, 1));
}

#[test]
fn the_interactive_uis_repeated_session_ends_are_each_kept() {
    let run = Run::of("interactive");
    every_signal_once(&run, "interactive");
    tokens_are_the_records(&run, "interactive");
    calls_and_texts_are_the_records(&run, "interactive");
    let ends = run.fed_count("SessionEnd");
    assert_eq!(ends, 3, "the capture has the repeats");
    assert_eq!(run.of_type("session.ended").len(), ends);
    assert_eq!(spans(&run), (0, 1, 0));
}

/// The same with a finalize between the first `SessionEnd` and its
/// repeats, as a finalize loop may run: the repeats are kept as well.
#[test]
fn repeated_session_ends_across_finalizes_are_each_kept() {
    let ends = std::cell::Cell::new(0);
    let run = Run::finalized_between("interactive", |p| {
        ends.set(ends.get() + usize::from(p["hook_event_name"] == "SessionEnd"));
        ends.get() == 1 && p["hook_event_name"] == "SessionEnd"
    });
    every_signal_once(&run, "interactive, finalized between");
    tokens_are_the_records(&run, "interactive");
    assert_eq!(spans(&run), (0, 1, 0));
}

/// A subagent (`invoke_agent`, the client's generalist) runs its tools
/// under the parent's session id: its hooks are spans of the parent's
/// session, closed natively. Its own record
/// (`chats/<session>/<subagent>.jsonl`, whose header names the subagent)
/// is named only by the `AfterTool` of the call that ran it, in the ids of
/// its calls; followed from there, its calls join the spans and its model
/// calls' usage is the session's, with the parent's.
#[test]
fn a_subagents_record_is_followed_from_the_call_that_ran_it() {
    let run = Run::of("subagent");
    let tools: Vec<&str> = run
        .fed
        .iter()
        .filter(|(e, _)| e == "BeforeTool")
        .map(|(_, p)| p["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        ["invoke_agent", "run_shell_command", "complete_task"]
    );
    let sessions: BTreeSet<&str> = run
        .fed
        .iter()
        .map(|(_, p)| p["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 1, "the subagent's hooks name the parent");
    every_signal_once(&run, "subagent");
    // Both files: every model call the server answered, each call joined.
    tokens_are_the_records(&run, "subagent");
    calls_and_texts_are_the_records(&run, "subagent");
    assert_eq!(spans(&run), (0, 3, 0));
}

#[test]
fn a_record_a_payload_names_elsewhere_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("hh");
    let elsewhere = dir.path().join("notes/secret.jsonl");
    std::fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    std::fs::copy(
        fixture("basic").join("session-2026-12-06T10-08-735e7804.jsonl"),
        &elsewhere,
    )
    .unwrap();
    let first = &json_lines(&fixture("basic").join("hooks.jsonl"))[0];
    let mut payload: Value = serde_json::from_str(first["stdin"].as_str().unwrap()).unwrap();
    payload["transcript_path"] = Value::String(elsewhere.display().to_string());
    hook(&home, "SessionStart", &payload);
    let out = common::harnery(&home)
        .env("HARNERY_RECORDS", "on")
        .args(["finalize"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = common::run(&home, &["export", "--format", "jsonl"]);
    let problems: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "record.problem")
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0]["payload"]["kind"], "refused");
    assert!(!stdout(&out).contains("message.user"));
}

/// A tool that fails (a file in the workspace that is not there): its
/// `AfterTool` carries the error, the record the status `error`.
#[test]
fn a_tool_that_failed_is_a_failure_in_the_hooks_and_the_record() {
    let run = Run::of("tool-error");
    every_signal_once(&run, "tool-error");
    tokens_are_the_records(&run, "tool-error");
    calls_and_texts_are_the_records(&run, "tool-error");
    let after = &run.fed.iter().find(|(e, _)| e == "AfterTool").unwrap().1;
    let message = after["tool_response"]["error"]["message"].as_str().unwrap();
    let completed = run.of_type("tool.completed");
    assert_eq!(completed[0]["payload"]["outcome"], "failure");
    assert_eq!(completed[0]["payload"]["error"], message);
    let finished: Vec<&Value> = run
        .of_type("tool.recorded")
        .into_iter()
        .filter(|e| e["payload"]["success"].is_boolean())
        .collect();
    assert_eq!(finished[0]["payload"]["success"], false);
}

/// A call the client refuses before it runs (a path outside the
/// workspace) fires no tool hook at all: it is in the record alone, with
/// its error, and joins no span.
#[test]
fn a_call_refused_before_its_hooks_is_in_the_record_alone() {
    let run = Run::of("refused");
    assert_eq!(
        (run.fed_count("BeforeTool"), run.fed_count("AfterTool")),
        (0, 0)
    );
    every_signal_once(&run, "refused");
    tokens_are_the_records(&run, "refused");
    let recorded: Vec<&Value> = run.of_type("tool.recorded");
    assert!(!recorded.is_empty());
    assert!(
        recorded
            .iter()
            .all(|e| e["payload"]["span_request_event_id"].is_null()),
        "{recorded:?}"
    );
    assert!(
        recorded.iter().any(|e| e["payload"]["success"] == false),
        "{recorded:?}"
    );
    assert_eq!(spans(&run), (0, 0, 0));
}

/// The event types of the tool-output hits of `query`.
fn output_hits(run: &Run, query: &str) -> Vec<String> {
    let out = run.harnery(&["search", "--json", "--limit", "100", "--", query]);
    assert!(out.status.success(), "{}", stderr(&out));
    common::tool_output_types(&stdout(&out))
}

/// The record's text of a result (generation 12, its function response's
/// output or error) is in `tool.recorded`, and found once: the hook's
/// completion keeps its `llmContent` beside its `returnDisplay`, the same
/// text, first in the chain (the hook has no call id; the record's row
/// names the span it joined); a call the client refused before its hooks
/// is found from the record alone.
#[test]
fn a_results_text_from_the_record_is_found_once() {
    let run = Run::of("basic");
    let recorded: Vec<&str> = run
        .of_type("tool.recorded")
        .iter()
        .filter_map(|e| e["payload"]["output"].as_str())
        .collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert!(recorded[0].starts_with("<untrusted_context>\nOutput: hello-from-harnery-e2e\n"));
    assert_eq!(
        output_hits(&run, "\"Process Group PGID\""),
        ["tool.completed"]
    );
    let refused = Run::of("refused");
    assert_eq!(
        output_hits(&refused, "\"Path not in workspace\""),
        ["tool.recorded"]
    );
}
