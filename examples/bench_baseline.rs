//! Benchmark baseline: insert the same number of rows a finalize run
//! appended, of the same average size, in the same number of transactions,
//! into a fresh SQLite database (WAL, synchronous=FULL) with a blake3 chain,
//! and nothing else. It prints the seconds of that work alone (the inserts
//! and their commits): reading the ledger's row count and average
//! size first is set-up, which `scripts/bench-finalize.sh` leaves out.
//!
//! Usage: bench_baseline <finalized ledger.sqlite> <scratch dir>

use rusqlite::{Connection, params};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, ledger, scratch] = &args[..] else {
        eprintln!("usage: bench_baseline <ledger.sqlite> <scratch dir>");
        std::process::exit(2);
    };
    let src = Connection::open(ledger).expect("ledger opens");
    // A compact ledger's `events` decodes its text through this function.
    harnery::ledger::eventz::register(&src).expect("the ledger's SQL functions");
    let (rows, avg, batches): (i64, f64, i64) = src
        .query_row(
            "SELECT count(*), avg(length(json)), (SELECT count(*) FROM applied_batches) FROM events",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("ledger stats");
    let row_bytes = avg as usize;
    let per_batch = (rows / batches.max(1)).max(1) as usize;
    let db = std::path::Path::new(scratch).join("baseline.sqlite");
    let _ = std::fs::remove_file(&db);
    let mut conn = Connection::open(&db).unwrap();
    // The same page size and cache as the ledger, so only the work differs.
    conn.pragma_update(None, "page_size", 16384).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "cache_size", -16384).unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 4096)
        .unwrap();
    conn.pragma_update(None, "synchronous", "FULL").unwrap();
    conn.execute_batch(
        "CREATE TABLE events (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, json TEXT NOT NULL, prev_hash BLOB NOT NULL, hash BLOB NOT NULL)",
    )
    .unwrap();
    let filler = "x".repeat(row_bytes);
    let start = std::time::Instant::now();
    let mut prev = [0u8; 32];
    let mut done = 0usize;
    while done < rows as usize {
        let tx = conn.transaction().unwrap();
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO events (id, json, prev_hash, hash) VALUES (?1, ?2, ?3, ?4)",
                )
                .unwrap();
            for _ in 0..per_batch.min(rows as usize - done) {
                let id = format!("ev_{done:032}");
                let mut h = blake3::Hasher::new();
                h.update(&prev);
                h.update(&(filler.len() as u64).to_le_bytes());
                h.update(filler.as_bytes());
                let hash = *h.finalize().as_bytes();
                stmt.execute(params![id, filler, &prev[..], &hash[..]])
                    .unwrap();
                prev = hash;
                done += 1;
            }
        }
        tx.commit().unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "baseline: {rows} rows of {row_bytes} bytes in {batches} transactions: {secs:.2} s, {:.0} rows/s",
        rows as f64 / secs
    );
}
