//! A real OTLP/HTTP receiver for the tests: a TCP server on a free local
//! port that reads each POST to `/v1/traces`, decodes its body with the
//! OpenTelemetry protobuf definitions' own types (`application/x-protobuf`
//! with prost, `application/json` with their serde mapping), keeps every
//! span it was sent, and answers as planned (a status, a `Retry-After`, a
//! partial success), else 200.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;

/// One span as received.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Got {
    pub trace: String,
    pub span: String,
    pub name: String,
    /// The request it came in (0 first).
    pub request: usize,
}

/// An answer other than 200.
#[derive(Debug, Clone)]
pub enum Plan {
    Status {
        status: u16,
        retry_after: Option<u64>,
    },
    Partial {
        rejected: i64,
        message: String,
    },
}

#[derive(Default)]
struct State {
    spans: Vec<Got>,
    /// Every request taken, as decoded.
    taken: Vec<ExportTraceServiceRequest>,
    requests: usize,
    content_types: Vec<String>,
    headers: Vec<String>,
    plan: VecDeque<Plan>,
    /// A pause before each answer (so a kill finds a request in flight).
    delay: Duration,
}

pub struct Receiver {
    pub port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Receiver {
    /// On a free port.
    pub fn start() -> Receiver {
        Receiver::on(0)
    }

    /// On `port` (0: a free one).
    pub fn on(port: u16) -> Receiver {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("the port is free");
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (state.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        conn.set_nonblocking(false).unwrap();
                        let s = s.clone();
                        std::thread::spawn(move || serve(conn, &s));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => panic!("accept: {e}"),
                }
            }
        });
        Receiver {
            port,
            state,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1/traces", self.port)
    }

    pub fn plan(&self, plan: Plan) {
        self.state.lock().unwrap().plan.push_back(plan);
    }

    pub fn delay(&self, d: Duration) {
        self.state.lock().unwrap().delay = d;
    }

    pub fn spans(&self) -> Vec<Got> {
        self.state.lock().unwrap().spans.clone()
    }

    /// Every request the receiver took (answered 200), as decoded.
    pub fn taken(&self) -> Vec<ExportTraceServiceRequest> {
        self.state.lock().unwrap().taken.clone()
    }

    pub fn requests(&self) -> usize {
        self.state.lock().unwrap().requests
    }

    pub fn content_types(&self) -> Vec<String> {
        self.state.lock().unwrap().content_types.clone()
    }

    /// Every header line of every request, lowercased names.
    pub fn headers(&self) -> Vec<String> {
        self.state.lock().unwrap().headers.clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn serve(conn: TcpStream, state: &Mutex<State>) {
    conn.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    assert!(line.starts_with("POST /v1/traces "), "{line}");
    let (mut length, mut content_type, mut headers) = (0usize, String::new(), Vec::new());
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (name, value) = l.split_once(':').unwrap();
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
        match name.as_str() {
            "content-length" => length = value.parse().unwrap(),
            "content-type" => content_type = value.clone(),
            _ => {}
        }
        headers.push(format!("{name}: {value}"));
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return; // the sender was killed mid-body: nothing was taken
    }
    let request: ExportTraceServiceRequest = match content_type.as_str() {
        "application/x-protobuf" => ExportTraceServiceRequest::decode(&body[..]).expect("protobuf"),
        "application/json" => serde_json::from_slice(&body).expect("OTLP/JSON"),
        other => panic!("content type {other:?}"),
    };
    let delay = state.lock().unwrap().delay;
    std::thread::sleep(delay);
    let mut s = state.lock().unwrap();
    let planned = s.plan.pop_front();
    let n = s.requests;
    s.requests += 1;
    s.content_types.push(content_type.clone());
    s.headers.extend(headers);
    let (status, retry_after, partial) = match planned {
        Some(Plan::Status {
            status,
            retry_after,
        }) => (status, retry_after, None),
        Some(Plan::Partial { rejected, message }) => (200, None, Some((rejected, message))),
        None => (200, None, None),
    };
    if status == 200 {
        for rs in &request.resource_spans {
            for span in rs.scope_spans.iter().flat_map(|s| &s.spans) {
                s.spans.push(Got {
                    trace: hex(&span.trace_id),
                    span: hex(&span.span_id),
                    name: span.name.clone(),
                    request: n,
                });
            }
        }
        s.taken.push(request);
    }
    drop(s);
    let response = ExportTraceServiceResponse {
        partial_success: partial.map(
            |(rejected_spans, error_message)| ExportTracePartialSuccess {
                rejected_spans,
                error_message,
            },
        ),
    };
    let body = match (status, content_type.as_str()) {
        (200, "application/x-protobuf") => response.encode_to_vec(),
        (200, _) => serde_json::to_vec(&response).unwrap(),
        _ => b"busy\n".to_vec(),
    };
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nContent-Type: {content_type}\r\n",
        body.len()
    );
    if let Some(s) = retry_after {
        head.push_str(&format!("Retry-After: {s}\r\n"));
    }
    head.push_str("\r\n");
    let mut conn = conn;
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(&body);
}
