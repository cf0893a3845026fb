//! What the raw archive tests read back: every archived raw signal's
//! record through the archive reader, and the archive's files.

use std::path::{Path, PathBuf};

/// Every raw signal kept in the archive: its digest, envelope and payload,
/// read through `raw::Archive` from wherever its batch's bytes are now.
pub fn raw_records(home: &Path) -> Vec<(String, String, Vec<u8>)> {
    let dir = home.join("ledgers/v2");
    let conn = rusqlite::Connection::open(dir.join("ledger.sqlite")).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let mut stmt = conn
        .prepare("SELECT record_digest, batch, archive_at FROM raw_signals WHERE archive_at IS NOT NULL ORDER BY record_digest")
        .unwrap();
    let rows: Vec<(String, String, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.into_iter()
        .map(|(digest, batch, at)| {
            let mut a = harnery::ledger::raw::Archive::open(&dir, &batch).unwrap();
            let rec = a.record_at(at as u64).unwrap();
            (digest, format!("{:?}", rec.envelope), rec.payload)
        })
        .collect()
}

/// What in the live epoch's raw archive is not a packed batch: a
/// directory, or a file other than `raw/<batch>.segz`.
pub fn not_packed(home: &Path) -> Vec<PathBuf> {
    let raw = home.join("ledgers/v2/raw");
    std::fs::read_dir(&raw)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() || !p.to_string_lossy().ends_with(".segz"))
        .collect()
}

/// `finalize --no-compact` on `home` with chunks closed at `chunk_bytes`
/// (a failpoints build's tuning), so that its spool drains into many
/// batches: the batches' archive directories, in name order.
#[cfg(feature = "failpoints")]
pub fn drain_in_batches(home: &Path, chunk_bytes: u64) -> Vec<PathBuf> {
    let out = crate::common::harnery(home)
        .env("HARNERY_CHUNK_BYTES", chunk_bytes.to_string())
        .args(["finalize", "--no-compact"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    let mut batches: Vec<PathBuf> = std::fs::read_dir(home.join("ledgers/v2/raw"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    batches.sort();
    batches
}

/// `harnery <args>` on `home`, which the armed failpoint `point` must kill
/// (it ends by a signal, not an exit): its output.
#[cfg(feature = "failpoints")]
pub fn killed_at(home: &Path, point: &str, args: &[&str]) -> std::process::Output {
    let out = crate::common::harnery(home)
        .env("HARNERY_FAILPOINTS", point)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "{point}: not killed: {}",
        crate::common::stderr(&out)
    );
    out
}
