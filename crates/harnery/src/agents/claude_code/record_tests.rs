//! Tests of the Claude Code record reader (`record.rs`).

use super::*;

fn at() -> RecordAt {
    RecordAt {
        path: "t.jsonl".into(),
        offset: 7,
    }
}

fn read(line: &str) -> RecordLine {
    read_line(line.as_bytes(), &at())
}

#[test]
fn a_bare_string_prompt_is_text_with_turn_time_and_metadata() {
    let line = read(
        r#"{"type":"user","promptId":"p1","uuid":"u1","timestamp":"2026-11-30T00:35:57.384Z",
            "version":"2.1.332","cwd":"/w","message":{"role":"user","content":"hi"}}"#,
    );
    assert_eq!(line.native_turn_id.as_deref(), Some("p1"));
    assert_eq!(line.time_unix_ns, Some(1_795_998_957_384_000_000));
    assert_eq!(
        line.items,
        vec![
            RecordItem::UserMessage(MessageUser {
                record: at(),
                message_id: Some("u1".into()),
                text: Some("hi".into()),
                source: None,
            }),
            RecordItem::Metadata(SessionMetadata {
                record: at(),
                agent_version: Some("2.1.332".into()),
                head_commit: None,
                cwd: Some("/w".into()),
                model: None,
            }),
        ]
    );
}

#[test]
fn a_result_without_is_error_is_a_success() {
    let line = read(
        r#"{"type":"user","promptId":"p","message":{"content":[
            {"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
    );
    let RecordItem::ToolFinished(done) = &line.items[0] else {
        panic!("{line:?}")
    };
    assert_eq!(done.success, Some(true));
}

#[test]
fn tool_results_are_finished_calls_and_not_messages() {
    let line = read(
        r#"{"type":"user","promptId":"p","agentId":"a9","isSidechain":true,"message":{"content":[
            {"type":"tool_result","tool_use_id":"t1","content":"x","is_error":true},
            {"type":"tool_result","tool_use_id":"t2","content":"y","is_error":false}]}}"#,
    );
    assert_eq!(line.agent_id.as_deref(), Some("a9"));
    let finished = |id: &str, ok, text: &str| {
        RecordItem::ToolFinished(RecordedResult {
            tool_call_id: id.into(),
            success: Some(ok),
            exit_code: None,
            turn_id: Some("p".into()),
            output: Some(text.into()),
        })
    };
    assert_eq!(
        line.items,
        vec![finished("t1", false, "x"), finished("t2", true, "y")]
    );
}

/// A result's content, a string or text blocks, is its output (an image
/// block is not text); one without content has none.
#[test]
fn a_results_content_is_its_output() {
    let line = read(
        r#"{"type":"user","promptId":"p","message":{"content":[
            {"type":"tool_result","tool_use_id":"t1","content":[
                {"type":"text","text":"Async agent launched successfully."},
                {"type":"image","source":{"type":"base64","data":"AAAA"}},
                {"type":"text","text":"agentId: a1"}]},
            {"type":"tool_result","tool_use_id":"t2","is_error":true,
                "content":"touch in '/p/not-allowed.txt' needs approval."},
            {"type":"tool_result","tool_use_id":"t3"}]}}"#,
    );
    let outputs: Vec<_> = line
        .items
        .iter()
        .map(|item| match item {
            RecordItem::ToolFinished(done) => done.output.as_deref(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        outputs,
        [
            Some("Async agent launched successfully.\nagentId: a1"),
            Some("touch in '/p/not-allowed.txt' needs approval."),
            None,
        ]
    );
}

#[test]
fn an_assistant_line_says_reasoning_message_usage_and_calls() {
    let line = read(
        r#"{"type":"assistant","promptId":"p","message":{"id":"m1","model":"claude-x",
            "content":[{"type":"thinking","thinking":"hmm","signature":"sig"},
            {"type":"text","text":"ok"},
            {"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],
            "usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":5,
            "cache_creation_input_tokens":6,"service_tier":"standard"}}}"#,
    );
    let digest = input_digest(Json::parse(r#"{"command":"ls"}"#).ok().as_ref());
    assert_eq!(
        line.items,
        vec![
            RecordItem::Reasoning(ReasoningRecorded {
                record: at(),
                message_id: Some("m1".into()),
                text: Some("hmm".into()),
                continuation: Some("sig".into()),
            }),
            RecordItem::AssistantMessage(MessageAssistant {
                record: at(),
                message_id: Some("m1".into()),
                model: Some("claude-x".into()),
                text: Some("ok".into()),
                tool_call_ids: vec!["t1".into()],
            }),
            RecordItem::Usage(UsageReported {
                record: at(),
                message_id: Some("m1".into()),
                model: Some("claude-x".into()),
                input_tokens: Some(3),
                output_tokens: Some(4),
                cache_read_tokens: Some(5),
                cache_write_tokens: Some(6),
                cost: None,
                duration_ms: None,
                time_to_first_token_ms: None,
                reasoning_tokens: None,
                raw: Json::parse(
                    r#"{"cache_creation_input_tokens":6,"cache_read_input_tokens":5,"input_tokens":3,"output_tokens":4,"service_tier":"standard"}"#
                )
                .ok(),
                copied_from_session: None,
            }),
            RecordItem::ToolStarted(RecordedCall {
                tool_call_id: "t1".into(),
                tool_name: "Bash".into(),
                input_digest: digest,
                turn_id: Some("p".into()),
            }),
        ]
    );
}

#[test]
fn a_tool_input_given_as_a_json_string_digests_like_the_object() {
    let call = |input: &str| {
        let line = read(&format!(
            r#"{{"type":"assistant","message":{{"id":"m","content":[
                {{"type":"tool_use","id":"t","name":"Read","input":{input}}}]}}}}"#
        ));
        match line.items.last() {
            Some(RecordItem::ToolStarted(call)) => call.input_digest.clone(),
            other => panic!("no call: {other:?}"),
        }
    };
    assert_eq!(call(r#"{"path":"/x"}"#), call(r#""{\"path\":\"/x\"}""#));
    assert_ne!(call(r#"{"path":"/x"}"#), call(r#"{"path":"/y"}"#));
}

#[test]
fn a_stream_assistant_frame_keeps_its_calls_but_not_its_first_token_usage() {
    let line = read(
        r#"{"type":"assistant","parent_tool_use_id":null,"session_id":"s","message":{"id":"m",
            "content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1,"output_tokens":1}}}"#,
    );
    assert!(matches!(
        line.items.as_slice(),
        [RecordItem::AssistantMessage(_)]
    ));
}

#[test]
fn the_init_frame_is_metadata() {
    let line = read(
        r#"{"type":"system","subtype":"init","cwd":"/w","session_id":"s","model":"claude-x",
            "claude_code_version":"2.1.332","tools":["Bash"]}"#,
    );
    assert_eq!(
        line.items,
        vec![RecordItem::Metadata(SessionMetadata {
            record: at(),
            agent_version: Some("2.1.332".into()),
            head_commit: None,
            cwd: Some("/w".into()),
            model: Some("claude-x".into()),
        })]
    );
}

#[test]
fn stream_system_frames_other_than_init_say_nothing() {
    let line = read(r#"{"type":"system","subtype":"hook_started","hook_id":"h","session_id":"s"}"#);
    assert_eq!(line, RecordLine::empty());
}

#[test]
fn the_result_frame_is_a_total_per_model() {
    let line = read(
        r#"{"type":"result","subtype":"success","duration_api_ms":349,"ttft_ms":262,
            "total_cost_usd":0.0016,"modelUsage":{"claude-x":{"inputTokens":200,
            "outputTokens":40,"cacheReadInputTokens":1,"cacheCreationInputTokens":2,
            "costUSD":0.0016}}}"#,
    );
    assert_eq!(
        line.items,
        vec![RecordItem::UsageTotal(UsageReported {
            record: at(),
            message_id: None,
            model: Some("claude-x".into()),
            input_tokens: Some(200),
            output_tokens: Some(40),
            cache_read_tokens: Some(1),
            cache_write_tokens: Some(2),
            cost: Json::parse("0.0016").ok(),
            duration_ms: Some(349),
            time_to_first_token_ms: Some(262),
            reasoning_tokens: None,
            raw: None,
            copied_from_session: None,
        })]
    );
}

#[test]
fn a_total_over_two_models_leaves_the_session_times_out() {
    let line = read(
        r#"{"type":"cost-state","totalAPIDuration":10,"modelUsage":{
            "a":{"inputTokens":1,"costUSD":0.1},"b":{"inputTokens":2,"costUSD":0.2}}}"#,
    );
    let times: Vec<_> = line
        .items
        .iter()
        .map(|i| match i {
            RecordItem::UsageTotal(u) => (u.model.clone(), u.duration_ms),
            other => panic!("not a total: {other:?}"),
        })
        .collect();
    assert_eq!(
        times,
        vec![(Some("a".into()), None), (Some("b".into()), None)]
    );
}

#[test]
fn known_silent_frames_are_empty_and_unknown_ones_are_unrecognized() {
    for silent in ["attachment", "queue-operation", "last-prompt", "atis-latch"] {
        let line = read(&format!(r#"{{"type":"{silent}","sessionId":"s"}}"#));
        assert_eq!(line, RecordLine::empty(), "{silent}");
    }
    assert!(matches!(
        read(r#"{"type":"brand-new","x":1}"#).items.as_slice(),
        [RecordItem::Unrecognized { reason }] if reason.contains("brand-new")
    ));
}

#[test]
fn malformed_lines_are_unrecognized() {
    for bad in [
        r#"{"type":"user","message":{"content":"#,
        "not json",
        r#"{"x":1}"#,
        r#"{"type":"assistant","message":{"content":[{"text":"no type"}]}}"#,
    ] {
        assert!(
            matches!(
                read(bad).items.as_slice(),
                [RecordItem::Unrecognized { .. }]
            ),
            "{bad}"
        );
    }
}

#[test]
fn lines_name_their_session() {
    let named = br#"{"type":"user","sessionId":"s1","message":{}}"#;
    assert_eq!(line_session(named).as_deref(), Some("s1"));
    assert_eq!(line_session(br#"{"type":"x"}"#), None);
    // Reading the line finds it in the same parse; a line in no known
    // shape leaves the look to `line_session`.
    assert_eq!(read_marked(named, &at()).1, Some(Some("s1".into())));
    assert_eq!(read_marked(br#"{"type":"x"}"#, &at()).1, Some(None));
    assert_eq!(read_marked(b"not json", &at()).1, None);
}

/// The texts a frame borrows read as the `String`s they were: escapes
/// undone, and a text of another type refused in the same words.
#[test]
fn borrowed_texts_read_as_strings_did() {
    let line = read(
        r#"{"type":"user","uuid":"u\"1","promptId":"p\u00e9","cwd":"/w\\x",
            "timestamp":"2026-11-30T00:35:57.384Z","message":{"content":"hi"}}"#,
    );
    assert_eq!(line.uuid.as_deref(), Some("u\"1"));
    assert_eq!(line.native_turn_id.as_deref(), Some("p\u{e9}"));
    let RecordItem::Metadata(meta) = &line.items[1] else {
        panic!("{line:?}")
    };
    assert_eq!(meta.cwd.as_deref(), Some("/w\\x"));
    let typed = read(r#"{"type":"user","uuid":5,"message":{"content":"hi"}}"#);
    let [RecordItem::Unrecognized { reason }] = typed.items.as_slice() else {
        panic!("{typed:?}")
    };
    assert_eq!(
        reason,
        "not a frame: invalid type: integer `5`, expected a string at line 1 column 23"
    );
}

/// Both reads of a line, the one pass when it takes the line.
fn both(line: &[u8]) -> (Option<Marked>, Marked) {
    (
        read_in_one_pass(line, &at()),
        read_in_two_passes(line, &at()),
    )
}

/// Every line the one-pass read takes reads as the two-pass read reads
/// it (items, place in the chain, session, mark); lines in shapes it
/// leaves to the other are read by that one.
#[test]
fn one_pass_and_two_passes_agree_on_every_shape() {
    let mut taken = 0;
    for message in [
        r#"{"role":"user","content":"hi"}"#,
        r#"{"role":"user","content":"a\nb\u00e9\""}"#,
        r#"{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"out"}]}"#,
        r#"{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x","is_error":true}]}"#,
        r#"{"role":"user","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"a":1}}]}"#,
        r#"{"role":"user","content":null}"#,
        r#"{"role":"user"}"#,
        r#"{"role":"user","content":5}"#,
        r#"{"role":"user","content":"a","id":5}"#,
        r#"{"role":"user","content":"a","content":"b"}"#,
        r#"{"id":"m","model":"c","content":[{"type":"thinking","thinking":"t","signature":"s"},
            {"type":"text","text":"x"},{"type":"tool_use","id":"t","name":"Bash","input":{"c":"ls"}}],
            "usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":5}}"#,
        r#"{"id":"m","content":[{"type":"redacted_thinking","data":"d"}],"usage":{"input_tokens":"x"}}"#,
        r#"{"id":"m","usage":{"output_tokens":1}}"#,
        r#"{"id":"m","content":null}"#,
        r#"{"id":"m","content":"bare"}"#,
        r#"{"id":null,"model":null,"content":[],"usage":null}"#,
        r#"{"id":7,"content":[]}"#,
        r#"[]"#,
        r#""text""#,
        r#"null"#,
    ] {
        for kind in ["user", "assistant", "system", "attachment", "mystery"] {
            for extra in [
                "",
                r#","promptId":"p","requestSessionId":"other""#,
                r#","parent_tool_use_id":null"#,
            ] {
                let line = format!(
                    r#"{{"type":"{kind}","uuid":"u","parentUuid":"p0","sessionId":"s","timestamp":"2026-11-30T00:35:57.384Z","version":"2.1","cwd":"/w"{extra},"message":{message}}}"#
                );
                let (one, two) = both(line.as_bytes());
                if let Some(one) = one {
                    assert_eq!(one, two, "{line}");
                    taken += 1;
                }
            }
        }
    }
    for line in [
        r#"{"type":"result","modelUsage":{"m":{"inputTokens":1,"costUSD":0.5}},"duration_api_ms":7}"#,
        r#"{"type":"system","subtype":"init","claude_code_version":"2.1","model":"m"}"#,
        r#"{"type":"file-history-snapshot","uuid":"u","snapshot":{}}"#,
        r#"{"type":"user","uuid":5,"message":{"content":"hi"}}"#,
        r#"{"uuid":"u","message":{"content":"hi"}}"#,
        "not json",
    ] {
        let (one, two) = both(line.as_bytes());
        if let Some(one) = one {
            assert_eq!(one, two, "{line}");
        }
    }
    // A line that is not UTF-8 is left to the two passes.
    let not_utf8 = b"{\"type\":\"user\",\"message\":{\"content\":\"\xff\"}}";
    assert_eq!(both(not_utf8).0, None);
    assert!(taken > 150, "the one pass took only {taken} lines");
}

/// Every line of the recorded Claude Code transcripts reads the same
/// both ways, and the one pass takes nearly all of them.
#[test]
fn one_pass_and_two_passes_agree_on_the_recorded_transcripts() {
    let (mut lines, mut taken) = (0, 0);
    for path in super::super::recorded_transcripts() {
        if path.to_string_lossy().contains("copilot") {
            continue;
        }
        let bytes = std::fs::read(&path).expect("a fixture reads");
        for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let (one, two) = both(line);
            lines += 1;
            if let Some(one) = one {
                assert_eq!(
                    one,
                    two,
                    "{}: {}",
                    path.display(),
                    String::from_utf8_lossy(line)
                );
                taken += 1;
            }
        }
    }
    assert!(lines > 200, "only {lines} lines in the fixtures");
    assert!(
        taken * 100 >= lines * 95,
        "the one pass took {taken} of {lines} lines"
    );
}
