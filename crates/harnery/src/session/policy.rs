//! The session policy of ADR 0078, defined once: the span caps, the end
//! expiry, the condition codes they raise, and the predicates that decide
//! them. The rules engine (`session/recovery.rs`, `session/ends.rs`) acts on
//! them when it writes the ledger; the reports (`report/health.rs`,
//! `report/session_rows.rs`) judge with the same predicates when they read
//! it, so the two can never disagree at a boundary.
//!
//! Pure values and pure functions: no clock, no storage.

/// Write-side watermark: above this many open spans, spans of ended turns
/// are recovered with `span_cap_pressure`.
pub const SPAN_WATERMARK: usize = 128;

/// Read-side cap: above this many open spans a session is loud (a health
/// condition, never a failure).
pub const READ_SIDE_SPAN_CAP: usize = 256;

/// A pending end request expires after this long unless salvaged.
pub const END_EXPIRY_NS: i64 = 24 * 60 * 60 * 1_000_000_000;

/// The `health.condition` code finalize records in the ledger when a
/// session passes the read-side cap (`harnery health` prints it as
/// `reported:open_span_cap_exceeded`).
pub const SPAN_CAP_CONDITION: &str = "open_span_cap_exceeded";

/// The condition code `harnery health` prints (text and `--json`) for a
/// session it finds, when reading, past the read-side cap.
pub(crate) const SPAN_CAP_EXCEEDED: &str = "span_cap_exceeded";

/// `harnery health`: an explicit end that nothing has resolved yet.
pub(crate) const END_PENDING: &str = "end_pending";

/// `harnery health`: a pending end old enough that finalize expires it on
/// its next run.
pub(crate) const END_PENDING_OVERDUE: &str = "end_pending_overdue";

/// `harnery health`: an end request finalize expired.
pub(crate) const END_EXPIRED: &str = "end_expired";

/// Whether a session with `open` open spans is past the read-side cap.
pub(crate) fn over_span_cap(open: usize) -> bool {
    open > READ_SIDE_SPAN_CAP
}

/// How many of `open` open spans watermark relief should recover.
pub(crate) fn spans_over_watermark(open: usize) -> usize {
    open.saturating_sub(SPAN_WATERMARK)
}

/// Whether an end requested at `requested_unix_ns` has expired at
/// `now_unix_ns`: at exactly [`END_EXPIRY_NS`] it has.
pub(crate) fn end_has_expired(requested_unix_ns: i64, now_unix_ns: i64) -> bool {
    now_unix_ns.saturating_sub(requested_unix_ns) >= END_EXPIRY_NS
}

/// The detail line of a span-cap condition (both codes share it).
pub(crate) fn span_cap_detail(open: usize) -> String {
    format!("{open} open spans exceed the read-side cap of {READ_SIDE_SPAN_CAP}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_exceeded_only_above_it() {
        assert!(!over_span_cap(READ_SIDE_SPAN_CAP));
        assert!(over_span_cap(READ_SIDE_SPAN_CAP + 1));
        assert_eq!(spans_over_watermark(SPAN_WATERMARK), 0);
        assert_eq!(spans_over_watermark(SPAN_WATERMARK + 3), 3);
    }

    #[test]
    fn an_end_expires_at_exactly_24_hours() {
        assert!(!end_has_expired(10, 10 + END_EXPIRY_NS - 1));
        assert!(end_has_expired(10, 10 + END_EXPIRY_NS));
        assert!(end_has_expired(i64::MIN, i64::MAX));
    }
}
