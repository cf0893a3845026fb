//! The search rows `harnery ship` sends with each batch of events: each
//! row's searchable text, extracted from the row as it is sent (masked,
//! when it is masked) by the rules local search uses, copied in the same
//! transaction as the events, so the server's text never runs ahead of or
//! behind its rows. A row sent without content has none.

use postgres::Transaction;
use postgres::types::{ToSql, Type};

use super::derived::EpochKey;
use crate::contract::Event;
use crate::search::extract::doc_of;

/// The search row of one shipped event row: what `search_text` holds
/// for it (`fleet verify` recomputes it from the row to check it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchDoc {
    pub kind: &'static str,
    pub tool: Option<String>,
    pub turn_id: Option<String>,
    pub text: String,
}

/// The searchable text of a row as sent (`json`), if it has any (a row
/// that does not parse has none, as in local search).
pub(crate) fn search_doc(json: &[u8]) -> Option<SearchDoc> {
    let event = serde_json::from_slice::<Event>(json).ok()?;
    let doc = doc_of(&event)?;
    Some(SearchDoc {
        kind: doc.kind.as_str(),
        tool: doc.tool.map(nul_free),
        turn_id: event.turn.turn_id.map(nul_free),
        text: nul_free(doc.text),
    })
}

struct SearchRow {
    seq: i64,
    doc: SearchDoc,
}

/// One batch's search rows.
#[derive(Default)]
pub(crate) struct SearchRows(Vec<SearchRow>, usize);

/// The most text a batch holds: `ship` ends a batch early when its search
/// rows reach it, so a batch of long tool outputs never sits in memory.
pub(crate) const BATCH_TEXT_BYTES: usize = 32 * 1024 * 1024;

/// PostgreSQL text holds no NUL: it is shown as `␀`, as the views do.
fn nul_free(text: String) -> String {
    match text.contains('\0') {
        true => text.replace('\0', "␀"),
        false => text,
    }
}

impl SearchRows {
    /// Keep the searchable text of row `seq` as sent (`json`), if it has
    /// any (a row that does not parse has none, as in local search).
    pub(crate) fn push(&mut self, seq: i64, json: &[u8]) {
        if let Some(doc) = search_doc(json) {
            self.1 += doc.text.len();
            self.0.push(SearchRow { seq, doc });
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the batch holds [`BATCH_TEXT_BYTES`] of text or more.
    pub(crate) fn full(&self) -> bool {
        self.1 >= BATCH_TEXT_BYTES
    }

    /// Copy the rows into the transaction (through the temporary table
    /// for a host role, whose writes row-level security checks).
    pub(crate) fn copy(
        self,
        tx: &mut Transaction<'_>,
        key: &EpochKey<'_>,
        via_role: bool,
    ) -> Result<(), postgres::Error> {
        if self.is_empty() {
            return Ok(());
        }
        const COLUMNS: &str = "host_id, genesis_id, seq, kind, tool, turn_id, text";
        let types = [
            Type::TEXT,
            Type::TEXT,
            Type::INT8,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
        ];
        let mut w = super::derived::writer(tx, "search_text", COLUMNS, &types, via_role)?;
        for r in &self.0 {
            let values: [&(dyn ToSql + Sync); 7] = [
                &key.host,
                &key.genesis,
                &r.seq,
                &r.doc.kind,
                &r.doc.tool,
                &r.doc.turn_id,
                &r.doc.text,
            ];
            w.write(&values)?;
        }
        w.finish()?;
        if via_role {
            tx.execute(
                &format!(
                    "INSERT INTO harnery.search_text ({COLUMNS}) SELECT {COLUMNS} FROM pg_temp.ship_search_text"
                ),
                &[],
            )?;
            tx.execute("TRUNCATE pg_temp.ship_search_text", &[])?;
        }
        Ok(())
    }
}
