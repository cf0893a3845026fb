//! Which Copilot would run a resume: the version and dist dir given as
//! flags first, then the environment variables a hook sees
//! (`COPILOT_CLI_BINARY_VERSION`, `COPILOT_CLI_RESOLVED_DIST_DIR`), then
//! what harnery's own hooks recorded (`recorded`, the session's own
//! records first). Each value says where it came from.

use std::path::PathBuf;

use super::recorded;
use crate::agents::copilot::package::{RunningCopilotHint, SearchPlan};
use crate::home::Home;

/// What the user said about the Copilot that runs (`--copilot-version`,
/// `--copilot-dist-dir`, `--copilot-package`).
#[derive(Debug, Clone, Default)]
pub struct CopilotFlags {
    pub version: Option<String>,
    pub dist_dir: Option<PathBuf>,
    pub packages: Vec<PathBuf>,
}

impl CopilotFlags {
    /// Where installed packages are looked for: the flags' folders, then
    /// the places the environment names.
    pub(crate) fn search_plan(&self) -> SearchPlan {
        SearchPlan::from_env(self.packages.clone())
    }
}

/// Flags first, then the hook environment variables, then what harnery's
/// hooks recorded (the session's own records first).
pub fn running_copilot(flags: &CopilotFlags, session_id: Option<&str>) -> RunningCopilotHint {
    let mut hint = RunningCopilotHint::default();
    let env = |name| std::env::var(name).ok().filter(|v| !v.is_empty());
    if let Some(v) = &flags.version {
        hint.binary_version = Some(v.clone());
        hint.source.push("flag:--copilot-version".into());
    } else if let Some(v) = env("COPILOT_CLI_BINARY_VERSION") {
        hint.binary_version = Some(v);
        hint.source.push("env:COPILOT_CLI_BINARY_VERSION".into());
    }
    if let Some(d) = &flags.dist_dir {
        hint.resolved_dist_dir = Some(d.clone());
        hint.source.push("flag:--copilot-dist-dir".into());
    } else if let Some(d) = env("COPILOT_CLI_RESOLVED_DIST_DIR") {
        hint.resolved_dist_dir = Some(PathBuf::from(d));
        hint.source.push("env:COPILOT_CLI_RESOLVED_DIST_DIR".into());
    }
    let complete = hint.binary_version.is_some() && hint.resolved_dist_dir.is_some();
    if let (false, Ok(home)) = (complete, Home::from_env()) {
        merge_recorded(&mut hint, recorded::hint_from_harnery(&home, session_id));
    }
    hint
}

/// Fill what the flags and environment left open from what was recorded,
/// each value with its own source.
fn merge_recorded(hint: &mut RunningCopilotHint, recorded: RunningCopilotHint) {
    let mut sources = recorded.source.into_iter();
    let version_source = recorded
        .binary_version
        .as_ref()
        .and_then(|_| sources.next());
    let dist_source = recorded
        .resolved_dist_dir
        .as_ref()
        .and_then(|_| sources.next());
    if hint.binary_version.is_none() && recorded.binary_version.is_some() {
        hint.binary_version = recorded.binary_version;
        hint.source.extend(version_source);
    }
    if hint.resolved_dist_dir.is_none() && recorded.resolved_dist_dir.is_some() {
        hint.resolved_dist_dir = recorded.resolved_dist_dir;
        hint.source.extend(dist_source);
    }
}
