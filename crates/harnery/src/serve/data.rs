//! What the pages and the API read, each read opening the live epoch
//! read-only for the one request (so `finalize` from cron keeps writing
//! while the server runs: a reader never takes the write lock) and
//! reading only what the request shows: one page of sessions, one
//! session, one event, a streamed usage tally.

pub(crate) mod conversation;
pub(crate) mod dashboard;

use serde::Serialize;

use crate::contract::{Event, SessionRef};
use crate::home::Home;
use crate::ledger::{LedgerError, LedgerReader, RowFilter};
use crate::report::audit::Classification;
use crate::report::epochs::{Epochs, classify_whole};
use crate::report::health_check::{HealthError, HealthReport};
use crate::report::inherited::Inherited;
use crate::report::session_list::{Listed, SessionFilter, list};
use crate::report::source::{SourceError, closed_sessions, live_or_none};
use crate::report::timeline::Timeline;
use crate::report::usage::{GroupBy, Prices, UsageGroup, UsageTally, mark_turn_tokens, turn_usage};
use crate::report::usage_sums::KeptUsage;
use crate::restore::log::SessionLog;
use crate::view::{PartRows, SessionView, build};

/// The name reads report under on stderr.
const COMMAND: &str = "serve";

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Health(#[from] HealthError),
}

impl ReadError {
    /// Whether the request named something that is not there.
    pub(crate) fn not_found(&self) -> bool {
        matches!(
            self,
            ReadError::Source(SourceError::NoSuchSession(_))
                | ReadError::Ledger(LedgerError::UnknownSession(_))
                | ReadError::Ledger(LedgerError::SessionName(
                    crate::contract::session_name::NameError::Unknown { .. }
                ))
        )
    }
}

/// The newest row of the live epoch: changes whenever `finalize` lands one.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct LastSeq {
    pub seq: i64,
    /// The live epoch's genesis id (an advance starts a new chain).
    pub epoch: Option<String>,
    /// With `?session=`: that session's own counts, which change only
    /// when its rows do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionCounts>,
}

/// What changes when a session grows.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct SessionCounts {
    pub events: u64,
    /// The seq of its newest event.
    pub last_seq: i64,
}

/// A listed session and the usage its own records report.
pub(crate) struct SessionRow {
    pub listed: Listed,
    pub usage: UsageGroup,
}

/// One session, all a session page shows.
pub(crate) struct SessionDetail {
    pub view: SessionView,
    /// The timeline `harnery show --json` prints.
    pub timeline: Timeline,
    pub class: Classification,
    pub log: SessionLog,
    /// The page's window of the conversation (its events are the
    /// timeline's entries in the same window).
    pub conversation: conversation::Conversation,
}

/// Usage three ways, and the prices' label.
pub(crate) struct UsageViews {
    pub by_day: UsageTally,
    pub by_model: UsageTally,
    pub by_session: UsageTally,
    pub prices: String,
}

/// The ledger's reads over one home.
#[derive(Clone)]
pub struct Source {
    pub home: Home,
    /// The dashboard's running tally, kept between requests.
    dash: dashboard::Cache,
}

impl Source {
    /// The reads over `home`. The dashboard's usage tally is brought up
    /// to the ledger on a thread of its own at once, so the first visit
    /// of the home page does not wait for the whole ledger's usage to be
    /// read (it waits only for what is left of that first reading).
    pub fn new(home: Home) -> Source {
        let source = Source {
            home,
            dash: Default::default(),
        };
        let warm = source.clone();
        let _ = std::thread::Builder::new()
            .name("serve-dashboard".into())
            .spawn(move || warm.dashboard(dashboard::Range::All).map(drop));
        source
    }

    /// Now, as the pages read times relative to it (`HARNERY_NOW` pins it).
    pub(crate) fn now(&self) -> i64 {
        crate::now::resolve_now(None).unwrap_or_else(|_| crate::clock::wall_now_ns())
    }

    /// The home page's figures for `range`: from the session rows and the
    /// kept usage tally (brought up to the ledger's last row first).
    pub(crate) fn dashboard(
        &self,
        range: dashboard::Range,
    ) -> Result<Option<dashboard::Dashboard>, ReadError> {
        let Some(ledger) = live_or_none(&self.home)? else {
            return Ok(None);
        };
        let now = self.now();
        Ok(Some(dashboard::dashboard(&self.dash, &ledger, range, now)?))
    }

    /// The live epoch, or `None` before the first `finalize`.
    fn live(&self) -> Result<Option<Epochs>, ReadError> {
        Ok(live_or_none(&self.home)?.map(Epochs::live))
    }

    /// The newest row, and with `session` that session's counts.
    pub(crate) fn last_seq(&self, session: Option<&str>) -> Result<LastSeq, ReadError> {
        let Some(ledger) = live_or_none(&self.home)? else {
            return match session {
                Some(name) => Err(SourceError::NoSuchSession(name.to_string()).into()),
                None => Ok(LastSeq {
                    seq: 0,
                    epoch: None,
                    session: None,
                }),
            };
        };
        let counts = match session {
            None => None,
            Some(name) => {
                let found = ledger.sessions().resolve(name)?;
                let (events, last_seq) = ledger.events().session_size(&found)?;
                Some(SessionCounts { events, last_seq })
            }
        };
        Ok(LastSeq {
            seq: ledger.rows().last_seq()?,
            epoch: Some(ledger.genesis().genesis_id.clone()),
            session: counts,
        })
    }

    /// One page of the sessions `filter` keeps, newest first.
    pub(crate) fn sessions(&self, filter: &SessionFilter) -> Result<Vec<Listed>, ReadError> {
        match self.live()? {
            None => Ok(Vec::new()),
            Some(epochs) => Ok(list(&self.home, &epochs, COMMAND, filter)?),
        }
    }

    /// One page of sessions, each with the usage its own records report
    /// (read through the usage rows of the session and of the parents it
    /// was copied from, whose calls it inherits, priced with the bundled
    /// table), as `harnery usage --session` counts it.
    pub(crate) fn session_rows(
        &self,
        filter: &SessionFilter,
    ) -> Result<Vec<SessionRow>, ReadError> {
        let Some(epochs) = self.live()? else {
            return Ok(Vec::new());
        };
        let listed = list(&self.home, &epochs, COMMAND, filter)?;
        let ledger = &epochs.open[0].ledger;
        let prices = bundled_prices();
        let kept = KeptUsage::of(ledger)?;
        let mut rows = Vec::with_capacity(listed.len());
        for l in listed {
            let session = &l.summary.session;
            // An untied session's kept sums, else its events (and its
            // parents').
            let usage = match kept.of_session(session, Some(&prices))? {
                Some(usage) => usage,
                None => {
                    Inherited::of(ledger, session)?.usage(ledger, session, Some(prices.clone()))?
                }
            };
            rows.push(SessionRow { listed: l, usage });
        }
        Ok(rows)
    }

    /// The session `name` names (its id, a unique prefix, or adapter/id),
    /// with window `page` of its conversation.
    pub(crate) fn session(&self, name: &str, page: u64) -> Result<SessionDetail, ReadError> {
        let epochs = self
            .live()?
            .ok_or_else(|| SourceError::NoSuchSession(name.to_string()))?;
        let found = epochs.session(COMMAND, name)?;
        let epoch = &epochs.open[0];
        let ledger = &epoch.ledger;
        let (mut timeline, events) = crate::report::timeline::with_events(ledger, &found.session)?;
        let spans = ledger.spans().list(Some(&found.session))?;
        // A restored session's copy of its parent's record is shown as
        // inherited, and its turns are the parent's.
        let inherited = Inherited::of(ledger, &found.session)?;
        inherited.mark(&mut timeline, &events);
        let own: Vec<Event> = inherited.own(&events).into_iter().cloned().collect();
        let view = build(
            &[PartRows {
                epoch: &epoch.label,
                timeline: &timeline,
                spans: &spans,
                events: &own,
            }],
            false,
        );
        mark_turn_tokens(&mut timeline, &turn_usage(&own));
        let closed = closed_sessions(&self.home).map_err(SourceError::from)?;
        let mut failed = 0;
        let class = classify_whole(
            COMMAND,
            &found.session,
            &found.parts,
            closed.get(&found.session),
            &mut failed,
        );
        let log = SessionLog::read(ledger, &found.session)?;
        let conversation = conversation::Conversation::of(&own, page);
        Ok(SessionDetail {
            view,
            timeline,
            class,
            log,
            conversation,
        })
    }

    /// The stored text of event `offset` of session `name`, and its seq.
    pub(crate) fn event(
        &self,
        name: &str,
        offset: u64,
    ) -> Result<Option<(SessionRef, i64, String)>, ReadError> {
        let Some(ledger) = live_or_none(&self.home)? else {
            return Ok(None);
        };
        let session = ledger.sessions().resolve(name)?;
        let found = ledger.events().event_text(&session, offset)?;
        Ok(found.map(|(seq, text)| (session, seq, text)))
    }

    /// Usage by day, model and session, in one streamed pass over the
    /// usage rows, priced with the bundled table.
    pub(crate) fn usage(&self) -> Result<UsageViews, ReadError> {
        let prices = bundled_prices();
        let label = prices.label();
        let tally = |by| UsageTally::new(by, Some(prices.clone()));
        let mut views = UsageViews {
            by_day: tally(GroupBy::Day),
            by_model: tally(GroupBy::Model),
            by_session: tally(GroupBy::Session),
            prices: label,
        };
        if let Some(ledger) = live_or_none(&self.home)? {
            ledger
                .events()
                .for_each_stored_text(&RowFilter::default(), |row| {
                    views.by_day.add_row(row);
                    views.by_model.add_row(row);
                    views.by_session.add_row(row);
                    Ok::<(), LedgerError>(())
                })?;
        }
        for t in [
            &mut views.by_day,
            &mut views.by_model,
            &mut views.by_session,
        ] {
            t.settle();
        }
        Ok(views)
    }

    /// Usage grouped by `by` alone (what `/api/usage` returns), and the
    /// prices' label.
    pub(crate) fn usage_by(&self, by: GroupBy) -> Result<(UsageTally, String), ReadError> {
        let prices = bundled_prices();
        let label = prices.label();
        let mut tally = UsageTally::new(by, Some(prices));
        if let Some(ledger) = live_or_none(&self.home)? {
            ledger
                .events()
                .for_each_stored_text(&RowFilter::default(), |row| {
                    tally.add_row(row);
                    Ok::<(), LedgerError>(())
                })?;
        }
        tally.settle();
        Ok((tally, label))
    }

    /// What `harnery health` reports, judged now.
    pub(crate) fn health(&self) -> Result<HealthReport, ReadError> {
        let now = self.now();
        Ok(crate::report::health_check::gather(
            &self.home,
            now,
            3600 * 1_000_000_000,
            &crate::report::unhooked::AgentRecordDir::from_env(),
        )?)
    }

    /// The live epoch's reader, for the health page's ledger facts.
    pub(crate) fn ledger(&self) -> Result<Option<LedgerReader>, ReadError> {
        Ok(live_or_none(&self.home)?)
    }
}

/// The bundled price table, parsed once for the server's life.
fn bundled_prices() -> Prices {
    static BUNDLED: std::sync::LazyLock<Prices> = std::sync::LazyLock::new(Prices::bundled);
    BUNDLED.clone()
}
