//! `harnery install` and `harnery uninstall`: configure an agent to run
//! `harnery-hook` on every hook event, or stop it. For Copilot, install also
//! says which hook form it chose and why (`harnery::install::form`). Install
//! then sets up the periodic `harnery finalize`, and uninstall removes it
//! with the last agent's hooks (`schedule.rs`). With `--mcp`, install also
//! registers `harnery mcp` in Claude Code's or Copilot's MCP configuration,
//! and uninstall removes only that (`harnery::install::mcp`).

use std::path::{Path, PathBuf};

use super::{CmdResult, Outcome};
use harnery::install::form::{self, CopilotForm, FormChoice};
use harnery::install::{self, Agent, AgentDir, Plan, mcp};

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

/// An agent's hooks (and the schedule with them), or the schedule alone.
#[derive(Debug, clap::Subcommand)]
enum Target {
    #[command(flatten)]
    Agent(AgentTarget),
    /// Only the periodic `harnery finalize`: a systemd user timer where a user systemd runs, else a crontab line.
    Schedule {
        /// Print what would be written instead of writing it.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
enum AgentTarget {
    /// Claude Code: $CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json (user), or .claude/settings.json (project).
    ClaudeCode {
        #[arg(long, value_enum, default_value = "user")]
        scope: ClaudeScope,
        #[command(flatten)]
        common: Common,
    },
    /// Copilot CLI: $COPILOT_HOME/hooks/harnery.json, else ~/.copilot/hooks/harnery.json (user), or .github/hooks/harnery.json (repo).
    Copilot {
        #[arg(long, value_enum, default_value = "user")]
        scope: CopilotScope,
        /// Install only: the hook entry form [default: exec when the Copilot
        /// found on PATH (else the newest installed) is a version verified to
        /// run exec hooks, else bash].
        #[arg(long, value_enum, value_name = "FORM")]
        form: Option<FormArg>,
        #[command(flatten)]
        common: Common,
    },
    /// Codex CLI: $CODEX_HOME/hooks.json, else ~/.codex/hooks.json (user), or .codex/hooks.json (project).
    Codex {
        #[arg(long, value_enum, default_value = "user")]
        scope: ClaudeScope,
        #[command(flatten)]
        common: Common,
    },
    /// Gemini CLI: ~/.gemini/settings.json (user), or .gemini/settings.json (project).
    GeminiCli {
        #[arg(long, value_enum, default_value = "user")]
        scope: ClaudeScope,
        #[command(flatten)]
        common: Common,
    },
    /// Qwen Code: ~/.qwen/settings.json (user), or .qwen/settings.json (project).
    QwenCode {
        #[arg(long, value_enum, default_value = "user")]
        scope: ClaudeScope,
        #[command(flatten)]
        common: Common,
    },
    /// OpenCode: a plugin, ~/.config/opencode/plugins/harnery.js (user), or .opencode/plugins/harnery.js (project).
    Opencode {
        #[arg(long, value_enum, default_value = "user")]
        scope: ClaudeScope,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum FormArg {
    /// `exec` + `args`: the client starts harnery-hook directly.
    Exec,
    /// `bash`: the client starts harnery-hook through `bash -c`.
    Bash,
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
    /// Leave the periodic `harnery finalize` alone: install does not set it
    /// up, uninstall does not remove it.
    #[arg(long)]
    no_schedule: bool,
    /// Claude Code and Copilot: install also registers `harnery mcp` (the
    /// MCP server over the ledger) in the agent's MCP configuration;
    /// uninstall removes only that registration (the hooks stay).
    #[arg(long)]
    mcp: bool,
}

pub fn run_install(args: InstallArgs) -> CmdResult {
    let target = match args.target {
        Target::Schedule { dry_run } => return super::schedule::install(dry_run, false),
        Target::Agent(target) => target,
    };
    let (agent, user, form_arg, common) = split(target);
    let mcp_file = match common.mcp {
        true => Some(mcp::mcp_file(
            agent,
            user,
            &user_home()?,
            common.project_dir.as_deref(),
        )?),
        false => None,
    };
    let (path, agent_dir) = settings_path(agent, user, &common)?;
    let hook_bin = install::hook_bin(common.hook_bin.as_deref())?;
    if !common.dry_run {
        install::check_hook_bin(&hook_bin)?;
    }
    let asked = form_arg.map(|f| match f {
        FormArg::Exec => CopilotForm::Exec,
        FormArg::Bash => CopilotForm::Bash,
    });
    // The form is reported only when it was judged (Copilot's).
    let choice = form::for_agent(agent, asked);
    if let Some(choice) = &choice {
        say_form(choice, common.dry_run);
    }
    let form = choice.map_or(CopilotForm::Exec, |c| c.form);
    say_where(agent, agent_dir.as_ref(), common.dry_run);
    let plan = install::plan_install(agent, &path, &hook_bin, form)?;
    finish_all(agent, &plan, common.dry_run, "installed")?;
    if let Some(file) = &mcp_file {
        let harnery = std::env::current_exe()?;
        let home = std::env::var_os("HARNERY_HOME").filter(|h| !h.is_empty());
        let plan = mcp::plan_install(agent, file, &harnery, home.as_deref().map(Path::new))?;
        finish_mcp(&plan, common.dry_run, "registered")?;
    }
    match common.no_schedule {
        true => Ok(Outcome::Clean),
        false => super::schedule::install(common.dry_run, true),
    }
}

pub fn run_uninstall(args: UninstallArgs) -> CmdResult {
    let target = match args.target {
        Target::Schedule { dry_run } => return super::schedule::uninstall(dry_run, None, true),
        Target::Agent(target) => target,
    };
    let (agent, user, form_arg, common) = split(target);
    if form_arg.is_some() {
        return Err(
            "--form applies to install only; uninstall removes harnery's entries of both forms"
                .into(),
        );
    }
    if common.mcp {
        let file = mcp::mcp_file(agent, user, &user_home()?, common.project_dir.as_deref())?;
        return finish_mcp(&mcp::plan_uninstall(&file)?, common.dry_run, "removed");
    }
    let (path, agent_dir) = settings_path(agent, user, &common)?;
    say_where(agent, agent_dir.as_ref(), common.dry_run);
    let plan = install::plan_uninstall(agent, &path)?;
    finish_all(agent, &plan, common.dry_run, "removed")?;
    match common.no_schedule {
        true => Ok(Outcome::Clean),
        false => super::schedule::uninstall(common.dry_run, Some(agent), user),
    }
}

/// Apply (or show) the hooks file's plan and those of the files that
/// change with it, these first: Codex's trust of a hook is written before
/// the hook, so that no moment has a hook Codex would silently skip.
fn finish_all(agent: Agent, plan: &Plan, dry_run: bool, verb: &str) -> CmdResult {
    for companion in install::plan_companions(agent, plan, &user_home()?)? {
        finish(&companion, dry_run, verb)?;
    }
    finish(plan, dry_run, verb)
}

fn split(t: AgentTarget) -> (Agent, bool, Option<FormArg>, Common) {
    match t {
        AgentTarget::ClaudeCode { scope, common } => (
            Agent::ClaudeCode,
            matches!(scope, ClaudeScope::User),
            None,
            common,
        ),
        AgentTarget::Copilot {
            scope,
            form,
            common,
        } => (
            Agent::Copilot,
            matches!(scope, CopilotScope::User),
            form,
            common,
        ),
        AgentTarget::Codex { scope, common } => (Agent::Codex, is_user(scope), None, common),
        AgentTarget::GeminiCli { scope, common } => {
            (Agent::GeminiCli, is_user(scope), None, common)
        }
        AgentTarget::QwenCode { scope, common } => (Agent::QwenCode, is_user(scope), None, common),
        AgentTarget::Opencode { scope, common } => (Agent::Opencode, is_user(scope), None, common),
    }
}

fn is_user(scope: ClaudeScope) -> bool {
    matches!(scope, ClaudeScope::User)
}

fn say_form(choice: &FormChoice, dry_run: bool) {
    let comment = if dry_run { "# " } else { "" };
    println!(
        "{comment}copilot hook form: {}, because {}",
        choice.form, choice.reason
    );
}

/// Apply (or show) the MCP registration's plan.
fn finish_mcp(plan: &Plan, dry_run: bool, verb: &str) -> CmdResult {
    if dry_run {
        println!("# {} (harnery mcp)", plan.path.display());
        return finish(plan, true, verb);
    }
    let done = install::apply(plan)?;
    let name = mcp::SERVER_NAME;
    match (done.changed, &done.backup) {
        (false, _) => println!(
            "{}: mcp server {name} already up to date",
            done.path.display()
        ),
        (true, Some(b)) => println!(
            "{}: mcp server {name} {verb} (backup: {})",
            done.path.display(),
            b.display()
        ),
        (true, None) => println!("{}: mcp server {name} {verb}", done.path.display()),
    }
    Ok(Outcome::Clean)
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

/// The file to change and, in the user scope, where the agent reads.
fn settings_path(
    agent: Agent,
    user: bool,
    common: &Common,
) -> Result<(PathBuf, Option<AgentDir>), super::CmdError> {
    let project = common.project_dir.as_deref();
    Ok(install::target_file(agent, user, &user_home()?, project)?)
}

/// Where the agent reads is the one thing that decides whether the hooks
/// ever run: say it, and what decided it (user scope only).
fn say_where(agent: Agent, agent_dir: Option<&AgentDir>, dry_run: bool) {
    if let Some(dir) = agent_dir {
        let comment = if dry_run { "# " } else { "" };
        println!("{comment}{}", dir.describe(agent));
    }
}

fn user_home() -> Result<PathBuf, super::CmdError> {
    Ok(harnery::home::user_dir()?)
}
