//! `validate`'s check of the trace chunks: each event's entry is the one
//! finalize writes for it, and the chunks hold no entry of no event.

use rusqlite::{OptionalExtension, params};

use super::LedgerReader;
use super::finding::{ValidationProblem, problem};
use crate::contract::{Event, SessionRef};
use crate::ledger::LedgerError;
use crate::ledger::trace_rows::{TraceFacts, entries};

type OwnedEntry = (i64, Result<TraceFacts<'static>, String>);

/// The chunk `validate` last read: the events it covers (by session,
/// first offset and length) and their entries (`None`: the chunk does not
/// decode, already reported; it covers the events it counts).
struct CheckedChunk {
    session: SessionRef,
    first: u64,
    len: u64,
    entries: Option<Vec<OwnedEntry>>,
}

impl CheckedChunk {
    fn covers(&self, e: &Event) -> bool {
        self.session == e.session && self.first <= e.offset && e.offset - self.first < self.len
    }
}

/// What `validate` keeps of the trace chunks as it reads the events.
#[derive(Default)]
pub(super) struct ChunkCheck {
    current: Option<CheckedChunk>,
}

impl ChunkCheck {
    /// The entry of `event` (its row is `seq`) is the one finalize writes
    /// for it.
    pub(super) fn check(
        &mut self,
        ledger: &LedgerReader,
        seq: i64,
        event: &Event,
        out: &mut Vec<ValidationProblem>,
    ) -> Result<(), LedgerError> {
        let id = event.id.as_str();
        let mut report = |detail: String| out.push(problem(id, "trace-row", detail));
        if !self.current.as_ref().is_some_and(|c| c.covers(event)) {
            self.current = None;
            let found: Option<(i64, i64, Vec<u8>)> = ledger
                .conn
                .prepare_cached(
                    "SELECT first_offset, events, CAST(entries AS BLOB) FROM trace_chunks WHERE adapter = ?1 \
                     AND session_id = ?2 AND first_offset <= ?3 ORDER BY first_offset DESC LIMIT 1",
                )?
                .query_row(
                    params![
                        event.session.adapter.as_str(),
                        event.session.session_id,
                        event.offset as i64
                    ],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let Some((first, events, text)) = found else {
                report(format!("row seq {seq} has no trace entry"));
                return Ok(());
            };
            let first = first.max(0) as u64;
            let Ok(text) = std::str::from_utf8(&text) else {
                report(format!(
                    "the trace chunk at offset {first} cannot be read: its entries are not UTF-8"
                ));
                return Ok(());
            };
            let decoded = entries(text).map(|all| {
                all.into_iter()
                    .map(|(s, f)| (s, f.map(TraceFacts::into_owned)))
                    .collect::<Vec<_>>()
            });
            let decoded = match decoded {
                Ok(all) if all.len() as i64 == events => Some(all),
                Ok(all) => {
                    report(format!(
                        "the trace chunk at offset {first} counts {events} events and holds {} entries",
                        all.len()
                    ));
                    Some(all)
                }
                Err(why) => {
                    report(format!(
                        "the trace chunk at offset {first} cannot be read: {why}"
                    ));
                    None
                }
            };
            let chunk = CheckedChunk {
                session: event.session.clone(),
                first,
                len: decoded
                    .as_ref()
                    .map_or(events.max(0) as u64, |d| d.len() as u64),
                entries: decoded,
            };
            let covered = chunk.covers(event);
            self.current = Some(chunk);
            if !covered {
                report(format!("row seq {seq} has no trace entry"));
                return Ok(());
            }
        }
        let Some(CheckedChunk {
            first,
            entries: Some(all),
            ..
        }) = &self.current
        else {
            return Ok(());
        };
        let (kept_seq, kept) = &all[(event.offset - first) as usize];
        let want = TraceFacts::of(event);
        match kept {
            _ if *kept_seq != seq => {
                report(format!("row seq {seq}'s trace entry names seq {kept_seq}"))
            }
            Ok(kept) if *kept == want => {}
            Ok(kept) => report(format!(
                "row seq {seq}'s trace entry holds {kept:?}, its event says {want:?}"
            )),
            Err(why) => report(format!("row seq {seq}'s trace entry cannot be used: {why}")),
        }
        Ok(())
    }

    /// As many entries as events: the chunks hold no entry of no event.
    pub(super) fn finish(
        self,
        ledger: &LedgerReader,
        events: u64,
        out: &mut Vec<ValidationProblem>,
    ) -> Result<(), LedgerError> {
        let kept: i64 = ledger.conn.query_row(
            "SELECT coalesce(sum(events), 0) FROM trace_chunks",
            [],
            |r| r.get(0),
        )?;
        if kept as u64 != events {
            out.push(problem(
                "trace_chunks",
                "trace-row",
                format!("the trace chunks count {kept} events, the ledger holds {events}"),
            ));
        }
        Ok(())
    }
}
