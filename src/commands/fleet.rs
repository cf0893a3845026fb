//! `harnery fleet sessions|audit|usage|search|verify --from URL`: the fleet's
//! questions, read from the central PostgreSQL that hosts `ship` to, and
//! the auditor's check that every host's chains hold there (`--local`:
//! and that this host's rows there are what it shipped). `fleet init` and
//! `fleet add-host|add-reader` are the administrator's.

use std::io::Write;

use super::{CmdResult, Outcome};
use harnery::fleet::Target;
use harnery::fleet::admin::{self, RoleKind};
use harnery::fleet::read::{self, ReadFilter};
use harnery::fleet::server::{TargetError, read_client, verify_this_host};
use harnery::fleet::verify::verify;
use harnery::home::Home;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: FleetCommand,
}

#[derive(Debug, clap::Subcommand)]
enum FleetCommand {
    /// Sessions across hosts, newest first.
    Sessions(ReadArgs),
    /// Audit-only and interrupted sessions, and every reason per host.
    Audit(ReadArgs),
    /// Model usage by day and model (or by session), as the agents reported it.
    Usage(UsageArgs),
    /// Find what agents said or did, across hosts (local search's query syntax).
    Search(super::fleet_search::SearchArgs),
    /// Recompute every host's chains from the stored bytes; check anchors.
    Verify(VerifyArgs),
    /// Create (or upgrade) the central schema and its roles (an administrator, once).
    Init(InitArgs),
    /// Make a host's own server role; prints its connection string.
    AddHost(AddArgs),
    /// Make a read-only role for the fleet reads; prints its connection string.
    AddReader(AddArgs),
}

#[derive(Debug, clap::Args)]
struct InitArgs {
    /// The server, as an administrator (a role that may create roles).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
}

#[derive(Debug, clap::Args)]
struct AddArgs {
    /// The role's name (lower-case letters, digits, '_', '-').
    name: String,
    /// The server, as an administrator.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
}

/// Where to read from (`--from`, else ship.to, else the PG* variables).
#[derive(Debug, Clone, clap::Args)]
struct Source {
    /// The server: a libpq URL or key=value string.
    #[arg(long, value_name = "URL")]
    from: Option<String>,
    /// Only this host (its id, as `harnery ship --status` shows it).
    #[arg(long, value_name = "HOST_ID")]
    host: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct ReadArgs {
    #[command(flatten)]
    source: Source,
    /// Only sessions with an event at or after this time (RFC 3339).
    #[arg(long, value_parser = super::parse_instant)]
    since: Option<i64>,
}

#[derive(Debug, clap::Args)]
struct UsageArgs {
    #[command(flatten)]
    read: ReadArgs,
    /// Group by `day` (day and model, the default) or by `session`.
    #[arg(long, value_name = "GROUP", default_value = "day", value_parser = ["day", "session"])]
    by: String,
}

#[derive(Debug, clap::Args)]
struct VerifyArgs {
    #[command(flatten)]
    source: Source,
    /// Also compare this host's rows on the server with its own ledger
    /// (run on the host; needs its home and ship key).
    #[arg(long)]
    local: bool,
}

pub fn run(args: Args) -> CmdResult {
    match args.command {
        FleetCommand::Sessions(a) => sessions(a),
        FleetCommand::Audit(a) => audit(a),
        FleetCommand::Usage(a) => usage(a),
        FleetCommand::Search(a) => {
            let (_, mut client) = connect(a.from.as_deref())?;
            super::fleet_search::run(a, &mut client)
        }
        FleetCommand::Verify(a) => run_verify(a),
        FleetCommand::Init(a) => run_init(a),
        FleetCommand::AddHost(a) => run_add(a, RoleKind::Host),
        FleetCommand::AddReader(a) => run_add(a, RoleKind::Reader),
    }
}

/// The server `text` (or `ship.to`, or the `PG*` variables) names, connected.
fn connect(text: Option<&str>) -> Result<(Target, postgres::Client), TargetError> {
    read_client(Home::from_env().ok().as_ref(), text)
}

fn run_init(a: InitArgs) -> CmdResult {
    let (target, mut client) = connect(a.url.as_deref())?;
    let version = admin::init(&mut client)?;
    println!(
        "schema harnery at version {version} on {}; roles harnery_host and harnery_reader are there; \
         give each host its role with `harnery fleet add-host NAME`",
        target.describe()
    );
    Ok(Outcome::Clean)
}

fn run_add(a: AddArgs, kind: RoleKind) -> CmdResult {
    let (target, mut client) = connect(a.url.as_deref())?;
    let made = admin::add_role(&mut client, kind, &a.name)?;
    let what = match kind {
        RoleKind::Host => {
            "ships one host's rows (bound to the host id of its first ship); give it to that host as ship.to"
        }
        RoleKind::Reader => {
            "reads the fleet, writes nothing; use it with `harnery fleet ... --from`"
        }
    };
    if made.rotated {
        eprintln!(
            "harnery fleet: role {} existed; its password is replaced by this one",
            made.role
        );
    }
    eprintln!("harnery fleet: role {} {what}", made.role);
    println!("{}", target.for_role(&made.role, &made.password));
    Ok(Outcome::Clean)
}

fn filter(a: &ReadArgs) -> ReadFilter {
    ReadFilter {
        host: a.source.host.clone(),
        since_unix_ns: a.since,
    }
}

fn sessions(a: ReadArgs) -> CmdResult {
    let (_, mut client) = connect(a.source.from.as_deref())?;
    let f = filter(&a);
    read::prepare(&mut client, &f)?;
    let rows = read::sessions(&mut client, &f)?;
    print_rows(&rows, a.source.json, None, |s| {
        let mut about = String::new();
        if let Some(p) = &s.project {
            about.push_str(&format!("  project {p}"));
        }
        if let Some(t) = &s.title {
            about.push_str(&format!("  \"{t}\""));
        }
        format!(
            "{}  {:<12} {}/{}  {} → {}  {} events, {} turns, spans {} open {} closed {} recovered  {}{}  content {}{about}",
            s.host_id,
            s.hostname,
            s.adapter,
            s.session_id,
            s.first_at,
            s.last_at,
            s.events,
            s.turns,
            s.spans_open,
            s.spans_closed_native,
            s.spans_recovered,
            s.class,
            reasons(&s.reasons),
            s.content.join("+")
        )
    })
}

/// One JSON object or one text line per row; in text, `empty` when there
/// is no row.
fn print_rows<T: serde::Serialize>(
    rows: &[T],
    json: bool,
    empty: Option<&str>,
    line: impl Fn(&T) -> String,
) -> CmdResult {
    let mut out = harnery::terminal::stdout(json);
    if let (true, false, Some(note)) = (rows.is_empty(), json, empty) {
        writeln!(out, "{note}")?;
    }
    for row in rows {
        match json {
            true => writeln!(out, "{}", serde_json::to_string(row)?)?,
            false => writeln!(out, "{}", line(row))?,
        }
    }
    Ok(Outcome::Clean)
}

/// What the usage tables say when the server holds no usage.
const NO_USAGE: &str = "no usage recorded (the ledgers shipped hold no usage events)";

fn reasons(r: &[String]) -> String {
    match r.is_empty() {
        true => String::new(),
        false => format!(" ({})", r.join(", ")),
    }
}

fn audit(a: ReadArgs) -> CmdResult {
    let (_, mut client) = connect(a.source.from.as_deref())?;
    let f = filter(&a);
    read::prepare(&mut client, &f)?;
    let audit = read::audit(&mut client, &f)?;
    let mut out = harnery::terminal::stdout(a.source.json);
    if a.source.json {
        writeln!(out, "{}", serde_json::to_string(&audit)?)?;
        return Ok(Outcome::Clean);
    }
    writeln!(out, "audit-only sessions: {}", audit.audit_only.len())?;
    for s in &audit.audit_only {
        writeln!(
            out,
            "  {} {}/{}{}",
            s.host_id,
            s.adapter,
            s.session_id,
            reasons(&s.reasons)
        )?;
    }
    writeln!(out, "interrupted sessions: {}", audit.interrupted.len())?;
    for s in &audit.interrupted {
        writeln!(
            out,
            "  {} {}/{}  last {}  spans {} open {} recovered",
            s.host_id, s.adapter, s.session_id, s.last_at, s.spans_open, s.spans_recovered
        )?;
    }
    writeln!(out, "reasons by host:")?;
    for r in &audit.reasons {
        writeln!(
            out,
            "  {} ({})  {}: {} sessions",
            r.host_id, r.hostname, r.reason, r.sessions
        )?;
    }
    Ok(Outcome::Clean)
}

fn usage(u: UsageArgs) -> CmdResult {
    let a = u.read;
    let (_, mut client) = connect(a.source.from.as_deref())?;
    let f = filter(&a);
    read::prepare(&mut client, &f)?;
    if u.by == "session" {
        return usage_by_session(&mut client, &f, a.source.json);
    }
    let rows = read::usage(&mut client, &f)?;
    print_rows(&rows, a.source.json, Some(NO_USAGE), |u| {
        format!(
            "{}  {:<24} {}  {} records  {}",
            u.day, u.model, u.host_id, u.records, u.tokens
        )
    })
}

/// Usage per session, counted as `harnery usage` counts it on the host.
fn usage_by_session(client: &mut postgres::Client, f: &ReadFilter, json: bool) -> CmdResult {
    let rows = read::usage_by_session(client, f)?;
    print_rows(&rows, json, Some(NO_USAGE), |u| {
        format!(
            "{}  {}/{}  {} records ({} inherited)  {}",
            u.host_id, u.adapter, u.session_id, u.records, u.inherited_records, u.tokens
        )
    })
}

fn run_verify(a: VerifyArgs) -> CmdResult {
    let (_, mut client) = connect(a.source.from.as_deref())?;
    let mut result = verify(&mut client, a.source.host.as_deref())?;
    if a.local {
        verify_this_host(&mut client, &Home::from_env()?, &mut result)?;
    }
    let mut out = harnery::terminal::stdout(a.source.json);
    if a.source.json {
        writeln!(out, "{}", serde_json::to_string(&result)?)?;
    } else {
        for e in &result.epochs {
            writeln!(
                out,
                "host {} epoch {}: {} rows ({} masked), head {}",
                e.host_id, e.genesis_id, e.rows, e.masked_rows, e.chain_head
            )?;
        }
        for b in &result.breaks {
            writeln!(out, "BREAK {b}")?;
        }
        for n in &result.notes {
            writeln!(out, "note {n}")?;
        }
        writeln!(out, "checked: {}", result.checks.join("; "))?;
        let verdict = match result.breaks.is_empty() {
            true => "ok".to_string(),
            false => format!("{} breaks", result.breaks.len()),
        };
        writeln!(out, "{} epochs checked: {verdict}", result.epochs.len())?;
    }
    Ok(Outcome::problems_if(!result.breaks.is_empty()))
}
