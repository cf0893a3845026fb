//! `harnery install` / `uninstall` on copies of real settings files, and
//! the periodic `finalize` it sets up on a scratch machine.

mod machine;
mod mcp;
mod overdue;
mod roundtrip;
mod schedule;
