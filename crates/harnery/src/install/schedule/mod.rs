//! The periodic `harnery finalize` that `harnery install` sets up, so that
//! what the hooks spool reaches the ledger without anyone editing a
//! crontab: a systemd user timer where a user systemd runs, else one line
//! in the user's crontab, else the line to add by hand.
//!
//! What runs is [`Job`]: the absolute path of the running `harnery` and
//! the home it finalizes (`HARNERY_HOME`, set explicitly so the schedule
//! does not depend on the environment it starts in), once a minute. Each
//! home has its own schedule, named for it (see [`Job::stem`]), so two
//! homes never replace each other's.
//!
//! A user systemd counts as running when `systemctl --user
//! is-system-running` answers `running`, `degraded`, `starting` or
//! `initializing`: the manager itself says it is there and answers on its
//! bus, which is what `daemon-reload` and `enable` need. (A leftover
//! `$XDG_RUNTIME_DIR/systemd/private` socket, or `systemctl` installed in
//! a container without a manager, does not.) Otherwise `crontab` found on
//! `PATH` means cron.
//!
//! Installing twice changes nothing; installing with a new binary path
//! replaces the old schedule of the same home; installing a timer removes
//! a crontab line of the same home (one schedule per home). Removing takes
//! away only harnery's own units and line: every other crontab line is
//! written back byte for byte.
//!
//! This module never reads the ledger; it writes files and runs
//! `systemctl --user` and `crontab`, nothing else.

pub mod cron;
mod program;
pub mod systemd;

use std::path::{Path, PathBuf};

pub use program::ProgramError;

/// Why the schedule could not be set up or removed.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error(transparent)]
    Program(#[from] ProgramError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot schedule {what} {path:?}: it holds a line break or a control character")]
    Unquotable { what: &'static str, path: PathBuf },
}

/// What the schedule runs: `harnery finalize` over one home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The absolute path of the `harnery` binary to run.
    pub harnery: PathBuf,
    /// The home it finalizes, given to it as `HARNERY_HOME`.
    pub home: PathBuf,
    /// Whether `home` is the default one (`~/.harnery`).
    pub default_home: bool,
}

impl Job {
    /// The job for `home`, run by `harnery`; `user_home` decides whether
    /// the home is the default one.
    pub fn new(harnery: PathBuf, home: &Path, user_home: &Path) -> Job {
        Job {
            harnery,
            home: home.to_path_buf(),
            default_home: home == user_home.join(".harnery"),
        }
    }

    /// The job run by this very `harnery` (see [`running_harnery`]).
    pub fn current(home: &Path, user_home: &Path) -> std::io::Result<Job> {
        Ok(Job::new(running_harnery()?, home, user_home))
    }

    /// The schedule's name: `harnery-finalize` for the default home, else
    /// `harnery-finalize-<8 hex digits of the home path's BLAKE3>`, so each
    /// home's units and crontab line are its own.
    pub fn stem(&self) -> String {
        if self.default_home {
            return "harnery-finalize".into();
        }
        let digest = blake3::hash(self.home.as_os_str().as_encoded_bytes());
        format!("harnery-finalize-{}", &digest.to_hex()[..8])
    }

    fn checked(&self) -> Result<(), ScheduleError> {
        for (what, path) in [
            ("the harnery binary", &self.harnery),
            ("the home", &self.home),
        ] {
            let text = path.to_string_lossy();
            if text.chars().any(char::is_control) {
                return Err(ScheduleError::Unquotable {
                    what,
                    path: path.clone(),
                });
            }
        }
        Ok(())
    }
}

/// The running `harnery` as it was started: its `argv[0]` made absolute
/// (or found on `PATH`) when that is the running executable, so that a
/// symlinked install (`~/.local/bin/harnery` pointing into a versioned
/// directory) stays scheduled through the link after an upgrade; else the
/// executable's own resolved path.
fn running_harnery() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let named = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|arg| match arg.components().count() > 1 {
            true => std::path::absolute(&arg).ok(),
            false => program::on_path(arg.to_str()?),
        });
    let same = |p: &Path| std::fs::canonicalize(p).ok() == std::fs::canonicalize(&exe).ok();
    Ok(named.filter(|p| same(p)).unwrap_or(exe))
}

/// Which scheduler this machine offers the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheduler {
    /// A running user systemd, reading units from this directory.
    Systemd(PathBuf),
    /// `crontab` on `PATH`.
    Cron,
    /// Neither: the line is added by hand.
    Neither,
}

impl Scheduler {
    /// Ask the machine: a user systemd that answers (see the module doc),
    /// else `crontab` on `PATH`. `user_home` places the unit directory
    /// when `XDG_CONFIG_HOME` is unset.
    pub fn detect(user_home: &Path) -> Scheduler {
        if systemd::user_manager_runs() {
            return Scheduler::Systemd(systemd::unit_dir(user_home));
        }
        if program::on_path(cron::CRONTAB).is_some() {
            return Scheduler::Cron;
        }
        Scheduler::Neither
    }
}

/// A planned change to the schedule, shown by `--dry-run` or applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchedulePlan {
    /// Write (or remove) the timer's units, then tell systemd.
    Systemd(systemd::UnitsPlan),
    /// Write back the crontab.
    Cron(cron::CrontabPlan),
    /// No scheduler: the line a person adds to a crontab by hand.
    ByHand { line: String },
}

impl SchedulePlan {
    /// Whether applying it would change anything.
    pub fn changes(&self) -> bool {
        match self {
            SchedulePlan::Systemd(p) => p.changes(),
            SchedulePlan::Cron(p) => p.changes(),
            SchedulePlan::ByHand { .. } => false,
        }
    }
}

/// Plan putting `job` on `scheduler`.
pub fn plan_install(job: &Job, scheduler: &Scheduler) -> Result<SchedulePlan, ScheduleError> {
    job.checked()?;
    Ok(match scheduler {
        Scheduler::Systemd(dir) => SchedulePlan::Systemd(systemd::plan_install(job, dir)?),
        Scheduler::Cron => SchedulePlan::Cron(cron::plan_install(job)?),
        Scheduler::Neither => SchedulePlan::ByHand {
            line: cron::line(job),
        },
    })
}

/// Plan removing `job`'s schedule from wherever it is: the timer's units
/// in `unit_dir` and the crontab line, each when present.
pub fn plan_uninstall(job: &Job, unit_dir: &Path) -> Result<Vec<SchedulePlan>, ScheduleError> {
    let mut plans = vec![SchedulePlan::Systemd(systemd::plan_uninstall(
        job, unit_dir,
    )?)];
    if program::on_path(cron::CRONTAB).is_some() {
        plans.push(SchedulePlan::Cron(cron::plan_uninstall(job)?));
    }
    Ok(plans)
}

/// Apply a plan; returns whether anything changed.
pub fn apply(plan: &SchedulePlan) -> Result<bool, ScheduleError> {
    match plan {
        SchedulePlan::Systemd(p) => systemd::apply(p),
        SchedulePlan::Cron(p) => cron::apply(p),
        SchedulePlan::ByHand { .. } => Ok(false),
    }
}

/// Which schedule of `job`'s home is installed, as far as a cheap look
/// tells: the timer's unit file, else harnery's crontab line (one
/// `crontab -l` when `crontab` is on `PATH`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// The timer unit at this path.
    Systemd(PathBuf),
    Cron,
    None,
}

impl Installed {
    /// `systemd`, `cron` or `none`: the JSON word.
    pub fn kind(&self) -> &'static str {
        match self {
            Installed::Systemd(_) => "systemd",
            Installed::Cron => "cron",
            Installed::None => "none",
        }
    }
}

/// Look for the schedule of `home` (see [`Installed`]); which binary it
/// runs does not matter here.
pub fn installed(home: &Path, user_home: &Path) -> Installed {
    let job = Job::new(PathBuf::new(), home, user_home);
    let job = &job;
    let timer = systemd::unit_dir(user_home).join(format!("{}.timer", job.stem()));
    if timer.is_file() {
        return Installed::Systemd(timer);
    }
    if program::on_path(cron::CRONTAB).is_some()
        && let Ok(Some(text)) = cron::read()
        && cron::holds_line_of(&text, job)
    {
        return Installed::Cron;
    }
    Installed::None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_home_has_the_plain_name_and_others_a_pinned_digest() {
        let user = Path::new("/home/u");
        let bin = PathBuf::from("/usr/local/bin/harnery");
        assert_eq!(
            Job::new(bin.clone(), Path::new("/home/u/.harnery"), user).stem(),
            "harnery-finalize"
        );
        let other = Job::new(bin, Path::new("/srv/harnery home"), user);
        assert!(!other.default_home);
        // BLAKE3("/srv/harnery home"), first 8 hex digits: a unit's name
        // must not move between versions, or a reinstall would add a
        // second timer beside the first.
        assert_eq!(other.stem(), "harnery-finalize-680d6a35");
    }

    #[test]
    fn a_path_with_a_line_break_is_refused_by_name() {
        let job = Job::new(
            PathBuf::from("/bin/harnery"),
            Path::new("/tmp/a\nb"),
            Path::new("/home/u"),
        );
        let err = plan_install(&job, &Scheduler::Neither).unwrap_err();
        assert!(err.to_string().contains("the home"), "{err}");
    }
}
