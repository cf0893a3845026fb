//! `harnery search`, local and over Copilot's record; what it covers, and
//! how it answers under load, on a read-only or full home, and over a
//! tampered index; an index of an earlier format.

mod copilot;
mod coverage;
mod format;
mod load;
mod local;
