//! The push: the OTLP export's documents, as they come, each cut down to
//! the spans the endpoint has not taken as they are now, put on the wire
//! (protobuf or JSON), sent with retries, and recorded once taken.
//!
//! [`Pusher`] is the writer the export writes its documents into (one
//! per line, each at most [`SPANS_PER_DOCUMENT`] spans), so a push holds
//! what an export holds plus one document, whatever the ledger's size.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::delivered::{Delivered, DeliveredError, Digest, SpanKey};
use super::http::{self, Response};
use super::proto::{PartialSuccess, ShapeError, encode_request};
use super::settings::{Protocol, Settings};
#[cfg(doc)]
use crate::export::SPANS_PER_DOCUMENT;
use crate::progress::Progress;

/// How a push behaves beyond where it sends.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// The most spans one request carries (the export's documents).
    pub spans_per_request: usize,
    /// Further tries of a request after a retryable failure (429, 502,
    /// 503, 504, a connection that failed).
    pub retries: u32,
    /// Count what would be sent; send and record nothing.
    pub dry_run: bool,
}

/// What a push did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PushSummary {
    pub endpoint: String,
    pub protocol: &'static str,
    pub dry_run: bool,
    /// Requests the receiver took.
    pub requests: u64,
    /// Traces (sessions) with a span sent.
    pub traces: u64,
    pub spans_sent: u64,
    /// Spans the endpoint already had as they are.
    pub spans_unchanged: u64,
    /// Sessions passed over unread: the endpoint took them as they are.
    pub sessions_unchanged: u64,
    /// Spans the receiver said it rejected (partial success).
    pub rejected_spans: u64,
    /// The receivers' messages with those rejections (the first few).
    pub rejections: Vec<String>,
    /// Requests tried again.
    pub retries: u64,
    /// Ledger rows the export could not use (named on stderr).
    pub rows_left_out: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(
        "OTLP receiver {endpoint} did not take the spans after {attempts} attempt(s): {detail}. \
         Nothing is lost: the next push sends what this one did not"
    )]
    Unreachable {
        endpoint: String,
        attempts: u32,
        detail: String,
    },
    #[error(
        "OTLP receiver {endpoint} refused the spans: HTTP {status}{body}. \
         Nothing is lost: the next push sends what this one did not"
    )]
    Refused {
        endpoint: String,
        status: u16,
        body: String,
    },
    #[error(transparent)]
    Delivered(#[from] DeliveredError),
    #[error(transparent)]
    Shape(#[from] ShapeError),
}

/// The longest wait between tries, whatever `Retry-After` says.
const MAX_WAIT: Duration = Duration::from_secs(60);
/// The first wait without a `Retry-After`; it doubles each try.
const FIRST_WAIT: Duration = Duration::from_millis(500);
/// Rejection messages kept for the summary.
const MESSAGES_KEPT: usize = 5;

#[derive(Deserialize)]
struct Doc<'a> {
    #[serde(rename = "resourceSpans", borrow)]
    resource_spans: Vec<ResourceSpans<'a>>,
}

#[derive(Deserialize)]
struct ResourceSpans<'a> {
    #[serde(borrow)]
    resource: &'a RawValue,
    #[serde(rename = "scopeSpans", borrow)]
    scope_spans: Vec<ScopeSpans<'a>>,
}

#[derive(Deserialize)]
struct ScopeSpans<'a> {
    #[serde(borrow)]
    scope: &'a RawValue,
    #[serde(borrow)]
    spans: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
struct Ids<'a> {
    #[serde(rename = "traceId")]
    trace: &'a str,
    #[serde(rename = "spanId")]
    span: &'a str,
}

fn span_key(ids: &Ids<'_>) -> Result<SpanKey, ShapeError> {
    let mut key = [0u8; 24];
    let hex = ids
        .trace
        .bytes()
        .chain(ids.span.bytes())
        .collect::<Vec<_>>();
    if hex.len() != 48 {
        return Err(shape(&format!(
            "span {}/{} has ids of the wrong length",
            ids.trace, ids.span
        )));
    }
    for (i, pair) in hex.chunks(2).enumerate() {
        let text = std::str::from_utf8(pair).unwrap_or("zz");
        key[i] = u8::from_str_radix(text, 16).map_err(|_| {
            shape(&format!(
                "span {}/{} has ids that are not hex",
                ids.trace, ids.span
            ))
        })?;
    }
    Ok(key)
}

fn shape(what: &str) -> ShapeError {
    super::proto::shape_error(what)
}

/// The writer a push's export writes into: each whole line is a document.
pub struct Pusher<'d> {
    settings: &'d Settings,
    options: &'d PushOptions,
    delivered: &'d mut Delivered,
    tls: Arc<rustls::ClientConfig>,
    line: Vec<u8>,
    traces: HashSet<[u8; 16]>,
    /// What the endpoint took of the traces of the document at hand.
    taken: HashMap<[u8; 16], HashMap<SpanKey, Digest>>,
    pub summary: PushSummary,
    /// Why the push stopped, where it did.
    pub failure: Option<PushError>,
    /// Where the spans sent so far are told (a terminal's progress line).
    progress: Progress,
}

impl<'d> Pusher<'d> {
    pub fn new(
        settings: &'d Settings,
        options: &'d PushOptions,
        delivered: &'d mut Delivered,
        progress: Progress,
    ) -> Pusher<'d> {
        Pusher {
            summary: PushSummary {
                endpoint: settings.endpoint.clone(),
                protocol: settings.protocol.as_str(),
                dry_run: options.dry_run,
                ..PushSummary::default()
            },
            tls: http::tls_config(),
            settings,
            options,
            delivered,
            line: Vec::new(),
            traces: HashSet::new(),
            taken: HashMap::new(),
            failure: None,
            progress,
        }
    }

    /// Send one document's spans the endpoint lacks.
    fn document(&mut self, line: &[u8]) -> Result<(), PushError> {
        let doc: Doc<'_> = serde_json::from_slice(line)
            .map_err(|e| shape(&format!("a document does not parse: {e}")))?;
        self.load_taken(&doc)?;
        let mut text = String::from("{\"resourceSpans\":[");
        let mut fresh: Vec<(SpanKey, Digest)> = Vec::new();
        let mut first_resource = true;
        for rs in &doc.resource_spans {
            let mut scopes = String::new();
            for ss in &rs.scope_spans {
                let mut spans = String::new();
                for span in &ss.spans {
                    let ids: Ids<'_> = serde_json::from_str(span.get())
                        .map_err(|e| shape(&format!("a span without ids: {e}")))?;
                    let key = span_key(&ids)?;
                    let hash = blake3::hash(span.get().as_bytes());
                    let digest: Digest = hash.as_bytes()[..16].try_into().expect("16 of 32 bytes");
                    let trace: [u8; 16] = key[..16].try_into().expect("16 bytes");
                    let had = self.taken.get(&trace).and_then(|t| t.get(&key));
                    if had == Some(&digest) {
                        self.summary.spans_unchanged += 1;
                        continue;
                    }
                    if !spans.is_empty() {
                        spans.push(',');
                    }
                    spans.push_str(span.get());
                    fresh.push((key, digest));
                }
                if spans.is_empty() {
                    continue;
                }
                if !scopes.is_empty() {
                    scopes.push(',');
                }
                scopes.push_str(&format!(
                    "{{\"scope\":{},\"spans\":[{spans}]}}",
                    ss.scope.get()
                ));
            }
            if scopes.is_empty() {
                continue;
            }
            if !first_resource {
                text.push(',');
            }
            first_resource = false;
            text.push_str(&format!(
                "{{\"resource\":{},\"scopeSpans\":[{scopes}]}}",
                rs.resource.get()
            ));
        }
        text.push_str("]}");
        if fresh.is_empty() {
            return Ok(());
        }
        for (key, _) in &fresh {
            self.traces.insert(key[..16].try_into().expect("16 bytes"));
        }
        self.summary.traces = self.traces.len() as u64;
        self.summary.spans_sent += fresh.len() as u64;
        if self.options.dry_run {
            return Ok(());
        }
        let body = match self.settings.protocol {
            Protocol::Json => text.into_bytes(),
            Protocol::Protobuf => encode_request(&text)?,
        };
        let partial = self.send(&body)?;
        self.summary.requests += 1;
        if partial.rejected_spans > 0 || !partial.error_message.is_empty() {
            self.summary.rejected_spans += partial.rejected_spans.max(0) as u64;
            if self.summary.rejections.len() < MESSAGES_KEPT {
                self.summary.rejections.push(partial.error_message);
            }
        }
        // Taken (rejected spans too: a receiver that rejects a span will
        // reject it again; the summary and the exit code say so).
        self.delivered.record(&fresh)?;
        self.progress.stage(&format!(
            "push: {} spans sent in {} requests; rows read",
            self.summary.spans_sent, self.summary.requests
        ));
        for (key, digest) in fresh {
            let trace: [u8; 16] = key[..16].try_into().expect("16 bytes");
            self.taken.entry(trace).or_default().insert(key, digest);
        }
        Ok(())
    }

    /// Read what the endpoint took of the document's traces, a trace at
    /// a time (a range of the record's key), keeping the traces the
    /// document before had: a session's documents come one after another.
    fn load_taken(&mut self, doc: &Doc<'_>) -> Result<(), PushError> {
        let mut wanted: HashSet<[u8; 16]> = HashSet::new();
        for rs in &doc.resource_spans {
            for ss in &rs.scope_spans {
                for span in &ss.spans {
                    let ids: Ids<'_> = serde_json::from_str(span.get())
                        .map_err(|e| shape(&format!("a span without ids: {e}")))?;
                    let key = span_key(&ids)?;
                    wanted.insert(key[..16].try_into().expect("16 bytes"));
                }
            }
        }
        self.taken.retain(|trace, _| wanted.contains(trace));
        for trace in wanted {
            if let std::collections::hash_map::Entry::Vacant(slot) = self.taken.entry(trace) {
                let mut digests = HashMap::new();
                self.delivered.trace_digests(&trace, &mut digests)?;
                slot.insert(digests);
            }
        }
        Ok(())
    }

    /// POST `body`, trying again on 429, 502, 503, 504 and failed
    /// connections (after `Retry-After` where given, else a doubling
    /// wait).
    fn send(&mut self, body: &[u8]) -> Result<PartialSuccess, PushError> {
        let s = self.settings;
        let mut wait = FIRST_WAIT;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = http::post(
                &s.url,
                &self.tls,
                &s.headers,
                s.protocol.content_type(),
                body,
                s.timeout,
            );
            let (detail, after) = match result {
                Ok(r) if (200..300).contains(&r.status) => {
                    return Ok(match s.protocol {
                        Protocol::Json => PartialSuccess::from_json(&r.body),
                        Protocol::Protobuf => PartialSuccess::from_protobuf(&r.body),
                    });
                }
                Ok(r) if matches!(r.status, 429 | 502 | 503 | 504) => {
                    (format!("HTTP {}{}", r.status, excerpt(&r)), r.retry_after)
                }
                Ok(r) => {
                    return Err(PushError::Refused {
                        endpoint: s.endpoint.clone(),
                        status: r.status,
                        body: excerpt(&r),
                    });
                }
                Err(e) => (e.to_string(), None),
            };
            if attempt > self.options.retries {
                return Err(PushError::Unreachable {
                    endpoint: s.endpoint.clone(),
                    attempts: attempt,
                    detail,
                });
            }
            let pause = after.map_or(wait, Duration::from_secs).min(MAX_WAIT);
            crate::terminal::warn(&format!(
                "harnery otlp push: {}: {detail}; trying again in {:.1} s",
                s.endpoint,
                pause.as_secs_f64()
            ));
            self.summary.retries += 1;
            std::thread::sleep(pause);
            wait = (wait * 2).min(MAX_WAIT);
        }
    }

    /// A last line without its newline (the export ends each with one).
    pub fn finish(&mut self) -> Result<(), PushError> {
        let line = std::mem::take(&mut self.line);
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            self.document(&line)?;
        }
        Ok(())
    }
}

/// `: <the body's first line>` where the receiver said something.
fn excerpt(r: &Response) -> String {
    let text = String::from_utf8_lossy(&r.body);
    let first: String = text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(300)
        .collect();
    match first.trim() {
        "" => String::new(),
        t => format!(": {t}"),
    }
}

impl Write for Pusher<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.failure.is_some() {
            return Err(io::Error::other("the push has stopped"));
        }
        let mut rest = data;
        while let Some(i) = memchr::memchr(b'\n', rest) {
            self.line.extend_from_slice(&rest[..i]);
            rest = &rest[i + 1..];
            let line = std::mem::take(&mut self.line);
            if let Err(e) = self.document(&line) {
                let message = e.to_string();
                self.failure = Some(e);
                return Err(io::Error::other(message));
            }
            self.line = line;
            self.line.clear();
        }
        self.line.extend_from_slice(rest);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
