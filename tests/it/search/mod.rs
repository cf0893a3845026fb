//! `harnery search`, local and over Copilot's record.

mod copilot;
mod local;
