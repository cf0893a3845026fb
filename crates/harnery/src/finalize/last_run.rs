//! When a finalizer run last completed: one small file,
//! `ledgers/finalize.last`, beside the lease and outside every epoch, so
//! that `harnery health` can tell a schedule that stopped (or was never
//! set up) from a quiet day. It is written after the run's last commit and
//! is not part of the ledger: no event, no hash, no epoch carries it, and
//! losing it loses only this hint (the next run writes it again).
//!
//! The file is JSON (`{"finished_unix_ns": …, "signals_drained": …,
//! "events_appended": …}`), replaced whole by an atomic rename, so a
//! reader sees the previous run or this one, never a torn mix.

use serde::{Deserialize, Serialize};

use super::summary::Summary;
use crate::home::Home;

/// The file's name in the home's `ledgers/` directory.
pub const FILE: &str = "finalize.last";

/// A completed finalizer run, as `finalize.last` keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    /// The run's "now" (the clock, or `--now` / `HARNERY_NOW` when pinned):
    /// the same time the run judged its time rules by.
    pub finished_unix_ns: i64,
    pub signals_drained: u64,
    pub events_appended: u64,
}

/// Record that a run finished at `now_unix_ns` having done `summary`. A
/// failure is a warning: the run's work is committed either way.
pub(crate) fn record(home: &Home, now_unix_ns: i64, summary: &Summary) {
    let last = LastRun {
        finished_unix_ns: now_unix_ns,
        signals_drained: summary.signals_drained,
        events_appended: summary.events_appended,
    };
    let text = serde_json::to_string(&last).expect("three numbers serialize") + "\n";
    let path = home.ledgers_dir().join(FILE);
    let written =
        crate::durable::write_atomic(&path, text.as_bytes(), crate::durable::Mode::Private);
    if let Err(e) = written {
        crate::terminal::warn(&format!(
            "harnery finalize: the time of this run was not recorded ({e}); \
             the ledger is complete, and `harnery health` may report finalize overdue"
        ));
    }
}

/// The last completed run of `home`, if one was recorded and the file
/// reads as one (a file that does not is treated as no record: it only
/// ever holds a hint).
pub fn read(home: &Home) -> Option<LastRun> {
    let text = std::fs::read_to_string(home.ledgers_dir().join(FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_run_reads_back_and_a_bad_file_is_no_record() {
        let t = tempfile::tempdir().unwrap();
        let home = Home::at(t.path());
        assert_eq!(read(&home), None);
        std::fs::create_dir_all(home.ledgers_dir()).unwrap();
        let summary = Summary {
            signals_drained: 14,
            events_appended: 9,
            ..Summary::default()
        };
        record(&home, 1_700_000_000_000_000_000, &summary);
        let want = LastRun {
            finished_unix_ns: 1_700_000_000_000_000_000,
            signals_drained: 14,
            events_appended: 9,
        };
        assert_eq!(read(&home), Some(want));
        let text = std::fs::read_to_string(home.ledgers_dir().join(FILE)).unwrap();
        assert_eq!(
            text,
            "{\"finished_unix_ns\":1700000000000000000,\"signals_drained\":14,\"events_appended\":9}\n"
        );
        std::fs::write(home.ledgers_dir().join(FILE), "not json").unwrap();
        assert_eq!(read(&home), None);
    }
}
