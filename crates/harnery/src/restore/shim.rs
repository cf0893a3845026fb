//! Resume shims: how each agent resumes a session natively, as structured
//! data (`transport` `cli` or `sdk`, the program and its arguments, or the
//! SDK call) with the command text rendered from it.
//!
//! - Claude Code: `claude --resume <id>`, or, exactly at a checkpoint,
//!   `claude -p --resume <id> --resume-session-at <row> [--fork-session]`
//!   (`claude_at`; print mode only, see `exact`).
//! - Copilot CLI: `copilot --resume <id>` only on evidence that native
//!   resume is safe (`harnery resume-policy`: the running version's
//!   changelog, or a stream within the legacy ceiling); otherwise the
//!   recovery packet (`harnery recover <id>`) for a fresh session.
//! - The Copilot SDK: `resumeSession(<id>)`, under the same policy, made
//!   runnable as `node` running harnery's script (`copilot_sdk`), the
//!   prompt and the rest passed to it as one JSON word.
//! - Whatever the agent: when its own record of the session is gone, the
//!   native resume cannot work, so the shim is `harnery restore <id>
//!   --checkpoint <cp> [flags] --apply [-- words]`, which puts the record
//!   back from harnery's raw archive as a new session first
//!   (`materialize`). It carries the restore's flags that decide the
//!   resume (`carrying`) and the words for the agent after `--`, and runs
//!   where it was printed (no `cd`). A shim never names a command that
//!   cannot work: where nothing can, it names none (`unavailable`,
//!   `runnable: false`) and says why.
//!
//! A shim may name the directory to run in (`cwd`): Claude Code finds a
//! session only from the directory it was started in; the SDK resume runs
//! there too.

use serde::Serialize;

use crate::agents::adapter::Resume;
use crate::contract::AdapterId;
use crate::recover::policy::{Policy, ResumeAssessment, StreamSize};
use crate::restore::copilot_sdk::{self, SdkRequest, SdkWordsError};

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
    /// The directory to run the command in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The SDK call as a command (sdk): `node` running harnery's script
    /// on the request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runner: Option<SdkRunner>,
    /// The command, rendered from the fields above (empty when there is
    /// none: see `runnable`).
    pub text: String,
    /// Whether the shim names a command at all: false when nothing can
    /// resume the session at the checkpoint (`reason` says why).
    pub runnable: bool,
    /// How to resume interactively, where the command above cannot (a
    /// print-mode resume): the command that can.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interactive: Option<String>,
    /// What the command is, for where the words after `restore … --` go.
    #[serde(skip)]
    shape: Shape,
}

/// What a shim runs, which decides where the words for the agent go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The agent (or the SDK runner): the words follow its arguments.
    Agent,
    /// `harnery restore … --apply`: restore's own flags before `--apply`,
    /// the words after `--`, which restore hands on to the agent.
    PutBack,
    /// `harnery recover`: a packet for a new session the user starts; it
    /// takes no words for the agent.
    Packet,
    /// No command: nothing can resume the session at the checkpoint.
    Nothing,
}

/// How an SDK shim runs: `program arguments…` in the shim's `cwd`, the
/// arguments the script and `request` as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SdkRunner {
    pub program: String,
    pub arguments: Vec<String>,
    pub request: SdkRequest,
}

impl SdkRunner {
    fn new(request: SdkRequest) -> SdkRunner {
        SdkRunner {
            program: copilot_sdk::PROGRAM.into(),
            arguments: request.arguments(),
            request,
        }
    }
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
            cwd: None,
            runner: None,
            text: String::new(),
            runnable: true,
            interactive: None,
            shape: Shape::Agent,
        };
        shim.text = shim.render();
        shim
    }

    fn shaped(mut self, shape: Shape) -> ResumeShim {
        self.shape = shape;
        self
    }

    /// The same shim, run in `cwd`. A put-back runs where it was printed:
    /// `restore` finds the session from any directory, and a relative path
    /// it carries stays right.
    pub(crate) fn in_dir(mut self, cwd: Option<String>) -> ResumeShim {
        if !matches!(self.shape, Shape::PutBack | Shape::Nothing) {
            self.cwd = cwd;
            self.text = self.render();
        }
        self
    }

    /// The same put-back carrying `flags` of the restore that printed it
    /// (`--transport sdk`, `--sdk DIR`, …), just before its `--apply`, so
    /// that it resumes as that restore would. Other shims are unchanged.
    pub(crate) fn carrying(mut self, flags: &[String]) -> ResumeShim {
        if self.shape == Shape::PutBack {
            let apply = self.arguments.len() - 1;
            debug_assert_eq!(self.arguments[apply], "--apply", "carried before the words");
            self.arguments.splice(apply..apply, flags.iter().cloned());
            self.text = self.render();
        }
        self
    }

    /// The same shim with the words after `restore … --`: after a
    /// command's arguments, or read into the SDK request (`sdk_dir`: where
    /// the SDK is, when given).
    pub(crate) fn with_words(
        mut self,
        words: &[String],
        sdk_dir: Option<String>,
    ) -> Result<ResumeShim, SdkWordsError> {
        if self.shape != Shape::Agent {
            return Ok(self.handing_on(words));
        }
        let Some(runner) = &self.runner else {
            return Ok(self.with_extra(words));
        };
        let request = runner.request.clone().with_words(words)?;
        self.runner = Some(SdkRunner::new(request.in_sdk_dir(sdk_dir)));
        self.text = self.render();
        Ok(self)
    }

    /// The same shim, an SDK resume's turn given up after `secs` seconds
    /// (`--sdk-timeout`); a shim that runs no SDK resume is unchanged.
    pub(crate) fn within(mut self, secs: Option<u64>) -> ResumeShim {
        if let Some(runner) = &self.runner {
            self.runner = Some(SdkRunner::new(runner.request.clone().within(secs)));
            self.text = self.render();
        }
        self
    }

    /// The words for the agent on a `harnery` shim: after `--` on a
    /// put-back (restore hands on only what follows `--`); none on
    /// `recover`, whose packet goes to a new session the user starts.
    fn handing_on(mut self, words: &[String]) -> ResumeShim {
        if words.is_empty() || self.shape == Shape::Nothing {
            return self;
        }
        if self.shape == Shape::PutBack {
            let after: Vec<String> = std::iter::once("--".to_string())
                .chain(words.iter().cloned())
                .collect();
            return self.with_extra(&after);
        }
        self.reason
            .push_str("; give that session the words after `--` yourself");
        self
    }

    /// The same shim with `extra` words after its arguments (a prompt for
    /// the agent, say). A print-mode resume that is given `-p` again keeps
    /// one.
    pub(crate) fn with_extra(mut self, extra: &[String]) -> ResumeShim {
        if self.shape == Shape::Nothing {
            return self;
        }
        let print = |w: &String| w == "-p" || w == "--print";
        if self.arguments.first().is_some_and(print) && extra.iter().any(print) {
            self.arguments.remove(0);
        }
        self.arguments.extend(extra.iter().cloned());
        self.text = self.render();
        self
    }

    fn sdk(call: &str, id: &str, reason: String) -> ResumeShim {
        let mut shim = ResumeShim {
            transport: Transport::Sdk,
            program: None,
            arguments: vec![id.into()],
            call: Some(call.into()),
            native: true,
            reason,
            cwd: None,
            runner: Some(SdkRunner::new(SdkRequest::new(id))),
            text: String::new(),
            runnable: true,
            interactive: None,
            shape: Shape::Agent,
        };
        shim.text = shim.render();
        shim
    }

    /// The command text, shell-quoted: the program and its arguments
    /// (for the SDK, `node`, the script and the request), after `cd DIR`;
    /// empty when there is no command.
    pub(crate) fn render(&self) -> String {
        if self.shape == Shape::Nothing {
            return String::new();
        }
        let (program, arguments) = match &self.runner {
            Some(r) => (r.program.as_str(), &r.arguments),
            None => (self.program.as_deref().unwrap_or(""), &self.arguments),
        };
        let mut words = vec![shell_word(program)];
        words.extend(arguments.iter().map(|a| shell_word(a)));
        match &self.cwd {
            Some(dir) => format!("cd {} && {}", shell_word(dir), words.join(" ")),
            None => words.join(" "),
        }
    }

    /// The command text with the SDK script named rather than written
    /// out (what `restore --exec` shows before it runs the command).
    pub fn brief(&self) -> String {
        match &self.runner {
            Some(_) => self.text.replace(
                &shell_word(copilot_sdk::SCRIPT),
                "<the SDK resume script: `restore` without --exec prints it>",
            ),
            None => self.text.clone(),
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

/// `--name value` as the words a command line takes back unchanged: one
/// word `--name=value` where the value starts with `-`, which would
/// otherwise be read as a flag of its own.
pub(crate) fn option(name: &str, value: &str) -> Vec<String> {
    if value.starts_with('-') {
        vec![format!("{name}={value}")]
    } else {
        vec![name.to_string(), value.to_string()]
    }
}

/// Claude Code resumes from its own transcript.
pub(crate) fn claude_code(session_id: &str) -> ResumeShim {
    ResumeShim::cli(
        "claude",
        vec!["--resume".into(), session_id.into()],
        true,
        "Claude Code resumes the session from its own transcript".into(),
    )
}

/// Claude Code resumes its own transcript exactly at `row` (the last
/// `assistant` row a checkpoint keeps; see `exact`), in print mode, where
/// the client honours `--resume-session-at`: `-p` is part of the command,
/// the prompt given after it or on standard input. With `fork`, as a new
/// session of the agent's (the original untouched); without, in place,
/// the new turn a branch of the same session (`restore --record`).
/// `interactive` is the command for an interactive resume, when there is
/// one (`restore … --apply`).
pub(crate) fn claude_at(
    session_id: &str,
    row: &str,
    fork: bool,
    interactive: Option<String>,
) -> ResumeShim {
    let mut arguments: Vec<String> = ["-p", "--resume", session_id, "--resume-session-at", row]
        .map(String::from)
        .to_vec();
    let how = if fork {
        arguments.push("--fork-session".into());
        "as a new session of its own"
    } else {
        "in place, the new turn a branch of the session"
    };
    let mut shim = ResumeShim::cli(
        "claude",
        arguments,
        true,
        format!(
            "Claude Code resumes its own transcript at the checkpoint's last row ({row}), {how}; \
             it honours --resume-session-at in print mode only (-p: the prompt after it or on \
             stdin), so nothing past the checkpoint reaches the model (interactively the whole \
             session would)"
        ),
    );
    shim.interactive = interactive;
    shim
}

/// No command can resume the session at the checkpoint: `why` says what
/// cannot be done. The shim names no program and renders no text.
pub(crate) fn unavailable(why: String) -> ResumeShim {
    let mut shim = ResumeShim::cli("", Vec::new(), false, why).shaped(Shape::Nothing);
    shim.program = None;
    shim.runnable = false;
    shim.text = String::new();
    shim
}

/// Copilot, under `resume-policy`: native only on evidence (`checkpoint`
/// is the one a put-back shim names).
pub(crate) fn copilot(
    session_id: &str,
    checkpoint: Option<&str>,
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
        (None, _) => match stream {
            Some(s) => ResumeShim::cli(
                "harnery",
                vec!["recover".into(), session_id.into()],
                false,
                format!(
                    "legacy ceiling ({}); the session's events.jsonl ({} characters at most) \
                     exceeds it: start a new Copilot session and give it the recovery packet",
                    policy.reason, s.chars
                ),
            )
            .shaped(Shape::Packet),
            // `recover` reads the events.jsonl, which is not there.
            None => put_back_first(
                session_id,
                checkpoint,
                format!(
                    "legacy ceiling ({}); the session's events.jsonl was not found",
                    policy.reason
                ),
            ),
        },
    }
}

/// The agent's own record of the session is gone: put it back from the
/// raw archive as a new session (at `checkpoint`, else the latest) first.
pub(crate) fn put_back_first(
    session_id: &str,
    checkpoint: Option<&str>,
    why: String,
) -> ResumeShim {
    let mut arguments = vec!["restore".to_string(), session_id.to_string()];
    if let Some(cp) = checkpoint {
        arguments.extend(option("--checkpoint", cp));
    }
    arguments.push("--apply".into());
    ResumeShim::cli(
        "harnery",
        arguments,
        false,
        format!("{why}: put the record back from harnery's raw archive as a new session first"),
    )
    .shaped(Shape::PutBack)
}

/// The shim for a session of `adapter` (Copilot needs its policy).
pub(crate) fn for_adapter(
    adapter: AdapterId,
    session_id: &str,
    checkpoint: Option<&str>,
    transport: Transport,
    copilot_policy: impl FnOnce() -> (ResumeAssessment, Option<StreamSize>),
) -> ResumeShim {
    match adapter {
        AdapterId::ClaudeCode => claude_code(session_id),
        AdapterId::Copilot => {
            let (policy, stream) = copilot_policy();
            copilot(session_id, checkpoint, transport, &policy, stream.as_ref())
        }
        other => native(other, session_id),
    }
}

/// The agent's own resume of `session_id`, as its adapter states it: the
/// agent reads its own record, whole (harnery cannot cut it at a
/// checkpoint for this agent).
pub(crate) fn native(adapter: AdapterId, session_id: &str) -> ResumeShim {
    let agent = crate::agents::agent(adapter);
    let Resume { program, before_id } = agent.resume();
    let mut arguments: Vec<String> = before_id.iter().map(|a| a.to_string()).collect();
    arguments.push(session_id.into());
    ResumeShim::cli(
        program,
        arguments,
        true,
        format!(
            "{} resumes the session from its own record, whole: harnery cannot put its \
             record back at a checkpoint",
            agent.name()
        ),
    )
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
        let back = put_back_first("abc", Some("turn:1"), "gone".into());
        assert_eq!(back.text, "harnery restore abc --checkpoint turn:1 --apply");
        assert!(!back.native);
    }

    #[test]
    fn claude_resumes_at_a_row_in_print_mode_and_keeps_one_print_flag() {
        let fork = claude_at("x", "row-1", true, Some("harnery restore x --apply".into()));
        assert_eq!(
            fork.text,
            "claude -p --resume x --resume-session-at row-1 --fork-session"
        );
        assert_eq!(
            fork.interactive.as_deref(),
            Some("harnery restore x --apply")
        );
        let in_place = claude_at("x", "row-1", false, None);
        assert_eq!(
            in_place.text,
            "claude -p --resume x --resume-session-at row-1"
        );
        let words: Vec<String> = ["--print", "go on"].map(String::from).to_vec();
        let said = fork.with_words(&words, None).unwrap();
        assert_eq!(
            said.arguments,
            [
                "--resume",
                "x",
                "--resume-session-at",
                "row-1",
                "--fork-session",
                "--print",
                "go on"
            ]
        );
    }

    #[test]
    fn no_command_is_rendered_where_none_can_resume() {
        let none = unavailable("nothing left".into())
            .in_dir(Some("/w".into()))
            .carrying(&["--epoch".into(), "all".into()])
            .with_words(&["-p".into(), "go".into()], None)
            .unwrap();
        assert!(!none.runnable);
        assert_eq!(none.program, None);
        assert!(none.arguments.is_empty());
        assert_eq!(none.text, "");
        assert_eq!(none.cwd, None);
        assert_eq!(none.reason, "nothing left");
        let json = serde_json::to_value(&none).unwrap();
        assert_eq!(json["runnable"], false);
        assert!(json.get("program").is_none());
    }

    #[test]
    fn a_put_back_carries_restores_flags_and_hands_the_words_on_after_the_double_dash() {
        let words: Vec<String> = ["-p", "it's $(x)"].map(String::from).to_vec();
        let flags = [option("--transport", "sdk"), option("--sdk", "/my sdk")].concat();
        let back = put_back_first("a'b", Some("-cp"), "gone".into())
            .carrying(&flags)
            .in_dir(Some("/w".into()))
            .with_words(&words, Some("/elsewhere".into()))
            .unwrap();
        assert_eq!(
            back.arguments,
            [
                "restore",
                "a'b",
                "--checkpoint=-cp",
                "--transport",
                "sdk",
                "--sdk",
                "/my sdk",
                "--apply",
                "--",
                "-p",
                "it's $(x)"
            ]
        );
        assert_eq!(
            back.text,
            r"harnery restore 'a'\''b' --checkpoint=-cp --transport sdk --sdk '/my sdk' --apply -- -p 'it'\''s $(x)'"
        );
        assert_eq!(back.cwd, None, "it runs where it was printed");
        // Only a put-back carries restore's flags; recover takes no words.
        assert_eq!(claude_code("x").carrying(&flags), claude_code("x"));
        let packet = ResumeShim::cli(
            "harnery",
            vec!["recover".into(), "x".into()],
            false,
            "r".into(),
        )
        .shaped(Shape::Packet)
        .with_words(&words, None)
        .unwrap();
        assert_eq!(packet.text, "harnery recover x");
        assert!(packet.reason.ends_with("the words after `--` yourself"));
    }

    #[test]
    fn odd_words_are_quoted_and_sdk_calls_rendered() {
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        let shim = ResumeShim::sdk("resumeSession", "a'b", "r".into()).in_dir(Some("/w".into()));
        assert_eq!(shim.arguments, ["a'b"], "the call's arguments");
        let script = shell_word(copilot_sdk::SCRIPT);
        let request = r#"'{"session_id":"a'\''b","allow_all_tools":false}'"#;
        assert_eq!(
            shim.text,
            format!("cd /w && node --input-type=module -e {script} -- {request}")
        );
        let here = claude_code("x").in_dir(Some("/w/my dir".into()));
        assert_eq!(here.text, "cd '/w/my dir' && claude --resume x");
    }

    #[test]
    fn words_after_the_double_dash_follow_a_command_or_fill_the_sdk_request() {
        let words: Vec<String> = ["-p", "go on"].map(String::from).to_vec();
        let cli = claude_code("x").with_words(&words, None).unwrap();
        assert_eq!(cli.arguments, ["--resume", "x", "-p", "go on"]);
        let sdk = ResumeShim::sdk("resumeSession", "s", "r".into())
            .with_words(&words, Some("/opt/sdk".into()))
            .unwrap();
        assert_eq!(sdk.arguments, ["s"], "the call's arguments stay the id");
        let runner = sdk.runner.as_ref().unwrap();
        assert_eq!(runner.request.prompt.as_deref(), Some("go on"));
        assert_eq!(runner.request.sdk_dir.as_deref(), Some("/opt/sdk"));
        assert_eq!(runner.arguments, runner.request.arguments());
        assert!(sdk.text.ends_with(r#"-- '{"session_id":"s","prompt":"go on","allow_all_tools":false,"sdk_dir":"/opt/sdk"}'"#));
        assert!(!sdk.brief().contains("createRequire"), "{}", sdk.brief());
        assert!(sdk.text.contains("createRequire"));
        let refused =
            ResumeShim::sdk("resumeSession", "s", "r".into()).with_words(&["x".into()], None);
        assert_eq!(refused.unwrap_err(), SdkWordsError::Unknown("x".into()));
    }

    #[test]
    fn an_sdk_timeout_goes_into_the_request_and_nowhere_else() {
        let sdk = ResumeShim::sdk("resumeSession", "s", "r".into()).within(Some(5));
        let runner = sdk.runner.as_ref().unwrap();
        assert_eq!(runner.request.timeout_secs, Some(5));
        assert_eq!(runner.arguments, runner.request.arguments());
        assert!(
            sdk.text
                .ends_with(r#"-- '{"session_id":"s","allow_all_tools":false,"timeout_secs":5}'"#),
            "{}",
            sdk.text
        );
        let cli = claude_code("x").within(Some(5));
        assert_eq!(cli.text, claude_code("x").text);
    }
}
