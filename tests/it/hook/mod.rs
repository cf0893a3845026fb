//! `harnery-hook`: bad input, concurrency, the corpus, kills, the lease.

pub(crate) mod support;

mod bad_input;
mod concurrency;
mod corpus;
mod kill;
mod lease;
