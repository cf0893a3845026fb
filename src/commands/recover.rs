//! `harnery recover` and `harnery resume-policy`: parse, call
//! `harnery::resume`, print. Exit 0 with a packet or an answer; 2 when the
//! session cannot be found or read (the message names the path).

use std::io::Write;
use std::path::PathBuf;

use super::{CmdResult, Outcome};
use harnery::agents::copilot::package::{RunningCopilotHint, SearchPlan};
use harnery::agents::{claude_code, copilot};
use harnery::recover::chronicle::OpenStrategy;
use harnery::recover::hint::{CopilotFlags, running_copilot};
use harnery::recover::packet::PacketLimits;
use harnery::recover::{self as rec, Agent, RecoverRequest, render};

/// Which agent's session to recover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AgentArg {
    /// Look under both homes; the session must be in exactly one.
    Auto,
    Copilot,
    ClaudeCode,
}

/// Where the Copilot that would run is, beyond what is found on disk.
#[derive(Debug, Clone, clap::Args)]
pub struct EvidenceArgs {
    /// The Copilot version that runs (as hooks see it in
    /// COPILOT_CLI_BINARY_VERSION; that variable is read when this is absent,
    /// then harnery's intake spool).
    #[arg(long, value_name = "VERSION")]
    pub copilot_version: Option<String>,
    /// The dist dir of the Copilot that runs (COPILOT_CLI_RESOLVED_DIST_DIR).
    #[arg(long, value_name = "DIR")]
    pub copilot_dist_dir: Option<PathBuf>,
    /// An installed `@github/copilot` package folder to consider (repeatable).
    #[arg(long, value_name = "DIR")]
    pub copilot_package: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Defaults: --max-direct 20, --max-indexed 20 (turns), --max-steering 10, \
--max-recent 20, --max-bytes 65536 (per part), --max-record 4194304.\n\
Exit codes: 0 packet printed; 2 usage error, session not found, or unreadable stream."
)]
pub struct Args {
    /// The session id (Copilot session-state folder name, or Claude Code transcript name), or a unique prefix of one.
    pub session_id: String,
    /// Which agent the session belongs to.
    #[arg(long, value_enum, default_value_t = AgentArg::Auto)]
    pub agent: AgentArg,
    /// Copilot's home [default: $COPILOT_HOME, else ~/.copilot].
    #[arg(long, value_name = "DIR")]
    pub copilot_home: Option<PathBuf>,
    /// Claude Code's home [default: $CLAUDE_CONFIG_DIR, else ~/.claude].
    #[arg(long, value_name = "DIR")]
    pub claude_home: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print only the resume-safety answer for this session.
    #[arg(long)]
    pub preview: bool,
    /// Most direct user messages shown (newest first).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_direct: usize,
    /// Most indexed turns shown (newest first).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_indexed: usize,
    /// Most agent steering messages shown (newest first).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_steering: usize,
    /// Most recent activity entries shown (newest first).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub max_recent: usize,
    /// Byte budget for the text of each part, separately.
    #[arg(long, value_name = "N", default_value_t = 65_536, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_bytes: u64,
    /// Longest record read from the stream; longer ones are skipped and counted.
    #[arg(long, value_name = "N", default_value_t = 4 << 20, value_parser = clap::value_parser!(u64).range(1024..=(1u64 << 30)))]
    pub max_record: u64,
    /// Read session-store.db only from a private copy (never open the live file).
    #[arg(long)]
    pub private_copy: bool,
    #[command(flatten)]
    pub evidence: EvidenceArgs,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Exit codes: 0 answered; 2 usage error.")]
pub struct PolicyArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub evidence: EvidenceArgs,
}

pub fn run(args: Args) -> CmdResult {
    let mut req = request(&args);
    req.session_id = rec::resolve_id(&req)?;
    req.hint = hint(&args.evidence, Some(&req.session_id));
    req.progress = super::progress::bar("bytes", args.json);
    req.progress.stage("scan");
    let packet = rec::recover(&req)?;
    let text = match (args.preview, args.json) {
        (true, true) => serde_json::to_string_pretty(&packet.resume)?,
        (true, false) => render::resume_text(&packet.resume),
        (false, true) => serde_json::to_string_pretty(&packet)?,
        (false, false) => render::packet_text(&packet),
    };
    print(&text, args.json)
}

pub fn run_policy(args: PolicyArgs) -> CmdResult {
    let assessment = rec::assess_copilot(
        hint(&args.evidence, None),
        &SearchPlan::from_env(args.evidence.copilot_package.clone()),
    );
    let text = if args.json {
        serde_json::to_string_pretty(&assessment)?
    } else {
        render::resume_text(&assessment)
    };
    print(&text, args.json)
}

fn print(text: &str, json: bool) -> CmdResult {
    let mut out = harnery::terminal::stdout(json);
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(Outcome::Clean)
}

fn request(args: &Args) -> RecoverRequest {
    let limits = PacketLimits {
        max_direct: args.max_direct,
        max_indexed: args.max_indexed,
        max_steering: args.max_steering,
        max_recent: args.max_recent,
        max_bytes: usize::try_from(args.max_bytes).unwrap_or(usize::MAX),
    };
    RecoverRequest {
        session_id: args.session_id.clone(),
        agent: match args.agent {
            AgentArg::Auto => None,
            AgentArg::Copilot => Some(Agent::Copilot),
            AgentArg::ClaudeCode => Some(Agent::ClaudeCode),
        },
        copilot_home: args
            .copilot_home
            .clone()
            .unwrap_or_else(|| copilot::home(&rec::home_dir())),
        claude_home: args
            .claude_home
            .clone()
            .unwrap_or_else(|| claude_code::config_dir(&rec::home_dir())),
        limits,
        max_record: usize::try_from(args.max_record).unwrap_or(usize::MAX),
        open_strategy: if args.private_copy {
            OpenStrategy::PrivateCopyOnly
        } else {
            OpenStrategy::Auto
        },
        hint: hint(&args.evidence, Some(&args.session_id)),
        plan: SearchPlan::from_env(args.evidence.copilot_package.clone()),
        progress: harnery::progress::Progress::none(),
    }
}

impl EvidenceArgs {
    /// The library's form of these flags.
    pub fn flags(&self) -> CopilotFlags {
        CopilotFlags {
            version: self.copilot_version.clone(),
            dist_dir: self.copilot_dist_dir.clone(),
            packages: self.copilot_package.clone(),
        }
    }
}

/// The running-Copilot hint for these flags (`harnery::recover::hint`).
fn hint(e: &EvidenceArgs, session_id: Option<&str>) -> RunningCopilotHint {
    running_copilot(&e.flags(), session_id)
}
