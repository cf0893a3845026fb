//! `validate`: every contract rule, offset sequence, span state, span
//! count, audit flag, resume count and trace entry over a whole epoch.
//! An epoch an older contract generation wrote has each row judged by
//! that generation's shape too (`validate_shape`).

use std::collections::HashMap;

use super::finding::{ValidationProblem, problem};
use super::validate_trace::ChunkCheck;
use super::verify::PROGRESS_STEP;
use super::verify::Verify;
use crate::contract::eligibility::{
    AuditFlags, COMMAND_UNPAIRED_BIT, TOOL_UNPAIRED_BIT, event_flags,
};
use crate::contract::{Event, Payload, validate_event};
use crate::ledger::LedgerError;
use crate::progress::Progress;

impl Verify<'_> {
    /// Every contract rule, offset sequence and span state, row by row.
    pub fn validate(&self) -> Result<(u64, Vec<ValidationProblem>), LedgerError> {
        self.validate_with(&Progress::none())
    }

    /// [`Verify::validate`], telling `progress` how many rows are done.
    pub(crate) fn validate_with(
        &self,
        progress: &Progress,
    ) -> Result<(u64, Vec<ValidationProblem>), LedgerError> {
        progress.total(self.r.events().event_count()?);
        let mut problems = Vec::new();
        let mut next: HashMap<(String, String), u64> = HashMap::new();
        let mut flags: HashMap<(String, String), u32> = HashMap::new();
        let mut resumes: HashMap<(String, String), i64> = HashMap::new();
        // Each row's trace entry is checked as the row is read, where the
        // ledger keeps them.
        let mut chunks = self.r.trace().keeps_trace_rows()?.then(ChunkCheck::default);
        let own = self.older_generation();
        let mut stmt = self
            .r
            .conn
            .prepare("SELECT seq, id, CAST(json AS BLOB) FROM events ORDER BY seq")?;
        let mut rows = stmt.query([])?;
        let mut count = 0u64;
        while let Some(r) = rows.next()? {
            count += 1;
            if count.is_multiple_of(PROGRESS_STEP) {
                progress.add(PROGRESS_STEP);
            }
            let seq: i64 = r.get(0)?;
            // A damaged id or text is reported at its row; the check goes on.
            let id =
                String::from_utf8_lossy(r.get_ref(1)?.as_bytes().unwrap_or_default()).into_owned();
            let json = r.get_ref(2)?.as_blob().unwrap_or_default();
            let fits_own = own
                .as_ref()
                .map(|g| (g.number, g.check(seq, &id, json, &mut problems)));
            match serde_json::from_slice::<Event>(json) {
                Ok(event) => {
                    let key = (
                        event.session.adapter.as_str().to_string(),
                        event.session.session_id.clone(),
                    );
                    if matches!(event.payload, Payload::SessionResumed(_)) {
                        *resumes.entry(key.clone()).or_default() += 1;
                    }
                    *flags.entry(key).or_default() |= event_flags(&event).0;
                    if let Some(chunks) = &mut chunks {
                        chunks.check(self.r, seq, &event, &mut problems)?;
                    }
                    check_event(&event, &mut next, &mut problems)
                }
                // Its own generation's verdict is reported above.
                Err(_) if fits_own.is_some_and(|(_, fits)| !fits) => {}
                Err(e) => problems.push(problem(
                    &id,
                    "contract-parse",
                    match fits_own {
                        Some((n, _)) => format!(
                            "row seq {seq} fits contract generation {n}, which wrote it, \
                             but this build cannot read it: {e}"
                        ),
                        None => format!("row seq {seq} does not parse as an event: {e}"),
                    },
                )),
            }
        }
        self.check_spans(&mut problems)?;
        self.check_span_counts(&mut problems)?;
        self.check_audit_flags(flags, &mut problems)?;
        self.check_resumes(resumes, &mut problems)?;
        if let Some(chunks) = chunks {
            chunks.finish(self.r, count, &mut problems)?;
        }
        self.check_unique_ids(&mut problems)?;
        for row in self.r.take_set_aside() {
            problems.push(problem(&row.row, "unreadable-row", row.to_string()));
        }
        Ok((count, problems))
    }

    /// Each session's span counts (kept on its row as spans are written)
    /// are those of its span rows.
    fn check_span_counts(&self, out: &mut Vec<ValidationProblem>) -> Result<(), LedgerError> {
        let mut counted: HashMap<(String, String), super::SpanCounts> = HashMap::new();
        let mut stmt = self.r.conn.prepare(
            "SELECT adapter, session_id, state, count(*) FROM spans GROUP BY adapter, session_id, state",
        )?;
        let rows = stmt.query([])?;
        let read = self.r.lenient_rows(rows, "spans", &[0, 1], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })?;
        for (adapter, session_id, state, n) in read {
            counted
                .entry((adapter, session_id))
                .or_default()
                .add(super::SpanState::parse(&state), n as u64);
        }
        for s in self.r.sessions().list()? {
            let key = (s.session.adapter.as_str().to_string(), s.session.session_id);
            let want = counted.remove(&key).unwrap_or_default();
            if s.spans != want {
                out.push(problem(
                    &format!("{}/{}", key.0, key.1),
                    "span-counts",
                    format!(
                        "the session row counts {} spans, its span rows are {}",
                        counts_text(&s.spans),
                        counts_text(&want)
                    ),
                ));
            }
        }
        let mut orphans: Vec<_> = counted.into_iter().collect();
        orphans.sort_by(|a, b| a.0.cmp(&b.0));
        for ((adapter, session_id), want) in orphans {
            out.push(problem(
                &format!("{adapter}/{session_id}"),
                "span-counts",
                format!(
                    "{} spans belong to a session without a row",
                    counts_text(&want)
                ),
            ));
        }
        Ok(())
    }

    /// Each session row's kept audit reasons are those its events and span
    /// rows give (`contract::eligibility`).
    fn check_audit_flags(
        &self,
        mut want: HashMap<(String, String), u32>,
        out: &mut Vec<ValidationProblem>,
    ) -> Result<(), LedgerError> {
        if !self.r.sessions().keeps_audit_flags()? {
            return Ok(());
        }
        let mut unpaired = self.r.conn.prepare(
            "SELECT adapter, session_id, kind FROM spans WHERE requested_unix_ns IS NULL",
        )?;
        let rows = unpaired.query([])?;
        let read = self.r.lenient_rows(rows, "spans", &[0, 1], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get::<_, String>(2)?))
        })?;
        for (adapter, session_id, kind) in read {
            *want.entry((adapter, session_id)).or_default() |= if kind == "command" {
                COMMAND_UNPAIRED_BIT
            } else {
                TOOL_UNPAIRED_BIT
            };
        }
        let mut stmt = self.r.conn.prepare(
            "SELECT adapter, session_id, audit_flags FROM sessions ORDER BY adapter, session_id",
        )?;
        let rows = stmt.query([])?;
        let read = self.r.lenient_rows(rows, "sessions", &[0, 1], |r| {
            Ok(((r.get(0)?, r.get(1)?), r.get::<_, i64>(2)?))
        })?;
        for (key, flags) in read {
            let key: (String, String) = key;
            let kept = AuditFlags(flags as u32);
            let derived = AuditFlags(want.get(&key).copied().unwrap_or(0));
            if kept != derived {
                out.push(problem(
                    &format!("{}/{}", key.0, key.1),
                    "session-audit-reasons",
                    format!(
                        "the session row keeps reasons {:?}, its events give {:?}",
                        kept.reasons(),
                        derived.reasons()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Each session row's count of resumes is that of its
    /// `session.resumed` events.
    fn check_resumes(
        &self,
        want: HashMap<(String, String), i64>,
        out: &mut Vec<ValidationProblem>,
    ) -> Result<(), LedgerError> {
        if !self.r.sessions().keeps_resumes()? {
            return Ok(());
        }
        let mut stmt = self.r.conn.prepare(
            "SELECT adapter, session_id, resumes FROM sessions ORDER BY adapter, session_id",
        )?;
        let rows = stmt.query([])?;
        let read = self.r.lenient_rows(rows, "sessions", &[0, 1], |r| {
            Ok(((r.get(0)?, r.get(1)?), r.get::<_, i64>(2)?))
        })?;
        for (key, kept) in read {
            let key: (String, String) = key;
            let counted = want.get(&key).copied().unwrap_or(0);
            if kept != counted {
                out.push(problem(
                    &format!("{}/{}", key.0, key.1),
                    "session-resumes",
                    format!("the session row counts {kept} resumes, its events {counted}"),
                ));
            }
        }
        Ok(())
    }

    /// Every event id names one event. No index enforces it at append
    /// time (see the `event_id_check` migration): ids are derived from the
    /// session and offset, which an index does keep unique, so only a
    /// defect (or a hand-edited row) can repeat one.
    fn check_unique_ids(&self, out: &mut Vec<ValidationProblem>) -> Result<(), LedgerError> {
        let mut stmt = self.r.conn.prepare(
            "SELECT id, group_concat(seq, ', ') FROM (SELECT id, seq FROM events ORDER BY seq) \
             GROUP BY id HAVING count(*) > 1 ORDER BY min(seq)",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
        for row in rows {
            let (id, seqs) = row?;
            out.push(problem(
                &id,
                "unique-id",
                format!("the events at rows {seqs} share this id"),
            ));
        }
        Ok(())
    }

    /// A span is open exactly when it has no terminal. Only the spans that
    /// break the rule are read.
    fn check_spans(&self, out: &mut Vec<ValidationProblem>) -> Result<(), LedgerError> {
        let mut stmt = self.r.conn.prepare(
            "SELECT request_event_id, state, completed_event_id IS NOT NULL FROM spans \
             WHERE (state = 'open') = (completed_event_id IS NOT NULL) ORDER BY seq",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let (id, state, closed): (String, String, bool) = (r.get(0)?, r.get(1)?, r.get(2)?);
            out.push(problem(
                &id,
                "span-state",
                format!(
                    "span is {state} but {} a terminal event",
                    if closed { "has" } else { "has no" }
                ),
            ));
        }
        Ok(())
    }
}

fn counts_text(c: &super::SpanCounts) -> String {
    format!(
        "open {}, closed_native {}, recovered {}",
        c.open, c.closed_native, c.recovered
    )
}

fn check_event(
    e: &Event,
    next: &mut HashMap<(String, String), u64>,
    out: &mut Vec<ValidationProblem>,
) {
    for v in validate_event(e) {
        let rule = format!("rule-{}-{}", v.rule.number(), v.rule.name());
        out.push(problem(e.id.as_str(), &rule, v.detail));
    }
    let key = (
        e.session.adapter.as_str().to_string(),
        e.session.session_id.clone(),
    );
    let want = next.entry(key).or_insert(0);
    if e.offset != *want {
        out.push(problem(
            e.id.as_str(),
            "offset-sequence",
            format!("offset {} where {} was next", e.offset, *want),
        ));
    }
    *want = e.offset + 1;
}
