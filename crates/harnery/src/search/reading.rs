//! The index a search reads, and how far behind the ledger it is. A
//! search answers from the index as it stands: it brings the index up to
//! date first only when it can take the index's write lock at once (never
//! waiting for a `finalize` or another search that holds it), and only
//! where the home can be written; a full disk, a read-only home or index,
//! and another run catching up are passed over with a line on stderr. A
//! home that holds no usable index and cannot hold one is searched
//! through an index made in memory from the ledger.
//!
//! The index is made again only when it cannot be read (damaged, foreign)
//! or was built from another ledger; never because another run is ahead
//! of this one's view of the ledger (see [`super::update`]).

use rusqlite::{Connection, OptionalExtension};

use super::SearchError;
use super::store::{self, Held};
use super::update::{self, Sizes};
use crate::home::Home;
use crate::ledger::LedgerReader;

/// The index, brought up to date with `ledgers` where that costs no wait.
pub(super) fn ready(home: &Home, ledgers: &[&LedgerReader]) -> Result<Connection, SearchError> {
    let (mut conn, held) = store::open_for_search(home)?;
    match held {
        Held::ReadOnly => Ok(conn),
        Held::Memory => {
            catch_up_all(&mut conn, ledgers)?;
            Ok(conn)
        }
        Held::Writable => {
            conn.busy_timeout(std::time::Duration::ZERO)?;
            let caught = catch_up_all(&mut conn, ledgers);
            conn.busy_timeout(store::READ_WAIT)?;
            match caught {
                Ok(_) => Ok(conn),
                Err(SearchError::Sqlite(e)) if store::is_busy(&e) => {
                    crate::terminal::warn(
                        "harnery search: another run is updating the index; searching what it holds so far",
                    );
                    Ok(conn)
                }
                Err(e) if unwritable(&e) => {
                    crate::terminal::warn(&format!(
                        "harnery search: the index cannot be brought up to date here ({}); \
                         searching what it holds so far",
                        super::chain(&e)
                    ));
                    Ok(conn)
                }
                Err(e) if e.needs_rebuild() => {
                    drop(conn);
                    rebuilt(home, ledgers)
                }
                Err(e) => Err(e),
            }
        }
    }
}

/// The index made again from `ledgers`; in memory where the home cannot
/// hold it.
pub(super) fn rebuilt(home: &Home, ledgers: &[&LedgerReader]) -> Result<Connection, SearchError> {
    if let Ok(mut conn) = store::recreate(home) {
        match catch_up_all(&mut conn, ledgers) {
            Ok(_) => return Ok(conn),
            Err(e) if unwritable(&e) => {}
            Err(e) => return Err(e),
        }
    }
    let mut conn = store::in_memory()?;
    catch_up_all(&mut conn, ledgers)?;
    Ok(conn)
}

/// Whether a catch-up failed because the index cannot be written here.
fn unwritable(e: &SearchError) -> bool {
    match e {
        SearchError::Sqlite(e) => store::is_unwritable(e),
        SearchError::Io { .. } => true,
        _ => false,
    }
}

pub(super) fn catch_up_all(
    conn: &mut Connection,
    ledgers: &[&LedgerReader],
) -> Result<u64, SearchError> {
    let mut rows = 0;
    for ledger in ledgers {
        rows += update::catch_up(conn, ledger, None, Sizes::DEFAULT)?;
    }
    Ok(rows)
}

/// The rows of `ledgers` the index does not hold yet (a ledger it does
/// not know at all counts whole).
pub(super) fn behind(conn: &Connection, ledgers: &[&LedgerReader]) -> Result<u64, SearchError> {
    let mut rows = 0;
    for ledger in ledgers {
        let last = ledger.rows().last_seq()?;
        let indexed: Option<i64> = conn
            .query_row(
                "SELECT indexed_seq FROM epochs WHERE genesis_id = ?1",
                [&ledger.genesis().genesis_id],
                |r| r.get(0),
            )
            .optional()?;
        rows += (last - indexed.unwrap_or(0)).max(0) as u64;
    }
    Ok(rows)
}
