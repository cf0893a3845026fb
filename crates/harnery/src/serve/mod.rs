//! `harnery serve`: a read-only local web app over the live ledger, kept
//! current while it runs.
//!
//! Pages (sessions, a session, an event's stored text, usage, health,
//! search) and a JSON API with the fields of the command line's `--json`, served by
//! harnery's own small HTTP/1.1 server ([`http`]: one thread polls every
//! socket with timeouts, a fixed pool of workers builds the replies, no
//! async runtime). Safe by default: the caller binds 127.0.0.1 unless told
//! otherwise; every request must name this server in `Host` (and
//! `Origin`) and carry the random token printed at start (or the cookie,
//! named for the port, its first use sets); only `GET` and `HEAD` without a
//! body are answered; every response carries a strict content security
//! policy.
//!
//! Each request opens the live epoch read-only for itself ([`data`]), so
//! `finalize` keeps writing while the server runs, and reads only what it
//! shows. No request writes to the ledger; a search, as `harnery search` does,
//! brings the search index beside it up to date first. Beside the
//! requests, [`live`] drains the spool into the home's ledger when it
//! changed, under finalize's lease, so a hook event shows within seconds.
//!
//! - [`http`]: the server: sockets, timeouts, limits, the workers.
//! - [`guard`]: the token, the cookie, the methods and the names.
//! - [`query`]: request targets; [`routes`]: which reply a target gets.
//! - [`search`]: `/search` and `/api/search`, the filters of `harnery search`.
//! - [`data`]: the reads; [`api`]: the JSON; [`pages`]: the HTML.
//! - [`assets`]: the style sheets and scripts, built in.
//! - [`fleet`]: `--from postgresql://…`, the fleet's sessions.
//! - [`live`]: the spool drained while the server runs.

pub(crate) mod api;
pub(crate) mod assets;
pub(crate) mod data;
pub mod fleet;
pub mod guard;
pub mod http;
pub mod live;
pub(crate) mod pages;
pub(crate) mod query;
pub(crate) mod routes;
pub(crate) mod search;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use crate::home::Home;
use data::Source;
use guard::{Admission, Names};
use http::{Request, Response};
use query::Target;
use routes::Reply;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {detail}")]
    Bind { addr: String, detail: String },
    #[error("cannot make the access token from /dev/urandom: {0}")]
    Token(std::io::Error),
    #[error("the server stopped: {0}")]
    Stopped(std::io::Error),
}

/// What a server reads: a home's live ledger, or the fleet's PostgreSQL.
pub enum Backend {
    Ledger(Source),
    Fleet(Box<fleet::Fleet>),
}

impl Backend {
    pub fn home(home: Home) -> Backend {
        Backend::Ledger(Source::new(home))
    }
}

/// How a server is run beyond its address.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Names served besides the bound address's (`--allow-host`).
    pub allow_hosts: Vec<String>,
    /// Keep the home's ledger current from its spool while serving
    /// (never for the fleet).
    pub drain: bool,
}

/// A server bound to its address, not yet answering.
pub struct Bound {
    server: http::Server,
    bound: SocketAddr,
    backend: Backend,
    token: String,
    options: Options,
}

/// Listen on `addr` (`host:port`; port 0 takes a free one) over `backend`.
pub fn bind(addr: &str, backend: Backend, options: Options) -> Result<Bound, ServeError> {
    let token = guard::new_token().map_err(ServeError::Token)?;
    let cannot = |e: std::io::Error| ServeError::Bind {
        addr: addr.to_string(),
        detail: e.to_string(),
    };
    let server = http::Server::bind(addr, guard::HEADERS).map_err(cannot)?;
    let bound = server.local_addr().map_err(cannot)?;
    Ok(Bound {
        server,
        bound,
        backend,
        token,
        options,
    })
}

impl Bound {
    /// The address actually bound (the port chosen when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.bound
    }

    /// The URL that admits a browser: the address and the token. Bound to
    /// every address (`0.0.0.0`, `[::]`), it names the loopback one, which
    /// a browser on this machine reaches.
    pub fn url(&self) -> String {
        let shown = match self.bound.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => {
                SocketAddr::from((Ipv4Addr::LOCALHOST, self.bound.port()))
            }
            IpAddr::V6(ip) if ip.is_unspecified() => {
                SocketAddr::from((Ipv6Addr::LOCALHOST, self.bound.port()))
            }
            _ => self.bound,
        };
        format!("http://{shown}/?token={}", self.token)
    }

    /// Answer requests (and, over a home with `drain`, keep its ledger
    /// current) until the process ends.
    pub fn run(self) -> Result<(), ServeError> {
        if let (Backend::Ledger(source), true) = (&self.backend, self.options.drain) {
            live::start(source.home.clone());
        }
        let gate = Gate {
            backend: self.backend,
            token: self.token,
            names: Names::new(self.bound, self.options.allow_hosts),
            port: self.bound.port(),
        };
        let handler: Arc<http::Handler> = Arc::new(move |r: &Request| gate.answer(r));
        self.server.run(handler).map_err(ServeError::Stopped)
    }
}

/// What every request passes: the names, the token, the methods.
struct Gate {
    backend: Backend,
    token: String,
    names: Names,
    port: u16,
}

impl Gate {
    /// Guard and route one request.
    fn answer(&self, request: &Request) -> Response {
        let target = Target::parse(&request.target);
        let misdirected = self
            .names
            .misdirected(request.header("Host"), request.header("Origin"));
        let admission = guard::admit(
            &self.token,
            self.port,
            target.param("token"),
            request.header("Cookie"),
        );
        let reply = self.reply(&target, &request.method, &misdirected, &admission);
        let mut headers: Vec<(&'static str, String)> = guard::HEADERS
            .iter()
            .map(|(n, v)| (*n, v.to_string()))
            .collect();
        headers.push(("Content-Type", reply.content_type.to_string()));
        if reply.status == 405 {
            headers.push(("Allow", "GET, HEAD".to_string()));
        }
        if misdirected.is_none() && admission == Admission::Introduced {
            headers.push(("Set-Cookie", guard::set_cookie(&self.token, self.port)));
        }
        Response {
            status: reply.status,
            headers,
            body: reply.body,
        }
    }

    /// The reply the guard's verdicts leave: a refusal, or the route's.
    fn reply(
        &self,
        target: &Target,
        method: &str,
        misdirected: &Option<(u16, String)>,
        admission: &Admission,
    ) -> Reply {
        let api = target.segments.first().is_some_and(|s| s == "api");
        match (misdirected, admission, guard::reads(method)) {
            (Some((status, why)), _, _) => Reply::problem(*status, api, why),
            (_, Admission::Refused, _) => Reply::problem(
                403,
                api,
                "this server needs its token: open the URL `harnery serve` printed at start",
            ),
            (_, _, false) => Reply::problem(405, api, "the server only reads: GET and HEAD"),
            (_, _, true) => match target.invalid.first() {
                Some(name) => Reply::problem(
                    400,
                    api,
                    &format!("{name} holds a NUL or bytes that are not UTF-8"),
                ),
                None => routed(&self.backend, target),
            },
        }
    }
}

/// The route's reply; a read that panics answers 500 and the server goes on.
fn routed(backend: &Backend, target: &Target) -> Reply {
    let api = target.segments.first().is_some_and(|s| s == "api");
    let route = || match backend {
        Backend::Ledger(source) => routes::route(source, target),
        Backend::Fleet(f) => fleet::route(f, target).unwrap_or_else(|| {
            Reply::problem(404, api, "not served from the fleet: only the sessions")
        }),
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(route))
        .unwrap_or_else(|_| Reply::problem(500, api, "the read failed; see the server's stderr"))
}
