//! Baselines for the read benchmark (`scripts/bench-read.sh`): read every
//! event row of a ledger in chain order on one thread and do the least a
//! read command could do with it.
//!
//! - `hash`: blake3 each row's stored JSON once (the chain's share of
//!   `verify`).
//! - `hash-all`: as `hash`, then read every raw signal row and every raw
//!   archive file from start to end, blake3-hashing each record once: the
//!   least `verify` could do, which checks both (the baseline for `verify`).
//! - `copy`: write each row's stored JSON and a newline to stdout (the
//!   baseline for `export`; point stdout at /dev/null).
//!
//! Usage: bench_read_baseline <ledger.sqlite> hash|hash-all|copy

use std::io::Write;

use rusqlite::{Connection, OpenFlags};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, db, mode] = &args[..] else {
        eprintln!("usage: bench_read_baseline <ledger.sqlite> hash|hash-all|copy");
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
            "hash" | "hash-all" => {
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
    if mode == "hash-all" {
        let raw = std::path::Path::new(db).with_file_name("raw");
        let (rows, records) = (raw_rows(&conn), raw_records(&raw));
        eprintln!("{rows} raw rows, {records} archived records");
    }
}

/// Read every raw signal row's columns that `verify` compares.
fn raw_rows(conn: &Connection) -> u64 {
    let mut stmt = conn
        .prepare(
            "SELECT record_digest, session_key, event_name, received_unix_ns, batch, archive_at \
             FROM raw_signals",
        )
        .expect("prepares");
    let mut rows = stmt.query([]).expect("queries");
    let (mut n, mut bytes) = (0u64, 0usize);
    while let Some(r) = rows.next().expect("reads") {
        for i in [0, 1, 2, 4] {
            bytes += r
                .get_ref(i)
                .expect("column")
                .as_bytes_or_null()
                .expect("text")
                .map_or(0, <[u8]>::len);
        }
        n += 1;
    }
    std::hint::black_box(bytes);
    n
}

/// Read each archive file whole, in name order, and blake3 each record.
fn raw_records(raw: &std::path::Path) -> u64 {
    use harnery::spool::frame::{DIGEST_LEN, HEADER_LEN};
    let mut files: Vec<_> = walk(raw);
    files.sort();
    let (mut n, mut acc, mut buf) = (0u64, 0u8, Vec::new());
    for f in files {
        buf.clear();
        std::fs::File::open(&f)
            .and_then(|mut file| std::io::Read::read_to_end(&mut file, &mut buf))
            .expect("reads the archive");
        let mut at = 0;
        while at + HEADER_LEN <= buf.len() {
            let env = u32::from_le_bytes(buf[at + 12..at + 16].try_into().unwrap()) as usize;
            let payload = u64::from_le_bytes(buf[at + 16..at + 24].try_into().unwrap()) as usize;
            let end = (at + HEADER_LEN + env + payload + DIGEST_LEN).min(buf.len());
            acc ^= blake3::hash(&buf[at..end]).as_bytes()[0];
            at = end;
            n += 1;
        }
    }
    std::hint::black_box(acc);
    n
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("lists the archive") {
        let path = entry.expect("lists").path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
