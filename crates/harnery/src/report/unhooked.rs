//! Agents whose sessions reach their own record directory but never the
//! spool: hooks configured where the agent does not read them (a Claude
//! Code run with `CLAUDE_CONFIG_DIR`, a Copilot with `COPILOT_HOME`, while
//! `install` wrote under `~`), or not configured at all.
//!
//! Every session an agent runs leaves its record (Claude Code's
//! `<config dir>/projects/<project>/<id>.jsonl`, Copilot's
//! `<home>/session-state/<id>/events.jsonl`), and every hook it runs puts
//! the session in the spool before the record is written. So a record
//! written after harnery began recording, of a session that neither the
//! spool nor the live ledger knows, is a session whose hooks never ran
//! harnery. The record directories are the ones the agents would use in
//! the environment of the caller (`harnery health` runs in the user's
//! shell); with `HARNERY_RECORDS=off` no record is looked at.
//!
//! Only names and modification times are read here: never a record's
//! bytes, and nothing is written.

use std::collections::HashSet;
use std::path::PathBuf;

use crate::agents;
use crate::clock::format_ns;
use crate::contract::{AdapterId, SessionRef};
use crate::report::health::Condition;

/// The condition's code.
pub(crate) const HOOKS_NOT_REACHING_SPOOL: &str = "hooks_not_reaching_spool";

/// Where one agent keeps its sessions' records, and what decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRecordDir {
    pub adapter: AdapterId,
    /// Claude Code's config directory or Copilot's home.
    pub dir: PathBuf,
    /// `CLAUDE_CONFIG_DIR` / `COPILOT_HOME` when that variable chose
    /// `dir`; `None` for the default under the user's home.
    pub moved_by: Option<&'static str>,
}

impl AgentRecordDir {
    /// Both agents' directories as they resolve in this process's
    /// environment; none when `HARNERY_RECORDS=off` or no user home is
    /// known.
    pub fn from_env() -> Vec<AgentRecordDir> {
        if std::env::var("HARNERY_RECORDS").is_ok_and(|v| v == "off") {
            return Vec::new();
        }
        let Ok(user_home) = crate::home::user_dir() else {
            return Vec::new();
        };
        let user_home = user_home.as_path();
        AdapterId::ALL
            .into_iter()
            .map(|adapter| {
                let home = agents::agent(adapter).home();
                let (dir, moved) = agents::agent(adapter).dir(user_home);
                AgentRecordDir {
                    adapter,
                    dir,
                    moved_by: moved.then_some(home.var),
                }
            })
            .collect()
    }

    /// Every session with a record here and that record's modification
    /// time (unix ns).
    fn sessions(&self) -> Vec<(String, i64)> {
        agents::agent(self.adapter).recorded_sessions(&self.dir)
    }

    fn records_text(&self) -> String {
        agents::agent(self.adapter)
            .records_dir(&self.dir)
            .display()
            .to_string()
    }
}

/// One condition per agent in `dirs` that has sessions whose record was
/// last written in `[since_ns, until_ns]` and that `known` does not hold.
pub(crate) fn conditions(
    dirs: &[AgentRecordDir],
    known: &HashSet<SessionRef>,
    since_ns: i64,
    until_ns: i64,
) -> Vec<Condition> {
    dirs.iter()
        .filter_map(|dir| agent_condition(dir, known, since_ns, until_ns))
        .collect()
}

fn agent_condition(
    dir: &AgentRecordDir,
    known: &HashSet<SessionRef>,
    since_ns: i64,
    until_ns: i64,
) -> Option<Condition> {
    let recent: Vec<(String, i64)> = dir
        .sessions()
        .into_iter()
        .filter(|(_, t)| (since_ns..=until_ns).contains(t))
        .collect();
    let mut unseen: Vec<&(String, i64)> = recent
        .iter()
        .filter(|(id, _)| {
            !known.contains(&SessionRef {
                adapter: dir.adapter,
                session_id: id.clone(),
            })
        })
        .collect();
    unseen.sort_by_key(|(id, t)| (*t, id.clone()));
    let (newest_id, newest_ns) = unseen.last()?;
    Some(Condition {
        code: HOOKS_NOT_REACHING_SPOOL.into(),
        session: Some(SessionRef {
            adapter: dir.adapter,
            session_id: newest_id.clone(),
        }),
        at_unix_ns: Some(*newest_ns),
        detail: detail(dir, unseen.len(), recent.len(), since_ns),
    })
}

fn detail(dir: &AgentRecordDir, unseen: usize, recent: usize, since_ns: i64) -> String {
    let agent = agents::agent(dir.adapter).name();
    let command = format!("harnery install {}", dir.adapter);
    let environment = match dir.moved_by {
        Some(var) => format!("with {var}={} set, as the agent runs", dir.dir.display()),
        None => "with the environment the agent runs with".to_string(),
    };
    format!(
        "{unseen} of {recent} {agent} session(s) written to {} since {} never reached the spool \
         (the newest is named here): the agent does not run harnery's hooks where it reads its \
         configuration; run `{command}` {environment}, then check with `harnery spool ls`",
        dir.records_text(),
        format_ns(since_ns),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::record::listing::{copilot_sessions, modified_ns};
    use std::path::Path;

    fn touch(path: &Path) -> i64 {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"{}\n").unwrap();
        modified_ns(path).unwrap()
    }

    #[test]
    fn an_agent_with_unseen_sessions_is_named_with_what_to_do() {
        let t = tempfile::tempdir().unwrap();
        let dir = AgentRecordDir {
            adapter: AdapterId::ClaudeCode,
            dir: t.path().join("cfg"),
            moved_by: Some("CLAUDE_CONFIG_DIR"),
        };
        let projects = t.path().join("cfg/projects/-w");
        let seen_at = touch(&projects.join("aaaa-1.jsonl"));
        touch(&projects.join("bbbb-2.jsonl"));
        touch(&projects.join("bbbb-2/subagents/agent-x.jsonl"));
        touch(&projects.join("not a session.jsonl"));
        let seen = SessionRef {
            adapter: AdapterId::ClaudeCode,
            session_id: "aaaa-1".into(),
        };
        let known: HashSet<SessionRef> = [seen].into();
        let found = conditions(std::slice::from_ref(&dir), &known, seen_at - 1, i64::MAX);
        assert_eq!(found.len(), 1, "{found:?}");
        let c = &found[0];
        assert_eq!(c.code, HOOKS_NOT_REACHING_SPOOL);
        assert_eq!(c.session.as_ref().unwrap().session_id, "bbbb-2");
        assert!(
            c.detail.starts_with("1 of 2 Claude Code session(s)"),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("CLAUDE_CONFIG_DIR="), "{}", c.detail);
        // Records older than the window, or every session known: nothing.
        assert!(conditions(std::slice::from_ref(&dir), &known, i64::MAX - 1, i64::MAX).is_empty());
        let all: HashSet<SessionRef> = ["aaaa-1", "bbbb-2"]
            .map(|id| SessionRef {
                adapter: AdapterId::ClaudeCode,
                session_id: id.into(),
            })
            .into();
        assert!(conditions(&[dir], &all, 0, i64::MAX).is_empty());
    }

    #[test]
    fn copilot_sessions_are_read_from_session_state() {
        let t = tempfile::tempdir().unwrap();
        touch(&t.path().join("session-state/s1/events.jsonl"));
        std::fs::create_dir_all(t.path().join("session-state/s2")).unwrap();
        let ids: Vec<String> = copilot_sessions(&t.path().join("session-state"))
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, ["s1"]);
    }
}
