//! Rows judged by a generation's shape: every sample fits this build's
//! generation; a row of a type, member or value a shipped generation did
//! not have is refused by that generation (and named where it is), while
//! the generation that introduced it takes it.

use serde_json::{Value, json};

use super::tests::{event, samples};
use super::*;

fn shape(n: u32) -> Shape {
    GENERATIONS[n as usize - 1].shape()
}

fn row(payload: Payload) -> Value {
    serde_json::to_value(event(payload, Attestation::Record)).expect("serializes")
}

fn sample(ty: EventType) -> Value {
    let payload = samples()
        .into_iter()
        .find(|p| p.event_type() == ty)
        .expect("every type has a sample");
    row(payload)
}

fn problems(n: u32, value: &Value) -> Vec<String> {
    shape(n)
        .check(value)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn every_sample_fits_this_generation_and_its_derived_shape() {
    for payload in samples() {
        let ty = payload.event_type();
        let value = row(payload);
        assert_eq!(
            problems(CONTRACT_GENERATION, &value),
            Vec::<String>::new(),
            "{ty}"
        );
        assert!(contract_shape().check(&value).is_empty(), "{ty}");
    }
}

#[test]
fn a_type_is_judged_by_the_generation_that_wrote_the_row() {
    let located = sample(EventType::CheckpointLocated);
    assert!(problems(7, &located).is_empty());
    assert_eq!(
        problems(6, &located),
        ["$.type: \"checkpoint.located\" is none of the 37 this contract knows"]
    );
    let summary = sample(EventType::UsageSummary);
    assert!(problems(5, &summary).is_empty());
    assert_eq!(
        problems(4, &summary).len(),
        1,
        "{:?}",
        problems(4, &summary)
    );
}

#[test]
fn a_member_is_judged_by_the_generation_that_wrote_the_row() {
    let user = sample(EventType::MessageUser);
    assert!(problems(6, &user).is_empty());
    assert_eq!(problems(5, &user), ["$.payload: unknown member `source`"]);
    let mut located = sample(EventType::CheckpointRecorded);
    assert!(problems(6, &located).is_empty());
    assert_eq!(problems(5, &located), ["$.payload: unknown member `cwd`"]);
    // Generation 7 described `transformed` as required; this build reads
    // it missing as false.
    let mut prompt = sample(EventType::PromptSubmitted);
    prompt["payload"]
        .as_object_mut()
        .unwrap()
        .remove("transformed");
    assert!(problems(8, &prompt).is_empty());
    assert_eq!(
        problems(7, &prompt),
        ["$.payload: missing member `transformed`"]
    );
    located["payload"]["effects"][0]
        .as_object_mut()
        .unwrap()
        .remove("ref");
    assert_eq!(
        problems(8, &located),
        ["$.payload.effects[0]: missing member `ref`"]
    );
}

#[test]
fn a_value_is_judged_by_the_generation_that_wrote_the_row() {
    let mut row = sample(EventType::SessionEnded);
    row["provenance"]["attestation"] = json!("record");
    assert!(problems(2, &row).is_empty());
    assert_eq!(
        problems(1, &row),
        ["$.provenance.attestation: \"record\" is not one of native, derived"]
    );
}

#[test]
fn nested_members_are_checked_with_their_types() {
    let mut user = sample(EventType::MessageUser);
    user["payload"]["record"]["offset"] = json!(-1);
    assert_eq!(
        problems(8, &user),
        ["$.payload.record.offset: a number where an integer (uint64) belongs"]
    );
    let mut resumed = sample(EventType::SessionResumed);
    resumed["payload"]["superseded"]["to"] = json!("9");
    resumed["payload"]["superseded"]["extra"] = json!(1);
    assert_eq!(
        problems(3, &resumed),
        [
            "$.payload.superseded.to: a string where an integer (uint64) belongs",
            "$.payload.superseded: unknown member `extra`"
        ]
    );
    let mut done = sample(EventType::ToolCompleted);
    done["payload"]["duration_ms"] = json!({"observed": 1, "unknown": "x"});
    let found = problems(9, &done);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("$.payload.duration_ms: fits none of its 2 forms"),
        "{found:?}"
    );
    let mut envelope = sample(EventType::SessionEnded);
    envelope["surprise"] = json!(1);
    assert_eq!(problems(2, &envelope), ["$: unknown member `surprise`"]);
    assert_eq!(problems(8, &envelope), ["$: unknown member `surprise`"]);
}
