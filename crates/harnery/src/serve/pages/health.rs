//! The health page: the conditions `harnery health` reports, and the
//! state of the spool and the live ledger.

use maud::{Markup, html};

use super::{Nav, document};
use crate::clock::format_ns;
use crate::ledger::LedgerReader;
use crate::report::health_check::HealthReport;

/// The live ledger's facts the page shows.
pub(crate) struct LedgerFacts {
    pub genesis_id: String,
    pub last_seq: i64,
    pub schema_behind: bool,
}

impl LedgerFacts {
    pub(crate) fn of(ledger: &LedgerReader) -> Result<LedgerFacts, crate::ledger::LedgerError> {
        Ok(LedgerFacts {
            genesis_id: ledger.genesis().genesis_id.clone(),
            last_seq: ledger.rows().last_seq()?,
            schema_behind: ledger.schema_behind()?,
        })
    }
}

pub(crate) fn render(report: &HealthReport, ledger: Option<&LedgerFacts>) -> String {
    let body = html! {
        h1 { "Health" }
        (conditions(report))
        (state(report, ledger))
    };
    document("harnery: health", Nav::Health, false, body)
}

fn conditions(report: &HealthReport) -> Markup {
    let found = &report.conditions;
    html! {
        section aria-label="conditions" {
            h2 { "Conditions" }
            @if found.is_empty() { p { "no conditions" } }
            @else {
                table.conditions {
                    thead { tr { th { "code" } th { "session" } th { "at" } th { "detail" } } }
                    tbody { @for c in found { tr.note[c.is_note()] {
                        td { code { (c.code) } }
                        td { @if let Some(s) = &c.session { (s.adapter.as_str()) "/" (s.session_id) } @else { "-" } }
                        td { (c.at_unix_ns.map_or("-".to_string(), format_ns)) }
                        td { (c.detail) }
                    } } }
                }
            }
        }
    }
}

fn state(report: &HealthReport, ledger: Option<&LedgerFacts>) -> Markup {
    let spool = &report.spool;
    let undrained: usize = spool.sessions.iter().map(|s| s.files).sum();
    html! {
        section aria-label="spool and ledger" {
            h2 { "Spool and ledger" }
            dl.state {
                dt { "spool" }
                dd { (spool.sessions.len()) " session spools holding " (undrained) " undrained files; "
                     (spool.damaged.len()) " damaged ranges; " (spool.dead_letters.len()) " dead letters" }
                dt { "live ledger" }
                @match ledger {
                    None => dd { "none yet: run " code { "harnery finalize" } },
                    Some(l) => dd {
                        "epoch " code { (l.genesis_id) } "; last seq " (l.last_seq)
                        @if l.schema_behind { "; tables older than this build (the next finalize migrates them)" }
                    },
                }
                @if let Some(a) = &report.archive {
                    dt { "raw archive" }
                    dd { (a.files) " files (" (a.compressed_files) " compressed), "
                         (a.bytes_on_disk) " bytes on disk for " (a.original_bytes) " original bytes" }
                }
            }
        }
    }
}
