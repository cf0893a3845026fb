//! The read side over the agent's own record (contract generation 2),
//! through the real binary over a real ledger: `usage` (grouping,
//! `--since`, reported cost, `--prices`, bad input), the tokens `show` and
//! `receipts` give a turn, and the GenAI attributes `export --format otlp`
//! adds. The ledgers are built by finalizing hand-made ready batches, as
//! the finalizer of this build does not yet write these events itself.

use crate::common;

use std::path::Path;

use common::*;
use harnery::contract::{
    AdapterId, Attestation, Confidence, Event, Json, MessageAssistant, Payload, Provenance,
    ReasoningRecorded, RecordAt, SessionRef, ToolRecorded, ToolRequested, TurnCompleted,
    TurnStarted, UsageReported,
};
use serde_json::Value;

/// 2026-06-01T00:00:00Z and the day after, in Unix nanoseconds.
const DAY_1: i64 = 1_780_272_000_000_000_000;
const DAY_2: i64 = DAY_1 + 86_400_000_000_000;

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

/// A usage report: model, input, output, cache read, and the agent's cost.
fn usage(model: &str, input: u64, output: u64, cost: Option<&str>) -> Payload {
    Payload::UsageReported(UsageReported {
        record: at(),
        message_id: None,
        model: Some(model.into()),
        input_tokens: Some(input),
        output_tokens: Some(output),
        cache_read_tokens: Some(1000),
        cache_write_tokens: None,
        cost: cost.map(|c| Json::parse(c).expect("a JSON number")),
        duration_ms: Some(1200),
        time_to_first_token_ms: None,
        reasoning_tokens: None,
        // Written by generation 4: input already excludes cache reads.
        raw: Some(Json::parse(&format!(r#"{{"inputTokens":{}}}"#, input + 1000)).unwrap()),
        copied_from_session: None,
    })
}

fn started() -> Payload {
    Payload::TurnStarted(TurnStarted {
        prompt_event_id: None,
    })
}

fn completed() -> Payload {
    Payload::TurnCompleted(TurnCompleted {
        stop_reason: Some("end_turn".into()),
    })
}

/// A session's events from payloads, each `step` after the last from `start`.
fn session_of(s: &SessionRef, start: i64, payloads: Vec<Payload>) -> Vec<Event> {
    payloads
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let record = !matches!(p, Payload::TurnStarted(_) | Payload::TurnCompleted(_));
            let mut e = event(s, i as u64, p);
            e.time_unix_ns = start + i as i64 * 1_000_000_000;
            if record {
                e.provenance = RECORD;
            }
            e
        })
        .collect()
}

/// `s-one` on day 1 (m1 with a reported cost, m2 without), `s-two` on day 2 (m1).
fn usage_home(home: &Path) {
    let one = session_of(
        &session("s-one"),
        DAY_1,
        vec![
            started(),
            usage("m1", 100, 20, Some("0.25")),
            usage("m2", 10, 5, None),
            completed(),
        ],
    );
    let two = session_of(
        &session("s-two"),
        DAY_2,
        vec![started(), usage("m1", 50, 10, Some("0.5")), completed()],
    );
    inject(home, "b1", one);
    inject(home, "b2", two);
    finalized(home);
}

fn finalized(home: &Path) {
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn usage_json(home: &Path, args: &[&str]) -> Value {
    let mut all = vec!["usage", "--json"];
    all.extend(args);
    let out = run(home, &all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("usage --json is JSON")
}

fn keys(doc: &Value) -> Vec<&str> {
    let groups = doc["groups"].as_array().expect("groups");
    groups.iter().map(|g| g["key"].as_str().unwrap()).collect()
}

#[test]
fn usage_groups_by_session_day_and_model_and_keeps_since() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    usage_home(home);
    let by_session = usage_json(home, &[]);
    assert_eq!(by_session["by"], "session");
    assert_eq!(
        keys(&by_session),
        ["claude-code/s-one", "claude-code/s-two"]
    );
    assert_eq!(by_session["groups"][0]["tokens"]["input"], 110);
    assert_eq!(by_session["total"]["tokens"]["output"], 35);
    assert_eq!(by_session["total"]["tokens"]["cache_read"], 3000);
    // No record reported cache writes: absent, not zero.
    assert_eq!(by_session["total"]["tokens"]["cache_write"], Value::Null);

    let by_day = usage_json(home, &["--by", "day"]);
    assert_eq!(keys(&by_day), ["2026-06-01", "2026-06-02"]);
    let by_model = usage_json(home, &["--by", "model"]);
    assert_eq!(keys(&by_model), ["m1", "m2"]);
    assert_eq!(by_model["groups"][0]["records"], 2);
    assert_eq!(by_model["groups"][0]["tokens"]["input"], 150);

    let since = usage_json(home, &["--by", "model", "--since", "2026-06-02T00:00:00Z"]);
    assert_eq!(keys(&since), ["m1"]);
    assert_eq!(since["total"]["records"], 1);
    let one = usage_json(home, &["--session", "s-one", "--by", "model"]);
    assert_eq!(one["total"]["tokens"]["input"], 110);
}

#[test]
fn reported_cost_is_only_what_the_agent_reported() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    usage_home(home);
    let doc = usage_json(home, &["--by", "model"]);
    let (m1, m2) = (&doc["groups"][0], &doc["groups"][1]);
    assert_eq!(m1["reported_cost"], 0.75);
    assert_eq!(m1["records_with_reported_cost"], 2);
    assert_eq!(m2["reported_cost"], Value::Null);
    assert_eq!(m2["records_with_reported_cost"], 0);
    // Priced apart by the bundled, dated table, which knows neither model.
    assert_eq!(doc["priced"], true);
    assert!(
        doc["prices"].as_str().unwrap().starts_with("LiteLLM "),
        "{doc}"
    );
    assert!(m1.get("priced_cost").is_none(), "{m1}");
    assert_eq!(m1["unpriced_records"], 2);

    let out = run(home, &["usage", "--by", "model"]);
    let text = stdout(&out);
    let m2_line = text
        .lines()
        .find(|l| l.starts_with("m2 "))
        .expect("an m2 line");
    assert!(m2_line.trim_end().ends_with(" -"), "{text}");
    assert!(
        text.contains("reported_cost is the agents' own figure, from 2 of 3 records"),
        "{text}"
    );
    assert!(text.contains("priced_cost at LiteLLM "), "{text}");
}

/// The bundled table prices a model it knows, each kind of token once:
/// Copilot's cached input is priced as cache reads only.
#[test]
fn the_bundled_table_prices_known_models_by_default() {
    let prices = harnery::report::usage::Prices::bundled();
    assert!(prices.date.is_some() && prices.source.is_some());
    let gpt = prices.models["gpt-4.1"];
    let sonnet = prices.models["claude-sonnet-4-5"];
    assert_eq!(prices.models["claude-sonnet-4.5"], sonnet, "Copilot's name");
    assert!(gpt.input.is_some() && gpt.output.is_some() && gpt.cache_read.is_some());
    assert!(sonnet.cache_write.is_some());
}

#[test]
fn prices_add_a_separate_priced_cost_and_name_the_unpriced_model() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    usage_home(home);
    let prices = dir.path().join("prices.toml");
    std::fs::write(
        &prices,
        "[models.m1]\ninput = 2.0\noutput = 10.0\ncache_read = 0.5\n",
    )
    .unwrap();
    let file = prices.to_str().unwrap();
    let doc = usage_json(home, &["--by", "model", "--prices", file]);
    assert_eq!(doc["priced"], true);
    let m1 = &doc["groups"][0];
    // (150 * 2 + 30 * 10 + 2000 * 0.5) per million tokens.
    assert_eq!(m1["priced_cost"], 0.0016);
    assert_eq!(
        m1["reported_cost"], 0.75,
        "reported cost stays the agent's own"
    );
    let m2 = &doc["groups"][1];
    assert_eq!(m2["priced_cost"], Value::Null);
    assert_eq!(m2["unpriced_records"], 1);
    assert_eq!(m2["unpriced_models"], serde_json::json!(["m2"]));

    let text = stdout(&run(home, &["usage", "--prices", file]));
    assert!(
        text.lines().next().unwrap().ends_with("priced_cost"),
        "{text}"
    );
    assert!(text.contains("unpriced: 1 records"), "{text}");
}

#[test]
fn bad_input_exits_2_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    usage_home(home);
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[models.m1]\ninput = 1.0\noutput = \"ten\"\n").unwrap();
    let out = run(home, &["usage", "--prices", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.toml") && err.contains("line 3, column 10"),
        "{err}"
    );

    let missing = dir.path().join("none.toml");
    let out = run(home, &["usage", "--prices", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot read prices file"),
        "{}",
        stderr(&out)
    );

    let out = run(home, &["usage", "--by", "week"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a grouping"), "{}", stderr(&out));
}

#[test]
fn a_ledger_without_usage_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    inject(home, "b1", small_session("s-plain"));
    finalized(home);
    let out = run(home, &["usage"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("no usage recorded"),
        "{}",
        stdout(&out)
    );
    let doc = usage_json(home, &[]);
    assert_eq!(doc["total"]["records"], 0);
    assert_eq!(doc["groups"], serde_json::json!([]));
}

/// One turn with an assistant message, reasoning, two usage reports, and a
/// tool whose hook carried no call id but whose record did (Copilot's way).
fn record_session(home: &Path) -> Vec<Event> {
    let s = SessionRef {
        adapter: AdapterId::Copilot,
        session_id: "s-rec".into(),
    };
    let hook_request = Payload::ToolRequested(ToolRequested {
        tool_call_id: None,
        tool_name: "bash".into(),
        input_digest: "digest".into(),
        input: None,
        recovery: None,
    });
    let mut events = session_of(
        &s,
        DAY_1,
        vec![
            started(),
            Payload::MessageAssistant(MessageAssistant {
                record: at(),
                message_id: Some("m-1".into()),
                model: Some("gpt-5".into()),
                text: Some("I will list the files.\nThen read them.".into()),
                tool_call_ids: vec!["call_7".into()],
            }),
            Payload::ReasoningRecorded(ReasoningRecorded {
                record: at(),
                message_id: None,
                text: Some("The user wants files.\nSecond thought.".into()),
                continuation: None,
            }),
            hook_request,
            usage("gpt-5", 300, 40, None),
            usage("gpt-5", 20, 5, None),
            completed(),
        ],
    );
    events[3].provenance = Provenance::NATIVE;
    let request = events[3].id.clone();
    let mut recorded = event(
        &s,
        7,
        Payload::ToolRecorded(ToolRecorded {
            record: at(),
            span_request_event_id: Some(request),
            tool_call_id: "call_7".into(),
            tool_name: "bash".into(),
            turn_id: Some("turn-1".into()),
            success: Some(true),
            exit_code: Some(0),
            output: None,
            output_cut_bytes: None,
        }),
    );
    recorded.time_unix_ns = DAY_1 + 7_000_000_000;
    recorded.provenance = RECORD;
    events.push(recorded);
    inject(home, "b1", events.clone());
    finalized(home);
    events
}

#[test]
fn show_gives_assistant_text_reasoning_and_turn_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    record_session(home);
    let out = run(home, &["show", "s-rec"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("assistant: I will list the files. (asks for 1 tools)"),
        "{text}"
    );
    assert!(
        text.contains("reasoning: The user wants files.\n"),
        "{text}"
    );
    let closing = text.lines().find(|l| l.contains("turn completed")).unwrap();
    assert!(
        closing.ends_with("turn completed (end_turn) · 365 tokens"),
        "{text}"
    );

    let doc: Value =
        serde_json::from_slice(&run(home, &["show", "s-rec", "--json"]).stdout).unwrap();
    let entries = doc["entries"].as_array().unwrap();
    let marked: Vec<&Value> = entries
        .iter()
        .filter(|e| e.get("turn_tokens").is_some())
        .collect();
    assert_eq!(marked.len(), 1);
    assert_eq!(marked[0]["kind"], "turn.completed");
    assert_eq!(marked[0]["turn_tokens"], 365);
}

#[test]
fn receipts_give_model_time_and_tokens_per_turn() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    record_session(home);
    inject(home, "b2", small_session("s-plain"));
    finalized(home);
    let out = run(home, &["receipts", "s-rec", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let turn = &doc["turns"][0];
    assert_eq!(turn["model_ms"], 2400);
    assert_eq!(turn["tokens"], 365);
    assert!(turn["wall_ms"].is_u64() && turn["tools"].is_object());

    let text = stdout(&run(home, &["receipts", "s-rec"]));
    let head: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(&head[6..], ["model_ms", "tokens", "notes"]);
    let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[6..8], ["2400", "365"], "{text}");

    let plain: Value =
        serde_json::from_slice(&run(home, &["receipts", "s-plain", "--json"]).stdout).unwrap();
    assert_eq!(plain["turns"][0]["tokens"], Value::Null);
    assert_eq!(plain["turns"][0]["model_ms"], Value::Null);
}

/// The spans of an OTLP export of one session, or (`None`) of them all.
fn otlp_spans(home: &Path, session: Option<&str>) -> Vec<Value> {
    let mut args = vec!["export", "--format", "otlp"];
    args.extend(session.iter().flat_map(|s| ["--session", s]));
    let out = run(home, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut spans = Vec::new();
    for line in stdout(&out).lines() {
        let doc: Value = serde_json::from_str(line).unwrap();
        for r in doc["resourceSpans"].as_array().unwrap() {
            spans.extend(
                r["scopeSpans"][0]["spans"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .cloned(),
            );
        }
    }
    spans
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    let attrs = span["attributes"].as_array().unwrap();
    attrs.iter().find(|a| a["key"] == key).map(|a| &a["value"])
}

#[test]
fn otlp_turns_carry_genai_usage_and_tools_the_recorded_call_id() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    record_session(home);
    let spans = otlp_spans(home, Some("s-rec"));
    let turn = spans.iter().find(|s| s["name"] == "turn").unwrap();
    assert_eq!(
        attr(turn, "gen_ai.usage.input_tokens").unwrap()["intValue"],
        "320"
    );
    assert_eq!(
        attr(turn, "gen_ai.usage.output_tokens").unwrap()["intValue"],
        "45"
    );
    assert_eq!(
        attr(turn, "gen_ai.request.model").unwrap()["stringValue"],
        "gpt-5"
    );
    // The cache's reads under the GenAI name; no writes were reported.
    assert_eq!(
        attr(turn, "gen_ai.usage.cache_read.input_tokens").unwrap()["intValue"],
        "2000"
    );
    assert_eq!(attr(turn, "gen_ai.usage.cache_creation.input_tokens"), None);
    let tool = spans
        .iter()
        .find(|s| s["name"] == "execute_tool bash")
        .unwrap();
    assert_eq!(
        attr(tool, "gen_ai.tool.call.id").unwrap()["stringValue"],
        "call_7"
    );
    // The whole ledger's export finds the sessions with notes in one pass
    // of its own; the session's spans are the same.
    assert_eq!(otlp_spans(home, None), spans);
}

#[test]
fn otlp_of_a_session_without_usage_is_unchanged_by_a_neighbour_with_usage() {
    let alone = tempfile::tempdir().unwrap();
    inject(alone.path(), "b1", small_session("s-plain"));
    finalized(alone.path());
    let before = stdout(&run(alone.path(), &["export", "--format", "otlp"]));

    let beside = tempfile::tempdir().unwrap();
    record_session(beside.path());
    inject(beside.path(), "b2", small_session("s-plain"));
    finalized(beside.path());
    let args = ["export", "--format", "otlp", "--session", "s-plain"];
    let after = stdout(&run(beside.path(), &args));
    assert_eq!(without_chain_places(&before), without_chain_places(&after));
    assert!(!before.contains("gen_ai.usage"), "{before}");
}

/// An export's text without where its rows stand in their ledgers (the
/// epoch's genesis id, the rows' seqs and hashes): those are each
/// ledger's own.
fn without_chain_places(text: &str) -> Vec<Value> {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Array(attrs)) = m.get_mut("attributes") {
                    attrs.retain(|a| {
                        let key = a["key"].as_str().unwrap_or("");
                        !(key == "harnery.ledger.genesis_id"
                            || key.ends_with(".seq")
                            || key.ends_with(".hash"))
                    });
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    text.lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            strip(&mut v);
            v
        })
        .collect()
}
