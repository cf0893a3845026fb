//! Running the schedulers' own commands (`systemctl --user …`,
//! `crontab …`): found on `PATH`, run with the arguments and input given,
//! their output captured, a failure named by the command line and what
//! the program said.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A scheduler command that could not run or did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error("`{command}` could not run: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {said}")]
    Failed {
        command: String,
        status: String,
        said: String,
    },
}

/// What a command printed, and whether it exited 0.
#[derive(Debug, Clone)]
pub(crate) struct Ran {
    pub success: bool,
    pub status: String,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// The first executable file called `name` in a `PATH` directory.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `program args…` as a person would type it, for messages.
pub(crate) fn command_line(program: &str, args: &[&str]) -> String {
    std::iter::once(program)
        .chain(args.iter().copied())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `program` (looked up on `PATH`) with `args`, feeding it `input`.
pub(crate) fn run(program: &str, args: &[&str], input: Option<&[u8]>) -> Result<Ran, ProgramError> {
    let command = command_line(program, args);
    let spawn = |source| ProgramError::Spawn {
        command: command.clone(),
        source,
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn)?;
    if let (Some(bytes), Some(mut stdin)) = (input, child.stdin.take()) {
        // A program that exits without reading its input says why on
        // stderr; its exit status is the error, not the broken pipe.
        let _ = stdin.write_all(bytes);
    }
    let out = child.wait_with_output().map_err(spawn)?;
    Ok(Ran {
        success: out.status.success(),
        status: out.status.to_string(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

/// Run it and require success.
pub(crate) fn run_ok(
    program: &str,
    args: &[&str],
    input: Option<&[u8]>,
) -> Result<Ran, ProgramError> {
    let ran = run(program, args, input)?;
    if ran.success {
        return Ok(ran);
    }
    Err(failed(program, args, &ran))
}

/// The error for a command that ran and failed.
pub(crate) fn failed(program: &str, args: &[&str], ran: &Ran) -> ProgramError {
    let said = match ran.stderr.is_empty() {
        true => "it printed nothing on stderr".to_string(),
        false => ran.stderr.clone(),
    };
    ProgramError::Failed {
        command: command_line(program, args),
        status: ran.status.clone(),
        said,
    }
}
