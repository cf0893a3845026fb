//! One process opening the ledger on one thread while another closes it,
//! as `finalize` does when its search catch-up opens a reader beside the
//! compaction pass's writer. SQLite 3.51.1's unix VFS took its global lock
//! and a file's lock in opposite orders on those two paths (a WAL
//! connection's close asks for an exclusive lock; an open looks for a
//! descriptor of the same file to reuse), and the two threads could wait on
//! each other for good: a `finalize` in this suite once hung so. The SQLite
//! this build bundles must not.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use harnery::home::Home;
use harnery::ledger::{LedgerReader, LedgerWriter};

#[test]
fn opening_beside_a_closing_writer_never_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    drop(LedgerWriter::open(&home, 1).expect("the ledger is made"));
    let until = Instant::now() + Duration::from_secs(2);
    let (done, finished) = mpsc::channel();
    let mut threads = Vec::new();
    for writes in [false, true] {
        let (home, done) = (home.clone(), done.clone());
        threads.push(std::thread::spawn(move || {
            let mut n = 0u64;
            while Instant::now() < until {
                if writes {
                    drop(LedgerWriter::open(&home, 1).expect("the writer opens"));
                } else {
                    drop(LedgerReader::open(&home).expect("the reader opens"));
                }
                n += 1;
            }
            let _ = done.send(n);
        }));
    }
    // A hung pair never reports: fail instead of waiting with it.
    let opened: Vec<u64> = (0..2)
        .map(|_| {
            finished
                .recv_timeout(Duration::from_secs(60))
                .expect("a thread opening or closing the ledger hung")
        })
        .collect();
    for t in threads {
        t.join().expect("no thread panicked");
    }
    assert!(
        opened.iter().all(|&n| n > 0),
        "both threads ran: {opened:?}"
    );
}
