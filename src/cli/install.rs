//! `harnery install` and `harnery uninstall`: configure an agent to run
//! `harnery-hook` on every hook event, or stop it.

use std::path::{Path, PathBuf};

use super::{CmdResult, Outcome};
use crate::install::{self, Agent, Plan};

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    #[command(subcommand)]
    target: Target,
}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    #[command(subcommand)]
    target: Target,
}

#[derive(Debug, clap::Subcommand)]
enum Target {
    /// Claude Code: ~/.claude/settings.json (user) or .claude/settings.json (project).
    ClaudeCode {
        #[arg(long, value_enum, default_value = "user")]
        scope: ClaudeScope,
        #[command(flatten)]
        common: Common,
    },
    /// Copilot CLI: ~/.copilot/hooks/harnery.json (user) or .github/hooks/harnery.json (repo).
    Copilot {
        #[arg(long, value_enum, default_value = "user")]
        scope: CopilotScope,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ClaudeScope {
    User,
    Project,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum CopilotScope {
    User,
    Repo,
}

#[derive(Debug, clap::Args)]
struct Common {
    /// Print the new file instead of writing it.
    #[arg(long)]
    dry_run: bool,
    /// The hook binary to configure (default: `harnery-hook` beside this executable).
    #[arg(long, value_name = "PATH")]
    hook_bin: Option<PathBuf>,
    /// Project or repository root for --scope project/repo (default: the current directory).
    #[arg(long, value_name = "DIR")]
    project_dir: Option<PathBuf>,
}

pub fn run_install(args: InstallArgs) -> CmdResult {
    let (agent, user, common) = split(args.target);
    let path = settings_path(agent, user, &common)?;
    let hook_bin = hook_bin(common.hook_bin.as_deref())?;
    if !common.dry_run && !hook_bin.is_file() {
        return Err(format!(
            "hook binary {} does not exist (use --hook-bin)",
            hook_bin.display()
        )
        .into());
    }
    let plan = install::plan_install(agent, &path, &hook_bin)?;
    finish(&plan, common.dry_run, "installed")
}

pub fn run_uninstall(args: UninstallArgs) -> CmdResult {
    let (agent, user, common) = split(args.target);
    let path = settings_path(agent, user, &common)?;
    let plan = install::plan_uninstall(agent, &path)?;
    finish(&plan, common.dry_run, "removed")
}

fn split(t: Target) -> (Agent, bool, Common) {
    match t {
        Target::ClaudeCode { scope, common } => (
            Agent::ClaudeCode,
            matches!(scope, ClaudeScope::User),
            common,
        ),
        Target::Copilot { scope, common } => {
            (Agent::Copilot, matches!(scope, CopilotScope::User), common)
        }
    }
}

fn finish(plan: &Plan, dry_run: bool, verb: &str) -> CmdResult {
    if dry_run {
        println!(
            "# {} ({})",
            plan.path.display(),
            if plan.changes() {
                "would change"
            } else {
                "unchanged"
            }
        );
        match &plan.after {
            Some(text) => print!("{text}"),
            None => println!("# (file would be removed)"),
        }
        return Ok(Outcome::Clean);
    }
    let done = install::apply(plan)?;
    match (&done.changed, &done.backup) {
        (false, _) => println!("{}: already up to date", done.path.display()),
        (true, Some(b)) => println!(
            "{}: hooks {verb} (backup: {})",
            done.path.display(),
            b.display()
        ),
        (true, None) => println!("{}: hooks {verb}", done.path.display()),
    }
    Ok(Outcome::Clean)
}

fn settings_path(agent: Agent, user: bool, common: &Common) -> Result<PathBuf, super::CmdError> {
    let home = user_home()?;
    let project = match &common.project_dir {
        Some(p) => p.clone(),
        None => std::env::current_dir()?,
    };
    let copilot_home = std::env::var_os("COPILOT_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    Ok(install::settings_path(
        agent,
        user,
        &home,
        &project,
        copilot_home.as_deref(),
    ))
}

fn user_home() -> Result<PathBuf, super::CmdError> {
    // The same rule as Home::from_env without HARNERY_HOME: $HOME, else passwd.
    let home = crate::home::Home::from_vars(None, std::env::var_os("HOME"))?;
    Ok(home
        .root()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default())
}

fn hook_bin(flag: Option<&Path>) -> Result<PathBuf, super::CmdError> {
    if let Some(p) = flag {
        return Ok(std::path::absolute(p)?);
    }
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or("cannot locate the harnery executable's directory")?;
    Ok(dir.join(install::HOOK_BIN_NAME))
}
