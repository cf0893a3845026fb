//! `harnery serve`: a read-only local web app over the live ledger.
//!
//! Pages (sessions, a session, an event's stored text, usage, health,
//! search) and a JSON API with the fields of the command line's `--json`, served by a
//! small synchronous HTTP server (`tiny_http`, a few worker threads, no
//! async runtime). Safe by default: the caller binds 127.0.0.1 unless told
//! otherwise; every request must name the bound address in `Host` (and
//! `Origin`) and carry the random token printed at start (or the cookie,
//! named for the port, its first use sets); only `GET` and `HEAD` without a
//! body are answered; every response carries a strict content security
//! policy.
//!
//! Each request opens the live epoch read-only for itself ([`data`]), so
//! `finalize` keeps writing while the server runs, and reads only what it
//! shows. Never writes to the ledger; a search, as `harnery search` does,
//! brings the search index beside it up to date first.
//!
//! - [`guard`]: the token, the cookie, the methods and the headers.
//! - [`query`]: request targets; [`routes`]: which reply a target gets.
//! - [`search`]: `/search` and `/api/search`, the filters of `harnery search`.
//! - [`data`]: the reads; [`api`]: the JSON; [`pages`]: the HTML.
//! - [`assets`]: the style sheets and scripts, built in.
//! - [`fleet`]: `--from postgresql://…`, the fleet's sessions.

pub(crate) mod api;
pub(crate) mod assets;
pub(crate) mod data;
pub mod fleet;
pub(crate) mod guard;
pub(crate) mod pages;
pub(crate) mod query;
pub(crate) mod routes;
pub(crate) mod search;

use std::net::SocketAddr;
use std::sync::Arc;

use tiny_http::{Header, Response};

use crate::home::Home;
use data::Source;
use guard::Admission;
use query::Target;
use routes::Reply;

/// Requests answered at once.
const WORKERS: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {detail}")]
    Bind { addr: String, detail: String },
    #[error("cannot make the access token from /dev/urandom: {0}")]
    Token(std::io::Error),
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

/// A server bound to its address, not yet answering.
pub struct Bound {
    server: Arc<tiny_http::Server>,
    backend: Arc<Backend>,
    token: String,
}

/// Listen on `addr` (`host:port`; port 0 takes a free one) over `backend`.
pub fn bind(addr: &str, backend: Backend) -> Result<Bound, ServeError> {
    let token = guard::new_token().map_err(ServeError::Token)?;
    let server = tiny_http::Server::http(addr).map_err(|e| ServeError::Bind {
        addr: addr.to_string(),
        detail: e.to_string(),
    })?;
    Ok(Bound {
        server: Arc::new(server),
        backend: Arc::new(backend),
        token,
    })
}

impl Bound {
    /// The address actually bound (the port chosen when 0 was asked).
    pub(crate) fn addr(&self) -> Option<SocketAddr> {
        self.server.server_addr().to_ip()
    }

    /// The URL that admits a browser: the address and the token.
    pub fn url(&self) -> String {
        let addr = self
            .addr()
            .map_or("127.0.0.1:0".to_string(), |a| a.to_string());
        format!("http://{addr}/?token={}", self.token)
    }

    /// Answer requests until the process ends.
    pub fn run(self) {
        let bound = self
            .addr()
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let (server, backend, token) = (
                    self.server.clone(),
                    self.backend.clone(),
                    self.token.clone(),
                );
                std::thread::spawn(move || {
                    while let Ok(request) = server.recv() {
                        match announces_body(&request) {
                            true => refuse_body(request),
                            false => answer(&backend, &token, bound, request),
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
    }
}

/// Whether a request says a body follows (`Content-Length` above 0, or a
/// `Transfer-Encoding`). The server only reads, so no request has one.
fn announces_body(request: &tiny_http::Request) -> bool {
    request.body_length().is_some_and(|n| n > 0)
        || request
            .headers()
            .iter()
            .any(|h| h.field.equiv("Transfer-Encoding"))
}

/// Answer 413 to a request with a body, without reading it, and close.
/// `tiny_http` reads what is left of a body when the request is dropped,
/// so the answer is sent from a thread of its own: a client that announces
/// a body and never sends it holds that thread, never a worker.
fn refuse_body(request: tiny_http::Request) {
    std::thread::spawn(move || {
        let detail = "the server only reads: a request has no body";
        let reply = Reply::problem(413, request.url().starts_with("/api/"), detail);
        let mut response = Response::from_data(reply.body).with_status_code(reply.status);
        response.add_header(header("Content-Type", reply.content_type));
        response.add_header(header("Connection", "close"));
        let _ = request.respond(response);
    });
}

/// The header `name`'s value, if the request has it.
fn header_value(request: &tiny_http::Request, name: &'static str) -> Option<String> {
    request
        .headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str().to_string())
}

/// Guard, route and send one request; a reply that cannot be sent (the
/// client went away) is dropped.
fn answer(backend: &Backend, token: &str, bound: SocketAddr, request: tiny_http::Request) {
    let target = Target::parse(request.url());
    let api = target.segments.first().is_some_and(|s| s == "api");
    let cookie = header_value(&request, "Cookie");
    let misdirected = guard::misdirected(
        bound,
        header_value(&request, "Host").as_deref(),
        header_value(&request, "Origin").as_deref(),
    );
    let admission = guard::admit(
        token,
        bound.port(),
        target.param("token"),
        cookie.as_deref(),
    );
    let method = request.method().as_str().to_string();
    let reply = match (&misdirected, &admission, guard::reads(&method)) {
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
            None => routed(backend, &target),
        },
    };
    let mut response = Response::from_data(reply.body).with_status_code(reply.status);
    response.add_header(header("Content-Type", reply.content_type));
    for (name, value) in guard::headers() {
        response.add_header(header(name, value));
    }
    if reply.status == 405 {
        response.add_header(header("Allow", "GET, HEAD"));
    }
    if misdirected.is_none() && admission == Admission::Introduced {
        let cookie = guard::set_cookie(token, bound.port());
        response.add_header(header("Set-Cookie", &cookie));
    }
    let _ = request.respond(response);
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

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes())
        .expect("header names and values are ASCII")
}
