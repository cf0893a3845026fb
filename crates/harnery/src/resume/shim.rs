//! Resume shims: how each agent resumes a session natively, as structured
//! data (`transport` `cli` or `sdk`, the program and its arguments, or the
//! SDK call) with the command text rendered from it.
//!
//! - Claude Code: `claude --resume <id>`.
//! - Copilot CLI: `copilot --resume <id>` only on evidence that native
//!   resume is safe (`harnery resume-policy`: the running version's
//!   changelog, or a stream within the legacy ceiling); otherwise the
//!   recovery packet (`harnery recover <id>`) for a fresh session.
//! - The Copilot SDK: `resumeSession(<id>)`, under the same policy.

use serde::Serialize;

use crate::contract::AdapterId;
use crate::resume::policy::{Policy, ResumeAssessment, StreamSize};

/// How the shim reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// A command line.
    Cli,
    /// A call on the agent's SDK client.
    Sdk,
}

/// One way to hand the session back to its agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResumeShim {
    pub transport: Transport,
    /// The program to run (cli).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
    /// The program's arguments (cli), or the call's (sdk).
    pub arguments: Vec<String>,
    /// The SDK method (sdk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// Whether the agent resumes its own session (false: a fresh session
    /// is given the recovery packet instead).
    pub native: bool,
    /// Why this shim.
    pub reason: String,
    /// The command, rendered from the fields above.
    pub text: String,
}

impl ResumeShim {
    fn cli(program: &str, arguments: Vec<String>, native: bool, reason: String) -> ResumeShim {
        let mut shim = ResumeShim {
            transport: Transport::Cli,
            program: Some(program.into()),
            arguments,
            call: None,
            native,
            reason,
            text: String::new(),
        };
        shim.text = shim.render();
        shim
    }

    fn sdk(call: &str, id: &str, reason: String) -> ResumeShim {
        let mut shim = ResumeShim {
            transport: Transport::Sdk,
            program: None,
            arguments: vec![id.into()],
            call: Some(call.into()),
            native: true,
            reason,
            text: String::new(),
        };
        shim.text = shim.render();
        shim
    }

    /// The command text: shell-quoted arguments, or the call.
    pub fn render(&self) -> String {
        match self.transport {
            Transport::Cli => {
                let mut words = vec![shell_word(self.program.as_deref().unwrap_or(""))];
                words.extend(self.arguments.iter().map(|a| shell_word(a)));
                words.join(" ")
            }
            Transport::Sdk => {
                let args: Vec<String> = self
                    .arguments
                    .iter()
                    .map(|a| serde_json::to_string(a).expect("a string is JSON"))
                    .collect();
                format!(
                    "client.{}({})",
                    self.call.as_deref().unwrap_or(""),
                    args.join(", ")
                )
            }
        }
    }
}

/// A word as a POSIX shell reads it back unchanged.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Claude Code resumes from its own transcript.
pub fn claude_code(session_id: &str) -> ResumeShim {
    ResumeShim::cli(
        "claude",
        vec!["--resume".into(), session_id.into()],
        true,
        "Claude Code resumes the session from its own transcript".into(),
    )
}

/// Copilot, under `resume-policy`: native only on evidence.
pub fn copilot(
    session_id: &str,
    transport: Transport,
    policy: &ResumeAssessment,
    stream: Option<&StreamSize>,
) -> ResumeShim {
    let native = match (policy.policy, stream) {
        (Policy::Native, _) => Some(format!("native resume is safe: {}", policy.reason)),
        (Policy::LegacyCeiling, Some(s)) if !s.over_ceiling => Some(format!(
            "legacy ceiling ({}); the session's events.jsonl ({} bytes) is within it",
            policy.reason, s.bytes
        )),
        _ => None,
    };
    match (native, transport) {
        (Some(reason), Transport::Cli) => ResumeShim::cli(
            "copilot",
            vec!["--resume".into(), session_id.into()],
            true,
            reason,
        ),
        (Some(reason), Transport::Sdk) => ResumeShim::sdk("resumeSession", session_id, reason),
        (None, _) => {
            let why = match stream {
                Some(s) => format!(
                    "legacy ceiling ({}); the session's events.jsonl ({} characters at most) exceeds it",
                    policy.reason, s.chars
                ),
                None => format!(
                    "legacy ceiling ({}); the session's events.jsonl was not found, so its size is unknown",
                    policy.reason
                ),
            };
            ResumeShim::cli(
                "harnery",
                vec!["recover".into(), session_id.into()],
                false,
                format!("{why}: start a new Copilot session and give it the recovery packet"),
            )
        }
    }
}

/// The shim for a session of `adapter` (Copilot needs its policy).
pub fn for_adapter(
    adapter: AdapterId,
    session_id: &str,
    transport: Transport,
    copilot_policy: impl FnOnce() -> (ResumeAssessment, Option<StreamSize>),
) -> ResumeShim {
    match adapter {
        AdapterId::ClaudeCode => claude_code(session_id),
        AdapterId::Copilot => {
            let (policy, stream) = copilot_policy();
            copilot(session_id, transport, &policy, stream.as_ref())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_resumes_by_its_own_flag() {
        let shim = claude_code("8d31d374-43c7");
        assert_eq!(shim.program.as_deref(), Some("claude"));
        assert_eq!(shim.arguments, ["--resume", "8d31d374-43c7"]);
        assert_eq!(shim.text, "claude --resume 8d31d374-43c7");
        assert!(shim.native);
    }

    #[test]
    fn odd_words_are_quoted_and_sdk_calls_rendered() {
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        let shim = ResumeShim::sdk("resumeSession", "a\"b", "r".into());
        assert_eq!(shim.text, r#"client.resumeSession("a\"b")"#);
    }
}
