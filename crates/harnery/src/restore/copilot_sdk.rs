//! The Copilot SDK transport of a resume (`restore --transport sdk`): the
//! `resumeSession` call made runnable as `node` running harnery's script
//! (`copilot_sdk.mjs`, compiled in), which resumes the session through
//! `@github/copilot-sdk`, sends one prompt, waits for the turn to end
//! (`session.idle`) and prints the reply.
//!
//! Everything that varies (the session id, the prompt, the model, where
//! the SDK is) travels as one JSON argument after the script: nothing of
//! a session or of a user is ever written into the script's source. The
//! words after `restore … --` are read as the Copilot CLI reads them
//! (`-p/--prompt TEXT`, `--model NAME`, `--allow-all-tools`); any other
//! word is refused, never passed on blindly.
//!
//! This module builds the command; it runs nothing.

use serde::Serialize;

/// The script, as `node --input-type=module -e` runs it.
pub(crate) const SCRIPT: &str = include_str!("copilot_sdk.mjs");

/// The program that runs the script.
pub(crate) const PROGRAM: &str = "node";

/// The variable naming the directory that holds
/// `node_modules/@github/copilot-sdk` (what `--sdk` says).
pub(crate) const SDK_DIR_VAR: &str = "HARNERY_COPILOT_SDK";

/// What the script is asked to do: its one argument, as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SdkRequest {
    /// The Copilot session to resume.
    pub session_id: String,
    /// The prompt for the resumed session (absent: standard input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The model (absent: `COPILOT_MODEL`, else the runtime's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Approve every permission request (`--allow-all-tools`); without
    /// it each is answered "no user available", as `copilot -p` does.
    pub allow_all_tools: bool,
    /// The directory holding `node_modules/@github/copilot-sdk` (absent:
    /// node's resolution from the working directory, then the global npm
    /// root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sdk_dir: Option<String>,
    /// Only find the SDK and say where it is (what `--exec` checks before
    /// `--apply` writes anything).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub check: bool,
    /// Give the turn up after this many seconds: it is aborted, and the
    /// script exits 1 (absent: no limit; `--sdk-timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// Words after `--` the SDK resume cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SdkWordsError {
    #[error(
        "--transport sdk takes -p/--prompt TEXT, --model NAME and --allow-all-tools after `--`, \
         not {0:?}"
    )]
    Unknown(String),
    #[error("--transport sdk: {0} after `--` needs a value")]
    NoValue(String),
    #[error("--transport sdk: {0} is given twice after `--`")]
    Twice(String),
}

impl SdkRequest {
    /// Resume `session_id`; nothing else said yet.
    pub(crate) fn new(session_id: &str) -> SdkRequest {
        SdkRequest {
            session_id: session_id.into(),
            prompt: None,
            model: None,
            allow_all_tools: false,
            sdk_dir: None,
            check: false,
            timeout_secs: None,
        }
    }

    /// The words after `restore … --`, read as the Copilot CLI reads them.
    pub(crate) fn with_words(mut self, words: &[String]) -> Result<SdkRequest, SdkWordsError> {
        let mut rest = words.iter();
        while let Some(word) = rest.next() {
            let (name, inline) = match word.split_once('=') {
                Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
                _ => (word.as_str(), None),
            };
            let slot = match name {
                "-p" | "--prompt" => &mut self.prompt,
                "--model" => &mut self.model,
                "--allow-all-tools" if inline.is_none() => {
                    self.allow_all_tools = true;
                    continue;
                }
                _ => return Err(SdkWordsError::Unknown(word.clone())),
            };
            if slot.is_some() {
                return Err(SdkWordsError::Twice(name.into()));
            }
            let value = inline.or_else(|| rest.next().cloned());
            *slot = Some(value.ok_or_else(|| SdkWordsError::NoValue(name.into()))?);
        }
        Ok(self)
    }

    /// The same request, the SDK looked for in `dir` only.
    pub(crate) fn in_sdk_dir(mut self, dir: Option<String>) -> SdkRequest {
        self.sdk_dir = dir;
        self
    }

    /// The same request, its turn given up after `secs` seconds.
    pub(crate) fn within(mut self, secs: Option<u64>) -> SdkRequest {
        self.timeout_secs = secs;
        self
    }

    /// The same request, asking only where the SDK is.
    pub(crate) fn check_only(mut self) -> SdkRequest {
        self.check = true;
        self
    }

    /// `node`'s arguments: the script, then the request as one JSON word.
    pub(crate) fn arguments(&self) -> Vec<String> {
        let json = serde_json::to_string(self).expect("a request of strings and flags is JSON");
        vec![
            "--input-type=module".into(),
            "-e".into(),
            SCRIPT.into(),
            "--".into(),
            json,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_the_words_the_cli_takes() {
        let r = SdkRequest::new("s1")
            .with_words(&words(&[
                "-p",
                "go on; $(rm -rf /) 'x'",
                "--model=m1",
                "--allow-all-tools",
            ]))
            .unwrap();
        assert_eq!(r.prompt.as_deref(), Some("go on; $(rm -rf /) 'x'"));
        assert_eq!(r.model.as_deref(), Some("m1"));
        assert!(r.allow_all_tools);
        let prompt_eq = SdkRequest::new("s1")
            .with_words(&words(&["--prompt=a=b"]))
            .unwrap();
        assert_eq!(prompt_eq.prompt.as_deref(), Some("a=b"));
    }

    #[test]
    fn refuses_what_it_cannot_pass_on() {
        let bad = |w: &[&str]| SdkRequest::new("s").with_words(&words(w)).unwrap_err();
        assert_eq!(
            bad(&["--no-auto-update"]),
            SdkWordsError::Unknown("--no-auto-update".into())
        );
        assert_eq!(bad(&["go on"]), SdkWordsError::Unknown("go on".into()));
        assert_eq!(bad(&["-p"]), SdkWordsError::NoValue("-p".into()));
        assert_eq!(
            bad(&["-p", "a", "-p", "b"]),
            SdkWordsError::Twice("-p".into())
        );
        assert_eq!(
            bad(&["--allow-all-tools=no"]),
            SdkWordsError::Unknown("--allow-all-tools=no".into())
        );
    }

    #[test]
    fn the_request_is_one_json_word_after_the_script() {
        let r = SdkRequest::new("id\"'`")
            .with_words(&words(&["-p", "${process.exit(9)}"]))
            .unwrap()
            .in_sdk_dir(Some("/opt/sdk".into()));
        let args = r.arguments();
        assert_eq!(args[..2], ["--input-type=module", "-e"]);
        assert_eq!(args[2], SCRIPT);
        assert_eq!(args[3], "--");
        assert_eq!(
            args[4],
            r#"{"session_id":"id\"'`","prompt":"${process.exit(9)}","allow_all_tools":false,"sdk_dir":"/opt/sdk"}"#
        );
        let check = SdkRequest::new("s").check_only().arguments();
        assert_eq!(
            check[4],
            r#"{"session_id":"s","allow_all_tools":false,"check":true}"#
        );
    }
}
