//! The session log and `harnery restore`: checkpoints, plans, shims, apply.

pub(crate) mod session_log_support;

pub(crate) mod apply;
mod apply_killed;
mod apply_more;
mod checkpoint_located;
mod exact;
mod put_back;
mod resume_word;
mod sdk;
mod session_log;
mod session_log_copilot;
mod steering;
