//! `harnery recover`: recovery packets for interrupted agent sessions, and
//! resume safety for Copilot (ADR-0007).
//!
//! A packet is built from the agent's raw stream (authoritative) and, for
//! Copilot, its indexed store (convenient, but written at shutdown and
//! incomplete): raw direct user direction first, indexed conversation second,
//! agent steering third, recent raw activity last, each bounded separately.
//! Resume safety reads installed Copilot package changelogs read-only and
//! allows native `--resume` only on explicit evidence.
//!
//! This module never runs the agent or a package manager and never writes
//! into the agent's home (a store it cannot open read-only is copied into
//! a private temporary folder). Giving a session back is `restore`'s.

pub mod canonical;
pub mod chronicle;
pub(crate) mod claude;
pub(crate) mod copilot;
pub mod hint;
pub mod packet;
pub mod policy;
pub mod recorded;
pub mod render;
pub(crate) mod stream;

use std::path::{Path, PathBuf};

use crate::agents::copilot::package::{self, RunningCopilotHint, SearchPlan};
use crate::agents::{self, claude_code};
use packet::{IndexInput, Packet, PacketLimits};
use policy::{Policy, ResumeAssessment, StreamSize};
use stream::{AfterFirstRead, Dialect, ScanLimits};

/// Which agent a session belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Copilot,
    ClaudeCode,
}

impl Agent {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Agent::Copilot => "copilot",
            Agent::ClaudeCode => "claude-code",
        }
    }
}

/// Everything one recovery needs.
#[derive(Debug, Clone)]
pub struct RecoverRequest {
    pub session_id: String,
    /// `None`: find the session under either home.
    pub agent: Option<Agent>,
    pub copilot_home: PathBuf,
    pub claude_home: PathBuf,
    pub limits: PacketLimits,
    pub max_record: usize,
    pub open_strategy: chronicle::OpenStrategy,
    pub hint: RunningCopilotHint,
    pub plan: SearchPlan,
    /// Bytes of the stream scanned, as they are.
    pub progress: crate::progress::Progress,
}

/// A recovery that could not run.
#[derive(Debug, thiserror::Error)]
pub enum RecoverError {
    #[error("{0:?} is not a session id (letters, digits, '-', '_', '.', at most 128)")]
    BadSessionId(String),
    #[error("session {id} not found; looked for {}", list(searched))]
    NotFound { id: String, searched: Vec<PathBuf> },
    #[error(
        "session {id} exists for both agents ({}); choose one with --agent",
        list(found)
    )]
    Ambiguous { id: String, found: Vec<PathBuf> },
    #[error(transparent)]
    Name(#[from] crate::contract::session_name::NameError),
    #[error("{path}: {source}")]
    Stream {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Session ids become path components: only safe names pass.
pub(crate) fn check_session_id(id: &str) -> Result<(), RecoverError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(RecoverError::BadSessionId(id.to_string()))
    }
}

/// Where a session's stream is.
#[derive(Debug, Clone)]
pub struct Located {
    pub agent: Agent,
    pub stream: PathBuf,
}

/// The Copilot stream path of a session.
pub(crate) fn copilot_stream(home: &Path, id: &str) -> PathBuf {
    agents::copilot::events_path(home, id)
}

/// The Claude Code transcripts of a session (one per project folder holding it).
pub(crate) fn claude_transcripts(home: &Path, id: &str) -> Vec<PathBuf> {
    let projects = claude_code::projects_dir(home);
    let Ok(read) = std::fs::read_dir(&projects) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = read
        .flatten()
        .map(|e| claude_code::transcript_in(&e.path(), id))
        .filter(|p| p.is_file())
        .collect();
    found.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).and_then(|m| m.modified()).ok()));
    found
}

/// Find the session's stream.
pub fn locate(req: &RecoverRequest) -> Result<Located, RecoverError> {
    check_session_id(&req.session_id)?;
    let id = &req.session_id;
    let copilot = copilot_stream(&req.copilot_home, id);
    let claude = claude_transcripts(&req.claude_home, id);
    let copilot_found = copilot.is_file();
    let claude_first = claude.first().cloned();
    match (req.agent, copilot_found, claude_first) {
        (Some(Agent::Copilot), true, _) | (None, true, None) => Ok(Located {
            agent: Agent::Copilot,
            stream: copilot,
        }),
        (Some(Agent::ClaudeCode), _, Some(p)) | (None, false, Some(p)) => Ok(Located {
            agent: Agent::ClaudeCode,
            stream: p,
        }),
        (None, true, Some(p)) => Err(RecoverError::Ambiguous {
            id: id.clone(),
            found: vec![copilot, p],
        }),
        (agent, _, _) => {
            let mut searched = Vec::new();
            if agent != Some(Agent::ClaudeCode) {
                searched.push(copilot);
            }
            if agent != Some(Agent::Copilot) {
                let projects = claude_code::projects_dir(&req.claude_home);
                searched.push(claude_code::transcript_in(&projects.join("*"), id));
            }
            Err(RecoverError::NotFound {
                id: id.clone(),
                searched,
            })
        }
    }
}

/// The full session id the request names: its id when a stream has it
/// (or two agents do: [`locate`] says so), else the one id under the
/// agents' homes it is a unique prefix of (see
/// [`crate::contract::session_name`]). Several are ambiguous and listed;
/// none is the not-found error naming where it looked.
pub fn resolve_id(req: &RecoverRequest) -> Result<String, RecoverError> {
    use crate::contract::AdapterId;
    use crate::contract::session_name::{NameError, pick};
    let not_found = match locate(req) {
        Err(e @ RecoverError::NotFound { .. }) => e,
        _ => return Ok(req.session_id.clone()),
    };
    let adapter = req.agent.map(|a| match a {
        Agent::Copilot => AdapterId::Copilot,
        Agent::ClaudeCode => AdapterId::ClaudeCode,
    });
    match pick(&req.session_id, adapter, agent_sessions(req), "") {
        Ok(found) => Ok(found.session_id),
        Err(NameError::Unknown { .. }) => Err(not_found),
        Err(e) => Err(e.into()),
    }
}

/// Every session with a stream under the two agents' homes: Copilot's
/// `session-state/<id>/events.jsonl`, Claude Code's
/// `projects/<project>/<id>.jsonl`. Names that are not session ids are
/// left out (they could not be asked for).
fn agent_sessions(req: &RecoverRequest) -> Vec<crate::contract::SessionRef> {
    use crate::contract::{AdapterId, SessionRef};
    let names = |dir: PathBuf| -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()
    };
    let mut out = Vec::new();
    for id in names(req.copilot_home.join("session-state")) {
        if copilot_stream(&req.copilot_home, &id).is_file() {
            out.push((AdapterId::Copilot, id));
        }
    }
    let projects = claude_code::projects_dir(&req.claude_home);
    for project in names(projects.clone()) {
        for file in names(projects.join(&project)) {
            if let Some(id) = file.strip_suffix(".jsonl") {
                out.push((AdapterId::ClaudeCode, id.to_string()));
            }
        }
    }
    out.into_iter()
        .filter(|(_, id)| check_session_id(id).is_ok())
        .map(|(adapter, session_id)| SessionRef {
            adapter,
            session_id,
        })
        .collect()
}

/// Build the packet for a session.
pub fn recover(req: &RecoverRequest) -> Result<Packet, RecoverError> {
    let located = locate(req)?;
    let scan_limits = ScanLimits {
        max_direct: req.limits.max_direct,
        max_steering: req.limits.max_steering,
        max_recent: req.limits.max_recent,
        max_record: req.max_record,
        text_cap: req.limits.max_bytes,
    };
    let mut copilot = copilot::CopilotDialect::default();
    let mut claude = claude::ClaudeDialect::default();
    let dialect: &mut dyn Dialect = match located.agent {
        Agent::Copilot => &mut copilot,
        Agent::ClaudeCode => &mut claude,
    };
    let scanned = stream::scan(
        &located.stream,
        dialect,
        scan_limits,
        failpoint_hook(&located.stream),
        &req.progress,
    )
    .map_err(|source| RecoverError::Stream {
        path: located.stream.clone(),
        source,
    })?;
    let size = StreamSize::new(scanned.read.bytes, scanned.read.utf16_units);
    let (index, resume) = match located.agent {
        Agent::Copilot => {
            let index = read_index(&req.copilot_home, &req.session_id, req.open_strategy);
            let assessment = assess_copilot(req.hint.clone(), &req.plan);
            (index, with_stream(assessment, &req.session_id, size))
        }
        Agent::ClaudeCode => (
            IndexInput::NotApplicable,
            claude_assessment(&req.session_id, size),
        ),
    };
    Ok(packet::build(
        located.agent.name(),
        &req.session_id,
        scanned,
        index,
        resume,
        req.limits,
    ))
}

fn read_index(home: &Path, id: &str, strategy: chronicle::OpenStrategy) -> IndexInput {
    let db = agents::copilot::session_store(home);
    if !db.is_file() {
        return IndexInput::Missing(db.display().to_string());
    }
    match chronicle::read(&db, id, strategy) {
        Ok(c) => IndexInput::Read(c),
        Err(e) => IndexInput::Unreadable(db.display().to_string(), e.to_string()),
    }
}

/// The Copilot resume assessment, without a session.
pub fn assess_copilot(hint: RunningCopilotHint, plan: &SearchPlan) -> ResumeAssessment {
    let installed = package::discover(plan, &hint);
    let mut a = policy::assess(hint, installed);
    a.command = Some(match a.policy {
        Policy::Native => "copilot --resume <session-id>".into(),
        Policy::LegacyCeiling => format!(
            "copilot --resume <session-id>, only for sessions whose events.jsonl is at most {} characters (check with `harnery recover <session-id> --preview`)",
            stream::LEGACY_CEILING_CHARS
        ),
    });
    a
}

/// Fill in the session's stream size and the command to run.
pub fn with_stream(mut a: ResumeAssessment, id: &str, size: StreamSize) -> ResumeAssessment {
    let safe = a.policy == Policy::Native || !size.over_ceiling;
    a.command = Some(if safe {
        format!("copilot --resume {id}")
    } else {
        format!(
            "harnery recover {id} > recovery.md, then start a new `copilot` session and give it recovery.md (native resume of this stream would exceed the legacy ceiling)"
        )
    });
    if a.policy == Policy::LegacyCeiling {
        let fits = if size.over_ceiling {
            "exceeds"
        } else {
            "is within"
        };
        a.reason = format!("{}; the stream {fits} the ceiling", a.reason);
    }
    a.resume_is_safe = Some(safe);
    a.stream = Some(size);
    a
}

fn claude_assessment(id: &str, size: StreamSize) -> ResumeAssessment {
    ResumeAssessment {
        agent: "claude-code".into(),
        selected: policy::Selection {
            version: None,
            chosen_by: "none".into(),
        },
        hint: RunningCopilotHint::default(),
        installed: Vec::new(),
        changelog: None,
        deciding_entry: None,
        policy: Policy::Native,
        reason: "Claude Code resumes from its own transcript; harnery gates no ceiling for it"
            .into(),
        stream: Some(size),
        command: Some(format!("claude --resume {id}")),
        resume_is_safe: Some(true),
    }
}

/// `$HOME`, or `/` when unset.
pub fn home_dir() -> PathBuf {
    crate::home::env_home().unwrap_or_else(|| PathBuf::from("/"))
}

/// The in-process failpoints of `recover`, armed through the one
/// failpoint facility ([`crate::failpoint`]).
pub mod failpoints {
    use std::path::Path;

    /// The live store's read-only open fails (see `set_read_only_open_fails`).
    pub(crate) const READ_ONLY_OPEN_FAILS: &str = "recover-read-only-open-fails";
    /// A hook runs after a scan's first read (see `set_after_first_read`).
    pub(crate) const AFTER_FIRST_READ: &str = "recover-after-first-read";

    /// Make the read-only open of the live store at `db` fail (as in a
    /// read-only folder without `-shm`), so the private copy is used.
    #[cfg(feature = "failpoints")]
    pub fn set_read_only_open_fails(db: &Path) {
        crate::failpoint::arm_flag(READ_ONLY_OPEN_FAILS, db);
    }

    pub(super) fn read_only_open_fails(db: &Path) -> bool {
        crate::failpoint::flag_armed(READ_ONLY_OPEN_FAILS, db)
    }

    /// Run `hook` once, right after the next scan of `stream` has done its
    /// first read.
    #[cfg(feature = "failpoints")]
    pub fn set_after_first_read(stream: &Path, hook: crate::failpoint::Hook) {
        crate::failpoint::arm_hook(AFTER_FIRST_READ, stream, hook);
    }

    pub(super) fn take_after_first_read(stream: &Path) -> Option<crate::failpoint::Hook> {
        crate::failpoint::take_hook(AFTER_FIRST_READ, stream)
    }
}

fn failpoint_hook(stream: &Path) -> AfterFirstRead {
    failpoints::take_after_first_read(stream)
}
