//! What an administrator runs once per server and once per host:
//! `harnery fleet init` (the schema, its group roles `harnery_host` and
//! `harnery_reader`, row-level security; idempotent, and it upgrades a
//! schema an earlier build made) and `harnery fleet add-host NAME` /
//! `add-reader NAME` (a login role with its own password, printed once as
//! a connection string).
//!
//! A host role inserts only rows of the one host id it is bound to (on its
//! first ship) and reads only its own `hosts` and `epochs` rows and, via
//! `harnery.ship_head`, its own epochs' last rows; a reader reads every
//! table and writes none.

use postgres::Client;

use super::FleetError;
use super::schema;

/// The kind of login role made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleKind {
    Host,
    Reader,
}

impl RoleKind {
    fn group(self) -> &'static str {
        match self {
            RoleKind::Host => "harnery_host",
            RoleKind::Reader => "harnery_reader",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            RoleKind::Host => "harnery_host_",
            RoleKind::Reader => "harnery_reader_",
        }
    }
}

/// A name `add-host` accepts: what a role name can carry unquoted.
#[derive(Debug, thiserror::Error)]
#[error(
    "{0:?} is not a usable name: use 1 to 40 lower-case letters, digits, '_' or '-' (it becomes part of a role name)"
)]
pub struct BadName(pub String);

/// Create or upgrade the schema and the group roles; the schema version.
pub fn init(client: &mut Client) -> Result<i32, FleetError> {
    let version = schema::migrate(client)?;
    Ok(version)
}

/// The role made (or given a new password): its name and password.
pub struct MadeRole {
    pub role: String,
    pub password: String,
    /// It existed already: its password was replaced.
    pub rotated: bool,
}

/// Make a login role of `kind` named after `name` (a new password when it
/// exists already, since the old one cannot be shown again).
pub fn add_role(client: &mut Client, kind: RoleKind, name: &str) -> Result<MadeRole, AddError> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        return Err(AddError::Name(BadName(name.to_string())));
    }
    schema::check(client).map_err(FleetError::from)?;
    let role = format!("{}{}", kind.prefix(), name.replace('-', "_"));
    let password = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut tx = client.transaction().map_err(FleetError::from)?;
    let exists: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = $1)",
            &[&role],
        )
        .map_err(FleetError::from)?
        .get(0);
    // Role names and passwords cannot be bound as parameters; both are
    // made here of [a-z0-9_] only.
    let sql = match exists {
        false => format!(
            "CREATE ROLE {role} LOGIN PASSWORD '{password}' IN ROLE {}",
            kind.group()
        ),
        true => format!(
            "ALTER ROLE {role} LOGIN PASSWORD '{password}'; GRANT {} TO {role}",
            kind.group()
        ),
    };
    tx.batch_execute(&sql).map_err(FleetError::from)?;
    if kind == RoleKind::Host {
        tx.execute(
            "INSERT INTO harnery.host_roles (role_name) VALUES ($1) ON CONFLICT DO NOTHING",
            &[&role],
        )
        .map_err(FleetError::from)?;
    }
    tx.commit().map_err(FleetError::from)?;
    Ok(MadeRole {
        role,
        password,
        rotated: exists,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum AddError {
    #[error(transparent)]
    Name(BadName),
    #[error(transparent)]
    Fleet(#[from] FleetError),
}
