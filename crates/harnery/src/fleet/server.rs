//! Which server a command talks to, and what a host asks of it before it
//! ships: `--to`/`--from` when given, else `ship.to` in the home's config
//! file, else the `PG*` environment; the host's status (its id and what
//! the server holds for it); and the setup `fleet verify --local` needs.

use std::path::PathBuf;

use serde::Serialize;

use super::config::config_path;
use super::host::hostname;
use super::ship::server_rows;
use super::verify::{FleetVerified, verify_local};
use super::{
    ConfigError, ConnectError, FleetError, HostId, HostIdError, HostKey, KeyError, Masker,
    PatternError, PgEnv, ShipConfig, Target,
};
use crate::home::Home;

/// Why the server to read could not be named, or reached.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error(transparent)]
    Fleet(#[from] FleetError),
}

/// Whether a server is named at all: by `text`, or by `PGHOST`.
fn named(text: Option<&str>) -> bool {
    text.is_some() || std::env::var_os("PGHOST").is_some()
}

/// The server `ship` sends to: `text` (`--to`, else `ship.to`), else the
/// `PG*` environment; none named is an error that says how to name one.
pub fn ship_target(home: &Home, text: Option<&str>) -> Result<Target, ConnectError> {
    if !named(text) {
        return Err(ConnectError::NoTarget {
            config: config_path(home.root()),
        });
    }
    Target::resolve(text, &PgEnv::from_process())
}

/// The server a fleet command reads: `text` (`--from`/`--url`), else
/// `ship.to` of `home` (when there is one), else the `PG*` environment.
pub fn read_target(home: Option<&Home>, text: Option<&str>) -> Result<Target, TargetError> {
    let configured = match home {
        Some(home) => ShipConfig::load(home.root())?.to,
        None => None,
    };
    let text = text.or(configured.as_deref());
    Ok(Target::resolve(text, &PgEnv::from_process())?)
}

/// The server a fleet command reads ([`read_target`]), connected.
pub fn read_client(
    home: Option<&Home>,
    text: Option<&str>,
) -> Result<(Target, postgres::Client), TargetError> {
    let target = read_target(home, text)?;
    let client = target.connect().map_err(FleetError::from)?;
    Ok((target, client))
}

/// `ship --status`: this host and what the server holds for it.
#[derive(Serialize)]
pub struct ShipStatus {
    pub host_id: String,
    pub hostname: String,
    pub target: Option<String>,
    /// (genesis id, rows the server holds, live), when the server answered.
    pub server: Option<Vec<(String, i64, bool)>>,
    /// Why the server could not be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_error: Option<String>,
}

/// This host's status; the server is asked only when one is named, and a
/// server that cannot be asked is part of the status, not an error.
pub fn ship_status(host: &HostId, text: Option<&str>) -> Result<ShipStatus, ConnectError> {
    let mut status = ShipStatus {
        host_id: host.as_str().to_string(),
        hostname: hostname(),
        target: None,
        server: None,
        server_error: None,
    };
    if named(text) {
        let target = Target::resolve(text, &PgEnv::from_process())?;
        status.target = Some(target.describe());
        let asked = target
            .connect()
            .map_err(|e| e.to_string())
            .and_then(|mut c| server_rows(&mut c, host).map_err(|e| e.to_string()));
        match asked {
            Ok(rows) => status.server = Some(rows),
            Err(why) => status.server_error = Some(why),
        }
    }
    Ok(status)
}

/// Why this host's rows on the server could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum LocalVerifyError {
    #[error(transparent)]
    HostId(#[from] HostIdError),
    #[error("{}: this home has no host id; it has never shipped", .0.display())]
    NeverShipped(PathBuf),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error(transparent)]
    Fleet(#[from] FleetError),
}

/// `fleet verify --local`: this host's rows on the server against its own
/// ledger, masked with its own key and rules, added to `result`.
pub fn verify_this_host(
    client: &mut postgres::Client,
    home: &Home,
    result: &mut FleetVerified,
) -> Result<(), LocalVerifyError> {
    let host = HostId::read(home.root())?
        .ok_or_else(|| LocalVerifyError::NeverShipped(home.root().to_path_buf()))?;
    let key = HostKey::load_or_create(home.root())?;
    let config = ShipConfig::load(home.root())?;
    let masker = Masker::new(&config.rules, key.clone())?;
    verify_local(client, home, host.as_str(), &key, &masker, result)?;
    Ok(())
}
