//! What a finalize run and an epoch advance did, as the lines a person
//! reads: printed by `finalize`, `epoch advance` and `demo`, and by a
//! finalize that completed an advance left underway.

use harnery::epoch::AdvanceReport;
use harnery::finalize::Summary;

/// A finalize run's summary, in lines.
pub fn render_summary(s: &Summary) -> String {
    let mut out = format!(
        "finalized: {} signals drained, {} events appended in {} batches ({} ready files recovered)\n\
         spans: {} closed natively, {} recovered, {} open\n",
        s.signals_drained,
        s.events_appended,
        s.batches_applied,
        s.ready_files_recovered,
        s.spans.closed_native,
        s.spans.recovered,
        s.spans.open
    );
    for d in &s.damaged_ranges {
        out.push_str(&format!(
            "damaged spool range skipped: {} bytes {}..{} ({})\n",
            d.file, d.start, d.end, d.kind
        ));
    }
    for h in &s.health {
        out.push_str(&format!(
            "health {} in {}: {}\n",
            h.code, h.session, h.detail
        ));
    }
    out
}

/// What an advance did, in lines (also printed by a finalize that
/// completed one).
pub fn render_advance(report: &AdvanceReport) -> String {
    let mut text = format!(
        "archived epoch {} ({} events, terminal-segment digest {}) at {}\n",
        report.archived_genesis_id.as_deref().unwrap_or("-"),
        report.archived_events,
        report.terminal_segment_digest.as_deref().unwrap_or("-"),
        report.archive.as_deref().unwrap_or("-")
    );
    text.push_str(&format!(
        "new epoch {} under schema digest {}; closed administratively: {} sessions, {} end requests superseded\n",
        report.new_genesis_id.as_deref().unwrap_or("-"),
        report.schema_digest,
        report.audit_only_sessions,
        report.superseded_end_requests
    ));
    if let Some(c) = &report.carried {
        text.push_str(&format!("carried: {}", render_summary(c)));
    }
    text
}
