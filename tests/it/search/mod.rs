//! `harnery search`, local and over Copilot's record; what it covers, and
//! how it answers under load, on a read-only or full home, and over a
//! tampered index.

mod copilot;
mod coverage;
mod load;
mod local;
