//! The fleet: shipping to PostgreSQL, its edges, roles, security, search and usage.

pub(crate) mod support;

mod edges;
mod roles;
mod search;
mod security;
mod ship;
mod titles;
mod usage;
