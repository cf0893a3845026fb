//! Work on a batch that need not wait for its append's transaction, done
//! ahead of it on another thread ([`LedgerWriter::ahead`]): the chain
//! links of its events and, for a compact ledger, their stored bodies.
//!
//! A link is a function of the one before it and the event's text, so
//! links made ahead hold only if the batch extends the head they were made
//! from. The writer checks that when it appends, and makes the links
//! itself when they do not (say a batch before this one had been committed
//! by an earlier run, so appending it again left the head where it was):
//! links made ahead change how much work the writer's thread does, never a
//! row.

use rusqlite::OptionalExtension;

use super::LedgerWriter;
use super::batch::AppendBatch;
use crate::ledger::{LedgerError, chain, eventz};

/// What makes batches' work ahead: one per thread that does.
pub(crate) struct WorkAhead {
    bodies: Option<eventz::Ahead>,
    /// The head the next batch is expected to extend: the ledger's when
    /// this was made, then the last link of each batch made since.
    head: [u8; 32],
}

/// One batch's work made ahead.
#[derive(Debug)]
pub(crate) struct MadeAhead {
    pub(super) links: Links,
    /// The stored bodies of its events and of its producer states (a
    /// compact ledger's).
    pub(super) bodies: Option<(eventz::Bodies, eventz::Bodies)>,
}

/// The chain links of a batch's events, made from the head `prev`.
#[derive(Debug)]
pub(super) struct Links {
    prev: [u8; 32],
    hashes: Vec<[u8; 32]>,
}

impl Links {
    /// The links of `batch`'s events one after another from `prev`.
    fn after(prev: [u8; 32], batch: &AppendBatch) -> Links {
        let mut last = prev;
        let hashes = batch
            .events
            .iter()
            .map(|row| {
                last = chain::link(&last, row.json.as_bytes());
                last
            })
            .collect();
        Links { prev, hashes }
    }

    /// The links, if they were made from `prev` for `count` events.
    pub(super) fn from(&self, prev: &[u8; 32], count: usize) -> Option<&[[u8; 32]]> {
        (self.prev == *prev && self.hashes.len() == count).then_some(&self.hashes[..])
    }
}

impl WorkAhead {
    /// `batch`'s work, made as if it extends the last batch made here.
    pub(crate) fn batch(&mut self, batch: &AppendBatch) -> Result<MadeAhead, LedgerError> {
        let links = Links::after(self.head, batch);
        if let Some(last) = links.hashes.last() {
            self.head = *last;
        }
        let bodies = match &mut self.bodies {
            None => None,
            Some(ahead) => Some((
                ahead.events(&texts(batch))?,
                ahead.plain(batch.states.iter().map(|s| s.state.as_bytes()))?,
            )),
        };
        Ok(MadeAhead { links, bodies })
    }
}

impl LedgerWriter {
    /// A maker of batches' work ahead of their appends, on another thread
    /// ([`MadeAhead`]), expecting the next batch to extend the chain's
    /// head as it is now.
    pub(crate) fn ahead(&self) -> Result<WorkAhead, LedgerError> {
        Ok(WorkAhead {
            bodies: self.encoder.as_ref().map(|e| e.ahead()),
            head: chain_head(&self.read.conn, self.genesis.chain_seed())?,
        })
    }
}

/// The hash the next event links to: the last event's, or `seed` in an
/// epoch that has none yet.
pub(super) fn chain_head(
    conn: &rusqlite::Connection,
    seed: [u8; 32],
) -> Result<[u8; 32], LedgerError> {
    let head: Option<Vec<u8>> = conn
        .prepare_cached("SELECT hash FROM events ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    Ok(match head {
        Some(h) => h.try_into().unwrap_or([0u8; 32]),
        None => seed,
    })
}

/// A batch's events as their bodies are made from: session and text.
pub(super) fn texts(batch: &AppendBatch) -> Vec<eventz::Text<'_>> {
    batch
        .events
        .iter()
        .map(|r| (&r.event.session, r.json.as_bytes()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{Event, EventId};
    use crate::home::Home;
    use crate::ledger::{AppendOutcome, ReadyEvent};

    /// A session.started event as a ledger stores it.
    const EVENT: &str = r#"{"id":"ev_62aa87cc2cbe603d5f6e36028d66caeb","session":{"adapter":"claude-code","session_id":"s"},"offset":0,"time_unix_ns":1796000000000000000,"time_source":"received","clock":{"boot_id":null,"boottime_ns":null},"turn":{"source":"none"},"provenance":{"attestation":"native","confidence":"high"},"raw":[],"type":"session.started","payload":{"source":"startup","cwd":"/p","model":null,"transcript_path":null}}"#;

    /// Batch `n` of a session: three events, at offsets from `3 * n`.
    fn batch(writer: &LedgerWriter, n: u64) -> AppendBatch {
        let events = (3 * n..3 * n + 3)
            .map(|offset| {
                let mut e: Event = serde_json::from_str(EVENT).unwrap();
                e.id = EventId::derive("ahead-test", &[&offset.to_le_bytes()]);
                e.offset = offset;
                ReadyEvent::new(e)
            })
            .collect();
        AppendBatch {
            id: format!("batch-{n}"),
            contract_digest: writer.genesis().schema_digest.clone(),
            sources: Vec::new(),
            signals: Vec::new(),
            events,
            states: Vec::new(),
        }
    }

    /// A new ledger open for writing, its incarnation, a maker of work
    /// ahead on it and three batches of one session.
    struct Fixture {
        _dir: tempfile::TempDir,
        w: LedgerWriter,
        inc: u64,
        ahead: WorkAhead,
        batches: Vec<AppendBatch>,
    }

    impl Fixture {
        fn new() -> Fixture {
            let dir = tempfile::tempdir().unwrap();
            let mut w = LedgerWriter::open(&Home::at(dir.path()), 1).unwrap();
            let inc = w.take_incarnation().unwrap();
            let ahead = w.ahead().unwrap();
            let batches = (0..3).map(|n| batch(&w, n)).collect();
            Fixture {
                _dir: dir,
                w,
                inc,
                ahead,
                batches,
            }
        }

        /// Work made ahead for batch `n`.
        fn ahead(&mut self, n: usize) -> MadeAhead {
            self.ahead.batch(&self.batches[n]).unwrap()
        }

        /// Append batch `n`, with `made` if given.
        fn append(&mut self, n: usize, made: Option<&MadeAhead>) -> AppendOutcome {
            let b = &self.batches[n];
            self.w.append_ahead(b, made, self.inc, 1, &|| {}).unwrap()
        }

        fn head(&self) -> [u8; 32] {
            super::chain_head(&self.w.read.conn, self.w.genesis.chain_seed()).unwrap()
        }

        /// Every row's (prev_hash, hash), in order.
        fn chain(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
            let mut stmt = self
                .w
                .read
                .conn
                .prepare("SELECT prev_hash, hash FROM events ORDER BY seq")
                .unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        }
    }

    /// The three batches appended one by one with nothing made ahead.
    fn appended_alone() -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut f = Fixture::new();
        for n in 0..3 {
            f.append(n, None);
        }
        f.chain()
    }

    #[test]
    fn links_made_ahead_are_the_links_the_writer_makes() {
        let mut f = Fixture::new();
        let made: Vec<MadeAhead> = (0..3).map(|n| f.ahead(n)).collect();
        for (n, m) in made.iter().enumerate() {
            assert!(m.links.from(&f.head(), 3).is_some());
            f.append(n, Some(m));
        }
        assert_eq!(f.chain(), appended_alone());
    }

    #[test]
    fn links_made_from_another_head_are_not_taken() {
        let mut f = Fixture::new();
        // The first batch is appended with nothing made ahead, and again
        // (already committed, it leaves the head where it was). The second
        // batch's links, made after the first's, extend that head and are
        // taken. The third's were made after the second's had been made
        // twice (as if another batch had come between): they extend a head
        // the ledger never had, so the writer links that batch itself.
        f.append(0, None);
        f.ahead(0);
        let second = f.ahead(1);
        f.ahead(1);
        let third = f.ahead(2);
        assert_eq!(f.append(0, None), AppendOutcome::AlreadyApplied);
        f.append(1, Some(&second));
        assert!(third.links.from(&f.head(), 3).is_none());
        f.append(2, Some(&third));
        let rows = f.chain();
        assert_eq!(rows, appended_alone());
        for pair in rows.windows(2) {
            assert_eq!(pair[0].1, pair[1].0, "each row links to the one before");
        }
    }
}
