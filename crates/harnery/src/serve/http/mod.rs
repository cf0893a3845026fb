//! The HTTP/1.1 server under `harnery serve`: small, read-only, and bounded
//! in every resource a client can make it spend.
//!
//! One thread owns every socket and waits on them with `poll`: it accepts,
//! reads each request's head (at most [`MAX_HEAD`] bytes within
//! [`HEAD_TIMEOUT`]), and writes each reply as the client reads it (a reply
//! that stalls [`WRITE_STALL`], or takes over [`WRITE_TOTAL`] in all, is
//! cut). A client that sends nothing or reads slowly therefore holds a
//! socket, never a thread. Complete heads go through a bounded queue to a
//! fixed pool of workers, which build the replies. Beyond
//! [`MAX_CONNECTIONS`] open connections, the oldest that has not sent its
//! head yet is answered 503 and closed to make room (the new one is, when
//! every connection is past its head); a request that finds the queue
//! full is answered 503 too.
//!
//! The server never reads a body: a request that announces one is answered
//! 413 as soon as its head is read, and closed. Every response says
//! `Connection: close` and carries its `Content-Length`; a `HEAD` reply has
//! no body. A reply's body is written from the buffer its worker built,
//! never copied.
//!
//! - [`head`]: a request head from bytes, strictly.
//! - [`conn`]: one connection's states (head, waiting, writing, closing).

mod conn;
pub(crate) mod head;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};

use conn::{Conn, HeadRead, State};
pub use conn::{HEAD_TIMEOUT, WRITE_STALL, WRITE_TOTAL};
pub use head::MAX_HEAD;
pub(crate) use head::Request;

/// Requests built at once.
pub const WORKERS: usize = 4;
/// Complete requests waiting for a worker; beyond, 503.
pub const QUEUE: usize = 64;
/// Connections open at once; beyond, 503.
pub const MAX_CONNECTIONS: usize = 256;

/// A reply: status, headers, body.
pub(crate) struct Response {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// A short plain-text reply the server itself gives (a refused head,
    /// a timeout, no room), with `always`'s headers.
    fn refusal(status: u16, detail: &str, always: &[(&'static str, &'static str)]) -> Response {
        let mut headers: Vec<_> = always.iter().map(|(n, v)| (*n, v.to_string())).collect();
        headers.push(("Content-Type", "text/plain; charset=utf-8".to_string()));
        Response {
            status,
            headers,
            body: format!("{status} {}: {detail}\n", reason(status)).into_bytes(),
        }
    }

    /// The bytes of the status line and headers, and the body to send.
    fn into_parts(self, head_only: bool) -> (Vec<u8>, Vec<u8>) {
        let mut head = format!("HTTP/1.1 {} {}\r\n", self.status, reason(self.status));
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.body.len()
        ));
        let body = match head_only {
            true => Vec::new(),
            false => self.body,
        };
        (head.into_bytes(), body)
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Internal Server Error",
    }
}

/// What answers a request: called on a worker thread.
pub(crate) type Handler = dyn Fn(&Request) -> Response + Send + Sync;

/// A listening socket, not yet answering.
pub(crate) struct Server {
    listener: TcpListener,
    /// Headers on every response, the server's own refusals included.
    always: &'static [(&'static str, &'static str)],
}

impl Server {
    pub(crate) fn bind(
        addr: &str,
        always: &'static [(&'static str, &'static str)],
    ) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        Ok(Server { listener, always })
    }

    pub(crate) fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Answer requests with `handler` until the process ends (or the
    /// listener fails).
    pub(crate) fn run(self, handler: Arc<Handler>) -> std::io::Result<()> {
        let (jobs, queue) = sync_channel::<(u64, Request)>(QUEUE);
        let (wake_rx, wake_tx) = UnixStream::pair()?;
        wake_rx.set_nonblocking(true)?;
        wake_tx.set_nonblocking(true)?;
        let done = Arc::new(Mutex::new(Vec::new()));
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..WORKERS {
            let worker = Worker {
                queue: queue.clone(),
                done: done.clone(),
                wake: wake_tx.try_clone()?,
                handler: handler.clone(),
                always: self.always,
            };
            std::thread::Builder::new()
                .name(format!("harnery-serve-{i}"))
                .spawn(move || worker.run())?;
        }
        let mut sockets = Sockets {
            server: &self,
            jobs,
            conns: HashMap::new(),
            next_id: 0,
        };
        loop {
            sockets.turn(&wake_rx, &done)?;
        }
    }
}

/// A worker: takes a request, builds its reply, hands it back.
struct Worker {
    queue: Arc<Mutex<Receiver<(u64, Request)>>>,
    done: Arc<Mutex<Vec<(u64, Response)>>>,
    wake: UnixStream,
    handler: Arc<Handler>,
    always: &'static [(&'static str, &'static str)],
}

impl Worker {
    fn run(self) {
        loop {
            let job = match self.queue.lock() {
                Ok(queue) => queue.recv(),
                Err(_) => return,
            };
            let Ok((id, request)) = job else { return };
            let handler = &self.handler;
            let response =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler(&request)))
                    .unwrap_or_else(|_| {
                        Response::refusal(
                            500,
                            "the reply failed; see the server's stderr",
                            self.always,
                        )
                    });
            if let Ok(mut done) = self.done.lock() {
                done.push((id, response));
            }
            // A full wake pipe already holds a wake-up: the loop will look.
            let _ = (&self.wake).write(&[1]);
        }
    }
}

/// The loop's sockets: the listener, the open connections, the queue.
struct Sockets<'s> {
    server: &'s Server,
    jobs: SyncSender<(u64, Request)>,
    conns: HashMap<u64, Conn>,
    next_id: u64,
}

impl Sockets<'_> {
    /// One wait on every socket, then what each is ready for.
    fn turn(
        &mut self,
        wake: &UnixStream,
        done: &Mutex<Vec<(u64, Response)>>,
    ) -> std::io::Result<()> {
        // A connection whose reply is being built is not polled: a client
        // that hangs up meanwhile would make every poll return at once.
        let ids: Vec<u64> = (self.conns.iter())
            .filter(|(_, c)| !matches!(c.state, State::Waiting))
            .map(|(id, _)| *id)
            .collect();
        let ready = self.wait(wake, &ids)?;
        let now = Instant::now();
        if ready[1] {
            let mut sink = [0u8; 256];
            while matches!((&*wake).read(&mut sink), Ok(n) if n > 0) {}
            let replies =
                std::mem::take(&mut *done.lock().expect("a worker never panics holding the list"));
            for (id, response) in replies {
                if let Some(conn) = self.conns.get_mut(&id) {
                    conn.reply(response, now);
                    self.step(id, now);
                }
            }
        }
        for (id, is_ready) in ids.iter().zip(&ready[2..]) {
            if *is_ready {
                self.step(*id, now);
            }
        }
        self.expire(now);
        if ready[0] {
            self.accept(now)?;
        }
        Ok(())
    }

    /// Poll the listener, the wake pipe and each connection in `ids`;
    /// which were ready, in that order.
    fn wait(&self, wake: &UnixStream, ids: &[u64]) -> std::io::Result<Vec<bool>> {
        let mut fds = Vec::with_capacity(ids.len() + 2);
        fds.push(PollFd::new(&self.server.listener, PollFlags::IN));
        fds.push(PollFd::new(wake, PollFlags::IN));
        for id in ids {
            let conn = &self.conns[id];
            let events = match conn.state {
                State::Head(_) | State::Closing => PollFlags::IN,
                State::Writing(_) => PollFlags::OUT,
                State::Waiting => continue,
            };
            fds.push(PollFd::new(&conn.stream, events));
        }
        let soonest = self.conns.values().map(|c| c.deadline).min();
        let timeout = soonest.map(|d| {
            let wait = d.saturating_duration_since(Instant::now()) + Duration::from_millis(1);
            Timespec {
                tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
                tv_nsec: wait.subsec_nanos().into(),
            }
        });
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(vec![false; fds.len()]),
            Err(e) => return Err(e.into()),
        }
        Ok(fds.iter().map(|f| !f.revents().is_empty()).collect())
    }

    /// Take every waiting connection: each gets a place, or 503.
    fn accept(&mut self, now: Instant) -> std::io::Result<()> {
        loop {
            match self.server.listener.accept() {
                Ok((stream, _)) => self.admit(stream, now),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // Out of descriptors or memory: the waiting clients stay
                // queued in the kernel until a connection closes.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    return Ok(());
                }
            }
        }
    }

    fn admit(&mut self, stream: TcpStream, now: Instant) {
        if stream.set_nonblocking(true).is_err() {
            return;
        }
        if self.conns.len() >= MAX_CONNECTIONS {
            let busy = "the server has too many connections open; try again";
            // The oldest connection still to send its head makes room: a
            // flood of idle connections cannot keep a real request out.
            let idle = (self.conns.iter())
                .filter(|(_, c)| matches!(c.state, State::Head(_)))
                .map(|(id, _)| *id)
                .min();
            match idle.and_then(|id| self.conns.remove(&id)) {
                Some(oldest) => self.turn_away(oldest.stream, busy),
                None => return self.turn_away(stream, busy),
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        self.conns.insert(id, Conn::new(stream, now));
    }

    /// Answer 503 at once and close: no place is taken.
    fn turn_away(&self, stream: TcpStream, why: &str) {
        let (head, body) = Response::refusal(503, why, self.server.always).into_parts(false);
        // What the client sent is read first, so the close does not reset
        // the connection before the reply is read.
        let _ = (&stream).read(&mut [0u8; MAX_HEAD]);
        let _ = (&stream).write_all(&[head, body].concat());
        let _ = stream.shutdown(Shutdown::Write);
    }

    /// Whatever connection `id` is ready for.
    fn step(&mut self, id: u64, now: Instant) {
        let Some(conn) = self.conns.get_mut(&id) else {
            return;
        };
        let open = match conn.state {
            State::Head(_) => match conn.read_head() {
                HeadRead::More => true,
                HeadRead::Gone => false,
                HeadRead::Refused(status, why) => {
                    conn.reply(Response::refusal(status, &why, self.server.always), now);
                    conn.write_some(now)
                }
                HeadRead::Request(request) => return self.dispatch(id, request, now),
            },
            State::Waiting => true,
            State::Writing(_) => conn.write_some(now),
            State::Closing => conn.drain_closing(),
        };
        if !open {
            self.conns.remove(&id);
        }
    }

    /// A complete head: refused here when it announces a body, else queued
    /// for a worker (503 when the queue is full).
    fn dispatch(&mut self, id: u64, request: Request, now: Instant) {
        let always = self.server.always;
        let conn = self
            .conns
            .get_mut(&id)
            .expect("dispatch is called on an open connection");
        conn.head_only = request.is_head();
        let refusal = match request.announces_body() {
            true => Some((413, "the server only reads: a request has no body")),
            false => match self.jobs.try_send((id, request)) {
                Ok(()) => None,
                Err(TrySendError::Full(_)) => Some((503, "every worker is busy; try again")),
                Err(TrySendError::Disconnected(_)) => Some((500, "the server's workers stopped")),
            },
        };
        match refusal {
            None => {
                conn.state = State::Waiting;
                // A worker has the request; its reply is not timed.
                conn.deadline = now + Duration::from_secs(24 * 3600);
            }
            Some((status, why)) => {
                conn.reply(Response::refusal(status, why, always), now);
                if !conn.write_some(now) {
                    self.conns.remove(&id);
                }
            }
        }
    }

    /// Connections past their deadline: a head not sent in time gets 408;
    /// a reply not read in time, or a close not finished, is cut.
    fn expire(&mut self, now: Instant) {
        let late: Vec<u64> = self
            .conns
            .iter()
            .filter(|(_, c)| c.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            let conn = self.conns.get_mut(&id).expect("a late connection is open");
            let why = format!("the request head did not come within {HEAD_TIMEOUT:?}");
            let open = match conn.state {
                // The 408 is written like any reply, and cut like one.
                State::Head(_) => {
                    conn.reply(Response::refusal(408, &why, self.server.always), now);
                    conn.write_some(now)
                }
                _ => false,
            };
            if !open {
                self.conns.remove(&id);
            }
        }
    }
}
