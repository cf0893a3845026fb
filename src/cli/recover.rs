//! `harnery recover` and `harnery resume-policy`.

use super::CmdResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

#[derive(Debug, clap::Args)]
pub struct PolicyArgs {}

pub fn run(_args: Args) -> CmdResult {
    super::not_built("recover")
}

pub fn run_policy(_args: PolicyArgs) -> CmdResult {
    super::not_built("resume-policy")
}
