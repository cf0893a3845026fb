//! Running a resume shim (`restore --exec`) in the session's directory,
//! and for `restore --transport sdk`: where the Copilot SDK is (`--sdk
//! DIR`, else `HARNERY_COPILOT_SDK`, else the script's own search), and,
//! before `--apply --exec` writes anything, that the resume can run at
//! all: `node` on PATH, the session's directory, the SDK found (the
//! script asked in its check mode, so the search is the one the run
//! makes).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::copilot_sdk::{PROGRAM, SDK_DIR_VAR, SdkRequest};
use super::error::PlanError;
use super::shim::ResumeShim;

/// The directory holding `node_modules/@github/copilot-sdk`: `--sdk`,
/// else `HARNERY_COPILOT_SDK`, made absolute (the script runs in the
/// session's directory, not this one); `None`: let the script search.
pub fn sdk_dir(flag: Option<&Path>) -> Result<Option<String>, PlanError> {
    let env = std::env::var_os(SDK_DIR_VAR).filter(|v| !v.is_empty());
    let Some(dir) = flag.map(PathBuf::from).or(env.map(PathBuf::from)) else {
        return Ok(None);
    };
    absolute("the SDK directory", &dir).map(Some)
}

/// `dir` made absolute as one word for a command line or a JSON request
/// (`what` names it when it cannot be).
pub fn absolute(what: &str, dir: &Path) -> Result<String, PlanError> {
    let abs = std::path::absolute(dir).map_err(|e| format!("{what} {}: {e}", dir.display()))?;
    let text = abs.to_str().ok_or_else(|| {
        format!(
            "{what} {} is not UTF-8: no command or request could name it",
            abs.display()
        )
    })?;
    Ok(text.to_string())
}

/// `node`, found on PATH as a shell finds it.
pub fn node() -> Result<PathBuf, PlanError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    crate::agents::copilot::package::executable_in(&dirs, PROGRAM).ok_or_else(|| {
        format!(
            "{PROGRAM} not found on PATH ({}): the Copilot SDK resume (--transport sdk) runs \
                 under Node.js; install it (@github/copilot-sdk asks for 20.19 or newer)",
            path.to_string_lossy()
        )
        .into()
    })
}

/// The directory a resume runs in: absolute and there.
pub fn run_dir(dir: &str) -> Result<PathBuf, PlanError> {
    let dir = PathBuf::from(dir);
    if !dir.is_absolute() || !dir.is_dir() {
        return Err(format!(
            "the session's directory {} is not a directory here; give one with --cwd",
            dir.display()
        )
        .into());
    }
    Ok(dir)
}

/// Before `--apply --exec`: `node` is there, the directory is, and the
/// script finds the SDK from it (else its own words, exit 2).
pub fn check(cwd: Option<&str>, request: &SdkRequest) -> Result<(), PlanError> {
    let mut cmd = Command::new(node()?);
    cmd.args(request.clone().check_only().arguments());
    if let Some(dir) = cwd {
        cmd.current_dir(run_dir(dir)?);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("could not run {PROGRAM}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said = said.trim().trim_start_matches("harnery: ");
    Err(format!("the Copilot SDK resume cannot run, so nothing was applied: {said}").into())
}

/// Run the shim: `program arguments…` (for the SDK, `node` with the
/// script and its request) in `cwd`, this process's exit status its own.
pub fn exec(shim: &ResumeShim) -> Result<i32, PlanError> {
    let (program, arguments) = match (&shim.runner, &shim.program) {
        (Some(runner), _) => (node()?, &runner.arguments),
        (None, Some(program)) => (PathBuf::from(program), &shim.arguments),
        (None, None) => {
            return Err(format!("the shim has no command to run ({})", shim.text).into());
        }
    };
    let mut cmd = std::process::Command::new(&program);
    cmd.args(arguments);
    if let Some(dir) = &shim.cwd {
        cmd.current_dir(run_dir(dir)?);
    }
    let status = cmd
        .status()
        .map_err(|e| format!("could not run {}: {e}", program.display()))?;
    use std::os::unix::process::ExitStatusExt;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}
