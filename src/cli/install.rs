//! `harnery install` and `harnery uninstall`.

use super::CmdResult;

#[derive(Debug, clap::Args)]
pub struct InstallArgs {}

#[derive(Debug, clap::Args)]
pub struct UninstallArgs {}

pub fn run_install(_args: InstallArgs) -> CmdResult {
    super::not_built("install")
}

pub fn run_uninstall(_args: UninstallArgs) -> CmdResult {
    super::not_built("uninstall")
}
