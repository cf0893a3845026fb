//! The lines `harnery epoch advance|status|list|verify` print for a
//! person (the JSON forms are the serde forms of the same reports), and
//! what an advance did, also printed by a finalize that completed one.

use std::fmt::Write;

use super::{AdvanceReport, EpochStatus, EpochVerdict, ListedEpoch};
use crate::clock::format_time;

/// `n` or `?` when it is not known.
fn or_unknown<T: ToString>(n: Option<T>) -> String {
    n.map_or("?".into(), |n| n.to_string())
}

impl AdvanceReport {
    /// What the advance did, in lines; one line when the live epoch was
    /// already current.
    pub fn text(&self) -> String {
        if self.already_current {
            return format!(
                "the live epoch already speaks schema digest {}; nothing to advance\n",
                self.schema_digest
            );
        }
        self.done_text()
    }

    /// The archive, the new epoch and the carried run, in lines (what a
    /// finalize that completed an advance prints too).
    pub fn done_text(&self) -> String {
        let mut text = format!(
            "archived epoch {} ({} events, terminal-segment digest {}) at {}\n",
            self.archived_genesis_id.as_deref().unwrap_or("-"),
            self.archived_events,
            self.terminal_segment_digest.as_deref().unwrap_or("-"),
            self.archive.as_deref().unwrap_or("-")
        );
        text.push_str(&format!(
            "new epoch {} under schema digest {}; closed administratively: {} sessions, {} end requests superseded\n",
            self.new_genesis_id.as_deref().unwrap_or("-"),
            self.schema_digest,
            self.audit_only_sessions,
            self.superseded_end_requests
        ));
        if let Some(c) = &self.carried {
            text.push_str(&format!("carried: {}", c.text()));
        }
        text
    }
}

impl EpochStatus {
    /// The status, in lines: this build, the live epoch, an advance
    /// underway, what is undrained, the archives, and what to do next.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "this build: contract generation {}, schema digest {}",
            self.build.generation, self.build.schema_digest
        );
        match &self.live {
            Some(l) => {
                let _ = writeln!(
                    out,
                    "live epoch: {} (generation {}, digest {}{}), created {}",
                    l.genesis_id,
                    l.generation,
                    l.schema_digest,
                    if l.current { "" } else { ", NOT this build's" },
                    format_time(l.created_unix_ns)
                );
                let _ = match &l.anchor {
                    Some(a) => writeln!(
                        out,
                        "  anchored to {} at {} ({} events, head {})",
                        a.genesis_id, a.archive, a.events, a.terminal_segment_digest
                    ),
                    None => writeln!(out, "  first epoch (no anchor)"),
                };
            }
            None => out.push_str("live epoch: none\n"),
        }
        if let Some(a) = &self.advance_in_progress {
            let _ = match &a.error {
                Some(e) => writeln!(out, "advance underway, record damaged: {e}"),
                None => writeln!(
                    out,
                    "advance underway: last step {}, from epoch {}",
                    a.step.as_deref().unwrap_or("-"),
                    a.from_genesis_id.as_deref().unwrap_or("-")
                ),
            };
        }
        let u = &self.undrained;
        let _ = writeln!(
            out,
            "undrained: {} ready files; intake {} files ({} bytes) in {} sessions",
            u.ready_files, u.intake_files, u.intake_bytes, u.intake_sessions
        );
        let _ = writeln!(out, "archives: {}", self.archives.len());
        for a in &self.archives {
            let _ = match &a.error {
                Some(e) => writeln!(out, "  {}  unreadable: {e}", a.genesis_id),
                None => writeln!(
                    out,
                    "  {}  generation {}, {} events  {}",
                    a.genesis_id,
                    or_unknown(a.generation),
                    or_unknown(a.events),
                    a.dir
                ),
            };
        }
        let _ = writeln!(out, "next: {}", self.next);
        out
    }
}

impl ListedEpoch {
    /// The header line of `harnery epoch list`.
    pub fn header() -> String {
        format!(
            "{:<38} {:<8} {:>4} {:>8}  {:<24}  ANCHOR\n",
            "GENESIS", "STATE", "GEN", "EVENTS", "CREATED"
        )
    }

    /// This epoch's line under [`ListedEpoch::header`].
    pub fn row(&self) -> String {
        format!(
            "{:<38} {:<8} {:>4} {:>8}  {:<24}  {}\n",
            self.genesis_id,
            if self.live { "live" } else { "archived" },
            or_unknown(self.generation),
            or_unknown(self.events),
            self.created_unix_ns.map_or("?".into(), format_time),
            self.anchor.as_deref().unwrap_or("-")
        )
    }
}

impl EpochVerdict {
    /// The findings, in lines: one `ok` line per sound epoch, one line per
    /// problem.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for c in &self.epochs {
            let what = if c.live { "live" } else { "archived" };
            if c.problems.is_empty() {
                let _ = writeln!(
                    out,
                    "ok: {what} epoch {}: {} rows, chain head {}",
                    c.genesis_id,
                    c.rows.unwrap_or(0),
                    c.chain_head.as_deref().unwrap_or("-")
                );
            }
            for p in &c.problems {
                let _ = writeln!(out, "{what} epoch {}: {p}", c.genesis_id);
            }
        }
        if self.epochs.is_empty() {
            out.push_str("no epochs in this home\n");
        }
        out
    }
}
