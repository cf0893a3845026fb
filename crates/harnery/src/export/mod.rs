//! Export: the ledger's events as JSON lines, or as OTLP/JSON traces, built
//! to be streamed.
//!
//! - [`jsonl`]: a row's stored text as its line (checked to be JSON, never
//!   re-serialised), tagged with its epoch when asked.
//! - [`otlp`]: one session's events, streamed, as OTLP spans, and (from
//!   `otlp_documents`) the `ExportTraceServiceRequest` documents that
//!   carry them, each holding at most [`SPANS_PER_DOCUMENT`] spans.
//! - [`traced`]: a session's rows as its trace takes them, from the
//!   ledger's trace entries or from an event's text.
//! - `otlp_documents`: the documents spans go out in, written straight
//!   into the text that is written out.
//! - `otlp_json`: the hand-written text of a span and a resource.
//! - [`json_syntax`]: whether a stored text is JSON at all.
//!
//! Nothing here reads storage: the command streams rows in and hands each
//! one (JSON lines) or each row of a session (OTLP) to these.

pub mod json_syntax;
pub mod jsonl;
pub mod ordered;
pub mod otlp;
mod otlp_documents;
mod otlp_json;
pub mod traced;

/// The most spans one OTLP document carries, so that a collector (or a
/// file read line by line) never has to take a ledger in one piece. A
/// session with more spans continues in the next document, its resource
/// repeated.
pub const SPANS_PER_DOCUMENT: usize = 1000;
