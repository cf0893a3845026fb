//! Gemini CLI (adapter id `gemini-cli`): being built in issue 47. Its hooks are read
//! in Claude Code's dialect until its own is written from the real
//! client's captures; its record is not read yet (refused, and said so).

use std::path::{Path, PathBuf};

use crate::agents::adapter::{Adapter, AgentHome, HookPlace, RecordShape, RecordTurns, Resume};
use crate::agents::capability::{CapabilityProfile, RecoveryPolicy, TimestampSource};
use crate::agents::record::place::{RecordRole, Refusal};
use crate::agents::record::{LineMark, NamedRecord, RecordLine};
use crate::agents::signal::Normalized;
use crate::contract::{AdapterId, RecordAt};

/// Gemini CLI, as an [`Adapter`].
pub(crate) struct GeminiCli;

impl Adapter for GeminiCli {
    fn name(&self) -> &'static str {
        "Gemini CLI"
    }
    fn capability(&self) -> CapabilityProfile {
        CapabilityProfile {
            adapter: AdapterId::GeminiCli,
            tool_call_ids: false,
            native_turn_ids: false,
            turn_end_signal: true,
            session_end_signal: true,
            subagent_routing: false,
            duplicate_delivery: false,
            timestamps: TimestampSource::ReceiveTime,
        }
    }
    fn recovery(&self) -> RecoveryPolicy {
        RecoveryPolicy {
            turn_end_sweep: false,
            next_turn_sweep: false,
            ..RecoveryPolicy::FULL
        }
    }
    fn normalize(
        &self,
        _event: Option<&str>,
        payload: &[u8],
        received_unix_ns: i64,
        _record: bool,
    ) -> (Normalized, NamedRecord) {
        let (normalized, _) =
            crate::agents::claude_code::normalize_naming(payload, received_unix_ns, false);
        (normalized, NamedRecord::Unread)
    }
    fn read_marked(
        &self,
        _line: &[u8],
        _at: &RecordAt,
    ) -> (RecordLine, Option<Option<String>>, LineMark) {
        (
            RecordLine::unrecognized(String::from("Gemini CLI's record is not read yet")),
            Some(None),
            LineMark::None,
        )
    }
    fn line_session(&self, _line: &[u8]) -> Option<String> {
        None
    }
    fn line_mark(&self, _kind: &str) -> LineMark {
        LineMark::None
    }
    fn record_turns(&self) -> RecordTurns {
        RecordTurns::PromptText
    }
    fn record_shape(&self, _session_id: &str, _role: RecordRole) -> Result<RecordShape, Refusal> {
        Err(Refusal(
            "harnery does not read Gemini CLI's record yet".into(),
        ))
    }
    fn records_dir(&self, home: &Path) -> PathBuf {
        home.to_path_buf()
    }
    fn recorded_sessions(&self, _home: &Path) -> Vec<(String, i64)> {
        Vec::new()
    }
    fn home(&self) -> AgentHome {
        AgentHome {
            var: "GEMINI_CLI_HOME",
            default: ".gemini",
        }
    }
    fn hooks(&self) -> HookPlace {
        HookPlace::Settings {
            user_file: "settings.json",
            project_file: ".gemini/settings.json",
            events: &[],
            entry: crate::agents::adapter::EntryShape::CommandGroup { per_second: 1 },
            timeout_s: 10,
            end_timeout_s: None,
        }
    }
    fn resume(&self) -> Resume {
        Resume::Unsupported("not established yet")
    }
}
