//! One connection's life in the server's loop: its head read (within a
//! deadline, at most [`MAX_HEAD`] bytes), the wait for a worker's reply,
//! the reply written (within a deadline, without copying the body), and a
//! short lingering close. Every step is non-blocking: the loop calls in
//! when `poll` says the socket is ready, and never waits on one client.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use super::Response;
use super::head::{self, MAX_HEAD, Request};

/// How long a client has to send its whole request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a reply may wait for the client to read any of it.
pub const WRITE_STALL: Duration = Duration::from_secs(10);
/// How long a whole reply may take to be read, however large.
pub const WRITE_TOTAL: Duration = Duration::from_secs(60);
/// How long a closed reply waits for the client to finish sending.
const LINGER: Duration = Duration::from_secs(2);

pub(crate) enum State {
    /// Reading the head into the buffer.
    Head(Vec<u8>),
    /// The head went to a worker; the reply is awaited.
    Waiting,
    /// Writing: the head, then the body from `sent`.
    Writing(Outgoing),
    /// The reply is sent and our side shut: what the client still sends is
    /// read and dropped until it closes, so no reset destroys the reply.
    Closing,
}

pub(crate) struct Outgoing {
    head: Vec<u8>,
    body: Vec<u8>,
    sent: usize,
    /// When the current stall started (reset by every write that moves).
    stalled_since: Instant,
    /// When the whole reply must be written.
    finish_by: Instant,
}

/// What a read of the head came to.
pub(crate) enum HeadRead {
    /// More is needed.
    More,
    /// The client went away.
    Gone,
    /// A complete, well-formed head.
    Request(Request),
    /// A head the server refuses: the status and why.
    Refused(u16, String),
}

pub(crate) struct Conn {
    pub stream: TcpStream,
    pub state: State,
    /// When the current state must be done.
    pub deadline: Instant,
    /// Whether the reply is to a `HEAD` request (no body is sent).
    pub head_only: bool,
}

impl Conn {
    pub(crate) fn new(stream: TcpStream, now: Instant) -> Conn {
        Conn {
            stream,
            state: State::Head(Vec::new()),
            deadline: now + HEAD_TIMEOUT,
            head_only: false,
        }
    }

    /// Read what the client sent of its head.
    pub(crate) fn read_head(&mut self) -> HeadRead {
        let State::Head(buf) = &mut self.state else {
            return HeadRead::More;
        };
        let mut chunk = [0u8; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return HeadRead::Gone,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return HeadRead::More,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return HeadRead::Gone,
            }
            match head::head_end(buf) {
                Some(end) if end <= MAX_HEAD => {
                    return match head::parse(&buf[..end]) {
                        Ok(request) => HeadRead::Request(request),
                        Err(m) => HeadRead::Refused(m.status, m.detail),
                    };
                }
                None if buf.len() <= MAX_HEAD => continue,
                _ => {
                    return HeadRead::Refused(
                        431,
                        format!("the request head is over {MAX_HEAD} bytes"),
                    );
                }
            }
        }
    }

    /// Start writing `response` (its body only when the request was not `HEAD`).
    pub(crate) fn reply(&mut self, response: Response, now: Instant) {
        let (head, body) = response.into_parts(self.head_only);
        self.state = State::Writing(Outgoing {
            head,
            body,
            sent: 0,
            stalled_since: now,
            finish_by: now + WRITE_TOTAL,
        });
        self.deadline = now + WRITE_STALL;
    }

    /// Write what the socket takes; whether the connection is still open.
    pub(crate) fn write_some(&mut self, now: Instant) -> bool {
        let State::Writing(out) = &mut self.state else {
            return true;
        };
        loop {
            let at = out.sent;
            let rest = match at < out.head.len() {
                true => &out.head[at..],
                false => &out.body[at - out.head.len()..],
            };
            if rest.is_empty() && at >= out.head.len() {
                return self.close(now);
            }
            match self.stream.write(rest) {
                Ok(0) => return false,
                Ok(n) => {
                    out.sent += n;
                    out.stalled_since = now;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
        self.deadline = (out.stalled_since + WRITE_STALL).min(out.finish_by);
        true
    }

    /// Our side is done: shut it and linger for the client's close.
    fn close(&mut self, now: Instant) -> bool {
        if self.stream.shutdown(Shutdown::Write).is_err() {
            return false;
        }
        self.state = State::Closing;
        self.deadline = now + LINGER;
        true
    }

    /// Drop what the client still sends; whether to keep lingering.
    pub(crate) fn drain_closing(&mut self) -> bool {
        let mut sink = [0u8; 4096];
        for _ in 0..16 {
            match self.stream.read(&mut sink) {
                Ok(0) => return false,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return false,
            }
        }
        // A client that keeps sending is not waited for.
        false
    }
}
