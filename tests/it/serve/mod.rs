//! `harnery serve`: its pages and the fleet behind it.

pub(crate) mod support;

mod dashboard;
mod fleet;
mod live;
mod pages;
mod safety;
