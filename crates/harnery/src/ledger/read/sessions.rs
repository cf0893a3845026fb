//! Sessions: the session list with its counts, a session's audit reasons
//! and resumes, and finding sessions by id, prefix, event type or time.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::{LedgerReader, SpanCounts, SpanState, session_at};
use crate::contract::eligibility::{
    AuditFlags, COMMAND_PAIRING_INCOMPLETE, TOOL_PAIRING_INCOMPLETE,
};
use crate::contract::{EventType, SessionRef};
use crate::ledger::LedgerError;

/// The effect kind `restore --apply` records on a new session's first
/// checkpoint; its ref is `<adapter>/<parent>@<checkpoint>`.
pub(crate) const RESTORED_FROM: &str = "restored_from";

/// The `meta` key migration `session_usage` leaves until the first writer
/// has filled the session rows' usage facts (`ledger::write::session_usage`).
pub(crate) const USAGE_PENDING: &str = "session_usage";

/// `usage_sums.kinds` bits 0-4: the records reported input, output, cache
/// read, cache write, reasoning tokens; bits 5-8: the first four not zero.
pub(crate) const NONZERO_SHIFT: u32 = 5;

/// A session's usage sums as its rows keep them
/// (`ledger::write::usage_sums`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StoredUsageSums {
    /// The sum of the costs the agent reported, in the events' order.
    pub reported_cost: Option<f64>,
    pub records_with_reported_cost: u64,
    pub records_with_unreadable_cost: u64,
    /// By model, token kinds reported and copy, in that order.
    pub rows: Vec<UsageSumRow>,
}

/// The records of one model, one set of token kinds, own or copies.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UsageSumRow {
    /// `None`: the records named no model.
    pub model: Option<String>,
    /// Bits 0-4: input, output, cache read, cache write, reasoning
    /// reported; bits 5-8: the first four not zero.
    pub kinds: i64,
    pub inherited: bool,
    pub records: u64,
    /// Input, output, cache read, cache write, reasoning.
    pub tokens: [u64; 5],
}

/// The `meta` key migration `session_list` leaves until the first writer
/// has filled what the list reads beside the session rows
/// (`ledger::write::session_list`).
pub(crate) const LIST_PENDING: &str = "session_list";

/// What a session's rows keep for the sessions list beside its summary;
/// `None` where the epoch's rows do not keep it (then its events, or its
/// producer state, tell).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListFacts {
    /// Where the title came from: `record` or `prompt`.
    pub title_source: Option<String>,
    /// The audit reasons its events carry (`contract::eligibility`).
    pub audit_flags: Option<u32>,
    /// How many of its spans are open, as its row counts them.
    pub open_spans: Option<u64>,
    /// Its first checkpoint's `restored_from` ref (`None` inside: none).
    pub restored_from: Option<Option<String>>,
    /// How many of its resumes supersede a range.
    pub superseding: Option<u64>,
    /// The problem finalize last reported for its own record.
    pub record: Option<Option<String>>,
}

/// One line of `harnery sessions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    pub session: SessionRef,
    pub first_unix_ns: i64,
    pub last_unix_ns: i64,
    pub events: u64,
    pub turns: u64,
    pub spans: SpanCounts,
    /// What the session is about: the agent's own title or summary where
    /// its record has one, else its first prompt on one line. `None` when
    /// not known (no prompt yet, or an epoch from before titles).
    pub title: Option<String>,
    /// The git repository root of the session's working directory, else
    /// that directory. `None` when the agent never said where it ran.
    pub project: Option<String>,
    /// The session's working directory as its agent reported it.
    pub cwd: Option<String>,
}

/// The sessions a ledger holds: listed, counted, found by id, prefix, event type or time.
pub struct Sessions<'r> {
    pub(super) r: &'r LedgerReader,
}

impl Sessions<'_> {
    /// Every session, ordered by first event time then id.
    pub fn list(&self) -> Result<Vec<SessionSummary>, LedgerError> {
        Ok(self.listed()?.into_iter().map(|(s, _)| s).collect())
    }

    /// Every session as [`Sessions::list`] gives it, with what its rows
    /// keep for the sessions list beside it, all in one query.
    pub(crate) fn listed(&self) -> Result<Vec<(SessionSummary, ListFacts)>, LedgerError> {
        // Session rows keep their span counts since migration
        // `session_span_counts`; an archived epoch may predate it, and then
        // each session's spans are counted.
        let kept = self.has_column("spans_open")?;
        let counts = if kept {
            "spans_open, spans_closed_native, spans_recovered"
        } else {
            "0, 0, 0"
        };
        // Titles and projects since migration `session_titles`; an older
        // epoch's sessions have none.
        let about = if self.keeps_titles()? {
            "title, project, cwd, title_source"
        } else {
            "NULL, NULL, NULL, NULL"
        };
        let flags = match self.keeps_audit_flags()? {
            true => "audit_flags",
            false => "NULL",
        };
        let link = match self.keeps_usage()? {
            true => "restored_from",
            false => "NULL",
        };
        let (superseding, problem, join) = match self.keeps_list()? {
            true => (
                "superseding",
                "r.problem",
                "LEFT JOIN session_records r USING (adapter, session_id)",
            ),
            false => ("NULL", "NULL", ""),
        };
        let mut stmt = self.r.conn.prepare(&format!(
            "SELECT adapter, session_id, first_unix_ns, last_unix_ns, events, turns, {counts}, {about}, \
             {flags}, {link}, {superseding}, {problem} \
             FROM sessions {join} ORDER BY first_unix_ns, adapter, session_id"
        ))?;
        let rows = stmt.query([])?;
        let lossy = |r: &rusqlite::Row, i| -> rusqlite::Result<Option<String>> {
            Ok(r.get_ref(i)?
                .as_bytes_or_null()?
                .map(|b| String::from_utf8_lossy(b).into_owned()))
        };
        let mut out = self.r.lenient_rows(rows, "sessions", &[0, 1], |r| {
            let summary = SessionSummary {
                session: session_at(r, 0)?,
                first_unix_ns: r.get(2)?,
                last_unix_ns: r.get(3)?,
                events: r.get::<_, i64>(4)? as u64,
                turns: r.get::<_, i64>(5)? as u64,
                spans: SpanCounts {
                    open: r.get::<_, i64>(6)? as u64,
                    closed_native: r.get::<_, i64>(7)? as u64,
                    recovered: r.get::<_, i64>(8)? as u64,
                },
                title: r.get(9)?,
                project: r.get(10)?,
                cwd: r.get(11)?,
            };
            let title_source = lossy(r, 12)?.filter(|s| s == "record" || s == "prompt");
            let with_link = link != "NULL";
            let with_list = superseding != "NULL";
            let facts = ListFacts {
                title_source,
                audit_flags: r.get::<_, Option<i64>>(13)?.map(|f| f as u32),
                open_spans: kept.then_some(summary.spans.open),
                // As `restored_from` reads it: damaged text is no link.
                restored_from: with_link
                    .then(|| lossy(r, 14))
                    .transpose()?
                    .map(|l| l.filter(|l| !l.is_empty())),
                superseding: with_list
                    .then(|| r.get::<_, i64>(15))
                    .transpose()?
                    .map(|n| n as u64),
                record: with_list.then(|| lossy(r, 16)).transpose()?,
            };
            Ok((summary, facts))
        })?;
        if !kept {
            let mut count = self.r.conn.prepare(
                "SELECT state, count(*) FROM spans WHERE adapter = ?1 AND session_id = ?2 GROUP BY state",
            )?;
            for (s, _) in &mut out {
                let session = params![s.session.adapter.as_str(), s.session.session_id];
                let rows = count.query_map(session, |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
                })?;
                for row in rows {
                    let (state, n) = row?;
                    s.spans.add(SpanState::parse(&state), n as u64);
                }
            }
        }
        Ok(out)
    }

    /// A session's audit reasons as its rows keep them: the reasons its
    /// events carry (kept on its session row as they are appended) and a
    /// pairing gap for each kind of span it has open. `None` when the
    /// epoch's tables predate the kept reasons (an archive an older build
    /// wrote): then only its events can tell.
    pub fn audit_reasons(&self, session: &SessionRef) -> Result<Option<Vec<String>>, LedgerError> {
        if !self.keeps_audit_flags()? {
            return Ok(None);
        }
        let key = params![session.adapter.as_str(), session.session_id];
        let flags: Option<i64> = self
            .r
            .conn
            .prepare_cached(
                "SELECT audit_flags FROM sessions WHERE adapter = ?1 AND session_id = ?2",
            )?
            .query_row(key, |r| r.get(0))
            .optional()?;
        Ok(Some(self.reasons_with(
            session,
            flags.unwrap_or(0) as u32,
            true,
        )?))
    }

    /// A session's audit reasons from its row's kept `flags`, and a pairing
    /// gap for each kind of span it has open (looked for only when
    /// `any_open`: its row may count an open span).
    pub(crate) fn reasons_with(
        &self,
        session: &SessionRef,
        flags: u32,
        any_open: bool,
    ) -> Result<Vec<String>, LedgerError> {
        let key = params![session.adapter.as_str(), session.session_id];
        let mut reasons = AuditFlags(flags).reasons();
        if !any_open {
            reasons.sort();
            return Ok(reasons);
        }
        let mut open = self.r.conn.prepare_cached(
            "SELECT DISTINCT kind FROM spans WHERE adapter = ?1 AND session_id = ?2 AND state = 'open'",
        )?;
        for kind in open.query_map(key, |r| r.get::<_, String>(0))? {
            let reason = match kind?.as_str() {
                "command" => COMMAND_PAIRING_INCOMPLETE,
                _ => TOOL_PAIRING_INCOMPLETE,
            };
            if !reasons.iter().any(|r| r == reason) {
                reasons.push(reason.to_string());
            }
        }
        reasons.sort();
        Ok(reasons)
    }

    /// How many `session.resumed` events a session has, as its row counts
    /// them. `None` when the epoch's tables predate the count (an archive
    /// an older build wrote): then only its events can tell.
    pub fn resumes(&self, session: &SessionRef) -> Result<Option<u64>, LedgerError> {
        if !self.keeps_resumes()? {
            return Ok(None);
        }
        let n: Option<i64> = self
            .r
            .conn
            .prepare_cached("SELECT resumes FROM sessions WHERE adapter = ?1 AND session_id = ?2")?
            .query_row(params![session.adapter.as_str(), session.session_id], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(Some(n.unwrap_or(0) as u64))
    }

    /// A session's title and project as its row keeps them; both `None`
    /// for a session this epoch does not hold, or an epoch from before
    /// titles.
    pub fn about(
        &self,
        session: &SessionRef,
    ) -> Result<(Option<String>, Option<String>), LedgerError> {
        if !self.keeps_titles()? {
            return Ok((None, None));
        }
        let found = self
            .r
            .conn
            .prepare_cached(
                "SELECT title, project FROM sessions WHERE adapter = ?1 AND session_id = ?2",
            )?
            .query_row(params![session.adapter.as_str(), session.session_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        Ok(found.unwrap_or((None, None)))
    }

    /// The ref of the `restored_from` link on `session`'s first
    /// checkpoint, as its row keeps it (`None` inside when it has no
    /// checkpoint, or its first names no link). `None` when the epoch's
    /// rows do not keep it (an older build's, not yet filled): then only
    /// its events can tell.
    pub(crate) fn restored_from(
        &self,
        session: &SessionRef,
    ) -> Result<Option<Option<String>>, LedgerError> {
        if !self.keeps_usage()? {
            return Ok(None);
        }
        let found: Option<Option<String>> = self
            .r
            .conn
            .prepare_cached(
                "SELECT restored_from FROM sessions WHERE adapter = ?1 AND session_id = ?2",
            )?
            .query_row(params![session.adapter.as_str(), session.session_id], |r| {
                // Damaged text is no link (a ref must parse to be one).
                Ok(r.get_ref(0)?
                    .as_bytes_or_null()?
                    .map(|b| String::from_utf8_lossy(b).into_owned()))
            })
            .optional()?;
        Ok(Some(found.flatten().filter(|r| !r.is_empty())))
    }

    /// Whether `session`'s usage document may depend on another session's
    /// rows: it has a parent or a copied call, or it, or any session of
    /// the epoch, reported a call id another session reported first (then
    /// the document names the shared ids). `None` when the epoch's rows do
    /// not keep it.
    pub(crate) fn usage_tied(&self, session: &SessionRef) -> Result<Option<bool>, LedgerError> {
        if !self.keeps_usage()? {
            return Ok(None);
        }
        let tied = self.tied_mark(session)?;
        let shared = self.any_tied_by_call()?;
        Ok(Some(shared || tied.unwrap_or(0) != 0))
    }

    /// `session`'s row's `usage_tied` mark (0 untied; `None` without a row).
    fn tied_mark(&self, session: &SessionRef) -> Result<Option<i64>, LedgerError> {
        Ok(self
            .r
            .conn
            .prepare_cached(
                "SELECT usage_tied FROM sessions WHERE adapter = ?1 AND session_id = ?2",
            )?
            .query_row(params![session.adapter.as_str(), session.session_id], |r| {
                r.get(0)
            })
            .optional()?)
    }

    /// Whether the epoch's rows keep usage sums (migration
    /// `session_usage_sums`, and the usage facts' fill done).
    pub(crate) fn keeps_usage_sums(&self) -> Result<bool, LedgerError> {
        Ok(self.has_column("cost_records")? && self.keeps_usage()?)
    }

    /// Whether any session of the epoch reported a call id another session
    /// reported first (then every session's usage may depend on others').
    pub(crate) fn any_tied_by_call(&self) -> Result<bool, LedgerError> {
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE usage_tied = 2)",
            [],
            |r| r.get(0),
        )?)
    }

    /// `session`'s usage sums when its row says it is tied to no other
    /// session's, in an epoch that keeps them (the caller asked
    /// [`Sessions::keeps_usage_sums`] and [`Sessions::any_tied_by_call`]
    /// once for many sessions); `None` when tied.
    pub(crate) fn untied_usage_sums(
        &self,
        session: &SessionRef,
    ) -> Result<Option<StoredUsageSums>, LedgerError> {
        let tied = self.tied_mark(session)?;
        if tied.unwrap_or(0) != 0 {
            return Ok(None);
        }
        self.kept_usage_sums(session)
    }

    /// `session`'s usage sums as its rows keep them; `None` when a sum
    /// reached the most a row holds (then only the events can tell).
    fn kept_usage_sums(
        &self,
        session: &SessionRef,
    ) -> Result<Option<StoredUsageSums>, LedgerError> {
        let key = params![session.adapter.as_str(), session.session_id];
        let (reported_cost, with, unreadable): (Option<f64>, i64, i64) = self
            .r
            .conn
            .prepare_cached(
                "SELECT reported_cost, cost_records, cost_unreadable FROM sessions \
                 WHERE adapter = ?1 AND session_id = ?2",
            )?
            .query_row(key, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?
            .unwrap_or((None, 0, 0));
        let mut stmt = self.r.conn.prepare_cached(
            "SELECT named, model, kinds, inherited, records, input, output, cache_read, \
             cache_write, reasoning FROM usage_sums WHERE adapter = ?1 AND session_id = ?2 \
             ORDER BY named, model, kinds, inherited",
        )?;
        let rows = stmt
            .query_map(key, |r| {
                let named: bool = r.get(0)?;
                let model: String = r.get(1)?;
                let mut n = [0i64; 6];
                for (i, v) in n.iter_mut().enumerate() {
                    *v = r.get(4 + i)?;
                }
                Ok((named.then_some(model), r.get(2)?, r.get(3)?, n))
            })?
            .collect::<Result<Vec<(Option<String>, i64, bool, [i64; 6])>, _>>()?;
        if rows
            .iter()
            .any(|(.., n)| n.iter().any(|v| *v == i64::MAX || *v < 0))
        {
            return Ok(None);
        }
        let count = |v: i64| u64::try_from(v).unwrap_or(0);
        Ok(Some(StoredUsageSums {
            reported_cost,
            records_with_reported_cost: count(with),
            records_with_unreadable_cost: count(unreadable),
            rows: rows
                .into_iter()
                .map(|(model, kinds, inherited, n)| UsageSumRow {
                    model,
                    kinds,
                    inherited,
                    records: count(n[0]),
                    tokens: [n[1], n[2], n[3], n[4], n[5]].map(count),
                })
                .collect(),
        }))
    }

    /// Whether session rows keep their usage facts (migration
    /// `session_usage`, and its fill done).
    pub(crate) fn keeps_usage(&self) -> Result<bool, LedgerError> {
        self.keeps("usage_tied", USAGE_PENDING)
    }

    /// Whether session rows keep what the list reads beside them
    /// (migration `session_list`, and its fill done).
    pub(crate) fn keeps_list(&self) -> Result<bool, LedgerError> {
        self.keeps("superseding", LIST_PENDING)
    }

    /// Whether session rows have `column` and the fill that `pending`
    /// marks in `meta` is done.
    fn keeps(&self, column: &str, pending: &str) -> Result<bool, LedgerError> {
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('sessions') WHERE name = ?1) \
             AND NOT EXISTS (SELECT 1 FROM meta WHERE key = ?2)",
            [column, pending],
            |r| r.get(0),
        )?)
    }

    /// Whether session rows keep a title, project and cwd (migration
    /// `session_titles`).
    pub(crate) fn keeps_titles(&self) -> Result<bool, LedgerError> {
        self.has_column("title")
    }

    fn has_column(&self, name: &str) -> Result<bool, LedgerError> {
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('sessions') WHERE name = ?1)",
            [name],
            |r| r.get(0),
        )?)
    }

    /// Whether session rows count their resumes (migration
    /// `session_resumes`).
    pub(super) fn keeps_resumes(&self) -> Result<bool, LedgerError> {
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'resumes')",
            [],
            |r| r.get(0),
        )?)
    }

    /// Whether session rows keep their audit reasons (migration
    /// `session_audit_flags`).
    pub(super) fn keeps_audit_flags(&self) -> Result<bool, LedgerError> {
        Ok(self.r.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('sessions') WHERE name = 'audit_flags')",
            [],
            |r| r.get(0),
        )?)
    }

    /// Resolve a full session id or a unique prefix of one.
    pub fn resolve(&self, wanted: &str) -> Result<SessionRef, LedgerError> {
        use crate::contract::session_name::{id_parts, pick};
        let mut found = Vec::new();
        for id in id_parts(wanted) {
            found.extend(self.by_prefix(id)?);
        }
        Ok(pick(wanted, None, found, "")?)
    }

    /// The sessions whose id starts with `prefix` (or is it). A row whose
    /// key cannot be read cannot be named: it is set aside.
    pub(crate) fn by_prefix(&self, prefix: &str) -> Result<Vec<SessionRef>, LedgerError> {
        let pattern = format!(
            "{}%",
            prefix
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let mut stmt = self.r.conn.prepare(
            "SELECT adapter, session_id FROM sessions WHERE session_id = ?1 OR session_id LIKE ?2 ESCAPE '\\' \
             ORDER BY adapter, session_id",
        )?;
        let rows = stmt.query(params![prefix, pattern])?;
        self.r
            .lenient_rows(rows, "sessions", &[0, 1], |r| session_at(r, 0))
    }

    /// The sessions with a row of any of `types`: one pass over the rows'
    /// `type` column, in table order, for callers that would otherwise ask
    /// each session in turn (and read all its rows to answer).
    pub(crate) fn with_types(
        &self,
        types: &[EventType],
    ) -> Result<std::collections::HashSet<SessionRef>, LedgerError> {
        let names: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
        let names = serde_json::to_string(&names).expect("a list of names is JSON");
        let mut stmt = self.r.conn.prepare(
            "SELECT DISTINCT adapter, session_id FROM events \
             WHERE type IN (SELECT value FROM json_each(?1))",
        )?;
        let rows = stmt.query([names])?;
        let found = self
            .r
            .lenient_rows(rows, "events", &[0, 1], |r| session_at(r, 0))?;
        Ok(found.into_iter().collect())
    }

    /// Every session with an event at or after `since` (all of them
    /// without it), ordered by adapter then id. Only the keys: a caller
    /// reads each session's rows on its own.
    pub(crate) fn refs(&self, since_unix_ns: Option<i64>) -> Result<Vec<SessionRef>, LedgerError> {
        let mut stmt = self.r.conn.prepare(
            "SELECT adapter, session_id FROM sessions WHERE last_unix_ns >= ?1 ORDER BY adapter, session_id",
        )?;
        let rows = stmt.query([since_unix_ns.unwrap_or(i64::MIN)])?;
        self.r
            .lenient_rows(rows, "sessions", &[0, 1], |r| session_at(r, 0))
    }
}
