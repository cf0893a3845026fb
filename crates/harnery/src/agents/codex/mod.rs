//! Codex CLI (adapter id `codex`): where it keeps its files (`$CODEX_HOME`,
//! else `~/.codex`), its hook dialect ([`hooks`]), its own record, the
//! rollout ([`record`]), and the trust Codex wants for each hook before it
//! runs one ([`trust`]). Written from what Codex CLI 0.169.0 sent and wrote
//! (`tests/fixtures/codex/`).

pub(crate) mod hooks;
pub(crate) mod record;
pub(crate) mod trust;

use std::path::{Path, PathBuf};

use crate::agents::adapter::{
    Adapter, AgentHome, Companion, EntryShape, HookPlace, HooksChange, Part, RecordShape,
    RecordTurns, Resume,
};
use crate::agents::capability::{CapabilityProfile, RecoveryPolicy, TimestampSource};
use crate::agents::record::listing::{RecordedFile, entries, modified_ns};
use crate::agents::record::place::{RecordRole, Refusal, is_plain_id};
use crate::agents::record::{LineMark, NamedRecord, RecordLine};
use crate::agents::signal::Normalized;
use crate::contract::{AdapterId, RecordAt};

/// The variable that moves Codex's directory.
pub(crate) const HOME_VAR: &str = "CODEX_HOME";

/// Every hook's timeout, seconds. SessionEnd gets Codex's ceiling for it
/// (Codex clamps a larger one to 3 s and warns on every start).
const TIMEOUT_S: u64 = 10;
const SESSION_END_TIMEOUT_S: u64 = 3;

/// Codex, as an [`Adapter`].
pub(crate) struct Codex;

impl Adapter for Codex {
    fn name(&self) -> &'static str {
        "Codex"
    }
    fn capability(&self) -> CapabilityProfile {
        CapabilityProfile {
            adapter: AdapterId::Codex,
            tool_call_ids: true,
            native_turn_ids: true,
            turn_end_signal: true,
            session_end_signal: true,
            subagent_routing: false,
            duplicate_delivery: false,
            timestamps: TimestampSource::ReceiveTime,
        }
    }
    /// Every rule: Codex names each turn (`turn_id`) and each call
    /// (`tool_use_id`), and a turn's `Stop` is as reliable as Claude
    /// Code's (neither comes after an interrupt or a kill).
    fn recovery(&self) -> RecoveryPolicy {
        RecoveryPolicy::FULL
    }
    fn normalize(
        &self,
        _event: Option<&str>,
        payload: &[u8],
        received_unix_ns: i64,
        record: bool,
    ) -> (Normalized, NamedRecord) {
        hooks::normalize_naming(payload, received_unix_ns, record)
    }
    fn read_marked(
        &self,
        line: &[u8],
        at: &RecordAt,
    ) -> (RecordLine, Option<Option<String>>, LineMark) {
        record::read_marked(line, at)
    }
    fn line_session(&self, line: &[u8]) -> Option<String> {
        record::line_session(line)
    }
    fn line_mark(&self, kind: &str) -> LineMark {
        record::line_mark(kind)
    }
    fn record_turns(&self) -> RecordTurns {
        RecordTurns::PromptChain
    }
    /// `<codex home>/sessions/YYYY/MM/DD/rollout-<local time>-<thread>.jsonl`,
    /// the thread being the session itself, or a subagent (its agent id is
    /// its thread's id; `SubagentStop` names its rollout).
    fn record_shape(&self, session_id: &str, role: RecordRole) -> Result<RecordShape, Refusal> {
        let thread = match role {
            RecordRole::Session => session_id,
            RecordRole::Subagent(agent) if is_plain_id(agent) => agent,
            RecordRole::Subagent(agent) => {
                return Err(Refusal(format!(
                    "the agent id {agent:?} is not a plain name"
                )));
            }
        };
        Ok(RecordShape {
            tail: vec![
                Part::Is("sessions".into()),
                Part::AnyDir,
                Part::AnyDir,
                Part::AnyDir,
                Part::Framed("rollout-", format!("-{thread}.jsonl")),
            ],
            text: format!("<codex home>/sessions/YYYY/MM/DD/rollout-<time>-{thread}.jsonl"),
        })
    }
    fn records_dir(&self, home: &Path) -> PathBuf {
        home.join("sessions")
    }
    fn recorded_sessions(&self, home: &Path) -> Vec<(String, i64)> {
        crate::agents::record::listing::ids_and_times(rollouts(&self.records_dir(home)))
    }
    fn recorded_files(&self, home: &Path) -> Vec<RecordedFile> {
        rollouts(&self.records_dir(home))
    }
    fn home(&self) -> AgentHome {
        AgentHome {
            var: HOME_VAR,
            default: ".codex",
        }
    }
    fn hooks(&self) -> HookPlace {
        HookPlace::Settings {
            user_file: "hooks.json",
            project_file: ".codex/hooks.json",
            events: &hooks::EVENTS,
            // Codex runs a hook's command line through a shell; it has no
            // argument list.
            entry: EntryShape::CommandGroup { per_second: 1 },
            timeout_s: TIMEOUT_S,
            end_timeout_s: Some(("SessionEnd", SESSION_END_TIMEOUT_S)),
        }
    }
    /// The user's `config.toml`, where Codex keeps the trust of every hook
    /// (a project's hooks too): see [`trust`].
    fn companion(&self, change: &HooksChange) -> Option<Companion> {
        let (home, moved) = self.home().resolve(change.user_home);
        let default_home = change.user_home.join(self.home().default);
        let named = trust::named_path(change.hooks_file, &default_home, moved);
        let of = |text: Option<&str>| {
            text.map(|t| trust::of_harnery_hooks(&named, t, change.is_ours))
                .unwrap_or_default()
        };
        let (stale, fresh) = (of(change.before), of(change.after));
        if stale.is_empty() && fresh.is_empty() {
            return None;
        }
        Some(Companion {
            path: home.join("config.toml"),
            rewrite: Box::new(move |config| trust::updated_config(config, &stale, &fresh)),
        })
    }
    fn resume(&self) -> Resume {
        Resume {
            program: "codex",
            before_id: &["resume"],
        }
    }
    /// Codex's payloads carry no timestamp and no id of their own: the
    /// two `PreModelRequest`s of a one-call turn are the same bytes.
    fn repeats_payloads(&self) -> bool {
        true
    }
    fn hooked_tool(&self, record_tool: &str) -> bool {
        HOOKED_TOOLS.contains(&record_tool) || record_tool.starts_with("mcp__")
    }
}

/// The record's names of the tools Codex runs `PreToolUse` and
/// `PostToolUse` for: its shell tools (0.169.0 offers `exec_command`),
/// `apply_patch`, MCP tools (`mcp__<server>__<tool>`), and its subagent
/// tools (seen: `spawn_agent`, `wait_agent`, whose hooks name it
/// `multi_agent_v1wait_agent`). Its other tools (`write_stdin`,
/// `web_search`, `view_image`, ...) run none, by the sources.
const HOOKED_TOOLS: [&str; 10] = [
    "exec_command",
    "shell",
    "shell_command",
    "local_shell",
    "apply_patch",
    "spawn_agent",
    "wait_agent",
    "send_input",
    "close_agent",
    "resume_agent",
];

/// `<sessions>/YYYY/MM/DD/rollout-<time>-<id>.jsonl` for a plain id (the
/// id is the last five `-`-separated fields of the name: a UUID).
fn rollouts(sessions: &Path) -> Vec<RecordedFile> {
    let days = entries(sessions)
        .flat_map(|y| entries(&y).collect::<Vec<_>>())
        .flat_map(|m| entries(&m).collect::<Vec<_>>());
    let mut out = Vec::new();
    for day in days {
        for file in entries(&day) {
            let Some(id) = file
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(session_of_rollout)
            else {
                continue;
            };
            out.extend(modified_ns(&file).map(|modified_ns| RecordedFile {
                session_id: id,
                path: file.clone(),
                modified_ns,
                subagents: Vec::new(),
            }));
        }
    }
    out
}

/// The session id in a rollout's file name
/// (`rollout-2026-12-06T10-08-42-<uuid>.jsonl`).
pub(crate) fn session_of_rollout(name: &str) -> Option<String> {
    let stem = name.strip_prefix("rollout-")?.strip_suffix(".jsonl")?;
    let fields: Vec<&str> = stem.rsplitn(6, '-').collect();
    let id = fields
        .get(..5)?
        .iter()
        .rev()
        .copied()
        .collect::<Vec<_>>()
        .join("-");
    is_plain_id(&id).then_some(id)
}

/// The captures in `tests/fixtures/codex`: one scenario's hook payloads
/// (event, payload) and rollout lines.
#[cfg(test)]
pub(crate) mod fixture {
    use std::path::PathBuf;

    pub(crate) const SCENARIOS: [&str; 7] = [
        "basic",
        "fail",
        "two-turns",
        "kill",
        "kill-resume",
        "interrupt",
        "subagent",
    ];

    fn dir(scenario: &str) -> PathBuf {
        PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/codex"
        ))
        .join(scenario)
    }

    pub(crate) fn hooks(scenario: &str) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(dir(scenario).join("hook-capture.jsonl")).unwrap();
        text.lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let event = v["event"].as_str().unwrap().to_string();
                (event, v["stdin_raw"].as_str().unwrap().to_string())
            })
            .collect()
    }

    pub(crate) fn rollout(scenario: &str) -> Vec<String> {
        lines(scenario, "rollout.jsonl")
    }

    pub(crate) fn lines(scenario: &str, file: &str) -> Vec<String> {
        let text = std::fs::read_to_string(dir(scenario).join(file)).unwrap();
        text.lines().map(String::from).collect()
    }

    pub(crate) fn rollout_name(scenario: &str) -> String {
        std::fs::read_to_string(dir(scenario).join("rollout-name"))
            .unwrap()
            .trim()
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::record::place::check_shape;

    #[test]
    fn rollout_names_give_their_session() {
        for scenario in fixture::SCENARIOS {
            let name = fixture::rollout_name(scenario);
            let id = session_of_rollout(&name).expect("a rollout name holds its session id");
            let named = record::line_session(fixture::rollout(scenario)[0].as_bytes());
            assert_eq!(named.as_deref(), Some(id.as_str()), "{scenario}");
        }
        assert_eq!(session_of_rollout("rollout-x.jsonl"), None);
        assert_eq!(session_of_rollout("events.jsonl"), None);
    }

    #[test]
    fn only_a_rollout_of_the_session_under_sessions_is_its_record() {
        let id = "01a24ad3-e343-7703-9004-34aa021d1cb3";
        let ok = format!("/h/.codex/sessions/2026/12/06/rollout-2026-12-06T10-08-49-{id}.jsonl");
        assert_eq!(
            check_shape(AdapterId::Codex, id, RecordRole::Session, Path::new(&ok)),
            Ok(())
        );
        for bad in [
            format!("/h/.codex/sessions/2026/12/rollout-2026-12-06T10-08-49-{id}.jsonl"),
            format!("/h/.codex/archive/2026/12/06/rollout-2026-12-06T10-08-49-{id}.jsonl"),
            format!("/h/.codex/sessions/2026/12/06/rollout-2026-12-06T10-08-49-{id}.json"),
            "/h/.codex/sessions/2026/12/06/rollout-2026-12-06T10-08-49-other.jsonl".to_string(),
            format!("/h/.codex/sessions/2026/12/../06/rollout-x-{id}.jsonl"),
            "/etc/passwd".to_string(),
        ] {
            assert!(
                check_shape(AdapterId::Codex, id, RecordRole::Session, Path::new(&bad)).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn recorded_sessions_are_read_from_rollout_names() {
        let dir = tempfile::tempdir().unwrap();
        let day = dir.path().join("sessions/2026/12/06");
        std::fs::create_dir_all(&day).unwrap();
        let name = fixture::rollout_name("basic");
        std::fs::write(day.join(&name), "{}\n").unwrap();
        std::fs::write(day.join("notes.txt"), "").unwrap();
        let found = Codex.recorded_sessions(dir.path());
        assert_eq!(found.len(), 1);
        assert_eq!(Some(found[0].0.clone()), session_of_rollout(&name));
    }
}
