//! The fleet: shipping to PostgreSQL, its edges, security, search and usage.

pub(crate) mod support;

mod edges;
mod search;
mod security;
mod ship;
mod usage;
