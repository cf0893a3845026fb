//! The lines `harnery ship` and `harnery ship --status` print for a
//! person: what each epoch sent, and this host and what the server holds
//! for it. (The JSON forms are the serde forms of the same reports.)

use std::fmt::Write;

use super::server::ShipStatus;
use super::ship::ShipReport;

impl ShipReport {
    /// The run in lines: the host and server, then one line per epoch.
    pub fn text(&self) -> String {
        let mut out = format!("host {} → {}\n", self.host_id, self.server);
        for e in &self.epochs {
            let derived = match &e.derived {
                Some(d) => format!(
                    "; derived {} sessions, {} spans, {} receipts",
                    d.sessions, d.spans, d.receipts
                ),
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "epoch {} ({}): {} rows sent ({} masked) after row {}; the server holds {}{derived}",
                e.epoch, e.genesis_id, e.rows_sent, e.masked_rows, e.resumed_after, e.rows_total
            );
        }
        out
    }
}

impl ShipStatus {
    /// The status in lines: this host, the target, and each epoch the
    /// server holds (or why it could not be asked).
    pub fn text(&self) -> String {
        let mut out = format!("host id: {} ({})\n", self.host_id, self.hostname);
        let _ = writeln!(
            out,
            "target:  {}",
            self.target.as_deref().unwrap_or("(none)")
        );
        if let Some(rows) = &self.server {
            for (genesis, n, live) in rows {
                let which = if *live { "live" } else { "archived" };
                let _ = writeln!(out, "server:  epoch {genesis} ({which}): {n} rows");
            }
            if rows.is_empty() {
                out.push_str("server:  nothing from this host yet\n");
            }
        }
        if let Some(why) = &self.server_error {
            let _ = writeln!(out, "server:  {why}");
        }
        out
    }
}
