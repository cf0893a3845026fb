//! The fleet: many hosts' ledgers in one central PostgreSQL. A host ships
//! its events (every epoch, masked) and derived rows with `harnery ship`;
//! anyone with read access asks the fleet questions (`harnery fleet
//! sessions|audit|usage`) and an auditor checks that what arrived is what
//! each host recorded (`harnery fleet verify`).
//!
//! The local ledger stays the source of truth and is only ever read here;
//! the hook and the finalizer never wait on the network. Modules: `target`
//! (where the server is, TLS), `schema` (the central migrations and
//! views), `host` (this host's stable id), `config` (`[ship]` of the home's
//! config file), `mask` (secrets masked before they leave), `ship` and
//! `derived` (sending rows; `ship_text` words a run and `ship --status`), `read` (the fleet questions), `verify` (the
//! chains rechecked on the server), `ids` (ids keyed before they leave).

pub mod admin;
pub(crate) mod config;
pub(crate) mod derived;
pub(crate) mod host;
pub(crate) mod ids;
pub(crate) mod key;
pub mod link;
pub(crate) mod mask;
pub mod read;
pub mod schema;
mod schema_bound;
mod schema_search;
mod schema_titles;
pub mod search;
mod search_ship;
pub mod server;
pub mod ship;
mod ship_text;
pub(crate) mod target;
pub mod verify;

use std::path::PathBuf;

pub use config::{ConfigError, ShipConfig};
pub use host::{HostId, HostIdError};
pub use key::{HostKey, KeyError};
pub use mask::{MaskRules, Masker, PatternError};
pub(crate) use schema::SchemaError;
pub use ship::{ShipReport, Shipper};
pub use target::{ConnectError, PgEnv, Target};

/// Copying one epoch's rows: a local read or a server write failed.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("reading the local ledger: {0}")]
    Local(#[from] crate::ledger::LedgerError),
    #[error("{0}")]
    Server(#[from] postgres::Error),
    #[error("{path}: {source}")]
    Genesis {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the server holds a different genesis manifest for this epoch")]
    GenesisDiffers,
    /// Not a failure: the batch ends early, its search text at its budget
    /// (`ship` never shows it).
    #[error("the batch's search text is at its budget")]
    SearchFull,
}

/// Why `harnery ship` stopped. Every variant that concerns rows names the
/// host, the epoch and the row.
#[derive(Debug, thiserror::Error)]
pub enum ShipError {
    #[error(transparent)]
    HostId(#[from] HostIdError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Epochs(#[from] crate::epoch::EpochError),
    #[error(transparent)]
    Ledger(#[from] crate::ledger::LedgerError),
    #[error("host {host}: the server: {source}; the next run resumes where this one stopped")]
    Server {
        host: String,
        source: postgres::Error,
    },
    #[error("host {host} epoch {epoch}: {source}; the next run resumes after the last whole batch")]
    Copy {
        host: String,
        epoch: String,
        source: CopyError,
    },
    #[error(
        "refused: host {host} epoch {epoch} row {seq}: the server's row there commits to {server_hash}, this ledger's row to {local_hash}; this host's ledger was forked or replaced (or the row was changed on the server: `harnery fleet verify --local` tells), so nothing of it is shipped"
    )]
    Forked {
        host: String,
        epoch: String,
        seq: i64,
        server_hash: String,
        local_hash: String,
    },
    #[error(
        "refused: host {host} epoch {epoch} (rows 1..{rows} on the server) is not in this home; this host's ledger was replaced, so nothing of it is shipped"
    )]
    Replaced {
        host: String,
        epoch: String,
        rows: i64,
    },
    #[error(
        "refused: host {host} is registered on the server with another signing key; this home's ship key is not the one that host shipped with (the home was replaced), so nothing is shipped"
    )]
    KeyDiffers { host: String },
    #[error(
        "refused: this server role ships host {bound}, not {host}; give this host its own role (`harnery fleet add-host`)"
    )]
    RoleBound { host: String, bound: String },
}

/// Why a fleet read or verify could not run.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("the server: {0}")]
    Db(#[from] postgres::Error),
    #[error("unknown host id {wanted:?}; the server knows {}", known_list(.known))]
    UnknownHost { wanted: String, known: Vec<String> },
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(transparent)]
    Ledger(#[from] crate::ledger::LedgerError),
    #[error(transparent)]
    Epochs(#[from] crate::epoch::EpochError),
    #[error(transparent)]
    HostId(#[from] HostIdError),
    #[error(transparent)]
    Pattern(#[from] PatternError),
    #[error("bad query: {0}")]
    Query(#[from] crate::search::QueryError),
    #[error(
        "host {host}: the server holds a row of adapter {adapter:?}, which this build does not know"
    )]
    Adapter { host: String, adapter: String },
}

fn known_list(known: &[String]) -> String {
    match known.is_empty() {
        true => "no host yet".into(),
        false => known.join(", "),
    }
}
