//! `harnery restore --apply` killed partway and rerun (found by
//! `scripts/kill-campaign.sh restore-apply`): the put-back writes the new
//! session's record, then spools its link to the parent. A run killed
//! after the record was written (wholly or in part) left a file the rerun
//! refused as "already exists", and the link was lost for good. The rerun
//! completes the record, links the session once, and a rerun after a whole
//! put-back links nothing twice. The killed states are made by hand here
//! (a record cut short, a record without its link); the campaign makes
//! them with real SIGKILLs.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::stderr;
use crate::restore::apply::*;

const FIRST: &str = "0b5e6c1e-0000-4000-8000-0000000000a1";
const CUT: &str = "0b5e6c1e-0000-4000-8000-0000000000a2";
const UNLINKED: &str = "0b5e6c1e-0000-4000-8000-0000000000a3";

fn apply(w: &World, new_id: &str) -> std::process::Output {
    let turn1 = format!("turn:{CLAUDE_TURN_1}");
    w.harnery(&[
        "restore",
        CLAUDE,
        "--checkpoint",
        &turn1,
        "--apply",
        "--new-id",
        new_id,
    ])
}

fn record_of(w: &World, new_id: &str) -> PathBuf {
    w.record.with_file_name(format!("{new_id}.jsonl"))
}

/// The new session's checkpoints, once finalized.
fn links(w: &World, new_id: &str) -> Vec<Value> {
    let log = w.json(&["checkpoints", new_id, "--json"]);
    log["checkpoints"].as_array().unwrap().clone()
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_put_back_killed_after_writing_its_record_is_completed_and_linked_once() {
    let w = claude_world();
    let out = apply(&w, FIRST);
    assert!(out.status.success(), "{}", stderr(&out));
    let whole = std::fs::read_to_string(record_of(&w, FIRST)).unwrap();
    // The new id names nothing but the session: the put-back of another id
    // is the same bytes under that id.
    let as_cut = whole.replace(FIRST, CUT);
    let as_unlinked = whole.replace(FIRST, UNLINKED);
    // Killed inside the write: the file holds a beginning of the record.
    write(&record_of(&w, CUT), &as_cut.as_bytes()[..as_cut.len() / 3]);
    // Killed between the write and the link.
    write(&record_of(&w, UNLINKED), as_unlinked.as_bytes());

    for id in [CUT, UNLINKED, FIRST] {
        let out = apply(&w, id);
        assert!(out.status.success(), "{id}: {}", stderr(&out));
    }
    w.ok(&["finalize"]);
    assert_eq!(std::fs::read_to_string(record_of(&w, CUT)).unwrap(), as_cut);
    assert_eq!(
        std::fs::read_to_string(record_of(&w, UNLINKED)).unwrap(),
        as_unlinked
    );
    for id in [CUT, UNLINKED, FIRST] {
        let links = links(&w, id);
        assert_eq!(links.len(), 1, "{id}: linked once: {links:?}");
        assert_eq!(
            links[0]["checkpoint_id"],
            format!("restored-from:turn:{CLAUDE_TURN_1}")
        );
    }
    // A rerun after the link was finalized links nothing again.
    let out = apply(&w, UNLINKED);
    assert!(out.status.success(), "{}", stderr(&out));
    w.ok(&["finalize"]);
    assert_eq!(links(&w, UNLINKED).len(), 1);
    w.ok(&["verify"]);
}

#[test]
fn a_file_that_is_not_the_records_beginning_is_still_refused() {
    let w = claude_world();
    let out = apply(&w, FIRST);
    assert!(out.status.success(), "{}", stderr(&out));
    let whole = std::fs::read(record_of(&w, FIRST)).unwrap();
    let mut other = whole[..whole.len() / 2].to_vec();
    other.extend_from_slice(b"{\"the agent's own\":true}\n");
    let path = record_of(&w, CUT);
    write(&path, &other);
    let out = apply(&w, CUT);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&path).unwrap(), other, "left as it was");
}
