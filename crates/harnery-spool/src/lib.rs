//! harnery-spool: the part of harnery that runs on every agent signal.
//!
//! `harnery-hook` (entry point `bin/harnery-hook.rs`) appends each raw signal to its session's
//! spool under a file lease and returns. This crate holds only what that
//! path needs, from the bottom up: `home` (where everything lives), `clock`
//! (the one source of "now"), `failpoint` (the one crash-injection
//! facility, inert without the `failpoints` feature), and `spool` (segments, frames, the writer and
//! the reader `harnery finalize` drains with). The rules live in the
//! `harnery` crate, which depends on this one and never the other way.

pub mod clock;
pub mod failpoint;
pub mod hash_many;
pub mod home;
pub mod json_text;
pub mod spool;
