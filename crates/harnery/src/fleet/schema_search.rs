//! The central schema's full-text search over shipped events (migration
//! 4): one row per event that has searchable text, as `harnery ship`
//! extracted it on the host with the same rules as local search
//! ([`crate::search::extract`]) from the row it sent, so masked text stays
//! masked and a `--content none` row has no row here. Words are found
//! through a `tsvector` (the `simple` configuration over the text with
//! every run of non-alphanumerics made a space, as local search's
//! tokenizer splits it), substrings through a `pg_trgm` trigram index.
//! Rows shipped before the migration are filled when it is applied, from
//! their bytes as shipped ([`backfill`]).

use std::collections::BTreeMap;

use postgres::Transaction;

use super::derived::EpochKey;
use super::search_ship::SearchRows;

/// The migration that makes `search_text`.
pub(crate) const VERSION: i32 = 4;

/// Migration 4: `harnery.search_text`, its indexes, who may do what.
pub(crate) const SEARCH_TEXT: &str = r#"
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE TABLE harnery.search_text (
    host_id     text NOT NULL,
    genesis_id  text NOT NULL,
    seq         bigint NOT NULL,
    kind        text NOT NULL,
    tool        text,
    turn_id     text,
    text        text NOT NULL,
    words       tsvector GENERATED ALWAYS AS (
        to_tsvector('simple'::regconfig, regexp_replace(text, '[^[:alnum:]]+', ' ', 'g'))
    ) STORED,
    PRIMARY KEY (host_id, genesis_id, seq)
);
CREATE INDEX search_text_words ON harnery.search_text USING gin (words);
CREATE INDEX search_text_grams ON harnery.search_text USING gin (text gin_trgm_ops);
ALTER TABLE harnery.search_text ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON harnery.search_text
    USING (host_id = (SELECT harnery.my_host_id()) OR pg_has_role(current_user, 'harnery_reader', 'MEMBER'))
    WITH CHECK (host_id = (SELECT harnery.my_host_id()));
GRANT INSERT ON harnery.search_text TO harnery_host;
GRANT SELECT ON harnery.search_text TO harnery_reader;
"#;

/// The temporary table a host role copies search rows into.
pub(crate) const SHIP_TEMP_SEARCH: &str = r#"
CREATE TEMP TABLE IF NOT EXISTS ship_search_text (
    host_id text, genesis_id text, seq bigint, kind text, tool text, turn_id text, text text
) ON COMMIT DELETE ROWS;
"#;

/// What a migration needs done in Rust after its SQL, in its transaction.
pub(crate) fn after_migration(
    tx: &mut Transaction<'_>,
    version: i32,
) -> Result<(), postgres::Error> {
    match version == VERSION {
        true => backfill(tx).map(drop),
        false => Ok(()),
    }
}

/// Event rows read per round of the backfill.
const BACKFILL_ROWS: i32 = 5_000;

/// Fill `search_text` from the event rows already on the server, from
/// their bytes as shipped (masked text stays masked; rows sent without
/// content have none); how many search rows were made.
pub(crate) fn backfill(tx: &mut Transaction<'_>) -> Result<u64, postgres::Error> {
    let portal = tx.bind(
        "SELECT host_id, genesis_id, seq, json FROM harnery.events WHERE content <> 'none'",
        &[],
    )?;
    let mut made = 0;
    loop {
        let rows = tx.query_portal(&portal, BACKFILL_ROWS)?;
        if rows.is_empty() {
            return Ok(made);
        }
        let mut by_epoch: BTreeMap<(String, String), SearchRows> = BTreeMap::new();
        for r in &rows {
            let json: &[u8] = r.get(3);
            by_epoch
                .entry((r.get(0), r.get(1)))
                .or_default()
                .push(r.get(2), json);
        }
        for ((host, genesis), docs) in by_epoch {
            made += docs.len() as u64;
            let key = EpochKey {
                host: &host,
                genesis: &genesis,
            };
            docs.copy(tx, &key, false)?;
        }
    }
}
