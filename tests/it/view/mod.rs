//! `harnery view` in a real browser.

pub(crate) mod browser;

mod pages;
