//! `harnery otlp push` against a real OTLP/HTTP receiver in the test
//! ([`receiver`]): each session one trace, each span once as it is, a
//! growing session's new spans, retries, a receiver that is down, a push
//! SIGKILLed at random moments; what spans carry (`--content`, the chain
//! position, `chat` spans); progress on a terminal only.

mod content;
mod kill;
mod progress;
mod push;
pub(crate) mod receiver;
