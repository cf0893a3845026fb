//! `harnery validate`.

use super::CmdResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> CmdResult {
    super::not_built("validate")
}
