//! The schedule half of `harnery install` and `harnery uninstall`: the
//! periodic `harnery finalize` set up after the hooks, shown by
//! `--dry-run`, and removed with the last agent's hooks (or by
//! `harnery uninstall schedule`). The rules live in
//! `harnery::install::schedule`; this parses nothing and prints.

use std::path::Path;

use super::{CmdError, CmdResult, Outcome};
use harnery::install::Agent;
use harnery::install::schedule::{
    self, Job, SchedulePlan, Scheduler, cron::CrontabPlan, systemd::UnitsPlan,
};

/// The job this executable would schedule for the home in use.
fn job() -> Result<(Job, std::path::PathBuf), CmdError> {
    let user_home = harnery::home::user_dir()?;
    let home = harnery::home::Home::from_env()?;
    let job = Job::current(home.root(), &user_home)
        .map_err(|e| format!("cannot locate the running harnery executable: {e}"))?;
    Ok((job, user_home))
}

/// Set up (or, with `dry_run`, show) the schedule. `after_hooks` says
/// the hooks were just installed, so that a failure here says they stay.
pub fn install(dry_run: bool, after_hooks: bool) -> CmdResult {
    let failed = |e: &dyn std::fmt::Display| -> CmdError {
        match after_hooks {
            true => {
                format!("the hooks are installed, but the finalize schedule is not: {e}").into()
            }
            false => format!("the finalize schedule is not installed: {e}").into(),
        }
    };
    let (job, user_home) = job()?;
    let scheduler = Scheduler::detect(&user_home);
    let plan = schedule::plan_install(&job, &scheduler).map_err(|e| failed(&e))?;
    // One schedule per home: a timer replaces this home's crontab line.
    let mut also = Vec::new();
    if matches!(scheduler, Scheduler::Systemd(_)) {
        also = schedule::plan_uninstall(&job, &schedule::systemd::unit_dir(&user_home))
            .map_err(|e| failed(&e))?
            .into_iter()
            .filter(|p| matches!(p, SchedulePlan::Cron(_)))
            .collect();
    }
    for p in std::iter::once(&plan).chain(&also) {
        match dry_run {
            true => show(p),
            false => {
                let changed = schedule::apply(p).map_err(|e| failed(&e))?;
                say(p, changed);
            }
        }
    }
    Ok(Outcome::Clean)
}

/// Remove the schedule when no agent's user-scope hooks remain besides
/// `agent`'s (just removed), or always when `agent` is None (`uninstall
/// schedule`); hooks removed from a project leave it alone.
pub fn uninstall(dry_run: bool, agent: Option<Agent>, user_scope: bool) -> CmdResult {
    let comment = if dry_run { "# " } else { "" };
    let (job, user_home) = job()?;
    if let Some(agent) = agent {
        if !user_scope {
            println!(
                "{comment}finalize schedule kept (hooks in other projects may use it; \
                 `harnery uninstall schedule` removes it)"
            );
            return Ok(Outcome::Clean);
        }
        let others = harnery::install::still_hooked(agent, &user_home);
        if !others.is_empty() {
            let names: Vec<&str> = others.iter().map(|a| a.as_str()).collect();
            println!(
                "{comment}finalize schedule kept: {} still record through it \
                 (`harnery uninstall schedule` removes it)",
                names.join(", ")
            );
            return Ok(Outcome::Clean);
        }
    }
    let unit_dir = schedule::systemd::unit_dir(&user_home);
    let plans = schedule::plan_uninstall(&job, &unit_dir)
        .map_err(|e| format!("the finalize schedule was not removed: {e}"))?;
    if !plans.iter().any(SchedulePlan::changes) {
        println!(
            "{comment}finalize schedule: none installed for {}",
            job.home.display()
        );
        return Ok(Outcome::Clean);
    }
    for p in plans.iter().filter(|p| p.changes()) {
        match dry_run {
            true => show(p),
            false => {
                let changed = schedule::apply(p)
                    .map_err(|e| format!("the finalize schedule was not removed: {e}"))?;
                say(p, changed);
            }
        }
    }
    Ok(Outcome::Clean)
}

/// What was done.
fn say(plan: &SchedulePlan, changed: bool) {
    match plan {
        SchedulePlan::Systemd(p) => say_units(p, changed),
        SchedulePlan::Cron(p) => say_crontab(p, changed),
        SchedulePlan::ByHand { line } => by_hand(line),
    }
}

fn say_units(p: &UnitsPlan, changed: bool) {
    let dir = p.files[0].path.parent().unwrap_or(Path::new("/"));
    match (changed, p.install) {
        (false, true) => println!("systemd user timer {}: already set up", p.timer),
        (true, true) => println!(
            "systemd user timer {}: harnery finalize every minute (units in {}, enabled)",
            p.timer,
            dir.display()
        ),
        (_, false) => println!("systemd user timer {}: removed", p.timer),
    }
}

fn say_crontab(p: &CrontabPlan, changed: bool) {
    match (changed, &p.line) {
        (false, Some(_)) => println!("crontab: harnery finalize already runs every minute"),
        (true, Some(_)) => println!("crontab: harnery finalize every minute (one line written)"),
        (_, None) => println!("crontab: harnery's line removed"),
    }
}

fn by_hand(line: &str) {
    println!(
        "no user systemd and no crontab found, so nothing runs `harnery finalize`: \
         add this line to a crontab by hand (or run `harnery finalize` yourself):\n{line}"
    );
}

/// What would be done (`--dry-run`), as comments around the new text.
fn show(plan: &SchedulePlan) {
    match plan {
        SchedulePlan::Systemd(p) => {
            for file in &p.files {
                let what = match file.before == file.after {
                    true => "unchanged",
                    false => "would change",
                };
                println!("# {} ({what})", file.path.display());
                match &file.after {
                    Some(text) => print!("{text}"),
                    None => println!("# (file would be removed)"),
                }
            }
            if p.changes() {
                for args in p.commands() {
                    println!("# then: systemctl --user {}", args.join(" "));
                }
            }
        }
        SchedulePlan::Cron(p) => {
            let what = match (p.changes(), &p.line) {
                (false, _) => "unchanged",
                (true, Some(_)) => "would gain this line",
                (true, None) => "would lose harnery's line",
            };
            println!("# crontab ({what})");
            if let Some(line) = &p.line {
                println!("{line}");
            }
        }
        SchedulePlan::ByHand { line } => {
            println!("# no user systemd and no crontab found: add this line to a crontab by hand");
            println!("{line}");
        }
    }
}
