//! The agents: each one's captures through the real hook and finalize, and
//! the normalizers over every checked-in record.

mod codex;
mod gemini_cli;
mod opencode;
mod qwen;
mod record_normalizers;
