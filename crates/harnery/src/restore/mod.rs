//! `harnery restore`: a session's checkpoints given back.
//!
//! The session log and its checkpoints (`log`), the seed a fresh
//! incarnation starts from (`seed`, with `seed_effects` and
//! `command_effects`), where a checkpoint stands in the agent's own record
//! (`record_cut`), that record put back as a new session (`materialize`),
//! resuming exactly at a checkpoint (`exact`, `claude_fork`), the resume
//! shims (`shim`, `copilot_sdk`) and Copilot's steering kept apart from
//! the user's direction (`steering`).
//!
//! Everything here reads, except `materialize` (new files, created
//! exclusively, never over one of the agent's).

pub mod claude_fork;
pub mod command_effects;
pub mod copilot_sdk;
pub mod exact;
pub mod log;
pub mod materialize;
pub mod record_cut;
pub mod seed;
pub mod seed_effects;
pub mod shim;
pub mod steering;
