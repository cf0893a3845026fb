//! The per-session rules (the producer), records joined, session prefixes.

pub(crate) mod support;

mod authority;
mod corpus;
mod prefixes;
mod props;
mod record_join;
mod record_paths;
mod record_turns;
mod rules;
