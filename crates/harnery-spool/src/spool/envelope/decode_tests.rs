//! Tests of the envelope decoder (`decode.rs`): examples and the
//! property that decoding inverts encoding.

use super::*;
use crate::spool::Envelope;
use proptest::prelude::*;

/// The fast path's answer, owned, to compare with `serde_json`'s.
fn fast(text: &str) -> Option<Envelope> {
    decode(text).map(EnvelopeView::into_owned)
}

/// What `serde_json` and the derive make of `text`.
fn reference(text: &str) -> Option<Envelope> {
    serde_json::from_str(text).ok()
}

/// The rule the fast path lives by: when it answers, `serde_json`
/// answers the same.
fn agrees(text: &str) -> Result<(), TestCaseError> {
    if let Some(fast) = fast(text) {
        prop_assert_eq!(Some(fast), reference(text), "text: {}", text);
    }
    Ok(())
}

fn sample() -> Envelope {
    Envelope {
        v: 1,
        record_id: "01a22b04-b7c1-73e5-a92e-aa144e8686c4".into(),
        adapter: "claude-code".into(),
        event: Some("SessionStart".into()),
        session_id: Some("sess-1".into()),
        session_key: "sess-1".into(),
        received_ns: 1_796_000_000_014_000_000,
        boot_id: Some("b00t".into()),
        boottime_ns: Some(77),
        pid: 25144,
        writer: "harnery 0.1.0".into(),
        payload_len: 297,
        payload_blake3: "01b6".repeat(16),
        truncated: true,
        incomplete: false,
        write_path: WritePath::Fallback,
        fallback_reason: Some("lease \"busy\"\n".into()),
        env: [("CLAUDE_PROJECT_DIR".to_string(), "/p/ä".to_string())].into(),
    }
}

#[test]
fn what_the_writer_writes_takes_the_fast_path() {
    let env = sample();
    let text = serde_json::to_string(&env).unwrap();
    assert_eq!(fast(&text), Some(env));
    let bare = Envelope {
        event: None,
        boot_id: None,
        boottime_ns: None,
        fallback_reason: None,
        env: BTreeMap::new(),
        ..sample()
    };
    let text = serde_json::to_string(&bare).unwrap();
    assert_eq!(fast(&text), Some(bare));
}

#[test]
fn plain_strings_are_borrowed_and_escaped_ones_unescaped() {
    let text = serde_json::to_string(&sample()).unwrap();
    let view = decode(&text).unwrap();
    assert!(matches!(view.record_id, Cow::Borrowed(_)));
    assert!(matches!(view.session_id, Some(Cow::Borrowed(_))));
    let reason = view.fallback_reason.unwrap();
    assert!(matches!(reason, Cow::Owned(_)));
    assert_eq!(reason, "lease \"busy\"\n");
}

#[test]
fn fields_in_another_order_still_take_the_fast_path() {
    let env = sample();
    // A `Value` keeps its keys sorted, not in the writer's order.
    let sorted = serde_json::to_string(&serde_json::to_value(&env).unwrap()).unwrap();
    assert!(sorted.starts_with(r#"{"adapter":"#));
    assert_eq!(fast(&sorted), Some(env));
}

/// Inputs near every rule the fast path must not get wrong: each is
/// either left to `serde_json` or decoded as it decodes it.
#[test]
fn edge_cases_agree_with_serde_json() {
    let base = serde_json::to_string(&sample()).unwrap();
    let body = &base[1..base.len() - 1];
    let with = |extra: &str| format!("{{{extra},{body}}}");
    let replace = |from: &str, to: &str| base.replacen(from, to, 1);
    let cases = [
        with(r#""v":1"#),
        with(r#""x":-0"#),
        with(r#""x":01"#),
        with(r#""x":1.5e-3"#),
        with(r#""x":-12E+4"#),
        with(r#""x":1."#),
        with(r#""x":"a\u0041""#),
        with(r#""x":"a\q""#),
        with(r#""x":"tab	in""#),
        with(r#""x":[1]"#),
        with(r#""x":{}"#),
        with(r#""x":nul"#),
        with(r#""x":true"#),
        with(r#""x":null"#),
        with(r#""\u0076":2"#),
        with(r#""v\"":2"#),
        format!(" \n{base}\t\r "),
        format!("{base}x"),
        format!("{base},"),
        replace(r#""v":1"#, r#""v":70000"#),
        replace(r#""v":1"#, r#""v":1.0"#),
        replace(r#""v":1"#, r#""v":1e0"#),
        replace(r#""v":1"#, r#""v":-1"#),
        replace(r#""pid":25144"#, r#""pid":4294967296"#),
        replace(
            r#""received_ns":1796000000014000000"#,
            r#""received_ns":-0"#,
        ),
        replace(
            r#""received_ns":1796000000014000000"#,
            r#""received_ns":-9223372036854775808"#,
        ),
        replace(
            r#""received_ns":1796000000014000000"#,
            r#""received_ns":9223372036854775808"#,
        ),
        replace(
            r#""payload_len":297"#,
            r#""payload_len":18446744073709551616"#,
        ),
        replace(r#""payload_len":297"#, r#""payload_len" : 297 "#),
        replace(
            r#""payload_len":297"#,
            r#""payload_len":18446744073709551615"#,
        ),
        replace(
            r#""payload_len":297"#,
            r#""payload_len":99999999999999999999"#,
        ),
        replace(
            r#""payload_len":297"#,
            r#""payload_len":9999999999999999999"#,
        ),
        replace(r#""payload_len":297"#, r#""payload_len":00"#),
        replace(r#""payload_len":297"#, r#""payload_len":0"#),
        replace(r#""truncated":true"#, r#""truncated":null"#),
        replace(r#""truncated":true,"#, ""),
        replace(r#""boottime_ns":77"#, r#""boottime_ns":null"#),
        replace(r#""event":"SessionStart""#, r#""event":null"#),
        replace(r#""event":"SessionStart","#, ""),
        replace(r#""adapter":"claude-code","#, ""),
        replace(r#""adapter":"claude-code""#, r#""adapter":null"#),
        replace(r#""write_path":"fallback""#, r#""write_path":"Fallback""#),
        replace(
            r#""write_path":"fallback""#,
            r#""write_path":{"fallback":null}"#,
        ),
        replace(r#""env":{"#, r#""env":{"A":"1","A":"2","#),
        replace(r#""env":{"#, r#""env":{"B":"\/\b\f\r\t","#),
        replace(r#"/p/ä"#, r#"/p/\u00e4"#),
        replace(
            r#""session_id":"sess-1""#,
            r#""session_id":"sess-1","session_id":"x""#,
        ),
        "{}".into(),
        "[]".into(),
        String::new(),
    ];
    for text in &cases {
        agrees(text).unwrap();
    }
    let duplicate_unknown = with(r#""x":1,"x":"two""#);
    assert_eq!(fast(&duplicate_unknown), reference(&duplicate_unknown));
    assert!(fast(&duplicate_unknown).is_some());
}

fn text() -> impl Strategy<Value = String> {
    prop::string::string_regex("[a-z\"\\\\/\u{0}\u{1f} äu0-9]{0,12}").unwrap()
}

fn envelope() -> impl Strategy<Value = Envelope> {
    let strings = (
        text(),
        text(),
        prop::option::of(text()),
        prop::option::of(text()),
    );
    let numbers = (any::<u16>(), any::<i64>(), any::<u32>(), any::<u64>());
    let rest = (
        prop::option::of(any::<u64>()),
        any::<bool>(),
        prop::option::of(text()),
        prop::collection::btree_map(text(), text(), 0..3),
    );
    (strings, numbers, rest).prop_map(|(s, n, r)| Envelope {
        v: n.0,
        record_id: s.0.clone(),
        adapter: s.1,
        event: s.2,
        session_id: s.3,
        session_key: s.0,
        received_ns: n.1,
        boot_id: None,
        boottime_ns: r.0,
        pid: n.2,
        writer: "w".into(),
        payload_len: n.3,
        payload_blake3: String::new(),
        truncated: r.1,
        incomplete: !r.1,
        write_path: WritePath::DeadLetter,
        fallback_reason: r.2,
        env: r.3,
    })
}

proptest! {
    #[test]
    fn string_stop_finds_the_first_stop_byte(
        bytes in prop::collection::vec(prop::sample::select(vec![0u8, 0x1f, 0x20, b'"', b'\\', b'a', 0x7f, 0x80, 0xa0, 0xff]), 0..40),
    ) {
        let naive = bytes.iter().position(|b| matches!(b, b'"' | b'\\' | 0..=0x1f));
        prop_assert_eq!(string_stop(&bytes), naive);
    }

    #[test]
    fn serialized_envelopes_decode_as_serde_json_decodes_them(env in envelope()) {
        let text = serde_json::to_string(&env).unwrap();
        let fast = fast(&text);
        // Only `\u` escapes (control bytes) send a well-formed envelope
        // to the slow path (an escaped backslash is not one).
        let unicode_escape = text.replace("\\\\", "").contains("\\u");
        prop_assert_eq!(fast.is_some(), !unicode_escape);
        agrees(&text)?;
    }

    #[test]
    fn damaged_envelopes_are_never_decoded_differently(
        env in envelope(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, "[-0-9.eE:,{}\\[\\]\" ntrufals\\\\]"), 1..4),
    ) {
        let mut text = serde_json::to_string(&env).unwrap().into_bytes();
        for (at, op, piece) in edits {
            let i = at.index(text.len() + 1);
            match op {
                0 => { text.splice(i..i, piece.bytes()); }
                1 if i < text.len() => { text.remove(i); }
                _ if i < text.len() => { text.splice(i..=i, piece.bytes()); }
                _ => {}
            }
        }
        if let Ok(text) = String::from_utf8(text) {
            agrees(&text)?;
        }
    }
}
