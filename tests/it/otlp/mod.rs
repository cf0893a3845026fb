//! `harnery otlp push` against a real OTLP/HTTP receiver in the test
//! ([`receiver`]): each session one trace, each span once as it is, a
//! growing session's new spans, retries, a receiver that is down, and a
//! push SIGKILLed at random moments.

mod content;
mod kill;
mod push;
pub(crate) mod receiver;
