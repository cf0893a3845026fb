//! What the `finalize` job does after its run: the search index caught up
//! on a thread of its own beside the report and compaction, and the WAL
//! left empty once both are done (a read-only connection that closes last
//! cannot checkpoint, and compaction's writer may close first).

use crate::common::*;

/// In failpoint builds the catch-up keeps its read-only connection to the
/// ledger open for a second after it is done, so that it closes after
/// compaction's writer, as it does when the index has much to catch up.
#[test]
fn the_job_leaves_the_index_current_and_the_wal_empty() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    feed_fixture(home, "claude-code", "basic");
    let out = harnery(home)
        .env("HARNERY_SEARCH_HOLD_MS", "1000")
        .args(["finalize", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // The report is whole, though the catch-up ran beside it.
    let summary: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        summary["signals_drained"].as_u64().unwrap() > 0,
        "{summary}"
    );

    let wal = home.join("ledgers/v2/ledger.sqlite-wal");
    let left = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert_eq!(left, 0, "{} holds {left} bytes", wal.display());

    let out = run(home, &["search", "--json", "echo hi"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!hits.is_empty(), "the prompt is found");
    assert!(hits.iter().all(|h| h["index_behind"] == 0), "{hits:?}");
}
