//! The systemd user timer: `<stem>.service` (one `harnery finalize`) and
//! `<stem>.timer` (every minute) in the user's unit directory, then
//! `systemctl --user daemon-reload` and `enable --now` the timer.
//!
//! The timer fires on every minute's start (`OnCalendar=*:*:00`) with
//! `AccuracySec=1s`: systemd's default accuracy of a minute would let a
//! run slip by up to another minute. It is not finer than a minute: each
//! run takes the lease, writes the ledger's incarnation and brings the
//! search index up to date, and `harnery serve` already drains the spool
//! within seconds while it is open; every few seconds would wake the disk
//! all day for pages nobody is reading. A run still going when the next
//! minute starts is not started twice (the service is `oneshot`).
//!
//! The service's summary output goes to `/dev/null`; errors go to the
//! journal (`journalctl --user -u <stem>`).

use std::path::{Path, PathBuf};

use super::program;
use super::{Job, ScheduleError};

const SYSTEMCTL: &str = "systemctl";

/// What `systemctl --user is-system-running` answers when the user's
/// manager is there to take units.
const MANAGER_UP: [&str; 4] = ["running", "degraded", "starting", "initializing"];

/// One unit file's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitFile {
    pub path: PathBuf,
    pub before: Option<String>,
    /// None: removed.
    pub after: Option<String>,
}

impl UnitFile {
    fn changes(&self) -> bool {
        self.before != self.after
    }
}

/// The timer's units and what systemd must be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitsPlan {
    /// The service, then the timer.
    pub files: Vec<UnitFile>,
    /// `<stem>.timer`.
    pub timer: String,
    /// Installing: the timer is enabled and active already.
    pub running: bool,
    /// Installing (true) or removing.
    pub install: bool,
    /// The `enable` symlink under `timers.target.wants`.
    pub wants_link: PathBuf,
}

impl UnitsPlan {
    pub fn changes(&self) -> bool {
        self.files.iter().any(UnitFile::changes)
            || (self.install && !self.running)
            || (!self.install && self.wants_link.symlink_metadata().is_ok())
    }

    /// The `systemctl --user` commands applying it runs, in order.
    pub fn commands(&self) -> Vec<Vec<String>> {
        let timer = self.timer.clone();
        let reload = vec!["daemon-reload".to_string()];
        match self.install {
            true => vec![reload, vec!["enable".into(), "--now".into(), timer]],
            false => vec![vec!["disable".into(), "--now".into(), timer], reload],
        }
    }
}

/// Whether a user systemd answers (see the module doc of `schedule`).
pub(crate) fn user_manager_runs() -> bool {
    if program::on_path(SYSTEMCTL).is_none() {
        return false;
    }
    let Ok(ran) = program::run(SYSTEMCTL, &["--user", "is-system-running"], None) else {
        return false;
    };
    // `degraded` exits 1 and is still a manager that takes units.
    let said = String::from_utf8_lossy(&ran.stdout);
    MANAGER_UP.contains(&said.trim())
}

/// The user's unit directory: `$XDG_CONFIG_HOME/systemd/user` when that
/// is an absolute path, else `~/.config/systemd/user`.
pub fn unit_dir(user_home: &Path) -> PathBuf {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| user_home.join(".config"));
    config.join("systemd/user")
}

/// `s` as one double-quoted word of a unit file: `\` and `"` escaped,
/// and `%` doubled since systemd expands specifiers; `dollar` doubles `$`
/// too (ExecStart expands variables, Environment does not).
fn quoted(s: &str, dollar: bool) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            '%' => out.push_str("%%"),
            '$' if dollar => out.push_str("$$"),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The service unit: one `harnery finalize` of the job's home.
pub fn service_text(job: &Job) -> String {
    let home = job.home.to_string_lossy();
    let bin = job.harnery.to_string_lossy();
    format!(
        "# Written by `harnery install`; `harnery uninstall schedule` removes it.\n\
         [Unit]\n\
         Description=harnery finalize: the hook spool of {} drained into its ledger\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         Environment={}\n\
         ExecStart={} finalize\n\
         StandardOutput=null\n\
         Nice=10\n",
        home.replace('%', "%%"),
        quoted(&format!("HARNERY_HOME={home}"), false),
        quoted(&bin, true),
    )
}

/// The timer unit: the service every minute.
pub fn timer_text(job: &Job) -> String {
    format!(
        "# Written by `harnery install`; `harnery uninstall schedule` removes it.\n\
         [Unit]\n\
         Description=harnery finalize every minute for {}\n\
         \n\
         [Timer]\n\
         OnCalendar=*-*-* *:*:00\n\
         AccuracySec=1s\n\
         Unit={}.service\n\
         \n\
         [Install]\n\
         WantedBy=timers.target\n",
        job.home.to_string_lossy().replace('%', "%%"),
        job.stem(),
    )
}

fn read_optional(path: &Path) -> Result<Option<String>, ScheduleError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ScheduleError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn plan(
    job: &Job,
    dir: &Path,
    texts: [Option<String>; 2],
    install: bool,
) -> Result<UnitsPlan, ScheduleError> {
    let stem = job.stem();
    let mut files = Vec::new();
    for (ext, after) in ["service", "timer"].into_iter().zip(texts) {
        let path = dir.join(format!("{stem}.{ext}"));
        files.push(UnitFile {
            before: read_optional(&path)?,
            path,
            after,
        });
    }
    let timer = format!("{stem}.timer");
    Ok(UnitsPlan {
        wants_link: dir.join("timers.target.wants").join(&timer),
        running: install && is_running(&timer),
        files,
        timer,
        install,
    })
}

/// Plan writing and enabling `job`'s timer in `dir`.
pub fn plan_install(job: &Job, dir: &Path) -> Result<UnitsPlan, ScheduleError> {
    plan(
        job,
        dir,
        [Some(service_text(job)), Some(timer_text(job))],
        true,
    )
}

/// Plan disabling and removing `job`'s timer from `dir`.
pub fn plan_uninstall(job: &Job, dir: &Path) -> Result<UnitsPlan, ScheduleError> {
    plan(job, dir, [None, None], false)
}

/// Whether the timer is enabled and active (asked of systemd; false
/// when it cannot say).
fn is_running(timer: &str) -> bool {
    let ask = |verb: &str, want: &str| {
        program::run(SYSTEMCTL, &["--user", verb, timer], None)
            .is_ok_and(|r| String::from_utf8_lossy(&r.stdout).trim() == want)
    };
    ask("is-enabled", "enabled") && ask("is-active", "active")
}

/// Apply: installing, write the units, reload, enable the timer;
/// removing, disable it (when a manager answers and it was there), remove
/// the units and the `enable` link, reload.
pub fn apply(plan: &UnitsPlan) -> Result<bool, ScheduleError> {
    if !plan.changes() {
        return Ok(false);
    }
    if plan.install {
        write_files(plan)?;
        for args in plan.commands() {
            systemctl(&args)?;
        }
        return Ok(true);
    }
    let manager = user_manager_runs();
    let [disable, reload] =
        <[Vec<String>; 2]>::try_from(plan.commands()).expect("removal runs two commands");
    if manager && plan.files.iter().any(|f| f.before.is_some()) {
        systemctl(&disable)?;
    }
    write_files(plan)?;
    remove_link(&plan.wants_link)?;
    if manager {
        systemctl(&reload)?;
    }
    Ok(true)
}

fn systemctl(args: &[String]) -> Result<(), ScheduleError> {
    let mut all = vec!["--user"];
    all.extend(args.iter().map(String::as_str));
    program::run_ok(SYSTEMCTL, &all, None)?;
    Ok(())
}

/// Write or remove each unit file whose text changes.
fn write_files(plan: &UnitsPlan) -> Result<(), ScheduleError> {
    for file in plan.files.iter().filter(|f| f.changes()) {
        let io = |source| ScheduleError::Io {
            path: file.path.clone(),
            source,
        };
        match &file.after {
            Some(text) => {
                if let Some(dir) = file.path.parent() {
                    std::fs::create_dir_all(dir).map_err(io)?;
                }
                crate::durable::write_atomic(
                    &file.path,
                    text.as_bytes(),
                    crate::durable::Mode::Inherit,
                )
                .map_err(|e| io(e.into_parts().1))?;
            }
            None => std::fs::remove_file(&file.path).map_err(io)?,
        }
    }
    Ok(())
}

/// Remove the `enable` link if `disable` left it (or no manager ran it).
fn remove_link(link: &Path) -> Result<(), ScheduleError> {
    match std::fs::remove_file(link) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(ScheduleError::Io {
            path: link.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_quote_paths_for_systemd() {
        let job = Job::new(
            PathBuf::from("/opt/a \"b\"/50%$x/harnery"),
            Path::new("/home/u/.harnery"),
            Path::new("/home/u"),
        );
        let service = service_text(&job);
        assert!(
            service.contains("\nExecStart=\"/opt/a \\\"b\\\"/50%%$$x/harnery\" finalize\n"),
            "{service}"
        );
        assert!(service.contains("\nEnvironment=\"HARNERY_HOME=/home/u/.harnery\"\n"));
        let timer = timer_text(&job);
        assert!(
            timer.contains("\nUnit=harnery-finalize.service\n"),
            "{timer}"
        );
        assert!(timer.contains("\nOnCalendar=*-*-* *:*:00\n"));
    }
}
