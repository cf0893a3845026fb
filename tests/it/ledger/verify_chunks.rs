//! `verify` checks the chain in parallel chunks of the sequence. Whatever
//! the thread count, a damaged row is reported at that row and nowhere
//! else, including a row on either side of a seam between chunks.

use crate::common;

use common::*;
use harnery::home::Home;
use harnery::ledger::LedgerReader;

fn ledger_with(home: &std::path::Path, sessions: usize) -> usize {
    let mut n = 0;
    for i in 0..sessions {
        let events = small_session(&format!("s{i:02}"));
        n += events.len();
        inject(home, &format!("{:020}-b{i:02}", i + 1), events);
    }
    assert!(run(home, &["finalize"]).status.success());
    n
}

fn damage(home: &std::path::Path, seq: i64) {
    let db = home.join("ledgers/v2/ledger.sqlite");
    let conn = rusqlite::Connection::open(db).unwrap();
    harnery::ledger::eventz::register(&conn).unwrap();
    let mut changed = conn
        .execute(
            "UPDATE event_store SET body = event_body(replace(event_json(body), '\"Bash\"', '\"Bask\"')) \
             WHERE seq = ?1 AND event_json(body) LIKE '%\"Bash\"%'",
            [seq],
        )
        .unwrap();
    if changed == 0 {
        changed = conn
            .execute(
                "UPDATE event_store SET hash = zeroblob(32) WHERE seq = ?1",
                [seq],
            )
            .unwrap();
    }
    assert_eq!(changed, 1);
}

#[test]
fn a_damaged_row_is_found_at_that_row_whatever_the_chunking() {
    let clean = tempfile::tempdir().unwrap();
    let rows = ledger_with(clean.path(), 6) as i64;
    let ledger = LedgerReader::open(&Home::at(clean.path())).unwrap();
    for threads in [1, 2, 3, 5] {
        let (n, breaks) = ledger
            .verify()
            .chain_threads(Some(threads), &harnery::progress::Progress::none())
            .unwrap();
        assert_eq!((n, breaks.len()), (rows as u64, 0), "{threads} threads");
    }
    drop(ledger);
    // 24 rows in 5 chunks: seams after rows 4, 9, 14, 19.
    for seq in [1, 4, 5, 9, 10, 14, 15, 23, 24] {
        let home = tempfile::tempdir().unwrap();
        copy_tree(clean.path(), home.path());
        damage(home.path(), seq);
        let ledger = LedgerReader::open(&Home::at(home.path())).unwrap();
        for threads in [1, 2, 3, 5] {
            let (n, breaks) = ledger
                .verify()
                .chain_threads(Some(threads), &harnery::progress::Progress::none())
                .unwrap();
            assert_eq!(n, rows as u64);
            let at: Vec<i64> = breaks.iter().map(|b| b.seq).collect();
            assert_eq!(
                at,
                vec![seq],
                "{threads} threads, damage at {seq}: {breaks:?}"
            );
        }
    }
}

#[test]
fn the_raw_halves_cover_every_signal_once() {
    let home = tempfile::tempdir().unwrap();
    for scenario in ["parallel", "kill", "tool-failure"] {
        feed_fixture(home.path(), "claude-code", scenario);
    }
    assert!(run(home.path(), &["finalize"]).status.success());
    let ledger = LedgerReader::open(&Home::at(home.path())).unwrap();
    let (all, problems) = ledger.raw().verify().unwrap();
    assert!(problems.is_empty() && all > 20);
    let mid = ledger.raw().midpoint().unwrap().expect("rows exist");
    let (low, _) = ledger.raw().verify_range(None, Some(mid)).unwrap();
    let (high, _) = ledger.raw().verify_range(Some(mid), None).unwrap();
    assert_eq!(low + high, all);
    assert!(low > 0 && high > 0, "{low} + {high}");
}
