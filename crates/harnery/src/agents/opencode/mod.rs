//! OpenCode (adapter id `opencode`), as the real client 1.18.33 behaves.
//!
//! - Hooks: OpenCode has no command hooks. `harnery install opencode`
//!   writes a plugin (`plugin.js`) into `$XDG_CONFIG_HOME/opencode/plugins/`
//!   (default `~/.config/opencode/plugins/`) or a project's
//!   `.opencode/plugins/`, which hands each event harnery reads to
//!   `harnery-hook opencode <event>` (see [`hooks`]).
//! - Record: `opencode.db` under `$XDG_DATA_HOME/opencode/` (default
//!   `~/.local/share/opencode/`), a SQLite database whose `event` table is
//!   an append-only journal per session, rendered as lines ([`store`]) and
//!   read line by line ([`record`]). No hook names it: it is found by the
//!   session id.
//! - Resume: `opencode --session <id>` (the same session id; `opencode run
//!   --session <id> <prompt>` headless).

mod hooks;
mod record;
mod store;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use crate::agents::adapter::{
    Adapter, AgentHome, HookPlace, Part, RecordShape, RecordTurns, RenderedRecord, Resume,
};
use crate::agents::capability::{CapabilityProfile, RecoveryPolicy, TimestampSource};
use crate::agents::record::place::{RecordRole, Refusal, check_shape, is_plain_id};
use crate::agents::record::{LineMark, NamedRecord, RecordLine};
use crate::agents::signal::Normalized;
use crate::contract::{AdapterId, RecordAt};

/// The plugin `harnery install opencode` writes; `{hook_bin}` stands for
/// the hook binary's path as a JavaScript string.
const PLUGIN: &str = include_str!("plugin.js");

/// OpenCode, as an [`Adapter`].
pub(crate) struct Opencode;

impl Adapter for Opencode {
    fn name(&self) -> &'static str {
        "OpenCode"
    }
    fn capability(&self) -> CapabilityProfile {
        CapabilityProfile {
            adapter: AdapterId::Opencode,
            // `tool.execute.before/after` carry the model's call id.
            tool_call_ids: true,
            native_turn_ids: false,
            // `session.idle`; none after a kill.
            turn_end_signal: true,
            // `session.deleted` only; `opencode run` ends without one.
            session_end_signal: true,
            subagent_routing: false,
            // The plugin installed for the user and in a project runs twice.
            duplicate_delivery: true,
            // The plugin stamps each event with OpenCode's clock (ISO).
            timestamps: TimestampSource::AgentMillisOrIso,
        }
    }
    /// The turn-end sweep runs: OpenCode fires `session.idle` only once its
    /// loop has stopped (no tool of the turn can still finish), and the
    /// plugin hands it over after every tool hook of the turn (one queue, in
    /// order), so a span still open then never gets its completion (a call
    /// refused or thrown: OpenCode calls no `tool.execute.after` for it).
    /// No sweep at the next prompt: no turn id ties a prompt to its turn,
    /// and a prompt sent while a turn runs waits for it.
    fn recovery(&self) -> RecoveryPolicy {
        RecoveryPolicy {
            next_turn_sweep: false,
            ..RecoveryPolicy::FULL
        }
    }
    fn normalize(
        &self,
        event: Option<&str>,
        payload: &[u8],
        received_unix_ns: i64,
        _record: bool,
    ) -> (Normalized, NamedRecord) {
        let normalized = hooks::normalize(event, payload, received_unix_ns);
        // No payload names the record: it is found by the session id.
        (normalized, NamedRecord::Read(None))
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
    fn line_mark(&self, _kind: &str) -> LineMark {
        LineMark::None
    }
    fn record_turns(&self) -> RecordTurns {
        RecordTurns::PromptText
    }
    fn record_shape(&self, _session_id: &str, role: RecordRole) -> Result<RecordShape, Refusal> {
        if let RecordRole::Subagent(_) = role {
            return Err(Refusal(
                "OpenCode keeps a subagent's work in a session of its own".into(),
            ));
        }
        Ok(RecordShape {
            tail: vec![Part::Is("opencode".into()), Part::Is(store::DB_NAME.into())],
            text: format!("<data dir>/opencode/{}", store::DB_NAME),
        })
    }
    fn finds_record_by_id(&self) -> bool {
        true
    }
    /// `opencode.db` in OpenCode's data directory, when it is there.
    fn found_record(&self, session_id: &str) -> Result<Option<PathBuf>, (PathBuf, String)> {
        let Some(db) = store::db_path() else {
            return Ok(None);
        };
        if !is_plain_id(session_id) {
            return Ok(None);
        }
        let exists = std::fs::symlink_metadata(&db).is_ok();
        match check_shape(AdapterId::Opencode, session_id, RecordRole::Session, &db) {
            Ok(()) => Ok(exists.then_some(db)),
            Err(Refusal(why)) if exists => Err((db, why)),
            Err(_) => Ok(None),
        }
    }
    fn render_record(
        &self,
        path: &Path,
        session_id: &str,
        keep_from: u64,
        upto: u64,
    ) -> Option<std::io::Result<RenderedRecord>> {
        Some(store::render(path, session_id, keep_from, upto))
    }
    fn records_dir(&self, _home: &Path) -> PathBuf {
        store::data_dir().unwrap_or_default()
    }
    /// The sessions in `opencode.db`, with the time each was last updated.
    fn recorded_sessions(&self, _home: &Path) -> Vec<(String, i64)> {
        store::db_path()
            .map(|db| store::sessions(&db))
            .unwrap_or_default()
    }
    fn home(&self) -> AgentHome {
        AgentHome {
            var: "XDG_CONFIG_HOME",
            default: ".config",
        }
    }
    fn hooks(&self) -> HookPlace {
        HookPlace::Plugin {
            user_file: "opencode/plugins/harnery.js",
            project_file: ".opencode/plugins/harnery.js",
            text: PLUGIN,
        }
    }
    fn resume(&self) -> Resume {
        Resume {
            program: "opencode",
            before_id: &["--session"],
        }
    }
}
