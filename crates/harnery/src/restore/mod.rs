//! `harnery restore`: a session's checkpoints given back.
//!
//! The restore planner (`plan`) is the one entry point: it reads the
//! session's log, builds the seed, works out and does `--apply`
//! (`apply`: the record put back, the new session linked) or the look-only
//! resume (`look`), and `--record`; `run` runs the chosen shim and checks
//! the Copilot SDK resume can run; `epochs` finds the session's parts in
//! other epochs.
//!
//! The session log and its checkpoints (`log`), the seed a fresh
//! incarnation starts from (`seed`, with `seed_effects` and
//! `command_effects`), where a checkpoint stands in the agent's own record
//! (`record_cut`), that record put back as a new session (`materialize`),
//! resuming exactly at a checkpoint (`exact`, `claude_fork`), the resume
//! shims (`shim`, `copilot_sdk`) and Copilot's steering kept apart from
//! the user's direction (`steering`). `text` is the lines `harnery
//! restore` prints for a person.
//!
//! Everything here reads, except `materialize` (new files, created
//! exclusively, never over one of the agent's), the new session's link
//! and `--record` (signals appended to the intake spool), and `run`
//! (which starts the agent).

pub mod apply;
pub mod checkpoint;
pub(crate) mod claude_fork;
pub(crate) mod command_effects;
pub(crate) mod copilot_sdk;
pub mod epochs;
pub(crate) mod error;
pub(crate) mod exact;
pub mod log;
pub(crate) mod look;
pub(crate) mod materialize;
pub mod plan;
pub mod record_cut;
pub mod run;
pub mod seed;
pub(crate) mod seed_effects;
pub mod shim;
pub(crate) mod steering;
mod text;
