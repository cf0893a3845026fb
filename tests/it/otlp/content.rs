//! What a push's spans say beyond names and times: `--content none`
//! carries no words at all, `masked` the mask and never the secret, `full`
//! the words; a change of `--content` sends again the spans it changes;
//! every span's chain attributes are its rows' seq and hash in the ledger
//! (and the hash is the chain's, recomputed from `export --format jsonl`);
//! the `chat` spans' tokens are `harnery usage --session`'s.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use super::push::{push, summary};
use super::receiver::Receiver;
use common::*;
use harnery::contract::{
    Attestation, Confidence, Json, MessageAssistant, Payload, PromptSubmitted, Provenance,
    RecordAt, ToolCompleted, ToolRequested, TurnCompleted, TurnStarted, UsageReported,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use serde_json::Value;

const SECRET: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";

const RECORD: Provenance = Provenance {
    attestation: Attestation::Record,
    confidence: Confidence::High,
};

fn at() -> RecordAt {
    RecordAt {
        path: "transcript.jsonl".into(),
        offset: 0,
    }
}

fn usage(message: &str, input: u64, output: u64, read: u64, write: u64) -> Payload {
    Payload::UsageReported(UsageReported {
        record: at(),
        message_id: Some(message.into()),
        model: Some("claude-test".into()),
        input_tokens: Some(input),
        output_tokens: Some(output),
        cache_read_tokens: Some(read),
        cache_write_tokens: Some(write),
        cost: None,
        duration_ms: Some(900),
        time_to_first_token_ms: None,
        reasoning_tokens: None,
        raw: None,
        copied_from_session: None,
    })
}

/// One turn with the secret in its prompt, a tool's input and output and
/// the answer, and two model calls with usage.
fn wordy_session(home: &Path) {
    let s = session("s-words");
    let input = format!(r#"{{"command":"curl -H 'Authorization: token {SECRET}' x"}}"#);
    let output = format!(r#"{{"stdout":"echoed {SECRET}"}}"#);
    let payloads = vec![
        Payload::TurnStarted(TurnStarted {
            prompt_event_id: None,
        }),
        Payload::PromptSubmitted(PromptSubmitted {
            prompt: Some(format!("call the API with {SECRET} please")),
            transformed: false,
        }),
        Payload::ToolRequested(ToolRequested {
            tool_call_id: Some("toolu_1".into()),
            tool_name: "Bash".into(),
            input_digest: "digest".into(),
            input: Some(Json::parse(&input).unwrap()),
            recovery: None,
        }),
        Payload::ToolCompleted(ToolCompleted {
            tool_call_id: Some("toolu_1".into()),
            tool_name: "Bash".into(),
            requested_event_id: None,
            outcome: harnery::contract::Outcome::Success,
            duration_ms: harnery::contract::Observation::Observed(30),
            exit_code: Some(0),
            error: None,
            content: Some(Json::parse(&output).unwrap()),
            recovery: None,
            paired_by: None,
        }),
        Payload::MessageAssistant(MessageAssistant {
            record: at(),
            message_id: Some("msg_1".into()),
            model: Some("claude-test".into()),
            text: Some(format!("I used {SECRET} as asked.")),
            tool_call_ids: vec![],
        }),
        usage("msg_1", 10, 20, 1000, 300),
        usage("msg_2", 5, 7, 2000, 0),
        Payload::TurnCompleted(TurnCompleted {
            stop_reason: Some("end_turn".into()),
        }),
    ];
    let mut events: Vec<_> = payloads
        .into_iter()
        .enumerate()
        .map(|(i, p)| event(&s, i as u64, p))
        .collect();
    let request = events[2].id.clone();
    if let Payload::ToolCompleted(done) = &mut events[3].payload {
        done.requested_event_id = Some(request);
    }
    for e in &mut events[4..7] {
        e.provenance = RECORD;
    }
    inject(home, "w1", events);
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

/// A decoded span: its name and its attributes, each as text.
#[derive(Debug, Clone)]
struct Span {
    name: String,
    id: Vec<u8>,
    parent: Vec<u8>,
    attrs: BTreeMap<String, String>,
}

fn text_of(v: &Option<Any>) -> String {
    match v {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(n)) => n.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::ArrayValue(a)) => a
            .values
            .iter()
            .map(|v| text_of(&v.value))
            .collect::<Vec<_>>()
            .join(" "),
        other => format!("{other:?}"),
    }
}

/// Every span the receiver took, in the order it came.
fn spans(receiver: &Receiver) -> Vec<Span> {
    let mut out = Vec::new();
    for request in receiver.taken() {
        for rs in &request.resource_spans {
            let resource = rs.resource.as_ref().unwrap();
            let genesis = resource
                .attributes
                .iter()
                .find(|a| a.key == "harnery.ledger.genesis_id")
                .map(|a| text_of(&a.value.as_ref().unwrap().value));
            for span in rs.scope_spans.iter().flat_map(|s| &s.spans) {
                let mut attrs: BTreeMap<String, String> = span
                    .attributes
                    .iter()
                    .map(|a| (a.key.clone(), text_of(&a.value.as_ref().unwrap().value)))
                    .collect();
                if let Some(g) = &genesis {
                    attrs.insert("resource.genesis".into(), g.clone());
                }
                out.push(Span {
                    name: span.name.clone(),
                    id: span.span_id.clone(),
                    parent: span.parent_span_id.clone(),
                    attrs,
                });
            }
        }
    }
    out
}

fn every_word(spans: &[Span]) -> String {
    spans
        .iter()
        .map(|s| format!("{} {:?}", s.name, s.attrs))
        .collect()
}

fn named<'s>(spans: &'s [Span], name: &str) -> Vec<&'s Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

#[test]
fn none_carries_no_words_masked_the_mask_and_full_the_words() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    wordy_session(home);

    let none = Receiver::start();
    summary(&push(home, &none.url(), &[]));
    let got = spans(&none);
    let all = every_word(&got);
    for word in [SECRET, "call the API", "as asked", "curl", "echoed"] {
        assert!(!all.contains(word), "none carries {word:?}: {all}");
    }
    let tool = named(&got, "execute_tool Bash")[0];
    assert!(!tool.attrs.contains_key("gen_ai.tool.call.arguments"));

    let masked = Receiver::start();
    summary(&push(home, &masked.url(), &["--content", "masked"]));
    let got = spans(&masked);
    let all = every_word(&got);
    assert!(!all.contains(SECRET), "masked carries the secret: {all}");
    assert!(
        !all.contains("ghp_0123"),
        "masked carries part of it: {all}"
    );
    let tool = named(&got, "execute_tool Bash")[0];
    let arguments = &tool.attrs["gen_ai.tool.call.arguments"];
    assert!(
        arguments.contains("curl") && arguments.contains("[masked:"),
        "{arguments}"
    );
    let result = &tool.attrs["gen_ai.tool.call.result"];
    assert!(result.contains("echoed [masked:github-token:"), "{result}");
    let chat = named(&got, "chat claude-test");
    let first = chat
        .iter()
        .find(|c| c.attrs["gen_ai.response.id"] == "msg_1")
        .unwrap();
    let input: Value = serde_json::from_str(&first.attrs["gen_ai.input.messages"]).unwrap();
    assert_eq!(input[0]["role"], "user");
    let prompt = input[0]["parts"][0]["content"].as_str().unwrap();
    assert!(
        prompt.starts_with("call the API with [masked:github-token:"),
        "{prompt}"
    );
    let output: Value = serde_json::from_str(&first.attrs["gen_ai.output.messages"]).unwrap();
    assert_eq!(output[0]["role"], "assistant");

    let full = Receiver::start();
    summary(&push(home, &full.url(), &["--content", "full"]));
    let got = spans(&full);
    let tool = named(&got, "execute_tool Bash")[0];
    assert!(tool.attrs["gen_ai.tool.call.arguments"].contains(SECRET));
    assert!(tool.attrs["gen_ai.tool.call.result"].contains(SECRET));
    let chat = named(&got, "chat claude-test");
    let first = chat
        .iter()
        .find(|c| c.attrs["gen_ai.response.id"] == "msg_1")
        .unwrap();
    let output: Value = serde_json::from_str(&first.attrs["gen_ai.output.messages"]).unwrap();
    assert_eq!(
        output[0]["parts"][0]["content"],
        format!("I used {SECRET} as asked.")
    );
}

#[test]
fn a_change_of_content_sends_again_the_spans_it_changes() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    wordy_session(home);
    let receiver = Receiver::start();
    let first = summary(&push(home, &receiver.url(), &[]));
    let again = summary(&push(home, &receiver.url(), &[]));
    assert_eq!(again["spans_sent"], 0);

    // The mode from the config: the next push reads the session again and
    // sends the spans that now carry words (the tool, the first call).
    std::fs::write(home.join("config.toml"), "[otlp]\ncontent = \"full\"\n").unwrap();
    let full = summary(&push(home, &receiver.url(), &[]));
    assert_eq!(full["spans_sent"], 2, "{full}");
    assert_eq!(full["sessions_unchanged"], 0);
    let got = spans(&receiver);
    let sent = &got[first["spans_sent"].as_u64().unwrap() as usize..];
    let names: Vec<&str> = sent.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["execute_tool Bash", "chat claude-test"]);
    assert!(every_word(sent).contains(SECRET), "{sent:?}");
    assert_eq!(summary(&push(home, &receiver.url(), &[]))["spans_sent"], 0);

    // The flag over the config: back to none sends them again, bare.
    let none = summary(&push(home, &receiver.url(), &["--content", "none"]));
    assert_eq!(none["spans_sent"], 2);
    let got = spans(&receiver);
    assert!(!every_word(&got[got.len() - 2..]).contains(SECRET));
}

/// (seq, hex hash) of every event row by event id, from the ledger.
fn ledger_marks(home: &Path) -> BTreeMap<String, (i64, String)> {
    let db = home.join("ledgers/v2/ledger.sqlite");
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, seq, lower(hex(hash)) FROM events")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn each_span_names_its_rows_place_in_the_chain() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    wordy_session(home);
    super::push::three_sessions(home);
    let receiver = Receiver::start();
    summary(&push(home, &receiver.url(), &[]));
    let marks = ledger_marks(home);
    let got = spans(&receiver);
    let mut checked = 0;
    for span in &got {
        for (id, seq, hash) in [
            (
                "harnery.request.event_id",
                "harnery.request.seq",
                "harnery.request.hash",
            ),
            (
                "harnery.terminal.event_id",
                "harnery.terminal.seq",
                "harnery.terminal.hash",
            ),
            ("harnery.event_id", "harnery.seq", "harnery.hash"),
        ] {
            let Some(id) = span.attrs.get(id) else {
                continue;
            };
            let (want_seq, want_hash) = &marks[id];
            assert_eq!(span.attrs[seq], want_seq.to_string(), "{span:?}");
            assert_eq!(&span.attrs[hash], want_hash, "{span:?}");
            checked += 1;
        }
        if span.name.starts_with("execute_tool") || span.name.starts_with("chat") {
            let evidence = &span.attrs["harnery.evidence"];
            assert_eq!(evidence, "observed", "{span:?}");
        }
    }
    // s-a and s-b: a call closed and one open; s-c: 12 calls; s-words: a
    // call and two model calls.
    assert_eq!(checked, 3 + 3 + 24 + 2 + 2);

    // The hash is the chain's: recomputed from the rows' text as `export
    // --format jsonl` prints it, from the first epoch's zero seed.
    let genesis = &got[0].attrs["resource.genesis"];
    assert!(got.iter().all(|s| &s.attrs["resource.genesis"] == genesis));
    let out = run(home, &["export", "--format", "jsonl"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut prev = [0u8; 32];
    let mut by_seq = BTreeMap::new();
    for (i, line) in stdout(&out).lines().enumerate() {
        let mut h = blake3::Hasher::new();
        h.update(b"harnery.chain.v1");
        h.update(&prev);
        h.update(&(line.len() as u64).to_le_bytes());
        h.update(line.as_bytes());
        prev = *h.finalize().as_bytes();
        let hex: String = prev.iter().map(|b| format!("{b:02x}")).collect();
        by_seq.insert((i + 1) as i64, hex);
    }
    for (seq, hash) in marks.values() {
        assert_eq!(&by_seq[seq], hash, "row {seq}");
    }
}

#[test]
fn chat_spans_count_what_usage_counts_and_turns_keep_their_sums() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    wordy_session(home);
    let receiver = Receiver::start();
    summary(&push(home, &receiver.url(), &[]));
    let got = spans(&receiver);
    let chat = named(&got, "chat claude-test");
    assert_eq!(chat.len(), 2, "one span per model call");
    let turn = named(&got, "turn")[0];
    for c in &chat {
        assert_eq!(c.attrs["gen_ai.operation.name"], "chat");
        assert_eq!(c.attrs["gen_ai.request.model"], "claude-test");
        assert_eq!(c.attrs["gen_ai.response.model"], "claude-test");
        assert_eq!(
            c.attrs["gen_ai.usage.cache_write.input_tokens"],
            c.attrs["gen_ai.usage.cache_creation.input_tokens"]
        );
        assert!(!c.attrs.contains_key("gen_ai.tool.call.arguments"));
    }
    let sum = |key: &str| -> u64 {
        chat.iter()
            .map(|c| c.attrs[key].parse::<u64>().unwrap())
            .sum()
    };

    let out = run(home, &["usage", "--session", "s-words", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let usage: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tokens = &usage["groups"][0]["tokens"];
    let n = |k: &str| tokens[k].as_u64().unwrap();
    // The conventions' input is every input token, the cache's included.
    assert_eq!(
        sum("gen_ai.usage.input_tokens"),
        n("input") + n("cache_read") + n("cache_write")
    );
    assert_eq!(sum("harnery.usage.uncached_input_tokens"), n("input"));
    assert_eq!(sum("gen_ai.usage.output_tokens"), n("output"));
    assert_eq!(sum("gen_ai.usage.cache_read.input_tokens"), n("cache_read"));
    assert_eq!(
        sum("gen_ai.usage.cache_write.input_tokens"),
        n("cache_write")
    );
    assert_eq!((n("input"), n("output")), (15, 27));
    // The turn keeps its sums as before (input without the cache).
    assert_eq!(turn.attrs["gen_ai.usage.input_tokens"], "15");
    // The calls are the turn's children.
    assert!(chat.iter().all(|c| c.parent == turn.id));
}
