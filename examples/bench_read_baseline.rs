//! Baselines for the read benchmark (`scripts/bench-read.sh`): read every
//! event row of a ledger in chain order on one thread and do the least a
//! read command could do with it.
//!
//! - `hash`: blake3 each row's stored JSON once (the baseline for `verify`).
//! - `copy`: write each row's stored JSON and a newline to stdout (the
//!   baseline for `export`; point stdout at /dev/null).
//!
//! Usage: bench_read_baseline <ledger.sqlite> hash|copy

use std::io::Write;

use rusqlite::{Connection, OpenFlags};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, mode] = &args[..] else {
        eprintln!("usage: bench_read_baseline <ledger.sqlite> hash|copy");
        std::process::exit(2);
    };
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("opens");
    let mut stmt = conn
        .prepare("SELECT CAST(json AS BLOB) FROM events ORDER BY seq")
        .expect("prepares");
    let mut rows = stmt.query([]).expect("queries");
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let (mut n, mut acc) = (0u64, [0u8; 32]);
    while let Some(r) = rows.next().expect("reads") {
        let json = r.get_ref(0).expect("column").as_blob().expect("blob");
        match mode.as_str() {
            "hash" => {
                let h = blake3::hash(json);
                acc[0] ^= h.as_bytes()[0];
            }
            _ => {
                out.write_all(json).expect("writes");
                out.write_all(b"\n").expect("writes");
            }
        }
        n += 1;
    }
    out.flush().expect("flushes");
    eprintln!("{n} rows ({})", acc[0]);
}
