//! What a finalizer run is told ([`FinalizeOptions`]) and what it reports
//! ([`Summary`]: counts, damaged spool ranges, health conditions). Every
//! stage of the run fills in the one summary.

use serde::Serialize;

use crate::clock::ClockSample;
use crate::ledger::SpanCounts;

/// What a run is told about the world.
#[derive(Debug, Clone)]
pub struct FinalizeOptions {
    /// "Now" for time rules (24 h end expiry); injectable for tests.
    pub now_unix_ns: i64,
    pub clock: ClockSample,
    /// Events appended, as they are (a bar on a terminal, else nobody).
    pub progress: crate::progress::Progress,
    /// Read on in each session's own record after the hook signals
    /// (`HARNERY_RECORDS=off` says no; see `finalize::record`).
    pub follow_records: bool,
}

impl FinalizeOptions {
    /// A run's options at `pinned` (an injected "now", in ns), else at the
    /// clock's now. An injected "now" has no monotonic reading that belongs
    /// to it: the sample stays empty, so bounds measured against it are
    /// unknown. The agents' own records are followed unless the
    /// environment says no (`finalize::record::enabled`); no progress is
    /// shown and the search index is left alone until a caller says.
    pub fn at(pinned: Option<i64>) -> FinalizeOptions {
        let (now_unix_ns, clock) = match pinned {
            Some(ns) => (ns, ClockSample::default()),
            None => (crate::clock::wall_now_ns(), ClockSample::now()),
        };
        FinalizeOptions {
            now_unix_ns,
            clock,
            progress: crate::progress::Progress::none(),
            follow_records: super::record::enabled(),
        }
    }
}

/// A damaged spool byte range the run skipped (also a ledger health event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedRange {
    pub file: String,
    pub start: u64,
    pub end: u64,
    pub kind: String,
}

/// The condition code of a ledger row a command could not read and went
/// on without (see `ledger::UnreadableRow`).
pub const UNREADABLE_ROW: &str = "unreadable_row";

/// A health condition the run recorded or found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthNote {
    pub session: String,
    pub code: String,
    pub detail: String,
}

/// What `harnery finalize` reports.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub incarnation: u64,
    pub ready_files_recovered: u64,
    pub batches_applied: u64,
    pub signals_drained: u64,
    pub events_appended: u64,
    /// `harnery.record` and `harnery.record_problem` signals this run wrote
    /// from the agents' own records (and drained with the others).
    pub record_signals: u64,
    /// Span counts by state over the whole ledger after the run.
    pub spans: SpanCounts,
    pub damaged_ranges: Vec<DamagedRange>,
    pub health: Vec<HealthNote>,
}

impl Summary {
    /// The run's summary, in the lines `finalize` (and `demo`, and an
    /// advance's carried run) prints.
    pub fn text(&self) -> String {
        let mut out = format!(
            "finalized: {} signals drained, {} events appended in {} batches ({} ready files recovered)\n\
             spans: {} closed natively, {} recovered, {} open\n",
            self.signals_drained,
            self.events_appended,
            self.batches_applied,
            self.ready_files_recovered,
            self.spans.closed_native,
            self.spans.recovered,
            self.spans.open
        );
        for d in &self.damaged_ranges {
            out.push_str(&format!(
                "damaged spool range skipped: {} bytes {}..{} ({})\n",
                d.file, d.start, d.end, d.kind
            ));
        }
        for h in &self.health {
            out.push_str(&format!(
                "health {} in {}: {}\n",
                h.code, h.session, h.detail
            ));
        }
        out
    }
}
