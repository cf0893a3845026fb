//! `harnery otlp push`: the ledger's sessions as traces, delivered to an
//! OTLP/HTTP receiver (a collector, MLflow, Arize Phoenix, Langfuse,
//! Tempo…), each span once as it is.
//!
//! The spans are the OTLP export's ([`crate::export::otlp`]): one trace per
//! session, ids derived from the ledger, so a span sent twice is the same
//! span. A push reads every session as the export does (streamed, bounded
//! memory), keeps of each document the spans the endpoint has not taken
//! as they are now ([`delivered`]), and sends them in the receiver's
//! protocol ([`proto`] for protobuf; the export's JSON as it is), with
//! retries ([`mod@push`]). Where it sends is [`settings`]'s.
//!
//! - [`settings`]: flags, `OTEL_EXPORTER_OTLP_*`, `[otlp]` in the config;
//! - [`http`]: one POST over TCP or TLS (the system's roots);
//! - [`proto`]: the protobuf wire form, by hand;
//! - [`delivered`]: what each endpoint took, in its own SQLite file;
//! - [`mod@push`]: the writer that cuts, sends and records documents.

pub mod delivered;
pub mod http;
pub mod proto;
pub mod push;
pub mod settings;

use crate::contract::SessionRef;
use crate::export::otlp::{SpanContent, write_to};
use crate::export::source::Source;
use crate::fleet::ship::Content;
use crate::fleet::{HostKey, Masker, ShipConfig};
use crate::home::Home;
use crate::progress::Progress;
use crate::report::epochs::Epochs;
use delivered::{Delivered, SessionKey, SessionMark};
use push::Pusher;
pub use push::{PushError, PushOptions, PushSummary};
pub use settings::{Layer, Protocol, Settings, parse_content};

/// Why a push could not finish.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    #[error(transparent)]
    Push(#[from] PushError),
    #[error(transparent)]
    Delivered(#[from] delivered::DeliveredError),
    #[error(transparent)]
    Export(#[from] crate::export::ExportError),
    /// `--content masked` could not set up the shipper's masking.
    #[error("--content masked: {0}")]
    Mask(String),
}

/// The masking `--content masked` uses: the shipper's own, with this
/// host's ship key (made on first use, as `ship` makes it) and the
/// config's `[mask]` rules; `None` for the other modes, which mask
/// nothing.
fn masker_for(home: &Home, content: Content) -> Result<Option<Masker>, OtlpError> {
    if content != Content::Masked {
        return Ok(None);
    }
    let root = home.root();
    let rules = ShipConfig::load(root).map_err(|e| OtlpError::Mask(e.to_string()))?;
    let key = HostKey::load_or_create(root).map_err(|e| OtlpError::Mask(e.to_string()))?;
    let masker = Masker::new(&rules.rules, key).map_err(|e| OtlpError::Mask(e.to_string()))?;
    Ok(Some(masker))
}

/// Push every session of `sources` to the endpoint of `settings`: what it
/// has not taken as it is now. `resend` forgets first what it took.
pub fn push(
    home: &Home,
    epochs: &Epochs,
    sources: &[Source<'_>],
    settings: &Settings,
    options: &PushOptions,
    resend: bool,
    progress: &Progress,
) -> Result<PushSummary, OtlpError> {
    let mut delivered = Delivered::open(home, &settings.endpoint)?;
    if resend && !options.dry_run {
        delivered.forget()?;
    }
    let marks = delivered.sessions()?;
    let masker = masker_for(home, settings.content)?;
    let content = match &masker {
        Some(m) => SpanContent::Masked(m),
        None if settings.content == Content::Full => SpanContent::Full,
        None => SpanContent::None,
    };
    let shape = shape_of(settings.content);
    let mut read: Vec<(SessionKey, SessionMark)> = Vec::new();
    let mut unchanged = 0u64;
    let mut gate = |place: &str, session: &SessionRef, head: Option<u64>| {
        let key = (
            place.to_owned(),
            session.adapter.as_str().to_owned(),
            session.session_id.clone(),
        );
        let Some(head) = head else {
            // Not read whole: its spans may not all have gone.
            read.retain(|(k, _)| *k != key);
            return false;
        };
        if marks
            .get(&key)
            .is_some_and(|(taken, was)| *taken == head && *was == shape)
        {
            unchanged += 1;
            return false;
        }
        read.push((key, (head, shape.clone())));
        true
    };
    let mut pusher = Pusher::new(settings, options, &mut delivered, progress.clone());
    let written = write_to(
        epochs,
        sources,
        None,
        &mut pusher,
        options.spans_per_request,
        progress,
        Some(&mut gate),
        content,
    )
    .map(|(n, _)| n);
    if let Some(failure) = pusher.failure.take() {
        return Err(failure.into());
    }
    let left_out = written?;
    pusher.finish()?;
    let mut summary = std::mem::take(&mut pusher.summary);
    summary.rows_left_out = left_out;
    summary.sessions_unchanged = unchanged;
    // Every span read was taken: the sessions read need not be read
    // again until they grow (or the spans' shape changes). A push that
    // stopped early records none, and the next one reads them.
    if !options.dry_run {
        delivered.record_sessions(&read)?;
    }
    Ok(summary)
}

/// The shape a session's spans have in this build and under this
/// `--content`: a new build may write a span differently, and another
/// content mode does, and then every session is read again (its spans
/// still sent only where they differ: a span with words sent again with
/// its words as the new mode has them).
fn shape_of(content: Content) -> String {
    let version = env!("CARGO_PKG_VERSION");
    format!(
        "harnery {version} spans {SPAN_SHAPE} content={}",
        content.as_str()
    )
}

/// The revision of what spans say, beside the version (which a build of
/// the same release shares): raised with each change to a span's text,
/// so that the next push reads every session once again. 2: chain marks,
/// evidence, `chat` spans and `--content`.
const SPAN_SHAPE: u32 = 2;
