//! The OTLP export against the OpenTelemetry protobuf definitions, not
//! against harnery's own structs: every document `harnery export --format
//! otlp` writes for every corpus scenario of both agents is decoded into
//! `opentelemetry-proto`'s `ExportTraceServiceRequest` (its serde mapping
//! of OTLP/JSON: camelCase members, hex trace and span ids, 64-bit
//! integers as decimal strings), then held to what OTLP asks of a trace:
//! ids of 16 and 8 bytes, one trace per resource, every parent present,
//! no span ending before it starts. The decoded request, written back,
//! must be the document itself: nothing the export wrote was dropped
//! or misread by the decoder.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use common::*;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use serde_json::Value;

/// Every scenario of both agents' corpora.
fn corpus_home(home: &Path) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for agent in ["claude-code", "copilot"] {
        let mut scenarios: Vec<_> = std::fs::read_dir(fixtures.join(agent))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        scenarios.sort();
        for scenario in scenarios {
            feed_fixture(home, agent, &scenario);
        }
    }
    let out = run(home, &["finalize"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn decode(line: &str) -> Result<ExportTraceServiceRequest, serde_json::Error> {
    serde_json::from_str(line)
}

/// The ids and times of every span of one trace, across documents.
#[derive(Default)]
struct Trace {
    spans: BTreeSet<Vec<u8>>,
    parents: Vec<Vec<u8>>,
}

fn check_document(request: &ExportTraceServiceRequest, traces: &mut BTreeMap<Vec<u8>, Trace>) {
    assert!(!request.resource_spans.is_empty(), "no empty document");
    for resource in &request.resource_spans {
        let attrs = &resource.resource.as_ref().expect("a resource").attributes;
        let service = attrs.iter().find(|a| a.key == "service.name").unwrap();
        let value = service.value.as_ref().and_then(|v| v.value.as_ref());
        assert_eq!(value, Some(&AnyValue::StringValue("harnery".into())));
        let scope_trace: BTreeSet<&Vec<u8>> = resource
            .scope_spans
            .iter()
            .flat_map(|s| &s.spans)
            .map(|s| &s.trace_id)
            .collect();
        assert_eq!(scope_trace.len(), 1, "one trace per resource");
        for span in resource.scope_spans.iter().flat_map(|s| &s.spans) {
            assert_eq!(span.trace_id.len(), 16, "{}", span.name);
            assert_eq!(span.span_id.len(), 8, "{}", span.name);
            assert!(matches!(span.parent_span_id.len(), 0 | 8), "{}", span.name);
            assert!(!span.name.is_empty());
            assert_eq!(span.kind, 1, "INTERNAL");
            assert!(span.start_time_unix_nano <= span.end_time_unix_nano);
            for a in &span.attributes {
                assert!(
                    a.value.as_ref().is_some_and(|v| v.value.is_some()),
                    "{}",
                    a.key
                );
            }
            let trace = traces.entry(span.trace_id.clone()).or_default();
            assert!(trace.spans.insert(span.span_id.clone()), "span ids unique");
            if !span.parent_span_id.is_empty() {
                trace.parents.push(span.parent_span_id.clone());
            }
        }
    }
}

/// `value` with the members the proto types write for a field left at
/// its default taken out (`droppedAttributesCount: 0`, `flags: 0`, …):
/// the export writes only what it means.
fn without_defaults(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !is_default(v))
                .map(|(k, v)| (k, without_defaults(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(without_defaults).collect()),
        v => v,
    }
}

fn is_default(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Number(n) => n.as_u64() == Some(0),
        Value::String(s) => s.is_empty() || s == "0",
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[test]
fn every_exported_document_decodes_as_an_otlp_export_request() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    corpus_home(home);
    let out = run(home, &["export", "--format", "otlp"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let mut traces = BTreeMap::new();
    let mut documents = 0;
    for line in text.lines() {
        let request = decode(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        check_document(&request, &mut traces);
        let written: Value = serde_json::from_str(line).unwrap();
        let read_back = serde_json::to_value(&request).unwrap();
        assert_eq!(
            without_defaults(read_back),
            without_defaults(written),
            "the proto types read back what was written"
        );
        documents += 1;
    }
    assert!(documents > 0);
    assert!(traces.len() > 20, "every session is a trace");
    for (id, trace) in &traces {
        for parent in &trace.parents {
            assert!(
                trace.spans.contains(parent),
                "trace {id:?}: a parent is missing"
            );
        }
    }
}

#[test]
fn a_malformed_document_does_not_decode() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    feed_fixture(home, "claude-code", "basic");
    assert!(run(home, &["finalize"]).status.success());
    let out = run(home, &["export", "--format", "otlp"]);
    let line = stdout(&out).lines().next().unwrap().to_string();
    assert!(decode(&line).is_ok());
    let span_id = line.split("\"spanId\":\"").nth(1).unwrap()[..16].to_string();
    for broken in [
        line.replacen(&span_id, "not-hex-at-all!!", 1),
        line.replacen("\"startTimeUnixNano\":\"", "\"startTimeUnixNano\":\"x", 1),
        line.replacen("\"kind\":1", "\"kind\":\"internal\"", 1),
        line.replacen("\"stringValue\":", "\"stringValue\":1,\"x\":", 1),
    ] {
        assert_ne!(broken, line);
        assert!(decode(&broken).is_err(), "{broken}");
    }
}
