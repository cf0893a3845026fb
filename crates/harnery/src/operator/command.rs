//! `harnery exec`: run one command as a command span.
//!
//! Order is the guarantee. The request signal is appended and fdatasync'd
//! *before* the child is spawned, so a `harnery exec` killed at any later
//! point leaves a durable request that the producer's session-end closer
//! turns into `command_completion_not_observed`. The completion is appended
//! after the child is reaped; if that append fails, the child's status is
//! still returned and the failure is reported on stderr.
//!
//! While the child runs, SIGINT and SIGQUIT are ignored here (the terminal
//! delivers them to the child, which shares our process group) and SIGTERM
//! and SIGHUP are forwarded to the child, so an interrupted command still
//! gets its completion recorded. The exit status is the child's, unchanged:
//! its exit code, or 128 + the signal number that ended it, as a shell says.

use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Instant;

use super::{COMMAND_COMPLETED, COMMAND_REQUESTED, Target};
use crate::agents::harnery::{CommandCompletionPayload, CommandRequestPayload};
use crate::spool::SpoolError;

/// Exit status when the program cannot be found (as a shell reports it).
pub(crate) const NOT_FOUND: i32 = 127;
/// Exit status when the program was found but could not be run.
pub(crate) const NOT_EXECUTABLE: i32 = 126;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("no command given")]
    NoCommand,
    /// The command is not run when its request cannot be made durable.
    #[error("could not record the command request, so the command was not run: {0}")]
    RequestNotRecorded(#[source] SpoolError),
}

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChildEnd {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
}

impl ChildEnd {
    /// The status a shell would report: the code, or 128 + signal.
    pub(crate) fn shell_status(self) -> i32 {
        match (self.exit_code, self.signal) {
            (Some(code), _) => code,
            (None, Some(sig)) => 128 + sig,
            (None, None) => NOT_EXECUTABLE,
        }
    }

    fn from_status(status: ExitStatus) -> ChildEnd {
        use std::os::unix::process::ExitStatusExt;
        ChildEnd {
            exit_code: status.code(),
            signal: status.signal(),
        }
    }
}

/// Run `argv` as a recorded command span; return the shell-style status.
/// `now_ns` is the request's receive time (injectable for tests); the
/// completion is stamped `now_ns` + the measured run time.
pub fn run(target: &Target, argv: &[String], now_ns: i64) -> Result<i32, ExecError> {
    let program = argv.first().ok_or(ExecError::NoCommand)?;
    let command_id = uuid::Uuid::new_v4().to_string();
    let cwd = std::env::current_dir()
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let request = CommandRequestPayload {
        command_id: command_id.clone(),
        argv: argv.to_vec(),
        cwd,
        pid: None,
    };
    let receipt = target
        .append(COMMAND_REQUESTED, &request, now_ns)
        .map_err(ExecError::RequestNotRecorded)?;
    if let Some(warning) = super::dead_letter_warning(&receipt) {
        crate::terminal::warn(&format!("harnery exec: {warning}"));
    }
    let started = Instant::now();
    let end = spawn_and_wait(program, &argv[1..]);
    let elapsed = started.elapsed();
    let duration_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    let done_ns = now_ns.saturating_add(i64::try_from(elapsed.as_nanos()).unwrap_or(i64::MAX));
    let completion = CommandCompletionPayload {
        command_id,
        exit_code: end.exit_code.map(i64::from),
        signal: end.signal,
        duration_ms: Some(duration_ms),
    };
    if let Err(err) = target.append(COMMAND_COMPLETED, &completion, done_ns) {
        crate::terminal::warn(&format!(
            "harnery exec: the command ran but its completion was not recorded: {err}"
        ));
    }
    Ok(end.shell_status())
}

/// Spawn with inherited stdio and wait, forwarding termination signals.
fn spawn_and_wait(program: &str, args: &[String]) -> ChildEnd {
    let mut child = match Command::new(program).args(args).spawn() {
        Ok(child) => child,
        Err(err) => {
            crate::terminal::warn(&format!("harnery exec: {program}: {err}"));
            let code = match err.kind() {
                std::io::ErrorKind::NotFound => NOT_FOUND,
                _ => NOT_EXECUTABLE,
            };
            return ChildEnd {
                exit_code: Some(code),
                signal: None,
            };
        }
    };
    let pid = i32::try_from(child.id()).unwrap_or(0);
    let _guard = SignalRelay::install(pid);
    loop {
        match child.wait() {
            Ok(status) => return ChildEnd::from_status(status),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => {
                crate::terminal::warn(&format!("harnery exec: waiting for {program}: {err}"));
                return ChildEnd {
                    exit_code: None,
                    signal: None,
                };
            }
        }
    }
}

/// The child that SIGTERM and SIGHUP are forwarded to (0: none).
static CHILD_PID: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    let pid = CHILD_PID.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe; pid is our own child.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Signal dispositions while a child runs; restored on drop.
struct SignalRelay {
    saved: Vec<(libc::c_int, libc::sighandler_t)>,
}

impl SignalRelay {
    fn install(pid: i32) -> SignalRelay {
        CHILD_PID.store(pid, Ordering::SeqCst);
        let relay = forward as extern "C" fn(libc::c_int) as libc::sighandler_t;
        let plan = [
            (libc::SIGINT, libc::SIG_IGN),
            (libc::SIGQUIT, libc::SIG_IGN),
            (libc::SIGTERM, relay),
            (libc::SIGHUP, relay),
        ];
        // SAFETY: installing a handler that only calls kill(2), or SIG_IGN.
        let saved = plan
            .iter()
            .map(|&(sig, handler)| (sig, unsafe { libc::signal(sig, handler) }))
            .collect();
        SignalRelay { saved }
    }
}

impl Drop for SignalRelay {
    fn drop(&mut self) {
        for &(sig, handler) in &self.saved {
            // SAFETY: restoring the disposition saved by `install`.
            unsafe {
                libc::signal(sig, handler);
            }
        }
        CHILD_PID.store(0, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_status_matches_a_shell() {
        let code = |c| ChildEnd {
            exit_code: Some(c),
            signal: None,
        };
        assert_eq!(code(0).shell_status(), 0);
        assert_eq!(code(3).shell_status(), 3);
        let killed = ChildEnd {
            exit_code: None,
            signal: Some(9),
        };
        assert_eq!(killed.shell_status(), 137);
    }
}
