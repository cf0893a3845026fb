//! The record reader over lines the real client wrote (0.61.0; whole
//! files: `tests/fixtures/gemini-cli/`, read by `tests/it/agents/gemini_cli.rs`).

use super::*;

const HEADER: &str = r#"{"sessionId":"735e7804-a692-4f55-ae13-59a7effd07f2","projectHash":"716c49c30c21c53f1228e7b2fb376f32a5aab4f954962085bfa1b1902eb2ecc7","startTime":"2026-12-06T10:08:28.132Z","lastUpdated":"2026-12-06T10:08:28.132Z","kind":"main"}"#;
const PROMPT: &str = r#"{"id":"fd8f16e6-3b02-47cc-8f6f-0c3f4b085245","timestamp":"2026-12-06T10:08:28.241Z","type":"user","content":[{"text":"Run the marker command and tell me what it printed."}]}"#;
const STEP: &str = r#"{"id":"66e10043-9f62-497b-a5f5-1e57ece54ade","timestamp":"2026-12-06T10:08:28.385Z","type":"gemini","content":"","thoughts":[],"tokens":{"input":1020,"output":22,"cached":302,"thoughts":9,"tool":0,"total":1051},"model":"gemini-3.8-flash"}"#;
const FAILED_CALL: &str = r#"{"id":"5116d8d3-6d29-4908-b591-cf27295e1692","timestamp":"2026-12-06T10:08:31.627Z","type":"gemini","content":"","thoughts":[],"tokens":{"input":1050,"output":25,"cached":305,"thoughts":12,"tool":0,"total":1087},"model":"gemini-3.8-flash","toolCalls":[{"id":"run_shell_command__run_shell_command_1796551711593_0","name":"run_shell_command","args":{"command":"ls /nonexistent-harnery","description":"scripted step"},"result":[{"functionResponse":{"id":"run_shell_command__run_shell_command_1796551711593_0","name":"run_shell_command","response":{"output":"<untrusted_context>\nOutput: ls: cannot access '/nonexistent-harnery': No such file or directory\nExit Code: 2\nProcess Group PGID: 16286\n</untrusted_context>"}}}],"status":"success","timestamp":"2026-12-06T10:08:31.723Z","resultDisplay":"ls: cannot access '/nonexistent-harnery': No such file or directory","description":"ls /nonexistent-harnery","displayName":"Shell","renderOutputAsMarkdown":false}]}"#;
const RESPONSE: &str = r#"{"id":"7aede780-e929-4119-b172-37eda818e192","timestamp":"2026-12-06T10:08:28.499Z","type":"user","content":[{"functionResponse":{"id":"run_shell_command__run_shell_command_1796551708352_0","name":"run_shell_command","response":{"output":"<untrusted_context>\nOutput: hello-from-harnery-e2e\nProcess Group PGID: 16144\n</untrusted_context>"}}}]}"#;
const ANSWER: &str = r#"{"id":"81b6c640-712d-4fd5-aeeb-536a9f6a3eb4","timestamp":"2026-12-06T10:07:51.204Z","type":"gemini","content":"Done: the command ran. hello-from-harnery-e2e seen.","thoughts":[],"tokens":{"input":1030,"output":23,"cached":303,"thoughts":10,"tool":0,"total":1063},"model":"gemini-3.1-pro-preview"}"#;

fn at() -> RecordAt {
    RecordAt {
        path: "/h/.gemini/tmp/proj/chats/session-x-735e7804.jsonl".into(),
        offset: 0,
    }
}

fn items(line: &str) -> Vec<RecordItem> {
    read_line(line.as_bytes(), &at()).0.items
}

fn usage_of(items: &[RecordItem]) -> &UsageReported {
    items
        .iter()
        .find_map(|i| match i {
            RecordItem::Usage(u) => Some(u),
            _ => None,
        })
        .expect("a usage item")
}

#[test]
fn the_header_names_the_session_and_says_nothing_else() {
    let (line, session) = read_line(HEADER.as_bytes(), &at());
    assert!(line.items.is_empty());
    assert_eq!(
        session.as_deref(),
        Some("735e7804-a692-4f55-ae13-59a7effd07f2")
    );
    assert_eq!(line_session(HEADER.as_bytes()), session);
    let resumed = br#"{"$set":{"sessionId":"6f2d2482-4ef4-46f3-b3de-1e0362b18ddd"}}"#;
    assert_eq!(
        line_session(resumed).as_deref(),
        Some("6f2d2482-4ef4-46f3-b3de-1e0362b18ddd")
    );
    assert_eq!(line_session(PROMPT.as_bytes()), None);
    let subagent = br#"{"sessionId":"9e08eaef-3c5f-452c-85dd-32e5230698c5","projectHash":"7495","startTime":"2026-12-06T11:08:28.022Z","lastUpdated":"2026-12-06T11:08:28.022Z","kind":"subagent","directories":["/p"]}"#;
    let (line, session) = read_line(subagent, &at());
    assert!(
        line.items.is_empty() && session.is_none(),
        "a subagent's header names no session"
    );
    assert_eq!(line_session(subagent), None);
}

#[test]
fn a_prompt_is_a_user_message_and_a_function_response_is_none() {
    let got = items(PROMPT);
    let [RecordItem::UserMessage(m)] = got.as_slice() else {
        panic!("{got:?}")
    };
    assert_eq!(
        m.text.as_deref(),
        Some("Run the marker command and tell me what it printed.")
    );
    assert_eq!(
        m.message_id.as_deref(),
        Some("fd8f16e6-3b02-47cc-8f6f-0c3f4b085245")
    );
    assert!(items(RESPONSE).is_empty());
    for one in [
        r#"{"id":"u","type":"user","content":"plain"}"#,
        r#"{"id":"u","type":"user","content":{"text":"plain"}}"#,
        r#"{"id":"u","type":"user","content":[{"text":"pla"},{"functionCall":{}},{"text":"in"}]}"#,
    ] {
        let got = items(one);
        assert!(
            matches!(&got[..], [RecordItem::UserMessage(m)] if m.text.as_deref() == Some("plain")),
            "{one}: {got:?}"
        );
    }
}

#[test]
fn tokens_become_harnerys_kinds_with_the_agents_own_kept() {
    let step = items(STEP);
    assert_eq!(step.len(), 1, "an empty step is its usage alone: {step:?}");
    let u = usage_of(&step);
    assert_eq!(
        u.message_id.as_deref(),
        Some("66e10043-9f62-497b-a5f5-1e57ece54ade")
    );
    assert_eq!(u.model.as_deref(), Some("gemini-3.8-flash"));
    // input 1020 includes the 302 cached; output 22 + 9 thoughts.
    assert_eq!(
        (
            u.input_tokens,
            u.cache_read_tokens,
            u.output_tokens,
            u.reasoning_tokens
        ),
        (Some(718), Some(302), Some(31), Some(9))
    );
    assert_eq!(u.cache_write_tokens, None);
    assert_eq!(
        u.raw.as_ref().map(|r| r.as_str().to_string()).as_deref(),
        Some(r#"{"cached":302,"input":1020,"output":22,"thoughts":9,"tool":0,"total":1051}"#)
    );
}

#[test]
fn the_line_with_tool_calls_names_them_and_their_outcome() {
    let got = items(FAILED_CALL);
    let id = "run_shell_command__run_shell_command_1796551711593_0";
    let [
        RecordItem::AssistantMessage(m),
        RecordItem::ToolStarted(call),
        RecordItem::ToolFinished(done),
        RecordItem::Usage(u),
    ] = got.as_slice()
    else {
        panic!("{got:?}")
    };
    assert_eq!(
        (m.text.as_deref(), m.tool_call_ids.as_slice()),
        (None, &[id.to_string()][..])
    );
    assert_eq!(
        (call.tool_call_id.as_str(), call.tool_name.as_str()),
        (id, "run_shell_command")
    );
    let hook_input = Json::from_value(&serde_json::json!(
        {"description": "scripted step", "command": "ls /nonexistent-harnery"}
    ));
    assert_eq!(call.input_digest, input_digest(Some(&hook_input)));
    // The client calls a command that exited 2 a success.
    assert_eq!((done.success, done.exit_code), (Some(true), Some(2)));
    assert_eq!(
        u.message_id.as_deref(),
        Some("5116d8d3-6d29-4908-b591-cf27295e1692")
    );
}

#[test]
fn an_answer_is_text_and_usage() {
    let got = items(ANSWER);
    let [RecordItem::AssistantMessage(m), RecordItem::Usage(_)] = got.as_slice() else {
        panic!("{got:?}")
    };
    assert_eq!(
        m.text.as_deref(),
        Some("Done: the command ran. hello-from-harnery-e2e seen.")
    );
    assert!(m.tool_call_ids.is_empty());
    assert_eq!(m.model.as_deref(), Some("gemini-3.1-pro-preview"));
}

#[test]
fn thoughts_are_reasoning_on_the_first_line_only() {
    let line = r#"{"id":"m","type":"gemini","content":"ok","thoughts":[{"subject":"Plan","description":"list it","timestamp":"t"}],"tokens":null,"model":"x"}"#;
    let got = items(line);
    assert!(
        matches!(&got[..], [RecordItem::Reasoning(r), RecordItem::AssistantMessage(_)]
            if r.text.as_deref() == Some("Plan\nlist it")),
        "{got:?}"
    );
    let with_calls = r#"{"id":"m","type":"gemini","content":"ok","thoughts":[{"subject":"Plan"}],"toolCalls":[]}"#;
    assert!(
        !items(with_calls)
            .iter()
            .any(|i| matches!(i, RecordItem::Reasoning(_))),
        "the repeated line repeats no thought"
    );
}

#[test]
fn updates_rewinds_and_notes_say_nothing_and_strangers_are_kept() {
    for quiet in [
        r#"{"$set":{"lastUpdated":"2026-12-06T10:08:28.499Z"}}"#,
        r#"{"$set":{"messages":[{"id":"d0","type":"user","content":[{"text":"<session_context>"}]}]}}"#,
        r#"{"$rewindTo":"fd8f16e6"}"#,
        r#"{"id":"i","type":"info","content":"Imported session"}"#,
    ] {
        assert!(items(quiet).is_empty(), "{quiet}");
    }
    for strange in [
        r#"{"hello":1}"#,
        r#"{"id":"x","type":"robot"}"#,
        r#"{"id":7,"type":"user"}"#,
        "not json",
    ] {
        let got = items(strange);
        assert!(
            matches!(&got[..], [RecordItem::Unrecognized { .. }]),
            "{strange}: {got:?}"
        );
    }
}

#[test]
fn a_file_id_is_what_the_client_puts_in_the_name() {
    assert_eq!(file_id("735e7804-a692-4f55-ae13-59a7effd07f2"), "735e7804");
    assert_eq!(file_id("a.b"), "a_b");
}

/// A `$set` of `summary` (the client's own title of the session) is the
/// session's title; a `$set` of anything else says nothing.
#[test]
fn a_summary_set_is_the_sessions_title() {
    let (line, session) = read_line(
        br#"{"$set":{"summary":"Run the marker command","lastUpdated":"2026-12-06T10:09:00.000Z"}}"#,
        &at(),
    );
    assert_eq!(
        line.items,
        vec![RecordItem::Title(RecordTitle {
            title: "Run the marker command".into(),
            field: "summary".into(),
            user_named: None,
        })]
    );
    assert_eq!(session, None);
    assert!(items(r#"{"$set":{"lastUpdated":"2026-12-06T10:09:00.000Z"}}"#).is_empty());
    assert!(items(r#"{"$set":{"summary":7}}"#).is_empty());
}

/// A finished call's text is its function response's `output` (the shell
/// tool's untrusted-context wrapping and all), or its `error` when the
/// tool failed (the captured `read_file` of a missing file).
#[test]
fn a_calls_output_is_its_function_response() {
    let output = |line: &str| -> Option<String> {
        items(line).into_iter().find_map(|i| match i {
            RecordItem::ToolFinished(done) => Some(done.output),
            _ => None,
        })?
    };
    assert_eq!(
        output(FAILED_CALL).as_deref(),
        Some(
            "<untrusted_context>\nOutput: ls: cannot access '/nonexistent-harnery': No such file \
             or directory\nExit Code: 2\nProcess Group PGID: 16286\n</untrusted_context>"
        )
    );
    let failed = r#"{"id":"a6","type":"gemini","content":"","toolCalls":[{"id":"read_file__1","name":"read_file","args":{"file_path":"/p/missing-harnery.txt"},"result":[{"functionResponse":{"id":"read_file__1","name":"read_file","response":{"error":"File not found: /p/missing-harnery.txt"}}}],"status":"error"}]}"#;
    assert_eq!(
        output(failed).as_deref(),
        Some("File not found: /p/missing-harnery.txt")
    );
    let odd = failed.replace(
        r#""error":"File not found: /p/missing-harnery.txt""#,
        r#""output":{"lines":3}"#,
    );
    assert_eq!(output(&odd), None, "a response without text has none");
}
