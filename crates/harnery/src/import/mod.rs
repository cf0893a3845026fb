//! `harnery import`: the history the agents kept before harnery was
//! installed, read into the ledger by the machinery hooked sessions use.
//!
//! Every agent keeps its own record of each session (Claude Code's
//! `<config>/projects/*/<id>.jsonl`, Copilot's
//! `session-state/<id>/events.jsonl`, Codex's rollouts, Gemini CLI's and
//! Qwen Code's chats, OpenCode's `opencode.db`). An import lists them
//! (`Adapter::recorded_files`, names and times only), leaves out every
//! session the ledger or the intake spool already knows (hooks saw it, or
//! an earlier import spooled it), checks each record's path with the gate
//! every followed record passes (`agents::record::place`), and spools one
//! `harnery.import` signal per session left, naming its record. Then one
//! `finalize` runs, under its lease: the signal becomes the session's
//! `session.imported` event (its evidence class `imported`, never
//! eligible), and finalize follows the record it names exactly as it
//! follows a record a hook named: every byte spooled as `harnery.record`
//! signals, so it lands in the raw archive and `verify` checks it;
//! messages, tools, usage and cost joined as the record has them.
//!
//! Idempotent: a session is imported once, since its spool directory
//! exists from the moment its signal is spooled, and a rerun finds it
//! there or in the ledger. A run killed anywhere leaves each session
//! spooled once or not at all, and the next import or finalize drains it.
//! Hooks that arrive later for an imported session (the agent resumed it)
//! add to the same session (same agent, same id) and the same record
//! cursor.
//!
//! Only names, times and sizes are read here (and a Gemini CLI record's
//! header line, the one place its session's whole id is written); the
//! records' bytes are read by finalize.

use std::collections::HashSet;
use std::path::PathBuf;

use serde::Serialize;

use crate::agents::adapter::RecordedFile;
use crate::agents::harnery::payload::{IMPORT, ImportPayload, ImportedSubagent};
use crate::agents::record::place::{self, NotOpened, RecordRole};
use crate::contract::{AdapterId, SessionRef};
use crate::epoch::EpochSelector;
use crate::finalize::{FinalizeError, FinalizeOptions, FinalizeRun, finalize};
use crate::home::Home;
use crate::progress::Progress;
use crate::report::epochs::Epochs;
use crate::report::unhooked::AgentRecordDir;
use crate::spool::{SealedBatch, Signal, SpoolWriter};

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("HARNERY_RECORDS=off: the agents' records are not read, so there is nothing to import")]
    RecordsOff,
    #[error(
        "no user home is known (HOME is unset): the agents' record directories cannot be found"
    )]
    NoUserHome,
    #[error("the intake spool: {0}")]
    Spool(String),
    #[error("the ledger: {0}")]
    Ledger(String),
    #[error(transparent)]
    Finalize(#[from] crate::epoch::EpochError),
}

impl From<FinalizeError> for ImportError {
    fn from(e: FinalizeError) -> ImportError {
        ImportError::Finalize(e.into())
    }
}

/// What an import found for one agent.
#[derive(Debug, Clone, Serialize)]
pub struct AgentImport {
    pub agent: AdapterId,
    /// The folder its records were listed from.
    pub records_dir: String,
    /// Sessions with a record there.
    pub found: u64,
    /// Of those, sessions the ledger or the spool already holds.
    pub known: u64,
    /// Of those, records last written before `--since`.
    pub older: u64,
    /// Sessions imported (with `--dry-run`: that would be).
    pub imported: u64,
    /// The size of the records imported, in bytes.
    pub bytes: u64,
    /// Records whose path the gate refused, each with why (not imported).
    pub refused: Vec<Refused>,
}

/// A record not imported, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Refused {
    pub session_id: String,
    pub path: String,
    pub reason: String,
}

/// What `harnery import` did.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    pub dry_run: bool,
    pub agents: Vec<AgentImport>,
    /// Sessions imported in all (with `--dry-run`: that would be).
    pub sessions: u64,
    /// The finalize run that read them (none on a dry run, or when there
    /// was nothing to import).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finalize: Option<FinalizeRun>,
}

/// One record to import.
#[derive(Debug, Clone)]
struct Planned {
    session: SessionRef,
    path: PathBuf,
    bytes: u64,
    modified_ns: i64,
    subagents: Vec<(String, PathBuf)>,
}

/// What an import would do: each agent's counts, and the records to
/// import ([`plan`]).
#[derive(Debug, Clone)]
pub struct ImportPlan {
    pub agents: Vec<AgentImport>,
    planned: Vec<Planned>,
}

/// List the records of `agents` (empty: every agent whose record
/// directory exists), last written at or after `since_ns` when given, and
/// plan to import each session the ledger and the spool do not hold.
pub fn plan(
    home: &Home,
    agents: &[AdapterId],
    since_ns: Option<i64>,
) -> Result<ImportPlan, ImportError> {
    let known = known_sessions(home)?;
    let mut plan = ImportPlan {
        agents: Vec::new(),
        planned: Vec::new(),
    };
    for dir in &record_dirs(agents)? {
        let (agent, planned) = plan_agent(dir, &known, since_ns);
        plan.agents.push(agent);
        plan.planned.extend(planned);
    }
    Ok(plan)
}

impl ImportPlan {
    /// Sessions to import.
    pub fn sessions(&self) -> u64 {
        self.planned.len() as u64
    }

    /// Spool one `harnery.import` signal per session to import, telling
    /// `progress` one session at a time. Not fdatasync'd one by one (as
    /// the records a finalize reads are not): the raw archive makes each
    /// spool file durable before the batch holding it commits.
    pub fn spool(&self, home: &Home, progress: &Progress) -> Result<(), ImportError> {
        let writer = SpoolWriter::new(home.clone());
        progress.stage("import: naming the sessions");
        progress.total(self.sessions());
        for plan in &self.planned {
            spool_one(&writer, plan)?;
            progress.add(1);
        }
        Ok(())
    }

    /// What the import did (or, with `dry_run`, would do), with the
    /// finalize run that read the records.
    pub fn report(self, dry_run: bool, finalize: Option<FinalizeRun>) -> ImportReport {
        ImportReport {
            dry_run,
            sessions: self.sessions(),
            agents: self.agents,
            finalize,
        }
    }
}

/// Read what was spooled: one `finalize` run (its lease, its epoch gate),
/// which follows each imported session's record.
pub fn read(home: &Home, opts: FinalizeOptions) -> Result<FinalizeRun, ImportError> {
    let mut run = None;
    finalize::<ImportError>(home, opts, true, |r| {
        run = Some(r.clone());
        Ok(())
    })?;
    Ok(run.expect("finalize hands its run to the report before it returns"))
}

/// The record directories to list: the agents named, else every agent
/// whose record directory exists.
fn record_dirs(named: &[AdapterId]) -> Result<Vec<AgentRecordDir>, ImportError> {
    if !crate::finalize::record::enabled() {
        return Err(ImportError::RecordsOff);
    }
    if crate::home::user_dir().is_err() {
        return Err(ImportError::NoUserHome);
    }
    Ok(AgentRecordDir::from_env()
        .into_iter()
        .filter(|d| match named.is_empty() {
            true => records_dir(d).is_dir(),
            false => named.contains(&d.adapter),
        })
        .collect())
}

fn records_dir(dir: &AgentRecordDir) -> PathBuf {
    crate::agents::agent(dir.adapter).records_dir(&dir.dir)
}

/// Every session the ledger (any epoch: a session hooks recorded before an
/// epoch advance is not the import's) or the intake spool holds.
pub(crate) fn known_sessions(home: &Home) -> Result<HashSet<SessionRef>, ImportError> {
    let ledger_error = |e: &dyn std::fmt::Display| ImportError::Ledger(e.to_string());
    let mut known = HashSet::new();
    if let Some(live) = crate::report::source::live_or_none(home).map_err(|e| ledger_error(&e))? {
        let producing = live.bookkeeping().producer_sessions();
        known.extend(producing.map_err(|e| ledger_error(&e))?);
        let epochs = Epochs::open(home, &EpochSelector::All).map_err(|e| ledger_error(&e))?;
        for epoch in &epochs.open {
            let listed = epoch
                .ledger
                .sessions()
                .list()
                .map_err(|e| ledger_error(&e))?;
            known.extend(listed.into_iter().map(|s| s.session));
        }
    }
    let spooled = crate::report::spool_facts::spooled_sessions_holding_records(home);
    known.extend(spooled.map_err(|e| ImportError::Spool(e.to_string()))?);
    Ok(known)
}

/// What one agent's records give: the count, and each record to import.
fn plan_agent(
    dir: &AgentRecordDir,
    known: &HashSet<SessionRef>,
    since_ns: Option<i64>,
) -> (AgentImport, Vec<Planned>) {
    let files = crate::agents::agent(dir.adapter).recorded_files(&dir.dir);
    let mut agent = AgentImport {
        agent: dir.adapter,
        records_dir: records_dir(dir).display().to_string(),
        found: files.len() as u64,
        known: 0,
        older: 0,
        imported: 0,
        bytes: 0,
        refused: Vec::new(),
    };
    let mut plans = Vec::new();
    let mut seen = HashSet::new();
    for file in files {
        let session = SessionRef {
            adapter: dir.adapter,
            session_id: file.session_id.clone(),
        };
        if known.contains(&session) || !seen.insert(session.clone()) {
            agent.known += 1;
        } else if since_ns.is_some_and(|t| file.modified_ns < t) {
            agent.older += 1;
        } else {
            match checked(session, file) {
                Ok(plan) => {
                    agent.imported += 1;
                    agent.bytes += plan.bytes;
                    plans.push(plan);
                }
                Err(refused) => agent.refused.push(refused),
            }
        }
    }
    (agent, plans)
}

/// A record passed through the gate every followed record passes (its
/// path has the shape the agent gives this session's record, and it is a
/// regular file harnery can open), with its size.
fn checked(session: SessionRef, file: RecordedFile) -> Result<Planned, Refused> {
    let refused = |reason: String| Refused {
        session_id: file.session_id.clone(),
        path: file.path.display().to_string(),
        reason,
    };
    let opened = place::open(
        session.adapter,
        &session.session_id,
        RecordRole::Session,
        &file.path,
    );
    let bytes = match opened {
        Ok(f) => f.metadata().map_err(|e| refused(e.to_string()))?.len(),
        Err(NotOpened::Missing) => return Err(refused("gone since it was listed".into())),
        Err(NotOpened::Refused(place::Refusal(why))) => return Err(refused(why)),
        Err(NotOpened::Unreadable(e)) => return Err(refused(format!("unreadable: {e}"))),
    };
    Ok(Planned {
        session,
        path: file.path,
        bytes,
        modified_ns: file.modified_ns,
        subagents: file.subagents,
    })
}

fn spool_one(writer: &SpoolWriter, plan: &Planned) -> Result<(), ImportError> {
    let payload = serde_json::to_vec(&ImportPayload {
        path: plan.path.display().to_string(),
        bytes: plan.bytes,
        modified_unix_ns: plan.modified_ns,
        subagents: plan
            .subagents
            .iter()
            .map(|(agent_id, path)| ImportedSubagent {
                agent_id: agent_id.clone(),
                path: path.display().to_string(),
            })
            .collect(),
    })
    .expect("an import payload is plain JSON");
    let mut signal = Signal::new(
        plan.session.adapter.as_str(),
        Some(IMPORT),
        Some(&plan.session.session_id),
        &payload,
    );
    // Stamped at the record's last write, not at the import: the session's
    // `session.imported` then stands at its own last activity, and a
    // history imported today does not read as today's work.
    signal.received_ns = plan.modified_ns;
    // Whole or not at all (`spool::batch`): an import killed in the middle
    // of it leaves no torn record for the drain to report, and the session
    // is named again by the next import.
    let spooled = SealedBatch::open(writer, signal.adapter, signal.session_id).and_then(|mut b| {
        b.append(&signal)?;
        b.seal()
    });
    spooled.map_err(|e| {
        ImportError::Spool(format!(
            "{} session {}: {e}",
            plan.session.adapter, plan.session.session_id
        ))
    })?;
    Ok(())
}

/// How many sessions the agents' records on disk hold that the ledger and
/// the spool do not (for `serve`'s first start), or `None` when the
/// ledger already holds an imported session or records are not read.
pub fn not_yet_imported(home: &Home) -> Result<Option<u64>, ImportError> {
    if !crate::finalize::record::enabled() || crate::home::user_dir().is_err() {
        return Ok(None);
    }
    if holds_imported(home)? {
        return Ok(None);
    }
    let known = known_sessions(home)?;
    let count = record_dirs(&[])?
        .iter()
        .flat_map(|d| {
            let agent = crate::agents::agent(d.adapter);
            agent
                .recorded_sessions(&d.dir)
                .into_iter()
                .map(move |(id, _)| SessionRef {
                    adapter: d.adapter,
                    session_id: id,
                })
        })
        .filter(|s| !known.contains(s))
        .collect::<HashSet<_>>()
        .len();
    Ok(Some(count as u64))
}

/// Whether the live ledger holds a session of class `imported`.
fn holds_imported(home: &Home) -> Result<bool, ImportError> {
    let ledger = crate::report::source::live_or_none(home)
        .map_err(|e| ImportError::Ledger(e.to_string()))?;
    match ledger {
        Some(l) => l
            .sessions()
            .any_imported()
            .map_err(|e| ImportError::Ledger(e.to_string())),
        None => Ok(false),
    }
}

/// The agent whose id is `name`, for the command line.
pub fn parse_agent(name: &str) -> Result<AdapterId, String> {
    AdapterId::parse(name).ok_or_else(|| {
        let all: Vec<&str> = AdapterId::ALL.iter().map(|a| a.as_str()).collect();
        format!(
            "{name:?} is not an agent harnery knows ({})",
            all.join(", ")
        )
    })
}
